// test_safetensors.c — checks of the safetensors reader and writer
// (runtime/core/safetensors.c).
//
// Usage: test_safetensors   (run from the repo root: it runs
// tests/parity/safetensors_np.py with /usr/bin/python3 when present)
//
// 1. Round trip: a set with every dtype, an empty tensor, a scalar and
//    metadata is saved and read back bit for bit; the header is 8-byte
//    padded, names are in order, no temporary file is left behind.
// 2. Crossing to and from Python: the numpy writer's fixture file is read
//    here and checked value by value; the same fixture written here is
//    byte-identical to it, and Python's reader reads it. Without
//    /usr/bin/python3 and numpy these checks print [SKIP].
// 3. Corruption: every class of malformed file (short file, header length,
//    JSON, unknown dtype or field, shape, offsets: size, gap, overlap, end,
//    trailing bytes; duplicates, metadata, bool bytes) is rejected with a
//    message naming the file and, where there is one, the tensor.
//
// Prints "[PASS] name" / "[FAIL] name" / "[SKIP] name: reason" and a last
// line "N passed, N failed, N skipped"; exits 1 on any failure.
#include "core/safetensors.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int npass, nfail, nskip;
static char dir[64];

static void check(const char *name, bool ok, const char *detail) {
  printf("[%s] %s\n", ok ? "PASS" : "FAIL", name);
  if (!ok && detail && detail[0]) printf("  %s\n", detail);
  ok ? npass++ : nfail++;
}

static void skip(const char *name, const char *why) {
  printf("[SKIP] %s: %s\n", name, why);
  nskip++;
}

static char *path_in(const char *name) {
  static char buf[4][256];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 256, "%s/%s", dir, name);
  return p;
}

// ---- the fixture (same tensors as safetensors_np.py's _fixture) -------------------

static MlcSt *fixture(void) {
  MlcSt *st = mlc_st_new();
  char err[256];
  float a[6];
  for (int i = 0; i < 6; i++) a[i] = i / 4.0f;
  double b[3] = {1.0 / 3, -2.5e-300, 1e300};
  int32_t c[2] = {-7, 2147483647};
  int64_t d = -((int64_t)1 << 40);
  uint8_t e[2] = {0, 255}, f[3] = {1, 0, 1};
  uint16_t g[3] = {0x3e00, 0x9400, 0x7bff}; // 1.5, -2^-10, 65504
  int64_t s23[] = {2, 3}, s3[] = {3}, s21[] = {2, 1}, s2[] = {2}, s04[] = {0, 4};
  int rc = mlc_st_add(st, "a.f32", MLC_ST_F32, 2, s23, a, err, sizeof err) |
           mlc_st_add(st, "b.f64", MLC_ST_F64, 1, s3, b, err, sizeof err) |
           mlc_st_add(st, "c.i32", MLC_ST_I32, 2, s21, c, err, sizeof err) |
           mlc_st_add(st, "d.i64", MLC_ST_I64, 0, NULL, &d, err, sizeof err) |
           mlc_st_add(st, "e.u8", MLC_ST_U8, 1, s2, e, err, sizeof err) |
           mlc_st_add(st, "f.bool", MLC_ST_BOOL, 1, s3, f, err, sizeof err) |
           mlc_st_add(st, "g.f16", MLC_ST_F16, 1, s3, g, err, sizeof err) |
           mlc_st_add(st, "h.empty", MLC_ST_F32, 2, s04, NULL, err, sizeof err) |
           mlc_st_set_metadata(st, "producer", "safetensors_np", err, sizeof err) |
           mlc_st_set_metadata(st, "note", "fixture", err, sizeof err);
  if (rc) printf("  fixture: %s\n", err);
  return st;
}

// Whether st holds exactly the fixture's tensors and values.
static bool is_fixture(const MlcSt *st, char *why, size_t n) {
  static const struct {
    const char *name;
    MlcStDType dt;
    int rank;
    int64_t shape[2];
    double vals[6];
  } want[] = {
      {"a.f32", MLC_ST_F32, 2, {2, 3}, {0, 0.25, 0.5, 0.75, 1, 1.25}},
      {"b.f64", MLC_ST_F64, 1, {3}, {1.0 / 3, -2.5e-300, 1e300}},
      {"c.i32", MLC_ST_I32, 2, {2, 1}, {-7, 2147483647}},
      {"d.i64", MLC_ST_I64, 0, {0}, {-1099511627776.0}},
      {"e.u8", MLC_ST_U8, 1, {2}, {0, 255}},
      {"f.bool", MLC_ST_BOOL, 1, {3}, {1, 0, 1}},
      {"g.f16", MLC_ST_F16, 1, {3}, {1.5, -0.0009765625, 65504}},
      {"h.empty", MLC_ST_F32, 2, {0, 4}, {0}},
  };
  int nw = sizeof want / sizeof want[0];
  if (mlc_st_count(st) != nw) {
    snprintf(why, n, "%d tensors, expected %d", mlc_st_count(st), nw);
    return false;
  }
  for (int i = 0; i < nw; i++) {
    const MlcStTensor *t = mlc_st_at(st, i);
    bool ok = strcmp(t->name, want[i].name) == 0 && t->dtype == want[i].dt &&
              t->rank == want[i].rank;
    for (int k = 0; ok && k < t->rank; k++) ok = t->shape[k] == want[i].shape[k];
    double v[6];
    if (ok) mlc_st_to_f64(t, v);
    for (int k = 0; ok && k < t->numel; k++) ok = v[k] == want[i].vals[k];
    if (!ok) {
      snprintf(why, n, "tensor %d ('%s') differs from '%s'", i, t->name,
               want[i].name);
      return false;
    }
  }
  const char *p = mlc_st_metadata(st, "producer"), *q = mlc_st_metadata(st, "note");
  if (!p || strcmp(p, "safetensors_np") || !q || strcmp(q, "fixture") ||
      mlc_st_metadata_count(st) != 2) {
    snprintf(why, n, "metadata differs");
    return false;
  }
  return true;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(n > 0 ? n : 1);
  *len = b ? fread(b, 1, n, f) : 0;
  fclose(f);
  return b;
}

// ---- 1. round trip ------------------------------------------------------------------

static void test_round_trip(void) {
  char err[512] = "", why[256] = "";
  MlcSt *st = fixture();
  const char *p = path_in("rt.safetensors");
  int rc = mlc_st_save(st, p, err, sizeof err);
  check("round trip: save", rc == 0, err);
  MlcSt *back = mlc_st_open(p, err, sizeof err);
  check("round trip: open", back != NULL, err);
  check("round trip: values, shapes, dtypes, metadata", back && is_fixture(back, why, sizeof why), why);
  bool bytes = back != NULL;
  for (int i = 0; bytes && i < mlc_st_count(st); i++) {
    const MlcStTensor *a = mlc_st_at(st, i), *b = mlc_st_at(back, i);
    bytes = a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0;
  }
  check("round trip: data bytes identical", bytes, "");
  size_t len = 0;
  unsigned char *raw = slurp(p, &len);
  uint64_t hl = 0;
  for (int i = 7; raw && len >= 8 && i >= 0; i--) hl = hl << 8 | raw[i];
  bool pad = raw && hl % 8 == 0 && raw[8 + hl - 1] == ' ';
  check("round trip: header padded with spaces to 8 bytes", pad, "");
  const char *h = raw ? (const char *)raw + 8 : "";
  const char *m = strstr(h, "\"__metadata__\""), *a = strstr(h, "\"a.f32\""),
             *g = strstr(h, "\"g.f16\""), *e = strstr(h, "\"h.empty\"");
  check("round trip: metadata first, names sorted", m && a && g && e && m < a && a < g && g < e, "");
  free(raw);
  // Saving again over the file replaces it and leaves no temporary behind.
  int64_t one = 1;
  mlc_st_add(st, "a.f32", MLC_ST_I64, 0, NULL, &one, err, sizeof err);
  rc = mlc_st_save(st, p, err, sizeof err);
  mlc_st_close(back);
  back = mlc_st_open(p, err, sizeof err);
  const MlcStTensor *t = back ? mlc_st_find(back, "a.f32") : NULL;
  check("round trip: replace tensor, overwrite file", rc == 0 && t && t->dtype == MLC_ST_I64 && t->rank == 0, err);
  char cmd[320];
  snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp", dir);
  check("round trip: no temporary file left", system(cmd) != 0, "");
  mlc_st_close(back);
  mlc_st_close(st);
}

static void test_write_errors(void) {
  char err[512] = "";
  MlcSt *st = fixture();
  int rc = mlc_st_save(st, "/nonexistent-dir/x.safetensors", err, sizeof err);
  check("save into a missing directory fails, naming the path",
        rc == -1 && strstr(err, "/nonexistent-dir/x.safetensors"), err);
  int64_t neg[] = {-1};
  rc = mlc_st_add(st, "bad", MLC_ST_F32, 1, neg, NULL, err, sizeof err);
  check("add: negative dim rejected", rc == -1 && strstr(err, "'bad'"), err);
  rc = mlc_st_add(st, "__metadata__", MLC_ST_F32, 0, NULL, neg, err, sizeof err);
  check("add: reserved name rejected", rc == -1, err);
  mlc_st_close(st);
}

// ---- 2. Python ------------------------------------------------------------------------

static bool have_python(void) {
  return access("/usr/bin/python3", X_OK) == 0 &&
         system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0 &&
         access("tests/parity/safetensors_np.py", R_OK) == 0;
}

static void test_python(void) {
  if (!have_python()) {
    skip("python: numpy-written file read here", "no /usr/bin/python3 with numpy (or not run from the repo root)");
    skip("python: C-written file byte-identical and read by Python", "no /usr/bin/python3 with numpy");
    return;
  }
  char cmd[1400], err[512] = "", why[256] = "";
  const char *py = path_in("py.safetensors"), *c = path_in("c.safetensors");
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/parity/safetensors_np.py write %s", py);
  int rc = system(cmd);
  MlcSt *st = rc == 0 ? mlc_st_open(py, err, sizeof err) : NULL;
  check("python: numpy-written file read here", st && is_fixture(st, why, sizeof why), st ? why : err);
  mlc_st_close(st);

  st = fixture();
  rc = mlc_st_save(st, c, err, sizeof err);
  mlc_st_close(st);
  size_t la = 0, lb = 0;
  unsigned char *a = slurp(py, &la), *b = slurp(c, &lb);
  check("python: C-written file byte-identical to numpy-written",
        rc == 0 && a && b && la == lb && memcmp(a, b, la) == 0, err);
  free(a);
  free(b);
  char ct[256], pt[256];
  snprintf(ct, sizeof ct, "%s", path_in("c.txt"));
  snprintf(pt, sizeof pt, "%s", path_in("py.txt"));
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 tests/parity/safetensors_np.py dump %s > %s && "
           "/usr/bin/python3 tests/parity/safetensors_np.py dump %s > %s && cmp -s %s %s",
           c, ct, py, pt, ct, pt);
  check("python: C-written file read by Python", system(cmd) == 0, "");
}

// ---- 3. corruption ----------------------------------------------------------------------

// Builds a file from a header (padded unless `raw_len` overrides the length
// field) and `ndata` data bytes (value `fill`), parses it, and expects the
// error to contain every one of `subs` (NULL-terminated).
static void expect_bad(const char *name, const char *hdr, long long hlen_field,
                       size_t ndata, int fill, const char *const *subs) {
  size_t hn = strlen(hdr);
  size_t len = 8 + hn + ndata;
  unsigned char *buf = malloc(len);
  uint64_t hl = hlen_field >= 0 ? (uint64_t)hlen_field : hn;
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hl >> (8 * i));
  memcpy(buf + 8, hdr, hn);
  memset(buf + 8 + hn, fill, ndata);
  char err[512] = "";
  MlcSt *st = mlc_st_parse("bad.safetensors", buf, len, err, sizeof err);
  bool ok = st == NULL && strstr(err, "bad.safetensors: ");
  for (int i = 0; ok && subs[i]; i++) ok = strstr(err, subs[i]) != NULL;
  char detail[700];
  snprintf(detail, sizeof detail, "error was: %s", st ? "(accepted)" : err);
  printf("  %s -> %s\n", name, err);
  check(name, ok, detail);
  mlc_st_close(st);
  free(buf);
}

#define BAD(name, hdr, hl, nd, ...)                                            \
  expect_bad(name, hdr, hl, nd, 0, (const char *const[]){__VA_ARGS__, NULL})

#define T1 "\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

static void test_corruption(void) {
  char err[512] = "";
  unsigned char tiny[5] = {0};
  MlcSt *st = mlc_st_parse("bad.safetensors", tiny, 5, err, sizeof err);
  check("corrupt: file shorter than 8 bytes", !st && strstr(err, "bad.safetensors: file is 5 bytes"), err);
  printf("  -> %s\n", err);
  st = mlc_st_open("tests/parity/data/no-such-file.safetensors", err, sizeof err);
  check("corrupt: missing file names the path", !st && strstr(err, "no-such-file.safetensors: "), err);

  BAD("corrupt: header length exceeds the file", "{}", 1000, 0, "header length 1000 exceeds");
  BAD("corrupt: header length over the limit", "{}", 200000000000LL, 0, "header length 200000000000 exceeds the limit");
  BAD("corrupt: invalid JSON", "{\"t\":{\"dtype\":", -1, 0, "not valid JSON");
  BAD("corrupt: bytes after the JSON object", "{}  x", -1, 0, "unexpected bytes after");
  BAD("corrupt: header is not an object", "[1,2]   ", -1, 0, "not a JSON object");
  BAD("corrupt: entry is not an object", "{\"t\":3}", -1, 0, "'t'", "not an object");
  BAD("corrupt: unknown dtype", "{\"t\":{\"dtype\":\"F8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
      -1, 2, "'t'", "unknown dtype F8");
  BAD("corrupt: missing field", "{\"t\":{\"dtype\":\"F32\",\"shape\":[2]}}", -1, 0, "'t'",
      "missing \"data_offsets\"");
  BAD("corrupt: unknown field", "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}",
      -1, 8, "'t'", "unknown field \"x\"");
  BAD("corrupt: negative dim", "{\"t\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",
      -1, 8, "'t'", "shape[0]");
  BAD("corrupt: fractional dim", "{\"t\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}",
      -1, 8, "'t'", "shape[0]");
  BAD("corrupt: rank over 8", "{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
      -1, 1, "'t'", "rank 9");
  BAD("corrupt: shape overflows", "{\"t\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}",
      -1, 8, "'t'", "too large");
  BAD("corrupt: data_offsets not a pair", "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}",
      -1, 8, "'t'", "data_offsets");
  BAD("corrupt: data_offsets reversed", "{\"t\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}",
      -1, 8, "'t'", "end before they begin");
  BAD("corrupt: size is not numel * itemsize", "{\"t\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,12]}}",
      -1, 12, "'t'", "hold 12 bytes, but F32 [2, 3] needs 24");
  BAD("corrupt: gap between tensors",
      "{" T1 ",\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}", -1, 16,
      "'u'", "gap after byte 8");
  BAD("corrupt: overlapping tensors",
      "{" T1 ",\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", -1, 8,
      "overlap");
  BAD("corrupt: data_offsets past the end", "{" T1 "}", -1, 4, "'t'", "run past the end");
  BAD("corrupt: trailing bytes in the data region", "{" T1 "}", -1, 12,
      "data region has 12 bytes but the tensors cover 8");
  BAD("corrupt: duplicate tensor name",
      "{" T1 ",\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", -1, 16,
      "'t' appears twice");
  BAD("corrupt: empty tensor name", "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
      -1, 1, "empty name");
  BAD("corrupt: metadata not an object", "{\"__metadata__\":[1]}", -1, 0, "\"__metadata__\" is not an object");
  BAD("corrupt: metadata value not a string", "{\"__metadata__\":{\"k\":1}}", -1, 0,
      "metadata \"k\" is not a string");
  expect_bad("corrupt: BOOL byte other than 0 or 1",
             "{\"t\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", -1, 2, 7,
             (const char *const[]){"'t'", "BOOL element 0 is 7", NULL});
}

static void test_conversions(void) {
  uint16_t h[] = {0x0001, 0x8000, 0x7c00, 0xc000, 0x3555};
  int64_t s[] = {5};
  char err[256];
  MlcSt *st = mlc_st_new();
  mlc_st_add(st, "h", MLC_ST_F16, 1, s, h, err, sizeof err);
  uint16_t bf[] = {0x3f80, 0xc049, 0x0000, 0x4049, 0xff80};
  mlc_st_add(st, "bf", MLC_ST_BF16, 1, s, bf, err, sizeof err);
  double v[5], w[5];
  mlc_st_to_f64(mlc_st_find(st, "h"), v);
  mlc_st_to_f64(mlc_st_find(st, "bf"), w);
  check("convert: F16 subnormal, -0, inf, -2, 1/3-ish",
        v[0] == ldexp(1, -24) && v[1] == 0 && signbit(v[1]) && isinf(v[2]) &&
            v[3] == -2 && v[4] == 0.333251953125,
        "");
  check("convert: BF16", w[0] == 1 && w[1] == -3.140625 && w[2] == 0 && w[3] == 3.140625 &&
                             isinf(w[4]) && w[4] < 0, "");
  mlc_st_close(st);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/mlc_st_XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_round_trip();
  test_write_errors();
  test_python();
  test_corruption();
  test_conversions();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) printf("  could not remove %s\n", dir);
  printf("%d passed, %d failed, %d skipped\n", npass, nfail, nskip);
  return nfail ? 1 : 0;
}
