// gemv_avx512.c — the small-M strip kernel (AVX-512): 1 to 4 rows of C
// across a strip of up to 256 columns, for the products with too few rows
// to fill the 8 x 32 micro-tile (batch 1 to 4 inference: x @ w^T with w
// already k-major, see gemv.c). Per k step: one vector load of B per 16
// columns, one broadcast of A per row, rows x vectors FMAs; with 16 (or
// 15) accumulators the two FMA ports have their 8 independent chains and
// the loads stay within two per cycle. Contract: gemv.h (the same
// per-element chain as GemmKernel, gemm_internal.h). Built with the
// AVX-512 flags of gemm_avx512.c (CMakeLists.txt).
//
// B comes in one of gemv.h's forms (GemvB): f32; f32 rounded to bf16 or
// f16 as it is loaded (integer steps of round16.h, or vcvtps2ph); or a
// 16-bit k-major copy (gemm_cache.c) widened as it is loaded, which reads
// half the bytes. Widening is exact, so every form gives the f32 product
// of the rounded operands and the same fmaf chain.
#include <immintrin.h>

#include "gemm_epi_avx512.h"
#include "gemv.h"

// Vectors of 16 columns per strip for m rows: m * NV <= 16 accumulators.
static const int nv_of[GEMV_MR + 1] = {0, 16, 8, 5, 4};

static int width(int m) { return 16 * nv_of[m]; }

// bf16 rounding of 16 floats, round16.h's steps: u + 0x7fff + (bit 16 of
// u), the low half cleared; a NaN keeps its top half, made quiet.
static inline __m512 round_bf16(__m512 x) {
  __m512i u = _mm512_castps_si512(x);
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                               _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
  __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                          _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
  return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u)));
}

// f16 rounding: vcvtps2ph rounds as round16.h (ties to even, overflow to
// inf, subnormals kept, NaN quiet; tests/kernels/test_round16.c), and the
// way back is exact.
static inline __m512 round_f16(__m512 x) {
  return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

static void round_row(uint32_t flags, int64_t n, const float *src, float *dst) {
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = n - j >= 16 ? 0xFFFF : (__mmask16)((1u << (n - j)) - 1);
    __m512 x = _mm512_maskz_loadu_ps(m, src + j);
    _mm512_mask_storeu_ps(dst + j, m, flags & MLC_GEMM_BF16 ? round_bf16(x) : round_f16(x));
  }
}

// The 16 columns of B at vector v of a k step as floats. GEMV_B_BF16: a
// 16-column group is stored in gemv_bf16_pos's order, so that its 32
// bytes broadcast to both halves of a register (a load, no ALU op) and one
// byte shuffle per 128-bit lane puts each value in the top half of its
// column's lane (one op where zero-extending and shifting take two).
static inline __attribute__((always_inline)) __m512 load_b(const int FORM, const char *b, int v,
                                                           bool tail, __mmask16 last) {
  if (FORM == GEMV_B_BF16 || FORM == GEMV_B_F16) {
    __m256i h = _mm256_loadu_si256((const __m256i *)(b + 32 * v)); // padded: never masked
    if (FORM == GEMV_B_F16) return _mm512_cvtph_ps(h);
    const __m512i shuf = _mm512_set_epi8(15, 14, -1, -1, 13, 12, -1, -1, 11, 10, -1, -1, 9, 8, -1, -1,  // lane 3
                                         15, 14, -1, -1, 13, 12, -1, -1, 11, 10, -1, -1, 9, 8, -1, -1,  // lane 2
                                         7, 6, -1, -1, 5, 4, -1, -1, 3, 2, -1, -1, 1, 0, -1, -1,        // lane 1
                                         7, 6, -1, -1, 5, 4, -1, -1, 3, 2, -1, -1, 1, 0, -1, -1);       // lane 0
    return _mm512_castsi512_ps(_mm512_shuffle_epi8(_mm512_broadcast_i64x4(h), shuf));
  }
  const float *f = (const float *)b + 16 * v;
  __m512 x = tail ? _mm512_maskz_loadu_ps(last, f) : _mm512_loadu_ps(f);
  if (FORM == GEMV_B_ROUND_BF16) return round_bf16(x);
  if (FORM == GEMV_B_ROUND_F16) return round_f16(x);
  return x;
}

// R rows x NV vectors (the last one masked by `last`), R, NV and the form
// of B constants in every instantiation below, so acc lives in registers.
// rsb is in bytes.
static inline __attribute__((always_inline)) void strip(const int FORM, const int R, const int NV,
                                                        int64_t kc, const float *a, int64_t rsa,
                                                        int64_t csa, const char *b, int64_t rsb,
                                                        __mmask16 last, float *c, int64_t ldc,
                                                        const GemmEpi *e) {
  __m512 acc[GEMV_MR][16];
  _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
    _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; p++) {
    __m512 bv[16];
    _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) bv[v] = load_b(FORM, b, v, v + 1 == NV, last);
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
      __m512 av = _mm512_set1_ps(a[r * rsa + p * csa]);
      _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
    b += rsb;
  }
  _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
    float *cr = c + r * ldc;
    _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) {
      __mmask16 m = v + 1 < NV ? 0xFFFF : last;
      _mm512_mask_storeu_ps(cr + 16 * v, m, epi16(e, acc[r][v], cr + 16 * v, m, r, 16 * v));
    }
  }
}

#define GEMV_LANES 16
#define GEMV_LAST __mmask16
static inline __mmask16 gemv_last(int t) { return t == 16 ? 0xFFFF : (__mmask16)((1u << t) - 1); }
#define NV_CASES(F, R)                                                                           \
  switch (nv) {                                                                                  \
  case 1: strip(F, R, 1, ARGS); return;                                                          \
  case 2: strip(F, R, 2, ARGS); return;                                                          \
  case 3: strip(F, R, 3, ARGS); return;                                                          \
  case 4: strip(F, R, 4, ARGS); return;                                                          \
  }                                                                                              \
  if (R <= 3) switch (nv) {                                                                      \
    case 5: strip(F, R, 5, ARGS); return;                                                        \
    }                                                                                            \
  if (R <= 2) switch (nv) {                                                                      \
    case 6: strip(F, R, 6, ARGS); return;                                                        \
    case 7: strip(F, R, 7, ARGS); return;                                                        \
    case 8: strip(F, R, 8, ARGS); return;                                                        \
    }                                                                                            \
  if (R == 1) switch (nv) {                                                                      \
    case 9: strip(F, R, 9, ARGS); return;                                                        \
    case 10: strip(F, R, 10, ARGS); return;                                                      \
    case 11: strip(F, R, 11, ARGS); return;                                                      \
    case 12: strip(F, R, 12, ARGS); return;                                                      \
    case 13: strip(F, R, 13, ARGS); return;                                                      \
    case 14: strip(F, R, 14, ARGS); return;                                                      \
    case 15: strip(F, R, 15, ARGS); return;                                                      \
    case 16: strip(F, R, 16, ARGS); return;                                                      \
    }
#include "gemv_strip.h"

// Chosen only with the AVX-512 GEMM variant (gemv.c), which the CPU runs.
static int supported(void) { return 1; }

const GemvKernel gemv_avx512 = {width, strip_any, round_row, supported};
