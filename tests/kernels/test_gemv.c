// test_gemv.c — mlc_sgemm's small-M path (kernels/cpu/gemv.c: 1 to 4 rows
// with a k-major op(B)) and its cache of constant operands
// (kernels/cpu/gemm_cache.c), both bit for bit against the definition of
// the order (kernels/gemm_ref.h in f32) and against the generic variant,
// which never takes either shortcut.
//
// Cases: M = 1..5 (5 is the blocked GEMM again), N across the strip widths
// (16-column vectors, 256/128/80/64-column strips and their tails), K over
// 0, 1, 7, 63, 65, 257 and past one and two K blocks, all four transposes
// (NT and TT through the cache's k-major copy, and again without a cache),
// padded leading dimensions, alpha/beta and every epilogue; 1, 2 and 3
// threads identical on shapes the path splits by columns, forked and
// joined or through a held team. The cache: a
// copy is made once and read until the cache is cleared, a removed range
// and an operand outside (or only partly inside) the declared ranges are
// read as they are, and nothing is cached on a thread where the cache is
// not current.
//
// MLC_GEMM_BF16 / F16 (the same against gemm_ref.h under the flag, which
// rounds both operands): the A rows rounded per call, a constant B read
// from its 16-bit copy, a plain k-major B rounded as it is loaded; the
// rounding of the values that matter (ties, subnormals, overflow, NaN)
// through A and through the 16-bit copy; and the f32, bf16 and f16 copies
// of one weight kept apart.
// Every case runs once per strip kernel: the AVX-512 and the AVX2 variant
// (kernels/cpu/gemv_avx512.c, gemv_avx2.c), each forced with
// mlc_gemm_select and skipped where the CPU lacks it; the output names the
// variant of each run. Odd shapes (N 1..257 across both kernels' strip
// widths, K = 1, 7, 784) with bias/relu in all three formats besides.
// Exit 77 (skipped) when the CPU runs neither.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm_ref.h"
#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "rand_data.h"
#include "runtime/core/team.h"
#include "unit.h"
#include "gemm_case.h"
#include "kernels/cpu/gemv.h"

// The variant whose strip kernel the cases run (mlc_gemm_select).
static const char *variant;

// gemm_ref.h's order in f32, as floats [m, ldc] (the pad columns as c0).
static float *run_ref_f32(const Case *t, const Operands *o) {
  double *c = run_ref(t, o);
  int64_t nc = t->m * o->ldc;
  float *r = malloc(sizeof(float) * (size_t)(nc + 1));
  for (int64_t i = 0; i < nc; i++) r[i] = (float)c[i];
  free(c);
  return r;
}

// Elements of C [m, n] (not the pad) whose bits differ.
static int64_t differ(const Case *t, const Operands *o, const float *x, const float *y) {
  int64_t d = 0;
  for (int64_t i = 0; i < t->m; i++)
    for (int64_t j = 0; j < t->n; j++) d += memcmp(&x[i * o->ldc + j], &y[i * o->ldc + j], sizeof(float)) != 0;
  return d;
}

static void name_case(const Case *t, char *buf, size_t len) {
  snprintf(buf, len, "%s%s%s m=%lld n=%lld k=%lld pad=%lld alpha=%g beta=%g epi=0x%x",
           t->flags & MLC_GEMM_TRANS_A ? "T" : "N", t->flags & MLC_GEMM_TRANS_B ? "T" : "N",
           t->flags & MLC_GEMM_BF16 ? " bf16" : t->flags & MLC_GEMM_F16 ? " f16" : "",
           (long long)t->m, (long long)t->n, (long long)t->k, (long long)t->pad, t->alpha, t->beta,
           (t->flags >> 2) & 0x1f);
}

// One case against gemm_ref.h and the generic variant; a TRANS_B case runs
// with b declared constant (so through the k-major copy), twice: the copy
// made, then the copy reused; and every case also with no cache current.
static void check_case(const Case *t, const char *what) {
  Operands o;
  operands_new(t, &o);
  float *cn = run(NULL, t, &o);
  MlcGemmCache *cache = mlc_gemm_cache_new();
  int64_t nb = (t->flags & MLC_GEMM_TRANS_B ? t->n : t->k) * o.ldb;
  mlc_gemm_cache_add(cache, o.b, (size_t)nb * sizeof(float));
  MlcGemmCache *was = mlc_gemm_cache_use(cache);
  float *c = run(NULL, t, &o), *c2 = run(NULL, t, &o);
  mlc_gemm_cache_use(was);
  mlc_gemm_select("generic");
  float *cg = run(NULL, t, &o);
  mlc_gemm_select(variant);
  float *cr = run_ref_f32(t, &o);
  int64_t dr = differ(t, &o, c, cr), dg = differ(t, &o, c, cg), d2 = differ(t, &o, c, c2);
  int64_t dn = differ(t, &o, cn, cr);
  char name[160], msg[400];
  name_case(t, name, sizeof name);
  snprintf(msg, sizeof msg,
           "%s %s: %s (%lld differ from gemm_ref.h, %lld from generic, %lld on the second call, %lld without a cache)",
           variant, what, name, (long long)dr, (long long)dg, (long long)d2, (long long)dn);
  check(msg, c && c2 && cg && cn && !dr && !dg && !d2 && !dn);
  mlc_gemm_cache_free(cache);
  free(c), free(c2), free(cg), free(cr), free(cn);
  operands_free(&o);
}

static const uint32_t trans[4] = {0, MLC_GEMM_TRANS_A, MLC_GEMM_TRANS_B, MLC_GEMM_TRANS_A | MLC_GEMM_TRANS_B};

static void shapes(void) {
  static const int64_t ns[] = {1, 7, 16, 17, 63, 65, 80, 129, 256, 257, 600};
  static const int64_t ks[] = {0, 1, 7, 63, 65, 257, 513, 1100};
  for (int tr = 0; tr < 4; tr++)
    for (int64_t m = 1; m <= 5; m++)
      for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki += 1 + (ni + (size_t)m) % 2) {
          Case t = {trans[tr], m, ns[ni], ks[ki], (int64_t)(ni + ki) % 3, 1, 0};
          check_case(&t, "shape");
        }
}

// The same under MLC_GEMM_BF16 and MLC_GEMM_F16.
static void rounded_shapes(void) {
  static const int64_t ns[] = {1, 7, 16, 17, 63, 65, 80, 129, 257};
  static const int64_t ks[] = {0, 1, 7, 63, 65, 257, 600};
  for (int prec = 0; prec < 2; prec++)
    for (int tr = 0; tr < 4; tr++)
      for (int64_t m = 1; m <= 5; m++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
          for (size_t ki = (ni + (size_t)m + (size_t)prec) % 2; ki < sizeof ks / sizeof *ks; ki += 1 + (ni + (size_t)tr) % 2) {
            Case t = {trans[tr] | (prec ? MLC_GEMM_F16 : MLC_GEMM_BF16), m, ns[ni], ks[ki], (int64_t)(ni + ki) % 3, 1, 0};
            check_case(&t, "rounded shape");
          }
}

static void scalars_and_epilogues(void) {
  static const float ab[][2] = {{1, 1}, {0.5f, 2}, {-1, -0.25f}, {2, 0}};
  static const uint32_t epi[] = {MLC_GEMM_BIAS_COL, MLC_GEMM_BIAS_ROW, MLC_GEMM_RESIDUAL,
                                 MLC_GEMM_RELU, MLC_GEMM_RELU_MASK,
                                 MLC_GEMM_BIAS_COL | MLC_GEMM_RELU,
                                 MLC_GEMM_BIAS_ROW | MLC_GEMM_RESIDUAL | MLC_GEMM_RELU};
  static const uint32_t precs[] = {0, MLC_GEMM_BF16, MLC_GEMM_F16};
  for (int pr = 0; pr < 3; pr++)
    for (int tr = 0; tr < 4; tr++)
      for (int64_t m = 1; m <= 4; m++) {
        for (size_t s = 0; s < sizeof ab / sizeof *ab; s++) {
          Case t = {trans[tr] | precs[pr], m, 71, 600, 1, ab[s][0], ab[s][1]};
          check_case(&t, "alpha/beta");
        }
        for (size_t f = 0; f < sizeof epi / sizeof *epi; f++) {
          Case t = {trans[tr] | epi[f] | precs[pr], m, 263, 530, tr, 1, f % 2 ? 1.0f : 0.0f};
          check_case(&t, "epilogue");
        }
      }
}

// Same bits with 1, 2 and 3 threads, B large enough to be split, and with
// 2 and 3 threads through a held team (runtime/core/team.h), which splits
// smaller products too (the fc2 shape 128 x 256 below).
static void thread_counts(void) {
  static const Case cases[] = {{MLC_GEMM_TRANS_B | MLC_GEMM_BIAS_COL | MLC_GEMM_RELU, 1, 256, 784, 0, 1, 0},
                               {MLC_GEMM_TRANS_B | MLC_GEMM_BIAS_COL | MLC_GEMM_RELU, 1, 128, 256, 0, 1, 0},
                               {0, 1, 1000, 784, 1, 1, 0},
                               {MLC_GEMM_TRANS_A | MLC_GEMM_BIAS_COL, 3, 300, 1030, 2, 0.5f, 1},
                               {MLC_GEMM_RESIDUAL, 4, 517, 257, 0, 1, 0},
                               {MLC_GEMM_BF16 | MLC_GEMM_TRANS_B | MLC_GEMM_BIAS_COL | MLC_GEMM_RELU, 1, 520, 784, 0, 1, 0},
                               {MLC_GEMM_F16 | MLC_GEMM_TRANS_B | MLC_GEMM_BIAS_COL, 2, 1000, 600, 1, 1, 0},
                               {MLC_GEMM_BF16 | MLC_GEMM_TRANS_B, 1, 200, 300, 0, 1, 0},
                               {MLC_GEMM_BF16, 1, 1000, 784, 1, 1, 0},
                               {MLC_GEMM_F16 | MLC_GEMM_TRANS_A | MLC_GEMM_RESIDUAL, 3, 517, 700, 2, 0.5f, 1},
                               {MLC_GEMM_BF16 | MLC_GEMM_TRANS_A | MLC_GEMM_TRANS_B, 4, 600, 300, 0, 1, 0}};
  enum { RUNS = 5 }; // pools 1, 2, 3; then 2, 3 with their teams current
  MlcPool *pools[3] = {mlc_pool_new(1), mlc_pool_new(2), mlc_pool_new(3)};
  MlcTeam *teams[3] = {NULL, mlc_team_new(pools[1]), mlc_team_new(pools[2])};
  check("team: none for a pool of one thread, one for 2 and 3", !mlc_team_new(pools[0]) && teams[1] && teams[2]);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const Case *t = &cases[i];
    Operands o;
    operands_new(t, &o);
    MlcGemmCache *cache = mlc_gemm_cache_new();
    mlc_gemm_cache_add(cache, o.b, (size_t)((t->flags & MLC_GEMM_TRANS_B ? t->n : t->k) * o.ldb) * sizeof(float));
    MlcGemmCache *was = mlc_gemm_cache_use(cache);
    float *c[RUNS];
    for (int r = 0; r < RUNS; r++) {
      int p = r < 3 ? r : r - 2;
      MlcTeam *tw = mlc_team_use(r < 3 ? NULL : teams[p]);
      c[r] = run(pools[p], t, &o);
      mlc_team_use(tw);
    }
    mlc_gemm_cache_use(was);
    float *cr = run_ref_f32(t, &o);
    char name[160], msg[256];
    name_case(t, name, sizeof name);
    snprintf(msg, sizeof msg, "%s: %s identical with 1, 2, 3 threads, with teams and to gemm_ref.h", variant, name);
    bool same = c[0] && !differ(t, &o, c[0], cr);
    for (int r = 1; r < RUNS; r++) same &= c[r] && !differ(t, &o, c[0], c[r]);
    check(msg, same);
    for (int r = 0; r < RUNS; r++) free(c[r]);
    free(cr);
    mlc_gemm_cache_free(cache);
    operands_free(&o);
  }
  for (int p = 0; p < 3; p++) mlc_team_free(teams[p]);
  for (int p = 0; p < 3; p++) mlc_pool_free(pools[p]);
}

// The cache's contract: a constant is read once until cleared; what is not
// (or no longer) declared constant is read every call.
static void cache_contract(void) {
  enum { M = 2, N = 40, K = 50 };
  Case t = {MLC_GEMM_TRANS_B, M, N, K, 0, 1, 0};
  Operands o;
  operands_new(&t, &o);
  float *b0 = malloc(sizeof(float) * N * K);
  memcpy(b0, o.b, sizeof(float) * N * K);
  float *ref = run(NULL, &t, &o); // no cache current
  MlcGemmCache *cache = mlc_gemm_cache_new();
  mlc_gemm_cache_add(cache, o.b, sizeof(float) * N * K);
  MlcGemmCache *was = mlc_gemm_cache_use(cache);
  float *c1 = run(NULL, &t, &o);
  for (int i = 0; i < N * K; i++) o.b[i] = -o.b[i];
  float *c2 = run(NULL, &t, &o); // still the copy of the old values
  mlc_gemm_cache_clear(cache);
  float *c3 = run(NULL, &t, &o); // the new values
  mlc_gemm_cache_use(was);
  float *neg = run(NULL, &t, &o);
  check("cache: the first call gives the uncached bits", !differ(&t, &o, c1, ref));
  check("cache: a declared constant is read from its copy until clear", !differ(&t, &o, c2, ref));
  check("cache: after clear the new values are read", !differ(&t, &o, c3, neg));
  mlc_gemm_cache_use(cache);
  mlc_gemm_cache_remove(cache, o.b + 7);
  memcpy(o.b, b0, sizeof(float) * N * K);
  float *c4 = run(NULL, &t, &o);
  check("cache: a removed range is read as it is", !differ(&t, &o, c4, ref));
  mlc_gemm_cache_add(cache, o.b, sizeof(float) * (N * K - 1)); // one element short of op(B)
  float *c5 = run(NULL, &t, &o);
  for (int i = 0; i < N * K; i++) o.b[i] = -o.b[i];
  float *c6 = run(NULL, &t, &o);
  check("cache: an operand only partly inside a range is not copied", !differ(&t, &o, c5, ref) &&
                                                                         !differ(&t, &o, c6, neg));
  mlc_gemm_cache_use(was);
  mlc_gemm_cache_free(cache);
  free(b0), free(ref), free(c1), free(c2), free(c3), free(neg), free(c4), free(c5), free(c6);
  operands_free(&o);
}

// Rounding of the values that matter (ties either way, subnormals, f16's
// overflow to inf and its smallest subnormal, NaN, inf) on the small-M
// path: through A (C = A @ ones, A plain and transposed, 1-4 rows) and
// through a constant's 16-bit copy (C = [1] @ B^T), both formats. Each
// element of C is the one rounded value times 1: round16.h's rounding
// (bits equal; NaN as NaN; zeros of either sign as zero, the sum from +0).
static const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f80ffffu, 0x7f7fffffu, 0x00000001u,
                                   0x007fffffu, 0x477ff000u, 0x477fefffu, 0x33000000u, 0x33000001u, 0x38800000u,
                                   0x387fe000u, 0x7fc00000u, 0xff800001u, 0x80000000u, 0xbf7ff000u, 0x3a9b0000u,
                                   0x7f800000u, 0xc77ff000u, 0x3f801000u, 0x3f803000u, 0x33c00000u, 0x00400000u};
enum { NSPECIAL = sizeof special / sizeof special[0] };

static bool same_rounded(uint32_t prec, float x, float got) {
  float want = prec == MLC_GEMM_BF16 ? mlc_round_bf16(x) : mlc_round_f16(x);
  bool same = isnan(want) ? isnan(got) : want == 0 ? got == 0 : !memcmp(&got, &want, 4);
  if (!same) printf("    %s: 0x%08x gives %a, want %a\n", prec == MLC_GEMM_BF16 ? "bf16" : "f16", mlc_f32_bits(x), got, want);
  return same;
}

static void rounded_values(void) {
  enum { N = 19 };
  float ones[N], a[4], c[4 * N];
  for (int j = 0; j < N; j++) ones[j] = 1;
  bool ok_a = true, ok_b = true;
  for (int f = 0; f < 4; f++) {
    uint32_t prec = f % 2 ? MLC_GEMM_F16 : MLC_GEMM_BF16, ta = f / 2 ? MLC_GEMM_TRANS_A : 0;
    for (int s0 = 0; s0 < NSPECIAL; s0 += 4)
      for (int m = 1; m <= 4 && s0 + m <= NSPECIAL; m++) {
        for (int i = 0; i < m; i++) a[i] = mlc_bits_f32(special[s0 + i]);
        // A [m, 1] (lda 1), or A^T stored [1, m] (lda m): the same values
        ok_a &= !mlc_sgemm(NULL, prec | ta, m, N, 1, 1, a, ta ? m : 1, ones, N, 0, c, N, NULL, NULL, 0);
        for (int i = 0; i < m; i++)
          for (int j = 0; j < N; j++) ok_a &= same_rounded(prec, a[i], c[i * N + j]);
      }
  }
  check("bf16 / f16 small-M path rounds A's ties, subnormals, overflow and NaN as round16.h", ok_a);
  // B^T [NB, K]: the value at k = 0, zeros after (exact sums). K = 1 keeps
  // the copy in the L2 (bf16: 16 bits, f16: floats); K = 2^14 (4.7 MB of
  // f32) does not, so both formats read 16 bits (gemm.c's choice).
  enum { NB = 3 * NSPECIAL }; // several 16-column groups and a tail
  float one = 1, cb[NB];
  for (int64_t kk = 1; kk <= 1 << 14; kk <<= 14) {
    float *b = calloc((size_t)(NB * kk), sizeof *b), *ones = malloc(sizeof(float) * (size_t)kk);
    for (int64_t p = 0; p < kk; p++) ones[p] = p ? 0.5f : one;
    for (int j = 0; j < NB; j++) b[j * kk] = mlc_bits_f32(special[(j * 7) % NSPECIAL]);
    for (int f = 0; f < 2; f++) {
      uint32_t prec = f ? MLC_GEMM_F16 : MLC_GEMM_BF16;
      MlcGemmCache *cache = mlc_gemm_cache_new();
      mlc_gemm_cache_add(cache, b, sizeof(float) * (size_t)(NB * kk));
      MlcGemmCache *was = mlc_gemm_cache_use(cache);
      for (int rep = 0; rep < 2; rep++) { // the copy made, then reused
        ok_b &= !mlc_sgemm(NULL, prec | MLC_GEMM_TRANS_B, 1, NB, kk, 1, ones, kk, b, kk, 0, cb, NB, NULL, NULL, 0);
        for (int j = 0; j < NB; j++) ok_b &= same_rounded(prec, b[j * kk], cb[j]);
      }
      mlc_gemm_cache_use(was);
      mlc_gemm_cache_free(cache);
    }
    free(b), free(ones);
  }
  check("bf16 / f16 copies of a constant hold ties, subnormals, overflow and NaN as round16.h", ok_b);
}

// One weight, products of different formats (and of 1 and 4 rows, whose
// bf16 copies differ) through one cache: each reads its own copy, whatever
// the order the copies were made in (a copy found by its address alone
// would give the f32 bits to a bf16 product, or bf16 bits read as f16);
// each format's copy is read until clear (a changed weight
// still gives the old bits), and after clear the new values are seen.
static void cache_formats(void) {
  // FOUR: the product has 4 rows (where a bf16 copy holds floats, gemm.c)
#define FOUR (1u << 30)
  static const uint32_t orders[][4] = {{0, MLC_GEMM_BF16, MLC_GEMM_F16, MLC_GEMM_BF16 | FOUR},
                                       {MLC_GEMM_BF16 | FOUR, 0, MLC_GEMM_F16, MLC_GEMM_BF16},
                                       {MLC_GEMM_F16, MLC_GEMM_BF16, FOUR, MLC_GEMM_F16 | FOUR}};
  enum { M = 4, N = 70, K = 90 };
  for (size_t o = 0; o < sizeof orders / sizeof *orders; o++) {
    Case t = {MLC_GEMM_TRANS_B | MLC_GEMM_BIAS_COL, M, N, K, 0, 1, 0};
    Operands ops;
    operands_new(&t, &ops);
    MlcGemmCache *cache = mlc_gemm_cache_new();
    mlc_gemm_cache_add(cache, ops.b, sizeof(float) * N * K);
    bool fresh = true, stale = true, renewed = true;
    float *old[4];
    for (int i = 0; i < 4; i++) { // the copies made in this order
      Case u = t;
      u.flags |= orders[o][i] & ~FOUR, u.m = orders[o][i] & FOUR ? 4 : 1;
      old[i] = run_ref_f32(&u, &ops);
      MlcGemmCache *was = mlc_gemm_cache_use(cache);
      float *got = run(NULL, &u, &ops);
      mlc_gemm_cache_use(was);
      fresh &= got && !differ(&u, &ops, got, old[i]);
      free(got);
    }
    for (int i = 0; i < N * K; i++) ops.b[i] = 0.5f * ops.b[i] + 0.001f;
    for (int pass = 0; pass < 2; pass++) {
      if (pass) mlc_gemm_cache_clear(cache);
      for (int i = 0; i < 4; i++) {
        Case u = t;
        u.flags |= orders[o][i] & ~FOUR, u.m = orders[o][i] & FOUR ? 4 : 1;
        float *want = pass ? run_ref_f32(&u, &ops) : old[i];
        MlcGemmCache *was = mlc_gemm_cache_use(cache);
        float *got = run(NULL, &u, &ops);
        mlc_gemm_cache_use(was);
        bool ok = got && !differ(&u, &ops, got, want);
        if (pass) renewed &= ok, free(want);
        else stale &= ok;
        free(got);
      }
    }
    char msg[200];
    snprintf(msg, sizeof msg, "cache: f32, bf16 and f16 copies of one weight kept apart (order %zu)", o);
    check(msg, fresh);
    snprintf(msg, sizeof msg, "cache: each format's copy read until clear (order %zu)", o);
    check(msg, stale);
    snprintf(msg, sizeof msg, "cache: after clear every format sees the new values (order %zu)", o);
    check(msg, renewed);
    for (int i = 0; i < 4; i++) free(old[i]);
    mlc_gemm_cache_free(cache);
    operands_free(&ops);
  }
}

// The shapes that cut both kernels' strips oddly (AVX-512: 256/128/80/64
// columns, AVX2: 96/48/32/16), short and fc1-long K, in f32, bf16 and f16,
// with and without bias + relu, B plain and transposed (so cached).
static void odd_shapes(void) {
  static const int64_t ns[] = {1, 7, 15, 16, 17, 33, 49, 97, 255, 257};
  static const int64_t ks[] = {1, 7, 784};
  static const uint32_t precs[] = {0, MLC_GEMM_BF16, MLC_GEMM_F16};
  static const uint32_t epis[] = {0, MLC_GEMM_BIAS_COL | MLC_GEMM_RELU};
  for (int pr = 0; pr < 3; pr++)
    for (int tb = 0; tb < 2; tb++)
      for (int ep = 0; ep < 2; ep++)
        for (int64_t m = 1; m <= 4; m++)
          for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
              Case t = {precs[pr] | (tb ? MLC_GEMM_TRANS_B : 0) | epis[ep], m, ns[ni], ks[ki], 0, 1, 0};
              check_case(&t, "odd shape");
            }
}

static void all_cases(void) {
  shapes();
  rounded_shapes();
  odd_shapes();
  scalars_and_epilogues();
  thread_counts();
  cache_contract();
  rounded_values();
  cache_formats();
}

int main(void) {
  static const char *const variants[] = {"avx512", "avx2"};
  int ran = 0;
  for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
    variant = variants[v];
    if (mlc_gemm_select(variant)) {
      printf("test_gemv: variant %s: this CPU lacks it; skipped\n", variant);
      continue;
    }
    char msg[120];
    snprintf(msg, sizeof msg, "%s: the small-M path is taken (a strip kernel, not the blocked GEMM)", variant);
    check(msg, gemv_available());
    int before = npass + nfail;
    all_cases();
    printf("test_gemv: variant %s: %d cases run\n", variant, npass + nfail - before);
    ran++;
  }
  if (!ran) {
    printf("test_gemv: this CPU has neither AVX-512 nor AVX2 + FMA + F16C (the path runs only there); skipped\n");
    return 77;
  }
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
