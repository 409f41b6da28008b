// safetensors.c — the safetensors reader, validator and atomic writer
// (safetensors.h).
//
// Reading keeps the whole file in one malloc'd block; tensors point into its
// data region. Validation follows the format's own rules: a header length
// that fits in the file, a JSON object whose entries are tensors (dtype,
// shape, data_offsets, nothing else) or the string map "__metadata__", known
// dtypes, byte sizes equal to numel * itemsize, and data_offsets that, in
// offset order, tile the data region exactly from 0 to its end (no gaps, no
// overlaps, no trailing bytes). The header is parsed with cJSON.
//
// Writing lays tensors out in name order, metadata first in the header,
// pads the header with spaces so the data starts 8-byte aligned, and
// replaces the target file atomically (rt_write_atomic: PATH.tmp.PID,
// fsync, rename, fsync of the directory). Tensor bytes are stored as the host
// holds them: the host must be little-endian (checked at compile time).
#include "safetensors.h"
#include "rt_util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "safetensors data is little-endian; this host is not");

// The format's reference implementation refuses headers over 100 MB.
#define MAX_HEADER ((uint64_t)100 * 1000 * 1000)

typedef struct Entry {
  MlcStTensor t;
  char *name; // owned copy of t.name
  void *own;  // owned data (added tensors); NULL when t.data is in `blob`
} Entry;

struct MlcSt {
  Entry *ents; // sorted by name
  int n, cap;
  char **keys, **vals; // metadata, sorted by key
  int nmeta, metacap;
  unsigned char *blob; // the file read by mlc_st_open / mlc_st_parse
};

static const struct {
  const char *name;
  size_t size;
} dtypes[] = {
    [MLC_ST_F32] = {"F32", 4}, [MLC_ST_F64] = {"F64", 8},
    [MLC_ST_I32] = {"I32", 4}, [MLC_ST_I64] = {"I64", 8},
    [MLC_ST_U8] = {"U8", 1},   [MLC_ST_BOOL] = {"BOOL", 1},
    [MLC_ST_F16] = {"F16", 2}, [MLC_ST_BF16] = {"BF16", 2},
};
enum { NDTYPES = sizeof dtypes / sizeof dtypes[0] };

const char *mlc_st_dtype_name(MlcStDType dt) { return dtypes[dt].name; }
size_t mlc_st_dtype_size(MlcStDType dt) { return dtypes[dt].size; }

static int dtype_lookup(const char *s) {
  for (int i = 0; i < NDTYPES; i++)
    if (strcmp(dtypes[i].name, s) == 0) return i;
  return -1;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

// ---- the set ----------------------------------------------------------------

MlcSt *mlc_st_new(void) { return calloc(1, sizeof(MlcSt)); }

void mlc_st_close(MlcSt *st) {
  if (!st) return;
  for (int i = 0; i < st->n; i++) {
    free(st->ents[i].name);
    free(st->ents[i].own);
  }
  for (int i = 0; i < st->nmeta; i++) {
    free(st->keys[i]);
    free(st->vals[i]);
  }
  free(st->ents);
  free(st->keys);
  free(st->vals);
  free(st->blob);
  free(st);
}

int mlc_st_count(const MlcSt *st) { return st->n; }
const MlcStTensor *mlc_st_at(const MlcSt *st, int i) { return &st->ents[i].t; }

// Index of `name` in the sorted entries, or -(insertion point) - 1.
static int find_entry(const MlcSt *st, const char *name) {
  int lo = 0, hi = st->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2, c = strcmp(st->ents[mid].name, name);
    if (c == 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -lo - 1;
}

const MlcStTensor *mlc_st_find(const MlcSt *st, const char *name) {
  int i = find_entry(st, name);
  return i >= 0 ? &st->ents[i].t : NULL;
}

int mlc_st_metadata_count(const MlcSt *st) { return st->nmeta; }

void mlc_st_metadata_at(const MlcSt *st, int i, const char **key,
                        const char **value) {
  *key = st->keys[i];
  *value = st->vals[i];
}

const char *mlc_st_metadata(const MlcSt *st, const char *key) {
  for (int i = 0; i < st->nmeta; i++)
    if (strcmp(st->keys[i], key) == 0) return st->vals[i];
  return NULL;
}

int mlc_st_set_metadata(MlcSt *st, const char *key, const char *value,
                        char *err, size_t errlen) {
  int i = 0;
  while (i < st->nmeta && strcmp(st->keys[i], key) < 0) i++;
  char *v = xstrdup(value);
  if (!v) goto oom;
  if (i < st->nmeta && strcmp(st->keys[i], key) == 0) {
    free(st->vals[i]);
    st->vals[i] = v;
    return 0;
  }
  char *k = xstrdup(key);
  if (!k) {
    free(v);
    goto oom;
  }
  if (st->nmeta == st->metacap) {
    int cap = st->metacap ? 2 * st->metacap : 8;
    char **nk = realloc(st->keys, cap * sizeof *nk);
    if (nk) st->keys = nk;
    char **nv = realloc(st->vals, cap * sizeof *nv);
    if (nv) st->vals = nv;
    if (!nk || !nv) {
      free(k);
      free(v);
      goto oom;
    }
    st->metacap = cap;
  }
  memmove(st->keys + i + 1, st->keys + i, (st->nmeta - i) * sizeof *st->keys);
  memmove(st->vals + i + 1, st->vals + i, (st->nmeta - i) * sizeof *st->vals);
  st->keys[i] = k;
  st->vals[i] = v;
  st->nmeta++;
  return 0;
oom:
  seterr(err, errlen, "metadata '%s': out of memory", key);
  return -1;
}

// numel of a shape, or -1 if it (or its size in bytes) overflows int64.
static int64_t shape_numel(int rank, const int64_t *shape, size_t itemsize) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] != 0 && n > INT64_MAX / (int64_t)itemsize / shape[i])
      return -1;
    n *= shape[i];
  }
  return n;
}

// Inserts an entry for `name` (replacing one of the same name); data is
// either borrowed (own == NULL, points into the blob) or owned.
static int put_entry(MlcSt *st, const char *name, MlcStDType dt, int rank,
                     const int64_t *shape, int64_t numel, const void *data,
                     void *own) {
  int i = find_entry(st, name);
  if (i >= 0) {
    free(st->ents[i].own);
  } else {
    if (st->n == st->cap) {
      int cap = st->cap ? 2 * st->cap : 16;
      Entry *ne = realloc(st->ents, cap * sizeof *ne);
      if (!ne) return -1;
      st->ents = ne;
      st->cap = cap;
    }
    char *nm = xstrdup(name);
    if (!nm) return -1;
    i = -i - 1;
    memmove(st->ents + i + 1, st->ents + i, (st->n - i) * sizeof *st->ents);
    st->n++;
    memset(&st->ents[i], 0, sizeof st->ents[i]);
    st->ents[i].name = nm;
  }
  Entry *e = &st->ents[i];
  e->own = own;
  e->t.name = e->name;
  e->t.dtype = dt;
  e->t.rank = rank;
  memset(e->t.shape, 0, sizeof e->t.shape);
  if (rank) memcpy(e->t.shape, shape, rank * sizeof *shape);
  e->t.numel = numel;
  e->t.data = data;
  e->t.nbytes = (size_t)numel * dtypes[dt].size;
  return 0;
}

int mlc_st_add(MlcSt *st, const char *name, MlcStDType dt, int rank,
               const int64_t *shape, const void *data, char *err,
               size_t errlen) {
  if (!name[0] || strcmp(name, "__metadata__") == 0) {
    seterr(err, errlen, "tensor name '%s' is reserved or empty", name);
    return -1;
  }
  if ((unsigned)dt >= NDTYPES || rank < 0 || rank > MLC_ST_MAX_RANK) {
    seterr(err, errlen, "tensor '%s': bad dtype or rank %d", name, rank);
    return -1;
  }
  int64_t numel = shape_numel(rank, shape, dtypes[dt].size);
  if (numel < 0) {
    seterr(err, errlen, "tensor '%s': shape is negative or too large", name);
    return -1;
  }
  size_t nbytes = (size_t)numel * dtypes[dt].size;
  void *copy = nbytes ? malloc(nbytes) : calloc(1, 1);
  if (copy && nbytes) memcpy(copy, data, nbytes);
  if (!copy || put_entry(st, name, dt, rank, shape, numel, copy, copy)) {
    free(copy);
    seterr(err, errlen, "tensor '%s': out of memory", name);
    return -1;
  }
  return 0;
}

// ---- element conversion -------------------------------------------------------

static double half_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0) v = ldexp(man, -24); // subnormal
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = ldexp(man | 0x400, exp - 25);
  return sign ? -v : v;
}

void mlc_st_to_f64(const MlcStTensor *t, double *out) {
  const unsigned char *p = t->data;
  for (int64_t i = 0; i < t->numel; i++) {
    switch (t->dtype) {
    case MLC_ST_F32: { float f; memcpy(&f, p + 4 * i, 4); out[i] = f; break; }
    case MLC_ST_F64: memcpy(&out[i], p + 8 * i, 8); break;
    case MLC_ST_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
    case MLC_ST_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); out[i] = (double)v; break; }
    case MLC_ST_U8:
    case MLC_ST_BOOL: out[i] = p[i]; break;
    case MLC_ST_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); out[i] = half_to_double(h); break; }
    case MLC_ST_BF16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      uint32_t bits = (uint32_t)h << 16;
      float f;
      memcpy(&f, &bits, 4);
      out[i] = f;
      break;
    }
    }
  }
}

// ---- reading --------------------------------------------------------------------

// What parsing needs to say where a problem is.
typedef struct Reader {
  const char *label; // the file
  char *err;
  size_t errlen;
} Reader;

// A JSON number that is a non-negative integer below 2^53, as int64.
static bool json_uint(const cJSON *j, int64_t *out) {
  if (!cJSON_IsNumber(j)) return false;
  double d = j->valuedouble;
  if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return false;
  *out = (int64_t)d;
  return true;
}

static int read_shape(Reader *r, const char *name, const cJSON *js,
                      int *rank, int64_t *shape) {
  if (!cJSON_IsArray(js)) {
    seterr(r->err, r->errlen, "%s: tensor '%s': \"shape\" is not an array",
           r->label, name);
    return -1;
  }
  int n = cJSON_GetArraySize(js);
  if (n > MLC_ST_MAX_RANK) {
    seterr(r->err, r->errlen, "%s: tensor '%s': rank %d exceeds the limit %d",
           r->label, name, n, MLC_ST_MAX_RANK);
    return -1;
  }
  int i = 0;
  for (const cJSON *d = js->child; d; d = d->next, i++) {
    if (!json_uint(d, &shape[i])) {
      seterr(r->err, r->errlen,
             "%s: tensor '%s': shape[%d] is not a non-negative integer",
             r->label, name, i);
      return -1;
    }
  }
  *rank = n;
  return 0;
}

static int read_offsets(Reader *r, const char *name, const cJSON *jo,
                        int64_t off[2]) {
  if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2 ||
      !json_uint(jo->child, &off[0]) || !json_uint(jo->child->next, &off[1])) {
    seterr(r->err, r->errlen,
           "%s: tensor '%s': \"data_offsets\" is not [begin, end] of "
           "non-negative integers",
           r->label, name);
    return -1;
  }
  if (off[0] > off[1]) {
    seterr(r->err, r->errlen,
           "%s: tensor '%s': data_offsets [%lld, %lld] end before they begin",
           r->label, name, (long long)off[0], (long long)off[1]);
    return -1;
  }
  return 0;
}

// One parsed header entry before the layout check.
typedef struct Pending {
  const char *name;
  MlcStDType dt;
  int rank;
  int64_t shape[MLC_ST_MAX_RANK];
  int64_t numel;
  int64_t off[2];
} Pending;

static int read_entry(Reader *r, const cJSON *e, Pending *p) {
  const char *name = e->string;
  p->name = name;
  if (!name[0]) {
    seterr(r->err, r->errlen, "%s: a tensor has an empty name", r->label);
    return -1;
  }
  if (!cJSON_IsObject(e)) {
    seterr(r->err, r->errlen, "%s: tensor '%s': entry is not an object",
           r->label, name);
    return -1;
  }
  const cJSON *jd = NULL, *js = NULL, *jo = NULL;
  for (const cJSON *f = e->child; f; f = f->next) {
    if (strcmp(f->string, "dtype") == 0) jd = f;
    else if (strcmp(f->string, "shape") == 0) js = f;
    else if (strcmp(f->string, "data_offsets") == 0) jo = f;
    else {
      seterr(r->err, r->errlen, "%s: tensor '%s': unknown field \"%s\"",
             r->label, name, f->string);
      return -1;
    }
  }
  if (!jd || !js || !jo) {
    seterr(r->err, r->errlen, "%s: tensor '%s': missing \"%s\"", r->label,
           name, !jd ? "dtype" : !js ? "shape" : "data_offsets");
    return -1;
  }
  int dt = cJSON_IsString(jd) ? dtype_lookup(jd->valuestring) : -1;
  if (dt < 0) {
    seterr(r->err, r->errlen,
           "%s: tensor '%s': unknown dtype %s (expected F32, F64, I32, I64, "
           "U8, BOOL, F16 or BF16)",
           r->label, name, cJSON_IsString(jd) ? jd->valuestring : "(not a string)");
    return -1;
  }
  p->dt = (MlcStDType)dt;
  if (read_shape(r, name, js, &p->rank, p->shape)) return -1;
  if (read_offsets(r, name, jo, p->off)) return -1;
  p->numel = shape_numel(p->rank, p->shape, dtypes[dt].size);
  if (p->numel < 0) {
    seterr(r->err, r->errlen, "%s: tensor '%s': shape is too large", r->label,
           name);
    return -1;
  }
  int64_t need = p->numel * (int64_t)dtypes[dt].size;
  if (p->off[1] - p->off[0] != need) {
    char shp[160] = "";
    size_t k = 0;
    for (int i = 0; i < p->rank && k < sizeof shp - 24; i++)
      k += snprintf(shp + k, sizeof shp - k, "%s%lld", i ? ", " : "",
                    (long long)p->shape[i]);
    seterr(r->err, r->errlen,
           "%s: tensor '%s': data_offsets [%lld, %lld] hold %lld bytes, but "
           "%s [%s] needs %lld",
           r->label, name, (long long)p->off[0], (long long)p->off[1],
           (long long)(p->off[1] - p->off[0]), dtypes[dt].name, shp,
           (long long)need);
    return -1;
  }
  return 0;
}

static int read_metadata(Reader *r, MlcSt *st, const cJSON *m) {
  if (!cJSON_IsObject(m)) {
    seterr(r->err, r->errlen, "%s: \"__metadata__\" is not an object",
           r->label);
    return -1;
  }
  for (const cJSON *e = m->child; e; e = e->next) {
    if (!cJSON_IsString(e)) {
      seterr(r->err, r->errlen,
             "%s: metadata \"%s\" is not a string", r->label, e->string);
      return -1;
    }
    if (mlc_st_metadata(st, e->string)) {
      seterr(r->err, r->errlen, "%s: metadata \"%s\" appears twice", r->label,
             e->string);
      return -1;
    }
    if (mlc_st_set_metadata(st, e->string, e->valuestring, r->err, r->errlen))
      return -1;
  }
  return 0;
}

static int cmp_offsets(const void *a, const void *b) {
  const Pending *x = *(Pending *const *)a, *y = *(Pending *const *)b;
  if (x->off[0] != y->off[0]) return x->off[0] < y->off[0] ? -1 : 1;
  if (x->off[1] != y->off[1]) return x->off[1] < y->off[1] ? -1 : 1;
  return strcmp(x->name, y->name);
}

// The tensors, in offset order, must tile [0, datalen) exactly.
static int check_layout(Reader *r, Pending *ps, int n, uint64_t datalen) {
  Pending **ord = malloc((n ? n : 1) * sizeof *ord);
  if (!ord) {
    seterr(r->err, r->errlen, "%s: out of memory", r->label);
    return -1;
  }
  for (int i = 0; i < n; i++) ord[i] = &ps[i];
  qsort(ord, n, sizeof *ord, cmp_offsets);
  int64_t at = 0;
  int rc = -1;
  for (int i = 0; i < n; i++) {
    const Pending *p = ord[i];
    if (p->off[0] > at) {
      seterr(r->err, r->errlen,
             "%s: tensor '%s': data_offsets begin at %lld, leaving a gap "
             "after byte %lld",
             r->label, p->name, (long long)p->off[0], (long long)at);
      goto out;
    }
    if (p->off[0] < at) {
      seterr(r->err, r->errlen,
             "%s: tensor '%s': data_offsets [%lld, %lld] overlap tensor "
             "'%s' (which ends at %lld)",
             r->label, p->name, (long long)p->off[0], (long long)p->off[1],
             ord[i - 1]->name, (long long)at);
      goto out;
    }
    if ((uint64_t)p->off[1] > datalen) {
      seterr(r->err, r->errlen,
             "%s: tensor '%s': data_offsets [%lld, %lld] run past the end "
             "of the %llu-byte data region",
             r->label, p->name, (long long)p->off[0], (long long)p->off[1],
             (unsigned long long)datalen);
      goto out;
    }
    at = p->off[1];
  }
  if ((uint64_t)at != datalen) {
    seterr(r->err, r->errlen,
           "%s: the data region has %llu bytes but the tensors cover %lld",
           r->label, (unsigned long long)datalen, (long long)at);
    goto out;
  }
  rc = 0;
out:
  free(ord);
  return rc;
}

// BOOL tensors hold one byte per element, 0 or 1.
static int check_bools(Reader *r, const Pending *p, const unsigned char *d) {
  for (int64_t i = 0; i < p->numel; i++)
    if (d[i] > 1) {
      seterr(r->err, r->errlen,
             "%s: tensor '%s': BOOL element %lld is %d, not 0 or 1", r->label,
             p->name, (long long)i, d[i]);
      return -1;
    }
  return 0;
}

static int read_header(Reader *r, MlcSt *st, const cJSON *root,
                       const unsigned char *data, uint64_t datalen) {
  if (!cJSON_IsObject(root)) {
    seterr(r->err, r->errlen, "%s: the header is not a JSON object", r->label);
    return -1;
  }
  int n = cJSON_GetArraySize(root);
  Pending *ps = calloc(n ? n : 1, sizeof *ps);
  if (!ps) {
    seterr(r->err, r->errlen, "%s: out of memory", r->label);
    return -1;
  }
  int np = 0, rc = -1, nmeta = 0;
  for (const cJSON *e = root->child; e; e = e->next) {
    if (strcmp(e->string, "__metadata__") == 0) {
      if (nmeta++) {
        seterr(r->err, r->errlen, "%s: \"__metadata__\" appears twice",
               r->label);
        goto out;
      }
      if (read_metadata(r, st, e)) goto out;
      continue;
    }
    if (read_entry(r, e, &ps[np])) goto out;
    np++;
  }
  if (check_layout(r, ps, np, datalen)) goto out;
  for (int i = 0; i < np; i++) {
    Pending *p = &ps[i];
    if (mlc_st_find(st, p->name)) {
      seterr(r->err, r->errlen, "%s: tensor '%s' appears twice", r->label,
             p->name);
      goto out;
    }
    if (p->dt == MLC_ST_BOOL && check_bools(r, p, data + p->off[0])) goto out;
    if (put_entry(st, p->name, p->dt, p->rank, p->shape, p->numel,
                  data + p->off[0], NULL)) {
      seterr(r->err, r->errlen, "%s: out of memory", r->label);
      goto out;
    }
  }
  rc = 0;
out:
  free(ps);
  return rc;
}

// Parses and validates buf[0..len), which the new set takes ownership of.
static MlcSt *parse_owned(const char *label, unsigned char *buf, size_t len,
                          char *err, size_t errlen) {
  Reader r = {label, err, errlen};
  MlcSt *st = mlc_st_new();
  if (!st) {
    free(buf);
    seterr(err, errlen, "%s: out of memory", label);
    return NULL;
  }
  st->blob = buf;
  if (len < 8) {
    seterr(err, errlen,
           "%s: file is %zu bytes, too short for the 8-byte header length",
           label, len);
    goto fail;
  }
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | buf[i];
  if (hlen > MAX_HEADER) {
    seterr(err, errlen, "%s: header length %llu exceeds the limit of %llu",
           label, (unsigned long long)hlen, (unsigned long long)MAX_HEADER);
    goto fail;
  }
  if (hlen > len - 8) {
    seterr(err, errlen,
           "%s: header length %llu exceeds the %zu bytes that follow it",
           label, (unsigned long long)hlen, len - 8);
    goto fail;
  }
  const char *hdr = (const char *)buf + 8, *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(hdr, hlen, &end, 0);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    long off = at && at >= hdr && at <= hdr + hlen ? (long)(at - hdr) : -1;
    seterr(err, errlen,
           "%s: the header is not valid JSON (parsing stopped at byte %ld of "
           "the file; the header is bytes 8 to %llu)",
           label, off >= 0 ? off + 8 : off, (unsigned long long)hlen + 8);
    goto fail;
  }
  for (const char *p = end; p < hdr + hlen; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      seterr(err, errlen,
             "%s: unexpected bytes after the header's JSON object (byte %ld)",
             label, (long)(p - hdr) + 8);
      cJSON_Delete(root);
      goto fail;
    }
  int rc = read_header(&r, st, root, buf + 8 + hlen, len - 8 - hlen);
  cJSON_Delete(root);
  if (rc) goto fail;
  return st;
fail:
  mlc_st_close(st);
  return NULL;
}

MlcSt *mlc_st_parse(const char *label, const void *buf, size_t len, char *err,
                    size_t errlen) {
  unsigned char *copy = malloc(len ? len : 1);
  if (!copy) {
    seterr(err, errlen, "%s: out of memory", label);
    return NULL;
  }
  if (len) memcpy(copy, buf, len);
  return parse_owned(label, copy, len, err, errlen);
}

MlcSt *mlc_st_open(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    seterr(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
    seterr(err, errlen, "%s: not a regular file", path);
    fclose(f);
    return NULL;
  }
  size_t len = (size_t)sb.st_size;
  unsigned char *buf = malloc(len ? len : 1);
  if (!buf || fread(buf, 1, len, f) != len) {
    seterr(err, errlen, "%s: %s", path, buf ? "read failed" : "out of memory");
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  return parse_owned(path, buf, len, err, errlen);
}

// ---- writing ----------------------------------------------------------------------

// The header JSON, unpadded (malloc'd), or NULL when out of memory.
static char *build_header(const MlcSt *st) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  bool ok = true;
  if (st->nmeta) {
    cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
    ok = m != NULL;
    for (int i = 0; ok && i < st->nmeta; i++)
      ok = cJSON_AddStringToObject(m, st->keys[i], st->vals[i]) != NULL;
  }
  uint64_t at = 0;
  for (int i = 0; ok && i < st->n; i++) {
    const MlcStTensor *t = &st->ents[i].t;
    cJSON *e = cJSON_AddObjectToObject(root, t->name);
    cJSON *shape = cJSON_CreateArray(), *offs = cJSON_CreateArray();
    ok = e && shape && offs &&
         cJSON_AddStringToObject(e, "dtype", dtypes[t->dtype].name);
    for (int k = 0; ok && k < t->rank; k++)
      ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[k]));
    ok = ok && cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)at)) &&
         cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(at + t->nbytes)));
    if (ok) {
      cJSON_AddItemToObject(e, "shape", shape);
      cJSON_AddItemToObject(e, "data_offsets", offs);
    } else {
      cJSON_Delete(shape);
      cJSON_Delete(offs);
    }
    at += t->nbytes;
  }
  char *s = ok ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  return s;
}

typedef struct Body {
  const MlcSt *st;
  const char *hdr;
} Body;

// Writes header and data to an open file descriptor (rt_write_atomic's body).
static int write_body(int fd, void *vp) {
  const Body *b = vp;
  const MlcSt *st = b->st;
  size_t n = strlen(b->hdr), padded = (n + 7) / 8 * 8;
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  if (rt_write_all(fd, len8, 8) || rt_write_all(fd, b->hdr, n)) return -1;
  if (rt_write_all(fd, "        ", padded - n)) return -1;
  for (int i = 0; i < st->n; i++)
    if (rt_write_all(fd, st->ents[i].t.data, st->ents[i].t.nbytes)) return -1;
  return 0;
}

int mlc_st_save(const MlcSt *st, const char *path, char *err, size_t errlen) {
  char *hdr = build_header(st);
  if (!hdr) {
    seterr(err, errlen, "%s: out of memory building the header", path);
    return -1;
  }
  Body b = {st, hdr};
  int rc = rt_write_atomic(path, write_body, &b, err, errlen);
  cJSON_free(hdr);
  return rc;
}
