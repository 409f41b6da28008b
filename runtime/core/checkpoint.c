// checkpoint.c — training checkpoints and weight files as safetensors
// (checkpoint.h).
//
// Tensors: every state tensor of the model under its path (parameters,
// buffers, optimizer state), in its own dtype and shape, so a PyTorch user
// can load the weights with safetensors.torch.load_file. __metadata__ keys:
//   mlc.format    "2"
//   mlc.model     model name            mlc.hash      structural hash
//   mlc.compiler  compiler version      mlc.seed      the run's seed
//   mlc.epoch     loader epoch (0-based) mlc.pos     samples consumed in it
//   mlc.step      train_step calls done mlc.lr        base learning rate
//   mlc.rng_key / mlc.rng_counter       the Philox stream
//   mlc.batch     samples per step      mlc.data / mlc.data_crc  the training
//                                       files and a CRC-32 of their content
//   mlc.checksum  CRC-32 (hex) of the whole content: every other metadata
//                 entry (key and value, in key order), then every tensor's
//                 name, dtype, shape and bytes in name order. A flipped bit
//                 anywhere that still parses changes one of those; one that
//                 does not parse is caught by the safetensors validator.
// Loading range-checks every run-state field and names the field it
// refuses. The schedule is a function of (step, steps_per_epoch, lr), so
// epoch/step are the schedule state. Writing goes through mlc_st_save:
// temporary file, fsync, rename, fsync of the directory, so a crash leaves
// the old file or the new one, never half of one.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "checkpoint.h"
#include "mlc_rt.h"
#include "rt_util.h"
#include "safetensors.h"

#define FORMAT "2"

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

static uLong crc_bytes(uLong c, const void *p, size_t n) {
  const Bytef *b = p;
  for (size_t off = 0; off < n; off += 1u << 30) {
    size_t k = n - off < (1u << 30) ? n - off : 1u << 30;
    c = crc32(c, b + off, (uInt)k);
  }
  return c;
}

static uLong crc_str(uLong c, const char *s) { return crc_bytes(c, s, strlen(s) + 1); }

// The checksum of everything in st but mlc.checksum itself.
static uint32_t checksum(const MlcSt *st) {
  uLong c = crc32(0L, Z_NULL, 0);
  for (int i = 0; i < mlc_st_metadata_count(st); i++) {
    const char *k, *v;
    mlc_st_metadata_at(st, i, &k, &v);
    if (strcmp(k, "mlc.checksum")) c = crc_str(crc_str(c, k), v);
  }
  for (int i = 0; i < mlc_st_count(st); i++) {
    const MlcStTensor *t = mlc_st_at(st, i);
    unsigned char hdr[1 + 8 * MLC_ST_MAX_RANK] = {(unsigned char)t->rank};
    for (int k = 0; k < t->rank; k++)
      for (int j = 0; j < 8; j++) hdr[1 + 8 * k + j] = (unsigned char)((uint64_t)t->shape[k] >> 8 * j);
    c = crc_str(crc_str(c, t->name), mlc_st_dtype_name(t->dtype));
    c = crc_bytes(crc_bytes(c, hdr, 1 + 8 * (size_t)t->rank), t->data, t->nbytes);
  }
  return (uint32_t)c;
}

static int meta(MlcSt *st, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int meta(MlcSt *st, const char *key, const char *fmt, ...) {
  char v[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v, sizeof v, fmt, ap);
  va_end(ap);
  return mlc_st_set_metadata(st, key, v, NULL, 0);
}

static int run_state_meta(MlcSt *st, const MlcRunState *rs) {
  int bad = meta(st, "mlc.seed", "%" PRIu64, rs->seed) | meta(st, "mlc.epoch", "%" PRId64, rs->epoch);
  bad |= meta(st, "mlc.pos", "%" PRId64, rs->pos) | meta(st, "mlc.step", "%" PRId64, rs->step);
  bad |= meta(st, "mlc.lr", "%.17g", rs->lr);
  bad |= meta(st, "mlc.rng_key", "%" PRIu64, rs->rng.key);
  bad |= meta(st, "mlc.rng_counter", "%" PRIu64, rs->rng.counter);
  if (rs->batch > 0) bad |= meta(st, "mlc.batch", "%" PRId64, rs->batch);
  if (rs->data[0])
    bad |= meta(st, "mlc.data", "%s", rs->data) | meta(st, "mlc.data_crc", "%08" PRIx32, rs->data_crc);
  return bad;
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
    bad |= meta(st, "mlc.format", FORMAT) | meta(st, "mlc.model", "%s", m->name);
    bad |= meta(st, "mlc.hash", "%s", m->hash) | meta(st, "mlc.compiler", "%s", m->compiler);
    if (rs) bad |= run_state_meta(st, rs);
    if (!bad) bad |= meta(st, "mlc.checksum", "%08" PRIx32, checksum(st));
    if (bad) rt_err(err, errlen, "%s: cannot set checkpoint metadata", path);
  }
  if (!bad) bad = mlc_st_save(st, path, err, errlen);
  mlc_st_close(st);
  return bad ? -1 : 0;
}

// ---- loading -----------------------------------------------------------------------

// Metadata `key` as a decimal integer in [0, max] (digits only); -1 with a
// message naming the field when it is absent, malformed or out of range.
static int meta_uint(const MlcSt *st, const char *path, const char *key, uint64_t max,
                     uint64_t *out, char *err, size_t errlen) {
  const char *v = mlc_st_metadata(st, key);
  if (!v) return rt_err(err, errlen, "%s: %s is missing", path, key);
  uint64_t x = 0;
  bool ok = *v != 0 && strlen(v) <= 20;
  for (const char *p = v; ok && *p; p++) {
    unsigned d = (unsigned)(*p - '0');
    ok = d <= 9 && x <= (UINT64_MAX - d) / 10;
    x = x * 10 + d;
  }
  if (!ok) return rt_err(err, errlen, "%s: %s = '%s' is not a decimal integer", path, key, v);
  if (x > max)
    return rt_err(err, errlen, "%s: %s = %" PRIu64 " is out of range (0..%" PRIu64 ")", path, key, x,
                  max);
  *out = x;
  return 0;
}

// mlc.lr: a positive finite number.
static int meta_lr(const MlcSt *st, const char *path, double *lr, char *err, size_t errlen) {
  const char *v = mlc_st_metadata(st, "mlc.lr");
  char *end;
  if (!v) return rt_err(err, errlen, "%s: mlc.lr is missing", path);
  *lr = strtod(v, &end);
  if (!*v || *end || !isfinite(*lr) || !(*lr > 0))
    return rt_err(err, errlen, "%s: mlc.lr = '%s' is not a positive finite number", path, v);
  return 0;
}

static int read_data_id(const MlcSt *st, const char *path, MlcRunState *rs, char *err,
                        size_t errlen) {
  uint64_t b = 0, crc = 0;
  if (mlc_st_metadata(st, "mlc.batch") &&
      meta_uint(st, path, "mlc.batch", (uint64_t)MLC_MAX_BATCH, &b, err, errlen))
    return -1;
  if (mlc_st_metadata(st, "mlc.batch") && !b) return rt_err(err, errlen, "%s: mlc.batch is 0", path);
  rs->batch = (int64_t)b;
  const char *d = mlc_st_metadata(st, "mlc.data"), *c = mlc_st_metadata(st, "mlc.data_crc");
  if (!d) return 0;
  char *end;
  if (c) crc = strtoull(c, &end, 16);
  if (!c || strlen(c) != 8 || *end)
    return rt_err(err, errlen, "%s: mlc.data_crc is %s", path, c ? "not 8 hex digits" : "missing");
  snprintf(rs->data, sizeof rs->data, "%s", d);
  rs->data_crc = (uint32_t)crc;
  return 0;
}

static int read_run_state(const MlcSt *st, const char *path, MlcRunState *rs, char *err,
                          size_t errlen) {
  if (!mlc_st_metadata(st, "mlc.step"))
    return rt_err(err, errlen, "%s: not a training checkpoint (no run state: epoch, step, RNG, "
                  "loader cursor); it holds weights only", path);
  uint64_t e, p, s, k, c, seed;
  *rs = (MlcRunState){0};
  if (meta_uint(st, path, "mlc.epoch", (uint64_t)MLC_CKPT_MAX_EPOCH, &e, err, errlen) ||
      meta_uint(st, path, "mlc.pos", (uint64_t)INT64_MAX / 2, &p, err, errlen) ||
      meta_uint(st, path, "mlc.step", (uint64_t)MLC_CKPT_MAX_STEP, &s, err, errlen) ||
      meta_uint(st, path, "mlc.rng_key", UINT64_MAX, &k, err, errlen) ||
      meta_uint(st, path, "mlc.rng_counter", UINT64_MAX, &c, err, errlen) ||
      meta_uint(st, path, "mlc.seed", UINT64_MAX, &seed, err, errlen) ||
      meta_lr(st, path, &rs->lr, err, errlen) || read_data_id(st, path, rs, err, errlen))
    return -1;
  rs->epoch = (int64_t)e, rs->pos = (int64_t)p, rs->step = (int64_t)s;
  rs->rng = (MlcRng){k, c}, rs->seed = seed;
  return 0;
}

// Whether st was written by mlc: any "mlc." metadata key (so a file whose
// mlc.hash key lost a bit is still judged as an mlc file, and refused).
static bool is_ours(const MlcSt *st) {
  for (int i = 0; i < mlc_st_metadata_count(st); i++) {
    const char *k, *v;
    mlc_st_metadata_at(st, i, &k, &v);
    if (!strncmp(k, "mlc.", 4)) return true;
  }
  return false;
}

// Checks the format, the checksum and the model identity of an mlc file,
// in that order (a corrupted file is called corrupted, an intact file of
// another model another model's).
static int check_identity(const MlcSt *st, const char *path, const MlcModel *m, char *err,
                          size_t errlen) {
  const char *hash = mlc_st_metadata(st, "mlc.hash"), *name = mlc_st_metadata(st, "mlc.model");
  const char *sum = mlc_st_metadata(st, "mlc.checksum"), *fmt = mlc_st_metadata(st, "mlc.format");
  if (!fmt || strcmp(fmt, FORMAT))
    return rt_err(err, errlen, "%s: checkpoint format %s; this program reads format " FORMAT, path,
                  fmt ? fmt : "(none)");
  char want[16];
  snprintf(want, sizeof want, "%08" PRIx32, checksum(st));
  if (!sum || strcmp(sum, want))
    return rt_err(err, errlen, "%s: corrupted: checksum %s recorded, the content gives %s", path,
                  sum ? sum : "(none)", want);
  if (!hash || strcmp(hash, m->hash))
    return rt_err(err, errlen, "%s: checkpoint of another model (%s, hash %s); this program is %s, "
                  "hash %s", path, name ? name : "?", hash ? hash : "(none)", m->name, m->hash);
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
    char have[192], want[192];
    rt_shape_str(have, sizeof have, mlc_st_dtype_name(t->dtype), t->rank, t->shape);
    rt_shape_str(want, sizeof want, mlc_st_dtype_name(st_dtype(d->dtype)), d->rank, d->shape);
    return rt_err(err, errlen, "%s: tensor '%s' is %s, but the model's is %s", path, d->path, have,
                  want);
  }
  if (dst) memcpy(dst, t->data, t->nbytes);
  return 0;
}

// A tensor name that matches no state means the file was written for
// another model (or under other names), even when every name the model
// needs is there.
static int check_names(const MlcSt *st, const char *path, const MlcModel *m, char *err,
                       size_t errlen) {
  for (int i = 0; i < mlc_st_count(st); i++) {
    const char *name = mlc_st_at(st, i)->name;
    bool known = false;
    for (int j = 0; !known && j < m->nstates; j++) known = !strcmp(name, m->states[j].path);
    if (!known)
      return rt_err(err, errlen, "%s: tensor '%s' is not a state of model %s", path, name, m->name);
  }
  return 0;
}

// Checks every wanted tensor, then copies them: a refused file leaves the
// state untouched.
static int copy_all(const MlcSt *st, const char *path, const MlcModel *m, void *const *state,
                    bool weights_only, char *err, size_t errlen) {
  int rc = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; !rc && i < m->nstates; i++) {
      const MlcStateDesc *d = &m->states[i];
      if (weights_only && d->kind == MLC_STATE_OPTIM) continue;
      rc = copy_tensor(st, path, d, pass ? state[i] : NULL, err, errlen);
    }
  return rc;
}

int mlc_ckpt_load(const char *path, const MlcModel *m, void *const *state, MlcRunState *rs,
                  char *err, size_t errlen) {
  MlcSt *st = mlc_st_open(path, err, errlen);
  if (!st) return -1;
  MlcRunState tmp;
  int rc = is_ours(st) ? check_identity(st, path, m, err, errlen)
                       : rt_err(err, errlen, "%s: not an mlc checkpoint (no mlc.* metadata)", path);
  if (!rc) rc = read_run_state(st, path, &tmp, err, errlen);
  if (!rc) rc = check_names(st, path, m, err, errlen);
  if (!rc) rc = copy_all(st, path, m, state, false, err, errlen);
  if (!rc && rs) *rs = tmp;
  mlc_st_close(st);
  return rc;
}

int mlc_load_weights(const char *path, const MlcModel *m, void *const *state, char *err,
                     size_t errlen) {
  MlcSt *st = mlc_st_open(path, err, errlen);
  if (!st) return -1;
  int rc = is_ours(st) ? check_identity(st, path, m, err, errlen) : 0;
  if (!rc) rc = check_names(st, path, m, err, errlen);
  if (!rc) rc = copy_all(st, path, m, state, true, err, errlen);
  mlc_st_close(st);
  return rc;
}
