// bench_kernels.c — timings of the kernels/cpu kernels and of the thread
// pool, for bench/side_by_side.sh (which runs PyTorch/OpenBLAS on the same
// shapes right after) and for tuning by hand. Built by CMake as
// build/bench_kernels.
//
//   bench_kernels gemm THREADS M N K [TA TB]   GFLOP/s of mlc_sgemm (median)
//   bench_kernels conv THREADS N C H W O K PAD [winograd]
//                                              fwd, grad_input, grad_weight ms (+ the Winograd fwd)
//   bench_kernels pool THREADS                 per-region cost of mlc_parallel_for
//   bench_kernels team THREADS                 per-run cost of a held team (mlc_team_run)
//
// Every figure is the median of several timed repeats after a warm-up, each
// repeat long enough (>= ~20 ms) for the clock; one line per figure:
//   gemm 64x784x256 NT threads=1 variant=avx512: 123.4 GFLOP/s (median of 7, min 120.1, max 125.0)
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "runtime/core/team.h"

enum { REPEATS = 7 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static float *rand_buf(int64_t n) {
  float *p = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) & ~(size_t)63);
  uint32_t s = 12345;
  for (int64_t i = 0; i < n; i++) s = s * 1664525u + 1013904223u, p[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
  return p;
}

typedef void BenchFn(void *arg);

// Seconds per call: calls per repeat sized to ~20 ms by a warm-up, then
// REPEATS repeats; t[] gets the per-call times, sorted.
static void time_calls(BenchFn *fn, void *arg, double t[REPEATS]) {
  fn(arg);
  double t0 = now();
  int64_t calls = 0;
  while (now() - t0 < 0.02) fn(arg), calls++;
  for (int r = 0; r < REPEATS; r++) {
    double s = now();
    for (int64_t i = 0; i < calls; i++) fn(arg);
    t[r] = (now() - s) / (double)calls;
  }
  qsort(t, REPEATS, sizeof t[0], cmp_double);
}

// ---- gemm ---------------------------------------------------------------------------------------
typedef struct GemmArgs {
  MlcPool *pool;
  uint32_t flags;
  int64_t m, n, k;
  float *a, *b, *c;
} GemmArgs;

static void gemm_once(void *vp) {
  GemmArgs *g = vp;
  int64_t lda = g->flags & MLC_GEMM_TRANS_A ? g->m : g->k;
  int64_t ldb = g->flags & MLC_GEMM_TRANS_B ? g->k : g->n;
  if (mlc_sgemm(g->pool, g->flags, g->m, g->n, g->k, 1, g->a, lda, g->b, ldb, 0, g->c, g->n, NULL,
                NULL, 0)) {
    fprintf(stderr, "bench_kernels: mlc_sgemm failed\n");
    exit(1);
  }
}

static int bench_gemm(int threads, int64_t m, int64_t n, int64_t k, int ta, int tb) {
  GemmArgs g = {mlc_pool_new(threads), (ta ? MLC_GEMM_TRANS_A : 0) | (tb ? MLC_GEMM_TRANS_B : 0),
                m, n, k, rand_buf(m * k), rand_buf(k * n), rand_buf(m * n)};
  double t[REPEATS], fl = 2.0 * (double)m * (double)n * (double)k;
  time_calls(gemm_once, &g, t);
  printf("gemm %lldx%lldx%lld %c%c threads=%d variant=%s: %.1f GFLOP/s (median of %d, min %.1f, "
         "max %.1f)\n",
         (long long)m, (long long)n, (long long)k, ta ? 'T' : 'N', tb ? 'T' : 'N', threads,
         mlc_gemm_variant(), fl / t[REPEATS / 2] * 1e-9, REPEATS, fl / t[REPEATS - 1] * 1e-9,
         fl / t[0] * 1e-9);
  free(g.a), free(g.b), free(g.c);
  mlc_pool_free(g.pool);
  return 0;
}

// ---- conv ---------------------------------------------------------------------------------------
typedef struct ConvArgs {
  MlcPool *pool;
  int64_t geom[MLC_CONV_GEOM];
  int which; // 0 fwd, 1 grad_input, 2 grad_weight, 3 fwd and 4 grad_input with MLC_CONV_WINOGRAD
  float *x, *w, *y;
} ConvArgs;

static void conv_once(void *vp) {
  ConvArgs *c = vp;
  int rc = c->which == 4   ? mlc_conv2d_grad_input(c->pool, c->geom, MLC_CONV_WINOGRAD, c->y, c->w, c->x)
           : c->which == 3 ? mlc_conv2d(c->pool, c->geom, MLC_CONV_WINOGRAD, c->x, c->w, NULL, c->y)
           : c->which == 0 ? mlc_conv2d(c->pool, c->geom, 0, c->x, c->w, NULL, c->y)
           : c->which == 1 ? mlc_conv2d_grad_input(c->pool, c->geom, 0, c->y, c->w, c->x)
                           : mlc_conv2d_grad_weight(c->pool, c->geom, 0, c->y, c->x, c->w);
  if (rc) {
    fprintf(stderr, "bench_kernels: conv failed\n");
    exit(1);
  }
}

static int bench_conv(int threads, int64_t n, int64_t ch, int64_t h, int64_t w, int64_t o, int64_t k,
                      int64_t pad, bool winograd) {
  ConvArgs c = {.pool = mlc_pool_new(threads),
                .geom = {n, ch, h, w, o, k, k, 1, 1, pad, pad, 1, 1, 1}};
  int64_t ho = mlc_conv_out_h(c.geom), wo = mlc_conv_out_w(c.geom);
  c.x = rand_buf(n * ch * h * w), c.w = rand_buf(o * ch * k * k), c.y = rand_buf(n * o * ho * wo);
  double fl = 2.0 * (double)(n * o * ho * wo) * (double)(ch * k * k);
  static const char *names[5] = {"fwd", "grad_input", "grad_weight", "fwd winograd", "grad_input winograd"};
  for (c.which = 0; c.which < (winograd ? 5 : 3); c.which++) {
    double t[REPEATS];
    time_calls(conv_once, &c, t);
    printf("conv x[%lld,%lld,%lld,%lld] w[%lld,%lld,%lld,%lld] pad %lld %s threads=%d: %.3f ms, "
           "%.1f GFLOP/s (median of %d)\n",
           (long long)n, (long long)ch, (long long)h, (long long)w, (long long)o, (long long)ch,
           (long long)k, (long long)k, (long long)pad, names[c.which], threads,
           t[REPEATS / 2] * 1e3, fl / t[REPEATS / 2] * 1e-9, REPEATS);
  }
  free(c.x), free(c.w), free(c.y);
  mlc_pool_free(c.pool);
  return 0;
}

// ---- pool ---------------------------------------------------------------------------------------
typedef struct PoolArgs {
  MlcPool *pool;
  int64_t n;
  volatile int64_t sink[64];
} PoolArgs;

static void touch(void *vp, int64_t b, int64_t e) {
  PoolArgs *p = vp;
  p->sink[(b * 8) % 64] += e - b;
}

static void region_once(void *vp) {
  PoolArgs *p = vp;
  mlc_parallel_for(p->pool, p->n, 1, touch, p);
}

// The cost of one parallel region with (almost) empty chunks: n chunks of
// one item, back to back, as a train step's kernels issue them.
static int bench_pool(int threads) {
  static const int64_t chunks[] = {2, 16, 64};
  for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
    PoolArgs p = {.pool = mlc_pool_new(threads), .n = chunks[i]};
    double t[REPEATS];
    time_calls(region_once, &p, t);
    printf("pool threads=%d: %.2f us per region of %lld empty chunks (median of %d, min %.2f, "
           "max %.2f)\n",
           threads, t[REPEATS / 2] * 1e6, (long long)chunks[i], REPEATS, t[0] * 1e6,
           t[REPEATS - 1] * 1e6);
    mlc_pool_free(p.pool);
  }
  return 0;
}

// ---- team ---------------------------------------------------------------------------------------
enum { PART_NS = 1000 };

// A part that keeps its thread busy for PART_NS.
static void busy(void *vp, int64_t b, int64_t e) {
  (void)vp, (void)b, (void)e;
  double t0 = now();
  while (now() - t0 < PART_NS * 1e-9) {
  }
}

typedef struct TeamArgs {
  MlcPool *pool;
  MlcTeam *team;
} TeamArgs;

static void team_once(void *vt) {
  TeamArgs *t = vt;
  mlc_team_run(t->team, mlc_pool_threads(t->pool), busy, NULL, 0);
}

static void fork_once(void *vt) {
  TeamArgs *t = vt;
  mlc_parallel_for(t->pool, mlc_pool_threads(t->pool), 1, busy, NULL);
}

// What a run of one 1 us part per thread costs past the 1 us, back to back
// as a batch-1 predict issues its products: through a held team, and as a
// region of the pool's.
static int bench_team(int threads) {
  TeamArgs t = {.pool = mlc_pool_new(threads)};
  if (!(t.team = mlc_team_new(t.pool))) return fprintf(stderr, "bench_kernels: team needs 2 threads or more\n"), 2;
  double r[REPEATS], q[REPEATS];
  time_calls(team_once, &t, r);
  time_calls(fork_once, &t, q);
  printf("team threads=%d: %.3f us past the 1 us parts per run (median of %d, min %.3f); "
         "pool region %.3f us (min %.3f)\n", threads, r[REPEATS / 2] * 1e6 - 1, REPEATS, r[0] * 1e6 - 1,
         q[REPEATS / 2] * 1e6 - 1, q[0] * 1e6 - 1);
  mlc_team_free(t.team);
  mlc_pool_free(t.pool);
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: bench_kernels gemm THREADS M N K [TA TB]\n"
                  "       bench_kernels conv THREADS N C H W O K PAD [winograd]\n"
                  "       bench_kernels pool THREADS\n"
                  "       bench_kernels team THREADS\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 3) return usage();
  int threads = atoi(argv[2]);
  long long v[8] = {0};
  for (int i = 3; i < argc && i < 11; i++) v[i - 3] = atoll(argv[i]);
  if (!strcmp(argv[1], "gemm") && argc >= 6) return bench_gemm(threads, v[0], v[1], v[2], (int)v[3], (int)v[4]);
  if (!strcmp(argv[1], "conv") && argc >= 10)
    return bench_conv(threads, v[0], v[1], v[2], v[3], v[4], v[5], v[6], argc >= 11 && !strcmp(argv[10], "winograd"));
  if (!strcmp(argv[1], "pool")) return bench_pool(threads);
  if (!strcmp(argv[1], "team")) return bench_team(threads);
  return usage();
}
