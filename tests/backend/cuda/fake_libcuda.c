// fake_libcuda.c — a stand-in libcuda.so.1 for testing runtime/cuda without a
// GPU: the driver calls cuda_rt.c makes, implemented on the CPU. Built as
// build/tests/fake-cuda/libcuda.so.1 and found only by the tests that put
// that folder on LD_LIBRARY_PATH (nothing links it, no rpath names it).
//
// It is cuda.h's prototypes, so the exported names are the versioned ones
// the real driver has (cuMemAlloc_v2, ...). Device memory is host memory
// (a CUdeviceptr is a pointer), streams run late (below), and a
// module is the hand-written test kernels compiled as C (fake_kernels.c):
// cuModuleLoadDataEx checks that it got a cubin (an ELF) or PTX (text with
// ".target sm_"), remembers which, and cuLaunchKernel runs the kernel under
// the CPU emulation (kernels/cuda/cuda_emu.h).
//
// A whole program's kernels: with MLC_FAKE_CUDA_MODULE=FILE.so the module is
// that shared object instead, the program's CUDA C (`mlc build --emit cuda`)
// compiled as C with the emulation (cc -shared -x c FILE.cu cuda_emu.c); a
// function is its NAME_entry, launched by the object's own mlc_emu_launch
// (the emulation's thread state is the object's). MLC_FAKE_CUDA_LOG=FILE
// appends one line per module load ("load cubin|ptx"), launch ("launch
// NAME grid G block B shared S"), copy ("htod N", "dtoh N" bytes, with
// " pageable" after N when the host side is not memory from
// cuMemAllocHost: a real driver may wait for the stream there), event
// record ("record event E stream S") and host wait ("wait event E", "wait
// stream S"), for tests of the launch sequence and of the steps queued
// ahead of their results.
//
// Streams run late, as a GPU behind its host does: every launch, copy,
// memset and event record is queued in issue order and runs only when the
// host must see its effect: a wait (cuStreamSynchronize, cuEventSynchronize:
// the queue up to that stream's last operation or that event's last record),
// a copy to pageable memory (synchronous, like the driver's), a free or a
// module unload. A launch's parameter values, and a copy's source in
// pageable memory, are read at the call (as the driver stages them); a
// pinned source or destination is read or written when the copy runs. So
// a host buffer rewritten before its upload ran, or a result read before
// its wait, gives wrong numbers here, not only on a GPU. A launch of a
// function without NAME_argbytes (the hand-written test kernels) runs the
// queue first and then itself. MLC_FAKE_CUDA_EAGER=1 runs everything at the
// call instead. The log is written at the calls, in the host's order.
//
// Environment, for the tests' cases:
//   MLC_FAKE_CUDA_INIT=N      cuInit returns N (100: CUDA_ERROR_NO_DEVICE)
//   MLC_FAKE_CUDA_DEVICES=N   cuDeviceGetCount gives N (default 1)
//   MLC_FAKE_CUDA_SM=NN       the compute capability (default 90)
//   MLC_FAKE_CUDA_DRIVER=N    cuDriverGetVersion (default 13000)
#include <cuda.h>
#include <dlfcn.h>
#include <stdarg.h>
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

typedef int (*EmuLaunchFn)(MlcEmuEntry, void **, dim3, dim3, size_t, char *, size_t);

// A function of a module: a test kernel, or an entry of MLC_FAKE_CUDA_MODULE.
typedef struct FakeFunc {
  char name[256];
  MlcEmuEntry entry;
  EmuLaunchFn launch;
  const unsigned char *argbytes; // NAME_argbytes (0-terminated), NULL: run at the call
} FakeFunc;

enum { MAX_FUNCS = 512 };

struct CUmod_st {
  bool ptx;    // what was loaded
  void *so;    // MLC_FAKE_CUDA_MODULE, opened
  FakeFunc *funcs[MAX_FUNCS];
  int nfuncs;
};

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...) {
  const char *path = getenv("MLC_FAKE_CUDA_LOG");
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

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

// ---- the late streams ---------------------------------------------------------------------------
enum { OP_LAUNCH, OP_HTOD, OP_DTOH, OP_MEMSET, OP_RECORD, MAX_ARGS = 16 };

typedef struct Op {
  int kind;
  const void *stream, *event;
  const struct FakeFunc *fn;
  unsigned grid[3], block[3], shared;
  unsigned char args[MAX_ARGS][8]; // a launch's parameter values
  void *dst;
  const void *src;
  unsigned char *staged; // a pageable source, copied at the call
  size_t n;
  unsigned char value;
} Op;

static Op *ops;
static size_t nops, capops;
static CUresult late_error = CUDA_SUCCESS; // a queued launch's failure, for the next wait

static bool eager(void) { return env_int("MLC_FAKE_CUDA_EAGER", 0) != 0; }

static CUresult run_launch(const struct FakeFunc *k, unsigned *g, unsigned *b, unsigned shared, void **params);

static void run_op(Op *o) {
  switch (o->kind) {
  case OP_LAUNCH: {
    void *params[MAX_ARGS];
    for (int i = 0; i < MAX_ARGS; i++) params[i] = o->args[i];
    CUresult rc = run_launch(o->fn, o->grid, o->block, o->shared, params);
    if (rc != CUDA_SUCCESS && late_error == CUDA_SUCCESS) late_error = rc;
    break;
  }
  case OP_HTOD: memcpy(o->dst, o->staged ? o->staged : o->src, o->n); break;
  case OP_DTOH: memcpy(o->dst, o->src, o->n); break;
  case OP_MEMSET: memset(o->dst, o->value, o->n); break;
  default: break;
  }
  free(o->staged);
}

// Runs the queue's first `upto` operations; the rest move to the front.
static CUresult run_queue(size_t upto) {
  for (size_t i = 0; i < upto; i++) run_op(&ops[i]);
  memmove(ops, ops + upto, (nops - upto) * sizeof *ops);
  nops -= upto;
  CUresult rc = late_error;
  late_error = CUDA_SUCCESS;
  return rc;
}

static CUresult run_all(void) { return run_queue(nops); }

// The queue up to and including its last operation on stream s (or
// recording event e).
static CUresult run_through(const void *s, const void *e) {
  size_t upto = 0;
  for (size_t i = 0; i < nops; i++)
    if ((s && ops[i].stream == s) || (e && ops[i].kind == OP_RECORD && ops[i].event == e)) upto = i + 1;
  return run_queue(upto);
}

// A new operation at the queue's end (NULL: out of memory).
static Op *push_op(int kind, const void *stream) {
  if (nops == capops) {
    size_t cap = capops ? 2 * capops : 256;
    Op *p = realloc(ops, cap * sizeof *p);
    if (!p) return NULL;
    ops = p, capops = cap;
  }
  Op *o = &ops[nops++];
  memset(o, 0, sizeof *o);
  o->kind = kind, o->stream = stream;
  return o;
}

// ---- modules and launches ----------------------------------------------------------------------
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *opt, void **val) {
  (void)n, (void)opt, (void)val;
  const char *s = image;
  bool elf = !memcmp(s, "\177ELF", 4), ptx = !elf && strstr(s, ".target sm_");
  if (!elf && !ptx) return CUDA_ERROR_INVALID_IMAGE;
  *m = calloc(1, sizeof **m);
  if (!*m) return CUDA_ERROR_OUT_OF_MEMORY;
  (*m)->ptx = ptx;
  const char *so = getenv("MLC_FAKE_CUDA_MODULE");
  if (so && *so && !((*m)->so = dlopen(so, RTLD_NOW | RTLD_LOCAL))) {
    fprintf(stderr, "fake libcuda: MLC_FAKE_CUDA_MODULE: %s\n", dlerror());
    free(*m);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  log_line("load %s", ptx ? "ptx" : "cubin");
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) {
  if (!m) return CUDA_ERROR_INVALID_VALUE;
  run_all();
  for (int i = 0; i < m->nfuncs; i++) free(m->funcs[i]);
  if (m->so) {
    void (*release)(void) = (void (*)(void))(uintptr_t)dlsym(m->so, "mlc_emu_release");
    if (release) release();
    dlclose(m->so);
  }
  free(m);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  if (!m || m->nfuncs == MAX_FUNCS || strlen(name) >= sizeof m->funcs[0]->name - 8) return CUDA_ERROR_INVALID_VALUE;
  FakeFunc fn = {.launch = mlc_emu_launch};
  snprintf(fn.name, sizeof fn.name, "%s", name);
  if (m->so) {
    char sym[sizeof fn.name];
    snprintf(sym, sizeof sym, "%s_entry", name);
    fn.entry = (MlcEmuEntry)(uintptr_t)dlsym(m->so, sym);
    fn.launch = (EmuLaunchFn)(uintptr_t)dlsym(m->so, "mlc_emu_launch");
    snprintf(sym, sizeof sym, "%s_argbytes", name);
    fn.argbytes = dlsym(m->so, sym);
  } else {
    for (const FakeKernel *k = fake_kernels; k->name && !fn.entry; k++)
      if (!strcmp(k->name, name)) fn.entry = k->entry;
  }
  if (!fn.entry || !fn.launch) return CUDA_ERROR_NOT_FOUND;
  FakeFunc *p = malloc(sizeof *p);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = fn;
  m->funcs[m->nfuncs++] = p;
  *f = (CUfunction)(void *)p;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  (void)f, (void)a;
  return v <= MLC_EMU_MAX_SHARED ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult run_launch(const FakeFunc *k, unsigned *g, unsigned *b, unsigned shared, void **params) {
  char err[512];
  if (k->launch(k->entry, params, mlc_dim3(g[0], g[1], g[2]), mlc_dim3(b[0], b[1], b[2]), shared, err,
                sizeof err) == 0)
    return CUDA_SUCCESS;
  fprintf(stderr, "fake libcuda: %s: %s\n", k->name, err);
  return CUDA_ERROR_LAUNCH_FAILED;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
  if (extra) return CUDA_ERROR_INVALID_VALUE;
  const FakeFunc *k = (const FakeFunc *)(void *)f;
  log_line("launch %s grid %u block %u shared %u", k->name, gx * gy * gz, bx * by * bz, shared);
  unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  if (eager() || !k->argbytes) {
    CUresult rc = run_all();
    return rc != CUDA_SUCCESS ? rc : run_launch(k, g, b, shared, params);
  }
  Op *o = push_op(OP_LAUNCH, s);
  if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
  o->fn = k, o->shared = shared;
  memcpy(o->grid, g, sizeof g), memcpy(o->block, b, sizeof b);
  for (int i = 0; k->argbytes[i]; i++) {
    if (i == MAX_ARGS || k->argbytes[i] > sizeof o->args[i]) return CUDA_ERROR_INVALID_VALUE;
    memcpy(o->args[i], params[i], k->argbytes[i]);
  }
  return CUDA_SUCCESS;
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
  run_all();
  free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
// The live cuMemAllocHost blocks, for the log's "pageable" mark.
enum { MAX_PINNED = 256 };
static struct {
  const unsigned char *p;
  size_t n;
} pinned[MAX_PINNED];

CUresult cuMemAllocHost(void **p, size_t n) {
  *p = malloc(n);
  if (!*p) return CUDA_ERROR_OUT_OF_MEMORY;
  for (int i = 0; i < MAX_PINNED; i++)
    if (!pinned[i].p) {
      pinned[i].p = *p, pinned[i].n = n;
      break;
    }
  return CUDA_SUCCESS;
}
CUresult cuMemFreeHost(void *p) {
  run_all();
  for (int i = 0; i < MAX_PINNED; i++)
    if (pinned[i].p == p) pinned[i].p = NULL;
  free(p);
  return CUDA_SUCCESS;
}
// " pageable" when [h, h + n) is not inside one pinned block
static const char *host_kind(const void *h, size_t n) {
  const unsigned char *c = h;
  for (int i = 0; i < MAX_PINNED; i++)
    if (pinned[i].p && c >= pinned[i].p && c + n <= pinned[i].p + pinned[i].n) return "";
  return " pageable";
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s) {
  (void)s;
  const char *kind = host_kind(h, n);
  log_line("htod %zu%s", n, kind);
  if (eager()) {
    memcpy((void *)(uintptr_t)d, h, n);
    return CUDA_SUCCESS;
  }
  Op *o = push_op(OP_HTOD, s);
  if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
  o->dst = (void *)(uintptr_t)d, o->src = h, o->n = n;
  if (*kind) { // pageable: staged at the call
    if (!(o->staged = malloc(n ? n : 1))) return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(o->staged, h, n);
  }
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s) {
  (void)s;
  const char *kind = host_kind(h, n);
  log_line("dtoh %zu%s", n, kind);
  if (eager() || *kind) { // to pageable memory: synchronous
    CUresult rc = run_all();
    memcpy(h, (const void *)(uintptr_t)d, n);
    return rc;
  }
  Op *o = push_op(OP_DTOH, s);
  if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
  o->dst = h, o->src = (const void *)(uintptr_t)d, o->n = n;
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  if (eager()) {
    memset((void *)(uintptr_t)d, v, n);
    return CUDA_SUCCESS;
  }
  Op *o = push_op(OP_MEMSET, s);
  if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
  o->dst = (void *)(uintptr_t)d, o->value = v, o->n = n;
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
  return run_all();
}
CUresult cuStreamSynchronize(CUstream s) {
  log_line("wait stream %d", (int)((int *)s - stream_token));
  return run_through(s, NULL);
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
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  log_line("record event %d stream %d", (int)((int *)e - event_token), (int)((int *)s - stream_token));
  if (eager()) return CUDA_SUCCESS;
  Op *o = push_op(OP_RECORD, s);
  if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
  o->event = e;
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  log_line("wait event %d", (int)((int *)e - event_token));
  return run_through(NULL, e);
}

// NVRTC itself opens libcuda.so.1 when it is on the path and asks for the
// driver's private tables; the fake has none.
CUresult cuGetExportTable(const void **table, const CUuuid *id) {
  (void)id;
  *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}
