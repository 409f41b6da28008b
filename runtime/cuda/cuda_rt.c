// cuda_rt.c — opening the CUDA driver and a device, and what runs on it:
// the arena, pinned host memory, asynchronous copies, launches, stream
// synchronisation (cuda_rt.h).
//
// mlc_cuda_open: dlopen("libcuda.so.1"), every entry point of MLC_CU_FUNCS
// by its versioned name, cuInit, the device, its attributes, the primary
// context made current, two non-blocking streams. Each step that fails
// undoes the ones before it.
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_rt_internal.h"

#define STR(x) #x
#define XSTR(x) STR(x) // expands cuda.h's macro first: "cuMemAlloc_v2"

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

int mlc_cuda_check(const MlcCuda *c, CUresult rc, const char *call, const char *file,
                   int line, char *err, size_t errlen) {
  if (rc == CUDA_SUCCESS) return 0;
  const char *name = NULL, *desc = NULL;
  if (c->p_cuGetErrorName(rc, &name) != CUDA_SUCCESS) name = NULL;
  if (c->p_cuGetErrorString(rc, &desc) != CUDA_SUCCESS) desc = NULL;
  if (name)
    return rt_err(err, errlen, "%s:%d: %s: %s (%s)", base_name(file), line, call, name,
                  desc ? desc : "no description");
  return rt_err(err, errlen, "%s:%d: %s: CUDA error %d", base_name(file), line, call, (int)rc);
}

CUstream mlc_cuda_stream(const MlcCuda *c, int stream, char *err, size_t errlen) {
  if (stream != MLC_CUDA_COMPUTE && stream != MLC_CUDA_COPY) {
    rt_err(err, errlen, "stream %d is neither MLC_CUDA_COMPUTE nor MLC_CUDA_COPY", stream);
    return NULL;
  }
  return c->stream[stream];
}

// ---- opening -----------------------------------------------------------------------------------
static int load_driver(MlcCuda *c, char *err, size_t errlen) {
  c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!c->lib) {
    const char *why = dlerror();
    if (!why || strstr(why, "cannot open shared object file"))
      return rt_err(err, errlen, "no CUDA driver (libcuda.so.1 not found)");
    return rt_err(err, errlen, "no CUDA driver (libcuda.so.1 could not be loaded: %s)", why);
  }
#define X(fn)                                                                  \
  *(void **)&c->p_##fn = dlsym(c->lib, XSTR(fn));                              \
  if (!c->p_##fn)                                                              \
    return rt_err(err, errlen, "no usable CUDA driver (libcuda.so.1 has no %s; a driver older "   \
                  "than CUDA 12?)", XSTR(fn));
  MLC_CU_FUNCS(X)
#undef X
  return 0;
}

// cuInit and the device; "no CUDA device" when there is none.
static int init_device(MlcCuda *c, int ordinal, char *err, size_t errlen) {
  CUresult rc = c->p_cuInit(0);
  if (rc == CUDA_ERROR_NO_DEVICE) return rt_err(err, errlen, "no CUDA device");
  if (rc == CUDA_ERROR_STUB_LIBRARY)
    return rt_err(err, errlen, "no CUDA driver (libcuda.so.1 is the CUDA toolkit's stub library)");
  if (MLC_CU(c, cuInit, (0), err, errlen)) return -1;
  int n = 0;
  if (MLC_CU(c, cuDeviceGetCount, (&n), err, errlen)) return -1;
  if (n == 0) return rt_err(err, errlen, "no CUDA device");
  if (ordinal < 0 || ordinal >= n)
    return rt_err(err, errlen, "no CUDA device %d (there %s %d)", ordinal, n == 1 ? "is" : "are", n);
  return MLC_CU(c, cuDeviceGet, (&c->dev, ordinal), err, errlen);
}

static int attribute(MlcCuda *c, CUdevice_attribute a, int *v, char *err, size_t errlen) {
  return MLC_CU(c, cuDeviceGetAttribute, (v, a, c->dev), err, errlen);
}

static int query_info(MlcCuda *c, char *err, size_t errlen) {
  MlcCudaInfo *in = &c->info;
  int major = 0, minor = 0;
  if (MLC_CU(c, cuDriverGetVersion, (&in->driver_version), err, errlen) ||
      MLC_CU(c, cuDeviceGetName, (in->name, (int)sizeof in->name, c->dev), err, errlen) ||
      MLC_CU(c, cuDeviceTotalMem, (&in->total_mem, c->dev), err, errlen) ||
      attribute(c, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major, err, errlen) ||
      attribute(c, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor, err, errlen) ||
      attribute(c, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &in->multiprocessors, err, errlen) ||
      attribute(c, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &in->max_threads_per_block, err,
                errlen) ||
      attribute(c, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &in->max_shared_optin,
                err, errlen))
    return -1;
  in->sm = 10 * major + minor;
  return 0;
}

static int init_context(MlcCuda *c, char *err, size_t errlen) {
  if (MLC_CU(c, cuDevicePrimaryCtxRetain, (&c->ctx, c->dev), err, errlen)) return -1;
  if (MLC_CU(c, cuCtxSetCurrent, (c->ctx), err, errlen)) return -1;
  for (int i = 0; i < 2; i++)
    if (MLC_CU(c, cuStreamCreate, (&c->stream[i], CU_STREAM_NON_BLOCKING), err, errlen)) return -1;
  return 0;
}

MlcCuda *mlc_cuda_open(int ordinal, char *err, size_t errlen) {
  MlcCuda *c = calloc(1, sizeof *c);
  if (!c) {
    rt_err(err, errlen, "out of memory");
    return NULL;
  }
  if (load_driver(c, err, errlen) || init_device(c, ordinal, err, errlen) ||
      query_info(c, err, errlen) || init_context(c, err, errlen)) {
    mlc_cuda_close(c);
    return NULL;
  }
  return c;
}

void mlc_cuda_close(MlcCuda *c) {
  if (!c) return;
  char ignore[256]; // nothing more to do when a release fails
  if (c->arena) MLC_CU(c, cuMemFree, (c->arena), ignore, sizeof ignore);
  for (int i = 0; i < 2; i++)
    if (c->stream[i]) MLC_CU(c, cuStreamDestroy, (c->stream[i]), ignore, sizeof ignore);
  if (c->ctx) MLC_CU(c, cuDevicePrimaryCtxRelease, (c->dev), ignore, sizeof ignore);
  if (c->lib) dlclose(c->lib);
  free(c);
}

const MlcCudaInfo *mlc_cuda_info(const MlcCuda *c) { return &c->info; }

int mlc_cuda_bind_thread(MlcCuda *c, char *err, size_t errlen) {
  return MLC_CU(c, cuCtxSetCurrent, (c->ctx), err, errlen);
}

// ---- memory ------------------------------------------------------------------------------------
int mlc_cuda_arena(MlcCuda *c, size_t bytes, MlcDevPtr *base, char *err, size_t errlen) {
  if (bytes == 0) bytes = 256;
  if (c->arena && bytes > c->arena_bytes) {
    if (MLC_CU(c, cuMemFree, (c->arena), err, errlen)) return -1;
    c->arena = 0;
    c->arena_bytes = 0;
  }
  if (!c->arena) {
    if (MLC_CU(c, cuMemAlloc, (&c->arena, bytes), err, errlen)) return -1;
    c->arena_bytes = bytes;
  }
  *base = c->arena;
  return 0;
}

void *mlc_cuda_host_alloc(MlcCuda *c, size_t bytes, char *err, size_t errlen) {
  void *p = NULL;
  if (MLC_CU(c, cuMemAllocHost, (&p, bytes ? bytes : 1), err, errlen)) return NULL;
  return p;
}

void mlc_cuda_host_free(MlcCuda *c, void *p) {
  char ignore[256];
  if (p) MLC_CU(c, cuMemFreeHost, (p), ignore, sizeof ignore);
}

int mlc_cuda_upload(MlcCuda *c, MlcDevPtr dst, const void *src, size_t n, int stream, char *err,
                    size_t errlen) {
  CUstream s = mlc_cuda_stream(c, stream, err, errlen);
  if (!s) return -1;
  return MLC_CU(c, cuMemcpyHtoDAsync, ((CUdeviceptr)dst, src, n, s), err, errlen);
}

int mlc_cuda_download(MlcCuda *c, void *dst, MlcDevPtr src, size_t n, int stream, char *err,
                      size_t errlen) {
  CUstream s = mlc_cuda_stream(c, stream, err, errlen);
  if (!s) return -1;
  return MLC_CU(c, cuMemcpyDtoHAsync, (dst, (CUdeviceptr)src, n, s), err, errlen);
}

int mlc_cuda_zero(MlcCuda *c, MlcDevPtr dst, size_t n, int stream, char *err, size_t errlen) {
  CUstream s = mlc_cuda_stream(c, stream, err, errlen);
  if (!s) return -1;
  return MLC_CU(c, cuMemsetD8Async, ((CUdeviceptr)dst, 0, n, s), err, errlen);
}

int mlc_cuda_sync(MlcCuda *c, int stream, char *err, size_t errlen) {
  if (stream != -1 && !mlc_cuda_stream(c, stream, err, errlen)) return -1;
  for (int i = 0; i < 2; i++)
    if ((stream == -1 || stream == i) && MLC_CU(c, cuStreamSynchronize, (c->stream[i]), err, errlen))
      return -1;
  return 0;
}

// ---- launches ----------------------------------------------------------------------------------
enum { DEFAULT_SHARED = 48 * 1024 }; // dynamic shared memory every kernel may use

int mlc_cuda_launch(MlcCuda *c, MlcCudaFunc *f, const unsigned grid[3], const unsigned block[3],
                    unsigned shared_bytes, int stream, void **params, char *err, size_t errlen) {
  CUstream s = mlc_cuda_stream(c, stream, err, errlen);
  if (!s) return -1;
  CUfunction fn = (CUfunction)f;
  if (shared_bytes > DEFAULT_SHARED &&
      MLC_CU(c, cuFuncSetAttribute,
             (fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared_bytes), err, errlen))
    return -1;
  return MLC_CU(c, cuLaunchKernel,
                (fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, s,
                 params, NULL),
                err, errlen);
}
