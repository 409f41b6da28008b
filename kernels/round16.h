// round16.h — f32 to and from the two 16-bit float formats mlc computes
// matmuls and convolutions in (`precision bf16 | f16`): bfloat16 (the top
// half of a binary32: 8 exponent bits, 7 mantissa bits) and IEEE binary16
// (5 exponent bits, 10 mantissa bits, subnormals down to 2^-24).
//
// f32 -> 16 bits rounds to nearest, ties to even, as PyTorch's
// `.bfloat16()` / `.half()` do: subnormals are kept (no flush), a NaN stays
// a quiet NaN with its sign, and a value beyond the format's range becomes
// inf (f16: |x| >= 65520). 16 bits -> f32 is exact.
//
// Header-only (static inline), as kernels/philox.h and kernels/gemm_ref.h,
// so the reference interpreter, the CPU kernels, the runtime and the tests
// use this exact text; kernels/cuda/mlc_cuda.h spells the same rounding
// with CUDA's __float2bfloat16_rn / __float2half_rn.
#ifndef MLC_ROUND16_H
#define MLC_ROUND16_H

#include <stdint.h>
#include <string.h>

static inline uint32_t mlc_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static inline float mlc_bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

// ---- bfloat16 -----------------------------------------------------------------------------
static inline uint16_t mlc_f32_to_bf16(float x) {
  uint32_t u = mlc_f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u); // ties to even; a carry into the exponent is right
  return (uint16_t)(u >> 16);
}

static inline float mlc_bf16_to_f32(uint16_t h) { return mlc_bits_f32((uint32_t)h << 16); }

static inline float mlc_round_bf16(float x) { return mlc_bf16_to_f32(mlc_f32_to_bf16(x)); }

// ---- IEEE binary16 ------------------------------------------------------------------------
static inline uint16_t mlc_f32_to_f16(float x) {
  uint32_t u = mlc_f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); // quiet NaN
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); // >= 65520 (and inf): inf
  if (a >= 0x38800000u) {                                   // >= 2^-14: a normal half
    a += 0xfffu + ((a >> 13) & 1u);                         // ties to even at bit 13
    return (uint16_t)(sign | ((a - 0x38000000u) >> 13));    // rebias 127 -> 15
  }
  if (a <= 0x33000000u) return sign; // <= 2^-25, half the smallest subnormal: +-0
  // A subnormal half m * 2^-24: m = significand * 2^(e - 126), rounded.
  uint32_t e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e; // 14 .. 24
  uint32_t m = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (m & 1u))) m++; // m == 0x400 is the smallest normal
  return (uint16_t)(sign | m);
}

static inline float mlc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return mlc_bits_f32(sign | 0x7f800000u | (m << 13)); // inf, NaN
  if (e) return mlc_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
  if (!m) return mlc_bits_f32(sign);
  e = 113u; // subnormal m * 2^-24: normalise
  while (!(m & 0x400u)) {
    m <<= 1;
    e--;
  }
  return mlc_bits_f32(sign | (e << 23) | ((m & 0x3ffu) << 13));
}

static inline float mlc_round_f16(float x) { return mlc_f16_to_f32(mlc_f32_to_f16(x)); }

#endif
