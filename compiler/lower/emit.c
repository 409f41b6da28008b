// emit.c — the emitters of ops.def's EMIT column: a resolved builtin call
// (CK_OP, sema/checked.h) as graph IR nodes.
//
// Input: the call as sema's rule left it — the op it resolved to (max(a, b)
// is maximum), each parameter's bound argument (tensor expressions, or
// constants sema folded, defaults included) and the IR attributes the rule
// computed (dims, perm, stride, eps, ...); the IR op is the row's IR column.
// Output: nodes typed by the IR's shape rules (ops whose result the IR does
// not compute — reshape, cast, const — take sema's type, substituted).
//
// What the generic emitters do not cover, each emitter says: conv2d's bias
// is an add of it reshaped to [C, 1, 1]; embedding(idx, w) is
// embedding(w, idx); a smoothed cross_entropy is (1 - ls) * cross_entropy +
// ls * mean(-log_softmax); dropout in eval mode, or with p = 0, is the
// identity; batch_norm in train mode uses the batch statistics (mean over
// every dim but 1) and stores the running-stat updates; a loss with
// ignore_index or a reduction other than the mean is computed per element;
// rand and randn draw in train mode and are their means (0.5, 0) otherwise.
#include "lower_internal.h"

#include <string.h>

static const struct {
  IrNode *(*emit)(Env *e, const CkExpr *x, IrNode **v);
} emitters[] = {
#define OP(id, name, sig, cls, ir, rule, emit) {lw_emit_##emit},
#include "sema/ops.def"
};
_Static_assert(sizeof emitters / sizeof emitters[0] == BI_COUNT, "emitters out of step with ops.def");

// The tensor arguments are lowered first, in parameter order (v[i], NULL
// for constants, lists and absent defaults), then the row's emitter runs.
IrNode *lw_emit(Env *e, const CkExpr *x) {
  MLC_ASSERT(x->op >= 0 && x->op < BI_COUNT && x->nargs <= 8);
  IrNode *v[8] = {0};
  for (int i = 0; i < x->nargs; i++) {
    const CkExpr *a = x->args[i];
    if (a && a->kind != CK_CONST && a->kind != CK_LIST && a->type) // lists have no type
      v[i] = lw_node(e, a);
  }
  return emitters[x->op].emit(e, x, v);
}

static IrOp ir_op(const CkExpr *x) { return (IrOp)builtin_ir_op(x->op); }
static IrBuilder *at(Env *e, const CkExpr *x) {
  e->b.span = x->span;
  return &e->b;
}

// ---- elementwise and generic ------------------------------------------------------------------
// Operands of the scalar table's op; a constant operand (a weak literal)
// takes the dtype of the other operands (where: of x and y).
IrNode *lw_emit_elementwise(Env *e, const CkExpr *x, IrNode **v) {
  IrOp op = ir_op(x);
  const ScOp *o = sc_op(op);
  int first = op == IR_WHERE ? 1 : 0;
  DType dt = x->type->dtype;
  for (int i = first; i < o->nin; i++)
    if (x->args[i]->kind != CK_CONST) {
      dt = x->args[i]->type->dtype;
      break;
    }
  IrNode *in[SC_MAX_IN];
  for (int i = 0; i < o->nin; i++) in[i] = v[i] ? v[i] : lw_operand(e, x->args[i], i < first ? DT_BOOL : dt);
  return ir_mk(at(e, x), op, in, o->nin, &x->attrs, NULL);
}

// The op over its tensor arguments, in parameter order, with the rule's
// attributes (reductions, softmax, transpose, matmul, pooling, layer_norm,
// losses, stop_gradient).
IrNode *lw_emit_generic(Env *e, const CkExpr *x, IrNode **v) {
  IrNode *in[8];
  int n = 0;
  for (int i = 0; i < x->nargs; i++)
    if (v[i]) in[n++] = v[i];
  if (ir_op(x) == IR_TRANSPOSE) { // the identity permutation is no node
    int np = 0;
    return ir_transpose(at(e, x), in[0], ir_attr_ints(&x->attrs, IRA_PERM, &np));
  }
  return ir_mk(at(e, x), ir_op(x), in, n, &x->attrs, NULL);
}

// reshape, flatten, squeeze, unsqueeze, broadcast_to, cast: sema's type, no
// node when it is the operand's.
IrNode *lw_emit_retype(Env *e, const CkExpr *x, IrNode **v) {
  Type *t = lw_type(e, x->type);
  IrNode *y = v[0] ? v[0] : lw_operand(e, x->args[0], t->dtype);
  return type_eq(y->type, t) ? y : ir_mk(at(e, x), ir_op(x), &y, 1, NULL, t);
}

// arange, causal_mask, zeros/ones/full: a node of sema's type.
// rand, randn: in train mode the graph's rand/randn (a fresh seed: drawn
// per element as dropout's mask is); in eval and predict their mean, 0.5
// and 0, as dropout is its mean there.
IrNode *lw_emit_noise(Env *e, const CkExpr *x, IrNode **v) {
  (void)v;
  Type *t = lw_type(e, x->type);
  if (!e->L->train) return ir_const(at(e, x), ir_op(x) == IR_RAND ? 0.5 : 0, t);
  return ir_mk(at(e, x), ir_op(x), NULL, 0, NULL, t);
}

IrNode *lw_emit_construct(Env *e, const CkExpr *x, IrNode **v) {
  (void)v;
  return ir_mk(at(e, x), ir_op(x), NULL, 0, &x->attrs, lw_type(e, x->type));
}

IrNode *lw_emit_slice(Env *e, const CkExpr *x, IrNode **v) {
  return lw_slice(e, v[0], &x->slices[0], x->span);
}

IrNode *lw_emit_concat(Env *e, const CkExpr *x, IrNode **v) {
  (void)v;
  LwVal l = lw_val(e, x->args[0]);
  int64_t d = 0;
  ir_attr_int(&x->attrs, IRA_DIM, &d);
  return ir_concat(at(e, x), l.items, l.n, (int)d);
}

// matmul with a vector operand: [K] @ [K, N] is [1, K] @ [K, N], [M, K] @
// [K] is [M, K] @ [K, 1], and the result reshaped to sema's type (the
// graph's matmul is rank >= 2).
IrNode *lw_emit_matmul(Env *e, const CkExpr *x, IrNode **v) {
  IrBuilder *b = at(e, x);
  IrNode *in[2] = {v[0], v[1]};
  for (int i = 0; i < 2; i++) {
    const Type *t = in[i]->type;
    if (t->rank != 1) continue;
    Type *m = type_new(b->a, t->dtype, 2);
    m->dims[1 - i] = t->dims[0]; // a: [1, K]; b: [K, 1]
    m->dims[i] = dim_const(b->a, 1);
    in[i] = ir_reshape(b, in[i], m);
  }
  return ir_reshape(b, ir_mk(b, IR_MATMUL, in, 2, NULL, NULL), lw_type(e, x->type));
}

// ---- layers ------------------------------------------------------------------------------------------
// conv2d(x, w) {stride, padding, dilation, groups}, then + bias[C] as [C, 1, 1]
IrNode *lw_emit_conv2d(Env *e, const CkExpr *x, IrNode **v) {
  IrNode *in[2] = {v[0], v[1]};
  IrNode *y = ir_mk(at(e, x), IR_CONV2D, in, 2, &x->attrs, NULL);
  if (!x->args[2]) return y;
  IrNode *b = v[2];
  Type *c11 = type_new(e->L->a, b->type->dtype, 3);
  c11->dims[0] = b->type->dims[0];
  c11->dims[1] = c11->dims[2] = dim_const(e->L->a, 1);
  IrBuilder *ib = at(e, x);
  return ir_add(ib, y, ir_reshape(ib, b, c11));
}

// The elements of dim d of x as a number of dtype dt (counted in the graph
// when the dim is a symbol).
static IrNode *dim_count(IrBuilder *b, Dim *d, DType dt) {
  int64_t k;
  if (dim_is_const(d, &k)) return ir_scalar(b, (double)k, dt);
  Type *t = type_new(b->a, dt, 1);
  t->dims[0] = d;
  return ir_sum_all(b, ir_const(b, 1, t));
}

// The elements of t's dims R[0..nr) together as a number of dtype dt: the
// constant dims' product times each symbolic dim's dim_count (a sum over
// that dim alone: B elements for a batch, not a sum over the whole tensor).
// Every factor is an integer, so the product is the count rounded once
// while it stays below 2^24 (f32).
static IrNode *dims_count(IrBuilder *b, const Type *t, const int64_t *R, int nr, DType dt) {
  int64_t k = 1, v;
  IrNode *cnt = NULL;
  for (int i = 0; i < nr; i++) {
    Dim *d = t->dims[R[i]];
    if (dim_is_const(d, &v)) {
      k *= v;
      continue;
    }
    IrNode *f = dim_count(b, d, dt);
    cnt = cnt ? ir_mul(b, cnt, f) : f;
  }
  if (!cnt) return ir_scalar(b, (double)k, dt);
  return k == 1 ? cnt : ir_mul(b, cnt, ir_scalar(b, (double)k, dt));
}

// torch's running-stat update, as a store of the buffer:
//   running_mean = (1 - momentum) * running_mean + momentum * mean
//   running_var  = (1 - momentum) * running_var  + momentum * var * M / (M - 1)
// (the unbiased variance; M elements per channel, counted in the graph when
// the batch size is symbolic).
static void running_update(IrBuilder *b, IrNode *buf, IrNode *stat, double mom, bool unbias,
                           IrNode *x, const int64_t *R, int nr) {
  if (buf->op != IR_BUFFER) return;
  Arena *a = b->a;
  DType dt = buf->type->dtype;
  if (unbias) {
    Dim *M = dim_const(a, 1);
    for (int i = 0; i < nr; i++) M = dim_mul(a, M, x->type->dims[R[i]]);
    int64_t k;
    if (dim_is_const(M, &k)) {
      stat = ir_mul(b, stat, ir_scalar(b, k > 1 ? (double)k / (double)(k - 1) : 1, dt));
    } else {
      IrNode *cnt = dims_count(b, x->type, R, nr, dt);
      IrNode *cm1 = ir_sub(b, cnt, ir_scalar(b, 1, dt));
      stat = ir_div(b, ir_mul(b, stat, cnt), cm1);
    }
  }
  IrNode *keep = ir_mul(b, buf, ir_scalar(b, 1 - mom, dt));
  IrNode *move = ir_mul(b, ir_un(b, IR_STOP_GRADIENT, stat), ir_scalar(b, mom, dt));
  ir_store(b->f, buf->name, ir_add(b, keep, move), b->span);
}

// batch_norm(x, w, b, running_mean, running_var, momentum, eps). Training:
// the biased batch statistics over every dim but 1, in the form autodiff
// recognises (mean(x) and mean(d * d) with d = reshape(mean(x)) - x), and
// the running-stat updates as stores; evaluation: the running buffers.
IrNode *lw_emit_batch_norm(Env *e, const CkExpr *x, IrNode **v) {
  IrNode *in[5];
  for (int i = 0; i < 5; i++) in[i] = v[i];
  IrBuilder *b = at(e, x);
  if (e->L->train) {
    IrNode *xv = in[0];
    int64_t R[16];
    int nr = 0;
    MLC_ASSERT(xv->type->rank <= 16);
    for (int i = 0; i < xv->type->rank; i++)
      if (i != 1) R[nr++] = i;
    in[3] = ir_reduce(b, IR_MEAN, xv, R, nr, false);
    // The variance's d = mean - x: the mean as a [1, C, 1, ..] view of
    // in[3] (one reduction, not a second keepdim one), and mean - x rather
    // than x - mean, whose square is the same bit for bit (IEEE negation is
    // exact) but a node of its own: hash-consing would merge x - mean with
    // the gradient's (autodiff's rule_batch_norm), and that value would then
    // be stored from the forward to the backward instead of being computed
    // inside the variance's sum (a reduction prologue, kir_fuse.c) and again
    // in the backward's.
    Type *kt = type_new(b->a, xv->type->dtype, xv->type->rank);
    for (int i = 0; i < xv->type->rank; i++) kt->dims[i] = i == 1 ? xv->type->dims[1] : dim_const(b->a, 1);
    IrNode *d = ir_sub(b, ir_reshape(b, in[3], kt), xv);
    in[4] = ir_reduce(b, IR_MEAN, ir_mul(b, d, d), R, nr, false);
    double mom = lw_number(e, x->args[5]);
    running_update(b, v[3], in[3], mom, false, xv, R, nr);
    running_update(b, v[4], in[4], mom, true, xv, R, nr);
  }
  return ir_mk(b, IR_BATCH_NORM, in, 5, &x->attrs, NULL);
}

IrNode *lw_emit_dropout(Env *e, const CkExpr *x, IrNode **v) {
  if (!e->L->train || lw_number(e, x->args[1]) == 0) return v[0];
  return ir_mk(at(e, x), IR_DROPOUT, v, 1, &x->attrs, NULL);
}

// embedding(indices, weight) is the graph's embedding(table, indices)
IrNode *lw_emit_embedding(Env *e, const CkExpr *x, IrNode **v) {
  IrNode *in[2] = {v[1], v[0]};
  return ir_mk(at(e, x), IR_EMBEDDING, in, 2, NULL, NULL);
}

// The reduction a loss call names (reduction = "mean", "sum", "none"): 0, 1, 2.
static int reduction_of(const CkExpr *a) {
  const char *r = a && a->kind == CK_CONST && a->value->kind == V_STR ? a->value->str : "mean";
  return !strcmp(r, "sum") ? 1 : !strcmp(r, "none") ? 2 : 0;
}

// The per-row cross entropy of logits [N, C] with targets t [N], from the
// log-softmax and a one-hot of t (t == arange(C)):
//   nll_i    = -log_softmax(x)_i[t_i]
//   smooth_i = -sum_c log_softmax(x)_{i,c} / C
//   l_i      = (1 - ls) * nll_i + ls * smooth_i, and 0 where t_i == ignore
// as torch.nn.functional.cross_entropy computes it (reduction "none").
static IrNode *ce_rows(IrBuilder *b, IrNode *lg, IrNode *t, double ls, bool ignore, int64_t K,
                       IrNode **valid) {
  Arena *a = b->a;
  DType dt = lg->type->dtype;
  IrAttrs as = {0};
  ir_attr_set_int(a, &as, IRA_DIM, 1);
  IrNode *logp = ir_mk(b, IR_LOG_SOFTMAX, &lg, 1, &as, NULL);
  Type *col = type_new(a, t->type->dtype, 2), *row = type_new(a, t->type->dtype, 2);
  Type *cls = type_new(a, DT_I64, 1);
  col->dims[0] = lg->type->dims[0], col->dims[1] = dim_const(a, 1);
  row->dims[0] = dim_const(a, 1), row->dims[1] = cls->dims[0] = lg->type->dims[1];
  IrNode *classes = ir_reshape(b, ir_cast(b, ir_mk(b, IR_ARANGE, NULL, 0, NULL, cls), t->type->dtype), row);
  IrNode *hot = ir_cast(b, ir_bin(b, IR_EQ, ir_reshape(b, t, col), classes), dt);
  const int64_t d1[] = {1};
  IrNode *l = ir_un(b, IR_NEG, ir_reduce(b, IR_SUM, ir_mul(b, logp, hot), d1, 1, false));
  if (ls != 0) {
    IrNode *smooth = ir_div(b, ir_un(b, IR_NEG, ir_reduce(b, IR_SUM, logp, d1, 1, false)),
                            dim_count(b, lg->type->dims[1], dt));
    l = ir_add(b, ir_mul(b, ir_scalar(b, 1 - ls, dt), l), ir_mul(b, ir_scalar(b, ls, dt), smooth));
  }
  *valid = NULL;
  if (!ignore) return l;
  *valid = ir_cast(b, ir_bin(b, IR_NE, t, ir_scalar(b, (double)K, t->type->dtype)), dt);
  return ir_mul(b, l, *valid);
}

// cross_entropy(x, t, label_smoothing = ls, ignore_index = K, reduction):
//   the mean without ignore_index: the graph's cross_entropy, and with ls > 0
//     (1 - ls) * cross_entropy(x, t) + ls * mean(-log_softmax(x));
//   otherwise the rows of ce_rows, summed, or their sum over the rows whose
//   target is not K (the mean of torch's ignore_index), or as they are.
// The loss's first cross_entropy tells the program which input holds the
// labels, and which value of it is ignored (Lower.label).
IrNode *lw_emit_cross_entropy(Env *e, const CkExpr *x, IrNode **v) {
  IrNode *lg = v[0];
  IrBuilder *b = at(e, x);
  DType dt = lg->type->dtype;
  double ls = lw_number(e, x->args[2]);
  int red = reduction_of(x->args[4]);
  bool ignore = x->args[3] != NULL;
  int64_t K = ignore ? (int64_t)lw_number(e, x->args[3]) : 0;
  if (!e->L->label.target && (ignore || red)) // the graph's cross_entropy is not there to say it
    e->L->label = (LwLabel){v[1], lg, ignore, K};
  if (!ignore && red == 0) {
    IrNode *ce = ir_bin(b, IR_CROSS_ENTROPY, lg, v[1]);
    if (ls == 0) return ce;
    IrAttrs as = {0};
    ir_attr_set_int(b->a, &as, IRA_DIM, lg->type->rank - 1);
    IrNode *lsm = ir_mk(b, IR_LOG_SOFTMAX, &lg, 1, &as, NULL);
    IrNode *sm = ir_reduce(b, IR_MEAN, ir_un(b, IR_NEG, lsm), (const int64_t[]){0, 1}, 2, false);
    return ir_add(b, ir_mul(b, ir_scalar(b, 1 - ls, dt), ce), ir_mul(b, ir_scalar(b, ls, dt), sm));
  }
  IrNode *valid, *l = ce_rows(b, lg, v[1], ls, ignore, K, &valid);
  if (red == 2) return l;
  IrNode *sum = ir_sum_all(b, l);
  if (red == 1) return sum;
  return valid ? ir_div(b, sum, ir_sum_all(b, valid)) : ir_div(b, sum, dim_count(b, lg->type->dims[0], dt));
}

// mse, bce_with_logits: the graph's op for the mean; per element otherwise,
//   mse: (pred - target)^2     bce: softplus(x) - x * z
// (softplus(x) = log(1 + exp(x)), so its gradient is sigmoid(x) - z as the
// graph's bce_with_logits has it), summed or as they are.
IrNode *lw_emit_pair_loss(Env *e, const CkExpr *x, IrNode **v) {
  IrBuilder *b = at(e, x);
  int red = reduction_of(x->args[2]);
  if (red == 0) return ir_bin(b, ir_op(x), v[0], v[1]);
  IrNode *l;
  if (ir_op(x) == IR_MSE) {
    IrNode *d = ir_sub(b, v[0], v[1]);
    l = ir_mul(b, d, d);
  } else {
    IrAttrs as = {0};
    ir_attr_set_float(b->a, &as, IRA_A, 1.0);  // beta
    ir_attr_set_float(b->a, &as, IRA_B, 20.0); // threshold
    l = ir_sub(b, ir_mk(b, IR_SOFTPLUS, &v[0], 1, &as, NULL), ir_mul(b, v[0], v[1]));
  }
  return red == 1 ? ir_sum_all(b, l) : l;
}

IrNode *lw_emit_none(Env *e, const CkExpr *x, IrNode **v) {
  (void)e, (void)x, (void)v;
  MLC_UNREACHABLE(); // data sources belong to train blocks; sema refuses them in bodies
}
