// test_cuda_rt.c — the runtime's CUDA layer without a GPU
// (runtime/cuda/cuda_rt.h): with no libcuda.so.1 mlc_cuda_open fails with
// exactly "no CUDA driver (libcuda.so.1 not found)"; the image choice of
// mlc_cuda_bundle_select over bundles written by the compiler's
// cuda_bundle_pack (exact cubin, same-major cubin, PTX, nothing); malformed
// bundles are refused.
//
// On a machine that has a driver the first check cannot be made: it says
// so and the test exits 77 after the others.
#include <dlfcn.h>

#include "backend/cuda/nvrtc.h"
#include "cuda/cuda_rt.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static bool skipped;

static void test_no_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    printf("[SKIP] no driver: this machine has a libcuda.so.1\n");
    skipped = true;
    return;
  }
  char err[256] = "";
  MlcCuda *c = mlc_cuda_open(0, err, sizeof err);
  printf("  mlc_cuda_open: %s\n", err);
  check("no driver: mlc_cuda_open gives NULL", c == NULL);
  check("no driver: the message is exactly \"no CUDA driver (libcuda.so.1 not found)\"",
        !strcmp(err, "no CUDA driver (libcuda.so.1 not found)"));
  mlc_cuda_close(c);
}

// A bundle of: sm_80 cubin, sm_90 cubin, compute_80 PTX (fake contents).
static unsigned char *sample(size_t *len) {
  static unsigned char c80[] = "\177ELF sm_80", c90[] = "\177ELF sm_90", ptx[] = ".target sm_80";
  CudaImage im[] = {{CUDA_IMAGE_CUBIN, 80, c80, sizeof c80},
                    {CUDA_IMAGE_CUBIN, 90, c90, sizeof c90},
                    {CUDA_IMAGE_PTX, 80, ptx, sizeof ptx}};
  return cuda_bundle_pack(im, 3, len);
}

static void expect(const unsigned char *b, size_t len, int sm, MlcCudaImageKind kind, int arch,
                   const char *name) {
  MlcCudaImage im;
  char err[512];
  int rc = mlc_cuda_bundle_select(b, len, sm, &im, err, sizeof err);
  bool ok = rc == 0 && im.kind == kind && im.arch == arch;
  if (ok && kind == MLC_CUDA_CUBIN) ok = strstr((const char *)im.data + 5, "sm_") != NULL;
  check(name, ok);
}

static void test_select(void) {
  size_t len;
  unsigned char *b = sample(&len);
  expect(b, len, 90, MLC_CUDA_CUBIN, 90, "select: sm_90 takes the sm_90 cubin");
  expect(b, len, 80, MLC_CUDA_CUBIN, 80, "select: sm_80 takes the sm_80 cubin");
  expect(b, len, 86, MLC_CUDA_CUBIN, 80, "select: sm_86 takes the sm_80 cubin (same major)");
  expect(b, len, 100, MLC_CUDA_PTX, 80, "select: sm_100 JIT-compiles the compute_80 PTX");
  MlcCudaImage im;
  char err[512];
  int rc = mlc_cuda_bundle_select(b, len, 75, &im, err, sizeof err);
  printf("  sm_75: %s\n", err);
  check("select: sm_75 has nothing, and the message lists what the bundle holds",
        rc == -1 && strstr(err, "no GPU code for sm_75") &&
            strstr(err, "sm_80 cubin, sm_90 cubin, compute_80 PTX"));
  free(b);
}

static void test_malformed(void) {
  size_t len;
  unsigned char *b = sample(&len);
  MlcCudaImage im;
  char err[512];
  unsigned char *bad = malloc(len);
  memcpy(bad, b, len);
  bad[0] = 'X';
  check("malformed: a wrong magic",
        mlc_cuda_bundle_select(bad, len, 90, &im, err, sizeof err) == -1 && strstr(err, "MLCCUDA"));
  memcpy(bad, b, len);
  bad[8] = 2;
  check("malformed: another version",
        mlc_cuda_bundle_select(bad, len, 90, &im, err, sizeof err) == -1 && strstr(err, "version 2"));
  check("malformed: entries past the end",
        mlc_cuda_bundle_select(b, 40, 90, &im, err, sizeof err) == -1 && strstr(err, "do not fit"));
  check("malformed: an image past the end",
        mlc_cuda_bundle_select(b, len - 8, 90, &im, err, sizeof err) == -1 && strstr(err, "malformed"));
  memcpy(bad, b, len);
  bad[len - 1] = 'x'; // the PTX is last: its NUL
  check("malformed: PTX without its NUL",
        mlc_cuda_bundle_select(bad, len, 100, &im, err, sizeof err) == -1 && strstr(err, "NUL"));
  free(bad);
  free(b);
}

int main(void) {
  test_no_driver();
  test_select();
  test_malformed();
  printf("%d passed, %d failed\n", npass, nfail);
  if (nfail) return 1;
  return skipped ? 77 : 0;
}
