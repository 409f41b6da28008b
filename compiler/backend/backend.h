// backend.h — the narrow interface between the kernel IR and code
// generators, and the calling convention of generated programs.
//
// A backend prints kernel-IR programs (kir.h) that are scheduled for its
// target (kernel/schedule.h: loop maps, grains, captures, barriers) and
// memory-planned (kernel/memplan.h: every temporary's offset, the scratch
// size); it makes no decisions of its own (no fusion, no layout, no grain,
// no capture analysis). Identical kernels (kir_kernel_key) are printed once
// per session. One Backend value per code generator: open a session with
// options, add programs, finish (write the output), close.
//
// Generated program ABI (what `add` compiles each KirProgram p into), with
// PREFIX the session's symbol prefix ("mlc_" unless set):
//
//   int32_t PREFIX<p->name>(const int64_t *dims, void *const *inputs,
//                           void *const *outputs, void *const *state,
//                           void *scratch, uint64_t rng_seed, MlcPool *pool,
//                           const char **err);
//   int64_t PREFIX<p->name>_scratch_bytes(const int64_t *dims);
//
//   dims     argument shapes: dims[arg * KIR_ABI_MAX_RANK + d] is dim d of
//            argument `arg` (signature order); they bind the program's syms
//            (the batch dim stays a run-time value).
//   inputs   inputs[i]: the bytes of the KBUF_INPUT buffer with index i
//   outputs  outputs[i]: the KBUF_OUTPUT buffer with index i (written)
//   state    state[j]: the j-th KBUF_STATE buffer in p->bufs order (read,
//            and written in place by the program's stores)
//   scratch  at least PREFIX<name>_scratch_bytes(dims) bytes (the plan's
//            KirProgram.scratch), 64-byte aligned; every KBUF_TEMP buffer
//            lives at its planned byte offset (KirBuf.offset, a multiple
//            of 64)
//   rng_seed the run's RNG stream (KE_RNGSEED, InterpParams.rng_seed)
//   pool     thread pool for parallel loops (mlc_parallel_for, mlc_rt.h);
//            NULL runs every loop on the calling thread
//   err      on failure, set to the failed check's message (a constant)
//   returns  0, or 1 when a KS_CHECK failed (kernels after it do not run)
//
// Buffers hold dtypes as C does: f32 float, f64 double, i32 int32_t, i64
// int64_t, bool and u8 one byte, f16/bf16 two bytes (computed as f32).
#ifndef MLC_BACKEND_H
#define MLC_BACKEND_H

#include "kernel/kir.h"

enum { KIR_ABI_MAX_RANK = 8 };

typedef enum {
  BE_EMIT_OBJ,  // relocatable object file (.o)
  BE_EMIT_ASM,  // assembly text (.s)
  BE_EMIT_LLVM, // optimised LLVM IR text (.ll)
} BackendEmit;

typedef struct BackendOptions {
  const char *cpu;      // NULL or "native": the host CPU and its features;
                        // else a CPU name (x86-64-v3, znver4) with its defaults
  int opt_level;        // 0..3 (the pipeline default<O2> / default<O3>; 0: none)
  BackendEmit emit;
  bool threads;         // parallel loops go through mlc_parallel_for (else serial)
  const char *prefix;   // symbol prefix of entry points; NULL: "mlc_"
} BackendOptions;

// The options every backend starts from: native CPU, O3, object file,
// threads on, prefix "mlc_".
BackendOptions backend_default_options(void);
// One option as the driver spells it after its dashes: "cpu=NAME",
// "O0".."O3", "emit=obj|asm|llvm", "threads=on|off", "prefix=NAME".
// NAME strings are kept by pointer. 0, or -1 with a message in err.
int backend_set_option(BackendOptions *o, const char *opt, char *err,
                       size_t errlen);

typedef struct BackendSession BackendSession; // opaque, one per open

typedef struct Backend {
  const char *name; // "llvm"
  // Starts a session (one output file). NULL with a message in err on failure.
  BackendSession *(*open)(const BackendOptions *o, char *err, size_t errlen);
  // Compiles one program into the session. 0, or -1 with a message.
  int (*add)(BackendSession *s, const KirProgram *p, char *err, size_t errlen);
  // Verifies, optimises and writes everything added to `path` ("-": stdout
  // for text kinds). 0, or -1 with a message.
  int (*finish)(BackendSession *s, const char *path, char *err, size_t errlen);
  void (*close)(BackendSession *s);
} Backend;

// An entry point and its scratch-size function as the ABI above defines them.
typedef int32_t (*KirEntryFn)(const int64_t *dims, void *const *inputs,
                              void *const *outputs, void *const *state,
                              void *scratch, uint64_t rng_seed, void *pool,
                              const char **err);
typedef int64_t (*KirScratchFn)(const int64_t *dims);

#endif
