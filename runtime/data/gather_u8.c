// gather_u8.c — one u8 record to f32 scaled by sc, each value (float)(v * sc)
// computed in double as data.c's general path does: the hot path of image
// batches (mlc_dataset_gather). On x86-64 with AVX-512 sixteen values at a
// time (u8 -> i32 -> f64 exactly, one f64 multiply, one rounding to f32:
// the scalar expression's operations, so the same bits); elsewhere a table
// of the 256 values.
#include <stdint.h>

#include "dataset.h"

static void convert_table(const uint8_t *p, float *q, int64_t w, const float *lut) {
  for (int64_t j = 0; j < w; j++) q[j] = lut[p[j]];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static void convert_avx512(const uint8_t *p, float *q, int64_t w,
                                                              double sc) {
  __m512d s = _mm512_set1_pd(sc);
  int64_t j = 0;
  for (; j + 16 <= w; j += 16) {
    __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p + j)));
    __m512d lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(v));
    __m512d hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1));
    _mm256_storeu_ps(q + j, _mm512_cvtpd_ps(_mm512_mul_pd(lo, s)));
    _mm256_storeu_ps(q + j + 8, _mm512_cvtpd_ps(_mm512_mul_pd(hi, s)));
  }
  for (; j < w; j++) q[j] = (float)((double)p[j] * sc);
}

static bool have_avx512(void) {
  static int have = -1;
  if (have < 0) have = __builtin_cpu_supports("avx512f") ? 1 : 0;
  return have;
}
#else
static bool have_avx512(void) { return false; }
static void convert_avx512(const uint8_t *p, float *q, int64_t w, double sc) {
  (void)p, (void)q, (void)w, (void)sc;
}
#endif

void mlc_gather_u8_f32(const uint8_t *p, float *q, int64_t w, double sc, const float *lut) {
  if (have_avx512()) convert_avx512(p, q, w, sc);
  else convert_table(p, q, w, lut);
}
