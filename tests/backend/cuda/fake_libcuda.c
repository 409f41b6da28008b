// fake_libcuda.c — a stand-in libcuda.so.1 for testing runtime/cuda without a
// GPU: the driver calls cuda_rt.c makes, implemented on the CPU. Built as
// build/tests/fake-cuda/libcuda.so.1 and found only by the tests that put
// that folder on LD_LIBRARY_PATH (nothing links it, no rpath names it).
//
// It is cuda.h's prototypes, so the exported names are the versioned ones
// the real driver has (cuMemAlloc_v2, ...). Device memory is host memory
// (a CUdeviceptr is a pointer), streams and events complete at once, and a
// module is the hand-written test kernels compiled as C (fake_kernels.c):
// cuModuleLoadDataEx checks that it got a cubin (an ELF) or PTX (text with
// ".target sm_"), remembers which, and cuLaunchKernel runs the kernel under
// the CPU emulation (kernels/cuda/cuda_emu.h).
//
// Environment, for the tests' cases:
//   MLC_FAKE_CUDA_INIT=N      cuInit returns N (100: CUDA_ERROR_NO_DEVICE)
//   MLC_FAKE_CUDA_DEVICES=N   cuDeviceGetCount gives N (default 1)
//   MLC_FAKE_CUDA_SM=NN       the compute capability (default 90)
//   MLC_FAKE_CUDA_DRIVER=N    cuDriverGetVersion (default 13000)
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_emu.h"

// fake_kernels.c: the test kernels' emulation entries by name.
typedef struct FakeKernel {
  const char *name;
  MlcEmuEntry entry;
} FakeKernel;
extern const FakeKernel fake_kernels[];

struct CUmod_st {
  bool ptx; // what was loaded
};

static int env_int(const char *name, int def) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : def;
}

// ---- errors, driver, device ------------------------------------------------------------------
CUresult cuGetErrorName(CUresult e, const char **s) {
  switch (e) {
  case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
  case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
  case CUDA_ERROR_LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; return CUDA_SUCCESS;
  default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuGetErrorString(CUresult e, const char **s) {
  const char *name;
  if (cuGetErrorName(e, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *s = "as the fake driver reports it";
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  return (CUresult)env_int("MLC_FAKE_CUDA_INIT", 0);
}

CUresult cuDriverGetVersion(int *v) {
  *v = env_int("MLC_FAKE_CUDA_DRIVER", 13000);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
  *n = env_int("MLC_FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal < 0 || ordinal >= env_int("MLC_FAKE_CUDA_DEVICES", 1)) return CUDA_ERROR_INVALID_VALUE;
  *d = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  (void)d;
  snprintf(name, (size_t)len, "mlc fake CUDA device (CPU emulation)");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  int sm = env_int("MLC_FAKE_CUDA_SM", 90);
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = sm / 10; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = sm % 10; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = MLC_EMU_MAX_SHARED; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) {
  (void)d;
  *bytes = (size_t)1 << 30;
  return CUDA_SUCCESS;
}

static int ctx_token;
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d;
  *c = (CUcontext)&ctx_token;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
  (void)d;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext c) { return c == (CUcontext)&ctx_token ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

// ---- modules and launches ----------------------------------------------------------------------
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *opt, void **val) {
  (void)n, (void)opt, (void)val;
  const char *s = image;
  bool elf = !memcmp(s, "\177ELF", 4), ptx = !elf && strstr(s, ".target sm_");
  if (!elf && !ptx) return CUDA_ERROR_INVALID_IMAGE;
  *m = malloc(sizeof **m);
  if (!*m) return CUDA_ERROR_OUT_OF_MEMORY;
  (*m)->ptx = ptx;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) {
  free(m);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  for (const FakeKernel *k = fake_kernels; k->name; k++)
    if (!strcmp(k->name, name)) {
      *f = (CUfunction)(void *)k;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  (void)f, (void)a;
  return v <= MLC_EMU_MAX_SHARED ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
  (void)s;
  if (extra) return CUDA_ERROR_INVALID_VALUE;
  const FakeKernel *k = (const FakeKernel *)(void *)f;
  char err[512];
  if (mlc_emu_launch(k->entry, params, mlc_dim3(gx, gy, gz), mlc_dim3(bx, by, bz), shared, err,
                     sizeof err) == 0)
    return CUDA_SUCCESS;
  fprintf(stderr, "fake libcuda: %s: %s\n", k->name, err);
  return CUDA_ERROR_LAUNCH_FAILED;
}

// ---- memory, streams, events -------------------------------------------------------------------
CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
  void *m = malloc(n);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(m, 0xa5, n); // device memory starts undefined
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
CUresult cuMemAllocHost(void **p, size_t n) {
  *p = malloc(n);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) {
  free(p);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s) {
  (void)s;
  memcpy((void *)(uintptr_t)d, h, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s) {
  (void)s;
  memcpy(h, (const void *)(uintptr_t)d, n);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  (void)s;
  memset((void *)(uintptr_t)d, v, n);
  return CUDA_SUCCESS;
}

static int stream_token[8], event_token[64];
static int nstreams, nevents;
CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  if (nstreams == 8) return CUDA_ERROR_OUT_OF_MEMORY;
  *s = (CUstream)&stream_token[nstreams++];
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream s) {
  (void)s;
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream s) {
  (void)s;
  return CUDA_SUCCESS;
}
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  (void)s, (void)flags;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuEventCreate(CUevent *e, unsigned flags) {
  (void)flags;
  if (nevents == 64) return CUDA_ERROR_OUT_OF_MEMORY;
  *e = (CUevent)&event_token[nevents++];
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent e) {
  (void)e;
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream s) {
  (void)s;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuEventSynchronize(CUevent e) { return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

// NVRTC itself opens libcuda.so.1 when it is on the path and asks for the
// driver's private tables; the fake has none.
CUresult cuGetExportTable(const void **table, const CUuuid *id) {
  (void)id;
  *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}
