// gemm_epi_avx2.h — the GEMM epilogue on 8 columns of one row (AVX2),
// shared by the 6 x 16 micro-kernel (gemm_avx2.c) and the small-M strip
// kernel (gemv_avx2.c); include it only from files built with -mavx2
// (CMakeLists.txt).
#ifndef MLC_GEMM_EPI_AVX2_H
#define MLC_GEMM_EPI_AVX2_H

#include <immintrin.h>

#include "gemm_internal.h"

// Lane mask for `n` of 8 columns (all lanes when n >= 8).
static inline __m256i lanes(int n) {
  __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), iota);
}

// The same IEEE ops as gemm_epi_scalar, on 8 columns of row i from tile column j.
static inline __m256 epi8(const GemmEpi *e, __m256 acc, const float *c, __m256i m, int i, int j) {
  __m256 t = _mm256_mul_ps(_mm256_set1_ps(e->alpha), acc);
  if (e->beta != 0)
    t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_set1_ps(e->beta), _mm256_maskload_ps(c, m)));
  uint32_t f = e->flags;
  if (!f) return t;
  __m256 zero = _mm256_setzero_ps();
  if (f & MLC_GEMM_BIAS_COL) t = _mm256_add_ps(t, _mm256_maskload_ps(e->bias_col + j, m));
  if (f & MLC_GEMM_BIAS_ROW) t = _mm256_add_ps(t, _mm256_set1_ps(e->bias_row[i]));
  const float *aux = e->aux + i * e->ldaux + j;
  if (f & MLC_GEMM_RESIDUAL) t = _mm256_add_ps(t, _mm256_maskload_ps(aux, m));
  if (f & MLC_GEMM_RELU) t = _mm256_and_ps(t, _mm256_cmp_ps(t, zero, _CMP_NLE_UQ));
  if (f & MLC_GEMM_RELU_MASK)
    t = _mm256_and_ps(t, _mm256_cmp_ps(_mm256_maskload_ps(aux, m), zero, _CMP_GT_OQ));
  return t;
}

#endif
