// gemm_epi_avx512.h — the GEMM epilogue on 16 columns of one row (AVX-512),
// shared by the 8 x 32 micro-kernel (gemm_avx512.c) and the small-M strip
// kernel (gemv_avx512.c); include it only from files built with the
// AVX-512 flags (CMakeLists.txt).
#ifndef MLC_GEMM_EPI_AVX512_H
#define MLC_GEMM_EPI_AVX512_H

#include <immintrin.h>

#include "gemm_internal.h"

// Lanes [lo, hi) of a 16-lane mask, the bounds clamped to [0, 16].
static inline __mmask16 mask_range(int64_t lo, int64_t hi) {
  lo = lo < 0 ? 0 : lo > 16 ? 16 : lo;
  hi = hi < lo ? lo : hi > 16 ? 16 : hi;
  return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

// t = epilogue(acc) for 16 columns of row i starting at column j of the
// tile or strip (mask m: the columns that exist); the same IEEE ops as
// gemm_epi_scalar, in its order.
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

#endif
