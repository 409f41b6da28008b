// llvm_internal.h — what the LLVM backend's files share: the generator state
// (llvm_backend.c owns the context, module, target machine, program entry
// points, passes, emission and the JIT) and the kernel printer
// (llvm_kernel.c: one LLVM function per kernel, statements, expressions,
// outlined parallel loops, the Philox helper; llvm_math.c: exp, erf,
// tanh, log and log1p of an f32 without libm).
#ifndef MLC_LLVM_INTERNAL_H
#define MLC_LLVM_INTERNAL_H

#include "llvm.h"

#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

#include <pthread.h>
#include <time.h>

// At most this many kernel parts of one module (llvm_gen_split), and two
// more: the rarely run kernels' and the entry points'.
enum { LLVM_MAX_PARTS = 8 };

typedef struct LlvmSplit LlvmSplit;

// Part index >= 1 of a split module, optimised and emitted on its own
// thread (llvm_split.c): what it reads, then what it leaves.
typedef struct LlvmPart {
  int index;
  const LlvmSplit *split;
  const BackendOptions *opt;
  const char *cpu, *features;
  pthread_t thread;
  bool started;
  LLVMMemoryBufferRef obj;  // the object; NULL after a failure (err says why)
  char err[512];
  double seconds[3];        // read and prune, passes, object
} LlvmPart;

// A kernel function and what it costs to compile: the instructions of it
// and of the functions printed with it (loop functions, trampolines).
typedef struct LlvmKernelCost {
  LLVMValueRef fn;
  long cost;
  bool hot;   // called by a program not marked rare (llvm_gen_rare)
} LlvmKernelCost;

struct LlvmGen {
  BackendOptions opt;
  char *cpu, *features;           // from LLVM (LLVMDisposeMessage) or strdup'd
  bool cpu_from_llvm;             // which of the two frees them
  LLVMOrcThreadSafeContextRef tsc; // owns ctx; the JIT shares it
  LLVMContextRef ctx;
  LLVMModuleRef mod;              // NULL once the JIT took it
  LLVMTargetMachineRef tm;
  LLVMBuilderRef b;               // code
  LLVMBuilderRef ab;              // allocas, at the top of the entry block
  bool optimized;
  LLVMTypeRef tvoid, ti1, ti8, ti16, ti32, ti64, tf16, tbf16, tf32, tf64, tptr;
  LLVMValueRef philox;            // the rand helper, made on first use
  LLVMValueRef mathfn[5];         // mlc.expf, erff, tanhf, logf, log1pf (llvm_math.c), on first use
  LLVMValueRef parfor;            // mlc_parallel_for, declared on first use
  const KirProgram *p;            // program being printed
  const KirKernel *k;             // kernel being printed
  int nouter;                     // outlined loops so far in this kernel
  // Kernels compiled so far, by kir_kernel_key (open addressing, power-of-2
  // capacity): a kernel whose key is here is called, not printed again.
  struct LlvmKernelFn *kfns;
  int nkfns, capkfns;
  int kernels_printed, kernels_shared;
  LlvmKernelCost *korder;         // every kernel function, in print order
  int nkord, capkord;
  LlvmSplit *split;               // when the module was split (parts > 1)
  LlvmPart parts[LLVM_MAX_PARTS + 2]; // parts[1..nparts): the other threads' parts
  int want_parts;                 // llvm_gen_split: kernel parts (0 or 1: one module)
  bool rare;                      // llvm_gen_rare: programs added now are rarely run
  int nparts;                     // 1 until split
  double seconds[3];              // verify, split, passes (part 0)
};

typedef struct LlvmKernelFn {
  char *key;                      // malloc'd canonical text; NULL: empty slot
  uint64_t hash;
  LLVMValueRef fn;
  int ord;                        // its LlvmGen.korder entry
} LlvmKernelFn;

// What code being printed can see: per program buffer its pointer (NULL when
// the function does not take it), per sym its i64 value, per kernel var its
// alloca (register type of the var's dtype).
typedef struct LlvmEnv {
  LLVMValueRef fn;
  LLVMValueRef *bufs, *syms, *vars;
  LLVMValueRef seed, pool, errslot;
  const int *used;   // kernels: the program syms they take, in key order
  int nused;
  struct LlvmMemo *memo; // entry functions: i64 expressions printed so far (NULL: none)
  LLVMValueRef *msgs; // kernels: their check messages (parameters), in key order
  int nmsgs, next_msg; // how many; the next check's (checks print in key order)
  bool in_par;       // inside an outlined loop (the schedule nests no chunk loops)
} LlvmEnv;

// Register (computation) and memory types of a dtype: f16/bf16 compute as
// float; bool is i1 in registers and one byte in memory.
LLVMTypeRef llvm_regtype(LlvmGen *g, DType dt);
LLVMTypeRef llvm_memtype(LlvmGen *g, DType dt);
// nounwind + target-cpu/target-features, so printed IR reproduces under llc.
void llvm_fn_attrs(LlvmGen *g, LLVMValueRef fn);
// The enum attribute name (nounwind, alwaysinline, ...) on fn.
void llvm_fn_attr(LlvmGen *g, LLVMValueRef fn, const char *name);
// A call of an intrinsic overloaded on its first argument's type
// (llvm.exp.f32, llvm.fmuladd.v8f64, ...).
LLVMValueRef llvm_call_intr(LlvmGen *g, const char *name, LLVMValueRef *args, unsigned n);
void llvm_param_attr(LlvmGen *g, LLVMValueRef fn, unsigned idx, const char *name);
// Starts fn's entry block (allocas go to its top through g->ab).
// optnone + noinline: no IR passes and the fast instruction selector and
// register allocator, for code that runs once per program call.
void llvm_fn_unoptimized(LlvmGen *g, LLVMValueRef fn);
void llvm_fn_begin(LlvmGen *g, LLVMValueRef fn);
LLVMValueRef llvm_alloca(LlvmGen *g, LLVMTypeRef t, const char *name);
LLVMValueRef llvm_expr(LlvmGen *g, LlvmEnv *e, const KExpr *x);
// exp, erf, tanh, log or log1p of an f32 register value without libm (llvm_math.c).
LLVMValueRef llvm_math_f32(LlvmGen *g, KUnOp op, LLVMValueRef x);
// A memo of printed i64 expressions (LlvmEnv.memo), for code in one block.
typedef struct LlvmMemo LlvmMemo;
LlvmMemo *llvm_memo_new(void);
void llvm_memo_free(LlvmMemo *m);
// The internal function of a kernel of g->p, printed on first sight of its
// kernel key (kir_kernel_key) and shared by every later kernel with that key:
//   i32 kN(ptr noalias nocapture <param buffers>..., i64 <the syms it uses,
//          in key order>..., i64 rng_seed, ptr pool, ptr errslot,
//          ptr <its check messages, in key order>...)
// used[] gets the program syms to pass (room for every sym of g->p), *nused
// their count.
LLVMValueRef llvm_kernel(LlvmGen *g, const KirKernel *k, int *used, int *nused);
// Frees the kernel table.
void llvm_kernels_free(LlvmGen *g);

// Shared by the threads of a split module (llvm_backend.c): a target machine
// for the options' CPU (NULL with a message), the pass pipeline of an
// optimisation level (0, or -1 with a message).
LLVMTargetMachineRef llvm_target_machine(int opt_level, const char *cpu, const char *features, char *err,
                                         size_t errlen);
int llvm_run_passes(LLVMModuleRef m, LLVMTargetMachineRef tm, int opt_level, char *err, size_t errlen);
// llvm_split.c: a function's instruction count; the split of g's verified
// module into nparts (the assignment and the module's bitcode); what part
// keeps of a module (in place); a part's thread.
long llvm_fn_size(LLVMValueRef fn);
LlvmSplit *llvm_split_new(LlvmGen *g, int nparts);
void llvm_split_free(LlvmSplit *s);
void llvm_split_prune(const LlvmSplit *s, LLVMModuleRef m, int part);
int llvm_part_start(LlvmPart *p, char *err, size_t errlen);
void llvm_part_join(LlvmPart *p);

static inline double llvm_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
