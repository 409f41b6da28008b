// llvm_backend.c — the LLVM CPU backend: kernel-IR programs -> one LLVM
// module (LLVM 19 C API) -> verified, optimised, written as an object file,
// assembly or LLVM IR text, or run in-process by ORC LLJIT.
//
// This file owns the generator (its own context, inside an ORC thread-safe
// context so the JIT can take the module; the target machine for the host
// CPU or a named one, PIC), one entry function and one scratch-size function
// per program (the ABI in backend.h), the pass pipeline (default<O2|O3> with
// loop and SLP vectorisation), emission and the JIT. Kernels are printed by
// llvm_kernel.c.
//
// Entry function shape, for program p with syms s0.. and buffers b0..:
//   syms    from dims[arg * 8 + dim], or their i64 definition
//   bufs    inputs[i] / outputs[i] / state[j] / scratch + the planned offset
//           (KirBuf.offset, memplan.h)
//   kernels called in order, each with its buffers and the syms it uses; a
//           non-zero status copies the check's message to *err and returns
// The scratch-size function returns the plan's size (KirProgram.scratch).
// Only scheduled (for a CPU) and planned programs are accepted: the
// backend prints the schedule's and the plan's decisions, it makes none.
#include "llvm_internal.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>


// Reports an LLVMErrorRef (consumed) as "llvm: what: message".
static int fail_error(char *err, size_t errlen, const char *what, LLVMErrorRef e) {
  char *m = LLVMGetErrorMessage(e);
  err_fail(err, errlen, "llvm: %s: %s", what, m);
  LLVMDisposeErrorMessage(m);
  return -1;
}

BackendOptions backend_default_options(void) {
  return (BackendOptions){.cpu = NULL, .opt_level = 3, .emit = BE_EMIT_OBJ, .threads = true, .prefix = NULL};
}

int backend_set_option(BackendOptions *o, const char *opt, char *err, size_t errlen) {
  if (!strncmp(opt, "cpu=", 4) && opt[4]) return o->cpu = opt + 4, 0;
  if (!strncmp(opt, "prefix=", 7)) return o->prefix = opt + 7, 0;
  if (opt[0] == 'O' && opt[1] >= '0' && opt[1] <= '3' && !opt[2]) return o->opt_level = opt[1] - '0', 0;
  if (!strcmp(opt, "emit=obj")) return o->emit = BE_EMIT_OBJ, 0;
  if (!strcmp(opt, "emit=asm")) return o->emit = BE_EMIT_ASM, 0;
  if (!strcmp(opt, "emit=llvm")) return o->emit = BE_EMIT_LLVM, 0;
  if (!strcmp(opt, "threads=on")) return o->threads = true, 0;
  if (!strcmp(opt, "threads=off")) return o->threads = false, 0;
  return err_fail(err, errlen, "unknown backend option '%s' (cpu=NAME, O0..O3, emit=obj|asm|llvm, "
              "threads=on|off, prefix=NAME)", opt);
}

// ---- generator -------------------------------------------------------------------------------------
static void init_types(LlvmGen *g) {
  LLVMContextRef c = g->ctx;
  g->tvoid = LLVMVoidTypeInContext(c);
  g->ti1 = LLVMInt1TypeInContext(c), g->ti8 = LLVMInt8TypeInContext(c);
  g->ti16 = LLVMInt16TypeInContext(c), g->ti32 = LLVMInt32TypeInContext(c);
  g->ti64 = LLVMInt64TypeInContext(c);
  g->tf16 = LLVMHalfTypeInContext(c), g->tbf16 = LLVMBFloatTypeInContext(c);
  g->tf32 = LLVMFloatTypeInContext(c), g->tf64 = LLVMDoubleTypeInContext(c);
  g->tptr = LLVMPointerTypeInContext(c, 0);
}

static bool native_cpu(const BackendOptions *o) { return !o->cpu || !strcmp(o->cpu, "native"); }

// A target machine for the default triple: host CPU + features, or a
// named CPU with its own defaults. PIC for Debian's PIE executables.
LLVMTargetMachineRef llvm_target_machine(int opt_level, const char *cpu, const char *features, char *err,
                                         size_t errlen) {
  char *triple = LLVMGetDefaultTargetTriple(), *msg = NULL;
  LLVMTargetRef target;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    err_fail(err, errlen, "llvm: target %s: %s", triple, msg);
    LLVMDisposeMessage(msg), LLVMDisposeMessage(triple);
    return NULL;
  }
  LLVMCodeGenOptLevel lv = opt_level >= 3 ? LLVMCodeGenLevelAggressive
                           : opt_level == 2 ? LLVMCodeGenLevelDefault
                           : opt_level == 1 ? LLVMCodeGenLevelLess : LLVMCodeGenLevelNone;
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(target, triple, cpu, features, lv, LLVMRelocPIC, LLVMCodeModelDefault);
  LLVMDisposeMessage(triple);
  if (!tm) err_fail(err, errlen, "llvm: cannot make a target machine for cpu '%s'", cpu);
  return tm;
}

static int make_target(LlvmGen *g, char *err, size_t errlen) {
  if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter())
    return err_fail(err, errlen, "llvm: no native target");
  if (native_cpu(&g->opt)) {
    g->cpu = LLVMGetHostCPUName(), g->features = LLVMGetHostCPUFeatures(), g->cpu_from_llvm = true;
  } else {
    g->cpu = strdup(g->opt.cpu), g->features = strdup(""), g->cpu_from_llvm = false;
  }
  if (!(g->tm = llvm_target_machine(g->opt.opt_level, g->cpu, g->features, err, errlen))) return -1;
  char *triple = LLVMGetTargetMachineTriple(g->tm);
  LLVMSetTarget(g->mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(g->tm);
  char *dl = LLVMCopyStringRepOfTargetData(td);
  LLVMSetDataLayout(g->mod, dl);
  LLVMDisposeMessage(dl);
  LLVMDisposeTargetData(td);
  return 0;
}

LlvmGen *llvm_gen_new(const BackendOptions *o, char *err, size_t errlen) {
  LlvmGen *g = calloc(1, sizeof *g);
  if (!g) return err_fail(err, errlen, "out of memory"), NULL;
  g->opt = *o;
  if (!g->opt.prefix) g->opt.prefix = "mlc_";
  g->nparts = 1;
  g->tsc = LLVMOrcCreateNewThreadSafeContext();
  g->ctx = LLVMOrcThreadSafeContextGetContext(g->tsc);
  g->mod = LLVMModuleCreateWithNameInContext("mlc", g->ctx);
  g->b = LLVMCreateBuilderInContext(g->ctx);
  g->ab = LLVMCreateBuilderInContext(g->ctx);
  init_types(g);
  if (make_target(g, err, errlen)) {
    llvm_gen_free(g);
    return NULL;
  }
  return g;
}

void llvm_gen_free(LlvmGen *g) {
  if (!g) return;
  for (int i = 1; i < g->nparts; i++) {
    llvm_part_join(&g->parts[i]);
    if (g->parts[i].obj) LLVMDisposeMemoryBuffer(g->parts[i].obj);
  }
  llvm_split_free(g->split);
  if (g->b) LLVMDisposeBuilder(g->b);
  if (g->ab) LLVMDisposeBuilder(g->ab);
  if (g->mod) LLVMDisposeModule(g->mod);
  if (g->tm) LLVMDisposeTargetMachine(g->tm);
  llvm_kernels_free(g);
  if (g->tsc) LLVMOrcDisposeThreadSafeContext(g->tsc);
  if (g->cpu_from_llvm) {
    LLVMDisposeMessage(g->cpu), LLVMDisposeMessage(g->features);
  } else {
    free(g->cpu), free(g->features);
  }
  free(g);
}

// ---- program entry points ----------------------------------------------------------------------------
// Binds every sym of the program (entry and scratch-size functions alike).
static void bind_syms(LlvmGen *g, LlvmEnv *e, LLVMValueRef dims) {
  const KirProgram *p = g->p;
  for (int i = 0; i < p->syms.len; i++) {
    const KirSym *s = VEC_AT(p->syms, KirSym, i);
    if (s->arg >= 0) {
      LLVMValueRef ix = LLVMConstInt(g->ti64, (unsigned long long)(s->arg * MLC_MAX_RANK + s->dim), 0);
      LLVMValueRef ptr = LLVMBuildInBoundsGEP2(g->b, g->ti64, dims, &ix, 1, "");
      e->syms[i] = LLVMBuildLoad2(g->b, g->ti64, ptr, s->name);
    } else {
      e->syms[i] = llvm_expr(g, e, s->def);
    }
  }
}

// A temporary's pointer, scratch + its planned offset, printed before the
// first kernel call that passes it (the calls run in a chain of blocks,
// each dominating the ones after it, so later calls may use it too); this
// keeps each pointer live only from its first to its last use.
static LLVMValueRef temp_ptr(LlvmGen *g, LlvmEnv *e, LLVMValueRef scratch, int b) {
  if (e->bufs[b]) return e->bufs[b];
  const KirBuf *kb = kir_buf(g->p, b);
  LLVMValueRef off = llvm_expr(g, e, kb->offset);
  return e->bufs[b] = LLVMBuildInBoundsGEP2(g->b, g->ti8, scratch, &off, 1, kb->name);
}

static LLVMValueRef array_elem(LlvmGen *g, LLVMValueRef arr, int i, const char *name) {
  LLVMValueRef ix = LLVMConstInt(g->ti64, (unsigned long long)i, 0);
  return LLVMBuildLoad2(g->b, g->tptr, LLVMBuildInBoundsGEP2(g->b, g->tptr, arr, &ix, 1, ""), name);
}

static LLVMValueRef entry_fn(LlvmGen *g, const char *suffix, LLVMTypeRef ret, LLVMTypeRef *ps, unsigned n) {
  char *name = arena_printf(g->p->arena, "%s%s%s", g->opt.prefix, g->p->name, suffix);
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(ret, ps, n, 0));
  llvm_fn_attrs(g, fn);
  // An entry point is a straight chain of kernel calls (a block per call,
  // thousands in a transformer's train step, twice that in its checked
  // copy) over sizes printed once: optimising it buys nothing at run time
  // and was half the module's compile time.
  llvm_fn_unoptimized(g, fn);
  llvm_fn_begin(g, fn);
  return fn;
}

static LlvmEnv entry_env(LlvmGen *g, LLVMValueRef fn) {
  LlvmEnv e = {.fn = fn};
  e.bufs = arena_alloc(g->p->arena, sizeof(LLVMValueRef) * (size_t)(g->p->bufs.len + 1));
  e.syms = arena_alloc(g->p->arena, sizeof(LLVMValueRef) * (size_t)(g->p->syms.len + 1));
  return e;
}

// int64_t PREFIX<name>_scratch_bytes(const int64_t *dims)
static void scratch_fn(LlvmGen *g) {
  LLVMValueRef fn = entry_fn(g, "_scratch_bytes", g->ti64, &g->tptr, 1);
  LlvmEnv e = entry_env(g, fn);
  e.memo = llvm_memo_new();
  bind_syms(g, &e, LLVMGetParam(fn, 0));
  LLVMBuildRet(g->b, llvm_expr(g, &e, g->p->scratch));
  llvm_memo_free(e.memo);
}

// A kernel's function and the program syms it takes.
typedef struct KernelCall {
  LLVMValueRef fn;
  int *used, nused;
} KernelCall;

// The kernel's arguments: buffers, syms, seed, pool, error slot and the
// messages of its checks (a shared kernel function reports each caller's).
static void call_kernel(LlvmGen *g, LlvmEnv *e, const KirKernel *k, const KernelCall *kc, LLVMValueRef scratch,
                        LLVMBasicBlockRef failed) {
  const KirProgram *p = g->p;
  Vec checks = {0};
  kir_kernel_checks(p, k, &checks);
  int np = k->params.len, ns = kc->nused, n = np + ns + 3 + checks.len;
  LLVMValueRef kfn = kc->fn;
  LLVMValueRef *args = arena_alloc(p->arena, sizeof(LLVMValueRef) * (size_t)n);
  for (int i = 0; i < np; i++) {
    int b = kir_param(k, i);
    args[i] = kir_buf(p, b)->kind == KBUF_TEMP ? temp_ptr(g, e, scratch, b) : e->bufs[b];
  }
  for (int i = 0; i < ns; i++) args[np + i] = e->syms[kc->used[i]];
  args[np + ns] = e->seed, args[np + ns + 1] = e->pool, args[np + ns + 2] = e->errslot;
  for (int i = 0; i < checks.len; i++)
    args[np + ns + 3 + i] = LLVMBuildGlobalStringPtr(g->b, VEC_AT(checks, KStmt, i)->msg, "mlc.msg");
  LLVMValueRef st = LLVMBuildCall2(g->b, LLVMGlobalGetValueType(kfn), kfn, args, (unsigned)n, "");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, e->fn, "ok");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, st, LLVMConstInt(g->ti32, 0, 0), ""), failed, ok);
  LLVMPositionBuilderAtEnd(g->b, ok);
}

// int32_t PREFIX<name>(dims, inputs, outputs, state, scratch, rng_seed, pool, err)
static void program_fn(LlvmGen *g, const KernelCall *kfns) {
  const KirProgram *p = g->p;
  LLVMTypeRef ps[8] = {g->tptr, g->tptr, g->tptr, g->tptr, g->tptr, g->ti64, g->tptr, g->tptr};
  LLVMValueRef fn = entry_fn(g, "", g->ti32, ps, 8);
  for (unsigned i = 0; i < 5; i++) llvm_param_attr(g, fn, i, "nocapture");
  LlvmEnv e = entry_env(g, fn);
  e.memo = llvm_memo_new();
  e.seed = LLVMGetParam(fn, 5), e.pool = LLVMGetParam(fn, 6);
  e.errslot = llvm_alloca(g, g->tptr, "errslot");
  LLVMBuildStore(g->b, LLVMConstPointerNull(g->tptr), e.errslot);
  bind_syms(g, &e, LLVMGetParam(fn, 0));
  int nstate = 0;
  for (int i = 0; i < p->bufs.len; i++) {
    const KirBuf *kb = kir_buf(p, i);
    if (kb->kind == KBUF_INPUT) e.bufs[i] = array_elem(g, LLVMGetParam(fn, 1), kb->index, kb->name);
    if (kb->kind == KBUF_OUTPUT) e.bufs[i] = array_elem(g, LLVMGetParam(fn, 2), kb->index, kb->name);
    if (kb->kind == KBUF_STATE) e.bufs[i] = array_elem(g, LLVMGetParam(fn, 3), nstate++, kb->name);
  }
  // A kernel returns 1 after a failed check (or library call): one block
  // for every call reports its message and returns 1.
  LLVMBasicBlockRef failed = LLVMAppendBasicBlockInContext(g->ctx, fn, "failed"), body = LLVMGetInsertBlock(g->b);
  LLVMPositionBuilderAtEnd(g->b, failed);
  LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, g->tptr, e.errslot, ""), LLVMGetParam(fn, 7));
  LLVMBuildRet(g->b, LLVMConstInt(g->ti32, 1, 0));
  LLVMPositionBuilderAtEnd(g->b, body);
  for (int i = 0; i < p->kernels.len; i++)
    call_kernel(g, &e, VEC_AT(p->kernels, KirKernel, i), &kfns[i], LLVMGetParam(fn, 4), failed);
  LLVMBuildRet(g->b, LLVMConstInt(g->ti32, 0, 0));
  llvm_memo_free(e.memo);
}

// A loop map this backend does not print (gpu-block, gpu-thread), or -1.
static int foreign_map(const Vec *blk) {
  for (int i = 0; i < blk->len; i++) {
    const KStmt *s = VEC_AT(*blk, KStmt, i);
    if (s->kind == KS_FOR && s->map != KMAP_SERIAL && s->map != KMAP_CHUNK && s->map != KMAP_VECTOR) return s->map;
    int m = foreign_map(&s->body);
    if (m < 0) m = foreign_map(&s->els);
    if (m >= 0) return m;
  }
  return -1;
}

static int check_program(const KirProgram *p, char *err, size_t errlen) {
  if (!p->target || !p->scratch)
    return err_fail(err, errlen, "llvm: program %s is not %s (kir_schedule, then kir_plan_memory)", p->name,
                p->target ? "planned" : "scheduled");
  for (int i = 0; i < p->kernels.len; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    int m = foreign_map(&k->body);
    if (m >= 0)
      return err_fail(err, errlen, "llvm: kernel %s of %s has a %s loop (scheduled for %s, not a CPU)", k->name, p->name,
                  kir_map_name((KLoopMap)m), p->target);
  }
  return 0;
}

int llvm_gen_add(LlvmGen *g, const KirProgram *p, char *err, size_t errlen) {
  if (!g->mod || g->optimized) return err_fail(err, errlen, "llvm: module already optimised or taken");
  if (check_program(p, err, errlen)) return -1;
  g->p = p;
  KernelCall *kfns = arena_alloc(p->arena, sizeof(KernelCall) * (size_t)(p->kernels.len + 1));
  for (int i = 0; i < p->kernels.len; i++) {
    kfns[i].used = arena_alloc(p->arena, sizeof(int) * (size_t)(p->syms.len + 1));
    kfns[i].fn = llvm_kernel(g, VEC_AT(p->kernels, KirKernel, i), kfns[i].used, &kfns[i].nused);
  }
  program_fn(g, kfns);
  scratch_fn(g);
  g->p = NULL;
  return 0;
}

// ---- verification, passes, output ---------------------------------------------------------------------
int llvm_run_passes(LLVMModuleRef m, LLVMTargetMachineRef tm, int opt_level, char *err, size_t errlen) {
  if (opt_level <= 0) return 0;
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
  // No interleaved or unrolled copies of vectorised loops: the loops the
  // kernel IR leaves to LLVM are elementwise passes and reductions over
  // memory (the GEMMs and convolutions are library calls), which one
  // vector body per iteration already keeps at memory speed, and the
  // copies were most of the module's code and of its build time.
  LLVMPassBuilderOptionsSetLoopInterleaving(po, 0);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, 0);
  const char *pipe = opt_level >= 3 ? "default<O3>" : opt_level == 2 ? "default<O2>" : "default<O1>";
  LLVMErrorRef e = LLVMRunPasses(m, pipe, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) return fail_error(err, errlen, pipe, e);
  return 0;
}

void llvm_gen_split(LlvmGen *g, int parts) {
  MLC_ASSERT(!g->optimized && parts >= 0 && parts <= LLVM_MAX_PARTS);
  g->want_parts = parts;
}

void llvm_gen_rare(LlvmGen *g, bool rare) { g->rare = rare; }

// Parts 1.. on their threads (the last two: the rarely run kernels, the
// entry points); part 0 stays in g->mod (llvm_split.c).
static int split(LlvmGen *g, char *err, size_t errlen) {
  g->split = llvm_split_new(g, g->want_parts);
  for (int i = 1; i <= g->want_parts + 1; i++) {
    g->parts[i] = (LlvmPart){.index = i, .split = g->split, .opt = &g->opt, .cpu = g->cpu, .features = g->features};
    if (llvm_part_start(&g->parts[i], err, errlen)) return -1;
    g->nparts = i + 1;
  }
  llvm_split_prune(g->split, g->mod, 0);
  return 0;
}

int llvm_gen_optimize(LlvmGen *g, char *err, size_t errlen) {
  if (g->optimized) return 0;
  if (!g->mod) return err_fail(err, errlen, "llvm: module already taken");
  double t0 = llvm_now();
  char *msg = NULL;
  if (LLVMVerifyModule(g->mod, LLVMReturnStatusAction, &msg)) {
    err_fail(err, errlen, "llvm: invalid module (backend bug): %s", msg);
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMDisposeMessage(msg);
  g->optimized = true;
  double t1 = llvm_now();
  // Only objects are split: assembly and IR text are one module's.
  if (g->want_parts > 0 && g->opt.emit == BE_EMIT_OBJ && split(g, err, errlen)) return -1;
  double t2 = llvm_now();
  int rc = llvm_run_passes(g->mod, g->tm, g->opt.opt_level, err, errlen);
  g->seconds[0] = t1 - t0, g->seconds[1] = t2 - t1, g->seconds[2] = llvm_now() - t2;
  return rc;
}

int llvm_gen_parts(const LlvmGen *g) { return g->nparts; }

void llvm_gen_times(const LlvmGen *g, int what, char *buf, size_t len) {
  if (what == 0) {
    int n = snprintf(buf, len, "verify %.1f ms", g->seconds[0] * 1e3);
    if (g->nparts > 1 && n >= 0 && (size_t)n < len)
      n += snprintf(buf + n, len - (size_t)n, ", split %.1f ms", g->seconds[1] * 1e3);
    if (n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ", passes %.1f ms", g->seconds[2] * 1e3);
    return;
  }
  const LlvmPart *p = &g->parts[what];
  snprintf(buf, len, "read %.1f ms, passes %.1f ms, object %.1f ms", p->seconds[0] * 1e3, p->seconds[1] * 1e3,
           p->seconds[2] * 1e3);
}

void llvm_gen_print(LlvmGen *g, StrBuf *b) {
  if (!g->mod) return;
  char *s = LLVMPrintModuleToString(g->mod);
  sb_puts(b, s);
  LLVMDisposeMessage(s);
}

static int write_text(const char *path, const char *data, size_t len, char *err, size_t errlen) {
  FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
  if (!f) return err_fail(err, errlen, "cannot write %s", path);
  bool ok = fwrite(data, 1, len, f) == len;
  ok = (f == stdout ? fflush(f) : fclose(f)) == 0 && ok;
  return ok ? 0 : err_fail(err, errlen, "cannot write %s", path);
}

int llvm_gen_write_part(LlvmGen *g, int part, const char *path, char *err, size_t errlen) {
  MLC_ASSERT(part >= 1 && part < g->nparts);
  LlvmPart *p = &g->parts[part];
  llvm_part_join(p);
  if (!p->obj) return err_fail(err, errlen, "%s", p->err);
  return write_text(path, LLVMGetBufferStart(p->obj), LLVMGetBufferSize(p->obj), err, errlen);
}

int llvm_gen_write(LlvmGen *g, const char *path, char *err, size_t errlen) {
  if (llvm_gen_optimize(g, err, errlen)) return -1;
  if (g->opt.emit == BE_EMIT_LLVM) {
    char *s = LLVMPrintModuleToString(g->mod);
    int rc = write_text(path, s, strlen(s), err, errlen);
    LLVMDisposeMessage(s);
    return rc;
  }
  LLVMCodeGenFileType ft = g->opt.emit == BE_EMIT_ASM ? LLVMAssemblyFile : LLVMObjectFile;
  char *msg = NULL;
  LLVMMemoryBufferRef mb = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(g->tm, g->mod, ft, &msg, &mb)) {
    err_fail(err, errlen, "llvm: emitting %s: %s", path, msg ? msg : "failed");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMDisposeMessage(msg);
  int rc = write_text(path, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb), err, errlen);
  LLVMDisposeMemoryBuffer(mb);
  return rc;
}

// ---- the Backend table -------------------------------------------------------------------------------
static BackendSession *be_open(const BackendOptions *o, char *err, size_t errlen) {
  return (BackendSession *)llvm_gen_new(o, err, errlen);
}
static int be_add(BackendSession *s, const KirProgram *p, char *err, size_t errlen) {
  return llvm_gen_add((LlvmGen *)s, p, err, errlen);
}
static int be_finish(BackendSession *s, const char *path, char *err, size_t errlen) {
  return llvm_gen_write((LlvmGen *)s, path, err, errlen);
}
static void be_close(BackendSession *s) { llvm_gen_free((LlvmGen *)s); }

const Backend llvm_backend = {"llvm", be_open, be_add, be_finish, be_close};

// ---- ORC LLJIT -----------------------------------------------------------------------------------------
struct LlvmJit {
  LLVMOrcLLJITRef jit;
};

static int define_absolute(LLVMOrcLLJITRef jit, const char *name, void (*addr)(void), char *err, size_t errlen) {
  LLVMOrcCSymbolMapPair pair = {
      LLVMOrcLLJITMangleAndIntern(jit, name),
      {(LLVMOrcExecutorAddress)(uintptr_t)addr,
       {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0}}};
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(&pair, 1);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(jit), mu);
  if (!e) return 0;
  LLVMOrcDisposeMaterializationUnit(mu); // still ours when the definition fails
  return fail_error(err, errlen, name, e);
}

LlvmJit *llvm_jit_new(LlvmGen *g, const LlvmJitSymbol *syms, int nsyms, char *err, size_t errlen) {
  if (llvm_gen_optimize(g, err, errlen)) return NULL;
  if (g->nparts > 1) return err_fail(err, errlen, "llvm: the module was split into objects"), NULL;
  LLVMOrcJITTargetMachineBuilderRef jtmb;
  LLVMErrorRef e = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (e) return fail_error(err, errlen, "jit host", e), NULL;
  LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, jtmb);
  LlvmJit *j = calloc(1, sizeof *j);
  if (!j) return err_fail(err, errlen, "out of memory"), NULL;
  if ((e = LLVMOrcCreateLLJIT(&j->jit, jb))) {
    free(j);
    return fail_error(err, errlen, "jit", e), NULL;
  }
  for (int i = 0; i < nsyms; i++)
    if (define_absolute(j->jit, syms[i].name, syms[i].addr, err, errlen)) {
      llvm_jit_free(j);
      return NULL;
    }
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(g->mod, g->tsc);
  g->mod = NULL;
  if ((e = LLVMOrcLLJITAddLLVMIRModule(j->jit, LLVMOrcLLJITGetMainJITDylib(j->jit), tsm))) {
    llvm_jit_free(j);
    return fail_error(err, errlen, "jit add module", e), NULL;
  }
  return j;
}

void *llvm_jit_lookup(LlvmJit *j, const char *symbol, char *err, size_t errlen) {
  LLVMOrcExecutorAddress addr = 0;
  LLVMErrorRef e = LLVMOrcLLJITLookup(j->jit, &addr, symbol);
  if (e) return fail_error(err, errlen, symbol, e), NULL;
  return (void *)(uintptr_t)addr;
}

void llvm_jit_free(LlvmJit *j) {
  if (!j) return;
  LLVMErrorRef e = LLVMOrcDisposeLLJIT(j->jit);
  if (e) LLVMConsumeError(e);
  free(j);
}
