// test_e2e_agree.c — the compiled program agrees with the reference
// interpreter, model by model.
//
// Usage: test_e2e_agree [--batch N] [--dim NAME=N] [--threads N,N..] [--winograd]
//        [--precision bf16|f16] [MODEL.model...]   (options: see main; run from
//        the repo root; default:
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

static bool agree(const void *got, const Tensor *want, const char *what, char *why, size_t n) {
  return agree_tol(got, want, what, why, n, 1e-4, "interpreter");
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

// Runs the compiled program on pool: in[] the arguments, st[] the state
// (updated in place), out[] the outputs; false with why on an error.
static bool run_compiled(KirEntryFn run, KirScratchFn scratch, int64_t *dims, void **in, void **out, void **st,
                         MlcPool *pool, char *why, size_t n) {
  void *sc = aligned_alloc(64, (size_t)((scratch(dims) + 127) / 64 * 64));
  const char *msg = NULL;
  bool ok = run(dims, in, out, st, sc, 777, pool, &msg) == 0;
  if (!ok) snprintf(why, n, "compiled program failed: %s", msg ? msg : "?");
  free(sc);
  return ok;
}

// The extra pools of --threads: the compiled program run on each gives the
// first run's bytes exactly (fixed reduction orders, kir.md "float sums").
static MlcPool *extra_pools[4];
static int nextra;

// Runs program p (graph function f) both ways on args and compares.
static void check_program(Model *m, const char *model, IrFunc *f, const KirProgram *p, Tensor **args,
                          MlcPool *pool) {
  char why[512] = "", sym[256];
  Tensor *ist[256], *outs[16] = {0};
  for (int i = 0; i < m->nstate; i++) ist[i] = interp_tensor_clone(m->state[i]);
  InterpParams ip = {m->nstate, m->paths, ist, 777};
  DiagSink d;
  diag_init(&d, m->u.arena);
  bool ok = interp_run(m->u.lr.module, f, INTERP_F32, args, f->params.len, &ip, outs, &d) == 0;
  if (!ok) snprintf(why, sizeof why, "%s", VEC_AT(d.diags, Diag, 0)->msg);
  snprintf(sym, sizeof sym, "mlc_t_%s", p->name);
  KirEntryFn run = ok ? (KirEntryFn)(uintptr_t)llvm_jit_lookup(m->jit, sym, why, sizeof why) : NULL;
  snprintf(sym, sizeof sym, "mlc_t_%s_scratch_bytes", p->name);
  KirScratchFn scratch = ok ? (KirScratchFn)(uintptr_t)llvm_jit_lookup(m->jit, sym, why, sizeof why) : NULL;
  ok = run && scratch;
  int64_t dims[16 * MLC_MAX_RANK] = {0};
  void *in[16] = {0}, *out[16] = {0}, *st[256] = {0}, *out2[16] = {0}, *st2[256] = {0};
  size_t outsz[16] = {0}, stsz[256] = {0};
  int stidx[256], nst = 0;
  for (int i = 0; ok && i < f->params.len; i++) {
    for (int d = 0; d < args[i]->rank; d++) dims[i * MLC_MAX_RANK + d] = args[i]->dims[d];
    in[i] = to_bytes(args[i]);
  }
  for (int i = 0; ok && i < f->outputs.len; i++) {
    outsz[i] = (size_t)outs[i]->numel * (size_t)dtype_size(outs[i]->dtype);
    out[i] = calloc((size_t)outs[i]->numel, 8), out2[i] = calloc((size_t)outs[i]->numel, 8);
  }
  for (int b = 0; ok && b < p->bufs.len; b++) {
    KirBuf *kb = kir_buf(p, b);
    if (kb->kind != KBUF_STATE) continue;
    stidx[nst] = state_index(m, kb->path);
    st[nst] = to_bytes(m->state[stidx[nst]]);
    stsz[nst] = (size_t)m->state[stidx[nst]]->numel * (size_t)dtype_size(m->state[stidx[nst]]->dtype);
    nst++;
  }
  if (ok) ok = run_compiled(run, scratch, dims, in, out, st, pool, why, sizeof why);
  for (int i = 0; ok && i < f->outputs.len; i++)
    ok = agree(out[i], outs[i], arena_printf(m->u.arena, "output %d", i), why, sizeof why);
  for (int i = 0; ok && i < nst; i++) ok = agree(st[i], ist[stidx[i]], m->paths[stidx[i]], why, sizeof why);
  for (int t = 0; ok && t < nextra; t++) { // the same bytes on every pool
    for (int i = 0; i < nst; i++) free(st2[i]), st2[i] = to_bytes(m->state[stidx[i]]);
    ok = run_compiled(run, scratch, dims, in, out2, st2, extra_pools[t], why, sizeof why);
    for (int i = 0; ok && i < f->outputs.len; i++)
      if (memcmp(out[i], out2[i], outsz[i])) {
        ok = false;
        snprintf(why, sizeof why, "output %d differs on %d threads from 2 threads", i, mlc_pool_threads(extra_pools[t]));
      }
    for (int i = 0; ok && i < nst; i++)
      if (memcmp(st[i], st2[i], stsz[i])) {
        ok = false;
        snprintf(why, sizeof why, "%s differs on %d threads from 2 threads", m->paths[stidx[i]],
                 mlc_pool_threads(extra_pools[t]));
      }
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
  for (int i = 0; i < 16; i++) free(in[i]), free(out[i]), free(out2[i]), interp_tensor_free(outs[i]);
  for (int i = 0; i < nst; i++) free(st[i]), free(st2[i]);
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

// Options for models named on the command line (the fuzz tests'):
// the batch size, and whether a model none of whose convolutions takes the
// Winograd path is a failure (the defaults') or a note (a random model's).
static int64_t opt_batch = 3;
static bool opt_winograd_optional;
// --dim NAME=V: the symbolic dim NAME of the arguments is V (not the batch)
static const char *opt_dim_name[8];
static int64_t opt_dim_value[8];
static int nopt_dim;

// make() with every symbolic dim named by --dim at its value, the others b.
static Tensor *make_arg(const Type *t, int64_t b, int64_t classes, double scale) {
  Type u = *t;
  Dim *dims[INTERP_MAX_RANK];
  Arena *a = arena_new();
  for (int i = 0; i < t->rank; i++) {
    const Sym *s = dim_as_sym(t->dims[i]);
    dims[i] = (Dim *)t->dims[i];
    for (int j = 0; s && j < nopt_dim; j++)
      if (!strcmp(s->name, opt_dim_name[j])) dims[i] = dim_const(a, opt_dim_value[j]);
  }
  u.dims = dims;
  Tensor *x = make(&u, b, classes, scale);
  arena_free(a);
  return x;
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
    if (!any && opt_winograd_optional) {
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
  int64_t B = opt_batch;
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
    args[i] = make_arg(VEC_AT(step->params, IrNode, i)->type, B, classes, 1.0);
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (no_fuse) name = arena_printf(a, "%s (--no-fuse)", name);
  if (prec != DT_F32) name = arena_printf(a, "%s (--precision %s)", name, dtype_name(prec));
  if (winograd) name = arena_printf(a, "%s (--conv winograd)", name);
  check_program(&m, name, step, m.u.k_train, args, pool);
  check_program(&m, name, m.u.eval, m.u.k_eval, args, pool);
  check_program(&m, name, pred, m.u.k_predict, args, pool);
  if (prec == DT_BF16 && !opt_winograd_optional) check_rounds(&m, name, args);
  for (int i = 0; i < 16; i++) interp_tensor_free(args[i]);
  for (int i = 0; i < m.nstate; i++) interp_tensor_free(m.state[i]);
  llvm_jit_free(m.jit);
  llvm_gen_free(g);
  arena_free(a);
}

static int usage(void) {
  fprintf(stderr, "usage: test_e2e_agree [--batch N] [--dim NAME=N] [--threads N,N..] [--winograd] [--precision bf16|f16] "
                  "[MODEL.model...]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *defaults[] = {"examples/fashion_mlp.model", "examples/fashion_cnn.model",
                            "examples/regression.model", "examples/frozen_ste.model",
                            "tests/e2e/accum.model", "tests/e2e/tiny_gpt.model",
                            "tests/e2e/two_heads.model", "tests/e2e/masked.model",
                            "tests/e2e/denoise.model", "tests/e2e/noise_draws.model",
                            "tests/e2e/scaler.model", "tests/e2e/conv_zoo.model"};
  const char *rounded[] = {"examples/fashion_mlp.model", "examples/fashion_cnn.model", "tests/e2e/tiny_gpt.model"};
  // options (for models named on the command line): --batch N, the batch
  // size (default 3); --threads 1,3: the compiled programs also run on pools
  // of these sizes and must give the 2-thread run's bytes exactly;
  // --dim H=13: the arguments' symbolic dim H is 13 (every other one is
  // the batch size); --winograd: each model once more with --conv winograd, fused and not (a
  // model none of whose convolutions qualifies is noted, not failed);
  // --precision bf16|f16: once more, fused, at that precision.
  bool winograd = false;
  DType prec = DT_F32;
  int argi = 1;
  for (; argi < argc && !strncmp(argv[argi], "--", 2); argi++) {
    const char *o = argv[argi], *v = argi + 1 < argc ? argv[argi + 1] : NULL;
    if (!strcmp(o, "--winograd")) winograd = true;
    else if (!strcmp(o, "--batch") && v) opt_batch = atoll(v), argi++;
    else if (!strcmp(o, "--dim") && v && strchr(v, '=') && nopt_dim < 8) {
      opt_dim_name[nopt_dim] = strndup(v, (size_t)(strchr(v, '=') - v));
      opt_dim_value[nopt_dim++] = atoll(strchr(v, '=') + 1), argi++;
    }
    else if (!strcmp(o, "--precision") && v && (!strcmp(v, "bf16") || !strcmp(v, "f16")))
      prec = strcmp(v, "bf16") ? DT_F16 : DT_BF16, argi++;
    else if (!strcmp(o, "--threads") && v) {
      for (const char *c = v; *c && nextra < 4; c = strchr(c, ',') ? strchr(c, ',') + 1 : c + strlen(c))
        extra_pools[nextra++] = mlc_pool_new(atoi(c));
      argi++;
    } else return usage();
  }
  if (opt_batch < 1) return usage();
  opt_winograd_optional = true;
  MlcPool *pool = mlc_pool_new(2);
  if (argi < argc) {
    for (int i = argi; i < argc; i++) {
      for (int nf = 0; nf < 2; nf++) check_model(argv[i], pool, nf, DT_F32, false);
      for (int nf = 0; nf < 2 && winograd; nf++) check_model(argv[i], pool, nf, DT_F32, true);
      if (prec != DT_F32) check_model(argv[i], pool, false, prec, false);
    }
  } else {
    opt_winograd_optional = false;
    for (int nf = 0; nf < 2; nf++) // fused (what mlc build makes), then --no-fuse
      for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) check_model(defaults[i], pool, nf, DT_F32, false);
    for (int p = 0; p < 2; p++) // --precision bf16, f16
      for (size_t i = 0; i < sizeof rounded / sizeof rounded[0]; i++)
        check_model(rounded[i], pool, false, p ? DT_F16 : DT_BF16, false);
    for (int nf = 0; nf < 2; nf++) // --conv winograd, fused and not
      check_model("examples/fashion_cnn.model", pool, nf, DT_F32, true);
  }
  mlc_pool_free(pool);
  for (int t = 0; t < nextra; t++) mlc_pool_free(extra_pools[t]);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
