// epilogue.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// dense k0_linear_relu (tests/backend/cuda/golden/epilogue.kir:14): block 256, buffers b0 = %x b1 = %w b2 = %b b3 = out0
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) dense_k0_linear_relu(const float *MLC_RESTRICT b0, const float *MLC_RESTRICT b1, const float *MLC_RESTRICT b2, float *MLC_RESTRICT b3, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  int64_t v_gb4 = 0;
  (void)v_gb4;
  int64_t v_gt5 = 0;
  (void)v_gt5;
  int64_t v_g6 = 0;
  (void)v_g6;
  int64_t v_i0 = 0;
  (void)v_i0;
  int64_t v_i1 = 0;
  (void)v_i1;
  float v_acc2 = 0;
  (void)v_acc2;
  int64_t v_k3 = 0;
  (void)v_k3;
  v_gb4 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt5 = (int64_t)threadIdx.x;
    v_g6 = ((v_gb4 * 256LL) + v_gt5);
    if ((v_g6 < (s0 * 16LL))) {
      v_i0 = mlc_div_i64(v_g6, 16LL);
      v_i1 = mlc_mod_i64(v_g6, 16LL);
      v_acc2 = 0.0f;
      {
        const int64_t n_k3 = 32LL;
        for (v_k3 = 0; v_k3 < n_k3; v_k3++) {
          v_acc2 = (v_acc2 + __fmul_rn(b0[((v_i0 * 32LL) + v_k3)], b1[((v_k3 * 16LL) + v_i1)]));
        }
      }
      b3[((v_i0 * 16LL) + v_i1)] = mlc_maxf((v_acc2 + b2[v_i1]), 0.0f);
    }
  }
}
MLC_ENTRY7(dense_k0_linear_relu, const float *, const float *, const float *, float *, int64_t, uint64_t, uint32_t *)

