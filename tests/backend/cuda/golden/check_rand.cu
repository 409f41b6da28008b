// check_rand.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// drop k0_embedding (tests/backend/cuda/golden/check_rand.kir:15): block 256, buffers b0 = %x b1 = %y b2 = %e b3 = out0
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) drop_k0_embedding(const float *MLC_RESTRICT b0, const int64_t *MLC_RESTRICT b1, const float *MLC_RESTRICT b2, float *MLC_RESTRICT b3, int64_t s0, uint64_t seed, uint32_t *flag) {
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
  int64_t v_row1 = 0;
  (void)v_row1;
  int64_t v_i2 = 0;
  (void)v_i2;
  v_gb3 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt4 = (int64_t)threadIdx.x;
    v_g5 = ((v_gb3 * 256LL) + v_gt4);
    if ((v_g5 < s0)) {
      v_i0 = v_g5;
      v_row1 = b1[v_i0];
      if (!((v_row1 >= 0LL) && (v_row1 < 10LL))) {
        mlc_fail(flag, 1u); // embedding index out of range
        goto mlc_end0;
      }
      {
        const int64_t n_i2 = 16LL;
        for (v_i2 = 0; v_i2 < n_i2; v_i2++) {
          b3[((v_i0 * 16LL) + v_i2)] = __fmul_rn((b2[((v_row1 * 16LL) + v_i2)] + b0[((v_i0 * 16LL) + v_i2)]), ((float)(((mlc_philox(42LL, ((v_i0 * 16LL) + v_i2), ((int64_t)seed)) >= 0.25) ? 1.3333333333333333 : 0.0))));
        }
      }
    }
  mlc_end0:;
  }
}
MLC_ENTRY7(drop_k0_embedding, const float *, const int64_t *, const float *, float *, int64_t, uint64_t, uint32_t *)

// Host launchers for check_rand.cu, printed by mlc (do not edit).
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

int32_t mlc_cu_drop(MlcLauncher *l, const int64_t *dims, const uint64_t *inputs, const uint64_t *outputs,
    const uint64_t *state, uint64_t scratch, uint64_t seed, uint64_t flag) {
  (void)dims, (void)inputs, (void)outputs, (void)state, (void)scratch;
  int64_t sym_B = dims[0];
  (void)sym_B;
  uint64_t v[7]; // what the launches take: buffer i's device address in v[i], syms, seed, flag
  v[0] = inputs[0]; // %x
  v[1] = inputs[1]; // %y
  v[2] = inputs[2]; // %e
  v[3] = outputs[0]; // out0
  v[4] = (uint64_t)sym_B;
  v[5] = seed;
  v[6] = flag;
  int64_t g[1]; // the grid sizes
  g[0] = mlc_h_div((sym_B + 255LL), 256LL);
  static const uint32_t launches[] = {
      0, 0, 256, 7, 0, 1, 2, 3, 4, 5, 6, // k0_embedding
  };
  for (const uint32_t *x = launches; x < launches + sizeof launches / sizeof launches[0]; x += 4 + x[3])
    if (mlc_h_launch(l, g, v, x)) return -1;
  return 0;
}

int64_t mlc_cu_drop_scratch_bytes(const int64_t *dims) {
  (void)dims;
  int64_t sym_B = dims[0];
  (void)sym_B;
  return 0LL;
}

const char *const mlc_cu_kernels[] = {
    "drop_k0_embedding",
    NULL};
const int mlc_cu_nkernels = 1;
const char *const mlc_cu_messages[] = {
    "embedding index out of range",
    NULL};
const int mlc_cu_nmessages = 1;
