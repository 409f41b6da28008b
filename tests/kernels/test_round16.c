// test_round16.c — kernels/round16.h against the CPU's own conversions:
// f32 -> f16 against F16C's vcvtps2ph (round to nearest even, which keeps
// subnormals) on every 61st f32 bit pattern plus the edges; f32 -> bf16
// against AVX512-BF16's vcvtneps2bf16 on the same patterns where that
// instruction is defined the same way (it flushes subnormal inputs to
// zero, so those are checked against a double computation instead); both
// 16-bit -> f32 directions exhaustively (every 16-bit pattern round-trips).
// A CPU without an instruction skips that comparison and says so.
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/round16.h"
#include "unit.h"

__attribute__((target("f16c"))) static uint16_t hw_f16(float x) {
  return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

__attribute__((target("f16c"))) static float hw_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

__attribute__((target("avx512bf16,avx512vl"))) static uint16_t hw_bf16(float x) {
  __m128bh h = _mm_cvtneps_pbh(_mm_set1_ps(x));
  uint16_t out[8];
  _mm_storeu_si128((__m128i *)out, (__m128i)h);
  return out[0];
}

static int is_nan16(uint16_t h, int f16) {
  return f16 ? (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) : (h & 0x7f80u) == 0x7f80u && (h & 0x7fu);
}

// bf16 of a subnormal f32 by double arithmetic: x is a multiple of 2^-149,
// bf16 subnormals are multiples of 2^-133, so round x * 2^133 to even.
static uint16_t ref_bf16_subnormal(float x) {
  double m = nearbyint((double)x * 0x1p133); // default rounding mode: ties to even
  return mlc_f32_to_bf16((float)(m * 0x1p-133));
}

int main(void) {
  int have_f16c = __builtin_cpu_supports("f16c");
  int have_bf16 = __builtin_cpu_supports("avx512bf16");
  long bad16 = 0, badbf = 0, badsub = 0, n = 0;
  uint32_t edges[] = {0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x477fe000u, 0x477ff000u,
                      0x477fefffu, 0x477ff001u, 0x38800000u, 0x387fffffu, 0x33000000u,
                      0x33000001u, 0x33800000u, 0x7f7fffffu, 0x7fc00001u, 0xffa00000u, 1u};
  for (uint64_t i = 0; i < (1ull << 32) + sizeof edges / sizeof *edges * 61; i += 61, n++) {
    uint32_t u = i < (1ull << 32) ? (uint32_t)i : edges[(i - (1ull << 32)) / 61];
    float x = mlc_bits_f32(u);
    uint16_t h = mlc_f32_to_f16(x), b = mlc_f32_to_bf16(x);
    if (have_f16c) {
      uint16_t w = hw_f16(x);
      if (is_nan16(w, 1) ? !is_nan16(h, 1) || (h & 0x8000u) != (w & 0x8000u) : h != w) bad16++;
    }
    if ((u & 0x7f800000u) == 0 && (u & 0x7fffffu)) { // a subnormal f32
      if (b != ref_bf16_subnormal(x)) badsub++;
    } else if (have_bf16) {
      uint16_t w = hw_bf16(x);
      if (is_nan16(w, 0) ? !is_nan16(b, 0) : b != w) badbf++;
    }
  }
  printf("%ld f32 patterns%s%s\n", n, have_f16c ? "" : "; SKIP f16 vs F16C (CPU lacks it)",
         have_bf16 ? "" : "; SKIP bf16 vs AVX512-BF16 (CPU lacks it)");
  check("f32 -> f16 equals vcvtps2ph (round to nearest even)", bad16 == 0);
  check("f32 -> bf16 equals vcvtneps2bf16 on normal inputs", badbf == 0);
  check("f32 -> bf16 of subnormals rounds to even, no flush", badsub == 0);

  long rt16 = 0, rtbf = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    if (!is_nan16((uint16_t)h, 1) && mlc_f32_to_f16(mlc_f16_to_f32((uint16_t)h)) != h) rt16++;
    if (!is_nan16((uint16_t)h, 0) && mlc_f32_to_bf16(mlc_bf16_to_f32((uint16_t)h)) != h) rtbf++;
    if (have_f16c) {
      float w = hw_f16_to_f32((uint16_t)h), g = mlc_f16_to_f32((uint16_t)h);
      if (!(isnan(w) && isnan(g)) && mlc_f32_bits(w) != mlc_f32_bits(g)) rt16++;
    }
  }
  check("every f16 pattern converts to f32 exactly and back", rt16 == 0);
  check("every bf16 pattern converts to f32 exactly and back", rtbf == 0);
  check("65504 stays, 65520 is inf, 2^-25 is 0, 2^-24 is the smallest subnormal",
        mlc_f32_to_f16(65504.0f) == 0x7bffu && mlc_f32_to_f16(65520.0f) == 0x7c00u &&
            mlc_f32_to_f16(0x1p-25f) == 0 && mlc_f32_to_f16(0x1p-24f) == 1 &&
            mlc_f32_to_f16(0x1.8p-25f) == 1);
  check("bf16: 1 + 2^-8 ties to 1, 1 + 3*2^-8 ties up to 1 + 2^-6",
        mlc_round_bf16(1.0f + 0x1p-8f) == 1.0f && mlc_round_bf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
