// epilogue.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// helpers (kir.h's scalar semantics)
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
// Philox-4x32-10 (kernels/philox.h): key (lo, hi), counter (ctr lo, hi, stream lo, hi);
// the first word w gives (w >> 8) * 2^-24.
MLC_DEVICE double mlc_philox(int64_t key, int64_t ctr, int64_t stream) {
  uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)((uint64_t)ctr >> 32);
  uint32_t c2 = (uint32_t)stream, c3 = (uint32_t)((uint64_t)stream >> 32);
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)((uint64_t)key >> 32);
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return (double)(c0 >> 8) * 5.9604644775390625e-08;
}
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

