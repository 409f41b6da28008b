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
#include "kernels/gemm_ref.h"

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

// ---- convolution: the library's order ---------------------------------------------------------------
// Each nest computes what kernels/cpu's convolution computes, element by
// element in its order (kernels/gemm_ref.h), written as loops:
//   conv2d (x, w)             y[n, o, i, j] = the K sum over kk = (ci, a, b)
//                             of w[o, kk] * col (x at the tap, 0 at padding)
//   conv2d_grad_input (dy, w) per image and group: dx zeroed, then for each
//                             col row r = (ci, a, b), pixel q: dx[tap] +=
//                             the K sum over o of
//                             w[o, r] * dy[n, o, q] (pointwise: dx = that sum)
//   conv2d_grad_weight (dy, x) dw[o, r] = the K sums over each image's pixel
//                             chunks of col * dy, added in order
// with h = i*sh - ph + a*dh, w = j*sw - pw + b*dw, channel (o / (O/g))*Cg + ci.
typedef struct Conv {
  const IrNode *X, *Wn, *Y, *n;  // x-, w- and y-shaped operands (one is the result)
  KExpr *N, *C, *H, *W, *O, *Cg, *KH, *KW, *HO, *WO, *Og, *KHW, *Kc, *P;
  const int64_t *s, *p, *d;
  int64_t g;
  // per element being summed
  KExpr *nv, *ov, *iv, *jv, *gv, *qv, *rv;
  const KlEpilogue *epi; // conv2d: the ops folded in after the sum
} Conv;

static Conv conv_geom(KLower *c, const IrNode *n) {
  IrOp op = n->op;
  Conv q = {.n = n};
  q.X = op == IR_CONV2D ? n->in[0] : op == IR_CONV2D_GRAD_INPUT ? n : n->in[1];
  q.Wn = op == IR_CONV2D_GRAD_WEIGHT ? n : n->in[1];
  q.Y = op == IR_CONV2D ? n : n->in[0];
  const Type *xt = q.X->type, *wt = q.Wn->type, *yt = q.Y->type;
  q.s = kl_attr_ints(n, IRA_STRIDE), q.p = kl_attr_ints(n, IRA_PADDING), q.d = kl_attr_ints(n, IRA_DILATION);
  q.g = kl_attr_i(n, IRA_GROUPS);
  q.N = kl_tdim(c, yt, 0), q.C = kl_tdim(c, xt, 1), q.H = kl_tdim(c, xt, 2), q.W = kl_tdim(c, xt, 3);
  q.O = kl_tdim(c, wt, 0), q.Cg = kl_tdim(c, wt, 1), q.KH = kl_tdim(c, wt, 2), q.KW = kl_tdim(c, wt, 3);
  q.HO = kl_tdim(c, yt, 2), q.WO = kl_tdim(c, yt, 3);
  q.Og = kl_div(c, q.O, kl_i(c, q.g));
  q.KHW = kl_mul(c, q.KH, q.KW);
  q.Kc = kl_mul(c, q.Cg, q.KHW);
  q.P = kl_mul(c, q.HO, q.WO);
  return q;
}

// Offsets: x[n, ch, h, w], w[o, r] (r = (ci*KH + a)*KW + b), y[n, o, q].
static KExpr *x_at(KLower *c, const Conv *q, KExpr *n, KExpr *ch, KExpr *h, KExpr *w) {
  return kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, n, q->C), ch), q->H), h), q->W), w);
}
static KExpr *w_at(KLower *c, const Conv *q, KExpr *o, KExpr *r) { return kl_add(c, kl_mul(c, o, q->Kc), r); }
static KExpr *y_at(KLower *c, const Conv *q, KExpr *n, KExpr *o, KExpr *pix) {
  return kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, n, q->O), o), q->P), pix);
}

// Tap r = (ci, a, b) of output pixel (i, j): the input row h and column w,
// and whether they are inside x.
static KExpr *tap(KLower *c, KirKernel *k, Vec *blk, const Conv *q, KExpr *r, KExpr *i, KExpr *j, KExpr **ci,
                  KExpr **h, KExpr **w) {
  *ci = let(c, k, blk, "ci", kl_div(c, r, q->KHW));
  KExpr *a = kir_bin(c->p, KB_MOD, kl_div(c, r, q->KW), q->KH), *b = kir_bin(c->p, KB_MOD, r, q->KW);
  *h = let(c, k, blk, "h", window_pos(c, i, a, q->s[0], q->p[0], q->d[0]));
  *w = let(c, k, blk, "w", window_pos(c, j, b, q->s[1], q->p[1], q->d[1]));
  return and2(c, in_range(c, *h, q->H), in_range(c, *w, q->W));
}

// s = fma(u, x[tap], s) inside x, s = fma(u, 0, s) at padding (the library's
// im2col holds a 0 there; forward: u = w, grad_weight: x first, then dy).
// xv is rounded to the conv's precision (u already is; a 0 stays 0).
static void fma_tap(KLower *c, const Conv *q, Vec *blk, KExpr *in, KExpr *u, KExpr *xo, const IrNode *X, KExpr *s,
                    bool x_first) {
  KStmt *st = kir_if(c->p, blk, in);
  KExpr *xv = kl_round(c, q->n, kl_ld(c, X, xo)), *z = kl_f(c, s->dtype, 0);
  kir_assign(c->p, &st->body, s->var, x_first ? kir_fma(c->p, xv, u, s) : kir_fma(c->p, u, xv, s));
  kir_assign(c->p, &st->els, s->var, x_first ? kir_fma(c->p, z, u, s) : kir_fma(c->p, u, z, s));
}

// conv2d: product kk of output (n, o, i, j).
static void fwd_step(KlKSum *sm, Vec *blk, KExpr *kk, KExpr *s) {
  KLower *c = sm->c;
  Conv *q = sm->ctx;
  KExpr *ci, *h, *w, *in = tap(c, sm->k, blk, q, kk, q->iv, q->jv, &ci, &h, &w);
  KExpr *ch = kl_add(c, kl_mul(c, kl_div(c, q->ov, q->Og), q->Cg), ci);
  KExpr *wv = let(c, sm->k, blk, "wv", kl_round(c, q->n, kl_ld(c, q->Wn, w_at(c, q, q->ov, kk))));
  fma_tap(c, q, blk, in, wv, x_at(c, q, q->nv, ch, h, w), q->X, s, false);
}

static void conv_forward(KLower *c, KirKernel *k, Conv *q) {
  Vec *blk = &loop(c, k, &k->body, "n", q->N, true, &q->nv)->body;
  blk = &loop(c, k, blk, "o", q->O, true, &q->ov)->body;
  blk = &loop(c, k, blk, "i", q->HO, true, &q->iv)->body;
  blk = &loop(c, k, blk, "j", q->WO, true, &q->jv)->body;
  KlKSum sm = {.c = c, .k = k, .dt = q->n->type->dtype, .step = fwd_step, .ctx = q};
  KExpr *sum = kl_ksum(&sm, blk, q->Kc), *iv[4] = {q->nv, q->ov, q->iv, q->jv};
  sum = kl_apply_epilogue(c, k, q->epi, q->n, blk, iv, sum);
  kl_st(c, blk, q->n, y_at(c, q, q->nv, q->ov, kl_add(c, kl_mul(c, q->iv, q->WO), q->jv)), sum);
}

// conv2d_grad_input: product o' of dcol[r, q] for group g, image n.
static void gin_step(KlKSum *sm, Vec *blk, KExpr *o, KExpr *s) {
  KLower *c = sm->c;
  Conv *q = sm->ctx;
  KExpr *og = kl_add(c, kl_mul(c, q->gv, q->Og), o);
  kir_assign(c->p, blk, s->var, kir_fma(c->p, kl_round(c, q->n, kl_ld(c, q->Wn, w_at(c, q, og, q->rv))),
                                        kl_round(c, q->n, kl_ld(c, q->Y, y_at(c, q, q->nv, og, q->qv))), s));
}

static bool pointwise(const Conv *q) {
  int64_t kh, kw;
  return kir_eval_i64(q->KH, NULL, &kh) && kir_eval_i64(q->KW, NULL, &kw) && kh == 1 && kw == 1 && q->s[0] == 1 &&
         q->s[1] == 1 && q->p[0] == 0 && q->p[1] == 0;
}

// The library's pixel chunk: QC pixels, NQ chunks (mlc_conv_qchunk).
static void conv_chunks(KLower *c, const Conv *q, KExpr **QC, KExpr **NQ) {
  KExpr *one = kl_i(c, 1);
  KExpr *q0 = kir_bin(c->p, KB_MAX, kl_i(c, 64), kl_div(c, kl_i(c, MLC_CONV_QCHUNK_FLOATS), kir_bin(c->p, KB_MAX, q->Kc, one)));
  KExpr *nq = kl_div(c, kl_sub(c, kl_add(c, q->P, q0), one), q0);
  *QC = kir_bin(c->p, KB_MAX, kl_div(c, kl_sub(c, kl_add(c, q->P, nq), one), kir_bin(c->p, KB_MAX, nq, one)), one);
  *NQ = kl_div(c, kl_sub(c, kl_add(c, q->P, *QC), one), *QC);
}

// A loop over the chunks (none when there is one); *base = the chunk's
// first pixel, *len = its pixels.
static Vec *chunk_loop(KLower *c, KirKernel *k, Vec *blk, const Conv *q, KExpr **base, KExpr **len) {
  KExpr *QC, *NQ, *qc;
  conv_chunks(c, q, &QC, &NQ);
  int64_t nq;
  if (kir_eval_i64(NQ, NULL, &nq) && nq == 1) {
    *base = kl_i(c, 0), *len = q->P;
    return blk;
  }
  blk = &loop(c, k, blk, "qc", NQ, false, &qc)->body;
  *base = kl_mul(c, qc, QC);
  *len = let(c, k, blk, "nq", kir_bin(c->p, KB_MIN, QC, kl_sub(c, q->P, *base)));
  return blk;
}

static void conv_grad_input(KLower *c, KirKernel *k, Conv *q) {
  KlKSum sm = {.c = c, .k = k, .dt = q->n->type->dtype, .step = gin_step, .ctx = q};
  KExpr *ch, *t;
  if (pointwise(q)) { // dx[n, ch, q] = the sum itself
    Vec *blk = &loop(c, k, &k->body, "n", q->N, true, &q->nv)->body;
    blk = &loop(c, k, blk, "ch", q->C, true, &ch)->body;
    blk = &loop(c, k, blk, "q", q->P, true, &q->qv)->body;
    q->gv = let(c, k, blk, "g", kl_div(c, ch, q->Cg));
    q->rv = let(c, k, blk, "r", kir_bin(c->p, KB_MOD, ch, q->Cg));
    kl_st(c, blk, q->n, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, q->nv, q->C), ch), q->P), q->qv), kl_ksum(&sm, blk, q->Og));
    return;
  }
  Vec *blk = &loop(c, k, &k->body, "n", q->N, true, &q->nv)->body;
  blk = &loop(c, k, blk, "g", kl_i(c, q->g), true, &q->gv)->body;
  KExpr *plane = kl_mul(c, q->H, q->W), *z;
  KExpr *base = kl_mul(c, kl_add(c, kl_mul(c, q->nv, q->C), kl_mul(c, q->gv, q->Cg)), plane);
  Vec *zb = &loop(c, k, blk, "z", kl_mul(c, q->Cg, plane), false, &z)->body;
  kl_st(c, zb, q->n, kl_add(c, base, z), kl_f(c, q->n->type->dtype, 0));
  blk = &loop(c, k, blk, "r", q->Kc, false, &q->rv)->body;
  blk = &loop(c, k, blk, "t", q->P, false, &t)->body;
  q->qv = t;
  KExpr *i = kl_div(c, q->qv, q->WO), *j = kir_bin(c->p, KB_MOD, q->qv, q->WO), *ci, *h, *w;
  KExpr *in = tap(c, k, blk, q, q->rv, i, j, &ci, &h, &w);
  Vec *body = &kir_if(c->p, blk, in)->body;
  KExpr *sum = kl_ksum(&sm, body, q->Og);
  accumulate(c, body, q->n, x_at(c, q, q->nv, kl_add(c, kl_mul(c, q->gv, q->Cg), ci), h, w), sum);
}

// conv2d_grad_weight: product t of the chunk at q0 for dw[o, r], image n.
typedef struct GwCtx {
  Conv *q;
  KExpr *q0;
} GwCtx;

static void gw_step(KlKSum *sm, Vec *blk, KExpr *t, KExpr *s) {
  KLower *c = sm->c;
  GwCtx *x = sm->ctx;
  Conv *q = x->q;
  KExpr *pix = let(c, sm->k, blk, "q", kl_add(c, x->q0, t));
  KExpr *i = kl_div(c, pix, q->WO), *j = kir_bin(c->p, KB_MOD, pix, q->WO), *ci, *h, *w;
  KExpr *in = tap(c, sm->k, blk, q, q->rv, i, j, &ci, &h, &w);
  KExpr *dy = let(c, sm->k, blk, "dv", kl_round(c, q->n, kl_ld(c, q->Y, y_at(c, q, q->nv, q->ov, pix))));
  fma_tap(c, q, blk, in, dy, x_at(c, q, q->nv, kl_add(c, kl_mul(c, q->gv, q->Cg), ci), h, w), q->X, s, true);
}

static void conv_grad_weight(KLower *c, KirKernel *k, Conv *q) {
  Vec *blk = &loop(c, k, &k->body, "o", q->O, true, &q->ov)->body;
  blk = &loop(c, k, blk, "r", q->Kc, true, &q->rv)->body;
  q->gv = let(c, k, blk, "g", kl_div(c, q->ov, q->Og));
  DType dt = q->n->type->dtype;
  // No pixel at all: the library writes 0; else the first chain is C itself
  // (-0 + s = s exactly).
  KExpr *none = kir_bin(c->p, KB_EQ, kl_mul(c, q->N, q->P), kl_i(c, 0));
  KExpr *acc = let(c, k, blk, "acc", kir_select(c->p, none, kl_f(c, dt, 0), kl_f(c, dt, -0.0)));
  Vec *in = &loop(c, k, blk, "n", q->N, false, &q->nv)->body;
  GwCtx x = {.q = q};
  KExpr *len;
  in = chunk_loop(c, k, in, q, &x.q0, &len);
  KlKSum sm = {.c = c, .k = k, .dt = dt, .step = gw_step, .ctx = &x};
  kl_ksum_add(&sm, in, len, acc);
  kl_st(c, blk, q->n, w_at(c, q, q->ov, q->rv), acc);
}

// conv2d and its gradients: the nest, with the op record a schedule's
// recipe (schedule_nn.c) replaces it by a library call from.
bool kl_conv(KLower *c, IrNode *n) {
  KlEpilogue epi = kl_epilogue_of(c, n);
  KirKernel *k = kl_kernel(c, n, epi.kind == KOP_CONV2D_BIAS ? "conv2d_bias" : ir_op_name(n->op));
  Conv q = conv_geom(c, n);
  q.epi = &epi;
  if (n->op == IR_CONV2D) conv_forward(c, k, &q);
  else if (n->op == IR_CONV2D_GRAD_INPUT) conv_grad_input(c, k, &q);
  else conv_grad_weight(c, k, &q);
  static const IrOp ops[] = {IR_CONV2D, IR_CONV2D_GRAD_INPUT, IR_CONV2D_GRAD_WEIGHT};
  static const KirOpKind kinds[] = {KOP_CONV2D, KOP_CONV2D_GRAD_INPUT, KOP_CONV2D_GRAD_WEIGHT};
  const int64_t *st = kl_attr_ints(n, IRA_STRIDE), *pd = kl_attr_ints(n, IRA_PADDING);
  const int64_t *dl = kl_attr_ints(n, IRA_DILATION);
  int64_t attr[8] = {st[0], st[1], pd[0], pd[1], dl[0], dl[1], kl_attr_i(n, IRA_GROUPS), epi.relu};
  if (epi.kind == KOP_CONV2D_BIAS) kl_op(c, k, KOP_CONV2D_BIAS, (IrNode *[]){n->in[0], n->in[1], n, epi.operand}, 4, attr);
  for (int i = 0; i < 3 && epi.kind != KOP_CONV2D_BIAS; i++)
    if (n->op == ops[i]) kl_op(c, k, kinds[i], (IrNode *[]){n->in[0], n->in[1], n}, 3, attr);
  k->op->precision = kl_precision(n);
  return true;
}

// ---- pooling --------------------------------------------------------------------------------------
// max: first maximum in row-major window order (NaN wins once), padding
// skipped, -inf for an empty window; avg: in-range sum / (kh*kw). The grads
// send dy to the picked element / dy/(kh*kw) to every in-range element,
// one window after another. The op record (kernel, stride, padding) lets a
// recipe unroll unpadded windows.
static void pool_op(KLower *c, KirKernel *k, IrNode *n, bool grad, const KlEpilogue *epi) {
  static const IrOp ops[] = {IR_MAX_POOL2D, IR_AVG_POOL2D, IR_MAX_POOL2D_GRAD, IR_AVG_POOL2D_GRAD};
  static const KirOpKind kinds[] = {KOP_MAX_POOL2D, KOP_AVG_POOL2D, KOP_MAX_POOL2D_GRAD, KOP_AVG_POOL2D_GRAD};
  const int64_t *ks = kl_attr_ints(n, IRA_KERNEL), *s = kl_attr_ints(n, IRA_STRIDE), *p = kl_attr_ints(n, IRA_PADDING);
  int64_t attr[6] = {ks[0], ks[1], s[0], s[1], p[0], p[1]};
  IrNode *roles[4] = {n->in[0], grad ? n->in[1] : n, n, epi->operand};
  if (epi->kind == KOP_MAX_POOL2D_GRAD_RELU_MASK) {
    kl_op(c, k, epi->kind, roles, 4, attr);
    return;
  }
  for (int i = 0; i < 4; i++)
    if (n->op == ops[i]) kl_op(c, k, kinds[i], roles, grad ? 3 : 2, attr);
}

// max_pool2d_grad's relu mask (kl_epilogue_of): once every window has been
// scattered, dx = relu_grad(dx, aux) element by element, by the op's own
// formula.
static void pool_grad_mask(KLower *c, KirKernel *k, IrNode *n, const KlEpilogue *epi) {
  const Type *t = n->type;
  KExpr *iv[4], *off = kl_i(c, 0);
  Vec *blk = &k->body;
  for (int d = 0; d < 4; d++) {
    blk = &loop(c, k, blk, "m", kl_tdim(c, t, d), true, &iv[d])->body;
    off = kl_add(c, kl_mul(c, off, kl_tdim(c, t, d)), iv[d]);
  }
  kl_st(c, blk, n, off, kl_apply_epilogue(c, k, epi, n, blk, iv, kl_ld(c, n, off)));
}

bool kl_pool(KLower *c, IrNode *n) {
  bool grad = n->op == IR_MAX_POOL2D_GRAD || n->op == IR_AVG_POOL2D_GRAD;
  bool mx = n->op == IR_MAX_POOL2D || n->op == IR_MAX_POOL2D_GRAD;
  KlEpilogue epi = {.kind = KOP_COUNT};
  if (n->op == IR_MAX_POOL2D_GRAD) epi = kl_epilogue_of(c, n);
  bool masked = epi.kind == KOP_MAX_POOL2D_GRAD_RELU_MASK;
  KirKernel *k = kl_kernel(c, n, masked ? kir_op_name(epi.kind) : ir_op_name(n->op));
  if (masked) kir_kernel_use(c->p, k, kl_buf(c, epi.operand));
  pool_op(c, k, n, grad, &epi);
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
  if (masked) pool_grad_mask(c, k, n, &epi);
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
    Vec *sb = kl_sum_begin(c, k, blk, &s, 2, spatial ? inner : kl_tdim(c, t, 0));
    Vec *in = spatial ? &loop(c, k, sb, "b", kl_tdim(c, t, 0), false, &bv)->body : sb;
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
  if (!grad) { // then its epilogue (kir_lower.c: a relu, a residual add), into the last op's buffer
    KExpr *y = kl_add(c, kl_mul(c, xh, kl_ld(c, G, ch)), kl_ld(c, n->in[2], ch));
    KlEpilogue epi = kl_epilogue_of(c, n);
    if (epi.operand) kir_kernel_use(c->p, k, kl_buf(c, epi.operand)); // the residual
    if (epi.nops) y = kl_apply_epilogue(c, k, &epi, n, in, iv, let(c, k, in, "y", y));
    kl_st(c, in, n, off, y);
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
  kl_sum_add(c, k, kl_sum_begin(c, k, blk, &s, 1, Mi), &s, norm_term, &nt);
  KExpr *mean = nt.mean = let(c, k, blk, "mean", kir_cast(c->p, dt, kl_div(c, kl_sum_value(c, k, blk, &s, 0), M64)));
  nt.what = 1;
  kl_sum_add(c, k, kl_sum_begin(c, k, blk, &s, 1, Mi), &s, norm_term, &nt);
  KExpr *var = let(c, k, blk, "var", kir_cast(c->p, dt, kl_div(c, kl_sum_value(c, k, blk, &s, 0), M64)));
  KExpr *eps = kl_f(c, dt, kl_attr_f(n, IRA_EPS));
  KExpr *rstd = nt.rstd = let(c, k, blk, "rstd", kl_div(c, kl_f(c, dt, 1), kir_un(c->p, KU_SQRT, kl_add(c, var, eps))));
  KExpr *sg = NULL, *sgx = NULL;
  if (grad) {
    nt.what = 2;
    nt.gbase = kl_i(c, 0);
    kl_sum_add(c, k, kl_sum_begin(c, k, blk, &s, 2, Mi), &s, norm_term, &nt);
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
  KExpr *mx = kl_line_max(c, k, blk, X, base, kl_i(c, 1), C);
  LossTerm lt = {n, base, mx, -1};
  KlSum s;
  kl_sum_add(c, k, kl_sum_begin(c, k, blk, &s, 1, C), &s, loss_term, &lt);
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
    kl_sum_add(c, k, kl_sum_begin(c, k, &k->body, &s, 1, N), &s, loss_term, &lt);
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
  kl_sum_add(c, k, kl_sum_begin(c, k, &k->body, &s, 1, count), &s, loss_term, &lt);
  KExpr *v = kl_sum_value(c, k, &k->body, &s, 0);
  kl_st(c, &k->body, n, kl_i(c, 0), kl_div(c, v, kir_cast(c->p, DT_F64, count)));
  return true;
}

bool kl_loss(KLower *c, IrNode *n) {
  if (n->op == IR_MSE || n->op == IR_BCE_WITH_LOGITS) return pair_loss(c, n);
  return cross_entropy(c, n, n->op == IR_CROSS_ENTROPY_GRAD);
}
