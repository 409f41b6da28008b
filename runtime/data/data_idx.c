// data_idx.c — the IDX reader (MNIST / Fashion-MNIST files), gzip'd or plain.
//
// Layout: bytes 0 0, a type byte, a rank byte; rank big-endian u32 dims; the
// elements, big-endian, row-major. zlib's gzread reads plain files
// transparently, so one path serves both. The first dim is the record count;
// a file that ends early is reported with the first incomplete record, and
// a gzip stream that zlib cannot decode (bad data, a failed CRC) as not
// valid gzip. Sizes come from the header's dims, so each is computed with
// overflow checks and held to 16 GiB before anything is allocated.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "mlc_data.h"
#include "core/rt_util.h"

// Largest accepted payload: 16 GiB (guards against absurd dims).
#define MAX_BYTES ((int64_t)1 << 34)

static int type_info(int t, MlcDType *dt, int *fsize) {
  switch (t) {
  case 0x08: *dt = MLC_U8, *fsize = 1; return 0;
  case 0x09: *dt = MLC_I32, *fsize = 1; return 0; // i8, widened
  case 0x0B: *dt = MLC_I32, *fsize = 2; return 0; // i16, widened
  case 0x0C: *dt = MLC_I32, *fsize = 4; return 0;
  case 0x0D: *dt = MLC_F32, *fsize = 4; return 0;
  case 0x0E: *dt = MLC_F64, *fsize = 8; return 0;
  }
  return -1;
}

static uint64_t be(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

// Converts n big-endian elements of file type t in raw to dt in place order.
static void decode(int t, int fsize, const unsigned char *raw, int64_t n, void *out) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t v = be(raw + i * fsize, fsize);
    switch (t) {
    case 0x08: ((uint8_t *)out)[i] = (uint8_t)v; break;
    case 0x09: ((int32_t *)out)[i] = (int8_t)v; break;
    case 0x0B: ((int32_t *)out)[i] = (int16_t)v; break;
    case 0x0C: ((int32_t *)out)[i] = (int32_t)(uint32_t)v; break;
    case 0x0D: { uint32_t u = (uint32_t)v; memcpy((float *)out + i, &u, 4); break; }
    case 0x0E: memcpy((double *)out + i, &v, 8); break;
    }
  }
}

// What a short read met: the end of the file, or a zlib error.
typedef struct GzStatus {
  const char *why; // zlib's message, without the path zlib prefixes; NULL at a plain end
  int code;        // Z_OK, Z_DATA_ERROR (not valid gzip), Z_BUF_ERROR (ends early), ...
} GzStatus;

static void gz_status(gzFile g, const char *path, GzStatus *st) {
  int e;
  const char *m = gzerror(g, &e);
  st->code = e, st->why = NULL;
  if (e == Z_OK || !m || !*m) return;
  size_t pl = strlen(path);
  if (!strncmp(m, path, pl) && !strncmp(m + pl, ": ", 2)) m += pl + 2;
  st->why = m;
}

// Reads exactly n bytes; returns the count read (short at end of file or on
// a gzip error, described in st).
static int64_t read_full(gzFile g, const char *path, void *buf, int64_t n, GzStatus *st) {
  int64_t got = 0;
  st->why = NULL, st->code = Z_OK;
  while (got < n) {
    unsigned chunk = n - got > (1 << 30) ? 1u << 30 : (unsigned)(n - got);
    int r = gzread(g, (char *)buf + got, chunk);
    if (r <= 0) break;
    got += r;
  }
  if (got < n) gz_status(g, path, st);
  return got;
}

// The message for a gzip stream zlib refused, or NULL.
static int bad_gzip(const char *path, const GzStatus *st, char *err, size_t errlen) {
  if (st->code != Z_DATA_ERROR && st->code != Z_STREAM_ERROR) return 0;
  return rt_err(err, errlen, "%s: not valid gzip data (zlib: %s)", path, st->why ? st->why : "?");
}

static int read_header(gzFile g, const char *path, MlcArray *a, int *t, int *fsize,
                       char *err, size_t errlen) {
  unsigned char h[4], d[4 * MLC_MAX_RANK];
  GzStatus st;
  if (read_full(g, path, h, 4, &st) < 4)
    return bad_gzip(path, &st, err, errlen)
               ? -1
               : rt_err(err, errlen, "%s: not an IDX file (shorter than its 4-byte magic)%s%s", path,
                        st.why ? ": " : "", st.why ? st.why : "");
  if (h[0] || h[1] || type_info(h[2], &a->dtype, fsize) || h[3] < 1 || h[3] > MLC_MAX_RANK)
    return rt_err(err, errlen,
                  "%s: not an IDX file (magic %02x %02x %02x %02x; expected 00 00, a type "
                  "08/09/0b/0c/0d/0e and a rank 1..%d)",
                  path, h[0], h[1], h[2], h[3], MLC_MAX_RANK);
  *t = h[2];
  a->rank = h[3];
  if (read_full(g, path, d, 4 * a->rank, &st) < 4 * a->rank)
    return bad_gzip(path, &st, err, errlen)
               ? -1
               : rt_err(err, errlen, "%s: truncated IDX header (%d dims expected)", path, a->rank);
  for (int k = 0; k < a->rank; k++) a->dims[k] = (int64_t)be(d + 4 * k, 4);
  return 0;
}

// Elements per record and the payload's bytes in the file and in memory,
// checked against overflow and MAX_BYTES.
static int idx_sizes(const MlcArray *a, int fsize, const char *path, int64_t *per,
                     int64_t *bytes, int64_t *mem, char *err, size_t errlen) {
  *per = 1;
  for (int k = 1; k < a->rank; k++) {
    if (!a->dims[k]) return rt_err(err, errlen, "%s: IDX dim %d is 0 (records hold no values)", path, k + 1);
    if (!rt_mul(per, a->dims[k])) *per = MAX_BYTES + 1;
  }
  int64_t n = *per;
  *bytes = rt_mul(&n, a->dims[0]) && rt_mul(&n, fsize) ? n : MAX_BYTES + 1;
  if (*per > MAX_BYTES || *bytes > MAX_BYTES)
    return rt_err(err, errlen, "%s: IDX dims %lld x %lld values exceed the 16 GiB limit", path,
                  (long long)a->dims[0], (long long)*per);
  *mem = *bytes / fsize * (int64_t)mlc_dtype_size(a->dtype); // <= 4 * MAX_BYTES
  return 0;
}

// Reads up to `want` bytes into a buffer that grows as data arrives (a
// header promising more than the file holds costs what the file holds, not
// what it promises); *got is the count read.
static unsigned char *read_grow(gzFile g, const char *path, int64_t want, int64_t *got,
                                GzStatus *st) {
  int64_t cap = want < (1 << 20) ? want : (1 << 20);
  unsigned char *buf = malloc((size_t)cap + 1);
  *got = 0;
  while (buf && *got < want) {
    if (*got == cap) {
      cap = cap > want / 2 ? want : cap * 2;
      unsigned char *nb = realloc(buf, (size_t)cap + 1);
      if (!nb) free(buf);
      buf = nb;
      if (!buf) break;
    }
    int64_t part = read_full(g, path, buf + *got, cap - *got, st);
    *got += part;
    if (*got < cap) break;
  }
  return buf;
}

// Reads the payload (bytes) into *raw and checks that nothing follows it.
static int read_payload(gzFile g, const char *path, const MlcArray *a, int64_t per, int fsize,
                        unsigned char **raw, int64_t bytes, char *err, size_t errlen) {
  GzStatus st = {NULL, Z_OK};
  int64_t got;
  *raw = read_grow(g, path, bytes, &got, &st);
  if (!*raw) return rt_err(err, errlen, "%s: out of memory", path);
  if (got < bytes) {
    int64_t rec = got / (per * fsize);
    if (bad_gzip(path, &st, err, errlen))
      return rt_err(err, errlen, "%s: not valid gzip data after record %lld (zlib: %s)", path,
                    (long long)rec, st.why ? st.why : "?");
    return rt_err(err, errlen, "%s: record %lld: truncated (the header promises %lld records)%s%s",
                  path, (long long)rec + 1, (long long)a->dims[0], st.why ? ": " : "",
                  st.why ? st.why : "");
  }
  unsigned char extra;
  if (read_full(g, path, &extra, 1, &st) == 1)
    return rt_err(err, errlen, "%s: trailing bytes after the %lld records the header promises",
                  path, (long long)a->dims[0]);
  if (bad_gzip(path, &st, err, errlen)) return -1; // e.g. the stream's CRC does not match
  return 0;
}

int mlc_read_idx(const char *path, MlcArray *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (rt_check_input(path, err, errlen)) return -1;
  gzFile g = gzopen(path, "rb");
  if (!g) return rt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  gzbuffer(g, 1 << 17);
  int t = 0, fsize = 1;
  int64_t per = 1, bytes = 0, mem = 0;
  MlcArray a = {.kind = MLC_DATA_IDX};
  unsigned char *raw = NULL;
  int rc = read_header(g, path, &a, &t, &fsize, err, errlen) ||
           idx_sizes(&a, fsize, path, &per, &bytes, &mem, err, errlen) ||
           read_payload(g, path, &a, per, fsize, &raw, bytes, err, errlen);
  gzclose(g);
  if (!rc && t == 0x08) a.data = raw, raw = NULL; // u8: the bytes are the values
  else if (!rc && !(a.data = malloc((size_t)mem + 1))) rc = rt_err(err, errlen, "%s: out of memory", path);
  else if (!rc) decode(t, fsize, raw, bytes / fsize, a.data);
  free(raw);
  if (!rc && !(a.path = strdup(path))) rc = rt_err(err, errlen, "%s: out of memory", path);
  if (rc) {
    free(a.data);
    return -1;
  }
  *out = a;
  return 0;
}
