// test_conv_cache.c — the forward's channel-lane packing of a constant
// weight is kept in the GEMM cache (conv.c, fwd_lanes): made once while the
// weight lies in a range the current cache declares constant, and redone
// after the cache forgets it (mlc_gemm_cache_clear, mlc_gemm_cache_remove:
// what a model instance does whenever its parameters may change). Checks,
// for batch 1, 2, 3, 7 at 0-3 threads, conv2d and conv2d_pool (predict's
// call, y not stored): the cached calls give the uncached bits; a weight
// changed and the cache cleared gives what an uncached call on the new
// weight gives; a weight changed with the cache NOT told keeps the old
// output (so the copy is really used: on AVX-512, where the lane path runs);
// and two geometries of one weight buffer that differ only in groups get
// their own packings.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "rand_data.h"
#include "unit.h"

static bool lanes_expected(void) { return !strcmp(mlc_gemm_variant(), "avx512"); }

// y = conv (pool: the 2x2 max of it, y not stored) of x with w.
static int fwd(MlcPool *pool, const int64_t *g, bool pooled, const float *x, const float *w, const float *b,
               float *y) {
  return pooled ? mlc_conv2d_pool(pool, g, MLC_CONV_RELU, x, w, b, NULL, y) : mlc_conv2d(pool, g, MLC_CONV_RELU, x, w, b, y);
}

static void check_case(int64_t n, int threads, bool pooled) {
  int64_t c = 32, h = 14, wd = 14, o = 64;
  int64_t g[MLC_CONV_GEOM] = {n, c, h, wd, o, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  int64_t ny = pooled ? n * o * (h / 2) * (wd / 2) : n * o * h * wd, nw = o * c * 9;
  size_t by = (size_t)ny * 4;
  float *x = rand_buf(n * c * h * wd), *w = rand_buf(nw), *b = rand_buf(o);
  float *ref = malloc(by), *ref2 = malloc(by), *y = malloc(by);
  MlcPool *pool = threads ? mlc_pool_new(threads) : NULL;
  MlcGemmCache *cache = mlc_gemm_cache_new();
  int rc = fwd(pool, g, pooled, x, w, b, ref);
  rc |= mlc_gemm_cache_add(cache, w, (size_t)nw * 4);
  MlcGemmCache *was = mlc_gemm_cache_use(cache);
  bool same = true;
  for (int i = 0; i < 3; i++) { // the first call packs, the others read the copy
    memset(y, 0xff, by);
    rc |= fwd(pool, g, pooled, x, w, b, y);
    same &= !memcmp(y, ref, by);
  }
  for (int64_t i = 0; i < nw; i++) w[i] *= -0.5f;
  memset(y, 0xff, by);
  rc |= fwd(pool, g, pooled, x, w, b, y); // not told: the kept packing of the old weight
  bool stale = !memcmp(y, ref, by);
  mlc_gemm_cache_clear(cache);
  memset(y, 0xff, by);
  rc |= fwd(pool, g, pooled, x, w, b, y);
  mlc_gemm_cache_use(was);
  rc |= fwd(pool, g, pooled, x, w, b, ref2); // uncached, the new weight
  bool cleared = !memcmp(y, ref2, by) && memcmp(ref, ref2, by);
  mlc_gemm_cache_use(cache);
  for (int64_t i = 0; i < nw; i++) w[i] *= 3;
  mlc_gemm_cache_remove(cache, w); // the range dropped for good (state() handed out its pointer)
  memset(y, 0xff, by);
  rc |= fwd(pool, g, pooled, x, w, b, y);
  mlc_gemm_cache_use(was);
  rc |= fwd(pool, g, pooled, x, w, b, ref2);
  bool removed = !memcmp(y, ref2, by);
  char msg[200];
  snprintf(msg, sizeof msg, "%s n=%lld, %d threads: cached = uncached bits, clear and remove are seen%s",
           pooled ? "conv2d_pool" : "conv2d", (long long)n, threads,
           lanes_expected() ? ", a change the cache is not told of is not (the copy is used)" : "");
  check(msg, !rc && same && cleared && removed && (!lanes_expected() || stale));
  mlc_gemm_cache_free(cache);
  if (pool) mlc_pool_free(pool);
  free(x), free(w), free(b), free(ref), free(ref2), free(y);
}

// One weight buffer read as [64, 16, 3, 3] (1 group of 16 channels) and as
// [64, 16, 3, 3] in 2 groups of 32 input channels: the same O and Kc, a
// different packing.
static void check_groups(void) {
  int64_t g1[MLC_CONV_GEOM] = {1, 16, 10, 10, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  int64_t g2[MLC_CONV_GEOM] = {1, 32, 10, 10, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2};
  int64_t nw = 64 * 16 * 9, ny = 64 * 100;
  float *x = rand_buf(32 * 100), *w = rand_buf(nw), *b = rand_buf(64);
  float *r1 = malloc((size_t)ny * 4), *r2 = malloc((size_t)ny * 4), *y1 = malloc((size_t)ny * 4), *y2 = malloc((size_t)ny * 4);
  int rc = mlc_conv2d(NULL, g1, 0, x, w, b, r1) | mlc_conv2d(NULL, g2, 0, x, w, b, r2);
  MlcGemmCache *cache = mlc_gemm_cache_new();
  rc |= mlc_gemm_cache_add(cache, w, (size_t)nw * 4);
  MlcGemmCache *was = mlc_gemm_cache_use(cache);
  rc |= mlc_conv2d(NULL, g1, 0, x, w, b, y1) | mlc_conv2d(NULL, g2, 0, x, w, b, y2);
  mlc_gemm_cache_use(was);
  check("one weight buffer, 1 and 2 groups of the same O and Kc: each its own packing",
        !rc && !memcmp(r1, y1, (size_t)ny * 4) && !memcmp(r2, y2, (size_t)ny * 4));
  mlc_gemm_cache_free(cache);
  free(x), free(w), free(b), free(r1), free(r2), free(y1), free(y2);
}

int main(void) {
  printf("gemm variant %s\n", mlc_gemm_variant());
  static const int64_t batches[] = {1, 2, 3, 7};
  for (int t = 0; t <= 3; t++)
    for (int i = 0; i < 4; i++) check_case(batches[i], t, false), check_case(batches[i], t, true);
  check_groups();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
