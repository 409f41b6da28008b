// transpose_avx512.h — the 16 x 16 float transpose through registers that
// the channel-lane and narrow-group convolutions (conv_lanes_avx512.c,
// conv_narrow_avx512.c) move their [channel, pixel] blocks with. Include it
// only from files built with the AVX-512 flags (CMakeLists.txt).
#ifndef MLC_TRANSPOSE_AVX512_H
#define MLC_TRANSPOSE_AVX512_H

#include <immintrin.h>

// 16 x 16 transpose: r[i] (row i, 16 lanes) -> r[j] = column j.
static inline __attribute__((always_inline)) void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // t[2i]: (r2i[0] r2i+1[0] r2i[1] r2i+1[1]) per 128-bit lane; t[2i+1] the upper pairs
  for (int i = 0; i < 4; i++)
    for (int h = 0; h < 2; h++) {
      __m512d a = _mm512_castps_pd(t[4 * i + h]), b = _mm512_castps_pd(t[4 * i + 2 + h]);
      r[4 * i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      r[4 * i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    }
  // r[4i + m] holds, in each 128-bit lane l, column 4l + m of rows 4i..4i+3
  for (int m = 0; m < 4; m++) {
    t[m] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88);      // lanes 0, 2 of rows 0-3, 4-7
    t[4 + m] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xdd);  // lanes 1, 3
    t[8 + m] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88);
    t[12 + m] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xdd);
  }
  for (int m = 0; m < 4; m++) {
    r[m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0x88);           // column m
    r[8 + m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0xdd);       // column 8 + m
    r[4 + m] = _mm512_shuffle_f32x4(t[4 + m], t[12 + m], 0x88);  // column 4 + m
    r[12 + m] = _mm512_shuffle_f32x4(t[4 + m], t[12 + m], 0xdd); // column 12 + m
  }
}

#endif
