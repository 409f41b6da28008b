// kir_interp.c — a straightforward evaluator of kernel IR: walks each
// kernel's statements with scalar values, over buffers held as double arrays
// (the graph interpreter's Tensor convention). It exists to check lowering
// (and later fusion) against interp_run, and to pin the semantics backends
// print (kir.h): float ops round to their dtype after every op in
// INTERP_F32 mode (f64 ops stay double), integers wrap, integer div/mod
// floor, max/min propagate NaN, casts truncate toward zero, rand is
// Philox-4x32-10.
//
// Input: a verified KirProgram, argument tensors, model state by path.
// Output: fresh output tensors (shapes from the buffers' graph types under
// the bound syms), state stores written back in place; or -1 with a message.
#include "kir.h"
#include "kernels/philox.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef union Val {
  double f;  // float dtypes
  int64_t i; // integer and bool dtypes
} Val;

typedef struct Run {
  const KirProgram *p;
  bool f32;
  uint64_t rng_seed;
  int64_t *syms;
  double **data;     // per buffer
  int64_t *numel;    // per buffer
  const KirKernel *k;
  Val *vars;
  bool failed;
  char *err;
  size_t errlen;
} Run;

static void fail(Run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(Run *r, const char *fmt, ...) {
  if (r->failed) return;
  r->failed = true;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->errlen) {
    if (r->k) snprintf(r->err, r->errlen, "kir: kernel %s: %s", r->k->name, msg);
    else snprintf(r->err, r->errlen, "kir: program %s: %s", r->p->name, msg);
  }
}

// ---- scalar semantics ----------------------------------------------------------------------
// INTERP_F32 rounds values of f32/f16/bf16 dtype; f64 values (f64 tensors, the
// accumulators of float sums) are computed in double in both modes.
static double rnd(const Run *r, DType dt, double v) { return r->f32 && dt != DT_F64 ? (double)(float)v : v; }

static int64_t wrap(DType dt, int64_t v) {
  if (dt == DT_I32) return (int32_t)(uint32_t)v;
  if (dt == DT_BOOL) return v != 0;
  return v;
}

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Philox-4x32-10 (kernels/philox.h), as interp.c draws dropout.
static double rand_uniform(uint64_t key, uint64_t counter, uint64_t stream) {
  return philox_uniform24(key, counter, stream);
}

static double unary_f(KUnOp op, double x) {
  switch (op) {
  case KU_NEG: return -x;
  case KU_ABS: return fabs(x);
  case KU_EXP: return exp(x);
  case KU_LOG: return log(x);
  case KU_LOG1P: return log1p(x);
  case KU_SQRT: return sqrt(x);
  case KU_TANH: return tanh(x);
  case KU_ERF: return erf(x);
  case KU_COS: return cos(x);
  case KU_FLOOR: return floor(x);
  default: return NAN;
  }
}

static double binary_f(KBinOp op, double a, double b) {
  switch (op) {
  case KB_ADD: return a + b;
  case KB_SUB: return a - b;
  case KB_MUL: return a * b;
  case KB_DIV: return a / b;
  case KB_POW: return pow(a, b);
  case KB_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  case KB_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
  case KB_LT: return a < b;
  case KB_LE: return a <= b;
  case KB_GT: return a > b;
  case KB_GE: return a >= b;
  case KB_EQ: return a == b;
  case KB_NE: return a != b;
  default: return NAN;
  }
}

static int64_t binary_i(KBinOp op, int64_t a, int64_t b) {
  uint64_t x = (uint64_t)a, y = (uint64_t)b;
  switch (op) {
  case KB_ADD: return (int64_t)(x + y);
  case KB_SUB: return (int64_t)(x - y);
  case KB_MUL: return (int64_t)(x * y);
  case KB_DIV: return b ? floordiv(a, b) : 0;
  case KB_MOD: return b ? a - floordiv(a, b) * b : 0;
  case KB_MAX: return a > b ? a : b;
  case KB_MIN: return a < b ? a : b;
  case KB_LT: return a < b;
  case KB_LE: return a <= b;
  case KB_GT: return a > b;
  case KB_GE: return a >= b;
  case KB_EQ: return a == b;
  case KB_NE: return a != b;
  case KB_AND: return a && b;
  case KB_OR: return a || b;
  default: return 0;
  }
}

static Val cast(const Run *r, DType to, DType from, Val v) {
  Val out;
  bool ff = dtype_is_float(from), tf = dtype_is_float(to);
  if (tf) out.f = rnd(r, to, ff ? v.f : (double)v.i);
  else if (!ff) out.i = wrap(to, v.i);
  else if (to == DT_BOOL) out.i = v.f != 0;
  else out.i = isfinite(v.f) ? wrap(to, (int64_t)trunc(v.f)) : 0;
  return out;
}

// ---- expressions -------------------------------------------------------------------------------
static bool in_bounds(Run *r, int buf, int64_t i) {
  if (i >= 0 && i < r->numel[buf]) return true;
  fail(r, "index %lld outside %s[%lld]", (long long)i, kir_buf(r->p, buf)->name, (long long)r->numel[buf]);
  return false;
}

static Val eval(Run *r, const KExpr *e) {
  Val v = {0}, a, b;
  bool fl = dtype_is_float(e->dtype);
  switch (e->kind) {
  case KE_CONST:
    if (fl) v.f = rnd(r, e->dtype, e->f);
    else v.i = e->i;
    return v;
  case KE_VAR: return r->vars[e->var];
  case KE_SYM: v.i = r->syms[e->sym]; return v;
  case KE_RNGSEED: v.i = (int64_t)r->rng_seed; return v;
  case KE_LOAD:
    a = eval(r, e->a);
    if (!in_bounds(r, e->buf, a.i)) return v;
    if (fl) v.f = r->data[e->buf][a.i];
    else v.i = (int64_t)r->data[e->buf][a.i];
    return v;
  case KE_UNARY:
    a = eval(r, e->a);
    if (e->un == KU_NOT) v.i = !a.i;
    else if (fl) v.f = rnd(r, e->dtype, unary_f(e->un, a.f));
    else v.i = wrap(e->dtype, e->un == KU_NEG || a.i < 0 ? (int64_t)(0 - (uint64_t)a.i) : a.i); // neg, abs
    return v;
  case KE_BINARY:
    a = eval(r, e->a);
    b = eval(r, e->b);
    if (dtype_is_float(e->a->dtype)) {
      double x = binary_f(e->bin, a.f, b.f);
      if (fl) v.f = rnd(r, e->dtype, x);
      else v.i = (int64_t)x;
    } else {
      v.i = wrap(e->dtype, binary_i(e->bin, a.i, b.i));
    }
    return v;
  case KE_SELECT:
    a = eval(r, e->a);
    return a.i ? eval(r, e->b) : eval(r, e->c);
  case KE_CAST: return cast(r, e->dtype, e->a->dtype, eval(r, e->a));
  case KE_RAND:
    a = eval(r, e->a);
    b = eval(r, e->b);
    v.f = rand_uniform((uint64_t)a.i, (uint64_t)b.i, (uint64_t)eval(r, e->c).i);
    return v;
  }
  return v;
}

// ---- statements ----------------------------------------------------------------------------------
static void exec_block(Run *r, const Vec *blk);

static void exec(Run *r, const KStmt *s) {
  switch (s->kind) {
  case KS_FOR: {
    int64_t n = eval(r, s->n).i;
    for (int64_t i = 0; i < n && !r->failed; i++) {
      r->vars[s->var].i = i;
      exec_block(r, &s->body);
    }
    return;
  }
  case KS_LET: case KS_ASSIGN: r->vars[s->var] = eval(r, s->value); return;
  case KS_STORE: {
    int64_t i = eval(r, s->index).i;
    Val v = eval(r, s->value);
    if (!r->failed && in_bounds(r, s->buf, i))
      r->data[s->buf][i] = dtype_is_float(s->value->dtype) ? v.f : (double)v.i;
    return;
  }
  case KS_IF:
    exec_block(r, eval(r, s->cond).i ? &s->body : &s->els);
    return;
  case KS_CHECK:
    if (!eval(r, s->cond).i) fail(r, "%s", s->msg);
    return;
  case KS_BARRIER: return; // a serial run finishes each statement before the next
  }
}

static void exec_block(Run *r, const Vec *blk) {
  for (int i = 0; i < blk->len && !r->failed; i++) exec(r, VEC_AT(*blk, KStmt, i));
}

// ---- setup: syms, buffers, outputs ---------------------------------------------------------------------
static bool bind_syms(Run *r, Tensor **inputs, int nin) {
  const KirProgram *p = r->p;
  if (nin != p->ninputs) return fail(r, "takes %d arguments, got %d", p->ninputs, nin), false;
  for (int i = 0; i < p->syms.len; i++) {
    KirSym *s = VEC_AT(p->syms, KirSym, i);
    if (s->arg < 0) {
      r->syms[i] = eval(r, s->def).i;
      continue;
    }
    if (!inputs[s->arg] || s->dim >= inputs[s->arg]->rank)
      return fail(r, "argument %d has no dim %d for %s", s->arg, s->dim, s->name), false;
    r->syms[i] = inputs[s->arg]->dims[s->dim];
  }
  return true;
}

static const Tensor *find_state(const InterpParams *ps, const char *path) {
  for (int i = 0; ps && i < ps->n; i++)
    if (!strcmp(ps->paths[i], path)) return ps->values[i];
  return NULL;
}

// Fills buffer b from t (an argument or state), rounded to the buffer's dtype.
static bool fill(Run *r, int b, const Tensor *t) {
  KirBuf *kb = kir_buf(r->p, b);
  if (!t) return fail(r, "no value for %s", kb->name), false;
  if (t->numel != r->numel[b])
    return fail(r, "%s holds %lld elements, the tensor %lld", kb->name, (long long)r->numel[b],
                (long long)t->numel), false;
  for (int64_t e = 0; e < t->numel; e++) {
    Val v;
    if (dtype_is_float(t->dtype)) v.f = t->data[e];
    else v.i = (int64_t)t->data[e];
    Val w = cast(r, kb->dtype, t->dtype, v);
    r->data[b][e] = dtype_is_float(kb->dtype) ? w.f : (double)w.i;
  }
  return true;
}

static bool alloc_bufs(Run *r, Tensor **inputs, const InterpParams *ps) {
  const KirProgram *p = r->p;
  for (int b = 0; b < p->bufs.len; b++) {
    KirBuf *kb = kir_buf(p, b);
    r->numel[b] = eval(r, kb->numel).i;
    if (r->numel[b] < 0 || r->numel[b] > ((int64_t)1 << 32)) return fail(r, "%s: bad size", kb->name), false;
    if (!(r->data[b] = calloc((size_t)(r->numel[b] ? r->numel[b] : 1), sizeof(double))))
      return fail(r, "out of memory"), false;
    if (kb->kind == KBUF_INPUT && !fill(r, b, inputs[kb->index])) return false;
    if (kb->kind == KBUF_STATE && !fill(r, b, find_state(ps, kb->path))) return false;
  }
  return true;
}

// An output tensor shaped by the buffer's dims under the bound syms.
static Tensor *output_tensor(Run *r, int b) {
  KirBuf *kb = kir_buf(r->p, b);
  int64_t dims[INTERP_MAX_RANK];
  bool ok = kb->rank <= INTERP_MAX_RANK;
  for (int i = 0; ok && i < kb->rank; i++) ok = kir_eval_i64(kb->dims[i], r->syms, &dims[i]);
  Tensor *t = ok ? interp_tensor_new(kb->dtype, kb->rank, dims) : NULL;
  if (!t || t->numel != r->numel[b]) {
    interp_tensor_free(t);
    fail(r, "cannot shape output %s", kb->name);
    return NULL;
  }
  memcpy(t->data, r->data[b], sizeof(double) * (size_t)t->numel);
  return t;
}

static bool stored(const Vec *blk, int b) {
  for (int i = 0; i < blk->len; i++) {
    KStmt *s = VEC_AT(*blk, KStmt, i);
    if ((s->kind == KS_STORE && s->buf == b) || stored(&s->body, b) || stored(&s->els, b)) return true;
  }
  return false;
}

// State buffers some kernel writes go back to the caller's tensors.
static void write_back(Run *r, const InterpParams *ps) {
  for (int b = 0; b < r->p->bufs.len; b++) {
    KirBuf *kb = kir_buf(r->p, b);
    bool w = false;
    for (int i = 0; i < r->p->kernels.len && !w && kb->kind == KBUF_STATE; i++)
      w = stored(&VEC_AT(r->p->kernels, KirKernel, i)->body, b);
    if (!w) continue;
    Tensor *t = (Tensor *)find_state(ps, kb->path);
    for (int64_t e = 0; e < t->numel; e++) {
      Val v;
      if (dtype_is_float(kb->dtype)) v.f = r->data[b][e];
      else v.i = (int64_t)r->data[b][e];
      Val o = cast(r, t->dtype, kb->dtype, v);
      t->data[e] = dtype_is_float(t->dtype) ? o.f : (double)o.i;
    }
  }
}

static int run_all(Run *r, Tensor **inputs, int nin, const InterpParams *ps, Tensor **outputs) {
  const KirProgram *p = r->p;
  if (!bind_syms(r, inputs, nin) || !alloc_bufs(r, inputs, ps)) return -1;
  for (int i = 0; i < p->kernels.len && !r->failed; i++) {
    r->k = VEC_AT(p->kernels, KirKernel, i);
    r->vars = calloc((size_t)(r->k->vars.len + 1), sizeof(Val));
    if (!r->vars) return fail(r, "out of memory"), -1;
    exec_block(r, &r->k->body);
    free(r->vars);
    r->vars = NULL;
  }
  r->k = NULL;
  if (r->failed) return -1;
  Tensor **outs = calloc((size_t)p->noutputs + 1, sizeof(Tensor *));
  if (!outs) return fail(r, "out of memory"), -1;
  for (int b = 0; b < p->bufs.len; b++) {
    KirBuf *kb = kir_buf(p, b);
    if (kb->kind != KBUF_OUTPUT) continue;
    bool placed = kb->index >= 0 && kb->index < p->noutputs && !outs[kb->index];
    if (!placed) fail(r, "output %s is not one of the %d outputs", kb->name, p->noutputs);
    if (!placed || !(outs[kb->index] = output_tensor(r, b))) {
      for (int i = 0; i < p->noutputs; i++) interp_tensor_free(outs[i]);
      free(outs);
      return -1;
    }
  }
  write_back(r, ps);
  for (int i = 0; i < p->noutputs; i++) outputs[i] = outs[i];
  free(outs);
  return 0;
}

int kir_run(const KirProgram *p, InterpMode mode, Tensor **inputs, int nin, const InterpParams *params,
            Tensor **outputs, char *err, size_t errlen) {
  Run r = {.p = p, .f32 = mode == INTERP_F32, .rng_seed = params ? params->rng_seed : 0, .err = err,
           .errlen = errlen};
  if (errlen) err[0] = 0;
  r.syms = calloc((size_t)(p->syms.len + 1), sizeof(int64_t));
  r.data = calloc((size_t)(p->bufs.len + 1), sizeof(double *));
  r.numel = calloc((size_t)(p->bufs.len + 1), sizeof(int64_t));
  int rc = -1;
  if (r.syms && r.data && r.numel) rc = run_all(&r, inputs, nin, params, outputs);
  for (int b = 0; r.data && b < p->bufs.len; b++) free(r.data[b]);
  free(r.syms);
  free(r.data);
  free(r.numel);
  free(r.vars);
  return rc;
}
