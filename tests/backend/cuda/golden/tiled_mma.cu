// tiled_mma.cu: CUDA C printed by mlc from scheduled kernel IR (do not edit).
// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,
// a C compiler (-ffp-contract=off) for the CPU emulation.
#include "mlc_cuda.h"

// dense k0_matmul_bias (tests/backend/cuda/golden/tiled_mma.kir:21), launch 1 of 2: block 64, buffers b0 = %x b1 = %w b2 = %b b3 = out0 b4 = t0_part b5 = t0_as b6 = t0_bs b7 = t0_ss
MLC_KERNEL MLC_LAUNCH_BOUNDS(64) dense_k0_matmul_bias_1(const float *MLC_RESTRICT b0, const float *MLC_RESTRICT b1, const float *MLC_RESTRICT b2, const float *MLC_RESTRICT b3, float *MLC_RESTRICT b4, int64_t s0, uint64_t seed, uint32_t *flag) {
  const int mlc_dead = *flag != 0;
  (void)mlc_dead;
  MLC_SHARED uint16_t b5[2080];
  MLC_SHARED uint16_t b6[544];
  float b7[16];
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
  float v_av27 = 0;
  (void)v_av27;
  int64_t v_ar28 = 0;
  (void)v_ar28;
  float v_av29 = 0;
  (void)v_av29;
  int64_t v_ar30 = 0;
  (void)v_ar30;
  float v_av31 = 0;
  (void)v_av31;
  int64_t v_ar32 = 0;
  (void)v_ar32;
  float v_av33 = 0;
  (void)v_av33;
  int64_t v_ar34 = 0;
  (void)v_ar34;
  float v_av35 = 0;
  (void)v_av35;
  int64_t v_ar36 = 0;
  (void)v_ar36;
  float v_av37 = 0;
  (void)v_av37;
  int64_t v_ar38 = 0;
  (void)v_ar38;
  float v_av39 = 0;
  (void)v_av39;
  int64_t v_ar40 = 0;
  (void)v_ar40;
  float v_av41 = 0;
  (void)v_av41;
  int64_t v_ar42 = 0;
  (void)v_ar42;
  float v_av43 = 0;
  (void)v_av43;
  int64_t v_ar44 = 0;
  (void)v_ar44;
  float v_av45 = 0;
  (void)v_av45;
  int64_t v_ar46 = 0;
  (void)v_ar46;
  float v_av47 = 0;
  (void)v_av47;
  int64_t v_ar48 = 0;
  (void)v_ar48;
  float v_av49 = 0;
  (void)v_av49;
  int64_t v_ar50 = 0;
  (void)v_ar50;
  float v_bv51 = 0;
  (void)v_bv51;
  int64_t v_bc52 = 0;
  (void)v_bc52;
  float v_bv53 = 0;
  (void)v_bv53;
  int64_t v_bc54 = 0;
  (void)v_bc54;
  float v_bv55 = 0;
  (void)v_bv55;
  int64_t v_bc56 = 0;
  (void)v_bc56;
  float v_bv57 = 0;
  (void)v_bv57;
  int64_t v_bc58 = 0;
  (void)v_bc58;
  int64_t v_kt59 = 0;
  (void)v_kt59;
  int64_t v_kn60 = 0;
  (void)v_kn60;
  int64_t v_h61 = 0;
  (void)v_h61;
  int64_t v_nx62 = 0;
  (void)v_nx62;
  int64_t v_k163 = 0;
  (void)v_k163;
  int64_t v_kn164 = 0;
  (void)v_kn164;
  int64_t v_gt65 = 0;
  (void)v_gt65;
  float v_av66 = 0;
  (void)v_av66;
  int64_t v_ar67 = 0;
  (void)v_ar67;
  float v_av68 = 0;
  (void)v_av68;
  int64_t v_ar69 = 0;
  (void)v_ar69;
  float v_av70 = 0;
  (void)v_av70;
  int64_t v_ar71 = 0;
  (void)v_ar71;
  float v_av72 = 0;
  (void)v_av72;
  int64_t v_ar73 = 0;
  (void)v_ar73;
  float v_av74 = 0;
  (void)v_av74;
  int64_t v_ar75 = 0;
  (void)v_ar75;
  float v_av76 = 0;
  (void)v_av76;
  int64_t v_ar77 = 0;
  (void)v_ar77;
  float v_av78 = 0;
  (void)v_av78;
  int64_t v_ar79 = 0;
  (void)v_ar79;
  float v_av80 = 0;
  (void)v_av80;
  int64_t v_ar81 = 0;
  (void)v_ar81;
  float v_av82 = 0;
  (void)v_av82;
  int64_t v_ar83 = 0;
  (void)v_ar83;
  float v_av84 = 0;
  (void)v_av84;
  int64_t v_ar85 = 0;
  (void)v_ar85;
  float v_av86 = 0;
  (void)v_av86;
  int64_t v_ar87 = 0;
  (void)v_ar87;
  float v_av88 = 0;
  (void)v_av88;
  int64_t v_ar89 = 0;
  (void)v_ar89;
  float v_av90 = 0;
  (void)v_av90;
  int64_t v_ar91 = 0;
  (void)v_ar91;
  float v_av92 = 0;
  (void)v_av92;
  int64_t v_ar93 = 0;
  (void)v_ar93;
  float v_av94 = 0;
  (void)v_av94;
  int64_t v_ar95 = 0;
  (void)v_ar95;
  float v_av96 = 0;
  (void)v_av96;
  int64_t v_ar97 = 0;
  (void)v_ar97;
  float v_bv98 = 0;
  (void)v_bv98;
  int64_t v_bc99 = 0;
  (void)v_bc99;
  float v_bv100 = 0;
  (void)v_bv100;
  int64_t v_bc101 = 0;
  (void)v_bc101;
  float v_bv102 = 0;
  (void)v_bv102;
  int64_t v_bc103 = 0;
  (void)v_bc103;
  float v_bv104 = 0;
  (void)v_bv104;
  int64_t v_bc105 = 0;
  (void)v_bc105;
  int64_t v_wp106 = 0;
  (void)v_wp106;
  int64_t v_gt107 = 0;
  (void)v_gt107;
  int64_t v_ln108 = 0;
  (void)v_ln108;
  int64_t v_wp109 = 0;
  (void)v_wp109;
  int64_t v_r0110 = 0;
  (void)v_r0110;
  int64_t v_c0111 = 0;
  (void)v_c0111;
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
    b7[4LL] = 0.0f;
    b7[5LL] = 0.0f;
    b7[6LL] = 0.0f;
    b7[7LL] = 0.0f;
    b7[8LL] = 0.0f;
    b7[9LL] = 0.0f;
    b7[10LL] = 0.0f;
    b7[11LL] = 0.0f;
    b7[12LL] = 0.0f;
    b7[13LL] = 0.0f;
    b7[14LL] = 0.0f;
    b7[15LL] = 0.0f;
  }
  v_nt17 = mlc_div_i64(((v_kl15 + 16LL) - 1LL), 16LL);
  if (!mlc_dead) {
    v_gt18 = (int64_t)threadIdx.x;
    v_av19 = 0.0f;
    v_ar20 = (v_i011 + mlc_div_i64(v_gt18, 16LL));
    if (((v_ar20 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av19 = mlc_round_bf16f(b0[((v_ar20 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + mlc_div_i64(v_gt18, 16LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av19));
    v_av21 = 0.0f;
    v_ar22 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 4LL));
    if (((v_ar22 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av21 = mlc_round_bf16f(b0[((v_ar22 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 4LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av21));
    v_av23 = 0.0f;
    v_ar24 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 8LL));
    if (((v_ar24 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av23 = mlc_round_bf16f(b0[((v_ar24 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 8LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av23));
    v_av25 = 0.0f;
    v_ar26 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 12LL));
    if (((v_ar26 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av25 = mlc_round_bf16f(b0[((v_ar26 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 12LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av25));
    v_av27 = 0.0f;
    v_ar28 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 16LL));
    if (((v_ar28 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av27 = mlc_round_bf16f(b0[((v_ar28 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 16LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av27));
    v_av29 = 0.0f;
    v_ar30 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 20LL));
    if (((v_ar30 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av29 = mlc_round_bf16f(b0[((v_ar30 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 20LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av29));
    v_av31 = 0.0f;
    v_ar32 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 24LL));
    if (((v_ar32 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av31 = mlc_round_bf16f(b0[((v_ar32 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 24LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av31));
    v_av33 = 0.0f;
    v_ar34 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 28LL));
    if (((v_ar34 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av33 = mlc_round_bf16f(b0[((v_ar34 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 28LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av33));
    v_av35 = 0.0f;
    v_ar36 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 32LL));
    if (((v_ar36 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av35 = mlc_round_bf16f(b0[((v_ar36 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 32LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av35));
    v_av37 = 0.0f;
    v_ar38 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 36LL));
    if (((v_ar38 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av37 = mlc_round_bf16f(b0[((v_ar38 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 36LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av37));
    v_av39 = 0.0f;
    v_ar40 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 40LL));
    if (((v_ar40 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av39 = mlc_round_bf16f(b0[((v_ar40 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 40LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av39));
    v_av41 = 0.0f;
    v_ar42 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 44LL));
    if (((v_ar42 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av41 = mlc_round_bf16f(b0[((v_ar42 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 44LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av41));
    v_av43 = 0.0f;
    v_ar44 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 48LL));
    if (((v_ar44 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av43 = mlc_round_bf16f(b0[((v_ar44 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 48LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av43));
    v_av45 = 0.0f;
    v_ar46 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 52LL));
    if (((v_ar46 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av45 = mlc_round_bf16f(b0[((v_ar46 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 52LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av45));
    v_av47 = 0.0f;
    v_ar48 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 56LL));
    if (((v_ar48 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av47 = mlc_round_bf16f(b0[((v_ar48 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 56LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av47));
    v_av49 = 0.0f;
    v_ar50 = (v_i011 + (mlc_div_i64(v_gt18, 16LL) + 60LL));
    if (((v_ar50 < s0) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_av49 = mlc_round_bf16f(b0[((v_ar50 * 600LL) + (v_kb014 + mlc_mod_i64(v_gt18, 16LL)))]);
    }
    b5[((mlc_mod_i64(v_gt18, 16LL) * 65LL) + (mlc_div_i64(v_gt18, 16LL) + 60LL))] = mlc_bf16_bits(mlc_round_bf16f(v_av49));
    v_bv51 = 0.0f;
    v_bc52 = (v_j012 + mlc_div_i64(v_gt18, 16LL));
    if (((v_bc52 < 5LL) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_bv51 = mlc_round_bf16f(b1[((v_kb014 + mlc_mod_i64(v_gt18, 16LL)) + (v_bc52 * 600LL))]);
    }
    b6[((mlc_mod_i64(v_gt18, 16LL) * 17LL) + mlc_div_i64(v_gt18, 16LL))] = mlc_bf16_bits(mlc_round_bf16f(v_bv51));
    v_bv53 = 0.0f;
    v_bc54 = (v_j012 + (mlc_div_i64(v_gt18, 16LL) + 4LL));
    if (((v_bc54 < 5LL) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_bv53 = mlc_round_bf16f(b1[((v_kb014 + mlc_mod_i64(v_gt18, 16LL)) + (v_bc54 * 600LL))]);
    }
    b6[((mlc_mod_i64(v_gt18, 16LL) * 17LL) + (mlc_div_i64(v_gt18, 16LL) + 4LL))] = mlc_bf16_bits(mlc_round_bf16f(v_bv53));
    v_bv55 = 0.0f;
    v_bc56 = (v_j012 + (mlc_div_i64(v_gt18, 16LL) + 8LL));
    if (((v_bc56 < 5LL) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_bv55 = mlc_round_bf16f(b1[((v_kb014 + mlc_mod_i64(v_gt18, 16LL)) + (v_bc56 * 600LL))]);
    }
    b6[((mlc_mod_i64(v_gt18, 16LL) * 17LL) + (mlc_div_i64(v_gt18, 16LL) + 8LL))] = mlc_bf16_bits(mlc_round_bf16f(v_bv55));
    v_bv57 = 0.0f;
    v_bc58 = (v_j012 + (mlc_div_i64(v_gt18, 16LL) + 12LL));
    if (((v_bc58 < 5LL) && (mlc_mod_i64(v_gt18, 16LL) < ((int64_t)mlc_imin(16LL, v_kl15))))) {
      v_bv57 = mlc_round_bf16f(b1[((v_kb014 + mlc_mod_i64(v_gt18, 16LL)) + (v_bc58 * 600LL))]);
    }
    b6[((mlc_mod_i64(v_gt18, 16LL) * 17LL) + (mlc_div_i64(v_gt18, 16LL) + 12LL))] = mlc_bf16_bits(mlc_round_bf16f(v_bv57));
  }
  MLC_BARRIER();
  {
    const int64_t n_kt59 = v_nt17;
    for (v_kt59 = 0; v_kt59 < n_kt59; v_kt59++) {
      v_kn60 = ((int64_t)mlc_imin(16LL, (v_kl15 - (v_kt59 * 16LL))));
      v_h61 = mlc_mod_i64(v_kt59, 2LL);
      v_nx62 = (v_kt59 + 1LL);
      v_k163 = (v_kb014 + (v_nx62 * 16LL));
      v_kn164 = ((int64_t)mlc_imin(16LL, (v_kl15 - (v_nx62 * 16LL))));
      if (!mlc_dead) {
        v_gt65 = (int64_t)threadIdx.x;
        if ((v_nx62 < v_nt17)) {
          v_av66 = 0.0f;
          v_ar67 = (v_i011 + mlc_div_i64(v_gt65, 16LL));
          if (((v_ar67 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av66 = mlc_round_bf16f(b0[((v_ar67 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + mlc_div_i64(v_gt65, 16LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av66));
          v_av68 = 0.0f;
          v_ar69 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 4LL));
          if (((v_ar69 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av68 = mlc_round_bf16f(b0[((v_ar69 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 4LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av68));
          v_av70 = 0.0f;
          v_ar71 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 8LL));
          if (((v_ar71 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av70 = mlc_round_bf16f(b0[((v_ar71 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 8LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av70));
          v_av72 = 0.0f;
          v_ar73 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 12LL));
          if (((v_ar73 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av72 = mlc_round_bf16f(b0[((v_ar73 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 12LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av72));
          v_av74 = 0.0f;
          v_ar75 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 16LL));
          if (((v_ar75 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av74 = mlc_round_bf16f(b0[((v_ar75 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 16LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av74));
          v_av76 = 0.0f;
          v_ar77 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 20LL));
          if (((v_ar77 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av76 = mlc_round_bf16f(b0[((v_ar77 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 20LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av76));
          v_av78 = 0.0f;
          v_ar79 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 24LL));
          if (((v_ar79 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av78 = mlc_round_bf16f(b0[((v_ar79 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 24LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av78));
          v_av80 = 0.0f;
          v_ar81 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 28LL));
          if (((v_ar81 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av80 = mlc_round_bf16f(b0[((v_ar81 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 28LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av80));
          v_av82 = 0.0f;
          v_ar83 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 32LL));
          if (((v_ar83 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av82 = mlc_round_bf16f(b0[((v_ar83 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 32LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av82));
          v_av84 = 0.0f;
          v_ar85 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 36LL));
          if (((v_ar85 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av84 = mlc_round_bf16f(b0[((v_ar85 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 36LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av84));
          v_av86 = 0.0f;
          v_ar87 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 40LL));
          if (((v_ar87 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av86 = mlc_round_bf16f(b0[((v_ar87 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 40LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av86));
          v_av88 = 0.0f;
          v_ar89 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 44LL));
          if (((v_ar89 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av88 = mlc_round_bf16f(b0[((v_ar89 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 44LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av88));
          v_av90 = 0.0f;
          v_ar91 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 48LL));
          if (((v_ar91 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av90 = mlc_round_bf16f(b0[((v_ar91 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 48LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av90));
          v_av92 = 0.0f;
          v_ar93 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 52LL));
          if (((v_ar93 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av92 = mlc_round_bf16f(b0[((v_ar93 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 52LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av92));
          v_av94 = 0.0f;
          v_ar95 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 56LL));
          if (((v_ar95 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av94 = mlc_round_bf16f(b0[((v_ar95 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 56LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av94));
          v_av96 = 0.0f;
          v_ar97 = (v_i011 + (mlc_div_i64(v_gt65, 16LL) + 60LL));
          if (((v_ar97 < s0) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_av96 = mlc_round_bf16f(b0[((v_ar97 * 600LL) + (v_k163 + mlc_mod_i64(v_gt65, 16LL)))]);
          }
          b5[(((1LL - v_h61) * 1040LL) + ((mlc_mod_i64(v_gt65, 16LL) * 65LL) + (mlc_div_i64(v_gt65, 16LL) + 60LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_av96));
          v_bv98 = 0.0f;
          v_bc99 = (v_j012 + mlc_div_i64(v_gt65, 16LL));
          if (((v_bc99 < 5LL) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_bv98 = mlc_round_bf16f(b1[((v_k163 + mlc_mod_i64(v_gt65, 16LL)) + (v_bc99 * 600LL))]);
          }
          b6[(((1LL - v_h61) * 272LL) + ((mlc_mod_i64(v_gt65, 16LL) * 17LL) + mlc_div_i64(v_gt65, 16LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_bv98));
          v_bv100 = 0.0f;
          v_bc101 = (v_j012 + (mlc_div_i64(v_gt65, 16LL) + 4LL));
          if (((v_bc101 < 5LL) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_bv100 = mlc_round_bf16f(b1[((v_k163 + mlc_mod_i64(v_gt65, 16LL)) + (v_bc101 * 600LL))]);
          }
          b6[(((1LL - v_h61) * 272LL) + ((mlc_mod_i64(v_gt65, 16LL) * 17LL) + (mlc_div_i64(v_gt65, 16LL) + 4LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_bv100));
          v_bv102 = 0.0f;
          v_bc103 = (v_j012 + (mlc_div_i64(v_gt65, 16LL) + 8LL));
          if (((v_bc103 < 5LL) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_bv102 = mlc_round_bf16f(b1[((v_k163 + mlc_mod_i64(v_gt65, 16LL)) + (v_bc103 * 600LL))]);
          }
          b6[(((1LL - v_h61) * 272LL) + ((mlc_mod_i64(v_gt65, 16LL) * 17LL) + (mlc_div_i64(v_gt65, 16LL) + 8LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_bv102));
          v_bv104 = 0.0f;
          v_bc105 = (v_j012 + (mlc_div_i64(v_gt65, 16LL) + 12LL));
          if (((v_bc105 < 5LL) && (mlc_mod_i64(v_gt65, 16LL) < v_kn164))) {
            v_bv104 = mlc_round_bf16f(b1[((v_k163 + mlc_mod_i64(v_gt65, 16LL)) + (v_bc105 * 600LL))]);
          }
          b6[(((1LL - v_h61) * 272LL) + ((mlc_mod_i64(v_gt65, 16LL) * 17LL) + (mlc_div_i64(v_gt65, 16LL) + 12LL)))] = mlc_bf16_bits(mlc_round_bf16f(v_bv104));
        }
        v_wp106 = mlc_div_i64(v_gt65, 32LL);
        mlc_mma_bf16(&b7[0], b5 + ((v_h61 * 1040LL) + (v_wp106 * 32LL)), 1LL, 65LL, b6 + (v_h61 * 272LL), 17LL, 1LL);
        mlc_mma_bf16(&b7[4], b5 + ((v_h61 * 1040LL) + (v_wp106 * 32LL)), 1LL, 65LL, b6 + ((v_h61 * 272LL) + 8LL), 17LL, 1LL);
        mlc_mma_bf16(&b7[8], b5 + ((v_h61 * 1040LL) + ((v_wp106 * 32LL) + 16LL)), 1LL, 65LL, b6 + (v_h61 * 272LL), 17LL, 1LL);
        mlc_mma_bf16(&b7[12], b5 + ((v_h61 * 1040LL) + ((v_wp106 * 32LL) + 16LL)), 1LL, 65LL, b6 + ((v_h61 * 272LL) + 8LL), 17LL, 1LL);
      }
      MLC_BARRIER();
    }
  }
  if (!mlc_dead) {
    v_gt107 = (int64_t)threadIdx.x;
    v_ln108 = mlc_mod_i64(v_gt107, 32LL);
    v_wp109 = mlc_div_i64(v_gt107, 32LL);
    v_r0110 = (v_i011 + ((v_wp109 * 32LL) + mlc_div_i64(v_ln108, 4LL)));
    v_c0111 = (v_j012 + (mlc_mod_i64(v_ln108, 4LL) * 2LL));
    if (((v_r0110 < s0) && (v_c0111 < 5LL))) {
      b4[((((v_sg9 * s0) + v_r0110) * 5LL) + v_c0111)] = b7[0LL];
    }
    if (((v_r0110 < s0) && ((v_c0111 + 1LL) < 5LL))) {
      b4[((((v_sg9 * s0) + v_r0110) * 5LL) + (v_c0111 + 1LL))] = b7[1LL];
    }
    if ((((v_r0110 + 8LL) < s0) && (v_c0111 < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 8LL)) * 5LL) + v_c0111)] = b7[2LL];
    }
    if ((((v_r0110 + 8LL) < s0) && ((v_c0111 + 1LL) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 8LL)) * 5LL) + (v_c0111 + 1LL))] = b7[3LL];
    }
    if (((v_r0110 < s0) && ((v_c0111 + 8LL) < 5LL))) {
      b4[((((v_sg9 * s0) + v_r0110) * 5LL) + (v_c0111 + 8LL))] = b7[4LL];
    }
    if (((v_r0110 < s0) && ((v_c0111 + 9LL) < 5LL))) {
      b4[((((v_sg9 * s0) + v_r0110) * 5LL) + (v_c0111 + 9LL))] = b7[5LL];
    }
    if ((((v_r0110 + 8LL) < s0) && ((v_c0111 + 8LL) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 8LL)) * 5LL) + (v_c0111 + 8LL))] = b7[6LL];
    }
    if ((((v_r0110 + 8LL) < s0) && ((v_c0111 + 9LL) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 8LL)) * 5LL) + (v_c0111 + 9LL))] = b7[7LL];
    }
    if ((((v_r0110 + 16LL) < s0) && (v_c0111 < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 16LL)) * 5LL) + v_c0111)] = b7[8LL];
    }
    if ((((v_r0110 + 16LL) < s0) && ((v_c0111 + 1LL) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 16LL)) * 5LL) + (v_c0111 + 1LL))] = b7[9LL];
    }
    if ((((v_r0110 + 24LL) < s0) && (v_c0111 < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 24LL)) * 5LL) + v_c0111)] = b7[10LL];
    }
    if ((((v_r0110 + 24LL) < s0) && ((v_c0111 + 1LL) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 24LL)) * 5LL) + (v_c0111 + 1LL))] = b7[11LL];
    }
    if ((((v_r0110 + 16LL) < s0) && ((v_c0111 + 8LL) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 16LL)) * 5LL) + (v_c0111 + 8LL))] = b7[12LL];
    }
    if ((((v_r0110 + 16LL) < s0) && ((v_c0111 + 9LL) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 16LL)) * 5LL) + (v_c0111 + 9LL))] = b7[13LL];
    }
    if ((((v_r0110 + 24LL) < s0) && ((v_c0111 + 8LL) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 24LL)) * 5LL) + (v_c0111 + 8LL))] = b7[14LL];
    }
    if ((((v_r0110 + 24LL) < s0) && ((v_c0111 + 9LL) < 5LL))) {
      b4[((((v_sg9 * s0) + (v_r0110 + 24LL)) * 5LL) + (v_c0111 + 9LL))] = b7[15LL];
    }
  }
}
MLC_ENTRY8(dense_k0_matmul_bias_1, const float *, const float *, const float *, const float *, float *, int64_t, uint64_t, uint32_t *)

// dense k0_matmul_bias (tests/backend/cuda/golden/tiled_mma.kir:21), launch 2 of 2: block 256, buffers b0 = %x b1 = %w b2 = %b b3 = out0 b4 = t0_part b5 = t0_as b6 = t0_bs b7 = t0_ss
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
  int64_t v_e112 = 0;
  (void)v_e112;
  int64_t v_r113 = 0;
  (void)v_r113;
  int64_t v_c114 = 0;
  (void)v_c114;
  float v_acc115 = 0;
  (void)v_acc115;
  int64_t v_sg116 = 0;
  (void)v_sg116;
  int64_t v_kc117 = 0;
  (void)v_kc117;
  int64_t v_kb0118 = 0;
  (void)v_kb0118;
  int64_t v_kl119 = 0;
  (void)v_kl119;
  int64_t v_gb120 = 0;
  (void)v_gb120;
  int64_t v_gt121 = 0;
  (void)v_gt121;
  int64_t v_g122 = 0;
  (void)v_g122;
  v_gb120 = (int64_t)blockIdx.x;
  if (!mlc_dead) {
    v_gt121 = (int64_t)threadIdx.x;
    v_g122 = ((v_gb120 * 256LL) + v_gt121);
    if ((v_g122 < (s0 * 5LL))) {
      v_e112 = v_g122;
      v_r113 = mlc_mod_i64(mlc_div_i64(v_e112, 5LL), s0);
      v_c114 = mlc_mod_i64(v_e112, 5LL);
      v_acc115 = (-0.0f);
      {
        const int64_t n_sg116 = 2LL;
        for (v_sg116 = 0; v_sg116 < n_sg116; v_sg116++) {
          v_kc117 = 300LL;
          v_kb0118 = (v_sg116 * v_kc117);
          v_kl119 = ((int64_t)mlc_imin(v_kc117, (600LL - (v_sg116 * v_kc117))));
          v_acc115 = (v_acc115 + b4[((v_sg116 * (s0 * 5LL)) + ((v_r113 * 5LL) + v_c114))]);
        }
      }
      v_i0 = v_r113;
      v_i1 = v_c114;
      v_acc2 = v_acc115;
      v_e6 = (v_acc2 + b2[v_i1]);
      v_e7 = mlc_maxf(v_e6, 0.0f);
      b3[((v_i0 * 5LL) + v_i1)] = v_e7;
    }
  }
}
MLC_ENTRY8(dense_k0_matmul_bias_2, const float *, const float *, const float *, float *, const float *, int64_t, uint64_t, uint32_t *)

// Host launchers for tiled_mma.cu, printed by mlc (do not edit).
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
      0, 0, 64, 8, 0, 1, 2, 3, 4, 8, 9, 10, // k0_matmul_bias
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
