// infer_bench.c — inference timings of a model compiled with `mlc build
// --emit lib`, through the generated C API (docs/embedding.md): batch-1
// latency and batch-256 throughput of NAME_predict. bench/side_by_side.py
// compiles it once per model:
//
//   cc -O2 -DNAME=fashion_mlp -DUPPER=FASHION_MLP -include DIR/fashion_mlp.h \
//      bench/infer_bench.c DIR/libfashion_mlp.a -lz -lcjson -lm -lpthread
//   ./infer_bench THREADS
//
// Prints two lines: "latency_us B1 <median>" and "throughput_img_s B256 <median>",
// medians of 7 timed repeats of >= 20 ms each (inputs pseudo-random in [0, 1)).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define API(f) CAT(CAT(mlc_, NAME), f)
#define MACRO(m) CAT(CAT(MLC_, UPPER), m)

enum { REPEATS = 7 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

// Median seconds per predict call of `batch` samples.
static double time_predict(API() *m, int64_t batch, const float *x, float *out) {
  int64_t calls = 0;
  double t0 = now(), t[REPEATS];
  while (now() - t0 < 0.02) API(_predict)(m, batch, x, out), calls++;
  for (int r = 0; r < REPEATS; r++) {
    double s = now();
    for (int64_t i = 0; i < calls; i++)
      if (API(_predict)(m, batch, x, out)) {
        fprintf(stderr, "infer_bench: %s\n", API(_error)(m));
        exit(1);
      }
    t[r] = (now() - s) / (double)calls;
  }
  qsort(t, REPEATS, sizeof t[0], cmp);
  return t[REPEATS / 2];
}

int main(int argc, char **argv) {
  API(_options) opt = API(_default_options)();
  opt.threads = argc > 1 ? atoi(argv[1]) : 1;
  opt.max_batch = 256;
  API() *m = API(_create)(&opt);
  if (!m) return fprintf(stderr, "infer_bench: cannot create the model\n"), 1;
  float *x = malloc(256 * MACRO(_X_SIZE) * sizeof *x), *out = malloc(256 * MACRO(_NUM_OUT) * sizeof *out);
  uint32_t s = 1;
  for (int64_t i = 0; i < 256 * MACRO(_X_SIZE); i++) s = s * 1664525u + 1013904223u, x[i] = (float)(s >> 8) / 16777216.0f;
  printf("latency_us B1 %.2f\n", time_predict(m, 1, x, out) * 1e6);
  printf("throughput_img_s B256 %.0f\n", 256 / time_predict(m, 256, x, out));
  API(_destroy)(m);
  free(x), free(out);
  return 0;
}
