// test_reduce.c — float sums (kernel/kir.h, "Float sums") end to end.
//
// Usage: test_reduce   (run from the repo root)
//
// 1. Accuracy. The mean and the variance (mean((x - mean)^2), as sema
//    writes batch norm's) of 10^6 uniform values and of 200,704 values
//    shaped like images (a 40x40 object of random values on a constant
//    background, 64 images of 56x56: the distribution whose one-at-a-time
//    float32 mean came out 0.23234373 against 0.23241938), and per-channel
//    batch statistics of [16, 8, 56, 56] images, computed by the graph
//    interpreter in INTERP_F32 and by the compiled program (f32), are
//    within 1e-6 relative of a compensated f64 sum of the same values. The
//    same data summed one element at a time in float32 must miss that
//    bound, or the case would not test anything.
// 2. One order. kir_run agrees with interp_run bit for bit in INTERP_F32
//    and INTERP_F64; the compiled program (LLVM, O3, host CPU) gives the
//    interpreter's f32 results bit for bit, run serially and on pools of 1,
//    2 and 3 threads. Beyond the statistics, [R, C] cases with odd sizes
//    (tails in every sum) cover softmax_grad, layer_norm and its gradient,
//    mse, reduce_to and sums over either dim the same way, and softmax,
//    log_softmax, its gradient, cross_entropy and bce_with_logits, whose
//    exp and log compiled code takes from libm's float functions: those
//    within 1e-6 of the interpreter, and bit for bit equal on every pool.
// 3. Vectorisation. The optimised LLVM IR of the mean kernel adds its lanes
//    with a vector of doubles (`fadd <N x double>`).
//
// Prints "[PASS] name" / "[FAIL] name: why" and "N passed, N failed".
#include "backend/llvm/llvm.h"
#include "jit.h"
#include "kernel/kir_lower.h"
#include "kernel/memplan.h"
#include "kernel/schedule.h"
#include "graph/interp.h"
#include "mlc_rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int npass, nfail;

static void check(const char *name, bool ok, const char *why) {
  if (ok) printf("[PASS] %s\n", name);
  else printf("[FAIL] %s: %s\n", name, why);
  ok ? npass++ : nfail++;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double urand(void) { // [0, 1)
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1p-53;
}

static const char MODULE[] =
    "module R\n"
    "\n"
    "func mean_var(%x: f32[N]) -> (f32, f32) {\n"
    "  %0 = mean(%x) {dims = [0], keepdim = 1} : f32[1]\n"
    "  %1 = sub(%x, %0) : f32[N]\n"
    "  %2 = mul(%1, %1) : f32[N]\n"
    "  %3 = mean(%x) {dims = [0], keepdim = 0} : f32\n"
    "  %4 = mean(%2) {dims = [0], keepdim = 0} : f32\n"
    "  return %3, %4\n"
    "}\n"
    "\n"
    "func channel_stats(%x: f32[B, 8, H, W]) -> (f32[8], f32[8]) {\n"
    "  %0 = mean(%x) {dims = [0, 2, 3], keepdim = 1} : f32[1, 8, 1, 1]\n"
    "  %1 = sub(%x, %0) : f32[B, 8, H, W]\n"
    "  %2 = mul(%1, %1) : f32[B, 8, H, W]\n"
    "  %3 = mean(%x) {dims = [0, 2, 3], keepdim = 0} : f32[8]\n"
    "  %4 = mean(%2) {dims = [0, 2, 3], keepdim = 0} : f32[8]\n"
    "  return %3, %4\n"
    "}\n"
    "\n"
    "func rows(%x: f32[R, C], %dy: f32[R, C], %y: f32[R, C], %z: f32[R, C], %g: f32[C], %b: f32[C])\n"
    "    -> (f32[R, C], f32[R, C], f32[R, C], f32, f32[C], f32[C], f32[R]) {\n"
    "  %0 = softmax_grad(%dy, %y) {dim = 1} : f32[R, C]\n"
    "  %1 = layer_norm(%x, %g, %b) {ndims = 1, eps = 1e-05} : f32[R, C]\n"
    "  %2 = layer_norm_grad(%dy, %x, %g) {ndims = 1, eps = 1e-05} : f32[R, C]\n"
    "  %3 = mse(%x, %z) : f32\n"
    "  %4 = reduce_to(%dy) : f32[C]\n"
    "  %5 = sum(%x) {dims = [0], keepdim = 0} : f32[C]\n"
    "  %6 = sum(%dy) {dims = [1], keepdim = 0} : f32[R]\n"
    "  return %0, %1, %2, %3, %4, %5, %6\n"
    "}\n"
    "\n"
    "func rows_exp(%x: f32[R, C], %dy: f32[R, C], %t: i64[R], %z: f32[R, C])\n"
    "    -> (f32[R, C], f32[R, C], f32[R, C], f32, f32) {\n"
    "  %0 = softmax(%x) {dim = 1} : f32[R, C]\n"
    "  %1 = log_softmax(%x) {dim = 1} : f32[R, C]\n"
    "  %2 = log_softmax_grad(%dy, %1) {dim = 1} : f32[R, C]\n"
    "  %3 = cross_entropy(%x, %t) : f32\n"
    "  %4 = bce_with_logits(%x, %z) : f32\n"
    "  return %0, %1, %2, %3, %4\n"
    "}\n"
    "\n"
    "func long_sums(%a: f32[8191], %b: f32[8192], %c: f32[8193], %d: f32[24581], %e: f32[256, 784])\n"
    "    -> (f32, f32, f32, f32, f32) {\n"
    "  %0 = sum(%a) {dims = [0], keepdim = 0} : f32\n"
    "  %1 = sum(%b) {dims = [0], keepdim = 0} : f32\n"
    "  %2 = mean(%c) {dims = [0], keepdim = 0} : f32\n"
    "  %3 = sum(%d) {dims = [0], keepdim = 0} : f32\n"
    "  %4 = mul(%e, %e) : f32[256, 784]\n"
    "  %5 = sum(%4) {dims = [0, 1], keepdim = 0} : f32\n"
    "  return %0, %1, %2, %3, %5\n"
    "}\n"
    "\n"
    "func long_nested(%x: f32[3, 100, 90], %y: f32[20001, 3], %z: f32[2, 9000])\n"
    "    -> (f32[100], f32[3], f32[2], f32[2, 9000], f32[9000]) {\n"
    "  %0 = sum(%x) {dims = [0, 2], keepdim = 0} : f32[100]\n"
    "  %1 = reduce_to(%y) : f32[3]\n"
    "  %2 = sum(%z) {dims = [1], keepdim = 0} : f32[2]\n"
    "  %3 = softmax(%z) {dim = 1} : f32[2, 9000]\n"
    "  %4 = sum(%z) {dims = [0], keepdim = 0} : f32[9000]\n"
    "  return %0, %1, %2, %3, %4\n"
    "}\n"
    "\n"
    "func sum_update(%g: f32[7, 3511], %m: f32[7, 3511], %w: f32[7, 3511], %h: f32[24583], %v: f32[24583])\n"
    "    -> (f32, f32[7, 3511], f32, f32[24583]) {\n"
    "  %1 = sum(%g) {dims = [0, 1], keepdim = 0} : f32\n"
    "  %2 = add(%m, %g) : f32[7, 3511]\n"
    "  %3 = sub(%w, %2) : f32[7, 3511]\n"
    "  %4 = sum(%h) {dims = [0], keepdim = 0} : f32\n"
    "  %5 = mul(%h, %v) : f32[24583]\n"
    "  return %1, %3, %4, %5\n"
    "}\n"
    "\n"
    "func long_groups(%x: f32[2, 3, 100, 90]) -> (f32[3], f32) {\n"
    "  %0 = sum(%x) {dims = [0, 2, 3], keepdim = 0} : f32[3]\n"
    "  %1 = sum(%x) {dims = [1, 2, 3], keepdim = 0} : f32[2]\n"
    "  %2 = sum(%1) {dims = [0], keepdim = 0} : f32\n"
    "  return %0, %2\n"
    "}\n";

// ---- data -------------------------------------------------------------------------------------
static Tensor *uniform(int rank, const int64_t *dims, double lo, double hi) {
  Tensor *t = interp_tensor_new(DT_F32, rank, dims);
  for (int64_t e = 0; e < t->numel; e++) t->data[e] = (float)(lo + (hi - lo) * urand());
  return t;
}

// [n, c, h, w] images: a centred (h - 16) x (w - 16) object of values in
// [0, 0.5) on a background of one value per channel.
static Tensor *images(int64_t n, int64_t c, int64_t h, int64_t w) {
  int64_t dims[4] = {n, c, h, w};
  Tensor *t = interp_tensor_new(DT_F32, 4, dims);
  for (int64_t e = 0; e < t->numel; e++) {
    int64_t j = e % w, i = e / w % h, ch = e / (w * h) % c;
    bool object = i >= 8 && i < h - 8 && j >= 8 && j < w - 8;
    t->data[e] = (float)(object ? 0.5 * urand() : 0.2113 + 0.01 * (double)ch);
  }
  return t;
}

// ---- references -------------------------------------------------------------------------------
// Neumaier's compensated sum in double: exact to about 2^-53 relative.
typedef struct Exact {
  double s, c;
} Exact;

static void exact_add(Exact *e, double v) {
  double t = e->s + v;
  e->c += fabs(e->s) >= fabs(v) ? (e->s - t) + v : (v - t) + e->s;
  e->s = t;
}

// Mean and variance of x's elements e with e / inner % groups == g (all of
// them for groups == 1), from the f32 values.
static void exact_stats(const Tensor *x, int64_t inner, int64_t groups, int64_t g, double *mean, double *var) {
  Exact s = {0}, v = {0};
  int64_t n = 0;
  for (int64_t e = 0; e < x->numel; e++)
    if (e / inner % groups == g) exact_add(&s, x->data[e]), n++;
  *mean = (s.s + s.c) / (double)n;
  for (int64_t e = 0; e < x->numel; e++)
    if (e / inner % groups == g) exact_add(&v, (x->data[e] - *mean) * (x->data[e] - *mean));
  *var = (v.s + v.c) / (double)n;
}

// The mean as the interpreter computed it before kir.h's float sums: one
// element at a time, rounded to float after every add.
static double sequential_mean(const Tensor *x, int64_t inner, int64_t groups, int64_t g) {
  float s = 0;
  int64_t n = 0;
  for (int64_t e = 0; e < x->numel; e++)
    if (e / inner % groups == g) s += (float)x->data[e], n++;
  return (double)(float)(s / (float)n);
}

static double rel(double got, double want) { return fabs(got - want) / fmax(fabs(want), 1e-300); }

// ---- compiling and running ----------------------------------------------------------------------
// f lowered, scheduled for the CPU, planned (each stage verified) and
// compiled; false with the reason in why.
static bool compile(Arena *a, IrModule *m, IrFunc *f, Compiled *out, char *why, size_t n) {
  memset(out, 0, sizeof *out);
  DiagSink ds;
  diag_init(&ds, a);
  KirProgram *p = kir_lower_func(a, m, f, why, n);
  bool ok = p && kir_verify(p, &ds) && kir_schedule(p, &kir_target_cpu, &ds) && kir_verify(p, &ds) &&
            kir_plan_memory(p, &ds) && kir_verify(p, &ds);
  if (p && !ok) snprintf(why, n, "%s", ds.diags.len ? VEC_AT(ds.diags, Diag, 0)->msg : "kernel IR passes failed");
  BackendOptions o = backend_default_options();
  return ok && jit_compile(p, &o, out, why, n);
}

static void *to_bytes(const Tensor *t) {
  size_t sz = (size_t)dtype_size(t->dtype);
  unsigned char *b = calloc((size_t)(t->numel ? t->numel : 1), sz);
  for (int64_t e = 0; e < t->numel; e++) {
    if (t->dtype == DT_F32) ((float *)b)[e] = (float)t->data[e];
    else if (t->dtype == DT_I64) ((int64_t *)b)[e] = (int64_t)t->data[e];
  }
  return b;
}

// Runs the compiled program on args (pool NULL: serially) into fresh f32
// tensors shaped as want's.
static bool run_compiled(Compiled *cc, Tensor **args, int nargs, Tensor **want, int nout, MlcPool *pool,
                         Tensor **got, char *why, size_t n) {
  int64_t dims[16 * MLC_MAX_RANK] = {0};
  void *in[16] = {0}, *out[16] = {0};
  for (int i = 0; i < nargs; i++) {
    for (int d = 0; d < args[i]->rank; d++) dims[i * MLC_MAX_RANK + d] = args[i]->dims[d];
    in[i] = to_bytes(args[i]);
  }
  for (int i = 0; i < nout; i++) out[i] = calloc((size_t)want[i]->numel + 1, sizeof(float));
  int64_t sbytes = cc->scratch(dims);
  void *scratch = aligned_alloc(64, (size_t)((sbytes + 63) / 64 * 64 + 64));
  const char *msg = NULL;
  int rc = cc->run(dims, in, out, NULL, scratch, 0, pool, &msg);
  if (rc) snprintf(why, n, "compiled program failed: %s", msg ? msg : "?");
  for (int i = 0; i < nout && !rc; i++) {
    got[i] = interp_tensor_new(DT_F32, want[i]->rank, want[i]->dims);
    for (int64_t e = 0; e < got[i]->numel; e++) got[i]->data[e] = ((float *)out[i])[e];
  }
  for (int i = 0; i < nargs; i++) free(in[i]);
  for (int i = 0; i < nout; i++) free(out[i]);
  free(scratch);
  return rc == 0;
}

// Bit for bit (NaN matches NaN) when tol is 0, else within tol relative;
// the first difference in why.
static bool close(Tensor **a, Tensor **b, int nout, double tol, const char *what, char *why, size_t n) {
  for (int i = 0; i < nout; i++)
    for (int64_t e = 0; e < a[i]->numel; e++) {
      double x = a[i]->data[e], y = b[i]->data[e];
      if (x == y ? signbit(x) == signbit(y) : isnan(x) && isnan(y)) continue;
      if (tol > 0 && fabs(x - y) <= tol * fmax(fabs(x), 1e-30)) continue;
      snprintf(why, n, "%s: output %d[%lld]: %.17g vs %.17g", what, i, (long long)e, x, y);
      return false;
    }
  return true;
}

static bool same(Tensor **a, Tensor **b, int nout, const char *what, char *why, size_t n) {
  return close(a, b, nout, 0, what, why, n);
}

static void free_all(Tensor **t, int n) {
  for (int i = 0; i < n; i++) interp_tensor_free(t[i]), t[i] = NULL;
}

// ---- one function on one set of arguments ---------------------------------------------------------
// Interpreter (f32, f64), kir_run (f32, f64), the compiled program serially
// and on 1, 2 and 3 threads: every f32 result bit for bit the
// interpreter's, or, with libm (exp, log: compiled code calls the float
// functions, the interpreters round the double ones) in it, within 1e-6
// and bit for bit the serial run's on every pool. f32 (the interpreter's
// f32 outputs) is kept for the caller.
static bool agree(IrModule *m, const char *fname, Tensor **args, int nargs, Tensor **f32, const char *label,
                  bool libm) {
  Arena *a = arena_new();
  char why[1024] = "";
  IrFunc *f = ir_module_find_func(m, fname);
  int nout = f ? f->outputs.len : 0;
  Tensor *g64[16] = {0}, *k32[16] = {0}, *k64[16] = {0}, *c[16] = {0}, *serial[16] = {0};
  DiagSink ds;
  diag_init(&ds, a);
  char kerr[512] = "";
  bool ok = f && interp_run(m, f, INTERP_F32, args, nargs, NULL, f32, &ds) == 0 &&
            interp_run(m, f, INTERP_F64, args, nargs, NULL, g64, &ds) == 0;
  if (!ok) snprintf(why, sizeof why, "interp: %s", ds.diags.len ? VEC_AT(ds.diags, Diag, 0)->msg : "no function");
  KirProgram *p = ok ? kir_lower_func(a, m, f, why, sizeof why) : NULL;
  ok = ok && p && kir_run(p, INTERP_F32, args, nargs, NULL, k32, kerr, sizeof kerr) == 0 &&
       kir_run(p, INTERP_F64, args, nargs, NULL, k64, kerr, sizeof kerr) == 0;
  if (p && !ok) snprintf(why, sizeof why, "kir_run: %s", kerr);
  ok = ok && same(f32, k32, nout, "kir_run f32", why, sizeof why) && same(g64, k64, nout, "kir_run f64", why, sizeof why);
  char name[256];
  snprintf(name, sizeof name, "%s: kir_run = interp_run bit for bit (f32 and f64)", label);
  check(name, ok, why);
  Compiled cc = {0};
  bool built = ok && compile(a, m, f, &cc, why, sizeof why);
  for (int threads = 0; built && threads <= 3; threads++) {
    MlcPool *pool = threads ? mlc_pool_new(threads) : NULL;
    bool r = run_compiled(&cc, args, nargs, f32, nout, pool, threads ? c : serial, why, sizeof why) &&
             close(f32, threads ? c : serial, nout, libm ? 1e-6 : 0, "compiled vs interp f32", why, sizeof why) &&
             (!threads || same(serial, c, nout, "threads vs serial", why, sizeof why));
    const char *run = threads == 0 ? "serial" : threads == 1 ? "1 thread" : threads == 2 ? "2 threads" : "3 threads";
    if (libm) snprintf(name, sizeof name, "%s: compiled within 1e-6 of interp_run f32%s (%s)", label,
                       threads ? ", = serial bit for bit" : "", run);
    else snprintf(name, sizeof name, "%s: compiled = interp_run f32 bit for bit (%s)", label, run);
    check(name, r, why);
    ok &= r;
    free_all(c, nout);
    if (pool) mlc_pool_free(pool);
  }
  free_all(serial, nout);
  if (ok && !built) check(label, false, why);
  release(&cc);
  free_all(g64, nout), free_all(k32, nout), free_all(k64, nout);
  arena_free(a);
  return ok && built;
}

// ---- 1. accuracy --------------------------------------------------------------------------------
static void stats_case(IrModule *m, const char *label, Tensor *x, bool hard) {
  Tensor *out[2] = {0};
  bool ran = agree(m, "mean_var", &x, 1, out, label, false);
  double mean, var;
  exact_stats(x, 1, 1, 0, &mean, &var);
  char name[256], why[256] = "";
  bool ok = ran && rel(out[0]->data[0], mean) <= 1e-6 && rel(out[1]->data[0], var) <= 1e-6;
  if (ran) snprintf(why, sizeof why, "mean %.9g (f64 %.12g, rel %.2g), var %.9g (f64 %.12g, rel %.2g)",
                    out[0]->data[0], mean, rel(out[0]->data[0], mean), out[1]->data[0], var, rel(out[1]->data[0], var));
  printf("  %s: %s\n", label, why);
  snprintf(name, sizeof name, "%s: f32 mean and variance within 1e-6 of f64", label);
  check(name, ok, why);
  if (hard) {
    double seq = sequential_mean(x, 1, 1, 0);
    snprintf(why, sizeof why, "the one-at-a-time f32 mean %.9g is off by %.2g", seq, rel(seq, mean));
    printf("  %s: %s\n", label, why);
    snprintf(name, sizeof name, "%s: a one-at-a-time f32 mean misses 1e-6 (the case tests something)", label);
    check(name, rel(seq, mean) > 1e-6, why);
  }
  free_all(out, 2);
  interp_tensor_free(x);
}

static void channel_case(IrModule *m) {
  Tensor *x = images(16, 8, 56, 56), *out[2] = {0};
  const char *label = "batch statistics of [16, 8, 56, 56] images";
  bool ok = agree(m, "channel_stats", &x, 1, out, label, false);
  double worst = 0, worst_seq = 0;
  for (int64_t ch = 0; ok && ch < 8; ch++) {
    double mean, var;
    exact_stats(x, 56 * 56, 8, ch, &mean, &var);
    worst = fmax(worst, fmax(rel(out[0]->data[ch], mean), rel(out[1]->data[ch], var)));
    worst_seq = fmax(worst_seq, rel(sequential_mean(x, 56 * 56, 8, ch), mean));
  }
  char why[256];
  snprintf(why, sizeof why, "worst relative error %.2g (one-at-a-time f32 mean: %.2g)", worst, worst_seq);
  printf("  %s: %s\n", label, why);
  check("batch statistics: every channel's f32 mean and variance within 1e-6 of f64", ok && worst <= 1e-6, why);
  check("batch statistics: a one-at-a-time f32 mean misses 1e-6 (the case tests something)", worst_seq > 1e-6, why);
  free_all(out, 2);
  interp_tensor_free(x);
}

// ---- 2. the other sums, odd sizes ----------------------------------------------------------------
static void rows_case(IrModule *m) {
  int64_t rc[2] = {301, 37}, r1[1] = {301}, c1[1] = {37};
  Tensor *args[6] = {uniform(2, rc, -3, 3), uniform(2, rc, -1, 1), uniform(2, rc, 0, 0.1),
                     uniform(2, rc, 0, 1), uniform(1, c1, 0.5, 1.5), uniform(1, c1, -0.5, 0.5)};
  Tensor *out[16] = {0};
  agree(m, "rows", args, 6, out, "softmax_grad, layer_norm(+grad), mse, reduce_to, sum over [301, 37]", false);
  free_all(out, 7);
  Tensor *t = interp_tensor_new(DT_I64, 1, r1);
  for (int64_t e = 0; e < 301; e++) t->data[e] = (double)(int64_t)(urand() * 37);
  Tensor *eargs[4] = {args[0], args[1], t, args[3]};
  agree(m, "rows_exp", eargs, 4, out, "softmax, log_softmax(+grad), cross_entropy, bce over [301, 37]", true);
  free_all(out, 5);
  interp_tensor_free(t);
  free_all(args, 6);
}

// ---- 2b. chunked sums ------------------------------------------------------------------------------
// kir.h's order for n positions written out independently: chunks of 8192
// positions, each its 8 lanes folded; chunk j's value into combine lane
// j mod 8; the combine lanes folded; rounded once.
static double fold8(const double *l) { return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])); }

static double chunked_sum(const double *x, int64_t n) {
  double comb[8] = {0};
  for (int64_t c0 = 0, j = 0; c0 < n; c0 += 8192, j++) {
    double l[8] = {0};
    for (int64_t p = c0; p < n && p < c0 + 8192; p++) l[p % 8] += x[p];
    comb[j % 8] += fold8(l);
  }
  return fold8(comb);
}

static double lanes_sum(const double *x, int64_t n) {
  double l[8] = {0};
  for (int64_t p = 0; p < n; p++) l[p % 8] += x[p];
  return fold8(l);
}

// long_sums in INTERP_F64 (no final rounding hides the order): each sum is
// chunked_sum of its terms, and at least one differs from lanes_sum.
static void chunk_order(IrModule *m, Tensor **args) {
  Arena *a = arena_new();
  DiagSink ds;
  diag_init(&ds, a);
  Tensor *out[8] = {0};
  IrFunc *f = ir_module_find_func(m, "long_sums");
  bool ok = f && interp_run(m, f, INTERP_F64, args, 5, NULL, out, &ds) == 0, differs = false;
  char why[256] = "interp_run failed";
  double *sq = calloc((size_t)args[4]->numel, sizeof(double));
  for (int64_t e = 0; e < args[4]->numel; e++) sq[e] = args[4]->data[e] * args[4]->data[e];
  for (int i = 0; ok && i < 5; i++) {
    const double *x = i == 4 ? sq : args[i]->data;
    int64_t n = args[i]->numel;
    double want = chunked_sum(x, n) / (i == 2 ? (double)n : 1);
    differs |= chunked_sum(x, n) != lanes_sum(x, n);
    if (out[i]->data[0] != want) {
      ok = false;
      snprintf(why, sizeof why, "sum %d of %lld: %.17g, the chunked order gives %.17g", i, (long long)n,
               out[i]->data[0], want);
    }
  }
  free(sq);
  check("long sums (f64): the interpreter's values are the chunked order", ok, why);
  check("long sums (f64): the chunked order differs from one 8-lane sum (the case tests something)", differs,
        "the chunked and unchunked sums agree on every case");
  free_all(out, 5);
  arena_free(a);
}

// Odd long sizes around the chunk (8191, 8192, 8193, three chunks and a
// tail, 200,704 squares as fashion_mlp's fc1.w norm), nested long sums (a
// group with an outer reduced dim, strided columns, rows, a long softmax),
// and a symbolic long mean: interpreter, kir_run and compiled code agree
// bit for bit on 1, 2 and 3 threads, and the interpreter's sums are the
// chunked order (chunked_sum, checked in f64), which differs from a single
// 8-lane sum on some of them (else the case tests nothing).
static void chunk_case(IrModule *m) {
  int64_t na = 8191, nb = 8192, nc = 8193, nd = 3 * 8192 + 5, ne[2] = {256, 784};
  Tensor *args[5] = {uniform(1, &na, -1, 3), uniform(1, &nb, -1, 3), uniform(1, &nc, 0, 1), uniform(1, &nd, 0, 1),
                     uniform(2, ne, -0.1, 0.1)};
  Tensor *out[16] = {0};
  bool ok = agree(m, "long_sums", args, 5, out, "long sums of 8191, 8192, 8193, 24581 and 200,704 positions", false);
  if (ok) chunk_order(m, args);
  free_all(out, 5);
  free_all(args, 5);
  int64_t dx[3] = {3, 100, 90}, dy[2] = {20001, 3}, dz[2] = {2, 9000}, dg[4] = {2, 3, 100, 90};
  Tensor *nargs[3] = {uniform(3, dx, -1, 1), uniform(2, dy, -1, 1), uniform(2, dz, -2, 2)};
  agree(m, "long_nested", nargs, 3, out, "long nested sums (outer reduced dims, strided, rows, softmax)", true);
  free_all(out, 5);
  free_all(nargs, 3);
  Tensor *g = uniform(4, dg, -1, 1);
  agree(m, "long_groups", &g, 1, out, "long groups of [2, 3, 100, 90]", false);
  free_all(out, 2);
  interp_tensor_free(g);
  int64_t sizes[4] = {8191, 8192, 8193, 5 * 8192 + 3};
  for (int i = 0; i < 4; i++) {
    Tensor *x = uniform(1, &sizes[i], -1, 1);
    char label[64];
    snprintf(label, sizeof label, "symbolic mean and variance of %lld", (long long)sizes[i]);
    agree(m, "mean_var", &x, 1, out, label, false);
    free_all(out, 2);
    interp_tensor_free(x);
  }
}

// ---- 2c. an update in the sum's tasks -----------------------------------------------------------
// The cpu schedule runs an elementwise kernel that reads what a long sum
// reads inside the sum's chunk tasks (schedule_merge.c,
// sk_fuse_sum_updates): a [7, 3511] nest (24,577 positions: 3 chunks and
// one of 1) and a single loop of 24,583 (a last chunk of 7). Results as
// everywhere (agree); and the schedule must have done it: a sum kernel
// writes the [7, 3511] and the [24583] elementwise results.
static bool sum_writes(KirProgram *p, int64_t numel) {
  for (int i = 0; i < p->kernels.len; i++) {
    KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    if (!strstr(k->name, "_sum")) continue;
    bool *rw = calloc((size_t)(2 * p->bufs.len + 1), 1);
    for (int j = 0; j < k->body.len; j++) kir_stmt_access(VEC_AT(k->body, KStmt, j), rw, rw + p->bufs.len);
    bool hit = false;
    for (int b = 0; b < p->bufs.len; b++) {
      KExpr *n = VEC_AT(p->bufs, KirBuf, b)->numel;
      hit |= rw[p->bufs.len + b] && n->kind == KE_CONST && n->i == numel;
    }
    free(rw);
    if (hit) return true;
  }
  return false;
}

static void sum_update_case(IrModule *m) {
  int64_t d2[2] = {7, 3511}, d1 = 24583;
  Tensor *args[5] = {uniform(2, d2, -1, 1), uniform(2, d2, -1, 1), uniform(2, d2, -1, 1), uniform(1, &d1, -1, 1),
                     uniform(1, &d1, -1, 1)};
  Tensor *out[16] = {0};
  agree(m, "sum_update", args, 5, out, "long sums with an update of their positions ([7, 3511], [24583])", false);
  free_all(out, 4);
  free_all(args, 5);
  Arena *a = arena_new();
  char why[512] = "";
  DiagSink ds;
  diag_init(&ds, a);
  IrFunc *f = ir_module_find_func(m, "sum_update");
  KirProgram *p = f ? kir_lower_func(a, m, f, why, sizeof why) : NULL;
  bool ok = p && kir_schedule(p, &kir_target_cpu, &ds);
  check("sum_update: the cpu schedule runs both updates in the sums' tasks",
        ok && sum_writes(p, 7 * 3511) && sum_writes(p, d1), ok ? "an update kernel is left" : "lowering failed");
  arena_free(a);
}

// ---- 3. vectorisation ---------------------------------------------------------------------------
static void vector_case(IrModule *m) {
  Arena *a = arena_new();
  char why[512] = "";
  IrFunc *f = ir_module_find_func(m, "mean_var");
  KirProgram *p = kir_lower_func(a, m, f, why, sizeof why);
  DiagSink ds;
  diag_init(&ds, a);
  bool ok = p && kir_schedule(p, &kir_target_cpu, &ds) && kir_plan_memory(p, &ds);
  BackendOptions o = backend_default_options();
  LlvmGen *g = ok ? llvm_gen_new(&o, why, sizeof why) : NULL;
  ok = g && !llvm_gen_add(g, p, why, sizeof why) && !llvm_gen_optimize(g, why, sizeof why);
  if (ok) {
    StrBuf b = {0};
    llvm_gen_print(g, &b);
    const char *at = b.data;
    ok = false;
    while (!ok && at && (at = strstr(at, "fadd <"))) {
      const char *eol = strchr(at, '\n');
      const char *vd = strstr(at, " x double>");
      ok = vd && (!eol || vd < eol);
      at += 6;
    }
    if (!ok) snprintf(why, sizeof why, "no fadd <N x double> in the optimised IR of mean_var");
    sb_free(&b);
  }
  check("the lanes of a float sum vectorise (fadd <N x double>)", ok, why);
  llvm_gen_free(g);
  arena_free(a);
}

int main(void) {
  Arena *a = arena_new();
  DiagSink ds;
  diag_init(&ds, a);
  IrModule *m = ir_parse(a, src_from_string(a, "reduce.ir", MODULE, strlen(MODULE)), &ds);
  if (!m || !ir_verify(m, &ds)) {
    diag_print(&ds, stdout);
    check("the test module parses and verifies", false, "see above");
  } else {
    int64_t n6[1] = {1000000};
    stats_case(m, "10^6 uniform values", uniform(1, n6, 0, 1), false);
    Tensor *img = images(64, 1, 56, 56);
    img->rank = 1, img->dims[0] = img->numel; // 200,704 values
    stats_case(m, "200,704 image values", img, true);
    channel_case(m);
    rows_case(m);
    chunk_case(m);
    sum_update_case(m);
    vector_case(m);
  }
  arena_free(a);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
