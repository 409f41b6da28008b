// elementwise.cu — a fused elementwise kernel in mlc's CUDA C subset: one
// thread per element over a grid-stride loop. Compiled by NVRTC
// (tests/backend/cuda/test_nvrtc.c) and run under the CPU emulation
// (test_cuda_emu.c) and on a GPU (test_cuda_gpu.c).
#include "mlc_cuda.h"

// y[i] = a * x[i] + max(b[i], 0) for i < n; x, b, y: (n)
MLC_KERNEL MLC_LAUNCH_BOUNDS(256)
ew_axpy_relu(const float *MLC_RESTRICT x, const float *MLC_RESTRICT b, float *MLC_RESTRICT y,
             float a, int64_t n) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = a * x[i] + fmaxf(b[i], 0.0f);
}
MLC_ENTRY5(ew_axpy_relu, const float *, const float *, float *, float, int64_t)
