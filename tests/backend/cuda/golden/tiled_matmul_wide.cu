// tiled_matmul_wide.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// dense k0_matmul_bias (tests/backend/cuda/golden/tiled_matmul_wide.kir:14): block 64, buffers b0 = %x b1 = %w b2 = %b b3 = out0 b4 = t0_as b5 = t0_bs b6 = t0_ss b7 = t0_acc
MLC_KERNEL MLC_LAUNCH_BOUNDS(64) dense_k0_matmul_bias(const float *MLC_RESTRICT b0, const float *MLC_RESTRICT b1, const float *MLC_RESTRICT b2, float *MLC_RESTRICT b3, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  MLC_SHARED float b4[2080];
  MLC_SHARED float b5[544];
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
  int64_t v_nt16 = 0;
  (void)v_nt16;
  int64_t v_gt17 = 0;
  (void)v_gt17;
  float v_av18 = 0;
  (void)v_av18;
  int64_t v_ar19 = 0;
  (void)v_ar19;
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
  float v_bv50 = 0;
  (void)v_bv50;
  int64_t v_bc51 = 0;
  (void)v_bc51;
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
  int64_t v_kt58 = 0;
  (void)v_kt58;
  int64_t v_kn59 = 0;
  (void)v_kn59;
  int64_t v_h60 = 0;
  (void)v_h60;
  int64_t v_nx61 = 0;
  (void)v_nx61;
  int64_t v_k162 = 0;
  (void)v_k162;
  int64_t v_kn163 = 0;
  (void)v_kn163;
  int64_t v_gt64 = 0;
  (void)v_gt64;
  float v_av65 = 0;
  (void)v_av65;
  int64_t v_ar66 = 0;
  (void)v_ar66;
  float v_av67 = 0;
  (void)v_av67;
  int64_t v_ar68 = 0;
  (void)v_ar68;
  float v_av69 = 0;
  (void)v_av69;
  int64_t v_ar70 = 0;
  (void)v_ar70;
  float v_av71 = 0;
  (void)v_av71;
  int64_t v_ar72 = 0;
  (void)v_ar72;
  float v_av73 = 0;
  (void)v_av73;
  int64_t v_ar74 = 0;
  (void)v_ar74;
  float v_av75 = 0;
  (void)v_av75;
  int64_t v_ar76 = 0;
  (void)v_ar76;
  float v_av77 = 0;
  (void)v_av77;
  int64_t v_ar78 = 0;
  (void)v_ar78;
  float v_av79 = 0;
  (void)v_av79;
  int64_t v_ar80 = 0;
  (void)v_ar80;
  float v_av81 = 0;
  (void)v_av81;
  int64_t v_ar82 = 0;
  (void)v_ar82;
  float v_av83 = 0;
  (void)v_av83;
  int64_t v_ar84 = 0;
  (void)v_ar84;
  float v_av85 = 0;
  (void)v_av85;
  int64_t v_ar86 = 0;
  (void)v_ar86;
  float v_av87 = 0;
  (void)v_av87;
  int64_t v_ar88 = 0;
  (void)v_ar88;
  float v_av89 = 0;
  (void)v_av89;
  int64_t v_ar90 = 0;
  (void)v_ar90;
  float v_av91 = 0;
  (void)v_av91;
  int64_t v_ar92 = 0;
  (void)v_ar92;
  float v_av93 = 0;
  (void)v_av93;
  int64_t v_ar94 = 0;
  (void)v_ar94;
  float v_av95 = 0;
  (void)v_av95;
  int64_t v_ar96 = 0;
  (void)v_ar96;
  float v_bv97 = 0;
  (void)v_bv97;
  int64_t v_bc98 = 0;
  (void)v_bc98;
  float v_bv99 = 0;
  (void)v_bv99;
  int64_t v_bc100 = 0;
  (void)v_bc100;
  float v_bv101 = 0;
  (void)v_bv101;
  int64_t v_bc102 = 0;
  (void)v_bc102;
  float v_bv103 = 0;
  (void)v_bv103;
  int64_t v_bc104 = 0;
  (void)v_bc104;
  int64_t v_ty105 = 0;
  (void)v_ty105;
  int64_t v_tx106 = 0;
  (void)v_tx106;
  float v_c107 = 0;
  (void)v_c107;
  float v_c108 = 0;
  (void)v_c108;
  float v_c109 = 0;
  (void)v_c109;
  float v_c110 = 0;
  (void)v_c110;
  float v_c111 = 0;
  (void)v_c111;
  float v_c112 = 0;
  (void)v_c112;
  float v_c113 = 0;
  (void)v_c113;
  float v_c114 = 0;
  (void)v_c114;
  float v_c115 = 0;
  (void)v_c115;
  float v_c116 = 0;
  (void)v_c116;
  float v_c117 = 0;
  (void)v_c117;
  float v_c118 = 0;
  (void)v_c118;
  float v_c119 = 0;
  (void)v_c119;
  float v_c120 = 0;
  (void)v_c120;
  float v_c121 = 0;
  (void)v_c121;
  float v_c122 = 0;
  (void)v_c122;
  int64_t v_kk123 = 0;
  (void)v_kk123;
  float v_a124 = 0;
  (void)v_a124;
  float v_a125 = 0;
  (void)v_a125;
  float v_a126 = 0;
  (void)v_a126;
  float v_a127 = 0;
  (void)v_a127;
  float v_b128 = 0;
  (void)v_b128;
  float v_b129 = 0;
  (void)v_b129;
  float v_b130 = 0;
  (void)v_b130;
  float v_b131 = 0;
  (void)v_b131;
  int64_t v_gt132 = 0;
  (void)v_gt132;
  int64_t v_gt133 = 0;
  (void)v_gt133;
  int64_t v_ty134 = 0;
  (void)v_ty134;
  int64_t v_tx135 = 0;
  (void)v_tx135;
  v_gb8 = (int64_t)blockIdx.x;
  v_i09 = (mlc_mod_i64(v_gb8, 141LL) * 64LL);
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
      v_nt16 = mlc_div_i64(((v_kl14 + 16LL) - 1LL), 16LL);
      if (!mlc_dead) {
        v_gt17 = (int64_t)threadIdx.x;
        v_av18 = 0.0f;
        v_ar19 = (v_i09 + mlc_div_i64(v_gt17, 16LL));
        if (((v_ar19 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av18 = b0[((v_ar19 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + mlc_div_i64(v_gt17, 16LL))] = v_av18;
        v_av20 = 0.0f;
        v_ar21 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 4LL));
        if (((v_ar21 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av20 = b0[((v_ar21 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 4LL))] = v_av20;
        v_av22 = 0.0f;
        v_ar23 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 8LL));
        if (((v_ar23 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av22 = b0[((v_ar23 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 8LL))] = v_av22;
        v_av24 = 0.0f;
        v_ar25 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 12LL));
        if (((v_ar25 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av24 = b0[((v_ar25 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 12LL))] = v_av24;
        v_av26 = 0.0f;
        v_ar27 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 16LL));
        if (((v_ar27 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av26 = b0[((v_ar27 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 16LL))] = v_av26;
        v_av28 = 0.0f;
        v_ar29 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 20LL));
        if (((v_ar29 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av28 = b0[((v_ar29 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 20LL))] = v_av28;
        v_av30 = 0.0f;
        v_ar31 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 24LL));
        if (((v_ar31 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av30 = b0[((v_ar31 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 24LL))] = v_av30;
        v_av32 = 0.0f;
        v_ar33 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 28LL));
        if (((v_ar33 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av32 = b0[((v_ar33 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 28LL))] = v_av32;
        v_av34 = 0.0f;
        v_ar35 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 32LL));
        if (((v_ar35 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av34 = b0[((v_ar35 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 32LL))] = v_av34;
        v_av36 = 0.0f;
        v_ar37 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 36LL));
        if (((v_ar37 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av36 = b0[((v_ar37 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 36LL))] = v_av36;
        v_av38 = 0.0f;
        v_ar39 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 40LL));
        if (((v_ar39 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av38 = b0[((v_ar39 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 40LL))] = v_av38;
        v_av40 = 0.0f;
        v_ar41 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 44LL));
        if (((v_ar41 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av40 = b0[((v_ar41 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 44LL))] = v_av40;
        v_av42 = 0.0f;
        v_ar43 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 48LL));
        if (((v_ar43 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av42 = b0[((v_ar43 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 48LL))] = v_av42;
        v_av44 = 0.0f;
        v_ar45 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 52LL));
        if (((v_ar45 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av44 = b0[((v_ar45 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 52LL))] = v_av44;
        v_av46 = 0.0f;
        v_ar47 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 56LL));
        if (((v_ar47 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av46 = b0[((v_ar47 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 56LL))] = v_av46;
        v_av48 = 0.0f;
        v_ar49 = (v_i09 + (mlc_div_i64(v_gt17, 16LL) + 60LL));
        if (((v_ar49 < 9000LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_av48 = b0[((v_ar49 * 600LL) + (v_kb013 + mlc_mod_i64(v_gt17, 16LL)))];
        }
        b4[((mlc_mod_i64(v_gt17, 16LL) * 65LL) + (mlc_div_i64(v_gt17, 16LL) + 60LL))] = v_av48;
        v_bv50 = 0.0f;
        v_bc51 = (v_j010 + mlc_div_i64(v_gt17, 16LL));
        if (((v_bc51 < 5LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_bv50 = b1[((v_kb013 + mlc_mod_i64(v_gt17, 16LL)) + (v_bc51 * 600LL))];
        }
        b5[((mlc_mod_i64(v_gt17, 16LL) * 17LL) + mlc_div_i64(v_gt17, 16LL))] = v_bv50;
        v_bv52 = 0.0f;
        v_bc53 = (v_j010 + (mlc_div_i64(v_gt17, 16LL) + 4LL));
        if (((v_bc53 < 5LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_bv52 = b1[((v_kb013 + mlc_mod_i64(v_gt17, 16LL)) + (v_bc53 * 600LL))];
        }
        b5[((mlc_mod_i64(v_gt17, 16LL) * 17LL) + (mlc_div_i64(v_gt17, 16LL) + 4LL))] = v_bv52;
        v_bv54 = 0.0f;
        v_bc55 = (v_j010 + (mlc_div_i64(v_gt17, 16LL) + 8LL));
        if (((v_bc55 < 5LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_bv54 = b1[((v_kb013 + mlc_mod_i64(v_gt17, 16LL)) + (v_bc55 * 600LL))];
        }
        b5[((mlc_mod_i64(v_gt17, 16LL) * 17LL) + (mlc_div_i64(v_gt17, 16LL) + 8LL))] = v_bv54;
        v_bv56 = 0.0f;
        v_bc57 = (v_j010 + (mlc_div_i64(v_gt17, 16LL) + 12LL));
        if (((v_bc57 < 5LL) && (mlc_mod_i64(v_gt17, 16LL) < ((int64_t)mlc_imin(16LL, v_kl14))))) {
          v_bv56 = b1[((v_kb013 + mlc_mod_i64(v_gt17, 16LL)) + (v_bc57 * 600LL))];
        }
        b5[((mlc_mod_i64(v_gt17, 16LL) * 17LL) + (mlc_div_i64(v_gt17, 16LL) + 12LL))] = v_bv56;
      }
      MLC_BARRIER();
      {
        const int64_t n_kt58 = v_nt16;
        for (v_kt58 = 0; v_kt58 < n_kt58; v_kt58++) {
          v_kn59 = ((int64_t)mlc_imin(16LL, (v_kl14 - (v_kt58 * 16LL))));
          v_h60 = mlc_mod_i64(v_kt58, 2LL);
          v_nx61 = (v_kt58 + 1LL);
          v_k162 = (v_kb013 + (v_nx61 * 16LL));
          v_kn163 = ((int64_t)mlc_imin(16LL, (v_kl14 - (v_nx61 * 16LL))));
          if (!mlc_dead) {
            v_gt64 = (int64_t)threadIdx.x;
            if ((v_nx61 < v_nt16)) {
              v_av65 = 0.0f;
              v_ar66 = (v_i09 + mlc_div_i64(v_gt64, 16LL));
              if (((v_ar66 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av65 = b0[((v_ar66 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + mlc_div_i64(v_gt64, 16LL)))] = v_av65;
              v_av67 = 0.0f;
              v_ar68 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 4LL));
              if (((v_ar68 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av67 = b0[((v_ar68 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 4LL)))] = v_av67;
              v_av69 = 0.0f;
              v_ar70 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 8LL));
              if (((v_ar70 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av69 = b0[((v_ar70 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 8LL)))] = v_av69;
              v_av71 = 0.0f;
              v_ar72 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 12LL));
              if (((v_ar72 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av71 = b0[((v_ar72 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 12LL)))] = v_av71;
              v_av73 = 0.0f;
              v_ar74 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 16LL));
              if (((v_ar74 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av73 = b0[((v_ar74 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 16LL)))] = v_av73;
              v_av75 = 0.0f;
              v_ar76 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 20LL));
              if (((v_ar76 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av75 = b0[((v_ar76 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 20LL)))] = v_av75;
              v_av77 = 0.0f;
              v_ar78 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 24LL));
              if (((v_ar78 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av77 = b0[((v_ar78 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 24LL)))] = v_av77;
              v_av79 = 0.0f;
              v_ar80 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 28LL));
              if (((v_ar80 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av79 = b0[((v_ar80 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 28LL)))] = v_av79;
              v_av81 = 0.0f;
              v_ar82 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 32LL));
              if (((v_ar82 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av81 = b0[((v_ar82 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 32LL)))] = v_av81;
              v_av83 = 0.0f;
              v_ar84 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 36LL));
              if (((v_ar84 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av83 = b0[((v_ar84 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 36LL)))] = v_av83;
              v_av85 = 0.0f;
              v_ar86 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 40LL));
              if (((v_ar86 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av85 = b0[((v_ar86 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 40LL)))] = v_av85;
              v_av87 = 0.0f;
              v_ar88 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 44LL));
              if (((v_ar88 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av87 = b0[((v_ar88 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 44LL)))] = v_av87;
              v_av89 = 0.0f;
              v_ar90 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 48LL));
              if (((v_ar90 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av89 = b0[((v_ar90 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 48LL)))] = v_av89;
              v_av91 = 0.0f;
              v_ar92 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 52LL));
              if (((v_ar92 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av91 = b0[((v_ar92 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 52LL)))] = v_av91;
              v_av93 = 0.0f;
              v_ar94 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 56LL));
              if (((v_ar94 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av93 = b0[((v_ar94 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 56LL)))] = v_av93;
              v_av95 = 0.0f;
              v_ar96 = (v_i09 + (mlc_div_i64(v_gt64, 16LL) + 60LL));
              if (((v_ar96 < 9000LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_av95 = b0[((v_ar96 * 600LL) + (v_k162 + mlc_mod_i64(v_gt64, 16LL)))];
              }
              b4[(((1LL - v_h60) * 1040LL) + ((mlc_mod_i64(v_gt64, 16LL) * 65LL) + (mlc_div_i64(v_gt64, 16LL) + 60LL)))] = v_av95;
              v_bv97 = 0.0f;
              v_bc98 = (v_j010 + mlc_div_i64(v_gt64, 16LL));
              if (((v_bc98 < 5LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_bv97 = b1[((v_k162 + mlc_mod_i64(v_gt64, 16LL)) + (v_bc98 * 600LL))];
              }
              b5[(((1LL - v_h60) * 272LL) + ((mlc_mod_i64(v_gt64, 16LL) * 17LL) + mlc_div_i64(v_gt64, 16LL)))] = v_bv97;
              v_bv99 = 0.0f;
              v_bc100 = (v_j010 + (mlc_div_i64(v_gt64, 16LL) + 4LL));
              if (((v_bc100 < 5LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_bv99 = b1[((v_k162 + mlc_mod_i64(v_gt64, 16LL)) + (v_bc100 * 600LL))];
              }
              b5[(((1LL - v_h60) * 272LL) + ((mlc_mod_i64(v_gt64, 16LL) * 17LL) + (mlc_div_i64(v_gt64, 16LL) + 4LL)))] = v_bv99;
              v_bv101 = 0.0f;
              v_bc102 = (v_j010 + (mlc_div_i64(v_gt64, 16LL) + 8LL));
              if (((v_bc102 < 5LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_bv101 = b1[((v_k162 + mlc_mod_i64(v_gt64, 16LL)) + (v_bc102 * 600LL))];
              }
              b5[(((1LL - v_h60) * 272LL) + ((mlc_mod_i64(v_gt64, 16LL) * 17LL) + (mlc_div_i64(v_gt64, 16LL) + 8LL)))] = v_bv101;
              v_bv103 = 0.0f;
              v_bc104 = (v_j010 + (mlc_div_i64(v_gt64, 16LL) + 12LL));
              if (((v_bc104 < 5LL) && (mlc_mod_i64(v_gt64, 16LL) < v_kn163))) {
                v_bv103 = b1[((v_k162 + mlc_mod_i64(v_gt64, 16LL)) + (v_bc104 * 600LL))];
              }
              b5[(((1LL - v_h60) * 272LL) + ((mlc_mod_i64(v_gt64, 16LL) * 17LL) + (mlc_div_i64(v_gt64, 16LL) + 12LL)))] = v_bv103;
            }
            v_ty105 = mlc_div_i64(v_gt64, 4LL);
            v_tx106 = mlc_mod_i64(v_gt64, 4LL);
            v_c107 = b6[0LL];
            v_c108 = b6[1LL];
            v_c109 = b6[2LL];
            v_c110 = b6[3LL];
            v_c111 = b6[4LL];
            v_c112 = b6[5LL];
            v_c113 = b6[6LL];
            v_c114 = b6[7LL];
            v_c115 = b6[8LL];
            v_c116 = b6[9LL];
            v_c117 = b6[10LL];
            v_c118 = b6[11LL];
            v_c119 = b6[12LL];
            v_c120 = b6[13LL];
            v_c121 = b6[14LL];
            v_c122 = b6[15LL];
            {
              const int64_t n_kk123 = v_kn59;
              for (v_kk123 = 0; v_kk123 < n_kk123; v_kk123++) {
                v_a124 = b4[(((v_h60 * 1040LL) + (v_kk123 * 65LL)) + v_ty105)];
                v_a125 = b4[(((v_h60 * 1040LL) + (v_kk123 * 65LL)) + (v_ty105 + 16LL))];
                v_a126 = b4[(((v_h60 * 1040LL) + (v_kk123 * 65LL)) + (v_ty105 + 32LL))];
                v_a127 = b4[(((v_h60 * 1040LL) + (v_kk123 * 65LL)) + (v_ty105 + 48LL))];
                v_b128 = b5[(((v_h60 * 272LL) + (v_kk123 * 17LL)) + v_tx106)];
                v_b129 = b5[(((v_h60 * 272LL) + (v_kk123 * 17LL)) + (v_tx106 + 4LL))];
                v_b130 = b5[(((v_h60 * 272LL) + (v_kk123 * 17LL)) + (v_tx106 + 8LL))];
                v_b131 = b5[(((v_h60 * 272LL) + (v_kk123 * 17LL)) + (v_tx106 + 12LL))];
                v_c107 = fmaf(v_a124, v_b128, v_c107);
                v_c108 = fmaf(v_a124, v_b129, v_c108);
                v_c109 = fmaf(v_a124, v_b130, v_c109);
                v_c110 = fmaf(v_a124, v_b131, v_c110);
                v_c111 = fmaf(v_a125, v_b128, v_c111);
                v_c112 = fmaf(v_a125, v_b129, v_c112);
                v_c113 = fmaf(v_a125, v_b130, v_c113);
                v_c114 = fmaf(v_a125, v_b131, v_c114);
                v_c115 = fmaf(v_a126, v_b128, v_c115);
                v_c116 = fmaf(v_a126, v_b129, v_c116);
                v_c117 = fmaf(v_a126, v_b130, v_c117);
                v_c118 = fmaf(v_a126, v_b131, v_c118);
                v_c119 = fmaf(v_a127, v_b128, v_c119);
                v_c120 = fmaf(v_a127, v_b129, v_c120);
                v_c121 = fmaf(v_a127, v_b130, v_c121);
                v_c122 = fmaf(v_a127, v_b131, v_c122);
              }
            }
            b6[0LL] = v_c107;
            b6[1LL] = v_c108;
            b6[2LL] = v_c109;
            b6[3LL] = v_c110;
            b6[4LL] = v_c111;
            b6[5LL] = v_c112;
            b6[6LL] = v_c113;
            b6[7LL] = v_c114;
            b6[8LL] = v_c115;
            b6[9LL] = v_c116;
            b6[10LL] = v_c117;
            b6[11LL] = v_c118;
            b6[12LL] = v_c119;
            b6[13LL] = v_c120;
            b6[14LL] = v_c121;
            b6[15LL] = v_c122;
          }
          MLC_BARRIER();
        }
      }
      if (!mlc_dead) {
        v_gt132 = (int64_t)threadIdx.x;
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
    v_gt133 = (int64_t)threadIdx.x;
    v_ty134 = mlc_div_i64(v_gt133, 4LL);
    v_tx135 = mlc_mod_i64(v_gt133, 4LL);
    if ((((v_i09 + v_ty134) < 9000LL) && ((v_j010 + v_tx135) < 5LL))) {
      v_i0 = (v_i09 + v_ty134);
      v_i1 = (v_j010 + v_tx135);
      v_acc2 = b7[0LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + v_ty134) < 9000LL) && ((v_j010 + (v_tx135 + 4LL)) < 5LL))) {
      v_i0 = (v_i09 + v_ty134);
      v_i1 = (v_j010 + (v_tx135 + 4LL));
      v_acc2 = b7[1LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + v_ty134) < 9000LL) && ((v_j010 + (v_tx135 + 8LL)) < 5LL))) {
      v_i0 = (v_i09 + v_ty134);
      v_i1 = (v_j010 + (v_tx135 + 8LL));
      v_acc2 = b7[2LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + v_ty134) < 9000LL) && ((v_j010 + (v_tx135 + 12LL)) < 5LL))) {
      v_i0 = (v_i09 + v_ty134);
      v_i1 = (v_j010 + (v_tx135 + 12LL));
      v_acc2 = b7[3LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 16LL)) < 9000LL) && ((v_j010 + v_tx135) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 16LL));
      v_i1 = (v_j010 + v_tx135);
      v_acc2 = b7[4LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 16LL)) < 9000LL) && ((v_j010 + (v_tx135 + 4LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 16LL));
      v_i1 = (v_j010 + (v_tx135 + 4LL));
      v_acc2 = b7[5LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 16LL)) < 9000LL) && ((v_j010 + (v_tx135 + 8LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 16LL));
      v_i1 = (v_j010 + (v_tx135 + 8LL));
      v_acc2 = b7[6LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 16LL)) < 9000LL) && ((v_j010 + (v_tx135 + 12LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 16LL));
      v_i1 = (v_j010 + (v_tx135 + 12LL));
      v_acc2 = b7[7LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 32LL)) < 9000LL) && ((v_j010 + v_tx135) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 32LL));
      v_i1 = (v_j010 + v_tx135);
      v_acc2 = b7[8LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 32LL)) < 9000LL) && ((v_j010 + (v_tx135 + 4LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 32LL));
      v_i1 = (v_j010 + (v_tx135 + 4LL));
      v_acc2 = b7[9LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 32LL)) < 9000LL) && ((v_j010 + (v_tx135 + 8LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 32LL));
      v_i1 = (v_j010 + (v_tx135 + 8LL));
      v_acc2 = b7[10LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 32LL)) < 9000LL) && ((v_j010 + (v_tx135 + 12LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 32LL));
      v_i1 = (v_j010 + (v_tx135 + 12LL));
      v_acc2 = b7[11LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 48LL)) < 9000LL) && ((v_j010 + v_tx135) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 48LL));
      v_i1 = (v_j010 + v_tx135);
      v_acc2 = b7[12LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 48LL)) < 9000LL) && ((v_j010 + (v_tx135 + 4LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 48LL));
      v_i1 = (v_j010 + (v_tx135 + 4LL));
      v_acc2 = b7[13LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 48LL)) < 9000LL) && ((v_j010 + (v_tx135 + 8LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 48LL));
      v_i1 = (v_j010 + (v_tx135 + 8LL));
      v_acc2 = b7[14LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
    if ((((v_i09 + (v_ty134 + 48LL)) < 9000LL) && ((v_j010 + (v_tx135 + 12LL)) < 5LL))) {
      v_i0 = (v_i09 + (v_ty134 + 48LL));
      v_i1 = (v_j010 + (v_tx135 + 12LL));
      v_acc2 = b7[15LL];
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
  }
}
MLC_ENTRY6(dense_k0_matmul_bias, const float *, const float *, const float *, float *, uint64_t, uint32_t *)

// Host launchers for tiled_matmul_wide.cu, printed by mlc (do not edit).
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
  uint64_t v[10]; // what the launches take: buffer i's device address in v[i], syms, seed, flag
  v[0] = inputs[0]; // %x
  v[1] = inputs[1]; // %w
  v[2] = inputs[2]; // %b
  v[3] = outputs[0]; // out0
  v[8] = seed;
  v[9] = flag;
  int64_t g[1]; // the grid sizes
  g[0] = 141LL;
  static const uint32_t launches[] = {
      0, 0, 64, 6, 0, 1, 2, 3, 8, 9, // k0_matmul_bias
  };
  for (const uint32_t *x = launches; x < launches + sizeof launches / sizeof launches[0]; x += 4 + x[3])
    if (mlc_h_launch(l, g, v, x)) return -1;
  return 0;
}

int64_t mlc_cu_dense_scratch_bytes(const int64_t *dims) {
  (void)dims;
  return 0LL;
}

const char *const mlc_cu_kernels[] = {
    "dense_k0_matmul_bias",
    NULL};
const int mlc_cu_nkernels = 1;
const char *const mlc_cu_messages[] = {
    NULL};
const int mlc_cu_nmessages = 0;
