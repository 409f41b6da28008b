// cuda_rt.h — the runtime's CUDA layer: what the host glue of a program
// built with `--target cuda` calls to run its kernels on an NVIDIA GPU.
//
// The driver is opened with dlopen("libcuda.so.1") when mlc_cuda_open is
// called, so a CUDA build starts on a machine without one and says so:
//   no driver:  "no CUDA driver (libcuda.so.1 not found)"
//   no GPU:     "no CUDA device"
// The caller prints that one line and exits non-zero (or falls back to the
// CPU). Entry points are looked up by the versioned names cuda.h's macros
// give (cuMemAlloc_v2, cuMemcpyHtoDAsync_v2, ...); nothing links libcuda or
// the toolkit's stub. One MlcCuda holds the device's primary context
// (cuDevicePrimaryCtxRetain + cuCtxSetCurrent, never cuCtxCreate), two
// streams (MLC_CUDA_COMPUTE, MLC_CUDA_COPY) and the device arena.
//
// Pieces: cuda_rt.c (opening, memory, copies, launches), cuda_module.c (the
// bundle of cubins and PTX the compiler embeds, and module loading),
// cuda_stage.c (double-buffered uploads on the copy stream).
//
// Errors never exit: functions return -1 (or NULL) with one line in err;
// a failed driver call reads "cuda_rt.c:LINE: cuCALL: CUDA_ERROR_NAME
// (the driver's description)". The context is current on the thread that
// opened it; another thread (a loader's) calls mlc_cuda_bind_thread before
// its first call. Calls on one MlcCuda must not overlap.
#ifndef MLC_CUDA_RT_H
#define MLC_CUDA_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct MlcCuda MlcCuda;             // driver, device, context, streams, arena
typedef struct MlcCudaModule MlcCudaModule; // one loaded bundle
typedef struct MlcCudaFunc MlcCudaFunc;     // a kernel of a module (a CUfunction)
typedef uint64_t MlcDevPtr;                 // a device address (CUdeviceptr)

enum {
  MLC_CUDA_COMPUTE = 0, // the stream kernels run on
  MLC_CUDA_COPY = 1,    // the stream the next batch is uploaded on
};

typedef struct MlcCudaInfo {
  char name[256];          // "NVIDIA H200"
  int sm;                  // compute capability as 10 * major + minor: 90
  int driver_version;      // cuDriverGetVersion: 13000 is CUDA 13.0
  int multiprocessors;
  int max_threads_per_block;
  int max_shared_optin;    // bytes of shared memory a block may opt in to
  size_t total_mem;        // bytes
} MlcCudaInfo;

// Opens device `ordinal` (0: the first). NULL with the reason in err.
MlcCuda *mlc_cuda_open(int ordinal, char *err, size_t errlen);
// Frees the arena and streams and releases the primary context (unload
// modules first); NULL is a no-op.
void mlc_cuda_close(MlcCuda *c);
const MlcCudaInfo *mlc_cuda_info(const MlcCuda *c);
// Makes c's context current on the calling thread (cuCtxSetCurrent). 0 or -1.
int mlc_cuda_bind_thread(MlcCuda *c, char *err, size_t errlen);

// ---- the bundle and modules (cuda_module.c) -----------------------------------------------
// The compiler's container of images (compiler/backend/cuda/nvrtc.h has
// the layout): cubins tagged sm_XX and PTX tagged compute_XX.
typedef enum { MLC_CUDA_CUBIN = 1, MLC_CUDA_PTX = 2 } MlcCudaImageKind;
typedef struct MlcCudaImage {
  MlcCudaImageKind kind;
  int arch;          // 90
  const void *data;  // inside the bundle
  size_t size;
} MlcCudaImage;

// Picks the image for a device of compute capability `sm`: the cubin built
// for exactly sm; else a cubin of the same major and a lower minor (SASS
// runs on later minors of its major); else the PTX of the highest
// compute_XX <= sm, which the driver JIT-compiles. 0, or -1 when the bundle
// is malformed or holds nothing that runs there (err lists what it holds).
int mlc_cuda_bundle_select(const void *bundle, size_t len, int sm,
                           MlcCudaImage *out, char *err, size_t errlen);
// Loads the image mlc_cuda_bundle_select picks for c's device (the JIT's
// error log is quoted when the PTX is rejected). NULL with the reason.
MlcCudaModule *mlc_cuda_module_load(MlcCuda *c, const void *bundle, size_t len,
                                    char *err, size_t errlen);
// What was loaded: kind and architecture.
const MlcCudaImage *mlc_cuda_module_image(const MlcCudaModule *m);
void mlc_cuda_module_unload(MlcCudaModule *m);
// The kernel `name` (extern "C", so the plain name). NULL with the reason.
MlcCudaFunc *mlc_cuda_function(MlcCudaModule *m, const char *name, char *err,
                               size_t errlen);

// ---- launches and memory (cuda_rt.c) ------------------------------------------------------
// cuLaunchKernel on `stream`: params[i] points at the i-th parameter's
// value (the same array mlc_emu_launch takes). Dynamic shared memory above
// 48 KiB is opted in to first. Asynchronous: errors of the kernel itself
// show at the next mlc_cuda_sync.
int mlc_cuda_launch(MlcCuda *c, MlcCudaFunc *f, const unsigned grid[3],
                    const unsigned block[3], unsigned shared_bytes, int stream,
                    void **params, char *err, size_t errlen);
// The device arena, at least `bytes` long (256-byte aligned): allocated on
// the first call, reallocated (contents lost) when a later call asks for
// more. The compiler's memory plan gives every buffer an offset in it.
int mlc_cuda_arena(MlcCuda *c, size_t bytes, MlcDevPtr *base, char *err,
                   size_t errlen);
// Page-locked host memory (uploads from it run asynchronously). NULL with
// the reason; free with mlc_cuda_host_free.
void *mlc_cuda_host_alloc(MlcCuda *c, size_t bytes, char *err, size_t errlen);
void mlc_cuda_host_free(MlcCuda *c, void *p);
// Asynchronous copies and fill on `stream` (from/to pinned memory they
// overlap other streams' work; from pageable memory the driver stages them).
int mlc_cuda_upload(MlcCuda *c, MlcDevPtr dst, const void *src, size_t n,
                    int stream, char *err, size_t errlen);
int mlc_cuda_download(MlcCuda *c, void *dst, MlcDevPtr src, size_t n,
                      int stream, char *err, size_t errlen);
int mlc_cuda_zero(MlcCuda *c, MlcDevPtr dst, size_t n, int stream, char *err,
                  size_t errlen);
// Waits for everything queued on `stream` (-1: on both streams).
int mlc_cuda_sync(MlcCuda *c, int stream, char *err, size_t errlen);

// ---- double-buffered uploads (cuda_stage.c) -----------------------------------------------
// Two slots, each a pinned host buffer and a device buffer of `bytes` (in
// the arena, placed by the caller), and four events, so the upload of batch
// k + 1 on the copy stream overlaps the compute stream's work on batch k:
//
//   void *h = mlc_cuda_stage_host(s, k % 2, ..);   // waits until the slot's last upload left h
//   fill h with batch k
//   mlc_cuda_stage_upload(s, k % 2, n, ..);        // copy stream: after the slot's last use
//   mlc_cuda_stage_acquire(s, k % 2, &dev, ..);    // compute stream: after that upload
//   launch kernels reading dev on MLC_CUDA_COMPUTE
//   mlc_cuda_stage_release(s, k % 2, ..);          // the slot may be overwritten after them
typedef struct MlcCudaStage {
  MlcCuda *c;
  size_t bytes;
  void *host[2];       // pinned
  MlcDevPtr dev[2];
  void *uploaded[2];   // CUevent: recorded on the copy stream after the slot's upload
  void *consumed[2];   // CUevent: recorded on the compute stream after its last reader
} MlcCudaStage;

int mlc_cuda_stage_init(MlcCudaStage *s, MlcCuda *c, size_t bytes,
                        MlcDevPtr dev0, MlcDevPtr dev1, char *err, size_t errlen);
void *mlc_cuda_stage_host(MlcCudaStage *s, int slot, char *err, size_t errlen);
int mlc_cuda_stage_upload(MlcCudaStage *s, int slot, size_t n, char *err,
                          size_t errlen);
int mlc_cuda_stage_acquire(MlcCudaStage *s, int slot, MlcDevPtr *dev, char *err,
                           size_t errlen);
int mlc_cuda_stage_release(MlcCudaStage *s, int slot, char *err, size_t errlen);
void mlc_cuda_stage_free(MlcCudaStage *s);

#endif
