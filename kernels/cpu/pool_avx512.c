// pool_avx512.c — 2 x 2, stride-2 max pooling rows with AVX-512 (pool.c
// has the contract). 16 windows at a time: two masked loads per input row
// (32 columns) and one two-source permute per tap de-interleave the taps;
// the pick is the scalar code's select chain in tap order (tap 0, 1 of
// the upper row, then 2, 3 of the lower), lane by lane.
#include <immintrin.h>

#include "gemm_internal.h"
#include "pool_internal.h"

static __mmask16 lanes(int64_t n) { return (__mmask16)(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1); }

// Even and odd columns of the 32 floats at p (the first n2 of them).
static void taps(const float *p, int64_t n2, __m512 *even, __m512 *odd) {
  const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  __m512 lo = _mm512_maskz_loadu_ps(lanes(n2), p), hi = _mm512_maskz_loadu_ps(lanes(n2 - 16), p + 16);
  *even = _mm512_permutex2var_ps(lo, ev, hi), *odd = _mm512_permutex2var_ps(lo, od, hi);
}

// Lanes where v replaces best: v > best, or v is the first NaN.
static __mmask16 better(__m512 v, __m512 best) {
  return _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) |
         (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q));
}

void pool_max2x2_avx512(int64_t h, int64_t w, const float *x, float *y) {
  int64_t ho = h / 2, wo = w / 2;
  for (int64_t i = 0; i < ho; i++) {
    const float *r0 = x + 2 * i * w, *r1 = r0 + w;
    for (int64_t j0 = 0; j0 < wo; j0 += 16) {
      int64_t n = wo - j0 < 16 ? wo - j0 : 16;
      __m512 t[4];
      taps(r0 + 2 * j0, 2 * n, &t[0], &t[1]);
      taps(r1 + 2 * j0, 2 * n, &t[2], &t[3]);
      __m512 best = t[0];
      for (int k = 1; k < 4; k++) best = _mm512_mask_blend_ps(better(t[k], best), best, t[k]);
      _mm512_mask_storeu_ps(y + i * wo + j0, lanes(n), best);
    }
  }
}

// Stores the values of taps (left, right) of 16 windows into the 2n
// floats of a dx row at p, interleaved back.
static void put_row(float *p, int64_t n2, __m512 left, __m512 right) {
  const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  _mm512_mask_storeu_ps(p, lanes(n2), _mm512_permutex2var_ps(left, lo, right));
  _mm512_mask_storeu_ps(p + 16, lanes(n2 - 16), _mm512_permutex2var_ps(left, hi, right));
}

void pool_max2x2_grad_avx512(int64_t h, int64_t w, const float *dy, const float *x, const float *aux,
                             float *dx) {
  int64_t ho = h / 2, wo = w / 2;
  const __m512 zero = _mm512_setzero_ps();
  // A conv's relu output is both the pool's x and its mask (fashion_cnn):
  // then the mask's pick is the pick's value, the same bits without
  // loading and blending the mask's taps.
  bool own = aux == x;
  for (int64_t i = 0; i < ho; i++) {
    int64_t r0 = 2 * i * w, r1 = r0 + w;
    for (int64_t j0 = 0; j0 < wo; j0 += 16) {
      int64_t n = wo - j0 < 16 ? wo - j0 : 16;
      __m512 t[4], a[4] = {zero, zero, zero, zero}, out[4];
      taps(x + r0 + 2 * j0, 2 * n, &t[0], &t[1]);
      taps(x + r1 + 2 * j0, 2 * n, &t[2], &t[3]);
      if (aux && !own) {
        taps(aux + r0 + 2 * j0, 2 * n, &a[0], &a[1]);
        taps(aux + r1 + 2 * j0, 2 * n, &a[2], &a[3]);
      }
      __m512 best = t[0], abest = a[0];
      __mmask16 pick[4] = {0xffff, 0, 0, 0}; // pick[k]: lanes whose pick is tap k
      for (int k = 1; k < 4; k++) {
        __mmask16 b = better(t[k], best);
        best = _mm512_mask_blend_ps(b, best, t[k]), abest = _mm512_mask_blend_ps(b, abest, a[k]);
        for (int q = 0; q < k; q++) pick[q] &= (__mmask16)~b;
        pick[k] = b;
      }
      __m512 v = _mm512_add_ps(zero, _mm512_maskz_loadu_ps(lanes(n), dy + i * wo + j0));
      if (aux) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(own ? best : abest, zero, _CMP_GT_OQ), v);
      for (int k = 0; k < 4; k++) out[k] = _mm512_maskz_mov_ps(pick[k], v);
      put_row(dx + r0 + 2 * j0, 2 * n, out[0], out[1]);
      put_row(dx + r1 + 2 * j0, 2 * n, out[2], out[3]);
    }
    if (w % 2) dx[r0 + w - 1] = dx[r1 + w - 1] = 0; // the column no window covers
  }
  for (int64_t q = 2 * ho * w; q < h * w; q++) dx[q] = 0; // the row no window covers
}

// pool_max2x2_avx512 that also writes each window's pick byte: the tap
// (the last k whose `better` fired, as the blend chain keeps it) and
// MLC_PICK_POS where the picked value is > 0.
void pool_max2x2_pick_avx512(int64_t h, int64_t w, const float *x, float *y, uint8_t *pick) {
  int64_t ho = h / 2, wo = w / 2;
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t i = 0; i < ho; i++) {
    const float *r0 = x + 2 * i * w, *r1 = r0 + w;
    for (int64_t j0 = 0; j0 < wo; j0 += 16) {
      int64_t n = wo - j0 < 16 ? wo - j0 : 16;
      __m512 t[4];
      taps(r0 + 2 * j0, 2 * n, &t[0], &t[1]);
      taps(r1 + 2 * j0, 2 * n, &t[2], &t[3]);
      __m512 best = t[0];
      __m512i tap = _mm512_setzero_si512();
      for (int k = 1; k < 4; k++) {
        __mmask16 b = better(t[k], best);
        best = _mm512_mask_blend_ps(b, best, t[k]);
        tap = _mm512_mask_mov_epi32(tap, b, _mm512_set1_epi32(k));
      }
      tap = _mm512_mask_or_epi32(tap, _mm512_cmp_ps_mask(best, zero, _CMP_GT_OQ), tap, _mm512_set1_epi32(4));
      _mm512_mask_storeu_ps(y + i * wo + j0, lanes(n), best);
      _mm_mask_storeu_epi8(pick + i * wo + j0, lanes(n), _mm512_cvtepi32_epi8(tap));
    }
  }
}

// pool_max2x2_grad_avx512 from the picks: each lane's value goes to the
// tap its byte names (masked by its MLC_PICK_POS bit with mask), dx
// written whole.
void pool_max2x2_grad_pick_avx512(int64_t h, int64_t w, bool mask, const float *dy, const uint8_t *pick,
                                  float *dx) {
  int64_t ho = h / 2, wo = w / 2;
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t i = 0; i < ho; i++) {
    int64_t r0 = 2 * i * w, r1 = r0 + w;
    for (int64_t j0 = 0; j0 < wo; j0 += 16) {
      int64_t n = wo - j0 < 16 ? wo - j0 : 16;
      __m512i pk = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(lanes(n), pick + i * wo + j0));
      __m512 v = _mm512_add_ps(zero, _mm512_maskz_loadu_ps(lanes(n), dy + i * wo + j0)), out[4];
      if (mask) v = _mm512_maskz_mov_ps(_mm512_test_epi32_mask(pk, _mm512_set1_epi32(4)), v);
      __m512i tap = _mm512_and_si512(pk, _mm512_set1_epi32(3));
      for (int k = 0; k < 4; k++) out[k] = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(tap, _mm512_set1_epi32(k)), v);
      put_row(dx + r0 + 2 * j0, 2 * n, out[0], out[1]);
      put_row(dx + r1 + 2 * j0, 2 * n, out[2], out[3]);
    }
    if (w % 2) dx[r0 + w - 1] = dx[r1 + w - 1] = 0; // the column no window covers
  }
  for (int64_t q = 2 * ho * w; q < h * w; q++) dx[q] = 0; // the row no window covers
}
