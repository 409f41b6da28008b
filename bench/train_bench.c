// train_bench.c — train-step timings of a model compiled with `mlc build
// --emit lib` (docs/embedding.md): NAME_train_step over Fashion-MNIST's
// training images in file order (on one fixed batch the updates grew
// several times slower than on real data, likely subnormal gradients),
// each step timed alone, so that a shared machine's preemptions show as
// outliers instead of inflating the figure. For fashion_mlp (x: 784 floats).
//
//   mlc build examples/fashion_mlp.model --emit lib -o DIR/libfashion_mlp.a
//   cc -O2 -DNAME=fashion_mlp -DUPPER=FASHION_MLP -include DIR/fashion_mlp.h
//      bench/train_bench.c DIR/libfashion_mlp.a -lz -lcjson -lm -lpthread   (one line)
//   ./train_bench THREADS [STEPS] [BATCH]
//
// Prints "train_step_us B<batch> min <min> p10 <p10> median <median> total
// <s>" over STEPS (default 2000) steps after 100 warm-up steps, and a hash
// of the final weights' bits: two builds (or thread counts) that computed
// the same steps print the same hash (the data order and the seed are fixed).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define API(f) CAT(CAT(mlc_, NAME), f)
#define MACRO(m) CAT(CAT(MLC_, UPPER), m)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { IMAGES = 60000, PIXELS = 784 };
#define DATA "/usr/share/datasets/fashion-mnist/"

// n bytes after a header of `skip` bytes of a gzip'd IDX file.
static unsigned char *idx(const char *path, int skip, size_t n) {
  gzFile f = gzopen(path, "rb");
  unsigned char *d = malloc(n + (size_t)skip);
  if (!f || !d || gzread(f, d, (unsigned)(n + (size_t)skip)) != (int)(n + (size_t)skip)) {
    fprintf(stderr, "train_bench: cannot read %s\n", path);
    exit(1);
  }
  gzclose(f);
  memmove(d, d + skip, n);
  return d;
}

static void step(API() *m, int64_t batch, const float *x, const int32_t *y) {
  float loss;
  if (API(_train_step)(m, batch, x, y, &loss)) {
    fprintf(stderr, "train_bench: %s\n", API(_error)(m));
    exit(1);
  }
}

int main(int argc, char **argv) {
  API(_options) opt = API(_default_options)();
  opt.threads = argc > 1 ? atoi(argv[1]) : 1;
  int64_t steps = argc > 2 ? atoll(argv[2]) : 2000, batch = argc > 3 ? atoll(argv[3]) : 64;
  if (steps < 1 || batch < 1 || batch > IMAGES)
    return fprintf(stderr, "usage: train_bench THREADS [STEPS] [BATCH <= %d]\n", IMAGES), 2;
  opt.max_batch = batch;
  API() *m = API(_create)(&opt);
  if (!m) return fprintf(stderr, "train_bench: cannot create the model\n"), 1;
  unsigned char *px = idx(DATA "train-images-idx3-ubyte.gz", 16, (size_t)IMAGES * PIXELS);
  unsigned char *lb = idx(DATA "train-labels-idx1-ubyte.gz", 8, IMAGES);
  float *x = malloc((size_t)IMAGES * PIXELS * sizeof *x);
  int32_t *y = malloc((size_t)IMAGES * sizeof *y);
  double *t = malloc((size_t)steps * sizeof *t), total = 0;
  for (size_t i = 0; i < (size_t)IMAGES * PIXELS; i++) x[i] = (float)px[i] * (1.0f / 255);
  for (int i = 0; i < IMAGES; i++) y[i] = lb[i];
  int64_t batches = IMAGES / batch;
  for (int64_t i = 0; i < 100 + steps; i++) {
    int64_t o = i % batches * batch;
    double t0 = now();
    step(m, batch, x + o * PIXELS, y + o);
    if (i >= 100) t[i - 100] = now() - t0, total += t[i - 100];
  }
  // Medians of each window of WINDOW steps, in run order: a step late in
  // training against an early one (dead units' momentum decays into
  // subnormals after ~1000 steps, kernels.md).
  enum { WINDOW = 1000 };
  for (int64_t w0 = 0; steps >= 2 * WINDOW && w0 + WINDOW <= steps; w0 += WINDOW) {
    double *wt = malloc(WINDOW * sizeof *wt);
    memcpy(wt, t + w0, WINDOW * sizeof *wt);
    qsort(wt, WINDOW, sizeof wt[0], cmp);
    printf("steps %lld-%lld median %.1f us\n", (long long)(w0 + 100), (long long)(w0 + 100 + WINDOW - 1),
           wt[WINDOW / 2] * 1e6);
    free(wt);
  }
  qsort(t, (size_t)steps, sizeof t[0], cmp);
  printf("train_step_us B%lld min %.1f p10 %.1f median %.1f total %.3f s\n", (long long)batch,
         t[0] * 1e6, t[steps / 10] * 1e6, t[steps / 2] * 1e6, total);
  const char *moms[] = {"opt.fc1.w.momentum_buffer", "opt.fc2.w.momentum_buffer"};
  for (int p = 0; p < 2; p++) { // subnormal momentum: each update's multiply by 0.9 of one is an assist
    int64_t numel = 0, sub = 0;
    const float *v = API(_state)(m, moms[p], &numel);
    for (int64_t i = 0; v && i < numel; i++) sub += v[i] != 0 && fabsf(v[i]) < 1.17549435e-38f;
    if (v) printf("%s: %lld of %lld subnormal\n", moms[p], (long long)sub, (long long)numel);
  }
  uint64_t sum = 0;
  int64_t n = 0;
  const char *paths[] = {"fc1.w", "fc1.b", "fc2.w", "fc2.b", "fc3.w", "fc3.b"};
  for (int p = 0; p < 6; p++) {
    int64_t numel = 0;
    const float *w = API(_state)(m, paths[p], &numel);
    for (int64_t i = 0; w && i < numel; i++) {
      uint32_t u;
      memcpy(&u, &w[i], sizeof u);
      sum = sum * 31 + u, n++;
    }
  }
  printf("weights %lld floats, hash %016llx\n", (long long)n, (unsigned long long)sum);
  API(_destroy)(m);
  free(x), free(y), free(t), free(px), free(lb);
  return 0;
}
