// run_state.c — the inputs and the model state of `mlc run --interp`, made
// by the runtime (libmlc_rt) exactly as the compiled program makes them.
//
// The state is described to the runtime as the glue describes it to the
// program: one MlcStateDesc per state of the graph module, in module order,
// with the initialiser host_init_spec gives (backend/host/host.h), under a
// model descriptor carrying the module's structural hash. A runtime
// instance of that descriptor (mlc_rt.h, the one the program trains on)
// draws the initial state from the seed, so the same seed gives the
// program's bytes; mlc_instance_load reads --weights with the program's
// checks; the bytes become the interpreter's tensors (types/tensor.h).
// Inputs are read with the runtime's NPY reader (mlc_data.h). The dropout
// seed of the program's first step comes from the runtime's run stream
// (runtime/core/rng.h, the one private runtime header the compiler reads).
#include "run_internal.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/core/rng.h"
#include "runtime/core/safetensors.h"
#include "runtime/include/mlc_data.h"

// ---- inputs -------------------------------------------------------------------------------------
Tensor *run_read_npy(DiagSink *d, const char *path, DType dt) {
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

// ---- the descriptor -------------------------------------------------------------------------------
// The runtime's dtype of a state (f16 and bf16, computed as f32 by the
// interpreter, are held as f32).
static MlcDType rt_dtype(DType dt) {
  switch (dt) {
  case DT_F64: return MLC_F64;
  case DT_I32: return MLC_I32;
  case DT_I64: return MLC_I64;
  case DT_U8: return MLC_U8;
  case DT_BOOL: return MLC_BOOL;
  default: return MLC_F32;
  }
}

static MlcStateKind rt_kind(IrParamKind k) {
  return k == IRP_PARAM ? MLC_STATE_PARAM : k == IRP_BUFFER ? MLC_STATE_BUFFER : MLC_STATE_OPTIM;
}

// The descriptor of state p and its tensor (zeros), or false after an error.
static bool describe(DiagSink *d, const IrParam *p, const OptimRecipe *r, MlcStateDesc *sd, Tensor **t) {
  const Type *ty = p->type;
  if (ty->rank > MLC_MAX_RANK) {
    diag_error(d, (Span){0}, "state '%s' has %d dims; the runtime holds at most %d", p->name, ty->rank,
               MLC_MAX_RANK);
    return false;
  }
  *sd = (MlcStateDesc){.path = p->name, .dtype = rt_dtype(ty->dtype), .rank = ty->rank,
                       .kind = rt_kind(p->kind), .trainable = p->kind == IRP_PARAM && p->trainable};
  for (int k = 0; k < ty->rank; k++)
    if (!dim_is_const(ty->dims[k], &sd->shape[k])) {
      diag_error(d, (Span){0}, "state '%s' has a symbolic shape", p->name);
      return false;
    }
  host_init_spec(p, r, &sd->init);
  if (!(*t = interp_tensor_new(ty->dtype, ty->rank, sd->shape)))
    diag_error(d, (Span){0}, "state '%s' has too many elements for the interpreter", p->name);
  return *t != NULL;
}

// ---- bytes <-> tensors ---------------------------------------------------------------------------
static double elem(MlcDType dt, const void *base, int64_t j) {
  switch (dt) {
  case MLC_F32: return ((const float *)base)[j];
  case MLC_F64: return ((const double *)base)[j];
  case MLC_I32: return ((const int32_t *)base)[j];
  case MLC_I64: return (double)((const int64_t *)base)[j];
  case MLC_U8:
  case MLC_BOOL: return ((const uint8_t *)base)[j];
  }
  return 0;
}

// t's values from bytes of dtype dt; f32 states rounded to float unless f64.
static void from_bytes(Tensor *t, MlcDType dt, const void *bytes, bool f64) {
  bool to_float = !f64 && dtype_is_float(t->dtype) && t->dtype != DT_F64;
  for (int64_t j = 0; j < t->numel; j++) {
    double v = elem(dt, bytes, j);
    t->data[j] = to_float ? (double)(float)v : v;
  }
}

// An instance of descriptor m (one thread, batch 1) with its state drawn
// from seed; NULL after an error.
static MlcInstance *instance(DiagSink *d, const MlcModel *m, uint64_t seed) {
  MlcOptions o = mlc_instance_defaults(m);
  o.seed = seed, o.threads = 1, o.max_batch = 1;
  MlcInstance *in = mlc_instance_new(m, &o);
  if (!in) diag_error(d, (Span){0}, "the runtime cannot hold the state of %s: %s", m->name,
                      mlc_instance_error(NULL));
  return in;
}

// The tensors of s from the instance's state i (for every i where want[i]).
static void take_state(RunState *s, MlcInstance *in, const MlcModel *m, const bool *want, bool f64) {
  for (int i = 0; i < m->nstates; i++)
    if (!want || want[i])
      from_bytes(s->values[i], m->states[i].dtype, mlc_instance_state(in, s->paths[i], NULL), f64);
}

// ---- weights --------------------------------------------------------------------------------------
// The dtype the file gives state sd in, when it converts to sd's (f32 and
// f64, i32 and i64); otherwise sd's own, which the loader then refuses,
// naming the tensor and both types.
static MlcDType file_dtype(const MlcSt *st, const MlcStateDesc *sd) {
  const MlcStTensor *t = mlc_st_find(st, sd->path);
  bool fl = sd->dtype == MLC_F32 || sd->dtype == MLC_F64, in = sd->dtype == MLC_I32 || sd->dtype == MLC_I64;
  if (!t) return sd->dtype;
  if (fl && (t->dtype == MLC_ST_F32 || t->dtype == MLC_ST_F64)) return t->dtype == MLC_ST_F32 ? MLC_F32 : MLC_F64;
  if (in && (t->dtype == MLC_ST_I32 || t->dtype == MLC_ST_I64)) return t->dtype == MLC_ST_I32 ? MLC_I32 : MLC_I64;
  return sd->dtype;
}

// The params and buffers of file `path` into s, loaded by mlc_instance_load
// into an instance of a copy of m whose dtypes are the file's where they
// convert.
static bool load_weights(DiagSink *d, const char *path, const MlcModel *m, RunState *s, bool f64) {
  char err[1024];
  MlcSt *st = mlc_st_open(path, err, sizeof err);
  if (!st) {
    diag_error(d, (Span){0}, "%s", err);
    return false;
  }
  MlcStateDesc *as_read = calloc((size_t)m->nstates + 1, sizeof *as_read);
  bool *want = calloc((size_t)m->nstates + 1, sizeof *want);
  for (int i = 0; as_read && want && i < m->nstates; i++) {
    as_read[i] = m->states[i];
    as_read[i].dtype = file_dtype(st, &m->states[i]);
    want[i] = m->states[i].kind != MLC_STATE_OPTIM;
  }
  mlc_st_close(st);
  MlcModel lm = *m;
  lm.states = as_read;
  MlcInstance *in = as_read && want ? instance(d, &lm, 0) : NULL;
  bool ok = in && !mlc_instance_load(in, path);
  if (in && !ok) diag_error(d, (Span){0}, "%s", mlc_instance_error(in));
  if (ok) take_state(s, in, &lm, want, f64);
  mlc_instance_free(in);
  free(as_read);
  free(want);
  return ok;
}

// ---- the state ------------------------------------------------------------------------------------
static bool alloc_state(RunState *s, int n) {
  s->n = n;
  s->paths = calloc((size_t)n + 1, sizeof *s->paths);
  s->values = calloc((size_t)n + 1, sizeof *s->values);
  return s->paths && s->values;
}

bool run_state_init(RunState *s, Pipeline *P, const char *weights, uint64_t seed, bool f64) {
  IrModule *mod = P->u.lr.module;
  int n = mod->params.len;
  char hash[17];
  pipeline_module_hash(mod, hash);
  MlcStateDesc *descs = calloc((size_t)n + 1, sizeof *descs);
  bool ok = alloc_state(s, n) && descs;
  if (!ok) diag_error(P->diags, (Span){0}, "out of memory for the state of %s", P->u.model);
  for (int i = 0; ok && i < n; i++) {
    const IrParam *p = VEC_AT(mod->params, IrParam, i);
    s->paths[i] = p->name;
    ok = describe(P->diags, p, &P->u.recipe.opt, &descs[i], &s->values[i]);
  }
  MlcModel m = {.abi = MLC_ABI_VERSION, .name = P->u.model, .hash = hash, .nstates = n, .states = descs};
  MlcInstance *in = ok ? instance(P->diags, &m, seed) : NULL;
  if ((ok = in != NULL)) take_state(s, in, &m, NULL, f64);
  mlc_instance_free(in);
  if (ok && weights) ok = load_weights(P->diags, weights, &m, s, f64);
  free(descs);
  MlcRng rng = mlc_rng_new(seed);
  s->ip = (InterpParams){n, s->paths, s->values, mlc_rng_step_seed(&rng)};
  return ok;
}

void run_state_free(RunState *s) {
  for (int i = 0; s->values && i < s->n; i++) interp_tensor_free(s->values[i]);
  free(s->paths);
  free(s->values);
  *s = (RunState){0};
}
