// jit.h — what the LLVM backend's tests share: a planned kernel IR program
// compiled by the backend into an ORC LLJIT, with its entry point and its
// scratch-size function looked up (backend.h's ABI; generated code calls
// the runtime's mlc_parallel_for for chunk loops and the kernel library for
// `call` statements: jit_runtime.h).
#ifndef MLC_TEST_JIT_H
#define MLC_TEST_JIT_H

#include "backend/llvm/llvm.h"
#include "mlc_rt.h"
#include "tests/backend/llvm/jit_runtime.h"

#include <stdio.h>
#include <string.h>

typedef struct Compiled {
  LlvmGen *g;
  LlvmJit *j;
  KirEntryFn run;
  KirScratchFn scratch;
} Compiled;

// false with the reason in why; release() either way.
static bool jit_compile(const KirProgram *p, const BackendOptions *o, Compiled *out, char *why, size_t n) {
  memset(out, 0, sizeof *out);
  char sym[300];
  if (!(out->g = llvm_gen_new(o, why, n))) return false;
  if (llvm_gen_add(out->g, p, why, n) || !(out->j = llvm_jit_new(out->g, jit_runtime, JIT_RUNTIME_N, why, n)))
    return false;
  snprintf(sym, sizeof sym, "mlc_%s", p->name);
  out->run = (KirEntryFn)(uintptr_t)llvm_jit_lookup(out->j, sym, why, n);
  snprintf(sym, sizeof sym, "mlc_%s_scratch_bytes", p->name);
  out->scratch = (KirScratchFn)(uintptr_t)llvm_jit_lookup(out->j, sym, why, n);
  return out->run && out->scratch;
}

static void release(Compiled *c) {
  llvm_jit_free(c->j);
  llvm_gen_free(c->g);
}

#endif
