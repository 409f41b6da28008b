// test_e2e_agree.c — the compiled program agrees with the reference
// interpreter, model by model.
//
// Usage: test_e2e_agree [options] [MODEL.model...]   (options: see main; run
//        from the repo root; default:
//        the fashion_mlp, fashion_cnn, regression and frozen_ste examples,
//        tests/e2e/accum.model: dropout, accumulation, clipping, AdamW, cosine,
//        and tests/e2e/tiny_gpt.model: a one-layer transformer over [B, T]
//        token windows, the shape of examples/char_transformer.model, whose
//        own build is too slow for the suite, and tests/e2e/two_heads.model:
//        two heads, a loss with auxiliary results among train_step's, and
//        tests/e2e/masked.model: cross_entropy with ignore_index and label
//        smoothing, a per-element mse under a mask, and
//        tests/e2e/denoise.model: rand and randn in train_step, drawn alike,
//        and tests/e2e/noise_draws.model, whose SGD step stores the draws, and
//        tests/e2e/scaler.model: dynamic loss scaling, its scale 1024 and
//        growth tracker at the step before a growth, and
//        tests/e2e/conv_zoo.model: strided, dilated, grouped and pointwise
//        convolutions, batch norm, overlapping and padded pooling)
//
// For each model, the `mlc build` pipeline (pipeline.h: front end, lowering,
// autodiff, train step, kernel IR scheduled for the CPU and memory-planned,
// each program checked by kir_verify) runs in-process; its train_step, eval and
// predict programs are compiled by the LLVM backend exactly as `mlc build`
// compiles them (O3, host CPU, threads on, prefix mlc_t_) and run by ORC
// LLJIT on one random batch and random state (the optimizer's step counter
// past 0, so momentum and bias corrections are live). The graph interpreter
// (interp_run, f32 mode) runs the same functions on the same state and batch.
// Each model is built twice: fused (the default) and with --no-fuse; then
// fashion_mlp, fashion_cnn and tiny_gpt once more at --precision bf16 and
// f16 (every matmul and conv rounds its operands: the interpreter through
// kernels/gemm_ref.h, the kernels in the library's packing or the nest's
// round_bf16/round_f16). At bf16 eval's results must also differ from the
// f32 module's by more than the tolerance somewhere, so a precision that
// did nothing would fail (f16's 11 bits move tiny_gpt's small outputs by
// less than the tolerance; the kernel tests and tests/parity see f16's
// rounding).
// fashion_cnn once more with --conv winograd (fused and --no-fuse): its
// conv2 (32 input channels) then calls the library's F(2x2, 3x3); the
// interpreter's direct sums agree within the tolerance below (the measured
// error is ~1e-6 relative, docs/design/kernels.md "Winograd"), and predict's
// outputs equal kir_run's bit for bit, which runs kernels/winograd_ref.h for
// the flagged call (the test fails when no call carries the flag).
// Every output, and every state tensor train_step stores, must agree:
// |compiled - reference| <= 1e-4 * max(1, |reference|). The compiled code
// runs on a 2-thread mlc_rt pool.
//
// Options (for models named on the command line; tests/fuzz_dense/run.py):
// --batch N and --seq N size the inputs (dim 0 of a symbolic input is the
// batch, N, default 3; every other symbol --seq, default the batch);
// --threads 1,2,3 runs train_step --steps K times (default 3, the state
// carried from step to step), then eval and predict, on a pool of each
// count and requires every output and the final state to be the same bits
// as at the first count; --rows requires predict at batch 1, row by row, to
// give the same bits as each row of predict at the batch; --fused-only
// skips the --no-fuse build; --tol X replaces the 1e-4 below.
//
// Prints "[PASS] model: program" / "[FAIL] model: program: why" and a total;
// exits 1 on any failure.
#include "backend/llvm/llvm.h"
#include "driver/pipeline.h"
#include "graph/interp.h"
#include "kernel/schedule.h"
#include "tests/backend/llvm/jit_runtime.h"
#include "tests/backend/llvm/tensor_bytes.h"
#include "mlc_rt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int npass, nfail;

static void report(const char *model, const char *prog, bool ok, const char *why) {
  if (ok) printf("[PASS] %s: %s\n", model, prog);
  else printf("[FAIL] %s: %s: %s\n", model, prog, why);
  ok ? npass++ : nfail++;
}

static bool agree_tol(const void *got, const Tensor *want, const char *what, char *why, size_t n, double tol,
                      const char *ref) {
  for (int64_t e = 0; e < want->numel; e++) {
    double g = elem(got, want->dtype, e), w = want->data[e];
    if (isnan(g) && isnan(w)) continue; // both NaN (batch norm's variance of one value per channel)
    if (!(fabs(g - w) <= tol * fmax(1, fabs(w)))) {
      snprintf(why, n, "%s[%lld]: compiled %.9g, %s %.9g", what, (long long)e, g, ref, w);
      return false;
    }
  }
  return true;
}

// The tolerance against the interpreter (--tol; tests/fuzz_dense/run.py
// widens it for a model at bf16 or f16, whose operand rounding turns a
// 1-ulp difference of libm's tanhf against the interpreter's tanh into one
// of 2^-9 relative in an operand).
static double tol_interp = 1e-4;

static bool agree(const void *got, const Tensor *want, const char *what, char *why, size_t n) {
  return agree_tol(got, want, what, why, n, tol_interp, "interpreter");
}

typedef struct Model {
  BuildUnit u;
  bool exact_predict; // --conv winograd: predict also bit for bit against kir_run (winograd_ref.h)
  LlvmJit *jit;
  int nstate;
  const char *paths[256];
  Tensor *state[256];
} Model;

static int state_index(Model *m, const char *path) {
  for (int i = 0; i < m->nstate; i++)
    if (!strcmp(m->paths[i], path)) return i;
  return -1;
}

// The element count of type t once f's parameters' symbols take the
// sizes of args (-1 where a dim stays unknown).
static int64_t bound_numel(Arena *a, const IrFunc *f, Tensor **args, const Type *t) {
  DimSubst s = {0};
  for (int i = 0; i < f->params.len; i++) {
    const Type *pt = VEC_AT(f->params, IrNode, i)->type;
    for (int d = 0; d < pt->rank; d++) {
      Sym *y = dim_as_sym(pt->dims[d]);
      if (y && !subst_lookup(&s, y)) subst_bind(a, &s, y, dim_const(a, args[i]->dims[d]));
    }
  }
  int64_t n = 1, v;
  for (int d = 0; d < t->rank; d++) {
    if (!dim_is_const(dim_subst(a, t->dims[d], &s), &v)) return -1;
    n *= v;
  }
  return n;
}

// Runs compiled program p (graph function f) on args and the state bytes sb
// (by m->paths index, updated in place): out[i] malloc'd with outn[i]
// elements of output i's dtype. False with why on failure.
static bool run_compiled(Model *m, IrFunc *f, const KirProgram *p, Tensor **args, void **sb, MlcPool *pool,
                         void **out, int64_t *outn, char *why, size_t n) {
  char sym[256];
  snprintf(sym, sizeof sym, "mlc_t_%s", p->name);
  KirEntryFn run = (KirEntryFn)(uintptr_t)llvm_jit_lookup(m->jit, sym, why, n);
  snprintf(sym, sizeof sym, "mlc_t_%s_scratch_bytes", p->name);
  KirScratchFn scratch = (KirScratchFn)(uintptr_t)llvm_jit_lookup(m->jit, sym, why, n);
  if (!run || !scratch) return false;
  int64_t dims[16 * MLC_MAX_RANK] = {0};
  void *in[16] = {0}, *st[256] = {0};
  int nst = 0;
  bool ok = true;
  for (int i = 0; i < f->params.len; i++) {
    for (int d = 0; d < args[i]->rank; d++) dims[i * MLC_MAX_RANK + d] = args[i]->dims[d];
    in[i] = to_bytes(args[i]);
  }
  for (int i = 0; ok && i < f->outputs.len; i++) {
    const Type *t = VEC_AT(f->outputs, IrNode, i)->type;
    outn[i] = bound_numel(m->u.arena, f, args, t);
    if (outn[i] < 0) ok = false, snprintf(why, n, "output %d: a size the inputs do not fix", i);
    else out[i] = calloc((size_t)(outn[i] ? outn[i] : 1), (size_t)dtype_size(t->dtype));
  }
  for (int b = 0; ok && b < p->bufs.len; b++) {
    KirBuf *kb = kir_buf(p, b);
    if (kb->kind == KBUF_STATE) st[nst++] = sb[state_index(m, kb->path)];
  }
  if (ok) {
    void *sc = aligned_alloc(64, (size_t)((scratch(dims) + 127) / 64 * 64));
    const char *msg = NULL;
    ok = run(dims, in, out, st, sc, 777, pool, &msg) == 0;
    if (!ok) snprintf(why, n, "compiled program failed: %s", msg ? msg : "?");
    free(sc);
  }
  for (int i = 0; i < 16; i++) free(in[i]);
  return ok;
}

static void **state_bytes(Model *m) {
  void **sb = calloc(256, sizeof *sb);
  for (int i = 0; i < m->nstate; i++) sb[i] = to_bytes(m->state[i]);
  return sb;
}

static void free_ptrs(void **p, int n) {
  for (int i = 0; i < n; i++) free(p[i]);
}

// Runs program p (graph function f) both ways on args and compares.
static void check_program(Model *m, const char *model, IrFunc *f, const KirProgram *p, Tensor **args,
                          MlcPool *pool) {
  char why[512] = "";
  Tensor *ist[256], *outs[16] = {0};
  for (int i = 0; i < m->nstate; i++) ist[i] = interp_tensor_clone(m->state[i]);
  InterpParams ip = {m->nstate, m->paths, ist, 777};
  DiagSink d;
  diag_init(&d, m->u.arena);
  bool ok = interp_run(m->u.lr.module, f, INTERP_F32, args, f->params.len, &ip, outs, &d) == 0;
  if (!ok) snprintf(why, sizeof why, "%s", VEC_AT(d.diags, Diag, 0)->msg);
  void *out[16] = {0}, **sb = state_bytes(m);
  int64_t outn[16];
  ok = ok && run_compiled(m, f, p, args, sb, pool, out, outn, why, sizeof why);
  for (int i = 0; ok && i < f->outputs.len; i++) {
    ok = outn[i] == outs[i]->numel;
    if (!ok) snprintf(why, sizeof why, "output %d: %lld elements, the interpreter's %lld", i, (long long)outn[i],
                      (long long)outs[i]->numel);
    ok = ok && agree(out[i], outs[i], arena_printf(m->u.arena, "output %d", i), why, sizeof why);
  }
  for (int b = 0; ok && b < p->bufs.len; b++) { // every state tensor the program touches
    KirBuf *kb = kir_buf(p, b);
    int s = kb->kind == KBUF_STATE ? state_index(m, kb->path) : -1;
    if (s >= 0) ok = agree(sb[s], ist[s], m->paths[s], why, sizeof why);
  }
  if (ok && m->exact_predict && p == m->u.k_predict) { // the kernel-IR evaluator runs the calls' order
    Tensor *kouts[16] = {0}, *kst[256];
    for (int i = 0; i < m->nstate; i++) kst[i] = interp_tensor_clone(m->state[i]);
    InterpParams kp = {m->nstate, m->paths, kst, 777};
    ok = kir_run(p, INTERP_F32, args, f->params.len, &kp, kouts, why, sizeof why) == 0;
    for (int i = 0; ok && i < f->outputs.len; i++)
      ok = agree_tol(out[i], kouts[i], arena_printf(m->u.arena, "output %d", i), why, sizeof why, 0, "kir_run");
    for (int i = 0; i < f->outputs.len; i++) interp_tensor_free(kouts[i]);
    for (int i = 0; i < m->nstate; i++) interp_tensor_free(kst[i]);
  }
  report(model, p->name, ok, why);
  for (int i = 0; i < 16; i++) free(out[i]), interp_tensor_free(outs[i]);
  free_ptrs(sb, m->nstate), free(sb);
  for (int i = 0; i < m->nstate; i++) interp_tensor_free(ist[i]);
}

// The module at f32: every precision attribute removed, in place.
static void strip_precision(IrModule *mod) {
  for (int i = 0; i < mod->funcs.len; i++) {
    IrFunc *f = VEC_AT(mod->funcs, IrFunc, i);
    for (int j = 0; j < f->nodes.len; j++) {
      IrAttrs *as = &VEC_AT(f->nodes, IrNode, j)->attrs;
      for (int k = 0; k < as->n; k++)
        if (as->a[k].key == IRA_PRECISION) memmove(&as->a[k], &as->a[k + 1], sizeof as->a[0] * (size_t)(--as->n - k));
    }
  }
}

// eval's results (the loss, the forward output) at the module's precision
// and at f32: some element differs by more than agree()'s tolerance (run
// last: it strips the module).
static void check_rounds(Model *m, const char *model, Tensor **args) {
  Tensor *outs[2][16] = {{0}};
  bool ok = true;
  char why[256] = "";
  for (int pass = 0; pass < 2 && ok; pass++) {
    if (pass) strip_precision(m->u.lr.module);
    Tensor *ist[256];
    for (int i = 0; i < m->nstate; i++) ist[i] = interp_tensor_clone(m->state[i]);
    InterpParams ip = {m->nstate, m->paths, ist, 777};
    DiagSink d;
    diag_init(&d, m->u.arena);
    ok = interp_run(m->u.lr.module, m->u.eval, INTERP_F32, args, m->u.eval->params.len, &ip, outs[pass], &d) == 0;
    for (int i = 0; i < m->nstate; i++) interp_tensor_free(ist[i]);
  }
  double worst = 0, p = 0, f = 0;
  for (int o = 0; ok && o < m->u.eval->outputs.len; o++)
    for (int64_t e = 0; e < outs[0][o]->numel; e++) {
      double x = outs[0][o]->data[e], y = outs[1][o]->data[e], r = fabs(x - y) / fmax(1, fabs(y));
      if (r > worst) worst = r, p = x, f = y;
    }
  ok = ok && worst > 1e-4;
  snprintf(why, sizeof why, "largest difference %.3g: %.9g at this precision, %.9g at f32", worst, p, f);
  report(model, "the precision changes eval's results", ok, why);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < 16; i++) interp_tensor_free(outs[pass][i]);
}

// Options for models given on the command line (the fuzz tests' checks;
// tests/fuzz_dense): the batch and the other symbolic sizes, the thread
// counts whose compiled results must be the same bits, the steps of that run,
// and the batch-1 predict check; tests/fuzz_conv: named sizes (--dim H=13)
// and models that may have no convolution Winograd takes.
typedef struct Opts {
  int64_t batch, seq;   // dim 0 of a symbolic input is batch; other symbols seq
  int threads[4], nthr; // compiled at each: train_step x steps, eval, predict, same bits
  int steps;
  bool rows;            // predict at batch 1, row by row, equals predict at batch, bit for bit
  bool fused_only;
  bool named;           // models named on the command line: --winograd notes a model
                        // none of whose convolutions qualifies, and no check_rounds
  const char *dim_name[8]; // --dim NAME=V: the symbolic dim NAME is V
  int64_t dim_value[8];
  int ndim;
} Opts;

static Opts opts = {.batch = 3, .seq = -1, .steps = 3};

// The size --dim gives symbol y, or -1.
static int64_t named_size(const Sym *y) {
  for (int j = 0; y && j < opts.ndim; j++)
    if (!strcmp(y->name, opts.dim_name[j])) return opts.dim_value[j];
  return -1;
}

// make() with a symbol --dim names at its size, else dim 0 (when symbolic)
// of size b and other symbols of size seq.
static Tensor *make_sized(const Type *t, int64_t b, int64_t seq, int64_t classes, double scale) {
  Type u = *t;
  Dim *dims[MLC_MAX_RANK];
  Arena *a = arena_new();
  for (int i = 0; i < t->rank; i++) {
    int64_t v, named = named_size(dim_as_sym(t->dims[i]));
    dims[i] = dim_is_const(t->dims[i], &v) ? t->dims[i] : dim_const(a, named >= 0 ? named : i == 0 ? b : seq);
  }
  u.dims = dims;
  Tensor *x = make(&u, b, classes, scale);
  arena_free(a);
  return x;
}

// Bytes of n elements of dtype dt equal.
static bool same_bits(const void *x, const void *y, int64_t n, DType dt, const char *what, char *why, size_t wn) {
  size_t sz = (size_t)dtype_size(dt);
  for (int64_t e = 0; e < n; e++)
    if (memcmp((const char *)x + e * sz, (const char *)y + e * sz, sz)) {
      snprintf(why, wn, "%s[%lld]: %.9g against %.9g", what, (long long)e, elem(x, dt, e), elem(y, dt, e));
      return false;
    }
  return true;
}

// train_step opts.steps times (its state carried from step to step), then
// eval and predict, at each of opts.threads: every output of every call and
// the final state the same bits as at the first count.
static void check_threads(Model *m, const char *model, Tensor **args) {
  IrFunc *fs[3] = {m->u.train_step, m->u.eval, m->u.predict};
  const KirProgram *ps[3] = {m->u.k_train, m->u.k_eval, m->u.k_predict};
  int ncalls = opts.steps + 2;
  void **first = NULL, **firstsb = NULL;
  char why[512] = "";
  bool ok = true;
  for (int t = 0; ok && t < opts.nthr; t++) {
    MlcPool *pool = mlc_pool_new(opts.threads[t]);
    void **sb = state_bytes(m), **outs = calloc((size_t)ncalls * 16, sizeof *outs);
    int64_t outn[16];
    for (int c = 0; ok && c < ncalls; c++) {
      int k = c < opts.steps ? 0 : c - opts.steps + 1;
      ok = run_compiled(m, fs[k], ps[k], args, sb, pool, outs + c * 16, outn, why, sizeof why);
      for (int i = 0; ok && first && i < fs[k]->outputs.len; i++)
        ok = same_bits(outs[c * 16 + i], first[c * 16 + i], outn[i], VEC_AT(fs[k]->outputs, IrNode, i)->type->dtype,
                       arena_printf(m->u.arena, "%d threads: call %d (%s) output %d", opts.threads[t], c,
                                    ps[k]->name, i),
                       why, sizeof why);
    }
    for (int i = 0; ok && first && i < m->nstate; i++)
      ok = same_bits(sb[i], firstsb[i], m->state[i]->numel, m->state[i]->dtype,
                     arena_printf(m->u.arena, "%d threads: final %s", opts.threads[t], m->paths[i]), why, sizeof why);
    mlc_pool_free(pool);
    if (!first) {
      first = outs, firstsb = sb;
      continue;
    }
    free_ptrs(outs, ncalls * 16), free(outs);
    free_ptrs(sb, m->nstate), free(sb);
  }
  if (first) free_ptrs(first, ncalls * 16), free(first), free_ptrs(firstsb, m->nstate), free(firstsb);
  char *what = arena_printf(m->u.arena, "%d steps, eval, predict: the same bits at", opts.steps);
  for (int t = 0; t < opts.nthr; t++) what = arena_printf(m->u.arena, "%s %d", what, opts.threads[t]);
  report(model, arena_printf(m->u.arena, "%s threads", what), ok, why);
}

// predict on args, then on each row of args alone (batch 1): each row's
// outputs the same bits as that row of the whole batch's.
static void check_rows(Model *m, const char *model, Tensor **args, MlcPool *pool) {
  IrFunc *f = m->u.predict;
  char why[512] = "";
  void **sb = state_bytes(m), *whole[16] = {0};
  int64_t n[16], B = opts.batch;
  bool ok = run_compiled(m, f, m->u.k_predict, args, sb, pool, whole, n, why, sizeof why);
  for (int64_t r = 0; ok && r < B; r++) {
    Tensor *rows[16] = {0};
    for (int i = 0; i < f->params.len; i++) {
      Tensor *x = args[i];
      int64_t d0, per = x->rank && x->dims[0] == B ? x->numel / B : x->numel;
      bool batched = x->rank && !dim_is_const(VEC_AT(f->params, IrNode, i)->type->dims[0], &d0);
      int64_t dims[INTERP_MAX_RANK];
      memcpy(dims, x->dims, sizeof dims[0] * (size_t)x->rank);
      if (batched) dims[0] = 1;
      rows[i] = interp_tensor_new(x->dtype, x->rank, dims);
      memcpy(rows[i]->data, x->data + (batched ? r * per : 0), sizeof x->data[0] * (size_t)rows[i]->numel);
    }
    void *one[16] = {0};
    int64_t n1[16];
    ok = run_compiled(m, f, m->u.k_predict, rows, sb, pool, one, n1, why, sizeof why);
    for (int i = 0; ok && i < f->outputs.len; i++) {
      DType dt = VEC_AT(f->outputs, IrNode, i)->type->dtype;
      ok = n1[i] * B == n[i];
      if (!ok) snprintf(why, sizeof why, "output %d: %lld elements at batch 1, %lld at %lld", i, (long long)n1[i],
                        (long long)n[i], (long long)B);
      ok = ok && same_bits(one[i], (char *)whole[i] + r * n1[i] * dtype_size(dt), n1[i], dt,
                           arena_printf(m->u.arena, "row %lld output %d at batch 1 (batch %lld's)", (long long)r, i,
                                        (long long)B),
                           why, sizeof why);
    }
    free_ptrs(one, 16);
    for (int i = 0; i < 16; i++) interp_tensor_free(rows[i]);
  }
  report(model, arena_printf(m->u.arena, "predict at batch 1 row by row = at batch %lld", (long long)B), ok, why);
  free_ptrs(whole, 16), free_ptrs(sb, m->nstate), free(sb);
}

static void check_model(const char *path, MlcPool *pool, bool no_fuse, DType prec, bool winograd) {
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  Model m = {0};
  char err[512] = "";
  Pipeline P;
  pipeline_init(&P, a, &d, &(PipelineOptions){.path = path, .cname = "t", .no_fuse = no_fuse,
                                               .have_precision = prec != DT_F32, .precision = prec,
                                               .conv_winograd = winograd});
  bool ok = pipeline_run(&P, STAGE_MEMPLAN);
  m.u = P.u;
  m.exact_predict = winograd;
  if (ok && winograd) { // the option must reach a call, or the run below proves nothing
    bool any = false;
    for (int j = 0; m.u.k_predict && j < m.u.k_predict->kernels.len; j++)
      any |= kir_kernel_winograd(VEC_AT(m.u.k_predict->kernels, KirKernel, j));
    if (!any && opts.named) {
      printf("[NOTE] %s (--conv winograd): no convolution takes the Winograd path\n", path);
      arena_free(a);
      return;
    }
    if (!any) {
      report(path, "--conv winograd", false, "no convolution of predict takes the Winograd path");
      arena_free(a);
      return;
    }
  }
  diag_print(&d, stderr);
  // the programs as `mlc build` compiles them: scheduled for the CPU, planned
  const KirProgram *all[5] = {m.u.k_train, m.u.k_eval, m.u.k_predict, m.u.k_train_checked, m.u.k_plateau};
  for (int i = 0; ok && i < 5; i++) {
    if (!all[i]) continue;
    ok = all[i]->target && all[i]->scratch && kir_verify(all[i], &d);
    if (!ok) diag_print(&d, stderr), snprintf(err, sizeof err, "%s does not verify as scheduled and planned", all[i]->name);
  }
  BackendOptions bo = backend_default_options();
  bo.prefix = "mlc_t_";
  LlvmGen *g = ok ? llvm_gen_new(&bo, err, sizeof err) : NULL;
  const KirProgram *ps[3] = {m.u.k_train, m.u.k_eval, m.u.k_predict};
  for (int i = 0; g && ok && i < 3; i++) ok = llvm_gen_add(g, ps[i], err, sizeof err) == 0;
  if (ok && g) m.jit = llvm_jit_new(g, jit_runtime, JIT_RUNTIME_N, err, sizeof err);
  if (!ok || !m.jit) {
    report(path, "build", false, err[0] ? err : "the pipeline failed");
    llvm_gen_free(g);
    arena_free(a);
    return;
  }
  IrModule *mod = m.u.lr.module;
  IrFunc *pred = m.u.predict;
  const Type *ot = VEC_AT(pred->outputs, IrNode, 0)->type;
  int64_t classes = 2;
  dim_is_const(ot->dims[ot->rank - 1], &classes);
  int64_t B = opts.batch, seq = opts.seq < 0 ? B : opts.seq;
  m.nstate = mod->params.len;
  for (int i = 0; i < m.nstate; i++) {
    IrParam *p = VEC_AT(mod->params, IrParam, i);
    m.paths[i] = p->name;
    m.state[i] = make(p->type, 1, 1, 0.2);
    if (!strcmp(p->name, "opt.step")) m.state[i]->data[0] = 3;
    if (!strcmp(p->name, "opt.steps_per_epoch")) m.state[i]->data[0] = 10;
    if (!strcmp(p->name, "opt.total_steps")) m.state[i]->data[0] = 100;
    if (!strcmp(p->name, "opt.scaler.scale")) m.state[i]->data[0] = 1024;
    if (!strcmp(p->name, "opt.scaler.skipped")) m.state[i]->data[0] = 1;
    if (!strcmp(p->name, "opt.scaler.growth_tracker")) m.state[i]->data[0] = 2; // interval 3: grows
    if (strstr(p->name, "exp_avg_sq") || strstr(p->name, "running_var")) // Adam's second moment, a variance
      for (int64_t e = 0; e < m.state[i]->numel; e++) m.state[i]->data[e] = fabs(m.state[i]->data[e]);
  }
  // train_step takes the loss's arguments once per micro-batch (accumulate)
  IrFunc *step = m.u.train_step;
  Tensor *args[16] = {0};
  for (int i = 0; i < step->params.len && i < 16; i++)
    args[i] = make_sized(VEC_AT(step->params, IrNode, i)->type, B, seq, classes, 1.0);
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (no_fuse) name = arena_printf(a, "%s (--no-fuse)", name);
  if (prec != DT_F32) name = arena_printf(a, "%s (--precision %s)", name, dtype_name(prec));
  if (winograd) name = arena_printf(a, "%s (--conv winograd)", name);
  check_program(&m, name, step, m.u.k_train, args, pool);
  check_program(&m, name, m.u.eval, m.u.k_eval, args, pool);
  check_program(&m, name, pred, m.u.k_predict, args, pool);
  if (opts.nthr > 1) check_threads(&m, name, args);
  if (opts.rows) check_rows(&m, name, args, pool);
  if (prec == DT_BF16 && !opts.named) check_rounds(&m, name, args);
  for (int i = 0; i < 16; i++) interp_tensor_free(args[i]);
  for (int i = 0; i < m.nstate; i++) interp_tensor_free(m.state[i]);
  llvm_jit_free(m.jit);
  llvm_gen_free(g);
  arena_free(a);
}

int main(int argc, char **argv) {
  const char *defaults[] = {"examples/fashion_mlp.model", "examples/fashion_cnn.model",
                            "examples/regression.model", "examples/frozen_ste.model",
                            "tests/e2e/accum.model", "tests/e2e/tiny_gpt.model",
                            "tests/e2e/two_heads.model", "tests/e2e/masked.model",
                            "tests/e2e/denoise.model", "tests/e2e/noise_draws.model",
                            "tests/e2e/scaler.model", "tests/e2e/conv_zoo.model"};
  const char *rounded[] = {"examples/fashion_mlp.model", "examples/fashion_cnn.model", "tests/e2e/tiny_gpt.model"};
  // --dim H=13: the arguments' symbolic dim H is 13; --winograd: each named
  // model once more with --conv winograd, fused and not; --precision
  // bf16|f16: once more, fused, at that precision.
  const char *files[256];
  int nfiles = 0;
  bool winograd = false;
  DType prec = DT_F32;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *eq = i + 1 < argc ? strchr(argv[i + 1], '=') : NULL;
    if (!strcmp(a, "--batch") && i + 1 < argc) opts.batch = atoll(argv[++i]);
    else if (!strcmp(a, "--dim") && eq && opts.ndim < 8) {
      opts.dim_name[opts.ndim] = strndup(argv[i + 1], (size_t)(eq - argv[i + 1]));
      opts.dim_value[opts.ndim++] = atoll(eq + 1), i++;
    } else if (!strcmp(a, "--winograd")) winograd = true;
    else if (!strcmp(a, "--precision") && i + 1 < argc && (!strcmp(argv[i + 1], "bf16") || !strcmp(argv[i + 1], "f16")))
      prec = strcmp(argv[++i], "bf16") ? DT_F16 : DT_BF16;
    else if (!strcmp(a, "--seq") && i + 1 < argc) opts.seq = atoll(argv[++i]);
    else if (!strcmp(a, "--steps") && i + 1 < argc) opts.steps = atoi(argv[++i]);
    else if (!strcmp(a, "--rows")) opts.rows = true;
    else if (!strcmp(a, "--tol") && i + 1 < argc) tol_interp = atof(argv[++i]);
    else if (!strcmp(a, "--fused-only")) opts.fused_only = true;
    else if (!strcmp(a, "--threads") && i + 1 < argc) // a list: 1,2,3
      for (char *p = argv[++i]; *p && opts.nthr < 4; p += *p == ',')
        opts.threads[opts.nthr++] = (int)strtol(p, &p, 10);
    else if (a[0] == '-' || nfiles == 256) {
      fprintf(stderr, "usage: test_e2e_agree [--batch N] [--seq N] [--dim NAME=N] [--threads 1,2,3] [--steps K] "
                      "[--rows] [--fused-only] [--tol X] [--winograd] [--precision bf16|f16] [MODEL.model...]\n");
      return 2;
    } else files[nfiles++] = a;
  }
  if (opts.batch < 1 || opts.steps < 1) {
    fprintf(stderr, "test_e2e_agree: --batch and --steps must be at least 1\n");
    return 2;
  }
  opts.named = nfiles > 0;
  MlcPool *pool = mlc_pool_new(2);
  for (int nf = 0; nf < 2 - opts.fused_only; nf++) // fused (what mlc build makes), then --no-fuse
    if (nfiles)
      for (int i = 0; i < nfiles; i++) check_model(files[i], pool, nf, DT_F32, false);
    else
      for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) check_model(defaults[i], pool, nf, DT_F32, false);
  for (int p = 0; p < 2 && !nfiles; p++) // --precision bf16, f16
    for (size_t i = 0; i < sizeof rounded / sizeof rounded[0]; i++)
      check_model(rounded[i], pool, false, p ? DT_F16 : DT_BF16, false);
  for (int nf = 0; nf < 2 && !nfiles; nf++) // --conv winograd, fused and not
    check_model("examples/fashion_cnn.model", pool, nf, DT_F32, true);
  for (int i = 0; i < nfiles; i++) { // the named models' --winograd and --precision
    for (int nf = 0; nf < 2 && winograd; nf++) check_model(files[i], pool, nf, DT_F32, true);
    if (prec != DT_F32) check_model(files[i], pool, false, prec, false);
  }
  mlc_pool_free(pool);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
