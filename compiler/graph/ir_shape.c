// ir_shape.c — the graph IR's shape rules: for every op in ir_ops.def, the
// attributes it takes and the function that computes its result type from
// its operands' types and attributes.
//
// Input: an op, operand nodes (their types), attributes and, for ops whose
// result is not a function of the operands (reshape, cast, const, gradients
// that produce an input's shape), the given result type. Output: the result
// type, or NULL with a short reason ("inner dims 784 and 256 differ") that the
// caller prefixes with the node (the verifier: "ir: %5 = matmul(%3, %4): ").
//
// Both ir_build (to type new nodes) and ir_verify (to recompute every node's
// type) call ir_shape_infer, so there is one definition of each rule.
// Broadcasting follows NumPy (types.c's broadcast2, accepting what it calls a
// surprise: the IR is past the user-facing restriction).
#include "ir.h"
#include "scalar.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

typedef struct Ctx {
  Arena *a;
  char *err;
  size_t errlen;
} Ctx;

static Type *fail(Ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static Type *fail(Ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (c->errlen) vsnprintf(c->err, c->errlen, fmt, ap);
  va_end(ap);
  return NULL;
}

static const char *ts(Ctx *c, const Type *t) { return type_str(c->a, t); }
static const char *ds(Ctx *c, const Dim *d) { return dim_str(c->a, d); }
#define T(i) (in[i]->type)

// ---- attribute schema --------------------------------------------------------------------
#define A(k) (1u << IRA_##k)

uint32_t ir_op_attrs(IrOp op) {
  switch (op) {
  case IR_SUM: case IR_MEAN: case IR_MAX: case IR_MIN: case IR_ARGMAX:
    return A(DIMS) | A(KEEPDIM);
  case IR_SOFTMAX: case IR_LOG_SOFTMAX: case IR_SOFTMAX_GRAD:
  case IR_LOG_SOFTMAX_GRAD: case IR_CONCAT:
    return A(DIM);
  case IR_TRANSPOSE: return A(PERM);
  case IR_SLICE: return A(DIM) | A(START) | A(STEP);
  case IR_CONV2D: case IR_CONV2D_GRAD_INPUT: case IR_CONV2D_GRAD_WEIGHT:
    return A(STRIDE) | A(PADDING) | A(DILATION) | A(GROUPS);
  case IR_MAX_POOL2D: case IR_AVG_POOL2D: case IR_MAX_POOL2D_GRAD:
  case IR_AVG_POOL2D_GRAD:
    return A(KERNEL) | A(STRIDE) | A(PADDING);
  case IR_BATCH_NORM: case IR_BATCH_NORM_GRAD: return A(EPS);
  case IR_LAYER_NORM: case IR_LAYER_NORM_GRAD: return A(EPS) | A(NDIMS);
  case IR_DROPOUT: case IR_DROPOUT_MASK: return A(P) | A(SEED);
  case IR_RAND: case IR_RANDN: return A(SEED);
  case IR_CONST: return A(VALUE);
  case IR_CUSTOM_GRAD: return A(FUNC);
  default: {
    const ScOp *s = sc_op(op); // elementwise scalar parameters
    int n = s ? s->nparams : 0;
    return (n >= 1 ? A(A) : 0) | (n >= 2 ? A(B) : 0);
  }
  }
}

// Attributes an op may carry but need not: the products' precision.
static uint32_t optional_attrs(IrOp op) {
  bool prec = op == IR_MATMUL || op == IR_CONV2D || op == IR_CONV2D_GRAD_INPUT || op == IR_CONV2D_GRAD_WEIGHT;
  return prec ? A(PRECISION) : 0;
}

static bool check_schema(Ctx *c, IrOp op, const IrAttrs *as) {
  uint32_t want = ir_op_attrs(op), have = 0;
  int64_t prec;
  if (ir_attr_int(as, IRA_PRECISION, &prec) && prec != DT_BF16 && prec != DT_F16) {
    fail(c, "precision must be bf16 or f16 (f32 is the attribute's absence)");
    return false;
  }
  for (int i = 0; i < as->n; i++) {
    if (!((want | optional_attrs(op)) & (1u << as->a[i].key))) {
      fail(c, "unexpected attribute '%s'", ir_attr_name(as->a[i].key));
      return false;
    }
    have |= 1u << as->a[i].key;
  }
  for (int k = 0; k < IRA_COUNT; k++)
    if ((want & ~have) & (1u << k)) {
      fail(c, "missing attribute '%s'", ir_attr_name((IrAttrKey)k));
      return false;
    }
  return true;
}

static int64_t attr_i(const IrAttrs *as, IrAttrKey k) {
  int64_t v = 0;
  ir_attr_int(as, k, &v);
  return v;
}

// A list attribute of exactly n entries, each >= lo; NULL after an error.
static const int64_t *attr_pair(Ctx *c, const IrAttrs *as, IrAttrKey k, int64_t lo) {
  int n = 0;
  const int64_t *v = ir_attr_ints(as, k, &n);
  if (!v || n != 2) {
    fail(c, "attribute '%s' needs 2 values", ir_attr_name(k));
    return NULL;
  }
  for (int i = 0; i < 2; i++)
    if (v[i] < lo) {
      fail(c, "attribute '%s' must be >= %lld", ir_attr_name(k), (long long)lo);
      return NULL;
    }
  return v;
}

// ---- small helpers -----------------------------------------------------------------------
static bool same_dtype(Ctx *c, const Type *x, const Type *y) {
  if (x->dtype == y->dtype) return true;
  fail(c, "dtypes %s and %s differ", dtype_name(x->dtype), dtype_name(y->dtype));
  return false;
}

static bool need_float(Ctx *c, const Type *x) {
  if (dtype_is_float(x->dtype)) return true;
  fail(c, "needs a float operand, got %s", ts(c, x));
  return false;
}

static bool need_eq(Ctx *c, const Type *x, const Type *y, const char *what) {
  if (type_eq(x, y)) return true;
  fail(c, "%s: %s and %s differ", what, ts(c, x), ts(c, y));
  return false;
}

static bool need_int_dtype(Ctx *c, const Type *x, const char *what) {
  if (x->dtype == DT_I32 || x->dtype == DT_I64) return true;
  fail(c, "%s must be i32 or i64, got %s", what, ts(c, x));
  return false;
}

static bool dim_is1(const Dim *d) {
  int64_t v;
  return dim_is_const(d, &v) && v == 1;
}

static Type *ret(Ctx *c, const Type *t) { return type_copy(c->a, t); }

static Type *with_dtype(Ctx *c, const Type *t, DType dt) {
  Type *r = type_copy(c->a, t);
  r->dtype = dt;
  r->weak = false;
  return r;
}

// ---- plumbing and constants ------------------------------------------------------------------
// input/param/buffer: the given type; const: any shape, value must fit the dtype
static Type *rule_given(Ctx *c, IrOp op, const IrAttrs *as, const Type *given) {
  double v = 0;
  switch (op) {
  case IR_CONST:
    ir_attr_float(as, IRA_VALUE, &v);
    if (!dtype_is_float(given->dtype) && (v != floor(v) || isinf(v)))
      return fail(c, "value %g does not fit %s", v, dtype_name(given->dtype));
    if (given->dtype == DT_BOOL && v != 0 && v != 1)
      return fail(c, "value %g does not fit bool", v);
    break;
  case IR_ARANGE: // arange: -> dtype[n]
    if (given->rank != 1 || given->dtype == DT_BOOL)
      return fail(c, "result must be a numeric vector, got %s", ts(c, given));
    break;
  case IR_CAUSAL_MASK: // causal_mask: -> bool[T, T]
    if (given->rank != 2 || given->dtype != DT_BOOL ||
        !dim_eq(given->dims[0], given->dims[1]))
      return fail(c, "result must be bool[T, T], got %s", ts(c, given));
    break;
  default: break;
  }
  return ret(c, given);
}

// ---- elementwise ------------------------------------------------------------------------------
// unary: x[..] -> x[..]; the ops scalar.h marks `ints` (abs neg relu sign)
// take any number, the rest floats
static Type *rule_unary(Ctx *c, IrOp op, const Type *x) {
  const ScOp *s = sc_op(op);
  if (x->dtype == DT_BOOL) return fail(c, "needs a numeric operand, got bool");
  if (!(s && s->ints) && !need_float(c, x)) return NULL;
  return ret(c, x);
}

static Type *bcast(Ctx *c, const Type *x, const Type *y) {
  BcResult r = broadcast2(c->a, x, y);
  if (r.status == BC_MISMATCH)
    return fail(c, "cannot broadcast %s and %s", ts(c, x), ts(c, y));
  return r.result;
}

// binary: a[..] op b[..] -> broadcast(a, b), equal dtypes
// compare: the same with a bool result; logical: bool operands
static Type *rule_binary(Ctx *c, IrOp op, IrNode **in) {
  IrClass cls = ir_op_class(op);
  if (!same_dtype(c, T(0), T(1))) return NULL;
  if (cls == IRC_BINARY && op == IR_POW && !need_float(c, T(0))) return NULL;
  if (cls == IRC_BINARY && T(0)->dtype == DT_BOOL)
    return fail(c, "needs numeric operands, got bool");
  if (cls == IRC_LOGICAL && T(0)->dtype != DT_BOOL)
    return fail(c, "needs bool operands, got %s", dtype_name(T(0)->dtype));
  Type *r = bcast(c, T(0), T(1));
  if (!r) return NULL;
  return cls == IRC_BINARY ? with_dtype(c, r, T(0)->dtype) : with_dtype(c, r, DT_BOOL);
}

// not: bool[..] -> bool[..]
static Type *rule_not(Ctx *c, const Type *x) {
  if (x->dtype != DT_BOOL) return fail(c, "needs a bool operand, got %s", ts(c, x));
  return ret(c, x);
}

// where: cond bool[..], a[..], b[..] -> broadcast of all three, a's dtype
static Type *rule_where(Ctx *c, IrNode **in) {
  if (T(0)->dtype != DT_BOOL)
    return fail(c, "condition must be bool, got %s", ts(c, T(0)));
  if (!same_dtype(c, T(1), T(2))) return NULL;
  Type *r = bcast(c, T(0), T(1));
  if (r) r = bcast(c, r, T(2));
  return r ? with_dtype(c, r, T(1)->dtype) : NULL;
}

// ---- reductions ---------------------------------------------------------------------------------
// sum/mean/max/min/argmax {dims, keepdim}: x[d0..dn] -> dims dropped (or 1);
// dims ascending and unique; argmax -> i64; mean needs floats
static Type *rule_reduce(Ctx *c, IrOp op, const Type *x, const IrAttrs *as) {
  int n = 0;
  const int64_t *dims = ir_attr_ints(as, IRA_DIMS, &n);
  int64_t keep = attr_i(as, IRA_KEEPDIM);
  if (keep != 0 && keep != 1) return fail(c, "keepdim must be 0 or 1");
  for (int i = 0; i < n; i++) {
    if (dims[i] < 0 || dims[i] >= x->rank)
      return fail(c, "dim %lld out of range for %s", (long long)dims[i], ts(c, x));
    if (i && dims[i] <= dims[i - 1]) return fail(c, "dims must be ascending and unique");
  }
  if (op == IR_MEAN && !need_float(c, x)) return NULL;
  int rank = keep ? x->rank : x->rank - n;
  Type *r = type_new(c->a, op == IR_ARGMAX ? DT_I64 : x->dtype, rank);
  for (int i = 0, j = 0, k = 0; i < x->rank; i++) {
    bool red = j < n && dims[j] == i;
    if (red) j++;
    if (red && !keep) continue;
    r->dims[k++] = red ? dim_const(c->a, 1) : x->dims[i];
  }
  return r;
}

// reduce_to: x[..] -> given, where given broadcasts to x (sum over the rest)
static Type *rule_reduce_to(Ctx *c, const Type *x, const Type *given) {
  if (!same_dtype(c, x, given)) return NULL;
  bool ok = given->rank <= x->rank;
  for (int i = 1; ok && i <= given->rank; i++) {
    const Dim *g = given->dims[given->rank - i], *d = x->dims[x->rank - i];
    ok = dim_eq(g, d) || dim_is1(g);
  }
  if (!ok) return fail(c, "cannot reduce %s to %s", ts(c, x), ts(c, given));
  return ret(c, given);
}

// softmax/log_softmax {dim}: x[..] -> x[..], floats
static Type *rule_normalize(Ctx *c, const Type *x, const IrAttrs *as) {
  int64_t d = attr_i(as, IRA_DIM);
  if (d < 0 || d >= x->rank)
    return fail(c, "dim %lld out of range for %s", (long long)d, ts(c, x));
  if (!need_float(c, x)) return NULL;
  return ret(c, x);
}

// ---- views --------------------------------------------------------------------------------------------
// reshape: x[..] -> given, same element count
static Type *rule_reshape(Ctx *c, const Type *x, const Type *given) {
  if (!same_dtype(c, x, given)) return NULL;
  Dim *nx = type_numel(c->a, x), *ng = type_numel(c->a, given);
  if (!dim_eq(nx, ng))
    return fail(c, "reshape of %s to %s changes the element count (%s vs %s)",
                ts(c, x), ts(c, given), ds(c, nx), ds(c, ng));
  return ret(c, given);
}

// transpose {perm}: x[d0..dn] -> [d_perm[0], .., d_perm[n]]
static Type *rule_transpose(Ctx *c, const Type *x, const IrAttrs *as) {
  int n = 0;
  const int64_t *p = ir_attr_ints(as, IRA_PERM, &n);
  if (n != x->rank)
    return fail(c, "perm has %d entries for rank-%d %s", n, x->rank, ts(c, x));
  Type *r = type_new(c->a, x->dtype, x->rank);
  uint64_t seen = 0;
  for (int i = 0; i < n; i++) {
    if (p[i] < 0 || p[i] >= n || p[i] >= 64 || (seen >> p[i] & 1))
      return fail(c, "perm is not a permutation of 0..%d", n - 1);
    seen |= 1ull << p[i];
    r->dims[i] = x->dims[p[i]];
  }
  return r;
}

// slice {dim, start, step}: x[.., n, ..] -> given [.., len, ..], with
// start + (len-1)*step < n when both are known
static Type *rule_slice(Ctx *c, const Type *x, const IrAttrs *as, const Type *given) {
  int64_t d = attr_i(as, IRA_DIM), start = attr_i(as, IRA_START), step = attr_i(as, IRA_STEP);
  if (d < 0 || d >= x->rank)
    return fail(c, "dim %lld out of range for %s", (long long)d, ts(c, x));
  if (start < 0 || step < 1) return fail(c, "slice needs start >= 0 and step >= 1");
  if (!same_dtype(c, x, given)) return NULL;
  if (given->rank != x->rank) return fail(c, "slice of %s cannot be %s", ts(c, x), ts(c, given));
  for (int i = 0; i < x->rank; i++)
    if (i != d && !dim_eq(x->dims[i], given->dims[i]))
      return fail(c, "slice of %s cannot be %s", ts(c, x), ts(c, given));
  int64_t n, len, last;
  if (dim_is_const(x->dims[d], &n) && dim_is_const(given->dims[d], &len) &&
      (len < 0 || (len > 0 && (__builtin_mul_overflow(len - 1, step, &last) ||
                               __builtin_add_overflow(last, start, &last) || last >= n))))
    return fail(c, "slice of %lld from %lld step %lld is out of range of dim %lld (%lld)",
                (long long)len, (long long)start, (long long)step, (long long)d,
                (long long)n);
  return ret(c, given);
}

// concat {dim}: x0[.., n0, ..], x1[.., n1, ..] .. -> [.., n0 + n1 + .., ..]
static Type *rule_concat(Ctx *c, IrNode **in, int nin, const IrAttrs *as) {
  int64_t d = attr_i(as, IRA_DIM);
  const Type *x = T(0);
  if (d < 0 || d >= x->rank)
    return fail(c, "dim %lld out of range for %s", (long long)d, ts(c, x));
  Type *r = type_copy(c->a, x);
  for (int k = 1; k < nin; k++) {
    const Type *y = T(k);
    if (!same_dtype(c, x, y)) return NULL;
    bool ok = y->rank == x->rank;
    for (int i = 0; ok && i < x->rank; i++) ok = i == d || dim_eq(x->dims[i], y->dims[i]);
    if (!ok) return fail(c, "cannot concatenate %s and %s on dim %lld", ts(c, x), ts(c, y), (long long)d);
    r->dims[d] = dim_add(c->a, r->dims[d], y->dims[d]);
  }
  return r;
}

// broadcast_to: x[..] -> given, x's dims equal given's or 1 (aligned right)
static Type *rule_broadcast_to(Ctx *c, const Type *x, const Type *given) {
  if (!same_dtype(c, x, given)) return NULL;
  bool ok = x->rank <= given->rank;
  for (int i = 1; ok && i <= x->rank; i++) {
    const Dim *d = x->dims[x->rank - i], *g = given->dims[given->rank - i];
    ok = dim_eq(d, g) || dim_is1(d);
  }
  if (!ok) return fail(c, "cannot broadcast %s to %s", ts(c, x), ts(c, given));
  return ret(c, given);
}

// ---- matmul -----------------------------------------------------------------------------------------
// matmul: [.., M, K] @ [.., K, N] -> [.., M, N], batch dims broadcast
static Type *rule_matmul(Ctx *c, const Type *x, const Type *y) {
  if (x->rank < 2 || y->rank < 2)
    return fail(c, "needs operands of rank >= 2, got %s and %s", ts(c, x), ts(c, y));
  if (!same_dtype(c, x, y)) return NULL;
  const Dim *k1 = x->dims[x->rank - 1], *k2 = y->dims[y->rank - 2];
  if (!dim_eq(k1, k2)) return fail(c, "inner dims %s and %s differ", ds(c, k1), ds(c, k2));
  Type *bx = type_new(c->a, x->dtype, x->rank - 2), *by = type_new(c->a, y->dtype, y->rank - 2);
  for (int i = 0; i < bx->rank; i++) bx->dims[i] = x->dims[i];
  for (int i = 0; i < by->rank; i++) by->dims[i] = y->dims[i];
  Type *b = bcast(c, bx, by);
  if (!b) return NULL;
  Type *r = type_new(c->a, x->dtype, b->rank + 2);
  for (int i = 0; i < b->rank; i++) r->dims[i] = b->dims[i];
  r->dims[b->rank] = x->dims[x->rank - 2];
  r->dims[b->rank + 1] = y->dims[y->rank - 1];
  return r;
}

// ---- windows (conv, pool) ------------------------------------------------------------------------
// out = (in + 2p - d*(k-1) - 1) / s + 1, floor division. A symbolic extent
// with s > 1 is computable only when the division is exact; otherwise the
// given dim (the builder's opaque symbol) is taken on trust.
static bool window_out(Ctx *c, const Dim *in, int64_t k, int64_t s, int64_t p,
                       int64_t d, const Dim *given, Dim **out) {
  int64_t off, span, v;
  if (__builtin_mul_overflow(d, k - 1, &span) || __builtin_mul_overflow(p, 2, &off) ||
      __builtin_sub_overflow(off, span, &off) || __builtin_sub_overflow(off, 1, &off)) {
    fail(c, "window attributes too large");
    return false;
  }
  Dim *num = dim_add(c->a, in, dim_const(c->a, off));
  if (dim_is_const(num, &v)) {
    if (v < 0) {
      fail(c, "window of %lld (dilation %lld) does not fit extent %s with padding %lld",
           (long long)k, (long long)d, ds(c, in), (long long)p);
      return false;
    }
    *out = dim_const(c->a, v / s + 1);
    return true;
  }
  // Symbolic: (in + off) // s + 1, the floor atom sema also uses.
  Dim *q = dim_floordiv(c->a, num, s);
  if (q) {
    *out = dim_add(c->a, q, dim_const(c->a, 1));
    return true;
  }
  (void)given;
  fail(c, "output extent of a stride-%lld window over %s overflows", (long long)s,
       ds(c, in));
  return false;
}

static bool const_dim(Ctx *c, const Dim *d, int64_t *v, const char *what) {
  if (dim_is_const(d, v)) return true;
  fail(c, "%s must be a constant, got %s", what, ds(c, d));
  return false;
}

// conv2d {stride, padding, dilation, groups}:
//   x[N, C, H, W] * w[O, C/groups, KH, KW] -> [N, O, HO, WO]
static Type *conv_shape(Ctx *c, const Type *x, const Type *w, const IrAttrs *as,
                        const Type *hint) {
  if (x->rank != 4 || w->rank != 4)
    return fail(c, "needs x[N, C, H, W] and w[O, C, KH, KW], got %s and %s", ts(c, x), ts(c, w));
  if (!same_dtype(c, x, w) || !need_float(c, x)) return NULL;
  const int64_t *s = attr_pair(c, as, IRA_STRIDE, 1), *p = attr_pair(c, as, IRA_PADDING, 0),
                *d = attr_pair(c, as, IRA_DILATION, 1);
  int64_t g = attr_i(as, IRA_GROUPS), kh, kw, o;
  if (!s || !p || !d) return NULL;
  if (g < 1) return fail(c, "groups must be >= 1");
  if (!dim_eq(x->dims[1], dim_mul(c->a, w->dims[1], dim_const(c->a, g))))
    return fail(c, "input channels %s differ from weight's %s * groups %lld",
                ds(c, x->dims[1]), ds(c, w->dims[1]), (long long)g);
  if (dim_is_const(w->dims[0], &o) && o % g)
    return fail(c, "output channels %lld not divisible by groups %lld", (long long)o, (long long)g);
  if (!const_dim(c, w->dims[2], &kh, "kernel height") || !const_dim(c, w->dims[3], &kw, "kernel width"))
    return NULL;
  Type *r = type_new(c->a, x->dtype, 4);
  r->dims[0] = x->dims[0];
  r->dims[1] = w->dims[0];
  bool h = hint && hint->rank == 4;
  if (!window_out(c, x->dims[2], kh, s[0], p[0], d[0], h ? hint->dims[2] : NULL, &r->dims[2]) ||
      !window_out(c, x->dims[3], kw, s[1], p[1], d[1], h ? hint->dims[3] : NULL, &r->dims[3]))
    return NULL;
  return r;
}

// max_pool2d/avg_pool2d {kernel, stride, padding}: x[N, C, H, W] -> [N, C, HO, WO]
static Type *pool_shape(Ctx *c, IrOp op, const Type *x, const IrAttrs *as, const Type *hint) {
  if (x->rank != 4) return fail(c, "needs x[N, C, H, W], got %s", ts(c, x));
  bool avg = op == IR_AVG_POOL2D || op == IR_AVG_POOL2D_GRAD;
  if (x->dtype == DT_BOOL) return fail(c, "needs a numeric operand, got bool");
  if (avg && !need_float(c, x)) return NULL;
  const int64_t *k = attr_pair(c, as, IRA_KERNEL, 1), *s = attr_pair(c, as, IRA_STRIDE, 1),
                *p = attr_pair(c, as, IRA_PADDING, 0);
  if (!k || !s || !p) return NULL;
  if (2 * p[0] > k[0] || 2 * p[1] > k[1]) return fail(c, "padding must be at most half the kernel");
  Type *r = type_copy(c->a, x);
  bool h = hint && hint->rank == 4;
  if (!window_out(c, x->dims[2], k[0], s[0], p[0], 1, h ? hint->dims[2] : NULL, &r->dims[2]) ||
      !window_out(c, x->dims[3], k[1], s[1], p[1], 1, h ? hint->dims[3] : NULL, &r->dims[3]))
    return NULL;
  return r;
}

// conv2d_grad_input (dy, w) -> given x with conv2d(x, w) : dy
// conv2d_grad_weight (dy, x) -> given w with conv2d(x, w) : dy
static Type *rule_conv(Ctx *c, IrOp op, IrNode **in, const IrAttrs *as, const Type *given) {
  if (op == IR_CONV2D) return conv_shape(c, T(0), T(1), as, given);
  const Type *x = op == IR_CONV2D_GRAD_INPUT ? given : T(1);
  const Type *w = op == IR_CONV2D_GRAD_INPUT ? T(1) : given;
  Type *y = conv_shape(c, x, w, as, T(0));
  if (!y || !need_eq(c, y, T(0), "conv2d output and dy")) return NULL;
  return ret(c, given);
}

// max_pool2d_grad/avg_pool2d_grad (dy, x) -> x, with pool(x) : dy
static Type *rule_pool(Ctx *c, IrOp op, IrNode **in, const IrAttrs *as, const Type *given) {
  if (op == IR_MAX_POOL2D || op == IR_AVG_POOL2D) return pool_shape(c, op, T(0), as, given);
  Type *y = pool_shape(c, op, T(1), as, T(0));
  if (!y || !need_eq(c, y, T(0), "pool output and dy")) return NULL;
  return ret(c, T(1));
}

// ---- normalisation layers ------------------------------------------------------------------------
static bool need_vec(Ctx *c, const Type *t, DType dt, const Dim *n, const char *what) {
  if (t->dtype == dt && t->rank == 1 && dim_eq(t->dims[0], n)) return true;
  fail(c, "%s must be %s[%s], got %s", what, dtype_name(dt), ds(c, n), ts(c, t));
  return false;
}

static bool need_eps(Ctx *c, const IrAttrs *as) {
  double eps = 0;
  ir_attr_float(as, IRA_EPS, &eps);
  if (eps > 0) return true;
  fail(c, "eps must be > 0");
  return false;
}

// batch_norm (x[N, C, ..], gamma[C], beta[C], mean[C], var[C]) -> x
// batch_norm_grad (dy, x, gamma[C], mean[C], var[C]) -> x
static Type *rule_batch_norm(Ctx *c, IrOp op, IrNode **in, const IrAttrs *as) {
  int xi = op == IR_BATCH_NORM ? 0 : 1;
  const Type *x = T(xi);
  static const char *const names[2][5] = {{"x", "gamma", "beta", "mean", "var"},
                                          {"dy", "x", "gamma", "mean", "var"}};
  if (x->rank < 2) return fail(c, "needs x[N, C, ..], got %s", ts(c, x));
  if (!need_float(c, x) || !need_eps(c, as)) return NULL;
  if (xi && !need_eq(c, T(0), x, "dy and x")) return NULL;
  for (int i = xi + 1; i < 5; i++)
    if (!need_vec(c, T(i), x->dtype, x->dims[1], names[xi][i])) return NULL;
  return ret(c, x);
}

// layer_norm {ndims} (x[.., D..], gamma[D..], beta[D..]) -> x, D.. = last ndims dims
// layer_norm_grad (dy, x, gamma) -> x
static Type *rule_layer_norm(Ctx *c, IrOp op, IrNode **in, const IrAttrs *as) {
  int xi = op == IR_LAYER_NORM ? 0 : 1;
  const Type *x = T(xi);
  int64_t k = attr_i(as, IRA_NDIMS);
  if (k < 1 || k > x->rank) return fail(c, "ndims %lld out of range for %s", (long long)k, ts(c, x));
  if (!need_float(c, x) || !need_eps(c, as)) return NULL;
  if (xi && !need_eq(c, T(0), x, "dy and x")) return NULL;
  Type *g = type_new(c->a, x->dtype, (int)k);
  for (int i = 0; i < k; i++) g->dims[i] = x->dims[x->rank - k + i];
  if (!need_eq(c, T(xi + 1), g, "gamma and normalised shape")) return NULL;
  if (!xi && !need_eq(c, T(2), g, "beta and normalised shape")) return NULL;
  return ret(c, x);
}

// ---- indexing ------------------------------------------------------------------------------------
// embedding: table[V, D], idx int[..] -> [.., D]
static Type *rule_embedding(Ctx *c, const Type *tab, const Type *idx) {
  if (tab->rank != 2) return fail(c, "table must be [V, D], got %s", ts(c, tab));
  if (!need_int_dtype(c, idx, "indices")) return NULL;
  Type *r = type_new(c->a, tab->dtype, idx->rank + 1);
  for (int i = 0; i < idx->rank; i++) r->dims[i] = idx->dims[i];
  r->dims[idx->rank] = tab->dims[1];
  return r;
}

// embedding_grad: dy[.., D], idx int[..] -> given [V, D] (scatter-add)
static Type *rule_embedding_grad(Ctx *c, const Type *dy, const Type *idx, const Type *given) {
  if (given->rank != 2) return fail(c, "result must be [V, D], got %s", ts(c, given));
  Type *want = rule_embedding(c, given, idx);
  if (!want || !need_eq(c, dy, want, "dy and embedding output")) return NULL;
  return ret(c, given);
}

// rand/randn {seed}: -> the given float type (no operands)
// dropout/dropout_mask {p, seed}: x -> x, floats, 0 <= p < 1
static Type *rule_rng(Ctx *c, const Type *x, const IrAttrs *as) {
  double p = -1;
  ir_attr_float(as, IRA_P, &p);
  if (!(p >= 0 && p < 1)) return fail(c, "p must be in [0, 1), got %g", p);
  if (!need_float(c, x)) return NULL;
  return ret(c, x);
}

// ---- losses ---------------------------------------------------------------------------------------
// cross_entropy: logits[N, C], target int[N] -> scalar
// mse/bce_with_logits: a[..], b[..] (same type) -> scalar
// cross_entropy_grad: dy (scalar), logits, target -> logits
static Type *rule_loss(Ctx *c, IrOp op, IrNode **in) {
  int li = op == IR_CROSS_ENTROPY_GRAD ? 1 : 0;
  const Type *x = T(li), *y = T(li + 1);
  if (!need_float(c, x)) return NULL;
  if (op == IR_MSE || op == IR_BCE_WITH_LOGITS) {
    if (!need_eq(c, x, y, "operands")) return NULL;
    return type_scalar(c->a, x->dtype);
  }
  if (x->rank != 2) return fail(c, "logits must be [N, C], got %s", ts(c, x));
  if (!need_int_dtype(c, y, "target")) return NULL;
  if (y->rank != 1 || !dim_eq(y->dims[0], x->dims[0]))
    return fail(c, "target %s does not match logits %s", ts(c, y), ts(c, x));
  if (li && !need_eq(c, T(0), type_scalar(c->a, x->dtype), "dy")) return NULL;
  return li ? ret(c, x) : type_scalar(c->a, x->dtype);
}

// cast: x[..] -> given dtype[..] (same dims); stop_gradient, custom_grad: x -> x;
// store PATH(x): x -> x (the slot's type is the verifier's check)
static Type *rule_cast(Ctx *c, IrOp op, const Type *x, const Type *given) {
  if (op == IR_STOP_GRADIENT || op == IR_CUSTOM_GRAD || op == IR_STORE) return ret(c, x);
  if (!need_eq(c, with_dtype(c, x, given->dtype), given, "cast keeps the shape")) return NULL;
  return ret(c, given);
}

// relu_grad etc: (dy[..], saved[..]) -> dy, same types, floats;
// softmax_grad/log_softmax_grad also check {dim}
static Type *rule_grad(Ctx *c, IrOp op, IrNode **in, const IrAttrs *as) {
  if (!need_eq(c, T(0), T(1), "dy and the saved value")) return NULL;
  if (op == IR_SOFTMAX_GRAD || op == IR_LOG_SOFTMAX_GRAD) return rule_normalize(c, T(0), as);
  if (!need_float(c, T(0))) return NULL;
  return ret(c, T(0));
}

// ---- dispatch ---------------------------------------------------------------------------------------
static bool needs_given(IrOp op) {
  switch (ir_op_class(op)) {
  case IRC_INPUT: case IRC_CONST: return true;
  default: break;
  }
  switch (op) {
  case IR_RAND: case IR_RANDN:
  case IR_REDUCE_TO: case IR_RESHAPE: case IR_SLICE: case IR_BROADCAST_TO:
  case IR_CONV2D_GRAD_INPUT: case IR_CONV2D_GRAD_WEIGHT: case IR_EMBEDDING_GRAD:
  case IR_CAST:
    return true;
  default: return false;
  }
}

static Type *infer_class(Ctx *c, IrOp op, IrNode **in, int nin, const IrAttrs *as,
                         const Type *given) {
  switch (ir_op_class(op)) {
  case IRC_INPUT: case IRC_CONST: return rule_given(c, op, as, given);
  case IRC_UNARY: return rule_unary(c, op, T(0));
  case IRC_BINARY: case IRC_COMPARE: return rule_binary(c, op, in);
  case IRC_LOGICAL: return op == IR_NOT ? rule_not(c, T(0)) : rule_binary(c, op, in);
  case IRC_SELECT: return rule_where(c, in);
  case IRC_REDUCE:
    return op == IR_REDUCE_TO ? rule_reduce_to(c, T(0), given) : rule_reduce(c, op, T(0), as);
  case IRC_NORMALIZE: return rule_normalize(c, T(0), as);
  case IRC_VIEW:
    switch (op) {
    case IR_RESHAPE: return rule_reshape(c, T(0), given);
    case IR_TRANSPOSE: return rule_transpose(c, T(0), as);
    case IR_SLICE: return rule_slice(c, T(0), as, given);
    case IR_CONCAT: return rule_concat(c, in, nin, as);
    default: return rule_broadcast_to(c, T(0), given);
    }
  case IRC_MATMUL: return rule_matmul(c, T(0), T(1));
  case IRC_CONV: return rule_conv(c, op, in, as, given);
  case IRC_POOL: return rule_pool(c, op, in, as, given);
  case IRC_NORM:
    return op == IR_BATCH_NORM || op == IR_BATCH_NORM_GRAD ? rule_batch_norm(c, op, in, as)
                                                           : rule_layer_norm(c, op, in, as);
  case IRC_INDEX:
    return op == IR_EMBEDDING ? rule_embedding(c, T(0), T(1))
                              : rule_embedding_grad(c, T(0), T(1), given);
  case IRC_RNG:
    if (op == IR_RAND || op == IR_RANDN) return need_float(c, given) ? ret(c, given) : NULL;
    return rule_rng(c, T(0), as);
  case IRC_LOSS: return rule_loss(c, op, in);
  case IRC_CAST: return rule_cast(c, op, T(0), given);
  case IRC_GRAD: return rule_grad(c, op, in, as);
  }
  MLC_UNREACHABLE();
}

static bool check_arity(Ctx *c, IrOp op, IrNode **in, int nin) {
  int want = ir_op_nin(op);
  if (want >= 0 && nin != want) {
    fail(c, "takes %d operand%s, got %d", want, want == 1 ? "" : "s", nin);
    return false;
  }
  if (want < 0 && nin < 1) {
    fail(c, "takes at least 1 operand");
    return false;
  }
  for (int i = 0; i < nin; i++)
    if (!in[i] || !in[i]->type) {
      fail(c, "operand %d has no type", i);
      return false;
    }
  return true;
}

Type *ir_shape_infer(Arena *a, IrOp op, IrNode **in, int nin,
                     const IrAttrs *attrs, const Type *given, char *err,
                     size_t errlen) {
  Ctx c = {a, err, errlen};
  if (errlen) err[0] = 0;
  if (!check_arity(&c, op, in, nin) || !check_schema(&c, op, attrs)) return NULL;
  if (needs_given(op) && !given) return fail(&c, "needs a result type");
  if (ir_op_flags(op) & IRF_IMPURE) {
    int64_t seed;
    if (ir_attr_int(attrs, IRA_SEED, &seed) && seed < 0) return fail(&c, "seed must be >= 0");
  }
  return infer_class(&c, op, in, nin, attrs, given);
}
