// reduction.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// red k0_mean (tests/backend/cuda/golden/reduction.kir:19): block 1024, buffers b0 = %x b1 = out0 b2 = t0_sh
MLC_KERNEL MLC_LAUNCH_BOUNDS(1024) red_k0_mean(const float *MLC_RESTRICT b0, float *MLC_RESTRICT b1, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  MLC_SHARED float b2[1024];
  int64_t v_gb3 = 0;
  (void)v_gb3;
  int64_t v_gt4 = 0;
  (void)v_gt4;
  float v_acc0 = 0;
  (void)v_acc0;
  int64_t v_j5 = 0;
  (void)v_j5;
  int64_t v_g6 = 0;
  (void)v_g6;
  int64_t v_r1 = 0;
  (void)v_r1;
  int64_t v_r2 = 0;
  (void)v_r2;
  int64_t v_gt7 = 0;
  (void)v_gt7;
  int64_t v_gt8 = 0;
  (void)v_gt8;
  int64_t v_gt9 = 0;
  (void)v_gt9;
  int64_t v_gt10 = 0;
  (void)v_gt10;
  int64_t v_gt11 = 0;
  (void)v_gt11;
  int64_t v_gt12 = 0;
  (void)v_gt12;
  int64_t v_gt13 = 0;
  (void)v_gt13;
  int64_t v_gt14 = 0;
  (void)v_gt14;
  int64_t v_gt15 = 0;
  (void)v_gt15;
  int64_t v_gt16 = 0;
  (void)v_gt16;
  int64_t v_gt17 = 0;
  (void)v_gt17;
  v_gb3 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt4 = (int64_t)threadIdx.x;
    v_acc0 = 0.0f;
    {
      const int64_t n_j5 = mlc_div_i64(((s0 * 8LL) + 1023LL), 1024LL);
      for (v_j5 = 0; v_j5 < n_j5; v_j5++) {
        v_g6 = ((v_j5 * 1024LL) + v_gt4);
        if ((v_g6 < (s0 * 8LL))) {
          v_r1 = mlc_div_i64(v_g6, 8LL);
          v_r2 = mlc_mod_i64(v_g6, 8LL);
          v_acc0 = (v_acc0 + b0[((v_r1 * 8LL) + v_r2)]);
        }
      }
    }
    b2[v_gt4] = v_acc0;
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 512u) {
    v_gt7 = (int64_t)threadIdx.x;
    b2[v_gt7] = (b2[v_gt7] + b2[(v_gt7 + 512LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 256u) {
    v_gt8 = (int64_t)threadIdx.x;
    b2[v_gt8] = (b2[v_gt8] + b2[(v_gt8 + 256LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 128u) {
    v_gt9 = (int64_t)threadIdx.x;
    b2[v_gt9] = (b2[v_gt9] + b2[(v_gt9 + 128LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 64u) {
    v_gt10 = (int64_t)threadIdx.x;
    b2[v_gt10] = (b2[v_gt10] + b2[(v_gt10 + 64LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 32u) {
    v_gt11 = (int64_t)threadIdx.x;
    b2[v_gt11] = (b2[v_gt11] + b2[(v_gt11 + 32LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 16u) {
    v_gt12 = (int64_t)threadIdx.x;
    b2[v_gt12] = (b2[v_gt12] + b2[(v_gt12 + 16LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 8u) {
    v_gt13 = (int64_t)threadIdx.x;
    b2[v_gt13] = (b2[v_gt13] + b2[(v_gt13 + 8LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 4u) {
    v_gt14 = (int64_t)threadIdx.x;
    b2[v_gt14] = (b2[v_gt14] + b2[(v_gt14 + 4LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 2u) {
    v_gt15 = (int64_t)threadIdx.x;
    b2[v_gt15] = (b2[v_gt15] + b2[(v_gt15 + 2LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 1u) {
    v_gt16 = (int64_t)threadIdx.x;
    b2[v_gt16] = (b2[v_gt16] + b2[(v_gt16 + 1LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 1u) {
    v_gt17 = (int64_t)threadIdx.x;
    v_acc0 = b2[0LL];
    b1[0LL] = (v_acc0 / ((float)((s0 * 8LL))));
  }
}
MLC_ENTRY5(red_k0_mean, const float *, float *, int64_t, uint64_t, uint32_t *)

// red k1_reduce_to (tests/backend/cuda/golden/reduction.kir:81): block 256, buffers b0 = %y b1 = out1 b2 = t1_sh
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) red_k1_reduce_to(const float *MLC_RESTRICT b0, float *MLC_RESTRICT b1, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  MLC_SHARED float b2[256];
  int64_t v_gb3 = 0;
  (void)v_gb3;
  int64_t v_i0 = 0;
  (void)v_i0;
  int64_t v_gt4 = 0;
  (void)v_gt4;
  float v_acc1 = 0;
  (void)v_acc1;
  int64_t v_j5 = 0;
  (void)v_j5;
  int64_t v_g6 = 0;
  (void)v_g6;
  int64_t v_r2 = 0;
  (void)v_r2;
  int64_t v_gt7 = 0;
  (void)v_gt7;
  int64_t v_gt8 = 0;
  (void)v_gt8;
  int64_t v_gt9 = 0;
  (void)v_gt9;
  int64_t v_gt10 = 0;
  (void)v_gt10;
  int64_t v_gt11 = 0;
  (void)v_gt11;
  int64_t v_gt12 = 0;
  (void)v_gt12;
  int64_t v_gt13 = 0;
  (void)v_gt13;
  int64_t v_gt14 = 0;
  (void)v_gt14;
  int64_t v_gt15 = 0;
  (void)v_gt15;
  v_gb3 = (int64_t)blockIdx.x;
  v_i0 = v_gb3;
  if (!mlc_dead) {
    v_gt4 = (int64_t)threadIdx.x;
    v_acc1 = 0.0f;
    {
      const int64_t n_j5 = mlc_div_i64((s0 + 255LL), 256LL);
      for (v_j5 = 0; v_j5 < n_j5; v_j5++) {
        v_g6 = ((v_j5 * 256LL) + v_gt4);
        if ((v_g6 < s0)) {
          v_r2 = v_g6;
          v_acc1 = (v_acc1 + b0[((v_r2 * 10LL) + v_i0)]);
        }
      }
    }
    b2[v_gt4] = v_acc1;
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 128u) {
    v_gt7 = (int64_t)threadIdx.x;
    b2[v_gt7] = (b2[v_gt7] + b2[(v_gt7 + 128LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 64u) {
    v_gt8 = (int64_t)threadIdx.x;
    b2[v_gt8] = (b2[v_gt8] + b2[(v_gt8 + 64LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 32u) {
    v_gt9 = (int64_t)threadIdx.x;
    b2[v_gt9] = (b2[v_gt9] + b2[(v_gt9 + 32LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 16u) {
    v_gt10 = (int64_t)threadIdx.x;
    b2[v_gt10] = (b2[v_gt10] + b2[(v_gt10 + 16LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 8u) {
    v_gt11 = (int64_t)threadIdx.x;
    b2[v_gt11] = (b2[v_gt11] + b2[(v_gt11 + 8LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 4u) {
    v_gt12 = (int64_t)threadIdx.x;
    b2[v_gt12] = (b2[v_gt12] + b2[(v_gt12 + 4LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 2u) {
    v_gt13 = (int64_t)threadIdx.x;
    b2[v_gt13] = (b2[v_gt13] + b2[(v_gt13 + 2LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 1u) {
    v_gt14 = (int64_t)threadIdx.x;
    b2[v_gt14] = (b2[v_gt14] + b2[(v_gt14 + 1LL)]);
  }
  MLC_BARRIER();
  if (!mlc_dead && threadIdx.x < 1u) {
    v_gt15 = (int64_t)threadIdx.x;
    v_acc1 = b2[0LL];
    b1[v_i0] = v_acc1;
  }
}
MLC_ENTRY5(red_k1_reduce_to, const float *, float *, int64_t, uint64_t, uint32_t *)

// red k2_max (tests/backend/cuda/golden/reduction.kir:135): block 256, buffers b0 = %x b1 = out2
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) red_k2_max(const float *MLC_RESTRICT b0, float *MLC_RESTRICT b1, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  int64_t v_gb3 = 0;
  (void)v_gb3;
  int64_t v_gt4 = 0;
  (void)v_gt4;
  int64_t v_g5 = 0;
  (void)v_g5;
  int64_t v_i0 = 0;
  (void)v_i0;
  float v_m1 = 0;
  (void)v_m1;
  int64_t v_r2 = 0;
  (void)v_r2;
  v_gb3 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt4 = (int64_t)threadIdx.x;
    v_g5 = ((v_gb3 * 256LL) + v_gt4);
    if ((v_g5 < s0)) {
      v_i0 = v_g5;
      v_m1 = (-INFINITY);
      {
        const int64_t n_r2 = 8LL;
        for (v_r2 = 0; v_r2 < n_r2; v_r2++) {
          v_m1 = mlc_maxf(v_m1, b0[((v_i0 * 8LL) + v_r2)]);
        }
      }
      b1[v_i0] = v_m1;
    }
  }
}
MLC_ENTRY5(red_k2_max, const float *, float *, int64_t, uint64_t, uint32_t *)

