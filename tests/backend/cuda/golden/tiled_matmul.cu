// tiled_matmul.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// dense k0_matmul_bias (tests/backend/cuda/golden/tiled_matmul.kir:23), launch 1 of 2: block 256, buffers b0 = %x b1 = %w b2 = %b b3 = out0 b4 = t0_part b5 = t0_as b6 = t0_bs b7 = t0_ss
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) dense_k0_matmul_bias_1(const float *MLC_RESTRICT b0, const float *MLC_RESTRICT b1, const float *MLC_RESTRICT b2, const float *MLC_RESTRICT b3, float *MLC_RESTRICT b4, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  MLC_SHARED float b5[2080];
  MLC_SHARED float b6[544];
  float b7[4];
  int64_t v_gb8 = 0;
  (void)v_gb8;
  int64_t v_sg9 = 0;
  (void)v_sg9;
  int64_t v_gi10 = 0;
  (void)v_gi10;
  int64_t v_i011 = 0;
  (void)v_i011;
  int64_t v_j012 = 0;
  (void)v_j012;
  int64_t v_kc13 = 0;
  (void)v_kc13;
  int64_t v_kb014 = 0;
  (void)v_kb014;
  int64_t v_kl15 = 0;
  (void)v_kl15;
  int64_t v_gt16 = 0;
  (void)v_gt16;
  int64_t v_nt17 = 0;
  (void)v_nt17;
  int64_t v_gt18 = 0;
  (void)v_gt18;
  float v_av19 = 0;
  (void)v_av19;
  int64_t v_ar20 = 0;
  (void)v_ar20;
  float v_av21 = 0;
  (void)v_av21;
  int64_t v_ar22 = 0;
  (void)v_ar22;
  float v_av23 = 0;
  (void)v_av23;
  int64_t v_ar24 = 0;
  (void)v_ar24;
  float v_av25 = 0;
  (void)v_av25;
  int64_t v_ar26 = 0;
  (void)v_ar26;
  float v_bv27 = 0;
  (void)v_bv27;
  int64_t v_bc28 = 0;
  (void)v_bc28;
  int64_t v_kt29 = 0;
  (void)v_kt29;
  int64_t v_kn30 = 0;
  (void)v_kn30;
  int64_t v_h31 = 0;
  (void)v_h31;
  int64_t v_nx32 = 0;
  (void)v_nx32;
  int64_t v_k133 = 0;
  (void)v_k133;
  int64_t v_kn134 = 0;
  (void)v_kn134;
  int64_t v_gt35 = 0;
  (void)v_gt35;
  float v_av36 = 0;
  (void)v_av36;
  int64_t v_ar37 = 0;
  (void)v_ar37;
  float v_av38 = 0;
  (void)v_av38;
  int64_t v_ar39 = 0;
  (void)v_ar39;
  float v_av40 = 0;
  (void)v_av40;
  int64_t v_ar41 = 0;
  (void)v_ar41;
  float v_av42 = 0;
  (void)v_av42;
  int64_t v_ar43 = 0;
  (void)v_ar43;
  float v_bv44 = 0;
  (void)v_bv44;
  int64_t v_bc45 = 0;
  (void)v_bc45;
  int64_t v_ty46 = 0;
  (void)v_ty46;
  int64_t v_tx47 = 0;
  (void)v_tx47;
  float v_c48 = 0;
  (void)v_c48;
  float v_c49 = 0;
  (void)v_c49;
  float v_c50 = 0;
  (void)v_c50;
  float v_c51 = 0;
  (void)v_c51;
  int64_t v_kk52 = 0;
  (void)v_kk52;
  float v_a53 = 0;
  (void)v_a53;
  float v_a54 = 0;
  (void)v_a54;
  float v_b55 = 0;
  (void)v_b55;
  float v_b56 = 0;
  (void)v_b56;
  int64_t v_gt57 = 0;
  (void)v_gt57;
  int64_t v_ty58 = 0;
  (void)v_ty58;
  int64_t v_tx59 = 0;
  (void)v_tx59;
  v_gb8 = (int64_t)blockIdx.x;
  v_sg9 = mlc_div_i64(v_gb8, mlc_div_i64(((s0 + 64LL) - 1LL), 64LL));
  v_gi10 = mlc_mod_i64(v_gb8, mlc_div_i64(((s0 + 64LL) - 1LL), 64LL));
  v_i011 = (mlc_mod_i64(v_gi10, mlc_div_i64(((s0 + 64LL) - 1LL), 64LL)) * 64LL);
  v_j012 = 0LL;
  v_kc13 = 300LL;
  v_kb014 = (v_sg9 * v_kc13);
  v_kl15 = ((int64_t)mlc_imin(v_kc13, (600LL - (v_sg9 * v_kc13))));
  if (!mlc_dead) {
    v_gt16 = (int64_t)threadIdx.x;
    b7[0LL] = 0.0f;
    b7[1LL] = 0.0f;
    b7[2LL] = 0.0f;
    b7[3LL] = 0.0f;
  }
  v_nt17 = mlc_div_i64(((v_kl15 + 16LL) - 1LL), 16LL);
  if (!mlc_dead) {
    v_gt18 = (int64_t)threadIdx.x;
    v_av19 = 0.0f;
    v_ar20 = (v_i011 + mlc_div_i64(v_gt18, 16LL));
    if (((v_ar20 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av19 = b0[((v_ar20 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))];
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + mlc_div_i64(v_gt18, 16LL))] = v_av19;
    v_av21 = 0.0f;
    v_ar22 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 16LL));
    if (((v_ar22 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av21 = b0[((v_ar22 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))];
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 16LL))] = v_av21;
    v_av23 = 0.0f;
    v_ar24 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 32LL));
    if (((v_ar24 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av23 = b0[((v_ar24 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))];
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 32LL))] = v_av23;
    v_av25 = 0.0f;
    v_ar26 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 48LL));
    if (((v_ar26 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av25 = b0[((v_ar26 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))];
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 48LL))] = v_av25;
    v_bv27 = 0.0f;
    v_bc28 = (v_j012 + mlc_div_i64(v_gt18, 16LL));
    if (((v_bc28 < 5LL) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_bv27 = b1[((v_kb014 + mlc_mod_i64(v_gt18, 16LL)) + (v_bc28 * 600LL))];
    }
    b6[((mlc_mod_i64(v_gt18, 16LL) * 17LL) + mlc_div_i64(v_gt18, 16LL))] = v_bv27;
  }
  MLC_BARRIER();
  {
    const int64_t n_kt29 = v_nt17;
    for (v_kt29 = 0; v_kt29 < n_kt29; v_kt29++) {
      v_kn30 = ((int64_t)mlc_imin(16LL, (v_kl15 - (v_kt29 * 16LL))));
      v_h31 = mlc_mod_i64(v_kt29, 2LL);
      v_nx32 = (v_kt29 + 1LL);
      v_k133 = (v_kb014 + (v_nx32 * 16LL));
      v_kn134 = ((int64_t)mlc_imin(16LL, (v_kl15 - (v_nx32 * 16LL))));
      if (!mlc_dead) {
        v_gt35 = (int64_t)threadIdx.x;
        if ((v_nx32 < v_nt17)) {
          v_av36 = 0.0f;
          v_ar37 = (v_i011 + mlc_div_i64(v_gt35, 16LL));
          if (((v_ar37 < s0) && (mlc_mod_i64(v_gt35, 16LL) < v_kn134))) {
            v_av36 = b0[((v_ar37 * 600LL) + (v_k133 + mlc_mod_i64(v_gt35, 16LL)))];
          }
          b5[(((1LL - v_h31) * 1040LL) + ((mlc_mod_i64(v_gt35, 16LL) * 65LL) + mlc_div_i64(v_gt35, 16LL)))] = v_av36;
          v_av38 = 0.0f;
          v_ar39 = (v_i011 + (mlc_div_i64(v_gt35, 16LL) + 16LL));
          if (((v_ar39 < s0) && (mlc_mod_i64(v_gt35, 16LL) < v_kn134))) {
            v_av38 = b0[((v_ar39 * 600LL) + (v_k133 + mlc_mod_i64(v_gt35, 16LL)))];
          }
          b5[(((1LL - v_h31) * 1040LL) + ((mlc_mod_i64(v_gt35, 16LL) * 65LL) + (mlc_div_i64(v_gt35, 16LL) + 16LL)))] = v_av38;
          v_av40 = 0.0f;
          v_ar41 = (v_i011 + (mlc_div_i64(v_gt35, 16LL) + 32LL));
          if (((v_ar41 < s0) && (mlc_mod_i64(v_gt35, 16LL) < v_kn134))) {
            v_av40 = b0[((v_ar41 * 600LL) + (v_k133 + mlc_mod_i64(v_gt35, 16LL)))];
          }
          b5[(((1LL - v_h31) * 1040LL) + ((mlc_mod_i64(v_gt35, 16LL) * 65LL) + (mlc_div_i64(v_gt35, 16LL) + 32LL)))] = v_av40;
          v_av42 = 0.0f;
          v_ar43 = (v_i011 + (mlc_div_i64(v_gt35, 16LL) + 48LL));
          if (((v_ar43 < s0) && (mlc_mod_i64(v_gt35, 16LL) < v_kn134))) {
            v_av42 = b0[((v_ar43 * 600LL) + (v_k133 + mlc_mod_i64(v_gt35, 16LL)))];
          }
          b5[(((1LL - v_h31) * 1040LL) + ((mlc_mod_i64(v_gt35, 16LL) * 65LL) + (mlc_div_i64(v_gt35, 16LL) + 48LL)))] = v_av42;
          v_bv44 = 0.0f;
          v_bc45 = (v_j012 + mlc_div_i64(v_gt35, 16LL));
          if (((v_bc45 < 5LL) && (mlc_mod_i64(v_gt35, 16LL) < v_kn134))) {
            v_bv44 = b1[((v_k133 + mlc_mod_i64(v_gt35, 16LL)) + (v_bc45 * 600LL))];
          }
          b6[(((1LL - v_h31) * 272LL) + ((mlc_mod_i64(v_gt35, 16LL) * 17LL) + mlc_div_i64(v_gt35, 16LL)))] = v_bv44;
        }
        v_ty46 = mlc_div_i64(v_gt35, 8LL);
        v_tx47 = mlc_mod_i64(v_gt35, 8LL);
        v_c48 = b7[0LL];
        v_c49 = b7[1LL];
        v_c50 = b7[2LL];
        v_c51 = b7[3LL];
        {
          const int64_t n_kk52 = v_kn30;
          for (v_kk52 = 0; v_kk52 < n_kk52; v_kk52++) {
            v_a53 = b5[(((v_h31 * 1040LL) + (v_kk52 * 65LL)) + v_ty46)];
            v_a54 = b5[(((v_h31 * 1040LL) + (v_kk52 * 65LL)) + (v_ty46 + 32LL))];
            v_b55 = b6[(((v_h31 * 272LL) + (v_kk52 * 17LL)) + v_tx47)];
            v_b56 = b6[(((v_h31 * 272LL) + (v_kk52 * 17LL)) + (v_tx47 + 8LL))];
            v_c48 = fmaf(v_a53, v_b55, v_c48);
            v_c49 = fmaf(v_a53, v_b56, v_c49);
            v_c50 = fmaf(v_a54, v_b55, v_c50);
            v_c51 = fmaf(v_a54, v_b56, v_c51);
          }
        }
        b7[0LL] = v_c48;
        b7[1LL] = v_c49;
        b7[2LL] = v_c50;
        b7[3LL] = v_c51;
      }
      MLC_BARRIER();
    }
  }
  if (!mlc_dead) {
    v_gt57 = (int64_t)threadIdx.x;
    v_ty58 = mlc_div_i64(v_gt57, 8LL);
    v_tx59 = mlc_mod_i64(v_gt57, 8LL);
    if ((((v_i011 + v_ty58) < s0) && ((v_j012 + v_tx59) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_i011 + v_ty58)) * 5LL) + (v_j012 + v_tx59))] = b7[0LL];
    }
    if ((((v_i011 + v_ty58) < s0) && ((v_j012 + (v_tx59 + 8LL)) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_i011 + v_ty58)) * 5LL) + (v_j012 + (v_tx59 + 8LL)))] = b7[1LL];
    }
    if ((((v_i011 + (v_ty58 + 32LL)) < s0) && ((v_j012 + v_tx59) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_i011 + (v_ty58 + 32LL))) * 5LL) + (v_j012 + v_tx59))] = b7[2LL];
    }
    if ((((v_i011 + (v_ty58 + 32LL)) < s0) && ((v_j012 + (v_tx59 + 8LL)) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_i011 + (v_ty58 + 32LL))) * 5LL) + (v_j012 + (v_tx59 + 8LL)))] = b7[3LL];
    }
  }
}
MLC_ENTRY8(dense_k0_matmul_bias_1, const float *, const float *, const float *, const float *, float *, int64_t, uint64_t, uint32_t *)

// dense k0_matmul_bias (tests/backend/cuda/golden/tiled_matmul.kir:23), launch 2 of 2: block 256, buffers b0 = %x b1 = %w b2 = %b b3 = out0 b4 = t0_part b5 = t0_as b6 = t0_bs b7 = t0_ss
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) dense_k0_matmul_bias_2(const float *MLC_RESTRICT b0, const float *MLC_RESTRICT b1, const float *MLC_RESTRICT b2, float *MLC_RESTRICT b3, const float *MLC_RESTRICT b4, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  int64_t v_i0 = 0;
  (void)v_i0;
  int64_t v_i1 = 0;
  (void)v_i1;
  float v_acc2 = 0;
  (void)v_acc2;
  float v_e6 = 0;
  (void)v_e6;
  float v_e7 = 0;
  (void)v_e7;
  int64_t v_e60 = 0;
  (void)v_e60;
  int64_t v_r61 = 0;
  (void)v_r61;
  int64_t v_c62 = 0;
  (void)v_c62;
  float v_acc63 = 0;
  (void)v_acc63;
  int64_t v_sg64 = 0;
  (void)v_sg64;
  int64_t v_kc65 = 0;
  (void)v_kc65;
  int64_t v_kb066 = 0;
  (void)v_kb066;
  int64_t v_kl67 = 0;
  (void)v_kl67;
  int64_t v_gb68 = 0;
  (void)v_gb68;
  int64_t v_gt69 = 0;
  (void)v_gt69;
  int64_t v_g70 = 0;
  (void)v_g70;
  v_gb68 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt69 = (int64_t)threadIdx.x;
    v_g70 = ((v_gb68 * 256LL) + v_gt69);
    if ((v_g70 < (s0 * 5LL))) {
      v_e60 = v_g70;
      v_r61 = mlc_mod_i64(mlc_div_i64(v_e60, 5LL), s0);
      v_c62 = mlc_mod_i64(v_e60, 5LL);
      v_acc63 = (-0.0f);
      {
        const int64_t n_sg64 = 2LL;
        for (v_sg64 = 0; v_sg64 < n_sg64; v_sg64++) {
          v_kc65 = 300LL;
          v_kb066 = (v_sg64 * v_kc65);
          v_kl67 = ((int64_t)mlc_imin(v_kc65, (600LL - (v_sg64 * v_kc65))));
          v_acc63 = (v_acc63 + b4[((v_sg64 * (s0 * 5LL)) + ((v_r61 * 5LL) + v_c62))]);
        }
      }
      v_i0 = v_r61;
      v_i1 = v_c62;
      v_acc2 = v_acc63;
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
  }
}
MLC_ENTRY8(dense_k0_matmul_bias_2, const float *, const float *, const float *, float *, const float *, int64_t, uint64_t, uint32_t *)

// Host launchers for tiled_matmul.cu, printed by mlc (do not edit).
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

int32_t mlc_cu_dense(MlcLauncher *l, const int64_t *dims, const uint64_t *inputs, const uint64_t *outputs,
    const uint64_t *state, uint64_t scratch, uint64_t seed, uint64_t flag) {
  (void)dims, (void)inputs, (void)outputs, (void)state, (void)scratch;
  int64_t sym_B = dims[0];
  (void)sym_B;
  uint64_t v[11]; // what the launches take: buffer i's device address in v[i], syms, seed, flag
  v[0] = inputs[0]; // %x
  v[1] = inputs[1]; // %w
  v[2] = inputs[2]; // %b
  v[3] = outputs[0]; // out0
  v[4] = scratch + (uint64_t)0LL; // t0_part
  v[8] = (uint64_t)sym_B;
  v[9] = seed;
  v[10] = flag;
  int64_t g[2]; // the grid sizes
  g[0] = (2LL * mlc_h_div(((sym_B + 64LL) - 1LL), 64LL));
  g[1] = mlc_h_div(((sym_B * 5LL) + 255LL), 256LL);
  static const uint32_t launches[] = {
      0, 0, 256, 8, 0, 1, 2, 3, 4, 8, 9, 10, // k0_matmul_bias
      1, 1, 256, 8, 0, 1, 2, 3, 4, 8, 9, 10, // k0_matmul_bias
  };
  for (const uint32_t *x = launches; x < launches + sizeof launches / sizeof launches[0]; x += 4 + x[3])
    if (mlc_h_launch(l, g, v, x)) return -1;
  return 0;
}

int64_t mlc_cu_dense_scratch_bytes(const int64_t *dims) {
  (void)dims;
  int64_t sym_B = dims[0];
  (void)sym_B;
  return (mlc_h_div(((sym_B * 40LL) + 63LL), 64LL) * 64LL);
}

const char *const mlc_cu_kernels[] = {
    "dense_k0_matmul_bias_1",
    "dense_k0_matmul_bias_2",
    NULL};
const int mlc_cu_nkernels = 2;
const char *const mlc_cu_messages[] = {
    NULL};
const int mlc_cu_nmessages = 0;
