// driver.c — the generated program's main: the command line, `eval` and
// `predict` (training is train.c).
//
// mlc_main parses the command line (getopt_long per subcommand), reads and
// validates the data, makes the model instance (core/instance.h: state,
// scratch arena, pool) and turns every failure into one line on stderr and
// an exit code: 0 done, 1 runtime error (bad data, unreadable checkpoint,
// non-finite loss, a failed write), 2 usage. Numbers from the command line
// are range-checked here; sizes they imply are checked where they are
// computed (core/rt_util.h, rt_mul).
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/checkpoint.h"
#include "core/rt_util.h"
#include "program.h"

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
          "%s"
          "  --checkpoint FILE    write a checkpoint after each epoch (safetensors); with\n"
          "                       --epochs 0, one of the initial state\n"
          "  --checkpoint-every N also every N steps\n"
          "  --resume             continue from --checkpoint (refused when --batch or the\n"
          "                       training data differ from the checkpoint's, unless --force)\n"
          "  --force              resume even so\n"
          "  --weights FILE       start from these parameters (safetensors: an mlc checkpoint or\n"
          "                       weights, or a PyTorch-written file under the model's paths,\n"
          "                       dtypes and shapes) instead of the initialisers; optimizer\n"
          "                       state starts fresh\n"
          "  --no-shuffle         read the training data in file order every epoch\n"
          "  --run-record FILE    JSON record of the run\n"
          "  --metrics FILE       JSON lines, one per logged step and epoch\n"
          "  --log-every N        a log line every N steps (default: 10 per epoch)\n"
          "  --check-finite       say where the first NaN/Inf came from (a non-finite loss\n"
          "                       always stops the run, keeping the last finite checkpoint)\n"
          "  --max-steps N        stop (and checkpoint) after N steps in all\n"
          "\n"
          "predict reads one sample per line (numbers separated by blanks or commas) from\n"
          "FILE or stdin, or an IDX/NPY file, and prints the class and probabilities of each\n"
          "row of class scores (a model without classes: its outputs).\n"
          "Exit status: 0 success, 1 runtime error, 2 usage error.\n",
          prog, m->name, m->compiler ? m->compiler : "mlc", prog, prog, (long long)r->epochs,
          (long long)r->batch, r->lr, (unsigned long long)r->seed,
          !m->device ? ""
          : m->device_only
              ? "  --device cuda        where train, eval and predict run (built for CUDA alone)\n"
              : "  --device cpu|cuda    where train, eval and predict run; default: cuda when a\n"
                "                       driver and a GPU are present, else cpu (said on stderr)\n");
}

static int parse_i64(const char *prog, const char *opt, const char *s, int64_t min, int64_t max,
                     int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || !*s || v < min || v > max) {
    fprintf(stderr, "%s: %s: '%s' is not an integer in %lld..%lld\n", prog, opt, s, (long long)min,
            (long long)max);
    return -1;
  }
  *out = v;
  return 0;
}

enum { O_TRAIN = 256, O_TEST, O_DATA, O_WEIGHTS, O_EPOCHS, O_BATCH, O_LR, O_SEED, O_THREADS,
       O_CKPT, O_CKPT_EVERY, O_RESUME, O_RECORD, O_METRICS, O_LOG_EVERY, O_FINITE, O_HELP,
       O_MAX_STEPS, O_NO_SHUFFLE, O_FORCE, O_DEVICE };

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
    {"force", no_argument, 0, O_FORCE},
    {"device", required_argument, 0, O_DEVICE},
    {0, 0, 0, 0}};

// Parses argv (argv[0] = the subcommand). Returns 0, 2 on usage errors,
// -2 after printing --help.
static int parse_opts(const char *prog, int argc, char **argv, const MlcModel *m, Opts *o) {
  *o = (Opts){.epochs = m->recipe.epochs, .batch = m->recipe.batch, .lr = m->recipe.lr,
              .seed = m->recipe.seed, .device = MLC_DEVICE_AUTO};
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
    case O_FORCE: o->force = true; break;
    case O_DEVICE:
      if (!strcmp(optarg, "cpu")) o->device = MLC_DEVICE_CPU;
      else if (!strcmp(optarg, "cuda")) o->device = MLC_DEVICE_CUDA;
      else {
        fprintf(stderr, "%s: --device: '%s' is neither cpu nor cuda\n", prog, optarg);
        return 2;
      }
      break;
    case O_EPOCHS: if (parse_i64(prog, "--epochs", optarg, 0, MLC_CKPT_MAX_EPOCH, &o->epochs)) return 2; break;
    case O_BATCH: if (parse_i64(prog, "--batch", optarg, 1, MLC_MAX_BATCH, &o->batch)) return 2; break;
    case O_THREADS: if (parse_i64(prog, "--threads", optarg, 0, MLC_MAX_THREADS, &o->threads)) return 2; break;
    case O_CKPT_EVERY: if (parse_i64(prog, "--checkpoint-every", optarg, 1, INT64_MAX, &o->ckpt_every)) return 2; break;
    case O_LOG_EVERY: if (parse_i64(prog, "--log-every", optarg, 1, INT64_MAX, &o->log_every)) return 2; break;
    case O_MAX_STEPS: if (parse_i64(prog, "--max-steps", optarg, 1, MLC_CKPT_MAX_STEP, &o->max_steps)) return 2; break;
    case O_SEED:
      if (parse_i64(prog, "--seed", optarg, 0, INT64_MAX, &v)) return 2;
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

int data_paths(const MlcModel *m, int ninputs, const char *arg, bool test, Paths *out) {
  *out = (Paths){0};
  if (arg) {
    // more than MLC_MAX_INPUTS files: n says how many, for the message
    out->copy = strdup(arg);
    for (char *p = out->copy ? strtok(out->copy, ",") : NULL; p; p = strtok(NULL, ","))
      if (out->n++ < MLC_MAX_INPUTS) out->p[out->n - 1] = p;
    return out->n;
  }
  for (int i = 0; i < ninputs; i++) {
    const MlcDataSource *s = test ? &m->inputs[i].test : &m->inputs[i].train;
    if (!s->path) return out->n = 0;
    if (out->n && !strcmp(out->p[out->n - 1], s->path)) continue;
    out->p[out->n++] = s->path;
  }
  return out->n;
}

void paths_free(Paths *p) {
  free(p->copy);
  *p = (Paths){0};
}

int open_data(const char *prog, const MlcModel *m, int ninputs, const Paths *p, bool test,
              MlcDataset *ds) {
  char err[1024];
  memset(ds, 0, sizeof *ds);
  if (!p->n) {
    fprintf(stderr, "%s: no %s data given and the model names none (use --%s)\n", prog,
            test ? "test" : "training", test ? "test-data" : "train-data");
    return -1;
  }
  if (mlc_dataset_open(ds, m, ninputs, p->p, p->n, test, err, sizeof err)) {
    fail(prog, err);
    return -1;
  }
  return 0;
}

// ---- the instance, accuracy, evaluation --------------------------------------------------

MlcInstance *program_instance(const MlcModel *m, const Opts *o, int64_t most, const int64_t *syms,
                              char *err, size_t errlen) {
  MlcOptions opt = {.seed = o->seed, .threads = (int)o->threads,
                    .max_batch = o->batch < most ? o->batch : most, .steps_per_epoch = 1,
                    .epochs = 1, .device = m->device ? o->device : MLC_DEVICE_CPU};
  MlcInstance *in = rt_instance_new(m, &opt, syms, err, errlen);
  // a program built for CUDA says where it runs, in one line
  if (in && m->device && o->prog) fprintf(stderr, "%s: device %s\n", o->prog, mlc_instance_device(in));
  return in;
}

int program_load_weights(MlcInstance *in, const char *path, char *err, size_t errlen) {
  if (mlc_load_weights(path, in->m, in->state, err, errlen)) return -1;
  if (rt_instance_to_device(in)) return rt_err(err, errlen, "%s", in->err);
  return 0;
}

static int label_input(const MlcModel *m) {
  for (int i = 0; i < m->ninputs; i++)
    if (m->inputs[i].num_classes) return i;
  return -1;
}

Accuracy accuracy_of(const MlcInstance *in) {
  const MlcModel *m = in->m;
  Accuracy a = {.label = label_input(m), .classes = m->out_classes};
  if (a.label < 0 || a.classes <= 0 || in->out_numel % a.classes) return (Accuracy){.label = -1};
  a.rows = in->out_numel / a.classes;
  if (mlc_input_numel(&m->inputs[a.label], in->ctx.syms) != a.rows) return (Accuracy){.label = -1};
  return a;
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

double count_correct(const MlcInstance *in, const Accuracy *a, const MlcBatch *b, double *scored) {
  if (a->label < 0) return 0;
  const MlcInputDesc *lab = &in->m->inputs[a->label];
  int64_t c = 0, n = 0;
  for (int64_t s = 0; s < b->size * a->rows; s++) {
    int64_t t = label_at(lab, b->inputs[a->label], s);
    if (lab->has_ignore && t == lab->ignore_value) continue;
    c += argmax(in->logits + s * a->classes, a->classes) == t;
    n++;
  }
  *scored += (double)n;
  return (double)c;
}

int evaluate(MlcInstance *in, const Accuracy *a, const MlcDataset *ds, int64_t batch, double *loss,
             double *acc, char *err, size_t errlen) {
  MlcLoader *l = mlc_loader_new(ds, batch, false, 0, false, true);
  if (!l) return rt_err(err, errlen, "out of memory");
  double sum = 0, good = 0, scored = 0;
  int64_t n = 0;
  MlcBatch b;
  while (mlc_loader_next(l, &b)) {
    float lo = 0;
    void *outs[2] = {&lo, in->logits};
    if (in->m->eval(&in->ctx, b.size, b.inputs, outs) != MLC_OK) {
      mlc_loader_free(l);
      return rt_err(err, errlen, "eval: %s", in->ctx.err);
    }
    sum += (double)lo * (double)b.size;
    n += b.size;
    good += count_correct(in, a, &b, &scored);
  }
  mlc_loader_free(l);
  *loss = n ? sum / (double)n : NAN;
  *acc = scored > 0 && a->label >= 0 ? good / scored : NAN;
  return 0;
}

// A failed write to stdout (predictions to a full disk) is an error too.
static int check_stdout(char *err, size_t errlen) {
  if (fflush(stdout) || ferror(stdout))
    return rt_err(err, errlen, "standard output: write failed: %s", strerror(errno ? errno : EIO));
  return 0;
}

// ---- eval and predict -------------------------------------------------------------

static int cmd_eval(const char *prog, const Opts *o, const MlcModel *m) {
  Paths p;
  MlcDataset ds;
  data_paths(m, m->ninputs, o->data, true, &p);
  int rc = open_data(prog, m, m->ninputs, &p, true, &ds);
  paths_free(&p);
  if (rc) return EXIT_RUNTIME;
  char err[1024];
  double loss = NAN, acc = NAN;
  MlcInstance *in = program_instance(m, o, ds.n, ds.syms, err, sizeof err);
  rc = in ? program_load_weights(in, o->weights, err, sizeof err) : -1;
  Accuracy a = in ? accuracy_of(in) : (Accuracy){.label = -1};
  if (!rc) rc = evaluate(in, &a, &ds, o->batch, &loss, &acc, err, sizeof err);
  if (!rc && a.label >= 0) printf("loss %.6f accuracy %.4f (%lld samples)\n", loss, acc, (long long)ds.n);
  else if (!rc) printf("loss %.6f (%lld samples)\n", loss, (long long)ds.n);
  if (!rc) rc = check_stdout(err, sizeof err);
  if (rc) fail(prog, err);
  mlc_instance_free(in);
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
    if (rt_check_input(path, err, errlen)) return -1;
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

// One line per row of out_classes scores: the class and its probabilities;
// a model without a class dim prints each sample's outputs as they are.
static void print_rows(const MlcModel *m, const float *out, int64_t samples, int64_t numel) {
  int64_t n = m->out_classes > 0 && numel % m->out_classes == 0 ? m->out_classes : 0;
  if (!n) {
    for (int64_t s = 0; s < samples; s++) {
      for (int64_t j = 0; j < numel; j++) printf("%s%.9g", j ? " " : "", (double)out[s * numel + j]);
      putchar('\n');
    }
    return;
  }
  for (const float *row = out; row < out + samples * numel; row += n) {
    double mx = row[argmax(row, n)], z = 0;
    if (!m->output_is_prob)
      for (int64_t j = 0; j < n; j++) z += exp((double)row[j] - mx);
    printf("%lld", (long long)argmax(row, n));
    for (int64_t j = 0; j < n; j++)
      printf(" %.6f", m->output_is_prob ? (double)row[j] : exp((double)row[j] - mx) / z);
    putchar('\n');
  }
}

static int predict_all(MlcInstance *in, const MlcDataset *ds, int64_t batch, char *err,
                       size_t errlen) {
  if (rt_instance_reserve(in, batch < ds->n ? batch : ds->n))
    return rt_err(err, errlen, "%s", in->err);
  MlcLoader *l = mlc_loader_new(ds, batch, false, 0, false, false);
  if (!l) return rt_err(err, errlen, "out of memory");
  MlcBatch b;
  int rc = 0;
  while (!rc && mlc_loader_next(l, &b)) {
    void *outs[1] = {in->logits};
    if (in->m->predict(&in->ctx, b.size, b.inputs, outs) != MLC_OK)
      rc = rt_err(err, errlen, "predict: %s", in->ctx.err);
    else print_rows(in->m, in->logits, b.size, in->out_numel);
  }
  mlc_loader_free(l);
  return rc ? rc : check_stdout(err, errlen);
}

static int cmd_predict(const char *prog, const Opts *o, const char *input, const MlcModel *m) {
  char err[1024];
  MlcDataset ds;
  MlcInstance *in = NULL;
  // the input binds the symbols, which size the instance; without symbols
  // the weights are checked before anything is read
  const int64_t none[MLC_MAX_SYMS] = {0};
  bool have_ds = false;
  int rc = 0;
  if (m->nsyms) have_ds = !(rc = read_predict_input(input, m, &ds, err, sizeof err));
  if (!rc) rc = !(in = program_instance(m, o, have_ds ? ds.n : 1, have_ds ? ds.syms : none, err,
                                        sizeof err));
  if (!rc) rc = program_load_weights(in, o->weights, err, sizeof err);
  if (!rc && !have_ds) have_ds = !(rc = read_predict_input(input, m, &ds, err, sizeof err));
  if (!rc) rc = predict_all(in, &ds, o->batch, err, sizeof err);
  mlc_instance_free(in);
  if (have_ds) mlc_dataset_free(&ds);
  if (rc) fail(prog, err);
  return rc ? EXIT_RUNTIME : 0;
}

// ---- main ---------------------------------------------------------------------------

// The checks of a subcommand's arguments after parse_opts.
static int check_args(const char *prog, const char *cmd, int argc, char **argv, const Opts *o,
                      const MlcModel *m) {
  bool train = !strcmp(cmd, "train"), predict = !strcmp(cmd, "predict");
  if (!train && !o->weights) {
    fprintf(stderr, "%s: %s: --weights FILE is required (try --help)\n", prog, cmd);
    return EXIT_USAGE;
  }
  if (argc - optind > (predict ? 1 : 0)) {
    fprintf(stderr, "%s: %s: unexpected argument '%s' (try --help)\n", prog, cmd,
            argv[optind + (predict ? 1 : 0)]);
    return EXIT_USAGE;
  }
  if (train && o->resume && !o->checkpoint) {
    fprintf(stderr, "%s: --resume needs --checkpoint FILE\n", prog);
    return EXIT_USAGE;
  }
  if (o->device == MLC_DEVICE_CUDA && !m->device) {
    fprintf(stderr, "%s: --device cuda: this program was built without --target cuda\n", prog);
    return EXIT_USAGE;
  }
  if (o->device == MLC_DEVICE_CPU && m->device_only) {
    fprintf(stderr, "%s: --device cpu: this program was built with --target cuda alone (--target cpu,cuda "
            "runs on both)\n", prog);
    return EXIT_USAGE;
  }
  if (train && o->resume && o->weights) {
    fprintf(stderr, "%s: --weights and --resume exclude each other (the checkpoint holds the "
            "weights)\n", prog);
    return EXIT_USAGE;
  }
  return 0;
}

static int run_command(const char *prog, const char *cmd, int argc, char **argv, const MlcModel *m) {
  Opts o;
  int rc = parse_opts(prog, argc, argv, m, &o);
  if (rc) return rc == -2 ? 0 : rc;
  if ((rc = check_args(prog, cmd, argc, argv, &o, m))) return rc;
  o.prog = prog;
  if (!strcmp(cmd, "train")) return cmd_train(prog, &o, m);
  if (!strcmp(cmd, "eval")) return cmd_eval(prog, &o, m);
  return cmd_predict(prog, &o, optind < argc ? argv[optind] : "-", m);
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
  if (!strcmp(cmd, "train") || !strcmp(cmd, "eval") || !strcmp(cmd, "predict"))
    return run_command(prog, cmd, argc - 1, argv + 1, m);
  fprintf(stderr, "%s: unknown command '%s' (train, eval, predict; try --help)\n", prog, cmd);
  return EXIT_USAGE;
}
