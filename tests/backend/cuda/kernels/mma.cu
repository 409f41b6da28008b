// mma.cu — one warp's tensor-core product through mlc_cuda.h's mlc_mma_bf16 /
// mlc_mma_f16: A (16 x 16) and B (16 x 8) row-major f32 in, rounded and
// staged as 16-bit bits into shared tiles, d = A B stored row-major by the
// fragment layout of D (lane l owns (l / 4 + 8 (i / 2), 2 (l % 4) + i % 2)).
// mma_swapped builds A's fragment with its two middle registers exchanged
// (rows 8-15 and columns 8-15 mixed up), the wrong layout a test must catch.
#include "mlc_cuda.h"

MLC_DEVICE void mma_stage(const float *a, const float *b, uint16_t *as, uint16_t *bs, int f16) {
  unsigned l = threadIdx.x;
  for (unsigned i = l; i < 256; i += 32) as[i] = f16 ? mlc_f16_bits(mlc_round_f16f(a[i])) : mlc_bf16_bits(mlc_round_bf16f(a[i]));
  for (unsigned i = l; i < 128; i += 32) bs[i] = f16 ? mlc_f16_bits(mlc_round_f16f(b[i])) : mlc_bf16_bits(mlc_round_bf16f(b[i]));
}

MLC_DEVICE void mma_store(float *d, const float *acc) {
  unsigned l = threadIdx.x, g = l / 4, t = l % 4;
  for (int i = 0; i < 4; i++) d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc[i];
}

// block (32), grid (1); f16: the f16 instruction, else bf16
MLC_KERNEL MLC_LAUNCH_BOUNDS(32)
mma16816(const float *MLC_RESTRICT a, const float *MLC_RESTRICT b, float *MLC_RESTRICT d, int f16) {
  MLC_SHARED uint16_t as[256];
  MLC_SHARED uint16_t bs[128];
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  mma_stage(a, b, as, bs, f16);
  MLC_BARRIER();
  if (f16) mlc_mma_f16(acc, as, 16, 1, bs, 8, 1);
  else mlc_mma_bf16(acc, as, 16, 1, bs, 8, 1);
  mma_store(d, acc);
}
MLC_ENTRY4(mma16816, const float *, const float *, float *, int)

MLC_KERNEL MLC_LAUNCH_BOUNDS(32)
mma_swapped(const float *MLC_RESTRICT a, const float *MLC_RESTRICT b, float *MLC_RESTRICT d) {
  MLC_SHARED uint16_t as[256];
  MLC_SHARED uint16_t bs[128];
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  uint32_t af[4], bf[2], x;
  mma_stage(a, b, as, bs, 0);
  MLC_BARRIER();
  mlc_mma_frags(as, 16, 1, bs, 8, 1, af, bf);
  x = af[1], af[1] = af[2], af[2] = x;
  mlc_mma_sync_bf16(acc, af, bf);
  mma_store(d, acc);
}
MLC_ENTRY3(mma_swapped, const float *, const float *, float *)
