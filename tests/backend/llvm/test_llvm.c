// test_llvm.c — checks of the LLVM CPU backend (compiler/llvm_*.c).
//
// Usage: test_llvm   (run from the repo root)
//
// 1. Agreement. Every function of every valid tests/graph/ir/*.ir (files named
//    bad_* are skipped: they are verifier failures on purpose),
//    tests/graph/interp/*.ir and tests/passes/autodiff/*.ir module is lowered to kernel IR
//    (kir_lower_func), compiled by the backend (O3, host CPU) and run
//    in-process by ORC LLJIT on random inputs, symbols bound to small sizes
//    (3, 4, 5, ... in the function's symbol order, or `; dim NAME N`), model
//    state random. The outputs and every state slot the program stores must
//    agree with the kernel-IR evaluator (kir_run) and with the graph
//    interpreter (interp_run), in f32 for f32 programs and f64 for programs
//    with f64 buffers: |got - want| <= 1e-5 * max(1, |want|) per element (the
//    same NaN/inf where the reference has one); exactly for the matmul and
//    conv modules (exact_files), where compiled code calls the kernel
//    library, whose order the references follow. A check that fails in the
//    reference must fail in compiled code with the same message. Each
//    program runs twice: serially (no pool) and on a 4-thread mlc_rt pool
//    through mlc_parallel_for.
//    The checks module below must stop at a failed check (embedding index
//    out of range, integer division by zero) with the reference's message.
//    mlp, conv and nn run again at O2 for x86-64-v3 with threads off, and at
//    O0.
//    Value directives in a file (as test_autodiff reads them):
//      ; positive NAME   argument %NAME or state NAME drawn from [0.5, 2]
//      ; int NAME N      integers in [0, N)  (other integer args: [0, 2))
//      ; dim NAME N      symbolic dim NAME is N
// 2. Vectorisation: an elementwise f32 kernel's optimised IR holds a
//    <16 x float> or <8 x float> operation.
// 3. Text: a planned program parsed from kernel-IR text (a vector loop, a
//    barrier) compiles, carries vectorize metadata and runs.
// 4. Sharing: identical kernels of two programs in one module are defined
//    once and called by both with their own sizes.
// 5. Rounding: the kernel IR's round_bf16 / round_f16 are round16.h's bit
//    for bit, for the host CPU and plain x86-64.
// 6. Emission through struct Backend: object (ELF), assembly and LLVM IR
//    text for the host CPU (the IR carries target-cpu attributes), and an
//    object for x86-64-v3.
//
// Prints "[PASS] name" / "[FAIL] name: why" per check ("[SKIP] name: why"
// for a function kir_lower_func does not support yet: a lowering gap, not a
// backend failure) and a last line "N passed, N failed, N skipped"; exits 1
// on any failure.
#include "backend/llvm/llvm.h"
#include "unit.h"
#include "jit.h"
#include "kernel/kir_lower.h"
#include "kernel/memplan.h"
#include "kernel/schedule.h"
#include "graph/interp.h"
#include "tests/backend/llvm/jit_runtime.h"
#include "mlc_rt.h"
#include "kernels/round16.h"

#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The backend options the agreement checks compile with (varied at the end).
static BackendOptions opts;
static const char *variant = "";

// ---- random numbers (fixed seed: the test is deterministic) ------------------------------------
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double urand(void) { // [0, 1)
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1p-53;
}

// ---- inputs ------------------------------------------------------------------------------------------
typedef struct Case {
  const char *text; // the module file, for directives
  IrModule *m;
  IrFunc *f;
  Arena *a;
  Tensor *args[64];
  int nargs;
  const char *paths[128];
  Tensor *state[128];
  int nstate;
  bool expect_fail; // the reference must stop at a check (bad index, / 0)
  char why[512];
} Case;

static bool extent(Case *c, const Dim *d, int64_t *out) {
  int nf = c->f->syms.len, nm = c->m->syms.len;
  for (int i = 0; i < nf + nm && !dim_is_const(d, out); i++) {
    Sym *s = i < nf ? VEC_AT(c->f->syms, Sym, i) : VEC_AT(c->m->syms, Sym, i - nf);
    char key[256];
    snprintf(key, sizeof key, "; dim %s ", s->name);
    const char *p = strstr(c->text, key);
    d = dim_set(c->a, d, s, p ? strtoll(p + strlen(key), NULL, 10) : 3 + i);
  }
  return dim_is_const(d, out);
}

static Tensor *random_tensor(Case *c, const char *name, const Type *t) {
  int64_t dims[INTERP_MAX_RANK];
  for (int i = 0; i < t->rank; i++)
    if (!extent(c, t->dims[i], &dims[i])) return NULL;
  Tensor *x = interp_tensor_new(t->dtype, t->rank, dims);
  char key[256];
  snprintf(key, sizeof key, "; positive %s\n", name);
  bool pos = strstr(c->text, key);
  snprintf(key, sizeof key, "; int %s ", name);
  const char *ip = strstr(c->text, key);
  int64_t n = ip ? strtoll(ip + strlen(key), NULL, 10) : 2;
  for (int64_t e = 0; x && e < x->numel; e++) {
    double u = urand();
    if (t->dtype == DT_BOOL) x->data[e] = u < 0.5;
    else if (!dtype_is_float(t->dtype)) x->data[e] = floor(u * (double)n);
    else if (pos) x->data[e] = 0.5 + 1.5 * u;
    else x->data[e] = (double)(float)(2 * u - 1);
  }
  return x;
}

static bool make_inputs(Case *c) {
  c->nargs = c->f->params.len;
  for (int i = 0; i < c->nargs; i++) {
    IrNode *in = VEC_AT(c->f->params, IrNode, i);
    if (!(c->args[i] = random_tensor(c, in->name, in->type))) return false;
  }
  c->nstate = c->m->params.len;
  for (int i = 0; i < c->nstate; i++) {
    IrParam *p = VEC_AT(c->m->params, IrParam, i);
    c->paths[i] = p->name;
    if (!(c->state[i] = random_tensor(c, p->name, p->type))) return false;
  }
  return true;
}

static void clone_state(Case *c, Tensor **out) {
  for (int i = 0; i < c->nstate; i++) out[i] = interp_tensor_clone(c->state[i]);
}

static void free_tensors(Tensor **t, int n) {
  for (int i = 0; i < n; i++) interp_tensor_free(t[i]), t[i] = NULL;
}

// ---- typed bytes <-> tensors ---------------------------------------------------------------------
static void *to_bytes(const Tensor *t, DType dt, int64_t numel) {
  size_t sz = (size_t)dtype_size(dt);
  unsigned char *b = calloc((size_t)(numel ? numel : 1), sz);
  for (int64_t e = 0; t && e < numel && e < t->numel; e++) {
    double v = t->data[e];
    switch (dt) {
    case DT_F32: ((float *)b)[e] = (float)v; break;
    case DT_F64: ((double *)b)[e] = v; break;
    case DT_I32: ((int32_t *)b)[e] = (int32_t)v; break;
    case DT_I64: ((int64_t *)b)[e] = (int64_t)v; break;
    case DT_BOOL: case DT_U8: b[e] = (unsigned char)v; break;
    default: break;
    }
  }
  return b;
}

static double elem(const void *b, DType dt, int64_t e) {
  switch (dt) {
  case DT_F32: return ((const float *)b)[e];
  case DT_F64: return ((const double *)b)[e];
  case DT_I32: return ((const int32_t *)b)[e];
  case DT_I64: return (double)((const int64_t *)b)[e];
  case DT_BOOL: case DT_U8: return ((const unsigned char *)b)[e];
  default: return NAN;
  }
}

// Modules of matmuls and convolutions: compiled code (the kernel library's
// calls for f32, loops with llvm.fma for f64) and the references follow one
// order (kernels/gemm_ref.h), so they must agree bit for bit (mlp.ir is
// not among them: its cross_entropy_grad is a composite formula, which the
// interpreter rounds once and kernels after every primitive).
static const char *const exact_files[] = {"tests/graph/ir/gemm.ir", "tests/graph/ir/convs.ir",
                                          "tests/graph/interp/matmul.ir", "tests/graph/interp/conv2d.ir",
                                          "tests/graph/interp/conv2d_grad_input.ir",
                                          "tests/graph/interp/conv2d_grad_weight.ir"};
static double tolerance = 1e-5;

// Compares compiled bytes against a reference tensor; describes the first
// difference in why.
static bool agree(const void *got, DType dt, const Tensor *want, const char *what, char *why, size_t n) {
  for (int64_t e = 0; e < want->numel; e++) {
    double g = elem(got, dt, e), w = want->data[e];
    bool ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= tolerance * fmax(1, fabs(w));
    if (!ok) {
      snprintf(why, n, "%s[%lld]: compiled %.9g, reference %.9g", what, (long long)e, g, w);
      return false;
    }
  }
  return true;
}

// ---- compiling and running one program -------------------------------------------------------------
// f lowered to kernel IR, scheduled for the CPU and planned, as `mlc build`
// does, each stage verified; NULL with the reason in why.
static KirProgram *planned(Arena *a, IrModule *m, IrFunc *f, KirLowerOptions *o, char *why, size_t n) {
  KirProgram *p = kir_lower_func_opts(a, m, f, o, why, n);
  DiagSink ds;
  diag_init(&ds, a);
  bool ok = p && kir_verify(p, &ds) && kir_schedule(p, &kir_target_cpu, &ds) && kir_verify(p, &ds) &&
            kir_plan_memory(p, &ds) && kir_verify(p, &ds);
  if (p && !ok) snprintf(why, n, "%s", ds.diags.len ? VEC_AT(ds.diags, Diag, 0)->msg : "kernel IR passes failed");
  return ok ? p : NULL;
}

static bool compile(const KirProgram *p, Compiled *out, char *why, size_t n) {
  return jit_compile(p, &opts, out, why, n);
}

static const Tensor *state_of(Case *c, Tensor **st, const char *path) {
  for (int i = 0; i < c->nstate; i++)
    if (!strcmp(c->paths[i], path)) return st[i];
  return NULL;
}

static bool written(const KirProgram *p, int b) {
  bool *rw = calloc((size_t)(2 * p->bufs.len + 1), 1), w = false;
  for (int i = 0; i < p->kernels.len; i++) {
    const Vec *body = &VEC_AT(p->kernels, KirKernel, i)->body;
    for (int j = 0; j < body->len; j++) kir_stmt_access(VEC_AT(*body, KStmt, j), rw, rw + p->bufs.len);
  }
  w = rw[p->bufs.len + b];
  free(rw);
  return w;
}

// Runs the compiled program on c's inputs and fresh state; compares with the
// reference outputs `want` and state `wstate` (or with the reference's
// failure message `rerr` when rc_want != 0).
static bool run_compiled(Case *c, const KirProgram *p, Compiled *cc, MlcPool *pool, int rc_want,
                         const char *rerr, Tensor **want, Tensor **wstate) {
  int64_t dims[64 * MLC_MAX_RANK] = {0};
  void *in[64] = {0}, *out[64] = {0}, *st[128] = {0};
  int stbuf[128], nst = 0;
  for (int i = 0; i < c->nargs; i++)
    for (int d = 0; d < c->args[i]->rank; d++) dims[i * MLC_MAX_RANK + d] = c->args[i]->dims[d];
  for (int b = 0; b < p->bufs.len; b++) {
    KirBuf *kb = kir_buf(p, b);
    if (kb->kind == KBUF_INPUT) in[kb->index] = to_bytes(c->args[kb->index], kb->dtype, c->args[kb->index]->numel);
    if (kb->kind == KBUF_OUTPUT) {
      const Tensor *w = rc_want == 0 ? want[kb->index] : NULL;
      out[kb->index] = to_bytes(NULL, kb->dtype, w ? w->numel : 1 << 16);
    }
    if (kb->kind == KBUF_STATE) {
      const Tensor *t = state_of(c, c->state, kb->path);
      stbuf[nst] = b;
      st[nst++] = to_bytes(t, kb->dtype, t ? t->numel : 0);
    }
  }
  int64_t sbytes = cc->scratch(dims);
  void *scratch = aligned_alloc(64, (size_t)((sbytes + 63) / 64 * 64 + 64));
  const char *msg = NULL;
  int rc = cc->run(dims, in, out, st, scratch, 12345, pool, &msg);
  bool ok = true;
  if (rc_want) {
    ok = rc != 0 && msg && strstr(rerr, msg);
    if (!ok) snprintf(c->why, sizeof c->why, "reference failed (%.200s), compiled gave %d (%.200s)", rerr, rc, msg ? msg : "");
  } else if (rc) {
    ok = false;
    snprintf(c->why, sizeof c->why, "compiled program failed: %s", msg ? msg : "?");
  } else {
    for (int b = 0; ok && b < p->bufs.len; b++) {
      KirBuf *kb = kir_buf(p, b);
      if (kb->kind == KBUF_OUTPUT) ok = agree(out[kb->index], kb->dtype, want[kb->index], kb->name, c->why, sizeof c->why);
    }
    for (int i = 0; ok && i < nst; i++) {
      KirBuf *kb = kir_buf(p, stbuf[i]);
      if (written(p, stbuf[i])) ok = agree(st[i], kb->dtype, state_of(c, wstate, kb->path), kb->name, c->why, sizeof c->why);
    }
  }
  for (int i = 0; i < 64; i++) free(in[i]), free(out[i]);
  for (int i = 0; i < nst; i++) free(st[i]);
  free(scratch);
  return ok;
}

static bool uses_f64(const KirProgram *p) {
  for (int b = 0; b < p->bufs.len; b++)
    if (kir_buf(p, b)->dtype == DT_F64) return true;
  return false;
}

// One function: reference runs (graph interpreter and kir_run), then the
// compiled program without and with a thread pool.
static void run_case(Case *c, MlcPool *pool, const char *name) {
  KirProgram *p = kir_lower_func(c->a, c->m, c->f, c->why, sizeof c->why);
  if (!p) { // a skip only for what the backend cannot be blamed for: a lowering gap, said with the reason
    skip(name, c->why);
    return;
  }
  if (!(p = planned(c->a, c->m, c->f, NULL, c->why, sizeof c->why))) {
    check_why(name, false, c->why);
    return;
  }
  if (!make_inputs(c)) {
    check_why(name, false, "cannot size the inputs");
    free_tensors(c->args, c->nargs), free_tensors(c->state, c->nstate);
    return;
  }
  InterpMode mode = uses_f64(p) ? INTERP_F64 : INTERP_F32;
  Tensor *gst[128] = {0}, *kst[128] = {0}, *gout[64] = {0}, *kout[64] = {0};
  clone_state(c, gst), clone_state(c, kst);
  InterpParams gp = {c->nstate, c->paths, gst, 12345}, kp = {c->nstate, c->paths, kst, 12345};
  char kerr[512] = "";
  Arena *da = arena_new();
  DiagSink gd;
  diag_init(&gd, da);
  int grc = interp_run(c->m, c->f, mode, c->args, c->nargs, &gp, gout, &gd);
  const char *gerr = gd.diags.len ? VEC_AT(gd.diags, Diag, 0)->msg : "";
  int krc = kir_run(p, mode, c->args, c->nargs, &kp, kout, kerr, sizeof kerr);
  int nout = c->f->outputs.len;
  bool ok = true;
  if (c->expect_fail && krc == 0) {
    snprintf(c->why, sizeof c->why, "the reference did not stop at a check");
    ok = false;
  }
  if ((grc != 0) != (krc != 0)) {
    snprintf(c->why, sizeof c->why, "references disagree: interp %.200s, kir_run %.200s", gerr, kerr);
    ok = false;
  }
  // The two references agree with each other (what kir_run is checked for
  // elsewhere); the compiled code is compared with both.
  Compiled cc = {0};
  if (ok && !compile(p, &cc, c->why, sizeof c->why)) ok = false;
  else if (ok) {
    for (int pass = 0; ok && pass < 2; pass++) {
      MlcPool *pl = pass ? pool : NULL;
      ok = run_compiled(c, p, &cc, pl, krc, kerr, kout, kst);
      if (ok && grc == 0) ok = run_compiled(c, p, &cc, pl, 0, gerr, gout, gst);
      if (!ok) {
        char tmp[sizeof c->why];
        snprintf(tmp, sizeof tmp, "%.480s (%s)", c->why, pass ? "4 threads" : "serial");
        memcpy(c->why, tmp, sizeof tmp);
      }
    }
  }
  release(&cc);
  check_why(name, ok, c->why);
  free_tensors(gst, c->nstate), free_tensors(kst, c->nstate);
  free_tensors(gout, grc == 0 ? nout : 0), free_tensors(kout, krc == 0 ? nout : 0);
  free_tensors(c->args, c->nargs), free_tensors(c->state, c->nstate);
  arena_free(da);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

static void run_text(const char *path, char *text, MlcPool *pool, bool expect_fail) {
  Arena *a = arena_new();
  DiagSink ds;
  diag_init(&ds, a);
  IrModule *m = text ? ir_parse(a, src_from_string(a, path, text, strlen(text)), &ds) : NULL;
  if (!m || !ir_verify(m, &ds)) {
    check_why(path, false, "does not parse or verify");
  } else {
    for (int i = 0; i < m->funcs.len; i++) {
      Case c = {.text = text, .m = m, .f = VEC_AT(m->funcs, IrFunc, i), .a = a, .expect_fail = expect_fail};
      char label[1200];
      snprintf(label, sizeof label, "%s: %s%s", path, c.f->name, variant);
      run_case(&c, pool, label);
    }
  }
  arena_free(a);
}

static void run_file(const char *path, MlcPool *pool) {
  char *text = slurp(path);
  tolerance = 1e-5;
  for (size_t i = 0; i < sizeof exact_files / sizeof *exact_files; i++)
    if (!strcmp(path, exact_files[i])) tolerance = 0;
  run_text(path, text, pool, false);
  tolerance = 1e-5;
  free(text);
}

// Failed checks: compiled code stops with the reference's message, serially
// and from inside a parallel loop.
static char CHECKS[] =
    "; int idx 100\n"
    "; int d 1\n"
    "module C\n"
    "param emb.w : f32[5, 3] trainable\n"
    "func bad_index(%idx: i64[B, 4]) -> (f32[B, 4, 3]) {\n"
    "  %0 = param emb.w : f32[5, 3]\n"
    "  %1 = embedding(%0, %idx) : f32[B, 4, 3]\n"
    "  return %1\n"
    "}\n"
    "func div_zero(%n: i32[B, 4], %d: i32[B, 4]) -> (i32[B, 4]) {\n"
    "  %0 = div(%n, %d) : i32[B, 4]\n"
    "  return %0\n"
    "}\n";

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static void run_dir(const char *dir, MlcPool *pool) {
  DIR *d = opendir(dir);
  if (!d) {
    check_why(dir, false, "cannot open");
    return;
  }
  char *names[512];
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) && n < 512) {
    size_t len = strlen(de->d_name);
    if (len > 3 && !strcmp(de->d_name + len - 3, ".ir") && strncmp(de->d_name, "bad_", 4))
      names[n++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    run_file(path, pool);
    free(names[i]);
  }
}

// ---- vectorisation and emission -------------------------------------------------------------------
static const char *ELEMENTWISE =
    "module V\n"
    "func f(%a: f32[N], %b: f32[N]) -> (f32[N]) {\n"
    "  %0 = add(%a, %b) : f32[N]\n"
    "  %1 = relu(%0) : f32[N]\n"
    "  return %1\n"
    "}\n";

static KirProgram *elementwise(Arena *a, char *why, size_t n) {
  DiagSink ds;
  diag_init(&ds, a);
  IrModule *m = ir_parse(a, src_from_string(a, "v.ir", ELEMENTWISE, strlen(ELEMENTWISE)), &ds);
  if (!m || !ir_verify(m, &ds)) return snprintf(why, n, "test module does not verify"), NULL;
  return planned(a, m, VEC_AT(m->funcs, IrFunc, 0), NULL, why, n);
}

static void test_vectorises(bool threads) {
  Arena *a = arena_new();
  char why[512] = "", name[128];
  snprintf(name, sizeof name, "elementwise f32 kernel vectorises (threads %s)", threads ? "on" : "off");
  KirProgram *p = elementwise(a, why, sizeof why);
  BackendOptions o = backend_default_options();
  o.threads = threads;
  LlvmGen *g = p ? llvm_gen_new(&o, why, sizeof why) : NULL;
  bool ok = g && !llvm_gen_add(g, p, why, sizeof why) && !llvm_gen_optimize(g, why, sizeof why);
  if (ok) {
    StrBuf b = {0};
    llvm_gen_print(g, &b);
    ok = b.data && (strstr(b.data, "<16 x float>") || strstr(b.data, "<8 x float>"));
    if (!ok) snprintf(why, sizeof why, "no <16 x float> / <8 x float> in the optimised IR");
    sb_free(&b);
  }
  check_why(name, ok, why);
  llvm_gen_free(g);
  arena_free(a);
}

static bool file_starts(const char *path, const char *magic, size_t n) {
  char buf[16] = {0};
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t got = fread(buf, 1, n, f);
  fclose(f);
  return got == n && !memcmp(buf, magic, n);
}

static bool file_has(const char *path, const char *needle) {
  char *s = slurp(path);
  bool ok = s && strstr(s, needle);
  free(s);
  return ok;
}

static void test_emit(const char *cpu, BackendEmit kind, const char *ext) {
  Arena *a = arena_new();
  char why[512] = "", name[128], path[256];
  snprintf(name, sizeof name, "emit %s for cpu %s", ext, cpu);
  snprintf(path, sizeof path, "/tmp/mlc_test_llvm_%d.%s", (int)getpid(), ext);
  KirProgram *p = elementwise(a, why, sizeof why);
  BackendOptions o = backend_default_options();
  o.cpu = cpu, o.emit = kind;
  BackendSession *s = p ? llvm_backend.open(&o, why, sizeof why) : NULL;
  bool ok = s && !llvm_backend.add(s, p, why, sizeof why) && !llvm_backend.finish(s, path, why, sizeof why);
  if (ok) {
    if (kind == BE_EMIT_OBJ) ok = file_starts(path, "\177ELF", 4);
    if (kind == BE_EMIT_ASM) ok = file_has(path, "mlc_f:");
    if (kind == BE_EMIT_LLVM) ok = file_has(path, "\"target-cpu\"") && file_has(path, "@mlc_f(");
    if (!ok) snprintf(why, sizeof why, "%s does not look like a %s file", path, ext);
  }
  if (s) llvm_backend.close(s);
  remove(path);
  check_why(name, ok, why);
  arena_free(a);
}

// The same agreement checks under other options: O2 for a named CPU with
// threads off, and O0 (no passes).
static void test_variants(MlcPool *pool) {
  const char *sets[][3] = {{"O2", "threads=off", "cpu=x86-64-v3"}, {"O0", "threads=on", "cpu=native"}};
  const char *names[] = {" [O2, threads off, x86-64-v3]", " [O0]"};
  for (int v = 0; v < 2; v++) {
    char why[256] = "";
    opts = backend_default_options();
    bool ok = true;
    for (int i = 0; i < 3; i++) ok = ok && !backend_set_option(&opts, sets[v][i], why, sizeof why);
    check_why("backend_set_option", ok, why);
    variant = names[v];
    run_file("tests/graph/ir/mlp.ir", pool);
    run_file("tests/graph/ir/conv.ir", pool);
    run_file("tests/passes/autodiff/nn.ir", pool);
  }
  char why[256] = "";
  check_why("backend_set_option rejects junk", backend_set_option(&opts, "emit=pdf", why, sizeof why) == -1 &&
        strstr(why, "emit=pdf"), "accepted emit=pdf");
  opts = backend_default_options();
  variant = "";
}

// ---- finite checks ---------------------------------------------------------------------------------
// A program lowered with check_finite, compiled: it returns 1 with the first
// non-finite value's message (log's -inf before sqrt's NaN; a NaN at the
// start of a long parallel-produced buffer), and 0 on finite input. In
// TWICE both logs have one kernel key, so one function serves both: each
// call must still report its own statement.
static const char *FINITE =
    "module F\n"
    "func f(%x: f32[N]) -> (f32[N]) {\n"
    "  %0 = log(%x) : f32[N]\n"
    "  %1 = sqrt(%0) : f32[N]\n"
    "  return %1\n"
    "}\n";
static const char *TWICE =
    "module F\n"
    "func f(%x: f32[N]) -> (f32[N]) {\n"
    "  %0 = log(%x) : f32[N]\n"
    "  %1 = log(%0) : f32[N]\n"
    "  return %1\n"
    "}\n";

typedef struct FiniteCase {
  int64_t at;
  float v;
  const char *want; // NULL: passes
} FiniteCase;

static void test_finite_src(MlcPool *pool, const char *file, const char *src, const FiniteCase *cases, int ncases) {
  Arena *a = arena_new();
  char why[512] = "";
  DiagSink ds;
  diag_init(&ds, a);
  IrModule *m = ir_parse(a, src_from_string(a, file, src, strlen(src)), &ds);
  KirLowerOptions o = {.check_finite = true};
  KirProgram *p = m && ir_verify(m, &ds) ? planned(a, m, VEC_AT(m->funcs, IrFunc, 0), &o, why, sizeof why) : NULL;
  Compiled cc;
  bool ok = p && compile(p, &cc, why, sizeof why);
  snprintf(why + strlen(why), sizeof why - strlen(why), " (%s)", file);
  check_why("checked program compiles", ok, why);
  if (!ok) {
    arena_free(a);
    return;
  }
  enum { N = 5000 };
  float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
  int64_t dims[MLC_MAX_RANK] = {N};
  void *scratch = aligned_alloc(64, ((size_t)cc.scratch(dims) + 63) / 64 * 64 + 64);
  for (int i = 0; i < ncases; i++) {
    for (int e = 0; e < N; e++) x[e] = 2 + (float)e;
    x[cases[i].at] = cases[i].v;
    void *in[1] = {x}, *out[1] = {y};
    const char *err = NULL;
    int32_t rc = cc.run(dims, in, out, NULL, scratch, 0, pool, &err);
    bool good = cases[i].want ? rc == 1 && err && !strcmp(err, cases[i].want) : rc == 0;
    snprintf(why, sizeof why, "rc %d, message %s", rc, err ? err : "(none)");
    check_why(cases[i].want ? cases[i].want : "checked program passes finite values", good, why);
  }
  free(scratch), free(x), free(y);
  release(&cc);
  arena_free(a);
}

static void test_finite(MlcPool *pool) {
  const FiniteCase once[] = {
      {4000, 0, "nonfinite 0 -inf at finite.ir:3:3 (log)"},
      {1, 0.5f, "nonfinite 1 nan at finite.ir:4:3 (sqrt)"},
      {0, 2, NULL},
  };
  test_finite_src(pool, "finite.ir", FINITE, once, 3);
  // x = 1: the first log gives 0, the second -inf; x = 0: the first -inf.
  const FiniteCase twice[] = {
      {3000, 1, "nonfinite 1 -inf at twice.ir:4:3 (log)"},
      {7, 0, "nonfinite 0 -inf at twice.ir:3:3 (log)"},
      {0, 3, NULL},
  };
  test_finite_src(pool, "twice.ir", TWICE, twice, 3);
}

// ---- one function per distinct kernel --------------------------------------------------------------
// f and g share their add and relu kernels (g's over another sym, M, its
// second, bound to another size than f's N and g's first sym K); g's mul is
// its own. Compiled into one module, the shared kernels are defined once
// (as f's), g calls them with its own M, and both programs still compute
// their results.
static const char *SHARED =
    "module S\n"
    "func f(%a: f32[N], %b: f32[N]) -> (f32[N]) {\n"
    "  %0 = add(%a, %b) : f32[N]\n"
    "  %1 = relu(%0) : f32[N]\n"
    "  return %1\n"
    "}\n"
    "func g(%c: f32[K], %a: f32[M], %b: f32[M]) -> (f32[M]) {\n"
    "  %0 = add(%a, %b) : f32[M]\n"
    "  %1 = relu(%0) : f32[M]\n"
    "  %2 = mul(%1, %1) : f32[M]\n"
    "  return %2\n"
    "}\n";

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p++) n++;
  return n;
}

// g (square) takes a leading argument of 5 elements.
static bool run_entry(KirEntryFn run, const char *fn, int64_t n, bool square, char *why, size_t len) {
  if (!run) return false;
  float a[64], b[64], c[5] = {0}, y[64] = {0};
  for (int i = 0; i < n; i++) a[i] = (float)i - 10, b[i] = 3;
  int lead = square;
  int64_t dims[3 * MLC_MAX_RANK] = {5};
  dims[lead * MLC_MAX_RANK] = dims[(lead + 1) * MLC_MAX_RANK] = n;
  void *in[3] = {c, a, b}, *out[1] = {y};
  char scratch[1024] __attribute__((aligned(64)));
  const char *msg = NULL;
  if (run(dims, square ? in : in + 1, out, NULL, scratch, 0, NULL, &msg)) return snprintf(why, len, "%s failed", fn), false;
  for (int i = 0; i < n; i++) {
    float r = a[i] + b[i] > 0 ? a[i] + b[i] : 0;
    if (y[i] != (square ? r * r : r)) return snprintf(why, len, "%s: y[%d] = %g", fn, i, y[i]), false;
  }
  return true;
}

static bool run_shared(LlvmJit *j, const char *fn, int64_t n, bool square, char *why, size_t len) {
  return run_entry((KirEntryFn)(uintptr_t)llvm_jit_lookup(j, fn, why, len), fn, n, square, why, len);
}

static void test_shared_kernels(void) {
  Arena *a = arena_new();
  char why[512] = "";
  DiagSink ds;
  diag_init(&ds, a);
  IrModule *m = ir_parse(a, src_from_string(a, "s.ir", SHARED, strlen(SHARED)), &ds);
  KirProgram *f = m && ir_verify(m, &ds) ? planned(a, m, VEC_AT(m->funcs, IrFunc, 0), NULL, why, sizeof why) : NULL;
  KirProgram *g = f ? planned(a, m, VEC_AT(m->funcs, IrFunc, 1), NULL, why, sizeof why) : NULL;
  BackendOptions o = backend_default_options();
  o.opt_level = 0, o.threads = false;
  LlvmGen *gen = g ? llvm_gen_new(&o, why, sizeof why) : NULL;
  bool ok = gen && !llvm_gen_add(gen, f, why, sizeof why) && !llvm_gen_add(gen, g, why, sizeof why);
  if (ok) {
    StrBuf b = {0};
    llvm_gen_print(gen, &b);
    ok = count(b.data, "define hidden i32 @mlc_f.k") == 2 && count(b.data, "define hidden i32 @mlc_g.k") == 1;
    if (!ok) snprintf(why, sizeof why, "%d kernels of f and %d of g defined, want 2 and 1",
                      count(b.data, "define hidden i32 @mlc_f.k"), count(b.data, "define hidden i32 @mlc_g.k"));
    sb_free(&b);
  }
  check_why("identical kernels of two programs are compiled once", ok, why);
  LlvmJit *j = ok ? llvm_jit_new(gen, NULL, 0, why, sizeof why) : NULL;
  ok = j && run_shared(j, "mlc_f", 37, false, why, sizeof why) && run_shared(j, "mlc_g", 23, true, why, sizeof why);
  check_why("programs sharing kernels compute their own results", ok, why);
  llvm_jit_free(j);
  llvm_gen_free(gen);
  arena_free(a);
}

// ---- a program from kernel-IR text -----------------------------------------------------------------
// A planned program written as text: a chunk loop over rows, its inner loop
// mapped vector(8), a barrier, a serial sum. The vector loop carries the
// llvm.loop vectorize metadata, the barrier prints as nothing, and the
// compiled program computes y = 2x and the total.
static const char *VECTOR_KIR =
    "program v\n"
    "target cpu\n"
    "sym B = arg 0 dim 0\n"
    "buf %x : f32[B, 32] input 0\n"
    "buf t0 : f32[B, 32] temp at 0\n"
    "buf out0 : f32[B, 32] output 0\n"
    "buf out1 : f32[] output 1\n"
    "scratch (B * 128)\n"
    "kernel k0(%x, t0, out0, out1) {\n"
    "  parallel for i0 < B @chunk(1) {\n"
    "    parallel for j1 < 32 @vector(8) {\n"
    "      t0[((i0 * 32) + j1)] = (%x[((i0 * 32) + j1)] * 2.0:f32)\n"
    "      out0[((i0 * 32) + j1)] = t0[((i0 * 32) + j1)]\n"
    "    }\n"
    "  }\n"
    "  barrier\n"
    "  let s2: f32 = 0.0:f32\n"
    "  for e3 < (B * 32) {\n"
    "    s2 = (s2 + t0[e3])\n"
    "  }\n"
    "  out1[0] = s2\n"
    "}\n";

// ---- a module split into objects ---------------------------------------------------------------
// SHARED's module in two kernel parts, the rarely run part (g's own kernel,
// the mul) and the entry points' part: the objects (read back into bufs[],
// malloc'd) of one compilation.
static int split_objects(const char *dir, char *bufs[4], size_t lens[4], char *why, size_t len) {
  Arena *a = arena_new();
  DiagSink ds;
  diag_init(&ds, a);
  IrModule *m = ir_parse(a, src_from_string(a, "s.ir", SHARED, strlen(SHARED)), &ds);
  KirProgram *f = m && ir_verify(m, &ds) ? planned(a, m, VEC_AT(m->funcs, IrFunc, 0), NULL, why, len) : NULL;
  KirProgram *g = f ? planned(a, m, VEC_AT(m->funcs, IrFunc, 1), NULL, why, len) : NULL;
  BackendOptions o = backend_default_options();
  o.opt_level = 2, o.threads = false;
  LlvmGen *gen = g ? llvm_gen_new(&o, why, len) : NULL;
  bool ok = gen && !llvm_gen_add(gen, f, why, len);
  if (ok) llvm_gen_rare(gen, true);
  ok = ok && !llvm_gen_add(gen, g, why, len);
  if (ok) llvm_gen_split(gen, 2);
  ok = ok && !llvm_gen_optimize(gen, why, len);
  int n = ok ? llvm_gen_parts(gen) : 0;
  if (ok && n != 4) ok = false, snprintf(why, len, "%d parts, want 4", n);
  for (int i = 0; ok && i < n; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/k%d.o", dir, i);
    ok = !(i ? llvm_gen_write_part(gen, i, path, why, len) : llvm_gen_write(gen, path, why, len));
    FILE *fp = ok ? fopen(path, "rb") : NULL;
    if (!fp) continue;
    fseek(fp, 0, SEEK_END);
    lens[i] = (size_t)ftell(fp);
    rewind(fp);
    bufs[i] = malloc(lens[i] + 1);
    ok = bufs[i] && fread(bufs[i], 1, lens[i], fp) == lens[i];
    fclose(fp);
  }
  llvm_gen_free(gen);
  arena_free(a);
  return ok ? n : -1;
}

static bool has_bytes(const char *buf, size_t len, const char *s) {
  size_t n = strlen(s);
  for (size_t i = 0; i + n <= len; i++)
    if (!memcmp(buf + i, s, n)) return true;
  return false;
}

// Split twice: the same objects; linked into a shared object, f and g
// compute their results (each kernel is defined in one part only, or the
// link fails).
static void test_split(void) {
  char why[512] = "", dir[] = "/tmp/mlc_test_split_XXXXXX";
  char *b1[4] = {0}, *b2[4] = {0};
  size_t l1[4] = {0}, l2[4] = {0};
  bool ok = mkdtemp(dir) && split_objects(dir, b1, l1, why, sizeof why) == 4 &&
            split_objects(dir, b2, l2, why, sizeof why) == 4;
  for (int i = 0; ok && i < 4; i++)
    if (l1[i] != l2[i] || memcmp(b1[i], b2[i], l1[i])) ok = false, snprintf(why, sizeof why, "part %d differs", i);
  check_why("a split module gives the same objects every time", ok, why);
  // g's own kernel is in the rarely run part only (the entry part refers to it)
  bool rare = ok && has_bytes(b1[2], l1[2], "mlc_g.k") && !has_bytes(b1[0], l1[0], "mlc_g.k") &&
              !has_bytes(b1[1], l1[1], "mlc_g.k");
  check_why("the kernel only a rare program calls is in the rarely run part", rare, ok ? "it is not" : why);
  char so[600], cmd[2200];
  snprintf(so, sizeof so, "%s/s.so", dir);
  snprintf(cmd, sizeof cmd, "cc -shared -o %s %s/k0.o %s/k1.o %s/k2.o %s/k3.o", so, dir, dir, dir, dir);
  ok = ok && system(cmd) == 0;
  if (!ok && !why[0]) snprintf(why, sizeof why, "cc -shared failed");
  void *h = ok ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (ok && !h) snprintf(why, sizeof why, "dlopen: %s", dlerror());
  ok = h && run_entry((KirEntryFn)(uintptr_t)dlsym(h, "mlc_f"), "mlc_f", 37, false, why, sizeof why) &&
       run_entry((KirEntryFn)(uintptr_t)dlsym(h, "mlc_g"), "mlc_g", 23, true, why, sizeof why);
  check_why("the objects of a split module link and compute their programs' results", ok, why);
  if (h) dlclose(h);
  for (int i = 0; i < 4; i++) {
    free(b1[i]), free(b2[i]);
    snprintf(cmd, sizeof cmd, "%s/k%d.o", dir, i);
    remove(cmd);
  }
  remove(so);
  rmdir(dir);
}

static void test_kir_text(MlcPool *pool) {
  Arena *a = arena_new();
  char why[512] = "";
  DiagSink ds;
  diag_init(&ds, a);
  Vec progs = {0};
  bool ok = kir_parse(a, src_from_string(a, "v.kir", VECTOR_KIR, strlen(VECTOR_KIR)), &progs, &ds) &&
            kir_verify(VEC_AT(progs, KirProgram, 0), &ds);
  if (!ok) diag_print(&ds, stdout);
  KirProgram *p = ok ? VEC_AT(progs, KirProgram, 0) : NULL;
  LlvmGen *g = p ? llvm_gen_new(&opts, why, sizeof why) : NULL;
  ok = g && !llvm_gen_add(g, p, why, sizeof why);
  if (ok) {
    StrBuf b = {0};
    llvm_gen_print(g, &b);
    ok = strstr(b.data, "llvm.loop.vectorize.width") && strstr(b.data, "llvm.loop.vectorize.enable");
    if (!ok) snprintf(why, sizeof why, "no vectorize metadata on the vector loop");
    sb_free(&b);
  }
  check_why("a vector loop carries llvm.loop vectorize metadata", ok, why);
  LlvmJit *j = ok ? llvm_jit_new(g, jit_runtime, JIT_RUNTIME_N, why, sizeof why) : NULL;
  KirEntryFn run = j ? (KirEntryFn)(uintptr_t)llvm_jit_lookup(j, "mlc_v", why, sizeof why) : NULL;
  enum { B = 5 };
  float x[B * 32], y[B * 32], total = 0, want = 0;
  char scratch[B * 128] __attribute__((aligned(64)));
  for (int e = 0; e < B * 32; e++) x[e] = (float)(e % 7), want += 2 * x[e];
  int64_t dims[MLC_MAX_RANK] = {B};
  void *in[1] = {x}, *out[2] = {y, &total};
  const char *msg = NULL;
  ok = run && run(dims, in, out, NULL, scratch, 0, pool, &msg) == 0 && total == want && y[B * 32 - 1] == 2 * x[B * 32 - 1];
  if (run && !ok) snprintf(why, sizeof why, "total %g, want %g", total, want);
  check_why("a program parsed from kernel-IR text compiles and runs", ok, why);
  llvm_jit_free(j);
  llvm_gen_free(g);
  arena_free(a);
}

// ---- round_bf16 and round_f16 --------------------------------------------------------------------
// The kernel IR's rounding ops (`precision bf16 | f16`, where a product
// runs as a nest) against kernels/round16.h bit for bit: ties either way,
// subnormals, f16's overflow to inf and its smallest subnormal, NaN, -0;
// for the host CPU and for plain x86-64 (no F16C: the half conversion
// without the instruction).
static const char *ROUND_KIR =
    "program r\n"
    "target cpu\n"
    "sym N = arg 0 dim 0\n"
    "buf %x : f32[N] input 0\n"
    "buf out0 : f32[N] output 0\n"
    "buf out1 : f32[N] output 1\n"
    "scratch 0\n"
    "kernel k0(%x, out0, out1) {\n"
    "  parallel for i0 < N {\n"
    "    out0[i0] = round_bf16(%x[i0])\n"
    "    out1[i0] = round_f16(%x[i0])\n"
    "  }\n"
    "}\n";

static void test_round16(MlcPool *pool, const char *cpu) {
  Arena *a = arena_new();
  char why[512] = "";
  DiagSink ds;
  diag_init(&ds, a);
  Vec progs = {0};
  bool ok = kir_parse(a, src_from_string(a, "r.kir", ROUND_KIR, strlen(ROUND_KIR)), &progs, &ds) &&
            kir_verify(VEC_AT(progs, KirProgram, 0), &ds);
  if (!ok) diag_print(&ds, stdout);
  BackendOptions o = opts;
  o.cpu = cpu;
  LlvmGen *g = ok ? llvm_gen_new(&o, why, sizeof why) : NULL;
  ok = g && !llvm_gen_add(g, VEC_AT(progs, KirProgram, 0), why, sizeof why);
  LlvmJit *j = ok ? llvm_jit_new(g, jit_runtime, JIT_RUNTIME_N, why, sizeof why) : NULL;
  KirEntryFn run = j ? (KirEntryFn)(uintptr_t)llvm_jit_lookup(j, "mlc_r", why, sizeof why) : NULL;
  static const uint32_t bits[] = {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f80ffffu, 0x7f7fffffu, 0x00000001u,
                                  0x007fffffu, 0x477ff000u, 0x477fefffu, 0x33000000u, 0x33000001u, 0x38800000u,
                                  0x387fe000u, 0x7fc00000u, 0xff800001u, 0x80000000u, 0xbf7ff000u, 0x3a9b0000u};
  enum { N = sizeof bits / sizeof bits[0] };
  float x[N], rb[N], rh[N];
  for (int i = 0; i < N; i++) memcpy(&x[i], &bits[i], 4);
  int64_t dims[MLC_MAX_RANK] = {N};
  void *in[1] = {x}, *out[2] = {rb, rh};
  const char *msg = NULL;
  char scratch[64] __attribute__((aligned(64)));
  ok = run && run(dims, in, out, NULL, scratch, 0, pool, &msg) == 0;
  for (int i = 0; ok && i < N; i++) {
    float wb = mlc_round_bf16(x[i]), wh = mlc_round_f16(x[i]);
    bool nan = isnan(x[i]);
    if (nan ? !(isnan(rb[i]) && isnan(rh[i])) : memcmp(&rb[i], &wb, 4) || memcmp(&rh[i], &wh, 4))
      ok = false, snprintf(why, sizeof why, "x = 0x%08x: bf16 %a (want %a), f16 %a (want %a)", bits[i], rb[i], wb,
                           rh[i], wh);
  }
  char name[128];
  snprintf(name, sizeof name, "round_bf16 and round_f16 are round16.h's, bit for bit (cpu %s)", cpu);
  check_why(name, ok, why);
  llvm_jit_free(j);
  llvm_gen_free(g);
  arena_free(a);
}

int main(void) {
  MlcPool *pool = mlc_pool_new(4);
  test_round16(pool, "native");
  test_round16(pool, "x86-64");
  opts = backend_default_options();
  run_dir("tests/graph/ir", pool);
  run_dir("tests/graph/interp", pool);
  run_dir("tests/passes/autodiff", pool);
  run_text("checks", CHECKS, pool, true);
  test_variants(pool);
  test_finite(pool);
  test_vectorises(false);
  test_vectorises(true);
  test_shared_kernels();
  test_split();
  test_kir_text(pool);
  test_emit("native", BE_EMIT_OBJ, "o");
  test_emit("native", BE_EMIT_ASM, "s");
  test_emit("native", BE_EMIT_LLVM, "ll");
  test_emit("x86-64-v3", BE_EMIT_OBJ, "o");
  mlc_pool_free(pool);
  printf("%d passed, %d failed, %d skipped\n", npass, nfail, nskip);
  return nfail ? 1 : 0;
}
