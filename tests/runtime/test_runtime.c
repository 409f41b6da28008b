// test_runtime.c — tests of libmlc_rt: readers, loader, RNG, pool,
// checkpoints, and the generated-program driver end to end through rt_fake
// (tests/runtime/fake_model.c).
//
//   test_runtime RT_FAKE WORKDIR
//
// Data files are generated under WORKDIR. The end-to-end training checks use
// Debian's Fashion-MNIST when it is installed and a generated IDX set
// otherwise. Prints [PASS]/[FAIL] per check and "N passed, N failed".
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "graph/interp.h"
#include "mlc_rt.h"
#include "core/checkpoint.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "data/dataset.h"

extern const MlcModel mlc_model_fake;

static int passed, failed;
static const char *fake, *work;

static void check(bool ok, const char *name, const char *detail) {
  printf("[%s] %s", ok ? "PASS" : "FAIL", name);
  if (!ok && detail && *detail) printf(": %s", detail);
  printf("\n");
  fflush(stdout);
  ok ? passed++ : failed++;
}

static char *wpath(const char *name) {
  static char buf[8][1024];
  static int k;
  char *b = buf[k++ % 8];
  snprintf(b, 1024, "%s/%s", work, name);
  return b;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  size_t got = fread(b, 1, (size_t)n, f);
  b[got] = 0;
  fclose(f);
  return b;
}

static size_t slurp_len;

// The bytes of a file (slurp_len of them), malloc'd.
static char *slurp_bin(const char *path) {
  FILE *f = fopen(path, "rb");
  char *b = NULL;
  slurp_len = 0;
  if (f && !fseek(f, 0, SEEK_END)) {
    long n = ftell(f);
    b = malloc((size_t)n + 1);
    fseek(f, 0, SEEK_SET);
    slurp_len = b ? fread(b, 1, (size_t)n, f) : 0;
  }
  if (f) fclose(f);
  return b;
}

static void spit(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  fwrite(data, 1, n, f);
  fclose(f);
}

// Runs `rt_fake ARGS` with stdout/stderr to WORKDIR/out, err; the exit code.
static int run(const char *args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", fake, args, wpath("out"), wpath("err"));
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

// ---- generated data ---------------------------------------------------------------

static void be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

// An IDX file of type t, rank r, dims d, payload data (already big-endian).
static void write_idx(const char *path, int t, int r, const uint32_t *d, const void *data,
                      size_t n, bool gz) {
  unsigned char h[4 + 4 * 8] = {0, 0, (unsigned char)t, (unsigned char)r};
  for (int k = 0; k < r; k++) be32(h + 4 + 4 * k, d[k]);
  if (gz) {
    gzFile g = gzopen(path, "wb");
    gzwrite(g, h, (unsigned)(4 + 4 * r));
    gzwrite(g, data, (unsigned)n);
    gzclose(g);
  } else {
    FILE *f = fopen(path, "wb");
    fwrite(h, 1, (size_t)(4 + 4 * r), f);
    fwrite(data, 1, n, f);
    fclose(f);
  }
}

// A separable 28x28 set: class c lights pixels with k % 10 == c, plus noise.
static void make_synth(const char *img, const char *lab, int n, uint32_t seed, int bad_label) {
  unsigned char *x = malloc((size_t)n * 784), *y = malloc((size_t)n);
  uint32_t s = seed;
  for (int i = 0; i < n; i++) {
    y[i] = (unsigned char)(i * 7 % 10);
    for (int k = 0; k < 784; k++) {
      s = s * 1664525u + 1013904223u;
      x[i * 784 + k] = (unsigned char)((k % 10 == y[i] ? 150 : 0) + (s >> 26));
    }
  }
  if (bad_label >= 0) y[bad_label] = 11;
  write_idx(img, 8, 3, (uint32_t[]){(uint32_t)n, 28, 28}, x, (size_t)n * 784, true);
  write_idx(lab, 8, 1, (uint32_t[]){(uint32_t)n}, y, (size_t)n, true);
  free(x), free(y);
}

// ---- RNG and pool -------------------------------------------------------------------

static void test_rng(void) {
  // Random123's known-answer vectors for philox4x32_10.
  uint32_t o[4];
  mlc_philox((uint32_t[]){0, 0, 0, 0}, (uint32_t[]){0, 0}, o);
  check(o[0] == 0x6627e8d5 && o[1] == 0xe169c58d && o[2] == 0xbc57ac4c && o[3] == 0x9b00dbd8,
        "rng: philox4x32-10 known answer (zeros)", NULL);
  mlc_philox((uint32_t[]){~0u, ~0u, ~0u, ~0u}, (uint32_t[]){~0u, ~0u}, o);
  check(o[0] == 0x408f276d && o[1] == 0x41c83b0e && o[2] == 0xa20bc7c6 && o[3] == 0x6d5451fd,
        "rng: philox4x32-10 known answer (ones)", NULL);
  bool same = true;
  for (uint64_t i = 0; i < 4096 && same; i++) {
    uint64_t seed = i * 0x9E3779B97F4A7C15ull, rs = i * 31 + 7;
    same = mlc_dropout_scale(seed, rs, i * 977, 0.3) == interp_dropout_scale(seed, rs, i * 977, 0.3);
  }
  check(same, "rng: dropout masks equal the interpreter's", NULL);
  MlcRng a = mlc_rng_new(5), b = mlc_rng_new(5);
  for (int i = 0; i < 10; i++) mlc_rng_next(&a);
  b.counter = 10; // a stream is (key, counter): restoring both continues it
  check(mlc_rng_next(&a) == mlc_rng_next(&b), "rng: stream resumes from (key, counter)", NULL);
}

typedef struct Hits {
  int *hit;
  int64_t max_chunk;
} Hits;

static void mark(void *vp, int64_t b, int64_t e) {
  Hits *h = vp;
  for (int64_t i = b; i < e; i++) __atomic_add_fetch(&h->hit[i], 1, __ATOMIC_RELAXED);
  if (e - b > h->max_chunk) h->max_chunk = e - b;
}

static void test_pool(void) {
  MlcPool *p = mlc_pool_new(4);
  int hit[1000] = {0};
  Hits h = {hit, 0};
  bool ok = true;
  for (int rep = 0; rep < 50; rep++) mlc_parallel_for(p, 1000, 7, mark, &h);
  for (int i = 0; i < 1000; i++) ok = ok && hit[i] == 50;
  check(ok && h.max_chunk <= 7 && mlc_pool_threads(p) == 4,
        "pool: parallel_for covers every index once per call, chunks <= grain", NULL);
  mlc_pool_free(p);
}

// ---- readers ------------------------------------------------------------------------

static void test_idx(void) {
  unsigned char px[2 * 2 * 3];
  for (int i = 0; i < 12; i++) px[i] = (unsigned char)(i * 20);
  char err[512] = "";
  MlcArray a;
  for (int gz = 0; gz < 2; gz++) {
    const char *p = wpath(gz ? "u8.idx.gz" : "u8.idx");
    write_idx(p, 8, 3, (uint32_t[]){2, 2, 3}, px, 12, gz);
    int rc = mlc_read_idx(p, &a, err, sizeof err);
    bool ok = !rc && a.dtype == MLC_U8 && a.rank == 3 && a.dims[0] == 2 && a.dims[2] == 3 &&
              !memcmp(a.data, px, 12);
    check(ok, gz ? "idx: gzip'd u8 [2, 2, 3]" : "idx: plain u8 [2, 2, 3]", err);
    if (!rc) mlc_array_free(&a);
  }
  unsigned char f4[8] = {0x3f, 0x80, 0, 0, 0xc0, 0x20, 0, 0}; // 1.0, -2.5 big-endian
  write_idx(wpath("f4.idx"), 0x0D, 1, (uint32_t[]){2}, f4, 8, false);
  int rc = mlc_read_idx(wpath("f4.idx"), &a, err, sizeof err);
  check(!rc && mlc_array_get(&a, 0) == 1.0 && mlc_array_get(&a, 1) == -2.5, "idx: f32 big-endian", err);
  if (!rc) mlc_array_free(&a);
  // truncated: the header promises 2 records of 6, the file holds 1.5
  write_idx(wpath("trunc.idx.gz"), 8, 3, (uint32_t[]){2, 2, 3}, px, 9, true);
  rc = mlc_read_idx(wpath("trunc.idx.gz"), &a, err, sizeof err);
  check(rc && strstr(err, "trunc.idx.gz: record 2: truncated"), "idx: truncated file names the record", err);
  spit(wpath("magic.idx"), "\x12\x34\x08\x01\0\0\0\1x", 9);
  rc = mlc_read_idx(wpath("magic.idx"), &a, err, sizeof err);
  check(rc && strstr(err, "magic.idx: not an IDX file"), "idx: wrong magic", err);
}

static void npy_write(const char *path, int major, const char *descr, const char *shape,
                      const void *data, size_t n) {
  char dict[256];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
  int pre = major == 1 ? 10 : 12, total = (pre + len + 1 + 63) / 64 * 64, hlen = total - pre;
  FILE *f = fopen(path, "wb");
  fwrite("\x93NUMPY", 1, 6, f);
  fputc(major, f), fputc(0, f);
  fputc(hlen & 255, f), fputc(hlen >> 8 & 255, f);
  if (major != 1) fputc(0, f), fputc(0, f);
  fwrite(dict, 1, (size_t)len, f);
  for (int i = len; i < hlen - 1; i++) fputc(' ', f);
  fputc('\n', f);
  fwrite(data, 1, n, f);
  fclose(f);
}

static void test_npy(void) {
  float f4[6] = {1, 2, 3, 4, 5, 6.5f};
  double f8[3] = {0.25, -1, 1e300};
  int32_t i4[2] = {-7, 9};
  int64_t i8[2] = {1LL << 40, -3};
  unsigned char u1[4] = {0, 1, 254, 255};
  struct {
    const char *descr, *shape;
    const void *d;
    size_t n;
    MlcDType dt;
    double last;
  } cs[] = {{"<f4", "(2, 3)", f4, 24, MLC_F32, 6.5}, {"<f8", "(3,)", f8, 24, MLC_F64, 1e300},
            {"<i4", "(2,)", i4, 8, MLC_I32, 9},     {"<i8", "(2, 1)", i8, 16, MLC_I64, -3},
            {"|u1", "(4,)", u1, 4, MLC_U8, 255}};
  char err[512] = "", name[64];
  for (int major = 1; major <= 2; major++)
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
      npy_write(wpath("a.npy"), major, cs[i].descr, cs[i].shape, cs[i].d, cs[i].n);
      MlcArray a;
      int rc = mlc_read_npy(wpath("a.npy"), &a, err, sizeof err);
      int64_t n = rc ? 0 : mlc_array_records(&a) * mlc_array_record_size(&a);
      snprintf(name, sizeof name, "npy: v%d %s %s", major, cs[i].descr, cs[i].shape);
      check(!rc && a.dtype == cs[i].dt && mlc_array_get(&a, n - 1) == cs[i].last, name, err);
      if (!rc) mlc_array_free(&a);
    }
  npy_write(wpath("short.npy"), 1, "<f4", "(4, 3)", f4, 24);
  MlcArray a;
  int rc = mlc_read_npy(wpath("short.npy"), &a, err, sizeof err);
  check(rc && strstr(err, "short.npy: record 3: truncated"), "npy: truncated file names the record", err);
}

static void test_csv(void) {
  const char *text = "label,p0,p1\n3, 0.5,1e-3\n\n7,2,-4\n";
  spit(wpath("h.csv"), text, strlen(text));
  char err[512] = "";
  MlcArray a;
  int rc = mlc_read_csv(wpath("h.csv"), 1, &a, err, sizeof err);
  check(!rc && a.dims[0] == 2 && a.dims[1] == 3 && mlc_array_get(&a, 2) == 1e-3 &&
            mlc_array_get(&a, 5) == -4,
        "csv: header, blank line, spaces", err);
  if (!rc) mlc_array_free(&a);
  spit(wpath("nan.csv"), "1,2\n3,nan\n", 10);
  rc = mlc_read_csv(wpath("nan.csv"), 0, &a, err, sizeof err);
  check(rc && strstr(err, "nan.csv: record 2 (line 2): field 2 is NaN"), "csv: NaN is refused", err);
  spit(wpath("ragged.csv"), "1,2\n3\n", 6);
  rc = mlc_read_csv(wpath("ragged.csv"), 0, &a, err, sizeof err);
  check(rc && strstr(err, "record 2 (line 2): 1 fields"), "csv: ragged record", err);
}

static void test_dataset(void) {
  char err[512] = "";
  MlcDataset ds;
  make_synth(wpath("bad-img.gz"), wpath("bad-lab.gz"), 40, 1, 33);
  const char *p2[2] = {wpath("bad-img.gz"), wpath("bad-lab.gz")};
  int rc = mlc_dataset_open(&ds, &mlc_model_fake, 2, p2, 2, false, err, sizeof err);
  check(rc && strstr(err, "bad-lab.gz: record 34: label 11 is out of range 0..9"),
        "dataset: label out of range names file and record", err);
  // one CSV holding both inputs in input order: pixels, then the label;
  // CSV is text, so the IDX sources' scale (for u8 pixels) is not applied
  FILE *f = fopen(wpath("ok.csv"), "w");
  for (int r = 0; r < 3; r++) {
    for (int k = 0; k < 784; k++) fprintf(f, "%d,", (k + r) % 256);
    fprintf(f, "%d\n", r);
  }
  fclose(f);
  const char *p1[1] = {wpath("ok.csv")};
  rc = mlc_dataset_open(&ds, &mlc_model_fake, 2, p1, 1, false, err, sizeof err);
  float x[784];
  int32_t y;
  int64_t idx = 2;
  if (!rc) {
    mlc_dataset_gather(&ds, 0, &idx, 1, x);
    mlc_dataset_gather(&ds, 1, &idx, 1, &y);
  }
  check(!rc && ds.n == 3 && y == 2 && x[1] == 3.0f, "dataset: one CSV for both inputs, in input order",
        err);
  if (!rc) mlc_dataset_free(&ds);
  spit(wpath("narrow.csv"), "1,2,3,4,5\n", 10);
  const char *pn[1] = {wpath("narrow.csv")};
  rc = mlc_dataset_open(&ds, &mlc_model_fake, 2, pn, 1, false, err, sizeof err);
  check(rc && strstr(err, "narrow.csv: record 1: 5 values") && strstr(err, "need 785"),
        "dataset: width that does not match the input type", err);
}

// A label with ignore_index = -100 (the fake model's y, no value limit of
// its own): 0..9 and -100 bind; 11 and -5 are refused naming the record,
// at load and at the API's boundary.
static int bind_labels(const MlcModel *m, const int32_t *ys, int n, char *err, size_t errlen) {
  MlcArray a[2] = {{0}};
  a[0].dtype = MLC_U8, a[0].rank = 2, a[0].dims[0] = n, a[0].dims[1] = 784;
  a[0].data = calloc((size_t)n, 784);
  a[0].path = strdup("mem-x");
  a[1].dtype = MLC_I32, a[1].rank = 1, a[1].dims[0] = n;
  a[1].data = malloc((size_t)n * sizeof *ys);
  memcpy(a[1].data, ys, (size_t)n * sizeof *ys);
  a[1].path = strdup("mem-y");
  MlcDataset ds;
  int rc = mlc_dataset_bind(&ds, m, 2, a, 2, false, err, errlen);
  if (!rc) mlc_dataset_free(&ds);
  return rc;
}

static void test_ignore_labels(void) {
  MlcInputDesc in[2] = {mlc_model_fake.inputs[0], mlc_model_fake.inputs[1]};
  in[1].value_limit = 0, in[1].limit_what = NULL, in[1].has_ignore = 1, in[1].ignore_value = -100;
  MlcModel m = mlc_model_fake;
  m.inputs = in;
  char err[512] = "";
  int32_t ok[4] = {0, -100, 9, -100}, big[4] = {0, 11, -100, 1}, neg[4] = {0, 1, 2, -5};
  check(!bind_labels(&m, ok, 4, err, sizeof err), "ignore_index: labels 0..9 and -100 bind", err);
  check(bind_labels(&m, big, 4, err, sizeof err) &&
            strstr(err, "mem-y: record 2: label 11 is out of range 0..9 and not the ignore_index -100"),
        "ignore_index: label 11 is refused naming the record", err);
  check(bind_labels(&m, neg, 4, err, sizeof err) &&
            strstr(err, "mem-y: record 4: label -5 is out of range 0..9 and not the ignore_index -100"),
        "ignore_index: label -5 is refused naming the record", err);
  MlcInstance *inst = mlc_instance_new(&m, NULL);
  static float x[4 * 784];
  const void *args[2] = {x, neg};
  float loss;
  check(inst && mlc_instance_eval(inst, 4, args, &loss, NULL) &&
            strstr(mlc_instance_error(inst), "eval: in_y[3] (sample 3) is -5, out of range 0..9"),
        "ignore_index: the API refuses label -5", inst ? mlc_instance_error(inst) : "no instance");
  mlc_instance_free(inst);
}

// ---- loader -------------------------------------------------------------------------

// A dataset of n records whose x[0] is the record number.
static int synth_ds(MlcDataset *ds, int n) {
  MlcArray a[2] = {{0}};
  a[0].dtype = MLC_U8, a[0].rank = 2, a[0].dims[0] = n, a[0].dims[1] = 784;
  a[0].data = calloc((size_t)n, 784);
  a[0].path = strdup("mem-x");
  a[1].dtype = MLC_U8, a[1].rank = 1, a[1].dims[0] = n;
  a[1].data = calloc((size_t)n, 1);
  a[1].path = strdup("mem-y");
  for (int i = 0; i < n; i++) ((uint8_t *)a[0].data)[i * 784] = (uint8_t)i;
  char err[256];
  return mlc_dataset_bind(ds, &mlc_model_fake, 2, a, 2, false, err, sizeof err);
}

// The record order of one epoch, read from x[0] of each batch.
static int epoch_order(MlcLoader *l, int *order, int64_t *sizes, int *nb) {
  MlcBatch b;
  int k = 0;
  *nb = 0;
  while (mlc_loader_next(l, &b)) {
    sizes[(*nb)++] = b.size;
    for (int64_t s = 0; s < b.size; s++) order[k++] = (int)lrintf(((const float *)b.inputs[0])[s * 784] * 255);
  }
  return k;
}

static void test_loader(void) {
  MlcDataset ds;
  if (synth_ds(&ds, 10)) {
    check(false, "loader: dataset", NULL);
    return;
  }
  int o1[10], o2[10], o3[10], o4[10], nb;
  int64_t sz[10];
  MlcLoader *l = mlc_loader_new(&ds, 4, true, 42, false, true);
  int n1 = epoch_order(l, o1, sz, &nb);
  check(nb == 3 && sz[0] == 4 && sz[1] == 4 && sz[2] == 2,
        "loader: 10 samples, batch 4 -> 4, 4, 2 (last partial batch delivered)", NULL);
  int n2 = epoch_order(l, o2, sz, &nb);
  bool perm = n1 == 10 && n2 == 10, differ = false;
  int seen[10] = {0};
  for (int i = 0; i < 10; i++) seen[o1[i]]++, differ |= o1[i] != o2[i];
  for (int i = 0; i < 10; i++) perm = perm && seen[i] == 1;
  check(perm, "loader: an epoch is a permutation", NULL);
  check(differ, "loader: the order differs between epochs", NULL);
  mlc_loader_free(l);
  l = mlc_loader_new(&ds, 4, true, 42, false, false); // same seed, no prefetch
  epoch_order(l, o3, sz, &nb);
  check(!memcmp(o1, o3, sizeof o1), "loader: order reproducible from the seed", NULL);
  mlc_loader_seek(l, 1, 4);
  int n4 = epoch_order(l, o4, sz, &nb);
  check(n4 == 6 && !memcmp(o4, o2 + 4, 6 * sizeof(int)), "loader: seek to (epoch, pos) resumes the order", NULL);
  mlc_loader_free(l);
  l = mlc_loader_new(&ds, 4, false, 42, false, true);
  epoch_order(l, o3, sz, &nb);
  bool ident = true;
  for (int i = 0; i < 10; i++) ident = ident && o3[i] == i;
  check(ident, "loader: no shuffle keeps file order", NULL);
  mlc_loader_free(l);
  l = mlc_loader_new(&ds, 4, true, 42, true, true);
  epoch_order(l, o3, sz, &nb);
  check(nb == 2, "loader: drop_last drops the partial batch", NULL);
  mlc_loader_free(l);
  // A pool with a thread per CPU: the loader gathers on it, no prefetch thread.
  MlcPool *pool = mlc_pool_new(0);
  l = mlc_loader_new(&ds, 4, true, 42, false, true);
  mlc_loader_set_pool(l, pool);
  epoch_order(l, o3, sz, &nb);
  check(!memcmp(o1, o3, sizeof o1) && nb == 3, "loader: batches gathered on the pool are the same", NULL);
  mlc_loader_free(l);
  mlc_pool_free(pool);
  mlc_dataset_free(&ds);
}

// The u8 -> f32 conversion of image records is (float)((double)v * sc) for
// every byte value, whatever the path (AVX-512 or the table), at widths
// that end inside a vector.
static void test_gather_u8(void) {
  uint8_t p[256 + 7];
  float q[256 + 7], lut[256];
  const double scales[] = {1.0 / 255, 0.1, 3.0};
  bool ok = true;
  for (int i = 0; i < 256 + 7; i++) p[i] = (uint8_t)(i * 37 + 11);
  for (int k = 0; k < 3; k++) {
    for (int v = 0; v < 256; v++) lut[v] = (float)((double)v * scales[k]);
    for (int w = 0; w < 256 + 7; w += 17) {
      memset(q, 0, sizeof q);
      mlc_gather_u8_f32(p, q, w, scales[k], lut);
      for (int j = 0; j < w; j++) ok = ok && !memcmp(&q[j], &lut[p[j]], sizeof(float));
      for (int j = w; j < 256 + 7; j++) ok = ok && q[j] == 0;
    }
  }
  check(ok, "data: u8 records convert to (float)(v * scale) bit for bit", NULL);
}

// ---- checkpoints --------------------------------------------------------------------

static void test_checkpoint(void) {
  const MlcModel *m = &mlc_model_fake;
  void *st[4], *st2[4];
  for (int i = 0; i < 4; i++) {
    size_t n = 4;
    for (int k = 0; k < m->states[i].rank; k++) n *= (size_t)m->states[i].shape[k];
    st[i] = calloc(1, n), st2[i] = calloc(1, n);
  }
  mlc_init_state(m, 3, st);
  MlcRunState rs = {.epoch = 2, .pos = 128, .step = 77, .rng = {3, 77}, .seed = 3, .lr = 0.125};
  MlcRunState back = {0};
  char err[512] = "";
  const char *p = wpath("ck.safetensors");
  int rc = mlc_ckpt_save(p, m, st, &rs, err, sizeof err);
  if (!rc) rc = mlc_ckpt_load(p, m, st2, &back, err, sizeof err);
  check(!rc && !memcmp(st[0], st2[0], 784 * 10 * 4) && back.epoch == 2 && back.pos == 128 &&
            back.step == 77 && back.rng.counter == 77 && back.lr == 0.125,
        "checkpoint: round trip of state and run state", err);
  MlcModel other = *m;
  other.hash = "0123456789abcdef";
  rc = mlc_ckpt_load(p, &other, st2, &back, err, sizeof err);
  check(rc && strstr(err, "checkpoint of another model"), "checkpoint: another model's hash is refused", err);
  // flip one byte of tensor data (the file's last byte)
  char *b = NULL;
  size_t n;
  FILE *f = fopen(p, "rb");
  fseek(f, 0, SEEK_END);
  n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  b = malloc(n);
  if (fread(b, 1, n, f) != n) n = 0;
  fclose(f);
  b[n - 5] ^= 0x40;
  spit(wpath("bad.safetensors"), b, n);
  rc = mlc_ckpt_load(wpath("bad.safetensors"), m, st2, &back, err, sizeof err);
  check(rc && strstr(err, "corrupted: checksum"), "checkpoint: flipped data bit is refused", err);
  spit(wpath("cut.safetensors"), b, n / 2);
  rc = mlc_ckpt_load(wpath("cut.safetensors"), m, st2, &back, err, sizeof err);
  check(rc && strstr(err, "cut.safetensors"), "checkpoint: truncated file is refused", err);
  free(b);
  for (int i = 0; i < 4; i++) free(st[i]), free(st2[i]);
}

// ---- the driver, end to end ---------------------------------------------------------

// Train data arguments: Fashion-MNIST if installed, else a generated set.
static char train_args[2048];
static bool real_data;

static void pick_data(void) {
  const char *d = "/usr/share/datasets/fashion-mnist/";
  char p[512];
  snprintf(p, sizeof p, "%strain-images-idx3-ubyte.gz", d);
  real_data = access(p, R_OK) == 0;
  if (real_data) {
    snprintf(train_args, sizeof train_args, "--threads 2");
    return;
  }
  make_synth(wpath("s-train-x.gz"), wpath("s-train-y.gz"), 6000, 7, -1);
  make_synth(wpath("s-test-x.gz"), wpath("s-test-y.gz"), 1000, 8, -1);
  snprintf(train_args, sizeof train_args, "--threads 2 --train-data %s,%s --test-data %s,%s",
           wpath("s-train-x.gz"), wpath("s-train-y.gz"), wpath("s-test-x.gz"), wpath("s-test-y.gz"));
}

// stdout without the timing fields (img/s, time), which differ run to run.
static char *loss_log(void) {
  char *s = slurp(wpath("out")), *o = s;
  for (char *p = s; *p;) {
    if (!strncmp(p, " img/s ", 7) || !strncmp(p, " time ", 6)) {
      p++;
      while (*p && *p != ' ' && *p != '\n') p++; // the key
      p++;
      while (*p && *p != ' ' && *p != '\n') p++; // the value
      continue;
    }
    *o++ = *p++;
  }
  *o = 0;
  return s;
}

static void test_train(void) {
  char args[4096];
  snprintf(args, sizeof args, "train %s --epochs 1 --run-record %s --metrics %s", train_args,
           wpath("rr.json"), wpath("m.jsonl"));
  int rc = run(args);
  char *log1 = loss_log();
  char *rr_text = slurp(wpath("rr.json"));
  cJSON *rr = cJSON_Parse(rr_text);
  free(rr_text);
  cJSON *fin = cJSON_GetObjectItem(rr, "final");
  double acc = cJSON_GetNumberValue(cJSON_GetObjectItem(fin, "test_accuracy"));
  char d[128];
  snprintf(d, sizeof d, "exit %d, test accuracy %.4f (%s)", rc, acc, real_data ? "Fashion-MNIST" : "generated");
  check(rc == 0 && acc > 0.75, "train: 1 epoch reaches test accuracy > 0.75", d);
  printf("       %s\n", d);
  bool fields = rr && cJSON_IsString(cJSON_GetObjectItem(rr, "model")) &&
                cJSON_IsString(cJSON_GetObjectItem(rr, "hash")) &&
                cJSON_IsString(cJSON_GetObjectItem(rr, "compiler")) &&
                cJSON_IsNumber(cJSON_GetObjectItem(rr, "seed")) &&
                cJSON_IsObject(cJSON_GetObjectItem(rr, "hyperparameters")) &&
                cJSON_GetArraySize(cJSON_GetObjectItem(rr, "epochs")) == 1;
  const char *keys[] = {"train_loss", "test_loss", "test_accuracy", "images_per_second", "seconds"};
  for (int i = 0; i < 5; i++) fields = fields && cJSON_IsNumber(cJSON_GetObjectItem(fin, keys[i]));
  check(fields, "train: run record has model, hash, compiler, seed, hyperparameters, epochs, final", NULL);
  cJSON_Delete(rr);
  char *metrics = slurp(wpath("m.jsonl"));
  check(strstr(metrics, "\"type\":\"epoch\"") && strstr(metrics, "\"grad_norm\""), "train: metrics JSON lines", NULL);
  free(metrics);
  rc = run(args);
  char *log2 = loss_log();
  check(rc == 0 && strlen(log1) > 100 && !strcmp(log1, log2), "train: same seed, identical loss log", NULL);
  free(log1), free(log2);
}

static bool same_file(const char *a, const char *b) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, b);
  return system(cmd) == 0;
}

static void test_resume(void) {
  char args[4096];
  snprintf(args, sizeof args, "train %s --epochs 2 --checkpoint %s", train_args, wpath("full.st"));
  int rc1 = run(args);
  snprintf(args, sizeof args, "train %s --epochs 1 --checkpoint %s", train_args, wpath("half.st"));
  int rc2 = run(args);
  snprintf(args, sizeof args, "train %s --epochs 2 --checkpoint %s --resume", train_args, wpath("half.st"));
  int rc3 = run(args);
  check(!rc1 && !rc2 && !rc3 && same_file(wpath("full.st"), wpath("half.st")),
        "resume: 2 epochs == 1 epoch + checkpoint + resume, byte for byte", NULL);
  snprintf(args, sizeof args, "train %s --epochs 2 --max-steps 700 --threads 1 --checkpoint %s",
           train_args, wpath("mid.st"));
  rc1 = run(args);
  snprintf(args, sizeof args, "train %s --epochs 2 --checkpoint %s --resume", train_args, wpath("mid.st"));
  rc2 = run(args);
  check(!rc1 && !rc2 && same_file(wpath("full.st"), wpath("mid.st")),
        "resume: from a mid-epoch checkpoint (other thread count), byte for byte", NULL);
  snprintf(args, sizeof args, "eval --weights %s", wpath("full.st"));
  if (!real_data) snprintf(args, sizeof args, "eval --weights %s --data %s,%s", wpath("full.st"),
                           wpath("s-test-x.gz"), wpath("s-test-y.gz"));
  int rc = run(args);
  char *out = slurp(wpath("out"));
  check(rc == 0 && strstr(out, "accuracy 0."), "eval: prints loss and accuracy", out);
  free(out);
}

// SIGKILL at random points while checkpoints are written every step: the file
// on disk always loads (old or new), training resumed from it to the end
// gives the uninterrupted run's checkpoint byte for byte, and no temporary
// file is left once a run completes.
static void kill_run(const char *ck, const char *data, bool resume) {
  int nul = open("/dev/null", O_WRONLY);
  dup2(nul, 1), dup2(nul, 2);
  if (resume)
    execl(fake, fake, "train", "--train-data", data, "--test-data", data, "--epochs", "20", "--batch",
          "32", "--checkpoint", ck, "--checkpoint-every", "1", "--threads", "1", "--resume",
          (char *)NULL);
  execl(fake, fake, "train", "--train-data", data, "--test-data", data, "--epochs", "20", "--batch",
        "32", "--checkpoint", ck, "--checkpoint-every", "1", "--threads", "1", (char *)NULL);
  _exit(127);
}

static int temps_left(const char *ck) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "ls %s.tmp.* 2>/dev/null | wc -l", ck);
  FILE *ls = popen(cmd, "r");
  int n = -1;
  if (ls && fscanf(ls, "%d", &n) != 1) n = -1;
  if (ls) pclose(ls);
  return n;
}

static void test_kill(void) {
  make_synth(wpath("k-x.gz"), wpath("k-y.gz"), 256, 3, -1);
  const char *ck = wpath("kill.st"), *full = wpath("kill-full.st");
  char data[2048];
  snprintf(data, sizeof data, "%s,%s", wpath("k-x.gz"), wpath("k-y.gz"));
  unlink(ck);
  srand(12345);
  int loads = 0, broken = 0;
  char err[512] = "", first_err[512] = "";
  for (int it = 0; it < 25; it++) {
    pid_t pid = fork();
    if (pid == 0) kill_run(ck, data, access(ck, R_OK) == 0);
    struct timespec ts = {0, (long)(20 + rand() % 80) * 1000000L};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (access(ck, R_OK) != 0) continue;
    static float w[4][7840];
    void *st[4] = {w[0], w[1], w[2], w[3]};
    MlcRunState rs;
    if (mlc_ckpt_load(ck, &mlc_model_fake, st, &rs, err, sizeof err)) {
      if (!broken++) snprintf(first_err, sizeof first_err, "%s", err);
    } else {
      loads++;
    }
  }
  char d[600];
  snprintf(d, sizeof d, "%d loads, %d broken, %d temp files left by the last kill %s", loads, broken,
           temps_left(ck), first_err);
  check(loads > 5 && broken == 0, "kill: SIGKILL while writing checkpoints never leaves a broken one", d);
  printf("       %s\n", d);
  int status[2];
  for (int k = 0; k < 2; k++) {
    pid_t pid = fork();
    if (pid == 0) kill_run(k ? full : ck, data, k == 0);
    waitpid(pid, &status[k], 0);
  }
  check(WIFEXITED(status[0]) && !WEXITSTATUS(status[0]) && WIFEXITED(status[1]) &&
            !WEXITSTATUS(status[1]) && same_file(ck, full),
        "kill: resumed to the end after 25 kills, the checkpoint equals the uninterrupted run's", NULL);
  check(temps_left(ck) == 0, "kill: a completed run leaves no temporary checkpoint file", NULL);
}

// Every single-bit flip of a checkpoint's header is refused or changes
// nothing (a flip the validator or the checksum cannot see would resume
// with other values); a flip in the data is always refused.
static void test_bit_flips(void) {
  const MlcModel *m = &mlc_model_fake;
  static float a[4][7840], b[4][7840];
  void *sa[4] = {a[0], a[1], a[2], a[3]}, *sb[4] = {b[0], b[1], b[2], b[3]};
  mlc_init_state(m, 9, sa);
  MlcRunState rs = {.epoch = 3, .pos = 96, .step = 1234, .rng = {9, 1240}, .seed = 9,
                    .lr = 0.05, .batch = 32, .data_crc = 0xabcdef01u};
  snprintf(rs.data, sizeof rs.data, "x.idx (60000 records),y.idx (60000 records)");
  char err[512] = "";
  const char *p = wpath("flip.st"), *q = wpath("flipped.st");
  MlcRunState want, got;
  if (mlc_ckpt_save(p, m, sa, &rs, err, sizeof err) || mlc_ckpt_load(p, m, sa, &want, err, sizeof err)) {
    check(false, "flips: a checkpoint to flip", err);
    return;
  }
  char *raw = slurp_bin(p);
  size_t n = slurp_len, hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | (unsigned char)raw[i];
  int silent = 0, same = 0, refused = 0;
  char first[700] = "";
  for (size_t bit = 0; bit < 8 * (8 + hlen); bit++) {
    raw[bit / 8] ^= (char)(1 << bit % 8);
    spit(q, raw, n);
    raw[bit / 8] ^= (char)(1 << bit % 8);
    memset(b, 0, sizeof b);
    if (mlc_ckpt_load(q, m, sb, &got, err, sizeof err)) {
      refused++;
      continue;
    }
    bool eq = !memcmp(a, b, sizeof a) && got.epoch == want.epoch && got.pos == want.pos &&
              got.step == want.step && got.rng.key == want.rng.key && got.rng.counter == want.rng.counter &&
              got.seed == want.seed && got.lr == want.lr && got.batch == want.batch &&
              got.data_crc == want.data_crc && !strcmp(got.data, want.data);
    eq ? same++ : silent++;
    if (!eq && !first[0]) snprintf(first, sizeof first, "bit %zu resumes with other values", bit);
  }
  char d[800];
  snprintf(d, sizeof d, "%zu header bits: %d refused, %d harmless, %d silently different %s",
           8 * (8 + hlen), refused, same, silent, first);
  check(silent == 0 && refused > 0, "flips: no single-bit flip of the header resumes silently", d);
  printf("       %s\n", d);
  int data_ok = 0;
  for (size_t at = 8 + hlen; at < n; at += 97) {
    raw[at] ^= 8;
    spit(q, raw, n);
    raw[at] ^= 8;
    data_ok += mlc_ckpt_load(q, m, sb, &got, err, sizeof err) == 0;
  }
  check(data_ok == 0, "flips: every flipped data byte is refused (checksum)", err);
  free(raw);
}

// Runs rt_fake with args and checks: exit 1, one stderr line holding `want`.
static void expect_fail(const char *name, const char *args, const char *want) {
  int rc = run(args);
  char *e = slurp(wpath("err"));
  char *nl = strchr(e, '\n');
  bool one = nl && !nl[1];
  check(rc == 1 && one && strstr(e, want), name, e);
  free(e);
}

static void test_bad_data(void) {
  char args[4096], x[1024], y[1024];
  make_synth(wpath("g-x.gz"), wpath("g-y.gz"), 100, 5, -1);
  snprintf(x, sizeof x, "%s", wpath("g-x.gz"));
  snprintf(y, sizeof y, "%s", wpath("g-y.gz"));
  // truncated gzip'd labels
  FILE *f = fopen(x, "rb");
  unsigned char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  spit(wpath("t-x.gz"), buf, n * 2 / 3);
  snprintf(args, sizeof args, "train --train-data %s,%s --test-data %s,%s", wpath("t-x.gz"), y, x, y);
  expect_fail("bad data: truncated gzip'd IDX", args, "t-x.gz: record ");
  spit(wpath("m-y.idx"), "\x00\x00\x08\x09\0\0\0\1x", 9);
  snprintf(args, sizeof args, "train --train-data %s,%s --test-data %s,%s", x, wpath("m-y.idx"), x, y);
  expect_fail("bad data: wrong magic", args, "m-y.idx: not an IDX file");
  make_synth(wpath("r-x.gz"), wpath("r-y.gz"), 100, 5, 56);
  snprintf(args, sizeof args, "train --train-data %s,%s --test-data %s,%s", x, wpath("r-y.gz"), x, y);
  expect_fail("bad data: label out of range", args, "r-y.gz: record 57: label 11 is out of range 0..9");
  f = fopen(wpath("n.csv"), "w");
  for (int r = 0; r < 4; r++) {
    fprintf(f, "%d", r);
    for (int k = 0; k < 784; k++) fprintf(f, r == 2 && k == 300 ? ",nan" : ",%d", k % 200);
    fprintf(f, "\n");
  }
  fclose(f);
  snprintf(args, sizeof args, "train --train-data %s --test-data %s", wpath("n.csv"), wpath("n.csv"));
  expect_fail("bad data: NaN in a CSV", args, "n.csv: record 3 (line 3): field 302 is NaN");
  snprintf(args, sizeof args, "train --train-data %s --test-data %s", wpath("narrow.csv"), wpath("narrow.csv"));
  expect_fail("bad data: CSV width does not match the input type", args, "narrow.csv: record 1: 5 values");
  unsigned char *zeros = calloc(100, 27 * 28);
  write_idx(wpath("w-x.idx"), 8, 3, (uint32_t[]){100, 27, 28}, zeros, 100 * 27 * 28, false);
  free(zeros);
  snprintf(args, sizeof args, "train --train-data %s,%s --test-data %s,%s", wpath("w-x.idx"), y, x, y);
  expect_fail("bad data: IDX 27x28 images for a 784 input", args, "w-x.idx: record 1: 756 values, but input x: f32[784] needs 784");
}

static void test_cli(void) {
  char args[4096];
  int hrc = run("--help");
  char *help = slurp(wpath("out"));
  check(hrc == 0 && strstr(help, "usage:"), "cli: --help exits 0", NULL);
  free(help);
  check(run("frobnicate") == 2, "cli: unknown command exits 2", NULL);
  check(run("train --epochs -3") == 2, "cli: bad option value exits 2", NULL);
  check(run("eval --data x") == 2, "cli: eval without --weights exits 2", NULL);
  MlcModel other = mlc_model_fake;
  other.hash = "feedfacecafe";
  static float w[4][7840];
  void *st[4] = {w[0], w[1], w[2], w[3]};
  MlcRunState rs = {.rng = {0, 0}};
  char err[256];
  mlc_ckpt_save(wpath("other.st"), &other, st, &rs, err, sizeof err);
  snprintf(args, sizeof args, "predict --weights %s /dev/null", wpath("other.st"));
  expect_fail("cli: weights of another model are refused", args, "checkpoint of another model");
  snprintf(args, sizeof args, "eval --weights %s --data %s,%s", wpath("bad.safetensors"), wpath("g-x.gz"), wpath("g-y.gz"));
  expect_fail("cli: corrupted weights are refused", args, "corrupted: checksum");
  // predict: two samples on stdin, one per line
  FILE *f = fopen(wpath("in.txt"), "w");
  for (int r = 0; r < 2; r++) {
    for (int k = 0; k < 784; k++) fprintf(f, "%s%d", k ? " " : "", (k * (r + 3)) % 256);
    fprintf(f, "\n");
  }
  fclose(f);
  snprintf(args, sizeof args, "predict --weights %s - < %s", wpath("full.st"), wpath("in.txt"));
  int rc = run(args);
  char *out = slurp(wpath("out"));
  int lines = 0;
  for (char *p = out; *p; p++) lines += *p == '\n';
  check(rc == 0 && lines == 2, "predict: one line of class + probabilities per stdin sample", out);
  free(out);
  snprintf(args, sizeof args, "train %s --epochs 1 --lr 1e38 --check-finite", train_args);
  expect_fail("check-finite: names the step and the source op", args, "at fake.model:3:47 (matmul)");
}

// train --weights starts from a file's parameters (fresh optimizer state) and
// refuses one whose names or shapes do not fit; with --no-shuffle the data
// comes in file order, so the seed no longer changes the losses.
static double first_loss(void) {
  char *s = slurp(wpath("out")), *p = strstr(s, " loss ");
  double v = p ? strtod(p + 6, NULL) : NAN;
  free(s);
  return v;
}

// A weights file without mlc metadata (as PyTorch writes one): fc.w as
// [wrows, 784] under the name `wname`, and fc.b.
static void write_weights(const char *path, const char *wname, int64_t wrows) {
  static float w[10 * 784], b[10];
  char err[256];
  MlcSt *st = mlc_st_new();
  mlc_st_add(st, wname, MLC_ST_F32, 2, (int64_t[]){wrows, 784}, w, err, sizeof err);
  mlc_st_add(st, "fc.b", MLC_ST_F32, 1, (int64_t[]){10}, b, err, sizeof err);
  mlc_st_save(st, path, err, sizeof err);
  mlc_st_close(st);
}

static void test_weights(void) {
  char args[4096], d[128];
  const char *steps = "--epochs 1 --max-steps 3 --log-every 1";
  snprintf(args, sizeof args, "train %s %s", train_args, steps);
  int rc1 = run(args);
  double fresh = first_loss();
  snprintf(args, sizeof args, "train %s %s --weights %s", train_args, steps, wpath("full.st"));
  int rc2 = run(args);
  double trained = first_loss();
  snprintf(d, sizeof d, "first loss %.4f from the initialisers, %.4f from full.st", fresh, trained);
  check(!rc1 && !rc2 && trained < 0.6 * fresh, "weights: train --weights starts from the file", d);
  char *logs[4];
  for (int k = 0; k < 4; k++) {
    snprintf(args, sizeof args, "train %s %s --weights %s --seed %d%s", train_args, steps,
             wpath("full.st"), 1 + k % 2, k < 2 ? " --no-shuffle" : "");
    rc1 |= run(args);
    logs[k] = loss_log();
  }
  check(!rc1 && !strcmp(logs[0], logs[1]), "weights: --no-shuffle, two seeds, identical losses", NULL);
  check(!rc1 && strcmp(logs[2], logs[3]), "weights: shuffled, two seeds, different losses", NULL);
  for (int k = 0; k < 4; k++) free(logs[k]);
  write_weights(wpath("shape.st"), "fc.w", 3);
  snprintf(args, sizeof args, "train %s %s --weights %s", train_args, steps, wpath("shape.st"));
  expect_fail("weights: a wrong shape is refused", args,
              "tensor 'fc.w' is F32[3, 784], but the model's is F32[10, 784]");
  write_weights(wpath("names.st"), "fc.weight", 10);
  snprintf(args, sizeof args, "train %s %s --weights %s", train_args, steps, wpath("names.st"));
  expect_fail("weights: an unknown name is refused", args,
              "tensor 'fc.weight' is not a state of model");
  snprintf(args, sizeof args, "train --weights %s --resume --checkpoint %s", wpath("full.st"),
           wpath("full.st"));
  check(run(args) == 2, "weights: --weights with --resume exits 2", NULL);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_runtime RT_FAKE WORKDIR\n");
    return 2;
  }
  fake = argv[1], work = argv[2];
  // A fresh work dir: files an earlier run (or an older build) left there
  // would count as this run's leftovers (temps_left).
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
  if (system(cmd) != 0) fprintf(stderr, "test_runtime: cannot clear %s\n", work);
  mkdir(work, 0755);
  test_rng();
  test_pool();
  test_idx();
  test_gather_u8();
  test_npy();
  test_csv();
  test_dataset();
  test_ignore_labels();
  test_loader();
  test_checkpoint();
  test_bit_flips();
  pick_data();
  test_train();
  test_resume();
  test_kill();
  test_bad_data();
  test_cli();
  test_weights();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
