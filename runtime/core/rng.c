// rng.c — counter-based random numbers: Philox-4x32-10, the runtime's one
// generator, and what is drawn from it (dropout masks, shuffles, init).
//
// A counter-based generator has no hidden state: a draw is a pure function of
// (key, counter), so a checkpoint saves the stream as two integers and a
// resumed run continues it exactly. Dropout masks use the same function as
// the reference interpreter (compiler/graph/interp.c, interp_dropout_scale), so a
// compiled model's masks can be checked against it element by element.
//
// Streams (key, counter words c0 c1 c2 c3):
//   run stream    key = seed;            counter = (n lo, n hi, 0, 0)      mlc_rng_next
//   shuffle       key = seed ^ SHUFFLE;  counter = (i lo, i hi, epoch lo, epoch hi)
//   init tensor t key = seed ^ INIT;     counter = (j lo, j hi, t, 0)
//   dropout       key = node seed;       counter = (index lo, index hi, step seed lo, hi)
#include <math.h>
#include <string.h>

#include "rng.h"
#include "kernels/philox.h"

enum {
  SHUFFLE_TAG = 0x5348554Bu, // "SHUK"
  INIT_TAG = 0x494E4954u,    // "INIT"
};

void mlc_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  philox4x32_10(ctr, key, out);
}

// The first two words of Philox(key, (a lo, a hi, b lo, b hi)) as one u64.
static uint64_t draw(uint64_t key, uint64_t a, uint64_t b) {
  uint32_t ctr[4] = {(uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b, (uint32_t)(b >> 32)};
  uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)}, o[4];
  mlc_philox(ctr, k, o);
  return (uint64_t)o[0] | (uint64_t)o[1] << 32;
}

double mlc_dropout_scale(uint64_t seed, uint64_t rng_seed, uint64_t index, double p) {
  return philox_uniform24(seed, index, rng_seed) >= p ? 1 / (1 - p) : 0;
}

MlcRng mlc_rng_new(uint64_t seed) { return (MlcRng){.key = seed, .counter = 0}; }

uint64_t mlc_rng_next(MlcRng *r) { return draw(r->key, r->counter++, 0); }

double mlc_rng_uniform(MlcRng *r) { return (double)(mlc_rng_next(r) >> 11) * 0x1p-53; }

uint64_t mlc_rng_step_seed(MlcRng *r) { return mlc_rng_next(r); }

void mlc_permutation(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm) {
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    uint64_t r = draw(seed ^ SHUFFLE_TAG, (uint64_t)i, (uint64_t)epoch);
    int64_t j = (int64_t)(r % (uint64_t)(i + 1)); // bias < 2^-40 for n < 2^24
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

// ---- initialisation ------------------------------------------------------------------

typedef struct InitStream {
  uint64_t key, tensor, j;
} InitStream;

static double uni(InitStream *s) {
  return (double)(draw(s->key, s->j++, s->tensor) >> 11) * 0x1p-53;
}

// Box-Muller, cosine branch only: two uniform draws per value.
static double gauss(InitStream *s) {
  double u1 = uni(s), u2 = uni(s);
  return sqrt(-2 * log(1 - u1)) * cos(2 * M_PI * u2);
}

static int64_t numel(const MlcStateDesc *d) {
  int64_t n = 1;
  for (int k = 0; k < d->rank; k++) n *= d->shape[k];
  return n;
}

// N(mean, std^2) conditioned on [low, high], by redrawing: the law of
// torch.nn.init.trunc_normal_ (which inverts the CDF instead, so the values
// differ, not their distribution). A window holding under ~1e-4 of the
// mass (far in a tail) would need too many draws: after 10^4 misses the
// value is drawn uniformly in the window, where the conditioned density is
// nearly flat anyway (docs/language.md, section 5).
static double trunc_gauss(const MlcInit *in, InitStream *s) {
  for (int tries = 0; tries < 10000; tries++) {
    double v = in->mean + in->std * gauss(s);
    if (v >= in->low && v <= in->high) return v;
  }
  return in->low + (in->high - in->low) * uni(s);
}

static double draw_init(const MlcInit *in, InitStream *s) {
  double gain = in->gain ? in->gain : 1;
  double fan = (double)(in->mode == MLC_FAN_OUT ? in->fan_out : in->fan_in);
  double fsum = (double)(in->fan_in + in->fan_out);
  if (fan <= 0) fan = 1;
  if (fsum <= 0) fsum = 1;
  switch (in->kind) {
  case MLC_INIT_ZEROS: return 0;
  case MLC_INIT_ONES: return 1;
  case MLC_INIT_CONSTANT: return in->value;
  case MLC_INIT_NORMAL: return in->mean + in->std * gauss(s);
  case MLC_INIT_UNIFORM: return in->low + (in->high - in->low) * uni(s);
  case MLC_INIT_KAIMING_UNIFORM: {
    double b = gain * sqrt(3 / fan);
    return -b + 2 * b * uni(s);
  }
  case MLC_INIT_KAIMING_NORMAL: return gain / sqrt(fan) * gauss(s);
  case MLC_INIT_XAVIER_UNIFORM: {
    double b = gain * sqrt(6 / fsum);
    return -b + 2 * b * uni(s);
  }
  case MLC_INIT_XAVIER_NORMAL: return gain * sqrt(2 / fsum) * gauss(s);
  case MLC_INIT_TRUNC_NORMAL: return trunc_gauss(in, s);
  }
  return 0;
}

static void store(MlcDType dt, void *base, int64_t j, double v) {
  switch (dt) {
  case MLC_F32: ((float *)base)[j] = (float)v; break;
  case MLC_F64: ((double *)base)[j] = v; break;
  case MLC_I32: ((int32_t *)base)[j] = (int32_t)v; break;
  case MLC_I64: ((int64_t *)base)[j] = (int64_t)v; break;
  case MLC_U8:
  case MLC_BOOL: ((uint8_t *)base)[j] = (uint8_t)v; break;
  }
}

void mlc_init_state(const MlcModel *m, uint64_t seed, void *const *state) {
  for (int t = 0; t < m->nstates; t++) {
    const MlcStateDesc *d = &m->states[t];
    InitStream s = {seed ^ INIT_TAG, (uint64_t)t, 0};
    int64_t n = numel(d);
    for (int64_t j = 0; j < n; j++) store(d->dtype, state[t], j, draw_init(&d->init, &s));
  }
}
