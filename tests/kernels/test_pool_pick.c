// test_pool_pick.c — the pool's picks (kernels/cpu/pool_pick.c and the
// pick forms of conv.c): mlc_max_pool2d_pick, mlc_max_pool2d_grad_pick,
// mlc_conv2d_pool_pick, mlc_conv2d_grad_weight_pick and mlc_conv2d_grad_pick
// against the calls they replace and against the pick's definition
// written out here (the
// first maximum in row-major tap order, a NaN beating any number once;
// bit 2 when the picked value is > 0). Bit for bit, with ties, NaNs and
// signed zeros, odd planes (an uncovered last row and column), N 1, 7,
// 65, each row the CPU has (AVX-512, AVX2, scalar) one plane at a time,
// and 0-3 threads.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/gemm_internal.h"
#include "kernels/cpu/pool_internal.h"
#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "rand_data.h"
#include "unit.h"

static int better(float v, float best) { return v > best || (isnan(v) && !isnan(best)); }

// The pick byte of window (i, j) of plane x [h, w].
static uint8_t ref_pick(const float *x, int64_t w, int64_t i, int64_t j) {
  int tap = 0;
  float best = x[2 * i * w + 2 * j];
  for (int t = 1; t < 4; t++) {
    float v = x[(2 * i + t / 2) * w + 2 * j + t % 2];
    if (better(v, best)) best = v, tap = t;
  }
  return (uint8_t)(tap | (best > 0.0f ? 4 : 0));
}

// Data with ties, NaNs and signed zeros: values from a few levels.
static float *data(int64_t n, int special) {
  float *d = rand_buf(n);
  for (int64_t i = 0; i < n; i++) {
    d[i] -= 0.3f; // some <= 0
    if (special) d[i] = (float)(int)(d[i] * 3) * 0.5f; // ties, +-0
    if (special && i % 37 == 5) d[i] = NAN;
    if (special && i % 41 == 7) d[i] = -0.0f;
    if (special && i % 43 == 9) d[i] = INFINITY;
  }
  return d;
}

#if defined(__x86_64__) || defined(__i386__)
static int have_avx512(void) { return gemm_have_avx512(); }
static int have_avx2(void) { return gemm_have_avx2(); }
#endif
static int have_scalar(void) { return 1; }

// The rows of one plane (pool_internal.h), compared where the CPU has them.
static const struct {
  const char *name;
  int (*have)(void);
  void (*fwd)(int64_t, int64_t, const float *, float *, uint8_t *);
  void (*grad)(int64_t, int64_t, bool, const float *, const uint8_t *, float *);
} rows[] = {
#if defined(__x86_64__) || defined(__i386__)
    {"avx512", have_avx512, pool_max2x2_pick_avx512, pool_max2x2_grad_pick_avx512},
    {"avx2", have_avx2, pool_max2x2_pick_avx2, pool_max2x2_grad_pick_avx2},
#endif
    {"scalar", have_scalar, pool_max2x2_pick_scalar, pool_max2x2_grad_pick_scalar},
};
enum { NROWS = sizeof rows / sizeof rows[0] };

// The names of the rows this CPU has, e.g. "avx2 scalar".
static const char *row_names(void) {
  static char names[64];
  names[0] = 0;
  for (int r = 0; r < NROWS; r++)
    if (rows[r].have()) snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? " " : "", rows[r].name);
  return names;
}

static void check_pool(int64_t n, int64_t c, int64_t h, int64_t w, int special) {
  int64_t planes = n * c, ho = h / 2, wo = w / 2, nx = planes * h * w, ny = planes * ho * wo;
  float *x = data(nx, special), *dy = data(ny + 1, special), *y0 = malloc((size_t)(ny + 1) * 4);
  float *dx0[2] = {malloc((size_t)(nx + 1) * 4), malloc((size_t)(nx + 1) * 4)};
  uint8_t *pk0 = malloc((size_t)ny + 1);
  int rc = mlc_max_pool2d(NULL, n, c, h, w, 2, 2, 2, 2, x, y0);
  for (int m = 0; m < 2; m++) rc |= mlc_max_pool2d_grad(NULL, n, c, h, w, 2, 2, 2, 2, dy, x, m ? x : NULL, dx0[m]);
  for (int64_t p = 0; p < planes; p++)
    for (int64_t i = 0; i < ho; i++)
      for (int64_t j = 0; j < wo; j++) pk0[(p * ho + i) * wo + j] = ref_pick(x + p * h * w, w, i, j);
  int ok = !rc;
  for (int t = 0; t <= 3; t++) {
    MlcPool *pool = t ? mlc_pool_new(t) : NULL;
    float *y = malloc((size_t)(ny + 1) * 4), *dx = malloc((size_t)(nx + 1) * 4);
    uint8_t *pk = malloc((size_t)ny + 1);
    ok &= !mlc_max_pool2d_pick(pool, n, c, h, w, x, y, pk);
    ok &= !memcmp(y, y0, (size_t)ny * 4) && !memcmp(pk, pk0, (size_t)ny);
    for (int m = 0; m < 2; m++) {
      memset(dx, 0x7f, (size_t)nx * 4); // every element must be written
      ok &= !mlc_max_pool2d_grad_pick(pool, n, c, h, w, m, dy, pk, dx) && !memcmp(dx, dx0[m], (size_t)nx * 4);
    }
    free(y), free(dx), free(pk);
    if (pool) mlc_pool_free(pool);
  }
  // each row this CPU has, one plane at a time: AVX-512, AVX2, scalar
  float *ys = malloc((size_t)(ho * wo + 1) * 4), *dxs = malloc((size_t)(h * w + 1) * 4);
  uint8_t *pks = malloc((size_t)(ho * wo) + 1);
  for (int r = 0; r < NROWS; r++) {
    if (!rows[r].have()) continue;
    for (int64_t p = 0; p < planes && ok; p++) {
      memset(pks, 0xff, (size_t)(ho * wo));
      rows[r].fwd(h, w, x + p * h * w, ys, pks);
      ok &= !memcmp(ys, y0 + p * ho * wo, (size_t)(ho * wo) * 4) && !memcmp(pks, pk0 + p * ho * wo, (size_t)(ho * wo));
      for (int m = 0; m < 2; m++) {
        memset(dxs, 0x7f, (size_t)(h * w) * 4);
        rows[r].grad(h, w, m, dy + p * ho * wo, pk0 + p * ho * wo, dxs);
        ok &= !memcmp(dxs, dx0[m] + p * h * w, (size_t)(h * w) * 4);
      }
    }
  }
  char msg[300];
  snprintf(msg, sizeof msg, "pick x[%lld,%lld,%lld,%lld]%s: y and picks as max_pool2d + the definition, dx as max_pool2d_grad (aux NULL, x), 0-3 threads, the rows (%s)",
           (long long)n, (long long)c, (long long)h, (long long)w, special ? " ties/NaN/-0/inf" : "", row_names());
  check(msg, ok);
  free(x), free(dy), free(y0), free(dx0[0]), free(dx0[1]), free(pk0), free(ys), free(dxs), free(pks);
}

typedef struct Shape {
  int64_t g[MLC_CONV_GEOM];
  int64_t ho, wo, nx, nw, ny, np;
} Shape;

static Shape shape_g(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t k, int64_t p, int64_t groups) {
  Shape s = {.g = {n, c, h, w, o, k, k, 1, 1, p, p, 1, 1, groups}};
  s.ho = mlc_conv_out_h(s.g), s.wo = mlc_conv_out_w(s.g);
  s.nx = n * c * h * w, s.nw = o * (c / groups) * k * k, s.ny = n * o * s.ho * s.wo,
  s.np = n * o * (s.ho / 2) * (s.wo / 2);
  return s;
}

static Shape shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t k, int64_t p) {
  return shape_g(n, c, h, w, o, k, p, 1);
}

// conv2d_pool_pick against conv2d_pool and max_pool2d_pick of its y (y
// given and NULL, with Winograd too); conv2d_grad_weight_pick against
// conv2d_grad_weight_pool of that y (aux NULL and y; db and not);
// conv2d_grad_pick against max_pool2d_grad_pick, grad_input and
// grad_weight_bias (special: w with NaN and inf, which the lane
// grad_input refuses).
static void check_conv(const Shape *s, int special) {
  const int64_t *g = s->g;
  int64_t o = g[MLC_CONV_O];
  float *x = data(s->nx, special), *w = data(s->nw, special), *b = data(o, 0), *dyp = data(s->np + 1, special);
  float *y0 = malloc((size_t)(s->ny + 1) * 4), *yp0 = malloc((size_t)(s->np + 1) * 4), *yp1 = malloc((size_t)(s->np + 1) * 4);
  uint8_t *pk0 = malloc((size_t)s->np + 1);
  int ok = 1;
  for (int wino = 0; wino < 2; wino++) {
    uint32_t flags = MLC_CONV_RELU | (wino ? MLC_CONV_WINOGRAD : 0);
    ok &= !mlc_conv2d_pool(NULL, g, flags, x, w, b, y0, yp0);
    ok &= !mlc_max_pool2d_pick(NULL, g[0], o, s->ho, s->wo, y0, yp1, pk0) && !memcmp(yp0, yp1, (size_t)s->np * 4);
    for (int t = 0; t <= 3; t++) {
      MlcPool *pool = t ? mlc_pool_new(t) : NULL;
      float *y = malloc((size_t)(s->ny + 1) * 4), *yp = malloc((size_t)(s->np + 1) * 4);
      uint8_t *pk = malloc((size_t)s->np + 1);
      for (int keep = 0; keep < 2; keep++) {
        memset(pk, 0xff, (size_t)s->np), memset(yp, 0xff, (size_t)s->np * 4);
        ok &= !mlc_conv2d_pool_pick(pool, g, flags, x, w, b, keep ? y : NULL, yp, pk);
        ok &= !memcmp(yp, yp0, (size_t)s->np * 4) && !memcmp(pk, pk0, (size_t)s->np);
        ok &= !keep || !memcmp(y, y0, (size_t)s->ny * 4);
      }
      free(y), free(yp), free(pk);
      if (pool) mlc_pool_free(pool);
    }
    if (wino) break;
    float *dw0 = malloc((size_t)(s->nw + 1) * 4), *db0 = malloc((size_t)o * 4);
    for (int m = 0; m < 2; m++) {
      ok &= !mlc_conv2d_grad_weight_pool(NULL, g, 0, dyp, y0, m ? y0 : NULL, x, dw0, db0);
      for (int t = 0; t <= 3; t++) {
        MlcPool *pool = t ? mlc_pool_new(t) : NULL;
        float *dw = malloc((size_t)(s->nw + 1) * 4), *db = malloc((size_t)o * 4);
        ok &= !mlc_conv2d_grad_weight_pick(pool, g, 0, dyp, pk0, m, x, dw, t % 2 ? NULL : db);
        ok &= !memcmp(dw, dw0, (size_t)s->nw * 4) && (t % 2 || !memcmp(db, db0, (size_t)o * 4));
        free(dw), free(db);
        if (pool) mlc_pool_free(pool);
      }
    }
    // both gradients from the picks against the three calls; dyp as it
    // is and with every fifth value +-2^30: where those cancel in a
    // channel's db, its f64 lanes summed in another order (images or
    // pixels) round the small terms differently
    float *dy = malloc((size_t)(s->ny + 1) * 4), *dx0 = malloc((size_t)(s->nx + 1) * 4);
    float *dyq = malloc((size_t)(s->np + 1) * 4);
    for (int64_t i = 0; i < s->np; i++) dyq[i] = i % 5 ? dyp[i] : dyp[i] > 0 ? 0x1p30f : -0x1p30f;
    for (int mq = 0; mq < 4; mq++) {
      int m = mq % 2;
      const float *dd = mq / 2 ? dyq : dyp;
      ok &= !mlc_max_pool2d_grad_pick(NULL, g[0], o, s->ho, s->wo, m, dd, pk0, dy) &&
            !mlc_conv2d_grad_input(NULL, g, 0, dy, w, dx0) && !mlc_conv2d_grad_weight_bias(NULL, g, 0, dy, x, dw0, db0);
      for (int t = 0; t <= 3; t++) {
        MlcPool *pool = t ? mlc_pool_new(t) : NULL;
        float *dw = malloc((size_t)(s->nw + 1) * 4), *db = malloc((size_t)o * 4), *dx = malloc((size_t)(s->nx + 1) * 4);
        ok &= !mlc_conv2d_grad_pick(pool, g, 0, dd, pk0, m, w, x, dx, dw, t % 2 ? NULL : db);
        ok &= !memcmp(dx, dx0, (size_t)s->nx * 4) && !memcmp(dw, dw0, (size_t)s->nw * 4) &&
              (t % 2 || !memcmp(db, db0, (size_t)o * 4));
        free(dw), free(db), free(dx);
        if (pool) mlc_pool_free(pool);
      }
    }
    free(dw0), free(db0), free(dy), free(dx0), free(dyq);
  }
  char msg[200];
  snprintf(msg, sizeof msg, "conv2d_pool_pick / grad_weight_pick x[%lld,%lld,%lld,%lld] w[%lld,.,%lld,%lld] p%lld%s: bits as conv2d_pool + max_pool2d_pick, grad_weight_pool, 0-3 threads",
           (long long)g[0], (long long)g[1], (long long)g[2], (long long)g[3], (long long)g[4], (long long)g[5],
           (long long)g[6], (long long)g[9], special ? " ties/NaN/-0/inf" : "");
  check(msg, ok);
  free(x), free(w), free(b), free(dyp), free(y0), free(yp0), free(yp1), free(pk0);
}

// The shapes above whose grad_weight_pick splits by channel vectors do
// take that path (so their bit checks cover it): conv1 at 2 threads (2
// vectors, not 3: fewer tasks than threads keeps the GEMM), the 3-vector
// shapes at 2 and 3, none at 1 thread; conv2 (Kc 288) and Kc 576 never.
static void check_vector_split(const Shape *convs) {
  const struct { int shape, threads, want; } cases[] = {
      {0, 1, 0}, {0, 2, 1}, {0, 3, 0}, {1, 2, 0}, {8, 2, 1}, {8, 3, 1}, {9, 2, 1}, {9, 3, 1}, {10, 2, 1}, {4, 2, 1},
      {14, 2, 0}, {14, 3, 0}, // Kc 576: the lane grad_weight takes one K block of rows
  };
  int ok = 1, lanes = !strcmp(mlc_gemm_variant(), "avx512"); // the lane passes need AVX-512
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    MlcPool *pool = cases[i].threads > 1 ? mlc_pool_new(cases[i].threads) : NULL;
    ok &= conv_gw_pick_by_vectors(pool, convs[cases[i].shape].g) == (lanes && cases[i].want != 0);
    if (pool) mlc_pool_free(pool);
  }
  check("grad_weight_pick: the channel-vector split where its rule says (conv1 at 2 threads, Kc < 16 rows per thread, a task per thread)", ok);
}

// conv2d_grad_pick runs in two regions (dy built once per image) exactly
// where its rule says, so check_conv's bit checks cover that path: 2+
// strips of dw's rows per group, an image per thread, f32 operands.
// Shapes (main's list): 1 conv2 at batch 2, 2 batch 1, 6 and 7 the lane
// passes' odd shapes, 11 conv2 at batch 6, 12 odd planes with short
// vectors, 13 two groups (one strip per group at 2 threads), 14 Kc 576.
static void check_two_regions(const Shape *convs) {
  const struct { int shape, threads; uint32_t flags; int want; } cases[] = {
      {1, 1, 0, 0}, {1, 2, 0, 1}, {1, 3, 0, 0},   // batch 2: at 3 threads an image for 2 of them
      {11, 1, 0, 0}, {11, 2, 0, 1}, {11, 3, 0, 1}, {11, 2, MLC_GEMM_BF16, 0}, {11, 3, MLC_GEMM_F16, 0},
      {2, 2, 0, 0}, {2, 3, 0, 0},                 // batch 1: the one region's strips share the work
      {6, 2, 0, 1}, {6, 3, 0, 1}, {7, 2, 0, 1}, {7, 3, 0, 1}, {12, 2, 0, 1}, {12, 3, 0, 1},
      {13, 2, 0, 0}, {13, 3, 0, 1},               // two groups: 1 strip each at 2 threads, 2 at 3
      {0, 2, 0, 0}, {3, 2, 0, 0},                 // no lane passes (3 input channels, 5)
      {14, 2, 0, 0}, {14, 3, 0, 0},               // Kc 576: no lane grad_weight
  };
  int ok = 1, off = 1, lanes = !strcmp(mlc_gemm_variant(), "avx512");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    MlcPool *pool = cases[i].threads > 1 ? mlc_pool_new(cases[i].threads) : NULL;
    ok &= conv_grad_pick_by_images(pool, convs[cases[i].shape].g, cases[i].flags) == (lanes && cases[i].want != 0);
    conv_grad_pick_two_regions_enable(false);
    off &= !conv_grad_pick_by_images(pool, convs[cases[i].shape].g, cases[i].flags);
    conv_grad_pick_two_regions_enable(true);
    if (pool) mlc_pool_free(pool);
  }
  check("grad_pick: two regions where its rule says (2+ strips per group, an image per thread, f32)", ok);
  check("grad_pick: one region everywhere with two regions disabled (the default)", off);
}

int main(void) {
  int64_t pools[][4] = {
      {3, 32, 28, 28}, // fashion_cnn's first pool
      {2, 64, 14, 14}, // its second: 7 windows a row
      {1, 3, 7, 9},    // odd: an uncovered last row and column
      {7, 5, 66, 70},  // rows of several vectors, N 7
      {65, 2, 4, 5},   // N 65, small planes
      {1, 1, 2, 2},    // one window
      {2, 3, 6, 33},   // 16 windows a row (whole vectors), odd w
      {1, 2, 1, 5},    // no window: dx all 0
      {1, 2, 200, 200}, // planes larger than a task's floats
  };
  for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++)
    for (int special = 0; special < 2; special++) check_pool(pools[i][0], pools[i][1], pools[i][2], pools[i][3], special);
  Shape convs[] = {
      shape(3, 1, 28, 28, 32, 3, 1),  // fashion_cnn conv1
      shape(2, 32, 14, 14, 64, 3, 1), // conv2
      shape(1, 32, 14, 14, 64, 3, 1), // conv2 at batch 1: pieces, pooled after the whole y
      shape(2, 5, 11, 13, 9, 3, 1),   // odd planes
      shape(7, 3, 9, 8, 17, 3, 0),    // unpadded, 7 x 6 outputs
      shape(2, 4, 10, 10, 6, 1, 0),   // 1x1
      shape(3, 16, 9, 11, 32, 3, 1),  // the lane passes with odd planes: 4 x 5 windows
      shape(5, 32, 6, 6, 16, 3, 1),   // 16 output channels, 3 x 3 windows
      // grad_weight_pick split by vectors of dw's channels (2-3 threads):
      shape(4, 1, 10, 12, 48, 3, 1),  // Kc 9 (one 9-row tile), 3 vectors
      shape(3, 2, 9, 7, 40, 3, 1),    // Kc 18 (tiles of 12 and 6), a short last vector, odd planes
      shape(2, 1, 6, 6, 20, 2, 0),    // Kc 4, 2 x 2 unpadded, 5 x 5 outputs: an uncovered row and column
      // grad_pick in two regions (check_two_regions):
      shape(6, 32, 14, 14, 64, 3, 1),     // conv2 at batch 6: 2 and 3 threads
      shape(5, 20, 13, 11, 24, 3, 1),     // odd planes (6 x 5 windows), short vectors of C and O, Kc 180
      shape_g(3, 32, 10, 10, 32, 3, 1, 2), // two groups of 16 channels
      // Kc 576 (two K blocks): the lane forward, the gradients by the GEMM
      shape(2, 64, 10, 10, 24, 3, 1),     // 100 pixels, 5 x 5 windows
      shape(1, 64, 10, 10, 32, 3, 1),     // batch 1: pieces, pooled after the whole y
  };
  // grad_pick's two regions are off by default: on here, so the bit
  // checks run them (check_two_regions says where)
  conv_grad_pick_two_regions_enable(true);
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
    for (int special = 0; special < 2; special++) check_conv(&convs[i], special);
  check_vector_split(convs);
  check_two_regions(convs);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
