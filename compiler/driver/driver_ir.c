// driver_ir.c — the `mlc build` and `mlc run` commands: front end, lowering
// (lower.h), autodiff of the loss (autodiff.h), and printing or running the
// result (ir.h, interp.h).
//
//   mlc build FILE.model [--model NAME] --emit ir|dot [--dump-after=PASS] [-o OUT]
//     ir:  the lowered module's text form, plus `loss_grad` (ad_grad of
//          loss) and `train_step` (optim.h, from the model's train block or
//          its defaults) when the model has a loss;
//     dot: one Graphviz digraph per function.
//     Passes so far, in order: lower, autodiff, optim. --dump-after=PASS
//     prints the module's text after that pass (to the output, before the
//     emission).
//   mlc run --interp FILE.model --model NAME --entry forward|loss|eval|predict
//           --input name=path.npy ... [--f32|--f64] [--seed N]
//     Runs one entry point in the reference interpreter. Parameters are
//     initialised from their declared initialisers with a deterministic
//     generator seeded by --seed (default 0); each output is printed as
//     `name: type = [v0, v1, ...]` (row-major).
//
// Exit codes: 0 success, 1 errors in the input, 2 usage errors.
#include "driver_ir.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/autodiff.h"
#include "sema/frontend.h"
#include "graph/interp.h"
#include "lower/lower.h"
#include "passes/optim.h"
#include "sema/recipe.h"
#include "sema/sema.h"

enum { EXIT_OK = 0, EXIT_ERRORS = 1, EXIT_USAGE = 2 };

static const char *const passes[] = {"lower", "autodiff", "optim", NULL};

static int usage_error(const char *cmd, const char *fmt, const char *arg) {
  fprintf(stderr, "mlc %s: error: ", cmd);
  fprintf(stderr, fmt, arg);
  fputs("\nTry 'mlc --help' for more information.\n", stderr);
  return EXIT_USAGE;
}

// The front end and the lowering of one model. Returns false after printing
// diagnostics.
static bool load(Arena *a, DiagSink *d, const char *path, const char **model, LowerResult *lr,
                 Recipe *recipe) {
  Sema *S = frontend_load_model(a, d, path, model);
  if (!S) return false;
  if (recipe) sema_recipe(S, *model, recipe);
  return lower_model(a, d, S, *model, lr);
}

static void dump(IrModule *m, FILE *out, const char *pass) {
  fprintf(out, "; after %s\n", pass);
  ir_dump(m, out, 0);
}

// ---- build --------------------------------------------------------------------------------------------
int driver_build(int argc, char **argv) {
  static const struct option longopts[] = {
      {"model", required_argument, NULL, 'm'},
      {"emit", required_argument, NULL, 'e'},
      {"dump-after", required_argument, NULL, 'd'},
      {NULL, 0, NULL, 0},
  };
  const char *model = NULL, *emit = NULL, *after = NULL, *out_path = NULL;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
    switch (c) {
    case 'm': model = optarg; break;
    case 'e': emit = optarg; break;
    case 'd': after = optarg; break;
    case 'o': out_path = optarg; break;
    default: return usage_error("build", "unknown or incomplete option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1) return usage_error("build", "expected one FILE.model%s", "");
  if (!emit || (strcmp(emit, "ir") && strcmp(emit, "dot")))
    return usage_error("build", "--emit must be ir or dot%s", "");
  if (after) {
    int k = 0;
    while (passes[k] && strcmp(passes[k], after)) k++;
    if (!passes[k])
      return usage_error("build", "unknown pass '%s' (passes: lower, autodiff, optim)", after);
  }
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  LowerResult lr;
  int status = EXIT_ERRORS;
  FILE *out = stdout;
  Recipe recipe;
  if (!load(a, &d, argv[optind], &model, &lr, &recipe)) goto done;
  if (out_path && !(out = fopen(out_path, "w"))) {
    fprintf(stderr, "mlc: error: cannot write '%s'\n", out_path);
    out = stdout;
    goto done;
  }
  if (!ir_verify(lr.module, &d)) goto done; // a lowering bug: the errors say where
  if (after && !strcmp(after, "lower")) dump(lr.module, out, "lower");
  if (lr.loss && !ad_grad(lr.module, lr.loss, &(AdOptions){.name = "loss_grad", .diags = &d}))
    goto done;
  if (!ir_verify(lr.module, &d)) goto done;
  if (after && !strcmp(after, "autodiff")) dump(lr.module, out, "autodiff");
  // The train step of the model's recipe (the defaults without a train block).
  if (lr.loss) {
    optim_build_step(lr.module, lr.loss, ir_module_find_func(lr.module, "loss_grad"), &recipe.opt);
    if (recipe.opt.sched == SCHED_PLATEAU)
      optim_build_plateau(lr.module, &recipe.opt, VEC_AT(lr.loss->outputs, IrNode, 0)->type->dtype);
  }
  if (!ir_verify(lr.module, &d)) goto done;
  if (after && !strcmp(after, "optim")) dump(lr.module, out, "optim");
  if (!strcmp(emit, "ir")) ir_dump(lr.module, out, 0);
  else
    for (int i = 0; i < lr.module->funcs.len; i++) ir_dot(VEC_AT(lr.module->funcs, IrFunc, i), out);
  status = EXIT_OK;
done:
  diag_print(&d, stderr);
  if (out != stdout) fclose(out);
  arena_free(a);
  return status;
}

// ---- run: .npy input ----------------------------------------------------------------------------------
// Reads a little-endian .npy (versions 1-3, C order): f4 f8 i4 i8 u1 b1.
static Tensor *read_npy(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) return snprintf(err, errlen, "cannot read '%s'", path), NULL;
  unsigned char pre[12];
  Tensor *t = NULL;
  char *hdr = NULL;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
    snprintf(err, errlen, "'%s' is not a .npy file", path);
    goto out;
  }
  size_t hlen = pre[8] | (size_t)pre[9] << 8;
  if (pre[6] >= 2) {
    if (fread(pre + 10, 1, 2, f) != 2) goto bad;
    hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
  }
  hdr = calloc(1, hlen + 1);
  if (!hdr || fread(hdr, 1, hlen, f) != hlen) goto bad;
  const char *d = strstr(hdr, "'descr'"), *s = strstr(hdr, "'shape'");
  if (!d || !s || strstr(hdr, "'fortran_order': True")) goto bad;
  d = strchr(d + 7, '\'');
  if (!d) goto bad;
  d++;
  static const struct { const char *descr; DType dt; int size; } kinds[] = {
      {"<f4", DT_F32, 4}, {"<f8", DT_F64, 8}, {"<i4", DT_I32, 4},
      {"<i8", DT_I64, 8}, {"|u1", DT_I64, 1}, {"|b1", DT_BOOL, 1}};
  int k = 0;
  while (k < 6 && strncmp(d, kinds[k].descr, 3)) k++;
  if (k == 6) {
    snprintf(err, errlen, "'%s': unsupported dtype", path);
    goto out;
  }
  int64_t dims[INTERP_MAX_RANK];
  int rank = 0;
  const char *p = strchr(s, '(');
  if (!p) goto bad;
  for (p++; *p && *p != ')';) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    if (rank == INTERP_MAX_RANK) goto bad;
    dims[rank++] = strtoll(p, (char **)&p, 10);
  }
  t = interp_tensor_new(kinds[k].dt, rank, dims);
  if (!t) goto bad;
  for (int64_t i = 0; i < t->numel; i++) {
    unsigned char b[8];
    if (fread(b, 1, (size_t)kinds[k].size, f) != (size_t)kinds[k].size) {
      interp_tensor_free(t);
      t = NULL;
      goto bad;
    }
    double v;
    if (k == 0) { float x; memcpy(&x, b, 4); v = x; }
    else if (k == 1) memcpy(&v, b, 8);
    else if (k == 2) { int32_t x; memcpy(&x, b, 4); v = x; }
    else if (k == 3) { int64_t x; memcpy(&x, b, 8); v = (double)x; }
    else v = b[0];
    t->data[i] = v;
  }
  goto out;
bad:
  snprintf(err, errlen, "'%s': malformed .npy file", path);
out:
  free(hdr);
  fclose(f);
  return t;
}

// ---- run: parameter initialisation ------------------------------------------------------------------
// splitmix64: a small deterministic generator (not torch's: values differ).
static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s) { return ((rng_next(s) >> 11) + 0.5) * 0x1.0p-53; }

static double rng_normal(uint64_t *s) {
  double u = rng_uniform(s), v = rng_uniform(s);
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static double kaiming_gain(const IrInit *in) {
  const char *n = in->nonlinearity;
  if (!strcmp(n, "relu")) return sqrt(2.0);
  if (!strcmp(n, "tanh")) return 5.0 / 3;
  if (!strcmp(n, "selu")) return 0.75;
  if (!strcmp(n, "leaky_relu")) return sqrt(2.0 / (1 + in->a * in->a));
  return 1;
}

static void init_tensor(Tensor *t, const IrInit *in, uint64_t *s) {
  double fan = in && !strcmp(in->mode, "fan_out") ? (double)in->fan_out : (double)(in ? in->fan_in : 1);
  for (int64_t i = 0; i < t->numel; i++) {
    double v = 0;
    switch (in ? in->kind : IRI_ZEROS) {
    case IRI_ZEROS: v = 0; break;
    case IRI_ONES: v = 1; break;
    case IRI_CONSTANT: v = in->value; break;
    case IRI_NORMAL: v = in->mean + in->std * rng_normal(s); break;
    case IRI_UNIFORM: v = in->low + (in->high - in->low) * rng_uniform(s); break;
    case IRI_KAIMING_UNIFORM: {
      double b = kaiming_gain(in) * sqrt(3.0 / fan);
      v = -b + 2 * b * rng_uniform(s);
      break;
    }
    case IRI_KAIMING_NORMAL: v = kaiming_gain(in) / sqrt(fan) * rng_normal(s); break;
    case IRI_XAVIER_UNIFORM: {
      double b = in->gain * sqrt(6.0 / (double)(in->fan_in + in->fan_out));
      v = -b + 2 * b * rng_uniform(s);
      break;
    }
    case IRI_XAVIER_NORMAL:
      v = in->gain * sqrt(2.0 / (double)(in->fan_in + in->fan_out)) * rng_normal(s);
      break;
    case IRI_TRUNC_NORMAL:
      do v = in->mean + in->std * rng_normal(s);
      while (v < in->low || v > in->high);
      break;
    }
    t->data[i] = t->dtype == DT_F32 ? (double)(float)v : v;
  }
}

// The module's params/buffers with concrete (constant) shapes, initialised.
static bool init_state(IrModule *m, uint64_t seed, InterpParams *ip) {
  int n = m->params.len;
  const char **paths = calloc((size_t)n + 1, sizeof *paths);
  Tensor **vals = calloc((size_t)n + 1, sizeof *vals);
  uint64_t s = seed;
  for (int i = 0; i < n; i++) {
    IrParam *p = VEC_AT(m->params, IrParam, i);
    int64_t dims[INTERP_MAX_RANK];
    for (int j = 0; j < p->type->rank; j++)
      if (!dim_is_const(p->type->dims[j], &dims[j])) return false;
    paths[i] = p->name;
    vals[i] = interp_tensor_new(p->type->dtype, p->type->rank, dims);
    if (!vals[i]) return false;
    init_tensor(vals[i], p->init, &s);
  }
  *ip = (InterpParams){n, paths, vals, seed};
  return true;
}

static void free_state(InterpParams *ip) {
  for (int i = 0; i < ip->n; i++) interp_tensor_free(ip->values[i]);
  free((void *)ip->paths);
  free((void *)ip->values);
}

static void print_tensor(FILE *out, Arena *a, const char *name, IrNode *n, const Tensor *t) {
  fprintf(out, "%s: %s = [", name, type_str(a, n->type));
  for (int64_t i = 0; i < t->numel; i++) fprintf(out, "%s%.9g", i ? ", " : "", t->data[i]);
  fputs("]\n", out);
}

// ---- run -------------------------------------------------------------------------------------------------
enum { MAX_INPUTS = 32 };

int driver_run(int argc, char **argv) {
  static const struct option longopts[] = {
      {"interp", no_argument, NULL, 'I'}, {"model", required_argument, NULL, 'm'},
      {"entry", required_argument, NULL, 'e'}, {"input", required_argument, NULL, 'i'},
      {"f32", no_argument, NULL, '3'}, {"f64", no_argument, NULL, '6'},
      {"seed", required_argument, NULL, 's'}, {NULL, 0, NULL, 0},
  };
  const char *model = NULL, *entry = NULL, *inputs[MAX_INPUTS];
  int ninputs = 0, c;
  bool interp = false;
  InterpMode mode = INTERP_F32;
  uint64_t seed = 0;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 'I': interp = true; break;
    case 'm': model = optarg; break;
    case 'e': entry = optarg; break;
    case 'i':
      if (ninputs == MAX_INPUTS) return usage_error("run", "too many inputs%s", "");
      inputs[ninputs++] = optarg;
      break;
    case '3': mode = INTERP_F32; break;
    case '6': mode = INTERP_F64; break;
    case 's': seed = strtoull(optarg, NULL, 10); break;
    default: return usage_error("run", "unknown or incomplete option '%s'", argv[optind - 1]);
    }
  }
  if (!interp) return usage_error("run", "only --interp is supported%s", "");
  if (optind != argc - 1) return usage_error("run", "expected one FILE.model%s", "");
  if (!entry || (strcmp(entry, "forward") && strcmp(entry, "loss") && strcmp(entry, "eval") &&
                 strcmp(entry, "predict")))
    return usage_error("run", "--entry must be forward, loss, eval or predict%s", "");
  for (int i = 0; i < ninputs; i++)
    if (!strchr(inputs[i], '=')) return usage_error("run", "--input wants name=path.npy, got '%s'", inputs[i]);
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  LowerResult lr;
  int status = EXIT_ERRORS;
  InterpParams ip = {0};
  Tensor *args[MAX_INPUTS] = {0}, **outs = NULL;
  IrFunc *f = NULL;
  if (!load(a, &d, argv[optind], &model, &lr, NULL)) goto done;
  f = ir_module_find_func(lr.module, entry);
  if (!f) {
    fprintf(stderr, "mlc: error: model %s has no %s entry point\n", model, entry);
    goto done;
  }
  if (f->params.len > MAX_INPUTS) goto done;
  for (int i = 0; i < f->params.len; i++) {
    IrNode *x = VEC_AT(f->params, IrNode, i);
    const char *path = NULL;
    size_t len = strlen(x->name);
    for (int k = 0; k < ninputs; k++)
      if (!strncmp(inputs[k], x->name, len) && inputs[k][len] == '=') path = inputs[k] + len + 1;
    if (!path) {
      fprintf(stderr, "mlc: error: no --input for argument '%s' of %s\n", x->name, entry);
      goto done;
    }
    char err[256];
    args[i] = read_npy(path, err, sizeof err);
    if (!args[i]) {
      fprintf(stderr, "mlc: error: %s\n", err);
      goto done;
    }
    args[i]->dtype = x->type->dtype; // u1 labels feed integer inputs
  }
  if (!init_state(lr.module, seed, &ip)) {
    fprintf(stderr, "mlc: error: a parameter of %s has a symbolic shape\n", model);
    goto done;
  }
  outs = calloc((size_t)f->outputs.len + 1, sizeof *outs);
  if (interp_run(lr.module, f, mode, args, f->params.len, &ip, outs, &d)) goto done;
  for (int i = 0; i < f->outputs.len; i++) {
    print_tensor(stdout, a, f->outputs.len == 1 ? entry : arena_printf(a, "%s.%d", entry, i),
                 VEC_AT(f->outputs, IrNode, i), outs[i]);
    interp_tensor_free(outs[i]);
  }
  status = EXIT_OK;
done:
  diag_print(&d, stderr);
  for (int i = 0; i < MAX_INPUTS; i++) interp_tensor_free(args[i]);
  free(outs);
  if (ip.n) free_state(&ip);
  arena_free(a);
  return status;
}
