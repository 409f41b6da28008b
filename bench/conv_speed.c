// conv_speed.c — how fast the compiled conv2d, its two gradients and
// max/avg pooling (and their gradients) run on the fashion_cnn shapes (examples/fashion_cnn.model,
// batch 64). Each kernel is one graph IR function, lowered to kernel IR
// (kir_lower_func), scheduled for the CPU target and memory-planned as
// `mlc build` does (kir_schedule, kir_plan_memory), compiled by the LLVM
// backend (O3, host CPU) and run in-process through ORC LLJIT, as
// tests/backend/llvm/test_llvm.c does.
//
// Build (not part of the CMake build; needs build-perf's libraries):
//   cmake -S . -B build-perf -G Ninja -DMLC_WERROR=ON && ninja -C build-perf mlc_driver mlc_rt
//   cc -O2 -std=gnu17 -D_GNU_SOURCE -Icompiler -I. -Ibuild-perf/gen -Iruntime/include -Iruntime -Ikernels/cpu
//      -isystem /usr/lib/llvm-19/include bench/conv_speed.c -o build-perf/conv_speed
//      -Wl,--start-group build-perf/libmlc_*.a -Wl,--end-group -L/usr/lib/llvm-19/lib -lLLVM-19
//      -lcjson -lz -lm -lpthread           (one command line)
//
// Usage: conv_speed [THREADS [REPS]]   THREADS 1 (default): no pool, one
//        core; N > 1: an N-thread mlc_rt pool. REPS: timed runs (default 10).
//        CONV_SPEED_IR=TEXT in the environment prints, to stderr, the
//        optimised LLVM IR of each kernel whose name contains TEXT.
//
// Prints one line per kernel: the best wall time over REPS runs and
// GFLOP/s, counting 2 flops per multiply-add of the textbook loop nest
// (padding taps excluded) and one compare (or add) per window element for
// pooling.
#include "backend/llvm/llvm.h"
#include "kernel/kir_lower.h"
#include "kernel/memplan.h"
#include "kernel/schedule.h"
#include "tests/backend/llvm/jit_runtime.h" // the runtime functions generated code calls
#include "mlc_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Bench {
  const char *name;
  const char *ir;   // graph IR module text: one function f
  double flops;     // per run
} Bench;

// Multiply-adds of a stride-1, 3x3, pad-1 convolution: per output element,
// the in-range taps (a border row/column loses one tap per side).
static double conv_macs(double n, double co, double ci, double hw) {
  double taps = (3 * hw - 2) * (3 * hw - 2); // sum over (i, j) of in-range taps
  return n * co * ci * taps;
}

#define CONV_ATTRS "{stride = [1, 1], padding = [1, 1], dilation = [1, 1], groups = 1}"
#define POOL_ATTRS "{kernel = [2, 2], stride = [2, 2], padding = [0, 0]}"

static Bench benches[] = {
  {"conv1 fwd        [64,1,28,28]*[32,1,3,3]",
   "module B\nfunc f(%x: f32[64, 1, 28, 28], %w: f32[32, 1, 3, 3]) -> (f32[64, 32, 28, 28]) {\n"
   "  %0 = conv2d(%x, %w) " CONV_ATTRS " : f32[64, 32, 28, 28]\n  return %0\n}\n", 0},
  {"conv1 grad_weight",
   "module B\nfunc f(%dy: f32[64, 32, 28, 28], %x: f32[64, 1, 28, 28]) -> (f32[32, 1, 3, 3]) {\n"
   "  %0 = conv2d_grad_weight(%dy, %x) " CONV_ATTRS " : f32[32, 1, 3, 3]\n  return %0\n}\n", 0},
  {"conv2 fwd        [64,32,14,14]*[64,32,3,3]",
   "module B\nfunc f(%x: f32[64, 32, 14, 14], %w: f32[64, 32, 3, 3]) -> (f32[64, 64, 14, 14]) {\n"
   "  %0 = conv2d(%x, %w) " CONV_ATTRS " : f32[64, 64, 14, 14]\n  return %0\n}\n", 0},
  {"conv2 grad_input",
   "module B\nfunc f(%dy: f32[64, 64, 14, 14], %w: f32[64, 32, 3, 3]) -> (f32[64, 32, 14, 14]) {\n"
   "  %0 = conv2d_grad_input(%dy, %w) " CONV_ATTRS " : f32[64, 32, 14, 14]\n  return %0\n}\n", 0},
  {"conv2 grad_weight",
   "module B\nfunc f(%dy: f32[64, 64, 14, 14], %x: f32[64, 32, 14, 14]) -> (f32[64, 32, 3, 3]) {\n"
   "  %0 = conv2d_grad_weight(%dy, %x) " CONV_ATTRS " : f32[64, 32, 3, 3]\n  return %0\n}\n", 0},
  {"pool1 max        [64,32,28,28] 2x2",
   "module B\nfunc f(%x: f32[64, 32, 28, 28]) -> (f32[64, 32, 14, 14]) {\n"
   "  %0 = max_pool2d(%x) " POOL_ATTRS " : f32[64, 32, 14, 14]\n  return %0\n}\n", 0},
  {"pool1 max grad",
   "module B\nfunc f(%dy: f32[64, 32, 14, 14], %x: f32[64, 32, 28, 28]) -> (f32[64, 32, 28, 28]) {\n"
   "  %0 = max_pool2d_grad(%dy, %x) " POOL_ATTRS " : f32[64, 32, 28, 28]\n  return %0\n}\n", 0},
  {"pool2 max        [64,64,14,14] 2x2",
   "module B\nfunc f(%x: f32[64, 64, 14, 14]) -> (f32[64, 64, 7, 7]) {\n"
   "  %0 = max_pool2d(%x) " POOL_ATTRS " : f32[64, 64, 7, 7]\n  return %0\n}\n", 0},
  {"pool2 max grad",
   "module B\nfunc f(%dy: f32[64, 64, 7, 7], %x: f32[64, 64, 14, 14]) -> (f32[64, 64, 14, 14]) {\n"
   "  %0 = max_pool2d_grad(%dy, %x) " POOL_ATTRS " : f32[64, 64, 14, 14]\n  return %0\n}\n", 0},
  {"pool1 avg        [64,32,28,28] 2x2",
   "module B\nfunc f(%x: f32[64, 32, 28, 28]) -> (f32[64, 32, 14, 14]) {\n"
   "  %0 = avg_pool2d(%x) " POOL_ATTRS " : f32[64, 32, 14, 14]\n  return %0\n}\n", 0},
  {"pool1 avg grad",
   "module B\nfunc f(%dy: f32[64, 32, 14, 14], %x: f32[64, 32, 28, 28]) -> (f32[64, 32, 28, 28]) {\n"
   "  %0 = avg_pool2d_grad(%dy, %x) " POOL_ATTRS " : f32[64, 32, 28, 28]\n  return %0\n}\n", 0},
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void set_flops(void) {
  benches[0].flops = 2 * conv_macs(64, 32, 1, 28);
  benches[1].flops = benches[0].flops;
  benches[2].flops = 2 * conv_macs(64, 64, 32, 14);
  benches[3].flops = benches[2].flops;
  benches[4].flops = benches[2].flops;
  benches[5].flops = 64.0 * 32 * 28 * 28;
  benches[6].flops = benches[5].flops;
  benches[7].flops = 64.0 * 64 * 14 * 14;
  benches[8].flops = benches[7].flops;
  benches[9].flops = benches[5].flops;
  benches[10].flops = benches[5].flops;
}

// Compiles b, runs it reps times on zero-initialised buffers, prints a line.
static int run_bench(const Bench *b, MlcPool *pool, int reps) {
  Arena *a = arena_new();
  DiagSink ds;
  diag_init(&ds, a);
  char err[512] = "";
  IrModule *m = ir_parse(a, src_from_string(a, "bench.ir", b->ir, strlen(b->ir)), &ds);
  if (!m || !ir_verify(m, &ds)) return fprintf(stderr, "%s: module does not verify\n", b->name), 1;
  KirProgram *p = kir_lower_func(a, m, VEC_AT(m->funcs, IrFunc, 0), err, sizeof err);
  if (p && (!kir_schedule(p, &kir_target_cpu, &ds) || !kir_plan_memory(p, &ds) || !kir_verify(p, &ds))) {
    diag_print(&ds, stderr);
    return fprintf(stderr, "%s: kernel IR passes failed\n", b->name), 1;
  }
  BackendOptions o = backend_default_options();
  o.threads = pool != NULL;
  LlvmGen *g = p ? llvm_gen_new(&o, err, sizeof err) : NULL;
  if (g && !llvm_gen_add(g, p, err, sizeof err) && getenv("CONV_SPEED_IR") && strstr(b->name, getenv("CONV_SPEED_IR"))
      && !llvm_gen_optimize(g, err, sizeof err)) { // CONV_SPEED_IR=NAME: print NAME's optimised LLVM IR
    StrBuf sb = {0};
    llvm_gen_print(g, &sb);
    fputs(sb.data, stderr);
    sb_free(&sb);
  }
  LlvmJit *j = g && !err[0] ? llvm_jit_new(g, jit_runtime, JIT_RUNTIME_N, err, sizeof err) : NULL;
  KirEntryFn run = j ? (KirEntryFn)(uintptr_t)llvm_jit_lookup(j, "mlc_f", err, sizeof err) : NULL;
  KirScratchFn scratch = j ? (KirScratchFn)(uintptr_t)llvm_jit_lookup(j, "mlc_f_scratch_bytes", err, sizeof err) : NULL;
  if (!run || !scratch) return fprintf(stderr, "%s: %s\n", b->name, err), 1;
  int64_t dims[64 * KIR_ABI_MAX_RANK] = {0};
  void *in[8] = {0}, *out[8] = {0};
  for (int i = 0; i < p->bufs.len; i++) {
    KirBuf *kb = kir_buf(p, i);
    int64_t n = 1;
    for (int d = 0; kb->kind != KBUF_TEMP && d < kb->rank; d++) {
      int64_t v = 0;
      kir_eval_i64(kb->dims[d], NULL, &v);
      n *= v;
      if (kb->kind == KBUF_INPUT) dims[kb->index * KIR_ABI_MAX_RANK + d] = v;
    }
    if (kb->kind == KBUF_INPUT) { // values in [0.25, 0.5): nothing overflows or goes denormal;
      in[kb->index] = malloc((size_t)n * 4); // pseudo-random, so a max's branches are not predictable
      uint32_t r = 12345u + (uint32_t)kb->index;
      for (int64_t e = 0; e < n; e++) {
        r = r * 1664525u + 1013904223u;
        ((float *)in[kb->index])[e] = 0.25f + 0.25f * (float)(r >> 8) * 0x1p-24f;
      }
    }
    if (kb->kind == KBUF_OUTPUT) out[kb->index] = calloc((size_t)n, 4);
  }
  int64_t sb = scratch(dims);
  void *sc = aligned_alloc(64, (size_t)((sb + 63) / 64 * 64 + 64));
  double best = 1e30;
  const char *msg = NULL;
  for (int r = 0; r <= reps; r++) { // the first run warms caches and pages
    double t0 = now();
    if (run(dims, in, out, NULL, sc, 1, pool, &msg)) return fprintf(stderr, "%s: failed\n", b->name), 1;
    double t = now() - t0;
    if (r && t < best) best = t;
  }
  printf("%-44s %9.3f ms %8.2f GFLOP/s\n", b->name, best * 1e3, b->flops / best * 1e-9);
  free(sc);
  for (int i = 0; i < 8; i++) free(in[i]), free(out[i]);
  llvm_jit_free(j);
  llvm_gen_free(g);
  arena_free(a);
  return 0;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1, reps = argc > 2 ? atoi(argv[2]) : 10;
  MlcPool *pool = threads > 1 ? mlc_pool_new(threads) : NULL;
  set_flops();
  printf("conv_speed: %d thread%s, best of %d runs\n", threads, threads > 1 ? "s" : "", reps);
  int rc = 0;
  for (size_t i = 0; i < sizeof benches / sizeof benches[0]; i++) rc |= run_bench(&benches[i], pool, reps);
  if (pool) mlc_pool_free(pool);
  return rc;
}
