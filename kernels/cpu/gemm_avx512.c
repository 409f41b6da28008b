// gemm_avx512.c — the AVX-512 micro-kernel: an 8 x 32 tile of C in 16 zmm
// accumulators (8 rows, two 16-float vectors each). Per k step: two loads
// of B (masked to the tile's nr columns) and 8 broadcasts of A feed 16
// FMAs, so the two FMA ports stay busy with loads to spare. Built with
// -mavx512f -mavx512vl -mavx512bw -mavx512dq -mfma (CMakeLists.txt) and
// called only when the CPU has them (gemm.c). Contract: gemm_internal.h.
#include <immintrin.h>

#include "gemm_internal.h"
#include "gemm_epi_avx512.h"
#include "gemm_pack_x86.h"

enum { MR = 8, NR = 32 };

static inline void store_tile(__m512 acc[MR][2], int mr, __mmask16 m0, __mmask16 m1, float *c,
                              int64_t ldc, const GemmEpi *e) {
  for (int r = 0; r < mr; r++) {
    float *cr = c + r * ldc;
    _mm512_mask_storeu_ps(cr, m0, epi16(e, acc[r][0], cr, m0, r, 0));
    if (m1) _mm512_mask_storeu_ps(cr + 16, m1, epi16(e, acc[r][1], cr + 16, m1, r, 16));
  }
}

// The k loop. k-major A (rsa == 1, all MR rows present: packed panels and
// transposed operands) uses immediate row offsets; any other A keeps one
// pointer per row (rows past mr repeat row mr-1 and are never stored).
// NV: vectors of B per k step; a tile of at most 16 columns (N tails, N=10
// heads) runs with NV = 1 and does half the FMAs.
#define KLOOP(AROW, NV)                                                                       \
  for (int64_t p = 0; p < kc; p++) {                                                         \
    __m512 b0 = _mm512_maskz_loadu_ps(m0, b);                                                \
    __m512 b1 = NV > 1 ? _mm512_maskz_loadu_ps(m1, b + 16) : b0;                             \
    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                   \
      __m512 av = _mm512_set1_ps(AROW);                                                      \
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);                                        \
      if (NV > 1) acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);                            \
    }                                                                                        \
    b += rsb;                                                                                \
    ADVANCE;                                                                                 \
  }

static void kernel(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                   int64_t rsb, int mr, int nr, float *c, int64_t ldc, const GemmEpi *e) {
  __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
  __mmask16 m1 = nr >= 32 ? 0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
  // acc is indexed by constants only (loops fully unrolled), so it lives in
  // registers; the tile is copied to `out` for the store, whose row loop
  // runs to mr.
  __m512 acc[MR][2], out[MR][2];
  _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  if (rsa == 1 && mr == MR) {
#define ADVANCE a += csa
    if (nr > 16)
      KLOOP(a[r], 2)
    else
      KLOOP(a[r], 1)
#undef ADVANCE
  } else {
    const float *ar[MR];
    for (int r = 0; r < MR; r++) ar[r] = a + (r < mr ? r : mr - 1) * rsa;
    int64_t o = 0;
#define ADVANCE o += csa
    if (nr > 16)
      KLOOP(ar[r][o], 2)
    else
      KLOOP(ar[r][o], 1)
#undef ADVANCE
  }
  _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) out[r][0] = acc[r][0], out[r][1] = acc[r][1];
  store_tile(out, mr, m0, m1, c, ldc, e);
}

// 16 source rows (16 consecutive columns j of the panel), each read at
// p..p+nq-1 (nq <= 16; the lanes past nq load zeros): a 16 x 16 transpose
// in four shuffle stages, then dst[q*panel + 0..15] = column q for q < nq.
static inline void pack_16x16(const float *src, int64_t lds, int64_t p, int nq, float *dst,
                              int64_t panel) {
  __mmask16 m = nq >= 16 ? 0xFFFF : (__mmask16)((1u << nq) - 1);
  __m512 r[16], t[16], u[16];
  _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) r[i] = _mm512_maskz_loadu_ps(m, src + i * lds + p);
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + c] holds rows 4g..4g+3 at column 4L + c in each 128-bit lane L
  _Pragma("GCC unroll 4") for (int g = 0; g < 4; g++) {
    u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
  }
  __m512 out[16];
  _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
    __m512 w0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), w1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
    __m512 x0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88), x1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
    out[c] = _mm512_shuffle_f32x4(w0, x0, 0x88);
    out[8 + c] = _mm512_shuffle_f32x4(w0, x0, 0xDD);
    out[4 + c] = _mm512_shuffle_f32x4(w1, x1, 0x88);
    out[12 + c] = _mm512_shuffle_f32x4(w1, x1, 0xDD);
  }
  _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++)
    if (q < nq) _mm512_storeu_ps(dst + q * panel, out[q]);
}

// GemmPackT with 16 x 16 transposes where 16 real columns remain, the 8 x 8
// AVX ones (gemm_pack_x86.h) for the rest of the panel.
static void pack_t(int64_t kc, int w, const float *src, int64_t lds, float *dst, int panel) {
  if (panel % 8) {
    gemm_pack_t_scalar(kc, w, src, lds, dst, panel);
    return;
  }
  int j = 0;
  if (panel % 16 == 0)
    for (; j + 16 <= w; j += 16)
      for (int64_t p = 0; p < kc; p += 16)
        pack_16x16(src + (int64_t)j * lds, lds, p, kc - p < 16 ? (int)(kc - p) : 16, dst + p * panel + j, panel);
  for (; j < panel; j += 8) {
    int have = w - j;
    if (have > 0) {
      pack_cols8(kc, have < 8 ? have : 8, src + (int64_t)j * lds, lds, dst + j, panel);
      continue;
    }
    for (int64_t p = 0; p < kc; p++)
      for (int r = 0; r < 8; r++) dst[p * panel + j + r] = 0;
  }
}

static int supported(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("fma");
}

const GemmVariant gemm_avx512 = {"avx512", MR, NR, kernel, pack_t, supported};
