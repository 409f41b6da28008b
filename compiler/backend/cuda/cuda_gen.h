// cuda_gen.h — the CUDA C printer: kernel-IR programs scheduled for the gpu
// target and memory-planned in, two C texts out (emit.c prints the device
// side, emit_host.c the host side):
//
//   the device source  mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): one
//                      __global__ per launch, i.e. per top-level gpu-block
//                      loop of a kernel (its grid: the loop's trip count, its
//                      block: the largest gpu-thread trip count inside it),
//                      each followed by MLC_ENTRY<n> so the same text runs
//                      under the CPU emulation; NVRTC compiles it (nvrtc.h)
//   the host source    plain C: per program, a launcher that binds the syms,
//                      places every buffer (device addresses: the caller's
//                      inputs, outputs and state, the scratch block at the
//                      plan's offsets) and launches the kernels in order;
//                      the kernel and check-message tables
//
// Like the LLVM backend it decides nothing: the launch geometry is the
// schedule's gpu-block/gpu-thread maps, the shared memory its shared
// buffers, the barriers its barriers; a program it cannot print (another
// target, a top-level statement that is not a gpu-block loop, an f16/bf16
// buffer, a statement kind without a CUDA form) is refused with the reason.
// Kernels with equal text (kir_kernel_key, plus the buffers' kinds) are
// printed once for every program added.
//
// Host ABI, PREFIX the options' prefix (MlcLauncher: runtime/include/mlc_model.h):
//
//   int32_t PREFIX<p->name>(MlcLauncher *l, const int64_t *dims,
//                           const uint64_t *inputs, const uint64_t *outputs,
//                           const uint64_t *state, uint64_t scratch,
//                           uint64_t seed, uint64_t flag);
//   int64_t PREFIX<p->name>_scratch_bytes(const int64_t *dims);
//   const char *const PREFIXkernels[];  const int PREFIXnkernels;
//   const char *const PREFIXmessages[]; const int PREFIXnmessages;
//
// dims, inputs, outputs, state are as in backend.h's CPU ABI, with device
// addresses for pointers; scratch is the device address of the scratch
// block (256-byte aligned); flag the device address of a zeroed uint32_t.
// The launcher calls l->launch(l, k, grid, block, params) for each launch,
// k indexing PREFIXkernels, params cuLaunchKernel's kernelParams; it
// returns 0, or -1 when a launch failed (the launcher keeps the reason). A
// failed check stores its message's index + 1 in *flag (any one of the
// failed checks) and every later kernel does nothing; the caller reads the
// flag after the launches and reports PREFIXmessages[flag - 1].
#ifndef MLC_CUDA_GEN_H
#define MLC_CUDA_GEN_H

#include "nvrtc.h"

typedef struct CudaGen CudaGen;

typedef struct CudaGenOptions {
  const char *prefix; // host symbols (mlc_fashion_mlp_cu_); NULL: "mlc_cu_"
  const char *name;   // the device source's name ("fashion_mlp.cu"), for comments
} CudaGenOptions;

CudaGen *cuda_gen_new(const CudaGenOptions *o);
void cuda_gen_free(CudaGen *g);
// Prints program p (its kernels into the device source, its launcher into
// the host source). 0, or -1 with the reason in err.
int cuda_gen_add(CudaGen *g, const KirProgram *p, char *err, size_t errlen);
// The texts so far (NUL-terminated, owned by g). The host source's tables
// cover every program added.
const char *cuda_gen_device(CudaGen *g);
const char *cuda_gen_host(CudaGen *g);
// The device source's line map: one entry per __global__ (its lines, its
// name, the .model span of the kernel it prints), for NVRTC's messages.
const CudaKernelLines *cuda_gen_lines(const CudaGen *g, int *n);
// __global__ functions printed, and kernels that reused one printed before.
int cuda_gen_kernels(const CudaGen *g);
int cuda_gen_shared(const CudaGen *g);

#endif
