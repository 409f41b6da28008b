// test_kir.c — the kernel IR (compiler/kir*.c) against the reference
// interpreter.
//
// Usage: test_kir [-v]   (from the repository root; -v prints every program)
//
// 1. Lowering: every function of every valid module in tests/graph/ir/*.ir (not
//    bad_*), tests/graph/interp/*.ir and tests/passes/autodiff/*.ir — plus, for the
//    autodiff modules, the gradient function ad_grad builds for each of them
//    (with respect to its trainable params and float arguments) — is lowered
//    to kernel IR, verified, printed, and run with kir_run on random inputs;
//    every output and every state slot the function stores must match
//    interp_run: in f64 within 1e-12 relative, in f32 within 1e-5
//    (|a - b| <= tol * max(1, |a|, |b|)), and exactly for the matmul and
//    conv modules (exact_files: both evaluators follow the kernel library's
//    order, kernels/gemm_ref.h). Symbolic dims are 3 unless a
//    `; dim NAME N` directive says otherwise; `; positive NAME` draws from
//    [0.5, 2] and `; int NAME N` integers from [0, N) (default N = 2);
//    floats are otherwise uniform in [-1, 1].
//    The same functions, scheduled for each target (cpu: the recipes and
//    chunk loops `mlc build` compiles; gpu: blocks and threads) and
//    memory-planned, verified after each pass and round-tripped through
//    their text, must match interp_run the same way (gpu: within 1e-10 and
//    1e-4, as its block reductions sum in another order).
//    Each function runs the whole way twice: unfused, and fused
//    (KirLowerOptions.fuse, docs/design/fusion.md); the fused program must
//    also equal the unfused one bit for bit, in f64 and in f32.
// 2. Examples: every program `mlc build` makes of every example and of
//    tests/e2e/*.model (train_step, its checked copy, eval, predict,
//    plateau_update; fused as mlc build makes them, and train_step unfused)
//    round-trips through its text when lowered, scheduled for cpu and for
//    gpu, and planned, verified at each stage; train_step, eval and predict
//    (not char_transformer's; fashion_cnn's train_step only) run by kir_run
//    fused against interp_run (f64 bit for bit, f32 within 1e-6) and fused
//    against unfused (bit for bit), printing the kernel counts.
// 3. Verifier: hand-built programs with one defect each are rejected.
//
// Prints "[PASS] name" / "[FAIL] name" and "N passed, N failed"; exits 1 on
// any failure.
#include "driver/pipeline.h"
#include "passes/autodiff.h"
#include "graph/interp.h"
#include "kernel/kir_lower.h"
#include "kernel/memplan.h"
#include "kernel/schedule.h"

#include "kernels/round16.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int npass, nfail;
static bool verbose;
static double f32_tol = 1e-5; // run_mode's f32 bound on the cpu schedule
static bool covered[IR_OP_COUNT]; // ops of functions that passed in both modes
static Arena *A;

static bool check(const char *name, bool ok) {
  printf("[%s] %s\n", ok ? "PASS" : "FAIL", name);
  if (ok)
    npass++;
  else
    nfail++;
  return ok;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double urand(void) { // [0, 1)
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1p-53;
}

// ---- random inputs ---------------------------------------------------------------------------------
typedef struct Src {
  const char *text; // the whole file: its directives
  IrFunc *f;
  DimSubst bind;    // symbol -> size
} Src;

static int64_t directive(const char *text, const char *kind, const char *name, int64_t dflt, bool *found) {
  char key[300];
  snprintf(key, sizeof key, "; %s %s ", kind, name);
  const char *p = strstr(text, key);
  if (found) *found = p != NULL;
  return p ? strtoll(p + strlen(key), NULL, 10) : dflt;
}

// Bare symbols of the arguments get their sizes (3 or `; dim`), then
// every dim must evaluate.
static void bind_syms(Src *s) {
  for (int i = 0; i < s->f->syms.len; i++) { // symbols no argument binds alone
    Sym *sy = VEC_AT(s->f->syms, Sym, i);
    if (!dim_as_sym(dim_sym(A, sy)) || sy->floor_num) continue;
    bool bare = false;
    for (int a = 0; a < s->f->params.len && !bare; a++) {
      Type *t = VEC_AT(s->f->params, IrNode, a)->type;
      for (int j = 0; j < t->rank; j++) bare |= dim_as_sym(t->dims[j]) == sy;
    }
    if (!bare) subst_bind(A, &s->bind, sy, dim_const(A, directive(s->text, "dim", sy->name, 3, NULL)));
  }
  for (int i = 0; i < s->f->params.len; i++) {
    Type *t = VEC_AT(s->f->params, IrNode, i)->type;
    for (int j = 0; j < t->rank; j++) {
      Sym *sy = dim_as_sym(t->dims[j]);
      if (sy && !subst_lookup(&s->bind, sy))
        subst_bind(A, &s->bind, sy, dim_const(A, directive(s->text, "dim", sy->name, 3, NULL)));
    }
  }
}

static Tensor *random_tensor(Src *s, const char *name, const Type *t) {
  int64_t dims[INTERP_MAX_RANK];
  for (int i = 0; i < t->rank; i++)
    if (!dim_is_const(dim_subst(A, t->dims[i], &s->bind), &dims[i])) return NULL;
  Tensor *x = interp_tensor_new(t->dtype, t->rank, dims);
  bool pos = false, isint = false;
  char key[300];
  snprintf(key, sizeof key, "; positive %s\n", name);
  pos = strstr(s->text, key) != NULL;
  int64_t n = directive(s->text, "int", name, 2, &isint);
  for (int64_t e = 0; x && e < x->numel; e++) {
    double u = urand();
    if (t->dtype == DT_BOOL) x->data[e] = u < 0.5;
    else if (!dtype_is_float(t->dtype)) x->data[e] = floor(u * (double)n);
    else x->data[e] = pos ? 0.5 + 1.5 * u : 2 * u - 1;
  }
  return x;
}

// ---- one comparison ---------------------------------------------------------------------------------
static bool close_to(double a, double b, double tol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return true;
  double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
  return fabs(a - b) <= tol * (m > 1 ? m : 1);
}

static bool same_tensor(const char *what, const Tensor *x, const Tensor *y, double tol) {
  if (x->rank != y->rank || x->numel != y->numel) {
    printf("  %s: shapes differ (rank %d/%d, %lld/%lld elements)\n", what, x->rank, y->rank,
           (long long)x->numel, (long long)y->numel);
    return false;
  }
  for (int64_t e = 0; e < x->numel; e++)
    if (!close_to(x->data[e], y->data[e], tol)) {
      printf("  %s[%lld]: interp %.17g, kir %.17g\n", what, (long long)e, x->data[e], y->data[e]);
      return false;
    }
  return true;
}

typedef struct State {
  int n;
  const char *paths[64];
  Tensor *v[64];
} State;

static void state_clone(State *dst, const State *src) {
  dst->n = src->n;
  for (int i = 0; i < src->n; i++) {
    dst->paths[i] = src->paths[i];
    dst->v[i] = interp_tensor_clone(src->v[i]);
  }
}

static void state_free(State *s) {
  for (int i = 0; i < s->n; i++) interp_tensor_free(s->v[i]);
}

// Runs f in one mode with both evaluators and compares outputs and state.
// Modules of matmuls and convolutions (and the views and elementwise ops
// exact in both evaluators): both follow the library's order
// (kernels/gemm_ref.h), so they agree bit for bit, in f32 and f64 alike.
static const char *const exact_files[] = {"tests/graph/ir/gemm.ir", "tests/graph/ir/convs.ir",
                                          "tests/graph/interp/matmul.ir", "tests/graph/interp/conv2d.ir",
                                          "tests/graph/interp/conv2d_grad_input.ir",
                                          "tests/graph/interp/conv2d_grad_weight.ir"};
static bool exact;

static bool run_mode(IrModule *m, IrFunc *f, KirProgram *p, Tensor **args, const State *st, InterpMode mode) {
  // f64: bit for bit on the cpu schedule (kernels follow the interpreter's
  // operation order, float sums and the library's matmul/conv order
  // included). f32: composite elementwise formulas round once in the
  // interpreter and after every primitive in kernels (ir.md), so 1e-5,
  // except the exact_files, whose ops round alike in both; the float sums
  // are checked exactly in f32 by tests/kernel/test_reduce.c. The gpu
  // schedule splits long reductions into per-block partials and a tree
  // (kir.md), so it is checked within a tolerance.
  bool gpu = p->target && !strcmp(p->target, "gpu");
  double tol = mode == INTERP_F64 ? (gpu ? 1e-10 : 0) : (gpu ? 1e-4 : exact ? 0 : f32_tol);
  State s1, s2;
  state_clone(&s1, st);
  state_clone(&s2, st);
  InterpParams p1 = {s1.n, s1.paths, s1.v, 12345}, p2 = {s2.n, s2.paths, s2.v, 12345};
  Tensor *o1[64] = {0}, *o2[64] = {0};
  char e2[512];
  DiagSink d1;
  diag_init(&d1, A);
  int nout = f->outputs.len;
  int r1 = interp_run(m, f, mode, args, f->params.len, &p1, o1, &d1);
  int r2 = kir_run(p, mode, args, f->params.len, &p2, o2, e2, sizeof e2);
  bool ok = r1 == r2;
  if (!ok) printf("  interp: %s\n  kir: %s\n", r1 ? VEC_AT(d1.diags, Diag, 0)->msg : "ok", r2 ? e2 : "ok");
  for (int i = 0; ok && r1 == 0 && i < nout; i++)
    ok = same_tensor(arena_printf(A, "output %d", i), o1[i], o2[i], tol);
  for (int i = 0; ok && r1 == 0 && i < s1.n; i++) ok = same_tensor(s1.paths[i], s1.v[i], s2.v[i], tol);
  for (int i = 0; i < nout; i++) {
    interp_tensor_free(o1[i]);
    interp_tensor_free(o2[i]);
  }
  state_free(&s1);
  state_free(&s2);
  return ok;
}

static Tensor *random_tensor(Src *s, const char *name, const Type *t);

// Whether the reference interpreter runs f on random inputs (a function
// whose symbols no argument binds alone cannot be run by either evaluator).
static bool interp_runs(IrModule *m, IrFunc *f, const char *text) {
  Src s = {.text = text, .f = f};
  bind_syms(&s);
  Tensor *args[64] = {0}, *outs[64] = {0};
  bool ok = f->params.len <= 64;
  for (int i = 0; ok && i < f->params.len; i++)
    ok = (args[i] = random_tensor(&s, VEC_AT(f->params, IrNode, i)->name, VEC_AT(f->params, IrNode, i)->type)) != NULL;
  DiagSink d;
  diag_init(&d, A);
  ok = ok && interp_run(m, f, INTERP_F64, args, f->params.len, NULL, outs, &d) == 0;
  if (!ok) printf("  interp refuses too: %s\n", d.diags.len ? VEC_AT(d.diags, Diag, 0)->msg : "");
  for (int i = 0; i < f->params.len; i++) interp_tensor_free(args[i]);
  for (int i = 0; ok && i < f->outputs.len; i++) interp_tensor_free(outs[i]);
  return ok;
}

// The printed program parses back, verifies and prints the same.
static bool round_trip(const KirProgram *p, const char *text) {
  DiagSink ds;
  diag_init(&ds, A);
  Vec progs = {0};
  SrcFile *src = src_from_string(A, "round-trip.kir", text, strlen(text));
  bool ok = kir_parse(A, src, &progs, &ds) && progs.len == 1 && kir_verify(VEC_AT(progs, KirProgram, 0), &ds);
  StrBuf b = {0};
  if (ok) kir_print(&b, VEC_AT(progs, KirProgram, 0));
  ok = ok && !strcmp(b.data, text);
  if (!ok) {
    diag_print(&ds, stdout);
    if (b.data) printf("  reprinted %s differs:\n%s", p->name, b.data);
  }
  sb_free(&b);
  return ok;
}

// f lowered again, scheduled for t and planned, verified after each pass,
// and round-tripped through its text; NULL (with the diagnostics printed)
// when any step fails.
static KirProgram *scheduled(IrModule *m, IrFunc *f, const KirTarget *t, bool fuse) {
  char err[512];
  KirProgram *p = kir_lower_func_opts(A, m, f, &(KirLowerOptions){.fuse = fuse}, err, sizeof err);
  DiagSink ds;
  diag_init(&ds, A);
  bool ok = p && kir_schedule(p, t, &ds) && kir_verify(p, &ds) && kir_plan_memory(p, &ds) && kir_verify(p, &ds);
  if (!ok) diag_print(&ds, stdout);
  StrBuf b = {0};
  if (ok) kir_print(&b, p);
  if (ok && verbose) fputs(b.data, stdout);
  ok = ok && round_trip(p, b.data);
  sb_free(&b);
  return ok ? p : NULL;
}

// Two programs of one function (unfused and fused) give the same outputs
// and state, bit for bit, in mode.
static bool same_programs(IrFunc *f, const KirProgram *p, const KirProgram *q, Tensor **args, const State *st,
                          InterpMode mode) {
  State s1, s2;
  state_clone(&s1, st);
  state_clone(&s2, st);
  InterpParams p1 = {s1.n, s1.paths, s1.v, 12345}, p2 = {s2.n, s2.paths, s2.v, 12345};
  Tensor *o1[64] = {0}, *o2[64] = {0};
  char e1[512], e2[512];
  int nout = f->outputs.len;
  int r1 = kir_run(p, mode, args, f->params.len, &p1, o1, e1, sizeof e1);
  int r2 = kir_run(q, mode, args, f->params.len, &p2, o2, e2, sizeof e2);
  bool ok = r1 == r2;
  if (!ok) printf("  unfused: %s\n  fused: %s\n", r1 ? e1 : "ok", r2 ? e2 : "ok");
  for (int i = 0; ok && r1 == 0 && i < nout; i++) ok = same_tensor(arena_printf(A, "output %d", i), o1[i], o2[i], 0);
  for (int i = 0; ok && r1 == 0 && i < s1.n; i++) ok = same_tensor(s1.paths[i], s1.v[i], s2.v[i], 0);
  for (int i = 0; i < nout; i++) {
    interp_tensor_free(o1[i]);
    interp_tensor_free(o2[i]);
  }
  state_free(&s1);
  state_free(&s2);
  return ok;
}

// f's arguments and the module's state, random (random_tensor); false when
// one cannot be made or there are more than 64.
static bool random_inputs(Src *s, IrModule *m, IrFunc *f, Tensor **args, State *st) {
  bool made = f->params.len <= 64;
  for (int i = 0; made && i < f->params.len; i++) {
    IrNode *a = VEC_AT(f->params, IrNode, i);
    made = (args[i] = random_tensor(s, a->name, a->type)) != NULL;
  }
  for (int i = 0; made && i < m->params.len && i < 64; i++) {
    IrParam *ip = VEC_AT(m->params, IrParam, i);
    st->paths[st->n] = ip->name;
    made = (st->v[st->n++] = random_tensor(s, ip->name, ip->type)) != NULL;
  }
  return made;
}

// f lowered unfused and fused (KirLowerOptions.fuse), each verified,
// round-tripped, run against the interpreter, scheduled for both targets
// and run again; the fused program must also equal the unfused one bit for
// bit in both modes.
static void run_func_as(IrModule *m, IrFunc *f, const char *text, const char *file, bool fuse);

static void run_func(IrModule *m, IrFunc *f, const char *text, const char *file) {
  run_func_as(m, f, text, file, false);
  run_func_as(m, f, text, file, true);
}

static void run_func_as(IrModule *m, IrFunc *f, const char *text, const char *file, bool fuse) {
  const char *name = arena_printf(A, "%s:%s%s", file, f->name, fuse ? " (fused)" : "");
  exact = false;
  for (size_t i = 0; i < sizeof exact_files / sizeof *exact_files; i++) exact |= !strcmp(file, exact_files[i]);
  if (exact) name = arena_printf(A, "%s (bit for bit)", name);
  char err[512];
  KirProgram *p = kir_lower_func_opts(A, m, f, &(KirLowerOptions){.fuse = fuse}, err, sizeof err);
  if (!p) {
    printf("  %s\n", err);
    check(arena_printf(A, "lower %s (refused: the interpreter must refuse too)", name), !interp_runs(m, f, text));
    return;
  }
  DiagSink ds;
  diag_init(&ds, A);
  bool vok = kir_verify(p, &ds);
  if (!vok) diag_print(&ds, stdout);
  StrBuf b = {0};
  kir_print(&b, p);
  if (verbose || !vok) fputs(b.data, stdout);
  bool printed = b.data && strstr(b.data, "program ") == b.data;
  bool parsed = printed && round_trip(p, b.data);
  sb_free(&b);
  if (!check(arena_printf(A, "lower+verify+parse %s", name), vok && parsed)) return;
  Src s = {.text = text, .f = f};
  bind_syms(&s);
  Tensor *args[64] = {0};
  State st = {0};
  bool made = random_inputs(&s, m, f, args, &st);
  if (!made) printf("  cannot make inputs\n");
  bool ok = check(arena_printf(A, "f64 %s", name), made && run_mode(m, f, p, args, &st, INTERP_F64));
  ok &= check(arena_printf(A, "f32 %s", name), made && run_mode(m, f, p, args, &st, INTERP_F32));
  KirProgram *u = fuse && made ? kir_lower_func(A, m, f, err, sizeof err) : NULL;
  if (u) {
    ok &= check(arena_printf(A, "f64 %s = unfused, bit for bit", name), same_programs(f, u, p, args, &st, INTERP_F64));
    ok &= check(arena_printf(A, "f32 %s = unfused, bit for bit", name), same_programs(f, u, p, args, &st, INTERP_F32));
  }
  const KirTarget *targets[2] = {&kir_target_cpu, &kir_target_gpu};
  for (int t = 0; t < 2 && made; t++) {
    const char *tn = arena_printf(A, "%s [%s]", name, targets[t]->name);
    KirProgram *q = scheduled(m, f, targets[t], fuse);
    ok &= check(arena_printf(A, "schedule+plan+verify+parse %s", tn), q != NULL);
    if (!q) continue;
    ok &= check(arena_printf(A, "f64 %s", tn), run_mode(m, f, q, args, &st, INTERP_F64));
    ok &= check(arena_printf(A, "f32 %s", tn), run_mode(m, f, q, args, &st, INTERP_F32));
  }
  for (int i = 0; ok && i < f->nodes.len; i++) covered[VEC_AT(f->nodes, IrNode, i)->op] = true;
  for (int i = 0; i < f->params.len; i++) interp_tensor_free(args[i]);
  state_free(&st);
}

static char *read_all(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = arena_alloc(A, (size_t)(n > 0 ? n : 0) + 1);
  size_t got = fread(s, 1, (size_t)(n > 0 ? n : 0), fp);
  s[got] = 0;
  fclose(fp);
  return s;
}

static void run_text(const char *path, char *text, bool grads);

// The file as written, then (when it has f64 values) again with every f64
// made f32: the f32 mode only rounds f32 values, so this is what checks
// the rounding of every op the f64 cases cover.
static void run_file(const char *path, bool grads) {
  char *text = read_all(path);
  run_text(path, text, grads);
  if (!text || !strstr(text, "f64")) return;
  char *t32 = arena_strdup(A, text);
  for (char *q = t32; (q = strstr(q, "f64")); q += 3) q[1] = '3', q[2] = '2';
  run_text(arena_printf(A, "%s (as f32)", path), t32, grads);
}

static void run_text(const char *path, char *text, bool grads) {
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *m = text ? ir_parse(A, src_from_string(A, path, text, strlen(text)), &ds) : NULL;
  if (!m || !ir_verify(m, &ds)) {
    diag_print(&ds, stdout);
    check(arena_printf(A, "parse %s", path), false);
    return;
  }
  int nf = m->funcs.len;
  for (int i = 0; i < nf; i++) {
    IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    run_func(m, f, text, path);
    if (!grads) continue;
    bool wrt[64] = {0};
    for (int j = 0; j < f->params.len && j < 64; j++)
      wrt[j] = dtype_is_float(VEC_AT(f->params, IrNode, j)->type->dtype);
    AdOptions o = {.wrt_inputs = wrt, .diags = &ds};
    IrFunc *g = ad_grad(m, f, &o);
    if (g && ir_verify_func(g, &ds)) run_func(m, g, text, path);
  }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void run_dir(const char *dir, bool grads) {
  DIR *d = opendir(dir);
  if (!d) {
    check(arena_printf(A, "open %s", dir), false);
    return;
  }
  char *names[512];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 512;) {
    size_t len = strlen(e->d_name);
    if (len > 3 && !strcmp(e->d_name + len - 3, ".ir") && strncmp(e->d_name, "bad_", 4))
      names[n++] = arena_printf(A, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) run_file(names[i], grads);
}

// ---- examples --------------------------------------------------------------------------------------
// f lowered, then through the passes for t, printed, parsed and printed again
// at each stage; false at the first stage that fails.
static bool stages_round_trip(IrModule *m, IrFunc *f, KirLowerOptions *o, const KirTarget *t) {
  char err[512];
  KirProgram *p = kir_lower_func_opts(A, m, f, o, err, sizeof err);
  if (!p) return printf("  %s\n", err), false;
  DiagSink ds;
  diag_init(&ds, A);
  bool ok = true;
  for (int stage = 0; ok && stage < 3; stage++) {
    if (stage == 1) ok = kir_schedule(p, t, &ds);
    if (stage == 2) ok = ok && kir_plan_memory(p, &ds);
    ok = ok && kir_verify(p, &ds);
    StrBuf b = {0};
    if (ok) kir_print(&b, p);
    ok = ok && round_trip(p, b.data);
    sb_free(&b);
  }
  if (!ok) diag_print(&ds, stdout);
  return ok;
}

static void example_numbers(IrModule *m, IrFunc *f, const char *path, int dim);

static void run_example(const char *path) {
  DiagSink ds;
  diag_init(&ds, A);
  Pipeline P;
  pipeline_init(&P, A, &ds, &(PipelineOptions){.path = path, .cname = "t"});
  bool built = pipeline_run(&P, STAGE_KIR);
  BuildUnit u = P.u;
  pipeline_free(&P);
  if (!check(arena_printf(A, "build %s", path), built)) {
    diag_print(&ds, stderr);
    return;
  }
  IrFunc *fs[4] = {u.train_step, u.eval, u.predict, u.plateau};
  for (int i = 0; i < 6; i++) {
    IrFunc *f = fs[i < 4 ? i : 0];
    if (!f) continue;
    KirLowerOptions o = {.check_finite = i == 4, .fuse = i < 4}; // fused: what mlc build makes
    const char *what = i == 4 ? "train_step (checked)" : i == 5 ? "train_step (unfused)" : f->name;
    KirLowerOptions oc = o; // the CPU's: bias gradients by columns, line maxes in lanes
    oc.reduce_cols = oc.line_lanes = true;
    check(arena_printf(A, "%s: %s round-trips (lowered, cpu, planned)", path, what),
          stages_round_trip(u.lr.module, f, &oc, &kir_target_cpu));
    check(arena_printf(A, "%s: %s round-trips (lowered, gpu, planned)", path, what),
          stages_round_trip(u.lr.module, f, &o, &kir_target_gpu));
  }
  // char_transformer's programs take minutes in the two evaluators
  // (tests/e2e/tiny_gpt.model has its shape); fashion_cnn's convolutions
  // tens of seconds: its train_step only, at B = 1.
  bool skip = strstr(path, "char_transformer") != NULL, conv = strstr(path, "fashion_cnn") != NULL;
  for (int i = 0; i < 4; i++)
    if (fs[i] && !skip && (!conv || i == 0)) example_numbers(u.lr.module, fs[i], path, conv ? 1 : 2);
}

static int count_kernels(const KirProgram *p) { return p ? p->kernels.len : -1; }

// f (an example's train_step, eval, predict) lowered unfused and fused, run
// by kir_run on random inputs and state (symbolic dims `dim`; integer state
// from 1, float optimizer state positive, so steps, bias corrections and
// second moments are live): fused against interp_run (f64 bit for bit, f32
// within 1e-6) and against unfused (bit for bit in both modes), so unfused
// agrees with the interpreter the same way. Prints the kernel counts.
static void example_numbers(IrModule *m, IrFunc *f, const char *path, int dim) {
  char err[512];
  KirProgram *u = kir_lower_func(A, m, f, err, sizeof err);
  KirProgram *z = kir_lower_func_opts(A, m, f, &(KirLowerOptions){.fuse = true}, err, sizeof err);
  // mlc build's CPU form: bias gradients summed by blocks of columns, line
  // maxes in lanes, a softmax's exps stored once
  KirProgram *zc = kir_lower_func_opts(A, m, f, &(KirLowerOptions){.fuse = true, .reduce_cols = true, .line_lanes = true},
                                       err, sizeof err);
  printf("  %s: %s kernels %d -> %d fused\n", path, f->name, count_kernels(u), count_kernels(z));
  const char *name = arena_printf(A, "%s: %s", path, f->name);
  if (!check(arena_printf(A, "%s lowers unfused, fused and by columns", name), u && z && zc)) return;
  Src s = {.text = arena_printf(A, "; dim B %d\n; dim T %d\n", dim, dim), .f = f};
  bind_syms(&s);
  Tensor *args[64] = {0};
  State st = {0};
  bool made = random_inputs(&s, m, f, args, &st);
  for (int i = 0; made && i < st.n; i++) {
    IrParam *ip = VEC_AT(m->params, IrParam, i);
    Tensor *x = st.v[i];
    for (int64_t e = 0; e < x->numel; e++) {
      if (!dtype_is_float(x->dtype) && x->dtype != DT_BOOL) x->data[e] += 1;
      else if (dtype_is_float(x->dtype) && ip->kind == IRP_OPTSTATE) x->data[e] = fabs(x->data[e]) + 0.01;
    }
  }
  if (!check(arena_printf(A, "%s: inputs", name), made)) return;
  double keep = f32_tol;
  f32_tol = 1e-6;
  check(arena_printf(A, "f64 %s fused = interp", name), run_mode(m, f, z, args, &st, INTERP_F64));
  check(arena_printf(A, "f32 %s fused = interp", name), run_mode(m, f, z, args, &st, INTERP_F32));
  f32_tol = keep;
  check(arena_printf(A, "f64 %s fused = unfused, bit for bit", name), same_programs(f, u, z, args, &st, INTERP_F64));
  check(arena_printf(A, "f32 %s fused = unfused, bit for bit", name), same_programs(f, u, z, args, &st, INTERP_F32));
  check(arena_printf(A, "f64 %s CPU form (by columns, line lanes) = fused, bit for bit", name),
        same_programs(f, z, zc, args, &st, INTERP_F64));
  check(arena_printf(A, "f32 %s CPU form (by columns, line lanes) = fused, bit for bit", name),
        same_programs(f, z, zc, args, &st, INTERP_F32));
  for (int i = 0; i < f->params.len; i++) interp_tensor_free(args[i]);
  state_free(&st);
  if (verbose) printf("  %.1f s\n", (double)clock() / CLOCKS_PER_SEC);
}

static void run_examples(void) {
  const char *dirs[2] = {"examples", "tests/e2e"};
  for (int d = 0; d < 2; d++) {
    DIR *dp = opendir(dirs[d]);
    char *names[64];
    int n = 0;
    for (struct dirent *e; dp && (e = readdir(dp)) && n < 64;) {
      size_t len = strlen(e->d_name);
      if (len > 6 && !strcmp(e->d_name + len - 6, ".model")) names[n++] = arena_printf(A, "%s/%s", dirs[d], e->d_name);
    }
    if (dp) closedir(dp);
    check(arena_printf(A, "models in %s", dirs[d]), n > 0);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) run_example(names[i]);
  }
}

// ---- inline cases -----------------------------------------------------------------------------------
// What no file under tests/ covers yet: state stores (a write the function's
// later reads must not see), optimizer state, cos, a stored value that is
// also an output.
static const char inline_ir[] =
    "module Inline\n"
    "param w : f32[2, 3] trainable\n"
    "buffer bn.mean : f32[3]\n"
    "optstate opt.step : f32\n"
    "func step(%x: f32[B, 3]) -> (f32[B, 3], f32[3], f32) {\n"
    "  %0 = buffer bn.mean : f32[3]\n"
    "  %1 = mean(%x) {dims = [0], keepdim = 0} : f32[3]\n"
    "  %2 = store bn.mean(%1) : f32[3]\n"
    "  %3 = sub(%x, %0) : f32[B, 3]\n"
    "  %4 = optstate opt.step : f32\n"
    "  %5 = const {value = 1.0} : f32\n"
    "  %6 = add(%4, %5) : f32\n"
    "  %7 = store opt.step(%6) : f32\n"
    "  %8 = cos(%7) : f32\n"
    "  %9 = param w : f32[2, 3]\n"
    "  %10 = mul(%9, %8) : f32[2, 3]\n"
    "  %11 = store w(%10) : f32[2, 3]\n"
    "  return %3, %2, %8\n"
    "}\n"
    ;

static void run_inline(void) {
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *m = ir_parse(A, src_from_string(A, "inline.ir", inline_ir, strlen(inline_ir)), &ds);
  if (!m || !ir_verify(m, &ds)) {
    diag_print(&ds, stdout);
    check("parse inline.ir", false);
    return;
  }
  for (int i = 0; i < m->funcs.len; i++) run_func(m, VEC_AT(m->funcs, IrFunc, i), inline_ir, "inline.ir");
}

// ---- verifier negatives --------------------------------------------------------------------------------
// A one-kernel program over a 4-element input and output; `defect` breaks it.
static KirProgram *tiny(int defect) {
  KirProgram *p = kir_program_new(A, "tiny");
  KExpr *four = kir_idx(p, 4);
  int in = kir_buf_add(p, KBUF_INPUT, "%x", DT_F32, 1, &four);
  int out = kir_buf_add(p, KBUF_OUTPUT, "out0", DT_F32, 1, &four);
  kir_buf(p, out)->index = 0;
  p->ninputs = p->noutputs = 1;
  KirKernel *k = kir_kernel_new(p, "k0", (Span){0});
  kir_kernel_use(p, k, out);
  if (defect != 1) kir_kernel_use(p, k, in);
  int i = kir_var_new(p, k, "i", DT_I64, true), acc = kir_var_new(p, k, "acc", DT_F32, false);
  KStmt *s = kir_for(p, &k->body, i, kir_idx(p, 4), true);
  KExpr *x = kir_load(p, in, kir_varref(p, k, i));
  if (defect == 2) x = kir_load(p, in, kir_float(p, DT_F32, 1)); // float index
  if (defect != 3) kir_let(p, &s->body, acc, x);
  kir_store(p, &s->body, out, kir_varref(p, k, i), defect == 4 ? kir_cast(p, DT_F64, x) : kir_varref(p, k, acc));
  if (defect == 5) kir_store(p, &k->body, out, kir_varref(p, k, i), x); // i out of scope
  return p;
}

static void test_verifier(void) {
  static const char *what[] = {"a good program", "load from a non-parameter", "float index",
                               "local used before its let", "store of the wrong dtype",
                               "loop variable out of scope"};
  for (int d = 0; d <= 5; d++) {
    DiagSink ds;
    diag_init(&ds, A);
    bool ok = kir_verify(tiny(d), &ds);
    if (verbose) diag_print(&ds, stdout);
    check(arena_printf(A, "verifier: %s", what[d]), d == 0 ? ok : !ok && ds.nerrors > 0);
  }
  // and the good one runs
  KirProgram *p = tiny(0);
  int64_t dims[1] = {4};
  double v[4] = {1, -2, 3.5, 0};
  Tensor *x = interp_tensor_from(DT_F32, 1, dims, v), *out[1] = {0};
  char err[256];
  bool ok = kir_run(p, INTERP_F64, &x, 1, NULL, out, err, sizeof err) == 0 && out[0] &&
            !memcmp(out[0]->data, v, sizeof v);
  check("kir_run copies a tiny program", ok);
  interp_tensor_free(x);
  interp_tensor_free(out[0]);
}

// ---- local buffers ---------------------------------------------------------------------------------------
// A local buffer (KBUF_LOCAL) is per thread and lives across the block's
// barriers and thread loops: each of 2 x 32 threads keeps x[i] and 2 in its
// own instance, adds 1 three times (three thread loops, a barrier after
// each), and stores (x[i] + 3) * 2. One instance shared by the threads (or
// one per thread loop) gives other values; a read before the block's first
// store is NaN (uninitialised).
static const char *const local_src =
    "program loc\ntarget gpu\nbuf %x : f32[64] input 0\nbuf out0 : f32[64] output 0\nbuf t0_ss : f32[2] local\n"
    "buf t0_u : f32[1] local\n\n"
    "kernel k0(%x, out0, t0_ss, t0_u) {\n"
    "  parallel for gb < 2 @gpu-block {\n"
    "    parallel for gt < 32 @gpu-thread {\n"
    "      t0_ss[0] = %x[((gb * 32) + gt)]\n"
    "      t0_ss[1] = 2.0:f32\n"
    "    }\n"
    "    barrier\n"
    "    for kt < 3 {\n"
    "      parallel for gt1 < 32 @gpu-thread {\n"
    "        t0_ss[0] = (t0_ss[0] + 1.0:f32)\n"
    "      }\n"
    "      barrier\n"
    "    }\n"
    "    parallel for gt2 < 32 @gpu-thread {\n"
    "      out0[((gb * 32) + gt2)] = (t0_ss[0] * t0_ss[1])\n"
    "    }\n"
    "    barrier\n"
    "    parallel for gt3 < 1 @gpu-thread {\n"
    "      out0[((gb * 32) + 31)] = select((gb == 1), t0_u[0], out0[((gb * 32) + 31)])\n"
    "    }\n"
    "  }\n"
    "}\n";

static void test_local(void) {
  DiagSink ds;
  diag_init(&ds, A);
  Vec progs = {0};
  SrcFile *src = src_from_string(A, "local.kir", local_src, strlen(local_src));
  bool ok = kir_parse(A, src, &progs, &ds) && progs.len == 1 && kir_verify(VEC_AT(progs, KirProgram, 0), &ds);
  if (!ok) diag_print(&ds, stdout);
  KirProgram *p = ok ? VEC_AT(progs, KirProgram, 0) : NULL;
  bool planned = p && kir_plan_memory(p, &ds) && kir_verify(p, &ds);
  int64_t bytes = -1;
  check("local buffers: parsed, verified, planned with no scratch bytes",
        planned && kir_eval_i64(p->scratch, NULL, &bytes) && bytes == 0);
  int64_t dims[1] = {64};
  double v[64];
  for (int i = 0; i < 64; i++) v[i] = i - 20;
  Tensor *x = interp_tensor_from(DT_F32, 1, dims, v), *out[1] = {0};
  char err[256] = "";
  bool ran = p && kir_run(p, INTERP_F32, &x, 1, NULL, out, err, sizeof err) == 0 && out[0];
  if (p && !ran) printf("  %s\n", err);
  bool per_thread = ran, poisoned = ran && isnan(out[0]->data[63]);
  for (int i = 0; ran && i < 63; i++) per_thread &= out[0]->data[i] == (v[i] + 3) * 2;
  check("kir_run: each thread's local buffer keeps its values across barriers and thread loops", per_thread);
  check("kir_run: a local buffer read before its first store is NaN", poisoned);
  interp_tensor_free(x);
  interp_tensor_free(out[0]);
}

// ---- warp-level products ---------------------------------------------------------------------------------
// kir.h's KMma in kir_run: tests/kernel/golden/mma_roundtrip.kir (one warp
// stages A 16 x 16 and B 16 x 8 as bf16, one mma, each lane stores its four
// elements of D where the fragment layout puts them) gives D = A B of the
// rounded operands, each element the fmaf chain over k from +0, bit for bit.
// A lane that computed another lane's elements, or the elements in another
// order, stores them elsewhere or with other bits.
static void test_mma(void) {
  DiagSink ds;
  diag_init(&ds, A);
  Vec progs = {0};
  const char *why = NULL;
  SrcFile *src = src_read(A, "tests/kernel/golden/mma_roundtrip.kir", &why);
  bool ok = src && kir_parse(A, src, &progs, &ds) && progs.len == 1 && kir_verify(VEC_AT(progs, KirProgram, 0), &ds);
  if (!ok) diag_print(&ds, stdout);
  KirProgram *p = ok ? VEC_AT(progs, KirProgram, 0) : NULL;
  int64_t da[1] = {256}, db[1] = {128};
  double va[256], vb[128];
  uint32_t r = 7;
  for (int i = 0; i < 256; i++) r = r * 1664525u + 1013904223u, va[i] = (double)(r >> 8) / 16777216.0 - 0.5;
  for (int i = 0; i < 128; i++) r = r * 1664525u + 1013904223u, vb[i] = (double)(r >> 8) / 16777216.0 - 0.5;
  Tensor *in[2] = {interp_tensor_from(DT_F32, 1, da, va), interp_tensor_from(DT_F32, 1, db, vb)}, *out[1] = {0};
  char err[256] = "";
  bool ran = p && kir_run(p, INTERP_F32, in, 2, NULL, out, err, sizeof err) == 0 && out[0];
  if (p && !ran) printf("  %s\n", err);
  bool exact = ran;
  for (int i = 0; exact && i < 16; i++)
    for (int j = 0; j < 8; j++) {
      float acc = 0.0f;
      for (int k = 0; k < 16; k++) acc = fmaf(mlc_round_bf16((float)va[i * 16 + k]), mlc_round_bf16((float)vb[k * 8 + j]), acc);
      exact &= out[0]->data[i * 8 + j] == (double)acc;
    }
  check("kir_run: mma bf16 gives each lane its fragment of A B, the fmaf chain over k bit for bit", exact);
  interp_tensor_free(in[0]), interp_tensor_free(in[1]);
  interp_tensor_free(out[0]);
}

// ---- the memory plan ----------------------------------------------------------------------------------
// x[B] -> t0 -> t1 -> t2 -> out, one elementwise kernel each: t0 dies where
// t2 is born, so the plan gives them the same bytes. defect 1: the last
// kernel also reads t0 (all three live together); defect 2: the first
// kernel reads t1 before k1 writes it.
static KirProgram *chain(int defect) {
  KirProgram *p = kir_program_new(A, "chain");
  int B = kir_sym_add(p, "B", 0, 0, NULL);
  KExpr *n = kir_symref(p, B);
  int bufs[5];
  bufs[0] = kir_buf_add(p, KBUF_INPUT, "%x", DT_F32, 1, &n);
  for (int i = 0; i < 3; i++) bufs[1 + i] = kir_buf_add(p, KBUF_TEMP, arena_printf(A, "t%d", i), DT_F32, 1, &n);
  bufs[4] = kir_buf_add(p, KBUF_OUTPUT, "out0", DT_F32, 1, &n);
  p->ninputs = p->noutputs = 1;
  for (int j = 0; j < 4; j++) {
    KirKernel *k = kir_kernel_new(p, arena_printf(A, "k%d", j), (Span){0});
    int src = bufs[j], dst = bufs[j + 1];
    kir_kernel_use(p, k, src);
    kir_kernel_use(p, k, dst);
    int i = kir_var_new(p, k, "i", DT_I64, true);
    KStmt *s = kir_for(p, &k->body, i, kir_symref(p, B), true);
    KExpr *x = kir_load(p, src, kir_varref(p, k, i));
    if (defect == 1 && j == 3) {
      kir_kernel_use(p, k, bufs[1]);
      x = kir_bin(p, KB_ADD, x, kir_load(p, bufs[1], kir_varref(p, k, i)));
    }
    if (defect == 2 && j == 0) {
      kir_kernel_use(p, k, bufs[2]);
      x = kir_bin(p, KB_ADD, x, kir_load(p, bufs[2], kir_varref(p, k, i)));
    }
    kir_store(p, &s->body, dst, kir_varref(p, k, i), kir_bin(p, KB_MUL, x, kir_float(p, DT_F32, 2)));
  }
  return p;
}

static bool eval_at(KirProgram *p, KExpr *e, int64_t b, int64_t *v) {
  int64_t syms[1];
  return kir_bind_syms(p, &b, syms) && kir_eval_i64(e, syms, v);
}

static void test_memplan(void) {
  DiagSink ds;
  diag_init(&ds, A);
  KirProgram *p = chain(0);
  bool ok = kir_schedule(p, &kir_target_cpu, &ds) && kir_plan_memory(p, &ds) && kir_verify(p, &ds);
  if (verbose) diag_print(&ds, stdout);
  check("memplan: a chain plans and verifies", ok);
  if (!ok) return;
  bool shared = true, sized = true;
  for (int64_t b = 1; b <= 100; b++) {
    int64_t o0, o2, s;
    shared &= eval_at(p, kir_buf(p, 1)->offset, b, &o0) && eval_at(p, kir_buf(p, 3)->offset, b, &o2) && o0 == o2;
    sized &= eval_at(p, p->scratch, b, &s) && s == 2 * ((b * 4 + 63) / 64 * 64);
  }
  check("memplan: t2 takes the bytes of t0, dead by then", shared);
  check("memplan: scratch is two temporaries for every B", sized);
  // the verifier refuses t1 on t0's bytes (live together in k1)
  KExpr *saved = kir_buf(p, 2)->offset;
  kir_buf(p, 2)->offset = kir_buf(p, 1)->offset;
  diag_init(&ds, A);
  ok = kir_verify(p, &ds);
  if (verbose) diag_print(&ds, stdout);
  check("memplan: verifier refuses live temporaries that overlap", !ok && ds.nerrors > 0);
  kir_buf(p, 2)->offset = saved;
  // t0 read by the last kernel: nothing shares, and the plan still verifies
  diag_init(&ds, A);
  p = chain(1);
  ok = kir_schedule(p, &kir_target_cpu, &ds) && kir_plan_memory(p, &ds) && kir_verify(p, &ds);
  int64_t s;
  check("memplan: a temporary live to the end keeps its bytes", ok && eval_at(p, p->scratch, 5, &s) && s == 3 * 64);
  diag_init(&ds, A);
  p = chain(2);
  ok = kir_schedule(p, &kir_target_cpu, &ds) && kir_plan_memory(p, &ds) && kir_verify(p, &ds);
  if (verbose) diag_print(&ds, stdout);
  check("memplan: verifier refuses a temporary read before it is written", !ok && ds.nerrors > 0);
}

// Random programs: kernels taking random temporaries of random polynomial
// sizes over B and T ((a*B + c) * (d*T + e) elements, some not a multiple of
// 64 bytes); the plan must verify, and no two temporaries live at once may
// overlap at any B, T in 1..40 (a wider net than the verifier's samples).
static uint64_t rng_state = 88172645463325252ull;
static int rnd(int n) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (int)(rng_state % (uint64_t)n);
}

static KirProgram *random_program(int ntemps, int nkernels) {
  KirProgram *p = kir_program_new(A, "random");
  int B = kir_sym_add(p, "B", 0, 0, NULL), T = kir_sym_add(p, "T", 0, 1, NULL);
  KExpr *d2[2] = {kir_symref(p, B), kir_symref(p, T)};
  int in = kir_buf_add(p, KBUF_INPUT, "%x", DT_F32, 2, d2);
  p->ninputs = 1;
  int *first = arena_alloc(A, sizeof(int) * (size_t)ntemps), *last = arena_alloc(A, sizeof(int) * (size_t)ntemps);
  int *buf = arena_alloc(A, sizeof(int) * (size_t)ntemps);
  for (int t = 0; t < ntemps; t++) {
    KExpr *a = kir_bin(p, KB_ADD, kir_bin(p, KB_MUL, kir_symref(p, B), kir_idx(p, rnd(3))), kir_idx(p, 1 + rnd(40)));
    KExpr *b = rnd(2) ? kir_bin(p, KB_ADD, kir_bin(p, KB_MUL, kir_symref(p, T), kir_idx(p, rnd(3))), kir_idx(p, 1 + rnd(5)))
                      : kir_idx(p, 1 + rnd(300));
    KExpr *dims[2] = {a, b};
    DType dt = rnd(4) ? DT_F32 : DT_F64;
    buf[t] = kir_buf_add(p, KBUF_TEMP, arena_printf(A, "t%d", t), dt, 2, dims);
    first[t] = rnd(nkernels);
    last[t] = first[t] + rnd(nkernels - first[t]);
  }
  for (int k = 0; k < nkernels; k++) {
    KirKernel *kn = kir_kernel_new(p, arena_printf(A, "k%d", k), (Span){0});
    kir_kernel_use(p, kn, in);
    int v = kir_var_new(p, kn, "v", DT_F32, false);
    kir_let(p, &kn->body, v, kir_load(p, in, kir_idx(p, 0)));
    for (int t = 0; t < ntemps; t++) {
      if (k < first[t] || k > last[t] || (k != first[t] && k != last[t] && rnd(2))) continue;
      kir_kernel_use(p, kn, buf[t]);
      DType dt = kir_buf(p, buf[t])->dtype;
      if (k == first[t]) kir_store(p, &kn->body, buf[t], kir_idx(p, 0), kir_cast(p, dt, kir_varref(p, kn, v)));
      else kir_assign(p, &kn->body, v, kir_cast(p, DT_F32, kir_load(p, buf[t], kir_idx(p, 0))));
    }
  }
  return p;
}

static void test_memplan_random(void) {
  int bad = 0, unverified = 0, reused = 0;
  for (int trial = 0; trial < 60; trial++) {
    KirProgram *p = random_program(5 + rnd(40), 2 + rnd(12));
    DiagSink ds;
    diag_init(&ds, A);
    if (!kir_plan_memory(p, &ds) || !kir_verify(p, &ds)) {
      if (verbose) diag_print(&ds, stdout);
      unverified++;
      continue;
    }
    int nb = p->bufs.len, *lo = arena_alloc(A, sizeof(int) * (size_t)nb), *hi = arena_alloc(A, sizeof(int) * (size_t)nb);
    for (int b = 0; b < nb; b++) lo[b] = -1;
    for (int k = 0; k < p->kernels.len; k++) {
      KirKernel *kn = VEC_AT(p->kernels, KirKernel, k);
      for (int j = 0; j < kn->params.len; j++) {
        int b = kir_param(kn, j);
        if (lo[b] < 0) lo[b] = k;
        hi[b] = k;
      }
    }
    int64_t args5[2] = {5, 5}, syms5[2], total = 0, s5, n5;
    kir_bind_syms(p, args5, syms5);
    kir_eval_i64(p->scratch, syms5, &s5);
    for (int b = 1; b < nb; b++)
      if (kir_eval_i64(kir_buf(p, b)->numel, syms5, &n5)) total += (n5 * dtype_size(kir_buf(p, b)->dtype) + 63) / 64 * 64;
    reused += s5 < total;
    for (int64_t bv = 1; bv <= 40 && !bad; bv++)
      for (int64_t tv = 1; tv <= 40 && !bad; tv += 3) {
        int64_t args[2] = {bv, tv}, syms[2], off[64], end[64], scratch;
        kir_bind_syms(p, args, syms);
        kir_eval_i64(p->scratch, syms, &scratch);
        for (int b = 1; b < nb; b++) {
          int64_t n;
          kir_eval_i64(kir_buf(p, b)->offset, syms, &off[b]);
          kir_eval_i64(kir_buf(p, b)->numel, syms, &n);
          end[b] = off[b] + n * dtype_size(kir_buf(p, b)->dtype);
          bad += off[b] % 64 != 0 || end[b] > scratch;
        }
        for (int a = 1; a < nb; a++)
          for (int b = a + 1; b < nb; b++)
            bad += lo[a] >= 0 && lo[b] >= 0 && lo[a] <= hi[b] && lo[b] <= hi[a] && off[a] < end[b] && off[b] < end[a];
      }
  }
  check("memplan: 60 random programs plan and verify", unverified == 0);
  check("memplan: ... and no live temporaries overlap at any B, T in 1..40", bad == 0);
  if (verbose) printf("  %d of 60 share bytes at B = T = 5\n", reused);
  check("memplan: ... most of them sharing bytes", reused >= 40);
}

// ---- finite checks ---------------------------------------------------------------------------------
// A checked program stops at the first non-finite value in program order:
// log(0) = -inf before sqrt makes NaN of it; log(-1) = NaN; finite input
// runs through. A constant -inf (a mask) is not reported.
static const char finite_ir[] =
    "module F\n"
    "func f(%x: f32[3]) -> (f32[3]) {\n"
    "  %0 = log(%x) : f32[3]\n"
    "  %1 = sqrt(%0) : f32[3]\n"
    "  %2 = const {value = -inf} : f32[3]\n"
    "  %3 = maximum(%1, %2) : f32[3]\n"
    "  return %3\n"
    "}\n";

static void test_finite(void) {
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *m = ir_parse(A, src_from_string(A, "finite.ir", finite_ir, strlen(finite_ir)), &ds);
  if (!m || !ir_verify(m, &ds)) {
    diag_print(&ds, stdout);
    check("parse finite.ir", false);
    return;
  }
  char err[256];
  KirLowerOptions o = {.check_finite = true};
  KirProgram *p = kir_lower_func_opts(A, m, VEC_AT(m->funcs, IrFunc, 0), &o, err, sizeof err);
  check("checked lowering", p && kir_verify(p, &ds) && o.sites.len == 4);
  if (!p || o.sites.len != 4) return;
  check("sites name the ops", !strcmp(VEC_AT(o.sites, KirSite, 0)->op, "log") &&
                                  !strcmp(VEC_AT(o.sites, KirSite, 1)->op, "sqrt"));
  const struct { double x[3]; const char *want; } cases[] = {
      {{1, 0, 2}, "nonfinite 0 -inf at finite.ir:3:3 (log)"},
      {{1, -1, 2}, "nonfinite 0 nan at finite.ir:3:3 (log)"},
      {{1, 0.5, 2}, "nonfinite 1 nan at finite.ir:4:3 (sqrt)"},
      {{1, 4, 2}, NULL},
  };
  for (int i = 0; i < 4; i++) {
    int64_t dims[1] = {3};
    Tensor *x = interp_tensor_from(DT_F32, 1, dims, cases[i].x), *out[1] = {0};
    int rc = kir_run(p, INTERP_F32, &x, 1, NULL, out, err, sizeof err);
    bool ok = cases[i].want ? rc != 0 && strstr(err, cases[i].want) : rc == 0;
    if (!ok && verbose) printf("  got rc %d: %s\n", rc, err);
    check(arena_printf(A, "checked program stops at %s", cases[i].want ? cases[i].want : "nothing"), ok);
    interp_tensor_free(x);
    interp_tensor_free(out[0]);
  }
}

// The kernels func (of mods) lowers to, as one line: with by_op the
// matmul, conv and pool gradient ops' kinds (and relu attributes), else
// every kernel's name less its "kN_" prefix, a checked program's per-value
// "finite" kernels left out; NULL when it does not lower.
static const char *epilogue_kernels(IrModule *const *mods, int nmods, const char *func, bool checked, bool by_op) {
  IrFunc *f = NULL;
  IrModule *m = NULL;
  for (int j = 0; j < nmods; j++)
    for (int i = 0; i < mods[j]->funcs.len; i++)
      if (!strcmp(VEC_AT(mods[j]->funcs, IrFunc, i)->name, func)) f = VEC_AT(mods[j]->funcs, IrFunc, i), m = mods[j];
  char err[256];
  KirLowerOptions o = {.check_finite = checked};
  KirProgram *p = f ? kir_lower_func_opts(A, m, f, &o, err, sizeof err) : NULL;
  if (!p) return NULL;
  StrBuf b = {0};
  for (int i = 0; i < p->kernels.len; i++) {
    const KirKernel *kk = VEC_AT(p->kernels, KirKernel, i);
    if (!by_op) {
      const char *u = strchr(kk->name, '_');
      if (u && !strcmp(u + 1, "finite")) continue; // a checked program's per-value checks
      sb_printf(&b, "%s%s", b.len ? " " : "", u ? u + 1 : kk->name);
      continue;
    }
    const KirOp *op = kk->op;
    bool shown = op && (op->kind <= KOP_MATMUL_RELU_MASK || op->kind == KOP_CONV2D || op->kind == KOP_CONV2D_BIAS ||
                        op->kind == KOP_MAX_POOL2D_GRAD || op->kind == KOP_MAX_POOL2D_GRAD_RELU_MASK);
    if (!shown) continue;
    sb_printf(&b, "%s%s", b.len ? " " : "", kir_op_name(op->kind));
    if (op->kind == KOP_MATMUL_BIAS || op->kind == KOP_MATMUL_RESIDUAL) sb_printf(&b, "(relu=%d)", (int)op->attr[0]);
    if (op->kind == KOP_CONV2D_BIAS) sb_printf(&b, "(relu=%d)", (int)op->attr[7]);
  }
  const char *got = arena_printf(A, "%s", b.data ? b.data : "");
  sb_free(&b);
  return got;
}

// batch_norm's epilogues (kir_lower.c plan_epilogues): convs.ir's
// bn_epilogues as its kernels' names. A relu, or a residual add and a
// relu, is computed in the normalising loop; a batch_norm whose value is
// also returned keeps its own kernel and the relu its own; in a checked
// program every value is checked where it is made, so none folds.
static void test_bn_epilogues(IrModule *m) {
  for (int checked = 0; checked < 2; checked++) {
    const char *got = epilogue_kernels(&m, 1, "bn_epilogues", checked, false);
    const char *want = checked ? "batch_norm relu batch_norm add relu batch_norm relu" : "batch_norm batch_norm batch_norm relu";
    bool ok = got && !strcmp(got, want);
    if (!ok) printf("  bn_epilogues%s: got \"%s\"\n", checked ? " (checked)" : "", got ? got : "(not lowered)");
    check(checked ? "batch_norm epilogues (checked: none)" : "batch_norm epilogues", ok);
  }
}

// Matmul, conv2d and max_pool2d_grad epilogues (kir_lower.c): which ops of gemm.ir's and
// convs.ir's epilogue functions fold into a matmul's, conv's or pool gradient's kernel, as the kernels' op kinds in
// order (tests/graph/ir/gemm.ir runs them against the interpreter), and
// none in a checked program.
static void test_epilogues(void) {
  static const struct { const char *func, *want; } cases[] = {
      {"linear_relu", "matmul_bias(relu=1)"},
      {"residual", "matmul_residual(relu=0) matmul_residual(relu=1)"},
      {"relu_only", "matmul_relu"},
      {"mask", "matmul_relu_mask matmul_relu_mask"},
      {"unfused", "matmul matmul"},
      {"two_mm", "matmul matmul_residual(relu=0)"},
      {"bias64", "matmul_bias(relu=1)"},
      {"conv_bias_relu", "conv2d_bias(relu=1) conv2d_bias(relu=0) conv2d"},
      {"conv_bias64", "conv2d_bias(relu=1)"},
      {"pool_relu_mask", "max_pool2d_grad_relu_mask max_pool2d_grad_relu_mask max_pool2d_grad"},
  };
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *mods[2];
  const char *paths[2] = {"tests/graph/ir/gemm.ir", "tests/graph/ir/convs.ir"};
  for (int i = 0; i < 2; i++) {
    char *text = read_all(paths[i]);
    mods[i] = text ? ir_parse(A, src_from_string(A, paths[i], text, strlen(text)), &ds) : NULL;
    if (!check(arena_printf(A, "parse %s", paths[i]), mods[i] && ir_verify(mods[i], &ds))) return;
  }
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
    for (int checked = 0; checked < 2; checked++) {
      const char *got = epilogue_kernels(mods, 2, cases[c].func, checked, true), *want = checked ? NULL : cases[c].want;
      bool ok = got && (want ? !strcmp(got, want) : !strstr(got, "matmul_") && !strstr(got, "_bias") && !strstr(got, "_mask"));
      if (!ok) printf("  %s%s: got \"%s\"\n", cases[c].func, checked ? " (checked)" : "", got ? got : "(not lowered)");
      check(arena_printf(A, "epilogue %s%s", cases[c].func, checked ? " (checked: none)" : ""), ok);
    }
  test_bn_epilogues(mods[1]);
}

int main(int argc, char **argv) {
  verbose = argc > 1 && !strcmp(argv[1], "-v");
  A = arena_new();
  test_verifier();
  test_local();
  test_mma();
  test_memplan();
  test_memplan_random();
  run_dir("tests/graph/ir", false);
  run_dir("tests/graph/interp", false);
  run_dir("tests/passes/autodiff", true);
  run_inline();
  run_examples();
  test_finite();
  test_epilogues();
  StrBuf b = {0};
  for (int op = 0; op < IR_OP_COUNT; op++)
    if (!covered[op] && op != IR_INPUT) sb_printf(&b, " %s", ir_op_name((IrOp)op));
  if (b.len) printf("ops no passing case covers:%s\n", b.data);
  sb_free(&b);
  printf("%d passed, %d failed\n", npass, nfail);
  arena_free(A);
  return nfail ? 1 : 0;
}
