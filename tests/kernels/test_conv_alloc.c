// test_conv_alloc.c — a pooled forward that does not store y (predict)
// allocates nothing per call once warm: at batch 1 the call is cut into
// pieces and the pool needs the whole y, which came from a malloc per call
// (conv1 of fashion_cnn: 100 KB, trimmed and faulted back in every call).
// The test is linked with -Wl,--wrap=malloc,--wrap=calloc, so every malloc
// and calloc of the kernels passes through the counters below, which count
// blocks of 4 KiB or more (a temporary; a worker that joins a call late
// callocs its 144-byte scratch table once, and the scratch itself grows
// through aligned_alloc, once per thread and size: neither is counted). yp must keep the bits of mlc_conv2d then
// mlc_max_pool2d, and a y above the scratch's limit (CONV_YTEMP_MAX_BYTES)
// still works, through malloc.
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "rand_data.h"
#include "unit.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
static atomic_long allocs;
enum { COUNTED_BYTES = 4096 };
void *__wrap_malloc(size_t n) {
  if (n >= COUNTED_BYTES) atomic_fetch_add(&allocs, 1);
  return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t s) {
  if (n * s >= COUNTED_BYTES) atomic_fetch_add(&allocs, 1);
  return __real_calloc(n, s);
}

// One geometry: NCHW x [n, c, h, w], o 3x3 filters, pad 1, relu, then the
// 2x2 max; `warm` calls first, then `calls` counted ones.
static void check_geometry(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int threads, bool expect_none) {
  int64_t g[MLC_CONV_GEOM] = {n, c, h, w, o, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  int64_t ny = n * o * h * w, np = n * o * (h / 2) * (w / 2);
  float *x = rand_buf(n * c * h * w), *wt = rand_buf(o * c * 9), *b = rand_buf(o);
  float *y0 = malloc((size_t)ny * 4), *p0 = malloc((size_t)np * 4), *p = malloc((size_t)np * 4);
  MlcPool *pool = threads ? mlc_pool_new(threads) : NULL;
  int rc = mlc_conv2d(pool, g, MLC_CONV_RELU, x, wt, b, y0) |
           mlc_max_pool2d(pool, n, o, h, w, 2, 2, 2, 2, y0, p0);
  bool same = true;
  for (int i = 0; i < 4; i++) { // warm: the scratch of every thread grows
    rc |= mlc_conv2d_pool(pool, g, MLC_CONV_RELU, x, wt, b, NULL, p);
    same &= !memcmp(p, p0, (size_t)np * 4);
  }
  long before = atomic_load(&allocs);
  for (int i = 0; i < 20; i++) {
    memset(p, 0xff, (size_t)np * 4);
    rc |= mlc_conv2d_pool(pool, g, MLC_CONV_RELU, x, wt, b, NULL, p);
    same &= !memcmp(p, p0, (size_t)np * 4);
  }
  long counted = atomic_load(&allocs) - before;
  char msg[200];
  snprintf(msg, sizeof msg,
           "conv2d_pool x[%lld,%lld,%lld,%lld] -> %lld, %d threads, y not stored: yp as conv2d + max_pool2d, "
           "%ld blocks of >= 4 KiB allocated in 20 warm calls%s",
           (long long)n, (long long)c, (long long)h, (long long)w, (long long)o, threads, counted,
           expect_none ? " (must be 0)" : " (y above the scratch limit)");
  check(msg, !rc && same && (!expect_none || counted == 0));
  if (pool) mlc_pool_free(pool);
  free(x), free(wt), free(b), free(y0), free(p0), free(p);
}

int main(void) {
  for (int t = 0; t <= 3; t++) {
    check_geometry(1, 1, 28, 28, 32, t, true);  // fashion_cnn's conv1 at batch 1
    check_geometry(1, 32, 14, 14, 64, t, true); // its conv2
    check_geometry(3, 3, 30, 30, 20, t, true);  // odd sizes, a few images
  }
  // y of 1 x 64 x 128 x 128 floats is 4 MiB + : malloc'd, freed, still right.
  check_geometry(1, 2, 130, 130, 64, 2, false);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
