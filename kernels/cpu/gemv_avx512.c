// gemv_avx512.c — the small-M strip kernel (AVX-512): 1 to 4 rows of C
// across a strip of up to 256 columns, for the products with too few rows
// to fill the 8 x 32 micro-tile (batch 1 to 4 inference: x @ w^T with w
// already k-major, see gemv.c). Per k step: one vector load of B per 16
// columns, one broadcast of A per row, rows x vectors FMAs; with 16 (or
// 15) accumulators the two FMA ports have their 8 independent chains and
// the loads stay within two per cycle. Contract: gemv.h (the same
// per-element chain as GemmKernel, gemm_internal.h). Built with the
// AVX-512 flags of gemm_avx512.c (CMakeLists.txt).
#include <immintrin.h>

#include "gemv.h"

// Vectors of 16 columns per strip for m rows: m * NV <= 16 accumulators.
static const int nv_of[GEMV_MR + 1] = {0, 16, 8, 5, 4};

int gemv_avx512_width(int m) { return 16 * nv_of[m]; }

// t = epilogue(acc) for the 16 columns of row i at strip column j (mask:
// the columns that exist); the IEEE ops of gemm_epi_scalar in its order.
static inline __m512 epi16(const GemmEpi *e, __m512 acc, const float *c, __mmask16 m, int i,
                           int j) {
  __m512 t = _mm512_mul_ps(_mm512_set1_ps(e->alpha), acc);
  if (e->beta != 0)
    t = _mm512_add_ps(t, _mm512_mul_ps(_mm512_set1_ps(e->beta), _mm512_maskz_loadu_ps(m, c)));
  uint32_t f = e->flags;
  if (!f) return t;
  __m512 zero = _mm512_setzero_ps();
  if (f & MLC_GEMM_BIAS_COL) t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(m, e->bias_col + j));
  if (f & MLC_GEMM_BIAS_ROW) t = _mm512_add_ps(t, _mm512_set1_ps(e->bias_row[i]));
  const float *aux = e->aux + i * e->ldaux + j;
  if (f & MLC_GEMM_RESIDUAL) t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(m, aux));
  if (f & MLC_GEMM_RELU) t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t, zero, _CMP_NLE_UQ), t);
  if (f & MLC_GEMM_RELU_MASK)
    t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, aux), zero, _CMP_GT_OQ), t);
  return t;
}

// R rows x NV vectors (the last one masked by `last`), R and NV constants
// in every instantiation below, so acc lives in registers.
static inline __attribute__((always_inline)) void strip(const int R, const int NV, int64_t kc,
                                                        const float *a, int64_t rsa, int64_t csa,
                                                        const float *b, int64_t rsb,
                                                        __mmask16 last, float *c, int64_t ldc,
                                                        const GemmEpi *e) {
  __m512 acc[GEMV_MR][16];
  _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
    _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; p++) {
    __m512 bv[16];
    _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++)
      bv[v] = v + 1 < NV ? _mm512_loadu_ps(b + 16 * v) : _mm512_maskz_loadu_ps(last, b + 16 * v);
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
      __m512 av = _mm512_set1_ps(a[r * rsa + p * csa]);
      _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
    b += rsb;
  }
  _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
    float *cr = c + r * ldc;
    _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) {
      __mmask16 m = v + 1 < NV ? 0xFFFF : last;
      _mm512_mask_storeu_ps(cr + 16 * v, m, epi16(e, acc[r][v], cr + 16 * v, m, r, 16 * v));
    }
  }
}

#define ARGS kc, a, rsa, csa, b, rsb, last, c, ldc, e
#define NV_CASES(R)                                                                              \
  switch (nv) {                                                                                  \
  case 1: strip(R, 1, ARGS); return;                                                             \
  case 2: strip(R, 2, ARGS); return;                                                             \
  case 3: strip(R, 3, ARGS); return;                                                             \
  case 4: strip(R, 4, ARGS); return;                                                             \
  }                                                                                              \
  if (R <= 3) switch (nv) {                                                                      \
    case 5: strip(R, 5, ARGS); return;                                                           \
    }                                                                                            \
  if (R <= 2) switch (nv) {                                                                      \
    case 6: strip(R, 6, ARGS); return;                                                           \
    case 7: strip(R, 7, ARGS); return;                                                           \
    case 8: strip(R, 8, ARGS); return;                                                           \
    }                                                                                            \
  if (R == 1) switch (nv) {                                                                      \
    case 9: strip(R, 9, ARGS); return;                                                           \
    case 10: strip(R, 10, ARGS); return;                                                         \
    case 11: strip(R, 11, ARGS); return;                                                         \
    case 12: strip(R, 12, ARGS); return;                                                         \
    case 13: strip(R, 13, ARGS); return;                                                         \
    case 14: strip(R, 14, ARGS); return;                                                         \
    case 15: strip(R, 15, ARGS); return;                                                         \
    case 16: strip(R, 16, ARGS); return;                                                         \
    }

void gemv_avx512_strip(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                       int64_t rsb, int mr, int nr, float *c, int64_t ldc, const GemmEpi *e) {
  int nv = (nr + 15) / 16;
  __mmask16 last = nr % 16 ? (__mmask16)((1u << (nr % 16)) - 1) : 0xFFFF;
  switch (mr) {
  case 1: NV_CASES(1) return;
  case 2: NV_CASES(2) return;
  case 3: NV_CASES(3) return;
  case 4: NV_CASES(4) return;
  }
}
