// rng.h — the runtime's random streams (rng.c), private to runtime/: the
// Philox generator, the run stream saved in checkpoints, dropout masks,
// shuffles and state initialisation.
#ifndef MLC_RT_RNG_H
#define MLC_RT_RNG_H

#include <stdint.h>

#include "mlc_model.h"

// Philox-4x32-10: out = the four words for counter ctr and key key. The same
// generator as the interpreter's dropout (compiler/graph/interp.c).
void mlc_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
// Keep/scale factor of element `index` of a dropout mask: 0 or 1/(1-p).
// Identical to interp_dropout_scale(seed, rng_seed, index, p): key = seed,
// counter = (index, rng_seed); u = (word0 >> 8) * 2^-24; kept iff u >= p.
double mlc_dropout_scale(uint64_t seed, uint64_t rng_seed, uint64_t index,
                         double p);
MlcRng mlc_rng_new(uint64_t seed);
uint64_t mlc_rng_next(MlcRng *r);  // one 64-bit draw; counter += 1
double mlc_rng_uniform(MlcRng *r); // [0, 1), 53 bits
// The per-step seed passed to dropout (ctx->step_seed): one draw.
uint64_t mlc_rng_step_seed(MlcRng *r);
// A random permutation of 0..n-1 for (seed, epoch): Fisher-Yates over a
// Philox stream keyed by seed with the epoch in the counter's high words.
void mlc_permutation(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm);
// Fills every state tensor from its MlcInit (f32/f64 draws; integer and
// bool tensors get zeros/ones/value). Tensor i draws from its own stream, so
// adding a tensor does not change the others.
void mlc_init_state(const MlcModel *m, uint64_t seed, void *const *state);

#endif
