// test_conv_bias.c — the bias gradient's f64 lanes (kernels/cpu/conv_bias.c):
// conv_bias_lanes_add on each row the CPU has (AVX-512, AVX2, scalar;
// conv_bias_lanes_add_isa) against the lanes' definition written out here
// (pixel q's term, the f32 value widened, added into lane q mod 8 of its
// column, in increasing q, calls in order), bit for bit on the lanes and
// on the folded db. Data of many magnitudes, so a term added into another
// lane or out of order changes bits; chunks whose q0 is not a multiple of
// 8, chunks shorter than 8 (and empty), column counts not a multiple of 4,
// row strides larger than a chunk; and conv_bias_lanes_add is the widest
// row (conv_bias_isa).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/gemm_internal.h"
#include "rand_data.h"
#include "unit.h"

// Floats of magnitudes 2^-20 .. 2^20, both signs.
static float *data(int64_t n) {
  float *d = rand_buf(n);
  for (int64_t i = 0; i < n; i++) d[i] = ldexpf(d[i], (int)((i * 7919) % 41) - 20);
  return d;
}

static void ref_add(double *l, const float *rows, int64_t ld, int64_t cols, int64_t q0, int64_t nq) {
  for (int64_t o = 0; o < cols; o++)
    for (int64_t q = q0; q < q0 + nq; q++) l[8 * o + q % 8] += (double)rows[o * ld + q - q0];
}

static int have(ConvBiasIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == CONV_BIAS_AVX512) return gemm_have_avx512();
  if (isa == CONV_BIAS_AVX2) return gemm_have_avx2();
#endif
  return isa == CONV_BIAS_SCALAR;
}

static const char *const isa_name[] = {"scalar", "avx2", "avx512"};

// images of `cols` rows of `p` pixels (row stride ld >= p), each added in
// chunks of the sizes `chunk` cycles through (0: an empty call first).
static void check_case(int64_t images, int64_t cols, int64_t p, int64_t ld, const int64_t *chunk, int nchunk) {
  float *dy = data(images * cols * ld);
  double *l0 = conv_bias_lanes_new(cols);
  int ok = l0 != NULL;
  char names[64] = "";
  for (int isa = 0; isa < 4 && ok; isa++) { // 3: conv_bias_lanes_add
    if (isa < 3 && !have((ConvBiasIsa)isa)) continue;
    if (isa < 3) snprintf(names + strlen(names), sizeof names - strlen(names), " %s", isa_name[isa]);
    double *l = conv_bias_lanes_new(cols);
    memset(l0, 0, (size_t)cols * 8 * sizeof(double));
    for (int64_t n = 0; n < images; n++)
      for (int64_t q0 = 0, c = 0; q0 < p; c++) {
        int64_t nq = chunk[c % nchunk] < p - q0 ? chunk[c % nchunk] : p - q0;
        const float *rows = dy + n * cols * ld + q0;
        ref_add(l0, rows, ld, cols, q0, nq);
        if (isa < 3)
          conv_bias_lanes_add_isa((ConvBiasIsa)isa, l, rows, ld, cols, q0, nq);
        else
          conv_bias_lanes_add(l, rows, ld, cols, q0, nq);
        q0 += nq;
      }
    float *db0 = malloc((size_t)cols * 4), *db = malloc((size_t)cols * 4);
    conv_bias_lanes_fold(l0, cols, db0), conv_bias_lanes_fold(l, cols, db);
    ok &= !memcmp(l, l0, (size_t)cols * 8 * sizeof(double)) && !memcmp(db, db0, (size_t)cols * 4);
    free(l), free(db0), free(db);
  }
  char msg[300], sizes[64] = "";
  for (int c = 0; c < nchunk; c++) snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%lld", c ? "," : "", (long long)chunk[c]);
  snprintf(msg, sizeof msg, "bias lanes: %lld images x %lld columns x %lld pixels (ld %lld), chunks %s: lanes and db bit for bit as the definition, rows%s and conv_bias_lanes_add",
           (long long)images, (long long)cols, (long long)p, (long long)ld, sizes, names);
  check(msg, ok);
  free(dy), free(l0);
}

int main(void) {
  const int64_t whole[] = {1 << 30}, odd[] = {5, 13, 8, 3, 21}, short_[] = {0, 3, 1, 7}, big[] = {19, 64, 37};
  struct {
    int64_t images, cols, p, ld;
    const int64_t *chunk;
    int nchunk;
  } cases[] = {
      {3, 32, 784, 784, whole, 1}, // fashion_cnn conv1: 28 x 28 pixels, whole images
      {2, 64, 196, 196, whole, 1}, // conv2: 14 x 14
      {2, 9, 49, 49, odd, 5},      // q0 not a multiple of 8, 9 columns (4 + 4 + 1)
      {3, 7, 100, 131, odd, 5},    // 7 columns (4 + 3), a row stride past the pixels
      {2, 5, 30, 30, short_, 4},   // chunks of 0-7 pixels: no full block of 8
      {1, 3, 17, 17, whole, 1},    // fewer columns than four
      {4, 6, 250, 251, big, 3},    // long chunks starting off the lanes' blocks
      {1, 4, 1, 1, whole, 1},      // one pixel
      {2, 13, 8, 8, odd, 5},       // one block of 8 split 5 + 3
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_case(cases[i].images, cases[i].cols, cases[i].p, cases[i].ld, cases[i].chunk, cases[i].nchunk);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
