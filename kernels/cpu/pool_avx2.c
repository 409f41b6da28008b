// pool_avx2.c — 2 x 2, stride-2 max pooling rows with AVX2 (pool.c has the
// contract; pool_avx512.c the same rows for AVX-512), for the CPUs with
// AVX2 but no AVX-512. 8 windows at a time: two loads per input row (16
// columns, masked in a row's tail) and one in-lane shuffle plus one
// cross-lane permute per tap de-interleave the taps; the pick is the
// scalar code's select chain in tap order (tap 0, 1 of the upper row, then
// 2, 3 of the lower), lane by lane, so every value and pick byte is the
// scalar code's.
#include <immintrin.h>
#include <string.h>

#include "mlc_kernels.h"
#include "pool_internal.h"

// All-ones in the first n of 8 lanes.
static __m256i lanes(int64_t n) {
  n = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The first n of 8 floats at p (0 in the other lanes; p not read there).
static __m256 load(const float *p, int64_t n) {
  return n >= 8 ? _mm256_loadu_ps(p) : n > 0 ? _mm256_maskload_ps(p, lanes(n)) : _mm256_setzero_ps();
}

static void store(float *p, int64_t n, __m256 v) {
  if (n >= 8)
    _mm256_storeu_ps(p, v);
  else if (n > 0)
    _mm256_maskstore_ps(p, lanes(n), v);
}

// Even and odd columns of the 16 floats at p (the first n2 of them).
static void taps(const float *p, int64_t n2, __m256 *even, __m256 *odd) {
  __m256 lo = load(p, n2), hi = n2 > 8 ? load(p + 8, n2 - 8) : _mm256_setzero_ps();
  // in-lane: [lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6], then the middle pairs swapped
  __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)), o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
  *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

// All-ones in the lanes where v replaces best: v > best, or v is the first NaN.
static __m256 better(__m256 v, __m256 best) {
  return _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ),
                      _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_cmp_ps(best, best, _CMP_ORD_Q)));
}

// The maxima of the n (<= 8) windows whose upper rows start at r0 and
// lower rows at r1, in the scalar code's select chain; with tap, each
// lane's tap too (the last k whose `better` fired).
static inline __m256 window_max(const float *r0, const float *r1, int64_t n, __m256i *tap) {
  __m256 t[4];
  taps(r0, 2 * n, &t[0], &t[1]);
  taps(r1, 2 * n, &t[2], &t[3]);
  __m256 best = t[0];
  if (tap) *tap = _mm256_setzero_si256();
  for (int k = 1; k < 4; k++) {
    __m256 b = better(t[k], best);
    best = _mm256_blendv_ps(best, t[k], b);
    if (tap) *tap = _mm256_blendv_epi8(*tap, _mm256_set1_epi32(k), _mm256_castps_si256(b));
  }
  return best;
}

void pool_max2x2_avx2(int64_t h, int64_t w, const float *x, float *y) {
  int64_t ho = h / 2, wo = w / 2;
  for (int64_t i = 0; i < ho; i++) {
    const float *r0 = x + 2 * i * w, *r1 = r0 + w;
    for (int64_t j0 = 0; j0 < wo; j0 += 8) {
      int64_t n = wo - j0 < 8 ? wo - j0 : 8;
      store(y + i * wo + j0, n, window_max(r0 + 2 * j0, r1 + 2 * j0, n, NULL));
    }
  }
}

// Stores the values of taps (left, right) of 8 windows into the 2n floats
// of a dx row at p, interleaved back.
static void put_row(float *p, int64_t n2, __m256 left, __m256 right) {
  __m256 lo = _mm256_unpacklo_ps(left, right), hi = _mm256_unpackhi_ps(left, right); // [l0 r0 l1 r1 | l4 r4 l5 r5]
  store(p, n2, _mm256_permute2f128_ps(lo, hi, 0x20));
  if (n2 > 8) store(p + 8, n2 - 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

void pool_max2x2_grad_avx2(int64_t h, int64_t w, const float *dy, const float *x, const float *aux, float *dx) {
  int64_t ho = h / 2, wo = w / 2;
  const __m256 zero = _mm256_setzero_ps();
  // aux == x (a conv's relu output): the mask's pick is the pick's value,
  // the same bits without loading and blending the mask's taps.
  bool own = aux == x;
  for (int64_t i = 0; i < ho; i++) {
    int64_t r0 = 2 * i * w, r1 = r0 + w;
    for (int64_t j0 = 0; j0 < wo; j0 += 8) {
      int64_t n = wo - j0 < 8 ? wo - j0 : 8;
      __m256 t[4], a[4] = {zero, zero, zero, zero}, out[4];
      taps(x + r0 + 2 * j0, 2 * n, &t[0], &t[1]);
      taps(x + r1 + 2 * j0, 2 * n, &t[2], &t[3]);
      if (aux && !own) {
        taps(aux + r0 + 2 * j0, 2 * n, &a[0], &a[1]);
        taps(aux + r1 + 2 * j0, 2 * n, &a[2], &a[3]);
      }
      __m256 best = t[0], abest = a[0];
      __m256 pick[4] = {_mm256_castsi256_ps(_mm256_set1_epi32(-1)), zero, zero, zero}; // pick[k]: lanes whose pick is tap k
      for (int k = 1; k < 4; k++) {
        __m256 b = better(t[k], best);
        best = _mm256_blendv_ps(best, t[k], b), abest = _mm256_blendv_ps(abest, a[k], b);
        for (int q = 0; q < k; q++) pick[q] = _mm256_andnot_ps(b, pick[q]);
        pick[k] = b;
      }
      __m256 v = _mm256_add_ps(zero, load(dy + i * wo + j0, n));
      if (aux) v = _mm256_and_ps(_mm256_cmp_ps(own ? best : abest, zero, _CMP_GT_OQ), v);
      for (int k = 0; k < 4; k++) out[k] = _mm256_and_ps(pick[k], v); // v or +0
      put_row(dx + r0 + 2 * j0, 2 * n, out[0], out[1]);
      put_row(dx + r1 + 2 * j0, 2 * n, out[2], out[3]);
    }
    if (w % 2) dx[r0 + w - 1] = dx[r1 + w - 1] = 0; // the column no window covers
  }
  for (int64_t q = 2 * ho * w; q < h * w; q++) dx[q] = 0; // the row no window covers
}

// The low byte of each of 8 int32 lanes, as 8 bytes.
static uint64_t bytes_of(__m256i v) {
  const __m256i low = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, //
                                       0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  __m256i b = _mm256_shuffle_epi8(v, low);
  return (uint64_t)_mm_cvtsi128_si64(_mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
}

// pool_max2x2_avx2 that also writes each window's pick byte: the tap
// (window_max's) and MLC_PICK_POS where the picked value is > 0.
void pool_max2x2_pick_avx2(int64_t h, int64_t w, const float *x, float *y, uint8_t *pick) {
  int64_t ho = h / 2, wo = w / 2;
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t i = 0; i < ho; i++) {
    const float *r0 = x + 2 * i * w, *r1 = r0 + w;
    for (int64_t j0 = 0; j0 < wo; j0 += 8) {
      int64_t n = wo - j0 < 8 ? wo - j0 : 8;
      __m256i tap;
      __m256 best = window_max(r0 + 2 * j0, r1 + 2 * j0, n, &tap);
      __m256i pos = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(best, zero, _CMP_GT_OQ)),
                                     _mm256_set1_epi32(MLC_PICK_POS));
      uint64_t pk = bytes_of(_mm256_or_si256(tap, pos));
      store(y + i * wo + j0, n, best);
      if (n == 8) // little-endian: byte k is window k
        memcpy(pick + i * wo + j0, &pk, 8);
      else
        memcpy(pick + i * wo + j0, &pk, (size_t)n);
    }
  }
}

// pool_max2x2_grad_avx2 from the picks: each lane's value goes to the tap
// its byte names (masked by its MLC_PICK_POS bit with mask), dx written
// whole.
void pool_max2x2_grad_pick_avx2(int64_t h, int64_t w, bool mask, const float *dy, const uint8_t *pick,
                                float *dx) {
  int64_t ho = h / 2, wo = w / 2;
  const __m256 zero = _mm256_setzero_ps();
  const __m256i posb = _mm256_set1_epi32(MLC_PICK_POS), tapb = _mm256_set1_epi32(MLC_PICK_TAP);
  for (int64_t i = 0; i < ho; i++) {
    int64_t r0 = 2 * i * w, r1 = r0 + w;
    for (int64_t j0 = 0; j0 < wo; j0 += 8) {
      int64_t n = wo - j0 < 8 ? wo - j0 : 8;
      uint64_t b8 = 0;
      if (n == 8)
        memcpy(&b8, pick + i * wo + j0, 8);
      else
        memcpy(&b8, pick + i * wo + j0, (size_t)n);
      __m256i pk = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)b8));
      __m256 v = _mm256_add_ps(zero, load(dy + i * wo + j0, n)), out[4];
      if (mask) v = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(pk, posb), posb)), v);
      __m256i tap = _mm256_and_si256(pk, tapb);
      for (int k = 0; k < 4; k++)
        out[k] = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(tap, _mm256_set1_epi32(k))), v);
      put_row(dx + r0 + 2 * j0, 2 * n, out[0], out[1]);
      put_row(dx + r1 + 2 * j0, 2 * n, out[2], out[3]);
    }
    if (w % 2) dx[r0 + w - 1] = dx[r1 + w - 1] = 0; // the column no window covers
  }
  for (int64_t q = 2 * ho * w; q < h * w; q++) dx[q] = 0; // the row no window covers
}
