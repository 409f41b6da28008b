// autodiff.c — reverse-mode differentiation of a graph IR function at
// compile time: one gradient rule per op, in one switch (rule below).
//
// Input: a module and a function f whose chosen output is the loss. Output: a
// new function in the same module that (1) recomputes f's graph (a clone,
// with each dropout rewritten as x * dropout_mask so the backward pass can
// reuse the very mask node), (2) seeds d loss = 1 (or the %dy argument for a
// non-scalar loss), (3) walks the clone in reverse topological order and
// applies each op's rule, accumulating several uses of a value with `add`,
// and (4) returns the loss and the gradients (order in autodiff.h).
//
// Which values are differentiated: a value is *active* when it is float,
// its op has a rule (IRF_DIFF) and some operand is active; trainable param
// reads and chosen arguments are the leaves. Rules emit a contribution only
// for active operands, and only nodes that received a gradient are visited,
// so every gradient node lies on a path from the loss to a leaf: frozen
// params, buffers, integer operands and whatever sits behind stop_gradient
// cost nothing. Hash-consing merges recomputed subexpressions (CSE).
//
// Shapes: a binary op's operand gradient is summed back to the operand's
// shape with reduce_to when broadcasting widened it; reductions expand their
// gradient with reshape (keepdim) + broadcast_to. Ties and kinks are
// documented in docs/design/autodiff.md.
#include "autodiff.h"

#include <string.h>

#include "graph/builder.h"

typedef struct Ad {
  IrModule *m;
  IrFunc *f, *g;  // forward function, gradient function being built
  Arena *a;
  IrBuilder b;    // builds in g, with the span and text location of the
                  // forward node whose rule is running
  int np;         // number of f's arguments: index of body node i is np + i
  IrNode **clone; // forward value -> its copy in g
  IrNode **grad;  // forward value -> accumulated gradient (in g), NULL = none
  IrNode **mask;  // dropout node -> the dropout_mask node its copy multiplies by
  bool *active;   // forward value -> needs a gradient
  const IrNode *failed; // the first forward node without a usable rule
  const char *why;      // and the reason
} Ad;

static int idx(Ad *ad, const IrNode *n) { return n->order + ad->np; }

// ---- building nodes in g ------------------------------------------------------------------
// Every gradient node goes through the IrBuilder (graph/builder.h): typed by
// the shape rule, with the span and location of the forward node being
// differentiated. A rule that builds an ill-typed node is a compiler bug.
static IrNode *mk(Ad *ad, IrOp op, IrNode **in, int nin, const IrAttrs *as, const Type *given) {
  return ir_mk(&ad->b, op, in, nin, as, given);
}

static IrNode *un(Ad *ad, IrOp op, IrNode *x) { return ir_un(&ad->b, op, x); }
static IrNode *bin(Ad *ad, IrOp op, IrNode *x, IrNode *y) { return ir_bin(&ad->b, op, x, y); }
static IrNode *splat(Ad *ad, double v, const Type *t) { return ir_const(&ad->b, v, t); }
static IrNode *scalar(Ad *ad, double v, DType dt) { return ir_scalar(&ad->b, v, dt); }
static IrNode *reshape_to(Ad *ad, IrNode *x, const Type *t) { return ir_reshape(&ad->b, x, t); }
static IrNode *broadcast_to(Ad *ad, IrNode *x, const Type *t) { return ir_broadcast(&ad->b, x, t); }
static IrNode *unbroadcast(Ad *ad, IrNode *g, const Type *t) { return ir_reduce_to(&ad->b, g, t); }
static IrNode *transpose(Ad *ad, IrNode *x, const int64_t *perm) { return ir_transpose(&ad->b, x, perm); }

static IrNode *reduce(Ad *ad, IrOp op, IrNode *x, const int64_t *dims, int nd, bool keep) {
  return ir_reduce(&ad->b, op, x, dims, nd, keep);
}

static IrNode *concat(Ad *ad, IrNode *x, IrNode *y, int dim) {
  IrNode *in[2] = {x, y};
  return ir_concat(&ad->b, in, 2, dim);
}

static IrNode *slice(Ad *ad, IrNode *x, int dim, int64_t start, int64_t step, const Type *t) {
  return ir_slice(&ad->b, x, dim, start, step, t);
}

static Type *with_dtype(Ad *ad, const Type *t, DType dt) {
  Type *r = type_copy(ad->a, t);
  r->dtype = dt;
  r->weak = false;
  return r;
}

// t with dim d replaced by extent e (and dtype dt).
static Type *with_dim(Ad *ad, const Type *t, int d, Dim *e) {
  Type *r = type_copy(ad->a, t);
  r->dims[d] = e;
  return r;
}

static bool in_dims(const int64_t *dims, int nd, int i) {
  for (int j = 0; j < nd; j++)
    if (dims[j] == i) return true;
  return false;
}

// x's type with the reduced dims set to 1 (the keepdim result type).
static Type *keep_type(Ad *ad, const Type *x, const int64_t *dims, int nd) {
  Type *r = type_copy(ad->a, x);
  for (int j = 0; j < nd; j++) r->dims[dims[j]] = dim_const(ad->a, 1);
  return r;
}

// The gradient of a reduction over dims, expanded back to x's type.
static IrNode *expand(Ad *ad, IrNode *g, const Type *x, const int64_t *dims, int nd,
                      bool keep) {
  Type *kt = with_dtype(ad, keep_type(ad, x, dims, nd), g->type->dtype);
  if (!keep && g->type->rank > 0) g = reshape_to(ad, g, kt); // a scalar broadcasts as is
  return broadcast_to(ad, g, with_dtype(ad, x, g->type->dtype));
}

// v / (number of elements of x over dims): a constant factor when the extents
// are known, otherwise a division by sum(ones) so symbolic batch sizes work.
static IrNode *div_count(Ad *ad, IrNode *v, const Type *x, const int64_t *dims, int nd) {
  Dim *cnt = dim_const(ad->a, 1);
  for (int j = 0; j < nd; j++) cnt = dim_mul(ad->a, cnt, x->dims[dims[j]]);
  int64_t c;
  if (dim_is_const(cnt, &c)) return c == 1 ? v : bin(ad, IR_MUL, v, scalar(ad, 1.0 / (double)c, v->type->dtype));
  IrNode *ones = splat(ad, 1, with_dtype(ad, x, v->type->dtype));
  return bin(ad, IR_DIV, v, reduce(ad, IR_SUM, ones, dims, nd, true));
}

static int all_dims(const Type *t, int64_t *dims) {
  for (int i = 0; i < t->rank; i++) dims[i] = i;
  return t->rank;
}

// bool mask of x's type: true at the first arg max of each group reduced over
// dims (row-major order within the group), as argmax picks it. The reduced
// dims are moved last and merged so one argmax over one dim finds it.
static IrNode *first_max_mask(Ad *ad, IrNode *x, const int64_t *dims, int nd) {
  const Type *xt = x->type;
  int r = xt->rank, k = 0;
  int64_t perm[64] = {0}, inv[64] = {0};
  MLC_ASSERT(r <= 64);
  for (int i = 0; i < r; i++)
    if (!in_dims(dims, nd, i)) perm[k++] = i;
  for (int j = 0; j < nd; j++) perm[k + j] = dims[j];
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  IrNode *xt2 = transpose(ad, x, perm);
  Type *flat = type_new(ad->a, xt->dtype, k + 1);
  Dim *R = dim_const(ad->a, 1);
  for (int i = 0; i < k; i++) flat->dims[i] = xt2->type->dims[i];
  for (int j = 0; j < nd; j++) R = dim_mul(ad->a, R, xt->dims[dims[j]]);
  flat->dims[k] = R;
  IrNode *xr = reshape_to(ad, xt2, flat);
  int64_t last = k;
  IrNode *am = reduce(ad, IR_ARGMAX, xr, &last, 1, true); // i64[kept.., 1]
  Type *rt = type_new(ad->a, DT_I64, 1);
  rt->dims[0] = R;
  IrNode *ar = mk(ad, IR_ARANGE, NULL, 0, NULL, rt);
  Type *rt2 = type_new(ad->a, DT_I64, k + 1);
  for (int i = 0; i < k; i++) rt2->dims[i] = dim_const(ad->a, 1);
  rt2->dims[k] = R;
  IrNode *mask = bin(ad, IR_EQ, am, reshape_to(ad, ar, rt2)); // bool[kept.., R]
  mask = reshape_to(ad, mask, with_dtype(ad, xt2->type, DT_BOOL));
  return transpose(ad, mask, inv);
}

// ---- accumulation --------------------------------------------------------------------------
static bool need(Ad *ad, const IrNode *n, int i) { return ad->active[idx(ad, n->in[i])]; }

// Adds a contribution to operand i of n (which must be active).
static void acc(Ad *ad, const IrNode *n, int i, IrNode *d) {
  IrNode *x = n->in[i];
  int k = idx(ad, x);
  MLC_ASSERT(ad->active[k]);
  if (!type_eq(d->type, x->type))
    mlc_ice(__FILE__, __LINE__, "autodiff: %s gives operand %d a %s gradient for %s",
            ir_op_name(n->op), i, type_str(ad->a, d->type), type_str(ad->a, x->type));
  ad->grad[k] = ad->grad[k] ? bin(ad, IR_ADD, ad->grad[k], d) : d;
}

// Contribution of a broadcasting elementwise op: d (the output's shape)
// summed back to operand i.
static void acc_bc(Ad *ad, const IrNode *n, int i, IrNode *d) {
  acc(ad, n, i, unbroadcast(ad, d, n->in[i]->type));
}

static void fail(Ad *ad, const IrNode *n, const char *why) {
  if (ad->failed) return;
  ad->failed = n;
  ad->why = why;
}

// ---- rules by family --------------------------------------------------------------------------
// Elementwise ops: the gradient formula of the op's row in the scalar table
// (graph/scalar.h), built as graph nodes; each active operand's share is
// summed back over the dims broadcasting widened.
static void rule_scalar(Ad *ad, const IrNode *n, IrNode *g) {
  const ScOp *op = sc_op(n->op);
  ScVal x[SC_MAX_IN], dx[SC_MAX_IN] = {{0}};
  bool need_[SC_MAX_IN] = {false};
  double p[SC_MAX_PARAMS];
  for (int i = 0; i < op->nin; i++) {
    x[i].p = ad->clone[idx(ad, n->in[i])];
    need_[i] = ad->active[idx(ad, n->in[i])];
  }
  sc_params(n, p);
  IrScalarBuilder sb = ir_scalar_builder(&ad->b, g->type->dtype);
  ScGrad gr = {x, {.p = ad->clone[idx(ad, n)]}, {.p = g}, p, need_, dx};
  op->grad(&sb.sb, &gr);
  for (int i = 0; i < op->nin; i++)
    if (need_[i]) acc_bc(ad, n, i, dx[i].p);
}

// sum/mean: broadcast back (mean: divided by the count); max/min: all of it
// to the first arg max/min of each group.
static void rule_reduce(Ad *ad, const IrNode *n, IrNode *g) {
  IrNode *x = ad->clone[idx(ad, n->in[0])];
  const Type *xt = x->type;
  if (n->op == IR_REDUCE_TO) {
    acc(ad, n, 0, broadcast_to(ad, g, xt));
    return;
  }
  int nd = 0;
  const int64_t *dims = ir_attr_ints(&n->attrs, IRA_DIMS, &nd);
  int64_t keep = 0;
  ir_attr_int(&n->attrs, IRA_KEEPDIM, &keep);
  IrNode *e = expand(ad, g, xt, dims, nd, keep != 0);
  switch (n->op) {
  case IR_SUM: acc(ad, n, 0, e); break;
  case IR_MEAN: acc(ad, n, 0, div_count(ad, e, xt, dims, nd)); break;
  case IR_MAX: case IR_MIN: {
    if (nd == 0) {
      acc(ad, n, 0, e);
      break;
    }
    IrNode *v = n->op == IR_MAX ? x : un(ad, IR_NEG, x);
    IrNode *in[3] = {first_max_mask(ad, v, dims, nd), e, scalar(ad, 0, g->type->dtype)};
    acc(ad, n, 0, mk(ad, IR_WHERE, in, 3, NULL, NULL));
    break;
  }
  default: MLC_UNREACHABLE();
  }
}

// softmax/log_softmax {dim}: fused rules over the saved output.
static void rule_normalize(Ad *ad, const IrNode *n, IrNode *g) {
  IrNode *in[2] = {g, ad->clone[idx(ad, n)]};
  IrOp op = n->op == IR_SOFTMAX ? IR_SOFTMAX_GRAD : IR_LOG_SOFTMAX_GRAD;
  acc(ad, n, 0, mk(ad, op, in, 2, &n->attrs, NULL));
}

// slice {dim, start, step} of x[.., N, ..] to [.., L, ..]: the gradient is g
// scattered into zeros. With step k > 1, g[.., L, ..] is interleaved with
// k-1 zeros (reshape to [.., L, 1, ..], concat zeros [.., L, k-1, ..],
// reshape to [.., L*k, ..]) and cut after its last real element; then zeros
// are concatenated in front (start) and behind (the rest of N).
static void rule_slice(Ad *ad, const IrNode *n, IrNode *g) {
  const Type *xt = n->in[0]->type;
  int64_t d = 0, start = 0, step = 1;
  ir_attr_int(&n->attrs, IRA_DIM, &d);
  ir_attr_int(&n->attrs, IRA_START, &start);
  ir_attr_int(&n->attrs, IRA_STEP, &step);
  int dim = (int)d;
  Arena *a = ad->a;
  IrNode *cur = g;
  Dim *L = g->type->dims[dim], *len = L;
  if (step > 1) {
    int r = g->type->rank;
    Type *t1 = type_new(a, g->type->dtype, r + 1);
    for (int i = 0, j = 0; i <= r; i++) t1->dims[i] = i == dim + 1 ? dim_const(a, 1) : g->type->dims[j++];
    IrNode *z = splat(ad, 0, with_dim(ad, t1, dim + 1, dim_const(a, step - 1)));
    IrNode *blk = concat(ad, reshape_to(ad, g, t1), z, dim + 1);   // [.., L, k, ..]
    Dim *lk = dim_mul(a, L, dim_const(a, step));
    cur = reshape_to(ad, blk, with_dim(ad, g->type, dim, lk));    // [.., L*k, ..]
    len = dim_add(a, dim_mul(a, dim_sub(a, L, dim_const(a, 1)), dim_const(a, step)), dim_const(a, 1));
    cur = slice(ad, cur, dim, 0, 1, with_dim(ad, g->type, dim, len));
  }
  if (start > 0) {
    IrNode *z = splat(ad, 0, with_dim(ad, g->type, dim, dim_const(a, start)));
    cur = concat(ad, z, cur, dim);
    len = dim_add(a, len, dim_const(a, start));
  }
  Dim *rest = dim_sub(a, xt->dims[dim], len);
  int64_t rv = -1;
  if (!dim_is_const(rest, &rv) || rv > 0)
    cur = concat(ad, cur, splat(ad, 0, with_dim(ad, g->type, dim, rest)), dim);
  acc(ad, n, 0, cur);
}

// concat {dim}: operand i gets the slice of g at its (constant) offset.
static void rule_concat(Ad *ad, const IrNode *n, IrNode *g) {
  int64_t d = 0, off = 0, ext;
  ir_attr_int(&n->attrs, IRA_DIM, &d);
  for (int i = 0; i < n->nin; i++) {
    const Type *t = n->in[i]->type;
    if (need(ad, n, i)) acc(ad, n, i, slice(ad, g, (int)d, off, 1, t));
    if (i + 1 < n->nin && !dim_is_const(t->dims[d], &ext)) {
      fail(ad, n, "needs constant extents along the concatenated dim");
      return;
    }
    off += i + 1 < n->nin ? ext : 0;
  }
}

static void rule_view(Ad *ad, const IrNode *n, IrNode *g) {
  const Type *xt = n->in[0]->type;
  switch (n->op) {
  case IR_RESHAPE: acc(ad, n, 0, reshape_to(ad, g, xt)); break;
  case IR_BROADCAST_TO: acc(ad, n, 0, unbroadcast(ad, g, xt)); break;
  case IR_TRANSPOSE: {
    int np = 0;
    const int64_t *p = ir_attr_ints(&n->attrs, IRA_PERM, &np);
    int64_t inv[64];
    MLC_ASSERT(np <= 64);
    for (int i = 0; i < np; i++) inv[p[i]] = i;
    acc(ad, n, 0, transpose(ad, g, inv));
    break;
  }
  case IR_SLICE: rule_slice(ad, n, g); break;
  case IR_CONCAT: rule_concat(ad, n, g); break;
  default: MLC_UNREACHABLE();
  }
}

// matmul a[.., M, K] @ b[.., K, N] = g[.., M, N]:
//   da = g @ b^T [.., M, K], db = a^T @ g [.., K, N], batch dims summed back;
//   both products keep n's attributes (its precision: the backward
//   products round their operands as the forward one does).
static void rule_matmul(Ad *ad, const IrNode *n, IrNode *g) {
  IrNode *a = ad->clone[idx(ad, n->in[0])], *b = ad->clone[idx(ad, n->in[1])];
  if (need(ad, n, 0)) {
    IrNode *in[2] = {g, ir_transpose_last2(&ad->b, b)};
    acc_bc(ad, n, 0, mk(ad, IR_MATMUL, in, 2, &n->attrs, NULL));
  }
  if (need(ad, n, 1)) {
    IrNode *in[2] = {ir_transpose_last2(&ad->b, a), g};
    acc_bc(ad, n, 1, mk(ad, IR_MATMUL, in, 2, &n->attrs, NULL));
  }
}

// conv2d(x, w): the two gradient ops, same attributes (precision included).
static void rule_conv(Ad *ad, const IrNode *n, IrNode *g) {
  IrNode *x = ad->clone[idx(ad, n->in[0])], *w = ad->clone[idx(ad, n->in[1])];
  if (need(ad, n, 0)) {
    IrNode *in[2] = {g, w};
    acc(ad, n, 0, mk(ad, IR_CONV2D_GRAD_INPUT, in, 2, &n->attrs, x->type));
  }
  if (need(ad, n, 1)) {
    IrNode *in[2] = {g, x};
    acc(ad, n, 1, mk(ad, IR_CONV2D_GRAD_WEIGHT, in, 2, &n->attrs, w->type));
  }
}

static void rule_pool(Ad *ad, const IrNode *n, IrNode *g) {
  IrNode *in[2] = {g, ad->clone[idx(ad, n->in[0])]};
  IrOp op = n->op == IR_MAX_POOL2D ? IR_MAX_POOL2D_GRAD : IR_AVG_POOL2D_GRAD;
  acc(ad, n, 0, mk(ad, op, in, 2, &n->attrs, NULL));
}

// mean(x) over every dim but 1 with the given keepdim: a batch statistic.
static bool is_channel_mean(const IrNode *n, const IrNode *x, int64_t keep) {
  int nd = 0;
  int64_t k = -1;
  const int64_t *dims = n->op == IR_MEAN ? ir_attr_ints(&n->attrs, IRA_DIMS, &nd) : NULL;
  ir_attr_int(&n->attrs, IRA_KEEPDIM, &k);
  if (!dims || n->in[0] != x || k != keep || nd != x->type->rank - 1) return false;
  for (int j = 0; j < nd; j++)
    if (dims[j] != (j ? j + 1 : 0)) return false;
  return true;
}

// True when batch_norm's mean and var operands are the batch statistics of
// its x as training lowers them: mean(x) and mean(d * d), d = m - x with m
// that mean as [1, C, 1, ..] (lw_emit_batch_norm), or d = x - m with m a
// keepdim mean of x. Then the fused batch_norm_grad is the whole gradient
// to x.
static bool has_batch_stats(const IrNode *n) {
  const IrNode *x = n->in[0], *v = n->in[4], *sq, *d;
  if (!is_channel_mean(n->in[3], x, 0) || v->op != IR_MEAN) return false;
  sq = v->in[0];
  if (!is_channel_mean(v, sq, 0) || sq->op != IR_MUL || sq->in[0] != sq->in[1]) return false;
  d = sq->in[0];
  if (d->op != IR_SUB) return false;
  const IrNode *m = d->in[0];
  if (d->in[1] == x && m->op == IR_RESHAPE && m->in[0] == n->in[3]) return true;
  return d->in[0] == x && is_channel_mean(d->in[1], x, 1);
}

// batch_norm(x[N, C, ..], gamma, beta, mean, var) {eps} with
//   y = (x - mean) * inv * gamma + beta,  inv = rsqrt(var + eps).
// Per channel, over dims R = all but 1:
//   dbeta = sum_R g,  dgamma = sum_R g * (x - mean) * inv.
// Training (mean and var are x's batch statistics, has_batch_stats): dx is
// the fused batch_norm_grad, which already accounts for the statistics, so
// nothing flows into the mean/var reductions. Otherwise mean and var are
// independent operands (buffers in evaluation get nothing):
//   dx = g * gamma * inv,  dmean = -sum_R dx,
//   dvar = sum_R g * gamma * (x - mean) * (-1/2) inv^3.
static void rule_batch_norm(Ad *ad, const IrNode *n, IrNode *g) {
  IrNode *X[5];
  for (int i = 0; i < 5; i++) X[i] = ad->clone[idx(ad, n->in[i])];
  const Type *xt = X[0]->type;
  DType dt = xt->dtype;
  double eps = 0;
  ir_attr_float(&n->attrs, IRA_EPS, &eps);
  Type *ct = type_new(ad->a, dt, xt->rank); // [1, C, 1, ..]
  for (int i = 0; i < xt->rank; i++) ct->dims[i] = i == 1 ? xt->dims[1] : dim_const(ad->a, 1);
  int64_t R[64];
  int nr = 0;
  for (int i = 0; i < xt->rank; i++)
    if (i != 1) R[nr++] = i;
  bool fused = has_batch_stats(n);
  IrNode *inv = un(ad, IR_RSQRT, bin(ad, IR_ADD, X[4], scalar(ad, eps, dt)));
  IrNode *invb = reshape_to(ad, inv, ct);
  IrNode *xc = bin(ad, IR_SUB, X[0], reshape_to(ad, X[3], ct));
  if (need(ad, n, 1)) acc(ad, n, 1, reduce(ad, IR_SUM, bin(ad, IR_MUL, g, bin(ad, IR_MUL, xc, invb)), R, nr, false));
  if (need(ad, n, 2)) acc(ad, n, 2, reduce(ad, IR_SUM, g, R, nr, false));
  if (fused) {
    IrNode *in[5] = {g, X[0], X[1], X[3], X[4]};
    if (need(ad, n, 0)) acc(ad, n, 0, mk(ad, IR_BATCH_NORM_GRAD, in, 5, &n->attrs, NULL));
    return;
  }
  IrNode *gg = bin(ad, IR_MUL, g, reshape_to(ad, X[1], ct));
  IrNode *dx = bin(ad, IR_MUL, gg, invb);
  if (need(ad, n, 0)) acc(ad, n, 0, dx);
  if (need(ad, n, 3)) acc(ad, n, 3, un(ad, IR_NEG, reduce(ad, IR_SUM, dx, R, nr, false)));
  if (need(ad, n, 4)) {
    IrNode *s = reduce(ad, IR_SUM, bin(ad, IR_MUL, gg, xc), R, nr, false);
    IrNode *k = bin(ad, IR_MUL, scalar(ad, -0.5, dt), bin(ad, IR_MUL, inv, bin(ad, IR_MUL, inv, inv)));
    acc(ad, n, 4, bin(ad, IR_MUL, s, k));
  }
}

// layer_norm(x, gamma, beta) {eps, ndims}: dx by the fused layer_norm_grad;
// dgamma = g * xhat summed over the leading dims, where xhat is layer_norm
// with gamma 1 and beta 0; dbeta = g summed over the leading dims.
static void rule_layer_norm(Ad *ad, const IrNode *n, IrNode *g) {
  IrNode *x = ad->clone[idx(ad, n->in[0])], *gam = ad->clone[idx(ad, n->in[1])];
  const Type *gt = gam->type;
  if (need(ad, n, 0)) {
    IrNode *in[3] = {g, x, gam};
    acc(ad, n, 0, mk(ad, IR_LAYER_NORM_GRAD, in, 3, &n->attrs, NULL));
  }
  if (need(ad, n, 1)) {
    IrNode *in[3] = {x, splat(ad, 1, gt), splat(ad, 0, gt)};
    IrNode *xhat = mk(ad, IR_LAYER_NORM, in, 3, &n->attrs, NULL);
    acc(ad, n, 1, unbroadcast(ad, bin(ad, IR_MUL, g, xhat), gt));
  }
  if (need(ad, n, 2)) acc(ad, n, 2, unbroadcast(ad, g, n->in[2]->type));
}

// Losses (means over every element or row): cross_entropy by its fused rule;
// mse(a, b) = mean((a - b)^2): da = ((a - b) * 2 / n) * g, db = -da (torch's
// order: under loss scaling g is the scale, and the product with it comes last);
// bce_with_logits(x, t) = mean(max(x, 0) - x t + log(1 + exp(-|x|))):
// dx = g * (sigmoid(x) - t) / n, dt = -g * x / n.
static void rule_loss(Ad *ad, const IrNode *n, IrNode *g) {
  IrNode *a = ad->clone[idx(ad, n->in[0])], *b = ad->clone[idx(ad, n->in[1])];
  DType dt = g->type->dtype;
  int64_t dims[64];
  int nd = all_dims(a->type, dims);
  if (n->op == IR_CROSS_ENTROPY) {
    IrNode *in[3] = {g, a, b};
    acc(ad, n, 0, mk(ad, IR_CROSS_ENTROPY_GRAD, in, 3, NULL, a->type));
    return;
  }
  if (n->op == IR_MSE) {
    IrNode *d = bin(ad, IR_MUL, bin(ad, IR_SUB, a, b), scalar(ad, 2, dt));
    d = bin(ad, IR_MUL, div_count(ad, d, a->type, dims, nd), g);
    if (need(ad, n, 0)) acc(ad, n, 0, d);
    if (need(ad, n, 1)) acc(ad, n, 1, un(ad, IR_NEG, d));
    return;
  }
  if (need(ad, n, 0)) {
    IrNode *d = bin(ad, IR_MUL, bin(ad, IR_SUB, un(ad, IR_SIGMOID, a), b), g);
    acc(ad, n, 0, div_count(ad, d, a->type, dims, nd));
  }
  if (need(ad, n, 1)) {
    IrNode *d = bin(ad, IR_MUL, un(ad, IR_NEG, a), g);
    acc(ad, n, 1, div_count(ad, d, a->type, dims, nd));
  }
}

// custom_grad(y, x1..xn) {func}: the user's gradient function G(x1..xn, dy)
// -> (dx1..dxn) inlined here, its symbols bound from the actual argument
// types; y's own computation gets nothing.
static void rule_custom_grad(Ad *ad, const IrNode *n, IrNode *g) {
  int64_t k = -1;
  ir_attr_int(&n->attrs, IRA_FUNC, &k);
  MLC_ASSERT(k >= 0 && k < ad->m->funcs.len);
  IrFunc *G = VEC_AT(ad->m->funcs, IrFunc, k);
  MLC_ASSERT(G->params.len == n->nin && G->outputs.len == n->nin - 1);
  int np = G->params.len;
  IrNode **map = arena_alloc(ad->a, sizeof(IrNode *) * (size_t)(np + G->nodes.len + 1));
  DimSubst sub = {0};
  for (int i = 0; i < np; i++) {
    IrNode *x = VEC_AT(G->params, IrNode, i);
    map[i] = i + 1 < np ? ad->clone[idx(ad, n->in[i + 1])] : g;
    for (int j = 0; j < x->type->rank && j < map[i]->type->rank; j++) {
      Sym *s = dim_as_sym(x->type->dims[j]);
      if (s && !subst_lookup(&sub, s)) subst_bind(ad->a, &sub, s, map[i]->type->dims[j]);
    }
  }
  ir_number(G);
  for (int i = 0; i < G->nodes.len; i++) {
    IrNode *x = VEC_AT(G->nodes, IrNode, i), *in[8], **ins = in, *c;
    if (x->nin > 8) ins = arena_alloc(ad->a, sizeof(IrNode *) * (size_t)x->nin);
    for (int j = 0; j < x->nin; j++) ins[j] = map[x->in[j]->order + np];
    Type *t = type_subst(ad->a, x->type, &sub);
    if (x->op == IR_PARAM || x->op == IR_BUFFER) {
      c = ir_state_ref(ad->g, x->op, x->name, t, x->span);
    } else if (ir_op_flags(x->op) & IRF_IMPURE) { // a fresh seed per inlining
      IrAttrs as = {0};
      for (int j = 0; j < x->attrs.n; j++)
        if (x->attrs.a[j].key == IRA_P) ir_attr_set_float(ad->a, &as, IRA_P, x->attrs.a[j].f);
      c = ir_node(ad->g, x->op, ins, x->nin, &as, t, x->span);
    } else {
      c = ir_node(ad->g, x->op, ins, x->nin, &x->attrs, t, x->span);
    }
    map[np + i] = c;
  }
  for (int i = 1; i < n->nin; i++)
    if (need(ad, n, i)) {
      IrNode *o = VEC_AT(G->outputs, IrNode, i - 1);
      acc(ad, n, i, map[o->order + np]);
    }
}

// ---- the rule switch ----------------------------------------------------------------------------
// One case per IRF_DIFF op of ir_ops.def that is not elementwise (those take
// their rule from the scalar table): n is the forward node, g its accumulated
// gradient (n's type); contributions go to n's active operands.
static void rule(Ad *ad, const IrNode *n, IrNode *g) {
  switch (n->op) {
  case IR_PARAM: break; // a leaf: its gradient is an output
  case IR_SUM: case IR_MEAN: case IR_MAX: case IR_MIN: case IR_REDUCE_TO:
    rule_reduce(ad, n, g);
    break;
  case IR_SOFTMAX: case IR_LOG_SOFTMAX: rule_normalize(ad, n, g); break;
  case IR_RESHAPE: case IR_TRANSPOSE: case IR_SLICE: case IR_CONCAT: case IR_BROADCAST_TO:
    rule_view(ad, n, g);
    break;
  case IR_MATMUL: rule_matmul(ad, n, g); break;
  case IR_CONV2D: rule_conv(ad, n, g); break;
  case IR_MAX_POOL2D: case IR_AVG_POOL2D: rule_pool(ad, n, g); break;
  case IR_BATCH_NORM: rule_batch_norm(ad, n, g); break;
  case IR_LAYER_NORM: rule_layer_norm(ad, n, g); break;
  case IR_EMBEDDING: {
    IrNode *in[2] = {g, ad->clone[idx(ad, n->in[1])]};
    acc(ad, n, 0, mk(ad, IR_EMBEDDING_GRAD, in, 2, NULL, n->in[0]->type));
    break;
  }
  case IR_DROPOUT: // y = x * mask: dx = g * mask, the same mask node
    acc(ad, n, 0, bin(ad, IR_MUL, g, ad->mask[idx(ad, n)]));
    break;
  case IR_CROSS_ENTROPY: case IR_MSE: case IR_BCE_WITH_LOGITS: rule_loss(ad, n, g); break;
  case IR_CAST: acc(ad, n, 0, ir_cast(&ad->b, g, n->in[0]->type->dtype)); break;
  case IR_CUSTOM_GRAD: rule_custom_grad(ad, n, g); break;
  default:
    if (sc_op(n->op) && sc_op(n->op)->grad) rule_scalar(ad, n, g);
    else mlc_ice(__FILE__, __LINE__, "autodiff: no rule for %s", ir_op_name(n->op));
  }
}

// ---- driver -------------------------------------------------------------------------------------
static bool is_leaf(Ad *ad, const IrNode *n, const bool *wrt) {
  if (n->op == IR_INPUT) return wrt && wrt[idx(ad, n)] && dtype_is_float(n->type->dtype);
  if (n->op != IR_PARAM || !dtype_is_float(n->type->dtype)) return false;
  IrParam *p = ir_module_find_param(ad->m, n->name);
  return p && p->trainable;
}

static void mark_active(Ad *ad, const bool *wrt) {
  int total = ad->np + ad->f->nodes.len;
  for (int k = 0; k < total; k++) {
    IrNode *n = k < ad->np ? VEC_AT(ad->f->params, IrNode, k)
                           : VEC_AT(ad->f->nodes, IrNode, k - ad->np);
    bool act = is_leaf(ad, n, wrt);
    if (!act && n->op != IR_INPUT && n->op != IR_PARAM && (ir_op_flags(n->op) & IRF_DIFF) &&
        dtype_is_float(n->type->dtype))
      for (int i = 0; i < n->nin && !act; i++) act = ad->active[idx(ad, n->in[i])];
    ad->active[k] = act;
  }
}

// The forward graph copied into g; an active dropout becomes x * dropout_mask
// with the same seed, and the mask is kept for the backward rule.
static void clone_forward(Ad *ad) {
  IrFunc *f = ad->f, *g = ad->g;
  for (int i = 0; i < f->syms.len; i++) ir_sym_add(ad->m, g, VEC_AT(f->syms, Sym, i));
  for (int i = 0; i < ad->np; i++) {
    IrNode *x = VEC_AT(f->params, IrNode, i);
    ad->clone[i] = ir_input(g, x->name, x->type, x->span);
    ad->clone[i]->loc = x->loc;
  }
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i), *in[8], **ins = in, *c;
    if (n->nin > 8) ins = arena_alloc(ad->a, sizeof(IrNode *) * (size_t)n->nin);
    for (int j = 0; j < n->nin; j++) ins[j] = ad->clone[idx(ad, n->in[j])];
    if (n->op == IR_PARAM || n->op == IR_BUFFER) {
      c = ir_state_ref(g, n->op, n->name, n->type, n->span);
    } else if (n->op == IR_STORE) { // state updates (running stats) are kept
      c = ir_store(g, n->name, ins[0], n->span);
    } else if (n->op == IR_DROPOUT && ad->active[ad->np + i]) {
      IrNode *mask = ir_node(g, IR_DROPOUT_MASK, ins, 1, &n->attrs, n->type, n->span);
      mask->loc = n->loc;
      ad->mask[ad->np + i] = mask;
      IrNode *mi[2] = {ins[0], mask};
      c = ir_node(g, IR_MUL, mi, 2, NULL, n->type, n->span);
    } else {
      c = ir_node(g, n->op, ins, n->nin, &n->attrs, n->type, n->span);
    }
    if (!c->loc) c->loc = n->loc;
    ad->clone[ad->np + i] = c;
  }
}

static const char *fresh_arg_name(Ad *ad, const char *base) {
  for (int k = 0;; k++) {
    const char *name = k ? arena_printf(ad->a, "%s%d", base, k) : base;
    bool used = false;
    for (int i = 0; i < ad->np && !used; i++)
      used = strcmp(VEC_AT(ad->f->params, IrNode, i)->name, name) == 0;
    if (!used) return name;
  }
}

static IrNode *grad_or_zero(Ad *ad, const IrNode *x) {
  IrNode *d = ad->grad[idx(ad, x)];
  if (d) return d;
  ad->b.span = x->span;
  ad->b.loc = x->loc;
  return splat(ad, 0, x->type);
}

static void add_outputs(Ad *ad, const bool *wrt) {
  IrFunc *f = ad->f;
  for (int i = 0; i < ad->m->params.len; i++) {
    IrParam *p = VEC_AT(ad->m->params, IrParam, i);
    if (p->kind != IRP_PARAM || !p->trainable) continue;
    for (int j = 0; j < f->nodes.len; j++) {
      IrNode *n = VEC_AT(f->nodes, IrNode, j);
      if (n->op == IR_PARAM && strcmp(n->name, p->name) == 0) {
        ir_return(ad->g, grad_or_zero(ad, n), NULL);
        break;
      }
    }
  }
  for (int i = 0; wrt && i < ad->np; i++)
    if (wrt[i]) ir_return(ad->g, grad_or_zero(ad, VEC_AT(f->params, IrNode, i)), NULL);
}

static void backward(Ad *ad) {
  for (int k = ad->np + ad->f->nodes.len - 1; k >= ad->np && !ad->failed; k--) {
    IrNode *n = VEC_AT(ad->f->nodes, IrNode, k - ad->np);
    if (!ad->grad[k] || n->op == IR_PARAM) continue;
    ad->b.span = n->span;
    ad->b.loc = n->loc;
    rule(ad, n, ad->grad[k]);
  }
}

IrFunc *ad_grad(IrModule *m, IrFunc *f, const AdOptions *opts) {
  static const AdOptions none = {0};
  if (!opts) opts = &none;
  Ad ad = {.m = m, .f = f, .a = m->arena, .np = f->params.len};
  MLC_ASSERT(opts->output >= 0 && opts->output < f->outputs.len);
  ir_number(f);
  int total = ad.np + f->nodes.len;
  ad.clone = arena_alloc(ad.a, sizeof(IrNode *) * (size_t)(total + 1));
  ad.grad = arena_alloc(ad.a, sizeof(IrNode *) * (size_t)(total + 1));
  ad.mask = arena_alloc(ad.a, sizeof(IrNode *) * (size_t)(total + 1));
  ad.active = arena_alloc(ad.a, sizeof(bool) * (size_t)(total + 1));
  mark_active(&ad, opts->wrt_inputs);
  const char *name = opts->name ? opts->name : arena_printf(ad.a, "%s_grad", f->name);
  ad.g = ir_func_new(m, name);
  ad.g->span = f->span;
  ad.b = ir_builder(ad.g, "autodiff");
  clone_forward(&ad);
  int nfwd = ad.g->nodes.len;
  IrNode *loss = VEC_AT(f->outputs, IrNode, opts->output);
  ad.b.span = loss->span;
  ad.b.loc = loss->loc;
  IrNode *seed = loss->type->rank == 0 && !opts->seed_arg
                     ? NULL
                     : ir_input(ad.g, fresh_arg_name(&ad, "dy"), loss->type, loss->span);
  if (ad.active[idx(&ad, loss)])
    ad.grad[idx(&ad, loss)] = seed ? seed : scalar(&ad, 1, loss->type->dtype);
  backward(&ad);
  if (ad.failed) { // drop the half-built function
    MLC_ASSERT(VEC_AT(m->funcs, IrFunc, m->funcs.len - 1) == ad.g);
    m->funcs.len--;
    if (opts->diags)
      diag_error(opts->diags, ad.failed->span, "cannot differentiate %s: %s",
                 ir_op_name(ad.failed->op), ad.why);
    return NULL;
  }
  ir_return(ad.g, ad.clone[idx(&ad, loss)], NULL);
  add_outputs(&ad, opts->wrt_inputs);
  for (int i = 0; opts->keep_outputs && i < f->outputs.len; i++)
    if (i != opts->output) ir_return(ad.g, ad.clone[idx(&ad, VEC_AT(f->outputs, IrNode, i))], NULL);
  if (opts->forward_len) *opts->forward_len = nfwd;
  ir_number(ad.g);
  return ad.g;
}
