// kir_lower_nn.c — kernel IR lowering of the neural-network ops: conv2d and
// its two gradients, max/avg pooling and their gradients, batch and layer
// normalisation and their input gradients, embedding and its scatter-add
// gradient, and the losses. Each kernel is the interpreter's loop nest
// (interp_nn.c, interp.c) written out in kernel IR, accumulating every
// element in its order (the statistics, gradient sums and loss means as
// kir.h's float sums, kl_sum_*), so results round identically. No target is in
// here: convolutions and pools also get an op record (kir.h), from which a
// schedule's recipes (schedule_nn.c) re-lower them for a CPU.
//
// Buffer shapes are NCHW row-major: x[N, C, H, W], w[O, C/g, KH, KW],
// y[N, O, HO, WO]. Scatters (the gradients that add into an input-shaped
// buffer) zero-fill first and mark only the loops whose iterations write
// disjoint slices parallel (the batch for conv2d_grad_input, batch and
// channel for the pool gradients; none for conv2d_grad_weight and
// embedding_grad).
#include "kir_lower_internal.h"

#include <math.h>

// ---- shared helpers ----------------------------------------------------------------------------
static KExpr *lt(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_LT, a, b); }
static KExpr *ge(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_GE, a, b); }
static KExpr *and2(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_AND, a, b); }
static KExpr *or2(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_OR, a, b); }

// 0 <= v < n
static KExpr *in_range(KLower *c, KExpr *v, KExpr *n) { return and2(c, ge(c, v, kl_i(c, 0)), lt(c, v, n)); }

static KStmt *loop(KLower *c, KirKernel *k, Vec *blk, const char *name, KExpr *n, bool par, KExpr **iv) {
  int v = kl_var(c, k, name, DT_I64, true);
  KStmt *s = kir_for(c->p, blk, v, n, par);
  *iv = kl_v(c, k, v);
  return s;
}

static KExpr *let(KLower *c, KirKernel *k, Vec *blk, const char *name, KExpr *value) {
  int v = kl_var(c, k, name, value->dtype, false);
  kir_let(c->p, blk, v, value);
  return kl_v(c, k, v);
}

static void accumulate(KLower *c, Vec *blk, const IrNode *n, KExpr *off, KExpr *v) {
  kl_st(c, blk, n, off, kl_add(c, kl_ld(c, n, off), v));
}

// The input position of output index i, window offset a: i*s - p + a*d.
static KExpr *window_pos(KLower *c, KExpr *i, KExpr *a, int64_t s, int64_t p, int64_t d) {
  return kl_add(c, kl_mul(c, i, kl_i(c, s)), kl_add(c, kl_i(c, -p), kl_mul(c, a, kl_i(c, d))));
}

// ---- convolution: the textbook nest ----------------------------------------------------------------
// conv2d (x, w):           y[n, o, i, j] = sum over (ci, a, b) of x[..] * w[..]
// conv2d_grad_input (dy, w): dx[..] += dy[n, o, i, j] * w[..]
// conv2d_grad_weight (dy, x): dw[..] += dy[n, o, i, j] * x[..]
// with h = i*sh - ph + a*dh, w = j*sw - pw + b*dw in range, channel
// (o / (O/g))*Cg + ci. The interpreter's loop nest; every output loop of
// conv2d is independent, only the batch loop of conv2d_grad_input.
static KirKernel *conv_textbook(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  IrOp op = n->op;
  const Type *xt = op == IR_CONV2D ? n->in[0]->type : op == IR_CONV2D_GRAD_INPUT ? n->type : n->in[1]->type;
  const Type *wt = op == IR_CONV2D ? n->in[1]->type : op == IR_CONV2D_GRAD_INPUT ? n->in[1]->type : n->type;
  const Type *yt = op == IR_CONV2D ? n->type : n->in[0]->type;
  const IrNode *X = op == IR_CONV2D ? n->in[0] : op == IR_CONV2D_GRAD_INPUT ? n : n->in[1];
  const IrNode *Wn = op == IR_CONV2D_GRAD_WEIGHT ? n : n->in[1], *Y = op == IR_CONV2D ? n : n->in[0];
  const int64_t *s = kl_attr_ints(n, IRA_STRIDE), *p = kl_attr_ints(n, IRA_PADDING);
  const int64_t *d = kl_attr_ints(n, IRA_DILATION);
  int64_t g = kl_attr_i(n, IRA_GROUPS);
  if (op != IR_CONV2D) kl_zero(c, k, n);
  KExpr *C = kl_tdim(c, xt, 1), *H = kl_tdim(c, xt, 2), *W = kl_tdim(c, xt, 3);
  KExpr *O = kl_tdim(c, wt, 0), *Cg = kl_tdim(c, wt, 1), *KH = kl_tdim(c, wt, 2), *KW = kl_tdim(c, wt, 3);
  KExpr *Og = kl_div(c, O, kl_i(c, g)), *nv, *ov, *iv, *jv, *civ, *av, *bv;
  bool fwd = op == IR_CONV2D;
  Vec *blk = &loop(c, k, &k->body, "n", kl_tdim(c, yt, 0), op != IR_CONV2D_GRAD_WEIGHT, &nv)->body;
  blk = &loop(c, k, blk, "o", O, fwd, &ov)->body;
  blk = &loop(c, k, blk, "i", kl_tdim(c, yt, 2), fwd, &iv)->body;
  blk = &loop(c, k, blk, "j", kl_tdim(c, yt, 3), fwd, &jv)->body;
  KExpr *yo = kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, nv, O), ov), kl_tdim(c, yt, 2)), iv),
                               kl_tdim(c, yt, 3)), jv);
  DType dt = n->type->dtype;
  KExpr *acc = op == IR_CONV2D ? let(c, k, blk, "acc", kl_f(c, dt, 0)) : NULL;
  Vec *in = &loop(c, k, blk, "ci", Cg, false, &civ)->body;
  in = &loop(c, k, in, "a", KH, false, &av)->body;
  in = &loop(c, k, in, "b", KW, false, &bv)->body;
  KExpr *h = let(c, k, in, "h", window_pos(c, iv, av, s[0], p[0], d[0]));
  KExpr *w = let(c, k, in, "w", window_pos(c, jv, bv, s[1], p[1], d[1]));
  Vec *body = &kir_if(c->p, in, and2(c, in_range(c, h, H), in_range(c, w, W)))->body;
  KExpr *ch = kl_add(c, kl_mul(c, kl_div(c, ov, Og), Cg), civ);
  KExpr *xo = kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, nv, C), ch), H), h), W), w);
  KExpr *wo = kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, ov, Cg), civ), KH), av), KW), bv);
  if (op == IR_CONV2D) {
    kir_assign(c->p, body, acc->var, kl_add(c, acc, kl_mul(c, kl_ld(c, X, xo), kl_ld(c, Wn, wo))));
    kl_st(c, blk, n, yo, acc);
  } else if (op == IR_CONV2D_GRAD_INPUT) {
    accumulate(c, body, n, xo, kl_mul(c, kl_ld(c, Y, yo), kl_ld(c, Wn, wo)));
  } else {
    accumulate(c, body, n, wo, kl_mul(c, kl_ld(c, Y, yo), kl_ld(c, X, xo)));
  }
  return k;
}

// conv2d and its gradients: the canonical nest, with the op record a
// schedule's recipe (schedule_nn.c) re-lowers the kernel from.
bool kl_conv(KLower *c, IrNode *n) {
  KirKernel *k = conv_textbook(c, n);
  static const IrOp ops[] = {IR_CONV2D, IR_CONV2D_GRAD_INPUT, IR_CONV2D_GRAD_WEIGHT};
  static const KirOpKind kinds[] = {KOP_CONV2D, KOP_CONV2D_GRAD_INPUT, KOP_CONV2D_GRAD_WEIGHT};
  const int64_t *st = kl_attr_ints(n, IRA_STRIDE), *pd = kl_attr_ints(n, IRA_PADDING);
  const int64_t *dl = kl_attr_ints(n, IRA_DILATION);
  int64_t attr[7] = {st[0], st[1], pd[0], pd[1], dl[0], dl[1], kl_attr_i(n, IRA_GROUPS)};
  for (int i = 0; i < 3; i++)
    if (n->op == ops[i]) kl_op(c, k, kinds[i], (IrNode *[]){n->in[0], n->in[1], n}, 3, attr);
  return true;
}

// ---- pooling --------------------------------------------------------------------------------------
// max: first maximum in row-major window order (NaN wins once), padding
// skipped, -inf for an empty window; avg: in-range sum / (kh*kw). The grads
// send dy to the picked element / dy/(kh*kw) to every in-range element,
// one window after another. The op record (kernel, stride, padding) lets a
// recipe unroll unpadded windows.
static void pool_op(KLower *c, KirKernel *k, IrNode *n, bool grad) {
  static const IrOp ops[] = {IR_MAX_POOL2D, IR_AVG_POOL2D, IR_MAX_POOL2D_GRAD, IR_AVG_POOL2D_GRAD};
  static const KirOpKind kinds[] = {KOP_MAX_POOL2D, KOP_AVG_POOL2D, KOP_MAX_POOL2D_GRAD, KOP_AVG_POOL2D_GRAD};
  const int64_t *ks = kl_attr_ints(n, IRA_KERNEL), *s = kl_attr_ints(n, IRA_STRIDE), *p = kl_attr_ints(n, IRA_PADDING);
  int64_t attr[6] = {ks[0], ks[1], s[0], s[1], p[0], p[1]};
  IrNode *roles[3] = {n->in[0], grad ? n->in[1] : n, n};
  for (int i = 0; i < 4; i++)
    if (n->op == ops[i]) kl_op(c, k, kinds[i], roles, grad ? 3 : 2, attr);
}

bool kl_pool(KLower *c, IrNode *n) {
  bool grad = n->op == IR_MAX_POOL2D_GRAD || n->op == IR_AVG_POOL2D_GRAD;
  bool mx = n->op == IR_MAX_POOL2D || n->op == IR_MAX_POOL2D_GRAD;
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  pool_op(c, k, n, grad);
  const IrNode *X = n->in[grad];
  const Type *xt = X->type, *yt = grad ? n->in[0]->type : n->type;
  const int64_t *ks = kl_attr_ints(n, IRA_KERNEL), *s = kl_attr_ints(n, IRA_STRIDE), *p = kl_attr_ints(n, IRA_PADDING);
  DType dt = xt->dtype;
  if (grad) kl_zero(c, k, n);
  KExpr *H = kl_tdim(c, xt, 2), *W = kl_tdim(c, xt, 3), *HO = kl_tdim(c, yt, 2), *WO = kl_tdim(c, yt, 3);
  KExpr *nv, *cv, *iv, *jv, *av, *bv;
  Vec *blk = &loop(c, k, &k->body, "n", kl_tdim(c, xt, 0), true, &nv)->body;
  blk = &loop(c, k, blk, "c", kl_tdim(c, xt, 1), true, &cv)->body;
  KExpr *plane = kl_add(c, kl_mul(c, nv, kl_tdim(c, xt, 1)), cv);
  blk = &loop(c, k, blk, "i", HO, !grad, &iv)->body;
  blk = &loop(c, k, blk, "j", WO, !grad, &jv)->body;
  KExpr *yo = kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, plane, HO), iv), WO), jv);
  KExpr *xbase = kl_mul(c, plane, kl_mul(c, H, W)), *area = kl_f(c, dt, (double)(ks[0] * ks[1]));
  KExpr *arg = mx ? let(c, k, blk, "arg", kl_i(c, -1)) : NULL;
  KExpr *acc = let(c, k, blk, mx ? "best" : "s", kl_f(c, dt, 0));
  KExpr *share = n->op == IR_AVG_POOL2D_GRAD ? let(c, k, blk, "share", kl_div(c, kl_ld(c, n->in[0], yo), area)) : NULL;
  Vec *in = &loop(c, k, blk, "a", kl_i(c, ks[0]), false, &av)->body;
  in = &loop(c, k, in, "b", kl_i(c, ks[1]), false, &bv)->body;
  KExpr *h = let(c, k, in, "h", kl_add(c, kl_mul(c, iv, kl_i(c, s[0])), kl_sub(c, av, kl_i(c, p[0]))));
  KExpr *w = let(c, k, in, "w", kl_add(c, kl_mul(c, jv, kl_i(c, s[1])), kl_sub(c, bv, kl_i(c, p[1]))));
  Vec *body = &kir_if(c->p, in, and2(c, in_range(c, h, H), in_range(c, w, W)))->body;
  KExpr *hw = kl_add(c, kl_mul(c, h, W), w);
  if (mx) {
    KExpr *v = let(c, k, body, "v", kl_ld(c, X, kl_add(c, xbase, hw)));
    KExpr *nan_first = and2(c, kl_isnan(c, v), kir_un(c->p, KU_NOT, kl_isnan(c, acc)));
    KExpr *better = or2(c, lt(c, arg, kl_i(c, 0)), or2(c, kir_bin(c->p, KB_GT, v, acc), nan_first));
    Vec *then = &kir_if(c->p, body, better)->body;
    kir_assign(c->p, then, acc->var, v);
    kir_assign(c->p, then, arg->var, hw);
    KExpr *found = ge(c, arg, kl_i(c, 0));
    if (n->op == IR_MAX_POOL2D) kl_st(c, blk, n, yo, kir_select(c->p, found, acc, kl_f(c, dt, -INFINITY)));
    else accumulate(c, &kir_if(c->p, blk, found)->body, n, kl_add(c, xbase, arg), kl_ld(c, n->in[0], yo));
  } else if (n->op == IR_AVG_POOL2D) {
    kir_assign(c->p, body, acc->var, kl_add(c, acc, kl_ld(c, X, kl_add(c, xbase, hw))));
    kl_st(c, blk, n, yo, kl_div(c, acc, area));
  } else {
    accumulate(c, body, n, kl_add(c, xbase, hw), share);
  }
  return true;
}

// ---- normalisation ----------------------------------------------------------------------------------
// batch_norm (x, gamma, beta, mean, var): per channel (dim 1),
//   y = (x - mean) * rstd * gamma + beta, rstd = 1 / sqrt(var + eps);
// batch_norm_grad (dy, x, gamma, mean, var): two passes per channel,
//   dx = (gamma * rstd) * ((dy - sum(dy)/M) - xhat * (sum(dy*xhat)/M)),
// the sums in kir.h's order: the innermost group is dims 2.. (dim 0 for a
// rank-2 x), the batch loop outside it; each rounded once.
typedef struct NormTerm {
  const IrNode *n, *X, *dy;
  KExpr *base, *stride, *gbase; // x's (and dy's) offset at position 0, per position; gamma's (layer_norm)
  KExpr *mean, *rstd;           // mean: a load (batch_norm) or a local (layer_norm)
  int what;                     // 0: x; 1: (x - mean)^2; 2: the gradient's two sums
} NormTerm;

static void norm_term(KLower *c, KirKernel *k, Vec *blk, KExpr *p, void *ctx, KExpr **t) {
  NormTerm *nt = ctx;
  KExpr *off = kl_add(c, nt->base, kl_mul(c, p, nt->stride)), *xv = kl_ld(c, nt->X, off);
  if (nt->what == 0) {
    t[0] = xv;
  } else if (nt->what == 1) {
    KExpr *dd = let(c, k, blk, "d", kl_sub(c, xv, nt->mean));
    t[0] = kl_mul(c, dd, dd);
  } else {
    KExpr *xh = let(c, k, blk, "xh", kl_mul(c, kl_sub(c, xv, nt->mean), nt->rstd));
    KExpr *g = kl_ld(c, nt->dy, off);
    if (nt->gbase) g = let(c, k, blk, "g", kl_mul(c, g, kl_ld(c, nt->n->in[2], kl_add(c, nt->gbase, p))));
    t[0] = g;
    t[1] = kl_mul(c, g, xh);
  }
}

static bool batch_norm(KLower *c, IrNode *n, bool grad) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const IrNode *X = n->in[grad], *G = n->in[grad + 1];
  const Type *t = X->type;
  DType dt = t->dtype;
  KExpr *iv[KL_MAX_RANK], *ch;
  Vec *blk = &loop(c, k, &k->body, "c", kl_tdim(c, t, 1), true, &ch)->body;
  iv[1] = ch;
  KExpr *one = kl_f(c, dt, 1), *eps = kl_f(c, dt, kl_attr_f(n, IRA_EPS));
  KExpr *rstd = let(c, k, blk, "rstd", kl_div(c, one, kir_un(c->p, KU_SQRT, kl_add(c, kl_ld(c, n->in[4], ch), eps))));
  KExpr *M = kir_cast(c->p, dt, kl_mul(c, kl_tdim(c, t, 0), kl_prod(c, t, 2, t->rank)));
  KExpr *sdy = NULL, *sdyx = NULL;
  if (grad) {
    bool spatial = t->rank > 2;
    KExpr *bv = NULL, *inner = kl_prod(c, t, 2, t->rank);
    KlSum s;
    kl_sum_begin(c, k, blk, &s, 2, spatial ? inner : kl_tdim(c, t, 0));
    Vec *in = spatial ? &loop(c, k, blk, "b", kl_tdim(c, t, 0), false, &bv)->body : blk;
    KExpr *plane = kl_mul(c, kl_add(c, kl_mul(c, spatial ? bv : kl_i(c, 0), kl_tdim(c, t, 1)), ch), inner);
    NormTerm nt = {n, X, n->in[0], plane, spatial ? kl_i(c, 1) : kl_mul(c, kl_tdim(c, t, 1), inner), NULL,
                   kl_ld(c, n->in[3], ch), rstd, 2};
    kl_sum_add(c, k, in, &s, norm_term, &nt);
    sdy = let(c, k, blk, "sdy", kir_cast(c->p, dt, kl_sum_value(c, k, blk, &s, 0)));
    sdyx = let(c, k, blk, "sdyx", kir_cast(c->p, dt, kl_sum_value(c, k, blk, &s, 1)));
  }
  Vec *in = &loop(c, k, blk, "b", kl_tdim(c, t, 0), false, &iv[0])->body;
  in = kl_loops(c, k, in, t, 2, t->rank, iv, false);
  KExpr *off = kl_flat(c, t, iv);
  KExpr *xh = let(c, k, in, "xh", kl_mul(c, kl_sub(c, kl_ld(c, X, off), kl_ld(c, n->in[3], ch)), rstd));
  if (!grad) {
    kl_st(c, in, n, off, kl_add(c, kl_mul(c, xh, kl_ld(c, G, ch)), kl_ld(c, n->in[2], ch)));
  } else {
    KExpr *tt = kl_sub(c, kl_sub(c, kl_ld(c, n->in[0], off), kl_div(c, sdy, M)), kl_mul(c, xh, kl_div(c, sdyx, M)));
    kl_st(c, in, n, off, kl_mul(c, kl_mul(c, kl_ld(c, G, ch), rstd), tt));
  }
  return true;
}

// layer_norm (x, gamma, beta) {eps, ndims}: per row over the trailing ndims
// dims (M elements), mean, biased variance, then y = xhat * gamma + beta;
// layer_norm_grad (dy, x, gamma): g = dy * gamma,
//   dx = rstd * ((g - sum(g)/M) - xhat * (sum(g*xhat)/M)).
// Every sum runs over the row's flat position in kir.h's order; mean and
// variance divide the folded sum by M before rounding once.
static bool layer_norm(KLower *c, IrNode *n, bool grad) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const IrNode *X = n->in[grad], *G = n->in[grad + 1];
  const Type *t = X->type, *gt = G->type;
  DType dt = t->dtype;
  int lead = t->rank - gt->rank;
  KExpr *iv[KL_MAX_RANK];
  Vec *blk = kl_loops(c, k, &k->body, t, 0, lead, iv, true);
  KExpr *Mi = kl_prod(c, gt, 0, gt->rank), *M = kir_cast(c->p, dt, Mi), *M64 = kir_cast(c->p, DT_F64, Mi);
  for (int i = lead; i < t->rank; i++) iv[i] = kl_i(c, 0);
  NormTerm nt = {n, X, grad ? n->in[0] : NULL, kl_flat(c, t, iv), kl_i(c, 1), NULL, NULL, NULL, 0};
  KlSum s;
  kl_sum_begin(c, k, blk, &s, 1, Mi);
  kl_sum_add(c, k, blk, &s, norm_term, &nt);
  KExpr *mean = nt.mean = let(c, k, blk, "mean", kir_cast(c->p, dt, kl_div(c, kl_sum_value(c, k, blk, &s, 0), M64)));
  nt.what = 1;
  kl_sum_begin(c, k, blk, &s, 1, Mi);
  kl_sum_add(c, k, blk, &s, norm_term, &nt);
  KExpr *var = let(c, k, blk, "var", kir_cast(c->p, dt, kl_div(c, kl_sum_value(c, k, blk, &s, 0), M64)));
  KExpr *eps = kl_f(c, dt, kl_attr_f(n, IRA_EPS));
  KExpr *rstd = nt.rstd = let(c, k, blk, "rstd", kl_div(c, kl_f(c, dt, 1), kir_un(c->p, KU_SQRT, kl_add(c, var, eps))));
  KExpr *sg = NULL, *sgx = NULL;
  if (grad) {
    nt.what = 2;
    nt.gbase = kl_i(c, 0);
    kl_sum_begin(c, k, blk, &s, 2, Mi);
    kl_sum_add(c, k, blk, &s, norm_term, &nt);
    sg = let(c, k, blk, "sg", kir_cast(c->p, dt, kl_sum_value(c, k, blk, &s, 0)));
    sgx = let(c, k, blk, "sgx", kir_cast(c->p, dt, kl_sum_value(c, k, blk, &s, 1)));
  }
  Vec *in = kl_loops(c, k, blk, t, lead, t->rank, iv, false);
  KExpr *off = kl_flat(c, t, iv), *goff = kl_flat(c, gt, iv + lead), *xv = kl_ld(c, X, off);
  KExpr *xh = let(c, k, in, "xh", kl_mul(c, kl_sub(c, xv, mean), rstd));
  if (!grad) {
    kl_st(c, in, n, off, kl_add(c, kl_mul(c, xh, kl_ld(c, G, goff)), kl_ld(c, n->in[2], goff)));
    return true;
  }
  KExpr *g = let(c, k, in, "g", kl_mul(c, kl_ld(c, n->in[0], off), kl_ld(c, G, goff)));
  KExpr *tt = kl_sub(c, kl_sub(c, g, kl_div(c, sg, M)), kl_mul(c, xh, kl_div(c, sgx, M)));
  kl_st(c, in, n, off, kl_mul(c, rstd, tt));
  return true;
}

bool kl_norm(KLower *c, IrNode *n) {
  if (n->op == IR_BATCH_NORM || n->op == IR_BATCH_NORM_GRAD) return batch_norm(c, n, n->op == IR_BATCH_NORM_GRAD);
  return layer_norm(c, n, n->op == IR_LAYER_NORM_GRAD);
}

// ---- indexing --------------------------------------------------------------------------------------------
// embedding (table[V, D], idx[..]) -> y[.., D]: y[e, :] = table[idx[e], :];
// embedding_grad (dy[.., D], idx[..]) -> dt[V, D]: dt[idx[e], :] += dy[e, :]
// (in e order, so not parallel). An index outside [0, V) stops the program.
bool kl_index(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  bool grad = n->op == IR_EMBEDDING_GRAD;
  const IrNode *I = n->in[1];
  const Type *tab = grad ? n->type : n->in[0]->type, *it = I->type;
  if (grad) kl_zero(c, k, n);
  KExpr *iv[KL_MAX_RANK], *kv, *V = kl_tdim(c, tab, 0), *D = kl_tdim(c, tab, 1);
  Vec *blk = kl_loops(c, k, &k->body, it, 0, it->rank, iv, !grad);
  KExpr *e = kl_flat(c, it, iv);
  KExpr *row = let(c, k, blk, "row", kir_cast(c->p, DT_I64, kl_ld(c, I, e)));
  kir_check(c->p, blk, in_range(c, row, V), "embedding index out of range");
  Vec *in = &loop(c, k, blk, "k", D, false, &kv)->body;
  KExpr *to = kl_add(c, kl_mul(c, row, D), kv), *from = kl_add(c, kl_mul(c, e, D), kv);
  if (grad) accumulate(c, in, n, to, kl_ld(c, n->in[0], from));
  else kl_st(c, in, n, from, kl_ld(c, n->in[0], to));
  return true;
}

// ---- losses ------------------------------------------------------------------------------------------------
typedef struct LossTerm {
  const IrNode *n;
  KExpr *base, *mx; // row_lse: the row's offset and max
  int rows;         // cross_entropy: the per-row loss buffer (-1 otherwise)
} LossTerm;

static void loss_term(KLower *c, KirKernel *k, Vec *blk, KExpr *p, void *ctx, KExpr **t) {
  LossTerm *l = ctx;
  if (l->rows >= 0) { // cross_entropy: the mean's terms
    t[0] = kir_load(c->p, l->rows, p);
  } else if (l->mx) { // row_lse: exp(x - max)
    const IrNode *X = l->n->in[l->n->op == IR_CROSS_ENTROPY_GRAD];
    t[0] = kir_un(c->p, KU_EXP, kl_sub(c, kl_ld(c, X, kl_add(c, l->base, p)), l->mx));
  } else { // mse, bce_with_logits
    DType dt = l->n->in[0]->type->dtype;
    KExpr *a = kl_ld(c, l->n->in[0], p), *b = kl_ld(c, l->n->in[1], p);
    if (l->n->op == IR_MSE) {
      KExpr *d = let(c, k, blk, "d", kl_sub(c, a, b));
      t[0] = kl_mul(c, d, d);
      return;
    }
    KExpr *pos = kir_select(c->p, kir_bin(c->p, KB_GT, a, kl_f(c, dt, 0)), a, kl_f(c, dt, 0));
    KExpr *soft = kir_un(c->p, KU_LOG1P, kir_un(c->p, KU_EXP, kir_un(c->p, KU_NEG, kir_un(c->p, KU_ABS, a))));
    t[0] = kl_add(c, kl_sub(c, pos, kl_mul(c, a, b)), soft);
  }
}

// Per row of logits x[N, C]: max, sum of exp(x - max) (kir.h's order, rounded
// once), lse = max + log(sum).
static KExpr *row_lse(KLower *c, KirKernel *k, Vec *blk, const IrNode *n, KExpr *base, KExpr *C) {
  const IrNode *X = n->in[n->op == IR_CROSS_ENTROPY_GRAD];
  DType dt = X->type->dtype;
  KExpr *kv, *mx = let(c, k, blk, "mx", kl_f(c, dt, -INFINITY));
  Vec *in = &loop(c, k, blk, "k", C, false, &kv)->body;
  KExpr *xv = kl_ld(c, X, kl_add(c, base, kv));
  kir_assign(c->p, in, mx->var, kir_select(c->p, or2(c, kir_bin(c->p, KB_GT, xv, mx), kl_isnan(c, xv)), xv, mx));
  LossTerm lt = {n, base, mx, -1};
  KlSum s;
  kl_sum_begin(c, k, blk, &s, 1, C);
  kl_sum_add(c, k, blk, &s, loss_term, &lt);
  KExpr *sum = let(c, k, blk, "s", kir_cast(c->p, dt, kl_sum_value(c, k, blk, &s, 0)));
  return let(c, k, blk, "lse", kl_add(c, mx, kir_un(c->p, KU_LOG, sum)));
}

// cross_entropy: mean over rows of lse - x[t]; cross_entropy_grad (dy, x, t):
// dy * (exp(x - lse) - onehot(t)) / N. The forward writes each row's loss
// into its own temporary t<id>_rows[N] (rows are independent), then sums it
// in kir.h's order and divides by N before rounding once.
static bool cross_entropy(KLower *c, IrNode *n, bool grad) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const IrNode *X = n->in[grad], *T = n->in[grad + 1];
  DType dt = X->type->dtype;
  KExpr *N = kl_tdim(c, X->type, 0), *C = kl_tdim(c, X->type, 1), *iv, *kv;
  int rows = -1;
  if (!grad) {
    rows = kir_buf_add(c->p, KBUF_TEMP, arena_printf(c->p->arena, "t%d_rows", n->id), dt, 1, &N);
    kir_kernel_use(c->p, k, rows);
  }
  Vec *blk = &loop(c, k, &k->body, "r", N, true, &iv)->body;
  KExpr *tv = let(c, k, blk, "t", kir_cast(c->p, DT_I64, kl_ld(c, T, iv)));
  kir_check(c->p, blk, in_range(c, tv, C), "cross_entropy target out of range");
  KExpr *base = kl_mul(c, iv, C), *lse = row_lse(c, k, blk, n, base, C);
  if (!grad) {
    kir_store(c->p, blk, rows, iv, kl_sub(c, lse, kl_ld(c, X, kl_add(c, base, tv))));
    LossTerm lt = {n, NULL, NULL, rows};
    KlSum s;
    kl_sum_begin(c, k, &k->body, &s, 1, N);
    kl_sum_add(c, k, &k->body, &s, loss_term, &lt);
    KExpr *v = kl_sum_value(c, k, &k->body, &s, 0);
    kl_st(c, &k->body, n, kl_i(c, 0), kl_div(c, v, kir_cast(c->p, DT_F64, N)));
    return true;
  }
  Vec *in = &loop(c, k, blk, "k", C, false, &kv)->body;
  KExpr *pr = kir_un(c->p, KU_EXP, kl_sub(c, kl_ld(c, X, kl_add(c, base, kv)), lse));
  KExpr *g = kl_sub(c, pr, kir_select(c->p, kir_bin(c->p, KB_EQ, kv, tv), kl_f(c, dt, 1), kl_f(c, dt, 0)));
  KExpr *dy = kl_ld(c, n->in[0], kl_i(c, 0));
  kl_st(c, in, n, kl_add(c, base, kv), kl_div(c, kl_mul(c, dy, g), kir_cast(c->p, dt, N)));
  return true;
}

// mse: mean((a - b)^2); bce_with_logits: mean((max(a, 0) - a*b) + log1p(exp(-|a|))),
// summed over the flat index in kir.h's order, divided by the count, rounded once.
static bool pair_loss(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const Type *t = n->in[0]->type;
  KExpr *count = kl_prod(c, t, 0, t->rank);
  LossTerm lt = {n, NULL, NULL, -1};
  KlSum s;
  kl_sum_begin(c, k, &k->body, &s, 1, count);
  kl_sum_add(c, k, &k->body, &s, loss_term, &lt);
  KExpr *v = kl_sum_value(c, k, &k->body, &s, 0);
  kl_st(c, &k->body, n, kl_i(c, 0), kl_div(c, v, kir_cast(c->p, DT_F64, count)));
  return true;
}

bool kl_loss(KLower *c, IrNode *n) {
  if (n->op == IR_MSE || n->op == IR_BCE_WITH_LOGITS) return pair_loss(c, n);
  return cross_entropy(c, n, n->op == IR_CROSS_ENTROPY_GRAD);
}
