// driver.c — the generated program's main: `train`, `eval`, `predict`.
//
// mlc_main parses the command line (getopt_long per subcommand), reads and
// validates the data, allocates the model's state and scratch arena, owns the
// loop (loader -> entry point -> log; after each epoch evaluation, the
// schedule's epoch_end, then a checkpoint) and turns every failure
// into one line on stderr and an exit code: 0 done, 1 runtime error (bad
// data, unreadable checkpoint, non-finite loss), 2 usage.
//
// A run's state is the model's state tensors plus MlcRunState (loader cursor,
// step, RNG, seed, lr). Resuming restores both, so `train --epochs 2` and
// `train --epochs 1` + `train --epochs 2 --resume` end with the same bytes.
// `train --weights FILE` starts from given parameters instead (a PyTorch-
// written safetensors file under the model's paths will do) with fresh
// optimizer state; with `--no-shuffle` the first steps then see the same
// batches as a DataLoader with shuffle=False, so the losses can be compared.
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mlc_rt.h"
#include "core/rt_util.h"
#include "core/safetensors.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

typedef struct Opts {
  const char *train_data, *test_data, *data, *weights, *checkpoint, *run_record, *metrics;
  int64_t epochs, batch, threads, ckpt_every, log_every, max_steps;
  double lr;
  uint64_t seed;
  bool resume, check_finite, have_lr, have_seed, no_shuffle;
} Opts;

// What one process holds for a model: state, arena, pool, context.
typedef struct Run {
  const MlcModel *m;
  void **state;
  MlcPool *pool;
  MlcCtx ctx;
  float *logits; // [max batch, output numel]
  int64_t max_batch;
  int64_t out_numel; // forward output per sample: num_out * rows
} Run;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fail(const char *prog, const char *msg) { fprintf(stderr, "%s: %s\n", prog, msg); }

// ---- usage ---------------------------------------------------------------------

static void usage(FILE *f, const char *prog, const MlcModel *m) {
  const MlcRecipe *r = &m->recipe;
  fprintf(f,
          "usage: %s train [options]          train %s (compiled by %s)\n"
          "       %s eval --weights FILE [--data FILES]\n"
          "       %s predict --weights FILE [FILE|-]\n"
          "\n"
          "train options:\n"
          "  --train-data FILES   training data, one file per input (comma-separated) or one\n"
          "                       file for all; default: the recipe's\n"
          "  --test-data FILES    evaluated after each epoch; default: the recipe's\n"
          "  --epochs N           default %lld\n"
          "  --batch N            default %lld\n"
          "  --lr X               base learning rate, default %g\n"
          "  --seed N             default %llu\n"
          "  --threads N          default: all CPUs (results do not depend on it)\n"
          "  --checkpoint FILE    write a checkpoint after each epoch (safetensors)\n"
          "  --checkpoint-every N also every N steps\n"
          "  --resume             continue from --checkpoint\n"
          "  --weights FILE       start from these parameters (safetensors: an mlc checkpoint or\n"
          "                       weights, or a PyTorch-written file under the model's paths,\n"
          "                       dtypes and shapes) instead of the initialisers; optimizer\n"
          "                       state starts fresh\n"
          "  --no-shuffle         read the training data in file order every epoch\n"
          "  --run-record FILE    JSON record of the run\n"
          "  --metrics FILE       JSON lines, one per logged step and epoch\n"
          "  --log-every N        a log line every N steps (default: 10 per epoch)\n"
          "  --check-finite       stop at the first NaN/Inf and say where it came from\n"
          "  --max-steps N        stop (and checkpoint) after N steps in all\n"
          "\n"
          "predict reads one sample per line (numbers separated by blanks or commas) from\n"
          "FILE or stdin, or an IDX/NPY file, and prints the class and probabilities.\n"
          "Exit status: 0 success, 1 runtime error, 2 usage error.\n",
          prog, m->name, m->compiler ? m->compiler : "mlc", prog, prog, (long long)r->epochs,
          (long long)r->batch, r->lr, (unsigned long long)r->seed);
}

static int parse_i64(const char *prog, const char *opt, const char *s, int64_t min, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || !*s || v < min) {
    fprintf(stderr, "%s: %s: '%s' is not an integer >= %lld\n", prog, opt, s, (long long)min);
    return -1;
  }
  *out = v;
  return 0;
}

enum { O_TRAIN = 256, O_TEST, O_DATA, O_WEIGHTS, O_EPOCHS, O_BATCH, O_LR, O_SEED, O_THREADS,
       O_CKPT, O_CKPT_EVERY, O_RESUME, O_RECORD, O_METRICS, O_LOG_EVERY, O_FINITE, O_HELP,
       O_MAX_STEPS, O_NO_SHUFFLE };

static const struct option long_opts[] = {
    {"train-data", required_argument, 0, O_TRAIN}, {"test-data", required_argument, 0, O_TEST},
    {"data", required_argument, 0, O_DATA},        {"weights", required_argument, 0, O_WEIGHTS},
    {"epochs", required_argument, 0, O_EPOCHS},    {"batch", required_argument, 0, O_BATCH},
    {"lr", required_argument, 0, O_LR},            {"seed", required_argument, 0, O_SEED},
    {"threads", required_argument, 0, O_THREADS},  {"checkpoint", required_argument, 0, O_CKPT},
    {"checkpoint-every", required_argument, 0, O_CKPT_EVERY},
    {"resume", no_argument, 0, O_RESUME},          {"run-record", required_argument, 0, O_RECORD},
    {"metrics", required_argument, 0, O_METRICS},  {"log-every", required_argument, 0, O_LOG_EVERY},
    {"check-finite", no_argument, 0, O_FINITE},    {"help", no_argument, 0, O_HELP},
    {"max-steps", required_argument, 0, O_MAX_STEPS},
    {"no-shuffle", no_argument, 0, O_NO_SHUFFLE},
    {0, 0, 0, 0}};

// Parses argv (argv[0] = the subcommand). Returns 0, 2 on usage errors,
// -2 after printing --help.
static int parse_opts(const char *prog, int argc, char **argv, const MlcModel *m, Opts *o) {
  *o = (Opts){.epochs = m->recipe.epochs, .batch = m->recipe.batch, .lr = m->recipe.lr,
              .seed = m->recipe.seed};
  optind = 1;
  opterr = 0;
  int c;
  int64_t v;
  while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    switch (c) {
    case O_TRAIN: o->train_data = optarg; break;
    case O_TEST: o->test_data = optarg; break;
    case O_DATA: o->data = optarg; break;
    case O_WEIGHTS: o->weights = optarg; break;
    case O_CKPT: o->checkpoint = optarg; break;
    case O_RECORD: o->run_record = optarg; break;
    case O_METRICS: o->metrics = optarg; break;
    case O_RESUME: o->resume = true; break;
    case O_FINITE: o->check_finite = true; break;
    case O_NO_SHUFFLE: o->no_shuffle = true; break;
    case O_EPOCHS: if (parse_i64(prog, "--epochs", optarg, 0, &o->epochs)) return 2; break;
    case O_BATCH: if (parse_i64(prog, "--batch", optarg, 1, &o->batch)) return 2; break;
    case O_THREADS: if (parse_i64(prog, "--threads", optarg, 0, &o->threads)) return 2; break;
    case O_CKPT_EVERY: if (parse_i64(prog, "--checkpoint-every", optarg, 1, &o->ckpt_every)) return 2; break;
    case O_LOG_EVERY: if (parse_i64(prog, "--log-every", optarg, 1, &o->log_every)) return 2; break;
    case O_MAX_STEPS: if (parse_i64(prog, "--max-steps", optarg, 1, &o->max_steps)) return 2; break;
    case O_SEED:
      if (parse_i64(prog, "--seed", optarg, 0, &v)) return 2;
      o->seed = (uint64_t)v, o->have_seed = true;
      break;
    case O_LR: {
      char *end;
      o->lr = strtod(optarg, &end);
      if (*end || !*optarg || !(o->lr > 0) || !isfinite(o->lr)) {
        fprintf(stderr, "%s: --lr: '%s' is not a positive number\n", prog, optarg);
        return 2;
      }
      o->have_lr = true;
      break;
    }
    case 'h':
    case O_HELP: usage(stdout, prog, m); return -2;
    default:
      fprintf(stderr, "%s: %s: %s (try --help)\n", prog, name,
              optopt ? "missing argument or unknown option" : "unknown option");
      return 2;
    }
  }
  return 0;
}

// ---- data paths -------------------------------------------------------------------

// Splits a comma-separated list in place (s is a copy); returns the count.
static int split_paths(char *s, const char **out, int max) {
  int n = 0;
  for (char *p = strtok(s, ","); p && n < max; p = strtok(NULL, ",")) out[n++] = p;
  return n;
}

// The recipe's default files for the first n inputs: one per input, or one
// when every input names the same file. NULL in *buf when an input has none.
static int default_paths(const MlcModel *m, int n, bool test, const char **out) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    const MlcDataSource *s = test ? &m->inputs[i].test : &m->inputs[i].train;
    if (!s->path) return 0;
    if (k && !strcmp(out[k - 1], s->path)) continue;
    out[k++] = s->path;
  }
  return k;
}

static int open_data(const char *prog, const MlcModel *m, int ninputs, const char *arg, bool test,
                     MlcDataset *ds) {
  const char *paths[8];
  char *copy = arg ? strdup(arg) : NULL;
  int n = copy ? split_paths(copy, paths, 8) : default_paths(m, ninputs, test, paths);
  char err[512];
  int rc = 0;
  if (!n) {
    fprintf(stderr, "%s: no %s data given and the model names none (use --%s)\n", prog,
            test ? "test" : "training", test ? "test-data" : "train-data");
    rc = -1;
  } else if (mlc_dataset_open(ds, m, ninputs, paths, n, test, err, sizeof err)) {
    fail(prog, err);
    rc = -1;
  }
  free(copy);
  return rc;
}

// ---- the run ---------------------------------------------------------------------

static size_t state_bytes(const MlcStateDesc *d) {
  size_t n = mlc_dtype_size(d->dtype);
  for (int k = 0; k < d->rank; k++) n *= (size_t)d->shape[k];
  return n;
}

static void *alloc64(size_t n) { return aligned_alloc(64, (n + 63) / 64 * 64 + 64); }

static void run_free(Run *r) {
  if (r->state)
    for (int i = 0; i < r->m->nstates; i++) free(r->state[i]);
  free(r->state);
  free(r->ctx.scratch);
  free(r->logits);
  mlc_pool_free(r->pool);
}

// syms: the values of m->syms the data bound (fixed for the run).
static int run_new(Run *r, const MlcModel *m, int64_t threads, int64_t max_batch,
                   const int64_t *syms, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  r->m = m, r->max_batch = max_batch;
  if (m->abi != MLC_ABI_VERSION)
    return rt_err(err, errlen, "model %s was compiled for runtime ABI %d; this runtime is ABI %d",
                  m->name, m->abi, MLC_ABI_VERSION);
  memcpy(r->ctx.syms, syms, sizeof r->ctx.syms);
  r->out_numel = mlc_output_numel(m, syms);
  r->state = calloc((size_t)m->nstates + 1, sizeof *r->state);
  r->pool = mlc_pool_new((int)threads);
  size_t scratch = m->scratch_bytes ? m->scratch_bytes(max_batch, r->ctx.syms) : 0;
  r->ctx.scratch = alloc64(scratch);
  r->logits = alloc64((size_t)max_batch * (size_t)(r->out_numel ? r->out_numel : 1) * sizeof(float));
  bool ok = r->state && r->pool && r->ctx.scratch && r->logits;
  for (int i = 0; ok && i < m->nstates; i++) {
    r->state[i] = alloc64(state_bytes(&m->states[i]));
    ok = r->state[i] != NULL;
    if (ok) memset(r->state[i], 0, state_bytes(&m->states[i]));
  }
  if (!ok) {
    run_free(r);
    return rt_err(err, errlen, "out of memory allocating the model's state");
  }
  r->ctx.model = m, r->ctx.state = r->state, r->ctx.scratch_size = scratch;
  r->ctx.pool = r->pool, r->ctx.nonfinite_site = -1;
  return 0;
}

static int init_state(Run *r, uint64_t seed, char *err, size_t errlen) {
  r->ctx.rng = mlc_rng_new(seed);
  if (!r->m->init) {
    mlc_init_state(r->m, seed, r->state);
    return 0;
  }
  if (r->m->init(&r->ctx, 0, NULL, NULL) != MLC_OK)
    return rt_err(err, errlen, "init: %s", r->ctx.err);
  r->ctx.rng = mlc_rng_new(seed); // init's draws do not shift the training stream
  return 0;
}

// Index of the class-label input (compared with the argmax), or -1.
static int label_input(const MlcModel *m) {
  for (int i = 0; i < m->ninputs; i++)
    if (m->inputs[i].num_classes) return i;
  return -1;
}

static int64_t label_at(const MlcInputDesc *in, const void *p, int64_t s) {
  switch (in->dtype) {
  case MLC_I32: return ((const int32_t *)p)[s];
  case MLC_I64: return ((const int64_t *)p)[s];
  case MLC_F32: return (int64_t)((const float *)p)[s];
  case MLC_F64: return (int64_t)((const double *)p)[s];
  default: return ((const uint8_t *)p)[s];
  }
}

static int64_t argmax(const float *row, int64_t n) {
  int64_t best = 0;
  for (int64_t j = 1; j < n; j++)
    if (row[j] > row[best]) best = j;
  return best;
}

// Correct predictions in a batch, as a sum over its samples of the fraction
// of a sample's rows (positions of a sequence; one for a classifier) whose
// argmax is the label (0 when the model has no label input).
static double correct(const Run *r, const MlcBatch *b) {
  int li = label_input(r->m);
  int64_t n = r->m->num_out;
  if (li < 0 || !n) return 0;
  int64_t rows = r->out_numel / n;
  if (mlc_input_numel(&r->m->inputs[li], r->ctx.syms) != rows) return 0;
  int64_t c = 0;
  for (int64_t s = 0; s < b->size * rows; s++)
    c += argmax(r->logits + s * n, n) == label_at(&r->m->inputs[li], b->inputs[li], s);
  return (double)c / (double)rows;
}

// Mean loss and accuracy of the eval entry point over a dataset.
static int evaluate(Run *r, const MlcDataset *ds, int64_t batch, double *loss, double *acc,
                    char *err, size_t errlen) {
  MlcLoader *l = mlc_loader_new(ds, batch, false, 0, false, true);
  if (!l) return rt_err(err, errlen, "out of memory");
  double sum = 0, good = 0;
  int64_t n = 0;
  MlcBatch b;
  while (mlc_loader_next(l, &b)) {
    float lo = 0;
    void *outs[2] = {&lo, r->logits};
    if (r->m->eval(&r->ctx, b.size, b.inputs, outs) != MLC_OK) {
      mlc_loader_free(l);
      return rt_err(err, errlen, "eval: %s", r->ctx.err);
    }
    sum += (double)lo * (double)b.size;
    n += b.size;
    good += correct(r, &b);
  }
  mlc_loader_free(l);
  *loss = n ? sum / (double)n : NAN;
  *acc = n ? good / (double)n : NAN;
  return 0;
}

// ---- train -----------------------------------------------------------------------

typedef struct Train {
  const char *prog;
  const Opts *o;
  Run run;
  MlcDataset train, test;
  bool have_test;
  MlcLoader *loader;
  MlcLog *log;
  MlcRunState rs;
  MlcEpochStats *stats;
  int nstats;
  double t0, images;
  bool stopped; // --max-steps reached
  char data_desc[2][1024]; // the files read, for the run record
} Train;

static int save_ckpt(Train *t, char *err, size_t errlen) {
  if (!t->o->checkpoint) return 0;
  t->rs.epoch = mlc_loader_epoch(t->loader);
  t->rs.pos = mlc_loader_pos(t->loader);
  t->rs.step = t->run.ctx.step;
  t->rs.rng = t->run.ctx.rng;
  return mlc_ckpt_save(t->o->checkpoint, t->run.m, t->run.state, &t->rs, err, errlen);
}

// Reports a non-finite loss (or the model's first non-finite value).
static int nonfinite(Train *t, double loss, char *err, size_t errlen) {
  const MlcCtx *c = &t->run.ctx;
  const MlcModel *m = t->run.m;
  double v = c->nonfinite_site >= 0 ? c->nonfinite_value : loss;
  const char *what = isnan(v) ? "NaN" : "infinite";
  if (c->nonfinite_site >= 0 && c->nonfinite_site < m->nsites)
    return rt_err(err, errlen, "step %lld: loss became %s at %s (%s)", (long long)c->step + 1, what,
                  m->sites[c->nonfinite_site].loc, m->sites[c->nonfinite_site].op);
  return rt_err(err, errlen, "step %lld: loss became %s", (long long)c->step + 1, what);
}

// One train_step on batch b; adds to the epoch's sums.
static int step(Train *t, const MlcBatch *b, double *lsum, double *good, float out[3], char *err,
                size_t errlen) {
  MlcCtx *c = &t->run.ctx;
  c->step_seed = mlc_rng_step_seed(&c->rng);
  c->nonfinite_site = -1;
  void *outs[4] = {&out[0], &out[1], &out[2], t->run.logits};
  int rc = t->run.m->train_step(c, b->size, b->inputs, outs);
  if (rc == MLC_ERROR) return rt_err(err, errlen, "step %lld: %s", (long long)c->step + 1, c->err);
  if (t->o->check_finite && (rc == MLC_NONFINITE || !isfinite(out[0])))
    return nonfinite(t, out[0], err, errlen);
  c->step++;
  *lsum += (double)out[0] * (double)b->size;
  *good += correct(&t->run, b);
  return 0;
}

// The schedule's per-epoch update (reduce-on-plateau), fed the metric the
// recipe names: test loss or accuracy, the training figure without test data.
// It runs before the epoch's checkpoint, so a resumed run sees its state.
static int epoch_end(Train *t, const MlcEpochStats *s, char *err, size_t errlen) {
  const MlcModel *m = t->run.m;
  if (!m->epoch_end) return 0;
  bool acc = m->recipe.metric && !strcmp(m->recipe.metric, "accuracy");
  double metric = acc ? (t->have_test ? s->test_accuracy : s->train_accuracy)
                      : (t->have_test ? s->test_loss : s->train_loss);
  const void *in[1] = {&metric};
  void *out[1] = {NULL};
  if (m->epoch_end(&t->run.ctx, 0, in, out) != MLC_OK)
    return rt_err(err, errlen, "epoch %lld: %s", (long long)s->epoch, t->run.ctx.err);
  return 0;
}

static int train_epoch(Train *t, int64_t epoch, char *err, size_t errlen) {
  const Opts *o = t->o;
  MlcCtx *c = &t->run.ctx;
  int64_t steps = mlc_loader_batches(t->loader), k = mlc_loader_pos(t->loader) / o->batch;
  double lsum = 0, t0 = now(), good = 0;
  int64_t n = 0;
  MlcBatch b;
  c->epoch = epoch;
  while (mlc_loader_next(t->loader, &b)) {
    float out[3] = {0};
    if (step(t, &b, &lsum, &good, out, err, errlen)) return -1;
    n += b.size, k++;
    t->images += (double)b.size;
    double dt = now() - t0;
    mlc_log_step(t->log, epoch + 1, o->epochs, k, steps, c->step, out[0],
                 good / (double)n, out[2], out[1], dt > 0 ? (double)n / dt : 0);
    if (o->ckpt_every && c->step % o->ckpt_every == 0 && save_ckpt(t, err, errlen)) return -1;
    if (o->max_steps && c->step >= o->max_steps) {
      t->stopped = true;
      return save_ckpt(t, err, errlen);
    }
  }
  MlcEpochStats s = {.epoch = epoch + 1, .train_loss = n ? lsum / (double)n : NAN,
                     .train_accuracy = n ? good / (double)n : NAN,
                     .test_loss = NAN, .test_accuracy = NAN};
  s.seconds = now() - t0;
  s.images_per_second = s.seconds > 0 ? (double)n / s.seconds : 0;
  if (t->have_test &&
      evaluate(&t->run, &t->test, o->batch, &s.test_loss, &s.test_accuracy, err, errlen))
    return -1;
  if (epoch_end(t, &s, err, errlen)) return -1;
  mlc_log_epoch(t->log, &s);
  MlcEpochStats *ns = realloc(t->stats, (size_t)(t->nstats + 1) * sizeof *ns);
  if (!ns) return rt_err(err, errlen, "out of memory");
  t->stats = ns;
  t->stats[t->nstats++] = s;
  return save_ckpt(t, err, errlen);
}

static int write_record(Train *t, char *err, size_t errlen) {
  if (!t->o->run_record) return 0;
  const MlcEpochStats *last = t->nstats ? &t->stats[t->nstats - 1] : NULL;
  double secs = now() - t->t0;
  MlcRunInfo ri = {.model = t->run.m, .seed = t->rs.seed, .batch = t->o->batch,
                   .epochs = t->o->epochs, .threads = mlc_pool_threads(t->run.pool),
                   .lr = t->run.ctx.lr, .train_data = t->data_desc[0],
                   .test_data = t->data_desc[1], .nepochs = t->nstats, .epochs_stats = t->stats,
                   .final_train_loss = last ? last->train_loss : NAN,
                   .final_test_loss = last ? last->test_loss : NAN,
                   .final_test_accuracy = last ? last->test_accuracy : NAN,
                   .images_per_second = secs > 0 ? t->images / secs : 0, .seconds = secs};
  return mlc_log_run_record(t->o->run_record, &ri, err, errlen);
}

// Removes temporary files a killed run left beside the checkpoint
// (safetensors writes `FILE.tmp.XXXXXX`, then renames it over FILE).
static void remove_stale_temps(const char *ckpt) {
  size_t n = strlen(ckpt) + 8;
  char *pat = malloc(n);
  glob_t g;
  if (!pat) return;
  snprintf(pat, n, "%s.tmp.*", ckpt);
  if (!glob(pat, GLOB_NOSORT | GLOB_NOESCAPE, NULL, &g)) {
    for (size_t i = 0; i < g.gl_pathc; i++) unlink(g.gl_pathv[i]);
    globfree(&g);
  }
  free(pat);
}

// Refuses a --weights file holding a tensor the model has no state for: a
// name that matches nothing means the file was written for another model
// (or under other names), even when every name the model needs is there.
static int check_weight_names(const char *path, const MlcModel *m, char *err, size_t errlen) {
  MlcSt *st = mlc_st_open(path, err, errlen);
  if (!st) return -1;
  int rc = 0;
  for (int i = 0; !rc && i < mlc_st_count(st); i++) {
    const char *name = mlc_st_at(st, i)->name;
    bool known = false;
    for (int j = 0; !known && j < m->nstates; j++) known = !strcmp(name, m->states[j].path);
    if (!known)
      rc = rt_err(err, errlen, "%s: tensor '%s' is not a state of model %s", path, name, m->name);
  }
  mlc_st_close(st);
  return rc;
}

// Fresh state from the seed, then --weights over the parameters and buffers
// (optimizer state keeps its initial values), or the checkpoint's state and
// cursor.
static int start_state(Train *t, char *err, size_t errlen) {
  const Opts *o = t->o;
  t->rs = (MlcRunState){.seed = o->seed, .lr = o->lr, .rng = mlc_rng_new(o->seed)};
  if (!o->resume) {
    if (init_state(&t->run, o->seed, err, errlen)) return -1;
    if (!o->weights) return 0;
    if (check_weight_names(o->weights, t->run.m, err, errlen)) return -1;
    return mlc_ckpt_load(o->weights, t->run.m, t->run.state, true, NULL, err, errlen);
  }
  if (!o->checkpoint) return rt_err(err, errlen, "--resume needs --checkpoint FILE");
  if (mlc_ckpt_load(o->checkpoint, t->run.m, t->run.state, false, &t->rs, err, errlen)) return -1;
  if (o->have_seed && o->seed != t->rs.seed)
    fprintf(stderr, "%s: note: resuming with the checkpoint's seed %" PRIu64 " (not %" PRIu64 ")\n",
            t->prog, t->rs.seed, o->seed);
  if (o->have_lr) t->rs.lr = o->lr;
  t->run.ctx.rng = t->rs.rng;
  t->run.ctx.step = t->rs.step;
  return 0;
}

static int train_run(Train *t, char *err, size_t errlen) {
  const Opts *o = t->o;
  const MlcModel *m = t->run.m;
  if (o->checkpoint) remove_stale_temps(o->checkpoint);
  if (start_state(t, err, errlen)) return -1;
  MlcCtx *c = &t->run.ctx;
  c->lr = t->rs.lr;
  c->check_finite = o->check_finite;
  t->loader = mlc_loader_new(&t->train, o->batch, !o->no_shuffle, t->rs.seed, false, true);
  if (!t->loader) return rt_err(err, errlen, "out of memory");
  mlc_loader_seek(t->loader, t->rs.epoch, t->rs.pos);
  c->steps_per_epoch = mlc_loader_batches(t->loader);
  c->total_steps = c->steps_per_epoch * o->epochs;
  int64_t every = o->log_every ? o->log_every : (c->steps_per_epoch + 9) / 10;
  t->log = mlc_log_new(stdout, o->metrics, every, err, errlen);
  if (!t->log) return -1;
  (void)m;
  t->t0 = now();
  for (int64_t e = mlc_loader_epoch(t->loader); e < o->epochs && !t->stopped;
       e = mlc_loader_epoch(t->loader))
    if (train_epoch(t, e, err, errlen)) return -1;
  return write_record(t, err, errlen);
}

// "a.gz,b.gz": the files a dataset was read from.
static void describe(const MlcDataset *ds, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < ds->narrays && o < len; i++)
    o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "", ds->arrays[i].path);
}

static int cmd_train(const char *prog, int argc, char **argv, const MlcModel *m) {
  Opts o;
  int rc = parse_opts(prog, argc, argv, m, &o);
  if (rc) return rc == -2 ? 0 : rc;
  if (optind < argc) {
    fprintf(stderr, "%s: train: unexpected argument '%s' (try --help)\n", prog, argv[optind]);
    return EXIT_USAGE;
  }
  if (o.resume && !o.checkpoint) {
    fprintf(stderr, "%s: --resume needs --checkpoint FILE\n", prog);
    return EXIT_USAGE;
  }
  if (o.resume && o.weights) {
    fprintf(stderr, "%s: --weights and --resume exclude each other (the checkpoint holds the "
            "weights)\n", prog);
    return EXIT_USAGE;
  }
  Train t = {.prog = prog, .o = &o};
  char err[1024];
  if (open_data(prog, m, m->ninputs, o.train_data, false, &t.train)) return EXIT_RUNTIME;
  bool want_test = o.test_data || default_paths(m, m->ninputs, true, (const char *[8]){0});
  if (want_test && open_data(prog, m, m->ninputs, o.test_data, true, &t.test)) {
    mlc_dataset_free(&t.train);
    return EXIT_RUNTIME;
  }
  t.have_test = want_test;
  for (int k = 0; want_test && k < m->nsyms; k++)
    if (t.test.syms[k] != t.train.syms[k]) {
      fprintf(stderr, "%s: %s: %s = %lld, but the training data has %s = %lld\n", prog,
              t.test.arrays[0].path, m->syms[k], (long long)t.test.syms[k], m->syms[k],
              (long long)t.train.syms[k]);
      mlc_dataset_free(&t.train);
      mlc_dataset_free(&t.test);
      return EXIT_RUNTIME;
    }
  describe(&t.train, t.data_desc[0], sizeof t.data_desc[0]);
  if (want_test) describe(&t.test, t.data_desc[1], sizeof t.data_desc[1]);
  rc = run_new(&t.run, m, o.threads, o.batch, t.train.syms, err, sizeof err) ? -1
                                                                             : train_run(&t, err, sizeof err);
  if (rc) fail(prog, err);
  mlc_loader_free(t.loader);
  mlc_log_free(t.log);
  free(t.stats);
  if (t.run.state || t.run.pool) run_free(&t.run);
  mlc_dataset_free(&t.train);
  if (t.have_test) mlc_dataset_free(&t.test);
  return rc ? EXIT_RUNTIME : 0;
}

// ---- eval and predict -------------------------------------------------------------

static int cmd_eval(const char *prog, int argc, char **argv, const MlcModel *m) {
  Opts o;
  int rc = parse_opts(prog, argc, argv, m, &o);
  if (rc) return rc == -2 ? 0 : rc;
  if (!o.weights || optind < argc) {
    fprintf(stderr, "%s: eval: %s (try --help)\n", prog,
            o.weights ? "unexpected argument" : "--weights FILE is required");
    return EXIT_USAGE;
  }
  MlcDataset ds;
  if (open_data(prog, m, m->ninputs, o.data, true, &ds)) return EXIT_RUNTIME;
  Run r;
  char err[1024];
  double loss = NAN, acc = NAN;
  rc = run_new(&r, m, o.threads, o.batch, ds.syms, err, sizeof err);
  if (!rc) {
    rc = mlc_ckpt_load(o.weights, m, r.state, true, NULL, err, sizeof err);
    if (!rc) rc = evaluate(&r, &ds, o.batch, &loss, &acc, err, sizeof err);
    run_free(&r);
  }
  if (rc) fail(prog, err);
  else if (label_input(m) >= 0) printf("loss %.6f accuracy %.4f (%lld samples)\n", loss, acc, (long long)ds.n);
  else printf("loss %.6f (%lld samples)\n", loss, (long long)ds.n);
  mlc_dataset_free(&ds);
  return rc ? EXIT_RUNTIME : 0;
}

// predict's input: an IDX/NPY file, or numbers one sample a line.
static int read_predict_input(const char *path, const MlcModel *m, MlcDataset *ds, char *err,
                              size_t errlen) {
  MlcArray a;
  int rc;
  if (!strcmp(path, "-")) {
    rc = mlc_read_lines(stdin, "<stdin>", &a, err, errlen);
  } else {
    MlcDataKind k = mlc_data_kind(path);
    if (k == MLC_DATA_IDX || k == MLC_DATA_NPY) rc = mlc_read_any(path, k, 0, &a, err, errlen);
    else {
      FILE *f = fopen(path, "r");
      if (!f) return rt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
      rc = mlc_read_lines(f, path, &a, err, errlen);
      fclose(f);
    }
  }
  if (rc) return -1;
  return mlc_dataset_bind(ds, m, m->n_forward_inputs, &a, 1, true, err, errlen);
}

// One line per row of num_out values (one row per sample for a classifier).
static void print_prediction(const MlcModel *m, const float *row) {
  int64_t n = m->num_out;
  double mx = row[argmax(row, n)], z = 0;
  if (!m->output_is_prob)
    for (int64_t j = 0; j < n; j++) z += exp((double)row[j] - mx);
  printf("%lld", (long long)argmax(row, n));
  for (int64_t j = 0; j < n; j++)
    printf(" %.6f", m->output_is_prob ? (double)row[j] : exp((double)row[j] - mx) / z);
  putchar('\n');
}

static int predict_all(Run *r, const MlcDataset *ds, int64_t batch, char *err, size_t errlen) {
  MlcLoader *l = mlc_loader_new(ds, batch, false, 0, false, false);
  if (!l) return rt_err(err, errlen, "out of memory");
  MlcBatch b;
  int rc = 0;
  while (!rc && mlc_loader_next(l, &b)) {
    void *outs[1] = {r->logits};
    if (r->m->predict(&r->ctx, b.size, b.inputs, outs) != MLC_OK)
      rc = rt_err(err, errlen, "predict: %s", r->ctx.err);
    int64_t rows = r->m->num_out ? b.size * (r->out_numel / r->m->num_out) : 0;
    for (int64_t s = 0; !rc && s < rows; s++) print_prediction(r->m, r->logits + s * r->m->num_out);
  }
  mlc_loader_free(l);
  return rc;
}

static int cmd_predict(const char *prog, int argc, char **argv, const MlcModel *m) {
  Opts o;
  int rc = parse_opts(prog, argc, argv, m, &o);
  if (rc) return rc == -2 ? 0 : rc;
  if (!o.weights || argc - optind > 1) {
    fprintf(stderr, "%s: predict: %s (try --help)\n", prog,
            o.weights ? "at most one input file" : "--weights FILE is required");
    return EXIT_USAGE;
  }
  const char *in = optind < argc ? argv[optind] : "-";
  char err[1024];
  Run r;
  MlcDataset ds;
  // a model with symbolic dims reads its input first: it binds the symbols,
  // which size the run; others check the weights before reading anything
  const int64_t none[MLC_MAX_RANK] = {0};
  bool have_ds = false;
  if (m->nsyms) have_ds = !(rc = read_predict_input(in, m, &ds, err, sizeof err));
  if (!rc) rc = run_new(&r, m, o.threads, o.batch, have_ds ? ds.syms : none, err, sizeof err);
  if (!rc) {
    rc = mlc_ckpt_load(o.weights, m, r.state, true, NULL, err, sizeof err);
    if (!rc && !have_ds) have_ds = !(rc = read_predict_input(in, m, &ds, err, sizeof err));
    if (!rc) rc = predict_all(&r, &ds, o.batch, err, sizeof err);
    run_free(&r);
  }
  if (have_ds) mlc_dataset_free(&ds);
  if (rc) fail(prog, err);
  return rc ? EXIT_RUNTIME : 0;
}

int mlc_main(int argc, char **argv, const MlcModel *m) {
  const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;
  const char *prog = slash ? slash + 1 : argc > 0 ? argv[0] : m->name;
  if (argc < 2) {
    usage(stderr, prog, m);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(stdout, prog, m);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("%s (model %s, hash %s)\n", m->compiler ? m->compiler : "mlc", m->name, m->hash);
    return 0;
  }
  if (!strcmp(cmd, "train")) return cmd_train(prog, argc - 1, argv + 1, m);
  if (!strcmp(cmd, "eval")) return cmd_eval(prog, argc - 1, argv + 1, m);
  if (!strcmp(cmd, "predict")) return cmd_predict(prog, argc - 1, argv + 1, m);
  fprintf(stderr, "%s: unknown command '%s' (train, eval, predict; try --help)\n", prog, cmd);
  return EXIT_USAGE;
}
