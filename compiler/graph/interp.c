// interp.c — the reference interpreter's driver and its general ops: tensors,
// binding symbolic dims from argument shapes, the evaluation loop over a
// function's body in topological order, and the elementwise, reduction,
// view, matmul, loss, cast and RNG ops. Convolution, pooling, normalisation
// layers and embedding live in interp_nn.c.
//
// Input: a verified IrModule, one of its functions, argument tensors and
// model state by path. Output: fresh output tensors, or an error naming the
// node ("interp: %3 = embedding(..): index 12 out of range [0, 10)").
//
// Every node's value is a dense row-major Tensor (interp.h). A node whose
// shape is computed from its operands is checked against its declared type
// after evaluation (binding opaque symbols on first sight); a node whose
// shape comes from its type (reshape, const, ...) evaluates the type.
#include "interp_internal.h"
#include "scalar.h"
#include "kernels/gemm_ref.h"
#include "kernels/philox.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- errors, rounding, attributes ----------------------------------------------------------
void *interp_fail(InterpCtx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = arena_vprintf(c->scratch, fmt, ap);
  va_end(ap);
  char *full;
  if (c->cur) {
    IrNode *n = c->cur;
    StrBuf b = {0};
    sb_printf(&b, "%s = %s", ir_value_name(c->scratch, n), ir_op_name(n->op));
    if (n->op == IR_PARAM || n->op == IR_BUFFER) sb_printf(&b, " %s", n->name);
    if (n->nin) {
      sb_putc(&b, '(');
      for (int i = 0; i < n->nin; i++)
        sb_printf(&b, "%s%s", i ? ", " : "", ir_value_name(c->scratch, n->in[i]));
      sb_putc(&b, ')');
    }
    full = arena_printf(c->scratch, "interp: %s: %s", b.data, msg);
    sb_free(&b);
  } else {
    full = arena_printf(c->scratch, "interp: func %s: %s", c->f->name, msg);
  }
  if (c->diags) diag_error(c->diags, c->cur ? c->cur->span : c->f->span, "%s", full);
  return NULL;
}

double interp_store(const InterpCtx *c, DType dt, double v) {
  switch (dt) {
  case DT_F32: case DT_F16: case DT_BF16: return c->f32_mode ? (double)(float)v : v;
  case DT_F64: return v;
  case DT_I32: return isfinite(v) ? (double)(int32_t)(uint32_t)(int64_t)v : 0;
  case DT_I64: case DT_U8: return isfinite(v) ? (double)(int64_t)v : 0;
  case DT_BOOL: return v != 0;
  default: return v;
  }
}

int64_t interp_attr_i(const IrNode *n, IrAttrKey k) { return ir_node_int(n, k); }

uint32_t interp_round_flags(const IrNode *n) {
  int64_t p = ir_node_int(n, IRA_PRECISION);
  return p == DT_BF16 ? MLC_GEMM_BF16 : p == DT_F16 ? MLC_GEMM_F16 : 0;
}
const int64_t *interp_attr_ints(const IrNode *n, IrAttrKey k) { return ir_node_ints(n, k); }
double interp_attr_f(const IrNode *n, IrAttrKey k) { return ir_node_float(n, k); }

// ---- symbolic dims ------------------------------------------------------------------------------
// The value of d under the bindings; false if a symbol in it is unbound.
static bool dim_value(InterpCtx *c, const Dim *d, int64_t *out) {
  Dim *v = dim_subst(c->scratch, d, &c->bind);
  return v && dim_is_const(v, out);
}

static const char *shape_str(InterpCtx *c, int rank, const int64_t *dims) {
  StrBuf b = {0};
  sb_putc(&b, '[');
  for (int i = 0; i < rank; i++) sb_printf(&b, "%s%lld", i ? ", " : "", (long long)dims[i]);
  sb_putc(&b, ']');
  char *s = arena_strdup(c->scratch, b.data);
  sb_free(&b);
  return s;
}

// Binds the bare, still unbound symbols of t to the sizes in dims (pass 1),
// or checks every dim evaluates to its size (pass 2). `what` names the value.
static bool unify(InterpCtx *c, const Type *t, const Tensor *x, int pass, const char *what) {
  if (t->rank != x->rank || (pass == 1 && t->dtype != x->dtype && !(dtype_is_float(t->dtype) && dtype_is_float(x->dtype)))) {
    interp_fail(c, "%s has type %s but the tensor is %s%s", what, type_str(c->scratch, t),
                dtype_name(x->dtype), shape_str(c, x->rank, x->dims));
    return false;
  }
  for (int i = 0; i < t->rank; i++) {
    int64_t v;
    Sym *s = dim_as_sym(t->dims[i]);
    if (pass == 1) {
      if (s && !subst_lookup(&c->bind, s)) subst_bind(c->scratch, &c->bind, s, dim_const(c->scratch, x->dims[i]));
      continue;
    }
    if (!dim_value(c, t->dims[i], &v)) {
      interp_fail(c, "%s: dim %d (%s) cannot be bound from a size alone", what, i,
                  dim_str(c->scratch, t->dims[i]));
      return false;
    }
    if (v != x->dims[i]) {
      interp_fail(c, "%s: dim %d (%s) is %lld but the tensor has %lld (type %s, tensor %s)", what, i,
                  dim_str(c->scratch, t->dims[i]), (long long)v, (long long)x->dims[i],
                  type_str(c->scratch, t), shape_str(c, x->rank, x->dims));
      return false;
    }
  }
  return true;
}

// ---- float sums (interp_internal.h) ----------------------------------------------------------------
// Chunk j >= 1 reached: more holds chunks 1..j, the new ones zeroed.
void interp_sum_grow(InterpSum *s, int64_t chunk) {
  double *m = realloc(s->more, (size_t)chunk * INTERP_SUM_LANES * sizeof(double));
  MLC_ASSERT(m);
  memset(m + s->nmore * INTERP_SUM_LANES, 0, (size_t)(chunk - s->nmore) * INTERP_SUM_LANES * sizeof(double));
  s->more = m;
  s->nmore = chunk;
}

double interp_sum_value(InterpSum *s) {
  double v = interp_sum_fold(s->lane);
  if (s->nmore) {
    double m[INTERP_SUM_LANES] = {v};
    for (int64_t j = 1; j <= s->nmore; j++)
      m[j % INTERP_SUM_LANES] += interp_sum_fold(s->more + (j - 1) * INTERP_SUM_LANES);
    v = interp_sum_fold(m);
  }
  free(s->more);
  *s = (InterpSum){0};
  return v;
}

Tensor *interp_alloc(InterpCtx *c, DType dt, int rank, const int64_t *dims) {
  Tensor *t = interp_tensor_new(dt, rank, dims);
  if (!t) interp_fail(c, "cannot allocate a %s%s tensor", dtype_name(dt), shape_str(c, rank, dims));
  return t;
}

Tensor *interp_alloc_type(InterpCtx *c, const Type *t) {
  int64_t dims[INTERP_MAX_RANK] = {0}; // = {0}: rank 0 reads none (gcc -O3 cannot see that)
  if (t->rank > INTERP_MAX_RANK) return interp_fail(c, "rank %d exceeds %d", t->rank, INTERP_MAX_RANK);
  for (int i = 0; i < t->rank; i++)
    if (!dim_value(c, t->dims[i], &dims[i]) || dims[i] < 0)
      return interp_fail(c, "dim %s of %s is not known here", dim_str(c->scratch, t->dims[i]),
                         type_str(c->scratch, t));
  return interp_alloc(c, t->dtype, t->rank, dims);
}

// ---- index helpers ------------------------------------------------------------------------------
// Advances a row-major multi-index; false after the last element.
static bool next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

// Strides of x seen through a broadcast to out (rank r, aligned right):
// 0 for a dim x lacks or has as 1.
static void bcast_strides(const Tensor *x, int r, const int64_t *odims, int64_t *st) {
  int64_t s = 1;
  for (int i = r - 1, j = x->rank - 1; i >= 0; i--, j--) {
    if (j < 0) {
      st[i] = 0;
      continue;
    }
    st[i] = x->dims[j] == 1 && odims[i] != 1 ? 0 : s;
    s *= x->dims[j];
  }
}

// Broadcast shape of n tensors (NumPy rules; the verifier checked them).
static int bcast_shape(Tensor **xs, int n, int64_t *out) {
  int r = 0;
  for (int k = 0; k < n; k++) r = xs[k]->rank > r ? xs[k]->rank : r;
  for (int i = 0; i < r; i++) out[i] = 1;
  for (int k = 0; k < n; k++)
    for (int i = r - 1, j = xs[k]->rank - 1; j >= 0; i--, j--)
      if (xs[k]->dims[j] != 1) out[i] = xs[k]->dims[j];
  return r;
}

// ---- elementwise -------------------------------------------------------------------------------
// The float formulas are scalar.h's table (sc_eval). Integer add/sub/mul wrap
// like two's complement int64 (then i32 by interp_store), and integer division
// floors like Python's // and refuses zero: the table's doubles cannot.
static double int_floordiv(double a, double b) {
  int64_t x = (int64_t)a, y = (int64_t)b, q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
  return (double)q;
}

static double int_wrap(IrOp op, double a, double b) {
  uint64_t x = (uint64_t)(int64_t)a, y = (uint64_t)(int64_t)b;
  uint64_t r = op == IR_ADD ? x + y : op == IR_SUB ? x - y : x * y;
  return (double)(int64_t)r;
}

// One element: false after reporting an integer division by zero.
static bool element(InterpCtx *c, IrOp op, bool isint, const double *v, const double *p, double *out) {
  if (isint && (op == IR_ADD || op == IR_SUB || op == IR_MUL)) {
    *out = int_wrap(op, v[0], v[1]);
  } else if (isint && op == IR_DIV) {
    if (v[1] == 0) {
      interp_fail(c, "integer division by zero");
      return false;
    }
    *out = int_floordiv(v[0], v[1]);
  } else {
    *out = sc_eval(op, v, p);
  }
  return true;
}

// unary, binary, compare, logical, where and the (dy, saved) grads: one
// output element per broadcast position of the operands.
static Tensor *elementwise(InterpCtx *c, IrNode *n, Tensor **in) {
  int64_t od[INTERP_MAX_RANK] = {0}, st[3][INTERP_MAX_RANK], idx[INTERP_MAX_RANK] = {0};
  int r = bcast_shape(in, n->nin, od);
  Tensor *y = interp_alloc(c, n->type->dtype, r, od);
  if (!y) return NULL;
  for (int k = 0; k < n->nin; k++) bcast_strides(in[k], r, od, st[k]);
  bool isint = dtype_is_int(in[0]->dtype) && ir_op_class(n->op) == IRC_BINARY;
  double p[SC_MAX_PARAMS];
  sc_params(n, p);
  for (int64_t e = 0; e < y->numel; e++, next_index(r, od, idx)) {
    double v[3] = {0}, out;
    for (int k = 0; k < n->nin; k++) {
      int64_t off = 0;
      for (int i = 0; i < r; i++) off += idx[i] * st[k][i];
      v[k] = in[k]->data[off];
    }
    if (!element(c, n->op, isint, v, p, &out)) {
      interp_tensor_free(y);
      return NULL;
    }
    y->data[e] = interp_store(c, y->dtype, out);
  }
  return y;
}

// ---- reductions ----------------------------------------------------------------------------------
// The innermost group of reduced dims (kir.h, "Float sums"): the last
// reduced dim and the reduced dims right before it, [*first, *last]; a
// term's lane is its row-major position within the group, mod 8. Decided
// by which dims are reduced, never by their sizes, as the lowering decides.
static void sum_group(const bool *red, int rank, int *first, int *last) {
  *last = -1;
  for (int i = 0; i < rank; i++)
    if (red[i]) *last = i;
  *first = *last;
  while (*first > 0 && red[*first - 1]) --*first;
}

// The position of multi-index idx within the group [g0, g1] of x.
static int64_t sum_pos(const Tensor *x, const int64_t *idx, int g0, int g1) {
  int64_t p = 0;
  for (int i = g0; i <= g1 && i >= 0; i++) p = p * x->dims[i] + idx[i];
  return p;
}

// sum/mean/max/min/argmax over `dims`: inputs are visited in row-major order,
// so each output's reduced elements arrive in row-major order of the reduced
// dims (argmax's index is the flat index over them; ties keep the first,
// NaN counts as the maximum as in PyTorch). Float sums and means add in the
// defined order (kir.h): f64 lanes, folded, rounded once (a mean divides
// the folded sum by the count before rounding); integer sums wrap in order.
static Tensor *reduce(InterpCtx *c, IrNode *n, Tensor *x) {
  int nd = 0;
  const int64_t *dims = ir_attr_ints(&n->attrs, IRA_DIMS, &nd);
  bool keep = interp_attr_i(n, IRA_KEEPDIM) != 0, red[INTERP_MAX_RANK] = {0};
  for (int i = 0; i < nd; i++) red[dims[i]] = true;
  int64_t od[INTERP_MAX_RANK], ostr[INTERP_MAX_RANK], idx[INTERP_MAX_RANK] = {0}, count = 1;
  int r = 0, g0, g1;
  for (int i = 0; i < x->rank; i++) {
    if (red[i]) count *= x->dims[i];
    if (!red[i] || keep) od[r++] = red[i] ? 1 : x->dims[i];
  }
  sum_group(red, x->rank, &g0, &g1);
  Tensor *y = interp_alloc(c, n->type->dtype, r, od);
  bool fsum = (n->op == IR_SUM || n->op == IR_MEAN) && dtype_is_float(x->dtype) && dtype_is_float(n->type->dtype);
  size_t ny = (size_t)(y ? y->numel : 1) + 1;
  int64_t *seen = calloc(ny, sizeof(int64_t));
  double *best = calloc(ny, sizeof(double));
  InterpSum *sums = fsum ? calloc(ny, sizeof(InterpSum)) : NULL;
  if (!y || !seen || !best || (fsum && !sums)) {
    free(seen);
    free(best);
    free(sums);
    interp_tensor_free(y);
    return y ? interp_fail(c, "out of memory") : NULL;
  }
  // strides of the output indexed by input dims (0 for reduced ones)
  int64_t s = 1;
  for (int i = x->rank - 1, j = r - 1; i >= 0; i--) {
    if (red[i] && !keep) {
      ostr[i] = 0;
      continue;
    }
    ostr[i] = red[i] ? 0 : s;
    s *= od[j--];
  }
  for (int64_t e = 0; e < x->numel; e++, next_index(x->rank, x->dims, idx)) {
    int64_t o = 0;
    for (int i = 0; i < x->rank; i++) o += idx[i] * ostr[i];
    double v = x->data[e], *acc = &y->data[o];
    if (fsum) {
      interp_sum_add(&sums[o], sum_pos(x, idx, g0, g1), v);
      continue;
    }
    int64_t k = seen[o]++;
    switch (n->op) {
    case IR_SUM: case IR_MEAN: *acc = interp_store(c, y->dtype, *acc + v); break;
    case IR_MAX:
      if (k == 0 || v > *acc || isnan(v)) *acc = isnan(*acc) && k ? *acc : v;
      break;
    case IR_MIN:
      if (k == 0 || v < *acc || isnan(v)) *acc = isnan(*acc) && k ? *acc : v;
      break;
    case IR_ARGMAX:
      if (k == 0 || (!isnan(best[o]) && (v > best[o] || isnan(v)))) {
        best[o] = v;
        *acc = (double)k;
      }
      break;
    default: MLC_UNREACHABLE();
    }
  }
  for (int64_t o = 0; fsum && o < y->numel; o++) {
    double v = interp_sum_value(&sums[o]);
    y->data[o] = interp_r(c, n->op == IR_MEAN ? v / (double)count : v);
  }
  if (n->op == IR_MEAN && !fsum)
    for (int64_t o = 0; o < y->numel; o++) y->data[o] = interp_r(c, y->data[o] / (double)count);
  free(seen);
  free(best);
  free(sums);
  return y;
}

// reduce_to: x[..] -> the type's shape, summing every dim the target lacks
// (leading) or has as 1 (statically: a dim both have as 1 is not summed,
// as the lowering decides). Floats add in the defined order (kir.h).
static Tensor *reduce_to(InterpCtx *c, IrNode *n, Tensor *x) {
  Tensor *y = interp_alloc_type(c, n->type);
  if (!y) return NULL;
  const Type *xt = n->in[0]->type, *t = n->type;
  int64_t st[INTERP_MAX_RANK], idx[INTERP_MAX_RANK] = {0}, one;
  bool red[INTERP_MAX_RANK] = {0};
  int lead = xt->rank - t->rank, g0, g1;
  for (int j = 0; j < xt->rank; j++)
    red[j] = j < lead || (dim_is_const(t->dims[j - lead], &one) && one == 1 &&
                          !(dim_is_const(xt->dims[j], &one) && one == 1));
  sum_group(red, x->rank, &g0, &g1);
  bool fsum = dtype_is_float(x->dtype) && dtype_is_float(y->dtype);
  InterpSum *sums = fsum ? calloc((size_t)y->numel + 1, sizeof(InterpSum)) : NULL;
  if (fsum && !sums) {
    interp_tensor_free(y);
    return interp_fail(c, "out of memory");
  }
  bcast_strides(y, x->rank, x->dims, st);
  for (int64_t e = 0; e < x->numel; e++, next_index(x->rank, x->dims, idx)) {
    int64_t o = 0;
    for (int i = 0; i < x->rank; i++) o += idx[i] * st[i];
    if (fsum) interp_sum_add(&sums[o], sum_pos(x, idx, g0, g1), x->data[e]);
    else y->data[o] = interp_store(c, y->dtype, y->data[o] + x->data[e]);
  }
  for (int64_t o = 0; fsum && o < y->numel; o++) y->data[o] = interp_r(c, interp_sum_value(&sums[o]));
  free(sums);
  return y;
}

// Splits x's shape around dim d: outer * len * inner.
static void split3(const Tensor *x, int d, int64_t *outer, int64_t *len, int64_t *inner) {
  *outer = *inner = 1;
  for (int i = 0; i < d; i++) *outer *= x->dims[i];
  for (int i = d + 1; i < x->rank; i++) *inner *= x->dims[i];
  *len = x->dims[d];
}

// softmax/log_softmax {dim}, stable: y = exp(x - max) / sum(exp(x - max)),
// log form x - max - log(sum). softmax_grad (dy, y): y * (dy - sum(dy * y));
// log_softmax_grad (dy, y): dy - exp(y) * sum(dy). Each sum runs along dim
// in the defined order (kir.h), rounded once.
static Tensor *normalize(InterpCtx *c, IrNode *n, Tensor **in) {
  Tensor *x = in[n->nin - 1], *y = interp_alloc(c, x->dtype, x->rank, x->dims);
  if (!y) return NULL;
  int64_t outer, len, inner;
  split3(x, (int)interp_attr_i(n, IRA_DIM), &outer, &len, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t base = o * len * inner + i;
      double *xs = x->data + base, *ys = y->data + base, s, mx = -INFINITY;
      InterpSum sum = {0};
      if (n->op == IR_SOFTMAX_GRAD || n->op == IR_LOG_SOFTMAX_GRAD) {
        double *dy = in[0]->data + base;
        for (int64_t k = 0; k < len; k++)
          interp_sum_add(&sum, k, n->op == IR_SOFTMAX_GRAD ? interp_r(c, dy[k * inner] * xs[k * inner]) : dy[k * inner]);
        s = interp_r(c, interp_sum_value(&sum));
        for (int64_t k = 0; k < len; k++) {
          double yk = xs[k * inner];
          ys[k * inner] = n->op == IR_SOFTMAX_GRAD
                              ? interp_r(c, yk * interp_r(c, dy[k * inner] - s))
                              : interp_r(c, dy[k * inner] - interp_r(c, interp_r(c, exp(yk)) * s));
        }
        continue;
      }
      for (int64_t k = 0; k < len; k++) mx = xs[k * inner] > mx || isnan(xs[k * inner]) ? xs[k * inner] : mx;
      for (int64_t k = 0; k < len; k++) interp_sum_add(&sum, k, interp_r(c, exp(interp_r(c, xs[k * inner] - mx))));
      s = interp_r(c, interp_sum_value(&sum));
      for (int64_t k = 0; k < len; k++) {
        double z = interp_r(c, xs[k * inner] - mx);
        ys[k * inner] = n->op == IR_SOFTMAX ? interp_r(c, interp_r(c, exp(z)) / s)
                                            : interp_r(c, z - interp_r(c, log(s)));
      }
    }
  return y;
}

// ---- views ----------------------------------------------------------------------------------------
static Tensor *convert(InterpCtx *c, IrNode *n, Tensor *x) {
  Tensor *y = interp_alloc_type(c, n->type);
  if (!y) return NULL;
  if (y->numel != x->numel) {
    long long ny = (long long)y->numel;
    interp_tensor_free(y);
    return interp_fail(c, "element count %lld differs from the operand's %lld", ny,
                       (long long)x->numel);
  }
  for (int64_t e = 0; e < x->numel; e++) {
    double v = x->data[e];
    if (dtype_is_int(y->dtype) && dtype_is_float(x->dtype)) v = trunc(v);
    y->data[e] = interp_store(c, y->dtype, v);
  }
  return y;
}

// transpose {perm}: out dim i = in dim perm[i]
static Tensor *transpose(InterpCtx *c, IrNode *n, Tensor *x) {
  const int64_t *perm = interp_attr_ints(n, IRA_PERM);
  int64_t od[INTERP_MAX_RANK], ist[INTERP_MAX_RANK], st[INTERP_MAX_RANK], idx[INTERP_MAX_RANK] = {0};
  int64_t s = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    ist[i] = s;
    s *= x->dims[i];
  }
  for (int i = 0; i < x->rank; i++) {
    od[i] = x->dims[perm[i]];
    st[i] = ist[perm[i]];
  }
  Tensor *y = interp_alloc(c, x->dtype, x->rank, od);
  if (!y) return NULL;
  for (int64_t e = 0; e < y->numel; e++, next_index(y->rank, od, idx)) {
    int64_t off = 0;
    for (int i = 0; i < y->rank; i++) off += idx[i] * st[i];
    y->data[e] = x->data[off];
  }
  return y;
}

// slice {dim, start, step}: length from the type
static Tensor *slice(InterpCtx *c, IrNode *n, Tensor *x) {
  Tensor *y = interp_alloc_type(c, n->type);
  if (!y) return NULL;
  int d = (int)interp_attr_i(n, IRA_DIM);
  int64_t start = interp_attr_i(n, IRA_START), step = interp_attr_i(n, IRA_STEP);
  int64_t outer, len, inner, olen = y->dims[d];
  split3(x, d, &outer, &len, &inner);
  if (olen > 0 && start + (olen - 1) * step >= len) {
    interp_tensor_free(y);
    return interp_fail(c, "slice of %lld from %lld step %lld exceeds extent %lld", (long long)olen,
                       (long long)start, (long long)step, (long long)len);
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < olen; k++)
      memcpy(y->data + (o * olen + k) * inner, x->data + (o * len + start + k * step) * inner,
             sizeof(double) * (size_t)inner);
  return y;
}

// concat {dim}
static Tensor *concat(InterpCtx *c, IrNode *n, Tensor **in) {
  int d = (int)interp_attr_i(n, IRA_DIM);
  int64_t od[INTERP_MAX_RANK], outer, len, inner, total = 0, at = 0;
  for (int k = 0; k < n->nin; k++) total += in[k]->dims[d];
  memcpy(od, in[0]->dims, sizeof od);
  od[d] = total;
  Tensor *y = interp_alloc(c, in[0]->dtype, in[0]->rank, od);
  if (!y) return NULL;
  for (int k = 0; k < n->nin; k++, at += len) {
    split3(in[k], d, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++)
      memcpy(y->data + (o * total + at) * inner, in[k]->data + o * len * inner,
             sizeof(double) * (size_t)(len * inner));
  }
  return y;
}

static Tensor *broadcast_to(InterpCtx *c, IrNode *n, Tensor *x) {
  Tensor *y = interp_alloc_type(c, n->type);
  if (!y) return NULL;
  int64_t st[INTERP_MAX_RANK], idx[INTERP_MAX_RANK] = {0};
  bcast_strides(x, y->rank, y->dims, st);
  for (int64_t e = 0; e < y->numel; e++, next_index(y->rank, y->dims, idx)) {
    int64_t off = 0;
    for (int i = 0; i < y->rank; i++) off += idx[i] * st[i];
    y->data[e] = x->data[off];
  }
  return y;
}

// ---- matmul ------------------------------------------------------------------------------------------
// [.., M, K] @ [.., K, N] -> [.., M, N]; batch dims broadcast. Each product
// is kernels/cpu's GEMM (kernels/gemm_ref.h): per element, K blocks of
// fused multiply-add chains in k order, block sums added in order; in f32
// mode fmaf and float rounding, the library's bits. `flags` rounds the
// operands (the node's precision).
static Tensor *matmul(InterpCtx *c, Tensor *a, Tensor *b, uint32_t flags) {
  Tensor ba = *a, bb = *b;
  ba.rank -= 2;
  bb.rank -= 2;
  Tensor *bs[2] = {&ba, &bb};
  int64_t od[INTERP_MAX_RANK], sa[INTERP_MAX_RANK], sb[INTERP_MAX_RANK], idx[INTERP_MAX_RANK] = {0};
  int r = bcast_shape(bs, 2, od);
  int64_t M = a->dims[a->rank - 2], K = a->dims[a->rank - 1], N = b->dims[b->rank - 1];
  od[r] = M;
  od[r + 1] = N;
  Tensor *y = interp_alloc(c, a->dtype, r + 2, od);
  if (!y) return NULL;
  bcast_strides(&ba, r, od, sa);
  bcast_strides(&bb, r, od, sb);
  int64_t mn = M * N, nb = mn > 0 ? y->numel / mn : 0;
  for (int64_t bi = 0; bi < nb; bi++, next_index(r, od, idx)) {
    int64_t oa = 0, ob = 0;
    for (int i = 0; i < r; i++) {
      oa += idx[i] * sa[i];
      ob += idx[i] * sb[i];
    }
    mlc_ref_gemm(c->f32, flags, M, N, K, 1, a->data + oa * M * K, K, 1, b->data + ob * K * N, N, 1, 0,
                 y->data + bi * M * N, N, NULL, NULL, 0);
  }
  return y;
}

// ---- losses --------------------------------------------------------------------------------------------
// cross_entropy (logits[N, C], target[N]): mean over n of
// logsumexp(x[n]) - x[n, t[n]]; cross_entropy_grad (dy, logits, target):
// dy * (softmax(x[n]) - onehot(t[n])) / N. The sum of exp over a row and
// the sum over rows run in the defined order (kir.h); the mean divides the
// folded sum by N before rounding.
static Tensor *cross_entropy(InterpCtx *c, IrNode *n, Tensor **in) {
  bool grad = n->op == IR_CROSS_ENTROPY_GRAD;
  Tensor *x = in[grad], *t = in[grad + 1];
  int64_t N = x->dims[0], C = x->dims[1];
  Tensor *y = grad ? interp_alloc(c, x->dtype, 2, x->dims) : interp_alloc(c, x->dtype, 0, NULL);
  if (!y) return NULL;
  double dy = grad ? in[0]->data[0] : 0;
  InterpSum total = {0};
  for (int64_t i = 0; i < N; i++) {
    const double *row = x->data + i * C;
    double tv = t->data[i], mx = -INFINITY;
    InterpSum sum = {0};
    if (tv < 0 || tv >= (double)C) {
      interp_tensor_free(y);
      return interp_fail(c, "target %lld of row %lld out of range [0, %lld)", (long long)tv, (long long)i,
                         (long long)C);
    }
    for (int64_t k = 0; k < C; k++) mx = row[k] > mx || isnan(row[k]) ? row[k] : mx;
    for (int64_t k = 0; k < C; k++) interp_sum_add(&sum, k, interp_r(c, exp(interp_r(c, row[k] - mx))));
    double lse = interp_r(c, mx + interp_r(c, log(interp_r(c, interp_sum_value(&sum)))));
    if (!grad) {
      interp_sum_add(&total, i, interp_r(c, lse - row[(int64_t)tv]));
      continue;
    }
    for (int64_t k = 0; k < C; k++) {
      double p = interp_r(c, exp(interp_r(c, row[k] - lse)));
      double g = interp_r(c, p - (k == (int64_t)tv ? 1 : 0));
      y->data[i * C + k] = interp_r(c, interp_r(c, dy * g) / (double)N);
    }
  }
  if (!grad) y->data[0] = interp_r(c, interp_sum_value(&total) / (double)N);
  return y;
}

// mse: mean((a - b)^2); bce_with_logits (x, z): mean(max(x, 0) - x*z +
// log1p(exp(-|x|))), PyTorch's stable form. The mean's sum runs over the
// flat index in the defined order (kir.h), divided by the count, rounded once.
static Tensor *pair_loss(InterpCtx *c, IrNode *n, Tensor **in) {
  Tensor *y = interp_alloc(c, in[0]->dtype, 0, NULL);
  if (!y) return NULL;
  InterpSum s = {0};
  for (int64_t e = 0; e < in[0]->numel; e++) {
    double a = in[0]->data[e], b = in[1]->data[e], v;
    if (n->op == IR_MSE) {
      double d = interp_r(c, a - b);
      v = interp_r(c, d * d);
    } else {
      v = interp_r(c, interp_r(c, (a > 0 ? a : 0) - interp_r(c, a * b)) + interp_r(c, log1p(exp(-fabs(a)))));
    }
    interp_sum_add(&s, e, v);
  }
  y->data[0] = interp_r(c, interp_sum_value(&s) / (double)(in[0]->numel ? in[0]->numel : 1));
  if (!in[0]->numel) y->data[0] = NAN;
  return y;
}

// ---- randomness -------------------------------------------------------------------------------------------
double interp_dropout_scale(uint64_t seed, uint64_t rng_seed, uint64_t index, double p) {
  // Philox-4x32-10 (kernels/philox.h): key = the node's seed, counter =
  // (element index, the run's step stream).
  double u = philox_uniform24(seed, index, rng_seed);
  return u >= p ? 1 / (1 - p) : 0;
}

double interp_noise(uint64_t seed, uint64_t rng_seed, uint64_t index, bool normal) {
  if (!normal) return philox_uniform24(seed, index, rng_seed);
  double u1 = philox_uniform24(seed, 2 * index, rng_seed);
  double u2 = philox_uniform24(seed, 2 * index + 1, rng_seed);
  return sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2); // 2 pi, rounded
}

// rand, randn {seed}: one draw per element (interp_noise)
static Tensor *noise(InterpCtx *c, IrNode *n) {
  Tensor *y = interp_alloc_type(c, n->type);
  if (!y) return NULL;
  uint64_t seed = (uint64_t)interp_attr_i(n, IRA_SEED), rs = c->params ? c->params->rng_seed : 0;
  for (int64_t e = 0; e < y->numel; e++)
    y->data[e] = interp_r(c, interp_noise(seed, rs, (uint64_t)e, n->op == IR_RANDN));
  return y;
}

// dropout {p, seed}: x * mask; dropout_mask: the mask (0 or 1/(1-p)).
static Tensor *dropout(InterpCtx *c, IrNode *n, Tensor *x) {
  Tensor *y = interp_alloc(c, x->dtype, x->rank, x->dims);
  if (!y) return NULL;
  double p = interp_attr_f(n, IRA_P);
  uint64_t seed = (uint64_t)interp_attr_i(n, IRA_SEED), rs = c->params ? c->params->rng_seed : 0;
  for (int64_t e = 0; e < x->numel; e++) {
    double m = interp_r(c, interp_dropout_scale(seed, rs, (uint64_t)e, p));
    y->data[e] = n->op == IR_DROPOUT_MASK ? m : interp_r(c, x->data[e] * m);
  }
  return y;
}

// ---- plumbing ---------------------------------------------------------------------------------------------
static Tensor *constant(InterpCtx *c, IrNode *n) {
  Tensor *y = interp_alloc_type(c, n->type);
  if (!y) return NULL;
  double v = interp_attr_f(n, IRA_VALUE);
  int64_t T = y->rank == 2 ? y->dims[1] : 1;
  for (int64_t e = 0; e < y->numel; e++) {
    double x = n->op == IR_CONST ? v : n->op == IR_ARANGE ? (double)e : (e % T) <= (e / T);
    y->data[e] = interp_store(c, y->dtype, x);
  }
  return y;
}

static Tensor *state(InterpCtx *c, IrNode *n) {
  const InterpParams *p = c->params;
  for (int i = 0; p && i < p->n; i++)
    if (strcmp(p->paths[i], n->name) == 0) {
      Tensor *y = interp_alloc(c, n->type->dtype, p->values[i]->rank, p->values[i]->dims);
      if (!y) return NULL;
      for (int64_t e = 0; e < y->numel; e++) y->data[e] = interp_store(c, y->dtype, p->values[i]->data[e]);
      return y;
    }
  return interp_fail(c, "no value given for %s %s",
                     n->op == IR_PARAM ? "param" : n->op == IR_BUFFER ? "buffer" : "optstate", n->name);
}

// ---- dispatch ---------------------------------------------------------------------------------------------
static Tensor *eval_node(InterpCtx *c, IrNode *n, Tensor **in) {
  switch (ir_op_class(n->op)) {
  case IRC_INPUT: return state(c, n);
  case IRC_CONST: return constant(c, n);
  case IRC_UNARY: case IRC_BINARY: case IRC_COMPARE: case IRC_LOGICAL: case IRC_SELECT:
    return elementwise(c, n, in);
  case IRC_GRAD:
    if (n->op == IR_SOFTMAX_GRAD || n->op == IR_LOG_SOFTMAX_GRAD) return normalize(c, n, in);
    return elementwise(c, n, in);
  case IRC_REDUCE: return n->op == IR_REDUCE_TO ? reduce_to(c, n, in[0]) : reduce(c, n, in[0]);
  case IRC_NORMALIZE: return normalize(c, n, in);
  case IRC_VIEW:
    switch (n->op) {
    case IR_RESHAPE: return convert(c, n, in[0]);
    case IR_TRANSPOSE: return transpose(c, n, in[0]);
    case IR_SLICE: return slice(c, n, in[0]);
    case IR_CONCAT: return concat(c, n, in);
    default: return broadcast_to(c, n, in[0]);
    }
  case IRC_MATMUL: return matmul(c, in[0], in[1], interp_round_flags(n));
  case IRC_CONV: return interp_conv(c, n, in);
  case IRC_POOL: return interp_pool(c, n, in);
  case IRC_NORM: return interp_norm(c, n, in);
  case IRC_INDEX: return interp_index(c, n, in);
  case IRC_RNG: return n->nin ? dropout(c, n, in[0]) : noise(c, n);
  case IRC_LOSS:
    return n->op == IR_MSE || n->op == IR_BCE_WITH_LOGITS ? pair_loss(c, n, in) : cross_entropy(c, n, in);
  case IRC_CAST: return convert(c, n, in[0]);
  }
  MLC_UNREACHABLE();
}

// Binds the arguments' symbols: bare symbols first (over all arguments, so
// [B*T] before [B] works), then every dim must evaluate to its size.
static bool bind_args(InterpCtx *c, Tensor **inputs, int nin) {
  if (nin != c->f->params.len) {
    interp_fail(c, "takes %d argument%s, got %d", c->f->params.len, c->f->params.len == 1 ? "" : "s", nin);
    return false;
  }
  for (int pass = 1; pass <= 2; pass++)
    for (int i = 0; i < nin; i++) {
      IrNode *a = VEC_AT(c->f->params, IrNode, i);
      const char *what = arena_printf(c->scratch, "argument %%%s", a->name);
      if (!inputs[i]) {
        interp_fail(c, "%s is missing", what);
        return false;
      }
      if (!unify(c, a->type, inputs[i], pass, what)) return false;
    }
  return true;
}

// Argument values as the function sees them (rounded to its dtypes).
static Tensor *arg_value(InterpCtx *c, IrNode *a, const Tensor *x) {
  Tensor *y = interp_alloc(c, a->type->dtype, x->rank, x->dims);
  for (int64_t e = 0; y && e < y->numel; e++) y->data[e] = interp_store(c, y->dtype, x->data[e]);
  return y;
}

// Executes the function's stores once the body has run: each `store PATH(v)`
// overwrites the InterpParams tensor of PATH in place (rounded to the node's
// dtype). Every slot is checked before any is written, so a failing run
// changes nothing.
static int apply_stores(InterpCtx *c, Tensor **vals, int np) {
  IrFunc *f = c->f;
  const InterpParams *p = c->params;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < f->nodes.len; i++) {
      IrNode *n = VEC_AT(f->nodes, IrNode, i);
      if (n->op != IR_STORE) continue;
      Tensor *v = vals[np + i], *dst = NULL;
      for (int k = 0; p && k < p->n && !dst; k++)
        if (strcmp(p->paths[k], n->name) == 0) dst = p->values[k];
      c->cur = n;
      if (!dst) return interp_fail(c, "no value given for %s", n->name), -1;
      if (dst->numel != v->numel) return interp_fail(c, "%s holds %lld elements, the value %lld", n->name,
                                                     (long long)dst->numel, (long long)v->numel), -1;
      for (int64_t e = 0; pass == 1 && e < v->numel; e++) dst->data[e] = interp_store(c, dst->dtype, v->data[e]);
    }
  c->cur = NULL;
  return 0;
}

static int run_body(InterpCtx *c, Tensor **vals, int np, Tensor **outputs) {
  IrFunc *f = c->f;
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    Tensor **in = arena_alloc(c->scratch, sizeof(Tensor *) * (size_t)(n->nin + 1)); // freed with the run
    c->cur = n;
    c->f32 = c->f32_mode && n->type->dtype != DT_F64; // f64 values are never rounded
    for (int k = 0; k < n->nin; k++) in[k] = vals[np + n->in[k]->order];
    Tensor *y = eval_node(c, n, in);
    if (!y) return -1;
    vals[np + i] = y;
    if (!unify(c, n->type, y, 1, "the result") || !unify(c, n->type, y, 2, "the result")) return -1;
  }
  c->cur = NULL;
  if (apply_stores(c, vals, np)) return -1;
  for (int i = 0; i < f->outputs.len; i++) {
    IrNode *o = VEC_AT(f->outputs, IrNode, i);
    outputs[i] = interp_tensor_clone(vals[np + o->order]);
    if (!outputs[i]) {
      for (int k = 0; k < i; k++) interp_tensor_free(outputs[k]);
      return interp_fail(c, "out of memory"), -1;
    }
  }
  return 0;
}

int interp_run(IrModule *m, IrFunc *f, InterpMode mode, Tensor **inputs, int nin,
               const InterpParams *params, Tensor **outputs, DiagSink *d) {
  InterpCtx c = {.m = m, .f = f, .f32_mode = mode == INTERP_F32, .scratch = arena_new(),
                 .params = params, .diags = d};
  ir_number(f);
  int np = f->params.len, rc = -1;
  Tensor **vals = calloc((size_t)(np + f->nodes.len + 1), sizeof(Tensor *));
  if (!vals) {
    arena_free(c.scratch);
    return -1;
  }
  if (bind_args(&c, inputs, nin)) {
    rc = 0;
    for (int i = 0; i < np && rc == 0; i++)
      if (!(vals[i] = arg_value(&c, VEC_AT(f->params, IrNode, i), inputs[i]))) rc = -1;
    if (rc == 0) rc = run_body(&c, vals, np, outputs);
  }
  for (int i = 0; i < np + f->nodes.len; i++) interp_tensor_free(vals[i]);
  free(vals);
  arena_free(c.scratch);
  return rc;
}
