// gemm_generic.c — the portable micro-kernel: a 4 x 16 tile in plain C,
// for CPUs without AVX2. Each product is accumulated with fmaf, in k order,
// exactly as the vector kernels' FMAs do, so every variant computes the
// same bits (tests/kernels/test_gemm.c checks it). Where the target has no
// FMA instruction fmaf is a libm call: slow, but still correct.
#include <string.h>

#include "gemm_internal.h"

enum { MR = 4, NR = 16 };

static void kernel(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                   int64_t rsb, int mr, int nr, float *c, int64_t ldc, const GemmEpi *e) {
  float acc[MR][NR];
  memset(acc, 0, sizeof acc);
  for (int64_t p = 0; p < kc; p++, b += rsb)
    for (int r = 0; r < mr; r++) {
      float av = a[r * rsa + p * csa];
      for (int j = 0; j < nr; j++) acc[r][j] = fmaf(av, b[j], acc[r][j]);
    }
  for (int r = 0; r < mr; r++)
    for (int j = 0; j < nr; j++) c[r * ldc + j] = gemm_epi_scalar(e, acc[r][j], &c[r * ldc + j], r, j);
}

void gemm_pack_t_scalar(int64_t kc, int w, const float *src, int64_t lds, float *dst, int panel) {
  for (int64_t p = 0; p < kc; p++)
    for (int j = 0; j < panel; j++) dst[p * panel + j] = j < w ? src[j * lds + p] : 0;
}

void gemm_pack_copy(int64_t kc, int w, const float *src, int64_t lds, float *dst, int panel) {
  for (int64_t p = 0; p < kc; p++) {
    memcpy(dst + p * panel, src + p * lds, (size_t)w * sizeof(float));
    memset(dst + p * panel + w, 0, (size_t)(panel - w) * sizeof(float));
  }
}

static int supported(void) { return 1; }

const GemmVariant gemm_generic = {"generic", MR, NR, kernel, gemm_pack_t_scalar, supported};
