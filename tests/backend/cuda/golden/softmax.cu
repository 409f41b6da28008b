// softmax.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// softmax k38_softmax (tests/backend/cuda/golden/softmax.kir:14): block 256, buffers b0 = t37 b1 = t38
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) softmax_k38_softmax(const float *MLC_RESTRICT b0, float *MLC_RESTRICT b1, int64_t s0, int64_t s1, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  int64_t v_gb8 = 0;
  (void)v_gb8;
  int64_t v_gt9 = 0;
  (void)v_gt9;
  int64_t v_g10 = 0;
  (void)v_g10;
  int64_t v_i0 = 0;
  (void)v_i0;
  int64_t v_i1 = 0;
  (void)v_i1;
  int64_t v_i2 = 0;
  (void)v_i2;
  float v_s3 = 0;
  (void)v_s3;
  float v_mx4 = 0;
  (void)v_mx4;
  int64_t v_k5 = 0;
  (void)v_k5;
  int64_t v_k6 = 0;
  (void)v_k6;
  int64_t v_k7 = 0;
  (void)v_k7;
  v_gb8 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt9 = (int64_t)threadIdx.x;
    v_g10 = ((v_gb8 * 256LL) + v_gt9);
    if ((v_g10 < ((s0 * 2LL) * s1))) {
      v_i0 = mlc_div_i64(v_g10, (2LL * s1));
      v_i1 = mlc_mod_i64(mlc_div_i64(v_g10, s1), 2LL);
      v_i2 = mlc_mod_i64(v_g10, s1);
      v_s3 = 0.0f;
      v_mx4 = (-INFINITY);
      {
        const int64_t n_k5 = s1;
        for (v_k5 = 0; v_k5 < n_k5; v_k5++) {
          v_mx4 = (((b0[((((((v_i0 * 2LL) + v_i1) * s1) + v_i2) * s1) + v_k5)] > v_mx4) || (b0[((((((v_i0 * 2LL) + v_i1) * s1) + v_i2) * s1) + v_k5)] != b0[((((((v_i0 * 2LL) + v_i1) * s1) + v_i2) * s1) + v_k5)])) ? b0[((((((v_i0 * 2LL) + v_i1) * s1) + v_i2) * s1) + v_k5)] : v_mx4);
        }
      }
      {
        const int64_t n_k6 = s1;
        for (v_k6 = 0; v_k6 < n_k6; v_k6++) {
          v_s3 = (v_s3 + expf((b0[((((((v_i0 * 2LL) + v_i1) * s1) + v_i2) * s1) + v_k6)] - v_mx4)));
        }
      }
      {
        const int64_t n_k7 = s1;
        for (v_k7 = 0; v_k7 < n_k7; v_k7++) {
          b1[((((((v_i0 * 2LL) + v_i1) * s1) + v_i2) * s1) + v_k7)] = (expf((b0[((((((v_i0 * 2LL) + v_i1) * s1) + v_i2) * s1) + v_k7)] - v_mx4)) / v_s3);
        }
      }
    }
  }
}
MLC_ENTRY6(softmax_k38_softmax, const float *, float *, int64_t, int64_t, uint64_t, uint32_t *)

// Host launchers for softmax.cu, printed by mlc (do not edit).
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

int32_t mlc_cu_softmax(MlcLauncher *l, const int64_t *dims, const uint64_t *inputs, const uint64_t *outputs,
    const uint64_t *state, uint64_t scratch, uint64_t seed, uint64_t flag) {
  (void)dims, (void)inputs, (void)outputs, (void)state, (void)scratch;
  int64_t sym_B = dims[0];
  (void)sym_B;
  int64_t sym_T = dims[2];
  (void)sym_T;
  uint64_t v[6]; // what the launches take: buffer i's device address in v[i], syms, seed, flag
  v[0] = inputs[0]; // t37
  v[1] = outputs[0]; // t38
  v[2] = (uint64_t)sym_B;
  v[3] = (uint64_t)sym_T;
  v[4] = seed;
  v[5] = flag;
  int64_t g[1]; // the grid sizes
  g[0] = mlc_h_div((((sym_B * 2LL) * sym_T) + 255LL), 256LL);
  static const uint32_t launches[] = {
      0, 0, 256, 6, 0, 1, 2, 3, 4, 5, // k38_softmax
  };
  for (const uint32_t *x = launches; x < launches + sizeof launches / sizeof launches[0]; x += 4 + x[3])
    if (mlc_h_launch(l, g, v, x)) return -1;
  return 0;
}

int64_t mlc_cu_softmax_scratch_bytes(const int64_t *dims) {
  (void)dims;
  int64_t sym_B = dims[0];
  (void)sym_B;
  int64_t sym_T = dims[2];
  (void)sym_T;
  return 0LL;
}

const char *const mlc_cu_kernels[] = {
    "softmax_k38_softmax",
    NULL};
const int mlc_cu_nkernels = 1;
const char *const mlc_cu_messages[] = {
    NULL};
const int mlc_cu_nmessages = 0;
