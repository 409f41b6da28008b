// gemm_pack_x86.h — the packing of a transposed operand with 8x8 AVX
// transposes, included by the AVX2 and AVX-512 variants (each compiled for
// its ISA). GemmPackT's contract (gemm_internal.h): dst[p*NR + j] =
// src[j*lds + p] for p < kc, j < nr, zeros for nr <= j < NR; the NR of the
// including file is the macro argument PANEL.
#ifndef MLC_GEMM_PACK_X86_H
#define MLC_GEMM_PACK_X86_H

#include <immintrin.h>
#include <stdint.h>

// rows[0..7] are 8 source rows (8 consecutive j), each read at p..p+7;
// writes dst[(p+q)*panel + j..j+7] for q < 8.
static inline void pack_8x8(const float *const rows[8], int64_t p, float *dst, int64_t panel) {
  __m256 r0 = _mm256_loadu_ps(rows[0] + p), r1 = _mm256_loadu_ps(rows[1] + p);
  __m256 r2 = _mm256_loadu_ps(rows[2] + p), r3 = _mm256_loadu_ps(rows[3] + p);
  __m256 r4 = _mm256_loadu_ps(rows[4] + p), r5 = _mm256_loadu_ps(rows[5] + p);
  __m256 r6 = _mm256_loadu_ps(rows[6] + p), r7 = _mm256_loadu_ps(rows[7] + p);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(dst + 0 * panel, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(dst + 1 * panel, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(dst + 2 * panel, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(dst + 3 * panel, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(dst + 4 * panel, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(dst + 5 * panel, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(dst + 6 * panel, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(dst + 7 * panel, _mm256_permute2f128_ps(s3, s7, 0x31));
}

// Eight columns j0..j0+7 of the panel (of which `have` are real; the
// others read row have-1 and are zeroed after).
static inline void pack_cols8(int64_t kc, int have, const float *src, int64_t lds, float *dst,
                              int64_t panel) {
  const float *rows[8];
  for (int r = 0; r < 8; r++) rows[r] = src + (r < have ? r : have - 1) * lds;
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) pack_8x8(rows, p, dst + p * panel, panel);
  for (; p < kc; p++)
    for (int r = 0; r < 8; r++) dst[p * panel + r] = rows[r][p];
  if (have < 8)
    for (p = 0; p < kc; p++)
      for (int r = have; r < 8; r++) dst[p * panel + r] = 0;
}

static inline void pack_t_x86(int64_t kc, int nr, const float *src, int64_t lds, float *dst,
                              int panel) {
  for (int j = 0; j < panel; j += 8) {
    int have = nr - j;
    if (have <= 0) {
      for (int64_t p = 0; p < kc; p++)
        for (int r = 0; r < 8; r++) dst[p * panel + j + r] = 0;
      continue;
    }
    pack_cols8(kc, have < 8 ? have : 8, src + j * lds, lds, dst + j, panel);
  }
}

#endif
