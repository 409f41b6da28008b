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

int32_t mlc_cu_ew(MlcLauncher *l, const int64_t *dims, const uint64_t *inputs, const uint64_t *outputs,
    const uint64_t *state, uint64_t scratch, uint64_t seed, uint64_t flag) {
  (void)dims, (void)inputs, (void)outputs, (void)state, (void)scratch;
  int64_t sym_B = dims[0];
  (void)sym_B;
  uint64_t buf0 = inputs[0]; // %a
  (void)buf0;
  uint64_t buf1 = inputs[1]; // %b
  (void)buf1;
  uint64_t buf2 = inputs[2]; // %m
  (void)buf2;
  uint64_t buf3 = scratch + (uint64_t)0LL; // t0
  (void)buf3;
  uint64_t buf4 = outputs[0]; // out0
  (void)buf4;
  uint64_t buf5 = outputs[1]; // out1
  (void)buf5;
  { // k0_add
    void *args[] = {&buf0, &buf1, &buf3, &sym_B, &seed, &flag};
    int64_t grid0 = mlc_h_div(((sym_B * 64LL) + 255LL), 256LL);
    if (grid0 > 0 && l->launch(l, 0, grid0, 256, args)) return -1;
  }
  { // k1_where
    void *args[] = {&buf2, &buf3, &buf4, &sym_B, &seed, &flag};
    int64_t grid0 = mlc_h_div(((sym_B * 64LL) + 255LL), 256LL);
    if (grid0 > 0 && l->launch(l, 1, grid0, 256, args)) return -1;
  }
  { // k2_cast
    void *args[] = {&buf3, &buf5, &sym_B, &seed, &flag};
    int64_t grid0 = mlc_h_div(((sym_B * 64LL) + 255LL), 256LL);
    if (grid0 > 0 && l->launch(l, 2, grid0, 256, args)) return -1;
  }
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
