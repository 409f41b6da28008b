// mlc_cuda.h — the one header every mlc CUDA kernel source includes first.
//
// Kernels are written (by hand in kernels/cuda and tests, by the CUDA printer
// later) in the C subset of CUDA spelled through the macros below, so that
// one text compiles two ways:
//   - with NVRTC (__CUDACC__ defined): the macros become CUDA keywords and
//     builtins; NVRTC has no host headers, so the fixed-width integer types
//     are defined here. compiler/backend/cuda/nvrtc.c hands this file to
//     NVRTC as an in-memory header named "mlc_cuda.h".
//   - with a C compiler (gcc -std=gnu17): cuda_emu.h, the CPU emulation
//     (threads as fibers, blocks in a loop; docs/design/cuda.md has its
//     limits).
//
// The subset (both sides define exactly these):
//   MLC_KERNEL name(params)        an entry point: extern "C" __global__ void
//   MLC_LAUNCH_BOUNDS(n)           after MLC_KERNEL: __launch_bounds__(n)
//   MLC_DEVICE                     a helper function: static __device__ inline
//   MLC_SHARED T x[N];             a __shared__ array (in a kernel body)
//   MLC_DYN_SHARED(T, x);          T *x: the launch's dynamic shared memory
//   MLC_BARRIER()                  __syncthreads()
//   MLC_RESTRICT                   __restrict__
//   MLC_ENTRY<n>(name, T1, .., Tn) the emulation's unpacking entry
//                                  name##_entry(void **args) for a kernel of
//                                  n parameters, n <= 16 (nothing under
//                                  NVRTC); no ';'
//   threadIdx blockIdx blockDim gridDim warpSize (unsigned x, y, z)
//   __shfl_sync __shfl_down_sync __shfl_up_sync __shfl_xor_sync (mask, v,
//   lane|delta [, width]) for float, double, int, unsigned, (unsigned) long long;
//   __syncwarp(mask); atomicAdd on float, double, int, unsigned, unsigned
//   long long; atomicMax/atomicMin on int
//   int8_t .. uint64_t; INFINITY, NAN; float math as CUDA spells it (expf,
//   fmaxf, rsqrtf, __expf, __logf, __fdividef); fmaf and fma (rounded
//   once); __fmul_rn and __dmul_rn (a product that is never contracted
//   into an FMA)
#ifndef MLC_CUDA_H
#define MLC_CUDA_H

#if defined(__CUDACC__)

typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;

// math.h's constants (NVRTC has no math.h; its float functions are built in)
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)

#define MLC_KERNEL extern "C" __global__ void
#define MLC_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define MLC_DEVICE static __device__ inline
#define MLC_SHARED __shared__
#define MLC_DYN_SHARED(T, name) extern __shared__ T name[]
#define MLC_BARRIER() __syncthreads()
#define MLC_RESTRICT __restrict__
#define MLC_DEVICE_INLINE static __device__ __forceinline__

#define MLC_ENTRY0(name)
#define MLC_ENTRY1(name, T1)
#define MLC_ENTRY2(name, T1, T2)
#define MLC_ENTRY3(name, T1, T2, T3)
#define MLC_ENTRY4(name, T1, T2, T3, T4)
#define MLC_ENTRY5(name, T1, T2, T3, T4, T5)
#define MLC_ENTRY6(name, T1, T2, T3, T4, T5, T6)
#define MLC_ENTRY7(name, T1, T2, T3, T4, T5, T6, T7)
#define MLC_ENTRY8(name, T1, T2, T3, T4, T5, T6, T7, T8)
#define MLC_ENTRY9(name, ...)
#define MLC_ENTRY10(name, ...)
#define MLC_ENTRY11(name, ...)
#define MLC_ENTRY12(name, ...)
#define MLC_ENTRY13(name, ...)
#define MLC_ENTRY14(name, ...)
#define MLC_ENTRY15(name, ...)
#define MLC_ENTRY16(name, ...)

// cuda_bf16.h's and cuda_fp16.h's conversions, which NVRTC offers only
// with the toolkit's include path: the PTX conversions they compile to
// (cvt.rn rounds to nearest even; bf16 needs sm_80, below it the bits are
// rounded by hand as kernels/round16.h does).
typedef struct { unsigned short x; } __nv_bfloat16;
typedef struct { unsigned short x; } __half;
static __device__ inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  __nv_bfloat16 h;
#if __CUDA_ARCH__ >= 800
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
#else
  unsigned u = __float_as_uint(f);
  h.x = (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((u >> 16) | 0x40u)
                                         : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
  return h;
}
static __device__ inline float __bfloat162float(__nv_bfloat16 h) { return __uint_as_float((unsigned)h.x << 16); }
static __device__ inline __half __float2half_rn(float f) {
  __half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
  return h;
}
static __device__ inline float __half2float(__half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x));
  return f;
}

// The tensor-core instruction (sm_80+): d += A B for the warp, f32
// accumulation; a[4] and b[2] are this lane's fragments (mlc_mma_frags).
MLC_DEVICE_INLINE void mlc_mma_sync_bf16(float *d, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
MLC_DEVICE_INLINE void mlc_mma_sync_f16(float *d, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#else

#include "cuda_emu.h"

#endif

// ---- helpers the printed kernels call (compiler/backend/cuda/emit.c) ----
// kir.h's scalar semantics: integer floor division and modulo,
// NaN-propagating max/min as the interpreter computes them, float modulo,
// float -> int, the failed-check store, Philox.
MLC_DEVICE int64_t mlc_div_i64(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
MLC_DEVICE int64_t mlc_mod_i64(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
MLC_DEVICE int32_t mlc_div_i32(int32_t a, int32_t b) {
  int32_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
MLC_DEVICE int32_t mlc_mod_i32(int32_t a, int32_t b) {
  int32_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
MLC_DEVICE int64_t mlc_imax(int64_t a, int64_t b) { return a > b ? a : b; }
MLC_DEVICE int64_t mlc_imin(int64_t a, int64_t b) { return a < b ? a : b; }
MLC_DEVICE int64_t mlc_iabs(int64_t a) { return a < 0 ? (int64_t)(0ull - (uint64_t)a) : a; }
MLC_DEVICE float mlc_maxf(float a, float b) { return (a != a || b != b) ? NAN : a > b ? a : b; }
MLC_DEVICE float mlc_minf(float a, float b) { return (a != a || b != b) ? NAN : a < b ? a : b; }
MLC_DEVICE double mlc_maxd(double a, double b) { return (a != a || b != b) ? NAN : a > b ? a : b; }
MLC_DEVICE double mlc_mind(double a, double b) { return (a != a || b != b) ? NAN : a < b ? a : b; }
MLC_DEVICE float mlc_fmodf(float a, float b) { return a - __fmul_rn(floorf(a / b), b); }
MLC_DEVICE double mlc_fmodd(double a, double b) { return a - __dmul_rn(floor(a / b), b); }
MLC_DEVICE int64_t mlc_ftoi(double x) {
  return (x > -9.2233720368547758e18 && x < 9.2233720368547758e18) ? (int64_t)x : 0;
}
MLC_DEVICE void mlc_fail(uint32_t *flag, uint32_t id) { *flag = id; }
// `precision bf16 | f16`: a matmul's or conv's operand rounded to the
// 16-bit format (ties to even; f16 overflows to inf) and back to float,
// kernels/round16.h's mlc_round_bf16 / mlc_round_f16. The conversions are
// CUDA's (below for NVRTC, cuda_emu.h for the emulation).
MLC_DEVICE float mlc_round_bf16f(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
MLC_DEVICE float mlc_round_f16f(float x) { return __half2float(__float2half_rn(x)); }
// The 16-bit staging of a tensor-core GEMM's shared tiles: the bits of an
// operand already rounded to the format (mlc_round_*f), so exact.
MLC_DEVICE uint16_t mlc_bf16_bits(float x) { return __float2bfloat16_rn(x).x; }
MLC_DEVICE uint16_t mlc_f16_bits(float x) { return __float2half_rn(x).x; }
MLC_DEVICE float mlc_bf16_value(uint16_t h) {
  __nv_bfloat16 x;
  x.x = h;
  return __bfloat162float(x);
}
MLC_DEVICE float mlc_f16_value(uint16_t h) {
  __half x;
  x.x = h;
  return __half2float(x);
}

// ---- tensor-core products (kir.h's KMma; docs/design/cuda.md, "Tensor cores")
// mlc_mma_bf16 / mlc_mma_f16(d, a, ars, aks, b, bks, bcs): the calling
// lane's share of the warp's mma.sync.m16n8k16 over 16-bit bits in shared
// memory: A(r, k) = a[r ars + k aks] (16 x 16), B(k, c) = b[k bks + c bcs]
// (16 x 8), d[0..4) += this lane's elements of A B. The fragments are the
// PTX ISA's (lane l, g = l / 4, t = l % 4; a 32-bit register holds two
// 16-bit values, the lower k in its low half):
//   A: a[i] = A(g + 8 (i % 2), 2t + 8 (i / 2) + {0, 1}),  i < 4
//   B: b[i] = B(2t + 8 i + {0, 1}, g),                    i < 2
//   D: d[i] = D(g + 8 (i / 2), 2t + i % 2),               i < 4
// read with plain 16-bit loads: the tiles keep the recipe's k-major layout
// (rows of BM + 1 values, conflict-free stores from any operand layout),
// which ldmatrix's eight contiguous 16-byte rows would not take.
MLC_DEVICE uint32_t mlc_pack16(uint16_t lo, uint16_t hi) { return (uint32_t)lo | (uint32_t)hi << 16; }
MLC_DEVICE_INLINE void mlc_mma_frags(const uint16_t *a, int64_t ars, int64_t aks, const uint16_t *b, int64_t bks,
                                     int64_t bcs, uint32_t *af, uint32_t *bf) {
  int l = (int)(threadIdx.x % 32u), g = l / 4, t = l % 4;
  int sa = (int)ars, ka = (int)aks, kb = (int)bks, sb = (int)bcs;
  for (int i = 0; i < 4; i++) {
    int r = g + 8 * (i % 2), k = 2 * t + 8 * (i / 2);
    af[i] = mlc_pack16(a[r * sa + k * ka], a[r * sa + (k + 1) * ka]);
  }
  for (int i = 0; i < 2; i++) {
    int k = 2 * t + 8 * i;
    bf[i] = mlc_pack16(b[k * kb + g * sb], b[(k + 1) * kb + g * sb]);
  }
}
MLC_DEVICE_INLINE void mlc_mma_bf16(float *d, const uint16_t *a, int64_t ars, int64_t aks, const uint16_t *b,
                                    int64_t bks, int64_t bcs) {
  uint32_t af[4], bf[2];
  mlc_mma_frags(a, ars, aks, b, bks, bcs, af, bf);
  mlc_mma_sync_bf16(d, af, bf);
}
MLC_DEVICE_INLINE void mlc_mma_f16(float *d, const uint16_t *a, int64_t ars, int64_t aks, const uint16_t *b,
                                   int64_t bks, int64_t bcs) {
  uint32_t af[4], bf[2];
  mlc_mma_frags(a, ars, aks, b, bks, bcs, af, bf);
  mlc_mma_sync_f16(d, af, bf);
}

// Philox-4x32-10, kernels/philox.h's text itself (for NVRTC an in-memory
// header of that name, compiler/backend/cuda/nvrtc.c): key, counter (the
// element), stream; the first word w gives (w >> 8) * 2^-24.
#define MLC_PHILOX_FN MLC_DEVICE
#include "../philox.h"
MLC_DEVICE double mlc_philox(int64_t key, int64_t ctr, int64_t stream) {
  return philox_uniform24((uint64_t)key, (uint64_t)ctr, (uint64_t)stream);
}

#endif
