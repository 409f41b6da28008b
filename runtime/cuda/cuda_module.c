// cuda_module.c — the bundle the compiler embeds (one cubin per
// architecture plus PTX, laid out in compiler/backend/cuda/nvrtc.h and
// written by compiler/backend/cuda/bundle.c), the choice of the image for a
// device, module loading and kernel lookup.
//
// The choice (mlc_cuda_bundle_select): the cubin of exactly the device's sm;
// else the cubin of the highest lower minor of the same major (a cubin for
// X.y runs on X.z, z >= y); else the PTX of the highest compute_XX not above
// the device, JIT-compiled by the driver at load (its error log is quoted
// when it fails, for instance a driver older than the PTX's ISA version).
#include <stdlib.h>
#include <string.h>

#include "cuda_rt_internal.h"

enum { HEADER = 16, ENTRY = 24, VERSION = 1 };

struct MlcCudaModule {
  MlcCuda *c;
  CUmodule mod;
  MlcCudaImage image;
};

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p) {
  return get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

// Entry i of a checked bundle.
static MlcCudaImage entry(const unsigned char *b, uint32_t i) {
  const unsigned char *e = b + HEADER + (size_t)i * ENTRY;
  return (MlcCudaImage){(MlcCudaImageKind)get_u32(e), (int)get_u32(e + 4), b + get_u64(e + 8),
                        (size_t)get_u64(e + 16)};
}

// The image count of a well-formed bundle, or -1 with the reason.
static int64_t bundle_check(const unsigned char *b, size_t len, char *err, size_t errlen) {
  if (len < HEADER || memcmp(b, "MLCCUDA", 8) != 0)
    return rt_err(err, errlen, "not a CUDA image bundle (no MLCCUDA header)");
  if (get_u32(b + 8) != VERSION)
    return rt_err(err, errlen, "CUDA image bundle version %u (this runtime reads %d)",
                  get_u32(b + 8), VERSION);
  uint32_t n = get_u32(b + 12);
  if ((len - HEADER) / ENTRY < n)
    return rt_err(err, errlen, "CUDA image bundle: %u entries do not fit in %zu bytes", n, len);
  for (uint32_t i = 0; i < n; i++) {
    const unsigned char *e = b + HEADER + (size_t)i * ENTRY;
    uint32_t kind = get_u32(e);
    uint64_t off = get_u64(e + 8), size = get_u64(e + 16);
    if ((kind != MLC_CUDA_CUBIN && kind != MLC_CUDA_PTX) || off > len || size > len - off)
      return rt_err(err, errlen, "CUDA image bundle: entry %u is malformed", i);
    if (kind == MLC_CUDA_PTX && (size == 0 || b[off + size - 1] != 0))
      return rt_err(err, errlen, "CUDA image bundle: PTX entry %u is not NUL-terminated", i);
  }
  return n;
}

// "sm_80 cubin, sm_90 cubin, compute_80 PTX"
static void describe(const unsigned char *b, uint32_t n, char *out, size_t size) {
  size_t k = 0;
  out[0] = 0;
  for (uint32_t i = 0; i < n && k < size; i++) {
    MlcCudaImage im = entry(b, i);
    k += (size_t)snprintf(out + k, size - k, "%s%s_%d %s", i ? ", " : "",
                          im.kind == MLC_CUDA_CUBIN ? "sm" : "compute", im.arch,
                          im.kind == MLC_CUDA_CUBIN ? "cubin" : "PTX");
  }
  if (!n) snprintf(out, size, "no images");
}

// The index of the image of `kind` with the highest architecture that runs
// on sm (a cubin only within sm's major), or -1.
static int64_t best(const unsigned char *b, uint32_t n, int sm, MlcCudaImageKind kind) {
  int64_t pick = -1;
  int pick_arch = -1;
  for (uint32_t i = 0; i < n; i++) {
    MlcCudaImage im = entry(b, i);
    if (im.kind != kind || im.arch > sm || im.arch <= pick_arch) continue;
    if (kind == MLC_CUDA_CUBIN && im.arch / 10 != sm / 10) continue; // SASS stays in its major
    pick = i;
    pick_arch = im.arch;
  }
  return pick;
}

int mlc_cuda_bundle_select(const void *bundle, size_t len, int sm, MlcCudaImage *out, char *err,
                           size_t errlen) {
  const unsigned char *b = bundle;
  int64_t n = bundle_check(b, len, err, errlen);
  if (n < 0) return -1;
  int64_t i = best(b, (uint32_t)n, sm, MLC_CUDA_CUBIN);
  if (i < 0) i = best(b, (uint32_t)n, sm, MLC_CUDA_PTX);
  if (i < 0) {
    char have[512];
    describe(b, (uint32_t)n, have, sizeof have);
    return rt_err(err, errlen, "no GPU code for sm_%d in this program (it has %s; rebuild with "
                  "--cuda-arch=sm_%d)", sm, have, sm);
  }
  *out = entry(b, (uint32_t)i);
  return 0;
}

// cuModuleLoadDataEx with the JIT's error log; on failure the log is quoted.
static int load_image(MlcCuda *c, const MlcCudaImage *im, CUmodule *mod, char *err,
                      size_t errlen) {
  char log[4096] = "";
  CUjit_option opt[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *val[] = {log, (void *)(uintptr_t)sizeof log};
  CUresult rc = c->p_cuModuleLoadDataEx(mod, im->data, 2, opt, val);
  if (rc == CUDA_SUCCESS) return 0;
  char what[1024];
  mlc_cuda_check(c, rc, "cuModuleLoadDataEx", __FILE__, __LINE__, what, sizeof what);
  const char *old = rc == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ? "; the driver is older than the PTX" : "";
  return rt_err(err, errlen, "loading the %s_%d %s: %s%s%s%s (driver %d.%d)",
                im->kind == MLC_CUDA_CUBIN ? "sm" : "compute", im->arch,
                im->kind == MLC_CUDA_CUBIN ? "cubin" : "PTX", what, old, log[0] ? ": " : "", log,
                c->info.driver_version / 1000, c->info.driver_version % 1000 / 10);
}

MlcCudaModule *mlc_cuda_module_load(MlcCuda *c, const void *bundle, size_t len, char *err,
                                    size_t errlen) {
  MlcCudaImage im;
  if (mlc_cuda_bundle_select(bundle, len, c->info.sm, &im, err, errlen)) return NULL;
  MlcCudaModule *m = calloc(1, sizeof *m);
  if (!m) {
    rt_err(err, errlen, "out of memory");
    return NULL;
  }
  m->c = c;
  m->image = im;
  if (load_image(c, &im, &m->mod, err, errlen)) {
    free(m);
    return NULL;
  }
  return m;
}

const MlcCudaImage *mlc_cuda_module_image(const MlcCudaModule *m) { return &m->image; }

void mlc_cuda_module_unload(MlcCudaModule *m) {
  if (!m) return;
  char ignore[256];
  MLC_CU(m->c, cuModuleUnload, (m->mod), ignore, sizeof ignore);
  free(m);
}

MlcCudaFunc *mlc_cuda_function(MlcCudaModule *m, const char *name, char *err, size_t errlen) {
  CUfunction f = NULL;
  char what[512];
  if (MLC_CU(m->c, cuModuleGetFunction, (&f, m->mod, name), what, sizeof what)) {
    rt_err(err, errlen, "kernel %s: %s", name, what);
    return NULL;
  }
  return (MlcCudaFunc *)f;
}
