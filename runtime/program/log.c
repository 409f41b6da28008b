// log.c — what a training run tells its user: progress, metrics, run record.
//
// Progress: on a terminal, one line redrawn in place (a bar with the step,
// loss, accuracy, learning rate, gradient norm and images/s); otherwise a
// plain line every `log_every` steps and at the end of each epoch, so logs
// stay greppable. Metrics: one JSON object per logged step and per epoch
// (JSON lines), for plotting. Run record: one JSON document at the end
// (model, hash, compiler, seed, hyper-parameters, per-epoch metrics and
// "final"), written to a temporary file and renamed into place. JSON is
// written with cJSON.
#include <errno.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlc_rt.h"
#include "core/rt_util.h"

struct MlcLog {
  FILE *out, *metrics;
  bool tty;
  int64_t every;
};

MlcLog *mlc_log_new(FILE *out, const char *metrics_path, int64_t log_every, char *err,
                    size_t errlen) {
  MlcLog *lg = calloc(1, sizeof *lg);
  if (!lg) return rt_err(err, errlen, "out of memory"), NULL;
  lg->out = out;
  lg->tty = isatty(fileno(out));
  lg->every = log_every < 1 ? 1 : log_every;
  if (metrics_path && !(lg->metrics = fopen(metrics_path, "w"))) {
    rt_err(err, errlen, "%s: cannot create: %s", metrics_path, strerror(errno));
    free(lg);
    return NULL;
  }
  return lg;
}

void mlc_log_free(MlcLog *lg) {
  if (!lg) return;
  if (lg->metrics) fclose(lg->metrics);
  free(lg);
}

// Adds a number, or null when it is not finite (JSON has no NaN).
static void num(cJSON *o, const char *k, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
  else cJSON_AddNullToObject(o, k);
}

static void emit(MlcLog *lg, cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  if (s && lg->metrics) {
    fprintf(lg->metrics, "%s\n", s);
    fflush(lg->metrics);
  }
  cJSON_free(s);
  cJSON_Delete(o);
}

void mlc_log_step(MlcLog *lg, int64_t epoch, int64_t epochs, int64_t k, int64_t steps,
                  int64_t global, double loss, double acc, double lr, double gnorm, double ips) {
  bool last = k == steps;
  if (lg->tty) {
    int width = 24, fill = steps ? (int)(width * k / steps) : width;
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[width] = 0;
    fprintf(lg->out, "\repoch %lld/%lld [%s] %lld/%lld loss %.4f acc %.4f lr %.3g gnorm %.3g %.0f img/s\033[K",
            (long long)epoch, (long long)epochs, bar, (long long)k, (long long)steps, loss, acc, lr,
            gnorm, ips);
    if (last) fputc('\n', lg->out);
    fflush(lg->out);
  } else if (k % lg->every == 0 || last) {
    fprintf(lg->out, "epoch %lld step %lld/%lld loss %.6f acc %.4f lr %.6g gnorm %.6g img/s %.0f\n",
            (long long)epoch, (long long)k, (long long)steps, loss, acc, lr, gnorm, ips);
    fflush(lg->out);
  }
  if (lg->metrics && (k % lg->every == 0 || last)) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "step");
    cJSON_AddNumberToObject(o, "epoch", (double)epoch);
    cJSON_AddNumberToObject(o, "step", (double)global);
    num(o, "loss", loss), num(o, "accuracy", acc), num(o, "lr", lr);
    num(o, "grad_norm", gnorm), num(o, "images_per_second", ips);
    emit(lg, o);
  }
}

static void epoch_fields(cJSON *o, const MlcEpochStats *s) {
  cJSON_AddNumberToObject(o, "epoch", (double)s->epoch);
  num(o, "train_loss", s->train_loss), num(o, "train_accuracy", s->train_accuracy);
  num(o, "test_loss", s->test_loss), num(o, "test_accuracy", s->test_accuracy);
  num(o, "seconds", s->seconds), num(o, "images_per_second", s->images_per_second);
}

void mlc_log_epoch(MlcLog *lg, const MlcEpochStats *s) {
  fprintf(lg->out, "epoch %lld done: train_loss %.6f train_acc %.4f", (long long)s->epoch,
          s->train_loss, s->train_accuracy);
  if (!isnan(s->test_loss))
    fprintf(lg->out, " test_loss %.6f test_acc %.4f", s->test_loss, s->test_accuracy);
  fprintf(lg->out, " time %.2fs img/s %.0f\n", s->seconds, s->images_per_second);
  fflush(lg->out);
  if (lg->metrics) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "epoch");
    epoch_fields(o, s);
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

static int write_atomic(const char *path, const char *text, char *err, size_t errlen) {
  size_t n = strlen(path) + 8;
  char *tmp = malloc(n);
  if (!tmp) return rt_err(err, errlen, "%s: out of memory", path);
  snprintf(tmp, n, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  int rc = 0;
  if (!f) rc = rt_err(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
  else {
    bool bad = fputs(text, f) < 0 || fputc('\n', f) < 0 || fflush(f) || fsync(fileno(f));
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) rc = rt_err(err, errlen, "%s: cannot write: %s", path, strerror(errno));
  }
  free(tmp);
  return rc;
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
  cJSON_AddItemToObject(o, "hyperparameters", hyper_json(ri));
  cJSON *eps = cJSON_AddArrayToObject(o, "epochs");
  for (int i = 0; i < ri->nepochs; i++) {
    cJSON *e = cJSON_CreateObject();
    epoch_fields(e, &ri->epochs_stats[i]);
    cJSON_AddItemToArray(eps, e);
  }
  cJSON *f = cJSON_AddObjectToObject(o, "final");
  num(f, "train_loss", ri->final_train_loss);
  num(f, "test_loss", ri->final_test_loss);
  num(f, "test_accuracy", ri->final_test_accuracy);
  num(f, "images_per_second", ri->images_per_second);
  num(f, "seconds", ri->seconds);
  char *s = cJSON_Print(o);
  cJSON_Delete(o);
  if (!s) return rt_err(err, errlen, "%s: out of memory", path);
  int rc = write_atomic(path, s, err, errlen);
  cJSON_free(s);
  return rc;
}
