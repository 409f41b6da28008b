// philox.h — Philox-4x32-10 (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3"), the one random-number function of mlc.
//
// A draw is a pure function of a 128-bit counter and a 64-bit key, so every
// consumer — the graph interpreter, the kernel-IR evaluator, the runtime and
// generated code — produces the same numbers for the same (key, counter),
// and a checkpoint saves a stream as two integers. Header-only so that the
// compiler, the runtime and the CUDA kernels use this exact text: NVRTC gets
// it as an in-memory header (kernels/cuda/mlc_cuda.h includes it, after
// defining the integer types NVRTC lacks, and MLC_PHILOX_FN as a device
// function); the LLVM backend emits the same rounds as IR (llvm_kernel.c).
#ifndef MLC_PHILOX_H
#define MLC_PHILOX_H

#ifndef __CUDACC__
#include <stdint.h>
#endif
#ifndef MLC_PHILOX_FN
#define MLC_PHILOX_FN static inline
#endif

// Ten rounds over counter (c0..c3) with key (k0, k1); all four output words.
MLC_PHILOX_FN void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                 uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

// The first output word for key and counter (a lo, a hi, b lo, b hi).
MLC_PHILOX_FN uint32_t philox_word(uint64_t key, uint64_t a, uint64_t b) {
  uint32_t ctr[4] = {(uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b,
                     (uint32_t)(b >> 32)};
  uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)}, o[4];
  philox4x32_10(ctr, k, o);
  return o[0];
}

// A uniform in [0, 1) with 24 bits, as dropout draws it: element `index` of
// a dropout node with seed `seed`, in the run's step stream `stream`.
MLC_PHILOX_FN double philox_uniform24(uint64_t seed, uint64_t index,
                                      uint64_t stream) {
  return (double)(philox_word(seed, index, stream) >> 8) * 0x1p-24;
}

#endif
