// run.c — `mlc run --interp`: runs one entry point of a model in the
// reference interpreter (graph/interp.h) on inputs read from .npy files.
//
//   mlc run --interp FILE.model [--model NAME] --entry forward|loss|eval|predict
//           --input name=path.npy ... [--f32|--f64] [--seed N] [--verify-each]
//
// The pipeline (pipeline.h) runs through `lower`; the arguments are read
// with the runtime's NPY reader (mlc_read_npy), the one the generated
// programs use. Parameters are initialised from their declared initialisers
// with a deterministic generator seeded by --seed (default 0); each output
// is printed as `name: type = [v0, v1, ...]` (row-major).
#include "driver.h"
#include "pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/interp.h"
#include "runtime/include/mlc_data.h" // the runtime's NPY reader

void run_help_tail(FILE *out) {
  fputs("\nEach output is printed as `ENTRY: TYPE = [v0, v1, ...]` (row-major; ENTRY.i for\n"
        "the i-th of several). Parameters start from their declared initialisers,\n"
        "drawn from a generator seeded by --seed (values differ from torch's).\n",
        out);
}

// ---- inputs -------------------------------------------------------------------------------------
// An .npy file as the interpreter's tensor of dtype dt (the argument's:
// |u1 labels feed integer inputs).
static Tensor *read_input(DiagSink *d, const char *path, DType dt) {
  MlcArray arr;
  char err[512];
  if (mlc_read_npy(path, &arr, err, sizeof err)) {
    diag_error(d, (Span){0}, "%s", err);
    return NULL;
  }
  Tensor *t = arr.rank <= INTERP_MAX_RANK ? interp_tensor_new(dt, arr.rank, arr.dims) : NULL;
  if (!t) diag_error(d, (Span){0}, "%s: %d dims, or too many elements, for the interpreter", path, arr.rank);
  for (int64_t i = 0; t && i < t->numel; i++) t->data[i] = mlc_array_get(&arr, i);
  mlc_array_free(&arr);
  return t;
}

// The path given for argument `name` (--input name=path), or NULL.
static const char *input_path(const DriverOpts *o, const char *name) {
  size_t len = strlen(name);
  const char *path = NULL;
  for (int k = 0; k < o->ninputs; k++)
    if (!strncmp(o->inputs[k], name, len) && o->inputs[k][len] == '=') path = o->inputs[k] + len + 1;
  return path;
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

// ---- run ---------------------------------------------------------------------------------------
static bool read_inputs(DiagSink *d, const DriverOpts *o, IrFunc *f, Tensor **args) {
  if (f->params.len > DRIVER_MAX_INPUTS) {
    diag_error(d, (Span){0}, "%s takes %d arguments; mlc run reads at most %d", o->entry, f->params.len,
               DRIVER_MAX_INPUTS);
    return false;
  }
  for (int i = 0; i < f->params.len; i++) {
    IrNode *x = VEC_AT(f->params, IrNode, i);
    const char *path = input_path(o, x->name);
    if (!path) {
      diag_error(d, (Span){0}, "no --input for argument '%s' of %s", x->name, o->entry);
      return false;
    }
    if (!(args[i] = read_input(d, path, x->type->dtype))) return false;
  }
  return true;
}

static bool run_entry(Pipeline *P, const DriverOpts *o, Tensor **args, InterpParams *ip) {
  IrModule *m = P->u.lr.module;
  IrFunc *f = ir_module_find_func(m, o->entry);
  if (!f) {
    diag_error(P->diags, (Span){0}, "model %s has no %s entry point", P->u.model, o->entry);
    return false;
  }
  if (!read_inputs(P->diags, o, f, args)) return false;
  if (!init_state(m, o->seed, ip)) {
    diag_error(P->diags, (Span){0}, "a parameter of %s has a symbolic shape", P->u.model);
    return false;
  }
  Tensor **outs = calloc((size_t)f->outputs.len + 1, sizeof *outs);
  bool ok = interp_run(m, f, o->f64 ? INTERP_F64 : INTERP_F32, args, f->params.len, ip, outs, P->diags) == 0;
  for (int i = 0; ok && i < f->outputs.len; i++) {
    const char *name = f->outputs.len == 1 ? o->entry : arena_printf(P->arena, "%s.%d", o->entry, i);
    print_tensor(stdout, P->arena, name, VEC_AT(f->outputs, IrNode, i), outs[i]);
    interp_tensor_free(outs[i]);
  }
  free(outs);
  return ok;
}

static const char *const entries[] = {"forward", "loss", "eval", "predict"};

int driver_run(int argc, char **argv) {
  DriverOpts o;
  if (driver_parse(CMD_RUN, argc, argv, &o)) return EXIT_USAGE;
  if (o.help) return driver_help(CMD_RUN, stdout), EXIT_OK;
  if (!o.interp) return driver_usage_error("run", "only --interp is supported");
  int k = 0;
  while (k < 4 && (!o.entry || strcmp(o.entry, entries[k]))) k++;
  if (k == 4) return driver_usage_error("run", "--entry must be forward, loss, eval or predict");
  Arena *a = arena_new();
  DiagSink d;
  driver_diag_init(&d, a, &o);
  struct stat st;
  Pipeline P;
  PipelineOptions po = {.path = o.files[0], .model = o.model, .verify_each = o.verify_each || pipeline_default_verify()};
  pipeline_init(&P, a, &d, &po);
  Tensor *args[DRIVER_MAX_INPUTS] = {0};
  InterpParams ip = {0};
  bool ok = driver_check_input(&d, o.files[0], &st) && pipeline_run(&P, STAGE_LOWER) && run_entry(&P, &o, args, &ip);
  for (int i = 0; i < DRIVER_MAX_INPUTS; i++) interp_tensor_free(args[i]);
  if (ip.n) free_state(&ip);
  pipeline_free(&P);
  int status = driver_report(&d, "run", ok ? EXIT_OK : EXIT_ERRORS);
  arena_free(a);
  return status;
}
