// gemv_avx2.c — the small-M strip kernel for AVX2 + FMA (+ F16C): 1 to 4
// rows of C across a strip of up to 96 columns, the AVX2 CPUs' form of
// gemv_avx512.c. 16 ymm registers: R x NV accumulators (at most 12), one B
// vector, R broadcasts of A. Per k step and 8 columns: one load of B
// (widened or rounded as gemv_avx512.c does), R FMAs; 12 accumulators for
// one row keep two FMA ports busy, 8 for four rows still cover the FMA
// latency. Strip widths are whole 16-column groups, so that a strip starts
// on a group of a 16-bit copy (gemv.c splits on them). Contract: gemv.h
// (GemmKernel's per-element chain, gemm_internal.h). Built with -mavx2
// -mfma -mf16c (CMakeLists.txt), run only where the CPU has all three.
#include <immintrin.h>

#include "gemm_epi_avx2.h"
#include "gemv.h"

// Vectors of 8 columns per strip for m rows: 96, 48, 32, 16 columns.
static const int nv_of[GEMV_MR + 1] = {0, 12, 6, 4, 2};

static int width(int m) { return 8 * nv_of[m]; }

// bf16 rounding of 8 floats, round16.h's steps (as gemm.c's
// round_bf16_avx2): u + 0x7fff + (bit 16 of u), the low half cleared; a
// NaN keeps its top half, made quiet.
static inline __m256 round_bf16(__m256 x) {
  __m256i u = _mm256_castps_si256(x);
  __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                               _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                   _mm256_set1_epi32(0x7f800000));
  r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
  return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u)));
}

// f16 rounding: vcvtps2ph rounds as round16.h (tests/kernels/test_round16.c),
// and the way back is exact.
static inline __m256 round_f16(__m256 x) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

static void round_row(uint32_t flags, int64_t n, const float *src, float *dst) {
  for (int64_t j = 0; j < n; j += 8) {
    __m256i m = lanes((int)(n - j < 8 ? n - j : 8));
    __m256 x = _mm256_maskload_ps(src + j, m);
    _mm256_maskstore_ps(dst + j, m, flags & MLC_GEMM_BF16 ? round_bf16(x) : round_f16(x));
  }
}

// The 8 columns of B at vector v of a k step as floats. GEMV_B_BF16: the
// group of 16 columns holding vector v is stored in gemv_bf16_pos's order
// (0-3, 8-11, 4-7, 12-15), so one 32-byte load puts columns 0-3 and 4-7
// in the low 8 bytes of the two 128-bit lanes and 8-15 in the high 8: one
// byte shuffle per vector moves each value to the top half of its lane.
static inline __attribute__((always_inline)) __m256 load_b(const int FORM, const char *b, int v,
                                                           bool tail, __m256i last) {
  if (FORM == GEMV_B_BF16) {
    __m256i h = _mm256_loadu_si256((const __m256i *)(b + 32 * (v / 2))); // padded: never masked
    const __m256i lo = _mm256_setr_epi8(-1, -1, 0, 1, -1, -1, 2, 3, -1, -1, 4, 5, -1, -1, 6, 7,
                                        -1, -1, 0, 1, -1, -1, 2, 3, -1, -1, 4, 5, -1, -1, 6, 7);
    const __m256i hi = _mm256_setr_epi8(-1, -1, 8, 9, -1, -1, 10, 11, -1, -1, 12, 13, -1, -1, 14, 15,
                                        -1, -1, 8, 9, -1, -1, 10, 11, -1, -1, 12, 13, -1, -1, 14, 15);
    return _mm256_castsi256_ps(_mm256_shuffle_epi8(h, v % 2 ? hi : lo));
  }
  if (FORM == GEMV_B_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 16 * v)));
  const float *f = (const float *)b + 8 * v;
  __m256 x = tail ? _mm256_maskload_ps(f, last) : _mm256_loadu_ps(f);
  if (FORM == GEMV_B_ROUND_BF16) return round_bf16(x);
  if (FORM == GEMV_B_ROUND_F16) return round_f16(x);
  return x;
}

// R rows x NV vectors (the last one masked by `last`), R, NV and the form
// constants in every instantiation below, so acc lives in registers. Each
// element's chain: fmaf in k order from 0, as gemv_avx512.c. rsb in bytes.
static inline __attribute__((always_inline)) void strip(const int FORM, const int R, const int NV,
                                                        int64_t kc, const float *a, int64_t rsa,
                                                        int64_t csa, const char *b, int64_t rsb,
                                                        __m256i last, float *c, int64_t ldc,
                                                        const GemmEpi *e) {
  __m256 acc[GEMV_MR][12];
  _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
    _Pragma("GCC unroll 12") for (int v = 0; v < NV; v++) acc[r][v] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; p++) {
    __m256 av[GEMV_MR];
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) av[r] = _mm256_broadcast_ss(a + r * rsa + p * csa);
    _Pragma("GCC unroll 12") for (int v = 0; v < NV; v++) {
      __m256 bv = load_b(FORM, b, v, v + 1 == NV, last);
      _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) acc[r][v] = _mm256_fmadd_ps(av[r], bv, acc[r][v]);
    }
    b += rsb;
  }
  const __m256i all = _mm256_set1_epi32(-1);
  _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
    float *cr = c + r * ldc;
    _Pragma("GCC unroll 12") for (int v = 0; v < NV; v++) {
      __m256i m = v + 1 < NV ? all : last;
      _mm256_maskstore_ps(cr + 8 * v, m, epi8(e, acc[r][v], cr + 8 * v, m, r, 8 * v));
    }
  }
}

#define GEMV_LANES 8
#define GEMV_LAST __m256i
#define gemv_last lanes
#define NV_CASES(F, R)                                                                           \
  switch (nv) {                                                                                  \
  case 1: strip(F, R, 1, ARGS); return;                                                          \
  case 2: strip(F, R, 2, ARGS); return;                                                          \
  }                                                                                              \
  if (R <= 3) switch (nv) {                                                                      \
    case 3: strip(F, R, 3, ARGS); return;                                                        \
    case 4: strip(F, R, 4, ARGS); return;                                                        \
    }                                                                                            \
  if (R <= 2) switch (nv) {                                                                      \
    case 5: strip(F, R, 5, ARGS); return;                                                        \
    case 6: strip(F, R, 6, ARGS); return;                                                        \
    }                                                                                            \
  if (R == 1) switch (nv) {                                                                      \
    case 7: strip(F, R, 7, ARGS); return;                                                        \
    case 8: strip(F, R, 8, ARGS); return;                                                        \
    case 9: strip(F, R, 9, ARGS); return;                                                        \
    case 10: strip(F, R, 10, ARGS); return;                                                      \
    case 11: strip(F, R, 11, ARGS); return;                                                      \
    case 12: strip(F, R, 12, ARGS); return;                                                      \
    }
#include "gemv_strip.h"

static int supported(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

const GemvKernel gemv_avx2 = {width, strip_any, round_row, supported};
