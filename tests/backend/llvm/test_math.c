// test_math.c — the LLVM backend's own exp, erf, tanh, log and log1p of an
// f32 (compiler/backend/llvm/llvm_math.c) against libm's f64 functions.
//
// Usage: test_math   (run from the repo root)
//
// A kernel-IR program computes the five functions of every element of an
// f32 input in one vector(16) loop; it is compiled for the host CPU, for
// x86-64-v3 (AVX2 + FMA) and for plain x86-64 (SSE2, no FMA) and run on
// about 5.3 million inputs: every
// 4093rd f32 bit pattern (all signs, subnormals, NaNs, infinities), dense
// walks through where each function bends or saturates (exp from -104 to
// -87 (subnormal results) and from 87 to 89 (overflow); erf, tanh and
// log1p from 2^-30 to 10, both signs, log around 1 (0.5 to 2) and log1p from
// -1 to -0.5), and special values. The reference is libm's f64
// function rounded once to f32, the correctly rounded result but where the
// f64 value lands on an f32 rounding midpoint (glibc's f64 functions are
// within an f64 ulp; a sweep of all 2^32 inputs found 2 such for log and 2
// for log1p, where mlc's result is the right one). Checks:
//   - no result is more than 1 f32 ulp from the reference, and special
//     values are exact: exp(-inf) = +0, exp(+inf) = +inf, erf(±0) = ±0,
//     erf(±inf) = ±1, tanh(±0) = ±0, tanh(±inf) = ±1, log(±0) = -inf,
//     log(+inf) = +inf, log1p(-1) = -inf, log1p(±0) = ±0, log or log1p
//     below their domain -> NaN, NaN -> NaN;
//   - at most 1 in 10^5 results differ from the reference at all (the f64
//     evaluation is within 1e-13 of the true value, so only results within
//     that of a rounding boundary may round the other way; a wrong
//     coefficient or a lost reduction step fails this long before it
//     fails the ulp bound);
//   - the host CPU's and x86-64-v3's results are the same bits (both fuse
//     the polynomials' multiply-adds, and nothing else depends on the
//     ISA), x86-64's (no FMA) differ from them in at most 1e-5 of the
//     results, and the host CPU's optimised IR calls no libm function and
//     computes in f64 vectors.
// A CPU this machine cannot run (x86-64-v3 without AVX2 and FMA, or the
// host without FMA for the bit comparison) is skipped, saying so.
// Prints "[PASS] name" / "[FAIL] name: why" per check and a last line
// "N passed, N failed"; exits 1 on any failure.
#include "backend/llvm/llvm.h"
#include "unit.h"
#include "jit.h"
#include "kernel/kir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const char *MATH_KIR =
    "program m\n"
    "target cpu\n"
    "sym N = arg 0 dim 0\n"
    "buf %x : f32[N] input 0\n"
    "buf out0 : f32[N] output 0\n"
    "buf out1 : f32[N] output 1\n"
    "buf out2 : f32[N] output 2\n"
    "buf out3 : f32[N] output 3\n"
    "buf out4 : f32[N] output 4\n"
    "scratch 0\n"
    "kernel k0(%x, out0, out1, out2, out3, out4) {\n"
    "  parallel for i0 < N @vector(16) {\n"
    "    out0[i0] = exp(%x[i0])\n"
    "    out1[i0] = erf(%x[i0])\n"
    "    out2[i0] = tanh(%x[i0])\n"
    "    out3[i0] = log(%x[i0])\n"
    "    out4[i0] = log1p(%x[i0])\n"
    "  }\n"
    "}\n";

enum { NFN = 5 };
static const char *const FN_NAME[NFN] = {"exp", "erf", "tanh", "log", "log1p"};

static float ref(int fn, float x) {
  double d = x;
  switch (fn) {
  case 0: return (float)exp(d);
  case 1: return (float)erf(d);
  case 2: return (float)tanh(d);
  case 3: return (float)log(d);
  default: return (float)log1p(d);
  }
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

// Floats on one line of integers, in order (-0 and +0 both 0).
static int64_t ordered(float f) {
  int32_t s = (int32_t)to_bits(f);
  return s < 0 ? -(int64_t)(s & 0x7fffffff) : s;
}

// The inputs, malloc'd; *n their count.
static float *inputs(int64_t *n) {
  int64_t cap = 6000000, k = 0;
  float *x = malloc((size_t)cap * sizeof *x);
  for (uint64_t u = 0; u < (1ull << 32); u += 4093) x[k++] = from_bits((uint32_t)u);
  // exp: subnormal results (every 8th float in [-104, -87]) and overflow
  // (every float in [87, 89])
  for (uint32_t u = to_bits(87.0f); u <= to_bits(104.0f); u += 8) x[k++] = -from_bits(u);
  for (uint32_t u = to_bits(87.0f); u <= to_bits(89.0f); u++) x[k++] = from_bits(u);
  // erf, tanh and log1p: every 37th float from 0.25 to 10 (erf's pieces
  // meet at 1.5 and 4, tanh's at 1/4), both signs, every 997th below
  for (uint32_t u = to_bits(0.25f); u <= to_bits(10.0f); u += 37) x[k++] = from_bits(u), x[k++] = -from_bits(u);
  for (uint32_t u = to_bits(0x1p-30f); u < to_bits(0.25f); u += 997) x[k++] = from_bits(u), x[k++] = -from_bits(u);
  // log around 1 (where it cancels to its smallest values) and log1p's
  // left end
  for (uint32_t u = to_bits(0.5f); u <= to_bits(2.0f); u += 29) x[k++] = from_bits(u);
  for (uint32_t u = to_bits(0.5f); u <= to_bits(1.0f); u += 29) x[k++] = -from_bits(u);
  static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 2.0f, 4.0f, 0.25f,
                                  88.72283f, 88.72284f, -87.33654f, -103.97208f, -103.97209f, 0x1p-149f,
                                  3.9192059f, 9.01f, 20.0f, 1e30f, -1e30f, 0x1.fffffep127f, -0x1.fffffep-1f,
                                  0x1.000002p0f, 0x1.fffffep-1f, 0x1.6a09e6p-1f, 0x1.6a09e8p-1f, 0x1p-30f,
                                  -0x1p-30f, 0x1.fffffep-30f};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[k++] = special[i];
  MLC_ASSERT(k <= cap);
  *n = k;
  return x;
}

// Compiles MATH_KIR for cpu and runs it over x; outputs in y[fn]. The
// optimised IR's text goes to *ir when ir is not NULL (malloc'd).
static bool run_math(const char *cpu, const float *x, int64_t n, float *y[NFN], char **ir, char *why, size_t len) {
  Arena *a = arena_new();
  DiagSink ds;
  diag_init(&ds, a);
  Vec progs = {0};
  bool ok = kir_parse(a, src_from_string(a, "m.kir", MATH_KIR, strlen(MATH_KIR)), &progs, &ds) &&
            kir_verify(VEC_AT(progs, KirProgram, 0), &ds);
  if (!ok) diag_print(&ds, stdout), snprintf(why, len, "MATH_KIR does not parse");
  BackendOptions o = backend_default_options();
  o.cpu = cpu, o.threads = false;
  Compiled c = {0};
  ok = ok && jit_compile(VEC_AT(progs, KirProgram, 0), &o, &c, why, len);
  if (ok && ir) {
    // A second generator for the printed text: the JIT owns the first's module.
    LlvmGen *g = llvm_gen_new(&o, why, len);
    ok = g && !llvm_gen_add(g, VEC_AT(progs, KirProgram, 0), why, len) && !llvm_gen_optimize(g, why, len);
    StrBuf b = {0};
    if (ok) llvm_gen_print(g, &b);
    *ir = b.data;
    llvm_gen_free(g);
  }
  int64_t dims[MLC_MAX_RANK] = {n};
  void *in[1] = {(void *)x}, *out[NFN] = {y[0], y[1], y[2], y[3], y[4]};
  const char *msg = NULL;
  char scratch[64] __attribute__((aligned(64)));
  if (ok && c.run(dims, in, out, NULL, scratch, 0, NULL, &msg) != 0)
    ok = false, snprintf(why, len, "the program failed: %s", msg ? msg : "?");
  release(&c);
  arena_free(a);
  return ok;
}

// Every result of fn within an ulp of the reference, special values exact,
// and at most 1e-5 of them off the reference at all.
static void check_accuracy(int fn, const char *cpu, const float *x, const float *y, int64_t n) {
  char why[512] = "", name[128];
  int64_t off = 0, worst = 0, worst_at = -1, bad_special = -1;
  for (int64_t i = 0; i < n; i++) {
    float w = ref(fn, x[i]);
    if (isnan(w) || isnan(y[i])) {
      if (isnan(w) != isnan(y[i]) && bad_special < 0) bad_special = i;
      continue;
    }
    if (to_bits(y[i]) == to_bits(w)) continue;
    off++;
    if ((isinf(x[i]) || x[i] == 0 || isinf(w)) && bad_special < 0) bad_special = i;
    int64_t d = llabs(ordered(y[i]) - ordered(w));
    if (d > worst) worst = d, worst_at = i;
  }
  int64_t at = bad_special >= 0 ? bad_special : worst > 1 ? worst_at : -1;
  snprintf(name, sizeof name, "%s (cpu %s): within 1 ulp of libm's f64 %s rounded, special values exact", FN_NAME[fn],
           cpu, FN_NAME[fn]);
  if (at >= 0)
    snprintf(why, sizeof why, "%s(%a) = %a, want %a", FN_NAME[fn], (double)x[at], (double)y[at],
             (double)ref(fn, x[at]));
  check_why(name, at < 0, why);
  snprintf(name, sizeof name, "%s (cpu %s): correctly rounded but for at most 1e-5 of %lld inputs", FN_NAME[fn], cpu,
           (long long)n);
  snprintf(why, sizeof why, "%lld results (%.2e) not the reference's", (long long)off, (double)off / (double)n);
  check_why(name, off <= n / 100000, why);
  printf("  %s: %lld of %lld results an ulp from the correctly rounded f32\n", FN_NAME[fn], (long long)off,
         (long long)n);
}

// How many of the three functions' results differ between runs a and b
// (NaNs equal); the first difference in why.
static int64_t differ(const float *x, int64_t n, float *const a[NFN], float *const b[NFN], const char *an,
                      const char *bn, char *why, size_t len) {
  int64_t d = 0;
  for (int f = 0; f < NFN; f++)
    for (int64_t i = 0; i < n; i++)
      if (to_bits(a[f][i]) != to_bits(b[f][i]) && !(isnan(a[f][i]) && isnan(b[f][i])) && d++ == 0)
        snprintf(why, len, "%s(%a): %s %a, %s %a", FN_NAME[f], (double)x[i], an, (double)a[f][i], bn,
                 (double)b[f][i]);
  return d;
}

int main(void) {
  int64_t n;
  float *x = inputs(&n);
  enum { NCPU = 3 };
  static const char *const cpus[NCPU] = {"native", "x86-64-v3", "x86-64"};
  __builtin_cpu_init();
  bool can[NCPU] = {true, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), true};
  float *y[NCPU][NFN];
  char *ir = NULL;
  bool ran[NCPU];
  for (int c = 0; c < NCPU; c++) {
    char why[512] = "", name[128];
    snprintf(name, sizeof name, "exp/erf/tanh/log/log1p kernel compiles and runs (cpu %s)", cpus[c]);
    for (int f = 0; f < NFN; f++) y[c][f] = malloc((size_t)n * sizeof(float));
    if (!(ran[c] = can[c])) {
      skip(name, "this CPU has no AVX2 + FMA");
      continue;
    }
    ran[c] = run_math(cpus[c], x, n, y[c], c == 0 ? &ir : NULL, why, sizeof why);
    check_why(name, ran[c], why);
    for (int f = 0; ran[c] && f < NFN; f++) check_accuracy(f, cpus[c], x, y[c][f], n);
  }
  char why[512] = "";
  const char *same = "the host CPU's and x86-64-v3's results are the same bits";
  if (!ran[0] || !ran[1]) skip(same, "x86-64-v3 did not run");
  else if (!__builtin_cpu_supports("fma")) skip(same, "the host CPU has no FMA");
  else check_why(same, differ(x, n, y[0], y[1], "native", "x86-64-v3", why, sizeof why) == 0, why);
  if (ran[0] && ran[2]) {
    int64_t d = differ(x, n, y[0], y[2], "native", "x86-64", why, sizeof why);
    printf("  x86-64 (no FMA) and the host CPU: %lld of %lld results differ\n", (long long)d, (long long)(NFN * n));
    check_why("x86-64's results (no FMA) differ from the host CPU's in at most 1e-5 of them", d <= NFN * n / 100000, why);
  }
  static const char *const libm[] = {"@expf", "@erff", "@tanhf", "@logf", "@log1pf", "@llvm.exp.", "@llvm.log.",
                                     "@exp(", "@erf(", "@tanh(", "@log(", "@log1p("};
  const char *found = NULL;
  for (size_t i = 0; ir && i < sizeof libm / sizeof libm[0]; i++)
    if (strstr(ir, libm[i])) found = libm[i];
  snprintf(why, sizeof why, "%s", !ir ? "no IR" : found ? found : "no <N x double> operation");
  check_why("the optimised IR calls no libm function and computes in f64 vectors", ir && !found && strstr(ir, " x double>"),
        why);
  free(ir);
  for (int c = 0; c < NCPU; c++)
    for (int f = 0; f < NFN; f++) free(y[c][f]);
  free(x);
  printf("%d passed, %d failed, %d skipped\n", npass, nfail, nskip);
  return nfail ? 1 : 0;
}
