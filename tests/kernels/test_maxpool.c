// test_maxpool.c — mlc_max_pool2d and mlc_max_pool2d_grad (kernels/cpu/pool.c)
// against the pool recipes' definition (compiler/kernel/schedule_nn.c,
// written out here): the first maximum in row-major tap order, a NaN
// beating any number once; the gradient 0 + dy at the pick, masked by
// aux[pick] > 0, 0 elsewhere. Bit for bit, with ties, NaNs, signed zeros,
// odd sizes (uncovered rows and columns), N 1, 7, 65, windows other than
// 2 x 2 (the scalar path), 0-3 threads, and for 2 x 2 windows of stride 2
// each row the CPU has (pool_internal.h: AVX-512, AVX2, scalar) one plane
// at a time.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm_internal.h"
#include "kernels/cpu/pool_internal.h"
#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "rand_data.h"
#include "unit.h"

typedef struct P {
  int64_t n, c, h, w, kh, kw, sh, sw, ho, wo, nx, ny;
} P;

static P geom(int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw) {
  P p = {n, c, h, w, kh, kw, sh, sw, (h - kh) / sh + 1, (w - kw) / sw + 1, 0, 0};
  p.nx = n * c * h * w, p.ny = n * c * p.ho * p.wo;
  return p;
}

static int better(float v, float best) { return v > best || (isnan(v) && !isnan(best)); }

// The pick of window (plane, i, j): its offset in x.
static int64_t pick(const P *p, const float *x, int64_t plane, int64_t i, int64_t j) {
  int64_t base = plane * p->h * p->w + i * p->sh * p->w + j * p->sw, arg = base;
  for (int64_t a = 0; a < p->kh; a++)
    for (int64_t b = 0; b < p->kw; b++) {
      int64_t at = base + a * p->w + b;
      if (better(x[at], x[arg])) arg = at;
    }
  return arg;
}

static void reference(const P *p, const float *x, const float *dy, const float *aux, float *y, float *dx) {
  for (int64_t q = 0; q < p->nx; q++) dx[q] = 0;
  for (int64_t pl = 0; pl < p->n * p->c; pl++)
    for (int64_t i = 0; i < p->ho; i++)
      for (int64_t j = 0; j < p->wo; j++) {
        int64_t arg = pick(p, x, pl, i, j), yo = (pl * p->ho + i) * p->wo + j;
        y[yo] = x[arg];
        float v = 0.0f + dy[yo];
        dx[arg] = aux && !(aux[arg] > 0.0f) ? 0.0f : v;
      }
}

// Data with ties, NaNs and signed zeros: values from a few levels.
static float *data(int64_t n, int special) {
  float *d = rand_buf(n);
  for (int64_t i = 0; i < n; i++) {
    if (special) d[i] = (float)(int)(d[i] * 3) * 0.5f; // ties, +-0
    if (special && i % 37 == 5) d[i] = NAN;
    if (special && i % 41 == 7) d[i] = -0.0f;
  }
  return d;
}

#if defined(__x86_64__) || defined(__i386__)
static int have_avx512(void) { return gemm_have_avx512(); }
static int have_avx2(void) { return gemm_have_avx2(); }
#endif
static int have_scalar(void) { return 1; }

static const struct {
  const char *name;
  int (*have)(void);
  void (*fwd)(int64_t, int64_t, const float *, float *);
  void (*grad)(int64_t, int64_t, const float *, const float *, const float *, float *);
} rows[] = {
#if defined(__x86_64__) || defined(__i386__)
    {"avx512", have_avx512, pool_max2x2_avx512, pool_max2x2_grad_avx512},
    {"avx2", have_avx2, pool_max2x2_avx2, pool_max2x2_grad_avx2},
#endif
    {"scalar", have_scalar, pool_max2x2_scalar, pool_max2x2_grad_scalar},
};
enum { NROWS = sizeof rows / sizeof rows[0] };

// Each row this CPU has against the reference's y0 and dx0, plane by plane
// (p: 2 x 2, stride 2); appends the rows' names to names.
static int check_rows(const P *p, const float *x, const float *dy, const float *aux, const float *y0,
                      const float *dx0, char *names, size_t cap) {
  int64_t in = p->h * p->w, out = p->ho * p->wo;
  float *y = malloc((size_t)out * 4 + 4), *dx = malloc((size_t)in * 4 + 4);
  int ok = 1;
  for (int r = 0; r < NROWS; r++) {
    if (!rows[r].have()) continue;
    snprintf(names + strlen(names), cap - strlen(names), " %s", rows[r].name);
    for (int64_t pl = 0; pl < p->n * p->c; pl++) {
      memset(y, 0x7f, (size_t)out * 4), memset(dx, 0x7f, (size_t)in * 4);
      rows[r].fwd(p->h, p->w, x + pl * in, y);
      rows[r].grad(p->h, p->w, dy + pl * out, x + pl * in, aux ? aux + pl * in : NULL, dx);
      ok &= !memcmp(y, y0 + pl * out, (size_t)out * 4) && !memcmp(dx, dx0 + pl * in, (size_t)in * 4);
    }
  }
  free(y), free(dx);
  return ok;
}

static void check_geom(const P *p, int special, int masked) {
  // masked 2: the mask is x itself (a conv's relu output, which the pool reads as both)
  float *x = data(p->nx, special), *dy = data(p->ny, special), *aux = masked == 1 ? data(p->nx, 1) : masked ? x : NULL;
  float *y0 = malloc((size_t)p->ny * 4 + 4), *dx0 = malloc((size_t)p->nx * 4 + 4);
  reference(p, x, dy, aux, y0, dx0);
  int ok = 1;
  for (int t = 0; t <= 3; t++) {
    MlcPool *pool = t ? mlc_pool_new(t) : NULL;
    float *y = malloc((size_t)p->ny * 4 + 4), *dx = malloc((size_t)p->nx * 4 + 4);
    memset(dx, 0x7f, (size_t)p->nx * 4); // every element must be written
    int rc = mlc_max_pool2d(pool, p->n, p->c, p->h, p->w, p->kh, p->kw, p->sh, p->sw, x, y);
    rc |= mlc_max_pool2d_grad(pool, p->n, p->c, p->h, p->w, p->kh, p->kw, p->sh, p->sw, dy, x, aux, dx);
    ok &= !rc && !memcmp(y, y0, (size_t)p->ny * 4) && !memcmp(dx, dx0, (size_t)p->nx * 4);
    free(y), free(dx);
    if (pool) mlc_pool_free(pool);
  }
  char names[64] = "";
  if (p->kh == 2 && p->kw == 2 && p->sh == 2 && p->sw == 2) ok &= check_rows(p, x, dy, aux, y0, dx0, names, sizeof names);
  char msg[300];
  snprintf(msg, sizeof msg, "x[%lld,%lld,%lld,%lld] window %lldx%lld stride %lldx%lld%s%s: bits of y and dx, 0-3 threads%s%s",
           (long long)p->n, (long long)p->c, (long long)p->h, (long long)p->w, (long long)p->kh,
           (long long)p->kw, (long long)p->sh, (long long)p->sw, special ? " ties/NaN/-0" : "",
           masked == 1 ? " relu mask" : masked ? " mask = x" : "", names[0] ? ", rows" : "", names);
  check(msg, ok);
  free(x), free(dy), free(masked == 1 ? aux : NULL), free(y0), free(dx0);
}

int main(void) {
  P g[] = {
      geom(3, 32, 28, 28, 2, 2, 2, 2),  // fashion_cnn's first pool
      geom(2, 64, 14, 14, 2, 2, 2, 2),  // its second: 7 outputs a row
      geom(1, 3, 7, 9, 2, 2, 2, 2),     // odd: an uncovered last row and column
      geom(7, 5, 66, 70, 2, 2, 2, 2),   // rows of several vectors, N 7
      geom(65, 2, 4, 5, 2, 2, 2, 2),    // N 65, small planes
      geom(1, 1, 2, 2, 2, 2, 2, 2),     // one window
      geom(2, 3, 6, 33, 2, 2, 2, 2),    // 16 windows a row (whole vectors), odd w
      geom(2, 3, 9, 11, 3, 3, 3, 3),    // 3x3: the scalar path
      geom(2, 3, 10, 9, 2, 3, 3, 4),    // stride past the window
      geom(1, 2, 200, 200, 2, 2, 2, 2), // planes larger than a task's floats
  };
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
    for (int special = 0; special < 2; special++)
      for (int masked = 0; masked < 3; masked++) check_geom(&g[i], special, masked);
  float one = 1, dx[3] = {1, 1, 1};
  check("a window larger than the plane pools nothing, and its gradient is 0",
        mlc_max_pool2d(NULL, 1, 1, 1, 3, 2, 2, 2, 2, &one, &one) == 0 && one == 1 &&
            mlc_max_pool2d_grad(NULL, 1, 1, 1, 3, 2, 2, 2, 2, &one, &one, NULL, dx) == 0 && !dx[0] && !dx[1] && !dx[2]);
  check("overlapping windows for the gradient are refused (-1)",
        mlc_max_pool2d_grad(NULL, 1, 1, 4, 4, 3, 3, 1, 1, &one, &one, NULL, dx) == -1);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
