// conv_narrow_avx512.c — convolutions with few channels per group
// (depthwise: C/G = 1, MobileNet's and EfficientNet's 3x3 and 5x5 layers;
// conv_narrow_ok says which), AVX-512. There the GEMM paths have nothing
// to block: per image and group the forward is an [O/G, Kc] @ [Kc, P]
// product of one to a few rows (Kc = 9 for a 3x3 depthwise), grad_input
// a K = O/G product, grad_weight Kc x O/G sums of P-long chains, and the
// channel-lane kernels (conv_lanes_avx512.c) need 16 channels per group.
// So each pass puts what it has many of in the lanes:
//
//   forward      16 output pixels of one output channel: acc = fma(w[o, r],
//                x at tap r, acc) over r = (c, a, b) from a zero-padded
//                copy of the group's input planes (column phases apart for
//                a stride > 1, so a tap's 16 pixels are one load), tiles
//                of up to 8 vectors sharing each broadcast weight
//   forward,     16 channels of one output pixel (conv_narrow_fwd_lanes):
//   depthwise    per tap, a weight vector times x^T's 16 channels at the
//                pixel's tap (grad_weight's padded x^T), 8 pixels a tile,
//                the tile transposed back to channel planes
//   grad_input,  16 channels of one dx pixel (conv_narrow_grad_input_lanes):
//   depthwise    per tap in order, w * dy^T at the tap's dy pixel added
//                when the tap is inside y and on a stride (a table per call)
//   grad_input   16 dx pixels of one row: per tap (a, b) in order, the
//                chain over o of w[o, c, a, b] * dy[o, i, j] from +0 (dcol's
//                element), added to the pixel's sum; a stride > 1 takes
//                its dy values with one permute per tap from a table
//   grad_weight  16 output channels (consecutive, of any groups): per
//                image in order, from dy^T [P, 16] and x^T [C/G, rows,
//                cols, 16] (16 x 16 transposes, zero-padded), each dw[o, r]
//                a chain over the pixels of each K block
//
// Bits: kernels/gemm_ref.h's, as every conv path (tests/kernels/test_conv.c
// compares them): the forward's chain over one K block (Kc <= 512) from +0
// with padding taps multiplying the copy's zeros, then + bias, relu;
// grad_input's dcol chains over o (O/G <= 512: one block) and each dx
// element's taps in (a, b) order from +0, a tap outside y adding an exact
// +0 (masked; dx is never -0, so dx + 0 == dx: the reference skips it); and
// grad_weight's blocks, C = s for the first, C = s + C after. The
// precision bits round x, dy and w as they are copied or broadcast
// (kernels/round16.h), where the GEMM's packing rounds them.
#include <immintrin.h>
#include <string.h>

#include "../gemm_ref.h"
#include "../round16.h"
#include "conv_internal.h"
#include "conv_lanes.h"
#include "gemm_epi_avx512.h"
#include "gemm_internal.h"
#include "transpose_avx512.h"

enum { NARROW_MAX_ACC = 16 }; // grad_weight's rows per pass (registers: 16 sums, dy, x)

// Phase rows of the forward's padded copy: output column j of tap b
// reads padded column j*sw + b*dw, stored at phase (b*dw) % sw, index j +
// (b*dw) / sw; a row holds WO + (KW-1)*dw/sw indices, rounded up to whole
// vectors and one more (a tile's last vector may run past WO).
static int64_t fwd_row_len(const Conv *k) { return (k->wo + (k->kw - 1) * k->dw / k->sw + 15) / 16 * 16 + 16; }
static int64_t fwd_rows(const Conv *k) { return narrow_rows(k); }
static int64_t fwd_copy_floats(const Conv *k) { return k->cg * fwd_rows(k) * k->sw * fwd_row_len(k); }

bool conv_narrow_ok(const Conv *k) { return gemm_have_avx512() && conv_narrow_geometry_ok(k); }

// ---- forward -------------------------------------------------------------------------------------
// xs [C/G, rows, sw, len]: padded row r of channel c (input row r - ph),
// its padded columns u at [u % sw][u / sw]; zeros outside x and past the
// row. Rounded by the precision bits.
static void fwd_copy(const Conv *k, const float *xg, uint32_t flags, float *xs) {
  int64_t rows = fwd_rows(k), len = fwd_row_len(k), wp = lanes_pad_w(k);
  memset(xs, 0, (size_t)fwd_copy_floats(k) * sizeof(float));
  for (int64_t c = 0; c < k->cg; c++)
    for (int64_t r = 0; r < rows; r++) {
      int64_t h = r - k->ph;
      if (h < 0 || h >= k->h) continue;
      const float *src = xg + (c * k->h + h) * k->w;
      float *dst = xs + (c * rows + r) * k->sw * len;
      int64_t u0 = k->pw, u1 = k->pw + k->w < wp ? k->pw + k->w : wp; // padded columns inside x
      if (k->sw == 1 && !(flags & (MLC_GEMM_BF16 | MLC_GEMM_F16))) {
        if (u1 > u0) memcpy(dst + u0, src, (size_t)(u1 - u0) * sizeof(float));
        continue;
      }
      for (int64_t ph = 0; ph < k->sw; ph++) // padded columns u = t*sw + ph in [u0, u1)
        for (int64_t t = (u0 - ph + k->sw - 1) / k->sw, u = t * k->sw + ph; u < u1; t++, u += k->sw)
          dst[ph * len + t] = lanes_round(flags, src[u - k->pw]);
    }
}

// One tile: NU vectors of 16 output pixels (at[t]: the padded copy at the
// vector's tap (0, 0, 0)), one output channel; off[r] is tap r's offset
// from there, wr[r] its weight. y gets the epilogue's result under m[t].
// Up to 8 vectors a tile: a row of at most 16 pixels is one vector, so
// an 8 x 8 plane's tile is its 8 rows, 8 independent FMA chains where 4
// left the FMA's latency showing (a tap's chain is only Kc long).
enum { FWD_TILE = 8 };

static inline __attribute__((always_inline)) void fwd_tile(const int NU, int64_t kc, const int32_t *off,
                                                           const float *wr, const float *const *at,
                                                           const GemmEpi *e, float *const *yt,
                                                           const __mmask16 *m) {
  __m512 acc[FWD_TILE];
  _Pragma("GCC unroll 8") for (int t = 0; t < NU; t++) acc[t] = _mm512_setzero_ps();
  for (int64_t r = 0; r < kc; r++) {
    __m512 wv = _mm512_set1_ps(wr[r]);
    _Pragma("GCC unroll 8") for (int t = 0; t < NU; t++) acc[t] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(at[t] + off[r]), acc[t]);
  }
  _Pragma("GCC unroll 8") for (int t = 0; t < NU; t++) _mm512_mask_storeu_ps(yt[t], m[t], epi16(e, acc[t], yt[t], m[t], 0, 0));
}

// y (row 0, pixel q0 of the group's output; row stride P) for pixels [q0,
// q0+nq) of one image and group: output row by output row, the row's
// vectors in tiles of up to FWD_TILE.
bool conv_narrow_fwd(const Conv *k, const float *xg, const float *wg, const float *bias, uint32_t flags,
                     float *y, int64_t q0, int64_t nq) {
  int64_t rows = fwd_rows(k), len = fwd_row_len(k);
  float *xs = gemm_scratch(GEMM_SCRATCH_COL, fwd_copy_floats(k) + 2 * MLC_GEMM_KC_MAX);
  if (!xs) return false;
  int32_t *off = (int32_t *)(xs + fwd_copy_floats(k));
  float *wr = (float *)(off + MLC_GEMM_KC_MAX);
  fwd_copy(k, xg, flags, xs);
  // (divisions counted: a call is one image and group, a few thousand
  // FMAs on small planes, where 64-bit divisions per tap or row showed)
  int64_t p = 0, boff[MLC_GEMM_KC_MAX]; // tap column b's offset in its phase row: phase (b*dw) % sw, index (b*dw) / sw
  for (int64_t b = 0, ph = 0, ix = 0; b < k->kw; b++) {
    boff[b] = ph * len + ix;
    for (int64_t t = 0; t < k->dw; t++)
      if (++ph == k->sw) ph = 0, ix++;
  }
  for (int64_t c = 0; c < k->cg; c++)
    for (int64_t a = 0; a < k->kh; a++)
      for (int64_t b = 0; b < k->kw; b++, p++) off[p] = (int32_t)((c * rows + a * k->dh) * k->sw * len + boff[b]);
  GemmEpi e = {.flags = (bias ? MLC_GEMM_BIAS_ROW : 0) | (flags & MLC_CONV_RELU ? MLC_GEMM_RELU : 0), .alpha = 1,
               .beta = 0};
  int64_t i0 = q0 / k->wo, j0 = q0 % k->wo; // the range's first pixel
  for (int64_t o = 0; o < k->og; o++) {
    for (int64_t r = 0; r < k->kc; r++) wr[r] = lanes_round(flags, wg[o * k->kc + r]);
    e.bias_row = bias ? bias + o : NULL;
    const float *at[FWD_TILE];
    float *yt[FWD_TILE];
    __mmask16 m[FWD_TILE];
    int nu = 0;
    for (int64_t q = q0, i = i0, j = j0; q < q0 + nq; i++, j = 0) { // runs of one output row
      int64_t j1 = k->wo < j + q0 + nq - q ? k->wo : j + q0 + nq - q;
      for (int64_t jv = j; jv < j1; jv += 16) {
        at[nu] = xs + i * k->sh * k->sw * len + jv;
        yt[nu] = y + o * k->p + i * k->wo + jv - q0;
        m[nu] = mask_range(0, j1 - jv);
        if (++nu == FWD_TILE) fwd_tile(FWD_TILE, k->kc, off, wr, at, &e, yt, m), nu = 0;
      }
      q += j1 - j;
    }
    switch (nu) {
    case 7: fwd_tile(7, k->kc, off, wr, at, &e, yt, m); break;
    case 6: fwd_tile(6, k->kc, off, wr, at, &e, yt, m); break;
    case 5: fwd_tile(5, k->kc, off, wr, at, &e, yt, m); break;
    case 4: fwd_tile(4, k->kc, off, wr, at, &e, yt, m); break;
    case 3: fwd_tile(3, k->kc, off, wr, at, &e, yt, m); break;
    case 2: fwd_tile(2, k->kc, off, wr, at, &e, yt, m); break;
    case 1: fwd_tile(1, k->kc, off, wr, at, &e, yt, m); break;
    }
  }
  return true;
}

// ---- forward in channel lanes (depthwise) -----------------------------------------------------------
// With one channel per group in and out, the lanes can hold 16 channels
// (16 groups) of one pixel instead of 16 pixels of one channel: a plane's
// width no longer decides how many lanes work (an 8 x 8 plane filled half
// of each vector above, and a call per image and channel was a few hundred
// FMAs), and the taps' weights are 9 vectors for the whole plane. Input:
// conv_narrow_x_t's padded x^T of the 16 channels, [rows, WP, 16]; each
// output lane's chain over its taps in order from +0 (padding taps
// multiply x^T's zeros), then the epilogue: the bits of the forward above.
enum { FWD_LANE_PIX = 8 }; // pixels a tile: independent chains

static inline __attribute__((always_inline)) void fwd_lanes_tile(int64_t kc, const int32_t *roff, const float *wl,
                                                                 const float *xt, const int32_t *qo, __m512 *acc) {
  _Pragma("GCC unroll 8") for (int t = 0; t < FWD_LANE_PIX; t++) acc[t] = _mm512_setzero_ps();
  for (int64_t r = 0; r < kc; r++) {
    __m512 wv = _mm512_loadu_ps(wl + 16 * r);
    _Pragma("GCC unroll 8") for (int t = 0; t < FWD_LANE_PIX; t++)
      acc[t] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(xt + qo[t] + roff[r]), acc[t]);
  }
}

bool conv_narrow_fwd_lanes(const Conv *k, const float *xn, const float *w, const float *bias, uint32_t flags,
                           int64_t o0, float *yn) {
  if (!gemm_have_avx512()) return conv_narrow_fwd_lanes_avx2(k, xn, w, bias, flags, o0, yn);
  int64_t kc = k->kc, nl = k->o - o0 < 16 ? k->o - o0 : 16;
  float *wl; // [Kc, 16]: tap r's weight of each lane's channel
  float *xt = conv_narrow_fwd_lanes_prep(k, xn, w, o0, flags, &wl);
  if (!xt) return false;
  int32_t roff[MLC_GEMM_KC_MAX];
  narrow_fwd_roff(k, roff);
  GemmEpi e = {.flags = (bias ? MLC_GEMM_BIAS_COL : 0) | (flags & MLC_CONV_RELU ? MLC_GEMM_RELU : 0), .alpha = 1,
               .beta = 0, .bias_col = bias ? bias + o0 : NULL};
  __mmask16 lm = mask_range(0, nl);
  for (int64_t q0 = 0, i = 0, j = 0; q0 < k->p; q0 += 16) {
    int32_t qo[16];
    int n16 = narrow_fwd_qo(k, q0, &i, &j, qo);
    __m512 v[16];
    fwd_lanes_tile(kc, roff, wl, xt, qo, v);
    if (n16 > FWD_LANE_PIX) fwd_lanes_tile(kc, roff, wl, xt, qo + FWD_LANE_PIX, v + FWD_LANE_PIX);
    else
      for (int t = FWD_LANE_PIX; t < 16; t++) v[t] = _mm512_setzero_ps();
    for (int t = 0; t < n16; t++) v[t] = epi16(&e, v[t], NULL, lm, 0, 0);
    transpose16(v); // v[l]: channel o0 + l's 16 pixels
    __mmask16 pm = mask_range(0, n16);
    for (int64_t l = 0; l < nl; l++) _mm512_mask_storeu_ps(yn + (o0 + l) * k->p + q0, pm, v[l]);
  }
  return true;
}

// ---- grad_input ------------------------------------------------------------------------------------
// Per vector v of a dx row (columns 16v..) and tap column b: the dy column
// j0 the lanes' values start at, the lanes that get a tap (w + pw - b*dw
// a multiple of sw, its column inside y, w inside x) and, for a stride >
// 1, which of the 16 dy values from j0 each lane takes.
typedef struct GinCol {
  int32_t j0;
  __mmask16 m, lm; // the lanes that take a tap; the dy columns inside y
  _Alignas(64) int32_t idx[16];
} GinCol;

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// No division per lane or row (a call is one image and group: a few
// thousand FMAs, which 64-bit divisions per lane outweighed): the taps
// are enumerated from the output side, dx column w = j*sw - pw + b*dw.
static void gin_cols(const Conv *k, int64_t nv, GinCol *t) {
  for (int64_t v = 0; v < nv; v++)
    for (int64_t b = 0; b < k->kw; b++) {
      GinCol *g = &t[v * k->kw + b];
      g->j0 = (int32_t)floor_div(16 * v + k->pw - b * k->dw, k->sw), g->m = 0;
      g->lm = mask_range(-g->j0, k->wo - g->j0);
      memset(g->idx, 0, sizeof g->idx);
    }
  for (int64_t b = 0; b < k->kw; b++)
    for (int64_t j = 0, w = b * k->dw - k->pw; j < k->wo; j++, w += k->sw) {
      if (w < 0 || w >= k->w) continue;
      GinCol *g = &t[w / 16 * k->kw + b];
      g->m |= (__mmask16)(1u << (w % 16)), g->idx[w % 16] = (int32_t)(j - g->j0);
    }
}

// tab[h * KH + a]: the dy row i of dx row h's tap row a (h = i*sh - ph +
// a*dh), or -1 where that falls outside y or between strides.
static void gin_rows(const Conv *k, int32_t *tab) {
  for (int64_t e = 0; e < k->h * k->kh; e++) tab[e] = -1;
  for (int64_t a = 0; a < k->kh; a++)
    for (int64_t i = 0, h = a * k->dh - k->ph; i < k->ho; i++, h += k->sh)
      if (h >= 0 && h < k->h) tab[h * k->kh + a] = (int32_t)i;
}

// 16 dy values of channel row dyr from column j0 (zero outside the row),
// as the lanes of a tap take them.
static inline __attribute__((always_inline)) __m512 gin_load(const bool STRIDED, const float *dyr, const GinCol *g) {
  __m512 v = _mm512_maskz_loadu_ps(g->lm, dyr + g->j0);
  return STRIDED ? _mm512_permutexvar_ps(_mm512_load_si512(g->idx), v) : v;
}

// NU vectors of dx channel c (unit u: row hs[u], columns 16*vs[u]..),
// each one's sum over its taps in (a, b) order in a register (several
// units: independent sums, where one row's nine adds would be a chain of
// latencies); wt [O/G, Kc] the group's weights (rounded), tab gin_rows'.
// A tap's lanes that fall outside y (or x) add nothing: an exact + 0.
static inline __attribute__((always_inline)) void gin_units(const bool STRIDED, const int NU, const Conv *k,
                                                            const float *dyg, const float *wt, const GinCol *cols,
                                                            const int32_t *tab, int64_t c, const int64_t *hs,
                                                            const int64_t *vs, float *dxc) {
  const int64_t og = k->og, kc = k->kc, kw = k->kw, kh = k->kh, p = k->p, wo = k->wo;
  __m512 acc[4];
  _Pragma("GCC unroll 4") for (int u = 0; u < NU; u++) acc[u] = _mm512_setzero_ps();
  for (int64_t a = 0; a < kh; a++) {
    const float *wrow = wt + (c * kh + a) * kw, *dyr[4];
    __mmask16 rm[4];
    _Pragma("GCC unroll 4") for (int u = 0; u < NU; u++) {
      int32_t i = tab[hs[u] * kh + a];
      rm[u] = i >= 0 ? 0xffff : 0, dyr[u] = dyg + (i >= 0 ? i : 0) * wo;
    }
    for (int64_t b = 0; b < kw; b++) {
      __m512 s[4];
      _Pragma("GCC unroll 4") for (int u = 0; u < NU; u++) s[u] = _mm512_setzero_ps();
      for (int64_t o = 0; o < og; o++) {
        __m512 wv = _mm512_set1_ps(wrow[o * kc + b]);
        _Pragma("GCC unroll 4") for (int u = 0; u < NU; u++)
          s[u] = _mm512_fmadd_ps(wv, gin_load(STRIDED, dyr[u] + o * p, cols + vs[u] * kw + b), s[u]);
      }
      _Pragma("GCC unroll 4") for (int u = 0; u < NU; u++)
        acc[u] = _mm512_mask_add_ps(acc[u], cols[vs[u] * kw + b].m & rm[u], acc[u], s[u]);
    }
  }
  _Pragma("GCC unroll 4") for (int u = 0; u < NU; u++)
    _mm512_mask_storeu_ps(dxc + hs[u] * k->w + 16 * vs[u], mask_range(0, k->w - 16 * vs[u]), acc[u]);
}

// Channel c of dx: its rows' vectors in units of 4.
static inline __attribute__((always_inline)) void gin_channel(const bool STRIDED, const Conv *k, const float *dyg,
                                                              const float *wt, const GinCol *cols,
                                                              const int32_t *tab, int64_t c, float *dxc) {
  int64_t nv = (k->w + 15) / 16, hs[4], vs[4];
  int nu = 0;
  for (int64_t h = 0; h < k->h; h++)
    for (int64_t v = 0; v < nv; v++) {
      hs[nu] = h, vs[nu] = v;
      if (++nu == 4) gin_units(STRIDED, 4, k, dyg, wt, cols, tab, c, hs, vs, dxc), nu = 0;
    }
  switch (nu) {
  case 3: gin_units(STRIDED, 3, k, dyg, wt, cols, tab, c, hs, vs, dxc); break;
  case 2: gin_units(STRIDED, 2, k, dyg, wt, cols, tab, c, hs, vs, dxc); break;
  case 1: gin_units(STRIDED, 1, k, dyg, wt, cols, tab, c, hs, vs, dxc); break;
  }
}

// The call's tables, made once on the calling thread (conv.c) for every
// task: the columns' (GinCol per vector and tap column), the rows'
// (gin_rows) and w rounded by the precision bits, [O, Kc].
static int64_t gin_ncols(const Conv *k) { return (k->w + 15) / 16 * k->kw; }

int64_t conv_narrow_gin_floats(const Conv *k) {
  return gin_ncols(k) * (int64_t)(sizeof(GinCol) / sizeof(float)) + 16 + k->h * k->kh + k->o * k->kc;
}

static GinCol *gin_prep_cols(const float *prep) { return (GinCol *)(((uintptr_t)prep + 63) & ~(uintptr_t)63); }

void conv_narrow_gin_prep(const Conv *k, const float *w, uint32_t flags, float *prep) {
  GinCol *cols = gin_prep_cols(prep);
  int32_t *tab = (int32_t *)(cols + gin_ncols(k));
  float *wt = (float *)(tab + k->h * k->kh);
  gin_cols(k, (k->w + 15) / 16, cols);
  gin_rows(k, tab);
  for (int64_t i = 0; i < k->o * k->kc; i++) wt[i] = lanes_round(flags, w[i]);
}

// dx[n, g] [C/G, H, W], all of it, from dyg = dy[n, g] [O/G, P] and the
// call's tables. With the precision bits dy is read from a rounded copy
// (slot COL).
bool conv_narrow_grad_input(const Conv *k, const float *dyg, const float *prep, int64_t g, uint32_t flags,
                            float *dxg) {
  const GinCol *cols = gin_prep_cols(prep);
  const int32_t *tab = (const int32_t *)(cols + gin_ncols(k));
  const float *wt = (const float *)(tab + k->h * k->kh) + g * k->og * k->kc;
  if (flags & (MLC_GEMM_BF16 | MLC_GEMM_F16)) {
    float *d = gemm_scratch(GEMM_SCRATCH_COL, k->og * k->p);
    if (!d) return false;
    for (int64_t i = 0; i < k->og * k->p; i++) d[i] = lanes_round(flags, dyg[i]);
    dyg = d;
  }
  bool strided = k->sw > 1;
  for (int64_t c = 0; c < k->cg; c++) {
    float *dxc = dxg + c * k->h * k->w;
    if (strided) gin_channel(true, k, dyg, wt, cols, tab, c, dxc);
    else gin_channel(false, k, dyg, wt, cols, tab, c, dxc);
  }
  return true;
}

// ---- grad_weight ------------------------------------------------------------------------------------
// out [n, 16]: element t of rows src[l] (l < 16; NULL: a zero row) in lane
// l, for t < n, rounded by the precision bits.
static void transpose_rows(const float *const *src, int64_t n, uint32_t flags, float *out) {
  bool rnd = flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  for (int64_t t = 0; t < n; t += 16) {
    __mmask16 m = mask_range(0, n - t);
    __m512 r[16];
    for (int l = 0; l < 16; l++) r[l] = src[l] ? _mm512_maskz_loadu_ps(m, src[l] + t) : _mm512_setzero_ps();
    transpose16(r);
    for (int j = 0; j < 16 && t + j < n; j++) {
      float *d = out + (t + j) * 16;
      _mm512_storeu_ps(d, r[j]);
      if (rnd)
        for (int l = 0; l < 16; l++) d[l] = lanes_round(flags, d[l]);
    }
  }
}

// ---- grad_input in channel lanes (depthwise) ----------------------------------------------------------
// One channel per group in and out: 16 channels of one dx pixel in the
// lanes, from dy^T [P, 16] of the 16 channels (grad_weight's transpose).
// Per tap (a, b) in order, the dcol element w * dy (its chain over the one
// output channel, from +0) is added to the pixel's sum when the tap falls
// inside y and on a stride (the same for all 16 lanes, from a table made
// once per call); otherwise nothing is added, the mask keeping an infinite
// w's 0 * inf out: the bits of grad_input above. 8 pixels a tile, then the
// 16 x 16 tile transposed back to dx's channel planes.
static inline __attribute__((always_inline)) void gin_lanes_tile(int64_t kc, const int32_t *tab, const float *wl,
                                                                 const float *dyt, __m512 *acc) {
  _Pragma("GCC unroll 8") for (int t = 0; t < FWD_LANE_PIX; t++) acc[t] = _mm512_setzero_ps();
  for (int64_t r = 0; r < kc; r++) {
    __m512 wv = _mm512_loadu_ps(wl + 16 * r);
    _Pragma("GCC unroll 8") for (int t = 0; t < FWD_LANE_PIX; t++) {
      int32_t off = tab[t * kc + r];
      __m512 s = _mm512_fmadd_ps(wv, _mm512_loadu_ps(dyt + (off >= 0 ? off : 0)), _mm512_setzero_ps());
      acc[t] = _mm512_mask_add_ps(acc[t], off >= 0 ? 0xffff : 0, acc[t], s);
    }
  }
}

// dx[c0..c0+nl) of one image from dy^T [P, 16], wl [Kc, 16] and the
// call's table (conv_narrow.c's conv_narrow_grad_input_lanes made them).
static void gin_lanes(const Conv *k, const int32_t *tab, const float *wl, const float *dyt, int64_t nl, int64_t c0,
                      float *dxn) {
  int64_t kc = k->kc, hw = k->h * k->w;
  int32_t part[FWD_LANE_PIX * MLC_GEMM_KC_MAX]; // a short tile's rows: the pixels it has, then no taps
  for (int64_t q0 = 0; q0 < hw; q0 += 16) {
    int n16 = (int)(hw - q0 < 16 ? hw - q0 : 16);
    __m512 v[16];
    for (int half = 0; half < 2; half++) {
      int64_t qs = q0 + half * FWD_LANE_PIX, have = hw - qs;
      const int32_t *rows = tab + qs * kc;
      if (have < FWD_LANE_PIX) {
        for (int64_t e = 0; e < FWD_LANE_PIX * kc; e++) part[e] = e < have * kc ? rows[e] : -1;
        rows = part;
      }
      gin_lanes_tile(kc, rows, wl, dyt, v + half * FWD_LANE_PIX);
    }
    transpose16(v); // v[l]: channel c0 + l's 16 pixels
    __mmask16 pm = mask_range(0, n16);
    for (int64_t l = 0; l < nl; l++) _mm512_mask_storeu_ps(dxn + (c0 + l) * hw + q0, pm, v[l]);
  }
}

// NR sums (rows r0.. of dw^T, their tap offsets roff) of the 16 lanes over
// one K block: pixels qoff[0..nq) of x^T, dyt [nq, 16].
static inline __attribute__((always_inline)) void gw_block(const int NR, const int32_t *roff, const int32_t *qoff,
                                                           const float *xt, const float *dyt, int64_t nq,
                                                           bool first, float *sums) {
  __m512 acc[NARROW_MAX_ACC];
  _Pragma("GCC unroll 16") for (int r = 0; r < NR; r++) acc[r] = _mm512_setzero_ps();
  for (int64_t q = 0; q < nq; q++) {
    __m512 d = _mm512_loadu_ps(dyt + q * 16);
    const float *xq = xt + qoff[q];
    _Pragma("GCC unroll 16") for (int r = 0; r < NR; r++) acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(xq + roff[r]), d, acc[r]);
  }
  _Pragma("GCC unroll 16") for (int r = 0; r < NR; r++)
    _mm512_storeu_ps(sums + 16 * r, first ? acc[r] : _mm512_add_ps(acc[r], _mm512_loadu_ps(sums + 16 * r)));
}

#define GW_NR(N) \
  case N: gw_block(N, roff, qoff, xt, dyt, nq, first, sums); break;
static void gw_rows(int nr, const int32_t *roff, const int32_t *qoff, const float *xt, const float *dyt, int64_t nq,
                    bool first, float *sums) {
  switch (nr) {
    GW_NR(1) GW_NR(2) GW_NR(3) GW_NR(4) GW_NR(5) GW_NR(6) GW_NR(7) GW_NR(8)
    GW_NR(9) GW_NR(10) GW_NR(11) GW_NR(12) GW_NR(13) GW_NR(14) GW_NR(15) GW_NR(16)
  }
}
#undef GW_NR

const NarrowGwOps conv_narrow_gw_avx512 = {transpose_rows, gw_rows, gin_lanes};
