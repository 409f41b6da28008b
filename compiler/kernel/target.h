// target.h — what a schedule knows about the machine it schedules for
// (target.c holds the tables): data only, as QBE's `struct Target` and
// tinygrad's renderer capabilities are. The scheduling pass (schedule.h)
// reads it; backends never do: what it decides is written into the kernel
// IR (maps, grains, barriers, recipes' loop nests).
//
// Two parts: hardware facts (vector width, cores, caches; for GPUs warp
// size, shared memory and threads per block), and the scheduling
// parameters the CPU recipes were measured with on this project's host
// (docs/design/kir.md, "Performance").
#ifndef MLC_TARGET_H
#define MLC_TARGET_H

#include "kir.h"

typedef enum {
  KT_CPU, // LLVM backend: chunk loops on the runtime's thread pool
  KT_GPU, // a CUDA printer: gpu-block / gpu-thread loops, launches at barriers
} KirTargetKind;

typedef struct KirTarget {
  const char *name;       // as kir_print writes it after `target`
  KirTargetKind kind;
  unsigned maps;          // bit (1u << KLoopMap) per map the target's backend prints
  // ---- hardware
  int vector_bytes;       // SIMD register width (64: AVX-512); 0 for none
  int cores;              // cores the program is expected to use
  int64_t l1d_bytes, l2_bytes, l3_bytes; // data caches (per core, per core, shared)
  int warp_size;          // GPU: threads that run in lockstep
  int64_t shared_bytes;   // GPU: shared memory per block
  int max_threads;        // GPU: threads per block at most
  // ---- scheduling parameters
  int chunks;             // CPU: a chunk loop of n iterations gets grain ceil(n / chunks):
                          // chunking depends on n alone, never on the thread count
  int64_t chunk_min_work; // CPU: ... and at least this many expression nodes of work a chunk
                          // (when an iteration's work is a constant): less is not worth
                          // publishing to the pool
  int pool_max_taps;      // CPU pool recipe: window sizes up to this are unrolled
  bool recipes;           // use the op recipes (schedule.c) at all
  bool library;           // CPU: kernels/cpu (mlc_kernels.h) is linked with the program, so
                          // f32 matmuls and convolutions may be `call`s of it (kir.h)
  bool conv_winograd;     // CPU, with the library: 3x3 stride-1 forward and input-gradient convolutions call it with
                          // the winograd flag (`mlc build --conv winograd`; off in the tables)
  int block_threads;      // GPU: threads per block of a flattened loop nest
  int reduce_threads;     // GPU: threads of a block that reduces one row
  int64_t reduce_min;     // GPU: a reduction of at least this many terms (or an unknown
                          // count) is spread over a block's threads
  int64_t reduce_rows;    // GPU: ... when it is one of at most this many rows (a constant)
  int gemm_tile;          // GPU: a tiled GEMM's block computes gemm_tile x gemm_tile outputs,
                          // 4 x 4 per thread ((gemm_tile / 4)^2 threads)
  int gemm_ktile;         // GPU: ... staging gemm_ktile terms of A and B per step
  int sms;                // GPU: streaming multiprocessors (132: H100 / H200 SXM); a tiled GEMM
                          // of fewer blocks than this is split over its K segments (split-K)
  int64_t plan_dim;       // GPU: a symbolic size is judged at this value when the schedule
                          // chooses a form (split-K); the program still serves every size
  bool gemm_mma;          // GPU: a bf16 / f16 tiled GEMM's tile products are tensor-core mma
                          // statements (kir.h's KMma; PTX mma.sync m16n8k16 needs sm_80)
} KirTarget;

// The CPU this project builds for (an AVX-512 Zen 4 host; every choice the
// LLVM backend made before schedules existed), and a CUDA GPU (sm_90).
extern const KirTarget kir_target_cpu, kir_target_gpu;
// A target by name ("cpu", "gpu"), or NULL.
const KirTarget *kir_target_find(const char *name);

static inline bool kir_target_has(const KirTarget *t, KLoopMap m) {
  return (t->maps >> m) & 1u;
}

#endif
