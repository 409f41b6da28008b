// pool.c — max pooling over unpadded windows (mlc_max_pool2d) and its
// gradient over disjoint windows (mlc_max_pool2d_grad, with the relu mask
// of max_pool2d_grad_relu_mask), the library form of the pool recipes of
// compiler/kernel/schedule_nn.c: the same picks (first maximum, taps in
// row-major order, a NaN beats any number once) and the same values
// (0 + dy at the pick, masked by aux[pick] > 0), so a call and the recipe
// agree bit for bit.
//
// Threads split the planes (n, c) in chunks fixed by the plane size; each
// element is one plane's, so results do not depend on the thread count.
// 2 x 2 windows of stride 2 run pool_avx512.c's rows where the CPU has
// AVX-512, else pool_avx2.c's where it has AVX2 (pool_rows): they
// de-interleave two input rows into the four taps of 16 (8) windows, and
// the gradient writes every dx element once (interleaving the four taps'
// values back) instead of zeroing the plane and then scattering one value
// per window.
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "gemm_internal.h"
#include "pool_internal.h"

enum { POOL_CHUNK_FLOATS = 1 << 15 }; // input floats per task, at least one plane

typedef struct PoolJob {
  int64_t h, w, kh, kw, sh, sw, ho, wo;
  const float *x, *dy, *aux;
  float *y, *dx;
  PoolRows rows; // 2 x 2, stride 2: the vector rows (else POOL_ROWS_SCALAR, the loops below)
} PoolJob;

static bool better(float v, float best) { return v > best || (isnan(v) && !isnan(best)); }

static void plane_fwd(const PoolJob *j, const float *x, float *y) {
  for (int64_t i = 0; i < j->ho; i++)
    for (int64_t jj = 0; jj < j->wo; jj++) {
      const float *p = x + i * j->sh * j->w + jj * j->sw;
      float best = p[0];
      for (int64_t t = 1; t < j->kh * j->kw; t++) {
        float v = p[t / j->kw * j->w + t % j->kw];
        if (better(v, best)) best = v;
      }
      y[i * j->wo + jj] = best;
    }
}

static void plane_grad(const PoolJob *j, const float *dy, const float *x, const float *aux, float *dx) {
  memset(dx, 0, (size_t)(j->h * j->w) * sizeof(float));
  for (int64_t i = 0; i < j->ho; i++)
    for (int64_t jj = 0; jj < j->wo; jj++) {
      int64_t base = i * j->sh * j->w + jj * j->sw, arg = base;
      float best = x[base];
      for (int64_t t = 1; t < j->kh * j->kw; t++) {
        int64_t at = base + t / j->kw * j->w + t % j->kw;
        if (better(x[at], best)) best = x[at], arg = at;
      }
      float v = 0.0f + dy[i * j->wo + jj];
      dx[arg] = aux && !(aux[arg] > 0.0f) ? 0.0f : v;
    }
}

PoolRows pool_rows(void) {
  static _Atomic int known; // 0 unknown, else rows + 1
  int v = known;
#if defined(__x86_64__) || defined(__i386__)
  if (!v) known = v = 1 + (gemm_have_avx512() ? POOL_ROWS_AVX512 : gemm_have_avx2() ? POOL_ROWS_AVX2 : POOL_ROWS_SCALAR);
#else
  if (!v) known = v = 1 + POOL_ROWS_SCALAR;
#endif
  return (PoolRows)(v - 1);
}

static const PoolJob square = {.kh = 2, .kw = 2, .sh = 2, .sw = 2};

void pool_max2x2_scalar(int64_t h, int64_t w, const float *x, float *y) {
  PoolJob j = square;
  j.h = h, j.w = w, j.ho = h / 2, j.wo = w / 2;
  plane_fwd(&j, x, y);
}

void pool_max2x2_grad_scalar(int64_t h, int64_t w, const float *dy, const float *x, const float *aux, float *dx) {
  PoolJob j = square;
  j.h = h, j.w = w, j.ho = h / 2, j.wo = w / 2;
  plane_grad(&j, dy, x, aux, dx);
}

static void fwd_task(void *vj, int64_t b, int64_t e) {
  const PoolJob *j = vj;
  for (int64_t p = b; p < e; p++) {
    const float *x = j->x + p * j->h * j->w;
    float *y = j->y + p * j->ho * j->wo;
#if defined(__x86_64__) || defined(__i386__)
    if (j->rows == POOL_ROWS_AVX512) {
      pool_max2x2_avx512(j->h, j->w, x, y);
      continue;
    }
    if (j->rows == POOL_ROWS_AVX2) {
      pool_max2x2_avx2(j->h, j->w, x, y);
      continue;
    }
#endif
    plane_fwd(j, x, y);
  }
}

static void grad_task(void *vj, int64_t b, int64_t e) {
  const PoolJob *j = vj;
  for (int64_t p = b; p < e; p++) {
    int64_t in = p * j->h * j->w;
    const float *dy = j->dy + p * j->ho * j->wo, *aux = j->aux ? j->aux + in : NULL;
#if defined(__x86_64__) || defined(__i386__)
    if (j->rows == POOL_ROWS_AVX512) {
      pool_max2x2_grad_avx512(j->h, j->w, dy, j->x + in, aux, j->dx + in);
      continue;
    }
    if (j->rows == POOL_ROWS_AVX2) {
      pool_max2x2_grad_avx2(j->h, j->w, dy, j->x + in, aux, j->dx + in);
      continue;
    }
#endif
    plane_grad(j, dy, j->x + in, aux, j->dx + in);
  }
}

static bool job_of(PoolJob *j, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw) {
  if (h < 0 || w < 0 || kh < 1 || kw < 1 || sh < 1 || sw < 1) return false;
  *j = (PoolJob){.h = h, .w = w, .kh = kh, .kw = kw, .sh = sh, .sw = sw, // a window past the plane: none
                 .ho = h >= kh ? (h - kh) / sh + 1 : 0, .wo = w >= kw ? (w - kw) / sw + 1 : 0};
  j->rows = kh == 2 && kw == 2 && sh == 2 && sw == 2 ? pool_rows() : POOL_ROWS_SCALAR;
  return true;
}

static int64_t grain_of(const PoolJob *j) {
  int64_t plane = j->h * j->w > 0 ? j->h * j->w : 1;
  return plane >= POOL_CHUNK_FLOATS ? 1 : POOL_CHUNK_FLOATS / plane;
}

void pool_max2x2_planes(int64_t planes, int64_t h, int64_t w, const float *x, float *y) {
  PoolJob j;
  if (job_of(&j, h, w, 2, 2, 2, 2)) j.x = x, j.y = y, fwd_task(&j, 0, planes);
}

void pool_max2x2_grad_planes(int64_t planes, int64_t h, int64_t w, const float *dy, const float *x,
                             const float *aux, float *dx) {
  PoolJob j;
  if (job_of(&j, h, w, 2, 2, 2, 2)) j.dy = dy, j.x = x, j.aux = aux, j.dx = dx, grad_task(&j, 0, planes);
}

int mlc_max_pool2d(MlcPool *pool, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw,
                   int64_t sh, int64_t sw, const float *x, float *y) {
  PoolJob j;
  if (!job_of(&j, h, w, kh, kw, sh, sw)) return -1;
  j.x = x, j.y = y;
  if (n * c > 0) mlc_parallel_for(pool, n * c, grain_of(&j), fwd_task, &j);
  return 0;
}

int mlc_max_pool2d_grad(MlcPool *pool, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
                        int64_t kw, int64_t sh, int64_t sw, const float *dy, const float *x,
                        const float *aux, float *dx) {
  PoolJob j;
  if (!job_of(&j, h, w, kh, kw, sh, sw) || sh < kh || sw < kw) return -1;
  j.dy = dy, j.x = x, j.aux = aux, j.dx = dx;
  if (n * c > 0) mlc_parallel_for(pool, n * c, grain_of(&j), grad_task, &j);
  return 0;
}
