// gemm_ref.h — the accumulation order of mlc's matmul and conv2d (forward
// and both gradients), written once as scalar code over double arrays: the
// arithmetic kernels/cpu computes (mlc_kernels.h), which the reference
// interpreter (compiler/graph/interp*.c), the kernel-IR evaluator
// (compiler/kernel/kir_interp.c) and the tests share, and the K-block and
// pixel-chunk sizes the library itself blocks by (gemm.c, conv.c), so the
// two cannot drift apart. docs/design/ir.md ("matmul and conv2d") states it
// in words.
//
// The order: each output element's K sum is cut into K blocks (a function
// of K alone, mlc_gemm_kblock); a block's sum is a chain of fused
// multiply-adds from +0 over its k in order; the block sums go into C one
// after another (C = alpha*s0 + beta*C, then C = alpha*s + C), and the
// epilogue follows the last block. A convolution is that GEMM over its
// im2col matrix (a padding tap is a product with 0), its gradients the
// GEMMs conv.c runs, with their chunking and their scatter order.
//
// f32: every value is a float; products accumulate with fmaf, every other
// operation rounds to float: the bits kernels/cpu produces for any thread
// count and micro-kernel. !f32: the same order in double, with fma.
//
// Precision (`precision bf16 | f16`): with MLC_GEMM_BF16 or MLC_GEMM_F16
// in the flags, every operand element of a product (op(A) and op(B); x or
// dy and w of a convolution, col's padding zeros included) is first made an
// f32 and rounded to that format (kernels/round16.h, ties to even), exactly
// where the library rounds it while packing; everything after (the product,
// exact in f32 for two 16-bit operands, the sum, the epilogue) is as above.
// Header-only (static inline), as kernels/philox.h, so the compiler and the
// runtime use this exact text.
#ifndef MLC_GEMM_REF_H
#define MLC_GEMM_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/mlc_kernels.h"
#include "round16.h"

// ---- blocking ----------------------------------------------------------------------------------
enum {
  MLC_GEMM_KC_MAX = 512,          // longest K block
  MLC_CONV_QCHUNK_FLOATS = 1 << 16 // floats of one im2col chunk (256 KiB)
};

// The K block size: the fewest blocks of at most MLC_GEMM_KC_MAX, of equal
// size (the last may be shorter); 0 for K = 0.
static inline int64_t mlc_gemm_kblock(int64_t k) {
  int64_t nb = (k + MLC_GEMM_KC_MAX - 1) / MLC_GEMM_KC_MAX;
  return nb > 0 ? (k + nb - 1) / nb : 0;
}

// The number of K blocks: ceil(K / kblock), and one (empty) for K = 0.
static inline int64_t mlc_gemm_kblocks(int64_t k) {
  int64_t kc = mlc_gemm_kblock(k);
  return kc > 0 ? (k + kc - 1) / kc : 1;
}

// Pixels per im2col chunk of a convolution with Kc = C/G*KH*KW rows and P
// output pixels: P cut into equal chunks of about 2^16 / Kc (at least 64).
static inline int64_t mlc_conv_qchunk(int64_t kc, int64_t p) {
  int64_t q = MLC_CONV_QCHUNK_FLOATS / (kc > 1 ? kc : 1);
  if (q < 64) q = 64;
  int64_t nq = (p + q - 1) / q;
  return nq > 0 ? (p + nq - 1) / nq : 1;
}

// ---- scalar steps --------------------------------------------------------------------------------
static inline double mlc_ref_rnd(bool f32, double v) { return f32 ? (double)(float)v : v; }

static inline double mlc_ref_fma(bool f32, double a, double b, double c) {
  return f32 ? (double)fmaf((float)a, (float)b, (float)c) : fma(a, b, c);
}

// An operand element as a product reads it under `flags` (see the top).
static inline double mlc_ref_round16(uint32_t flags, double v) {
  if (flags & MLC_GEMM_BF16) return mlc_round_bf16((float)v);
  if (flags & MLC_GEMM_F16) return mlc_round_f16((float)v);
  return v;
}

// C after the K sum of one element: x[p*sx] * y[p*sy] for p < k, blocked as
// above, the operands rounded by `flags`; beta == 0 does not read c.
static inline double mlc_ref_ksum(bool f32, uint32_t flags, int64_t k, const double *x, int64_t sx,
                                  const double *y, int64_t sy, double alpha, double beta, double c) {
  int64_t kc = mlc_gemm_kblock(k), nb = mlc_gemm_kblocks(k);
  for (int64_t blk = 0; blk < nb; blk++) {
    int64_t p1 = (blk + 1) * kc < k ? (blk + 1) * kc : k;
    double acc = 0, be = blk == 0 ? beta : 1;
    for (int64_t p = blk * kc; p < p1; p++)
      acc = mlc_ref_fma(f32, mlc_ref_round16(flags, x[p * sx]), mlc_ref_round16(flags, y[p * sy]), acc);
    double t = mlc_ref_rnd(f32, alpha * acc);
    if (be != 0) t = mlc_ref_rnd(f32, t + mlc_ref_rnd(f32, be * c));
    c = t;
  }
  return c;
}

// ---- GEMM --------------------------------------------------------------------------------------
// mlc_sgemm's definition with operands by strides: op(A)(i,p) =
// a[i*rsa + p*csa], op(B)(p,j) = b[p*rsb + j*csb], C[i*ldc + j], and for the
// epilogue bias[j] (BIAS_COL) or bias[i] (BIAS_ROW) and aux[i*ldaux + j]
// (RESIDUAL, RELU_MASK). The TRANS bits of flags are ignored (the strides
// say it).
static inline void mlc_ref_gemm(bool f32, uint32_t flags, int64_t m, int64_t n, int64_t k, double alpha,
                                const double *a, int64_t rsa, int64_t csa, const double *b, int64_t rsb,
                                int64_t csb, double beta, double *c, int64_t ldc, const double *bias,
                                const double *aux, int64_t ldaux) {
  alpha = mlc_ref_rnd(f32, alpha), beta = mlc_ref_rnd(f32, beta);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double *cij = &c[i * ldc + j];
      double t = mlc_ref_ksum(f32, flags, k, a + i * rsa, csa, b + j * csb, rsb, alpha, beta, *cij);
      if (flags & MLC_GEMM_BIAS_COL) t = mlc_ref_rnd(f32, t + bias[j]);
      if (flags & MLC_GEMM_BIAS_ROW) t = mlc_ref_rnd(f32, t + bias[i]);
      if (flags & MLC_GEMM_RESIDUAL) t = mlc_ref_rnd(f32, t + aux[i * ldaux + j]);
      if (flags & MLC_GEMM_RELU) t = t > 0 || isnan(t) ? t : 0;
      if (flags & MLC_GEMM_RELU_MASK) t = aux[i * ldaux + j] > 0 ? t : 0;
      *cij = t;
    }
}

// ---- convolution -----------------------------------------------------------------------------------
// The geometry of mlc_kernels.h (MLC_CONV_*) and what it derives.
typedef struct MlcRefConv {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g;
  int64_t ho, wo, cg, og, kc, p, qchunk;
} MlcRefConv;

static inline int64_t mlc_ref_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  int64_t num = in + 2 * p - d * (k - 1) - 1;
  return num < 0 || s < 1 ? -1 : num / s + 1;
}

static inline bool mlc_ref_conv_of(const int64_t *g, MlcRefConv *k) {
  *k = (MlcRefConv){.n = g[MLC_CONV_N], .c = g[MLC_CONV_C], .h = g[MLC_CONV_H], .w = g[MLC_CONV_W],
                    .o = g[MLC_CONV_O], .kh = g[MLC_CONV_KH], .kw = g[MLC_CONV_KW], .sh = g[MLC_CONV_SH],
                    .sw = g[MLC_CONV_SW], .ph = g[MLC_CONV_PH], .pw = g[MLC_CONV_PW], .dh = g[MLC_CONV_DH],
                    .dw = g[MLC_CONV_DW], .g = g[MLC_CONV_G]};
  k->ho = mlc_ref_extent(k->h, k->kh, k->sh, k->ph, k->dh);
  k->wo = mlc_ref_extent(k->w, k->kw, k->sw, k->pw, k->dw);
  if (k->ho < 0 || k->wo < 0 || k->g < 1 || k->c % k->g || k->o % k->g) return false;
  k->cg = k->c / k->g, k->og = k->o / k->g, k->kc = k->cg * k->kh * k->kw, k->p = k->ho * k->wo;
  k->qchunk = mlc_conv_qchunk(k->kc, k->p);
  return true;
}

// A 1x1, stride-1, unpadded convolution: col is x itself.
static inline bool mlc_ref_pointwise(const MlcRefConv *k) {
  return k->kh == 1 && k->kw == 1 && k->sh == 1 && k->sw == 1 && k->ph == 0 && k->pw == 0;
}

// The im2col element of image n, group g: row r = (c*KH + a)*KW + b, pixel
// q = i*WO + j: x[n, g*C/G + c, i*sh - ph + a*dh, j*sw - pw + b*dw], 0 outside x.
// *pos gets the offset inside the image-group plane x[n, g*C/G ..], or -1.
static inline double mlc_ref_col(const MlcRefConv *k, const double *x, int64_t n, int64_t g, int64_t r,
                                 int64_t q, int64_t *pos) {
  int64_t c = r / (k->kh * k->kw), a = r / k->kw % k->kh, b = r % k->kw;
  int64_t hh = q / k->wo * k->sh - k->ph + a * k->dh, ww = q % k->wo * k->sw - k->pw + b * k->dw;
  *pos = -1;
  if (hh < 0 || hh >= k->h || ww < 0 || ww >= k->w) return 0;
  *pos = (c * k->h + hh) * k->w + ww;
  return x ? x[(n * k->c + g * k->cg) * k->h * k->w + *pos] : 0;
}

#include "winograd_ref.h"

// mlc_conv2d: y[n, g*Og + o, q] = w[g*Og + o, :] @ col(n, g)[:, q] (+ bias, relu);
// with MLC_CONV_WINOGRAD, where it applies, winograd_ref.h's order instead.
static inline bool mlc_ref_conv2d(bool f32, const int64_t *geom, uint32_t flags, const double *x,
                                  const double *w, const double *bias, double *y) {
  MlcRefConv k;
  if (!mlc_ref_conv_of(geom, &k)) return false;
  if (flags & MLC_CONV_WINOGRAD && mlc_winograd_applies(&k, flags))
    return mlc_ref_conv2d_winograd(f32, &k, flags, x, w, bias, y);
  double *col = malloc(sizeof(double) * (size_t)(k.kc + 1));
  if (!col) return false;
  for (int64_t n = 0; n < k.n; n++)
    for (int64_t g = 0; g < k.g; g++)
      for (int64_t q = 0; q < k.p; q++) {
        int64_t pos;
        for (int64_t r = 0; r < k.kc; r++) col[r] = mlc_ref_col(&k, x, n, g, r, q, &pos);
        for (int64_t o = g * k.og; o < (g + 1) * k.og; o++) {
          double t = mlc_ref_ksum(f32, flags, k.kc, w + o * k.kc, 1, col, 1, 1, 0, 0);
          if (bias) t = mlc_ref_rnd(f32, t + bias[o]);
          if (flags & MLC_CONV_RELU) t = t > 0 || isnan(t) ? t : 0;
          y[(n * k.o + o) * k.p + q] = t;
        }
      }
  free(col);
  return true;
}

// mlc_conv2d_grad_input: dcol(n, g) = w[g]^T @ dy[n, g] (K = O/G), then
// col2im: per image and group the plane is zeroed, and for each col row r
// in order, each pixel q, a dcol element inside x is added into dx; so each
// element of dx gets its taps (a, b) in order, from +0. Pointwise: dx[n, g]
// = dcol itself. The library's col2im goes by pixel chunks, last chunk
// first, which is the same order: a dx element's tap (a, b) reads output
// pixel q = ((h + ph - a*dh)/sh)*WO + (w + pw - b*dw)/sw, which falls as
// (a, b) grows, so a later chunk holds earlier taps (conv.c).
static inline bool mlc_ref_conv2d_grad_input(bool f32, const int64_t *geom, uint32_t flags,
                                             const double *dy, const double *w, double *dx) {
  MlcRefConv k;
  if (!mlc_ref_conv_of(geom, &k)) return false;
  if (flags & MLC_CONV_WINOGRAD && mlc_winograd_grad_applies(&k, flags))
    return mlc_ref_conv2d_grad_input_winograd(f32, &k, flags, dy, w, dx);
  int64_t plane = k.h * k.w;
  for (int64_t n = 0; n < k.n; n++)
    for (int64_t g = 0; g < k.g; g++) {
      double *dxg = dx + (n * k.c + g * k.cg) * plane;
      const double *dyg = dy + (n * k.o + g * k.og) * k.p, *wg = w + g * k.og * k.kc;
      if (mlc_ref_pointwise(&k)) {
        for (int64_t r = 0; r < k.kc; r++)
          for (int64_t q = 0; q < k.p; q++)
            dxg[r * k.p + q] = mlc_ref_ksum(f32, flags, k.og, wg + r, k.kc, dyg + q, k.p, 1, 0, 0);
        continue;
      }
      memset(dxg, 0, sizeof(double) * (size_t)(k.cg * plane));
      for (int64_t r = 0; r < k.kc; r++)
        for (int64_t q = 0; q < k.p; q++) {
          int64_t pos;
          mlc_ref_col(&k, NULL, n, g, r, q, &pos);
          if (pos < 0) continue;
          double v = mlc_ref_ksum(f32, flags, k.og, wg + r, k.kc, dyg + q, k.p, 1, 0, 0);
          dxg[pos] = mlc_ref_rnd(f32, dxg[pos] + v);
        }
    }
  return true;
}

// mlc_conv2d_grad_weight: dw[g*Og + o, r] = the sum over images n in order,
// pixel chunks in order, of one GEMM each (K = the chunk's pixels, blocked
// as any K): C = s for the first, C = s + C after; 0 without any pixel.
static inline bool mlc_ref_conv2d_grad_weight(bool f32, const int64_t *geom, uint32_t flags,
                                              const double *dy, const double *x, double *dw) {
  MlcRefConv k;
  if (!mlc_ref_conv_of(geom, &k)) return false;
  double *col = malloc(sizeof(double) * (size_t)(k.qchunk + 1));
  if (!col) return false;
  for (int64_t o = 0; o < k.o; o++)
    for (int64_t r = 0; r < k.kc; r++) {
      int64_t g = o / (k.og ? k.og : 1), pos;
      double c = 0;
      bool first = true;
      for (int64_t n = 0; n < k.n; n++)
        for (int64_t q0 = 0; q0 < k.p; q0 += k.qchunk) {
          int64_t nq = q0 + k.qchunk < k.p ? k.qchunk : k.p - q0;
          for (int64_t t = 0; t < nq; t++) col[t] = mlc_ref_col(&k, x, n, g, r, q0 + t, &pos);
          c = mlc_ref_ksum(f32, flags, nq, col, 1, dy + (n * k.o + o) * k.p + q0, 1, 1, first ? 0 : 1, c);
          first = false;
        }
      dw[o * k.kc + r] = first ? 0 : c;
    }
  free(col);
  return true;
}

// mlc_conv2d_grad_weight_bias's db: db[o] = the sum of dy[n, o, q] over
// images and pixels in kir.h's float-sum order (the kernel IR's reduce_to
// of a conv bias): the pixels q of an image are the positions, term q goes
// into f64 lane q mod 8, images in order around them (the lanes carry over),
// then ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), rounded once.
static inline bool mlc_ref_conv_bias_grad(bool f32, const int64_t *geom, const double *dy, double *db) {
  MlcRefConv k;
  if (!mlc_ref_conv_of(geom, &k)) return false;
  for (int64_t o = 0; o < k.o; o++) {
    double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t n = 0; n < k.n; n++)
      for (int64_t q = 0; q < k.p; q++) l[q % 8] += dy[(n * k.o + o) * k.p + q];
    double s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
    db[o] = mlc_ref_rnd(f32, s);
  }
  return true;
}

// ---- max pooling ---------------------------------------------------------------------------------
// mlc_max_pool2d / mlc_max_pool2d_grad (unpadded windows; the gradient's
// disjoint, which kir_call_extents checks first); g = {N, C, H, W, KH, KW,
// SH, SW}; no window when one is larger than the plane. The pick: the first maximum in row-major tap order, a NaN
// beating any number once; the gradient 0 + dy there (masked by
// aux[pick] > 0 when aux is given), 0 elsewhere.
static inline int64_t mlc_ref_pool_pick(const int64_t *g, const double *x, int64_t base) {
  int64_t arg = base;
  for (int64_t a = 0; a < g[4]; a++)
    for (int64_t b = 0; b < g[5]; b++) {
      double v = x[base + a * g[3] + b], best = x[arg];
      if (v > best || (isnan(v) && !isnan(best))) arg = base + a * g[3] + b;
    }
  return arg;
}

static inline void mlc_ref_max_pool2d(const int64_t *g, const double *x, double *y) {
  int64_t ho = g[2] >= g[4] ? (g[2] - g[4]) / g[6] + 1 : 0, wo = g[3] >= g[5] ? (g[3] - g[5]) / g[7] + 1 : 0;
  for (int64_t p = 0; p < g[0] * g[1]; p++)
    for (int64_t i = 0; i < ho; i++)
      for (int64_t j = 0; j < wo; j++)
        y[(p * ho + i) * wo + j] = x[mlc_ref_pool_pick(g, x, (p * g[2] + i * g[6]) * g[3] + j * g[7])];
}

static inline void mlc_ref_max_pool2d_grad(const int64_t *g, const double *dy, const double *x,
                                           const double *aux, double *dx) {
  int64_t ho = g[2] >= g[4] ? (g[2] - g[4]) / g[6] + 1 : 0, wo = g[3] >= g[5] ? (g[3] - g[5]) / g[7] + 1 : 0;
  for (int64_t q = 0; q < g[0] * g[1] * g[2] * g[3]; q++) dx[q] = 0;
  for (int64_t p = 0; p < g[0] * g[1]; p++)
    for (int64_t i = 0; i < ho; i++)
      for (int64_t j = 0; j < wo; j++) {
        int64_t arg = mlc_ref_pool_pick(g, x, (p * g[2] + i * g[6]) * g[3] + j * g[7]);
        double v = 0.0 + dy[(p * ho + i) * wo + j];
        dx[arg] = aux && !(aux[arg] > 0) ? 0.0 : v;
      }
}

// mlc_max_pool2d_pick / mlc_max_pool2d_grad_pick (2 x 2, stride 2; g = {N,
// C, H, W}): the pick byte of each window is its tap (row-major) | 4 when
// the picked value is > 0; the gradient from the picks alone, 0 + dy at the
// tap (0 there with mask unless bit 2 is set), 0 elsewhere.
static inline void mlc_ref_max_pool2d_pick(const int64_t *g, const double *x, double *y, double *pick) {
  int64_t pg[8] = {g[0], g[1], g[2], g[3], 2, 2, 2, 2}, ho = g[2] / 2, wo = g[3] / 2;
  for (int64_t p = 0; p < g[0] * g[1]; p++)
    for (int64_t i = 0; i < ho; i++)
      for (int64_t j = 0; j < wo; j++) {
        int64_t base = (p * g[2] + 2 * i) * g[3] + 2 * j, arg = mlc_ref_pool_pick(pg, x, base);
        int64_t tap = (arg - base) / g[3] * 2 + (arg - base) % g[3];
        y[(p * ho + i) * wo + j] = x[arg];
        pick[(p * ho + i) * wo + j] = (double)(tap | (x[arg] > 0 ? 4 : 0));
      }
}

static inline void mlc_ref_max_pool2d_grad_pick(const int64_t *g, int64_t mask, const double *dy,
                                                const double *pick, double *dx) {
  int64_t ho = g[2] / 2, wo = g[3] / 2;
  for (int64_t q = 0; q < g[0] * g[1] * g[2] * g[3]; q++) dx[q] = 0;
  for (int64_t p = 0; p < g[0] * g[1]; p++)
    for (int64_t i = 0; i < ho; i++)
      for (int64_t j = 0; j < wo; j++) {
        int64_t pk = (int64_t)pick[(p * ho + i) * wo + j], tap = pk & 3;
        double v = 0.0 + dy[(p * ho + i) * wo + j];
        dx[(p * g[2] + 2 * i + tap / 2) * g[3] + 2 * j + tap % 2] = mask && !(pk & 4) ? 0.0 : v;
      }
}

#endif
