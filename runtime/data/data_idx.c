// data_idx.c — the IDX reader (MNIST / Fashion-MNIST files), gzip'd or plain.
//
// Layout: bytes 0 0, a type byte, a rank byte; rank big-endian u32 dims; the
// elements, big-endian, row-major. zlib's gzread reads plain files
// transparently, so one path serves both. The first dim is the record count;
// a file that ends early is reported with the first incomplete record.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "mlc_rt.h"
#include "core/rt_util.h"

// Largest accepted payload: 16 GiB (guards against absurd dims).
#define MAX_BYTES ((uint64_t)1 << 34)

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

// Reads exactly n bytes; returns the count read (short at end of file or on
// a gzip error, whose text goes to why).
static int64_t read_full(gzFile g, void *buf, uint64_t n, const char **why) {
  uint64_t got = 0;
  *why = NULL;
  while (got < n) {
    unsigned chunk = n - got > (1u << 30) ? 1u << 30 : (unsigned)(n - got);
    int r = gzread(g, (char *)buf + got, chunk);
    if (r < 0) {
      int e;
      *why = gzerror(g, &e);
      return (int64_t)got;
    }
    if (r == 0) break;
    got += (uint64_t)r;
  }
  if (got < n && !*why) {
    int e;
    const char *m = gzerror(g, &e);
    if (e != Z_OK && m && *m) *why = m;
  }
  return (int64_t)got;
}

static int read_header(gzFile g, const char *path, MlcArray *a, int *t, int *fsize,
                       char *err, size_t errlen) {
  unsigned char h[4], d[4 * MLC_MAX_RANK];
  const char *why;
  if (read_full(g, h, 4, &why) < 4)
    return rt_err(err, errlen, "%s: not an IDX file (shorter than its 4-byte magic)", path);
  if (h[0] || h[1] || type_info(h[2], &a->dtype, fsize) || h[3] < 1 || h[3] > MLC_MAX_RANK)
    return rt_err(err, errlen,
                  "%s: not an IDX file (magic %02x %02x %02x %02x; expected 00 00, a type "
                  "08/09/0b/0c/0d/0e and a rank 1..%d)",
                  path, h[0], h[1], h[2], h[3], MLC_MAX_RANK);
  *t = h[2];
  a->rank = h[3];
  if (read_full(g, d, 4 * (uint64_t)a->rank, &why) < 4 * a->rank)
    return rt_err(err, errlen, "%s: truncated IDX header (%d dims expected)", path, a->rank);
  for (int k = 0; k < a->rank; k++) a->dims[k] = (int64_t)be(d + 4 * k, 4);
  return 0;
}

int mlc_read_idx(const char *path, MlcArray *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  gzFile g = gzopen(path, "rb");
  if (!g) return rt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  gzbuffer(g, 1 << 17);
  int t = 0, fsize = 1;
  MlcArray a = {0};
  if (read_header(g, path, &a, &t, &fsize, err, errlen)) {
    gzclose(g);
    return -1;
  }
  uint64_t per = 1;
  for (int k = 1; k < a.rank; k++) per *= (uint64_t)a.dims[k] ? (uint64_t)a.dims[k] : 1;
  uint64_t n = (uint64_t)a.dims[0], bytes = n * per * (uint64_t)fsize;
  if (per > MAX_BYTES || bytes > MAX_BYTES) {
    gzclose(g);
    return rt_err(err, errlen, "%s: IDX dims too large (%llu bytes)", path, (unsigned long long)bytes);
  }
  unsigned char *raw = malloc(bytes ? bytes : 1);
  a.data = malloc(n * per * mlc_dtype_size(a.dtype) + 1);
  if (!raw || !a.data) {
    free(raw), free(a.data), gzclose(g);
    return rt_err(err, errlen, "%s: out of memory", path);
  }
  const char *why;
  int64_t got = read_full(g, raw, bytes, &why);
  if ((uint64_t)got < bytes) {
    size_t pl = strlen(path); // zlib prefixes its message with the path
    if (why && !strncmp(why, path, pl) && !strncmp(why + pl, ": ", 2)) why += pl + 2;
    uint64_t rec = (uint64_t)got / (per * (uint64_t)fsize);
    rt_err(err, errlen, "%s: record %llu: truncated (the header promises %llu records)%s%s",
           path, (unsigned long long)rec + 1, (unsigned long long)n, why ? ": " : "", why ? why : "");
    free(raw), free(a.data), gzclose(g);
    return -1;
  }
  unsigned char extra;
  if (read_full(g, &extra, 1, &why) == 1) {
    free(raw), free(a.data), gzclose(g);
    return rt_err(err, errlen, "%s: trailing bytes after the %llu records the header promises",
                  path, (unsigned long long)n);
  }
  decode(t, fsize, raw, (int64_t)(n * per), a.data);
  free(raw);
  gzclose(g);
  a.path = strdup(path);
  *out = a;
  return 0;
}
