// test_gemm.c — mlc_sgemm (kernels/cpu) against a naive double-precision
// reference (within a float rounding bound) and against the definition of
// its order, kernels/gemm_ref.h in f32 (bit for bit), for one micro-kernel
// variant: test_gemm VARIANT.
//
// Cases: M, N, K over 1, 7, 63, 65, 257 and the tails of every blocking
// level (K past one and two K blocks, N past one NC block, M and N off the
// micro-tile), every transpose combination, padded leading dimensions,
// alpha/beta, each epilogue. Then: results are bit-identical with 1, 2 and
// 3 threads (and to gemm_ref.h with the finer strips of 2 and 3 threads,
// whose number the test pins, and with a large A packed once for all
// strips), and bit-identical to the generic variant (every variant sums
// in the same order). The same for MLC_GEMM_BF16 and MLC_GEMM_F16 against
// gemm_ref.h over the rounded operands, and a check that the rounding
// changes the result. Exit 77 (skipped) when the CPU lacks the variant.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/gemm_ref.h"
#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "rand_data.h"
#include "unit.h"
#include "gemm_case.h"
#include "kernels/cpu/gemm_internal.h"

// op(A) and op(B) elements as the product sees them (rounded by the
// precision flags, kernels/round16.h).
static double op_a(const Case *t, const Operands *o, int64_t i, int64_t p) {
  return mlc_ref_round16(t->flags, t->flags & MLC_GEMM_TRANS_A ? o->a[p * o->lda + i] : o->a[i * o->lda + p]);
}

static double op_b(const Case *t, const Operands *o, int64_t p, int64_t j) {
  return mlc_ref_round16(t->flags, t->flags & MLC_GEMM_TRANS_B ? o->b[j * o->ldb + p] : o->b[p * o->ldb + j]);
}

// The reference element and a bound on float32 rounding for it.
static double ref_elem(const Case *t, const Operands *o, int64_t i, int64_t j, double *tol) {
  double acc = 0, mag = 0;
  for (int64_t p = 0; p < t->k; p++) {
    double x = op_a(t, o, i, p) * op_b(t, o, p, j);
    acc += x, mag += fabs(x);
  }
  double r = t->alpha * acc;
  mag = fabs(t->alpha) * mag;
  if (t->beta != 0) r += t->beta * o->c0[i * o->ldc + j], mag += fabs(t->beta * o->c0[i * o->ldc + j]);
  double aux = o->aux[i * o->ldaux + j];
  if (t->flags & MLC_GEMM_BIAS_COL) r += o->bias[j], mag += fabs(o->bias[j]);
  if (t->flags & MLC_GEMM_BIAS_ROW) r += o->bias[i], mag += fabs(o->bias[i]);
  if (t->flags & MLC_GEMM_RESIDUAL) r += aux, mag += fabs(aux);
  if (t->flags & MLC_GEMM_RELU) r = r > 0 ? r : 0;
  if (t->flags & MLC_GEMM_RELU_MASK) r = aux > 0 ? r : 0;
  *tol = (t->k + 8) * 1.2e-7 * mag + 1e-30;
  return r;
}

static void name_case(const Case *t, char *buf, size_t n) {
  const char *prec = t->flags & MLC_GEMM_BF16 ? " bf16" : t->flags & MLC_GEMM_F16 ? " f16" : "";
  snprintf(buf, n, "%s%s%s m=%lld n=%lld k=%lld pad=%lld alpha=%g beta=%g epi=0x%x",
           t->flags & MLC_GEMM_TRANS_A ? "T" : "N", t->flags & MLC_GEMM_TRANS_B ? "T" : "N", prec,
           (long long)t->m, (long long)t->n, (long long)t->k, (long long)t->pad, t->alpha,
           t->beta, (t->flags >> 2) & 0x1f);
}

// Against the reference; also bit-equal to the generic variant's result.
static void check_case(const Case *t, const char *variant) {
  Operands o;
  operands_new(t, &o);
  float *c = run(NULL, t, &o);
  mlc_gemm_select("generic");
  float *cg = run(NULL, t, &o);
  mlc_gemm_select(variant);
  double *cr = run_ref(t, &o);
  int64_t bad = 0, diff = 0, unlike = 0;
  double worst = 0;
  for (int64_t i = 0; i < t->m; i++)
    for (int64_t j = 0; j < t->n; j++) {
      double tol, r = ref_elem(t, &o, i, j, &tol), e = fabs(c[i * o.ldc + j] - r);
      if (!(e <= tol)) bad++;
      if (e > worst) worst = e;
      if (memcmp(&c[i * o.ldc + j], &cg[i * o.ldc + j], sizeof(float))) diff++;
      float rf = (float)cr[i * o.ldc + j];
      if (memcmp(&c[i * o.ldc + j], &rf, sizeof(float))) unlike++;
    }
  char name[200], msg[400];
  name_case(t, name, sizeof name);
  snprintf(msg, sizeof msg, "%s: %s (max err %.3g, %lld out of bound, %lld differ from generic, "
           "%lld from gemm_ref.h)", variant, name, worst, (long long)bad, (long long)diff, (long long)unlike);
  check(msg, c && cg && !bad && !diff && !unlike);
  free(c), free(cg), free(cr);
  operands_free(&o);
}

static const uint32_t trans[4] = {0, MLC_GEMM_TRANS_A, MLC_GEMM_TRANS_B,
                                  MLC_GEMM_TRANS_A | MLC_GEMM_TRANS_B};

static void odd_shapes(const char *variant) {
  static const int64_t dims[] = {1, 7, 63, 65, 257};
  for (int tr = 0; tr < 4; tr++)
    for (int mi = 0; mi < 5; mi++)
      for (int ni = 0; ni < 5; ni++)
        for (int ki = 0; ki < 5; ki += (mi + ni) % 2 ? 2 : 1) {
          Case t = {trans[tr], dims[mi], dims[ni], dims[ki], (mi + ki) % 3, 1, 0};
          check_case(&t, variant);
        }
}

// Tails of each blocking level: K across 1 and 2 K-block boundaries (512),
// N across an NC block (at most 4096/ L2-sized; 1100 crosses it for L2 up
// to 2 MiB), K = 0.
static void blocking_tails(const char *variant) {
  static const Case cases[] = {
      {0, 33, 70, 513, 1, 1, 0},     {MLC_GEMM_TRANS_A, 17, 45, 1025, 0, 1, 0},
      {MLC_GEMM_TRANS_B, 9, 1100, 300, 3, 1, 0}, {3, 70, 1100, 520, 0, 1, 0},
      {0, 12, 40, 0, 0, 1, 0.5f},    {MLC_GEMM_TRANS_B, 5, 3, 0, 2, 2, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], variant);
}

static void scalars_and_epilogues(const char *variant) {
  static const float ab[][2] = {{1, 1}, {0.5f, 2}, {-1, -0.25f}, {2, 0}};
  static const uint32_t epi[] = {MLC_GEMM_BIAS_COL, MLC_GEMM_BIAS_ROW, MLC_GEMM_RESIDUAL,
                                 MLC_GEMM_RELU, MLC_GEMM_RELU_MASK,
                                 MLC_GEMM_BIAS_COL | MLC_GEMM_RELU,
                                 MLC_GEMM_BIAS_ROW | MLC_GEMM_RESIDUAL | MLC_GEMM_RELU};
  for (int tr = 0; tr < 4; tr++)
    for (size_t s = 0; s < sizeof ab / sizeof ab[0]; s++) {
      Case t = {trans[tr], 37, 71, 600, 1, ab[s][0], ab[s][1]};
      check_case(&t, variant);
    }
  for (size_t f = 0; f < sizeof epi / sizeof epi[0]; f++)
    for (int tr = 0; tr < 4; tr++) {
      Case t = {trans[tr] | epi[f], 65, 63, 530, tr, 1, f % 2 ? 1.0f : 0.0f};
      check_case(&t, variant);
    }
}

// Same bits with 1, 2 and 3 threads, on shapes the driver splits by
// columns and by rows; `prec` (a precision flag or 0) is added to each.
static void thread_counts(const char *variant, uint32_t prec) {
  static const Case cases[] = {{MLC_GEMM_TRANS_B | MLC_GEMM_BIAS_COL | MLC_GEMM_RELU, 64, 256, 784, 0, 1, 0},
                               {MLC_GEMM_TRANS_A, 256, 784, 64, 0, 1, 1},
                               {0, 301, 20, 1030, 1, 0.5f, 0},
                               {MLC_GEMM_TRANS_A | MLC_GEMM_TRANS_B, 130, 500, 130, 0, 1, 0}};
  MlcPool *pools[3] = {mlc_pool_new(1), mlc_pool_new(2), mlc_pool_new(3)};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Operands o;
    Case t = cases[i];
    t.flags |= prec;
    operands_new(&t, &o);
    float *c[3];
    for (int p = 0; p < 3; p++) c[p] = run(pools[p], &t, &o);
    size_t bytes = (size_t)(t.m * o.ldc) * sizeof(float);
    char name[200], msg[300];
    name_case(&t, name, sizeof name);
    snprintf(msg, sizeof msg, "%s: %s identical with 1, 2, 3 threads", variant, name);
    check(msg, c[0] && c[1] && c[2] && !memcmp(c[0], c[1], bytes) && !memcmp(c[0], c[2], bytes));
    for (int p = 0; p < 3; p++) free(c[p]);
    operands_free(&o);
  }
  for (int p = 0; p < 3; p++) mlc_pool_free(pools[p]);
}

// How many of C's elements differ from gemm_ref.h's result cr (all of
// them when the call failed: c NULL).
static int64_t unlike_ref(const Case *t, const Operands *o, const float *c, const double *cr) {
  int64_t unlike = 0;
  for (int64_t r = 0; r < t->m; r++)
    for (int64_t j = 0; j < t->n; j++) {
      float rf = (float)cr[r * o->ldc + j];
      unlike += !c || memcmp(&c[r * o->ldc + j], &rf, sizeof rf) != 0;
    }
  return unlike;
}

// The driver's view of a case (gemm.c's Gemm: the transposes as strides),
// for asking it how it splits and packs.
static Gemm gemm_of_case(const Case *t, const Operands *o) {
  int ta = t->flags & MLC_GEMM_TRANS_A, tb = t->flags & MLC_GEMM_TRANS_B;
  return (Gemm){.m = t->m, .n = t->n, .k = t->k, .b = o->b, .rsa = ta ? 1 : o->lda, .csa = ta ? o->lda : 1,
                .rsb = tb ? 1 : o->ldb, .csb = tb ? o->ldb : 1,
                .flags = t->flags & ~(uint32_t)(MLC_GEMM_TRANS_A | MLC_GEMM_TRANS_B)};
}

// The threads claim strips of C from the pool's counter (gemm.c,
// gemm_strips): fashion_mlp's products and odd shapes with ragged last
// strips, split by columns and by rows, give gemm_ref.h's bits with 2 and
// 3 threads. The strip counts are pinned to the rule, so a split that
// quietly went back to one strip per thread fails here too: min(4 per
// thread, the micro-tile panels, one per 0.5 MFLOP), at least one per
// thread; a row split whose B is packed keeps one per thread (each strip
// would pack all of B).
static void strip_split(const char *variant) {
  static const struct {
    Case t;
    bool by_cols, packs_b;
  } cases[] = {
      {{MLC_GEMM_TRANS_B | MLC_GEMM_BIAS_COL | MLC_GEMM_RELU, 64, 256, 784, 0, 1, 0}, true, false},
      {{MLC_GEMM_TRANS_A, 256, 784, 64, 0, 1, 0}, false, false}, // a weight gradient: its rows
      {{MLC_GEMM_TRANS_A, 128, 3136, 64, 0, 1, 0}, true, false}, // its B past a quarter of the L2
      {{MLC_GEMM_RELU_MASK, 64, 256, 128, 1, 1, 0}, true, false},
      {{0, 67, 203, 93, 2, 0.5f, 1}, true, false},
      {{MLC_GEMM_TRANS_A | MLC_GEMM_BIAS_ROW, 301, 10, 1030, 1, 1, 0}, false, false},
      {{MLC_GEMM_TRANS_B, 301, 10, 1030, 0, 1, 0}, false, true},
      {{MLC_GEMM_TRANS_A | MLC_GEMM_TRANS_B, 130, 500, 130, 3, 1, 0.25f}, true, false},
  };
  const GemmVariant *v = gemm_current();
  MlcPool *pools[2] = {mlc_pool_new(2), mlc_pool_new(3)};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const Case *t = &cases[i].t;
    Operands o;
    operands_new(t, &o);
    double *cr = run_ref(t, &o);
    Gemm g = gemm_of_case(t, &o);
    // the weight-gradient row split wants B in a quarter of the L2 (gemm.c, weight_rows)
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    bool want_cols = cases[i].by_cols || 4.0 * (double)t->k * (double)t->n > 0.25 * (double)(l2 > 0 ? l2 : 1 << 20);
    int64_t panels = want_cols ? (t->n + v->nr - 1) / v->nr : (t->m + v->mr - 1) / v->mr;
    int64_t by_work = (int64_t)(2.0 * (double)t->m * (double)t->n * (double)t->k / 0.5e6);
    for (int p = 0; p < 2; p++) {
      int64_t threads = p + 2, least = threads < panels ? threads : panels, want = least;
      if (!cases[i].packs_b) {
        int64_t w = 4 * threads < panels ? 4 * threads : panels;
        w = w < by_work ? w : by_work;
        want = w > least ? w : least;
      }
      bool by_cols;
      int64_t strips = gemm_strips(&g, threads, 1, &by_cols);
      float *c = run(pools[p], t, &o);
      int64_t unlike = unlike_ref(t, &o, c, cr);
      char name[200], msg[400];
      name_case(t, name, sizeof name);
      snprintf(msg, sizeof msg, "%s: %s, %lld threads: %lld %s strips (want %lld), %lld elements "
               "differ from gemm_ref.h", variant, name, (long long)threads, (long long)strips,
               by_cols ? "column" : "row", (long long)want, (long long)unlike);
      check(msg, c && !unlike && strips == want && by_cols == want_cols);
      free(c);
    }
    free(cr);
    operands_free(&o);
  }
  for (int p = 0; p < 2; p++) mlc_pool_free(pools[p]);
}

// A packed once and shared by the column strips (gemm.c, gemm_shared_a):
// gemm_ref.h's bits at 1, 2 and 3 threads, in one row block and, under a
// small limit, in several with a ragged last one; transposed A, bias rows
// and a residual, bf16 rounding in the shared packing. The shapes grow
// with the L2 until the driver takes that path (A past half the L2, N
// past an NC block), which is checked too.
static void shared_a(const char *variant) {
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  int64_t half = (l2 > 0 ? l2 : 1 << 20) / 2, m = 301, k = 1030, n = 1100;
  while (4 * k * m <= half) k += 512;
  while (n <= half / (4 * MLC_GEMM_KC_MAX)) n += 512;
  const Case cases[] = {{0, m, n, k, 1, 1, 0},
                        {MLC_GEMM_TRANS_A | MLC_GEMM_BIAS_ROW | MLC_GEMM_RESIDUAL, m, n, k, 2, 0.5f, 1},
                        {MLC_GEMM_TRANS_B | MLC_GEMM_BF16, m, n, k, 0, 1, 0}};
  MlcPool *pools[3] = {mlc_pool_new(1), mlc_pool_new(2), mlc_pool_new(3)};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const Case *t = &cases[i];
    Operands o;
    operands_new(t, &o);
    Gemm g = gemm_of_case(t, &o);
    bool by_cols;
    gemm_strips(&g, 2, 1, &by_cols);
    double *cr = run_ref(t, &o);
    for (int lim = 0; lim < 2; lim++) {
      gemm_set_apack_limit(lim ? 64 << 10 : 0);
      for (int p = 0; p < 3; p++) {
        float *c = run(pools[p], t, &o);
        int64_t unlike = unlike_ref(t, &o, c, cr);
        char name[200], msg[400];
        name_case(t, name, sizeof name);
        snprintf(msg, sizeof msg, "%s: %s, shared A (%s), %d threads: %lld elements differ from gemm_ref.h",
                 variant, name, lim ? "row blocks of 64 KiB" : "one block", p + 1, (long long)unlike);
        check(msg, c && !unlike && by_cols && gemm_shared_a(&g, 1, by_cols));
        free(c);
      }
    }
    gemm_set_apack_limit(0);
    free(cr);
    operands_free(&o);
  }
  for (int p = 0; p < 3; p++) mlc_pool_free(pools[p]);
}

// MLC_GEMM_BF16 and MLC_GEMM_F16 (check_case: gemm_ref.h over the rounded
// operands bit for bit, the rounded double reference within the f32
// bound, the generic variant's bits) on odd shapes with every transpose,
// the blocking tails, epilogues, 1-3 threads; and the flag is not a no-op:
// the result differs from the f32 GEMM's.
static void precision(const char *variant) {
  static const uint32_t precs[2] = {MLC_GEMM_BF16, MLC_GEMM_F16};
  static const int64_t dims[] = {1, 7, 33, 65}; // odd sizes and micro-tile tails (the tails below: blocks)
  for (int pi = 0; pi < 2; pi++) {
    uint32_t prec = precs[pi];
    for (int tr = 0; tr < 4; tr++)
      for (int mi = 0; mi < 4; mi++)
        for (int ni = 0; ni < 4; ni++)
          for (int ki = (mi + ni) % 2; ki < 4; ki += 2) {
            Case t = {trans[tr] | prec, dims[mi], dims[ni], dims[ki], (mi + ki) % 3, 1, 0};
            check_case(&t, variant);
          }
    const Case tails[] = {
        {prec, 33, 70, 513, 1, 1, 0}, {MLC_GEMM_TRANS_A | prec, 17, 45, 1025, 0, 1, 0},
        {MLC_GEMM_TRANS_B | prec, 9, 1100, 300, 3, 1, 0}, {3 | prec, 70, 1100, 520, 0, 1, 0},
        {prec, 12, 40, 0, 0, 1, 0.5f},
        {MLC_GEMM_TRANS_B | MLC_GEMM_BIAS_COL | MLC_GEMM_RELU | prec, 65, 63, 530, 1, 0.5f, 1},
        {MLC_GEMM_TRANS_A | MLC_GEMM_BIAS_ROW | MLC_GEMM_RESIDUAL | prec, 37, 71, 600, 2, -1, 0},
        {MLC_GEMM_RELU_MASK | prec, 64, 256, 784, 0, 1, 0}};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) check_case(&tails[i], variant);
    thread_counts(variant, prec);
    Case t = {MLC_GEMM_TRANS_B, 31, 45, 77, 0, 1, 0}, tp = t;
    tp.flags |= prec;
    Operands o;
    operands_new(&t, &o);
    float *c32 = run(NULL, &t, &o), *c16 = run(NULL, &tp, &o);
    int64_t differ = 0;
    for (int64_t e = 0; e < t.m * o.ldc; e++) differ += c32[e] != c16[e];
    char msg[160];
    snprintf(msg, sizeof msg, "%s: %s changes the result (%lld of %lld elements differ from f32)", variant,
             pi ? "f16" : "bf16", (long long)differ, (long long)(t.m * t.n));
    check(msg, differ > t.m * t.n / 2);
    free(c32), free(c16);
    operands_free(&o);
  }
}

// mlc_sgemm_batched: each product has the bits of its own mlc_sgemm call
// (which check_case validates), with a shared B (stride 0), a residual per
// product, padded strides, and 1, 2, 3 threads.
static void batched(const char *variant) {
  enum { NB = 5, M = 37, N = 70, K = 129, LDA = K + 1, LDC = N + 3 };
  uint32_t flags = MLC_GEMM_TRANS_B | MLC_GEMM_BIAS_COL | MLC_GEMM_RESIDUAL;
  int64_t sa = M * LDA + 7, sc = M * LDC + 5;
  float *a = rand_buf(NB * sa), *b = rand_buf(N * K), *bias = rand_buf(N), *aux = rand_buf(NB * sc);
  float *want = rand_buf(NB * sc), *got = malloc((size_t)(NB * sc) * sizeof *got);
  for (int i = 0; i < NB; i++)
    mlc_sgemm(NULL, flags, M, N, K, 0.5f, a + i * sa, LDA, b, K, 0, want + i * sc, LDC, bias,
              aux + i * sc, LDC);
  int ok = 1;
  for (int t = 1; t <= 3; t++) {
    MlcPool *pool = mlc_pool_new(t);
    memcpy(got, want, (size_t)(NB * sc) * sizeof *got); // the gaps between products stay as they are
    for (int i = 0; i < NB; i++)
      for (int64_t e = 0; e < M * LDC; e++) got[i * sc + e] = NAN;
    for (int i = 0; i < NB; i++)
      for (int64_t r = 0; r < M; r++)
        for (int64_t j = N; j < LDC; j++) got[i * sc + r * LDC + j] = want[i * sc + r * LDC + j];
    ok &= !mlc_sgemm_batched(pool, flags, NB, M, N, K, 0.5f, a, LDA, sa, b, K, 0, 0, got, LDC, sc,
                             bias, aux, LDC, sc) &&
          !memcmp(got, want, (size_t)(NB * sc) * sizeof *got);
    mlc_pool_free(pool);
  }
  char msg[160];
  snprintf(msg, sizeof msg, "%s: mlc_sgemm_batched (5 products, shared B) = 5 mlc_sgemm calls, 1-3 threads", variant);
  check(msg, ok);
  free(a), free(b), free(bias), free(aux), free(want), free(got);
}

// mlc_sgemm_batched of many products each far under a strip's least work
// (the batch alone takes the call past the parallel threshold), op(A)
// transposed, as attention's per-head weight-shaped products are: each
// product's bits those of its own mlc_sgemm call, 1-3 threads (the strips
// per product once came out 0, a division by zero).
static void batched_small(const char *variant) {
  enum { NB = 65, M = 64, N = 65, K = 5 };
  float *a = rand_buf(NB * K * M), *b = rand_buf(NB * K * N), *want = rand_buf(NB * M * N);
  float *got = malloc((size_t)(NB * M * N) * sizeof *got);
  for (int i = 0; i < NB; i++)
    mlc_sgemm(NULL, MLC_GEMM_TRANS_A, M, N, K, 1.0f, a + i * K * M, M, b + i * K * N, N, 0, want + i * M * N, N,
              NULL, NULL, 0);
  int ok = 1;
  for (int t = 1; t <= 3; t++) {
    MlcPool *pool = mlc_pool_new(t);
    for (int64_t e = 0; e < NB * M * N; e++) got[e] = NAN;
    ok &= !mlc_sgemm_batched(pool, MLC_GEMM_TRANS_A, NB, M, N, K, 1.0f, a, M, K * M, b, N, K * N, 0, got, N, M * N,
                             NULL, NULL, 0, 0) &&
          !memcmp(got, want, (size_t)(NB * M * N) * sizeof *got);
    mlc_pool_free(pool);
  }
  char msg[160];
  snprintf(msg, sizeof msg, "%s: mlc_sgemm_batched (65 products of 64 x 65 x 5, A^T) = 65 mlc_sgemm calls, 1-3 threads",
           variant);
  check(msg, ok);
  free(a), free(b), free(want), free(got);
}

// The packing's rounding on the values that matter (ties either way,
// subnormals, f16's overflow to inf and its smallest subnormal, NaN, inf):
// C = [1] @ op(B) with op(B) one row of them is round16.h's rounding of each
// (bits equal; NaN as NaN; zeros of either sign as zero, the sum starting
// at +0), for both formats and B plain or transposed.
static void rounded_values(const char *variant) {
  static const uint32_t bits[] = {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f80ffffu, 0x7f7fffffu, 0x00000001u,
                                  0x007fffffu, 0x477ff000u, 0x477fefffu, 0x33000000u, 0x33000001u, 0x38800000u,
                                  0x387fe000u, 0x7fc00000u, 0xff800001u, 0x80000000u, 0xbf7ff000u, 0x3a9b0000u,
                                  0x7f800000u, 0xc77ff000u, 0x3f801000u, 0x3f803000u, 0x33c00000u, 0x00400000u};
  enum { N = 3 * (sizeof bits / sizeof bits[0]) }; // several panels and a tail
  float b[N], one = 1, c[N];
  for (int j = 0; j < N; j++) memcpy(&b[j], &bits[j % (N / 3)], 4);
  bool ok = true;
  for (int f = 0; f < 4; f++) {
    uint32_t prec = f % 2 ? MLC_GEMM_F16 : MLC_GEMM_BF16, tb = f / 2 ? MLC_GEMM_TRANS_B : 0;
    ok &= !mlc_sgemm(NULL, prec | tb, 1, N, 1, 1, &one, 1, b, tb ? 1 : N, 0, c, N, NULL, NULL, 0);
    for (int j = 0; j < N; j++) {
      float want = prec == MLC_GEMM_BF16 ? mlc_round_bf16(b[j]) : mlc_round_f16(b[j]);
      bool same = isnan(want) ? isnan(c[j]) : want == 0 ? c[j] == 0 : !memcmp(&c[j], &want, 4);
      if (!same) printf("    %s %s: b = 0x%08x gives %a, want %a\n", prec == MLC_GEMM_BF16 ? "bf16" : "f16",
                        tb ? "trans_b" : "", bits[j % (N / 3)], c[j], want);
      ok &= same;
    }
  }
  char msg[160];
  snprintf(msg, sizeof msg, "%s: bf16 / f16 packing rounds ties, subnormals, overflow and NaN as round16.h", variant);
  check(msg, ok);
}

int main(int argc, char **argv) {
  const char *variant = argc > 1 ? argv[1] : "avx512";
  if (mlc_gemm_select(variant)) {
    printf("test_gemm: this CPU cannot run the %s variant; skipped\n", variant);
    return 77;
  }
  odd_shapes(variant);
  blocking_tails(variant);
  scalars_and_epilogues(variant);
  thread_counts(variant, 0);
  strip_split(variant);
  shared_a(variant);
  batched(variant);
  batched_small(variant);
  precision(variant);
  rounded_values(variant);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
