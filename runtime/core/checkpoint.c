// checkpoint.c — training checkpoints and weight files as safetensors.
//
// Tensors: every state tensor of the model under its path (parameters,
// buffers, optimizer state), in its own dtype and shape, so a PyTorch user
// can load the weights with safetensors.torch.load_file. __metadata__ keys:
//   mlc.format    "1"
//   mlc.model     model name            mlc.hash      structural hash
//   mlc.compiler  compiler version      mlc.seed      the run's seed
//   mlc.epoch     loader epoch (0-based) mlc.pos     samples consumed in it
//   mlc.step      train_step calls done mlc.lr        base learning rate
//   mlc.rng_key / mlc.rng_counter       the Philox stream
//   mlc.checksum  CRC-32 (hex) over every tensor's name, NUL and bytes, in
//                 name order — a flipped bit in the data is caught here, the
//                 header by the safetensors validator.
// The schedule is a function of (step, steps_per_epoch, lr), so epoch/step
// are the schedule state. Writing goes through mlc_st_save: temporary file,
// fsync, rename, fsync of the directory, so a crash leaves the old file or
// the new one, never half of one.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "mlc_rt.h"
#include "rt_util.h"
#include "safetensors.h"

static MlcStDType st_dtype(MlcDType dt) {
  switch (dt) {
  case MLC_F32: return MLC_ST_F32;
  case MLC_F64: return MLC_ST_F64;
  case MLC_I32: return MLC_ST_I32;
  case MLC_I64: return MLC_ST_I64;
  case MLC_U8: return MLC_ST_U8;
  case MLC_BOOL: return MLC_ST_BOOL;
  }
  return MLC_ST_F32;
}

static size_t state_bytes(const MlcStateDesc *d) {
  size_t n = mlc_dtype_size(d->dtype);
  for (int k = 0; k < d->rank; k++) n *= (size_t)d->shape[k];
  return n;
}

static uint32_t checksum(const MlcSt *st) {
  uLong c = crc32(0L, Z_NULL, 0);
  for (int i = 0; i < mlc_st_count(st); i++) {
    const MlcStTensor *t = mlc_st_at(st, i);
    c = crc32(c, (const Bytef *)t->name, (uInt)strlen(t->name) + 1);
    const Bytef *p = t->data;
    for (size_t off = 0; off < t->nbytes; off += 1u << 30) {
      size_t n = t->nbytes - off < (1u << 30) ? t->nbytes - off : 1u << 30;
      c = crc32(c, p + off, (uInt)n);
    }
  }
  return (uint32_t)c;
}

static int meta(MlcSt *st, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int meta(MlcSt *st, const char *key, const char *fmt, ...) {
  char v[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v, sizeof v, fmt, ap);
  va_end(ap);
  return mlc_st_set_metadata(st, key, v, NULL, 0);
}

int mlc_ckpt_save(const char *path, const MlcModel *m, void *const *state, const MlcRunState *rs,
                  char *err, size_t errlen) {
  MlcSt *st = mlc_st_new();
  if (!st) return rt_err(err, errlen, "%s: out of memory", path);
  int bad = 0;
  for (int i = 0; i < m->nstates && !bad; i++) {
    const MlcStateDesc *d = &m->states[i];
    bad = mlc_st_add(st, d->path, st_dtype(d->dtype), d->rank, d->shape, state[i], err, errlen);
  }
  if (!bad) {
    bad |= meta(st, "mlc.format", "1") | meta(st, "mlc.model", "%s", m->name);
    bad |= meta(st, "mlc.hash", "%s", m->hash) | meta(st, "mlc.compiler", "%s", m->compiler);
    bad |= meta(st, "mlc.checksum", "%08" PRIx32, checksum(st));
    if (rs) {
      bad |= meta(st, "mlc.seed", "%" PRIu64, rs->seed) | meta(st, "mlc.epoch", "%" PRId64, rs->epoch);
      bad |= meta(st, "mlc.pos", "%" PRId64, rs->pos) | meta(st, "mlc.step", "%" PRId64, rs->step);
      bad |= meta(st, "mlc.lr", "%.17g", rs->lr);
      bad |= meta(st, "mlc.rng_key", "%" PRIu64, rs->rng.key);
      bad |= meta(st, "mlc.rng_counter", "%" PRIu64, rs->rng.counter);
    }
    if (bad) rt_err(err, errlen, "%s: cannot set checkpoint metadata", path);
  }
  if (!bad) bad = mlc_st_save(st, path, err, errlen);
  mlc_st_close(st);
  return bad ? -1 : 0;
}

// Reads an integer metadata entry; -1 when absent or malformed.
static int meta_u64(const MlcSt *st, const char *key, uint64_t *out) {
  const char *v = mlc_st_metadata(st, key);
  char *end;
  if (!v || !*v) return -1;
  *out = strtoull(v, &end, 10);
  return *end ? -1 : 0;
}

static int read_run_state(const MlcSt *st, const char *path, MlcRunState *rs, char *err,
                          size_t errlen) {
  uint64_t e, p, s, k, c, seed;
  const char *lr = mlc_st_metadata(st, "mlc.lr");
  if (meta_u64(st, "mlc.epoch", &e) || meta_u64(st, "mlc.pos", &p) || meta_u64(st, "mlc.step", &s) ||
      meta_u64(st, "mlc.rng_key", &k) || meta_u64(st, "mlc.rng_counter", &c) ||
      meta_u64(st, "mlc.seed", &seed) || !lr)
    return rt_err(err, errlen, "%s: not a training checkpoint (no run state: epoch, step, RNG, "
                  "loader cursor); it holds weights only", path);
  *rs = (MlcRunState){.epoch = (int64_t)e, .pos = (int64_t)p, .step = (int64_t)s,
                      .rng = {k, c}, .seed = seed, .lr = strtod(lr, NULL)};
  return 0;
}

// Checks model identity and the checksum of an mlc file.
static int check_identity(const MlcSt *st, const char *path, const MlcModel *m, char *err,
                          size_t errlen) {
  const char *hash = mlc_st_metadata(st, "mlc.hash"), *name = mlc_st_metadata(st, "mlc.model");
  const char *sum = mlc_st_metadata(st, "mlc.checksum");
  if (strcmp(hash, m->hash))
    return rt_err(err, errlen, "%s: checkpoint of another model (%s, hash %s); this program is %s, "
                  "hash %s", path, name ? name : "?", hash, m->name, m->hash);
  char want[16];
  snprintf(want, sizeof want, "%08" PRIx32, checksum(st));
  if (!sum || strcmp(sum, want))
    return rt_err(err, errlen, "%s: corrupted: checksum %s recorded, the data gives %s", path,
                  sum ? sum : "(none)", want);
  return 0;
}

// Checks tensor d against the file; copies it to dst unless dst is NULL.
static int copy_tensor(const MlcSt *st, const char *path, const MlcStateDesc *d, void *dst,
                       char *err, size_t errlen) {
  const MlcStTensor *t = mlc_st_find(st, d->path);
  if (!t) return rt_err(err, errlen, "%s: tensor '%s' is missing", path, d->path);
  bool same = t->dtype == st_dtype(d->dtype) && t->rank == d->rank;
  for (int k = 0; same && k < d->rank; k++) same = t->shape[k] == d->shape[k];
  if (!same) {
    char have[128], want[128];
    int o = snprintf(have, sizeof have, "%s[", mlc_st_dtype_name(t->dtype));
    for (int k = 0; k < t->rank; k++) o += snprintf(have + o, sizeof have - (size_t)o, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
    snprintf(have + o, sizeof have - (size_t)o, "]");
    o = snprintf(want, sizeof want, "%s[", mlc_st_dtype_name(st_dtype(d->dtype)));
    for (int k = 0; k < d->rank; k++) o += snprintf(want + o, sizeof want - (size_t)o, "%s%lld", k ? ", " : "", (long long)d->shape[k]);
    snprintf(want + o, sizeof want - (size_t)o, "]");
    return rt_err(err, errlen, "%s: tensor '%s' is %s, but the model's is %s", path, d->path, have, want);
  }
  if (dst) memcpy(dst, t->data, state_bytes(d));
  return 0;
}

int mlc_ckpt_load(const char *path, const MlcModel *m, void *const *state, bool weights_only,
                  MlcRunState *rs, char *err, size_t errlen) {
  MlcSt *st = mlc_st_open(path, err, errlen);
  if (!st) return -1;
  int rc = 0;
  bool ours = mlc_st_metadata(st, "mlc.hash") != NULL;
  if (ours) rc = check_identity(st, path, m, err, errlen);
  else if (!weights_only)
    rc = rt_err(err, errlen, "%s: not an mlc checkpoint (no mlc.hash in its metadata)", path);
  if (!rc && !weights_only && rs) rc = read_run_state(st, path, rs, err, errlen);
  // Two passes: a refused file leaves the state untouched.
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; !rc && i < m->nstates; i++) {
      const MlcStateDesc *d = &m->states[i];
      if (weights_only && d->kind == MLC_STATE_OPTIM) continue;
      rc = copy_tensor(st, path, d, pass ? state[i] : NULL, err, errlen);
    }
  mlc_st_close(st);
  return rc;
}
