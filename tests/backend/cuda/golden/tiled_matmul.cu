// tiled_matmul.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// dense k0_matmul_bias (tests/backend/cuda/golden/tiled_matmul.kir:18): block 64, buffers b0 = %x b1 = %w b2 = %b b3 = out0 b4 = t0_as b5 = t0_bs b6 = t0_ss b7 = t0_acc
MLC_KERNEL MLC_LAUNCH_BOUNDS(64) dense_k0_matmul_bias(const float *MLC_RESTRICT b0, const float *MLC_RESTRICT b1, const float *MLC_RESTRICT b2, float *MLC_RESTRICT b3, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  MLC_SHARED float b4[1040];
  MLC_SHARED float b5[272];
  float b6[16];
  float b7[16];
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
  float v_av28 = 0;
  (void)v_av28;
  int64_t v_ar29 = 0;
  (void)v_ar29;
  float v_av30 = 0;
  (void)v_av30;
  int64_t v_ar31 = 0;
  (void)v_ar31;
  float v_av32 = 0;
  (void)v_av32;
  int64_t v_ar33 = 0;
  (void)v_ar33;
  float v_av34 = 0;
  (void)v_av34;
  int64_t v_ar35 = 0;
  (void)v_ar35;
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
  float v_av44 = 0;
  (void)v_av44;
  int64_t v_ar45 = 0;
  (void)v_ar45;
  float v_av46 = 0;
  (void)v_av46;
  int64_t v_ar47 = 0;
  (void)v_ar47;
  float v_av48 = 0;
  (void)v_av48;
  int64_t v_ar49 = 0;
  (void)v_ar49;
  float v_av50 = 0;
  (void)v_av50;
  int64_t v_ar51 = 0;
  (void)v_ar51;
  float v_bv52 = 0;
  (void)v_bv52;
  int64_t v_bc53 = 0;
  (void)v_bc53;
  float v_bv54 = 0;
  (void)v_bv54;
  int64_t v_bc55 = 0;
  (void)v_bc55;
  float v_bv56 = 0;
  (void)v_bv56;
  int64_t v_bc57 = 0;
  (void)v_bc57;
  float v_bv58 = 0;
  (void)v_bv58;
  int64_t v_bc59 = 0;
  (void)v_bc59;
  int64_t v_gt60 = 0;
  (void)v_gt60;
  int64_t v_ty61 = 0;
  (void)v_ty61;
  int64_t v_tx62 = 0;
  (void)v_tx62;
  float v_c63 = 0;
  (void)v_c63;
  float v_c64 = 0;
  (void)v_c64;
  float v_c65 = 0;
  (void)v_c65;
  float v_c66 = 0;
  (void)v_c66;
  float v_c67 = 0;
  (void)v_c67;
  float v_c68 = 0;
  (void)v_c68;
  float v_c69 = 0;
  (void)v_c69;
  float v_c70 = 0;
  (void)v_c70;
  float v_c71 = 0;
  (void)v_c71;
  float v_c72 = 0;
  (void)v_c72;
  float v_c73 = 0;
  (void)v_c73;
  float v_c74 = 0;
  (void)v_c74;
  float v_c75 = 0;
  (void)v_c75;
  float v_c76 = 0;
  (void)v_c76;
  float v_c77 = 0;
  (void)v_c77;
  float v_c78 = 0;
  (void)v_c78;
  int64_t v_kk79 = 0;
  (void)v_kk79;
  float v_a80 = 0;
  (void)v_a80;
  float v_a81 = 0;
  (void)v_a81;
  float v_a82 = 0;
  (void)v_a82;
  float v_a83 = 0;
  (void)v_a83;
  float v_b84 = 0;
  (void)v_b84;
  float v_b85 = 0;
  (void)v_b85;
  float v_b86 = 0;
  (void)v_b86;
  float v_b87 = 0;
  (void)v_b87;
  int64_t v_gt88 = 0;
  (void)v_gt88;
  int64_t v_gt89 = 0;
  (void)v_gt89;
  int64_t v_ty90 = 0;
  (void)v_ty90;
  int64_t v_tx91 = 0;
  (void)v_tx91;
  v_gb8 = (int64_t)blockIdx.x;
  v_i09 = (mlc_mod_i64(v_gb8, mlc_div_i64(((s0 + 64LL) - 1LL), 64LL)) * 64LL);
  v_j010 = 0LL;
  if (!mlc_dead) {
    v_gt11 = (int64_t)threadIdx.x;
    b7[0LL] = (-0.0f);
    b7[1LL] = (-0.0f);
    b7[2LL] = (-0.0f);
    b7[3LL] = (-0.0f);
    b7[4LL] = (-0.0f);
    b7[5LL] = (-0.0f);
    b7[6LL] = (-0.0f);
    b7[7LL] = (-0.0f);
    b7[8LL] = (-0.0f);
    b7[9LL] = (-0.0f);
    b7[10LL] = (-0.0f);
    b7[11LL] = (-0.0f);
    b7[12LL] = (-0.0f);
    b7[13LL] = (-0.0f);
    b7[14LL] = (-0.0f);
    b7[15LL] = (-0.0f);
  }
  {
    const int64_t n_kb12 = 2LL;
    for (v_kb12 = 0; v_kb12 < n_kb12; v_kb12++) {
      v_kb013 = (v_kb12 * 300LL);
      v_kl14 = ((int64_t)mlc_imin(300LL, (600LL - (v_kb12 * 300LL))));
      if (!mlc_dead) {
        v_gt15 = (int64_t)threadIdx.x;
        b6[0LL] = 0.0f;
        b6[1LL] = 0.0f;
        b6[2LL] = 0.0f;
        b6[3LL] = 0.0f;
        b6[4LL] = 0.0f;
        b6[5LL] = 0.0f;
        b6[6LL] = 0.0f;
        b6[7LL] = 0.0f;
        b6[8LL] = 0.0f;
        b6[9LL] = 0.0f;
        b6[10LL] = 0.0f;
        b6[11LL] = 0.0f;
        b6[12LL] = 0.0f;
        b6[13LL] = 0.0f;
        b6[14LL] = 0.0f;
        b6[15LL] = 0.0f;
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
            v_ar23 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 4LL));
            if (((v_ar23 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av22 = b0[((v_ar23 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 4LL))] = v_av22;
            v_av24 = 0.0f;
            v_ar25 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 8LL));
            if (((v_ar25 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av24 = b0[((v_ar25 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 8LL))] = v_av24;
            v_av26 = 0.0f;
            v_ar27 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 12LL));
            if (((v_ar27 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av26 = b0[((v_ar27 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 12LL))] = v_av26;
            v_av28 = 0.0f;
            v_ar29 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 16LL));
            if (((v_ar29 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av28 = b0[((v_ar29 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 16LL))] = v_av28;
            v_av30 = 0.0f;
            v_ar31 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 20LL));
            if (((v_ar31 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av30 = b0[((v_ar31 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 20LL))] = v_av30;
            v_av32 = 0.0f;
            v_ar33 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 24LL));
            if (((v_ar33 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av32 = b0[((v_ar33 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 24LL))] = v_av32;
            v_av34 = 0.0f;
            v_ar35 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 28LL));
            if (((v_ar35 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av34 = b0[((v_ar35 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 28LL))] = v_av34;
            v_av36 = 0.0f;
            v_ar37 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 32LL));
            if (((v_ar37 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av36 = b0[((v_ar37 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 32LL))] = v_av36;
            v_av38 = 0.0f;
            v_ar39 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 36LL));
            if (((v_ar39 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av38 = b0[((v_ar39 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 36LL))] = v_av38;
            v_av40 = 0.0f;
            v_ar41 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 40LL));
            if (((v_ar41 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av40 = b0[((v_ar41 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 40LL))] = v_av40;
            v_av42 = 0.0f;
            v_ar43 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 44LL));
            if (((v_ar43 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av42 = b0[((v_ar43 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 44LL))] = v_av42;
            v_av44 = 0.0f;
            v_ar45 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 48LL));
            if (((v_ar45 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av44 = b0[((v_ar45 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 48LL))] = v_av44;
            v_av46 = 0.0f;
            v_ar47 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 52LL));
            if (((v_ar47 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av46 = b0[((v_ar47 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 52LL))] = v_av46;
            v_av48 = 0.0f;
            v_ar49 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 56LL));
            if (((v_ar49 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av48 = b0[((v_ar49 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 56LL))] = v_av48;
            v_av50 = 0.0f;
            v_ar51 = (v_i09 + (mlc_div_i64(v_gt19, 16LL) + 60LL));
            if (((v_ar51 < s0) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_av50 = b0[((v_ar51 * 600LL) + (v_k018 + mlc_mod_i64(v_gt19, 16LL)))];
            }
            b4[((mlc_mod_i64(v_gt19, 16LL) * 65LL) + (mlc_div_i64(v_gt19, 16LL) + 60LL))] = v_av50;
            v_bv52 = 0.0f;
            v_bc53 = (v_j010 + mlc_div_i64(v_gt19, 16LL));
            if (((v_bc53 < 5LL) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_bv52 = b1[((v_k018 + mlc_mod_i64(v_gt19, 16LL)) + (v_bc53 * 600LL))];
            }
            b5[((mlc_mod_i64(v_gt19, 16LL) * 17LL) + mlc_div_i64(v_gt19, 16LL))] = v_bv52;
            v_bv54 = 0.0f;
            v_bc55 = (v_j010 + (mlc_div_i64(v_gt19, 16LL) + 4LL));
            if (((v_bc55 < 5LL) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_bv54 = b1[((v_k018 + mlc_mod_i64(v_gt19, 16LL)) + (v_bc55 * 600LL))];
            }
            b5[((mlc_mod_i64(v_gt19, 16LL) * 17LL) + (mlc_div_i64(v_gt19, 16LL) + 4LL))] = v_bv54;
            v_bv56 = 0.0f;
            v_bc57 = (v_j010 + (mlc_div_i64(v_gt19, 16LL) + 8LL));
            if (((v_bc57 < 5LL) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_bv56 = b1[((v_k018 + mlc_mod_i64(v_gt19, 16LL)) + (v_bc57 * 600LL))];
            }
            b5[((mlc_mod_i64(v_gt19, 16LL) * 17LL) + (mlc_div_i64(v_gt19, 16LL) + 8LL))] = v_bv56;
            v_bv58 = 0.0f;
            v_bc59 = (v_j010 + (mlc_div_i64(v_gt19, 16LL) + 12LL));
            if (((v_bc59 < 5LL) && (mlc_mod_i64(v_gt19, 16LL) < v_kn17))) {
              v_bv58 = b1[((v_k018 + mlc_mod_i64(v_gt19, 16LL)) + (v_bc59 * 600LL))];
            }
            b5[((mlc_mod_i64(v_gt19, 16LL) * 17LL) + (mlc_div_i64(v_gt19, 16LL) + 12LL))] = v_bv58;
          }
          MLC_BARRIER();
          if (!mlc_dead) {
            v_gt60 = (int64_t)threadIdx.x;
            v_ty61 = mlc_div_i64(v_gt60, 4LL);
            v_tx62 = mlc_mod_i64(v_gt60, 4LL);
            v_c63 = b6[0LL];
            v_c64 = b6[1LL];
            v_c65 = b6[2LL];
            v_c66 = b6[3LL];
            v_c67 = b6[4LL];
            v_c68 = b6[5LL];
            v_c69 = b6[6LL];
            v_c70 = b6[7LL];
            v_c71 = b6[8LL];
            v_c72 = b6[9LL];
            v_c73 = b6[10LL];
            v_c74 = b6[11LL];
            v_c75 = b6[12LL];
            v_c76 = b6[13LL];
            v_c77 = b6[14LL];
            v_c78 = b6[15LL];
            {
              const int64_t n_kk79 = v_kn17;
              for (v_kk79 = 0; v_kk79 < n_kk79; v_kk79++) {
                v_a80 = b4[((v_kk79 * 65LL) + v_ty61)];
                v_a81 = b4[((v_kk79 * 65LL) + (v_ty61 + 16LL))];
                v_a82 = b4[((v_kk79 * 65LL) + (v_ty61 + 32LL))];
                v_a83 = b4[((v_kk79 * 65LL) + (v_ty61 + 48LL))];
                v_b84 = b5[((v_kk79 * 17LL) + v_tx62)];
                v_b85 = b5[((v_kk79 * 17LL) + (v_tx62 + 4LL))];
                v_b86 = b5[((v_kk79 * 17LL) + (v_tx62 + 8LL))];
                v_b87 = b5[((v_kk79 * 17LL) + (v_tx62 + 12LL))];
                v_c63 = fmaf(v_a80, v_b84, v_c63);
                v_c64 = fmaf(v_a80, v_b85, v_c64);
                v_c65 = fmaf(v_a80, v_b86, v_c65);
                v_c66 = fmaf(v_a80, v_b87, v_c66);
                v_c67 = fmaf(v_a81, v_b84, v_c67);
                v_c68 = fmaf(v_a81, v_b85, v_c68);
                v_c69 = fmaf(v_a81, v_b86, v_c69);
                v_c70 = fmaf(v_a81, v_b87, v_c70);
                v_c71 = fmaf(v_a82, v_b84, v_c71);
                v_c72 = fmaf(v_a82, v_b85, v_c72);
                v_c73 = fmaf(v_a82, v_b86, v_c73);
                v_c74 = fmaf(v_a82, v_b87, v_c74);
                v_c75 = fmaf(v_a83, v_b84, v_c75);
                v_c76 = fmaf(v_a83, v_b85, v_c76);
                v_c77 = fmaf(v_a83, v_b86, v_c77);
                v_c78 = fmaf(v_a83, v_b87, v_c78);
              }
            }
            b6[0LL] = v_c63;
            b6[1LL] = v_c64;
            b6[2LL] = v_c65;
            b6[3LL] = v_c66;
            b6[4LL] = v_c67;
            b6[5LL] = v_c68;
            b6[6LL] = v_c69;
            b6[7LL] = v_c70;
            b6[8LL] = v_c71;
            b6[9LL] = v_c72;
            b6[10LL] = v_c73;
            b6[11LL] = v_c74;
            b6[12LL] = v_c75;
            b6[13LL] = v_c76;
            b6[14LL] = v_c77;
            b6[15LL] = v_c78;
          }
          MLC_BARRIER();
        }
      }
      if (!mlc_dead) {
        v_gt88 = (int64_t)threadIdx.x;
        b7[0LL] = (b7[0LL] + b6[0LL]);
        b7[1LL] = (b7[1LL] + b6[1LL]);
        b7[2LL] = (b7[2LL] + b6[2LL]);
        b7[3LL] = (b7[3LL] + b6[3LL]);
        b7[4LL] = (b7[4LL] + b6[4LL]);
        b7[5LL] = (b7[5LL] + b6[5LL]);
        b7[6LL] = (b7[6LL] + b6[6LL]);
        b7[7LL] = (b7[7LL] + b6[7LL]);
        b7[8LL] = (b7[8LL] + b6[8LL]);
        b7[9LL] = (b7[9LL] + b6[9LL]);
        b7[10LL] = (b7[10LL] + b6[10LL]);
        b7[11LL] = (b7[11LL] + b6[11LL]);
        b7[12LL] = (b7[12LL] + b6[12LL]);
        b7[13LL] = (b7[13LL] + b6[13LL]);
        b7[14LL] = (b7[14LL] + b6[14LL]);
        b7[15LL] = (b7[15LL] + b6[15LL]);
      }
    }
  }
  if (!mlc_dead) {
    v_gt89 = (int64_t)threadIdx.x;
    v_ty90 = mlc_div_i64(v_gt89, 4LL);
    v_tx91 = mlc_mod_i64(v_gt89, 4LL);
    if ((((v_i09 + v_ty90) < s0) && ((v_j010 + v_tx91) < 5LL))) {
      v_i0 = (v_i09 + v_ty90);
      v_i1 = (v_j010 + v_tx91);
      v_acc2 = b7[0LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + v_ty90) < s0) && ((v_j010 + (v_tx91 + 4LL)) < 5LL))) {
      v_i0 = (v_i09 + v_ty90);
      v_i1 = (v_j010 + (v_tx91 + 4LL));
      v_acc2 = b7[1LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + v_ty90) < s0) && ((v_j010 + (v_tx91 + 8LL)) < 5LL))) {
      v_i0 = (v_i09 + v_ty90);
      v_i1 = (v_j010 + (v_tx91 + 8LL));
      v_acc2 = b7[2LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + v_ty90) < s0) && ((v_j010 + (v_tx91 + 12LL)) < 5LL))) {
      v_i0 = (v_i09 + v_ty90);
      v_i1 = (v_j010 + (v_tx91 + 12LL));
      v_acc2 = b7[3LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 16LL)) < s0) && ((v_j010 + v_tx91) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 16LL));
      v_i1 = (v_j010 + v_tx91);
      v_acc2 = b7[4LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 16LL)) < s0) && ((v_j010 + (v_tx91 + 4LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 16LL));
      v_i1 = (v_j010 + (v_tx91 + 4LL));
      v_acc2 = b7[5LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 16LL)) < s0) && ((v_j010 + (v_tx91 + 8LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 16LL));
      v_i1 = (v_j010 + (v_tx91 + 8LL));
      v_acc2 = b7[6LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 16LL)) < s0) && ((v_j010 + (v_tx91 + 12LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 16LL));
      v_i1 = (v_j010 + (v_tx91 + 12LL));
      v_acc2 = b7[7LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 32LL)) < s0) && ((v_j010 + v_tx91) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 32LL));
      v_i1 = (v_j010 + v_tx91);
      v_acc2 = b7[8LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 32LL)) < s0) && ((v_j010 + (v_tx91 + 4LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 32LL));
      v_i1 = (v_j010 + (v_tx91 + 4LL));
      v_acc2 = b7[9LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 32LL)) < s0) && ((v_j010 + (v_tx91 + 8LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 32LL));
      v_i1 = (v_j010 + (v_tx91 + 8LL));
      v_acc2 = b7[10LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 32LL)) < s0) && ((v_j010 + (v_tx91 + 12LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 32LL));
      v_i1 = (v_j010 + (v_tx91 + 12LL));
      v_acc2 = b7[11LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 48LL)) < s0) && ((v_j010 + v_tx91) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 48LL));
      v_i1 = (v_j010 + v_tx91);
      v_acc2 = b7[12LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 48LL)) < s0) && ((v_j010 + (v_tx91 + 4LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 48LL));
      v_i1 = (v_j010 + (v_tx91 + 4LL));
      v_acc2 = b7[13LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 48LL)) < s0) && ((v_j010 + (v_tx91 + 8LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 48LL));
      v_i1 = (v_j010 + (v_tx91 + 8LL));
      v_acc2 = b7[14LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty90 + 48LL)) < s0) && ((v_j010 + (v_tx91 + 12LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty90 + 48LL));
      v_i1 = (v_j010 + (v_tx91 + 12LL));
      v_acc2 = b7[15LL];
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
    if (grid0 > 0 && l->launch(l, 0, grid0, 64, args)) return -1;
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
