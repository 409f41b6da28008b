// data_npy.c — the NumPy .npy reader (format versions 1, 2 and 3).
//
// Layout: "\x93NUMPY", major, minor, a header length (u16 for v1, u32 for
// v2/v3, little-endian), a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 784), }
// then the C-order data. Only the dict's three keys are read, with a small
// scanner (no Python parser). Accepted descr: <f4 <f8 <i4 <i8 |u1 <u1 |b1
// (and '=' as '<': hosts here are little-endian). The shape's dims come
// from the file, so the payload size is computed with overflow checks and
// held to 16 GiB before anything is allocated.
#include <errno.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mlc_data.h"
#include "core/rt_util.h"

#define MAX_BYTES ((int64_t)1 << 34)

// The value text after 'key': in the dict, or NULL.
static const char *dict_value(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(h, pat);
  if (!p) {
    snprintf(pat, sizeof pat, "\"%s\"", key);
    p = strstr(h, pat);
  }
  if (!p) return NULL;
  p += strlen(pat);
  while (isspace((unsigned char)*p)) p++;
  if (*p++ != ':') return NULL;
  while (isspace((unsigned char)*p)) p++;
  return p;
}

static int parse_descr(const char *v, MlcDType *dt) {
  static const struct {
    const char *s;
    MlcDType dt;
  } tab[] = {{"<f4", MLC_F32}, {"<f8", MLC_F64}, {"<i4", MLC_I32}, {"<i8", MLC_I64},
             {"|u1", MLC_U8},  {"<u1", MLC_U8},  {"|b1", MLC_BOOL}, {"=f4", MLC_F32},
             {"=f8", MLC_F64}, {"=i4", MLC_I32}, {"=i8", MLC_I64}};
  if (!v || (*v != '\'' && *v != '"')) return -1;
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (!strncmp(v + 1, tab[i].s, 3) && v[4] == v[0]) return *dt = tab[i].dt, 0;
  return -1;
}

static int parse_shape(const char *v, MlcArray *a) {
  if (!v || *v != '(') return -1;
  v++;
  a->rank = 0;
  for (;;) {
    while (isspace((unsigned char)*v) || *v == ',') v++;
    if (*v == ')') break;
    if (!isdigit((unsigned char)*v) || a->rank == MLC_MAX_RANK) return -1;
    char *end;
    errno = 0;
    a->dims[a->rank++] = strtoll(v, &end, 10);
    if (errno) return -1;
    v = end;
  }
  return a->rank ? 0 : -1; // a 0-d array has no records
}

static int read_header(FILE *f, const char *path, MlcArray *a, char *err, size_t errlen) {
  unsigned char pre[12];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6))
    return rt_err(err, errlen, "%s: not an NPY file (bad magic)", path);
  int major = pre[6];
  uint32_t hlen = pre[8] | (uint32_t)pre[9] << 8;
  if (major == 2 || major == 3) {
    if (fread(pre + 10, 1, 2, f) != 2) return rt_err(err, errlen, "%s: truncated NPY header", path);
    hlen |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
  } else if (major != 1) {
    return rt_err(err, errlen, "%s: NPY format version %d is not supported (1, 2, 3)", path, major);
  }
  if (hlen > (1u << 20)) return rt_err(err, errlen, "%s: NPY header too long", path);
  char *h = malloc(hlen + 1);
  if (!h || fread(h, 1, hlen, f) != hlen) {
    free(h);
    return rt_err(err, errlen, "%s: truncated NPY header", path);
  }
  h[hlen] = 0;
  int rc = 0;
  const char *fo = dict_value(h, "fortran_order");
  if (parse_descr(dict_value(h, "descr"), &a->dtype))
    rc = rt_err(err, errlen, "%s: unsupported NPY dtype (need <f4 <f8 <i4 <i8 |u1 |b1): %s", path, h);
  else if (!fo || strncmp(fo, "False", 5))
    rc = rt_err(err, errlen, "%s: Fortran-order NPY arrays are not supported", path);
  else if (parse_shape(dict_value(h, "shape"), a))
    rc = rt_err(err, errlen, "%s: bad or 0-d NPY shape in header: %s", path, h);
  free(h);
  return rc;
}

// Elements per record and payload bytes, checked against overflow and MAX_BYTES.
static int npy_sizes(const MlcArray *a, const char *path, int64_t *per, int64_t *bytes, char *err,
                     size_t errlen) {
  *per = 1;
  int64_t n = 1;
  bool ok = true;
  for (int k = 1; k < a->rank; k++) ok = ok && rt_mul(per, a->dims[k]);
  ok = ok && rt_mul(&n, *per) && rt_mul(&n, a->dims[0]) && rt_mul(&n, (int64_t)mlc_dtype_size(a->dtype));
  if (!ok || n > MAX_BYTES)
    return rt_err(err, errlen, "%s: NPY shape too large (more than 16 GiB)", path);
  *bytes = n;
  return 0;
}

int mlc_read_npy(const char *path, MlcArray *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (rt_check_input(path, err, errlen)) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return rt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  MlcArray a = {.kind = MLC_DATA_NPY};
  int64_t per = 1, bytes = 0;
  if (read_header(f, path, &a, err, errlen) || npy_sizes(&a, path, &per, &bytes, err, errlen)) {
    fclose(f);
    return -1;
  }
  int64_t esz = (int64_t)mlc_dtype_size(a.dtype), n = a.dims[0];
  // a header promising more than the file holds costs nothing to refuse
  struct stat sb;
  long at = ftell(f);
  if (!fstat(fileno(f), &sb) && S_ISREG(sb.st_mode) && at >= 0 && sb.st_size - at < bytes) {
    fclose(f);
    int64_t got = sb.st_size - at;
    return rt_err(err, errlen, "%s: record %lld: truncated (the header promises %lld records)", path,
                  (long long)(per * esz != 0 ? got / (per * esz) + 1 : 1), (long long)n);
  }
  a.data = malloc((size_t)bytes + 1);
  if (!a.data) {
    fclose(f);
    return rt_err(err, errlen, "%s: out of memory", path);
  }
  size_t got = fread(a.data, 1, (size_t)bytes, f);
  int extra = fgetc(f);
  fclose(f);
  if ((int64_t)got < bytes) {
    free(a.data);
    return rt_err(err, errlen, "%s: record %lld: truncated (the header promises %lld records)", path,
                  (long long)(per * esz != 0 ? (int64_t)got / (per * esz) + 1 : 1), (long long)n);
  }
  if (extra != EOF) {
    free(a.data);
    return rt_err(err, errlen, "%s: trailing bytes after the %lld records the header promises", path,
                  (long long)n);
  }
  a.path = strdup(path);
  *out = a;
  return 0;
}
