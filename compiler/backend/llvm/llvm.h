// llvm.h — the LLVM CPU backend's public face: its Backend table and, below
// it, the generator and the in-process JIT for tests and tools.
#ifndef MLC_LLVM_H
#define MLC_LLVM_H

#include "backend/backend.h"

// ---- the LLVM CPU backend (llvm_backend.c) ---------------------------------------------
extern const Backend llvm_backend;

// The pieces below the Backend table, for tests and tools that want the
// module in memory (printed, or run in-process by ORC LLJIT).
typedef struct LlvmGen LlvmGen;
LlvmGen *llvm_gen_new(const BackendOptions *o, char *err, size_t errlen);
int llvm_gen_add(LlvmGen *g, const KirProgram *p, char *err, size_t errlen);
// LLVMVerifyModule, then the optimisation pipeline (once).
int llvm_gen_optimize(LlvmGen *g, char *err, size_t errlen);
// Writes the optimised module as o->emit says (optimises first if needed);
// once split, part 0's object.
int llvm_gen_write(LlvmGen *g, const char *path, char *err, size_t errlen);
// Before llvm_gen_optimize: the objects (emit=obj) come from this many
// parts of the module's kernels (1..8), then one of the kernels only rarely
// run programs call (llvm_gen_rare; compiled at O1) and one of the entry
// points (optnone; -O0 code generation), each optimised and emitted on its
// own thread while the caller's thread does part 0 (llvm_split.c). The
// parts depend on the module only. Assembly, IR text and the JIT take the
// whole module.
void llvm_gen_split(LlvmGen *g, int parts);
// Programs added after llvm_gen_rare(g, true) (until it is turned off) are
// rarely run (train_step_checked: only with --check-finite): a kernel no
// other program calls goes to the rarely run part of a split module.
void llvm_gen_rare(LlvmGen *g, bool rare);
// After llvm_gen_optimize: how many objects there are (1 unless split);
// part i >= 1's object written to path (waits for its thread).
int llvm_gen_parts(const LlvmGen *g);
int llvm_gen_write_part(LlvmGen *g, int part, const char *path, char *err, size_t errlen);
// For -v: what = 0, the caller's thread (verify, split, passes); what = i,
// part i's thread (read, passes, object).
void llvm_gen_times(const LlvmGen *g, int what, char *buf, size_t len);
// The module as LLVM IR text (as it stands: call llvm_gen_optimize first
// for the optimised form) appended to b.
void llvm_gen_print(LlvmGen *g, StrBuf *b);
void llvm_gen_free(LlvmGen *g);

// In-process execution: takes the (optimised) module out of g (g can then
// only be freed). The runtime functions generated code calls
// (mlc_parallel_for, the kernel library's mlc_sgemm, mlc_conv2d, ...) are
// bound to the addresses in syms[0..n), each cast to a plain function
// pointer type: {"mlc_parallel_for", (void (*)(void))mlc_parallel_for}
// (none is needed by programs compiled with threads off and no calls).
typedef struct LlvmJitSymbol {
  const char *name;
  void (*addr)(void);
} LlvmJitSymbol;
typedef struct LlvmJit LlvmJit;
LlvmJit *llvm_jit_new(LlvmGen *g, const LlvmJitSymbol *syms, int n, char *err,
                      size_t errlen);
void *llvm_jit_lookup(LlvmJit *j, const char *symbol, char *err,
                      size_t errlen);
void llvm_jit_free(LlvmJit *j);

#endif
