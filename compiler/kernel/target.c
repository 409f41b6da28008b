// target.c — the targets a schedule can be made for (target.h): their
// hardware facts and scheduling parameters, as data.
//
// cpu: the x86-64 host this project is developed and measured on (Zen 4,
// AVX-512, 2 cores, 32 KiB L1d and 1 MiB L2 per core, 32 MiB L3), with the
// kernel library (kernels/cpu: f32 GEMM and convolutions) linked into every
// program. Its scheduling parameters are the ones the kernel lowering
// hard-coded before it was split from the schedule (pools up to 16 taps
// unrolled, 64 chunks per parallel loop), measured with bench/conv_speed.c
// (docs/design/kir.md).
// gpu: an sm_90 part (warp 32, 48 KiB static shared memory per block, 1024
// threads per block), printed by the CUDA backend; loop nests are flattened
// onto blocks of 256 threads, long reductions over few rows get a block of
// 256 threads per row (a whole-buffer reduction the block of 1024), and the
// gpu recipes (schedule_gpu.c) replace the scattering conv gradients; a tiled
// GEMM of fewer blocks than the 132 SMs of an H100 / H200 (judged with every
// symbolic size at 64) is split over its K segments. The numbers are first
// choices, not yet measured on a GPU.
#include "target.h"

#include <string.h>

#define MAP(m) (1u << KMAP_##m)

const KirTarget kir_target_cpu = {
    .name = "cpu",
    .kind = KT_CPU,
    .maps = MAP(SERIAL) | MAP(CHUNK) | MAP(VECTOR),
    .vector_bytes = 64,
    .cores = 2,
    .l1d_bytes = 32 << 10,
    .l2_bytes = 1 << 20,
    .l3_bytes = 32 << 20,
    .chunks = 64,
    .chunk_min_work = 8192,
    .pool_max_taps = 16,
    .recipes = true,
    .library = true,
};

const KirTarget kir_target_gpu = {
    .name = "gpu",
    .kind = KT_GPU,
    .maps = MAP(SERIAL) | MAP(GPU_BLOCK) | MAP(GPU_THREAD),
    .warp_size = 32,
    .shared_bytes = 48 << 10,
    .max_threads = 1024,
    .block_threads = 256,
    .reduce_threads = 256,
    .reduce_min = 512,
    .reduce_rows = 65536,
    .gemm_tile = 64,
    .gemm_ktile = 16,
    .sms = 132,
    .plan_dim = 64,
    .gemm_mma = true,
};

const KirTarget *kir_target_find(const char *name) {
  static const KirTarget *const all[] = {&kir_target_cpu, &kir_target_gpu};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    if (name && !strcmp(all[i]->name, name)) return all[i];
  return NULL;
}
