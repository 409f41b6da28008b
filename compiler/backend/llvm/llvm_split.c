// llvm_split.c — one module, optimised and emitted as several objects on as
// many threads (llvm_gen_split, object emission only).
//
// Input: the verified module of every program (g->mod) and its kernel
// functions in print order with their costs (LlvmGen.korder: the
// instructions of the kernel and of the loop functions and trampolines
// printed with it) and whether a program not marked rare calls them.
// Output: part 0 stays in g->mod (optimised by the caller's thread, written
// by llvm_gen_write); part i >= 1 is optimised and written to an in-memory
// object by a thread of its own (llvm_gen_write_part joins it).
//
// Shape, for n kernel parts: the hot kernels go to parts 0..n-1 largest
// first, each to the least loaded part (ties: the lower part); part n holds
// the kernels only rarely run programs call (compiled at O1), part n + 1 the
// entry points (optnone: no IR passes, -O0 code generation). The module
// goes to bitcode once; each thread parses it into its own LLVMContext (a
// context is one thread's at a time) and makes its own target machine. In
// part i, a kernel of another part becomes a declaration (kernels are
// hidden, external symbols named after the program's prefix: the link
// resolves them), entry functions leave every part but theirs, and what is
// then unused (loop functions, trampolines, the Philox helper, check
// messages) is deleted. Everything depends on the module only, so the same
// input gives the same objects, whatever the machine's cores or the
// threads' timing.
#include "llvm_internal.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// ---- costs and the assignment --------------------------------------------------------------------
long llvm_fn_size(LLVMValueRef fn) {
  long n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) n++;
  return n;
}

typedef struct KernelPart {
  char *name; // malloc'd
  int part;
} KernelPart;

struct LlvmSplit {
  KernelPart *kernels; // sorted by name
  int nkernels;
  int rare_part;       // the kernels only rarely run programs call
  int entry_part;      // the last part: the entry points
  LLVMMemoryBufferRef bitcode; // the whole module, read by every thread
};

static int by_name(const void *a, const void *b) {
  return strcmp(((const KernelPart *)a)->name, ((const KernelPart *)b)->name);
}

// The part of the kernel function called name, or -1 (not a kernel).
static int kernel_part(const LlvmSplit *s, const char *name) {
  KernelPart key = {.name = (char *)name};
  const KernelPart *k = bsearch(&key, s->kernels, (size_t)s->nkernels, sizeof key, by_name);
  return k ? k->part : -1;
}

// Largest first (ties: print order), each to the least loaded part.
static void assign(const LlvmGen *g, int nparts, int *part) {
  int n = g->nkord;
  int *ord = malloc(sizeof(int) * (size_t)(n + 1));
  long load[LLVM_MAX_PARTS] = {0};
  MLC_ASSERT(ord);
  for (int i = 0; i < n; i++) ord[i] = i;
  for (int i = 1; i < n; i++) // insertion sort: stable, and n is a few hundred
    for (int j = i; j > 0 && g->korder[ord[j]].cost > g->korder[ord[j - 1]].cost; j--) {
      int t = ord[j];
      ord[j] = ord[j - 1], ord[j - 1] = t;
    }
  for (int i = 0; i < n; i++) {
    int best = 0;
    for (int p = 1; p < nparts; p++)
      if (load[p] < load[best]) best = p;
    if (!g->korder[ord[i]].hot) { // the rarely run part
      part[ord[i]] = nparts;
      continue;
    }
    part[ord[i]] = best;
    load[best] += g->korder[ord[i]].cost;
  }
  free(ord);
}

LlvmSplit *llvm_split_new(LlvmGen *g, int nparts) {
  LlvmSplit *s = calloc(1, sizeof *s);
  int *part = malloc(sizeof(int) * (size_t)(g->nkord + 1));
  MLC_ASSERT(s && part);
  assign(g, nparts, part);
  s->kernels = calloc((size_t)g->nkord + 1, sizeof *s->kernels);
  MLC_ASSERT(s->kernels);
  for (int i = 0; i < g->nkord; i++) {
    size_t len;
    const char *name = LLVMGetValueName2(g->korder[i].fn, &len);
    s->kernels[i] = (KernelPart){.name = strndup(name, len), .part = part[i]};
    MLC_ASSERT(s->kernels[i].name);
  }
  s->nkernels = g->nkord;
  s->rare_part = nparts, s->entry_part = nparts + 1;
  qsort(s->kernels, (size_t)s->nkernels, sizeof *s->kernels, by_name);
  free(part);
  s->bitcode = LLVMWriteBitcodeToMemoryBuffer(g->mod);
  MLC_ASSERT(s->bitcode);
  return s;
}

void llvm_split_free(LlvmSplit *s) {
  if (!s) return;
  for (int i = 0; i < s->nkernels; i++) free(s->kernels[i].name);
  free(s->kernels);
  if (s->bitcode) LLVMDisposeMemoryBuffer(s->bitcode);
  free(s);
}

// ---- pruning a part --------------------------------------------------------------------------------
// fn, defined here, becomes a declaration of the same hidden symbol.
static void to_declaration(LLVMModuleRef m, LLVMValueRef fn) {
  size_t len;
  const char *name = LLVMGetValueName2(fn, &len);
  char *keep = strndup(name, len);
  MLC_ASSERT(keep);
  LLVMValueRef decl = LLVMAddFunction(m, "", LLVMGlobalGetValueType(fn));
  LLVMReplaceAllUsesWith(fn, decl);
  LLVMDeleteFunction(fn);
  LLVMSetValueName2(decl, keep, len);
  LLVMSetVisibility(decl, LLVMHiddenVisibility);
  free(keep);
}

static bool local(LLVMValueRef v) {
  LLVMLinkage l = LLVMGetLinkage(v);
  return l == LLVMInternalLinkage || l == LLVMPrivateLinkage;
}

// Deletes unused internal functions and globals until none is left (a
// trampoline's loop function is unused once the trampoline is gone).
static void sweep(LLVMModuleRef m) {
  for (bool changed = true; changed;) {
    changed = false;
    for (LLVMValueRef f = LLVMGetFirstFunction(m), next; f; f = next) {
      next = LLVMGetNextFunction(f);
      if (local(f) && !LLVMGetFirstUse(f)) LLVMDeleteFunction(f), changed = true;
    }
    for (LLVMValueRef v = LLVMGetFirstGlobal(m), next; v; v = next) {
      next = LLVMGetNextGlobal(v);
      if (local(v) && !LLVMGetFirstUse(v)) LLVMDeleteGlobal(v), changed = true;
    }
  }
}

void llvm_split_prune(const LlvmSplit *s, LLVMModuleRef m, int part) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m), next; f; f = next) {
    next = LLVMGetNextFunction(f);
    if (!LLVMCountBasicBlocks(f) || local(f)) continue;
    size_t len;
    int kp = kernel_part(s, LLVMGetValueName2(f, &len));
    if (kp >= 0 ? kp == part : part == s->entry_part) continue;
    if (kp < 0 && !LLVMGetFirstUse(f)) LLVMDeleteFunction(f); // an entry point, in its part only
    else to_declaration(m, f);
  }
  sweep(m);
}

// ---- the threads -------------------------------------------------------------------------------------
// Part i on its own thread: parse, prune, optimise, emit to memory.
static void *part_main(void *arg) {
  LlvmPart *p = arg;
  double t0 = llvm_now();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMParseBitcodeInContext2(ctx, p->split->bitcode, &m)) {
    snprintf(p->err, sizeof p->err, "llvm: part %d: cannot read the module's bitcode", p->index);
    goto done;
  }
  llvm_split_prune(p->split, m, p->index);
  // The entry points are optnone: no IR passes, and the fast instruction
  // selector and register allocator of -O0 code generation, which the
  // optnone attribute alone does not choose (the greedy allocator over a
  // train step's thousands of call blocks was most of its object time).
  bool entries = p->index == p->split->entry_part;
  int level = entries ? 0 : p->index == p->split->rare_part && p->opt->opt_level > 1 ? 1 : p->opt->opt_level;
  if (!(tm = llvm_target_machine(level, p->cpu, p->features, p->err, sizeof p->err))) goto done;
  double t1 = llvm_now();
  if (llvm_run_passes(m, tm, level, p->err, sizeof p->err)) goto done;
  double t2 = llvm_now();
  char *msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &msg, &p->obj)) {
    snprintf(p->err, sizeof p->err, "llvm: emitting part %d: %s", p->index, msg ? msg : "failed");
    p->obj = NULL;
  }
  LLVMDisposeMessage(msg);
  p->seconds[0] = t1 - t0, p->seconds[1] = t2 - t1, p->seconds[2] = llvm_now() - t2;
done:
  if (tm) LLVMDisposeTargetMachine(tm);
  if (m) LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
  return NULL;
}

// The pass pipeline and instruction selection recurse over the IR: a
// thread's stack is 16 MiB (twice the usual main thread's), whatever the
// ulimit says (glibc sizes thread stacks from it).
enum { PART_STACK = 16 << 20 };

int llvm_part_start(LlvmPart *p, char *err, size_t errlen) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, PART_STACK);
  int rc = pthread_create(&p->thread, &attr, part_main, p);
  pthread_attr_destroy(&attr);
  if (rc) return err_fail(err, errlen, "llvm: cannot start the thread of part %d: %s", p->index, strerror(rc));
  p->started = true;
  return 0;
}

void llvm_part_join(LlvmPart *p) {
  if (!p->started) return;
  pthread_join(p->thread, NULL);
  p->started = false;
}
