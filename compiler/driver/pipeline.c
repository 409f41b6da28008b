// pipeline.c — the stage table (stages.def) and every stage up to codegen;
// the link stage is in link.c.
//
// Input: PipelineOptions (the .model file, the model, what to make). Each
// stage reads what the ones before it left in the Pipeline and adds its own
// output: front the checked program and the recipe, lower/autodiff/optim
// the graph IR module (BuildUnit.lr.module), kir the kernel IR programs,
// glue the C source, codegen the LLVM module. pipeline_run runs them in
// table order, so every caller (`mlc build --emit STAGE`, a full build,
// `mlc run`) sees the same IR: what `--emit ir` prints is what is compiled.
#include "pipeline_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cuda/cuda_gen.h"
#include "backend/llvm/llvm.h"
#include "kernel/memplan.h"
#include "kernel/schedule.h"
#include "passes/autodiff.h"
#include "passes/optim.h"
#include "sema/frontend.h"

double pipeline_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// ---- front -------------------------------------------------------------------------------------
static bool run_front(Pipeline *P) {
  BuildUnit *u = &P->u;
  Sema *S = frontend_load_model(P->arena, P->diags, u->path, &u->model);
  if (!S) return false;
  P->sema = S;
  sema_recipe(S, u->model, &u->recipe);
  if (P->opt.have_precision) recipe_set_precision(&u->recipe, P->opt.precision); // --precision wins
  return true;
}

// ---- graph stages ------------------------------------------------------------------------------
static void print_graph(Pipeline *P, FILE *out) { ir_dump(P->u.lr.module, out, 0); }

static bool verify_graph(Pipeline *P, DiagSink *d) { return ir_verify(P->u.lr.module, d); }

static bool run_lower(Pipeline *P) {
  BuildUnit *u = &P->u;
  if (!lower_model(P->arena, P->diags, P->sema, u->model, &u->lr)) return false;
  // every function's products, eval's and predict's too (docs/design/precision.md)
  ir_module_set_precision(u->lr.module, (DType)u->recipe.precision);
  u->eval = u->lr.eval, u->predict = u->lr.predict;
  return true;
}

// loss_grad = ad_grad(loss); nothing to do for a model without a loss.
// With loss scaling also loss_grad_scaled, whose seed gradient is an
// argument (train_step passes the scale S: the backward pass of loss * S),
// while loss_grad stays the gradient itself (mlc run --entry loss_grad).
static bool run_autodiff(Pipeline *P) {
  BuildUnit *u = &P->u;
  if (!u->lr.loss) return true;
  P->grad = ad_grad(u->lr.module, u->lr.loss,
                    &(AdOptions){.name = "loss_grad", .diags = P->diags, .keep_outputs = true});
  if (P->grad && u->recipe.opt.loss_scale != LSCALE_NONE)
    P->grad_scaled = ad_grad(u->lr.module, u->lr.loss,
                             &(AdOptions){.name = "loss_grad_scaled", .diags = P->diags,
                                          .keep_outputs = true, .seed_arg = true});
  return P->grad != NULL && (u->recipe.opt.loss_scale == LSCALE_NONE || P->grad_scaled);
}

// The forward output inside train_step. Lowering recorded it inside loss
// (LowerResult.loss_out); train_step of one micro-batch recomputes loss's
// graph, so the same value is there, and rebuilding the value's cone in
// train_step finds it without adding nodes: pure nodes are hash-consed (an
// equal node is the existing one), arguments are train_step's by position,
// state reads are by path, and an impure node (dropout) is the node that
// carries its seed, which the first micro-batch keeps. Autodiff may have
// split a dropout into x * dropout_mask(x) (docs/design/ir.md: the same
// values); the multiply is then the image. Were some node of the cone not
// in train_step, the rebuild adds it: the value is still right.
static IrNode *seeded_node(IrFunc *f, int64_t seed) {
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    int64_t s;
    if ((ir_op_flags(n->op) & IRF_IMPURE) && ir_attr_int(&n->attrs, IRA_SEED, &s) && s == seed) return n;
  }
  return NULL;
}

static IrNode *image_of(IrFunc *step, IrNode *n, IrNode **in) {
  if (ir_op_class(n->op) == IRC_INPUT) return ir_state_ref(step, n->op, n->name, n->type, n->span);
  if (!(ir_op_flags(n->op) & IRF_IMPURE)) return ir_node(step, n->op, in, n->nin, &n->attrs, n->type, n->span);
  IrNode *m = seeded_node(step, ir_node_int(n, IRA_SEED));
  MLC_ASSERT(m && (m->op == n->op || (n->op == IR_DROPOUT && m->op == IR_DROPOUT_MASK)));
  if (m->op == n->op) return m;
  IrNode *xm[2] = {in[0], m};
  return ir_node(step, IR_MUL, xm, 2, NULL, n->type, n->span);
}

static IrNode *step_forward_output(IrFunc *step, IrFunc *loss, IrNode *out, Arena *a) {
  ir_number(loss);
  int np = loss->params.len, n = out->order + 1;
  bool *cone = arena_alloc(a, (size_t)(np + n));
  IrNode **img = arena_alloc(a, sizeof(IrNode *) * (size_t)(np + n));
  cone[np + out->order] = true;
  for (int i = n - 1; i >= 0; i--) {
    IrNode *x = VEC_AT(loss->nodes, IrNode, i);
    for (int j = 0; cone[np + i] && j < x->nin; j++) cone[np + x->in[j]->order] = true;
  }
  MLC_ASSERT(step->params.len == np);
  for (int i = 0; i < np; i++) img[i] = VEC_AT(step->params, IrNode, i);
  for (int i = 0; i < n; i++) {
    IrNode *x = VEC_AT(loss->nodes, IrNode, i), *in[16], **ins = in;
    if (!cone[np + i]) continue;
    if (x->nin > 16) ins = arena_alloc(a, sizeof(IrNode *) * (size_t)x->nin);
    for (int j = 0; j < x->nin; j++) ins[j] = img[np + x->in[j]->order];
    img[np + i] = image_of(step, x, ins);
  }
  return img[np + out->order];
}

// train_step (and plateau_update with a plateau schedule). With one
// micro-batch and a loss that calls forward, train_step also returns the
// forward output (its last result), so the program counts training accuracy
// without a second forward pass.
static bool run_optim(Pipeline *P) {
  BuildUnit *u = &P->u;
  IrModule *m = u->lr.module;
  if (!u->lr.loss) return true;
  IrFunc *grad = u->recipe.opt.loss_scale != LSCALE_NONE ? P->grad_scaled : P->grad;
  u->train_step = optim_build_step(m, u->lr.loss, grad, &u->recipe.opt);
  if (u->recipe.opt.sched == SCHED_PLATEAU)
    u->plateau = optim_build_plateau(m, &u->recipe.opt, VEC_AT(u->lr.loss->outputs, IrNode, 0)->type->dtype);
  if (u->recipe.opt.accumulate == 1 && u->lr.loss_out) {
    ir_return(u->train_step, step_forward_output(u->train_step, u->lr.loss, u->lr.loss_out, P->arena), NULL);
    ir_number(u->train_step);
    u->step_has_out = true;
  }
  return true;
}

// ---- kernel IR ---------------------------------------------------------------------------------
// The programs in the order they are printed and compiled.
static int kir_programs(const BuildUnit *u, const KirProgram **ps) {
  int n = 0;
  const KirProgram *all[] = {u->k_train, u->k_train_checked, u->k_eval, u->k_predict, u->k_plateau};
  for (int i = 0; i < 5; i++)
    if (all[i]) ps[n++] = all[i];
  return n;
}

// The gpu copies (--target cuda), in the same order.
static int gpu_programs(const BuildUnit *u, KirProgram **ps) {
  int n = 0;
  KirProgram *all[] = {u->g_train, u->g_train_checked, u->g_eval, u->g_predict, u->g_plateau};
  for (int i = 0; i < 5; i++)
    if (all[i]) ps[n++] = all[i];
  return n;
}

static void dump_programs(const KirProgram *const *ps, int n, FILE *out) {
  for (int i = 0; i < n; i++) {
    if (i) fputc('\n', out);
    kir_dump(ps[i], out);
  }
}

static bool verify_programs(const KirProgram *const *ps, int n, DiagSink *d) {
  bool ok = true;
  for (int i = 0; i < n; i++) ok &= kir_verify(ps[i], d);
  return ok;
}

// After schedule and memplan without the cpu target, the programs are the
// lowered ones: say where the scheduled ones are.
static void print_kir(Pipeline *P, FILE *out) {
  const KirProgram *ps[5];
  int n = kir_programs(&P->u, ps);
  if (!P->u.cpu && P->next > STAGE_SCHEDULE) {
    fputs("; no cpu target (--target cuda): the gpu programs are schedule-gpu's and memplan-gpu's\n", out);
    return;
  }
  dump_programs(ps, n, out);
}

static bool verify_kir(Pipeline *P, DiagSink *d) {
  const KirProgram *ps[5];
  return verify_programs(ps, kir_programs(&P->u, ps), d);
}

static void print_kir_gpu(Pipeline *P, FILE *out) {
  KirProgram *ps[5];
  int n = gpu_programs(&P->u, ps);
  if (!n) fputs("; no gpu target (--target cuda builds one)\n", out);
  dump_programs((const KirProgram *const *)ps, n, out);
}

static bool verify_kir_gpu(Pipeline *P, DiagSink *d) {
  KirProgram *ps[5];
  return verify_programs((const KirProgram *const *)ps, gpu_programs(&P->u, ps), d);
}

// FNV-1a 64 of the graph module's text: the structural hash checkpoints
// carry. Without the precision attributes: the state a module reads and
// writes does not depend on them, so a checkpoint of an f32 run resumes in
// a bf16 build and back.
void pipeline_module_hash(IrModule *m, char out[17]) {
  StrBuf b = {0};
  ir_print_module(&b, m, IR_PRINT_NO_PRECISION);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < b.len; i++) h = (h ^ (unsigned char)b.data[i]) * 0x100000001b3ull;
  sb_free(&b);
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static KirProgram *lower_program(Pipeline *P, IrFunc *f, KirLowerOptions *ko) {
  char err[512] = "";
  KirProgram *p = kir_lower_func_opts(P->arena, P->u.lr.module, f, ko, err, sizeof err);
  if (!p) diag_error(P->diags, f->span, "%s: %s", P->u.model, err);
  return p;
}

// train_step, its checked copy, eval, predict and plateau_update into out[5].
// cpu: the CPU's programs (KirLowerOptions.reduce_cols, line_lanes), else the GPU's.
static bool lower_set(Pipeline *P, KirProgram **out, bool cpu) {
  BuildUnit *u = &P->u;
  KirLowerOptions fo = {.fuse = !P->opt.no_fuse, .reduce_cols = cpu, .line_lanes = cpu};
  if (!(out[0] = lower_program(P, u->train_step, &fo))) return false;
  // under loss scaling the scaled gradients may overflow: a skipped step, not an error
  u->checked = (KirLowerOptions){.check_finite = true,
                                 .overflow_ok = u->recipe.opt.loss_scale != LSCALE_NONE ? "opt.scaler.scale" : NULL,
                                 .reduce_cols = cpu, .line_lanes = cpu};
  if (!(out[1] = lower_program(P, u->train_step, &u->checked))) return false;
  out[1]->name = arena_printf(P->arena, "%s_checked", u->train_step->name);
  if (!(out[2] = lower_program(P, u->eval, &fo))) return false;
  if (!(out[3] = lower_program(P, u->predict, &fo))) return false;
  return !u->plateau || (out[4] = lower_program(P, u->plateau, &fo)) != NULL;
}

static bool run_kir(Pipeline *P) {
  BuildUnit *u = &P->u;
  if (!u->train_step || !u->eval || !u->predict) {
    diag_error(P->diags, (Span){0}, "model %s needs forward and loss to be built into a program", u->model);
    return false;
  }
  unsigned t = P->opt.targets ? P->opt.targets : PIPE_CPU;
  u->cpu = t & PIPE_CPU, u->cuda = t & PIPE_CUDA;
  pipeline_module_hash(u->lr.module, u->hash);
  KirProgram *k[5] = {0}, *g[5] = {0};
  if (!lower_set(P, k, true) || (u->cuda && !lower_set(P, g, false))) return false;
  u->k_train = k[0], u->k_train_checked = k[1], u->k_eval = k[2], u->k_predict = k[3], u->k_plateau = k[4];
  u->g_train = g[0], u->g_train_checked = g[1], u->g_eval = g[2], u->g_predict = g[3], u->g_plateau = g[4];
  return true;
}

// ---- schedule and memory plan (kernel/schedule.h, kernel/memplan.h) -----------------------------
// Internal passes: they fail only on a compiler bug, which they report.
static bool run_schedule(Pipeline *P) {
  KirProgram *ps[5] = {P->u.k_train, P->u.k_train_checked, P->u.k_eval, P->u.k_predict, P->u.k_plateau};
  KirTarget t = kir_target_cpu;
  t.conv_winograd = P->opt.conv_winograd;
  for (int i = 0; i < 5 && P->u.cpu; i++)
    if (ps[i] && !kir_schedule(ps[i], &t, P->diags)) return false;
  return true;
}

// -v after the schedule with --conv winograd: which forward and
// input-gradient convolutions (of the first program that has any) take
// the Winograd path.
static void report_winograd(Pipeline *P) {
  KirProgram *ps[5] = {P->u.k_train, P->u.k_train_checked, P->u.k_eval, P->u.k_predict, P->u.k_plateau};
  for (int i = 0; i < 5; i++) {
    if (!ps[i]) continue;
    int used = 0, convs = 0;
    for (int j = 0; j < ps[i]->kernels.len; j++) {
      const KirKernel *k = VEC_AT(ps[i]->kernels, KirKernel, j);
      bool fwd = k->op && (k->op->kind == KOP_CONV2D || k->op->kind == KOP_CONV2D_BIAS ||
                           k->op->kind == KOP_CONV2D_GRAD_INPUT);
      convs += fwd, used += kir_kernel_winograd(k);
    }
    if (!convs) continue;
    fprintf(stderr, " (--conv winograd, %s: %d of %d forward and input-gradient convolutions:", ps[i]->name, used, convs);
    for (int j = 0; j < ps[i]->kernels.len; j++) {
      const KirKernel *k = VEC_AT(ps[i]->kernels, KirKernel, j);
      if (kir_kernel_winograd(k)) fprintf(stderr, " %s", k->name);
    }
    fputc(')', stderr);
    return;
  }
}

static bool run_memplan(Pipeline *P) {
  KirProgram *ps[5] = {P->u.k_train, P->u.k_train_checked, P->u.k_eval, P->u.k_predict, P->u.k_plateau};
  for (int i = 0; i < 5 && P->u.cpu; i++)
    if (ps[i] && !kir_plan_memory(ps[i], P->diags)) return false;
  return true;
}

static bool run_schedule_gpu(Pipeline *P) {
  KirProgram *ps[5];
  int n = gpu_programs(&P->u, ps);
  // tensor cores (mma.sync m16n8k16) when every architecture built has them
  KirTarget t = kir_target_gpu;
  t.gemm_mma = !P->opt.ncuda_archs || P->opt.cuda_archs[0] >= 80;
  for (int i = 0; i < n; i++)
    if (!kir_schedule(ps[i], &t, P->diags)) return false;
  return true;
}

static bool run_memplan_gpu(Pipeline *P) {
  KirProgram *ps[5];
  int n = gpu_programs(&P->u, ps);
  for (int i = 0; i < n; i++)
    if (!kir_plan_memory(ps[i], P->diags)) return false;
  return true;
}

// ---- glue --------------------------------------------------------------------------------------
// The C source the link stage compiles. It checks that the model fits the
// runtime's ABI (per-sample shapes, dtypes), which is why it runs before
// the slow code generation; on the way to codegen only (`--emit llvm|asm`)
// it is skipped unless it is to be dumped.
static bool run_glue(Pipeline *P) {
  if (P->goal != STAGE_GLUE && P->goal < STAGE_LINK && !(P->opt.dump >> STAGE_GLUE & 1)) return true;
  char err[512] = "";
  bool ok = build_glue_source(&P->glue, &P->u, P->opt.link == LINK_EXE, P->opt.link == LINK_LIB, err, sizeof err);
  if (!ok) diag_error(P->diags, (Span){0}, "model %s: %s", P->u.model, err);
  P->glue_done = ok;
  // cc compiles it on the other core while the kernels are compiled
  return ok && (P->goal < STAGE_LINK || link_start_glue(P));
}

static void print_glue(Pipeline *P, FILE *out) { fwrite(P->glue.data, 1, P->glue.len, out); }

// ---- cuda -----------------------------------------------------------------------------------------
// The gpu programs printed as CUDA C (device source) and C (host launchers,
// symbols mlc_<cname>_cu_<program>); on the way to link NVRTC compiles the
// device source for every --cuda-arch into the bundle. A message of NVRTC's
// is an error at the .model line of the kernel it names. Without the cuda
// target the stage does nothing.
static bool nvrtc_compile(Pipeline *P, const char *name) {
  char err[1024] = "";
  CudaNvrtc *nv = cuda_nvrtc_open(err, sizeof err);
  if (!nv) {
    diag_error(P->diags, (Span){0}, "%s", err);
    return false;
  }
  int nlines;
  const CudaKernelLines *lines = cuda_gen_lines(P->cuda, &nlines);
  CudaSource src = {.name = name, .text = cuda_gen_device(P->cuda), .lines = lines, .nlines = nlines};
  CudaCompileOptions o = cuda_compile_defaults();
  o.archs = P->opt.cuda_archs, o.narchs = P->opt.ncuda_archs;
  CudaCompileResult r;
  bool ok = cuda_nvrtc_compile(nv, &src, &o, &r) == 0;
  for (int i = 0; !ok && i < r.ndiags; i++) {
    char line[1024];
    cuda_diag_format(&r.diags[i], line, sizeof line);
    if (r.diags[i].error) diag_error(P->diags, r.diags[i].span, "%s", line);
  }
  if (!ok && !r.ndiags) diag_error(P->diags, (Span){0}, "nvrtc: %s", r.err);
  if (ok && !(P->bundle = cuda_bundle_pack(r.images, r.nimages, &P->bundle_len))) {
    diag_error(P->diags, (Span){0}, "out of memory packing the CUDA bundle");
    ok = false;
  }
  cuda_compile_result_free(&r);
  cuda_nvrtc_close(nv);
  return ok;
}

static bool run_cuda(Pipeline *P) {
  if (!P->u.cuda) return true;
  const char *name = arena_printf(P->arena, "%s.cu", P->u.cname);
  P->cuda = cuda_gen_new(&(CudaGenOptions){.prefix = arena_printf(P->arena, "mlc_%s_cu_", P->u.cname),
                                           .name = name});
  KirProgram *ps[5];
  int n = gpu_programs(&P->u, ps);
  char err[1024] = "";
  for (int i = 0; i < n; i++)
    if (cuda_gen_add(P->cuda, ps[i], err, sizeof err)) mlc_ice(__FILE__, __LINE__, "stage cuda: %s", err);
  return P->goal < STAGE_LINK || nvrtc_compile(P, name);
}

static void print_cuda(Pipeline *P, FILE *out) {
  if (!P->cuda) {
    fputs("// no gpu target (--target cuda builds one)\n", out);
    return;
  }
  fputs(cuda_gen_device(P->cuda), out);
}

// ---- codegen -----------------------------------------------------------------------------------
enum { CODEGEN_PARTS = 2 }; // the objects of a build, whatever the machine (the output is the same)

// The kernels of every program in one LLVM module (symbols mlc_<cname>_k_<program>),
// verified (LLVMVerifyModule, by the backend, before anything else: an
// invalid module is a backend bug) and optimised. Without the cpu target
// the stage does nothing.
static bool run_codegen(Pipeline *P) {
  if (!P->u.cpu) return true;
  BackendOptions bo = P->opt.backend;
  bo.prefix = arena_printf(P->arena, "mlc_%s_k_", P->u.cname);
  char err[1024] = "";
  if (!(P->gen = llvm_gen_new(&bo, err, sizeof err))) {
    diag_error(P->diags, (Span){0}, "code generation for %s: %s", P->u.model, err);
    return false;
  }
  const KirProgram *ps[5];
  int n = kir_programs(&P->u, ps);
  double t0 = pipeline_now();
  for (int i = 0; i < n; i++) {
    llvm_gen_rare(P->gen, ps[i] == P->u.k_train_checked); // run only with --check-finite
    if (llvm_gen_add(P->gen, ps[i], err, sizeof err)) mlc_ice(__FILE__, __LINE__, "stage codegen: %s", err);
  }
  double t1 = pipeline_now();
  // On the way to link, the kernels' objects come from two halves of the
  // module on two threads (llvm.h): half the codegen and object time.
  if (P->goal >= STAGE_LINK && bo.emit == BE_EMIT_OBJ) llvm_gen_split(P->gen, CODEGEN_PARTS);
  if (llvm_gen_optimize(P->gen, err, sizeof err)) {
    diag_error(P->diags, (Span){0}, "code generation for %s: %s", P->u.model, err);
    return false;
  }
  char times[128];
  llvm_gen_times(P->gen, 0, times, sizeof times);
  snprintf(P->codegen_times, sizeof P->codegen_times, "ir %.1f ms, %s", (t1 - t0) * 1e3, times);
  return true;
}

static void print_llvm(Pipeline *P, FILE *out) {
  if (!P->gen) {
    fputs("; no cpu target (--target cuda)\n", out);
    return;
  }
  StrBuf b = {0};
  llvm_gen_print(P->gen, &b);
  fwrite(b.data, 1, b.len, out);
  sb_free(&b);
}

const char *pipeline_write_asm(Pipeline *P) {
  MLC_ASSERT(P->gen && P->opt.backend.emit == BE_EMIT_ASM);
  if (!link_make_tmp(P)) return NULL;
  const char *path = arena_printf(P->arena, "%s/kernels.s", P->tmp);
  char err[1024] = "";
  if (llvm_gen_write(P->gen, path, err, sizeof err) == 0) return path;
  diag_error(P->diags, (Span){0}, "code generation for %s: %s", P->u.model, err);
  return NULL;
}

// ---- the table ---------------------------------------------------------------------------------
static const Stage stages[STAGE_COUNT] = {
#define STAGE(id, name, form, run, print, verify, what) [STAGE_##id] = {name, form, run, print, verify, what},
#include "stages.def"
#undef STAGE
};

const Stage *pipeline_stage(StageId s) { return &stages[s]; }

int pipeline_stage_lookup(const char *name) {
  for (int i = 0; i < STAGE_COUNT; i++)
    if (!strcmp(stages[i].name, name)) return i;
  return -1;
}

StageId pipeline_last_graph_stage(void) {
  int last = -1;
  for (int i = 0; i < STAGE_COUNT; i++)
    if (stages[i].form == FORM_GRAPH) last = i;
  MLC_ASSERT(last >= 0);
  return (StageId)last;
}

bool pipeline_default_verify(void) {
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

void pipeline_init(Pipeline *P, Arena *a, DiagSink *d, const PipelineOptions *o) {
  memset(P, 0, sizeof *P);
  P->arena = a, P->diags = d, P->opt = *o;
  P->u.arena = a, P->u.path = o->path, P->u.model = o->model, P->u.cname = o->cname;
}

// A verifier that fails is a compiler bug: its reports, then an ICE naming the stage.
static void verify_stage(Pipeline *P, StageId s) {
  DiagSink vd;
  diag_init(&vd, P->arena);
  double t0 = pipeline_now();
  bool ok = stages[s].verify(P, &vd);
  P->verify_seconds[s] = pipeline_now() - t0;
  if (ok) return;
  diag_print(&vd, stderr);
  mlc_ice(__FILE__, __LINE__, "the output of stage %s does not verify (errors above)", stages[s].name);
}

static void dump_stage(Pipeline *P, StageId s) {
  static const char *const comment[] = {[FORM_GRAPH] = ";", [FORM_KIR] = ";", [FORM_C] = "//", [FORM_CUDA] = "//",
                                        [FORM_LLVM] = ";"};
  fprintf(stderr, "%s after %s\n", comment[stages[s].form], stages[s].name);
  stages[s].print(P, stderr);
  fflush(stderr);
}

// Whether stage s has work for the targets being built (-v times only
// those; a skipped stage still runs and prints its "no ... target" note).
static bool stage_applies(const Pipeline *P, StageId s) {
  unsigned t = P->opt.targets ? P->opt.targets : PIPE_CPU;
  switch (s) {
  case STAGE_SCHEDULE_GPU:
  case STAGE_MEMPLAN_GPU:
  case STAGE_CUDA: return t & PIPE_CUDA;
  case STAGE_SCHEDULE:
  case STAGE_MEMPLAN:
  case STAGE_CODEGEN: return t & PIPE_CPU;
  default: return true;
  }
}

static void report_time(Pipeline *P, StageId s, bool verified) {
  if (!stage_applies(P, s)) return;
  fprintf(stderr, "mlc %s: %-9s %9.1f ms", P->opt.verbose_cmd ? P->opt.verbose_cmd : "build", stages[s].name,
          P->seconds[s] * 1e3);
  if (verified) fprintf(stderr, ", verify %.1f ms", P->verify_seconds[s] * 1e3);
  if (s == STAGE_FRONT) // what every later stage compiles matmuls and convolutions at
    fprintf(stderr, " (precision %s%s)", dtype_name((DType)P->u.recipe.precision),
            P->opt.have_precision ? ", --precision" : "");
  if (s == STAGE_SCHEDULE && P->opt.conv_winograd) report_winograd(P);
  if (s == STAGE_CODEGEN && P->codegen_times[0]) fprintf(stderr, " (%s)", P->codegen_times);
  if (s == STAGE_LINK && P->link_times[0]) fprintf(stderr, " (%s)", P->link_times);
  fputc('\n', stderr);
}

bool pipeline_run(Pipeline *P, StageId last) {
  if (last > P->goal) P->goal = last;
  for (; P->next <= last; P->next++) {
    StageId s = P->next;
    double t0 = pipeline_now();
    bool ok = stages[s].run(P);
    P->seconds[s] = pipeline_now() - t0;
    if (!ok) return false;
    bool verified = P->opt.verify_each && stages[s].verify;
    if (verified) verify_stage(P, s);
    if (P->opt.verbose) report_time(P, s, verified);
    if ((P->opt.dump >> s & 1) && stages[s].print) dump_stage(P, s);
  }
  return true;
}

void pipeline_print(Pipeline *P, StageId s, FILE *out) {
  MLC_ASSERT(s < P->next && stages[s].print);
  stages[s].print(P, out);
}

void pipeline_print_dot(Pipeline *P, FILE *out) {
  IrModule *m = P->u.lr.module;
  for (int i = 0; i < m->funcs.len; i++) ir_dot(VEC_AT(m->funcs, IrFunc, i), out);
}

void pipeline_free(Pipeline *P) {
  if (P->gen) llvm_gen_free(P->gen);
  P->gen = NULL;
  cuda_gen_free(P->cuda);
  P->cuda = NULL;
  free(P->bundle);
  P->bundle = NULL;
  link_cleanup(P);
  sb_free(&P->glue);
  sb_free(&P->header);
}
