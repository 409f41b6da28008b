// cuda_rt_internal.h — what the runtime's CUDA files share: the driver's
// entry points (resolved with dlsym under the names cuda.h's macros give,
// so cuMemAlloc is looked up as "cuMemAlloc_v2"), the MlcCuda behind the
// public handle, and the checked-call macro.
#ifndef MLC_CUDA_RT_INTERNAL_H
#define MLC_CUDA_RT_INTERNAL_H

#include <cuda.h>

#include "core/rt_util.h" // rt_err
#include "cuda_rt.h"

// Every driver call the runtime makes; the table in cuda_rt.c resolves them.
#define MLC_CU_FUNCS(X)                                                        \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)        \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
  X(cuCtxSetCurrent) X(cuModuleLoadDataEx) X(cuModuleUnload)                   \
  X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuLaunchKernel)               \
  X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost)                \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemsetD8Async)                \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)                  \
  X(cuStreamWaitEvent) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)     \
  X(cuEventSynchronize)

struct MlcCuda {
  void *lib; // the dlopen'd libcuda.so.1
#define X(fn) __typeof__(fn) *p_##fn;
  MLC_CU_FUNCS(X)
#undef X
  CUdevice dev;
  CUcontext ctx;       // the device's primary context, retained
  CUstream stream[2];  // MLC_CUDA_COMPUTE, MLC_CUDA_COPY
  CUdeviceptr arena;
  size_t arena_bytes;
  MlcCudaInfo info;
};

// 0, or -1 with "cuda_rt.c:LINE: CALL: CUDA_ERROR_NAME (description)".
int mlc_cuda_check(const MlcCuda *c, CUresult rc, const char *call, const char *file,
                   int line, char *err, size_t errlen);
#define MLC_CU(c, fn, args, err, errlen)                                        \
  mlc_cuda_check((c), (c)->p_##fn args, #fn, __FILE__, __LINE__, err, errlen)

// The stream handle for MLC_CUDA_COMPUTE / MLC_CUDA_COPY; NULL (and err) otherwise.
CUstream mlc_cuda_stream(const MlcCuda *c, int stream, char *err, size_t errlen);

#endif
