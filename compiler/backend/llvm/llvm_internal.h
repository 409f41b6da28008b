// llvm_internal.h — what the LLVM backend's files share: the generator state
// (llvm_backend.c owns the context, module, target machine, program entry
// points, passes, emission and the JIT) and the kernel printer
// (llvm_kernel.c: one LLVM function per kernel, statements, expressions,
// outlined parallel loops, the Philox helper).
#ifndef MLC_LLVM_INTERNAL_H
#define MLC_LLVM_INTERNAL_H

#include "llvm.h"

#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

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
  LLVMValueRef parfor;            // mlc_parallel_for, declared on first use
  const KirProgram *p;            // program being printed
  const KirKernel *k;             // kernel being printed
  int nouter;                     // outlined loops so far in this kernel
  // Kernels compiled so far, by kir_kernel_key (open addressing, power-of-2
  // capacity): a kernel whose key is here is called, not printed again.
  struct LlvmKernelFn *kfns;
  int nkfns, capkfns;
  int kernels_printed, kernels_shared;
};

typedef struct LlvmKernelFn {
  char *key;                      // malloc'd canonical text; NULL: empty slot
  uint64_t hash;
  LLVMValueRef fn;
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
void llvm_param_attr(LlvmGen *g, LLVMValueRef fn, unsigned idx, const char *name);
// Starts fn's entry block (allocas go to its top through g->ab).
// optnone + noinline: no IR passes and the fast instruction selector and
// register allocator, for code that runs once per program call.
void llvm_fn_unoptimized(LlvmGen *g, LLVMValueRef fn);
void llvm_fn_begin(LlvmGen *g, LLVMValueRef fn);
LLVMValueRef llvm_alloca(LlvmGen *g, LLVMTypeRef t, const char *name);
LLVMValueRef llvm_expr(LlvmGen *g, LlvmEnv *e, const KExpr *x);
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

#endif
