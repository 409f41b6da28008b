// elementwise.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// ew k0_add (tests/backend/cuda/golden/elementwise.kir:18): block 256, buffers b0 = %a b1 = %b b2 = t0
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) ew_k0_add(const float *MLC_RESTRICT b0, const float *MLC_RESTRICT b1, float *MLC_RESTRICT b2, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  int64_t v_gb2 = 0;
  (void)v_gb2;
  int64_t v_gt3 = 0;
  (void)v_gt3;
  int64_t v_g4 = 0;
  (void)v_g4;
  int64_t v_i0 = 0;
  (void)v_i0;
  int64_t v_i1 = 0;
  (void)v_i1;
  v_gb2 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt3 = (int64_t)threadIdx.x;
    v_g4 = ((v_gb2 * 256LL) + v_gt3);
    if ((v_g4 < (s0 * 64LL))) {
      v_i0 = mlc_div_i64(v_g4, 64LL);
      v_i1 = mlc_mod_i64(v_g4, 64LL);
      b2[((v_i0 * 64LL) + v_i1)] = (b0[((v_i0 * 64LL) + v_i1)] + __fmul_rn(b1[v_i1], 0.5f));
    }
  }
}
MLC_ENTRY6(ew_k0_add, const float *, const float *, float *, int64_t, uint64_t, uint32_t *)

// ew k1_where (tests/backend/cuda/golden/elementwise.kir:31): block 256, buffers b0 = %m b1 = t0 b2 = out0
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) ew_k1_where(const uint8_t *MLC_RESTRICT b0, const float *MLC_RESTRICT b1, float *MLC_RESTRICT b2, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  int64_t v_gb2 = 0;
  (void)v_gb2;
  int64_t v_gt3 = 0;
  (void)v_gt3;
  int64_t v_g4 = 0;
  (void)v_g4;
  int64_t v_i0 = 0;
  (void)v_i0;
  int64_t v_i1 = 0;
  (void)v_i1;
  v_gb2 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt3 = (int64_t)threadIdx.x;
    v_g4 = ((v_gb2 * 256LL) + v_gt3);
    if ((v_g4 < (s0 * 64LL))) {
      v_i0 = mlc_div_i64(v_g4, 64LL);
      v_i1 = mlc_mod_i64(v_g4, 64LL);
      b2[((v_i0 * 64LL) + v_i1)] = ((b0[((v_i0 * 64LL) + v_i1)] != 0) ? mlc_maxf(b1[((v_i0 * 64LL) + v_i1)], 0.0f) : tanhf(b1[((v_i0 * 64LL) + v_i1)]));
    }
  }
}
MLC_ENTRY6(ew_k1_where, const uint8_t *, const float *, float *, int64_t, uint64_t, uint32_t *)

// ew k2_cast (tests/backend/cuda/golden/elementwise.kir:44): block 256, buffers b0 = t0 b1 = out1
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) ew_k2_cast(const float *MLC_RESTRICT b0, int32_t *MLC_RESTRICT b1, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  int64_t v_gb2 = 0;
  (void)v_gb2;
  int64_t v_gt3 = 0;
  (void)v_gt3;
  int64_t v_g4 = 0;
  (void)v_g4;
  int64_t v_i0 = 0;
  (void)v_i0;
  int64_t v_i1 = 0;
  (void)v_i1;
  v_gb2 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt3 = (int64_t)threadIdx.x;
    v_g4 = ((v_gb2 * 256LL) + v_gt3);
    if ((v_g4 < (s0 * 64LL))) {
      v_i0 = mlc_div_i64(v_g4, 64LL);
      v_i1 = mlc_mod_i64(v_g4, 64LL);
      b1[((v_i0 * 64LL) + v_i1)] = ((int32_t)((uint32_t)(mlc_div_i32(((int32_t)mlc_ftoi(b0[((v_i0 * 64LL) + v_i1)])), ((int32_t)3))) + (uint32_t)(mlc_mod_i32(((int32_t)(v_i1)), ((int32_t)7)))));
    }
  }
}
MLC_ENTRY5(ew_k2_cast, const float *, int32_t *, int64_t, uint64_t, uint32_t *)

// Host launchers for elementwise.cu, printed by mlc (do not edit).
#include <stdint.h>

#include "mlc_model.h"

static inline int64_t mlc_h_div(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t mlc_h_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t mlc_h_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t mlc_h_min(int64_t a, int64_t b) { return a < b ? a : b; }

// One launch, a row of a launcher's table: launch index, grid (a slot of
// g; none when it is empty), block threads, n, then the n slots of v that
// are its arguments.
static int mlc_h_launch(MlcLauncher *l, const int64_t *g, uint64_t *v, const uint32_t *x) {
  void *args[256];
  for (uint32_t i = 0; i < x[3]; i++) args[i] = &v[x[4 + i]];
  return g[x[1]] > 0 && l->launch(l, (int)x[0], g[x[1]], x[2], args);
}

int32_t mlc_cu_ew(MlcLauncher *l, const int64_t *dims, const uint64_t *inputs, const uint64_t *outputs,
    const uint64_t *state, uint64_t scratch, uint64_t seed, uint64_t flag) {
  (void)dims, (void)inputs, (void)outputs, (void)state, (void)scratch;
  int64_t sym_B = dims[0];
  (void)sym_B;
  uint64_t v[9]; // what the launches take: buffer i's device address in v[i], syms, seed, flag
  v[0] = inputs[0]; // %a
  v[1] = inputs[1]; // %b
  v[2] = inputs[2]; // %m
  v[3] = scratch + (uint64_t)0LL; // t0
  v[4] = outputs[0]; // out0
  v[5] = outputs[1]; // out1
  v[6] = (uint64_t)sym_B;
  v[7] = seed;
  v[8] = flag;
  int64_t g[1]; // the grid sizes
  g[0] = mlc_h_div(((sym_B * 64LL) + 255LL), 256LL);
  static const uint32_t launches[] = {
      0, 0, 256, 6, 0, 1, 3, 6, 7, 8, // k0_add
      1, 0, 256, 6, 2, 3, 4, 6, 7, 8, // k1_where
      2, 0, 256, 5, 3, 5, 6, 7, 8, // k2_cast
  };
  for (const uint32_t *x = launches; x < launches + sizeof launches / sizeof launches[0]; x += 4 + x[3])
    if (mlc_h_launch(l, g, v, x)) return -1;
  return 0;
}

int64_t mlc_cu_ew_scratch_bytes(const int64_t *dims) {
  (void)dims;
  int64_t sym_B = dims[0];
  (void)sym_B;
  return (sym_B * 256LL);
}

const char *const mlc_cu_kernels[] = {
    "ew_k0_add",
    "ew_k1_where",
    "ew_k2_cast",
    NULL};
const int mlc_cu_nkernels = 3;
const char *const mlc_cu_messages[] = {
    NULL};
const int mlc_cu_nmessages = 0;
