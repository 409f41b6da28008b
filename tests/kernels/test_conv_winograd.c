// test_conv_winograd.c — mlc_conv2d / mlc_conv2d_pool with
// MLC_CONV_WINOGRAD (kernels/cpu/conv_winograd.c):
//   - bit for bit against its order's definition (kernels/winograd_ref.h
//     through mlc_ref_conv2d in f32), with and without bias and relu, odd
//     planes (partial tiles), padding 0-2, channel counts off every
//     micro-tile, C past one K block, 1, 2 and 3 threads;
//   - conv2d_pool's pooled output bit-equal to mlc_max_pool2d of its y;
//   - geometries it does not apply to (stride 2, 5x5, groups, bf16) give
//     the direct path's bits with the flag;
//   - its error against a double-precision direct convolution within the
//     tolerance docs/design/kernels.md ("Winograd") derives from measuring
//     it: |y - y64| <= WG_TOL * 2^-24 * (the tile's scale, below).
// `test_conv_winograd measure` prints the error figures of that section.
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

// Winograd's error is not bounded by an output's own sum |x*w| (the
// transforms mix the whole 4 x 4 window and filter: 96434 units of that
// on wide-range data, direct f32 4.8), but by the tile's scale
// sum over c of |window|_1 * |w[o,c]|_1: measured worst 4.11 units of
// 2^-24 of it (conv1, x 2^[-16,16]; direct f32 2.92 there; `measure`,
// kernels.md "Winograd"). The bound is 2x that measurement.
#define WG_TOL 8.0

typedef struct Shape {
  int64_t g[MLC_CONV_GEOM];
  int64_t ho, wo, nx, nw, ny, np;
} Shape;

static Shape shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t k, int64_t s, int64_t p,
                   int64_t groups) {
  Shape sh = {.g = {n, c, h, w, o, k, k, s, s, p, p, 1, 1, groups}};
  sh.ho = mlc_conv_out_h(sh.g), sh.wo = mlc_conv_out_w(sh.g);
  sh.nx = n * c * h * w, sh.nw = o * (c / groups) * k * k, sh.ny = n * o * sh.ho * sh.wo;
  sh.np = n * o * (sh.ho / 2) * (sh.wo / 2);
  return sh;
}

static double *to_double(const float *x, int64_t n) {
  if (!x) return NULL;
  double *d = malloc(sizeof(double) * (size_t)(n + 1));
  for (int64_t i = 0; i < n; i++) d[i] = x[i];
  return d;
}

static int64_t count_unlike(const float *got, const double *want, int64_t n) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    float w = (float)want[i];
    bad += memcmp(&got[i], &w, sizeof w) != 0;
  }
  return bad;
}

// y (and yp) of the library with `flags` on `threads` threads.
static int run(const Shape *s, int threads, uint32_t flags, const float *x, const float *w, const float *b, float *y,
               float *yp) {
  MlcPool *pool = mlc_pool_new(threads);
  int rc = yp ? mlc_conv2d_pool(pool, s->g, flags, x, w, b, y, yp) : mlc_conv2d(pool, s->g, flags, x, w, b, y);
  mlc_pool_free(pool);
  return rc;
}

// Which path the checks ran: "fused" (conv_winograd.c's AVX-512 path,
// the default where the CPU has it) or "unfused" (16 gemm_region
// products, any other GEMM variant current).
static const char *path_name = "fused";

static void check_exact(const char *name, Shape s, bool with_bias, bool relu) {
  uint32_t flags = MLC_CONV_WINOGRAD | (relu ? MLC_CONV_RELU : 0);
  float *x = rand_buf(s.nx), *w = rand_buf(s.nw), *b = with_bias ? rand_buf(s.g[MLC_CONV_O]) : NULL;
  double *dx = to_double(x, s.nx), *dw = to_double(w, s.nw), *db = to_double(b, s.g[MLC_CONV_O]);
  double *ref = calloc((size_t)s.ny + 1, sizeof(double));
  bool ok = mlc_ref_conv2d(true, s.g, flags, dx, dw, db, ref);
  float *y1 = malloc((size_t)(s.ny + 1) * 4), *yn = malloc((size_t)(s.ny + 1) * 4);
  float *p = malloc((size_t)(s.np + 1) * 4), *pref = malloc((size_t)(s.np + 1) * 4);
  ok = ok && !run(&s, 1, flags, x, w, b, y1, NULL) && count_unlike(y1, ref, s.ny) == 0;
  for (int t = 2; t <= 3; t++) {
    ok = ok && !run(&s, t, flags, x, w, b, yn, NULL) && !memcmp(y1, yn, (size_t)s.ny * 4);
    memset(yn, 0, (size_t)s.ny * 4);
    ok = ok && !run(&s, t, flags, x, w, b, yn, p) && !memcmp(y1, yn, (size_t)s.ny * 4);
    ok = ok && !mlc_max_pool2d(NULL, s.g[MLC_CONV_N], s.g[MLC_CONV_O], s.ho, s.wo, 2, 2, 2, 2, y1, pref) &&
         !memcmp(p, pref, (size_t)s.np * 4);
  }
  // conv2d_pool without y (inference): only yp, the same bits
  for (int t = 1; t <= 3; t++) {
    memset(p, 0, (size_t)s.np * 4);
    ok = ok && !run(&s, t, flags, x, w, b, NULL, p) && !memcmp(p, pref, (size_t)s.np * 4);
  }
  // a constant weight: its filter transform made once into the GEMM cache, then read
  MlcGemmCache *cache = mlc_gemm_cache_new(), *prev = mlc_gemm_cache_use(cache);
  ok = ok && cache && !mlc_gemm_cache_add(cache, w, (size_t)s.nw * 4);
  for (int t = 1; t <= 3; t++) {
    memset(yn, 0, (size_t)s.ny * 4);
    ok = ok && !run(&s, t, flags, x, w, b, yn, NULL) && !memcmp(y1, yn, (size_t)s.ny * 4);
  }
  mlc_gemm_cache_use(prev), mlc_gemm_cache_free(cache);
  char label[200];
  snprintf(label, sizeof label, "%s%s%s (%s): winograd_ref.h's bits, 1-3 threads, pooled with and without y, cached filter",
           name, with_bias ? " +bias" : "", relu ? " +relu" : "", path_name);
  check(label, ok);
  free(x), free(w), free(b), free(dx), free(dw), free(db), free(ref), free(y1), free(yn), free(p), free(pref);
}

// mlc_conv2d_grad_input with the flag: winograd_ref.h's bits (the conv of
// dy with the flipped, transposed filter) for 1-3 threads, within the
// forward's tolerance of the double-precision direct gradient, and not
// the direct path's bits (so the flag did something).
static void check_grad(const char *name, Shape s) {
  float *dy = rand_buf(s.ny), *w = rand_buf(s.nw);
  double *ddy = to_double(dy, s.ny), *dw = to_double(w, s.nw), *ref = calloc((size_t)s.nx + 1, sizeof(double));
  float *g[4];
  bool ok = mlc_ref_conv2d_grad_input(true, s.g, MLC_CONV_WINOGRAD, ddy, dw, ref);
  for (int t = 0; t < 4; t++) {
    g[t] = malloc((size_t)(s.nx + 1) * 4);
    MlcPool *pool = mlc_pool_new(t ? t : 1);
    ok = ok && !mlc_conv2d_grad_input(pool, s.g, t ? MLC_CONV_WINOGRAD : 0, dy, w, g[t]);
    mlc_pool_free(pool);
  }
  ok = ok && count_unlike(g[1], ref, s.nx) == 0 && !memcmp(g[1], g[2], (size_t)s.nx * 4) &&
       !memcmp(g[1], g[3], (size_t)s.nx * 4);
  ok = ok && (s.nx < 64 || memcmp(g[0], g[1], (size_t)s.nx * 4)); // large enough to differ somewhere
  // the direct gradient in double, and the tile scale of the transposed conv
  const int64_t *ge = s.g;
  int64_t N = ge[0], C = ge[1], H = ge[2], W = ge[3], O = ge[4], P = ge[9];
  double worst = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < H; i++)
        for (int64_t j = 0; j < W; j++) {
          double acc = 0, tm = 0;
          for (int64_t o = 0; o < O; o++) {
            double sd = 0, sw = 0;
            for (int r = 0; r < 4; r++)
              for (int q = 0; q < 4; q++) {
                int64_t a = i / 2 * 2 - (2 - P) + r, b = j / 2 * 2 - (2 - P) + q;
                if (a >= 0 && a < s.ho && b >= 0 && b < s.wo) sd += fabs(dy[((n * O + o) * s.ho + a) * s.wo + b]);
              }
            for (int q = 0; q < 9; q++) sw += fabs(w[(o * C + c) * 9 + q]);
            tm += sd * sw;
            for (int a = 0; a < 3; a++)
              for (int b = 0; b < 3; b++) {
                int64_t yi = i + P - a, yj = j + P - b;
                if (yi >= 0 && yi < s.ho && yj >= 0 && yj < s.wo)
                  acc += (double)dy[((n * O + o) * s.ho + yi) * s.wo + yj] * w[((o * C + c) * 3 + a) * 3 + b];
              }
          }
          double e = tm > 0 ? fabs(g[1][((n * C + c) * H + i) * W + j] - acc) / (ldexp(1.0, -24) * tm) : 0;
          worst = fmax(worst, e);
        }
  char label[200];
  snprintf(label, sizeof label, "%s (%s): grad_input winograd_ref.h's bits, 1-3 threads, error %.2f <= %.0f", name, path_name, worst,
           WG_TOL);
  check(label, ok && worst <= WG_TOL);
  for (int t = 0; t < 4; t++) free(g[t]);
  free(dy), free(w), free(ddy), free(dw), free(ref);
}

// The flag on a geometry Winograd does not take: the direct path's bits.
static void check_ignored(const char *name, Shape s, uint32_t extra) {
  float *x = rand_buf(s.nx), *w = rand_buf(s.nw), *b = rand_buf(s.g[MLC_CONV_O]);
  float *y0 = malloc((size_t)(s.ny + 1) * 4), *y1 = malloc((size_t)(s.ny + 1) * 4);
  bool ok = !run(&s, 2, extra, x, w, b, y0, NULL) && !run(&s, 2, extra | MLC_CONV_WINOGRAD, x, w, b, y1, NULL) &&
            !memcmp(y0, y1, (size_t)s.ny * 4);
  check(name, ok);
  free(x), free(w), free(b), free(y0), free(y1);
}

// winograd_ref.h's filter transform against the same steps written in
// float here, over many random filters (GCC 12 at -O2 once dropped some of
// its roundings; kir_run's oracle is this code).
__attribute__((noinline)) static void ref_filter(bool f32, const double *g, double *u) { mlc_ref_wg_filter(f32, g, u); }

static void check_ref_filter(bool f32) {
  int bad = 0;
  for (int f = 0; f < 4096; f++) {
    float g[9], t[4][3];
    double gd[9], u[16];
    for (int q = 0; q < 9; q++) g[q] = frand() * 0.3f, gd[q] = g[q];
    ref_filter(f32, gd, u); // out of line with a run-time f32, as kir_interp.c calls it
    for (int b = 0; b < 3; b++) {
      float g0 = g[b], g1 = g[3 + b], g2 = g[6 + b];
      t[0][b] = g0, t[1][b] = ((g0 + g1) + g2) * 0.5f, t[2][b] = ((g0 - g1) + g2) * 0.5f, t[3][b] = g2;
    }
    for (int i = 0; i < 4; i++) {
      float g0 = t[i][0], g1 = t[i][1], g2 = t[i][2], v[4] = {g0, ((g0 + g1) + g2) * 0.5f, ((g0 - g1) + g2) * 0.5f, g2};
      for (int j = 0; j < 4; j++) bad += (float)u[i * 4 + j] != v[j];
    }
  }
  check("winograd_ref.h's filter transform is the float steps", bad == 0);
}

// ---- error against a double-precision direct convolution ----------------------------------------------
typedef enum { DATA_UNIFORM, DATA_RELU, DATA_RANGE } DataKind;
static const char *const data_names[] = {"uniform [-1,1)", "relu'd uniform x", "x 2^[-16,16], w 2^[-8,8]"};

static float draw(DataKind d, bool is_x, double span) {
  float u = frand();
  if (d == DATA_RELU && is_x) return u > 0 ? u : 0;
  if (d != DATA_RANGE) return u;
  float e = frand() * (float)span;
  return (u < 0 ? -1.0f : 1.0f) * ldexpf(1.0f, (int)lrintf(e)) * (1.0f + fabsf(frand())) * 0.5f;
}

typedef struct Err {
  double norm_max, norm_mean; // |y - y64| / (2^-24 * sum |x*w|)
  double tile_max, tile_mean; // |y - y64| / (2^-24 * sum over c of |window|_1 * |w[o,c]|_1)
  double rel_max, rel_mean;   // |y - y64| / |y64| over elements with |y64| >= 1e-3 * max |y64|
  double rms;                 // sqrt(mean (y - y64)^2) / sqrt(mean y64^2)
  double vs_rel_max, vs_rel_mean, vs_rms; // the same three against the direct f32 result
} Err;

static Err errors(const Shape *s, const float *y, const double *ref, const double *mag, const double *tmag) {
  Err e = {0};
  double big = 0, se = 0, sr = 0;
  int64_t nrel = 0;
  for (int64_t i = 0; i < s->ny; i++) big = fmax(big, fabs(ref[i]));
  for (int64_t i = 0; i < s->ny; i++) {
    double d = fabs((double)y[i] - ref[i]), nm = mag[i] > 0 ? d / (ldexp(1.0, -24) * mag[i]) : 0;
    double tm = tmag[i] > 0 ? d / (ldexp(1.0, -24) * tmag[i]) : 0;
    e.norm_max = fmax(e.norm_max, nm), e.norm_mean += nm / (double)s->ny;
    e.tile_max = fmax(e.tile_max, tm), e.tile_mean += tm / (double)s->ny;
    se += d * d, sr += ref[i] * ref[i];
    if (fabs(ref[i]) >= 1e-3 * big && ref[i] != 0) {
      e.rel_max = fmax(e.rel_max, d / fabs(ref[i])), e.rel_mean += d / fabs(ref[i]), nrel++;
    }
  }
  e.rel_mean /= nrel ? (double)nrel : 1;
  e.rms = sr > 0 ? sqrt(se / sr) : 0;
  return e;
}

// Winograd's and the direct path's errors on one shape and data set; false when a call fails.
static bool measure_one(Shape s, DataKind d, Err *wg, Err *direct) {
  double xspan = 16, wspan = 8;
  float *x = malloc((size_t)(s.nx + 1) * 4), *w = malloc((size_t)(s.nw + 1) * 4);
  for (int64_t i = 0; i < s.nx; i++) x[i] = draw(d, true, xspan);
  for (int64_t i = 0; i < s.nw; i++) w[i] = draw(d, false, wspan);
  double *ref = calloc((size_t)s.ny + 1, sizeof(double)), *mag = calloc((size_t)s.ny + 1, sizeof(double));
  double *tmag = calloc((size_t)s.ny + 1, sizeof(double));
  const int64_t *g = s.g;
  int64_t N = g[0], C = g[1], H = g[2], W = g[3], O = g[4], P = g[9];
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t i = 0; i < s.ho; i++)
        for (int64_t j = 0; j < s.wo; j++) {
          double acc = 0, m = 0;
          for (int64_t c = 0; c < C; c++)
            for (int a = 0; a < 3; a++)
              for (int b = 0; b < 3; b++) {
                int64_t h = i - P + a, ww = j - P + b;
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                double t = (double)x[((n * C + c) * H + h) * W + ww] * w[((o * C + c) * 3 + a) * 3 + b];
                acc += t, m += fabs(t);
              }
          // the tile's scale: every input of its 4 x 4 window against the whole filter
          double tm = 0;
          for (int64_t c = 0; c < C; c++) {
            double sd = 0, sw = 0;
            for (int r = 0; r < 4; r++)
              for (int q = 0; q < 4; q++) {
                int64_t h = i / 2 * 2 - P + r, ww = j / 2 * 2 - P + q;
                if (h >= 0 && h < H && ww >= 0 && ww < W) sd += fabs(x[((n * C + c) * H + h) * W + ww]);
              }
            for (int q = 0; q < 9; q++) sw += fabs(w[(o * C + c) * 9 + q]);
            tm += sd * sw;
          }
          int64_t at = ((n * O + o) * s.ho + i) * s.wo + j;
          ref[at] = acc, mag[at] = m, tmag[at] = tm;
        }
  float *y = malloc((size_t)(s.ny + 1) * 4), *yd = malloc((size_t)(s.ny + 1) * 4);
  bool ok = !run(&s, 2, MLC_CONV_WINOGRAD, x, w, NULL, y, NULL);
  *wg = errors(&s, y, ref, mag, tmag);
  ok = ok && !run(&s, 2, 0, x, w, NULL, yd, NULL);
  *direct = errors(&s, yd, ref, mag, tmag);
  for (int64_t i = 0; i < s.ny; i++) ref[i] = yd[i]; // Winograd against the direct f32 result
  Err vs = errors(&s, y, ref, mag, tmag);
  wg->vs_rel_max = vs.rel_max, wg->vs_rel_mean = vs.rel_mean, wg->vs_rms = vs.rms;
  free(x), free(w), free(ref), free(mag), free(tmag), free(y), free(yd);
  return ok;
}

typedef struct Case {
  const char *name;
  Shape s;
} Case;

static int ncases(void) { return 5; }
static Case error_case(int i) {
  switch (i) {
  case 0: return (Case){"fashion_cnn conv1 8x[1,28,28]*[32,1,3,3] pad 1", shape(8, 1, 28, 28, 32, 3, 1, 1, 1)};
  case 1: return (Case){"fashion_cnn conv2 8x[32,14,14]*[64,32,3,3] pad 1", shape(8, 32, 14, 14, 64, 3, 1, 1, 1)};
  case 2: return (Case){"[128,14,14]*[128,128,3,3] pad 1", shape(2, 128, 14, 14, 128, 3, 1, 1, 1)};
  case 3: return (Case){"[256,14,14]*[256,256,3,3] pad 1", shape(1, 256, 14, 14, 256, 3, 1, 1, 1)};
  default: return (Case){"[600,7,7]*[64,600,3,3] pad 0 (2 K blocks)", shape(1, 600, 7, 7, 64, 3, 1, 0, 1)};
  }
}

static int measure(void) {
  printf("%-46s %-26s %9s %9s %9s %9s %9s %9s %9s   direct f32: %9s %9s %9s %9s %9s %9s %9s\n", "shape", "data",
         "tile max", "tile mean", "norm max", "norm mean", "rel max", "rel mean", "rms", "tile max", "tile mean",
         "norm max", "norm mean", "rel max", "rel mean", "rms");
  printf("%-46s %-26s %9s %9s %9s\n", "", "against direct f32:", "rel max", "rel mean", "rms");
  for (int i = 0; i < ncases(); i++)
    for (int d = 0; d < 3; d++) {
      Case c = error_case(i);
      Err a, b;
      if (!measure_one(c.s, (DataKind)d, &a, &b)) return 1;
      printf("%-46s %-26s %9.2f %9.3f %9.2f %9.3f %9.2e %9.2e %9.2e   %-11s %9.2f %9.3f %9.2f %9.3f %9.2e %9.2e "
             "%9.2e\n",
             c.name, data_names[d], a.tile_max, a.tile_mean, a.norm_max, a.norm_mean, a.rel_max, a.rel_mean, a.rms,
             "", b.tile_max, b.tile_mean, b.norm_max, b.norm_mean, b.rel_max, b.rel_mean, b.rms);
      printf("%-46s %-26s %9.2e %9.2e %9.2e\n", "", "  against direct f32", a.vs_rel_max, a.vs_rel_mean, a.vs_rms);
    }
  return 0;
}

static void check_error(void) {
  for (int i = 0; i < ncases(); i++)
    for (int d = 0; d < 3; d++) {
      Case c = error_case(i);
      Err a, b;
      bool ok = measure_one(c.s, (DataKind)d, &a, &b);
      char label[200];
      snprintf(label, sizeof label, "%s, %s: error %.3f <= %.2f units of 2^-24 sum_c |window|_1 |w|_1", c.name,
               data_names[d], a.tile_max, WG_TOL);
      check(label, ok && a.tile_max <= WG_TOL);
    }
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "measure")) return measure();
  check_ref_filter(argc > 0);
  // Every bit check twice: with the default GEMM variant (the fused path on
  // an AVX-512 CPU) and with the generic one (the unfused path).
  const char *def = mlc_gemm_variant();
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) mlc_gemm_select("generic");
    path_name = strcmp(mlc_gemm_variant(), "avx512") ? "unfused" : "fused";
    check_exact("fashion conv2 [2,32,14,14]*[64,32,3,3] p1", shape(2, 32, 14, 14, 64, 3, 1, 1, 1), true, true);
    check_exact("batch 1 conv2", shape(1, 32, 14, 14, 64, 3, 1, 1, 1), true, false);
    check_exact("batch 3 conv2", shape(3, 32, 14, 14, 64, 3, 1, 1, 1), true, true);
    check_exact("conv1 [3,1,28,28]*[32,1,3,3] p1", shape(3, 1, 28, 28, 32, 3, 1, 1, 1), true, true);
    check_exact("odd [2,3,7,7]*[5,3,3,3] p1", shape(2, 3, 7, 7, 5, 3, 1, 1, 1), false, false);
    check_exact("odd valid [3,17,9,6]*[11,17,3,3] p0", shape(3, 17, 9, 6, 11, 3, 1, 0, 1), true, true);
    check_exact("pad 2 [1,5,5,8]*[9,5,3,3]", shape(1, 5, 5, 8, 9, 3, 1, 2, 1), true, false);
    check_exact("1x1 plane pad 1 [2,4,1,1]*[3,4,3,3]", shape(2, 4, 1, 1, 3, 3, 1, 1, 1), true, true);
    check_exact("3x3 plane p0 [1,2,3,3]*[4,2,3,3]", shape(1, 2, 3, 3, 4, 3, 1, 0, 1), false, true);
    check_exact("2 K blocks [1,520,4,5]*[9,520,3,3] p1", shape(1, 520, 4, 5, 9, 3, 1, 1, 1), true, false);
    check_exact("wide rows [1,3,5,150]*[40,3,3,3] p1", shape(1, 3, 5, 150, 40, 3, 1, 1, 1), true, true);
    check_exact("many blocks [40,8,9,9]*[8,8,3,3] p1", shape(40, 8, 9, 9, 8, 3, 1, 1, 1), true, true);
    check_exact("O past 64, batch 1 [1,32,10,10]*[100,32,3,3] p1", shape(1, 32, 10, 10, 100, 3, 1, 1, 1), true, true);
    check_exact("O 16k+1 [2,9,8,7]*[17,9,3,3] p1", shape(2, 9, 8, 7, 17, 3, 1, 1, 1), true, true);
    check_exact("C 128, the fused path's largest [2,128,6,5]*[20,128,3,3] p1", shape(2, 128, 6, 5, 20, 3, 1, 1, 1), true, true);
    check_exact("C 129 [1,129,6,6]*[70,129,3,3] p0", shape(1, 129, 6, 6, 70, 3, 1, 0, 1), true, false);
    check_grad("conv2 [3,32,14,14]*[64,32,3,3] p1", shape(3, 32, 14, 14, 64, 3, 1, 1, 1));
    check_grad("odd [2,5,7,9]*[6,5,3,3] p0", shape(2, 5, 7, 9, 6, 3, 1, 0, 1));
    check_grad("pad 2 [1,4,5,6]*[7,4,3,3]", shape(1, 4, 5, 6, 7, 3, 1, 2, 1));
    check_grad("many blocks [30,8,9,9]*[40,8,3,3] p1", shape(30, 8, 9, 9, 40, 3, 1, 1, 1));
  }
  mlc_gemm_select(def);
  {
    Shape s = shape(1, 3, 9, 9, 4, 3, 1, 3, 1); // padding 3: grad_input keeps the direct path
    float *dy = rand_buf(s.ny), *w = rand_buf(s.nw), *a = malloc((size_t)s.nx * 4), *b = malloc((size_t)s.nx * 4);
    check("grad_input with padding 3 ignores the flag",
          !mlc_conv2d_grad_input(NULL, s.g, 0, dy, w, a) && !mlc_conv2d_grad_input(NULL, s.g, MLC_CONV_WINOGRAD, dy, w, b) &&
              !memcmp(a, b, (size_t)s.nx * 4));
    free(dy), free(w), free(a), free(b);
  }
  check_ignored("stride 2 ignores the flag", shape(2, 3, 9, 9, 4, 3, 2, 1, 1), 0);
  check_ignored("5x5 ignores the flag", shape(2, 3, 9, 9, 4, 5, 1, 2, 1), 0);
  check_ignored("groups 2 ignore the flag", shape(2, 4, 9, 9, 4, 3, 1, 1, 2), 0);
  check_ignored("bf16 ignores the flag", shape(2, 4, 9, 9, 4, 3, 1, 1, 1), MLC_GEMM_BF16);
  check_ignored("C = 0 gives the direct zeros", shape(2, 0, 5, 5, 3, 3, 1, 1, 1), 0);
  check_error();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
