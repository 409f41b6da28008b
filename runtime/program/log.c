// log.c — what a training run tells its user: progress, metrics, run record
// (log.h).
//
// Progress: on a terminal, one line redrawn in place (a bar with the step,
// loss, accuracy, learning rate, gradient norm and images/s); otherwise a
// plain line every `log_every` steps and at the end of each epoch, so logs
// stay greppable. A model without a class dim (a regression) logs no
// accuracy anywhere. Metrics: one JSON object per logged step and per epoch
// (JSON lines), for plotting; every write is checked, and the first failure
// is kept for mlc_log_check. The loss's auxiliary values (MlcModel.naux)
// follow the loss on every line and in every record, under their names
// ("ce", "train_ce"). With loss scaling every step line and record also
// carries the scale the step ran with, whether it overflowed (its update
// skipped) and the steps skipped so far; epoch lines the last two. Run record: one JSON document at the end
// (model, hash, compiler, seed, hyper-parameters, per-epoch metrics and
// "final"), replaced atomically (rt_write_atomic). JSON is written with
// cJSON.
#include <errno.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rt_util.h"
#include "log.h"

struct MlcLog {
  FILE *out, *metrics;
  const char *metrics_path;
  bool tty, accuracy;
  int naux;                 // the loss's auxiliary values, logged by name
  const char *const *aux_names;
  int64_t every;
  int write_errno; // first failed metrics write (0: none)
};

MlcLog *mlc_log_new(FILE *out, const char *metrics_path, int64_t log_every, bool accuracy,
                    char *err, size_t errlen) {
  MlcLog *lg = calloc(1, sizeof *lg);
  if (!lg) return rt_err(err, errlen, "out of memory"), NULL;
  lg->out = out;
  lg->tty = isatty(fileno(out));
  lg->every = log_every < 1 ? 1 : log_every;
  lg->accuracy = accuracy;
  lg->metrics_path = metrics_path;
  if (metrics_path && !(lg->metrics = fopen(metrics_path, "w"))) {
    rt_err(err, errlen, "%s: cannot create: %s", metrics_path, strerror(errno));
    free(lg);
    return NULL;
  }
  return lg;
}

void mlc_log_aux(MlcLog *lg, int naux, const char *const *names) {
  lg->naux = naux < 0 ? 0 : naux > MLC_MAX_AUX ? MLC_MAX_AUX : naux;
  lg->aux_names = names;
}

// " ce 0.1234 reg 0.0021": the auxiliary values after the loss, prefixed
// ("train_") on epoch lines.
static const char *aux_text(const MlcLog *lg, const char *prefix, const double *v, char *buf,
                            size_t len) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < lg->naux && n < len; i++)
    n += (size_t)snprintf(buf + n, len - n, " %s%s %.6g", prefix, lg->aux_names[i], v[i]);
  return buf;
}

static void aux_json(cJSON *o, int naux, const char *const *names, const char *prefix,
                     const double *v);

int mlc_log_check(const MlcLog *lg, char *err, size_t errlen) {
  if (!lg || !lg->write_errno) return 0;
  return rt_err(err, errlen, "%s: write failed: %s", lg->metrics_path, strerror(lg->write_errno));
}

int mlc_log_free(MlcLog *lg, char *err, size_t errlen) {
  if (!lg) return 0;
  if (lg->metrics && fclose(lg->metrics) && !lg->write_errno) lg->write_errno = errno ? errno : EIO;
  int rc = mlc_log_check(lg, err, errlen);
  free(lg);
  return rc;
}

// Adds a number, or null when it is not finite (JSON has no NaN).
static void num(cJSON *o, const char *k, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
  else cJSON_AddNullToObject(o, k);
}

static void emit(MlcLog *lg, cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  if (lg->metrics && !lg->write_errno) {
    errno = 0;
    if (!s || fprintf(lg->metrics, "%s\n", s) < 0 || fflush(lg->metrics))
      lg->write_errno = !s ? ENOMEM : errno ? errno : EIO;
  }
  cJSON_free(s);
  cJSON_Delete(o);
}

// " acc 0.8125" when the model has a class dim, "" otherwise.
static const char *acc_text(const MlcLog *lg, const char *key, const char *fmt, double acc,
                            char *buf, size_t len) {
  buf[0] = 0;
  if (lg->accuracy) {
    int n = snprintf(buf, len, " %s ", key);
    snprintf(buf + n, len - (size_t)n, fmt, acc);
  }
  return buf;
}

// " scale 65536 overflow 0 skipped 2" (loss scaling), "" otherwise.
static const char *scaler_text(const float *sc, char *buf, size_t len) {
  buf[0] = 0;
  if (sc) snprintf(buf, len, " scale %.6g overflow %d skipped %lld", (double)sc[0], sc[1] != 0, (long long)sc[2]);
  return buf;
}

void mlc_log_step(MlcLog *lg, int64_t epoch, int64_t epochs, int64_t k, int64_t steps,
                  int64_t global, double loss, double acc, double lr, double gnorm, double ips,
                  const float *aux, const float *scaler) {
  bool last = k == steps;
  char ab[48], xb[512], sb[96];
  double av[MLC_MAX_AUX] = {0};
  for (int i = 0; aux && i < lg->naux; i++) av[i] = aux[i];
  const char *xt = aux_text(lg, "", av, xb, sizeof xb);
  const char *st = scaler_text(scaler, sb, sizeof sb);
  if (lg->tty) {
    int width = 24, fill = steps ? (int)(width * k / steps) : width;
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[width] = 0;
    fprintf(lg->out, "\repoch %lld/%lld [%s] %lld/%lld loss %.4f%s%s lr %.3g gnorm %.3g%s %.0f img/s\033[K",
            (long long)epoch, (long long)epochs, bar, (long long)k, (long long)steps, loss, xt,
            acc_text(lg, "acc", "%.4f", acc, ab, sizeof ab), lr, gnorm, st, ips);
    if (last) fputc('\n', lg->out);
    fflush(lg->out);
  } else if (k % lg->every == 0 || last) {
    fprintf(lg->out, "epoch %lld step %lld/%lld loss %.6f%s%s lr %.6g gnorm %.6g%s img/s %.0f\n",
            (long long)epoch, (long long)k, (long long)steps, loss, xt,
            acc_text(lg, "acc", "%.4f", acc, ab, sizeof ab), lr, gnorm, st, ips);
    fflush(lg->out);
  }
  if (lg->metrics && (k % lg->every == 0 || last)) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "step");
    cJSON_AddNumberToObject(o, "epoch", (double)epoch);
    cJSON_AddNumberToObject(o, "step", (double)global);
    num(o, "loss", loss);
    aux_json(o, lg->naux, lg->aux_names, "", av);
    if (lg->accuracy) num(o, "accuracy", acc);
    num(o, "lr", lr), num(o, "grad_norm", gnorm), num(o, "images_per_second", ips);
    if (scaler) {
      num(o, "loss_scale", scaler[0]);
      cJSON_AddBoolToObject(o, "overflow", scaler[1] != 0);
      cJSON_AddNumberToObject(o, "skipped_steps", scaler[2]);
    }
    emit(lg, o);
  }
}

// "ce": 0.12 (with prefix "train_": "train_ce").
static void aux_json(cJSON *o, int naux, const char *const *names, const char *prefix,
                     const double *v) {
  for (int i = 0; i < naux && i < MLC_MAX_AUX; i++) {
    char key[128];
    snprintf(key, sizeof key, "%s%s", prefix, names[i]);
    num(o, key, v[i]);
  }
}

static void epoch_fields(cJSON *o, const MlcEpochStats *s, bool accuracy, int naux,
                         const char *const *names) {
  cJSON_AddNumberToObject(o, "epoch", (double)s->epoch);
  num(o, "train_loss", s->train_loss);
  aux_json(o, naux, names, "train_", s->train_aux);
  if (accuracy) num(o, "train_accuracy", s->train_accuracy);
  num(o, "test_loss", s->test_loss);
  if (accuracy) num(o, "test_accuracy", s->test_accuracy);
  num(o, "seconds", s->seconds), num(o, "images_per_second", s->images_per_second);
  if (s->scaled) num(o, "loss_scale", s->loss_scale), cJSON_AddNumberToObject(o, "skipped_steps", (double)s->skipped);
}

void mlc_log_epoch(MlcLog *lg, const MlcEpochStats *s) {
  char ab[48], xb[512];
  fprintf(lg->out, "epoch %lld done: train_loss %.6f%s%s", (long long)s->epoch, s->train_loss,
          aux_text(lg, "train_", s->train_aux, xb, sizeof xb),
          acc_text(lg, "train_acc", "%.4f", s->train_accuracy, ab, sizeof ab));
  if (!isnan(s->test_loss))
    fprintf(lg->out, " test_loss %.6f%s", s->test_loss,
            acc_text(lg, "test_acc", "%.4f", s->test_accuracy, ab, sizeof ab));
  if (s->scaled) fprintf(lg->out, " scale %.6g skipped %lld", s->loss_scale, (long long)s->skipped);
  fprintf(lg->out, " time %.2fs img/s %.0f\n", s->seconds, s->images_per_second);
  fflush(lg->out);
  if (lg->metrics) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "epoch");
    epoch_fields(o, s, lg->accuracy, lg->naux, lg->aux_names);
    emit(lg, o);
  }
}

static cJSON *hyper_json(const MlcRunInfo *ri) {
  const MlcRecipe *r = &ri->model->recipe;
  cJSON *h = cJSON_CreateObject();
  cJSON_AddNumberToObject(h, "batch", (double)ri->batch);
  cJSON_AddNumberToObject(h, "epochs", (double)ri->epochs);
  cJSON_AddNumberToObject(h, "lr", ri->lr);
  cJSON_AddNumberToObject(h, "accumulate", (double)(r->accumulate ? r->accumulate : 1));
  cJSON_AddNumberToObject(h, "threads", (double)ri->threads);
  cJSON_AddStringToObject(h, "optimizer", r->optimizer ? r->optimizer : "");
  cJSON_AddStringToObject(h, "schedule", r->schedule ? r->schedule : "constant");
  for (int i = 0; i < r->nhyper; i++)
    if (strcmp(r->hyper[i].name, "lr")) num(h, r->hyper[i].name, r->hyper[i].value);
  return h;
}

static int write_text(int fd, void *text) {
  const char *s = text;
  return rt_write_all(fd, s, strlen(s)) || rt_write_all(fd, "\n", 1) ? -1 : 0;
}

int mlc_log_run_record(const char *path, const MlcRunInfo *ri, char *err, size_t errlen) {
  const MlcModel *m = ri->model;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model", m->name);
  cJSON_AddStringToObject(o, "hash", m->hash);
  cJSON_AddStringToObject(o, "compiler", m->compiler ? m->compiler : "");
  cJSON_AddNumberToObject(o, "seed", (double)ri->seed);
  cJSON_AddStringToObject(o, "train_data", ri->train_data ? ri->train_data : "");
  cJSON_AddStringToObject(o, "test_data", ri->test_data ? ri->test_data : "");
  if (ri->device) cJSON_AddStringToObject(o, "device", ri->device);
  cJSON_AddItemToObject(o, "hyperparameters", hyper_json(ri));
  cJSON *eps = cJSON_AddArrayToObject(o, "epochs");
  for (int i = 0; i < ri->nepochs; i++) {
    cJSON *e = cJSON_CreateObject();
    epoch_fields(e, &ri->epochs_stats[i], ri->accuracy, m->naux, m->aux_names);
    cJSON_AddItemToArray(eps, e);
  }
  cJSON *f = cJSON_AddObjectToObject(o, "final");
  num(f, "train_loss", ri->final_train_loss);
  num(f, "test_loss", ri->final_test_loss);
  if (ri->accuracy) num(f, "test_accuracy", ri->final_test_accuracy);
  num(f, "images_per_second", ri->images_per_second);
  num(f, "seconds", ri->seconds);
  char *s = cJSON_Print(o);
  cJSON_Delete(o);
  if (!s) return rt_err(err, errlen, "%s: out of memory", path);
  int rc = rt_write_atomic(path, write_text, s, err, errlen);
  cJSON_free(s);
  return rc;
}
