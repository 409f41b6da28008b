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
#include "kernels/gemm_ref.h"
#include "kernels/round16.h"
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
  int64_t thread;    // the running gpu-thread loop's iteration (-1: none); picks the local buffers' instance
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

_Static_assert((int)KIR_GEMM_TRANS_A == (int)MLC_GEMM_TRANS_A &&
                   (int)KIR_GEMM_TRANS_B == (int)MLC_GEMM_TRANS_B &&
                   (int)KIR_GEMM_BIAS_COL == (int)MLC_GEMM_BIAS_COL &&
                   (int)KIR_GEMM_BIAS_ROW == (int)MLC_GEMM_BIAS_ROW &&
                   (int)KIR_GEMM_RESIDUAL == (int)MLC_GEMM_RESIDUAL &&
                   (int)KIR_GEMM_RELU == (int)MLC_GEMM_RELU &&
                   (int)KIR_GEMM_RELU_MASK == (int)MLC_GEMM_RELU_MASK &&
                   (int)KIR_GEMM_BF16 == (int)MLC_GEMM_BF16 && (int)KIR_GEMM_F16 == (int)MLC_GEMM_F16 &&
                   (int)KIR_CONV_RELU == (int)MLC_CONV_RELU && (int)KIR_CONV_WINOGRAD == (int)MLC_CONV_WINOGRAD &&
                   (int)KIR_CONV_BF16 == (int)MLC_GEMM_BF16 && (int)KIR_CONV_F16 == (int)MLC_GEMM_F16 &&
                   (int)KIR_CONV_GEOM == (int)MLC_CONV_GEOM,
               "kir.h's library flags are mlc_kernels.h's");

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
  case KU_ROUND_BF16: return mlc_round_bf16((float)x);
  case KU_ROUND_F16: return mlc_round_f16((float)x);
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

// Element i of buffer buf, or NULL (failed). A local buffer holds one
// instance of numel elements per thread (KIR_LOCAL_THREADS of them): the
// running gpu-thread iteration's.
static double *cell(Run *r, int buf, int64_t i) {
  if (!in_bounds(r, buf, i)) return NULL;
  if (kir_buf(r->p, buf)->kind != KBUF_LOCAL) return &r->data[buf][i];
  if (r->thread < 0 || r->thread >= KIR_LOCAL_THREADS)
    return fail(r, "local buffer %s used on thread %lld", kir_buf(r->p, buf)->name, (long long)r->thread), NULL;
  return &r->data[buf][r->thread * r->numel[buf] + i];
}

// The most threads a block's statements use: its largest gpu-thread trip
// count (constants, kir_verify), serial loops at block level included.
static int64_t block_threads(const Vec *blk) {
  int64_t t = 0, n;
  for (int i = 0; i < blk->len; i++) {
    const KStmt *s = VEC_AT(*blk, KStmt, i);
    if (s->kind == KS_FOR && s->map == KMAP_GPU_THREAD && kir_eval_i64(s->n, NULL, &n) && n > t) t = n;
    if (s->kind == KS_FOR && s->map == KMAP_SERIAL && (n = block_threads(&s->body)) > t) t = n;
  }
  return t < KIR_LOCAL_THREADS ? t : KIR_LOCAL_THREADS;
}

// A block iteration starts with its threads' local buffers uninitialised:
// NaN (-1 for integers), so a read before the thread's first store shows.
static void poison_locals(Run *r, int64_t threads) {
  for (int b = 0; b < r->p->bufs.len; b++) {
    const KirBuf *kb = kir_buf(r->p, b);
    if (kb->kind != KBUF_LOCAL) continue;
    double v = dtype_is_float(kb->dtype) ? NAN : -1;
    for (int64_t e = 0; e < r->numel[b] * threads; e++) r->data[b][e] = v;
  }
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
  case KE_LOAD: {
    a = eval(r, e->a);
    const double *c = cell(r, e->buf, a.i);
    if (!c) return v;
    if (fl) v.f = *c;
    else v.i = (int64_t)*c;
    return v;
  }
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
  case KE_FMA:
    a = eval(r, e->a);
    b = eval(r, e->b);
    v.f = mlc_ref_fma(r->f32 && e->dtype != DT_F64, a.f, b.f, eval(r, e->c).f); // f64 is never rounded
    return v;
  }
  return v;
}

// ---- library calls ---------------------------------------------------------------------------------
// kernels/gemm_ref.h's definition of each entry point, on the buffers at
// their offsets (bounds checked first): the library's bits in f32 mode.
typedef struct CallArgs {
  KirCallSpec sp;
  int64_t v[KIR_CALL_MAX_SLOTS]; // i64 slots (a buffer operand's: its offset)
  double f[KIR_CALL_MAX_SLOTS];  // f32 slots
  double *ptr[KIR_CALL_MAX_SLOTS];
} CallArgs;

static int64_t arg_i(const CallArgs *a, const char *n) { return a->v[kir_call_param(&a->sp, n)->slot]; }
static double arg_f(const CallArgs *a, const char *n) { return a->f[kir_call_param(&a->sp, n)->slot]; }
static double *arg_p(const CallArgs *a, const char *n) { return a->ptr[kir_call_param(&a->sp, n)->slot]; }

static bool call_args(Run *r, const KCall *c, CallArgs *a) {
  kir_call_spec(c->fn, &a->sp);
  for (int i = 0; i < a->sp.nslots; i++) {
    a->v[i] = 0, a->f[i] = 0, a->ptr[i] = NULL;
    if (!c->slot[i]) continue;
    Val x = eval(r, c->slot[i]);
    if (dtype_is_float(c->slot[i]->dtype)) a->f[i] = x.f;
    else a->v[i] = x.i;
  }
  int64_t lo[KIR_CALL_MAX_SLOTS], hi[KIR_CALL_MAX_SLOTS];
  if (r->failed) return false;
  if (!kir_call_extents(c, a->v, lo, hi)) return fail(r, "call %s: bad sizes", a->sp.name), false;
  for (int i = 0; i < a->sp.nslots; i++) {
    int b = c->buf[i];
    if (b < 0) continue;
    if (lo[i] < hi[i] && (lo[i] < 0 || hi[i] > r->numel[b]))
      return fail(r, "call %s: elements [%lld, %lld) outside %s[%lld]", a->sp.name, (long long)lo[i],
                  (long long)hi[i], kir_buf(r->p, b)->name, (long long)r->numel[b]), false;
    a->ptr[i] = r->data[b] + a->v[i];
  }
  return true;
}

static void exec_gemm(Run *r, const KCall *c, const CallArgs *a) {
  bool batched = c->fn == KCALL_SGEMM_BATCHED, ta = c->flags & KIR_GEMM_TRANS_A, tb = c->flags & KIR_GEMM_TRANS_B;
  int64_t nb = batched ? arg_i(a, "batch") : 1, lda = arg_i(a, "lda"), ldb = arg_i(a, "ldb");
  for (int64_t i = 0; i < nb; i++) {
    double *aux = arg_p(a, "aux");
    mlc_ref_gemm(r->f32, c->flags, arg_i(a, "m"), arg_i(a, "n"), arg_i(a, "k"), arg_f(a, "alpha"),
                 arg_p(a, "a") + (batched ? i * arg_i(a, "sa") : 0), ta ? 1 : lda, ta ? lda : 1,
                 arg_p(a, "b") + (batched ? i * arg_i(a, "sb") : 0), tb ? 1 : ldb, tb ? ldb : 1, arg_f(a, "beta"),
                 arg_p(a, "c") + (batched ? i * arg_i(a, "sc") : 0), arg_i(a, "ldc"), arg_p(a, "bias"),
                 aux ? aux + (batched ? i * arg_i(a, "saux") : 0) : NULL, arg_i(a, "ldaux"));
  }
}

static void exec_call(Run *r, const KCall *c) {
  CallArgs a;
  if (!call_args(r, c, &a)) return;
  const int64_t *geom = a.v + a.sp.param[0].slot;
  bool ok = true;
  switch (c->fn) {
  case KCALL_SGEMM: case KCALL_SGEMM_BATCHED: exec_gemm(r, c, &a); break;
  case KCALL_CONV2D:
    ok = mlc_ref_conv2d(r->f32, geom, c->flags, arg_p(&a, "x"), arg_p(&a, "w"), arg_p(&a, "bias"), arg_p(&a, "y"));
    break;
  case KCALL_CONV2D_POOL: { // y none: the conv's output in a temporary of the call
    MlcRefConv k;
    if (!(ok = mlc_ref_conv_of(geom, &k))) break;
    double *y = arg_p(&a, "y"), *tmp = y ? NULL : malloc(sizeof(double) * (size_t)(k.n * k.o * k.p + 1));
    ok = (y || tmp) && mlc_ref_conv2d(r->f32, geom, c->flags, arg_p(&a, "x"), arg_p(&a, "w"), arg_p(&a, "bias"), y ? y : tmp);
    int64_t pg[8] = {k.n, k.o, k.ho, k.wo, 2, 2, 2, 2};
    if (ok) mlc_ref_max_pool2d(pg, y ? y : tmp, arg_p(&a, "yp"));
    free(tmp);
    break;
  }
  case KCALL_CONV2D_GRAD_INPUT:
    ok = mlc_ref_conv2d_grad_input(r->f32, geom, c->flags, arg_p(&a, "dy"), arg_p(&a, "w"), arg_p(&a, "dx"));
    break;
  case KCALL_CONV2D_GRAD_WEIGHT:
    ok = mlc_ref_conv2d_grad_weight(r->f32, geom, c->flags, arg_p(&a, "dy"), arg_p(&a, "x"), arg_p(&a, "dw"));
    break;
  case KCALL_CONV2D_GRAD_WEIGHT_POOL: { // dy = the pool's gradient, in a temporary of the call
    MlcRefConv k;
    if (!(ok = mlc_ref_conv_of(geom, &k))) break;
    double *dy = calloc((size_t)(k.n * k.o * k.p + 1), sizeof(double)), *db = arg_p(&a, "db");
    int64_t pg[8] = {k.n, k.o, k.ho, k.wo, 2, 2, 2, 2};
    if ((ok = dy != NULL)) mlc_ref_max_pool2d_grad(pg, arg_p(&a, "dyp"), arg_p(&a, "px"), arg_p(&a, "aux"), dy);
    ok = ok && mlc_ref_conv2d_grad_weight(r->f32, geom, c->flags, dy, arg_p(&a, "x"), arg_p(&a, "dw")) &&
         (!db || mlc_ref_conv_bias_grad(r->f32, geom, dy, db));
    free(dy);
    break;
  }
  case KCALL_CONV2D_GRAD_WEIGHT_BIAS:
    ok = mlc_ref_conv2d_grad_weight(r->f32, geom, c->flags, arg_p(&a, "dy"), arg_p(&a, "x"), arg_p(&a, "dw")) &&
         mlc_ref_conv_bias_grad(r->f32, geom, arg_p(&a, "dy"), arg_p(&a, "db"));
    break;
  case KCALL_CONV2D_POOL_PICK: { // y none: as conv2d_pool
    MlcRefConv k;
    if (!(ok = mlc_ref_conv_of(geom, &k))) break;
    double *y = arg_p(&a, "y"), *tmp = y ? NULL : malloc(sizeof(double) * (size_t)(k.n * k.o * k.p + 1));
    ok = (y || tmp) && mlc_ref_conv2d(r->f32, geom, c->flags, arg_p(&a, "x"), arg_p(&a, "w"), arg_p(&a, "bias"), y ? y : tmp);
    int64_t pg[4] = {k.n, k.o, k.ho, k.wo};
    if (ok) mlc_ref_max_pool2d_pick(pg, y ? y : tmp, arg_p(&a, "yp"), arg_p(&a, "pick"));
    free(tmp);
    break;
  }
  case KCALL_CONV2D_GRAD_WEIGHT_PICK: { // dy from the picks, in a temporary of the call
    MlcRefConv k;
    if (!(ok = mlc_ref_conv_of(geom, &k))) break;
    double *dy = calloc((size_t)(k.n * k.o * k.p + 1), sizeof(double)), *db = arg_p(&a, "db");
    int64_t pg[4] = {k.n, k.o, k.ho, k.wo};
    if ((ok = dy != NULL)) mlc_ref_max_pool2d_grad_pick(pg, arg_i(&a, "mask"), arg_p(&a, "dyp"), arg_p(&a, "pick"), dy);
    ok = ok && mlc_ref_conv2d_grad_weight(r->f32, geom, c->flags, dy, arg_p(&a, "x"), arg_p(&a, "dw")) &&
         (!db || mlc_ref_conv_bias_grad(r->f32, geom, dy, db));
    free(dy);
    break;
  }
  case KCALL_CONV2D_GRAD_PICK: { // dy from the picks, in a temporary of the call; then both gradients
    MlcRefConv k;
    if (!(ok = mlc_ref_conv_of(geom, &k))) break;
    double *dy = calloc((size_t)(k.n * k.o * k.p + 1), sizeof(double)), *db = arg_p(&a, "db");
    int64_t pg[4] = {k.n, k.o, k.ho, k.wo};
    if ((ok = dy != NULL)) mlc_ref_max_pool2d_grad_pick(pg, arg_i(&a, "mask"), arg_p(&a, "dyp"), arg_p(&a, "pick"), dy);
    ok = ok && mlc_ref_conv2d_grad_input(r->f32, geom, c->flags, dy, arg_p(&a, "w"), arg_p(&a, "dx")) &&
         mlc_ref_conv2d_grad_weight(r->f32, geom, c->flags, dy, arg_p(&a, "x"), arg_p(&a, "dw")) &&
         (!db || mlc_ref_conv_bias_grad(r->f32, geom, dy, db));
    free(dy);
    break;
  }
  case KCALL_MAX_POOL2D_GRAD_PICK: {
    int64_t pg[4] = {arg_i(&a, "n"), arg_i(&a, "c"), arg_i(&a, "h"), arg_i(&a, "w")};
    mlc_ref_max_pool2d_grad_pick(pg, arg_i(&a, "mask"), arg_p(&a, "dy"), arg_p(&a, "pick"), arg_p(&a, "dx"));
    break;
  }
  case KCALL_MAX_POOL2D:
  case KCALL_MAX_POOL2D_GRAD: {
    int64_t pg[8] = {arg_i(&a, "n"), arg_i(&a, "c"), arg_i(&a, "h"), arg_i(&a, "w"),
                     arg_i(&a, "kh"), arg_i(&a, "kw"), arg_i(&a, "sh"), arg_i(&a, "sw")};
    if (c->fn == KCALL_MAX_POOL2D) mlc_ref_max_pool2d(pg, arg_p(&a, "x"), arg_p(&a, "y"));
    else mlc_ref_max_pool2d_grad(pg, arg_p(&a, "dy"), arg_p(&a, "x"), arg_p(&a, "aux"), arg_p(&a, "dx"));
    break;
  }
  default: ok = false;
  }
  if (!ok) fail(r, "call %s failed", a.sp.name);
}

// ---- warp-level products (kir.h's KMma) -------------------------------------------------------------
// Element (i, j) of an mma operand (rows x cols), or NULL (failed: outside the buffer).
static double *mma_at(Run *r, int b, int64_t off, int64_t si, int64_t sj, int i, int j) {
  int64_t e = off + si * i + sj * j;
  if (e < 0 || e >= r->numel[b]) return fail(r, "mma reads %s[%lld], outside it", kir_buf(r->p, b)->name, (long long)e), NULL;
  return &r->data[b][e];
}

// The running thread's share: D(g + 8 (i / 2), 2 t + i % 2) from its old
// value, + A(row, k) B(k, col) for k ascending, one fmaf each (exact
// products of 16-bit values, so only the sums round; INTERP_F64 keeps the
// sums in double, as it keeps every float).
static void exec_mma(Run *r, const KStmt *s) {
  const KMma *m = s->mma;
  int64_t oa = eval(r, m->oa).i, ob = eval(r, m->ob).i, d0 = eval(r, s->index).i, l = r->thread % 32;
  for (int i = 0; i < 4 && !r->failed; i++) {
    int row = (int)(l / 4) + 8 * (i / 2), col = 2 * (int)(l % 4) + i % 2;
    double *d = cell(r, s->buf, d0 + i);
    if (!d) return;
    double acc = *d;
    for (int k = 0; k < 16; k++) {
      double *a = mma_at(r, m->a, oa, m->ars, m->aks, row, k), *b = mma_at(r, m->b, ob, m->bks, m->bcs, k, col);
      if (!a || !b) return;
      acc = r->f32 ? (double)fmaf((float)*a, (float)*b, (float)acc) : fma(*a, *b, acc); // INTERP_F64: in double
    }
    *d = acc;
  }
}

// ---- statements ----------------------------------------------------------------------------------
static void exec_block(Run *r, const Vec *blk);

static void exec(Run *r, const KStmt *s) {
  switch (s->kind) {
  case KS_FOR: {
    int64_t n = eval(r, s->n).i, thread = r->thread, threads = s->map == KMAP_GPU_BLOCK ? block_threads(&s->body) : 0;
    for (int64_t i = 0; i < n && !r->failed; i++) {
      r->vars[s->var].i = i;
      if (threads) poison_locals(r, threads);
      if (s->map == KMAP_GPU_THREAD) r->thread = i;
      exec_block(r, &s->body);
    }
    r->thread = thread;
    return;
  }
  case KS_LET: case KS_ASSIGN: r->vars[s->var] = eval(r, s->value); return;
  case KS_STORE: {
    int64_t i = eval(r, s->index).i;
    Val v = eval(r, s->value);
    double *c = r->failed ? NULL : cell(r, s->buf, i);
    if (c) *c = dtype_is_float(s->value->dtype) ? v.f : (double)v.i;
    return;
  }
  case KS_IF:
    exec_block(r, eval(r, s->cond).i ? &s->body : &s->els);
    return;
  case KS_CHECK:
    if (!eval(r, s->cond).i) fail(r, "%s", s->msg);
    return;
  case KS_BARRIER: return; // a serial run finishes each statement before the next
  case KS_CALL: exec_call(r, s->call); return;
  case KS_MMA: exec_mma(r, s); return;
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
    int64_t n = r->numel[b] * (kb->kind == KBUF_LOCAL ? KIR_LOCAL_THREADS : 1);
    if (!(r->data[b] = calloc((size_t)(n ? n : 1), sizeof(double))))
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

static bool stored(const KirProgram *p, const Vec *blk, int b) {
  for (int i = 0; i < blk->len; i++) {
    KStmt *s = VEC_AT(*blk, KStmt, i);
    if ((s->kind == KS_STORE && s->buf == b) || stored(p, &s->body, b) || stored(p, &s->els, b)) return true;
    if (s->kind == KS_CALL) {
      bool *rd = calloc((size_t)p->bufs.len * 2 + 1, 1);
      kir_stmt_access(s, rd, rd + p->bufs.len);
      bool w = rd[p->bufs.len + b];
      free(rd);
      if (w) return true;
    }
  }
  return false;
}

// State buffers some kernel writes go back to the caller's tensors.
static void write_back(Run *r, const InterpParams *ps) {
  for (int b = 0; b < r->p->bufs.len; b++) {
    KirBuf *kb = kir_buf(r->p, b);
    bool w = false;
    for (int i = 0; i < r->p->kernels.len && !w && kb->kind == KBUF_STATE; i++)
      w = stored(r->p, &VEC_AT(r->p->kernels, KirKernel, i)->body, b);
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
  Run r = {.p = p, .f32 = mode == INTERP_F32, .rng_seed = params ? params->rng_seed : 0, .thread = -1,
           .err = err, .errlen = errlen};
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
