// rand_data.h — the pseudo-random operands of the kernel tests: a
// xorshift64 stream (fixed seed, so every run sees the same data) of
// floats uniform in [-1, 1).
#ifndef MLC_TEST_RAND_DATA_H
#define MLC_TEST_RAND_DATA_H

#include <stdint.h>
#include <stdlib.h>

static uint64_t rng_state = 88172645463325252ull;

static inline float frand(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (float)((rng_state >> 40) * (2.0 / 16777216.0) - 1.0);
}

// n floats from the stream (at least one element is allocated).
static inline float *rand_buf(int64_t n) {
  float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = frand();
  return p;
}

#endif
