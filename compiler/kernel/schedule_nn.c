// schedule_nn.c — the CPU recipes of the scheduling pass: loop nests that
// compute what a kernel's op record says (kir.h) faster on a CPU than the
// canonical nest the lowering wrote, chosen by schedule.c's strategy table
// for targets with recipes, sized by the target's parameters (target.h):
//
//   matmul              i-k-j: zero the output row, then y[i, :] += a[i, k] * b[k, :]
//   conv2d              im2col, then rows y[n, o, :] += w[o, kk] * col[n, kk, :],
//                       conv_taps taps per pass over the row
//   conv2d_grad_input   stride 1: the same with the flipped kernel
//   conv2d_grad_weight  transposes of dy and dw, then grad_weight_blocks
//                       parallel blocks of weight rows over (n, p) ascending
//   pools               unpadded windows up to pool_max_taps taps unrolled
//                       (the gradients: disjoint windows only)
//
// Every recipe keeps, for each output element, the interpreter's order of
// accumulation, so results equal the canonical nest's bit for bit (0 + p is
// p; four taps summed left to right into the loaded element round as four
// passes do). The one difference: a padding tap of an im2col form adds
// w * 0 = +-0, which changes nothing unless w (or dy) is infinite or NaN,
// where the canonical nest skips the tap. The innermost loops are long,
// unit-stride and free of floating-point reductions, which is what LLVM
// vectorises without fast-math (docs/design/kir.md, "Performance").
//
// Buffer shapes are NCHW row-major: x[N, C, H, W], w[O, C/g, KH, KW],
// y[N, O, HO, WO]. Temporaries (col, dyT, dwT) are the kernel's own.
#include "schedule_internal.h"

#include <math.h>
#include <string.h>

static KExpr *or2(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_OR, a, b); }

// The input position of output index i, window offset a: i*st - pd + a*dl.
static KExpr *window_pos(Sk *s, KExpr *i, KExpr *a, int64_t st, int64_t pd, int64_t dl) {
  return sk_add(s, sk_mul(s, i, sk_i(s, st)), sk_add(s, sk_i(s, -pd), sk_mul(s, a, sk_i(s, dl))));
}

// ---- matmul -----------------------------------------------------------------------------------
// [.., M, K] @ [.., K, N] -> [.., M, N], batch dims broadcast (a dim of 1
// indexes 0). Loop order (batch.., i, k, j): each output row is zeroed, then
// for each k in order y[i, :] += a[i, k] * b[k, :] — the innermost loop runs
// over contiguous rows of b and y, and every y[i, j] still sums its K
// products in k order, as the canonical dot product does.
static KExpr *batch_offset(Sk *s, int role, int r, KExpr **iv) {
  const KirOp *op = s->k->op;
  int rank = op->rank[role] - 2;
  KExpr *e = sk_i(s, 0);
  for (int j = 0, i = r - rank; j < rank; j++, i++)
    e = sk_add(s, sk_mul(s, e, op->dims[role][j]), sk_is_one(op->dims[role][j]) ? sk_i(s, 0) : iv[i]);
  return e;
}

// Row-major flat offset of index iv into the operand in `role`.
static KExpr *flat(Sk *s, int role, KExpr **iv) {
  const KirOp *op = s->k->op;
  KExpr *e = sk_i(s, 0);
  for (int i = 0; i < op->rank[role]; i++) e = sk_add(s, sk_mul(s, e, op->dims[role][i]), iv[i]);
  return e;
}

bool sk_matmul(Sk *s) {
  const KirOp *op = s->k->op;
  int A = op->buf[0], B = op->buf[1], Y = op->buf[2], r = op->rank[2], ra = op->rank[0];
  if (r < 2 || r > SK_MAX_RANK || ra < 2 || op->rank[1] < 2) return false;
  sk_restart(s);
  KExpr *iv[SK_MAX_RANK], *jv, *kk;
  Vec *row = &s->k->body;
  for (int i = 0; i < r - 1; i++) row = &sk_loop(s, row, "i", sk_dim(s, 2, i), i == 0, &iv[i])->body;
  KExpr *N = sk_dim(s, 2, r - 1), *K = sk_dim(s, 0, ra - 1), *M = sk_dim(s, 0, ra - 2);
  Vec *zero = &sk_loop(s, row, "j", N, false, &iv[r - 1])->body;
  sk_st(s, zero, Y, flat(s, 2, iv), sk_f(s, kir_buf(s->p, Y)->dtype, 0));
  Vec *kb = &sk_loop(s, row, "k", K, false, &kk)->body;
  KExpr *ia = sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, batch_offset(s, 0, r - 2, iv), M), iv[r - 2]), K), kk);
  KExpr *av = sk_let(s, kb, "a", sk_ld(s, A, ia));
  Vec *jb = &sk_loop(s, kb, "j", N, false, &jv)->body;
  iv[r - 1] = jv;
  KExpr *ib = sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, batch_offset(s, 1, r - 2, iv), K), kk), N), jv);
  KExpr *yo = flat(s, 2, iv);
  sk_st(s, jb, Y, yo, sk_add(s, sk_ld(s, Y, yo), sk_mul(s, av, sk_ld(s, B, ib))));
  return true;
}

// ---- convolution geometry ------------------------------------------------------------------------
// Roles by op: conv2d (x, w, y), conv2d_grad_input (dy, w, dx),
// conv2d_grad_weight (dy, x, dw); attributes stride, padding, dilation
// (h, w), groups.
typedef struct ConvGeom {
  int x, w, y; // buffers shaped like x, w, y (dx is x-shaped, dw w-shaped, dy y-shaped)
  int xr, wr, yr; // their roles
  KExpr *N, *C, *H, *W, *O, *Cg, *KH, *KW, *HO, *WO, *Og, *K, *P;
  const int64_t *st, *pd, *dl;
  int64_t g;
} ConvGeom;

static ConvGeom conv_geom(Sk *s) {
  const KirOp *op = s->k->op;
  ConvGeom q = {.st = op->attr, .pd = op->attr + 2, .dl = op->attr + 4, .g = op->attr[6]};
  if (op->kind == KOP_CONV2D) q.xr = 0, q.wr = 1, q.yr = 2;
  if (op->kind == KOP_CONV2D_GRAD_INPUT) q.yr = 0, q.wr = 1, q.xr = 2;
  if (op->kind == KOP_CONV2D_GRAD_WEIGHT) q.yr = 0, q.xr = 1, q.wr = 2;
  q.x = op->buf[q.xr], q.w = op->buf[q.wr], q.y = op->buf[q.yr];
  q.N = sk_dim(s, q.xr, 0), q.C = sk_dim(s, q.xr, 1), q.H = sk_dim(s, q.xr, 2), q.W = sk_dim(s, q.xr, 3);
  q.O = sk_dim(s, q.wr, 0), q.Cg = sk_dim(s, q.wr, 1), q.KH = sk_dim(s, q.wr, 2), q.KW = sk_dim(s, q.wr, 3);
  q.HO = sk_dim(s, q.yr, 2), q.WO = sk_dim(s, q.yr, 3);
  q.Og = sk_div(s, q.O, sk_i(s, q.g));
  q.K = sk_mul(s, q.Cg, sk_mul(s, q.KH, q.KW));
  q.P = sk_mul(s, q.HO, q.WO);
  return q;
}

static bool conv_shapes_ok(Sk *s) {
  const KirOp *op = s->k->op;
  for (int i = 0; i < 3; i++)
    if (op->rank[i] != 4) return false;
  return op->attr[6] >= 1 && s->t->conv_taps >= 1 && s->t->conv_taps <= SK_MAX_TAPS;
}

// A kernel temporary of dtype dt shaped [d0, d1, d2].
static int temp3(Sk *s, const char *name, DType dt, KExpr *d0, KExpr *d1, KExpr *d2) {
  KExpr *dims[3] = {d0, d1, d2};
  return sk_temp(s, name, dt, 3, dims);
}

// ---- convolution: im2col and matmul rows -------------------------------------------------------------
// The window one im2col reads: source planes [CH, SH, SW] of image nv, taps
// [KH, KW], output plane [OH, OW]; source row = i*s0 + off0 + a*d0 (columns
// alike). Writes col[((nv*CH + ch)*KH + a)*KW + b][i*OW + j], 0 off the plane.
typedef struct Im2col {
  int src, col;
  KExpr *CH, *SH, *SW, *KH, *KW, *OH, *OW;
  int64_t st[2], off[2], dl[2];
} Im2col;

static void im2col(Sk *s, Vec *blk, const Im2col *m, KExpr *nv) {
  KExpr *ch, *av, *bv, *iv, *jv;
  Vec *in = &sk_loop(s, blk, "ch", m->CH, false, &ch)->body;
  in = &sk_loop(s, in, "a", m->KH, false, &av)->body;
  in = &sk_loop(s, in, "b", m->KW, false, &bv)->body;
  KExpr *row = sk_mul(s, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, nv, m->CH), ch), m->KH), av),
                                          m->KW), bv), sk_mul(s, m->OH, m->OW));
  KExpr *plane = sk_mul(s, sk_add(s, sk_mul(s, nv, m->CH), ch), sk_mul(s, m->SH, m->SW));
  in = &sk_loop(s, in, "i", m->OH, false, &iv)->body;
  KExpr *h = sk_let(s, in, "h", window_pos(s, iv, av, m->st[0], -m->off[0], m->dl[0]));
  in = &sk_loop(s, in, "j", m->OW, false, &jv)->body;
  KExpr *w = sk_let(s, in, "w", window_pos(s, jv, bv, m->st[1], -m->off[1], m->dl[1]));
  KExpr *to = sk_add(s, row, sk_add(s, sk_mul(s, iv, m->OW), jv));
  KStmt *st = kir_if(s->p, in, sk_and(s, sk_in_range(s, h, m->SH), sk_in_range(s, w, m->SW)));
  KExpr *from = sk_add(s, plane, sk_add(s, sk_mul(s, h, m->SW), w));
  kir_store(s->p, &st->body, m->col, to, sk_ld(s, m->src, from));
  kir_store(s->p, &st->els, m->col, to, sk_f(s, kir_buf(s->p, m->col)->dtype, 0));
}

// Matmul rows out[orow + q] (q < P, zeroed first) += wt(kk) * col[(crow + kk)*P + q]
// for kk = 0..K-1 in order. T = conv_taps taps per pass over the row, summed
// left to right into the loaded element: the same roundings as T passes,
// 1/T of the row traffic; then the K mod T remaining taps.
typedef KExpr *(*TapWeight)(Sk *s, const ConvGeom *q, KExpr *ov, KExpr *kk);

typedef struct Rows {
  int out, col;
  KExpr *orow, *crow, *K, *P, *ov;
  TapWeight wt;
} Rows;

static void conv_rows(Sk *s, Vec *blk, const ConvGeom *q, const Rows *r) {
  int T = s->t->conv_taps;
  KExpr *qv, *kb, *kr;
  DType dt = kir_buf(s->p, r->out)->dtype;
  Vec *in = &sk_loop(s, blk, "q", r->P, false, &qv)->body;
  sk_st(s, in, r->out, sk_add(s, r->orow, qv), sk_f(s, dt, 0));
  KExpr *KT = sk_div(s, r->K, sk_i(s, T));
  in = &sk_loop(s, blk, "kb", KT, false, &kb)->body;
  KExpr *wv[SK_MAX_TAPS];
  for (int t = 0; t < T; t++) wv[t] = sk_let(s, in, "wv", r->wt(s, q, r->ov, sk_add(s, sk_mul(s, kb, sk_i(s, T)), sk_i(s, t))));
  in = &sk_loop(s, in, "q", r->P, false, &qv)->body;
  KExpr *acc = sk_ld(s, r->out, sk_add(s, r->orow, qv));
  for (int t = 0; t < T; t++) {
    KExpr *kk = sk_add(s, sk_mul(s, kb, sk_i(s, T)), sk_i(s, t));
    acc = sk_add(s, acc, sk_mul(s, wv[t], sk_ld(s, r->col, sk_add(s, sk_mul(s, sk_add(s, r->crow, kk), r->P), qv))));
  }
  sk_st(s, in, r->out, sk_add(s, r->orow, qv), acc);
  in = &sk_loop(s, blk, "kr", sk_sub(s, r->K, sk_mul(s, KT, sk_i(s, T))), false, &kr)->body;
  KExpr *kk = sk_let(s, in, "kk", sk_add(s, sk_mul(s, KT, sk_i(s, T)), kr));
  KExpr *w1 = sk_let(s, in, "wv", r->wt(s, q, r->ov, kk));
  in = &sk_loop(s, in, "q", r->P, false, &qv)->body;
  KExpr *x1 = sk_ld(s, r->col, sk_add(s, sk_mul(s, sk_add(s, r->crow, kk), r->P), qv));
  sk_acc(s, in, r->out, sk_add(s, r->orow, qv), sk_mul(s, w1, x1));
}

// conv2d: w[o, kk], kk = (ci*KH + a)*KW + b.
static KExpr *fwd_weight(Sk *s, const ConvGeom *q, KExpr *ov, KExpr *kk) {
  return sk_ld(s, q->w, sk_add(s, sk_mul(s, ov, q->K), kk));
}

// conv2d: y[n, o, :] = sum over kk of w[o, kk] * col[n, (o/Og)*Cg*KH*KW + kk, :]
bool sk_conv2d(Sk *s) {
  if (!conv_shapes_ok(s)) return false;
  sk_restart(s);
  ConvGeom q = conv_geom(s);
  Im2col m = {.src = q.x, .CH = q.C, .SH = q.H, .SW = q.W, .KH = q.KH, .KW = q.KW, .OH = q.HO, .OW = q.WO,
              .st = {q.st[0], q.st[1]}, .off = {-q.pd[0], -q.pd[1]}, .dl = {q.dl[0], q.dl[1]}};
  m.col = temp3(s, "col", kir_buf(s->p, q.y)->dtype, q.N, sk_mul(s, q.C, sk_mul(s, q.KH, q.KW)), q.P);
  KExpr *nv, *ov;
  Vec *blk = &sk_loop(s, &s->k->body, "n", q.N, true, &nv)->body;
  im2col(s, blk, &m, nv);
  blk = &sk_loop(s, blk, "o", q.O, false, &ov)->body;
  Rows r = {.out = q.y, .col = m.col, .K = q.K, .P = q.P, .ov = ov, .wt = fwd_weight};
  r.orow = sk_mul(s, sk_add(s, sk_mul(s, nv, q.O), ov), q.P);
  r.crow = sk_mul(s, sk_add(s, sk_mul(s, nv, q.C), sk_mul(s, sk_div(s, ov, q.Og), q.Cg)), sk_mul(s, q.KH, q.KW));
  conv_rows(s, blk, &q, &r);
  return true;
}

// conv2d_grad_input, dx channel ch (group gi = ch / Cg, ci = ch mod Cg), tap
// kk = (o', a', b') of the flipped kernel: w[gi*Og + o', ci, KH-1-a', KW-1-b'].
static KExpr *flip_weight(Sk *s, const ConvGeom *q, KExpr *ch, KExpr *kk) {
  KExpr *khw = sk_mul(s, q->KH, q->KW), *one = sk_i(s, 1);
  KExpr *o = sk_add(s, sk_mul(s, sk_div(s, ch, q->Cg), q->Og), sk_div(s, kk, khw));
  KExpr *a = sk_sub(s, sk_sub(s, q->KH, one), sk_mod(s, sk_div(s, kk, q->KW), q->KH));
  KExpr *b = sk_sub(s, sk_sub(s, q->KW, one), sk_mod(s, kk, q->KW));
  KExpr *ci = sk_mod(s, ch, q->Cg);
  return sk_ld(s, q->w, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, o, q->Cg), ci), q->KH), a), q->KW), b));
}

// conv2d_grad_input, stride 1 and constant kernel extents: dy's position for
// dx row h and flipped tap a' is h + p - (KH-1)*d + a'*d, so dx is the
// stride-1 convolution of dy (padding (KH-1)*d - p) with the flipped
// kernel, channels O -> C:
//   dx[n, ch, :] = sum over kk of w'[ch, kk] * col[n, gi*Og*KH*KW + kk, :].
bool sk_conv2d_grad_input(Sk *s) {
  const int64_t *st = s->k->op->attr;
  if (!conv_shapes_ok(s) || st[0] != 1 || st[1] != 1) return false;
  ConvGeom q = conv_geom(s);
  Im2col m = {.src = q.y, .CH = q.O, .SH = q.HO, .SW = q.WO, .KH = q.KH, .KW = q.KW, .OH = q.H, .OW = q.W,
              .st = {1, 1}, .dl = {q.dl[0], q.dl[1]}};
  for (int i = 0; i < 2; i++) {
    KExpr *ext = i ? q.KW : q.KH;
    if (ext->kind != KE_CONST) return false;
    m.off[i] = q.pd[i] - (ext->i - 1) * q.dl[i];
  }
  sk_restart(s);
  m.col = temp3(s, "col", kir_buf(s->p, q.x)->dtype, q.N, sk_mul(s, q.O, sk_mul(s, q.KH, q.KW)), sk_mul(s, q.H, q.W));
  KExpr *nv, *ch, *P = sk_mul(s, q.H, q.W), *khw = sk_mul(s, q.KH, q.KW);
  Vec *blk = &sk_loop(s, &s->k->body, "n", q.N, true, &nv)->body;
  im2col(s, blk, &m, nv);
  blk = &sk_loop(s, blk, "ch", q.C, false, &ch)->body;
  Rows r = {.out = q.x, .col = m.col, .K = sk_mul(s, q.Og, khw), .P = P, .ov = ch, .wt = flip_weight};
  r.orow = sk_mul(s, sk_add(s, sk_mul(s, nv, q.C), ch), P);
  r.crow = sk_mul(s, sk_add(s, sk_mul(s, nv, q.O), sk_mul(s, sk_div(s, ch, q.Cg), q.Og)), khw);
  conv_rows(s, blk, &q, &r);
  return true;
}

// conv2d_grad_weight: with dyT[n, p, o] = dy[n, o, p] (p = i*WO + j),
//   dwT[kk, gi*Og + o'] += x[n, gi*Cg + ci, h, w] * dyT[n, p, gi*Og + o']
// over (n, p) ascending, kk = (ci*KH + a)*KW + b, in-range taps only; then
// dw[o, kk] = dwT[kk, o]. The inner loop runs over the group's channels.
// The rows (ch, a), ch = gi*Cg + ci (each owns dwT[kk, gi*Og .. gi*Og + Og)
// for its KW taps b), are cut into grad_weight_blocks blocks that run in
// parallel: a block walks every (n, p) in order and, per (n, p), its rows,
// so each element keeps the interpreter's order while dyT's row for (n, p)
// serves the whole block.
static void gw_transpose_dy(Sk *s, const ConvGeom *q, int dwT, int dyT) {
  KExpr *nv, *ov, *pv, *kv;
  DType dt = kir_buf(s->p, q->w)->dtype;
  Vec *blk = &sk_loop(s, &s->k->body, "z", sk_mul(s, q->K, q->O), true, &kv)->body;
  kir_store(s->p, blk, dwT, kv, sk_f(s, dt, 0));
  blk = &sk_loop(s, &s->k->body, "n", q->N, true, &nv)->body;
  blk = &sk_loop(s, blk, "o", q->O, false, &ov)->body;
  blk = &sk_loop(s, blk, "p", q->P, false, &pv)->body;
  KExpr *t = sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, nv, q->P), pv), q->O), ov);
  kir_store(s->p, blk, dyT, t, sk_ld(s, q->y, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, nv, q->O), ov), q->P), pv)));
}

static void gw_accumulate(Sk *s, const ConvGeom *q, int dwT, int dyT) {
  int nblk = s->t->grad_weight_blocks;
  KExpr *nv, *rbv, *rv, *bv, *iv, *jv, *ow;
  KExpr *R = sk_mul(s, q->C, q->KH), *nb = sk_i(s, nblk);
  KExpr *RB = sk_div(s, sk_add(s, R, sk_i(s, nblk - 1)), nb);
  Vec *blk = &sk_loop(s, &s->k->body, "rb", nb, true, &rbv)->body;
  blk = &sk_loop(s, blk, "n", q->N, false, &nv)->body;
  blk = &sk_loop(s, blk, "i", q->HO, false, &iv)->body;
  blk = &sk_loop(s, blk, "j", q->WO, false, &jv)->body;
  KExpr *drow = sk_mul(s, sk_add(s, sk_mul(s, nv, q->P), sk_add(s, sk_mul(s, iv, q->WO), jv)), q->O);
  blk = &sk_loop(s, blk, "r", RB, false, &rv)->body;
  KExpr *r = sk_let(s, blk, "row", sk_add(s, sk_mul(s, rbv, RB), rv));
  blk = &kir_if(s->p, blk, sk_lt(s, r, R))->body;
  KExpr *ch = sk_let(s, blk, "ch", sk_div(s, r, q->KH)), *av = sk_mod(s, r, q->KH);
  KExpr *civ = sk_mod(s, ch, q->Cg);
  KExpr *o0 = sk_let(s, blk, "o0", sk_mul(s, sk_div(s, ch, q->Cg), q->Og));
  KExpr *h = sk_let(s, blk, "h", window_pos(s, iv, av, q->st[0], q->pd[0], q->dl[0]));
  blk = &kir_if(s->p, blk, sk_in_range(s, h, q->H))->body;
  blk = &sk_loop(s, blk, "b", q->KW, false, &bv)->body;
  KExpr *w = sk_let(s, blk, "w", window_pos(s, jv, bv, q->st[1], q->pd[1], q->dl[1]));
  blk = &kir_if(s->p, blk, sk_in_range(s, w, q->W))->body;
  KExpr *xo = sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, nv, q->C), ch), q->H), h), q->W), w);
  KExpr *xv = sk_let(s, blk, "xv", sk_ld(s, q->x, xo));
  KExpr *kk = sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, civ, q->KH), av), q->KW), bv);
  blk = &sk_loop(s, blk, "o", q->Og, false, &ow)->body;
  KExpr *to = sk_add(s, sk_mul(s, kk, q->O), sk_add(s, o0, ow));
  KExpr *dv = sk_ld(s, dyT, sk_add(s, drow, sk_add(s, o0, ow)));
  kir_store(s->p, blk, dwT, to, sk_add(s, sk_ld(s, dwT, to), sk_mul(s, dv, xv)));
}

bool sk_conv2d_grad_weight(Sk *s) {
  if (!conv_shapes_ok(s) || s->t->grad_weight_blocks < 1) return false;
  sk_restart(s);
  ConvGeom q = conv_geom(s);
  DType dt = kir_buf(s->p, q.w)->dtype;
  int dyT = temp3(s, "dyT", dt, q.N, q.P, q.O);
  int dwT = temp3(s, "dwT", dt, q.Cg, sk_mul(s, q.KH, q.KW), q.O);
  gw_transpose_dy(s, &q, dwT, dyT);
  gw_accumulate(s, &q, dwT, dyT);
  KExpr *ov, *kv; // dw = dwT transposed
  Vec *blk = &sk_loop(s, &s->k->body, "o", q.O, true, &ov)->body;
  blk = &sk_loop(s, blk, "k", q.K, false, &kv)->body;
  sk_st(s, blk, q.w, sk_add(s, sk_mul(s, ov, q.K), kv), sk_ld(s, dwT, sk_add(s, sk_mul(s, kv, q.O), ov)));
  return true;
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
// Roles: pools (x, y), gradients (dy, x, dx); attributes kernel, stride,
// padding (h, w).
static bool pool_fast_ok(Sk *s, bool grad) {
  const int64_t *ks = s->k->op->attr, *st = ks + 2, *pd = ks + 4;
  int ntap = s->t->pool_max_taps < SK_MAX_TAPS ? s->t->pool_max_taps : SK_MAX_TAPS;
  if (pd[0] || pd[1] || ks[0] < 1 || ks[1] < 1 || ks[0] * ks[1] > ntap) return false;
  return !grad || (st[0] >= ks[0] && st[1] >= ks[1]);
}

// The best of the taps: max keeps the first maximum (NaN wins once); with
// grad the offset of the tap it picked; avg sums them.
static void pool_taps(Sk *s, Vec *blk, KExpr **off, int ntap, bool mx, bool grad, int X, KExpr *yo) {
  const KirOp *op = s->k->op;
  int Y = op->buf[grad ? 2 : 1];
  DType dt = kir_buf(s->p, X)->dtype;
  KExpr *zero = sk_f(s, dt, 0), *area = sk_f(s, dt, (double)ntap);
  if (!mx) {
    if (grad) {
      KExpr *share = sk_let(s, blk, "share", sk_add(s, zero, sk_div(s, sk_ld(s, op->buf[0], yo), area)));
      for (int t = 0; t < ntap; t++) sk_st(s, blk, Y, off[t], share);
      return;
    }
    KExpr *acc = sk_let(s, blk, "s", zero);
    for (int t = 0; t < ntap; t++) kir_assign(s->p, blk, acc->var, sk_add(s, acc, sk_ld(s, X, off[t])));
    sk_st(s, blk, Y, yo, sk_div(s, acc, area));
    return;
  }
  KExpr *best = sk_let(s, blk, "best", sk_ld(s, X, off[0]));
  KExpr *arg = grad ? sk_let(s, blk, "arg", off[0]) : NULL;
  for (int t = 1; t < ntap; t++) {
    KExpr *v = sk_let(s, blk, "v", sk_ld(s, X, off[t]));
    KExpr *nan_first = sk_and(s, sk_isnan(s, v), kir_un(s->p, KU_NOT, sk_isnan(s, best)));
    KExpr *better = sk_let(s, blk, "better", or2(s, kir_bin(s->p, KB_GT, v, best), nan_first));
    kir_assign(s->p, blk, best->var, kir_select(s->p, better, v, best));
    if (grad) kir_assign(s->p, blk, arg->var, kir_select(s->p, better, off[t], arg));
  }
  if (grad) sk_st(s, blk, Y, arg, sk_add(s, zero, sk_ld(s, op->buf[0], yo)));
  else sk_st(s, blk, Y, yo, best);
}

bool sk_pool(Sk *s) {
  KirOpKind kind = s->k->op->kind;
  bool grad = kind == KOP_MAX_POOL2D_GRAD || kind == KOP_AVG_POOL2D_GRAD;
  bool mx = kind == KOP_MAX_POOL2D || kind == KOP_MAX_POOL2D_GRAD;
  if (!pool_fast_ok(s, grad)) return false;
  sk_restart(s);
  const KirOp *op = s->k->op;
  int xr = grad, ysr = grad ? 0 : 1; // roles of x and of a y-shaped operand
  int X = op->buf[xr], Y = op->buf[grad ? 2 : 1];
  const int64_t *ks = op->attr, *st = op->attr + 2;
  KExpr *H = sk_dim(s, xr, 2), *W = sk_dim(s, xr, 3), *HO = sk_dim(s, ysr, 2), *WO = sk_dim(s, ysr, 3);
  KExpr *nv, *cv, *iv, *jv, *zv;
  Vec *blk = &sk_loop(s, &s->k->body, "n", sk_dim(s, xr, 0), true, &nv)->body;
  blk = &sk_loop(s, blk, "c", sk_dim(s, xr, 1), false, &cv)->body;
  KExpr *plane = sk_add(s, sk_mul(s, nv, sk_dim(s, xr, 1)), cv);
  KExpr *xbase = sk_mul(s, plane, sk_mul(s, H, W));
  if (grad) {
    Vec *z = &sk_loop(s, blk, "z", sk_mul(s, H, W), false, &zv)->body;
    sk_st(s, z, Y, sk_add(s, xbase, zv), sk_f(s, kir_buf(s->p, X)->dtype, 0));
  }
  blk = &sk_loop(s, blk, "i", HO, false, &iv)->body;
  blk = &sk_loop(s, blk, "j", WO, false, &jv)->body;
  KExpr *yo = sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, plane, HO), iv), WO), jv);
  int ntap = (int)(ks[0] * ks[1]);
  KExpr *off[SK_MAX_TAPS];
  for (int t = 0; t < ntap; t++) {
    KExpr *h = sk_add(s, sk_mul(s, iv, sk_i(s, st[0])), sk_i(s, t / ks[1]));
    KExpr *w = sk_add(s, sk_mul(s, jv, sk_i(s, st[1])), sk_i(s, t % ks[1]));
    off[t] = sk_add(s, xbase, sk_add(s, sk_mul(s, h, W), w));
  }
  pool_taps(s, blk, off, ntap, mx, grad, X, yo);
  return true;
}
