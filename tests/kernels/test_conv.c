// test_conv.c — mlc_conv2d, mlc_conv2d_grad_input and
// mlc_conv2d_grad_weight (kernels/cpu/conv.c) against a double-precision
// walk of the reference interpreter's definition (conv_walk in
// compiler/graph/interp_nn.c): odd sizes, stride, padding, dilation,
// groups, 1x1, bias and relu; for every micro-kernel variant the CPU runs
// (bit-equal to the generic one), and bit-identical with 1, 2 and 3 threads;
// mlc_conv2d_pool bit-equal to mlc_conv2d then mlc_max_pool2d.
// And bit for bit against the definition of their order, kernels/gemm_ref.h
// in f32 (what the reference interpreter computes in f32 mode). With
// MLC_GEMM_BF16 / MLC_GEMM_F16 the same over rounded operands, and the
// rounding must change the result.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm_ref.h"
#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "rand_data.h"
#include "unit.h"

typedef struct Shape {
  int64_t g[MLC_CONV_GEOM];
  int64_t ho, wo, nx, nw, ny;
} Shape;

static Shape shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh, int64_t kw,
                   int64_t s, int64_t p, int64_t d, int64_t groups) {
  Shape sh = {.g = {n, c, h, w, o, kh, kw, s, s, p, p, d, d, groups}};
  sh.ho = mlc_conv_out_h(sh.g), sh.wo = mlc_conv_out_w(sh.g);
  sh.nx = n * c * h * w, sh.nw = o * (c / groups) * kh * kw, sh.ny = n * o * sh.ho * sh.wo;
  return sh;
}

// The same geometry with the row stride 2 (the width stride stays).
static Shape rows2(Shape s) {
  s.g[MLC_CONV_SH] = 2;
  s.ho = mlc_conv_out_h(s.g);
  s.ny = s.g[MLC_CONV_N] * s.g[MLC_CONV_O] * s.ho * s.wo;
  return s;
}

// The same geometry with the width stride 2 (the row stride stays).
static Shape cols2(Shape s) {
  s.g[MLC_CONV_SW] = 2;
  s.wo = mlc_conv_out_w(s.g);
  s.ny = s.g[MLC_CONV_N] * s.g[MLC_CONV_O] * s.ho * s.wo;
  return s;
}

// The interpreter's index walk, in double: op 0 forward (into y), 1 grad
// input (into dx), 2 grad weight (into dw); mag gets the sum of |terms|.
// The operands are rounded by the precision bits of flags.
static void walk(const Shape *s, int op, uint32_t flags, const float *x, const float *w, const float *dy,
                 double *out, double *mag) {
  const int64_t *g = s->g;
  int64_t N = g[0], C = g[1], H = g[2], W = g[3], O = g[4], KH = g[5], KW = g[6], G = g[13];
  int64_t Cg = C / G, Og = O / G;
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t i = 0; i < s->ho; i++)
        for (int64_t j = 0; j < s->wo; j++) {
          int64_t yo = ((n * O + o) * s->ho + i) * s->wo + j;
          for (int64_t ci = 0; ci < Cg; ci++)
            for (int64_t a = 0; a < KH; a++)
              for (int64_t b = 0; b < KW; b++) {
                int64_t h = i * g[7] - g[9] + a * g[11], ww = j * g[8] - g[10] + b * g[12];
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                int64_t xo = ((n * C + (o / Og) * Cg + ci) * H + h) * W + ww;
                int64_t wo = ((o * Cg + ci) * KH + a) * KW + b;
                int64_t at = op == 0 ? yo : op == 1 ? xo : wo;
                double xv = mlc_ref_round16(flags, x[xo]), wv = mlc_ref_round16(flags, w[wo]);
                double dv = op ? mlc_ref_round16(flags, dy[yo]) : 0;
                double t = op == 0 ? xv * wv : op == 1 ? dv * wv : dv * xv;
                out[at] += t, mag[at] += fabs(t);
              }
        }
}

// got[i] against ref[i] within float32 rounding of a sum of `terms` terms.
static int64_t count_bad(const float *got, const double *ref, const double *mag, int64_t n,
                         int64_t terms) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(got[i] - ref[i]) <= (double)(terms + 8) * 1.2e-7 * mag[i] + 1e-30)) bad++;
  return bad;
}

typedef struct Outs {
  float *y, *dx, *dw;
} Outs;

static int run_all(MlcPool *pool, const Shape *s, uint32_t flags, const float *x, const float *w,
                   const float *bias, const float *dy, Outs *o) {
  o->y = malloc((size_t)s->ny * sizeof(float)), o->dx = malloc((size_t)s->nx * sizeof(float));
  o->dw = malloc((size_t)s->nw * sizeof(float));
  uint32_t prec = flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  return mlc_conv2d(pool, s->g, flags, x, w, bias, o->y) ||
         mlc_conv2d_grad_input(pool, s->g, prec, dy, w, o->dx) ||
         mlc_conv2d_grad_weight(pool, s->g, prec, dy, x, o->dw);
}

static void outs_free(Outs *o) { free(o->y), free(o->dx), free(o->dw); }

static double *to_double(const float *x, int64_t n) {
  double *d = malloc(sizeof(double) * (size_t)(n + 1));
  for (int64_t i = 0; d && x && i < n; i++) d[i] = x[i];
  return x ? d : (free(d), NULL);
}

// Elements of got whose bits differ from want (doubles holding floats).
static int64_t count_unlike(const float *got, const double *want, int64_t n) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    float w = (float)want[i];
    bad += memcmp(&got[i], &w, sizeof w) != 0;
  }
  return bad;
}

// kernels/gemm_ref.h in f32 for the three passes: elements that differ.
static int64_t unlike_ref(const Shape *s, uint32_t flags, const float *x, const float *w,
                          const float *bias, const float *dy, const Outs *got) {
  double *dx_ = to_double(x, s->nx), *dw_ = to_double(w, s->nw), *ddy = to_double(dy, s->ny);
  double *db = to_double(bias, s->g[MLC_CONV_O]), *y = calloc((size_t)s->ny + 1, sizeof(double));
  double *gx = calloc((size_t)s->nx + 1, sizeof(double)), *gw = calloc((size_t)s->nw + 1, sizeof(double));
  int64_t bad = -1;
  uint32_t prec = flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  if (mlc_ref_conv2d(true, s->g, flags, dx_, dw_, db, y) && mlc_ref_conv2d_grad_input(true, s->g, prec, ddy, dw_, gx) &&
      mlc_ref_conv2d_grad_weight(true, s->g, prec, ddy, dx_, gw))
    bad = count_unlike(got->y, y, s->ny) + count_unlike(got->dx, gx, s->nx) + count_unlike(got->dw, gw, s->nw);
  free(dx_), free(dw_), free(ddy), free(db), free(y), free(gx), free(gw);
  return bad;
}

static int same(const Outs *a, const Outs *b, const Shape *s) {
  return !memcmp(a->y, b->y, (size_t)s->ny * 4) && !memcmp(a->dx, b->dx, (size_t)s->nx * 4) &&
         !memcmp(a->dw, b->dw, (size_t)s->nw * 4);
}

static void check_shape(const Shape *s, uint32_t flags, int with_bias, const char *variant) {
  const int64_t *g = s->g;
  float *x = rand_buf(s->nx), *w = rand_buf(s->nw), *dy = rand_buf(s->ny);
  float *bias = with_bias ? rand_buf(g[MLC_CONV_O]) : NULL;
  double *ref[3], *mag[3];
  int64_t sizes[3] = {s->ny, s->nx, s->nw};
  for (int op = 0; op < 3; op++) {
    ref[op] = calloc((size_t)sizes[op], sizeof(double)), mag[op] = calloc((size_t)sizes[op], sizeof(double));
    walk(s, op, flags, x, w, dy, ref[op], mag[op]);
  }
  for (int64_t i = 0; i < s->ny; i++) { // forward epilogue: bias, then relu
    int64_t o = i / (s->ho * s->wo) % g[MLC_CONV_O];
    if (bias) ref[0][i] += bias[o], mag[0][i] += fabs(bias[o]);
    if (flags & MLC_CONV_RELU) ref[0][i] = ref[0][i] > 0 ? ref[0][i] : 0;
  }
  Outs got, gen, thr[3];
  int rc = run_all(NULL, s, flags, x, w, bias, dy, &got);
  mlc_gemm_select("generic");
  rc |= run_all(NULL, s, flags, x, w, bias, dy, &gen);
  mlc_gemm_select(variant);
  int64_t cg = g[1] / g[13], og = g[4] / g[13];
  int64_t bad0 = count_bad(got.y, ref[0], mag[0], s->ny, cg * g[5] * g[6] + 2);
  int64_t bad1 = count_bad(got.dx, ref[1], mag[1], s->nx, og * g[5] * g[6]);
  int64_t bad2 = count_bad(got.dw, ref[2], mag[2], s->nw, g[0] * s->ho * s->wo);
  int64_t unlike = unlike_ref(s, flags, x, w, bias, dy, &got);
  int threads_same = 1;
  for (int t = 1; t <= 3; t++) {
    MlcPool *pool = mlc_pool_new(t);
    rc |= run_all(pool, s, flags, x, w, bias, dy, &thr[t - 1]);
    threads_same &= same(&thr[t - 1], &got, s);
    outs_free(&thr[t - 1]);
    mlc_pool_free(pool);
  }
  int rounds = 1; // the precision bits change the outputs (not a no-op)
  if (flags & (MLC_GEMM_BF16 | MLC_GEMM_F16)) {
    Outs f32;
    rc |= run_all(NULL, s, flags & MLC_CONV_RELU, x, w, bias, dy, &f32);
    rounds = memcmp(f32.y, got.y, (size_t)s->ny * 4) || memcmp(f32.dx, got.dx, (size_t)s->nx * 4) ||
             memcmp(f32.dw, got.dw, (size_t)s->nw * 4);
    outs_free(&f32);
  }
  char msg[360];
  snprintf(msg, sizeof msg,
           "%s: x[%lld,%lld,%lld,%lld] w[%lld,.,%lld,%lld] s%lld p%lld d%lld g%lld%s%s: "
           "out of bound fwd %lld dx %lld dw %lld; same as generic %d; same with 1-3 threads %d; "
           "%lld unlike gemm_ref.h%s",
           variant, (long long)g[0], (long long)g[1], (long long)g[2], (long long)g[3],
           (long long)g[4], (long long)g[5], (long long)g[6], (long long)g[7], (long long)g[9],
           (long long)g[11], (long long)g[13], bias ? " bias" : "",
           flags & MLC_CONV_RELU ? " relu" : "", (long long)bad0, (long long)bad1, (long long)bad2,
           same(&got, &gen, s), threads_same, (long long)unlike,
           flags & MLC_GEMM_BF16 ? " (bf16)" : flags & MLC_GEMM_F16 ? " (f16)" : "");
  check(msg, !rc && !bad0 && !bad1 && !bad2 && same(&got, &gen, s) && threads_same && unlike == 0 && rounds);
  outs_free(&got), outs_free(&gen);
  for (int op = 0; op < 3; op++) free(ref[op]), free(mag[op]);
  free(x), free(w), free(dy), free(bias);
}

// mlc_conv2d_pool against mlc_conv2d then mlc_max_pool2d: the same bits of
// y and yp, with 0-3 threads (whole planes pooled inside the tasks, or
// after them when chunks or pieces cut an image).
static void check_pool_fused(const Shape *s, uint32_t flags, int with_bias, const char *variant) {
  const int64_t *g = s->g;
  int64_t np = g[MLC_CONV_N] * g[MLC_CONV_O] * (s->ho / 2) * (s->wo / 2);
  float *x = rand_buf(s->nx), *w = rand_buf(s->nw), *bias = with_bias ? rand_buf(g[MLC_CONV_O]) : NULL;
  float *y0 = malloc((size_t)s->ny * 4), *p0 = malloc((size_t)np * 4);
  int rc = mlc_conv2d(NULL, g, flags, x, w, bias, y0) |
           mlc_max_pool2d(NULL, g[MLC_CONV_N], g[MLC_CONV_O], s->ho, s->wo, 2, 2, 2, 2, y0, p0);
  int same_bits = 1;
  for (int t = 0; t <= 3; t++) {
    MlcPool *pool = t ? mlc_pool_new(t) : NULL;
    float *y = malloc((size_t)s->ny * 4), *p = malloc((size_t)np * 4);
    rc |= mlc_conv2d_pool(pool, g, flags, x, w, bias, y, p);
    same_bits &= !memcmp(y, y0, (size_t)s->ny * 4) && !memcmp(p, p0, (size_t)np * 4);
    memset(p, 0xff, (size_t)np * 4); // y not written (inference): the same yp
    rc |= mlc_conv2d_pool(pool, g, flags, x, w, bias, NULL, p);
    same_bits &= !memcmp(p, p0, (size_t)np * 4);
    free(y), free(p);
    if (pool) mlc_pool_free(pool);
  }
  char msg[200];
  snprintf(msg, sizeof msg, "%s: conv2d_pool x[%lld,%lld,%lld,%lld] w[%lld,.,%lld,%lld] s%lld p%lld%s: y and yp as conv2d + max_pool2d, 0-3 threads, and yp with y NULL",
           variant, (long long)g[0], (long long)g[1], (long long)g[2], (long long)g[3], (long long)g[4],
           (long long)g[5], (long long)g[6], (long long)g[7], (long long)g[9], flags & MLC_CONV_RELU ? " relu" : "");
  check(msg, !rc && same_bits);
  free(x), free(w), free(bias), free(y0), free(p0);
}

// mlc_conv2d_grad_weight_bias: dw the bits of mlc_conv2d_grad_weight, db
// the bits of gemm_ref.h's mlc_ref_conv_bias_grad (the kernel IR's
// reduce_to order), with 0-3 threads. dy spans magnitudes (and has runs of
// one value) so that a sum in another order would round differently.
static void check_bias_fused(const Shape *s, uint32_t flags, const char *variant) {
  const int64_t *g = s->g;
  int64_t o = g[MLC_CONV_O];
  float *x = rand_buf(s->nx), *dy = rand_buf(s->ny), *dw0 = malloc((size_t)(s->nw + 1) * 4);
  for (int64_t i = 0; i < s->ny; i++) dy[i] = i % 7 == 3 ? 0.1f : dy[i] * (i % 5 == 0 ? 1e4f : 1e-3f);
  double *ddy = to_double(dy, s->ny), *db_ref = calloc((size_t)o + 1, sizeof(double));
  int rc = mlc_conv2d_grad_weight(NULL, g, flags, dy, x, dw0) | !mlc_ref_conv_bias_grad(true, g, ddy, db_ref);
  int same_bits = 1, order_matters = 0;
  for (int t = 0; t <= 3; t++) {
    MlcPool *pool = t ? mlc_pool_new(t) : NULL;
    float *dw = malloc((size_t)(s->nw + 1) * 4), *db = malloc((size_t)o * 4);
    rc |= mlc_conv2d_grad_weight_bias(pool, g, flags, dy, x, dw, db);
    same_bits &= !memcmp(dw, dw0, (size_t)s->nw * 4) && count_unlike(db, db_ref, o) == 0;
    free(dw), free(db);
    if (pool) mlc_pool_free(pool);
  }
  for (int64_t c = 0; c < o; c++) { // a plain f32 sum differs somewhere: the order is tested
    float f = 0;
    for (int64_t n = 0; n < g[MLC_CONV_N]; n++)
      for (int64_t q = 0; q < s->ho * s->wo; q++) f += dy[(n * o + c) * s->ho * s->wo + q];
    order_matters |= f != (float)db_ref[c];
  }
  char msg[200];
  snprintf(msg, sizeof msg, "%s: conv2d_grad_weight_bias x[%lld,%lld,%lld,%lld] w[%lld,.,%lld,%lld] s%lld g%lld: dw, db (gemm_ref.h) bits, 0-3 threads%s",
           variant, (long long)g[0], (long long)g[1], (long long)g[2], (long long)g[3], (long long)g[4],
           (long long)g[5], (long long)g[6], (long long)g[7], (long long)g[13], order_matters ? "" : " (order untested)");
  check(msg, !rc && same_bits);
  free(x), free(dy), free(dw0), free(ddy), free(db_ref);
}

// mlc_conv2d_grad_weight_pool against mlc_max_pool2d_grad then
// mlc_conv2d_grad_weight_bias: the same dw and db bits, with and without
// the mask and db, 0-3 threads.
static void check_pool_grad_fused(const Shape *s, const char *variant) {
  const int64_t *g = s->g;
  int64_t o = g[MLC_CONV_O], np = g[MLC_CONV_N] * o * (s->ho / 2) * (s->wo / 2);
  float *x = rand_buf(s->nx), *px = rand_buf(s->ny), *dyp = rand_buf(np + 1), *aux = rand_buf(s->ny);
  for (int64_t i = 0; i < s->ny; i++) aux[i] -= 0.4f; // some masked
  float *dy = malloc((size_t)(s->ny + 1) * 4), *dw0 = malloc((size_t)(s->nw + 1) * 4), *db0 = malloc((size_t)o * 4);
  int rc = 0, same_bits = 1;
  for (int masked = 0; masked < 2; masked++) {
    const float *a = masked ? aux : NULL;
    rc |= mlc_max_pool2d_grad(NULL, g[MLC_CONV_N], o, s->ho, s->wo, 2, 2, 2, 2, dyp, px, a, dy) |
          mlc_conv2d_grad_weight_bias(NULL, g, 0, dy, x, dw0, db0);
    for (int t = 0; t <= 3; t++) {
      MlcPool *pool = t ? mlc_pool_new(t) : NULL;
      float *dw = malloc((size_t)(s->nw + 1) * 4), *db = malloc((size_t)o * 4);
      rc |= mlc_conv2d_grad_weight_pool(pool, g, 0, dyp, px, a, x, dw, t % 2 ? NULL : db);
      same_bits &= !memcmp(dw, dw0, (size_t)s->nw * 4) && (t % 2 || !memcmp(db, db0, (size_t)o * 4));
      free(dw), free(db);
      if (pool) mlc_pool_free(pool);
    }
  }
  char msg[200];
  snprintf(msg, sizeof msg, "%s: conv2d_grad_weight_pool x[%lld,%lld,%lld,%lld] w[%lld,.,%lld,%lld] s%lld g%lld: dw, db as max_pool2d_grad + grad_weight_bias, 0-3 threads",
           variant, (long long)g[0], (long long)g[1], (long long)g[2], (long long)g[3], (long long)g[4],
           (long long)g[5], (long long)g[6], (long long)g[7], (long long)g[13]);
  check(msg, !rc && same_bits);
  free(x), free(px), free(dyp), free(aux), free(dy), free(dw0), free(db0);
}

static void shapes(const char *variant) {
  Shape s[] = {
      shape(3, 1, 28, 28, 8, 3, 3, 1, 1, 1, 1),   // fashion_cnn conv1, small batch
      shape(2, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1),  // its 32 channels: grad_weight in column strips
      shape(2, 1, 9, 7, 40, 3, 3, 1, 1, 1, 1),    // column strips of 16 with a short last one
      shape(2, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1), // conv2
      shape(2, 7, 13, 11, 5, 3, 2, 2, 1, 1, 1),   // odd, stride 2
      shape(1, 6, 15, 17, 9, 3, 3, 1, 2, 2, 3),   // dilation 2, groups 3
      shape(2, 4, 9, 9, 6, 5, 5, 3, 2, 1, 2),     // 5x5 stride 3, groups 2
      shape(2, 65, 7, 9, 63, 1, 1, 1, 0, 1, 1),   // 1x1: read in place
      shape(1, 3, 1, 1, 2, 1, 1, 1, 0, 1, 1),     // 1x1 image
      shape(1, 2, 70, 90, 3, 3, 3, 1, 1, 1, 1),   // many pixels: several col chunks
      shape(1, 1, 4, 4, 1, 4, 4, 1, 0, 1, 1),     // window = image: one output pixel
      rows2(shape(2, 3, 11, 37, 4, 3, 3, 1, 1, 1, 1)), // row stride 2, width stride 1, rows of 3 blocks
      rows2(shape(1, 2, 9, 21, 3, 2, 5, 1, 3, 2, 1)),  // and dilation 2, padding wider than the taps
      shape(1, 3, 12, 40, 2, 4, 6, 1, 4, 1, 1),   // padding past the window: rows all outside x
      shape(1, 1, 300, 301, 1, 3, 3, 1, 1, 1, 1), // chunks that start inside an output row
      // "same" convolutions (conv_avx512.c's masked rows): N 1, 7, 65,
      // odd channels and sizes, 5x5 with padding 2, dilation 2, padding 0
      // of a 1-wide window (WO == W), rows shorter than a vector
      shape(1, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1), // conv2 at batch 1: pieces of a chunk per thread
      shape(7, 5, 11, 13, 9, 3, 3, 1, 1, 1, 1),
      shape(65, 3, 9, 9, 5, 3, 3, 1, 1, 1, 1),
      shape(2, 3, 13, 17, 5, 5, 5, 1, 2, 1, 1),
      shape(1, 3, 12, 19, 4, 3, 3, 1, 2, 2, 1),
      shape(2, 3, 10, 5, 3, 3, 1, 1, 0, 1, 1),
      shape(1, 2, 3, 3, 2, 3, 3, 1, 1, 1, 1),
      shape(1, 1, 45, 45, 3, 3, 3, 1, 1, 1, 1),   // pixel chunks of whole vectors and not
      shape(7, 7, 9, 11, 13, 3, 3, 1, 1, 1, 1),   // implicit forward (Kc 63): a short row tile, one-vector tail
      // the channel-lane forward and grad_weight (conv_lanes_avx512.c):
      // 4, 3, 2 and 1 vectors of channels per tile, channels past O/G in
      // the last one, K slices with a short last one, pixel (forward) and
      // row (grad_weight) tiles with a short last one, chunks and K blocks
      shape(2, 16, 10, 12, 48, 3, 3, 1, 1, 1, 1),  // 48 channels: 3-vector tiles; Kc 144 = slices of 128 + 16
      shape(1, 12, 9, 9, 80, 3, 3, 1, 1, 1, 1),    // 80: a 4-vector block, then 1; Kc 108 = 96 + 12; 81 pixels
      shape(2, 20, 9, 11, 50, 3, 3, 2, 2, 2, 1),   // stride 2, padding 2, dilation 2; 50 channels of 64 lanes
      shape(2, 24, 8, 8, 64, 3, 3, 1, 1, 1, 2),    // groups 2: 32 channels, Kc 108 per group
      shape(1, 32, 20, 20, 32, 3, 3, 1, 1, 1, 1),  // 400 pixels: two col chunks of one image (grad_input in lanes; one forward lane chunk)
      shape(1, 4, 72, 72, 32, 3, 3, 1, 0, 1, 1),   // 4900 pixels: two lane chunks of 2450 (yt of 2^17 floats)
      shape(2, 3, 12, 12, 20, 5, 5, 1, 0, 1, 1),   // unpadded 5x5 (WO < W), 20 channels
      shape(2, 1, 16, 16, 24, 3, 3, 2, 1, 1, 1),   // one input channel, stride 2 (Kc 9, 24 channels)
      shape(1, 64, 6, 6, 64, 3, 3, 1, 1, 1, 1),    // Kc 576, one image of 36 pixels: col + GEMM (conv.c's rule)
      // the lane forward over several K blocks (Kc > 512: block 0 chained
      // in yt, each later one in ys and then added, C = s + C): two blocks
      // of 288 in slices, a short last pixel tile, O not a multiple of 16
      shape(2, 64, 9, 9, 24, 3, 3, 1, 1, 1, 1),    // 2-vector tiles of 8 pixels (81 = 10 x 8 + 1), slices of 144
      shape(2, 65, 8, 9, 40, 3, 3, 1, 1, 1, 1),    // Kc 585: blocks of 293 and 292, 3-vector tiles
      shape(1, 64, 9, 8, 48, 3, 3, 1, 1, 1, 1),    // one image of 72 pixels: pieces of a chunk per thread
      shape(2, 129, 6, 7, 20, 2, 2, 1, 0, 1, 1),   // 2x2 unpadded (WO < W), Kc 516: blocks of 258
      shape(2, 128, 5, 5, 34, 3, 3, 1, 1, 1, 2),   // groups 2: Kc 576 per group, 17 channels each
      shape(2, 64, 9, 9, 16, 3, 3, 2, 1, 1, 1),    // stride 2, 1-vector tiles of 12 pixels
      shape(2, 64, 9, 9, 32, 3, 3, 1, 2, 2, 1),    // dilation 2, padding 2
      shape(2, 70, 1, 1, 20, 3, 3, 1, 1, 1, 1),    // 1-pixel planes, Kc 630
      shape(2, 200, 3, 3, 16, 3, 3, 1, 1, 1, 1),   // Kc 1800: four blocks of 450, two slices each
      shape(2, 150, 4, 5, 64, 3, 3, 1, 1, 1, 1),   // Kc 1350: three blocks of 450 in slices of 90, 4 vectors
      shape(2, 4, 24, 24, 16, 3, 3, 1, 1, 1, 1),   // grad_weight in lanes: 576 pixels, two K blocks of 288
      // grad_input in lanes (16+ channels in and out, stride 1)
      shape(2, 20, 11, 9, 24, 3, 3, 1, 2, 2, 1),   // dilation 2, padding 2; 20 input channels of 32 lanes
      shape(1, 40, 7, 8, 16, 2, 3, 1, 3, 1, 1),    // padding past the window (y larger than x), 3 vectors
      shape(1, 64, 5, 5, 16, 3, 3, 1, 1, 1, 1),    // 4 vectors of input channels (Kc 576: forward by col)
      // strided grad_input in lanes (AVX-512: phase classes of dx pixels)
      shape(2, 16, 12, 12, 32, 3, 3, 2, 1, 1, 1),  // ResNet's downsampling 3x3 (even plane)
      shape(1, 24, 11, 9, 20, 3, 3, 2, 1, 1, 1),   // odd planes, 24 input channels of 32 lanes
      shape(2, 16, 9, 9, 32, 1, 1, 2, 0, 1, 1),    // 1x1 stride 2: three of four classes get no tap
      shape(1, 17, 10, 10, 16, 2, 2, 3, 1, 1, 1),  // stride 3 > window: some dx pixels get nothing
      shape(1, 16, 13, 13, 16, 3, 3, 2, 2, 2, 1),  // dilation 2 with stride 2: taps of one phase
      rows2(shape(1, 16, 9, 13, 18, 3, 3, 1, 1, 1, 1)), // row stride 2, width stride 1
      // width stride 2, row stride 1 with padding past the window: the
      // padded dy's rows reach H + ph + (KH-1)*dh in the phase layout
      // (a copy ph rows short read the next channel's plane)
      cols2(shape(1, 16, 5, 9, 16, 2, 3, 1, 3, 1, 1)),
      // few channels per group (conv_narrow_avx512.c): depthwise, channel
      // multipliers, 2-4 channels per group; rows of 1-3 vectors and
      // units across rows, strides (permuted dy for grad_input), dilation,
      // padding past the window, dw's channels in a short last block,
      // grad_weight over pixel chunks and K blocks
      shape(2, 8, 9, 11, 8, 3, 3, 1, 1, 1, 8),     // depthwise 3x3
      shape(2, 6, 12, 12, 12, 3, 3, 2, 1, 1, 6),   // multiplier 2, stride 2
      shape(1, 8, 13, 35, 8, 5, 5, 1, 2, 1, 8),    // 5x5, rows of 3 vectors
      shape(2, 12, 10, 10, 6, 3, 3, 1, 2, 2, 3),   // 4 channels in, 2 out per group, dilation 2
      cols2(shape(1, 20, 7, 19, 20, 3, 3, 1, 1, 1, 20)), // width stride 2 only; 20 = 16 + 4 lanes of dw
      rows2(shape(1, 4, 9, 9, 4, 3, 2, 1, 0, 1, 4)),     // row stride 2 only, unpadded
      shape(1, 4, 10, 10, 4, 2, 2, 3, 1, 1, 4),    // stride 3 > window: dx pixels with no tap
      shape(1, 2, 5, 9, 2, 2, 3, 1, 3, 1, 2),      // padding past the window
      shape(1, 2, 100, 100, 2, 3, 3, 1, 1, 1, 2),  // 10000 pixels: two chunks of ten K blocks
      shape(3, 17, 6, 6, 34, 3, 3, 1, 1, 1, 17),   // 34 channels of dw: three blocks of lanes
      shape(2, 16, 7, 9, 16, 3, 3, 1, 1, 1, 4),    // 4 x 4 per group: narrow gradients, col + GEMM forward
      // depthwise, the forward in channel lanes: dilation and stride 2 with
      // 24 channels (16 + 8 lanes), an 8 x 8 plane of 40 channels, and 21
      // pixels of 29 channels (16 + 13 lanes; the AVX2 pass's last 8
      // pixels are 5: one tile of 4 and one of 1)
      shape(2, 24, 11, 13, 24, 3, 3, 2, 2, 2, 24),
      shape(1, 40, 8, 8, 40, 3, 3, 1, 1, 1, 40),
      shape(2, 29, 3, 7, 29, 3, 3, 1, 1, 1, 29),
  };
  for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
    check_shape(&s[i], 0, 0, variant);
    check_shape(&s[i], MLC_CONV_RELU, 1, variant);
    check_shape(&s[i], MLC_GEMM_BF16, i % 2, variant);
    check_shape(&s[i], MLC_GEMM_F16 | MLC_CONV_RELU, 1, variant);
    check_pool_fused(&s[i], MLC_CONV_RELU, 1, variant);
    check_pool_fused(&s[i], 0, 0, variant);
    check_bias_fused(&s[i], i % 3 == 1 ? MLC_GEMM_BF16 : 0, variant);
    check_pool_grad_fused(&s[i], variant);
  }
}

// A w with an inf and a NaN: grad_input must give the reference's NaNs
// and no others (the lane path's padding taps would multiply inf by 0, so
// it must not run), the same bits elsewhere; the forward and grad_weight
// likewise.
static void check_nonfinite_w(Shape s, int64_t inf_at, int64_t nan_at) {
  float *x = rand_buf(s.nx), *w = rand_buf(s.nw), *dy = rand_buf(s.ny);
  w[inf_at] = INFINITY, w[nan_at] = NAN;
  Outs got;
  int rc = run_all(NULL, &s, 0, x, w, NULL, dy, &got);
  double *dw_ = to_double(w, s.nw), *ddy = to_double(dy, s.ny), *gx = calloc((size_t)s.nx + 1, sizeof(double));
  int64_t bad = mlc_ref_conv2d_grad_input(true, s.g, 0, ddy, dw_, gx) ? 0 : -1, nans = 0;
  for (int64_t i = 0; i < s.nx; i++) {
    float want = (float)gx[i];
    nans += isnan(want);
    bad += isnan(want) != isnan(got.dx[i]) || (!isnan(want) && memcmp(&want, &got.dx[i], 4));
  }
  char msg[160];
  snprintf(msg, sizeof msg, "grad_input with an inf and a NaN in w (groups %lld): %lld elements unlike gemm_ref.h (%lld NaNs)",
           (long long)s.g[MLC_CONV_G], (long long)bad, (long long)nans);
  check(msg, !rc && bad == 0 && nans > 0 && nans < s.nx);
  outs_free(&got);
  free(x), free(w), free(dy), free(dw_), free(ddy), free(gx);
}

int main(void) {
  static const char *variants[] = {"avx512", "avx2", "generic"};
  for (int v = 0; v < 3; v++) {
    if (mlc_gemm_select(variants[v])) {
      printf("[SKIP] %s: this CPU cannot run it\n", variants[v]);
      continue;
    }
    shapes(variants[v]);
  }
  check_nonfinite_w(shape(2, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1), 5 * 288 + 4, 40 * 288 + 100);
  check_nonfinite_w(shape(2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 8), 2 * 9 + 4, 6 * 9); // depthwise: masked taps
  int64_t none[MLC_CONV_GEOM] = {0, 3, 4, 4, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1}; // no image: dw and db 0
  float dw[2 * 3 * 9], db[2] = {1, 1};
  check("conv2d_grad_weight_bias of no image: db 0",
        mlc_conv2d_grad_weight_bias(NULL, none, 0, NULL, NULL, dw, db) == 0 && db[0] == 0 && db[1] == 0);
  int64_t bad[MLC_CONV_GEOM] = {1, 3, 4, 4, 2, 5, 5, 1, 1, 0, 0, 1, 1, 1};
  check("a window larger than the input is refused (-1)",
        mlc_conv_out_h(bad) == -1 && mlc_conv2d(NULL, bad, 0, NULL, NULL, NULL, NULL) == -1);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
