// kir_lower_nn.c — kernel IR lowering of the neural-network ops: conv2d and
// its two gradients, max/avg pooling and their gradients, batch and layer
// normalisation and their input gradients, embedding and its scatter-add
// gradient, and the losses. Each kernel accumulates every element in the
// interpreter's order (interp_nn.c, interp.c), so results round
// identically; most are its loop nest written out in kernel IR, the
// convolutions an im2col plus matmul rows with a long vectorisable inner
// loop (program-private temporaries), unpadded pooling its taps unrolled
// and branch-free (see "Performance" in docs/design/kir.md).
//
// Buffer shapes are NCHW row-major: x[N, C, H, W], w[O, C/g, KH, KW],
// y[N, O, HO, WO]. Scatters (the gradients that add into an input-shaped
// buffer) zero-fill first and keep their outer loop parallel only when its
// iterations write disjoint slices (over the batch for conv2d_grad_input and
// the pool gradients, over blocks of dw rows for conv2d_grad_weight; never
// for embedding_grad).
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
// (o / (O/g))*Cg + ci. The interpreter's loop nest; the fast forms below
// reproduce its per-element accumulation order. Used for conv2d_grad_input
// with a stride above 1 (the transposed-convolution form needs stride 1).
static bool conv_textbook(KLower *c, IrNode *n) {
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
  Vec *blk = &loop(c, k, &k->body, "n", kl_tdim(c, yt, 0), op != IR_CONV2D_GRAD_WEIGHT, &nv)->body;
  blk = &loop(c, k, blk, "o", O, false, &ov)->body;
  blk = &loop(c, k, blk, "i", kl_tdim(c, yt, 2), false, &iv)->body;
  blk = &loop(c, k, blk, "j", kl_tdim(c, yt, 3), false, &jv)->body;
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
  return true;
}

// ---- convolution: im2col and matmul rows ------------------------------------------------------------
// The fast forms keep, for every output element, the interpreter's order of
// accumulation (so results are bit-identical to it), but put a long,
// unit-stride loop innermost so LLVM vectorises it:
//   conv2d             im2col of x, then per output channel the matmul row
//                      y[n, o, :] += w[o, k] * col[n, k, :] over k ascending
//                      (k = (ci, a, b): the interpreter's tap order);
//   conv2d_grad_input  (stride 1) the same as a convolution of dy with the
//                      flipped kernel: taps (o, a desc, b desc) are the
//                      interpreter's (o, i asc, j asc) for each dx element;
//   conv2d_grad_weight dw transposed to dwT[k, o] and dy to dyT[n, q, o]:
//                      dwT[k, :] += x[..] * dyT[n, q, :] over (n, q) ascending.
// A padding tap adds w * 0 = +-0 to a sum that started at +0, which leaves
// it unchanged (a sum of +0 and -0 is +0), so only an infinite or NaN
// weight or gradient can tell the forms apart (it meets the 0 and gives
// NaN where the interpreter skips the tap). Temporaries: col (N * C*KH*KW *
// HO*WO), dyT (like dy) and dwT (like dw), program-private.
typedef struct ConvGeom {
  const Type *xt, *wt, *yt;
  const IrNode *wn; // the weight operand (conv2d, conv2d_grad_input)
  KExpr *N, *C, *H, *W, *O, *Cg, *KH, *KW, *HO, *WO, *Og, *K, *P;
  const int64_t *s, *p, *d;
  int64_t g;
} ConvGeom;

static ConvGeom conv_geom(KLower *c, const IrNode *n) {
  IrOp op = n->op;
  ConvGeom q = {
    .xt = op == IR_CONV2D ? n->in[0]->type : op == IR_CONV2D_GRAD_INPUT ? n->type : n->in[1]->type,
    .wt = op == IR_CONV2D_GRAD_WEIGHT ? n->type : n->in[1]->type,
    .yt = op == IR_CONV2D ? n->type : n->in[0]->type,
    .wn = op == IR_CONV2D_GRAD_WEIGHT ? NULL : n->in[1],
    .s = kl_attr_ints(n, IRA_STRIDE), .p = kl_attr_ints(n, IRA_PADDING),
    .d = kl_attr_ints(n, IRA_DILATION), .g = kl_attr_i(n, IRA_GROUPS)};
  q.N = kl_tdim(c, q.xt, 0), q.C = kl_tdim(c, q.xt, 1), q.H = kl_tdim(c, q.xt, 2), q.W = kl_tdim(c, q.xt, 3);
  q.O = kl_tdim(c, q.wt, 0), q.Cg = kl_tdim(c, q.wt, 1), q.KH = kl_tdim(c, q.wt, 2), q.KW = kl_tdim(c, q.wt, 3);
  q.HO = kl_tdim(c, q.yt, 2), q.WO = kl_tdim(c, q.yt, 3);
  q.Og = kl_div(c, q.O, kl_i(c, q.g));
  q.K = kl_mul(c, q.Cg, kl_mul(c, q.KH, q.KW));
  q.P = kl_mul(c, q.HO, q.WO);
  return q;
}

// A program-private temporary of n's dtype shaped [d0, d1, d2] (graph dims),
// used by kernel k.
static int conv_temp(KLower *c, KirKernel *k, const IrNode *n, const char *what, const Dim *d0,
                     const Dim *d1, const Dim *d2) {
  Type *t = type_new(c->p->arena, n->type->dtype, 3);
  t->dims[0] = (Dim *)d0, t->dims[1] = (Dim *)d1, t->dims[2] = (Dim *)d2;
  int b = kir_buf_add(c->p, KBUF_TEMP, arena_printf(c->p->arena, "t%d_%s", n->id, what), t->dtype, t,
                      kl_prod(c, t, 0, 3));
  kir_kernel_use(c->p, k, b);
  return b;
}

static const Dim *dmul(KLower *c, const Dim *a, const Dim *b) { return dim_mul(c->p->arena, a, b); }

// The window one im2col reads: source planes [CH, SH, SW] of image nv, taps
// [KH, KW], output plane [OH, OW]; source row = i*s0 + off0 + a*d0 (columns
// alike). Writes col[((nv*CH + ch)*KH + a)*KW + b][i*OW + j], 0 off the plane.
typedef struct Im2col {
  const IrNode *src;
  int col;
  KExpr *CH, *SH, *SW, *KH, *KW, *OH, *OW;
  int64_t s[2], off[2], d[2];
} Im2col;

static void im2col(KLower *c, KirKernel *k, Vec *blk, const Im2col *m, KExpr *nv) {
  KExpr *ch, *av, *bv, *iv, *jv;
  Vec *in = &loop(c, k, blk, "ch", m->CH, false, &ch)->body;
  in = &loop(c, k, in, "a", m->KH, false, &av)->body;
  in = &loop(c, k, in, "b", m->KW, false, &bv)->body;
  KExpr *row = kl_mul(c, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, nv, m->CH), ch), m->KH), av),
                                             m->KW), bv), kl_mul(c, m->OH, m->OW));
  KExpr *plane = kl_mul(c, kl_add(c, kl_mul(c, nv, m->CH), ch), kl_mul(c, m->SH, m->SW));
  in = &loop(c, k, in, "i", m->OH, false, &iv)->body;
  KExpr *h = let(c, k, in, "h", window_pos(c, iv, av, m->s[0], -m->off[0], m->d[0]));
  in = &loop(c, k, in, "j", m->OW, false, &jv)->body;
  KExpr *w = let(c, k, in, "w", window_pos(c, jv, bv, m->s[1], -m->off[1], m->d[1]));
  KExpr *to = kl_add(c, row, kl_add(c, kl_mul(c, iv, m->OW), jv));
  KStmt *s = kir_if(c->p, in, and2(c, in_range(c, h, m->SH), in_range(c, w, m->SW)));
  KExpr *from = kl_add(c, plane, kl_add(c, kl_mul(c, h, m->SW), w));
  kir_store(c->p, &s->body, m->col, to, kl_ld(c, m->src, from));
  kir_store(c->p, &s->els, m->col, to, kl_f(c, kir_buf(c->p, m->col)->dtype, 0));
}

// Matmul rows out[orow + q] (q < P, zeroed first) += wt(kk) * col[(crow + kk)*P + q]
// for kk = 0..K-1 in order. Four taps per pass over the row, summed left to
// right into the loaded element: the same roundings as four passes, a
// quarter of the row traffic.
typedef KExpr *(*TapWeight)(KLower *c, const ConvGeom *q, KExpr *ov, KExpr *kk);

static void conv_rows(KLower *c, KirKernel *k, Vec *blk, const IrNode *n, const ConvGeom *q, int col, KExpr *orow,
                      KExpr *crow, KExpr *K, KExpr *P, TapWeight wt, KExpr *ov) {
  KExpr *qv, *kb, *kr;
  DType dt = n->type->dtype;
  Vec *in = &loop(c, k, blk, "q", P, false, &qv)->body;
  kl_st(c, in, n, kl_add(c, orow, qv), kl_f(c, dt, 0));
  KExpr *K4 = kl_div(c, K, kl_i(c, 4));
  in = &loop(c, k, blk, "kb", K4, false, &kb)->body;
  KExpr *wv[4];
  for (int t = 0; t < 4; t++) wv[t] = let(c, k, in, "wv", wt(c, q, ov, kl_add(c, kl_mul(c, kb, kl_i(c, 4)), kl_i(c, t))));
  in = &loop(c, k, in, "q", P, false, &qv)->body;
  KExpr *acc = kl_ld(c, n, kl_add(c, orow, qv));
  for (int t = 0; t < 4; t++) {
    KExpr *kk = kl_add(c, kl_mul(c, kb, kl_i(c, 4)), kl_i(c, t));
    acc = kl_add(c, acc, kl_mul(c, wv[t], kir_load(c->p, col, kl_add(c, kl_mul(c, kl_add(c, crow, kk), P), qv))));
  }
  kl_st(c, in, n, kl_add(c, orow, qv), acc);
  // the last K mod 4 taps
  in = &loop(c, k, blk, "kr", kl_sub(c, K, kl_mul(c, K4, kl_i(c, 4))), false, &kr)->body;
  KExpr *kk = let(c, k, in, "kk", kl_add(c, kl_mul(c, K4, kl_i(c, 4)), kr));
  KExpr *w1 = let(c, k, in, "wv", wt(c, q, ov, kk));
  in = &loop(c, k, in, "q", P, false, &qv)->body;
  KExpr *x1 = kir_load(c->p, col, kl_add(c, kl_mul(c, kl_add(c, crow, kk), P), qv));
  accumulate(c, in, n, kl_add(c, orow, qv), kl_mul(c, w1, x1));
}

// conv2d: w[o, kk], kk = (ci*KH + a)*KW + b.
static KExpr *fwd_weight(KLower *c, const ConvGeom *q, KExpr *ov, KExpr *kk) {
  return kl_ld(c, q->wn, kl_add(c, kl_mul(c, ov, q->K), kk));
}

// conv2d: y[n, o, :] = sum over kk of w[o, kk] * col[n, (o/Og)*Cg*KH*KW + kk, :]
static bool conv_fwd(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  ConvGeom q = conv_geom(c, n);
  const Type *xt = q.xt, *yt = q.yt, *wt = q.wt;
  Im2col m = {.src = n->in[0], .CH = q.C, .SH = q.H, .SW = q.W, .KH = q.KH, .KW = q.KW, .OH = q.HO, .OW = q.WO,
              .s = {q.s[0], q.s[1]}, .off = {-q.p[0], -q.p[1]}, .d = {q.d[0], q.d[1]}};
  m.col = conv_temp(c, k, n, "col", xt->dims[0], dmul(c, xt->dims[1], dmul(c, wt->dims[2], wt->dims[3])),
                    dmul(c, yt->dims[2], yt->dims[3]));
  KExpr *nv, *ov;
  Vec *blk = &loop(c, k, &k->body, "n", q.N, true, &nv)->body;
  im2col(c, k, blk, &m, nv);
  blk = &loop(c, k, blk, "o", q.O, false, &ov)->body;
  KExpr *orow = kl_mul(c, kl_add(c, kl_mul(c, nv, q.O), ov), q.P);
  KExpr *crow = kl_mul(c, kl_add(c, kl_mul(c, nv, q.C), kl_mul(c, kl_div(c, ov, q.Og), q.Cg)), kl_mul(c, q.KH, q.KW));
  conv_rows(c, k, blk, n, &q, m.col, orow, crow, q.K, q.P, fwd_weight, ov);
  return true;
}

// conv2d_grad_input, dx channel ch (group gi = ch / Cg, ci = ch mod Cg), tap
// kk = (o', a', b') of the flipped kernel: w[gi*Og + o', ci, KH-1-a', KW-1-b'].
static KExpr *flip_weight(KLower *c, const ConvGeom *q, KExpr *ch, KExpr *kk) {
  KExpr *khw = kl_mul(c, q->KH, q->KW), *one = kl_i(c, 1);
  KExpr *o = kl_add(c, kl_mul(c, kl_div(c, ch, q->Cg), q->Og), kl_div(c, kk, khw));
  KExpr *a = kl_sub(c, kl_sub(c, q->KH, one), kir_bin(c->p, KB_MOD, kl_div(c, kk, q->KW), q->KH));
  KExpr *b = kl_sub(c, kl_sub(c, q->KW, one), kir_bin(c->p, KB_MOD, kk, q->KW));
  KExpr *ci = kir_bin(c->p, KB_MOD, ch, q->Cg);
  return kl_ld(c, q->wn, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, o, q->Cg), ci), q->KH), a), q->KW), b));
}

// conv2d_grad_input, stride 1: dy's position for dx row h and flipped tap a'
// is h + p - (KH-1)*d + a'*d, so dx is the stride-1 convolution of dy
// (padding (KH-1)*d - p) with the flipped kernel, channels O -> C:
//   dx[n, ch, :] = sum over kk of w'[ch, kk] * col[n, gi*Og*KH*KW + kk, :].
static bool conv_grad_input(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  ConvGeom q = conv_geom(c, n);
  const Type *xt = q.xt, *yt = q.yt, *wt = q.wt;
  Im2col m = {.src = n->in[0], .CH = q.O, .SH = q.HO, .SW = q.WO, .KH = q.KH, .KW = q.KW, .OH = q.H, .OW = q.W,
              .s = {1, 1}, .d = {q.d[0], q.d[1]}};
  for (int i = 0; i < 2; i++) {
    int64_t kext;
    if (!dim_is_const(q.wt->dims[2 + i], &kext)) return conv_textbook(c, n);
    m.off[i] = q.p[i] - (kext - 1) * q.d[i];
  }
  m.col = conv_temp(c, k, n, "col", xt->dims[0], dmul(c, yt->dims[1], dmul(c, wt->dims[2], wt->dims[3])),
                    dmul(c, xt->dims[2], xt->dims[3]));
  KExpr *nv, *ch, *P = kl_mul(c, q.H, q.W), *khw = kl_mul(c, q.KH, q.KW);
  Vec *blk = &loop(c, k, &k->body, "n", q.N, true, &nv)->body;
  im2col(c, k, blk, &m, nv);
  blk = &loop(c, k, blk, "ch", q.C, false, &ch)->body;
  KExpr *orow = kl_mul(c, kl_add(c, kl_mul(c, nv, q.C), ch), P);
  KExpr *crow = kl_mul(c, kl_add(c, kl_mul(c, nv, q.O), kl_mul(c, kl_div(c, ch, q.Cg), q.Og)), khw);
  conv_rows(c, k, blk, n, &q, m.col, orow, crow, kl_mul(c, q.Og, khw), P, flip_weight, ch);
  return true;
}

// conv2d_grad_weight: with dyT[n, p, o] = dy[n, o, p] (p = i*WO + j),
//   dwT[kk, gi*Og + o'] += x[n, gi*Cg + ci, h, w] * dyT[n, p, gi*Og + o']
// over (n, p) ascending, kk = (ci*KH + a)*KW + b, in-range taps only; then
// dw[o, kk] = dwT[kk, o]. The inner loop runs over the group's channels.
// The rows (ch, a), ch = gi*Cg + ci (each owns dwT[kk, gi*Og .. gi*Og + Og)
// for its KW taps b), are cut into GW_BLOCKS blocks that run in parallel: a
// block walks every (n, p) in order and, per (n, p), its rows, so each
// element keeps the interpreter's order while dyT's row for (n, p) serves
// the whole block.
enum { GW_BLOCKS = 8 };

static bool conv_grad_weight(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  ConvGeom q = conv_geom(c, n);
  const Type *yt = q.yt, *wt = q.wt;
  const IrNode *dy = n->in[0], *X = n->in[1];
  DType dt = n->type->dtype;
  int dyT = conv_temp(c, k, n, "dyT", yt->dims[0], dmul(c, yt->dims[2], yt->dims[3]), yt->dims[1]);
  int dwT = conv_temp(c, k, n, "dwT", wt->dims[1], dmul(c, wt->dims[2], wt->dims[3]), wt->dims[0]);
  KExpr *nv, *ov, *pv, *kv, *rbv, *rv, *bv, *iv, *jv, *ow;
  // dwT = 0; dyT = dy transposed
  Vec *blk = &loop(c, k, &k->body, "z", kl_mul(c, q.K, q.O), true, &kv)->body;
  kir_store(c->p, blk, dwT, kv, kl_f(c, dt, 0));
  blk = &loop(c, k, &k->body, "n", q.N, true, &nv)->body;
  blk = &loop(c, k, blk, "o", q.O, false, &ov)->body;
  blk = &loop(c, k, blk, "p", q.P, false, &pv)->body;
  KExpr *t = kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, nv, q.P), pv), q.O), ov);
  kir_store(c->p, blk, dyT, t, kl_ld(c, dy, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, nv, q.O), ov), q.P), pv)));
  // the accumulation: blocks of rows (ch, a) in parallel, each over (n, p) ascending
  KExpr *R = kl_mul(c, q.C, q.KH), *nb = kl_i(c, GW_BLOCKS);
  KExpr *RB = kl_div(c, kl_add(c, R, kl_i(c, GW_BLOCKS - 1)), nb);
  blk = &loop(c, k, &k->body, "rb", nb, true, &rbv)->body;
  blk = &loop(c, k, blk, "n", q.N, false, &nv)->body;
  blk = &loop(c, k, blk, "i", q.HO, false, &iv)->body;
  blk = &loop(c, k, blk, "j", q.WO, false, &jv)->body;
  KExpr *drow = kl_mul(c, kl_add(c, kl_mul(c, nv, q.P), kl_add(c, kl_mul(c, iv, q.WO), jv)), q.O);
  blk = &loop(c, k, blk, "r", RB, false, &rv)->body;
  KExpr *r = let(c, k, blk, "row", kl_add(c, kl_mul(c, rbv, RB), rv));
  blk = &kir_if(c->p, blk, lt(c, r, R))->body;
  KExpr *ch = let(c, k, blk, "ch", kl_div(c, r, q.KH)), *av = kir_bin(c->p, KB_MOD, r, q.KH);
  KExpr *civ = kir_bin(c->p, KB_MOD, ch, q.Cg);
  KExpr *o0 = let(c, k, blk, "o0", kl_mul(c, kl_div(c, ch, q.Cg), q.Og));
  KExpr *h = let(c, k, blk, "h", window_pos(c, iv, av, q.s[0], q.p[0], q.d[0]));
  blk = &kir_if(c->p, blk, in_range(c, h, q.H))->body;
  blk = &loop(c, k, blk, "b", q.KW, false, &bv)->body;
  KExpr *w = let(c, k, blk, "w", window_pos(c, jv, bv, q.s[1], q.p[1], q.d[1]));
  blk = &kir_if(c->p, blk, in_range(c, w, q.W))->body;
  KExpr *xv = let(c, k, blk, "xv", kl_ld(c, X, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, nv, q.C), ch), q.H), h), q.W), w)));
  KExpr *kk = kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, civ, q.KH), av), q.KW), bv);
  blk = &loop(c, k, blk, "o", q.Og, false, &ow)->body;
  KExpr *to = kl_add(c, kl_mul(c, kk, q.O), kl_add(c, o0, ow));
  KExpr *dv = kir_load(c->p, dyT, kl_add(c, drow, kl_add(c, o0, ow)));
  kir_store(c->p, blk, dwT, to, kl_add(c, kir_load(c->p, dwT, to), kl_mul(c, dv, xv)));
  // dw = dwT transposed
  blk = &loop(c, k, &k->body, "o", q.O, true, &ov)->body;
  blk = &loop(c, k, blk, "k", q.K, false, &kv)->body;
  kl_st(c, blk, n, kl_add(c, kl_mul(c, ov, q.K), kv), kir_load(c->p, dwT, kl_add(c, kl_mul(c, kv, q.O), ov)));
  return true;
}

// conv2d and its gradients: the fast forms above; a strided
// conv2d_grad_input keeps the textbook nest.
bool kl_conv(KLower *c, IrNode *n) {
  if (n->op == IR_CONV2D) return conv_fwd(c, n);
  if (n->op == IR_CONV2D_GRAD_WEIGHT) return conv_grad_weight(c, n);
  const int64_t *s = kl_attr_ints(n, IRA_STRIDE);
  return s[0] == 1 && s[1] == 1 ? conv_grad_input(c, n) : conv_textbook(c, n);
}

// ---- pooling: unpadded windows, taps unrolled ---------------------------------------------------
// With no padding every window lies inside the plane, so the taps need no
// range checks and can be written out (kernel sizes are attributes): the
// innermost loop runs over a row of output columns with straight-line,
// branch-free taps (max keeps its best with selects), which LLVM
// vectorises. Each output element still sees its taps in the interpreter's
// row-major order. The gradients also need disjoint windows (stride >=
// kernel): then each dx element gets at most one term, written instead of
// added: 0 + dy at the picked tap (max: the select chain also tracks its
// offset; one store per window) or 0 + dy/(kh*kw) at every tap (avg). The
// plane is zeroed first (in cache) for the elements no window picks or
// covers. Branch-free taps matter most for max on real data, whose
// comparisons a branch predictor cannot guess.
enum { POOL_MAX_TAPS = 16 };

static bool pool_fast_ok(const IrNode *n, bool grad) {
  const int64_t *ks = kl_attr_ints(n, IRA_KERNEL), *s = kl_attr_ints(n, IRA_STRIDE), *p = kl_attr_ints(n, IRA_PADDING);
  if (p[0] || p[1] || ks[0] < 1 || ks[1] < 1 || ks[0] * ks[1] > POOL_MAX_TAPS) return false;
  return !grad || (s[0] >= ks[0] && s[1] >= ks[1]);
}

static bool pool_fast(KLower *c, IrNode *n, bool grad, bool mx) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const IrNode *X = n->in[grad];
  const Type *xt = X->type, *yt = grad ? n->in[0]->type : n->type;
  const int64_t *ks = kl_attr_ints(n, IRA_KERNEL), *s = kl_attr_ints(n, IRA_STRIDE);
  DType dt = xt->dtype;
  KExpr *H = kl_tdim(c, xt, 2), *W = kl_tdim(c, xt, 3), *HO = kl_tdim(c, yt, 2), *WO = kl_tdim(c, yt, 3);
  KExpr *nv, *cv, *iv, *jv, *zv;
  Vec *blk = &loop(c, k, &k->body, "n", kl_tdim(c, xt, 0), true, &nv)->body;
  blk = &loop(c, k, blk, "c", kl_tdim(c, xt, 1), false, &cv)->body;
  KExpr *plane = kl_add(c, kl_mul(c, nv, kl_tdim(c, xt, 1)), cv);
  KExpr *xbase = kl_mul(c, plane, kl_mul(c, H, W)), *zero = kl_f(c, dt, 0);
  if (grad) {
    Vec *z = &loop(c, k, blk, "z", kl_mul(c, H, W), false, &zv)->body;
    kl_st(c, z, n, kl_add(c, xbase, zv), zero);
  }
  blk = &loop(c, k, blk, "i", HO, false, &iv)->body;
  blk = &loop(c, k, blk, "j", WO, false, &jv)->body;
  KExpr *yo = kl_add(c, kl_mul(c, kl_add(c, kl_mul(c, plane, HO), iv), WO), jv);
  int ntap = (int)(ks[0] * ks[1]);
  KExpr *off[POOL_MAX_TAPS];
  for (int t = 0; t < ntap; t++) {
    KExpr *h = kl_add(c, kl_mul(c, iv, kl_i(c, s[0])), kl_i(c, t / ks[1]));
    KExpr *w = kl_add(c, kl_mul(c, jv, kl_i(c, s[1])), kl_i(c, t % ks[1]));
    off[t] = kl_add(c, xbase, kl_add(c, kl_mul(c, h, W), w));
  }
  KExpr *area = kl_f(c, dt, (double)ntap);
  if (!mx) {
    if (grad) {
      KExpr *share = let(c, k, blk, "share", kl_add(c, zero, kl_div(c, kl_ld(c, n->in[0], yo), area)));
      for (int t = 0; t < ntap; t++) kl_st(c, blk, n, off[t], share);
      return true;
    }
    KExpr *acc = let(c, k, blk, "s", zero);
    for (int t = 0; t < ntap; t++) kir_assign(c->p, blk, acc->var, kl_add(c, acc, kl_ld(c, X, off[t])));
    kl_st(c, blk, n, yo, kl_div(c, acc, area));
    return true;
  }
  // max: the first tap, then v > best or (v NaN and best not) replaces it
  KExpr *best = let(c, k, blk, "best", kl_ld(c, X, off[0]));
  KExpr *arg = grad ? let(c, k, blk, "arg", off[0]) : NULL;
  for (int t = 1; t < ntap; t++) {
    KExpr *v = let(c, k, blk, "v", kl_ld(c, X, off[t]));
    KExpr *nan_first = and2(c, kl_isnan(c, v), kir_un(c->p, KU_NOT, kl_isnan(c, best)));
    KExpr *better = let(c, k, blk, "better", or2(c, kir_bin(c->p, KB_GT, v, best), nan_first));
    kir_assign(c->p, blk, best->var, kir_select(c->p, better, v, best));
    if (grad) kir_assign(c->p, blk, arg->var, kir_select(c->p, better, off[t], arg));
  }
  if (grad) kl_st(c, blk, n, arg, kl_add(c, zero, kl_ld(c, n->in[0], yo)));
  else kl_st(c, blk, n, yo, best);
  return true;
}

// ---- pooling --------------------------------------------------------------------------------------
// max: first maximum in row-major window order (NaN wins once), padding
// skipped, -inf for an empty window; avg: in-range sum / (kh*kw). The grads
// send dy to the picked element / dy/(kh*kw) to every in-range element.
// Unpadded windows (disjoint ones for the grads) take the fast form above;
// the rest this per-window nest.
bool kl_pool(KLower *c, IrNode *n) {
  bool grad = n->op == IR_MAX_POOL2D_GRAD || n->op == IR_AVG_POOL2D_GRAD;
  bool mx = n->op == IR_MAX_POOL2D || n->op == IR_MAX_POOL2D_GRAD;
  if (pool_fast_ok(n, grad)) return pool_fast(c, n, grad, mx);
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const IrNode *X = n->in[grad];
  const Type *xt = X->type, *yt = grad ? n->in[0]->type : n->type;
  const int64_t *ks = kl_attr_ints(n, IRA_KERNEL), *s = kl_attr_ints(n, IRA_STRIDE), *p = kl_attr_ints(n, IRA_PADDING);
  DType dt = xt->dtype;
  if (grad) kl_zero(c, k, n);
  KExpr *H = kl_tdim(c, xt, 2), *W = kl_tdim(c, xt, 3), *HO = kl_tdim(c, yt, 2), *WO = kl_tdim(c, yt, 3);
  KExpr *nv, *cv, *iv, *jv, *av, *bv;
  Vec *blk = &loop(c, k, &k->body, "n", kl_tdim(c, xt, 0), true, &nv)->body;
  blk = &loop(c, k, blk, "c", kl_tdim(c, xt, 1), false, &cv)->body;
  KExpr *plane = kl_add(c, kl_mul(c, nv, kl_tdim(c, xt, 1)), cv);
  blk = &loop(c, k, blk, "i", HO, false, &iv)->body;
  blk = &loop(c, k, blk, "j", WO, false, &jv)->body;
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
//   dx = (gamma * rstd) * ((dy - sum(dy)/M) - xhat * (sum(dy*xhat)/M)).
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
  KExpr *sdy = grad ? let(c, k, blk, "sdy", kl_f(c, dt, 0)) : NULL;
  KExpr *sdyx = grad ? let(c, k, blk, "sdyx", kl_f(c, dt, 0)) : NULL;
  for (int pass = grad ? 0 : 1; pass < 2; pass++) {
    Vec *in = &loop(c, k, blk, "b", kl_tdim(c, t, 0), false, &iv[0])->body;
    in = kl_loops(c, k, in, t, 2, t->rank, iv, false);
    KExpr *off = kl_flat(c, t, iv);
    KExpr *xh = let(c, k, in, "xh", kl_mul(c, kl_sub(c, kl_ld(c, X, off), kl_ld(c, n->in[3], ch)), rstd));
    if (!grad) {
      kl_st(c, in, n, off, kl_add(c, kl_mul(c, xh, kl_ld(c, G, ch)), kl_ld(c, n->in[2], ch)));
    } else if (pass == 0) {
      KExpr *dy = kl_ld(c, n->in[0], off);
      kir_assign(c->p, in, sdy->var, kl_add(c, sdy, dy));
      kir_assign(c->p, in, sdyx->var, kl_add(c, sdyx, kl_mul(c, dy, xh)));
    } else {
      KExpr *tt = kl_sub(c, kl_sub(c, kl_ld(c, n->in[0], off), kl_div(c, sdy, M)), kl_mul(c, xh, kl_div(c, sdyx, M)));
      kl_st(c, in, n, off, kl_mul(c, kl_mul(c, kl_ld(c, G, ch), rstd), tt));
    }
  }
  return true;
}

// layer_norm (x, gamma, beta) {eps, ndims}: per row over the trailing ndims
// dims (M elements), mean, biased variance, then y = xhat * gamma + beta;
// layer_norm_grad (dy, x, gamma): g = dy * gamma,
//   dx = rstd * ((g - sum(g)/M) - xhat * (sum(g*xhat)/M)).
static bool layer_norm(KLower *c, IrNode *n, bool grad) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const IrNode *X = n->in[grad], *G = n->in[grad + 1];
  const Type *t = X->type, *gt = G->type;
  DType dt = t->dtype;
  int lead = t->rank - gt->rank;
  KExpr *iv[KL_MAX_RANK];
  Vec *blk = kl_loops(c, k, &k->body, t, 0, lead, iv, true);
  KExpr *M = kir_cast(c->p, dt, kl_prod(c, gt, 0, gt->rank));
  KExpr *mean = let(c, k, blk, "mean", kl_f(c, dt, 0)), *var = let(c, k, blk, "var", kl_f(c, dt, 0));
  KExpr *sg = grad ? let(c, k, blk, "sg", kl_f(c, dt, 0)) : NULL;
  KExpr *sgx = grad ? let(c, k, blk, "sgx", kl_f(c, dt, 0)) : NULL;
  KExpr *rstd = NULL;
  // passes: 0 mean, 1 variance (then rstd), 2 grad sums, 3 write
  for (int pass = 0; pass < 4; pass++) {
    if (pass == 2 && !grad) continue;
    Vec *in = kl_loops(c, k, blk, t, lead, t->rank, iv, false);
    KExpr *off = kl_flat(c, t, iv), *goff = kl_flat(c, gt, iv + lead), *xv = kl_ld(c, X, off);
    if (pass == 0) {
      kir_assign(c->p, in, mean->var, kl_add(c, mean, xv));
      kir_assign(c->p, blk, mean->var, kl_div(c, mean, M));
      continue;
    }
    if (pass == 1) {
      KExpr *dd = let(c, k, in, "d", kl_sub(c, xv, mean));
      kir_assign(c->p, in, var->var, kl_add(c, var, kl_mul(c, dd, dd)));
      kir_assign(c->p, blk, var->var, kl_div(c, var, M));
      KExpr *eps = kl_f(c, dt, kl_attr_f(n, IRA_EPS));
      rstd = let(c, k, blk, "rstd", kl_div(c, kl_f(c, dt, 1), kir_un(c->p, KU_SQRT, kl_add(c, var, eps))));
      continue;
    }
    KExpr *xh = let(c, k, in, "xh", kl_mul(c, kl_sub(c, xv, mean), rstd));
    if (!grad) {
      kl_st(c, in, n, off, kl_add(c, kl_mul(c, xh, kl_ld(c, G, goff)), kl_ld(c, n->in[2], goff)));
      continue;
    }
    KExpr *g = let(c, k, in, "g", kl_mul(c, kl_ld(c, n->in[0], off), kl_ld(c, G, goff)));
    if (pass == 2) {
      kir_assign(c->p, in, sg->var, kl_add(c, sg, g));
      kir_assign(c->p, in, sgx->var, kl_add(c, sgx, kl_mul(c, g, xh)));
    } else {
      KExpr *tt = kl_sub(c, kl_sub(c, g, kl_div(c, sg, M)), kl_mul(c, xh, kl_div(c, sgx, M)));
      kl_st(c, in, n, off, kl_mul(c, rstd, tt));
    }
  }
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
// Per row of logits x[N, C]: max, sum of exp(x - max), lse = max + log(sum).
static KExpr *row_lse(KLower *c, KirKernel *k, Vec *blk, const IrNode *X, KExpr *base, KExpr *C) {
  DType dt = X->type->dtype;
  KExpr *kv, *mx = let(c, k, blk, "mx", kl_f(c, dt, -INFINITY)), *s = let(c, k, blk, "s", kl_f(c, dt, 0));
  Vec *in = &loop(c, k, blk, "k", C, false, &kv)->body;
  KExpr *xv = kl_ld(c, X, kl_add(c, base, kv));
  kir_assign(c->p, in, mx->var, kir_select(c->p, or2(c, kir_bin(c->p, KB_GT, xv, mx), kl_isnan(c, xv)), xv, mx));
  in = &loop(c, k, blk, "k", C, false, &kv)->body;
  xv = kl_ld(c, X, kl_add(c, base, kv));
  kir_assign(c->p, in, s->var, kl_add(c, s, kir_un(c->p, KU_EXP, kl_sub(c, xv, mx))));
  return let(c, k, blk, "lse", kl_add(c, mx, kir_un(c->p, KU_LOG, s)));
}

// cross_entropy: mean over rows of lse - x[t]; cross_entropy_grad (dy, x, t):
// dy * (exp(x - lse) - onehot(t)) / N.
static bool cross_entropy(KLower *c, IrNode *n, bool grad) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const IrNode *X = n->in[grad], *T = n->in[grad + 1];
  DType dt = X->type->dtype;
  KExpr *N = kl_tdim(c, X->type, 0), *C = kl_tdim(c, X->type, 1), *iv, *kv;
  KExpr *total = grad ? NULL : let(c, k, &k->body, "total", kl_f(c, dt, 0));
  Vec *blk = &loop(c, k, &k->body, "r", N, grad, &iv)->body;
  KExpr *tv = let(c, k, blk, "t", kir_cast(c->p, DT_I64, kl_ld(c, T, iv)));
  kir_check(c->p, blk, in_range(c, tv, C), "cross_entropy target out of range");
  KExpr *base = kl_mul(c, iv, C), *lse = row_lse(c, k, blk, X, base, C);
  if (!grad) {
    kir_assign(c->p, blk, total->var, kl_add(c, total, kl_sub(c, lse, kl_ld(c, X, kl_add(c, base, tv)))));
    kl_st(c, &k->body, n, kl_i(c, 0), kl_div(c, total, kir_cast(c->p, dt, N)));
    return true;
  }
  Vec *in = &loop(c, k, blk, "k", C, false, &kv)->body;
  KExpr *pr = kir_un(c->p, KU_EXP, kl_sub(c, kl_ld(c, X, kl_add(c, base, kv)), lse));
  KExpr *g = kl_sub(c, pr, kir_select(c->p, kir_bin(c->p, KB_EQ, kv, tv), kl_f(c, dt, 1), kl_f(c, dt, 0)));
  KExpr *dy = kl_ld(c, n->in[0], kl_i(c, 0));
  kl_st(c, in, n, kl_add(c, base, kv), kl_div(c, kl_mul(c, dy, g), kir_cast(c->p, dt, N)));
  return true;
}

// mse: mean((a - b)^2); bce_with_logits: mean((max(a, 0) - a*b) + log1p(exp(-|a|)))
static bool pair_loss(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const Type *t = n->in[0]->type;
  DType dt = t->dtype;
  KExpr *iv[KL_MAX_RANK], *s = let(c, k, &k->body, "s", kl_f(c, dt, 0));
  Vec *blk = kl_loops(c, k, &k->body, t, 0, t->rank, iv, false);
  KExpr *e = kl_flat(c, t, iv), *a = kl_ld(c, n->in[0], e), *b = kl_ld(c, n->in[1], e), *v;
  if (n->op == IR_MSE) {
    KExpr *d = let(c, k, blk, "d", kl_sub(c, a, b));
    v = kl_mul(c, d, d);
  } else {
    KExpr *pos = kir_select(c->p, kir_bin(c->p, KB_GT, a, kl_f(c, dt, 0)), a, kl_f(c, dt, 0));
    KExpr *soft = kir_un(c->p, KU_LOG1P, kir_un(c->p, KU_EXP, kir_un(c->p, KU_NEG, kir_un(c->p, KU_ABS, a))));
    v = kl_add(c, kl_sub(c, pos, kl_mul(c, a, b)), soft);
  }
  kir_assign(c->p, blk, s->var, kl_add(c, s, v));
  kl_st(c, &k->body, n, kl_i(c, 0), kl_div(c, s, kir_cast(c->p, dt, kl_prod(c, t, 0, t->rank))));
  return true;
}

bool kl_loss(KLower *c, IrNode *n) {
  if (n->op == IR_MSE || n->op == IR_BCE_WITH_LOGITS) return pair_loss(c, n);
  return cross_entropy(c, n, n->op == IR_CROSS_ENTROPY_GRAD);
}
