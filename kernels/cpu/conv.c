// conv.c — NCHW convolution on top of the blocked GEMM (gemm_region):
// forward, input gradient and weight gradient, for any stride, padding,
// dilation and groups, with the reference interpreter's semantics
// (compiler/graph/interp_nn.c; mlc_kernels.h repeats the formula).
//
// Per image n and group g, with Kc = C/G*KH*KW and P = HO*WO output pixels,
// col [Kc, P] is the im2col matrix: col[(c*KH + a)*KW + b, i*WO + j] =
// x[n, g*C/G + c, i*sh - ph + a*dh, j*sw - pw + b*dw] (zero outside x):
//   forward      y[n,g]  [O/G, P]  = w[g] [O/G, Kc] @ col [Kc, P]       (+ bias, relu)
//   grad_input   dcol    [Kc, P]   = w[g]^T [Kc, O/G] @ dy[n,g] [O/G, P]; dx += col2im(dcol)
//   grad_weight  dw[g]^T [Kc, O/G] = sum over n of col [Kc, P] @ dy[n,g]^T [P, O/G]
// col is built per thread in chunks of at most MLC_CONV_QCHUNK_FLOATS / Kc pixels
// (a function of the geometry alone), so it stays in L2 and no call
// allocates more than a chunk. A 1x1, stride-1, unpadded convolution reads
// x in place (col == x[n, g]).
//
// Threads: forward splits (image, group, pixel chunk), grad_input (image,
// group) (its col2im adds overlapping windows, in a fixed order within the
// task), grad_weight the rows or columns of dw[g]^T; the batch sum of
// grad_weight runs in image order inside every task. Nothing reduced is
// split, so results do not depend on the thread count.
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../gemm_ref.h"
#include "conv_internal.h"
#include "conv_winograd.h"
#include "pool_internal.h"
#include "gemm_internal.h"
#include "gemv.h"
#include "mlc_rt.h"


static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t out_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  int64_t num = in + 2 * p - d * (k - 1) - 1;
  return num < 0 || s < 1 ? -1 : num / s + 1;
}

int64_t mlc_conv_out_h(const int64_t *g) {
  return out_extent(g[MLC_CONV_H], g[MLC_CONV_KH], g[MLC_CONV_SH], g[MLC_CONV_PH], g[MLC_CONV_DH]);
}

int64_t mlc_conv_out_w(const int64_t *g) {
  return out_extent(g[MLC_CONV_W], g[MLC_CONV_KW], g[MLC_CONV_SW], g[MLC_CONV_PW], g[MLC_CONV_DW]);
}

static bool conv_of(const int64_t *g, Conv *k) {
  *k = (Conv){.n = g[MLC_CONV_N], .c = g[MLC_CONV_C], .h = g[MLC_CONV_H], .w = g[MLC_CONV_W],
              .o = g[MLC_CONV_O], .kh = g[MLC_CONV_KH], .kw = g[MLC_CONV_KW],
              .sh = g[MLC_CONV_SH], .sw = g[MLC_CONV_SW], .ph = g[MLC_CONV_PH],
              .pw = g[MLC_CONV_PW], .dh = g[MLC_CONV_DH], .dw = g[MLC_CONV_DW], .g = g[MLC_CONV_G]};
  k->ho = mlc_conv_out_h(g), k->wo = mlc_conv_out_w(g);
  if (k->ho < 0 || k->wo < 0 || k->g < 1 || k->c % k->g || k->o % k->g) return false;
  k->cg = k->c / k->g, k->og = k->o / k->g, k->kc = k->cg * k->kh * k->kw, k->p = k->ho * k->wo;
  k->qchunk = mlc_conv_qchunk(k->kc, k->p); // kernels/gemm_ref.h: the order depends on it
  return true;
}

// col == x[n, g]: no window, no stride, no padding.
static bool pointwise(const Conv *k) {
  return k->kh == 1 && k->kw == 1 && k->sh == 1 && k->sw == 1 && k->ph == 0 && k->pw == 0;
}

// The narrow-group passes (conv_narrow_avx512.c) where they win, by the
// product of channels per group in and out (batch 64, 1 thread, thread
// CPU time, against the paths they replace; docs/design/kernels.md):
// depthwise 3x3 on 32 x 32 forward 3.5 -> 1.5 ms, grad_input 5.6 -> 2.9,
// grad_weight 26.1 -> 1.5; 2 x 2 channels per group win all three passes,
// 4 x 4 grad_input and grad_weight (forward 0.94x), 8 x 8 and 4 x 8 none
// (forward 0.43-0.58x). The forward and grad_input need AVX-512;
// grad_weight runs on any CPU (conv_narrow.c). MLC_CONV_NARROW=0 turns
// them off (measurements).
enum { NARROW_FWD, NARROW_GIN, NARROW_GW };
static bool narrow_wins(const Conv *k, int pass) {
  static _Atomic int on = -1; // read once; every thread reads the same value
  if (on < 0) {
    const char *e = getenv("MLC_CONV_NARROW");
    on = !(e && !strcmp(e, "0"));
  }
  if (!on || !conv_narrow_geometry_ok(k) || k->cg * k->og > (pass == NARROW_FWD ? 8 : 16)) return false;
#if defined(__x86_64__) || defined(__i386__)
  return pass == NARROW_GW || conv_narrow_ok(k);
#else
  return pass == NARROW_GW;
#endif
}

// ---- im2col / col2im -----------------------------------------------------------------------------
// Tap (a, b) reads input column j*sw + off of output column j, off =
// b*dw - pw; [*vlo, *vhi) are the output columns where that is inside x
// (independent of the output row, so computed once per col row).
static void valid_cols(const Conv *k, int64_t off, int64_t *vlo, int64_t *vhi) {
  int64_t lo = off >= 0 ? 0 : (-off + k->sw - 1) / k->sw;
  int64_t hi = k->w - off > 0 ? (k->w - off + k->sw - 1) / k->sw : 0;
  *vhi = min64(hi, k->wo);
  *vlo = min64(lo, *vhi);
}

// The loops below are written out (no memcpy/memset): their runs are one
// output row long (14 floats for fashion_cnn), where a libc call per run
// cost more than the copy. GCC would turn them back into calls.
// The copies are the bulk of im2col: cloned for AVX-512 and AVX2 (wider
// stores), chosen by the loader (ifunc) for the CPU.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define NO_LIBC_LOOPS                                                                    \
  __attribute__((optimize("no-tree-loop-distribute-patterns"),                           \
                 target_clones("avx512f", "avx2", "default")))
#elif defined(__GNUC__) && !defined(__clang__)
#define NO_LIBC_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_LIBC_LOOPS
#endif

// col_row when both strides are 1 and WO == W (a "same" convolution): then
// col[r, q] = x[q + shift] for every valid q, so one long loop per row of
// col replaces one per output row. Gather: copy, then zero the positions
// outside the input (rows above/below, |off| columns at each side). col2im:
// zero those positions of the row first (it is scratch), then add the whole
// run (the zeros land on neighbouring columns and change nothing but the
// sign of a zero). The run is clipped to the plane; what the clip skips is
// exactly such a position.
NO_LIBC_LOOPS static void col_row_same(const Conv *k, int64_t a, int64_t b, int64_t q0, int64_t nq,
                                       float *xc, float *row, bool add) {
  int64_t w = k->w, off = b * k->dw - k->pw, dh = a * k->dh - k->ph, vlo, vhi;
  valid_cols(k, off, &vlo, &vhi);
  int64_t shift = dh * w + off, q1 = q0 + nq;
  int64_t ilo = max64(0, -dh), ihi = min64(k->ho, k->h - dh); // output rows inside x
  int64_t qa = max64(q0, ilo * w), qb = max64(min64(q1, ihi * w), qa);
  int64_t ca = min64(max64(qa, -shift), qb), cb = max64(min64(qb, k->h * w - shift), ca);
  if (!add) {
    for (int64_t q = q0; q < ca; q++) row[q - q0] = 0;
    for (int64_t q = ca; q < cb; q++) row[q - q0] = xc[q + shift];
    for (int64_t q = cb; q < q1; q++) row[q - q0] = 0;
  }
  for (int64_t i = qa / w; i * w < qb; i++) { // the columns outside x in each row of the run
    for (int64_t j = max64(0, qa - i * w); j < vlo && i * w + j < qb; j++) row[i * w + j - q0] = 0;
    for (int64_t j = max64(vhi, qa - i * w); j < w && i * w + j < qb; j++) row[i * w + j - q0] = 0;
  }
  if (add)
    for (int64_t q = ca; q < cb; q++) xc[q + shift] += row[q - q0];
}

// One row of col (tap a, b of channel plane xc [H, W]) over pixels [q0, q0+nq):
// gathered into row (add == false), or row added back into xc (col2im).
NO_LIBC_LOOPS static void col_row(const Conv *k, int64_t a, int64_t b, int64_t q0, int64_t nq,
                                  float *xc, float *row, bool add) {
  if (k->sw == 1 && k->sh == 1 && k->wo == k->w) {
    col_row_same(k, a, b, q0, nq, xc, row, add);
    return;
  }
  int64_t off = b * k->dw - k->pw, vlo, vhi;
  valid_cols(k, off, &vlo, &vhi);
  // output row i, columns [j0, j1) of it; one division for the whole row of col
  int64_t i = q0 / k->wo, j0 = q0 - i * k->wo, left = nq;
  for (float *dst = row - j0; left > 0; i++, dst += k->wo, j0 = 0) {
    int64_t j1 = min64(k->wo, j0 + left), h = i * k->sh - k->ph + a * k->dh;
    int64_t lo = min64(max64(j0, vlo), j1), hi = max64(min64(j1, vhi), lo);
    if (h < 0 || h >= k->h) lo = hi = j1;
    const int64_t base = h * k->w + off, sw = k->sw; // dst[j]: output column j of row i
    if (add) {
      for (int64_t j = lo; j < hi; j++) xc[base + j * sw] += dst[j];
    } else {
      for (int64_t j = j0; j < lo; j++) dst[j] = 0;
      if (sw == 1)
        for (int64_t j = lo; j < hi; j++) dst[j] = xc[base + j];
      else
        for (int64_t j = lo; j < hi; j++) dst[j] = xc[base + j * sw];
      for (int64_t j = hi; j < j1; j++) dst[j] = 0;
    }
    left -= j1 - j0;
  }
}

// The row stride of a col chunk of nq pixels: whole 64-byte lines, so
// that every row starts on one and its vector stores split no line.
static int64_t col_ld(int64_t nq) { return (nq + 15) / 16 * 16; }

// col rows [r0, r1) over pixels [q0, q0+nq) of image-group plane xg [C/G, H, W];
// row stride ld >= col_ld(nq). add: col2im instead (xg += the rows).
static void col_rows(const Conv *k, const float *xg, int64_t r0, int64_t r1, int64_t q0, int64_t nq,
                     float *col, int64_t ld, bool add) {
#if defined(__x86_64__) || defined(__i386__)
  if (conv_col_rows_avx512(k, (float *)xg, r0, r1, q0, nq, col, ld, add)) return;
#endif
  for (int64_t r = r0; r < r1; r++) {
    int64_t c = r / (k->kh * k->kw), a = r / k->kw % k->kh, b = r % k->kw;
    col_row(k, a, b, q0, nq, (float *)xg + c * k->h * k->w, col + (r - r0) * ld, add);
  }
}

// ---- tasks ---------------------------------------------------------------------------------------
typedef struct ConvJob {
  Conv k;
  uint32_t flags;
  const float *x, *w, *dy, *bias;
  float *out;
  float *pooled;           // forward: the 2 x 2 max pool of out, or NULL
  uint8_t *pick;           // forward with pooled: the pool's picks, or NULL
  bool skip_out;           // forward with pooled: out is NULL, whole planes go through scratch
  float *db;               // grad_weight: the bias gradient (sum of dy), or NULL
  const float *dyp, *px, *aux; // grad_weight_pool: dy = max_pool2d_grad(dyp, px, aux), built per image
  const uint8_t *rpick;    // grad_weight_pick: dy = max_pool2d_grad_pick(dyp, rpick, pmask) instead
  bool pmask;
  int64_t nq, qc;          // forward: pixel chunks per (image, group), pixels per chunk
  int64_t nsub, sub;       // forward: pieces per chunk, pixels per piece
  const float *wlanes;     // forward: w packed for conv_lanes_fwd; grad_input: its wt or narrow tables; or NULL
  bool by_rows;            // grad_weight: split rows of dw[g]^T (else columns)
  bool lanes;              // grad_weight: conv_lanes_grad_weight (rows)
  bool narrow;             // conv_narrow_avx512.c's pass (narrow_wins)
  int64_t step, per_group; // grad_weight: rows (or columns) per task, tasks per group
  atomic_int failed;
} ConvJob;

static const float *xplane(const ConvJob *j, int64_t n, int64_t g) {
  return j->x + (n * j->k.c + g * j->k.cg) * j->k.h * j->k.w;
}

// The rounding bits of a conv's flags, which its GEMMs apply.
static uint32_t round_bits(const ConvJob *j) { return j->flags & (MLC_GEMM_BF16 | MLC_GEMM_F16); }

// y[n, g, :, q0:q0+nq] = w[g] @ col(q0..), yg pointing at y[n, g*O/G, 0]
// (row stride P).
static int fwd_chunk(const ConvJob *j, int64_t n, int64_t g, int64_t q0, int64_t nq, float *yg) {
  const Conv *k = &j->k;
  Gemm gm = {.flags = (j->bias ? MLC_GEMM_BIAS_ROW : 0) | (j->flags & MLC_CONV_RELU ? MLC_GEMM_RELU : 0) |
                      round_bits(j),
             .m = k->og, .n = nq, .k = k->kc, .alpha = 1, .beta = 0,
             .a = j->w + g * k->og * k->kc, .rsa = k->kc, .csa = 1, .csb = 1,
             .c = yg + q0, .ldc = k->p,
             .bias = j->bias ? j->bias + g * k->og : NULL};
  if (pointwise(k)) {
    gm.b = xplane(j, n, g) + q0, gm.rsb = k->p;
  } else {
#if defined(__x86_64__) || defined(__i386__)
    if (j->narrow) return conv_narrow_fwd(k, xplane(j, n, g), gm.a, gm.bias, j->flags, gm.c, q0, nq) ? 0 : -1;
    if (j->wlanes)
      return conv_lanes_fwd(k, xplane(j, n, g), j->wlanes + g * k->kc * ((k->og + 15) / 16 * 16), gm.bias, gm.flags,
                            gm.c, q0, nq) ? 0 : -1;
    if (!round_bits(j) && conv_fwd_avx512(k, xplane(j, n, g), gm.a, gm.bias, gm.flags, gm.c, q0, nq)) return 0;
#endif
    float *col = gemm_scratch(GEMM_SCRATCH_COL, k->kc * col_ld(nq));
    if (!col) return -1;
    col_rows(k, xplane(j, n, g), 0, k->kc, q0, nq, col, col_ld(nq), false);
    gm.b = col, gm.rsb = col_ld(nq);
  }
  return gemm_region(&gm, 0, gm.m, 0, nq);
}

// Task t: piece t % nsub of chunk t / nsub (pieces of `sub` pixels). A
// task that makes whole planes pools them while they are in cache; with
// skip_out they are computed into this thread's scratch and never stored.
static void fwd_task(void *vj, int64_t b, int64_t e) {
  ConvJob *j = vj;
  const Conv *k = &j->k;
  bool whole = j->pooled && j->nq == 1 && j->nsub == 1;
  for (int64_t t = b; t < e; t++) {
    int64_t c = t / j->nsub, ng = c / j->nq, q0 = c % j->nq * j->qc;
    int64_t q1 = min64(q0 + j->qc, k->p), s0 = q0 + t % j->nsub * j->sub;
    int64_t plane0 = ng / k->g * k->o + ng % k->g * k->og;
    float *yg = j->skip_out ? gemm_scratch(GEMM_SCRATCH_PLANES, k->og * k->p) : j->out + plane0 * k->p;
    if (!yg || (s0 < q1 && fwd_chunk(j, ng / k->g, ng % k->g, s0, min64(j->sub, q1 - s0), yg))) {
      atomic_store(&j->failed, 1);
      continue;
    }
    int64_t pp = plane0 * (k->ho / 2) * (k->wo / 2);
    if (whole && j->pick) pool_max2x2_pick_planes(k->og, k->ho, k->wo, yg, j->pooled + pp, j->pick + pp);
    else if (whole) pool_max2x2_planes(k->og, k->ho, k->wo, yg, j->pooled + pp);
  }
}

// dx[n, g] = col2im(w[g]^T @ dy[n, g]), chunk by chunk, the last chunk
// first: each dx element then gets its taps in (a, b) order, as the
// reference's col2im over the whole plane adds them (a later tap reads an
// earlier output pixel: gemm_ref.h), and the lane path computes them.
static int grad_input_task1(const ConvJob *j, int64_t n, int64_t g) {
  const Conv *k = &j->k;
  float *dx = j->out + (n * k->c + g * k->cg) * k->h * k->w;
  Gemm gm = {.flags = round_bits(j), .m = k->kc, .k = k->og, .alpha = 1, .beta = 0, .a = j->w + g * k->og * k->kc,
             .rsa = 1, .csa = k->kc, .rsb = k->p, .csb = 1};
  if (pointwise(k)) {
    gm.n = k->p, gm.b = j->dy + (n * k->o + g * k->og) * k->p, gm.c = dx, gm.ldc = k->p;
    return gemm_region(&gm, 0, gm.m, 0, gm.n);
  }
#if defined(__x86_64__) || defined(__i386__)
  if (j->narrow)
    return conv_narrow_grad_input(k, j->dy + (n * k->o + g * k->og) * k->p, j->wlanes, g, j->flags, dx) ? 0 : -1;
  if (j->wlanes)
    return conv_lanes_grad_input(k, j->dy + (n * k->o + g * k->og) * k->p,
                                 j->wlanes + g * k->kh * k->kw * k->og * ((k->cg + 15) / 16 * 16), round_bits(j), dx)
               ? 0
               : -1;
#endif
  memset(dx, 0, (size_t)(k->cg * k->h * k->w) * sizeof(float));
  for (int64_t q0 = (k->p - 1) / k->qchunk * k->qchunk; q0 >= 0; q0 -= k->qchunk) {
    int64_t nq = min64(k->qchunk, k->p - q0);
    float *dcol = gemm_scratch(GEMM_SCRATCH_COL, k->kc * col_ld(nq));
    if (!dcol) return -1;
    gm.n = nq, gm.b = j->dy + (n * k->o + g * k->og) * k->p + q0, gm.c = dcol, gm.ldc = col_ld(nq);
    if (gemm_region(&gm, 0, gm.m, 0, nq)) return -1;
    col_rows(k, dx, 0, k->kc, q0, nq, dcol, col_ld(nq), true);
  }
  return 0;
}

static void grad_input_task(void *vj, int64_t b, int64_t e) {
  ConvJob *j = vj;
  for (int64_t t = b; t < e; t++)
    if (grad_input_task1(j, t / j->k.g, t % j->k.g)) atomic_store(&j->failed, 1);
}

// dw[g]^T rows [r0, r1) x columns [c0, c1) = sum over images, pixel chunks
// in order, of col[r0:r1] @ dy[n, g]^T; written transposed into dw.
static int grad_weight_rect(const ConvJob *j, int64_t g, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const Conv *k = &j->k;
  float *acc = gemm_scratch(GEMM_SCRATCH_OUT, (r1 - r0) * k->og);
  if (!acc) return -1;
  Gemm gm = {.flags = round_bits(j), .m = r1 - r0, .n = k->og, .alpha = 1, .rsb = 1, .csb = k->p, .c = acc, .ldc = k->og, .csa = 1};
  // The bias gradient of columns [c0, c1): summed by the task of row 0,
  // from the dy chunks it reads anyway, in their order (conv_bias.c).
  double *lanes = j->db && r0 == 0 ? conv_bias_lanes_new(c1 - c0) : NULL;
  if (j->db && r0 == 0 && !lanes) return -1;
  float *dyb = j->dyp ? gemm_scratch(GEMM_SCRATCH_DY, k->og * k->p) : NULL; // columns [c0, c1) of dy[n, g]
  if (j->dyp && !dyb) {
    free(lanes);
    return -1;
  }
  for (int64_t n = 0; n < k->n; n++) {
    if (dyb) { // the pool's gradient of this image's planes of columns [c0, c1)
      int64_t pl = n * k->o + g * k->og + c0, pp = (k->ho / 2) * (k->wo / 2);
      if (j->rpick)
        pool_max2x2_grad_pick_planes(c1 - c0, k->ho, k->wo, j->pmask, j->dyp + pl * pp, j->rpick + pl * pp,
                                     dyb + c0 * k->p);
      else
        pool_max2x2_grad_planes(c1 - c0, k->ho, k->wo, j->dyp + pl * pp, j->px + pl * k->p,
                                j->aux ? j->aux + pl * k->p : NULL, dyb + c0 * k->p);
    }
    for (int64_t q0 = 0; q0 < k->p; q0 += k->qchunk) {
      int64_t nq = min64(k->qchunk, k->p - q0);
      gm.k = nq, gm.beta = n == 0 && q0 == 0 ? 0.0f : 1.0f;
      gm.b = (dyb ? dyb : j->dy + (n * k->o + g * k->og) * k->p) + q0;
      if (pointwise(k)) {
        gm.a = xplane(j, n, g) + r0 * k->p + q0, gm.rsa = k->p;
      } else {
        float *col = gemm_scratch(GEMM_SCRATCH_COL, (r1 - r0) * col_ld(nq));
        if (!col) return -1;
        col_rows(k, xplane(j, n, g), r0, r1, q0, nq, col, col_ld(nq), false);
        gm.a = col, gm.rsa = col_ld(nq);
      }
      if (gemm_region(&gm, 0, gm.m, c0, c1)) {
        free(lanes);
        return -1;
      }
      if (lanes) conv_bias_lanes_add(lanes, gm.b + c0 * k->p, k->p, c1 - c0, q0, nq);
    }
  }
  if (lanes) conv_bias_lanes_fold(lanes, c1 - c0, j->db + g * k->og + c0);
  free(lanes);
  float *dw = j->out + g * k->og * k->kc;
  for (int64_t o = c0; o < c1; o++)
    for (int64_t r = r0; r < r1; r++) dw[o * k->kc + r] = acc[(r - r0) * k->og + o];
  return 0;
}

static void grad_weight_task(void *vj, int64_t b, int64_t e) {
  ConvJob *j = vj;
  for (int64_t t = b; t < e; t++) {
    if (j->narrow) { // task t: dw's channels 16t..
      if (!conv_narrow_grad_weight(&j->k, j->x, j->dy, 16 * t, round_bits(j), j->out, j->db))
        atomic_store(&j->failed, 1);
      continue;
    }
    int64_t g = t / j->per_group, lo = t % j->per_group * j->step;
    int64_t rows = j->k.kc, cols = j->k.og, rc;
#if defined(__x86_64__) || defined(__i386__)
    if (j->lanes) {
      if (!conv_lanes_grad_weight(&j->k, j->x, j->dy, g, lo, min64(lo + j->step, rows), round_bits(j), j->out))
        atomic_store(&j->failed, 1);
      continue;
    }
#endif
    if (j->by_rows)
      rc = grad_weight_rect(j, g, lo, min64(lo + j->step, rows), 0, cols);
    else
      rc = grad_weight_rect(j, g, 0, rows, lo, min64(lo + j->step, cols));
    if (rc) atomic_store(&j->failed, 1);
  }
}

// With fewer chunks than threads (batch 1: fashion_cnn's conv2 is one
// chunk), each chunk is cut into pieces of whole half panels (NR/2
// columns), one per thread, when the call is worth a parallel region
// (FWD_PAR_MIN_FLOPS). A piece builds only its pixels of col and computes
// its columns of y; every element of y keeps its K chain (K = Kc is not
// split), so the pieces change no result.
#define FWD_PAR_MIN_FLOPS 1.0e6
static void fwd_pieces(ConvJob *j, int64_t threads) {
  const Conv *k = &j->k;
  int64_t chunks = k->n * k->g * j->nq, unit = gemm_current()->nr / 2;
  double flops = 2.0 * (double)k->n * (double)k->o * (double)k->p * (double)k->kc;
  j->nsub = 1, j->sub = j->qc;
  if (chunks >= threads || flops < FWD_PAR_MIN_FLOPS || unit < 1) return;
  int64_t want = (threads + chunks - 1) / chunks, units = (j->qc + unit - 1) / unit;
  want = min64(want, units);
  j->sub = (units + want - 1) / want * unit;
  j->nsub = (j->qc + j->sub - 1) / j->sub;
}

// The channel-lane forward (conv_lanes_avx512.c) where it wins. Measured
// (1 thread, thread CPU time, best of 20): against col + GEMM it is 1.4-1.7x
// at [16,32,14,14]*[64,32,3,3] and [16,4,28,28]*[16,4,3,3] unpadded, and
// loses only at tiny products (Kc = 9 by 8 channels); against the
// pixel-lane "same" forward it is 1.1-1.2x with 48-64 channels and Kc >=
// 144 (fashion_cnn's conv2), 1.1x at 32 channels and Kc = 288, and loses
// with 16 channels (12 broadcasts per 12 FMAs) and at Kc = 9 (conv1:
// bound by its output stores, which lanes add a transpose to). w is packed
// once per call on the calling thread (its scratch slot) before the tasks
// read it.
//
// Kc > 512 (several K blocks; the pixel-lane forward takes none, so against
// col + GEMM; 1 thread, thread CPU time, best of 5, main's library and
// this one alternated shape by shape over 4 rounds; docs/design/kernels.md
// has the table): lanes wins 1.04-1.41x on every plane of more than 64
// pixels measured but 8 x 16 with 256 channels (0.97x): [64,64,16,16]*
// [64,64,3,3] 9.72 -> 7.30 ms, [64,256,14,14]*[256,256,3,3] 1.33x,
// [8,64,56,56]*[64,64,3,3] 1.21x, groups 2 / 4 1.38x / 1.28x, dilation 2
// 1.31x, 5x5 1.25x. On planes of at most 64 pixels it wins too (4 x 4 to
// 8 x 8 with 64-128 channels 1.00-1.51x, [64,128,8,8]*[128,128,3,3]
// 1.03x, stride 2 1.13-1.39x) except with 256+ channels of more than
// 2 MiB of weights per group (Kc x OP floats, this machine's L2, read from
// L3 for that few pixels an image: [64,512,7,7]*[512,512,3,3] 0.89x,
// [64,256,8,8]*[256,256,3,3] 0.89x, 512 channels on 4 x 4 0.64x; AVX2
// 0.53-0.99x) and with one image (w packed per call: [1,128,8,8]*[128,128,
// 3,3] 0.88x, 7 x 7 0.99x; AVX2 0.82-0.94x), which keep col + GEMM.
#if defined(__x86_64__) || defined(__i386__)
static bool lanes_wins(const Conv *k, bool rounds) {
  if (k->kc > MLC_GEMM_KC_MAX) {
    int64_t op = (k->og + 15) / 16 * 16;
    return k->p > 64 || (k->n >= 2 && !(op >= 256 && k->kc * op > (INT64_C(1) << 19)));
  }
  // the pixel-lane forward's cases (AVX-512 only)
  bool same = k->sh == 1 && k->sw == 1 && k->wo == k->w && !rounds && gemm_have_avx512();
  return same ? k->og >= 32 && k->kc >= 64 : k->og >= 16 || k->kc >= 32;
}

// grad_weight in channel lanes (conv_lanes_grad_weight) against im2col +
// GEMM: 1.17x at fashion_cnn's conv2 (Kc 288, 64 channels; batch 64, 1
// thread), even at conv1 (Kc 9 in 12-row tiles), so conv1 keeps the GEMM.
static bool gw_lanes_wins(const Conv *k) { return k->og >= 16 && k->kc >= 32; }

// grad_weight_pick split by dw's channels in whole vectors of lanes
// (conv_gw_pick_lanes) where the GEMM path would split dw's columns (few
// rows: fashion_cnn's conv1, Kc = 9 by 32 channels) and every thread gets
// a task: each task then builds only its channels of dy from the picks,
// where the GEMM's column strips pack dy^T at half panel width and each
// builds col. With one thread the GEMM path stays (the same speed there:
// "The pool's picks" in docs/design/kernels.md).
static bool gw_vectors_wins(const MlcPool *pool, const Conv *k) {
  int64_t t = mlc_pool_threads(pool), want = (t + k->g - 1) / k->g;
  return t > 1 && !pointwise(k) && k->ho >= 2 && k->wo >= 2 && conv_lanes_ok(k) &&
         k->kc < 2 * gemm_current()->mr * want && conv_gw_pick_vector_tasks(pool, k) * k->g >= t;
}
#endif

bool conv_gw_pick_by_vectors(const MlcPool *pool, const int64_t *geom) {
#if defined(__x86_64__) || defined(__i386__)
  Conv k;
  return conv_of(geom, &k) && k.n && k.p && k.kc && gw_vectors_wins(pool, &k);
#else
  (void)pool, (void)geom;
  return false;
#endif
}

#if defined(__x86_64__) || defined(__i386__)
// The GEMM cache's maker of a lane packing: ctx is the LanesPack.
typedef struct LanesPack {
  const Conv *k;
  uint32_t flags;
} LanesPack;

static void lanes_pack_make(const void *ctx, const float *w, float *wp) {
  const LanesPack *l = ctx;
  conv_lanes_pack_w(l->k, w, l->flags, wp);
}
#endif

// The forward's packed weight: a constant weight's (predict and eval of a
// model instance: the GEMM cache's rule, "Constant operands" in
// docs/design/kernels.md) is packed once per weight version and kept in
// the cache, which the instance clears whenever its parameters may have
// changed; any other is packed per call into the caller's scratch.
static void fwd_lanes(ConvJob *j) {
#if defined(__x86_64__) || defined(__i386__)
  const Conv *k = &j->k;
  if (pointwise(k) || !conv_lanes_fwd_ok(k) || !lanes_wins(k, round_bits(j) != 0)) return;
  LanesPack l = {k, round_bits(j)};
  const float *kept = gemm_cache_derived_ctx(j->w, k->o, k->kc, k->g, k->o * k->kc, GEMM_CACHE_LANES | l.flags,
                                             conv_lanes_wfloats(k), lanes_pack_make, &l);
  if (kept) {
    j->wlanes = kept;
    return;
  }
  float *wp = gemm_scratch(GEMM_SCRATCH_WPACK, conv_lanes_wfloats(k));
  if (!wp) return; // the other paths need no packed copy
  conv_lanes_pack_w(k, j->w, round_bits(j), wp);
  j->wlanes = wp;
#else
  (void)j;
#endif
}

// The forward's pixel chunks (tasks, before fwd_pieces): col + GEMM and
// the pixel-lane forward take col's chunk (k->qchunk: col in L2); the
// channel-lane forward builds no col, so its chunks are P cut into equal
// chunks of at most max(qchunk, LANES_CHUNK_FLOATS / OP) pixels (yt [chunk,
// OP], and ys as large, 512 KiB each). A forward chunk holds every K step of
// its outputs, so the chunking changes no bit. Measured (1 thread, thread
// CPU time, best of 3-5, before lanes_tap_offsets lost its divisions):
// col's chunks (86-113 pixels at Kc 576) against these, [64,64,16,16]*
// [64,64,3,3] 10.4 -> 8.5 ms, [8,64,56,56]*[64,64,3,3] 18.6 -> 12.3 ms,
// [64,256,14,14]*[256,256,3,3] 143 -> 108 ms, Kc 504 [64,56,16,16]*
// [64,56,3,3] 8.6 -> 7.6 ms; chunks of 64K floats of yt or the whole plane
// were at most as fast.
enum { LANES_CHUNK_FLOATS = 1 << 17 };
static void fwd_setup(ConvJob *j, int64_t threads) {
  const Conv *k = &j->k;
  j->narrow = narrow_wins(k, NARROW_FWD);
  if (!j->narrow) fwd_lanes(j);
  j->qc = j->narrow ? k->p : k->qchunk; // the narrow forward copies whole planes
  if (j->wlanes) {
    int64_t most = max64(k->qchunk, LANES_CHUNK_FLOATS / ((k->og + 15) / 16 * 16)), nc = (k->p + most - 1) / most;
    j->qc = (k->p + nc - 1) / nc;
  }
  j->nq = (k->p + j->qc - 1) / j->qc;
  fwd_pieces(j, threads);
}

#if defined(__x86_64__) || defined(__i386__)
// The depthwise forward with 16 channels in the lanes (conv_narrow_avx512.c,
// conv_narrow_fwd_lanes) where the narrow forward would run, one channel
// per group in and out: its lanes hold channels, so small planes fill them
// (batch 64, 1 thread, depthwise 3x3, against the narrow forward: 128
// channels at 8 x 8 0.74 -> 0.34 ms, 64 at 16 x 16 0.72 -> 0.48, 32 at 32
// x 32 1.06 -> 1.00, 64 at 32 x 32 stride 2 3.2 -> 1.3; kernels.md), and
// on AVX2 without AVX-512 (conv_lanes_avx2.c) for every such geometry,
// against the im2col + GEMM path (MLC_CPU_ISA=avx2 on the AVX-512 machine:
// 128 at 8 x 8 2.83 -> 0.74 ms, 64 at 16 x 16 2.82 -> 2.03, 32 at 32 x
// 32 4.91 -> 2.68, 64 at 32 x 32 stride 2 5.77 -> 3.05). A task is one
// image's 16 channels.
static bool fwd_lanes_depthwise(const Conv *k) {
  if (k->cg != 1 || k->og != 1 || k->kc > MLC_GEMM_KC_MAX) return false;
  return narrow_wins(k, NARROW_FWD) || (narrow_wins(k, NARROW_GW) && !gemm_have_avx512() && gemm_have_avx2());
}
#endif

// grad_input the same way (conv_narrow_grad_input_lanes), one channel per
// group in and out, its per-call table (Kc offsets per dx pixel) at most
// 16 MiB: on AVX-512 where the narrow grad_input would run (batch 64, 1
// thread, depthwise 3x3, against it: 128 channels at 8 x 8 1.0 -> 0.26 ms,
// 64 at 16 x 16 1.2 -> 0.76, 32 at 32 x 32 3.3 -> 1.3, 64 at 32 x 32
// stride 2 6.3 -> 2.1); on AVX2 (its loop conv_lanes_avx2.c's) on every
// such geometry, against the col2im + GEMM path (MLC_CPU_ISA=avx2: 32 at
// 32 x 32 5.2-8.4 -> 2.37 ms, 64 at 32 x 32 stride 2 7.7-9.9 -> 2.40, and
// against the C loop below 0.84 -> 0.52 at 128 x 8 x 8, 1.57 -> 0.72 at
// 64 x 16 x 16); without AVX2 (its loop in C) on planes of at most 256
// pixels, where that beat col2im + GEMM (AVX2 build: 2.75 -> 0.67 ms at 8
// x 8, 2.95 -> 1.31 at 16 x 16; at 32 x 32 it lost, 4.8 -> 5.7;
// kernels.md).
static bool gin_lanes_depthwise(const Conv *k) {
  if (k->cg != 1 || k->og != 1 || k->kc > MLC_GEMM_KC_MAX || k->h * k->w * k->kc > (INT64_C(1) << 22)) return false;
  return narrow_wins(k, NARROW_GIN) ||
         (narrow_wins(k, NARROW_GW) && !gemm_have_avx512() && (gemm_have_avx2() || k->h * k->w <= 256));
}

// A task of the depthwise lane passes: one image's 16 channels (C = O),
// the forward's (j->x) or grad_input's (j->dy).
static void depthwise_lanes_task(void *vj, int64_t b, int64_t e) {
  ConvJob *j = vj;
  const Conv *k = &j->k;
  int64_t nb = (k->o + 15) / 16, plane = k->h * k->w;
  for (int64_t t = b; t < e; t++) {
    int64_t n = t / nb, c0 = t % nb * 16;
    bool ok = j->dy && conv_narrow_grad_input_lanes(k, j->dy + n * k->o * k->p, j->w, j->wlanes, c0, j->flags,
                                                    j->out + n * k->c * plane);
#if defined(__x86_64__) || defined(__i386__)
    if (!j->dy) ok = conv_narrow_fwd_lanes(k, j->x + n * k->c * plane, j->w, j->bias, j->flags, c0, j->out + n * k->o * k->p);
#endif
    if (!ok) atomic_store(&j->failed, 1);
  }
}

// ---- entry points ------------------------------------------------------------------------------
int mlc_conv2d(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *x, const float *w,
               const float *bias, float *y) {
  ConvJob j = {.flags = flags, .x = x, .w = w, .bias = bias, .out = y};
  if (!conv_of(geom, &j.k)) return -1;
  if (!j.k.n || !j.k.o || !j.k.p) return 0;
  if (conv_winograd_applies(&j.k, flags)) return conv_winograd(pool, &j.k, flags, x, w, bias, y, NULL);
#if defined(__x86_64__) || defined(__i386__)
  if (fwd_lanes_depthwise(&j.k)) {
    mlc_parallel_for(pool, j.k.n * ((j.k.o + 15) / 16), 1, depthwise_lanes_task, &j);
    return atomic_load(&j.failed) ? -1 : 0;
  }
#endif
  fwd_setup(&j, mlc_pool_threads(pool));
  mlc_parallel_for(pool, j.k.n * j.k.g * j.nq * j.nsub, 1, fwd_task, &j);
  return atomic_load(&j.failed) ? -1 : 0;
}

// The forward, then yp = max_pool2d(y, 2): pooled inside each task when a
// task computes whole output planes (one pixel chunk and piece per image
// and group, as at fashion_cnn's shapes and batch sizes > 1), else after
// all of y. Either way yp is mlc_max_pool2d's, so the fusion changes no bit.
// y == NULL: y is not written (inference, where nothing else reads it);
// whole planes then live in each thread's scratch, and otherwise (batch 1
// cut into pieces) y is a temporary of this call.
int mlc_conv2d_pool(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *x, const float *w,
                    const float *bias, float *y, float *yp) {
  return mlc_conv2d_pool_pick(pool, geom, flags, x, w, bias, y, yp, NULL);
}

// With pick, the picks come from the same pass: pool_max2x2_pick_planes
// in each task, or mlc_max_pool2d_pick after the whole y (Winograd with
// picks computes y, in a temporary when y is NULL, and pools it after).
int mlc_conv2d_pool_pick(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *x, const float *w,
                         const float *bias, float *y, float *yp, uint8_t *pick) {
  ConvJob j = {.flags = flags, .x = x, .w = w, .bias = bias, .out = y, .pooled = yp, .pick = pick};
  if (!conv_of(geom, &j.k)) return -1;
  if (!j.k.n || !j.k.o || !j.k.p) return 0;
  bool wino = conv_winograd_applies(&j.k, flags);
  if (wino && !pick) return conv_winograd(pool, &j.k, flags, x, w, bias, y, yp);
  bool whole = false;
  if (!wino) {
    fwd_setup(&j, mlc_pool_threads(pool));
    whole = j.nq == 1 && j.nsub == 1;
  }
  float *tmp = NULL;
  if (!y && whole) j.skip_out = true;
  else if (!y && !(j.out = conv_y_temp(j.k.n * j.k.o * j.k.p, &tmp))) return -1;
  int rc = 0;
  if (wino) {
    rc = conv_winograd(pool, &j.k, flags, x, w, bias, j.out, NULL);
  } else {
    if (!whole) j.pooled = NULL, j.pick = NULL; // pooled below, from the whole y
    mlc_parallel_for(pool, j.k.n * j.k.g * j.nq * j.nsub, 1, fwd_task, &j);
    rc = atomic_load(&j.failed) ? -1 : 0;
  }
  if (!rc && !whole)
    rc = pick ? mlc_max_pool2d_pick(pool, j.k.n, j.k.o, j.k.ho, j.k.wo, j.out, yp, pick)
              : mlc_max_pool2d(pool, j.k.n, j.k.o, j.k.ho, j.k.wo, 2, 2, 2, 2, j.out, yp);
  free(tmp);
  return rc;
}

int mlc_conv2d_grad_input(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dy,
                          const float *w, float *dx) {
  ConvJob j = {.flags = flags, .dy = dy, .w = w, .out = dx};
  if (!conv_of(geom, &j.k)) return -1;
  if (!j.k.n || !j.k.c) return 0;
  if (conv_winograd_grad_applies(&j.k, flags)) return conv_winograd_grad_input(pool, &j.k, flags, dy, w, dx);
  if (gin_lanes_depthwise(&j.k)) { // the table in this thread's slot, for every task
    float *prep = gemm_scratch(GEMM_SCRATCH_WPACK, conv_narrow_gin_lanes_floats(&j.k));
    if (!prep) return -1;
    conv_narrow_gin_lanes_prep(&j.k, prep);
    j.wlanes = prep;
    mlc_parallel_for(pool, j.k.n * ((j.k.c + 15) / 16), 1, depthwise_lanes_task, &j);
    return atomic_load(&j.failed) ? -1 : 0;
  }
#if defined(__x86_64__) || defined(__i386__)
  j.narrow = narrow_wins(&j.k, NARROW_GIN);
  if (j.narrow) { // the tasks' tables, in this thread's slot (the lane wt's)
    float *prep = gemm_scratch(GEMM_SCRATCH_WPACK, conv_narrow_gin_floats(&j.k));
    if (!prep) return -1;
    conv_narrow_gin_prep(&j.k, w, round_bits(&j), prep);
    j.wlanes = prep;
  }
  // The channel-lane grad_input (conv_lanes_grad_input) where it applies
  // and wins: 16+ input and output channels per group; on AVX2 (no
  // AVX-512) batches of 2 or more (one image: 0.87x of col2im + GEMM,
  // kernels.md). Its packed w is used only when every w is finite (see there).
  if (!j.narrow && !pointwise(&j.k) && j.k.cg >= 16 && j.k.og >= 16 && conv_lanes_gin_ok(&j.k) &&
      (gemm_have_avx512() || j.k.n >= 2)) {
    float *wt = gemm_scratch(GEMM_SCRATCH_WPACK, conv_lanes_wtfloats(&j.k));
    if (wt && conv_lanes_pack_wt(&j.k, w, round_bits(&j), wt)) j.wlanes = wt;
  }
#endif
  mlc_parallel_for(pool, j.k.n * j.k.g, 1, grad_input_task, &j);
  return atomic_load(&j.failed) ? -1 : 0;
}

int mlc_conv2d_grad_weight(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dy,
                           const float *x, float *dw) {
  return mlc_conv2d_grad_weight_bias(pool, geom, flags, dy, x, dw, NULL);
}

static int grad_weight_run(MlcPool *pool, ConvJob *jp);

int mlc_conv2d_grad_weight_bias(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dy,
                                const float *x, float *dw, float *db) {
  ConvJob j = {.flags = flags, .dy = dy, .x = x, .out = dw, .db = db};
  if (!conv_of(geom, &j.k)) return -1;
  return grad_weight_run(pool, &j);
}

// dy is the 2 x 2, stride-2 max pool's gradient: each task builds the
// planes of its columns of each image (pool_max2x2_grad_planes, the bits
// mlc_max_pool2d_grad writes) in its own buffer before their GEMMs, so dy
// never goes to memory. A task that splits rows rebuilds every column.
int mlc_conv2d_grad_weight_pool(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dyp,
                                const float *px, const float *aux, const float *x, float *dw, float *db) {
  ConvJob j = {.flags = flags, .dyp = dyp, .px = px, .aux = aux, .x = x, .out = dw, .db = db};
  if (!conv_of(geom, &j.k)) return -1;
  if (j.k.n && j.k.p && !j.k.kc) { // no col row: db from a whole dy
    float *dy = malloc(sizeof(float) * (size_t)(j.k.n * j.k.o * j.k.p));
    int rc = !dy || mlc_max_pool2d_grad(pool, j.k.n, j.k.o, j.k.ho, j.k.wo, 2, 2, 2, 2, dyp, px, aux, dy) ||
             mlc_conv2d_grad_weight_bias(pool, geom, flags, dy, x, dw, db);
    free(dy);
    return rc ? -1 : 0;
  }
  return grad_weight_run(pool, &j);
}

// The same with dy rebuilt from the forward's picks (pool_pick.c): reads
// dyp and a byte per window, not px.
int mlc_conv2d_grad_weight_pick(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dyp,
                                const uint8_t *pick, int64_t mask, const float *x, float *dw, float *db) {
  ConvJob j = {.flags = flags, .dyp = dyp, .rpick = pick, .pmask = mask != 0, .x = x, .out = dw, .db = db};
  if (!conv_of(geom, &j.k)) return -1;
  if (j.k.n && j.k.p && !j.k.kc) { // no col row: db from a whole dy
    float *dy = malloc(sizeof(float) * (size_t)(j.k.n * j.k.o * j.k.p));
    int rc = !dy || mlc_max_pool2d_grad_pick(pool, j.k.n, j.k.o, j.k.ho, j.k.wo, mask, dyp, pick, dy) ||
             mlc_conv2d_grad_weight_bias(pool, geom, flags, dy, x, dw, db);
    free(dy);
    return rc ? -1 : 0;
  }
#if defined(__x86_64__) || defined(__i386__)
  if (gw_vectors_wins(pool, &j.k))
    return conv_gw_pick_lanes(pool, &j.k, flags, dyp, pick, mask != 0, x, dw, db);
#endif
  return grad_weight_run(pool, &j);
}

// Whether mlc_conv2d_grad_pick runs conv_grad_pool.c's lane tasks.
#if defined(__x86_64__) || defined(__i386__)
static bool grad_pick_lanes(const Conv *k, uint32_t flags) {
  return k->n && k->o && k->p && k->kc && k->ho >= 2 && k->wo >= 2 && !pointwise(k) &&
         !conv_winograd_grad_applies(k, flags) && conv_lanes_ok(k) && gw_lanes_wins(k) && k->cg >= 16 &&
         k->og >= 16 && conv_lanes_gin_ok(k);
}
#endif

bool conv_grad_pick_by_images(const MlcPool *pool, const int64_t *geom, uint32_t flags) {
#if defined(__x86_64__) || defined(__i386__)
  Conv k;
  return conv_of(geom, &k) && grad_pick_lanes(&k, flags) && conv_grad_pick_two_regions(pool, &k, flags);
#else
  (void)pool, (void)geom, (void)flags;
  return false;
#endif
}

// Both gradients with the pool's folded in, from the picks:
// conv_grad_pool.c's lane tasks where both lane passes would run unfused
// (dy is then built per image and consumed in cache), else the three
// calls over a temporary dy, so the bits are always theirs.
int mlc_conv2d_grad_pick(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dyp, const uint8_t *pick,
                         int64_t mask, const float *w, const float *x, float *dx, float *dw, float *db) {
  Conv k;
  if (!conv_of(geom, &k)) return -1;
#if defined(__x86_64__) || defined(__i386__)
  ConvJob j = {.flags = flags};
  float *wt = grad_pick_lanes(&k, flags) ? gemm_scratch(GEMM_SCRATCH_WPACK, conv_lanes_wtfloats(&k)) : NULL;
  if (wt && conv_lanes_pack_wt(&k, w, round_bits(&j), wt))
    return conv_grad_pick_lanes(pool, &k, flags, dyp, pick, mask != 0, wt, x, dx, dw, db);
#endif
  float *dy = malloc(sizeof(float) * (size_t)(k.n * k.o * k.p + 1));
  int rc = !dy || mlc_max_pool2d_grad_pick(pool, k.n, k.o, k.ho, k.wo, mask, dyp, pick, dy) ||
           mlc_conv2d_grad_input(pool, geom, flags, dy, w, dx) ||
           mlc_conv2d_grad_weight_bias(pool, geom, flags, dy, x, dw, db);
  free(dy);
  return rc ? -1 : 0;
}

// mlc_conv2d_grad_weight(_bias, _pool, _pick) after the geometry: the tasks.
static int grad_weight_run(MlcPool *pool, ConvJob *jp) {
  ConvJob j = *jp;
  float *dw = j.out, *db = j.db;
  const float *dy = j.dy;
  if (!j.k.o) return 0;
  if (!j.k.n || !j.k.p || !j.k.kc) { // no pixel or no col row: the sums alone
    memset(dw, 0, (size_t)(j.k.o * j.k.kc) * sizeof(float));
    return db ? conv_bias_grad_serial(&j.k, dy, db) : 0;
  }
  // Rows of dw[g]^T when there are enough micro-rows for every task (each
  // task then builds only its rows of col); else columns, in half panels
  // (the micro-kernel runs a tile of NR/2 columns at half width, so a
  // narrow dw such as fashion_cnn's conv1, Kc = 9 by 32, still splits in
  // two, and each task packs only its columns of dy^T).
  const GemmVariant *v = gemm_current();
  int64_t t = mlc_pool_threads(pool), want = (t + j.k.g - 1) / j.k.g; // tasks per group
  // Few channels per group (conv_narrow.c): tasks of 16 of dw's channels.
  if (!j.dyp && narrow_wins(&j.k, NARROW_GW)) {
    j.narrow = true;
    mlc_parallel_for(pool, (j.k.o + 15) / 16, 1, grad_weight_task, &j);
    return atomic_load(&j.failed) ? -1 : 0;
  }
#if defined(__x86_64__) || defined(__i386__)
  // The channel-lane grad_weight: rows of dw^T per task, in whole 6-row
  // tiles. It reads dy from memory, so not with the pool's gradient folded
  // in (j.dyp: dy exists only as the tasks rebuild it), and it sums no
  // bias: db is then one pass over dy on this thread, in the same order.
  // Kc above MLC_GEMM_KC_MAX (ResNet's 3x3 convolutions of 64+ channels)
  // runs in tasks of at most 510 rows (ConvLanesGw's tap offsets): 64
  // channels at 16 x 16, batch 64, 1 thread: 9.6 -> 7.6 ms against col +
  // GEMM (docs/design/kernels.md).
  if (!pointwise(&j.k) && !j.dyp && conv_lanes_gw_rows_ok(&j.k) && gw_lanes_wins(&j.k)) {
    j.lanes = true;
    j.step = ((j.k.kc + want - 1) / want + 5) / 6 * 6;
    if (j.step > MLC_GEMM_KC_MAX / 6 * 6) j.step = MLC_GEMM_KC_MAX / 6 * 6;
    j.per_group = (j.k.kc + j.step - 1) / j.step;
    mlc_parallel_for(pool, j.k.g * j.per_group, 1, grad_weight_task, &j);
    if (atomic_load(&j.failed)) return -1;
    return db ? conv_bias_grad_serial(&j.k, dy, db) : 0;
  }
#endif
  int64_t half = v->nr / 2 > 0 ? v->nr / 2 : 1;
  j.by_rows = j.k.kc >= 2 * v->mr * want || j.k.og < half * want;
  int64_t extent = j.by_rows ? j.k.kc : j.k.og, unit = j.by_rows ? v->mr : j.k.og >= 2 * v->nr * want ? v->nr : half;
  j.step = ((extent + want - 1) / want + unit - 1) / unit * unit;
  j.per_group = (extent + j.step - 1) / j.step;
  mlc_parallel_for(pool, j.k.g * j.per_group, 1, grad_weight_task, &j);
  return atomic_load(&j.failed) ? -1 : 0;
}
