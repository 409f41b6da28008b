// train.c — the generated program's `train`: the loop from data to
// checkpoints (loader -> train_step -> log; after each epoch the state's
// finiteness, the evaluation, the schedule's epoch_end, then a checkpoint).
// On a device the loop queues up to MLC_CUDA_QUEUE_DEPTH steps ahead of
// reading their results (Pending); the log is written in step order all
// the same.
//
// A run's state is the model's state tensors plus MlcRunState (loader cursor,
// step, RNG, seed, lr). Resuming restores both, so `train --epochs 2` and
// `train --epochs 1` + `train --epochs 2 --resume` end with the same bytes;
// a resume whose --batch or training data differ from the checkpoint's is
// refused (saying what changed) unless --force. `train --weights FILE`
// starts from given parameters instead (a PyTorch-written safetensors file
// under the model's paths will do) with fresh optimizer state; with
// `--no-shuffle` the first steps then see the same batches as a DataLoader
// with shuffle=False, so the losses can be compared.
//
// What never happens silently: a non-finite loss stops the run with status 1
// (--check-finite adds where the first non-finite value came from), and no
// checkpoint is written from a state that holds a NaN or an infinity, so the
// last checkpoint on disk is always a finite one; every output path is
// checked before the data is read; a failed write of the metrics file, the
// run record or a checkpoint stops the run naming the file.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/checkpoint.h"
#include "core/rng.h"
#include "core/rt_util.h"
#include "log.h"
#include "program.h"

// A train step whose results the loop has not read yet: on the CPU the one
// just run; on a device up to MLC_CUDA_QUEUE_DEPTH queued steps, read in
// order when the loop needs them (the ring full, a checkpoint, --max-steps,
// the end of the epoch), so the host queues the next step while the GPU
// runs this one.
typedef struct Pending {
  int64_t size, k, step;   // the batch's size, its number in the epoch, the step count after it
  int rc;                  // the step's status on the CPU
  float out[3], aux[MLC_MAX_AUX], scaler[MLC_SCALER_OUTPUTS];
  float *logits;           // the forward output for accuracy (in->logits on the CPU)
  const void *labels;      // the batch's labels (on a device, a copy: the loader reuses its buffers)
  void *label_copy;        // on a device, with accuracy: the copy and the output, owned
  float *logits_own;
} Pending;

enum { QUEUE = MLC_CUDA_QUEUE_DEPTH };

// An epoch's sums over the steps read so far.
typedef struct Sums {
  double lsum, good, scored, asum[MLC_MAX_AUX], t0;
  int64_t n, steps;
} Sums;

typedef struct Train {
  const char *prog;
  const Opts *o;
  const MlcModel *m;
  Paths paths[2];          // training, test files
  MlcDataset train, test;
  bool have_test;
  MlcInstance *in;
  Accuracy acc;
  MlcLoader *loader;
  MlcLog *log;
  MlcRunState rs;          // what checkpoints record (the data identity set once)
  int64_t saved_step;      // step of the checkpoint on disk, -1: none
  MlcEpochStats *stats;
  int nstats;
  double t0, images;
  bool stopped;            // --max-steps reached
  Pending q[QUEUE];        // a ring: q[qhead] the oldest of qcount
  int qhead, qcount, depth; // depth: 1 on the CPU, QUEUE on a device
  char data_desc[2][1024]; // the files read, for the run record
} Train;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// ---- before any data is read ----------------------------------------------------------

// Checks --checkpoint, --metrics and --run-record (not a directory, a
// directory that takes files, not one of the inputs), then removes what a
// killed run left beside them.
static int check_outputs(Train *t, char *err, size_t errlen) {
  const Opts *o = t->o;
  const char *in[2 * MLC_MAX_INPUTS + 2];
  int n = 0;
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < t->paths[s].n && i < MLC_MAX_INPUTS; i++) in[n++] = t->paths[s].p[i];
  if (o->weights) in[n++] = o->weights;
  if (o->resume && rt_check_input(o->checkpoint, err, errlen)) return -1;
  if (o->checkpoint && rt_check_output(o->checkpoint, "--checkpoint", in, n, err, errlen)) return -1;
  if (o->checkpoint) in[n++] = o->checkpoint;
  if (o->metrics && rt_check_output(o->metrics, "--metrics", in, n, err, errlen)) return -1;
  if (o->run_record && rt_check_output(o->run_record, "--run-record", in, n, err, errlen)) return -1;
  if (o->checkpoint) rt_remove_stale_temps(o->checkpoint);
  if (o->run_record) rt_remove_stale_temps(o->run_record);
  return 0;
}

// ---- checkpoints ---------------------------------------------------------------------------

// " (the checkpoint ck.st from step 40 is kept)" for messages that stop a run.
static const char *kept(const Train *t, char *buf, size_t len) {
  if (!t->o->checkpoint) snprintf(buf, len, "%s", "");
  else if (t->saved_step < 0) snprintf(buf, len, " (no checkpoint was written)");
  else
    snprintf(buf, len, " (the checkpoint %s from step %" PRId64 " is kept)", t->o->checkpoint,
             t->saved_step);
  return buf;
}

static int save_ckpt(Train *t, char *err, size_t errlen) {
  if (!t->o->checkpoint) return 0;
  MlcCtx *c = &t->in->ctx;
  char why[512], k[600];
  if (rt_instance_finite(t->in, why, sizeof why))
    return rt_err(err, errlen, "step %" PRId64 ": %s%s", c->step, why, kept(t, k, sizeof k));
  t->rs.epoch = mlc_loader_epoch(t->loader);
  t->rs.pos = mlc_loader_pos(t->loader);
  t->rs.step = c->step;
  t->rs.rng = c->rng;
  if (mlc_ckpt_save(t->o->checkpoint, t->m, t->in->state, &t->rs, err, errlen)) return -1;
  t->saved_step = c->step;
  return 0;
}

// Compares a checkpoint's run state with this run: the cursor must lie in
// the data; another batch or other data is refused unless --force.
static int check_resume(Train *t, const MlcRunState *got, char *err, size_t errlen) {
  const Opts *o = t->o;
  if (got->pos > t->train.n)
    return rt_err(err, errlen, "%s: mlc.pos = %" PRId64 ", but the training data has %" PRId64
                  " records", o->checkpoint, got->pos, t->train.n);
  if (o->force) return 0;
  if (got->batch && got->batch != o->batch)
    return rt_err(err, errlen, "--resume: %s was written by a run with --batch %" PRId64 "; this run "
                  "has --batch %" PRId64 " (give --force to resume with it anyway)", o->checkpoint,
                  got->batch, o->batch);
  if (got->data[0] && got->data_crc != t->rs.data_crc)
    return rt_err(err, errlen, "--resume: %s was trained on %s (crc %08" PRIx32 "); this run reads "
                  "%s (crc %08" PRIx32 ") (give --force to resume with it anyway)", o->checkpoint,
                  got->data, got->data_crc, t->rs.data, t->rs.data_crc);
  return 0;
}

// Fresh state from the seed, then --weights over the parameters and buffers
// (optimizer state keeps its initial values), or the checkpoint's state and
// cursor.
static int start_state(Train *t, char *err, size_t errlen) {
  const Opts *o = t->o;
  MlcInstance *in = t->in;
  t->rs.seed = o->seed, t->rs.lr = o->lr, t->rs.rng = mlc_rng_new(o->seed);
  t->rs.batch = o->batch;
  t->saved_step = -1;
  if (!o->resume) {
    if (rt_instance_init(in, o->seed)) return rt_err(err, errlen, "%s", in->err);
    return o->weights ? program_load_weights(in, o->weights, err, errlen) : 0;
  }
  MlcRunState got;
  if (mlc_ckpt_load(o->checkpoint, t->m, in->state, &got, err, errlen) ||
      check_resume(t, &got, err, errlen))
    return -1;
  if (rt_instance_to_device(in)) return rt_err(err, errlen, "%s", in->err);
  if (o->have_seed && o->seed != got.seed)
    fprintf(stderr, "%s: note: resuming with the checkpoint's seed %" PRIu64 " (not %" PRIu64 ")\n",
            t->prog, got.seed, o->seed);
  t->rs.epoch = got.epoch, t->rs.pos = got.pos, t->rs.step = got.step;
  t->rs.rng = got.rng, t->rs.seed = got.seed;
  t->rs.lr = o->have_lr ? o->lr : got.lr;
  in->ctx.rng = got.rng;
  in->ctx.step = got.step;
  t->saved_step = got.step;
  return 0;
}

// ---- steps and epochs --------------------------------------------------------------------

// Stops the run at a non-finite loss of step `at` (or the model's first
// non-finite value).
static int nonfinite(Train *t, int64_t at, double loss, char *err, size_t errlen) {
  const MlcCtx *c = &t->in->ctx;
  const MlcModel *m = t->m;
  double v = c->nonfinite_site >= 0 ? c->nonfinite_value : loss;
  const char *what = isnan(v) ? "NaN" : "infinite";
  char k[600];
  if (c->nonfinite_site >= 0 && c->nonfinite_site < m->nsites)
    return rt_err(err, errlen, "step %" PRId64 ": loss became %s at %s (%s)", at, what,
                  m->sites[c->nonfinite_site].loc, m->sites[c->nonfinite_site].op);
  return rt_err(err, errlen, "step %" PRId64 ": loss became %s; the run stops%s%s", at, what,
                kept(t, k, sizeof k), t->o->check_finite ? "" : "; --check-finite says where the "
                "first non-finite value came from");
}

// Starts one train_step on batch b, number k of the epoch: run on the CPU,
// queued on a device; its results wait in the ring for read_step.
static int start_step(Train *t, const MlcBatch *b, int64_t k, char *err, size_t errlen) {
  MlcInstance *in = t->in;
  Pending *p = &t->q[(t->qhead + t->qcount) % QUEUE];
  in->ctx.check_finite = t->o->check_finite;
  bool queued = t->depth > 1, acc = t->acc.label >= 0;
  p->size = b->size, p->k = k, p->labels = acc ? b->inputs[t->acc.label] : NULL;
  if (acc && queued) {
    const MlcInputDesc *lab = &t->m->inputs[t->acc.label];
    size_t len = (size_t)b->size * mlc_dtype_size(lab->dtype) * (size_t)mlc_input_numel(lab, in->ctx.syms);
    memcpy(p->label_copy, p->labels, len);
    p->labels = p->label_copy;
  }
  p->logits = !acc ? NULL : queued ? p->logits_own : in->logits;
  memcpy(p->aux, in->aux, sizeof p->aux), memcpy(p->scaler, in->scaler, sizeof p->scaler);
  p->rc = rt_instance_step_into(in, b->size, b->inputs, p->out, p->logits, p->aux, p->scaler, queued);
  if (p->rc == MLC_ERROR)
    return rt_err(err, errlen, "step %" PRId64 ": %s", in->ctx.step + 1, in->ctx.err);
  p->step = in->ctx.step;
  t->qcount++;
  return 0;
}

// The oldest started step's results: the finite check, the epoch's sums,
// the log line.
static int read_step(Train *t, Sums *e, char *err, size_t errlen) {
  MlcInstance *in = t->in;
  Pending *p = &t->q[t->qhead];
  t->qhead = (t->qhead + 1) % QUEUE, t->qcount--;
  int rc = t->depth > 1 ? rt_instance_collect(in, p->out) : p->rc;
  if (rc == MLC_ERROR) return rt_err(err, errlen, "step %" PRId64 ": %s", p->step, in->ctx.err);
  if (rc == MLC_NONFINITE || !isfinite(p->out[0])) return nonfinite(t, p->step, p->out[0], err, errlen);
  memcpy(in->aux, p->aux, sizeof in->aux), memcpy(in->scaler, p->scaler, sizeof in->scaler);
  e->lsum += (double)p->out[0] * (double)p->size;
  for (int i = 0; i < t->m->naux && i < MLC_MAX_AUX; i++) e->asum[i] += (double)in->aux[i] * (double)p->size;
  if (t->acc.label >= 0) {
    MlcBatch b = {.size = p->size};
    b.inputs[t->acc.label] = p->labels;
    float *keep = in->logits;
    in->logits = p->logits;
    e->good += count_correct(in, &t->acc, &b, &e->scored);
    in->logits = keep;
  }
  e->n += p->size;
  double dt = now() - e->t0;
  mlc_log_step(t->log, in->ctx.epoch + 1, t->o->epochs, p->k, e->steps, p->step, p->out[0],
               e->scored > 0 ? e->good / e->scored : NAN, p->out[2], p->out[1], dt > 0 ? (double)e->n / dt : 0,
               in->aux, t->m->loss_scale ? in->scaler : NULL);
  return mlc_log_check(t->log, err, errlen);
}

// Reads every started step (before a checkpoint, the epoch's end, a stop).
static int drain(Train *t, Sums *e, char *err, size_t errlen) {
  while (t->qcount)
    if (read_step(t, e, err, errlen)) return -1;
  return 0;
}

// The schedule's per-epoch update (reduce-on-plateau), fed the metric the
// recipe names: test loss or accuracy, the training figure without test data.
// It runs before the epoch's checkpoint, so a resumed run sees its state.
static int epoch_end(Train *t, const MlcEpochStats *s, char *err, size_t errlen) {
  const MlcModel *m = t->m;
  if (!m->epoch_end) return 0;
  bool acc = m->recipe.metric && !strcmp(m->recipe.metric, "accuracy") && t->acc.label >= 0;
  double metric = acc ? (t->have_test ? s->test_accuracy : s->train_accuracy)
                      : (t->have_test ? s->test_loss : s->train_loss);
  const void *in[1] = {&metric};
  void *out[1] = {NULL};
  if (m->epoch_end(&t->in->ctx, 0, in, out) != MLC_OK)
    return rt_err(err, errlen, "epoch %lld: %s", (long long)s->epoch, t->in->ctx.err);
  return 0;
}

// What follows an epoch's last step: the state's finiteness, evaluation,
// the schedule's update, the log, the checkpoint.
static int finish_epoch(Train *t, MlcEpochStats *s, char *err, size_t errlen) {
  char why[512], k[600];
  if (rt_instance_finite(t->in, why, sizeof why))
    return rt_err(err, errlen, "epoch %lld: %s%s", (long long)s->epoch, why, kept(t, k, sizeof k));
  if (t->have_test && evaluate(t->in, &t->acc, &t->test, t->o->batch, &s->test_loss,
                               &s->test_accuracy, err, errlen))
    return -1;
  if (epoch_end(t, s, err, errlen)) return -1;
  mlc_log_epoch(t->log, s);
  if (mlc_log_check(t->log, err, errlen)) return -1;
  MlcEpochStats *ns = realloc(t->stats, (size_t)(t->nstats + 1) * sizeof *ns);
  if (!ns) return rt_err(err, errlen, "out of memory");
  t->stats = ns;
  t->stats[t->nstats++] = *s;
  return save_ckpt(t, err, errlen);
}

static int train_epoch(Train *t, int64_t epoch, char *err, size_t errlen) {
  const Opts *o = t->o;
  MlcCtx *c = &t->in->ctx;
  int64_t k = mlc_loader_pos(t->loader) / o->batch;
  Sums e = {.t0 = now(), .steps = mlc_loader_batches(t->loader)};
  MlcBatch b;
  c->epoch = epoch;
  while (mlc_loader_next(t->loader, &b)) {
    if (t->qcount == t->depth && read_step(t, &e, err, errlen)) return -1;
    if (start_step(t, &b, ++k, err, errlen)) return -1;
    t->images += (double)b.size;
    if (t->qcount == t->depth && read_step(t, &e, err, errlen)) return -1; // the CPU's step at once
    bool last = mlc_loader_pos(t->loader) >= t->train.n; // the epoch's checkpoint follows
    if (o->max_steps && c->step >= o->max_steps) {
      t->stopped = true;
      if (drain(t, &e, err, errlen)) return -1;
      if (!last) return save_ckpt(t, err, errlen);
      mlc_loader_next(t->loader, &b); // the end of the epoch: evaluate it as usual
      break;
    }
    if (o->ckpt_every && c->step % o->ckpt_every == 0 && !last &&
        (drain(t, &e, err, errlen) || save_ckpt(t, err, errlen)))
      return -1;
  }
  if (drain(t, &e, err, errlen)) return -1;
  int64_t n = e.n;
  MlcEpochStats s = {.epoch = epoch + 1, .train_loss = n ? e.lsum / (double)n : NAN,
                     .train_accuracy = e.scored > 0 && t->acc.label >= 0 ? e.good / e.scored : NAN,
                     .test_loss = NAN, .test_accuracy = NAN};
  for (int i = 0; i < t->m->naux && i < MLC_MAX_AUX; i++) s.train_aux[i] = n ? e.asum[i] / (double)n : NAN;
  s.seconds = now() - e.t0;
  s.scaled = t->m->loss_scale && n > 0;
  s.loss_scale = t->in->scaler[0], s.skipped = (int64_t)t->in->scaler[2];
  s.images_per_second = s.seconds > 0 ? (double)n / s.seconds : 0;
  return finish_epoch(t, &s, err, errlen);
}

static int write_record(Train *t, char *err, size_t errlen) {
  if (!t->o->run_record) return 0;
  const MlcEpochStats *last = t->nstats ? &t->stats[t->nstats - 1] : NULL;
  double secs = now() - t->t0;
  MlcRunInfo ri = {.model = t->m, .seed = t->rs.seed, .batch = t->o->batch,
                   .epochs = t->o->epochs, .threads = mlc_pool_threads(t->in->ctx.pool),
                   .lr = t->in->ctx.lr, .accuracy = t->acc.label >= 0,
                   .train_data = t->data_desc[0], .test_data = t->data_desc[1],
                   .device = t->m->device ? mlc_instance_device(t->in) : NULL,
                   .nepochs = t->nstats, .epochs_stats = t->stats,
                   .final_train_loss = last ? last->train_loss : NAN,
                   .final_test_loss = last ? last->test_loss : NAN,
                   .final_test_accuracy = last ? last->test_accuracy : NAN,
                   .images_per_second = secs > 0 ? t->images / secs : 0, .seconds = secs};
  return mlc_log_run_record(t->o->run_record, &ri, err, errlen);
}

// ---- the run -------------------------------------------------------------------------------

// On a device: the batch after the current one, which the device uploads
// while the current step computes (MlcDeviceOps.set_next).
static int64_t next_batch(void *user, const void **inputs) {
  MlcBatch b;
  int64_t n = mlc_loader_peek(user, &b);
  for (int i = 0; i < MLC_MAX_INPUTS; i++) inputs[i] = b.inputs[i];
  return n;
}

// The loader, the schedule's step counts and the log, from the state's cursor.
static int start_loop(Train *t, char *err, size_t errlen) {
  const Opts *o = t->o;
  MlcCtx *c = &t->in->ctx;
  c->lr = t->rs.lr;
  t->loader = mlc_loader_new(&t->train, o->batch, !o->no_shuffle, t->rs.seed, false, true);
  if (!t->loader) return rt_err(err, errlen, "out of memory");
  mlc_loader_seek(t->loader, t->rs.epoch, t->rs.pos);
  if (!t->in->dev) mlc_loader_set_pool(t->loader, c->pool);
  if (t->in->dev) t->m->device->ops->set_next(t->in->dev, next_batch, t->loader);
  t->depth = t->in->dev ? QUEUE : 1;
  for (int i = 0; t->depth > 1 && t->acc.label >= 0 && i < QUEUE; i++) {
    const MlcInputDesc *lab = &t->m->inputs[t->acc.label];
    int64_t b = o->batch < t->train.n ? o->batch : t->train.n;
    size_t len = (size_t)b * mlc_dtype_size(lab->dtype) * (size_t)mlc_input_numel(lab, c->syms);
    size_t out = (size_t)t->in->capacity * (size_t)(t->in->out_numel ? t->in->out_numel : 1) * sizeof(float);
    if (!(t->q[i].label_copy = malloc(len ? len : 1)) || !(t->q[i].logits_own = malloc(out)))
      return rt_err(err, errlen, "out of memory");
  }
  c->steps_per_epoch = mlc_loader_batches(t->loader);
  int64_t total = c->steps_per_epoch;
  if (!rt_mul(&total, o->epochs > 0 ? o->epochs : 1) || total > MLC_CKPT_MAX_STEP)
    return rt_err(err, errlen, "--epochs %" PRId64 " of %" PRId64 " steps each is more than %" PRId64
                  " steps", o->epochs, c->steps_per_epoch, MLC_CKPT_MAX_STEP);
  c->total_steps = total;
  int64_t every = o->log_every ? o->log_every : (c->steps_per_epoch + 9) / 10;
  t->log = mlc_log_new(stdout, o->metrics, every, t->acc.label >= 0, err, errlen);
  if (t->log) mlc_log_aux(t->log, t->m->naux, t->m->aux_names);
  return t->log ? 0 : -1;
}

// The data of both splits, with the same symbol values.
static int read_data(Train *t) {
  const MlcModel *m = t->m;
  if (open_data(t->prog, m, m->ninputs, &t->paths[0], false, &t->train)) return -1;
  t->have_test = t->paths[1].n > 0;
  if (t->have_test && open_data(t->prog, m, m->ninputs, &t->paths[1], true, &t->test)) {
    t->have_test = false;
    return -1;
  }
  for (int k = 0; t->have_test && k < m->nsyms; k++)
    if (t->test.syms[k] != t->train.syms[k]) {
      fprintf(stderr, "%s: %s: %s = %lld, but the training data has %s = %lld\n", t->prog,
              t->test.arrays[0].path, m->syms[k], (long long)t->test.syms[k], m->syms[k],
              (long long)t->train.syms[k]);
      return -1;
    }
  mlc_dataset_describe(&t->train, t->data_desc[0], sizeof t->data_desc[0]);
  if (t->have_test) mlc_dataset_describe(&t->test, t->data_desc[1], sizeof t->data_desc[1]);
  snprintf(t->rs.data, sizeof t->rs.data, "%.*s", (int)sizeof t->rs.data - 1, t->data_desc[0]);
  if (t->o->checkpoint) t->rs.data_crc = mlc_dataset_crc(&t->train);
  return 0;
}

static int train_run(Train *t, char *err, size_t errlen) {
  const Opts *o = t->o;
  int64_t most = t->train.n > t->test.n ? t->train.n : t->test.n;
  t->in = program_instance(t->m, o, most, t->train.syms, err, errlen);
  if (!t->in) return -1;
  t->acc = accuracy_of(t->in);
  if (start_state(t, err, errlen) || start_loop(t, err, errlen)) return -1;
  if (t->m->recipe.precision) // an f32 program's log is unchanged
    printf("%s: precision %s: matmuls and convolutions round their operands to %s "
           "(f32 products, sums and weights)\n", t->m->name, t->m->recipe.precision, t->m->recipe.precision);
  t->t0 = now();
  for (int64_t e = mlc_loader_epoch(t->loader); e < o->epochs && !t->stopped;
       e = mlc_loader_epoch(t->loader))
    if (train_epoch(t, e, err, errlen)) return -1;
  if (!o->epochs && save_ckpt(t, err, errlen)) return -1; // the state training would start from
  return write_record(t, err, errlen);
}

int cmd_train(const char *prog, const Opts *o, const MlcModel *m) {
  Train t = {.prog = prog, .o = o, .m = m};
  char err[1536] = "";
  data_paths(m, m->ninputs, o->train_data, false, &t.paths[0]);
  data_paths(m, m->ninputs, o->test_data, true, &t.paths[1]);
  int rc = check_outputs(&t, err, sizeof err);
  if (rc) fprintf(stderr, "%s: %s\n", prog, err);
  else if ((rc = read_data(&t)) == 0 && (rc = train_run(&t, err, sizeof err)))
    fprintf(stderr, "%s: %s\n", prog, err);
  if (t.in && t.in->dev) t.m->device->ops->set_next(t.in->dev, NULL, NULL);
  mlc_loader_free(t.loader);
  if (mlc_log_free(t.log, err, sizeof err) && !rc) rc = -1, fprintf(stderr, "%s: %s\n", prog, err);
  free(t.stats);
  for (int i = 0; i < QUEUE; i++) free(t.q[i].label_copy), free(t.q[i].logits_own);
  mlc_instance_free(t.in);
  mlc_dataset_free(&t.train);
  if (t.have_test) mlc_dataset_free(&t.test);
  paths_free(&t.paths[0]);
  paths_free(&t.paths[1]);
  return rc ? EXIT_RUNTIME : 0;
}
