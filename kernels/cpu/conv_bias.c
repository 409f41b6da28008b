// conv_bias.c — the bias gradient of a convolution, db[o] = the sum of
// dy[n, o, :, :] over images and pixels, summed inside
// mlc_conv2d_grad_weight_bias from the dy chunks its GEMMs read anyway, so
// the 6.4 MB dy of fashion_cnn's conv1 is not streamed again by a separate
// reduce_to kernel.
//
// The order is the kernel IR's for that reduce_to (kir.h, "float sums";
// gemm_ref.h, mlc_ref_conv_bias_grad): pixel q of an image is position q,
// its term (the f32 value, widened) goes into f64 lane q mod 8, images in
// order around the pixels with the lanes carried over, and the lanes are
// folded ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) and rounded once.
// The lanes are independent, so adding eight pixels at once in one vector
// of eight doubles (AVX-512), or in two of four (AVX2: lanes 0-3 and 4-7),
// is that order exactly (no reassociation): the result is
// the interpreter's bit for bit, for any thread count (one task owns a
// column's lanes and visits every image and chunk in order).
#include <stdlib.h>

#include "conv_internal.h"
#include "gemm_internal.h"
#include "pool_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

// Positions [q, q1) with q a multiple of 8, in blocks of 8 (the tail is the caller's).
__attribute__((target("avx512f"))) static int64_t lanes_avx512(double *l, const float *r, int64_t q, int64_t q1) {
  __m512d acc = _mm512_loadu_pd(l);
  for (; q + 8 <= q1; q += 8) acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm256_loadu_ps(r + q)));
  _mm512_storeu_pd(l, acc);
  return q;
}

// The same with AVX2: lanes 0-3 and 4-7 in two vectors of four doubles.
__attribute__((target("avx2"))) static int64_t lanes_avx2(double *l, const float *r, int64_t q, int64_t q1) {
  __m256d a = _mm256_loadu_pd(l), b = _mm256_loadu_pd(l + 4);
  for (; q + 8 <= q1; q += 8) {
    a = _mm256_add_pd(a, _mm256_cvtps_pd(_mm_loadu_ps(r + q)));
    b = _mm256_add_pd(b, _mm256_cvtps_pd(_mm_loadu_ps(r + q + 4)));
  }
  _mm256_storeu_pd(l, a), _mm256_storeu_pd(l + 4, b);
  return q;
}
#endif

double *conv_bias_lanes_new(int64_t cols) { return calloc((size_t)(cols > 0 ? cols : 1) * 8, sizeof(double)); }

#if defined(__x86_64__) || defined(__i386__)
// Four columns' lanes at once, positions [q, q1) with q a multiple of 8:
// four independent chains, where one column's is bound by the add's
// latency (each column's lanes get its terms in the same order).
__attribute__((target("avx512f"))) static int64_t lanes4_avx512(double *l, const float *r, int64_t ld, int64_t q,
                                                                int64_t q1) {
  __m512d a0 = _mm512_loadu_pd(l), a1 = _mm512_loadu_pd(l + 8), a2 = _mm512_loadu_pd(l + 16),
          a3 = _mm512_loadu_pd(l + 24);
  for (; q + 8 <= q1; q += 8) {
    a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(r + q)));
    a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_loadu_ps(r + ld + q)));
    a2 = _mm512_add_pd(a2, _mm512_cvtps_pd(_mm256_loadu_ps(r + 2 * ld + q)));
    a3 = _mm512_add_pd(a3, _mm512_cvtps_pd(_mm256_loadu_ps(r + 3 * ld + q)));
  }
  _mm512_storeu_pd(l, a0), _mm512_storeu_pd(l + 8, a1), _mm512_storeu_pd(l + 16, a2), _mm512_storeu_pd(l + 24, a3);
  return q;
}

// The same with AVX2: eight vectors of four doubles, lanes 0-3 (lo) and
// 4-7 (hi) of each column (8 of the 16 registers).
__attribute__((target("avx2"))) static int64_t lanes4_avx2(double *l, const float *r, int64_t ld, int64_t q,
                                                           int64_t q1) {
  __m256d lo[4], hi[4];
  for (int c = 0; c < 4; c++) lo[c] = _mm256_loadu_pd(l + 8 * c), hi[c] = _mm256_loadu_pd(l + 8 * c + 4);
  for (; q + 8 <= q1; q += 8)
    for (int c = 0; c < 4; c++) {
      lo[c] = _mm256_add_pd(lo[c], _mm256_cvtps_pd(_mm_loadu_ps(r + c * ld + q)));
      hi[c] = _mm256_add_pd(hi[c], _mm256_cvtps_pd(_mm_loadu_ps(r + c * ld + q + 4)));
    }
  for (int c = 0; c < 4; c++) _mm256_storeu_pd(l + 8 * c, lo[c]), _mm256_storeu_pd(l + 8 * c + 4, hi[c]);
  return q;
}
#endif

ConvBiasIsa conv_bias_isa(void) {
#if defined(__x86_64__) || defined(__i386__)
  return gemm_have_avx512() ? CONV_BIAS_AVX512 : gemm_have_avx2() ? CONV_BIAS_AVX2 : CONV_BIAS_SCALAR;
#else
  return CONV_BIAS_SCALAR;
#endif
}

void conv_bias_lanes_add_isa(ConvBiasIsa isa, double *lanes, const float *rows, int64_t ld, int64_t cols, int64_t q0,
                             int64_t nq) {
  int64_t o = 0, q1 = q0 + nq;
  // the first multiple of 8 at or after q0 (at most q1): positions before it are each a lane's next term
  int64_t qa = q0 % 8 ? q0 + 8 - q0 % 8 : q0;
  qa = qa < q1 ? qa : q1;
#if defined(__x86_64__) || defined(__i386__)
  if (isa != CONV_BIAS_SCALAR)
    for (; o + 4 <= cols; o += 4) {
      const float *r = rows + o * ld - q0; // r[q]: pixel q of column o
      double *l = lanes + 8 * o;
      for (int c = 0; c < 4; c++)
        for (int64_t qq = q0; qq < qa; qq++) l[8 * c + qq % 8] += (double)r[c * ld + qq];
      int64_t q = isa == CONV_BIAS_AVX512 ? lanes4_avx512(l, r, ld, qa, q1) : lanes4_avx2(l, r, ld, qa, q1);
      for (int c = 0; c < 4; c++)
        for (int64_t qq = q; qq < q1; qq++) l[8 * c + qq % 8] += (double)r[c * ld + qq];
    }
#endif
  for (; o < cols; o++) {
    const float *r = rows + o * ld - q0; // r[q]: pixel q
    double *l = lanes + 8 * o;
    int64_t q = q0;
    for (; q < qa; q++) l[q % 8] += (double)r[q];
#if defined(__x86_64__) || defined(__i386__)
    if (isa == CONV_BIAS_AVX512) q = lanes_avx512(l, r, q, q1);
    if (isa == CONV_BIAS_AVX2) q = lanes_avx2(l, r, q, q1);
#endif
    for (; q < q1; q++) l[q % 8] += (double)r[q];
  }
}

void conv_bias_lanes_add(double *lanes, const float *rows, int64_t ld, int64_t cols, int64_t q0, int64_t nq) {
  conv_bias_lanes_add_isa(conv_bias_isa(), lanes, rows, ld, cols, q0, nq);
}

void conv_bias_lanes_fold(const double *lanes, int64_t cols, float *db) {
  for (int64_t o = 0; o < cols; o++) {
    const double *l = lanes + 8 * o;
    db[o] = (float)(((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])));
  }
}

#if defined(__x86_64__) || defined(__i386__)
// Eight columns [o, o+8) of all eight lanes in registers over the image's
// pixels: lane l's vector adds pixels l, l + 8, .. in order.
__attribute__((target("avx512f"))) static void lanes_t_avx512(double *lt, const float *dyt, int64_t ld, int64_t o,
                                                               int64_t nq) {
  __m512d a[8];
  for (int l = 0; l < 8; l++) a[l] = _mm512_loadu_pd(lt + l * ld + o);
  int64_t q = 0;
  for (; q + 8 <= nq; q += 8)
    for (int l = 0; l < 8; l++) a[l] = _mm512_add_pd(a[l], _mm512_cvtps_pd(_mm256_loadu_ps(dyt + (q + l) * ld + o)));
  for (int l = 0; q < nq; q++, l++) a[l] = _mm512_add_pd(a[l], _mm512_cvtps_pd(_mm256_loadu_ps(dyt + q * ld + o)));
  for (int l = 0; l < 8; l++) _mm512_storeu_pd(lt + l * ld + o, a[l]);
}
#endif

void conv_bias_lanes_add_t(double *lanes_t, const float *dyt, int64_t ld, int64_t nq) {
#if defined(__x86_64__) || defined(__i386__)
  if (gemm_have_avx512()) {
    for (int64_t o = 0; o < ld; o += 8) lanes_t_avx512(lanes_t, dyt, ld, o, nq);
    return;
  }
#endif
  for (int64_t q = 0; q < nq; q++)
    for (int64_t o = 0; o < ld; o++) lanes_t[q % 8 * ld + o] += (double)dyt[q * ld + o];
}

void conv_bias_lanes_fold_t(const double *lanes_t, int64_t ld, int64_t cols, float *db) {
  for (int64_t o = 0; o < cols; o++) {
    const double *l = lanes_t + o;
    db[o] = (float)(((l[0] + l[4 * ld]) + (l[2 * ld] + l[6 * ld])) + ((l[ld] + l[5 * ld]) + (l[3 * ld] + l[7 * ld])));
  }
}

int conv_bias_grad_serial(const Conv *k, const float *dy, float *db) {
  double *lanes = conv_bias_lanes_new(k->o);
  if (!lanes) return -1;
  for (int64_t n = 0; n < k->n; n++) conv_bias_lanes_add(lanes, dy + n * k->o * k->p, k->p, k->o, 0, k->p);
  conv_bias_lanes_fold(lanes, k->o, db);
  free(lanes);
  return 0;
}
