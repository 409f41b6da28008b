// conv_lanes_avx2.c — the channel-lane forward and grad_input (conv_lanes_avx512.c) on
// AVX2 + FMA: y[o, q] for 8 channels o of one pixel q in one ymm register,
// each step p = (c, a, b) of the K sum one load of 8 packed weights w[o, p]
// and one broadcast of x(p, q). It reads the same packed weights ([Kc, OP],
// OP = O/G rounded up to 16, zeros past O/G: a 16-channel vector is two
// ymm halves here) and the same zero-padded copy of the plane, so a tile
// is any set of pixels and no step needs a mask.
//
// Tiles: 16 registers hold 6 pixels x 2 halves (12 accumulators), the two
// weight halves and one broadcast: per step 2 weight loads and 6
// broadcasts per 12 FMAs. The tile writes yt [pixel, channel]; an 8 x 8
// transpose per block then applies gemm_epi_avx2.h's epilogue and stores y
// [channel, pixel].
//
// Bits: each output is, per K block, one fmaf chain over the block's p in
// order from +0, its K slices resumed from yt or ys (a stored float
// reloaded), the block sums added in order (conv_lanes.h's
// lanes_slice_mode), then the epilogue: what conv_lanes_avx512.c computes,
// gemm_region's result over col and kernels/gemm_ref.h's
// (tests/kernels/test_conv.c compares them under MLC_CPU_ISA=avx2).
//
// Also the depthwise passes with 16 channels of a pixel in the lanes
// (conv_narrow_avx512.c's, below): the forward, grad_input's loop and the
// narrow passes' transpose, two ymm per pixel.
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "conv_internal.h"
#include "conv_lanes.h"
#include "gemm_epi_avx2.h"
#include "gemm_internal.h"

// On unless conv_lanes_avx2_enable(false): the measurements of
// docs/design/kernels.md compare it with col + GEMM in one process.
static _Atomic bool avx2_off;
void conv_lanes_avx2_enable(bool on) { avx2_off = !on; }
bool conv_lanes_avx2_ok(void) { return !avx2_off && gemm_have_avx2(); }

void conv_lanes_pack_w_scalar(const Conv *k, const float *w, uint32_t flags, float *wp) {
  int64_t op = lanes_op(k);
  for (int64_t g = 0; g < k->g; g++)
    for (int64_t p0 = 0; p0 < k->kc; p0 += 16)
      for (int64_t o0 = 0; o0 < op; o0 += 16) lanes_pack_block(k, w + g * k->og * k->kc, p0, o0, flags, wp + g * k->kc * op);
}

// xp [C/G, rows, WP] = x rows r0 - ph .., columns -pw .., zero outside x
// (rounded by the precision bits, as the GEMM's packing rounds col).
static void pad_plane(const Conv *k, const float *xg, int64_t r0, int64_t rows, uint32_t flags, float *xp) {
  int64_t wp = lanes_pad_w(k);
  bool rnd = flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  for (int64_t c = 0; c < k->cg; c++)
    for (int64_t r = 0; r < rows; r++) {
      float *d = xp + (c * rows + r) * wp;
      int64_t h = r0 + r - k->ph;
      memset(d, 0, (size_t)wp * sizeof *d);
      if (h < 0 || h >= k->h) continue;
      const float *s = xg + (c * k->h + h) * k->w - k->pw; // s[j]: padded column j
      int64_t lo = k->pw < wp ? k->pw : wp, hi = k->pw + k->w < wp ? k->pw + k->w : wp;
      if (rnd)
        for (int64_t j = lo; j < hi; j++) d[j] = lanes_round(flags, s[j]);
      else if (hi > lo)
        memcpy(d + lo, s + lo, (size_t)(hi - lo) * sizeof *d);
    }
}

enum { NP = 6 };

// One tile: NP pixels (input pointers at[t], tap offsets off[p]) x one
// 16-channel vector (packed weights wp, row stride ldw) over kc steps;
// yt[t*ldt] gets the sums of the first nreal pixels as the mode says
// (conv_lanes.h), resumed from ys[t*ldt] (RESUME, RESUME_ADD; ys may be
// yt).
static void tile(int64_t kc, const int32_t *off, const float *wp, int64_t ldw, const float *const *at, int nreal,
                 const float *ys, float *yt, int64_t ldt, int mode) {
  bool resume = mode == LANES_RESUME || mode == LANES_RESUME_ADD;
  bool add = mode == LANES_ADD || mode == LANES_RESUME_ADD;
  __m256 acc[2 * NP];
  const float *a[NP];
  _Pragma("GCC unroll 6") for (int t = 0; t < NP; t++) a[t] = at[t];
  if (resume) {
    // only the nreal rows ys holds: a short last tile's other rows may lie
    // past the end of ys [round8(nq), ldt]
    _Pragma("GCC unroll 6") for (int t = 0; t < NP; t++) {
      acc[2 * t] = t < nreal ? _mm256_load_ps(ys + t * ldt) : _mm256_setzero_ps();
      acc[2 * t + 1] = t < nreal ? _mm256_load_ps(ys + t * ldt + 8) : _mm256_setzero_ps();
    }
  } else {
    _Pragma("GCC unroll 12") for (int i = 0; i < 2 * NP; i++) acc[i] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < kc; p++, wp += ldw) {
    __m256 w0 = _mm256_load_ps(wp), w1 = _mm256_load_ps(wp + 8);
    int64_t o = off[p];
    _Pragma("GCC unroll 6") for (int t = 0; t < NP; t++) {
      __m256 xb = _mm256_broadcast_ss(a[t] + o);
      acc[2 * t] = _mm256_fmadd_ps(w0, xb, acc[2 * t]);
      acc[2 * t + 1] = _mm256_fmadd_ps(w1, xb, acc[2 * t + 1]);
    }
  }
  __m256 out[2 * NP];
  _Pragma("GCC unroll 12") for (int i = 0; i < 2 * NP; i++) out[i] = acc[i];
  if (nreal > NP) nreal = NP; // never; says so to the compiler
  for (int t = 0; t < nreal; t++) {
    float *d = yt + t * ldt;
    __m256 y0 = out[2 * t], y1 = out[2 * t + 1];
    if (add) y0 = _mm256_add_ps(y0, _mm256_load_ps(d)), y1 = _mm256_add_ps(y1, _mm256_load_ps(d + 8));
    if (mode == LANES_ACCUM) y0 = _mm256_add_ps(_mm256_load_ps(d), y0), y1 = _mm256_add_ps(_mm256_load_ps(d + 8), y1);
    _mm256_store_ps(d, y0);
    _mm256_store_ps(d + 8, y1);
  }
}

// yt [nq, OP] for pixels [q0, q0+nq): per 16-channel vector, K in slices
// whose weights stay in L1 across the pixel tiles (LANES_KB_BYTES, as the
// AVX-512 rows) within K blocks (lanes_slice_mode: a later block's chains
// in ys, then added to yt), each tile of NP pixels.
enum { LANES_KB_BYTES = 24576 };
static void lanes_sums(const Conv *k, const float *xp, int64_t r0, int64_t wpw, const int32_t *off, const float *wpg,
                       int64_t q0, int64_t nq, float *yt, float *ys) {
  int64_t op = lanes_op(k), kb = LANES_KB_BYTES / 64, kbl = mlc_gemm_kblock(k->kc);
  for (int64_t v = 0; v < op / 16; v++)
    for (int64_t b0 = 0; b0 < k->kc; b0 += kbl) {
      int64_t b1 = b0 + kbl < k->kc ? b0 + kbl : k->kc, sl = lanes_slice_len(b0, b1, kb);
      for (int64_t p0 = b0; p0 < b1; p0 += sl) {
        int64_t p1 = p0 + sl < b1 ? p0 + sl : b1;
        float *from, *to;
        int mode = lanes_slice_mode(b0, b1, p0, p1, yt, ys, &from, &to);
        for (int64_t q = 0; q < nq; q += NP) {
          int n = (int)(nq - q < NP ? nq - q : NP);
          const float *at[NP];
          lanes_pixel_ptrs(k, xp, r0, wpw, q0 + q, n, NP, at);
          tile(p1 - p0, off + p0, wpg + p0 * op + 16 * v, op, at, n, from + q * op + 16 * v, to + q * op + 16 * v, op,
               mode);
        }
      }
    }
}

// 8 x 8 transpose: r[i] (row i) -> r[j] = column j.
static inline __attribute__((always_inline)) void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; i++)
    for (int h = 0; h < 2; h++) {
      __m256 a = t[4 * i + h], b = t[4 * i + 2 + h];
      u[4 * i + 2 * h] = _mm256_shuffle_ps(a, b, 0x44);
      u[4 * i + 2 * h + 1] = _mm256_shuffle_ps(a, b, 0xee);
    }
  // u[4i + m] holds, in each 128-bit half l, column 4l + m of rows 4i..4i+3
  for (int m = 0; m < 4; m++) {
    r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
    r[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
  }
}

// y [rows, ldy] (at pixel 0) = epilogue(yt^T) for rows < nrows (channels),
// pixels < nq; yt [>= nq rounded to 8, ldt]; e NULL: stored as it is.
static void lanes_store(const float *yt, int64_t ldt, int64_t nrows, int64_t nq, const GemmEpi *e, float *y,
                        int64_t ldy) {
  for (int64_t c0 = 0; c0 < nrows; c0 += 8)
    for (int64_t q = 0; q < nq; q += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; i++) r[i] = _mm256_load_ps(yt + (q + i) * ldt + c0);
      transpose8(r);
      __m256i m = lanes((int)(nq - q < 8 ? nq - q : 8));
      int rows = (int)(nrows - c0 < 8 ? nrows - c0 : 8);
      for (int i = 0; i < rows; i++) {
        float *yr = y + (c0 + i) * ldy + q;
        _mm256_maskstore_ps(yr, m, e ? epi8(e, r[i], yr, m, (int)c0 + i, 0) : r[i]);
      }
    }
}

bool conv_lanes_fwd_avx2(const Conv *k, const float *xg, const float *wpg, const float *bias, uint32_t flags,
                         float *y, int64_t q0, int64_t nq) {
  if (nq <= 0) return true;
  int64_t op = lanes_op(k), wpw = lanes_pad_w(k), i0 = q0 / k->wo, i1 = (q0 + nq - 1) / k->wo;
  int64_t r0 = i0 * k->sh, rows = lanes_pad_rows(k, i0, i1), ytq = (nq + 7) / 8 * 8;
  float *xp = gemm_scratch(GEMM_SCRATCH_COL, k->cg * rows * wpw), *ys;
  int32_t *off;
  float *yt = lanes_fwd_scratch(k, ytq, &ys, &off);
  if (!xp || !yt) return false;
  pad_plane(k, xg, r0, rows, flags, xp);
  lanes_tap_offsets(k, rows, wpw, off);
  lanes_sums(k, xp, r0, wpw, off, wpg, q0, nq, yt, ys);
  memset(yt + nq * op, 0, (size_t)((ytq - nq) * op) * sizeof(float)); // rows the transpose reads, never stores
  GemmEpi e = {.flags = flags & ~(uint32_t)(MLC_GEMM_BF16 | MLC_GEMM_F16), .alpha = 1, .beta = 0, .bias_row = bias};
  lanes_store(yt, op, k->og, nq, &e, y, k->p);
  return true;
}

// ---- grad_input ------------------------------------------------------------------------------
// conv_lanes_avx512.c's grad_input on these tiles: dx [C/G, H, W] of one
// image and group = the stride-1 convolution of dy, padded by the flipped
// filter's reach (dyp [O/G, HQ, WQ]), with wt [KH*KW, O/G, CP] (w flipped
// and transposed, conv_lanes_pack_wt); per 16-channel vector of dx, per tap
// (a, b) in order, every pixel's chain over o from +0 added to dxt (dxt +
// chain), as the AVX-512 rows and col2im add them.

bool conv_lanes_pack_wt_scalar(const Conv *k, const float *w, uint32_t flags, float *wt) {
  int64_t cp = lanes_cp(k), ntap = k->kh * k->kw;
  bool finite = true; // an inf or a NaN in w: the caller keeps the GEMM path (see conv_lanes_avx512.c)
  for (int64_t g = 0; g < k->g; g++)
    for (int64_t t = 0; t < ntap; t++)
      for (int64_t o = 0; o < k->og; o++) {
        float *d = wt + ((g * ntap + t) * k->og + o) * cp;
        const float *s = w + (g * k->og + o) * k->kc + t;
        for (int64_t c = 0; c < cp; c++) {
          d[c] = c < k->cg ? lanes_round(flags, s[c * ntap]) : 0;
          finite &= isfinite(d[c]) != 0;
        }
      }
  return finite;
}

bool conv_lanes_grad_input_avx2(const Conv *k, const float *dyg, const float *wtg, uint32_t flags, float *dxg) {
  int64_t cp = lanes_cp(k), hq = gin_hq(k), wq = gin_wq(k), nx = k->h * k->w;
  int64_t eh = (k->kh - 1) * k->dh - k->ph, ew = (k->kw - 1) * k->dw - k->pw; // dyp row ii: y row ii - eh
  int64_t xtq = (nx + 7) / 8 * 8;
  float *dyp;
  int32_t *ooff, *xoff; // o -> its plane, dx pixel -> its dyp offset
  float *dxt = lanes_gin_scratch(k, xtq, &dyp, &ooff, &xoff);
  if (!dxt) return false;
  bool rnd = flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  int64_t lo = ew > 0 ? ew : 0, hi = ew + k->wo < wq ? ew + k->wo : wq; // dyp columns that hold dy
  for (int64_t o = 0; o < k->og; o++) {
    for (int64_t ii = 0; ii < hq; ii++) {
      float *d = dyp + (o * hq + ii) * wq;
      int64_t i = ii - eh;
      memset(d, 0, (size_t)wq * sizeof *d);
      if (i < 0 || i >= k->ho || hi <= lo) continue;
      const float *s = dyg + (o * k->ho + i) * k->wo - ew; // s[jj]: y column jj - ew
      for (int64_t jj = lo; jj < hi; jj++) d[jj] = rnd ? lanes_round(flags, s[jj]) : s[jj];
    }
  }
  memset(dxt, 0, (size_t)(xtq * cp) * sizeof(float));
  for (int64_t v = 0; v < cp / 16; v++)
    for (int64_t a = 0; a < k->kh; a++)
      for (int64_t b = 0; b < k->kw; b++) {
        int64_t toff = (k->kh - 1 - a) * k->dh * wq + (k->kw - 1 - b) * k->dw;
        const float *wtt = wtg + (a * k->kw + b) * k->og * cp + 16 * v;
        for (int64_t q = 0; q < nx; q += NP) {
          int n = (int)(nx - q < NP ? nx - q : NP);
          const float *at[NP];
          for (int t = 0; t < NP; t++) at[t] = dyp + xoff[q + (t < n ? t : n - 1)] + toff;
          tile(k->og, ooff, wtt, cp, at, n, NULL, dxt + q * cp + 16 * v, cp, LANES_ACCUM);
        }
      }
  lanes_store(dxt, cp, k->cg, nx, NULL, dxg, nx);
  return true;
}

// ---- the depthwise passes in channel lanes ----------------------------------------------------
// 8 pixels' 16 channels (v[t][h]: pixel t's channels 8h..8h+7) back to
// the channels' planes: y[l * ldy + t] for channels l < nl, pixels t < n8,
// through two 8 x 8 transposes.
static void lanes16_store(__m256 v[8][2], int nl, int n8, float *y, int64_t ldy) {
  __m256i pm = lanes(n8);
  for (int h = 0; h < 2 && 8 * h < nl; h++) {
    __m256 r[8];
    for (int t = 0; t < 8; t++) r[t] = v[t][h];
    transpose8(r); // r[l]: channel 8h + l's 8 pixels
    for (int l = 0; l < 8 && 8 * h + l < nl; l++) {
      float *d = y + (8 * h + l) * ldy;
      if (n8 == 8) _mm256_storeu_ps(d, r[l]);
      else _mm256_maskstore_ps(d, pm, r[l]);
    }
  }
}

// The forward: conv_narrow_avx512.c's conv_narrow_fwd_lanes on AVX2: 16 channels of an
// output pixel in two ymm, tiles of 4 pixels (8 accumulators and 2 weight
// vectors of 16 registers), each lane's chain over its taps in order from
// +0 (padding taps multiply x^T's zeros), the epilogue (epi8, the ops of
// gemm_epi_scalar), then per 8 pixels two 8 x 8 transposes back to the
// channels' planes: the AVX-512 pass's bits.
static inline __attribute__((always_inline)) void narrow_fwd_tile(int64_t kc, const int32_t *roff, const float *wl,
                                                                  const float *xt, const int32_t *qo, __m256 acc[][2]) {
  for (int t = 0; t < 4; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t r = 0; r < kc; r++) {
    __m256 w0 = _mm256_loadu_ps(wl + 16 * r), w1 = _mm256_loadu_ps(wl + 16 * r + 8);
    for (int t = 0; t < 4; t++) {
      const float *x = xt + qo[t] + roff[r];
      acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x), acc[t][0]);
      acc[t][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + 8), acc[t][1]);
    }
  }
}

bool conv_narrow_fwd_lanes_avx2(const Conv *k, const float *xn, const float *w, const float *bias, uint32_t flags,
                                int64_t o0, float *yn) {
  int nl = (int)(k->o - o0 < 16 ? k->o - o0 : 16);
  float *wl;
  const float *xt = conv_narrow_fwd_lanes_prep(k, xn, w, o0, flags, &wl);
  if (!xt) return false;
  int32_t roff[MLC_GEMM_KC_MAX];
  narrow_fwd_roff(k, roff);
  GemmEpi e = {.flags = (bias ? MLC_GEMM_BIAS_COL : 0) | (flags & MLC_CONV_RELU ? MLC_GEMM_RELU : 0), .alpha = 1,
               .beta = 0, .bias_col = bias ? bias + o0 : NULL};
  __m256i lm[2] = {lanes(nl), lanes(nl - 8)};
  for (int64_t q0 = 0, i = 0, j = 0; q0 < k->p; q0 += 16) {
    int32_t qo[16];
    int n16 = narrow_fwd_qo(k, q0, &i, &j, qo);
    for (int p8 = 0; p8 < n16; p8 += 8) {
      int n8 = n16 - p8 < 8 ? n16 - p8 : 8;
      __m256 v[8][2];
      narrow_fwd_tile(k->kc, roff, wl, xt, qo + p8, v);
      if (n8 > 4) narrow_fwd_tile(k->kc, roff, wl, xt, qo + p8 + 4, v + 4);
      else
        for (int t = 4; t < 8; t++) v[t][0] = v[t][1] = _mm256_setzero_ps();
      for (int t = 0; t < n8; t++)
        for (int h = 0; h < 2; h++) v[t][h] = epi8(&e, v[t][h], NULL, lm[h], 0, 8 * h);
      lanes16_store(v, nl, n8, yn + o0 * k->p + q0 + p8, k->p);
    }
  }
  return true;
}

// grad_input's loop: conv_narrow_avx512.c's gin_lanes on AVX2: 16 channels of a dx pixel in
// two ymm, tiles of 4 pixels; per tap r in order, fmaf(w, dy, +0) at the
// table's dy^T offset, added where the table has the tap and where it has
// -1 ANDed to +0 (a sum from +0 of such products is never -0, so adding
// +0 leaves it as it is, and an infinite w never meets a zero), then two
// 8 x 8 transposes per 8 pixels back to the channels' planes.
static inline __attribute__((always_inline)) void gin_lanes_tile(int64_t kc, const int32_t *tab, const float *wl,
                                                                 const float *dyt, __m256 acc[][2]) {
  const __m256 zero = _mm256_setzero_ps();
  for (int t = 0; t < 4; t++) acc[t][0] = acc[t][1] = zero;
  for (int64_t r = 0; r < kc; r++) {
    __m256 w0 = _mm256_loadu_ps(wl + 16 * r), w1 = _mm256_loadu_ps(wl + 16 * r + 8);
    for (int t = 0; t < 4; t++) {
      int32_t off = tab[t * kc + r];
      const float *d = dyt + (off >= 0 ? off : 0);
      __m256 in = _mm256_castsi256_ps(_mm256_set1_epi32(off >= 0 ? -1 : 0));
      acc[t][0] = _mm256_add_ps(acc[t][0], _mm256_and_ps(in, _mm256_fmadd_ps(w0, _mm256_loadu_ps(d), zero)));
      acc[t][1] = _mm256_add_ps(acc[t][1], _mm256_and_ps(in, _mm256_fmadd_ps(w1, _mm256_loadu_ps(d + 8), zero)));
    }
  }
}

void conv_narrow_gin_lanes_avx2(const Conv *k, const int32_t *tab, const float *wl, const float *dyt, int64_t nl,
                                int64_t c0, float *dxn) {
  int64_t kc = k->kc, hw = k->h * k->w;
  int32_t part[4 * MLC_GEMM_KC_MAX]; // a short tile's rows: the pixels it has, then no taps
  for (int64_t q0 = 0; q0 < hw; q0 += 8) {
    int n8 = (int)(hw - q0 < 8 ? hw - q0 : 8);
    __m256 v[8][2];
    for (int i = 0; i < 2; i++) {
      int64_t qs = q0 + 4 * i, have = hw - qs;
      const int32_t *rows = tab + qs * kc;
      if (have <= 0) {
        for (int t = 4 * i; t < 4 * i + 4; t++) v[t][0] = v[t][1] = _mm256_setzero_ps();
        continue;
      }
      if (have < 4) {
        for (int64_t e = 0; e < 4 * kc; e++) part[e] = e < have * kc ? rows[e] : -1;
        rows = part;
      }
      gin_lanes_tile(kc, rows, wl, dyt, v + 4 * i);
    }
    lanes16_store(v, nl, n8, dxn + c0 * hw + q0, hw);
  }
}

// ---- the narrow passes' transposes -----------------------------------------------------------
// conv_narrow.c's transpose_c on AVX2: out [n, 16], lane l of row t the
// element t of src[l] (NULL: zero), rounded by the precision bits; per 8
// columns and 8 lanes one 8 x 8 transpose (the C loop's stores, 16 floats
// apart, were most of the narrow passes' x^T and dy^T builds).
void conv_narrow_transpose_avx2(const float *const *src, int64_t n, uint32_t flags, float *out) {
  for (int64_t t0 = 0; t0 < n; t0 += 8) {
    int m = (int)(n - t0 < 8 ? n - t0 : 8);
    __m256i cm = lanes(m);
    for (int h = 0; h < 2; h++) {
      __m256 r[8];
      for (int l = 0; l < 8; l++) {
        const float *s = src[8 * h + l];
        r[l] = !s ? _mm256_setzero_ps() : m == 8 ? _mm256_loadu_ps(s + t0) : _mm256_maskload_ps(s + t0, cm);
      }
      transpose8(r); // r[t]: column t0 + t's 8 lanes
      for (int t = 0; t < m; t++) _mm256_storeu_ps(out + (t0 + t) * 16 + 8 * h, r[t]);
    }
  }
  if (flags & (MLC_GEMM_BF16 | MLC_GEMM_F16))
    for (int64_t i = 0; i < n * 16; i++) out[i] = lanes_round(flags, out[i]);
}
