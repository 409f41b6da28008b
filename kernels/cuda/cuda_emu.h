// cuda_emu.h — the C side of mlc_cuda.h: CUDA kernels written in mlc's C
// subset, compiled by a C compiler (gcc -std=gnu17) and run on the CPU.
//
// What it models (cuda_emu.c has the scheduler):
//   - A launch runs its blocks one after another, in blockIdx order (x
//     fastest). Inside a block every CUDA thread is a ucontext fiber with its
//     own stack (MLC_EMU_STACK_BYTES, a guard page below it); fibers switch
//     only at MLC_BARRIER(), the warp shuffles and __syncwarp, so code
//     between two of those runs without interleaving.
//   - MLC_BARRIER() releases when every thread of the block waits at the
//     same barrier (file:line). Threads waiting at different barriers, or
//     a thread that has returned while others wait, fail the launch with
//     "divergent barrier" (CUDA leaves both undefined).
//   - A shuffle is an exchange through a per-block array: each lane writes
//     its value and waits until every live lane of its warp (32 consecutive
//     linear thread ids, x fastest) has reached a shuffle or __syncwarp with
//     the same mask. Reading a lane that did not take part gives a poison
//     value (all bits set: NaN, -1), as CUDA leaves it undefined. Lanes
//     waiting at a shuffle while the rest of the block waits at a barrier
//     is a deadlock and fails the launch.
//   - MLC_SHARED arrays are static _Thread_local storage: one copy shared by
//     the block's fibers, reused (not cleared) by the next block; the
//     dynamic shared memory of a launch is one buffer refilled with 0xff
//     bytes (NaN floats) before each block.
//   - atomicAdd and friends are plain read-modify-writes: only one fiber
//     runs at a time.
// What it does not model: warp lockstep (warp-synchronous code without
// __syncwarp passes here and may fail on a GPU), concurrency between blocks
// (races between blocks and atomic contention go unseen), memory spaces
// (a device pointer is a host pointer), float4/__half arithmetic/__ldg/cooperative
// groups, and NVRTC's rounding (FMA contraction, --use_fast_math): compare
// results with a tolerance unless the data makes every operation exact.
#ifndef MLC_CUDA_EMU_H
#define MLC_CUDA_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "../round16.h"

// ---- the launch --------------------------------------------------------------------------
typedef struct dim3 {
  unsigned x, y, z;
} dim3;

static inline dim3 mlc_dim3(unsigned x, unsigned y, unsigned z) {
  return (dim3){x, y, z};
}

// The fiber that runs sets these before it resumes (per OS thread).
extern _Thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
enum { warpSize = 32 };

enum { MLC_EMU_STACK_BYTES = 64 * 1024 };      // per CUDA thread
enum { MLC_EMU_MAX_SHARED = 227 * 1024 };      // dynamic shared bytes (sm_90's opt-in limit)

// One per kernel, written by MLC_ENTRY<n>: unpacks cuLaunchKernel-style
// kernelParams (args[i] points at the i-th parameter's value) and calls it.
typedef void (*MlcEmuEntry)(void **args);

// Runs entry over grid x block like cuLaunchKernel(f, grid, block,
// shared_bytes, stream 0, args, NULL) followed by a synchronize. 0, or -1
// with a one-line reason in err (bad geometry, divergent barrier, deadlock,
// no memory for the stacks).
int mlc_emu_launch(MlcEmuEntry entry, void **args, dim3 grid, dim3 block,
                   size_t shared_bytes, char *err, size_t errlen);
// Frees the fiber stacks this OS thread keeps between launches.
void mlc_emu_release(void);

// ---- what kernel code calls ----------------------------------------------------------------
void mlc_emu_barrier(const char *file, int line);
void *mlc_emu_dyn_shared(void);
void mlc_emu_syncwarp(unsigned mask);

typedef enum {
  MLC_EMU_SHFL_IDX,  // __shfl_sync: lane srcLane
  MLC_EMU_SHFL_DOWN, // __shfl_down_sync: lane + delta
  MLC_EMU_SHFL_UP,   // __shfl_up_sync: lane - delta
  MLC_EMU_SHFL_XOR,  // __shfl_xor_sync: lane ^ laneMask
} MlcEmuShfl;

// The exchanged value: 64 bits, whichever member the caller's type uses.
typedef union MlcEmuWord {
  float f;
  double d;
  int32_t i;
  uint32_t u;
  long long l;
  uint64_t bits;
} MlcEmuWord;

MlcEmuWord mlc_emu_shfl(MlcEmuShfl kind, unsigned mask, MlcEmuWord v, int arg,
                        int width);

#define MLC_EMU_SHFL_TYPED(name, T, field)                                     \
  static inline T name(MlcEmuShfl k, unsigned mask, T v, int arg, int width) { \
    MlcEmuWord w;                                                              \
    w.bits = 0;                                                                \
    w.field = v;                                                               \
    return (T)mlc_emu_shfl(k, mask, w, arg, width).field;                      \
  }
MLC_EMU_SHFL_TYPED(mlc_emu_shfl_f, float, f)
MLC_EMU_SHFL_TYPED(mlc_emu_shfl_d, double, d)
MLC_EMU_SHFL_TYPED(mlc_emu_shfl_i, int, i)
MLC_EMU_SHFL_TYPED(mlc_emu_shfl_u, unsigned, u)
MLC_EMU_SHFL_TYPED(mlc_emu_shfl_ll, long long, l)
MLC_EMU_SHFL_TYPED(mlc_emu_shfl_l, long, l)
MLC_EMU_SHFL_TYPED(mlc_emu_shfl_ull, unsigned long long, bits)
MLC_EMU_SHFL_TYPED(mlc_emu_shfl_ul, unsigned long, bits)
#undef MLC_EMU_SHFL_TYPED

// (lane|delta [, width]) -> lane|delta, width (CUDA's default width is 32).
#define MLC_EMU_ARG_WIDTH(arg, width, ...) arg, width
#define MLC_EMU_SHFL(kind, mask, v, ...)                                       \
  _Generic((v), float: mlc_emu_shfl_f, double: mlc_emu_shfl_d,                 \
           int: mlc_emu_shfl_i, unsigned: mlc_emu_shfl_u,                      \
           long long: mlc_emu_shfl_ll, long: mlc_emu_shfl_l,                   \
           unsigned long long: mlc_emu_shfl_ull, unsigned long: mlc_emu_shfl_ul)(  \
      kind, mask, v, MLC_EMU_ARG_WIDTH(__VA_ARGS__, 32, 0))

#define __shfl_sync(mask, v, ...) MLC_EMU_SHFL(MLC_EMU_SHFL_IDX, mask, v, __VA_ARGS__)
#define __shfl_down_sync(mask, v, ...) MLC_EMU_SHFL(MLC_EMU_SHFL_DOWN, mask, v, __VA_ARGS__)
#define __shfl_up_sync(mask, v, ...) MLC_EMU_SHFL(MLC_EMU_SHFL_UP, mask, v, __VA_ARGS__)
#define __shfl_xor_sync(mask, v, ...) MLC_EMU_SHFL(MLC_EMU_SHFL_XOR, mask, v, __VA_ARGS__)
#define __syncwarp(mask) mlc_emu_syncwarp(mask)

// ---- atomics: one fiber runs at a time, so a read-modify-write is atomic ----------------
#define MLC_EMU_ATOMIC(name, T, expr)                                          \
  static inline T name(T *p, T v) {                                            \
    T old = *p;                                                                \
    *p = (expr);                                                               \
    return old;                                                                \
  }
MLC_EMU_ATOMIC(mlc_emu_add_f, float, old + v)
MLC_EMU_ATOMIC(mlc_emu_add_d, double, old + v)
MLC_EMU_ATOMIC(mlc_emu_add_i, int, (int)((unsigned)old + (unsigned)v))
MLC_EMU_ATOMIC(mlc_emu_add_u, unsigned, old + v)
MLC_EMU_ATOMIC(mlc_emu_add_ull, unsigned long long, old + v)
MLC_EMU_ATOMIC(mlc_emu_add_ul, unsigned long, old + v) // uint64_t here, unsigned long long under NVRTC
MLC_EMU_ATOMIC(mlc_emu_max_i, int, old > v ? old : v)
MLC_EMU_ATOMIC(mlc_emu_min_i, int, old < v ? old : v)
#undef MLC_EMU_ATOMIC

#define atomicAdd(p, v)                                                        \
  _Generic((p), float *: mlc_emu_add_f, double *: mlc_emu_add_d,               \
           int *: mlc_emu_add_i, unsigned *: mlc_emu_add_u,                    \
           unsigned long long *: mlc_emu_add_ull, unsigned long *: mlc_emu_add_ul)(p, v)
#define atomicMax(p, v) mlc_emu_max_i(p, v)
#define atomicMin(p, v) mlc_emu_min_i(p, v)

// ---- CUDA's float intrinsics --------------------------------------------------------------
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
#define __expf(x) expf(x)
#define __logf(x) logf(x)
#define __fdividef(a, b) ((a) / (b))
// Rounded products (compile with -ffp-contract=off: nothing is contracted).
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
// cuda_bf16.h's and cuda_fp16.h's conversions (storage only: no
// arithmetic on the 16-bit types), kernels/round16.h's rounding.
typedef struct { uint16_t x; } __nv_bfloat16;
typedef struct { uint16_t x; } __half;
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return (__nv_bfloat16){mlc_f32_to_bf16(f)}; }
static inline float __bfloat162float(__nv_bfloat16 h) { return mlc_bf16_to_f32(h.x); }
static inline __half __float2half_rn(float f) { return (__half){mlc_f32_to_f16(f)}; }
static inline float __half2float(__half h) { return mlc_f16_to_f32(h.x); }

// ---- the tensor-core instruction (mlc_cuda.h's mlc_mma_sync_*) ----------------------------
// The warp's lanes put their fragments into a per-warp exchange, meet at
// __syncwarp, and each computes its 4 elements of D from the fragments as
// the PTX ISA lays them out (mlc_cuda.h), so a wrong fragment layout gives
// wrong results here too. The order is fixed (kir_run's, kir.h KMma): from
// d's old value, one fmaf per k ascending (the products of 16-bit values
// are exact). A second __syncwarp keeps a lane's next product from
// overwriting what its warp still reads.
static inline float mlc_emu_half(int f16, uint32_t reg, int hi) {
  uint16_t h = (uint16_t)(hi ? reg >> 16 : reg & 0xffffu);
  return f16 ? mlc_f16_to_f32(h) : mlc_bf16_to_f32(h);
}
static inline void mlc_emu_mma(int f16, float *d, const uint32_t *a, const uint32_t *b) {
  static _Thread_local uint32_t xa[32][32][4], xb[32][32][2]; // [warp][lane]: the block's fragments
  unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z), w = tid / 32, l = tid % 32;
  for (int i = 0; i < 4; i++) xa[w][l][i] = a[i];
  for (int i = 0; i < 2; i++) xb[w][l][i] = b[i];
  __syncwarp(0xffffffffu);
  unsigned g = l / 4, t = l % 4;
  for (int i = 0; i < 4; i++) {
    unsigned row = g + 8 * (i / 2), col = 2 * t + i % 2;
    float acc = d[i];
    for (unsigned k = 0; k < 16; k++) {
      // A(row, k): lane (row % 8) 4 + (k % 8) / 2, register (row / 8) + 2 (k / 8); B(k, col): lane
      // 4 col + (k % 8) / 2, register k / 8; the half k % 2
      uint32_t ra = xa[w][(row % 8) * 4 + (k % 8) / 2][row / 8 + 2 * (k / 8)], rb = xb[w][col * 4 + (k % 8) / 2][k / 8];
      acc = fmaf(mlc_emu_half(f16, ra, k % 2), mlc_emu_half(f16, rb, k % 2), acc);
    }
    d[i] = acc;
  }
  __syncwarp(0xffffffffu);
}
#define mlc_mma_sync_bf16(d, a, b) mlc_emu_mma(0, d, a, b)
#define mlc_mma_sync_f16(d, a, b) mlc_emu_mma(1, d, a, b)

// ---- the subset's macros (mlc_cuda.h lists them) ------------------------------------------
#define MLC_KERNEL static void
#define MLC_LAUNCH_BOUNDS(n)
#define MLC_DEVICE static inline
#define MLC_SHARED static _Thread_local
#define MLC_DYN_SHARED(T, name) T *const name = (T *)mlc_emu_dyn_shared()
#define MLC_BARRIER() mlc_emu_barrier(__FILE__, __LINE__)
#define MLC_RESTRICT restrict
#define MLC_DEVICE_INLINE static inline
#define __syncthreads() MLC_BARRIER()

// NAME_entry unpacks the launch's parameter array; NAME_argbytes lists the
// parameters' sizes (0-terminated), so a driver that runs launches later
// than they are issued (tests/backend/cuda/fake_libcuda.c) can copy the
// values at the launch, as the CUDA driver does.
#define MLC_EMU_ENTRY_FN(name, call, ...)                                      \
  extern const unsigned char name##_argbytes[];                                \
  const unsigned char name##_argbytes[] = {__VA_ARGS__ 0};                     \
  void name##_entry(void **a);                                                 \
  void name##_entry(void **a) { call; }
#define MLC_ENTRY0(name) MLC_EMU_ENTRY_FN(name, ((void)a, name()), )
#define MLC_ENTRY1(name, T1) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0]), sizeof(T1),)
#define MLC_ENTRY2(name, T1, T2) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1]), sizeof(T1), sizeof(T2),)
#define MLC_ENTRY3(name, T1, T2, T3) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2]), sizeof(T1), sizeof(T2), sizeof(T3),)
#define MLC_ENTRY4(name, T1, T2, T3, T4) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4),)
#define MLC_ENTRY5(name, T1, T2, T3, T4, T5) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5),)
#define MLC_ENTRY6(name, T1, T2, T3, T4, T5, T6) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6),)
#define MLC_ENTRY7(name, T1, T2, T3, T4, T5, T6, T7) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7),)
#define MLC_ENTRY8(name, T1, T2, T3, T4, T5, T6, T7, T8) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6], *(T8 *)a[7]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7), sizeof(T8),)
#define MLC_ENTRY9(name, T1, T2, T3, T4, T5, T6, T7, T8, T9) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6], *(T8 *)a[7], *(T9 *)a[8]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7), sizeof(T8), sizeof(T9),)
#define MLC_ENTRY10(name, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6], *(T8 *)a[7], *(T9 *)a[8], *(T10 *)a[9]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7), sizeof(T8), sizeof(T9), sizeof(T10),)
#define MLC_ENTRY11(name, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6], *(T8 *)a[7], *(T9 *)a[8], *(T10 *)a[9], *(T11 *)a[10]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7), sizeof(T8), sizeof(T9), sizeof(T10), sizeof(T11),)
#define MLC_ENTRY12(name, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6], *(T8 *)a[7], *(T9 *)a[8], *(T10 *)a[9], *(T11 *)a[10], *(T12 *)a[11]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7), sizeof(T8), sizeof(T9), sizeof(T10), sizeof(T11), sizeof(T12),)
#define MLC_ENTRY13(name, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6], *(T8 *)a[7], *(T9 *)a[8], *(T10 *)a[9], *(T11 *)a[10], *(T12 *)a[11], *(T13 *)a[12]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7), sizeof(T8), sizeof(T9), sizeof(T10), sizeof(T11), sizeof(T12), sizeof(T13),)
#define MLC_ENTRY14(name, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6], *(T8 *)a[7], *(T9 *)a[8], *(T10 *)a[9], *(T11 *)a[10], *(T12 *)a[11], *(T13 *)a[12], *(T14 *)a[13]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7), sizeof(T8), sizeof(T9), sizeof(T10), sizeof(T11), sizeof(T12), sizeof(T13), sizeof(T14),)
#define MLC_ENTRY15(name, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6], *(T8 *)a[7], *(T9 *)a[8], *(T10 *)a[9], *(T11 *)a[10], *(T12 *)a[11], *(T13 *)a[12], *(T14 *)a[13], *(T15 *)a[14]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7), sizeof(T8), sizeof(T9), sizeof(T10), sizeof(T11), sizeof(T12), sizeof(T13), sizeof(T14), sizeof(T15),)
#define MLC_ENTRY16(name, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15, T16) \
  MLC_EMU_ENTRY_FN(name, name(*(T1 *)a[0], *(T2 *)a[1], *(T3 *)a[2], *(T4 *)a[3], *(T5 *)a[4], *(T6 *)a[5], *(T7 *)a[6], *(T8 *)a[7], *(T9 *)a[8], *(T10 *)a[9], *(T11 *)a[10], *(T12 *)a[11], *(T13 *)a[12], *(T14 *)a[13], *(T15 *)a[14], *(T16 *)a[15]), sizeof(T1), sizeof(T2), sizeof(T3), sizeof(T4), sizeof(T5), sizeof(T6), sizeof(T7), sizeof(T8), sizeof(T9), sizeof(T10), sizeof(T11), sizeof(T12), sizeof(T13), sizeof(T14), sizeof(T15), sizeof(T16),)

#endif
