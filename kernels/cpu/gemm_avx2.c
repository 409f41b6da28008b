// gemm_avx2.c — the AVX2 + FMA micro-kernel: a 6 x 16 tile of C in 12 ymm
// accumulators (6 rows, two 8-float vectors each), leaving registers for
// the two B vectors and the broadcast. Tails use vmaskmov loads and
// stores. Built with -mavx2 -mfma (CMakeLists.txt) and called only when
// the CPU has them (gemm.c). Contract: gemm_internal.h.
#include <immintrin.h>

#include "gemm_epi_avx2.h"
#include "gemm_pack_x86.h"

enum { MR = 6, NR = 16 };

// LOAD(ptr, mask): vmaskmovps for a tail tile's B; whole tiles load plainly
// (a masked load costs more than a plain one on AVX2 CPUs).
#define MASKED(ptr, m) _mm256_maskload_ps(ptr, m)
#define PLAIN(ptr, m) _mm256_loadu_ps(ptr)
#define KLOOP(AROW, LOAD)                                                                     \
  for (int64_t p = 0; p < kc; p++) {                                                         \
    __m256 b0 = LOAD(b, m0), b1 = LOAD(b + 8, m1);                                           \
    _Pragma("GCC unroll 6") for (int r = 0; r < MR; r++) {                                   \
      __m256 av = _mm256_broadcast_ss(&(AROW));                                              \
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);                                        \
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);                                        \
    }                                                                                        \
    b += rsb;                                                                                \
    ADVANCE;                                                                                 \
  }

static void kernel(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                   int64_t rsb, int mr, int nr, float *c, int64_t ldc, const GemmEpi *e) {
  __m256i m0 = lanes(nr), m1 = lanes(nr - 8);
  // acc is indexed by constants only (loops fully unrolled), so it lives in
  // registers; the tile is copied to `out` for the store loop, which runs to mr.
  __m256 acc[MR][2], out[MR][2];
  _Pragma("GCC unroll 6") for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  if (rsa == 1 && mr == MR) {
#define ADVANCE a += csa
    if (nr == NR)
      KLOOP(a[r], PLAIN)
    else
      KLOOP(a[r], MASKED)
#undef ADVANCE
  } else {
    const float *ar[MR];
    for (int r = 0; r < MR; r++) ar[r] = a + (r < mr ? r : mr - 1) * rsa;
    int64_t o = 0;
#define ADVANCE o += csa
    if (nr == NR)
      KLOOP(ar[r][o], PLAIN)
    else
      KLOOP(ar[r][o], MASKED)
#undef ADVANCE
  }
  _Pragma("GCC unroll 6") for (int r = 0; r < MR; r++) out[r][0] = acc[r][0], out[r][1] = acc[r][1];
  for (int r = 0; r < mr; r++) {
    float *cr = c + r * ldc;
    _mm256_maskstore_ps(cr, m0, epi8(e, out[r][0], cr, m0, r, 0));
    if (nr > 8) _mm256_maskstore_ps(cr + 8, m1, epi8(e, out[r][1], cr + 8, m1, r, 8));
  }
}

static void pack_t(int64_t kc, int w, const float *src, int64_t lds, float *dst, int panel) {
  if (panel % 8)
    gemm_pack_t_scalar(kc, w, src, lds, dst, panel);
  else
    pack_t_x86(kc, w, src, lds, dst, panel);
}

static int supported(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

const GemmVariant gemm_avx2 = {"avx2", MR, NR, kernel, pack_t, supported};
