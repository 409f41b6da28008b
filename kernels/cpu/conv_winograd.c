// conv_winograd.c — mlc_conv2d's opt-in Winograd F(2x2, 3x3) path
// (MLC_CONV_WINOGRAD): 3x3 convolutions with both strides and dilations 1
// and one group, any padding, plane and channel counts, NCHW.
//
// Per call the filter transform U = G g G^T makes 16 matrices [O, C] (or
// the current GEMM cache's copy of it, made once, when w is a declared
// constant: predict). The output's 2 x 2 tiles, flattened over (image,
// tile row, tile column), are cut into blocks of whole tile rows; a task
// takes one block (and, when there are fewer blocks than threads, one
// slice of the output channels) and
//   1. transforms its input windows, V = B^T d B, into 16 matrices [C, T]
//      (T tiles; channel c's row of matrix xi holds that element of every
//      tile's V);
//   2. runs 16 GEMMs M_xi [O, T] = U_xi [O, C] @ V_xi [C, T] (gemm_region:
//      each element one fmaf chain over c in order, K-blocked as any K);
//   3. transforms M back, Y = A^T M A, adds the bias, applies relu, writes
//      the tile's in-range outputs and, for mlc_conv2d_pool, its 2 x 2 max
//      (a tile is a pool window).
// On AVX-512 with C <= 128 (the fused path, below) steps 2 and 3 run per
// group of 6 tiles and 64 output channels in registers and L1 instead:
// no packing, no M array, y not written when only the pool is wanted.
// Each output is computed by one task with kernels/winograd_ref.h's
// operations in its order (the transforms are plain float adds and
// subtracts, -ffp-contract=off, vectorised by the compiler without
// reordering), so the bits are the reference's for any thread count and
// block split. Only the filter transform's 0.5 scaling multiplies.
//
// 4 x 4 windows of neighbouring tiles overlap by two columns: the input
// transform reads each padded input row once, split into even and odd
// columns, applies the column pass to whole rows and the row pass to
// neighbouring (even, odd) pairs, so its loops are unit-stride over tiles.
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conv_winograd.h"
#include "gemm_internal.h"
#include "gemv.h"
#include "mlc_rt.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define WG_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WG_CLONES
#endif
// The short copies (a split row: 8 floats for a 14-wide plane) stay loops,
// inlined: a libc call or a clone's dispatch per row cost more than the copy.
#if defined(__GNUC__) && !defined(__clang__)
#define WG_SHORT static inline __attribute__((always_inline, optimize("no-tree-loop-distribute-patterns")))
#else
#define WG_SHORT static inline
#endif

bool conv_winograd_applies(const Conv *k, uint32_t flags) {
  return (flags & MLC_CONV_WINOGRAD) && k->kh == 3 && k->kw == 3 && k->sh == 1 && k->sw == 1 && k->dh == 1 &&
         k->dw == 1 && k->g == 1 && k->c > 0 && !(flags & (MLC_GEMM_BF16 | MLC_GEMM_F16));
}

// ---- filter transform ----------------------------------------------------------------------------
// u [16][O][C] from w [O][C][3][3]: U_xi[o][c] = (G w[o][c] G^T)[xi], in
// runs of up to 256 (o, c) pairs: the 9 taps are first copied into planes
// g[tap][pair], so that both passes are vector loops over pairs (the same
// operations as filter1's, so the same bits).
WG_CLONES static void filter_run(const float *restrict g, int64_t np, int64_t stride, float *restrict u) {
  enum { R = 256 };
  float t[12][R]; // t[i*3 + b]: the column pass, row i of 4, tap column b
  for (int b = 0; b < 3; b++)
    for (int64_t q = 0; q < np; q++) {
      float g0 = g[b * R + q], g1 = g[(3 + b) * R + q], g2 = g[(6 + b) * R + q];
      t[b][q] = g0, t[3 + b][q] = ((g0 + g1) + g2) * 0.5f, t[6 + b][q] = ((g0 - g1) + g2) * 0.5f, t[9 + b][q] = g2;
    }
  for (int i = 0; i < 4; i++)
    for (int64_t q = 0; q < np; q++) {
      float g0 = t[i * 3][q], g1 = t[i * 3 + 1][q], g2 = t[i * 3 + 2][q];
      u[(i * 4) * stride + q] = g0, u[(i * 4 + 1) * stride + q] = ((g0 + g1) + g2) * 0.5f;
      u[(i * 4 + 2) * stride + q] = ((g0 - g1) + g2) * 0.5f, u[(i * 4 + 3) * stride + q] = g2;
    }
}

static void filter_transform(const float *w, int64_t o, int64_t c, float *u) {
  enum { R = 256 };
  float g[9 * R];
  for (int64_t p0 = 0; p0 < o * c; p0 += R) {
    int64_t np = min64(R, o * c - p0);
    for (int64_t q = 0; q < np; q++)
      for (int tap = 0; tap < 9; tap++) g[tap * R + q] = w[(p0 + q) * 9 + tap];
    filter_run(g, np, o * c, u + p0);
  }
}

// ut [16][C][Op] (Op = O rounded up to 16, zeros past O): the fused
// path's layout, output channels in the vector lanes; the same values as
// filter_transform's, made by the same filter_run, in runs of up to 256
// output channels of one input channel, so that a run's 16 results are
// contiguous pieces of rows.
static void filter_transform_t(const float *w, int64_t o, int64_t c, float *ut) {
  enum { R = 256 };
  float g[9 * R], u[16 * R];
  int64_t op = pad16(o);
  for (int64_t cc = 0; cc < c; cc++) {
    for (int64_t o0 = 0; o0 < o; o0 += R) {
      int64_t np = min64(R, o - o0);
      for (int64_t q = 0; q < np; q++)
        for (int tap = 0; tap < 9; tap++) g[tap * R + q] = w[((o0 + q) * c + cc) * 9 + tap];
      filter_run(g, np, R, u);
      for (int xi = 0; xi < 16; xi++) memcpy(ut + (xi * c + cc) * op + o0, u + xi * R, sizeof(float) * (size_t)np);
    }
    for (int xi = 0; xi < 16; xi++)
      for (int64_t oo = o; oo < op; oo++) ut[(xi * c + cc) * op + oo] = 0;
  }
}

// V's matrices lie vstride floats apart: C rows of ld, and one cache line
// more, so that the 16 stores of a window (one per matrix) do not all map
// to one L1 set when C * ld is a multiple of 4 KiB (fashion conv2: 8 KiB).
static int64_t vstride(const Conv *k, int64_t ld) { return k->c * ld + 16; }

// ---- input transform -------------------------------------------------------------------------------
typedef struct WgJob {
  const Conv *k;
  uint32_t flags;
  const float *x, *u, *bias;
  float *y, *yp;
  int64_t th, tw;        // tile rows and columns per image
  int64_t rows;          // tile rows per block
  int64_t osplit, ostep; // output-channel slices per block, channels per slice
  bool fused;            // the fused path: u is ut [16][C][pad16(O)]; y may be NULL (yp only)
  atomic_int failed;
} WgJob;

// ev[k] = x row at column 2k - pw, od[k] at 2k + 1 - pw, k < tw + 1 (0 outside x).
WG_SHORT void split_row_scalar(const Conv *k, const float *row, int64_t tw, float *ev, float *od) {
  int64_t n = tw + 1, pw = k->pw, w = k->w;
  if (!row) {
    for (int64_t i = 0; i < n; i++) ev[i] = 0, od[i] = 0;
    return;
  }
  int64_t e0 = min64((pw + 1) / 2, n), e1 = max64(min64((w + pw + 1) / 2, n), e0);
  int64_t o0 = min64(pw / 2, n), o1 = max64(min64((w + pw) / 2, n), o0);
  for (int64_t i = 0; i < e0; i++) ev[i] = 0;
  for (int64_t i = e0; i < e1; i++) ev[i] = row[2 * i - pw];
  for (int64_t i = e1; i < n; i++) ev[i] = 0;
  for (int64_t i = 0; i < o0; i++) od[i] = 0;
  for (int64_t i = o0; i < o1; i++) od[i] = row[2 * i + 1 - pw];
  for (int64_t i = o1; i < n; i++) od[i] = 0;
}

// The same copies and the output rows' interleave with AVX-512 permutes:
// 16 even and 16 odd columns from two masked loads (lanes outside the row
// read 0, and never fault).
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define WG_AVX512 1
static uint32_t lane_mask(int64_t lo, int64_t hi) { // lanes [lo, hi) of 16
  lo = max64(lo, 0), hi = min64(hi, 16);
  return hi <= lo ? 0 : (uint32_t)((1u << hi) - 1) & ~(uint32_t)((1u << lo) - 1);
}

__attribute__((target("avx512f"))) static void split_row_avx512(const Conv *k, const float *row, int64_t tw,
                                                                float *ev, float *od) {
  int64_t n = tw + 1, w = k->w;
  const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int64_t k0 = 0; k0 < n; k0 += 16) {
    __mmask16 st = (__mmask16)lane_mask(0, n - k0);
    if (!row) {
      _mm512_mask_storeu_ps(ev + k0, st, _mm512_setzero_ps()), _mm512_mask_storeu_ps(od + k0, st, _mm512_setzero_ps());
      continue;
    }
    int64_t s0 = 2 * k0 - k->pw; // row column of lane 0 of the low vector
    __mmask16 m0 = (__mmask16)lane_mask(-s0, w - s0), m1 = (__mmask16)lane_mask(-s0 - 16, w - s0 - 16);
    __m512 lo = _mm512_maskz_loadu_ps(m0, (const char *)row + 4 * s0);
    __m512 hi = _mm512_maskz_loadu_ps(m1, (const char *)row + 4 * (s0 + 16));
    _mm512_mask_storeu_ps(ev + k0, st, _mm512_permutex2var_ps(lo, ie, hi));
    _mm512_mask_storeu_ps(od + k0, st, _mm512_permutex2var_ps(lo, io, hi));
  }
}

__attribute__((target("avx512f"))) static void interleave_avx512(const float *e, const float *o, int64_t wo,
                                                                 float *row) {
  const __m512i i0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i i1 = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  for (int64_t q = 0; q < wo; q += 32) {
    __mmask16 ml = (__mmask16)lane_mask(0, (wo - q + 1) / 2);
    __m512 a = _mm512_maskz_loadu_ps(ml, e + q / 2), b = _mm512_maskz_loadu_ps(ml, o + q / 2);
    _mm512_mask_storeu_ps(row + q, (__mmask16)lane_mask(0, wo - q), _mm512_permutex2var_ps(a, i0, b));
    _mm512_mask_storeu_ps(row + q + 16, (__mmask16)lane_mask(0, wo - q - 16), _mm512_permutex2var_ps(a, i1, b));
  }
}

// Planes at most 30 wide (tw + 1 <= 16 split columns, one vector): a
// tile row's four window rows, split into even and odd columns, through
// both passes in registers: V of the tile
// row's tw + 1 columns (the last one junk) into vb + xi * xs (the
// operations of input_cols and input_row, so the same bits; column t + 1
// of the row pass is lane t + 1, one valignd). Never a store read back by
// a vector load (masked stores do not forward).
__attribute__((target("avx512f"))) static void split_v_avx512(const Conv *k, const float *xc, int64_t ty, int64_t tw,
                                                              float *vb, int64_t xs) {
  const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  int64_t s0 = -k->pw, w = k->w;
  __mmask16 st = (__mmask16)lane_mask(0, tw + 1), m0 = (__mmask16)lane_mask(-s0, w - s0);
  __mmask16 m1 = (__mmask16)lane_mask(-s0 - 16, w - s0 - 16);
  __m512 e[4], o[4];
  for (int r = 0; r < 4; r++) {
    int64_t hh = 2 * ty - k->ph + r;
    bool in = hh >= 0 && hh < k->h;
    const char *row = (const char *)(xc + (in ? hh : 0) * w);
    __m512 lo = _mm512_maskz_loadu_ps(in ? m0 : 0, row + 4 * s0), hi = _mm512_maskz_loadu_ps(in ? m1 : 0, row + 4 * (s0 + 16));
    e[r] = _mm512_permutex2var_ps(lo, ie, hi), o[r] = _mm512_permutex2var_ps(lo, io, hi);
  }
  __m512 ce[4] = {_mm512_sub_ps(e[0], e[2]), _mm512_add_ps(e[1], e[2]), _mm512_sub_ps(e[2], e[1]), _mm512_sub_ps(e[1], e[3])};
  __m512 co[4] = {_mm512_sub_ps(o[0], o[2]), _mm512_add_ps(o[1], o[2]), _mm512_sub_ps(o[2], o[1]), _mm512_sub_ps(o[1], o[3])};
  const __m512i zero = _mm512_setzero_si512();
  for (int r = 0; r < 4; r++) {
    __m512 a = ce[r], b = co[r];
    __m512 c = _mm512_castsi512_ps(_mm512_alignr_epi32(zero, _mm512_castps_si512(a), 1));
    __m512 d = _mm512_castsi512_ps(_mm512_alignr_epi32(zero, _mm512_castps_si512(b), 1));
    float *base = vb + (int64_t)(r * 4) * xs;
    __m512 q[4] = {_mm512_sub_ps(a, c), _mm512_add_ps(b, c), _mm512_sub_ps(c, b), _mm512_sub_ps(b, d)};
    for (int i = 0; i < 4; i++) {
      if (tw == 7) // 8 columns: one 32-byte store (aligned, 8-column rows in 64-byte aligned V), no masked split
        _mm256_storeu_ps(base + i * xs, _mm512_castps512_ps256(q[i]));
      else
        _mm512_mask_storeu_ps(base + i * xs, st, q[i]);
    }
  }
}

// Planes at most 32 wide: one tile row's two output rows from Y[a][b]
// (y[2a + b] + t0, tw tiles), and with p its pooled row: the pick of
// pool4, lane by lane.
__attribute__((target("avx512f"))) static void store_row_avx512(float *const *y, int64_t t0, int64_t tw, int64_t wo,
                                                                bool two, float *yo, float *p, int64_t wp) {
  const __m512i i0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i i1 = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  __mmask16 ml = (__mmask16)lane_mask(0, tw), s0 = (__mmask16)lane_mask(0, wo), s1 = (__mmask16)lane_mask(0, wo - 16);
  __m512 v[4];
  for (int q = 0; q < 4; q++) v[q] = _mm512_maskz_loadu_ps(ml, y[q] + t0);
  for (int a = 0; a < 1 + two; a++) {
    _mm512_mask_storeu_ps(yo + a * wo, s0, _mm512_permutex2var_ps(v[2 * a], i0, v[2 * a + 1]));
    _mm512_mask_storeu_ps(yo + a * wo + 16, s1, _mm512_permutex2var_ps(v[2 * a], i1, v[2 * a + 1]));
  }
  if (!p) return;
  __m512 best = v[0];
  for (int q = 1; q < 4; q++) {
    __mmask16 nan_first = _mm512_cmp_ps_mask(v[q], v[q], _CMP_UNORD_Q) & _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q);
    best = _mm512_mask_mov_ps(best, _mm512_cmp_ps_mask(v[q], best, _CMP_GT_OQ) | nan_first, v[q]);
  }
  _mm512_mask_storeu_ps(p, (__mmask16)lane_mask(0, wp), best);
}

#endif

static void split_row(const Conv *k, const float *row, int64_t tw, float *ev, float *od) {
#ifdef WG_AVX512
  if (gemm_have_avx512()) {
    split_row_avx512(k, row, tw, ev, od);
    return;
  }
#endif
  split_row_scalar(k, row, tw, ev, od);
}

// The column pass on four (split) rows d[0..3], each n long, in place.
WG_CLONES static void input_cols(float *restrict d0, float *restrict d1, float *restrict d2, float *restrict d3,
                                 int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float a = d0[i], b = d1[i], c = d2[i], e = d3[i];
    d0[i] = a - c, d1[i] = b + c, d2[i] = c - b, d3[i] = b - e;
  }
}

// The row pass of window row r over n columns: v_s[t] = V[r][s] of column t
// (ev and od hold n + 1 values).
WG_CLONES static void input_row(const float *restrict ev, const float *restrict od, int64_t n, float *restrict v0,
                                float *restrict v1, float *restrict v2, float *restrict v3) {
  for (int64_t t = 0; t < n; t++) {
    float a = ev[t], b = od[t], c = ev[t + 1], d = od[t + 1];
    v0[t] = a - c, v1[t] = b + c, v2[t] = c - b, v3[t] = b - d;
  }
}

// V [16][C][ld] of the block's tile rows [gr0, gr1), column (gr - gr0) *
// (tw + 1) + tx for tile (gr, tx): each tile row has one junk column more
// (tx = tw), so that both passes run once over the whole block (long
// vector loops even for a 7-tile row) and the row pass can read column
// t + 1 across a row's end; the junk columns' products are never read.
// buf holds 8 * (n + 1) floats, n = the block's columns.
static void input_transform(const WgJob *j, int64_t gr0, int64_t gr1, float *v, int64_t ld, float *buf) {
  const Conv *k = j->k;
  int64_t tw = j->tw, n1 = tw + 1, n = (gr1 - gr0) * n1, xs = vstride(k, ld); // xs: matrix xi to xi + 1
  float *ev[4], *od[4];
  for (int r = 0; r < 4; r++) ev[r] = buf + (2 * r) * (n + 1), od[r] = buf + (2 * r + 1) * (n + 1);
#ifdef WG_AVX512
  bool fast = n1 <= 16 && gemm_have_avx512();
#else
  bool fast = false;
#endif
  for (int64_t c = 0; c < k->c; c++) {
    for (int64_t gr = gr0; gr < gr1; gr++) {
      int64_t img = gr / j->th, ty = gr % j->th, t0 = (gr - gr0) * n1;
      const float *xc = j->x + (img * k->c + c) * k->h * k->w;
#ifdef WG_AVX512
      if (fast) {
        split_v_avx512(k, xc, ty, tw, v + c * ld + t0, xs);
        continue;
      }
#endif
      for (int r = 0; r < 4; r++) {
        int64_t hh = 2 * ty - k->ph + r;
        split_row(k, hh >= 0 && hh < k->h ? xc + hh * k->w : NULL, tw, ev[r] + t0, od[r] + t0);
      }
    }
    if (fast) continue;
    for (int r = 0; r < 4; r++) ev[r][n] = 0, od[r][n] = 0;
    input_cols(ev[0], ev[1], ev[2], ev[3], n), input_cols(od[0], od[1], od[2], od[3], n);
    for (int r = 0; r < 4; r++) {
      float *base = v + (int64_t)(r * 4) * xs + c * ld;
      input_row(ev[r], od[r], n, base, base + xs, base + 2 * xs, base + 3 * xs);
    }
  }
}

// ---- output transform ------------------------------------------------------------------------------
// Columns [0, n) of one channel, m[xi*ms + t]: Y[a][b] of each into
// y_ab[t], + bias, relu. Plain loops over t with each operation of
// winograd_ref.h's order, which the compiler vectorises.
WG_CLONES static void output_cols(const float *restrict m, int64_t ms, int64_t n, const float *bias, bool relu,
                                  float *restrict y00, float *restrict y01, float *restrict y10,
                                  float *restrict y11) {
  const float *m0 = m, *m1 = m + ms, *m2 = m + 2 * ms, *m3 = m + 3 * ms, *m4 = m + 4 * ms, *m5 = m + 5 * ms;
  const float *m6 = m + 6 * ms, *m7 = m + 7 * ms, *m8 = m + 8 * ms, *m9 = m + 9 * ms, *m10 = m + 10 * ms;
  const float *m11 = m + 11 * ms, *m12 = m + 12 * ms, *m13 = m + 13 * ms, *m14 = m + 14 * ms, *m15 = m + 15 * ms;
  for (int64_t t = 0; t < n; t++) {
    // columns first: s[a][j] from m[0..3][j]
    float s00 = (m0[t] + m4[t]) + m8[t], s10 = (m4[t] - m8[t]) - m12[t];
    float s01 = (m1[t] + m5[t]) + m9[t], s11 = (m5[t] - m9[t]) - m13[t];
    float s02 = (m2[t] + m6[t]) + m10[t], s12 = (m6[t] - m10[t]) - m14[t];
    float s03 = (m3[t] + m7[t]) + m11[t], s13 = (m7[t] - m11[t]) - m15[t];
    y00[t] = (s00 + s01) + s02, y01[t] = (s01 - s02) - s03;
    y10[t] = (s10 + s11) + s12, y11[t] = (s11 - s12) - s13;
  }
  float *ys[4] = {y00, y01, y10, y11};
  for (int q = 0; q < 4 && bias; q++) {
    float b = *bias, *yq = ys[q];
    for (int64_t t = 0; t < n; t++) yq[t] = yq[t] + b;
  }
  for (int q = 0; q < 4 && relu; q++) {
    float *yq = ys[q];
    for (int64_t t = 0; t < n; t++) yq[t] = yq[t] > 0 || isnan(yq[t]) ? yq[t] : 0;
  }
}

// An output row of wo columns from its tiles' Y[a][0] (e) and Y[a][1] (o).
WG_SHORT void interleave_scalar(const float *restrict e, const float *restrict o, int64_t wo, float *restrict row) {
  for (int64_t t = 0; t < wo / 2; t++) row[2 * t] = e[t], row[2 * t + 1] = o[t];
  if (wo % 2) row[wo - 1] = e[wo / 2];
}

static void interleave(const float *e, const float *o, int64_t wo, float *row) {
#ifdef WG_AVX512
  if (gemm_have_avx512()) {
    interleave_avx512(e, o, wo, row);
    return;
  }
#endif
  interleave_scalar(e, o, wo, row);
}

// The first maximum of a window's taps in row-major order, a NaN winning
// once: mlc_max_pool2d's pick.
static float pool4(float a, float b, float c, float d) {
  float best = a, v[3] = {b, c, d};
  for (int i = 0; i < 3; i++)
    if (v[i] > best || (isnan(v[i]) && !isnan(best))) best = v[i];
  return best;
}

// y (and yp) of channels [o0, o1) from M [16][o1 - o0][ld]; buf holds 4 * n floats.
static void output_transform(const WgJob *j, int64_t gr0, int64_t gr1, int64_t o0, int64_t o1, const float *m,
                             int64_t ld, float *buf) {
  const Conv *k = j->k;
  int64_t n1 = j->tw + 1, n = (gr1 - gr0) * n1, om = o1 - o0, hp = k->ho / 2, wp = k->wo / 2;
  float *y00 = buf, *y01 = buf + n, *y10 = buf + 2 * n, *y11 = buf + 3 * n;
#ifdef WG_AVX512
  bool fast = k->wo <= 32 && gemm_have_avx512();
#endif
  for (int64_t o = o0; o < o1; o++) {
    output_cols(m + (o - o0) * ld, om * ld, n, j->bias ? j->bias + o : NULL, j->flags & MLC_CONV_RELU, y00, y01,
                y10, y11);
    for (int64_t gr = gr0; gr < gr1; gr++) {
      int64_t img = gr / j->th, ty = gr % j->th, t0 = (gr - gr0) * n1;
      float *yo = j->y + ((img * k->o + o) * k->ho + 2 * ty) * k->wo;
#ifdef WG_AVX512
      if (fast) {
        float *ys[4] = {y00, y01, y10, y11};
        float *p = j->yp && ty < hp ? j->yp + ((img * k->o + o) * hp + ty) * wp : NULL;
        store_row_avx512(ys, t0, j->tw, k->wo, 2 * ty + 1 < k->ho, yo, p, wp);
        continue;
      }
#endif
      interleave(y00 + t0, y01 + t0, k->wo, yo);
      if (2 * ty + 1 < k->ho) interleave(y10 + t0, y11 + t0, k->wo, yo + k->wo);
      if (j->yp && ty < hp) {
        float *p = j->yp + ((img * k->o + o) * hp + ty) * wp;
        for (int64_t t = 0; t < wp; t++) p[t] = pool4(y00[t0 + t], y01[t0 + t], y10[t0 + t], y11[t0 + t]);
      }
    }
  }
}

#ifdef WG_AVX512
// ---- the fused path (AVX-512) ----------------------------------------------------------------------
// Per block, V as above; then per group of WG_NT tiles and up to 64
// output channels (four vectors, a channel per lane):
//   products  M_xi [channels, WG_NT] = U_xi^T V_xi over c, for xi = 0..15,
//             in 24 accumulators: per c four loads of ut[xi][c][o..] and
//             six broadcasts of V (no packing; each element is one fmaf
//             chain over c in order: mlc_ref_ksum's with C <= 128, one K
//             block); stored into mb (24 KiB, L1), never an M array of
//             the block;
//   outputs   Y = A^T M A of each tile from mb, + bias, relu, and the 2 x 2
//             max, scattered into y / yp (lane = channel: a plane apart).
// The same operations as the unfused path in the same order, so the same
// bits. 6 x 4: 24 accumulators, the 4 U vectors and a broadcast in 32
// registers (7 x 4 spilled).
enum { WG_NT = 6, WG_OV = 4 };
#define WG_FUSED static inline __attribute__((target("avx512f"), always_inline))

typedef struct WgGroup {
  const float *v[WG_NT]; // V column of each tile (matrix 0, channel 0)
  int64_t img[WG_NT], ty[WG_NT], tx[WG_NT];
  int nt; // real tiles
} WgGroup;

// mb[t][a] = sum over c < nc of u[c*op + 16a ..] * v_t[c*ld], a < ov,
// t < nt (both constants after inlining: 4 x 6 accumulators at most, the
// broadcasts one register, the V columns offsets from one pointer).
WG_FUSED void fused_products(const int ov, const int nt, const float *restrict u, int64_t op, const float *const *vt,
                             int64_t ld, int64_t nc, float *restrict mb) {
  __m512 acc[WG_OV][WG_NT];
  int64_t off[WG_NT];
#pragma GCC unroll 8
  for (int t = 0; t < nt; t++) off[t] = vt[t] - vt[0];
#pragma GCC unroll 4
  for (int a = 0; a < ov; a++)
#pragma GCC unroll 8
    for (int t = 0; t < nt; t++) acc[a][t] = _mm512_setzero_ps();
  const float *vc = vt[0];
#pragma GCC unroll 2
  for (int64_t c = 0; c < nc; c++, vc += ld, u += op) {
    __m512 uc[WG_OV];
#pragma GCC unroll 4
    for (int a = 0; a < ov; a++) uc[a] = _mm512_loadu_ps(u + 16 * a);
#pragma GCC unroll 8
    for (int t = 0; t < nt; t++)
#pragma GCC unroll 4
      for (int a = 0; a < ov; a++) acc[a][t] = _mm512_fmadd_ps(uc[a], _mm512_set1_ps(vc[off[t]]), acc[a][t]);
  }
#pragma GCC unroll 8
  for (int t = 0; t < nt; t++)
#pragma GCC unroll 4
    for (int a = 0; a < ov; a++) _mm512_storeu_ps(mb + (t * WG_OV + a) * 16, acc[a][t]);
}

// Tile t's outputs of channels [o, o + 16) from its 16 vectors m (stride
// ms floats): output_cols' operations, then pool4's pick lane by lane.
WG_FUSED void fused_outputs(const WgJob *j, const WgGroup *g, int t, int64_t o, const float *m, int64_t ms,
                            __m512 bias, __m512i plane, __m512i pplane) {
  const Conv *k = j->k;
  __m512 mv[16];
  for (int q = 0; q < 16; q++) mv[q] = _mm512_loadu_ps(m + q * ms);
  __m512 s0[4], s1[4];
  for (int c = 0; c < 4; c++) {
    s0[c] = _mm512_add_ps(_mm512_add_ps(mv[c], mv[4 + c]), mv[8 + c]);
    s1[c] = _mm512_sub_ps(_mm512_sub_ps(mv[4 + c], mv[8 + c]), mv[12 + c]);
  }
  __m512 y[4] = {_mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), s0[2]), _mm512_sub_ps(_mm512_sub_ps(s0[1], s0[2]), s0[3]),
                 _mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), s1[2]), _mm512_sub_ps(_mm512_sub_ps(s1[1], s1[2]), s1[3])};
  __mmask16 lanes = (__mmask16)lane_mask(0, k->o - o);
  for (int q = 0; q < 4; q++) {
    if (j->bias) y[q] = _mm512_add_ps(y[q], bias);
    if (j->flags & MLC_CONV_RELU) y[q] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y[q], _mm512_setzero_ps(), _CMP_NLE_UQ), y[q]);
  }
  int64_t img = g->img[t], ty = g->ty[t], tx = g->tx[t], hp = k->ho / 2, wp = k->wo / 2;
  if (j->y)
    for (int q = 0; q < 4; q++) {
      int64_t i = 2 * ty + q / 2, jj = 2 * tx + q % 2;
      if (i < k->ho && jj < k->wo)
        _mm512_mask_i32scatter_ps(j->y + ((img * k->o + o) * k->ho + i) * k->wo + jj, lanes, plane, y[q], 4);
    }
  if (j->yp && ty < hp && tx < wp) {
    __m512 best = y[0];
    for (int q = 1; q < 4; q++) {
      __mmask16 nan_first = _mm512_cmp_ps_mask(y[q], y[q], _CMP_UNORD_Q) & _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q);
      best = _mm512_mask_mov_ps(best, _mm512_cmp_ps_mask(y[q], best, _CMP_GT_OQ) | nan_first, y[q]);
    }
    _mm512_mask_i32scatter_ps(j->yp + ((img * k->o + o) * hp + ty) * wp + tx, lanes, pplane, best, 4);
  }
}

// One group's channels [o0, o0 + 16 ov): the 16 products, then the outputs.
WG_FUSED void fused_group(const WgJob *j, const WgGroup *g, const int ov, int64_t o0, int64_t ld, float *mb) {
  const Conv *k = j->k;
  int64_t op = pad16(k->o), ms = WG_NT * WG_OV * 16;
  for (int xi = 0; xi < 16; xi++) {
    const float *vt[WG_NT], *u = j->u + xi * k->c * op + o0;
    for (int t = 0; t < WG_NT; t++) vt[t] = g->v[t] + xi * vstride(k, ld);
    switch (g->nt) { // the tail group's own count: no products of repeated tiles
    case 1: fused_products(ov, 1, u, op, vt, ld, k->c, mb + xi * ms); break;
    case 2: fused_products(ov, 2, u, op, vt, ld, k->c, mb + xi * ms); break;
    case 3: fused_products(ov, 3, u, op, vt, ld, k->c, mb + xi * ms); break;
    case 4: fused_products(ov, 4, u, op, vt, ld, k->c, mb + xi * ms); break;
    case 5: fused_products(ov, 5, u, op, vt, ld, k->c, mb + xi * ms); break;
    default: fused_products(ov, WG_NT, u, op, vt, ld, k->c, mb + xi * ms); break;
    }
  }
  __m512i plane = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                     _mm512_set1_epi32((int)(k->ho * k->wo)));
  __m512i pplane = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                      _mm512_set1_epi32((int)((k->ho / 2) * (k->wo / 2))));
  for (int a = 0; a < ov; a++) {
    int64_t o = o0 + 16 * a;
    __m512 bias = j->bias ? _mm512_maskz_loadu_ps((__mmask16)lane_mask(0, k->o - o), j->bias + o) : _mm512_setzero_ps();
    for (int t = 0; t < g->nt; t++) fused_outputs(j, g, t, o, mb + (t * WG_OV + a) * 16, ms, bias, plane, pplane);
  }
}

__attribute__((target("avx512f"))) static int wg_block_fused(const WgJob *j, int64_t blk, int64_t o0, int64_t o1) {
  const Conv *k = j->k;
  int64_t gr0 = blk * j->rows, gr1 = min64(gr0 + j->rows, k->n * j->th), n1 = j->tw + 1, cols = (gr1 - gr0) * n1;
  int64_t ld = pad16(cols), extra = pad16(8 * (cols + 1)), ntiles = (gr1 - gr0) * j->tw;
  float *v = gemm_scratch(GEMM_SCRATCH_COL, 16 * vstride(k, ld) + extra);
  float *mb = gemm_scratch(GEMM_SCRATCH_OUT, 16 * WG_NT * WG_OV * 16);
  if (!v || !mb) return -1;
  input_transform(j, gr0, gr1, v, ld, v + 16 * vstride(k, ld));
  // channel groups outside: a group's U (16 * C * 64 floats, at most 512
  // KiB, use_fused) stays in L2 across the block's tiles
  for (int64_t og = o0; og < o1; og += 16 * WG_OV)
    for (int64_t t0 = 0; t0 < ntiles; t0 += WG_NT) {
      WgGroup g = {.nt = (int)min64(WG_NT, ntiles - t0)};
      for (int t = 0; t < WG_NT; t++) {
        int64_t ti = min64(t0 + t, ntiles - 1), r = ti / j->tw, gr = gr0 + r; // the tail: its last tile again (unused)
        g.v[t] = v + r * n1 + ti % j->tw, g.img[t] = gr / j->th, g.ty[t] = gr % j->th, g.tx[t] = ti % j->tw;
      }
      switch (min64(WG_OV, (o1 - og + 15) / 16)) {
      case 1: fused_group(j, &g, 1, og, ld, mb); break;
      case 2: fused_group(j, &g, 2, og, ld, mb); break;
      case 3: fused_group(j, &g, 3, og, ld, mb); break;
      default: fused_group(j, &g, 4, og, ld, mb); break;
      }
    }
  return 0;
}
#endif

// ---- tasks -------------------------------------------------------------------------------------------
static int wg_block(const WgJob *j, int64_t blk, int64_t o0, int64_t o1) {
  const Conv *k = j->k;
  int64_t gr0 = blk * j->rows, gr1 = min64(gr0 + j->rows, k->n * j->th), cols = (gr1 - gr0) * (j->tw + 1);
  int64_t ld = pad16(cols), om = o1 - o0, extra = pad16(8 * (cols + 1)); // the transforms' rows
  float *v = gemm_scratch(GEMM_SCRATCH_COL, 16 * vstride(k, ld) + extra);
  float *m = gemm_scratch(GEMM_SCRATCH_OUT, 16 * om * ld + extra);
  if (!v || !m) return -1;
  input_transform(j, gr0, gr1, v, ld, v + 16 * vstride(k, ld));
  for (int xi = 0; xi < 16; xi++) {
    Gemm g = {.m = om, .n = cols, .k = k->c, .alpha = 1, .beta = 0, .a = j->u + (xi * k->o + o0) * k->c,
              .rsa = k->c, .csa = 1, .b = v + xi * vstride(k, ld), .rsb = ld, .csb = 1, .c = m + xi * om * ld, .ldc = ld};
    if (gemm_region(&g, 0, om, 0, cols)) return -1;
  }
  output_transform(j, gr0, gr1, o0, o1, m, ld, m + 16 * om * ld);
  return 0;
}

static void wg_task(void *vj, int64_t b, int64_t e) {
  WgJob *j = vj;
  for (int64_t t = b; t < e; t++) {
    int64_t o0 = t % j->osplit * j->ostep, o1 = min64(o0 + j->ostep, j->k->o);
    if (o0 >= o1) continue;
#ifdef WG_AVX512
    if (j->fused) {
      if (wg_block_fused(j, t / j->osplit, o0, o1)) atomic_store(&j->failed, 1);
      continue;
    }
#endif
    if (wg_block(j, t / j->osplit, o0, o1)) atomic_store(&j->failed, 1);
  }
}

// Tiles per block: V and M of a block in about 1 MiB (2^14 / (C + O)
// columns), 32 to 512, in whole tile rows. A function of the geometry.
static int64_t block_rows(const Conv *k, int64_t tw) {
  int64_t want = min64(max64((1 << 14) / (k->c + k->o), 32), 512);
  return max64(1, want / (tw + 1));
}

#define WG_PAR_MIN_FLOPS 1.0e6

// The fused path: the AVX-512 GEMM variant current (mlc_gemm_select picks
// another one only in tests, which so reach the unfused path), lane
// offsets of one output plane apart fit the scatters' 32-bit indices, and
// C <= 128: one K block, and a channel group's U (16 * C * 64 floats) in
// 512 KiB, which stays in L2 (at 256 -> 256 channels, U streamed from L3
// per tile group made the call 3x slower than the GEMMs' blocking).
static bool use_fused(const Conv *k) {
#ifdef WG_AVX512
  return gemm_have_avx512() && !strcmp(gemm_current()->name, "avx512") && k->c <= 128 && 16 * k->ho * k->wo < INT32_MAX;
#else
  (void)k;
  return false;
#endif
}

// The filter transform: the constant weight's, made once into the GEMM
// cache, else into this thread's scratch (fused: ut [16][C][pad16(O)],
// else u [16][O][C]).
static const float *filter_of(const Conv *k, const float *w, bool fused) {
  int64_t floats = fused ? 16 * k->c * pad16(k->o) : 16 * k->o * k->c;
  const float *u = gemm_cache_derived(w, k->o, k->c, k->o * k->c * 9, fused ? GEMM_CACHE_WINOGRAD_T : GEMM_CACHE_WINOGRAD,
                                      floats, fused ? filter_transform_t : filter_transform);
  if (u) return u;
  float *own = gemm_scratch(GEMM_SCRATCH_WINOGRAD, floats);
  if (own) (fused ? filter_transform_t : filter_transform)(w, k->o, k->c, own);
  return own;
}

int conv_winograd(MlcPool *pool, const Conv *k, uint32_t flags, const float *x, const float *w, const float *bias,
                  float *y, float *yp) {
  WgJob j = {.k = k, .flags = flags, .x = x, .bias = bias, .y = y, .yp = yp, .fused = use_fused(k)};
  if (!k->n || !k->o || !k->p) return 0;
  if (!y && !yp) return -1;
  float *tmp = NULL; // the unfused path writes y
  if (!y && !j.fused && !(j.y = conv_y_temp(k->n * k->o * k->p, &tmp))) return -1;
  j.th = (k->ho + 1) / 2, j.tw = (k->wo + 1) / 2, j.rows = block_rows(k, j.tw);
  int64_t blocks = (k->n * j.th + j.rows - 1) / j.rows, threads = mlc_pool_threads(pool);
  double flops = 2.0 * 16 * (double)k->o * (double)k->c * (double)(k->n * j.th * j.tw);
  j.osplit = 1, j.ostep = k->o;
  if (blocks < threads && flops >= WG_PAR_MIN_FLOPS) { // batch 1: slices of whole micro-rows (vectors)
    int64_t unit = j.fused ? 16 : gemm_current()->mr, want = (threads + blocks - 1) / blocks;
    j.ostep = ((k->o + want - 1) / want + unit - 1) / unit * unit;
    j.osplit = (k->o + j.ostep - 1) / j.ostep;
  }
  j.u = filter_of(k, w, j.fused);
  if (j.u) mlc_parallel_for(pool, blocks * j.osplit, 1, wg_task, &j);
  free(tmp);
  return !j.u || atomic_load(&j.failed) ? -1 : 0;
}

// ---- input gradient ------------------------------------------------------------------------------
// dx = conv2d(dy, w~) with w~[c][o][a][b] = w[o][c][2-a][2-b] and padding
// 2 - p: the same path over the transposed geometry (dy [N, O, HO, WO] as
// the input, C output channels), so winograd_ref.h's order again.
bool conv_winograd_grad_applies(const Conv *k, uint32_t flags) {
  return conv_winograd_applies(k, flags) && k->o > 0 && k->ph <= 2 && k->pw <= 2;
}

int conv_winograd_grad_input(MlcPool *pool, const Conv *k, uint32_t flags, const float *dy, const float *w,
                             float *dx) {
  Conv t = {.n = k->n, .c = k->o, .h = k->ho, .w = k->wo, .o = k->c, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
            .ph = 2 - k->ph, .pw = 2 - k->pw, .dh = 1, .dw = 1, .g = 1, .ho = k->h, .wo = k->w};
  t.cg = t.c, t.og = t.o, t.kc = t.c * 9, t.p = t.ho * t.wo;
  float *wt = malloc((size_t)(k->o * k->c * 9) * sizeof(float) + 1);
  if (!wt) return -1;
  for (int64_t o = 0; o < k->o; o++)
    for (int64_t c = 0; c < k->c; c++)
      for (int q = 0; q < 9; q++) wt[(c * k->o + o) * 9 + 8 - q] = w[(o * k->c + c) * 9 + q];
  int rc = conv_winograd(pool, &t, MLC_CONV_WINOGRAD | (flags & ~(uint32_t)MLC_CONV_RELU), dy, wt, NULL, dx, NULL);
  free(wt);
  return rc;
}
