// schedule_gpu_gemm.c — the gpu recipes of the GEMM-shaped ops (matmul and
// its epilogue kinds, conv2d(_bias), conv2d_grad_input, conv2d_grad_weight):
// one tiled GEMM written in kernel IR, with shared buffers and barriers, so
// the CUDA printer only prints it. The convolutions are implicit GEMMs: the
// im2col matrix is never stored, its elements are read from the image (0 at
// padding) while a tile is staged.
//
// A launch computes C[M, N] (per batch) in tiles of BM x BN (the Target's
// gemm_tile, 64, along a dim; 16 or 32 along a constant dim that small): one
// block per tile and batch, BM/4 x BN/4 threads (256 for 64 x 64), thread
// (ty, tx) owning the 4 x 4 outputs (ty + r BM/4, tx + c BN/4), so a warp's
// stores and its shared reads of B run along consecutive columns:
//
//   for gb < batches * TM * TN @gpu-block {
//     let tile (tm, tn), the batch's coordinates             (block-level lets)
//     [thread: acc[rc] = -0]                                 (several K segments)
//     for each K segment (serial, the same on every thread) {
//       thread: s[rc] = +0
//       thread: tile 0 of A (BM x BK) and B (BK x BN) into half 0 of the
//               shared tiles, 4 + 4 elements each, the operand's contiguous
//               index fastest (coalesced), 0 outside the matrix or at a
//               padding tap
//       barrier
//       for kt < ceil(len / BK) {
//         thread: [kt + 1 < nt: tile kt + 1 into half (kt + 1) % 2]
//                 c = s[..]; for kk < min(BK, len - kt*BK) { 16 fma on
//                 half kt % 2 }; s[..] = c
//         barrier
//       }
//       [thread: acc[rc] = acc[rc] + s[rc]]
//     }
//     thread: each owned element inside C: the op's store (and epilogue)
//   }
//
// Why this keeps the bits (docs/design/kir.md, kernels/gemm_ref.h): every
// output's K sum is K blocks of at most 512 terms, each an fma chain from +0
// in k order, the block sums added in order from -0. A thread accumulates
// each of its outputs over k strictly in order with one fma per term (the
// guard `kk < len - kt*BK` stops a partial tile, so no extra fma with 0 is
// added), and a K segment is exactly one K block, so each output is the
// interpreter's expression evaluated in the interpreter's order. The tile
// sizes change which thread computes an element, never how.
//
// The running sums `s` and the block sums `acc` are local buffers (kir.h's
// KBUF_LOCAL: per thread, constant indices rc), so they stay in registers
// across the barriers of the K loop; a thread loop's own locals (the `c` of
// a K tile) end with the loop, the local buffer carries them to the next.
//
// The K segments per op (each one K block of kl_ksum / kl_ksum_add):
//   matmul, conv2d, conv2d_grad_input: the K blocks of K (a constant K up to
//     512 is one block and needs no acc);
//   conv2d_grad_weight: per image n, per pixel chunk, the K blocks of the
//     chunk's pixels (acc starts at -0, or +0 with no pixel at all).
// Split-K (gemm_emit): with fewer tiles x batches than the Target's SMs,
// a block per (K segment, batch, tile) stores the segment's sum into a
// temporary and a second launch adds each output's segments in order from
// acc's start, then stores: the same expression in the same order. A launch
// of still few threads gives each thread 2 x 2 outputs instead of 4 x 4.
// Stores: matmul and conv2d bind the canonical nest's output indices and
// sum variable and run its own tail (epilogue and store, with the output's
// strides), so bias / residual / relu / relu_mask are the lowering's
// expressions. conv2d_grad_input stores dcol(n, g)[r, q] into a temporary
// (pointwise: into dx directly), and a second launch gathers each dx
// element's taps in col2im's order: pixel chunk, then col row r = (ci, a, b)
// ascending, from +0, one add each (the interpreter's scatter, element by
// element). conv2d_grad_weight stores dw[o, r].
#include "schedule_internal.h"

#include "kernels/gemm_ref.h"

#include <math.h>

enum {
  GT_R = 4,          // a thread's outputs per row and column of its tile (2 for a launch of few threads)
  GT_OUT = GT_R * GT_R,
};

// ---- one tiled GEMM ---------------------------------------------------------------------------
typedef struct Gemm Gemm;
struct Gemm {
  Sk *s;
  DType dt;         // the sums' dtype (the output's)
  KExpr *M, *N;     // C's rows and columns (one batch)
  KExpr *batches;   // C matrices
  int64_t BM, BN, BK;   // tile rows, columns, K step
  int64_t R;            // a thread's outputs per row and column (GT_R, or 2: gemm_emit)
  int64_t TY, TX, T;    // threads down a tile (BM / R), across it (BN / R), in all
  bool a_kfast, b_kfast; // A(row, k) / B(k, col): k is the contiguous index
  bool multi;       // several K segments: block sums in acc
  KExpr *acc_init;  // multi: acc's start (-0)
  // the op's part
  void (*batch)(Gemm *g, Vec *blk, KExpr *bt);                 // block-level lets of batch bt
  Vec *(*segments)(Gemm *g, Vec *blk, KExpr **base, KExpr **len); // the K segment loops
  KExpr *(*ld_a)(Gemm *g, Vec *blk, KExpr *row, KExpr *k, KExpr **ok); // lets into blk; value; *ok
  KExpr *(*ld_b)(Gemm *g, Vec *blk, KExpr *k, KExpr *col, KExpr **ok);
  void (*store)(Gemm *g, Vec *blk, KExpr *row, KExpr *col, KExpr *v);
  void *op;         // the op's data
  int sh_a, sh_b;   // shared buffers: the A and B tiles
  // tensor cores (`precision bf16 | f16`, the Target's gemm_mma): the tiles are 16-bit, each of the
  // NW warps computes a WM x WN part of the tile as MI x NI mma statements (16 x 8 each, kir.h's KMma)
  bool mma;
  DType prec;       // the tiles' dtype (mma)
  int64_t WM, WN, NW, MI, NI;
  int nout;         // a thread's outputs: GT_OUT, or MI NI 4 (mma)
  int loc_s, loc_acc; // local buffers (per thread): the running sums, the block sums
  KExpr *lda, *ldb; // shared row lengths of the tiles (BM + 1, BN + 1: no bank conflicts on stores)
  // split-K (fewer tiles than the Target's SMs): a block per (K segment, batch, tile) stores its
  // segment's sum into part[sg][bt][M][N]; a second launch adds them in order (split_combine)
  bool split;
  KExpr *nseg;      // K segments of an output in all (the op's segments, flattened)
  // the K segment sg's base and length, lets into blk; *live (NULL: always) whether it has terms
  void (*seg_at)(Gemm *g, Vec *blk, KExpr *sg, KExpr **base, KExpr **len, KExpr **live);
  KExpr *sg, *bt;   // split: the block's segment and batch
  int part;
  void (*out)(Gemm *g, Vec *blk, KExpr *row, KExpr *col, KExpr *v); // split: the op's own store
};

static int shared(Sk *s, const char *name, DType dt, int64_t n) {
  KExpr *d = sk_i(s, n);
  int b = sk_temp(s, name, dt, 1, &d);
  kir_buf(s->p, b)->kind = KBUF_SHARED;
  return b;
}

// Per thread, n elements: registers (kir.h's KBUF_LOCAL).
static int local(Sk *s, const char *name, DType dt, int n) {
  KExpr *d = sk_i(s, n);
  int b = sk_temp(s, name, dt, 1, &d);
  kir_buf(s->p, b)->kind = KBUF_LOCAL;
  return b;
}

static KExpr *ceil_div(Sk *s, KExpr *n, KExpr *t) { return sk_div(s, sk_sub(s, sk_add(s, n, t), sk_i(s, 1)), t); }
static KExpr *kmin(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_MIN, a, b); }
static KExpr *kmax(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_MAX, a, b); }

static KStmt *threads(Gemm *g, Vec *blk, KExpr **gt) {
  KStmt *t = sk_loop(g->s, blk, "gt", sk_i(g->s, g->T), true, gt);
  t->map = KMAP_GPU_THREAD;
  return t;
}

// acc or s (local buffer b) of every owned output = v.
static void fill(Gemm *g, Vec *blk, int b, KExpr *v) {
  KExpr *gt;
  Vec *tb = &threads(g, blk, &gt)->body;
  for (int rc = 0; rc < g->nout; rc++) sk_st(g->s, tb, b, sk_i(g->s, rc), v);
}

// One element u of a tile into shared, at the half whose first element is
// h: (row, kk) of A or (kk, col) of B.
static void stage(Gemm *g, Vec *tb, bool is_a, KExpr *gt, int u, KExpr *i0, KExpr *k0, KExpr *kn, KExpr *h) {
  Sk *s = g->s;
  bool kfast = is_a ? g->a_kfast : g->b_kfast;
  int64_t d = is_a ? g->BM : g->BN; // the tile's other extent
  KExpr *kk, *x;
  if (kfast) kk = sk_mod(s, gt, sk_i(s, g->BK)), x = sk_add(s, sk_div(s, gt, sk_i(s, g->BK)), sk_i(s, g->T / g->BK * u));
  else x = sk_mod(s, gt, sk_i(s, d)), kk = sk_add(s, sk_div(s, gt, sk_i(s, d)), sk_i(s, g->T / d * u));
  KExpr *v = sk_let(s, tb, is_a ? "av" : "bv", sk_f(s, g->dt, 0));
  KExpr *at = sk_let(s, tb, is_a ? "ar" : "bc", sk_add(s, i0, x));
  KStmt *in = kir_if(s->p, tb, sk_and(s, sk_lt(s, at, is_a ? g->M : g->N), sk_lt(s, kk, kn)));
  KExpr *ok = NULL, *k = sk_add(s, k0, kk);
  KExpr *e = is_a ? g->ld_a(g, &in->body, at, k, &ok) : g->ld_b(g, &in->body, k, at, &ok);
  Vec *put = ok ? &kir_if(s->p, &in->body, ok)->body : &in->body;
  kir_assign(s->p, put, v->var, kir_cast(s->p, g->dt, e));
  // mma: the 16-bit bits of the value, which operand() has rounded already (exact)
  sk_st(s, tb, is_a ? g->sh_a : g->sh_b, sk_add(s, h, sk_add(s, sk_mul(s, kk, is_a ? g->lda : g->ldb), x)),
        g->mma ? kir_cast(s->p, g->prec, v) : v);
}

// The A and B tiles at k0 (kn terms, kn <= BK) into the shared halves at
// ha and hb, by thread gt.
static void stage_tile(Gemm *g, Vec *tb, KExpr *gt, KExpr *i0, KExpr *j0, KExpr *k0, KExpr *kn, KExpr *ha, KExpr *hb) {
  for (int u = 0; u < g->BM * g->BK / g->T; u++) stage(g, tb, true, gt, u, i0, k0, kn, ha);
  for (int u = 0; u < g->BN * g->BK / g->T; u++) stage(g, tb, false, gt, u, j0, k0, kn, hb);
}

// Thread gt's kn <= BK terms of the tiles in the halves at ha and hb: its
// 16 sums from the local s into lets, one fma each per term, back into s.
static void compute(Gemm *g, Vec *tb, KExpr *gt, KExpr *kn, KExpr *ha, KExpr *hb) {
  Sk *s = g->s;
  KExpr *kk, *acc[GT_OUT], *a[GT_R], *b[GT_R];
  KExpr *ty = sk_let(s, tb, "ty", sk_div(s, gt, sk_i(s, g->TX))), *tx = sk_let(s, tb, "tx", sk_mod(s, gt, sk_i(s, g->TX)));
  int R = (int)g->R;
  for (int rc = 0; rc < R * R; rc++) acc[rc] = sk_let(s, tb, "c", sk_ld(s, g->loc_s, sk_i(s, rc)));
  Vec *kb = &sk_loop(s, tb, "kk", kn, false, &kk)->body;
  KExpr *ra = sk_add(s, ha, sk_mul(s, kk, g->lda)), *rb = sk_add(s, hb, sk_mul(s, kk, g->ldb));
  for (int r = 0; r < R; r++)
    a[r] = sk_let(s, kb, "a", sk_ld(s, g->sh_a, sk_add(s, ra, sk_add(s, ty, sk_i(s, g->TY * r)))));
  for (int c = 0; c < R; c++)
    b[c] = sk_let(s, kb, "b", sk_ld(s, g->sh_b, sk_add(s, rb, sk_add(s, tx, sk_i(s, g->TX * c)))));
  for (int r = 0; r < R; r++)
    for (int c = 0; c < R; c++) {
      KExpr *x = acc[r * R + c];
      kir_assign(s->p, kb, x->var, kir_fma(s->p, a[r], b[c], x));
    }
  for (int rc = 0; rc < R * R; rc++) sk_st(s, tb, g->loc_s, sk_i(s, rc), acc[rc]);
}

// Thread gt's share of its warp's products of one K step (the BK = 16
// terms of the halves at ha and hb; a partial step's missing terms are 0
// in both tiles): MI x NI mma statements on its warp's WM x WN part of the
// tile, fragment (mi, ni) in ss[4 (mi NI + ni) ..]. A(r, k) is at
// ha + k lda + r, B(k, c) at hb + k ldb + c (the k-major tiles).
static void compute_mma(Gemm *g, Vec *tb, KExpr *gt, KExpr *ha, KExpr *hb) {
  Sk *s = g->s;
  int64_t lda, ldb, wcols = g->BN / g->WN;
  kir_eval_i64(g->lda, NULL, &lda), kir_eval_i64(g->ldb, NULL, &ldb);
  KExpr *w = sk_let(s, tb, "wp", sk_div(s, gt, sk_i(s, 32)));
  KExpr *wr = sk_mul(s, sk_div(s, w, sk_i(s, wcols)), sk_i(s, g->WM)), *wc = sk_mul(s, sk_mod(s, w, sk_i(s, wcols)), sk_i(s, g->WN));
  for (int mi = 0; mi < g->MI; mi++)
    for (int ni = 0; ni < g->NI; ni++) {
      KMma m = {.prec = g->prec, .a = g->sh_a, .b = g->sh_b, .ars = 1, .aks = lda, .bks = ldb, .bcs = 1};
      m.oa = sk_add(s, ha, sk_add(s, wr, sk_i(s, 16 * mi)));
      m.ob = sk_add(s, hb, sk_add(s, wc, sk_i(s, 8 * ni)));
      kir_mma(s->p, tb, g->loc_s, 4 * (mi * g->NI + ni), &m);
    }
}

// A K segment's tiles, double-buffered: tile 0 into half 0 and a barrier;
// then per tile kt one thread loop that stages tile kt + 1 (if any) into
// half (kt + 1) % 2 while it computes tile kt from half kt % 2, and one
// barrier. A half is written only after the barrier that ends the last
// reads of it (tile kt - 1's compute) and read only after the barrier that
// ends its writes, so one barrier per tile suffices.
static void k_tiles(Gemm *g, Vec *seg, KExpr *i0, KExpr *j0, KExpr *base, KExpr *len) {
  Sk *s = g->s;
  KExpr *bk = sk_i(s, g->BK), *one = sk_i(s, 1), *two = sk_i(s, 2), *gt, *kt;
  KExpr *sa = sk_i(s, g->BK * (g->BM + 1)), *sb = sk_i(s, g->BK * (g->BN + 1)), *zero = sk_i(s, 0);
  KExpr *nt = sk_let(s, seg, "nt", ceil_div(s, len, bk));
  Vec *tb = &threads(g, seg, &gt)->body;
  stage_tile(g, tb, gt, i0, j0, base, kmin(s, bk, len), zero, zero);
  kir_barrier(s->p, seg);
  Vec *tl = &sk_loop(s, seg, "kt", nt, false, &kt)->body;
  KExpr *kn = sk_let(s, tl, "kn", kmin(s, bk, sk_sub(s, len, sk_mul(s, kt, bk))));
  KExpr *h = sk_let(s, tl, "h", sk_mod(s, kt, two)), *nx = sk_let(s, tl, "nx", sk_add(s, kt, one));
  KExpr *k1 = sk_let(s, tl, "k1", sk_add(s, base, sk_mul(s, nx, bk)));
  KExpr *kn1 = sk_let(s, tl, "kn1", kmin(s, bk, sk_sub(s, len, sk_mul(s, nx, bk))));
  KExpr *h1 = sk_sub(s, one, h);
  tb = &threads(g, tl, &gt)->body;
  Vec *next = &kir_if(s->p, tb, sk_lt(s, nx, nt))->body;
  stage_tile(g, next, gt, i0, j0, k1, kn1, sk_mul(s, h1, sa), sk_mul(s, h1, sb));
  if (g->mma) compute_mma(g, tb, gt, sk_mul(s, h, sa), sk_mul(s, h, sb));
  else compute(g, tb, gt, kn, sk_mul(s, h, sa), sk_mul(s, h, sb));
  kir_barrier(s->p, tl);
}

// The mma path's stores: thread gt (lane l, warp w) owns element i of
// fragment (mi, ni), C(i0 + w's rows + 16 mi + l / 4 + 8 (i / 2),
// j0 + w's columns + 8 ni + 2 (l % 4) + i % 2) (kir.h's KMma).
static void store_mma(Gemm *g, Vec *tb, KExpr *gt, KExpr *i0, KExpr *j0) {
  Sk *s = g->s;
  int64_t wcols = g->BN / g->WN;
  KExpr *l = sk_let(s, tb, "ln", sk_mod(s, gt, sk_i(s, 32))), *w = sk_let(s, tb, "wp", sk_div(s, gt, sk_i(s, 32)));
  KExpr *r0 = sk_let(s, tb, "r0", sk_add(s, i0, sk_add(s, sk_mul(s, sk_div(s, w, sk_i(s, wcols)), sk_i(s, g->WM)), sk_div(s, l, sk_i(s, 4)))));
  KExpr *c0 = sk_let(s, tb, "c0", sk_add(s, j0, sk_add(s, sk_mul(s, sk_mod(s, w, sk_i(s, wcols)), sk_i(s, g->WN)),
                                                       sk_mul(s, sk_mod(s, l, sk_i(s, 4)), sk_i(s, 2)))));
  for (int mi = 0; mi < g->MI; mi++)
    for (int ni = 0; ni < g->NI; ni++)
      for (int i = 0; i < 4; i++) {
        KExpr *row = sk_add(s, r0, sk_i(s, 16 * mi + 8 * (i / 2))), *col = sk_add(s, c0, sk_i(s, 8 * ni + i % 2));
        Vec *in = &kir_if(s->p, tb, sk_and(s, sk_lt(s, row, g->M), sk_lt(s, col, g->N)))->body;
        int rc = 4 * (mi * g->NI + ni) + i;
        g->store(g, in, row, col, sk_ld(s, g->multi ? g->loc_acc : g->loc_s, sk_i(s, rc)));
      }
}

static KStmt *gemm_launch(Gemm *g) {
  Sk *s = g->s;
  KExpr *TM = ceil_div(s, g->M, sk_i(s, g->BM)), *TN = ceil_div(s, g->N, sk_i(s, g->BN)), *gb, *gt;
  Vec one = {0};
  KExpr *tiles = sk_mul(s, TM, TN), *BT = sk_mul(s, g->batches, tiles);
  KStmt *L = sk_loop(s, &one, "gb", g->split ? sk_mul(s, g->nseg, BT) : BT, true, &gb);
  L->map = KMAP_GPU_BLOCK;
  Vec *blk = &L->body;
  KExpr *gi = gb; // the block's (batch, tile)
  if (g->split) g->sg = sk_let(s, blk, "sg", sk_div(s, gb, BT)), gi = sk_let(s, blk, "gi", sk_mod(s, gb, BT));
  g->bt = sk_is_one(g->batches) ? sk_i(s, 0) : sk_let(s, blk, "bt", sk_div(s, gi, tiles));
  g->batch(g, blk, g->bt);
  KExpr *i0 = sk_let(s, blk, "i0", sk_mul(s, sk_mod(s, sk_div(s, gi, TN), TM), sk_i(s, g->BM)));
  KExpr *j0 = sk_let(s, blk, "j0", sk_mul(s, sk_mod(s, gi, TN), sk_i(s, g->BN)));
  DType tile = g->mma ? g->prec : g->dt;
  g->sh_a = shared(s, "as", tile, 2 * g->BK * (g->BM + 1)); // two halves: double-buffered
  g->sh_b = shared(s, "bs", tile, 2 * g->BK * (g->BN + 1));
  g->loc_s = local(s, "ss", g->dt, g->nout);
  g->lda = sk_i(s, g->BM + 1), g->ldb = sk_i(s, g->BN + 1);
  if (g->multi) {
    g->loc_acc = local(s, "acc", g->dt, g->nout);
    fill(g, blk, g->loc_acc, g->acc_init);
  }
  KExpr *base, *len, *live;
  Vec *seg = blk;
  if (g->split) g->seg_at(g, blk, g->sg, &base, &len, &live); // an empty segment stores +0
  else seg = g->segments(g, blk, &base, &len);
  fill(g, seg, g->loc_s, sk_f(s, g->dt, 0));
  k_tiles(g, seg, i0, j0, base, len);
  if (g->multi) {
    Vec *tb = &threads(g, seg, &gt)->body;
    for (int rc = 0; rc < g->nout; rc++) {
      KExpr *at = sk_i(s, rc);
      sk_st(s, tb, g->loc_acc, at, sk_add(s, sk_ld(s, g->loc_acc, at), sk_ld(s, g->loc_s, at)));
    }
  }
  Vec *tb = &threads(g, blk, &gt)->body;
  if (g->mma) {
    store_mma(g, tb, gt, i0, j0);
    return L;
  }
  KExpr *ty = sk_let(s, tb, "ty", sk_div(s, gt, sk_i(s, g->TX))), *tx = sk_let(s, tb, "tx", sk_mod(s, gt, sk_i(s, g->TX)));
  for (int r = 0; r < g->R; r++)
    for (int c = 0; c < g->R; c++) {
      KExpr *row = sk_add(s, i0, sk_add(s, ty, sk_i(s, g->TY * r))), *col = sk_add(s, j0, sk_add(s, tx, sk_i(s, g->TX * c)));
      Vec *in = &kir_if(s->p, tb, sk_and(s, sk_lt(s, row, g->M), sk_lt(s, col, g->N)))->body;
      g->store(g, in, row, col, sk_ld(s, g->multi ? g->loc_acc : g->loc_s, sk_i(s, r * g->R + c)));
    }
  return L;
}

// ---- split-K ----------------------------------------------------------------------------------
// With fewer blocks than the Target's SMs (a weight gradient's few tiles
// over a K of B*H*W terms, a narrow classifier), the tile launch gets a
// block per (K segment, batch, tile): it computes the segment's sum exactly
// as the one-pass form does (an fma chain from +0 in k order) and stores it
// into part[sg][bt][row][col]; a second launch, a thread per output, adds
// the segments' sums in segment order into acc from acc_init and runs the
// op's store and epilogue. That is the one-pass form's expression in its
// order (acc = ((acc_init + s0) + s1) + ..), so the bits are the same.
static void part_store(Gemm *g, Vec *blk, KExpr *row, KExpr *col, KExpr *v) {
  Sk *s = g->s;
  KExpr *mat = sk_add(s, sk_mul(s, g->sg, g->batches), g->bt);
  sk_st(s, blk, g->part, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, mat, g->M), row), g->N), col), v);
}

// for e < batches * M * N { batch bt, row, col; acc = acc_init; for sg < nseg { [live:] acc = acc + part[..] };
// the op's store of acc }: a parallel loop, which the mapping flattens onto blocks.
static void split_combine(Gemm *g) {
  Sk *s = g->s;
  KExpr *e, *sg, *base, *len, *live, *MN = sk_mul(s, g->M, g->N);
  Vec *in = &sk_loop(s, &s->k->body, "e", sk_mul(s, g->batches, MN), true, &e)->body;
  KExpr *bt = sk_is_one(g->batches) ? sk_i(s, 0) : sk_let(s, in, "bt", sk_div(s, e, MN));
  g->batch(g, in, bt);
  KExpr *row = sk_let(s, in, "r", sk_mod(s, sk_div(s, e, g->N), g->M)), *col = sk_let(s, in, "c", sk_mod(s, e, g->N));
  KExpr *acc = sk_let(s, in, "acc", g->acc_init);
  Vec *lb = &sk_loop(s, in, "sg", g->nseg, false, &sg)->body;
  g->seg_at(g, lb, sg, &base, &len, &live);
  if (live) lb = &kir_if(s->p, lb, live)->body;
  KExpr *mat = sk_add(s, sk_mul(s, sg, g->batches), bt);
  KExpr *v = sk_ld(s, g->part, sk_add(s, sk_mul(s, mat, MN), sk_add(s, sk_mul(s, row, g->N), col)));
  kir_assign(s->p, lb, acc->var, sk_add(s, acc, v));
  g->out(g, in, row, col, acc);
}

// The Target's planning size: every argument-bound sym at plan_dim.
static bool at_plan(Sk *s, const KExpr *e, int64_t *v) {
  int n = s->p->syms.len + 1;
  int64_t *args = arena_alloc(s->p->arena, sizeof(int64_t) * (size_t)n), *syms = arena_alloc(s->p->arena, sizeof(int64_t) * (size_t)n);
  for (int i = 0; i < n; i++) args[i] = s->t->plan_dim;
  return kir_bind_syms(s->p, args, syms) && kir_eval_i64(e, syms, v);
}

static bool fma_threads(Gemm *g, int64_t R);

// The tiled GEMM into the kernel: split-K when its tiles x batches are
// fewer than the Target's SMs and it has two K segments or more at the
// planning size (nseg and seg_at set), else the one-pass launch.
static void gemm_emit(Gemm *g) {
  Sk *s = g->s;
  KExpr *TM = ceil_div(s, g->M, sk_i(s, g->BM)), *TN = ceil_div(s, g->N, sk_i(s, g->BN));
  int64_t blocks = 0, nseg = 1;
  bool known = at_plan(s, sk_mul(s, g->batches, sk_mul(s, TM, TN)), &blocks) && (!g->nseg || at_plan(s, g->nseg, &nseg));
  g->split = known && g->nseg && s->t->sms > 0 && blocks < s->t->sms && nseg >= 2;
  // still fewer than 64 threads an SM: 2 x 2 outputs a thread (four times the threads, a quarter of the chain)
  if (known && !g->mma && blocks * (g->split ? nseg : 1) * g->T < (int64_t)s->t->sms * 64) fma_threads(g, 2);
  if (g->split) {
    KExpr *numel = sk_mul(s, sk_mul(s, g->nseg, g->batches), sk_mul(s, g->M, g->N));
    g->part = sk_temp(s, "part", g->dt, 1, &numel);
    g->out = g->store, g->store = part_store, g->multi = false;
  }
  vec_push(s->p->arena, &s->k->body, gemm_launch(g));
  if (g->split) split_combine(g);
}

// K segment sg of kl_ksum's blocking of K terms from base0: its block.
static void k_block_at(Sk *s, Vec *blk, KExpr *K, KExpr *base0, KExpr *sg, KExpr **base, KExpr **len) {
  KExpr *one = sk_i(s, 1), *nb0 = kmax(s, ceil_div(s, K, sk_i(s, MLC_GEMM_KC_MAX)), one);
  KExpr *KC = sk_let(s, blk, "kc", ceil_div(s, K, nb0));
  *base = sk_let(s, blk, "kb0", sk_add(s, base0, sk_mul(s, sg, KC)));
  *len = sk_let(s, blk, "kl", kmin(s, KC, sk_sub(s, K, sk_mul(s, sg, KC))));
}

static KExpr *k_block_count(Sk *s, KExpr *K) {
  KExpr *one = sk_i(s, 1), *nb0 = kmax(s, ceil_div(s, K, sk_i(s, MLC_GEMM_KC_MAX)), one);
  return kmax(s, ceil_div(s, K, kmax(s, ceil_div(s, K, nb0), one)), one);
}

// A tile extent along a dim of n: the Target's, or 16 or 32 for a constant
// n up to that (fewer idle threads on a narrow matrix).
static int64_t tile_for(const KExpr *n, int64_t tile) {
  int64_t v;
  if (!kir_eval_i64(n, NULL, &v)) return tile;
  return v <= 16 && tile > 16 ? 16 : v <= 32 && tile > 32 ? 32 : tile;
}

// The tile for C[M, N] (set g->M and g->N first), and whether the launch
// fits the Target's limits: every stage loop even over the threads, the
// threads and the shared buffers within the block's.
// The mma path (the Target's gemm_mma, an f32 GEMM at `precision bf16 |
// f16`): warps of WM x WN = min(BM, 32) x min(BN, 16) outputs (2 x 2
// fragments, 16 sums a thread: with 32 x 32 warps the sums, the block
// sums and twice the staging per thread took up to 254 registers), BK = 16
// (the instruction's k), tiles that are multiples of 16 x 8. Every shape
// and stride fits (the staging takes any), so only another Target's tile
// or K step, f32 precision, f64 sums or an architecture below sm_80 keep
// the fma path.
static bool gemm_tile_mma(Gemm *g) {
  Sk *s = g->s;
  DType p = s->k->op->precision;
  if (!s->t->gemm_mma || g->dt != DT_F32 || (p != DT_BF16 && p != DT_F16) || g->BK != 16 || g->BM % 16 || g->BN % 8)
    return false;
  g->WM = g->BM < 32 ? g->BM : 32, g->WN = g->BN < 16 ? g->BN : 16;
  g->NW = (g->BM / g->WM) * (g->BN / g->WN), g->MI = g->WM / 16, g->NI = g->WN / 8;
  int64_t t = 32 * g->NW, bytes = 2 * (g->BK * (g->BM + 1) + g->BK * (g->BN + 1)) * 2; // 16-bit, double-buffered
  if (g->BM % g->WM || g->BN % g->WN || g->WN % 8 || 4 * g->MI * g->NI > KIR_LOCAL_MAX / 2 || t > s->t->max_threads ||
      t % g->BM || t % g->BN || g->BM * g->BK % t || g->BN * g->BK % t || bytes > s->t->shared_bytes)
    return false;
  g->mma = true, g->prec = p, g->T = t, g->nout = (int)(4 * g->MI * g->NI);
  return true;
}

// The fma path's threads for R x R outputs each, if the tile allows them.
static bool fma_threads(Gemm *g, int64_t R) {
  Sk *s = g->s;
  int64_t bm = g->BM, bn = g->BN, bk = g->BK, T = (bm / R) * (bn / R);
  if (bm < R || bm % R || bn < R || bn % R || bk < 1) return false;
  int64_t bytes = 2 * (bk * (bm + 1) + bk * (bn + 1)) * (int64_t)dtype_size(g->dt); // double-buffered
  if (!(T <= s->t->max_threads && T % bk == 0 && T % bm == 0 && T % bn == 0 && bm * bk % T == 0 && bn * bk % T == 0 &&
        bytes <= s->t->shared_bytes))
    return false;
  g->R = R, g->TY = bm / R, g->TX = bn / R, g->T = T, g->nout = (int)(R * R);
  return true;
}

static bool gemm_tile(Gemm *g) {
  Sk *s = g->s;
  int64_t bm = tile_for(g->M, s->t->gemm_tile), bn = tile_for(g->N, s->t->gemm_tile), bk = s->t->gemm_ktile;
  g->BM = bm, g->BN = bn, g->BK = bk, g->R = GT_R, g->TY = bm / GT_R, g->TX = bn / GT_R, g->T = g->TY * g->TX;
  g->nout = GT_OUT;
  if (gemm_tile_mma(g)) return true;
  return fma_threads(g, GT_R);
}

static bool gemm_init(Gemm *g, Sk *s, DType dt) {
  *g = (Gemm){.s = s, .dt = dt};
  return dtype_is_float(dt) && dt != DT_BF16 && dt != DT_F16;
}

// The K blocks of a sum of K terms starting at base0 (kl_ksum's blocking):
// one segment (the block itself) when K is a constant up to 512.
static Vec *k_blocks(Sk *s, Vec *blk, KExpr *K, KExpr *base0, KExpr **base, KExpr **len) {
  KExpr *one = sk_i(s, 1), *nb0 = kmax(s, ceil_div(s, K, sk_i(s, MLC_GEMM_KC_MAX)), one);
  KExpr *KC = ceil_div(s, K, nb0), *NB = kmax(s, ceil_div(s, K, kmax(s, KC, one)), one), *kb;
  int64_t nb;
  if (kir_eval_i64(NB, NULL, &nb) && nb == 1) {
    *base = base0, *len = K;
    return blk;
  }
  Vec *body = &sk_loop(s, blk, "kb", NB, false, &kb)->body;
  *base = sk_let(s, body, "kb0", sk_add(s, base0, sk_mul(s, kb, KC)));
  *len = sk_let(s, body, "kl", kmin(s, KC, sk_sub(s, K, sk_mul(s, kb, KC))));
  return body;
}

static bool one_block(Sk *s, KExpr *K) {
  int64_t nb;
  return kir_eval_i64(kmax(s, ceil_div(s, K, sk_i(s, MLC_GEMM_KC_MAX)), sk_i(s, 1)), NULL, &nb) && nb == 1;
}

// A product's operand as the op's precision has it read (kir_lower_nn.c's
// kl_round): round_bf16 / round_f16 of the load, or the load.
static KExpr *operand(Sk *s, KExpr *v) {
  DType p = s->k->op->precision;
  if (p == DT_F32 || v->dtype != DT_F32) return v;
  return kir_un(s->p, p == DT_BF16 ? KU_ROUND_BF16 : KU_ROUND_F16, v);
}

// ---- the canonical nest's tail ----------------------------------------------------------------------
// The canonical matmul / conv2d nest: parallel loops over the output (vars),
// then `let sum; for ..` (the K sum) and the tail: the epilogue and the
// store, reading the output indices and the sum.
typedef struct Tail {
  int nvars, vars[SK_MAX_RANK];
  int sum;          // the K sum's variable
  Vec tail;         // the statements after the sum
} Tail;

static bool canonical_tail(Sk *s, Tail *t, int rank) {
  const Vec *blk = &s->k->body;
  *t = (Tail){0};
  while (blk->len == 1) {
    const KStmt *l = VEC_AT(*blk, KStmt, 0);
    if (l->kind != KS_FOR || !l->parallel || t->nvars == SK_MAX_RANK) break;
    t->vars[t->nvars++] = l->var;
    blk = &l->body;
  }
  if (t->nvars != rank || blk->len < 3) return false;
  const KStmt *let = VEC_AT(*blk, KStmt, 0), *loop = VEC_AT(*blk, KStmt, 1);
  if (let->kind != KS_LET || loop->kind != KS_FOR) return false;
  t->sum = let->var;
  for (int i = 2; i < blk->len; i++) vec_push(s->p->arena, &t->tail, blk->data[i]);
  return true;
}

// Into blk: the output indices and the sum bound to values, then the tail.
static void run_tail(Sk *s, const Tail *t, Vec *blk, KExpr *const *idx, KExpr *v) {
  for (int i = 0; i < t->nvars; i++) kir_let(s->p, blk, t->vars[i], idx[i]);
  kir_let(s->p, blk, t->sum, v);
  for (int i = 0; i < t->tail.len; i++) vec_push(s->p->arena, blk, t->tail.data[i]);
}

// The vars of the old nest become locals of the new body; the rest of the
// kernel's variables stay (the tail uses them), unused ones print nothing.
static void restart_keeping_vars(Sk *s, const Tail *t) {
  s->k->body = (Vec){0};
  for (int i = 0; i < t->nvars; i++) VEC_AT(s->k->vars, KirVar, t->vars[i])->is_loop = false;
}

// ---- matmul -------------------------------------------------------------------------------------------
typedef struct Mm {
  int a, b, ra, rb, ry;
  KExpr *bc[SK_MAX_RANK]; // the batch's output coordinates
  KExpr *oa, *ob;         // its offsets into a and b
  Tail t;
} Mm;

static KExpr *mm_stride(Sk *s, int role, int d) { return kir_op_stride(s->p, s->k->op, role, d); }

static void mm_batch(Gemm *g, Vec *blk, KExpr *bt) {
  Sk *s = g->s;
  Mm *m = g->op;
  int nb = m->ry - 2;
  for (int d = 0; d < nb; d++) {
    KExpr *st = sk_i(s, 1);
    for (int e = d + 1; e < nb; e++) st = sk_mul(s, st, sk_dim(s, 2, e));
    KExpr *v = sk_div(s, bt, st);
    if (d > 0) v = sk_mod(s, v, sk_dim(s, 2, d));
    m->bc[d] = nb == 1 ? bt : sk_let(s, blk, "bi", v);
  }
  KExpr *off[2] = {sk_i(s, 0), sk_i(s, 0)};
  int rank[2] = {m->ra, m->rb};
  for (int o = 0; o < 2; o++)
    for (int j = 0, i = m->ry - rank[o]; j < rank[o] - 2; j++, i++)
      if (!sk_is_one(sk_dim(s, o, j))) off[o] = sk_add(s, off[o], sk_mul(s, m->bc[i], mm_stride(s, o, j)));
  m->oa = off[0], m->ob = off[1];
}

static Vec *mm_segments(Gemm *g, Vec *blk, KExpr **base, KExpr **len) {
  Mm *m = g->op;
  return k_blocks(g->s, blk, sk_dim(g->s, 0, m->ra - 1), sk_i(g->s, 0), base, len);
}

static void mm_seg_at(Gemm *g, Vec *blk, KExpr *sg, KExpr **base, KExpr **len, KExpr **live) {
  Mm *m = g->op;
  *live = NULL;
  k_block_at(g->s, blk, sk_dim(g->s, 0, m->ra - 1), sk_i(g->s, 0), sg, base, len);
}

static KExpr *mm_a(Gemm *g, Vec *blk, KExpr *row, KExpr *k, KExpr **ok) {
  Sk *s = g->s;
  Mm *m = g->op;
  (void)blk, (void)ok;
  KExpr *at = sk_add(s, m->oa, sk_add(s, sk_mul(s, row, mm_stride(s, 0, m->ra - 2)), sk_mul(s, k, mm_stride(s, 0, m->ra - 1))));
  return operand(s, sk_ld(s, m->a, at));
}

static KExpr *mm_b(Gemm *g, Vec *blk, KExpr *k, KExpr *col, KExpr **ok) {
  Sk *s = g->s;
  Mm *m = g->op;
  (void)blk, (void)ok;
  KExpr *at = sk_add(s, m->ob, sk_add(s, sk_mul(s, k, mm_stride(s, 1, m->rb - 2)), sk_mul(s, col, mm_stride(s, 1, m->rb - 1))));
  return operand(s, sk_ld(s, m->b, at));
}

static void mm_store(Gemm *g, Vec *blk, KExpr *row, KExpr *col, KExpr *v) {
  Mm *m = g->op;
  KExpr *idx[SK_MAX_RANK];
  for (int d = 0; d < m->ry - 2; d++) idx[d] = m->bc[d];
  idx[m->ry - 2] = row, idx[m->ry - 1] = col;
  run_tail(g->s, &m->t, blk, idx, v);
}

bool sk_gpu_matmul(Sk *s) {
  const KirOp *op = s->k->op;
  Mm *m = arena_alloc(s->p->arena, sizeof *m);
  *m = (Mm){.a = op->buf[0], .b = op->buf[1], .ra = op->rank[0], .rb = op->rank[1], .ry = op->rank[2]};
  DType dt = kir_buf(s->p, op->buf[2])->dtype;
  Gemm g;
  if (m->ra < 2 || m->rb < 2 || m->ry < 2 || m->ry > SK_MAX_RANK || !gemm_init(&g, s, dt)) return false;
  if (kir_buf(s->p, m->a)->dtype != dt || kir_buf(s->p, m->b)->dtype != dt || !canonical_tail(s, &m->t, m->ry))
    return false;
  KExpr *K = sk_dim(s, 0, m->ra - 1), *batches = sk_i(s, 1);
  for (int d = 0; d < m->ry - 2; d++) batches = sk_mul(s, batches, sk_dim(s, 2, d));
  g.M = sk_dim(s, 2, m->ry - 2), g.N = sk_dim(s, 2, m->ry - 1), g.batches = batches;
  if (!gemm_tile(&g)) return false;
  g.a_kfast = sk_is_one(mm_stride(s, 0, m->ra - 1)) || !sk_is_one(mm_stride(s, 0, m->ra - 2));
  g.b_kfast = !sk_is_one(mm_stride(s, 1, m->rb - 1)) && sk_is_one(mm_stride(s, 1, m->rb - 2));
  g.multi = !one_block(s, K), g.acc_init = sk_f(s, dt, -0.0);
  g.batch = mm_batch, g.segments = mm_segments, g.ld_a = mm_a, g.ld_b = mm_b, g.store = mm_store, g.op = m;
  g.nseg = k_block_count(s, K), g.seg_at = mm_seg_at;
  restart_keeping_vars(s, &m->t);
  gemm_emit(&g);
  return true;
}

// ---- convolutions -------------------------------------------------------------------------------------
// NCHW: x[N, C, H, W], w[O, C/g, KH, KW], y[N, O, HO, WO]; attributes
// stride, padding, dilation (h, w), groups.
typedef struct Conv {
  int x, w, y;
  KExpr *N, *C, *H, *W, *O, *Cg, *KH, *KW, *HO, *WO, *Og, *KHW, *Kc, *P;
  const int64_t *st, *pd, *dl;
  int64_t g;
  KExpr *n, *grp;   // the batch's image and group
  KExpr *img;       // grad_weight: the segment's image
  int dcol;         // grad_input: the temporary dcol[N, G, Kc, P] (-1: pointwise)
  Tail t;
} Conv;

static bool conv(Sk *s, int xr, int wr, int yr, Conv *q) {
  const KirOp *op = s->k->op;
  for (int i = 0; i < 3; i++)
    if (op->rank[i] != 4) return false;
  *q = (Conv){.x = op->buf[xr], .w = op->buf[wr], .y = op->buf[yr], .st = op->attr, .pd = op->attr + 2,
              .dl = op->attr + 4, .g = op->attr[6], .dcol = -1};
  q->N = sk_dim(s, xr, 0), q->C = sk_dim(s, xr, 1), q->H = sk_dim(s, xr, 2), q->W = sk_dim(s, xr, 3);
  q->O = sk_dim(s, wr, 0), q->Cg = sk_dim(s, wr, 1), q->KH = sk_dim(s, wr, 2), q->KW = sk_dim(s, wr, 3);
  q->HO = sk_dim(s, yr, 2), q->WO = sk_dim(s, yr, 3);
  q->Og = sk_div(s, q->O, sk_i(s, q->g > 0 ? q->g : 1)), q->KHW = sk_mul(s, q->KH, q->KW);
  q->Kc = sk_mul(s, q->Cg, q->KHW), q->P = sk_mul(s, q->HO, q->WO);
  DType dt = kir_buf(s->p, q->x)->dtype;
  return q->g >= 1 && kir_buf(s->p, q->w)->dtype == dt && kir_buf(s->p, q->y)->dtype == dt;
}

static KExpr *at4(Sk *s, KExpr *d1, KExpr *d2, KExpr *d3, KExpr *a, KExpr *b, KExpr *c, KExpr *e) {
  return sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, a, d1), b), d2), c), d3), e);
}

static KExpr *y_at(Sk *s, const Conv *q, KExpr *n, KExpr *o, KExpr *pix) {
  return sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, n, q->O), o), q->P), pix);
}

// x at col(n, group)[r, pix]: tap r = (ci, a, b) of output pixel pix; *ok
// when it is inside the image (the value is 0 elsewhere).
static KExpr *col_at(Sk *s, const Conv *q, Vec *blk, KExpr *n, KExpr *r, KExpr *pix, KExpr **ok) {
  KExpr *ci = sk_div(s, r, q->KHW), *a = sk_mod(s, sk_div(s, r, q->KW), q->KH), *b = sk_mod(s, r, q->KW);
  KExpr *i = sk_div(s, pix, q->WO), *j = sk_mod(s, pix, q->WO);
  KExpr *h = sk_let(s, blk, "h", sk_add(s, sk_mul(s, i, sk_i(s, q->st[0])), sk_add(s, sk_i(s, -q->pd[0]), sk_mul(s, a, sk_i(s, q->dl[0])))));
  KExpr *w = sk_let(s, blk, "w", sk_add(s, sk_mul(s, j, sk_i(s, q->st[1])), sk_add(s, sk_i(s, -q->pd[1]), sk_mul(s, b, sk_i(s, q->dl[1])))));
  *ok = sk_and(s, sk_in_range(s, h, q->H), sk_in_range(s, w, q->W));
  KExpr *ch = sk_add(s, sk_mul(s, q->grp, q->Cg), ci);
  return operand(s, sk_ld(s, q->x, at4(s, q->C, q->H, q->W, n, ch, h, w)));
}

// batch bt = (image, group)
static void conv_batch(Gemm *g, Vec *blk, KExpr *bt) {
  Sk *s = g->s;
  Conv *q = g->op;
  q->n = q->g == 1 ? bt : sk_let(s, blk, "n", sk_div(s, bt, sk_i(s, q->g)));
  q->grp = q->g == 1 ? sk_i(s, 0) : sk_let(s, blk, "grp", sk_mod(s, bt, sk_i(s, q->g)));
}

static void grp_batch(Gemm *g, Vec *blk, KExpr *bt) {
  Conv *q = g->op;
  (void)blk;
  q->grp = bt;
}

// conv2d: C = w(group) [Og, Kc] @ col(n, group) [Kc, P]
static Vec *fwd_segments(Gemm *g, Vec *blk, KExpr **base, KExpr **len) {
  Conv *q = g->op;
  return k_blocks(g->s, blk, q->Kc, sk_i(g->s, 0), base, len);
}

static void fwd_seg_at(Gemm *g, Vec *blk, KExpr *sg, KExpr **base, KExpr **len, KExpr **live) {
  Conv *q = g->op;
  *live = NULL;
  k_block_at(g->s, blk, q->Kc, sk_i(g->s, 0), sg, base, len);
}

static KExpr *fwd_a(Gemm *g, Vec *blk, KExpr *row, KExpr *k, KExpr **ok) {
  Sk *s = g->s;
  Conv *q = g->op;
  (void)blk, (void)ok;
  return operand(s, sk_ld(s, q->w, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, q->grp, q->Og), row), q->Kc), k)));
}

static KExpr *fwd_b(Gemm *g, Vec *blk, KExpr *k, KExpr *col, KExpr **ok) {
  Conv *q = g->op;
  return col_at(g->s, q, blk, q->n, k, col, ok);
}

static void fwd_store(Gemm *g, Vec *blk, KExpr *row, KExpr *col, KExpr *v) {
  Sk *s = g->s;
  Conv *q = g->op;
  KExpr *idx[4] = {q->n, sk_add(s, sk_mul(s, q->grp, q->Og), row), sk_div(s, col, q->WO), sk_mod(s, col, q->WO)};
  run_tail(s, &q->t, blk, idx, v);
}

bool sk_gpu_conv2d(Sk *s) {
  Conv *q = arena_alloc(s->p->arena, sizeof *q);
  Gemm g;
  if (!conv(s, 0, 1, 2, q) || !gemm_init(&g, s, kir_buf(s->p, q->y)->dtype) || !canonical_tail(s, &q->t, 4)) return false;
  g.M = q->Og, g.N = q->P, g.batches = sk_mul(s, q->N, sk_i(s, q->g));
  if (!gemm_tile(&g)) return false;
  g.a_kfast = true, g.b_kfast = false;
  g.multi = !one_block(s, q->Kc), g.acc_init = sk_f(s, g.dt, -0.0);
  g.batch = conv_batch, g.segments = fwd_segments, g.ld_a = fwd_a, g.ld_b = fwd_b, g.store = fwd_store, g.op = q;
  g.nseg = k_block_count(s, q->Kc), g.seg_at = fwd_seg_at;
  restart_keeping_vars(s, &q->t);
  gemm_emit(&g);
  return true;
}

// conv2d_grad_input: dcol(n, group) [Kc, P] = w(group)^T [Kc, Og] @ dy(n, group) [Og, P]
static Vec *gin_segments(Gemm *g, Vec *blk, KExpr **base, KExpr **len) {
  Conv *q = g->op;
  return k_blocks(g->s, blk, q->Og, sk_i(g->s, 0), base, len);
}

static void gin_seg_at(Gemm *g, Vec *blk, KExpr *sg, KExpr **base, KExpr **len, KExpr **live) {
  Conv *q = g->op;
  *live = NULL;
  k_block_at(g->s, blk, q->Og, sk_i(g->s, 0), sg, base, len);
}

static KExpr *gin_a(Gemm *g, Vec *blk, KExpr *row, KExpr *k, KExpr **ok) {
  Sk *s = g->s;
  Conv *q = g->op;
  (void)blk, (void)ok;
  return operand(s, sk_ld(s, q->w, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, q->grp, q->Og), k), q->Kc), row)));
}

static KExpr *gin_b(Gemm *g, Vec *blk, KExpr *k, KExpr *col, KExpr **ok) {
  Sk *s = g->s;
  Conv *q = g->op;
  (void)blk, (void)ok;
  return operand(s, sk_ld(s, q->y, y_at(s, q, q->n, sk_add(s, sk_mul(s, q->grp, q->Og), k), col)));
}

// dcol[((n*G + group)*Kc + r)*P + q], or dx[n, group*Cg + r, q] (pointwise: the same index)
static void gin_store(Gemm *g, Vec *blk, KExpr *row, KExpr *col, KExpr *v) {
  Sk *s = g->s;
  Conv *q = g->op;
  KExpr *bt = sk_add(s, sk_mul(s, q->n, sk_i(s, q->g)), q->grp);
  sk_st(s, blk, q->dcol >= 0 ? q->dcol : q->x, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, bt, q->Kc), row), q->P), col), v);
}

static bool pointwise(const Conv *q) {
  int64_t kh, kw;
  return kir_eval_i64(q->KH, NULL, &kh) && kir_eval_i64(q->KW, NULL, &kw) && kh == 1 && kw == 1 && q->st[0] == 1 &&
         q->st[1] == 1 && q->pd[0] == 0 && q->pd[1] == 0;
}

// The library's pixel chunk: QC pixels, NQ chunks (mlc_conv_qchunk).
static void conv_chunks(Sk *s, const Conv *q, KExpr **QC, KExpr **NQ) {
  KExpr *one = sk_i(s, 1);
  KExpr *q0 = kmax(s, sk_i(s, 64), sk_div(s, sk_i(s, MLC_CONV_QCHUNK_FLOATS), kmax(s, q->Kc, one)));
  KExpr *nq = ceil_div(s, q->P, q0);
  *QC = kmax(s, sk_div(s, sk_sub(s, sk_add(s, q->P, nq), one), kmax(s, nq, one)), one);
  *NQ = ceil_div(s, q->P, *QC);
}

// dx[n, c, h, w] = +0, then + dcol at each tap (a, b ascending: col2im's
// order, kernels/gemm_ref.h) whose output pixel (i, j) exists.
static void gin_gather(Sk *s, Conv *q) {
  DType dt = kir_buf(s->p, q->x)->dtype;
  KExpr *n, *c, *h, *w, *ai, *bi;
  Vec *in = &sk_loop(s, &s->k->body, "n", q->N, true, &n)->body;
  in = &sk_loop(s, in, "c", q->C, true, &c)->body;
  in = &sk_loop(s, in, "h", q->H, true, &h)->body;
  in = &sk_loop(s, in, "w", q->W, true, &w)->body;
  KExpr *acc = sk_let(s, in, "acc", sk_f(s, dt, 0));
  KExpr *grp = sk_div(s, c, q->Cg), *ci = sk_mod(s, c, q->Cg);
  KExpr *plane = sk_mul(s, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, n, sk_i(s, q->g)), grp), q->Kc), sk_mul(s, ci, q->KHW)), q->P);
  Vec *ab = &sk_loop(s, in, "a", q->KH, false, &ai)->body;
  Vec *bb = &sk_loop(s, ab, "b", q->KW, false, &bi)->body;
  KExpr *ih = sk_let(s, bb, "ih", sk_sub(s, sk_add(s, h, sk_i(s, q->pd[0])), sk_mul(s, ai, sk_i(s, q->dl[0]))));
  KExpr *iw = sk_let(s, bb, "iw", sk_sub(s, sk_add(s, w, sk_i(s, q->pd[1])), sk_mul(s, bi, sk_i(s, q->dl[1]))));
  KExpr *zero = sk_i(s, 0), *sh = sk_i(s, q->st[0]), *sw = sk_i(s, q->st[1]);
  KExpr *okh = sk_and(s, kir_bin(s->p, KB_GE, ih, zero), kir_bin(s->p, KB_EQ, sk_mod(s, ih, sh), zero));
  KExpr *okw = sk_and(s, kir_bin(s->p, KB_GE, iw, zero), kir_bin(s->p, KB_EQ, sk_mod(s, iw, sw), zero));
  Vec *t1 = &kir_if(s->p, bb, sk_and(s, okh, okw))->body;
  KExpr *i = sk_let(s, t1, "i", sk_div(s, ih, sh)), *j = sk_let(s, t1, "j", sk_div(s, iw, sw));
  KExpr *ok = sk_and(s, sk_lt(s, i, q->HO), sk_lt(s, j, q->WO));
  KExpr *pix = sk_add(s, sk_mul(s, i, q->WO), j);
  Vec *t2 = &kir_if(s->p, t1, ok)->body;
  KExpr *r = sk_add(s, sk_mul(s, ai, q->KW), bi);
  KExpr *v = sk_ld(s, q->dcol, sk_add(s, plane, sk_add(s, sk_mul(s, r, q->P), pix)));
  kir_assign(s->p, t2, acc->var, sk_add(s, acc, v));
  sk_st(s, in, q->x, at4(s, q->C, q->H, q->W, n, c, h, w), acc);
}

bool sk_gpu_conv2d_grad_input(Sk *s) {
  Conv *q = arena_alloc(s->p->arena, sizeof *q);
  Gemm g;
  if (!conv(s, 2, 1, 0, q) || !gemm_init(&g, s, kir_buf(s->p, q->x)->dtype)) return false;
  g.M = q->Kc, g.N = q->P, g.batches = sk_mul(s, q->N, sk_i(s, q->g));
  if (!gemm_tile(&g)) return false;
  g.a_kfast = false, g.b_kfast = false;
  g.multi = !one_block(s, q->Og), g.acc_init = sk_f(s, g.dt, -0.0);
  g.batch = conv_batch, g.segments = gin_segments, g.ld_a = gin_a, g.ld_b = gin_b, g.store = gin_store, g.op = q;
  sk_restart(s);
  if (!pointwise(q)) {
    KExpr *numel = sk_mul(s, sk_mul(s, g.batches, q->Kc), q->P);
    q->dcol = sk_temp(s, "dcol", g.dt, 1, &numel);
  }
  g.nseg = k_block_count(s, q->Og), g.seg_at = gin_seg_at;
  gemm_emit(&g);
  if (q->dcol >= 0) gin_gather(s, q);
  return true;
}

// conv2d_grad_weight: dw(group) [Og, Kc] = the sum over images n and their
// pixel chunks of dy(n, group) [Og, chunk] @ col(n, group)^T [chunk, Kc]
static Vec *gw_segments(Gemm *g, Vec *blk, KExpr **base, KExpr **len) {
  Sk *s = g->s;
  Conv *q = g->op;
  KExpr *QC, *NQ, *qc, *q0 = sk_i(s, 0), *nq = q->P;
  Vec *in = &sk_loop(s, blk, "n", q->N, false, &q->img)->body;
  conv_chunks(s, q, &QC, &NQ);
  int64_t c;
  if (!kir_eval_i64(NQ, NULL, &c) || c != 1) {
    in = &sk_loop(s, in, "qc", NQ, false, &qc)->body;
    q0 = sk_let(s, in, "q0", sk_mul(s, qc, QC));
    nq = sk_let(s, in, "nq", kmin(s, QC, sk_sub(s, q->P, q0)));
  }
  // kl_ksum_add: the chunk's K blocks, each added into acc (even a single one)
  KExpr *one = sk_i(s, 1), *nb0 = kmax(s, ceil_div(s, nq, sk_i(s, MLC_GEMM_KC_MAX)), one);
  KExpr *KC = ceil_div(s, nq, nb0), *NB = kmax(s, ceil_div(s, nq, kmax(s, KC, one)), one), *kb;
  int64_t nb;
  if (kir_eval_i64(NB, NULL, &nb) && nb == 1) {
    *base = q0, *len = nq;
    return in;
  }
  in = &sk_loop(s, in, "kb", NB, false, &kb)->body;
  *base = sk_let(s, in, "kb0", sk_add(s, q0, sk_mul(s, kb, KC)));
  *len = sk_let(s, in, "kl", kmin(s, KC, sk_sub(s, nq, sk_mul(s, kb, KC))));
  return in;
}

// The most K blocks a pixel chunk has (the full chunk's: a shorter one has
// as many or fewer).
static KExpr *gw_chunk_blocks(Sk *s, KExpr *QC) {
  return kmax(s, ceil_div(s, QC, sk_i(s, MLC_GEMM_KC_MAX)), sk_i(s, 1));
}

// Segment sg = (image, pixel chunk, K block of the chunk), the K block
// fastest, each chunk given gw_chunk_blocks slots: a slot past its chunk's
// blocks has no terms (*live), so the combine skips it as gw_segments
// has no such block.
static void gw_seg_at(Gemm *g, Vec *blk, KExpr *sg, KExpr **base, KExpr **len, KExpr **live) {
  Sk *s = g->s;
  Conv *q = g->op;
  KExpr *QC, *NQ, *one = sk_i(s, 1);
  conv_chunks(s, q, &QC, &NQ);
  KExpr *nbq = gw_chunk_blocks(s, QC);
  q->img = sk_let(s, blk, "n", sk_div(s, sg, sk_mul(s, NQ, nbq)));
  KExpr *q0 = sk_let(s, blk, "q0", sk_mul(s, sk_mod(s, sk_div(s, sg, nbq), NQ), QC));
  KExpr *nq = sk_let(s, blk, "nq", kmin(s, QC, sk_sub(s, q->P, q0)));
  KExpr *kb = sk_mod(s, sg, nbq), *KC = sk_let(s, blk, "kc", ceil_div(s, nq, kmax(s, ceil_div(s, nq, sk_i(s, MLC_GEMM_KC_MAX)), one)));
  *base = sk_let(s, blk, "kb0", sk_add(s, q0, sk_mul(s, kb, KC)));
  *len = sk_let(s, blk, "kl", kmax(s, sk_i(s, 0), kmin(s, KC, sk_sub(s, nq, sk_mul(s, kb, KC)))));
  int64_t c;
  *live = kir_eval_i64(nbq, NULL, &c) && c == 1 ? NULL : kir_bin(s->p, KB_GT, *len, sk_i(s, 0));
}

static KExpr *gw_a(Gemm *g, Vec *blk, KExpr *row, KExpr *k, KExpr **ok) {
  Sk *s = g->s;
  Conv *q = g->op;
  (void)blk, (void)ok;
  return operand(s, sk_ld(s, q->y, y_at(s, q, q->img, sk_add(s, sk_mul(s, q->grp, q->Og), row), k)));
}

static KExpr *gw_b(Gemm *g, Vec *blk, KExpr *k, KExpr *col, KExpr **ok) {
  Conv *q = g->op;
  return col_at(g->s, q, blk, q->img, col, k, ok);
}

static void gw_store(Gemm *g, Vec *blk, KExpr *row, KExpr *col, KExpr *v) {
  Sk *s = g->s;
  Conv *q = g->op;
  sk_st(s, blk, q->w, sk_add(s, sk_mul(s, sk_add(s, sk_mul(s, q->grp, q->Og), row), q->Kc), col), v);
}

bool sk_gpu_conv2d_grad_weight(Sk *s) {
  Conv *q = arena_alloc(s->p->arena, sizeof *q);
  Gemm g;
  if (!conv(s, 1, 2, 0, q) || !gemm_init(&g, s, kir_buf(s->p, q->w)->dtype)) return false;
  g.M = q->Og, g.N = q->Kc, g.batches = sk_i(s, q->g);
  if (!gemm_tile(&g)) return false;
  g.a_kfast = true, g.b_kfast = true;
  // no pixel at all: the library writes 0; else the first chain is C itself (-0 + s = s)
  KExpr *none = kir_bin(s->p, KB_EQ, sk_mul(s, q->N, q->P), sk_i(s, 0));
  g.multi = true, g.acc_init = kir_select(s->p, none, sk_f(s, g.dt, 0), sk_f(s, g.dt, -0.0));
  g.batch = grp_batch, g.segments = gw_segments, g.ld_a = gw_a, g.ld_b = gw_b, g.store = gw_store, g.op = q;
  KExpr *QC, *NQ;
  conv_chunks(s, q, &QC, &NQ);
  g.nseg = sk_mul(s, sk_mul(s, q->N, NQ), gw_chunk_blocks(s, QC)), g.seg_at = gw_seg_at;
  sk_restart(s);
  gemm_emit(&g);
  return true;
}
