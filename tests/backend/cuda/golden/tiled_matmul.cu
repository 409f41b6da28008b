// tiled_matmul.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// dense k0_matmul_bias (tests/backend/cuda/golden/tiled_matmul.kir:16): block 256, buffers b0 = %x b1 = %w b2 = %b b3 = out0 b4 = t0_as b5 = t0_bs b6 = t0_ss b7 = t0_acc
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) dense_k0_matmul_bias(const float *MLC_RESTRICT b0, const float *MLC_RESTRICT b1, const float *MLC_RESTRICT b2, float *MLC_RESTRICT b3, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  MLC_SHARED float b4[1040];
  MLC_SHARED float b5[1040];
  MLC_SHARED float b6[4096];
  MLC_SHARED float b7[4096];
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
  int64_t v_gb8 = 0;
  (void)v_gb8;
  int64_t v_i09 = 0;
  (void)v_i09;
  int64_t v_j010 = 0;
  (void)v_j010;
  int64_t v_gt11 = 0;
  (void)v_gt11;
  int64_t v_kb12 = 0;
  (void)v_kb12;
  int64_t v_kb013 = 0;
  (void)v_kb013;
  int64_t v_kl14 = 0;
  (void)v_kl14;
  int64_t v_gt15 = 0;
  (void)v_gt15;
  int64_t v_kt16 = 0;
  (void)v_kt16;
  int64_t v_kn17 = 0;
  (void)v_kn17;
  int64_t v_k018 = 0;
  (void)v_k018;
  int64_t v_gt19 = 0;
  (void)v_gt19;
  float v_av20 = 0;
  (void)v_av20;
  int64_t v_ar21 = 0;
  (void)v_ar21;
  float v_av22 = 0;
  (void)v_av22;
  int64_t v_ar23 = 0;
  (void)v_ar23;
  float v_av24 = 0;
  (void)v_av24;
  int64_t v_ar25 = 0;
  (void)v_ar25;
  float v_av26 = 0;
  (void)v_av26;
  int64_t v_ar27 = 0;
  (void)v_ar27;
  float v_bv28 = 0;
  (void)v_bv28;
  int64_t v_bc29 = 0;
  (void)v_bc29;
  float v_bv30 = 0;
  (void)v_bv30;
  int64_t v_bc31 = 0;
  (void)v_bc31;
  float v_bv32 = 0;
  (void)v_bv32;
  int64_t v_bc33 = 0;
  (void)v_bc33;
  float v_bv34 = 0;
  (void)v_bv34;
  int64_t v_bc35 = 0;
  (void)v_bc35;
  int64_t v_gt36 = 0;
  (void)v_gt36;
  int64_t v_ty37 = 0;
  (void)v_ty37;
  int64_t v_tx38 = 0;
  (void)v_tx38;
  float v_c39 = 0;
  (void)v_c39;
  float v_c40 = 0;
  (void)v_c40;
  float v_c41 = 0;
  (void)v_c41;
  float v_c42 = 0;
  (void)v_c42;
  float v_c43 = 0;
  (void)v_c43;
  float v_c44 = 0;
  (void)v_c44;
  float v_c45 = 0;
  (void)v_c45;
  float v_c46 = 0;
  (void)v_c46;
  float v_c47 = 0;
  (void)v_c47;
  float v_c48 = 0;
  (void)v_c48;
  float v_c49 = 0;
  (void)v_c49;
  float v_c50 = 0;
  (void)v_c50;
  float v_c51 = 0;
  (void)v_c51;
  float v_c52 = 0;
  (void)v_c52;
  float v_c53 = 0;
  (void)v_c53;
  float v_c54 = 0;
  (void)v_c54;
  int64_t v_kk55 = 0;
  (void)v_kk55;
  float v_a56 = 0;
  (void)v_a56;
  float v_a57 = 0;
  (void)v_a57;
  float v_a58 = 0;
  (void)v_a58;
  float v_a59 = 0;
  (void)v_a59;
  float v_b60 = 0;
  (void)v_b60;
  float v_b61 = 0;
  (void)v_b61;
  float v_b62 = 0;
  (void)v_b62;
  float v_b63 = 0;
  (void)v_b63;
  int64_t v_gt64 = 0;
  (void)v_gt64;
  int64_t v_gt65 = 0;
  (void)v_gt65;
  int64_t v_ty66 = 0;
  (void)v_ty66;
  int64_t v_tx67 = 0;
  (void)v_tx67;
  v_gb8 = (int64_t)blockIdx.x;
  v_i09 = (mlc_mod_i64(v_gb8, mlc_div_i64(((s0 + 64LL) - 1LL), 64LL)) * 64LL);
  v_j010 = 0LL;
  if (!mlc_dead) {
    v_gt11 = (int64_t)threadIdx.x;
    b7[v_gt11] = (-0.0f);
    b7[(256LL + v_gt11)] = (-0.0f);
    b7[(512LL + v_gt11)] = (-0.0f);
    b7[(768LL + v_gt11)] = (-0.0f);
    b7[(1024LL + v_gt11)] = (-0.0f);
    b7[(1280LL + v_gt11)] = (-0.0f);
    b7[(1536LL + v_gt11)] = (-0.0f);
    b7[(1792LL + v_gt11)] = (-0.0f);
    b7[(2048LL + v_gt11)] = (-0.0f);
    b7[(2304LL + v_gt11)] = (-0.0f);
    b7[(2560LL + v_gt11)] = (-0.0f);
    b7[(2816LL + v_gt11)] = (-0.0f);
    b7[(3072LL + v_gt11)] = (-0.0f);
    b7[(3328LL + v_gt11)] = (-0.0f);
    b7[(3584LL + v_gt11)] = (-0.0f);
    b7[(3840LL + v_gt11)] = (-0.0f);
  }
  {
    const int64_t n_kb12 = 2LL;
    for (v_kb12 = 0; v_kb12 < n_kb12; v_kb12++) {
      v_kb013 = (v_kb12 * 300LL);
      v_kl14 = ((int64_t)mlc_imin(300LL, (600LL - (v_kb12 * 300LL))));
      if (!mlc_dead) {
        v_gt15 = (int64_t)threadIdx.x;
        b6[v_gt15] = 0.0f;
        b6[(256LL + v_gt15)] = 0.0f;
        b6[(512LL + v_gt15)] = 0.0f;
        b6[(768LL + v_gt15)] = 0.0f;
        b6[(1024LL + v_gt15)] = 0.0f;
        b6[(1280LL + v_gt15)] = 0.0f;
        b6[(1536LL + v_gt15)] = 0.0f;
        b6[(1792LL + v_gt15)] = 0.0f;
        b6[(2048LL + v_gt15)] = 0.0f;
        b6[(2304LL + v_gt15)] = 0.0f;
        b6[(2560LL + v_gt15)] = 0.0f;
        b6[(2816LL + v_gt15)] = 0.0f;
        b6[(3072LL + v_gt15)] = 0.0f;
        b6[(3328LL + v_gt15)] = 0.0f;
        b6[(3584LL + v_gt15)] = 0.0f;
        b6[(3840LL + v_gt15)] = 0.0f;
      }
      {
        const int64_t n_kt16 = mlc_div_i64(((v_kl14 + 16LL) - 1LL), 16LL);
        for (v_kt16 = 0; v_kt16 < n_kt16; v_kt16++) {
          v_kn17 = ((int64_t)mlc_imin(16LL, (v_kl14 - (v_kt16 * 16LL))));
          v_k018 = (v_kb013 + (v_kt16 * 16LL));
          if (!mlc_dead) {
            v_gt19 = (int64_t)threadIdx.x;
            v_av20 = 0.0f;
            v_ar21 = (v_i09 + mlc_div_i64(v_gt19, 16LL));
            if (((v_ar21 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av20 = b0[((v_ar21 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + mlc_div_i64(v_gt19, 16LL))] = v_av20;
            v_av22 = 0.0f;
            v_ar23 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 16LL));
            if (((v_ar23 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av22 = b0[((v_ar23 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 16LL))] = v_av22;
            v_av24 = 0.0f;
            v_ar25 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 32LL));
            if (((v_ar25 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av24 = b0[((v_ar25 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 32LL))] = v_av24;
            v_av26 = 0.0f;
            v_ar27 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 48LL));
            if (((v_ar27 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av26 = b0[((v_ar27 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 48LL))] = v_av26;
            v_bv28 = 0.0f;
            v_bc29 = (v_j010 + mlc_div_i64(v_gt19, 16LL));
            if (((v_bc29 < 5LL) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_bv28 = b1[((v_k018 + mlc_mod_i64(v_gt19, 16LL)) + (v_bc29 * 600LL))];
            }
            b5[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + mlc_div_i64(v_gt19, 16LL))] = v_bv28;
            v_bv30 = 0.0f;
            v_bc31 = (v_j010 + (mlc_div_i64(v_gt19, 16LL) + 16LL));
            if (((v_bc31 < 5LL) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_bv30 = b1[((v_k018 + mlc_mod_i64(v_gt19, 16LL)) + (v_bc31 * 600LL))];
            }
            b5[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 16LL))] = v_bv30;
            v_bv32 = 0.0f;
            v_bc33 = (v_j010 + (mlc_div_i64(v_gt19, 16LL) + 32LL));
            if (((v_bc33 < 5LL) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_bv32 = b1[((v_k018 + mlc_mod_i64(v_gt19, 16LL)) + (v_bc33 * 600LL))];
            }
            b5[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 32LL))] = v_bv32;
            v_bv34 = 0.0f;
            v_bc35 = (v_j010 + (mlc_div_i64(v_gt19, 16LL) + 48LL));
            if (((v_bc35 < 5LL) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_bv34 = b1[((v_k018 + mlc_mod_i64(v_gt19, 16LL)) + (v_bc35 * 600LL))];
            }
            b5[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 48LL))] = v_bv34;
          }
          MLC_BARRIER();
          if (!mlc_dead) {
            v_gt36 = (int64_t)threadIdx.x;
            v_ty37 = mlc_div_i64(v_gt36, 16LL);
            v_tx38 = mlc_mod_i64(v_gt36, 16LL);
            v_c39 = b6[v_gt36];
            v_c40 = b6[(256LL + v_gt36)];
            v_c41 = b6[(512LL + v_gt36)];
            v_c42 = b6[(768LL + v_gt36)];
            v_c43 = b6[(1024LL + v_gt36)];
            v_c44 = b6[(1280LL + v_gt36)];
            v_c45 = b6[(1536LL + v_gt36)];
            v_c46 = b6[(1792LL + v_gt36)];
            v_c47 = b6[(2048LL + v_gt36)];
            v_c48 = b6[(2304LL + v_gt36)];
            v_c49 = b6[(2560LL + v_gt36)];
            v_c50 = b6[(2816LL + v_gt36)];
            v_c51 = b6[(3072LL + v_gt36)];
            v_c52 = b6[(3328LL + v_gt36)];
            v_c53 = b6[(3584LL + v_gt36)];
            v_c54 = b6[(3840LL + v_gt36)];
            {
              const int64_t n_kk55 = v_kn17;
              for (v_kk55 = 0; v_kk55 < n_kk55; v_kk55++) {
                v_a56 = b4[((v_kk55 * 65LL) + v_ty37)];
                v_a57 = b4[((v_kk55 * 65LL) + (v_ty37 + 16LL))];
                v_a58 = b4[((v_kk55 * 65LL) + (v_ty37 + 32LL))];
                v_a59 = b4[((v_kk55 * 65LL) + (v_ty37 + 48LL))];
                v_b60 = b5[((v_kk55 * 65LL) + v_tx38)];
                v_b61 = b5[((v_kk55 * 65LL) + (v_tx38 + 16LL))];
                v_b62 = b5[((v_kk55 * 65LL) + (v_tx38 + 32LL))];
                v_b63 = b5[((v_kk55 * 65LL) + (v_tx38 + 48LL))];
                v_c39 = fmaf(v_a56, v_b60, v_c39);
                v_c40 = fmaf(v_a56, v_b61, v_c40);
                v_c41 = fmaf(v_a56, v_b62, v_c41);
                v_c42 = fmaf(v_a56, v_b63, v_c42);
                v_c43 = fmaf(v_a57, v_b60, v_c43);
                v_c44 = fmaf(v_a57, v_b61, v_c44);
                v_c45 = fmaf(v_a57, v_b62, v_c45);
                v_c46 = fmaf(v_a57, v_b63, v_c46);
                v_c47 = fmaf(v_a58, v_b60, v_c47);
                v_c48 = fmaf(v_a58, v_b61, v_c48);
                v_c49 = fmaf(v_a58, v_b62, v_c49);
                v_c50 = fmaf(v_a58, v_b63, v_c50);
                v_c51 = fmaf(v_a59, v_b60, v_c51);
                v_c52 = fmaf(v_a59, v_b61, v_c52);
                v_c53 = fmaf(v_a59, v_b62, v_c53);
                v_c54 = fmaf(v_a59, v_b63, v_c54);
              }
            }
            b6[v_gt36] = v_c39;
            b6[(256LL + v_gt36)] = v_c40;
            b6[(512LL + v_gt36)] = v_c41;
            b6[(768LL + v_gt36)] = v_c42;
            b6[(1024LL + v_gt36)] = v_c43;
            b6[(1280LL + v_gt36)] = v_c44;
            b6[(1536LL + v_gt36)] = v_c45;
            b6[(1792LL + v_gt36)] = v_c46;
            b6[(2048LL + v_gt36)] = v_c47;
            b6[(2304LL + v_gt36)] = v_c48;
            b6[(2560LL + v_gt36)] = v_c49;
            b6[(2816LL + v_gt36)] = v_c50;
            b6[(3072LL + v_gt36)] = v_c51;
            b6[(3328LL + v_gt36)] = v_c52;
            b6[(3584LL + v_gt36)] = v_c53;
            b6[(3840LL + v_gt36)] = v_c54;
          }
          MLC_BARRIER();
        }
      }
      if (!mlc_dead) {
        v_gt64 = (int64_t)threadIdx.x;
        b7[v_gt64] = (b7[v_gt64] + b6[v_gt64]);
        b7[(256LL + v_gt64)] = (b7[(256LL + v_gt64)] + b6[(256LL + v_gt64)]);
        b7[(512LL + v_gt64)] = (b7[(512LL + v_gt64)] + b6[(512LL + v_gt64)]);
        b7[(768LL + v_gt64)] = (b7[(768LL + v_gt64)] + b6[(768LL + v_gt64)]);
        b7[(1024LL + v_gt64)] = (b7[(1024LL + v_gt64)] + b6[(1024LL + v_gt64)]);
        b7[(1280LL + v_gt64)] = (b7[(1280LL + v_gt64)] + b6[(1280LL + v_gt64)]);
        b7[(1536LL + v_gt64)] = (b7[(1536LL + v_gt64)] + b6[(1536LL + v_gt64)]);
        b7[(1792LL + v_gt64)] = (b7[(1792LL + v_gt64)] + b6[(1792LL + v_gt64)]);
        b7[(2048LL + v_gt64)] = (b7[(2048LL + v_gt64)] + b6[(2048LL + v_gt64)]);
        b7[(2304LL + v_gt64)] = (b7[(2304LL + v_gt64)] + b6[(2304LL + v_gt64)]);
        b7[(2560LL + v_gt64)] = (b7[(2560LL + v_gt64)] + b6[(2560LL + v_gt64)]);
        b7[(2816LL + v_gt64)] = (b7[(2816LL + v_gt64)] + b6[(2816LL + v_gt64)]);
        b7[(3072LL + v_gt64)] = (b7[(3072LL + v_gt64)] + b6[(3072LL + v_gt64)]);
        b7[(3328LL + v_gt64)] = (b7[(3328LL + v_gt64)] + b6[(3328LL + v_gt64)]);
        b7[(3584LL + v_gt64)] = (b7[(3584LL + v_gt64)] + b6[(3584LL + v_gt64)]);
        b7[(3840LL + v_gt64)] = (b7[(3840LL + v_gt64)] + b6[(3840LL + v_gt64)]);
      }
    }
  }
  if (!mlc_dead) {
    v_gt65 = (int64_t)threadIdx.x;
    v_ty66 = mlc_div_i64(v_gt65, 16LL);
    v_tx67 = mlc_mod_i64(v_gt65, 16LL);
    if ((((v_i09 + v_ty66) < s0) && ((v_j010 + v_tx67) < 5LL))) {
      v_i0 = (v_i09 + v_ty66);
      v_i1 = (v_j010 + v_tx67);
      v_acc2 = b7[v_gt65];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + v_ty66) < s0) && ((v_j010 + (v_tx67 + 16LL)) < 5LL))) {
      v_i0 = (v_i09 + v_ty66);
      v_i1 = (v_j010 + (v_tx67 + 16LL));
      v_acc2 = b7[(256LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + v_ty66) < s0) && ((v_j010 + (v_tx67 + 32LL)) < 5LL))) {
      v_i0 = (v_i09 + v_ty66);
      v_i1 = (v_j010 + (v_tx67 + 32LL));
      v_acc2 = b7[(512LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + v_ty66) < s0) && ((v_j010 + (v_tx67 + 48LL)) < 5LL))) {
      v_i0 = (v_i09 + v_ty66);
      v_i1 = (v_j010 + (v_tx67 + 48LL));
      v_acc2 = b7[(768LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 16LL)) < s0) && ((v_j010 + v_tx67) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 16LL));
      v_i1 = (v_j010 + v_tx67);
      v_acc2 = b7[(1024LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 16LL)) < s0) && ((v_j010 + (v_tx67 + 16LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 16LL));
      v_i1 = (v_j010 + (v_tx67 + 16LL));
      v_acc2 = b7[(1280LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 16LL)) < s0) && ((v_j010 + (v_tx67 + 32LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 16LL));
      v_i1 = (v_j010 + (v_tx67 + 32LL));
      v_acc2 = b7[(1536LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 16LL)) < s0) && ((v_j010 + (v_tx67 + 48LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 16LL));
      v_i1 = (v_j010 + (v_tx67 + 48LL));
      v_acc2 = b7[(1792LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 32LL)) < s0) && ((v_j010 + v_tx67) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 32LL));
      v_i1 = (v_j010 + v_tx67);
      v_acc2 = b7[(2048LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 32LL)) < s0) && ((v_j010 + (v_tx67 + 16LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 32LL));
      v_i1 = (v_j010 + (v_tx67 + 16LL));
      v_acc2 = b7[(2304LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 32LL)) < s0) && ((v_j010 + (v_tx67 + 32LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 32LL));
      v_i1 = (v_j010 + (v_tx67 + 32LL));
      v_acc2 = b7[(2560LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 32LL)) < s0) && ((v_j010 + (v_tx67 + 48LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 32LL));
      v_i1 = (v_j010 + (v_tx67 + 48LL));
      v_acc2 = b7[(2816LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 48LL)) < s0) && ((v_j010 + v_tx67) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 48LL));
      v_i1 = (v_j010 + v_tx67);
      v_acc2 = b7[(3072LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 48LL)) < s0) && ((v_j010 + (v_tx67 + 16LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 48LL));
      v_i1 = (v_j010 + (v_tx67 + 16LL));
      v_acc2 = b7[(3328LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 48LL)) < s0) && ((v_j010 + (v_tx67 + 32LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 48LL));
      v_i1 = (v_j010 + (v_tx67 + 32LL));
      v_acc2 = b7[(3584LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty66 + 48LL)) < s0) && ((v_j010 + (v_tx67 + 48LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty66 + 48LL));
      v_i1 = (v_j010 + (v_tx67 + 48LL));
      v_acc2 = b7[(3840LL + v_gt65)];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
  }
}
MLC_ENTRY7(dense_k0_matmul_bias, const float *, const float *, const float *, float *, int64_t, uint64_t, uint32_t *)

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

int32_t mlc_cu_dense(MlcLauncher *l, const int64_t *dims, const uint64_t *inputs, const uint64_t *outputs,
    const uint64_t *state, uint64_t scratch, uint64_t seed, uint64_t flag) {
  (void)dims, (void)inputs, (void)outputs, (void)state, (void)scratch;
  int64_t sym_B = dims[0];
  (void)sym_B;
  uint64_t buf0 = inputs[0]; // %x
  (void)buf0;
  uint64_t buf1 = inputs[1]; // %w
  (void)buf1;
  uint64_t buf2 = inputs[2]; // %b
  (void)buf2;
  uint64_t buf3 = outputs[0]; // out0
  (void)buf3;
  { // k0_matmul_bias
    void *args[] = {&buf0, &buf1, &buf2, &buf3, &sym_B, &seed, &flag};
    int64_t grid0 = mlc_h_div(((sym_B + 64LL) - 1LL), 64LL);
    if (grid0 > 0 && l->launch(l, 0, grid0, 256, args)) return -1;
  }
  return 0;
}

int64_t mlc_cu_dense_scratch_bytes(const int64_t *dims) {
  (void)dims;
  int64_t sym_B = dims[0];
  (void)sym_B;
  return 0LL;
}

const char *const mlc_cu_kernels[] = {
    "dense_k0_matmul_bias",
    NULL};
const int mlc_cu_nkernels = 1;
const char *const mlc_cu_messages[] = {
    NULL};
const int mlc_cu_nmessages = 0;
