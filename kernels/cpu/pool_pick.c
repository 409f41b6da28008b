// pool_pick.c — the 2 x 2, stride-2 max pool that keeps each window's pick
// (mlc_max_pool2d_pick) and the gradient that reads the picks instead of
// the pool's input (mlc_max_pool2d_grad_pick): one byte per window, the
// tap and whether the picked value is > 0 (mlc_kernels.h, MLC_PICK_*).
//
// Why: a train step's pool gradient (and conv2d_grad_weight_pool's rebuild
// of dy) otherwise reads the pool's whole input back (fashion_cnn: the
// conv's relu output, 4 floats a window) to find the pick again; the
// picks are a quarter of a float a window, and the forward that keeps
// them need not store its y at all. The pick is pool.c's (first maximum
// in tap order, a NaN beating any number once), so the gradient's bits
// are mlc_max_pool2d_grad's with aux = mask ? x : NULL.
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "pool_internal.h"

enum { PICK_CHUNK_FLOATS = 1 << 15 }; // input floats per task, at least one plane

static bool better(float v, float best) { return v > best || (isnan(v) && !isnan(best)); }

void pool_max2x2_pick_scalar(int64_t h, int64_t w, const float *x, float *y, uint8_t *pick) {
  int64_t ho = h / 2, wo = w / 2;
  for (int64_t i = 0; i < ho; i++)
    for (int64_t j = 0; j < wo; j++) {
      const float *p = x + 2 * i * w + 2 * j;
      float best = p[0];
      int tap = 0;
      for (int t = 1; t < 4; t++) {
        float v = p[t / 2 * w + t % 2];
        if (better(v, best)) best = v, tap = t;
      }
      y[i * wo + j] = best;
      pick[i * wo + j] = (uint8_t)(tap | (best > 0.0f ? MLC_PICK_POS : 0));
    }
}

void pool_max2x2_grad_pick_scalar(int64_t h, int64_t w, bool mask, const float *dy, const uint8_t *pick, float *dx) {
  int64_t ho = h / 2, wo = w / 2;
  memset(dx, 0, (size_t)(h * w) * sizeof(float));
  for (int64_t i = 0; i < ho; i++)
    for (int64_t j = 0; j < wo; j++) {
      uint8_t pk = pick[i * wo + j];
      int tap = pk & MLC_PICK_TAP;
      float v = 0.0f + dy[i * wo + j];
      dx[(2 * i + tap / 2) * w + 2 * j + tap % 2] = mask && !(pk & MLC_PICK_POS) ? 0.0f : v;
    }
}

void pool_max2x2_pick_planes(int64_t planes, int64_t h, int64_t w, const float *x, float *y, uint8_t *pick) {
  int64_t in = h * w, out = (h / 2) * (w / 2);
  PoolRows rows = pool_rows();
  for (int64_t p = 0; p < planes; p++) {
#if defined(__x86_64__) || defined(__i386__)
    if (rows == POOL_ROWS_AVX512) {
      pool_max2x2_pick_avx512(h, w, x + p * in, y + p * out, pick + p * out);
      continue;
    }
    if (rows == POOL_ROWS_AVX2) {
      pool_max2x2_pick_avx2(h, w, x + p * in, y + p * out, pick + p * out);
      continue;
    }
#endif
    pool_max2x2_pick_scalar(h, w, x + p * in, y + p * out, pick + p * out);
  }
}

void pool_max2x2_grad_pick_planes(int64_t planes, int64_t h, int64_t w, bool mask, const float *dy,
                                  const uint8_t *pick, float *dx) {
  int64_t in = h * w, out = (h / 2) * (w / 2);
  PoolRows rows = pool_rows();
  for (int64_t p = 0; p < planes; p++) {
#if defined(__x86_64__) || defined(__i386__)
    if (rows == POOL_ROWS_AVX512) {
      pool_max2x2_grad_pick_avx512(h, w, mask, dy + p * out, pick + p * out, dx + p * in);
      continue;
    }
    if (rows == POOL_ROWS_AVX2) {
      pool_max2x2_grad_pick_avx2(h, w, mask, dy + p * out, pick + p * out, dx + p * in);
      continue;
    }
#endif
    pool_max2x2_grad_pick_scalar(h, w, mask, dy + p * out, pick + p * out, dx + p * in);
  }
}

typedef struct PickJob {
  int64_t h, w;
  bool mask;
  const float *x, *dy;
  const uint8_t *rpick;
  float *y, *dx;
  uint8_t *pick;
} PickJob;

static void fwd_task(void *vj, int64_t b, int64_t e) {
  const PickJob *j = vj;
  int64_t in = j->h * j->w, out = (j->h / 2) * (j->w / 2);
  pool_max2x2_pick_planes(e - b, j->h, j->w, j->x + b * in, j->y + b * out, j->pick + b * out);
}

static void grad_task(void *vj, int64_t b, int64_t e) {
  const PickJob *j = vj;
  int64_t in = j->h * j->w, out = (j->h / 2) * (j->w / 2);
  pool_max2x2_grad_pick_planes(e - b, j->h, j->w, j->mask, j->dy + b * out, j->rpick + b * out, j->dx + b * in);
}

static int64_t grain(int64_t h, int64_t w) {
  int64_t plane = h * w > 0 ? h * w : 1;
  return plane >= PICK_CHUNK_FLOATS ? 1 : PICK_CHUNK_FLOATS / plane;
}

int mlc_max_pool2d_pick(MlcPool *pool, int64_t n, int64_t c, int64_t h, int64_t w, const float *x, float *y,
                        uint8_t *pick) {
  if (n < 0 || c < 0 || h < 0 || w < 0) return -1;
  PickJob j = {.h = h, .w = w, .x = x, .y = y, .pick = pick};
  if (n * c > 0 && h >= 2 && w >= 2) mlc_parallel_for(pool, n * c, grain(h, w), fwd_task, &j);
  return 0;
}

int mlc_max_pool2d_grad_pick(MlcPool *pool, int64_t n, int64_t c, int64_t h, int64_t w, int64_t mask,
                             const float *dy, const uint8_t *pick, float *dx) {
  if (n < 0 || c < 0 || h < 0 || w < 0) return -1;
  PickJob j = {.h = h, .w = w, .mask = mask != 0, .dy = dy, .rpick = pick, .dx = dx};
  if (n * c > 0 && h * w > 0) mlc_parallel_for(pool, n * c, grain(h, w), grad_task, &j);
  return 0;
}
