// test_cuda_gpu.c — the hand-written kernels on a GPU through the runtime's
// CUDA layer (runtime/cuda/cuda_rt.h): NVRTC compiles each kernel file for
// sm_90 and the device's architecture, the bundle is loaded as a module, the
// kernels run on buffers carved from the device arena and match the plain C
// references; a PTX-only bundle is JIT-compiled by the driver and runs; four
// batches go through the double-buffered upload stage; a second thread
// binds the context and uploads.
//
// Without a driver or a device it prints why and exits 77 (skipped). ctest
// runs it twice: as cuda_gpu with whatever driver the machine has (the real
// check, meant for tests/gpu/run.sh), and as cuda_rt_fake against
// fake_libcuda.c, which runs the same calls on the CPU.
//
// Tolerances against the references (the GPU contracts a * b + c to FMA and
// its expf differs from glibc's by up to 2 ulp): exact on integer-valued
// data, 1e-6 * sum |x| for row sums, 1e-6 relative for elementwise, 1e-5 for
// softmax and sgemm.
#include <pthread.h>
#include <time.h>

#include "backend/cuda/nvrtc.h"
#include "cuda/cuda_rt.h"
#include "cuda_test.h"

static MlcCuda *gpu;
static CudaNvrtc *nv;
static MlcDevPtr arena;
static size_t arena_used;
static char err[2048];
static char *block_reduce_h;

enum { ARENA_BYTES = 64 << 20 };

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// n bytes of the arena (256-byte aligned), as the compiler's memory plan
// would place a buffer.
static MlcDevPtr carve(size_t n) {
  MlcDevPtr p = arena + arena_used;
  arena_used += (n + 255) / 256 * 256;
  if (arena_used > ARENA_BYTES) {
    fprintf(stderr, "test_cuda_gpu: the test's buffers exceed the arena\n");
    exit(1);
  }
  return p;
}

static MlcDevPtr put(const float *h, int64_t n) {
  MlcDevPtr d = carve((size_t)n * sizeof *h);
  if (mlc_cuda_upload(gpu, d, h, (size_t)n * sizeof *h, MLC_CUDA_COMPUTE, err, sizeof err))
    printf("  upload: %s\n", err);
  return d;
}

// Copies back and waits; false (and the reason) on failure.
static bool get(float *h, MlcDevPtr d, int64_t n) {
  if (mlc_cuda_download(gpu, h, d, (size_t)n * sizeof *h, MLC_CUDA_COMPUTE, err, sizeof err) ||
      mlc_cuda_sync(gpu, -1, err, sizeof err)) {
    printf("  download: %s\n", err);
    return false;
  }
  return true;
}

// NVRTC for sm_90 (and the device's sm), bundled, loaded; only the PTX when
// ptx_only. NULL on failure (printed).
static MlcCudaModule *load(const char *file, bool ptx_only) {
  char path[256];
  snprintf(path, sizeof path, KDIR "%s", file);
  char *text = read_text(path);
  if (!text) return NULL;
  CudaHeader h = {"block_reduce.h", block_reduce_h};
  CudaSource src = {.name = file, .text = text, .headers = &h, .nheaders = 1};
  int sm = mlc_cuda_info(gpu)->sm, archs[2] = {90, sm};
  CudaCompileOptions o = cuda_compile_defaults();
  o.archs = archs;
  o.narchs = sm == 90 ? 1 : 2;
  CudaCompileResult r;
  MlcCudaModule *m = NULL;
  if (cuda_nvrtc_compile(nv, &src, &o, &r) == 0) {
    int first = ptx_only ? r.nimages - 1 : 0;
    size_t len;
    unsigned char *b = cuda_bundle_pack(r.images + first, r.nimages - first, &len);
    m = b ? mlc_cuda_module_load(gpu, b, len, err, sizeof err) : NULL;
    free(b);
    if (m) {
      const MlcCudaImage *im = mlc_cuda_module_image(m);
      printf("  %s: loaded the %s_%d %s\n", file, im->kind == MLC_CUDA_CUBIN ? "sm" : "compute",
             im->arch, im->kind == MLC_CUDA_CUBIN ? "cubin" : "PTX");
    } else {
      printf("  %s: %s\n", file, err);
    }
  } else {
    printf("  %s: %s\n", file, r.err);
  }
  cuda_compile_result_free(&r);
  free(text);
  return m;
}

static MlcCudaFunc *fn(MlcCudaModule *m, const char *name) {
  MlcCudaFunc *f = m ? mlc_cuda_function(m, name, err, sizeof err) : NULL;
  if (m && !f) printf("  %s\n", err);
  return f;
}

static bool launch(MlcCudaFunc *f, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                   unsigned shared, void **params) {
  unsigned grid[3] = {gx, gy, 1}, block[3] = {bx, by, 1};
  if (!f) return false;
  if (mlc_cuda_launch(gpu, f, grid, block, shared, MLC_CUDA_COMPUTE, params, err, sizeof err) ||
      mlc_cuda_sync(gpu, MLC_CUDA_COMPUTE, err, sizeof err)) {
    printf("  launch: %s\n", err);
    return false;
  }
  return true;
}

// ---- the kernels -------------------------------------------------------------------------------
static void test_elementwise(MlcCudaModule *m, const char *what) {
  int64_t n = 1 << 20;
  float *x = malloc(n * 4), *b = malloc(n * 4), *y = malloc(n * 4), *want = malloc(n * 4), a = 0.75f;
  fill_unit(x, n, 1);
  fill_unit(b, n, 2);
  ref_ew(x, b, want, a, n);
  MlcDevPtr dx = put(x, n), db = put(b, n), dy = carve(n * 4);
  void *params[] = {&dx, &db, &dy, &a, &n};
  double t0 = now_ms();
  bool ok = launch(fn(m, "ew_axpy_relu"), 512, 1, 256, 1, 0, params) && get(y, dy, n);
  printf("  ew_axpy_relu: %.2f ms\n", now_ms() - t0);
  if (ok) check_close(what, y, want, n, 1e-6);
  else check(what, false);
  free(x), free(b), free(y), free(want);
}

static void test_reduce(MlcCudaModule *m) {
  int64_t rows = 1000, cols = 4096, n = rows * cols;
  float *x = malloc(n * 4), *out = malloc(rows * 4), *want = malloc(rows * 4), total = 0, tsum = 0;
  fill_int(x, n, 4, 3);
  ref_row_sum(x, want, rows, cols);
  for (int64_t i = 0; i < n; i++) tsum += x[i];
  MlcDevPtr dx = put(x, n), dout = carve(rows * 4), dt = carve(4);
  void *p1[] = {&dx, &dout, &cols};
  bool ok = launch(fn(m, "row_sum"), (unsigned)rows, 1, 256, 1, 8 * 4, p1) && get(out, dout, rows);
  if (ok) check_exact("gpu row_sum: 1000 x 4096 integers", out, want, rows);
  else check("gpu row_sum runs", false);
  void *p2[] = {&dx, &dt, &n};
  ok = !mlc_cuda_zero(gpu, dt, 4, MLC_CUDA_COMPUTE, err, sizeof err) &&
       launch(fn(m, "sum_atomic"), 120, 1, 256, 1, 0, p2) && get(&total, dt, 1);
  if (ok) check_exact("gpu sum_atomic: 4M integers over 120 blocks, atomicAdd", &total, &tsum, 1);
  else check("gpu sum_atomic runs", false);
  free(x), free(out), free(want);
}

static void test_softmax(MlcCudaModule *m) {
  int64_t rows = 512, cols = 1000, n = rows * cols;
  float *x = malloc(n * 4), *y = malloc(n * 4), *want = malloc(n * 4);
  fill_unit(x, n, 5);
  for (int64_t i = 0; i < n; i++) x[i] *= 8;
  ref_softmax(x, want, rows, cols);
  MlcDevPtr dx = put(x, n), ds = carve(rows * 2 * 4), dy = carve(n * 4);
  void *p1[] = {&dx, &ds, &cols};
  void *p2[] = {&dx, &ds, &dy, &rows, &cols};
  bool ok = launch(fn(m, "softmax_stats"), (unsigned)rows, 1, 128, 1, 4 * 4, p1) &&
            launch(fn(m, "softmax_apply"), 256, 1, 256, 1, 0, p2) && get(y, dy, n);
  if (ok) check_close("gpu softmax: 512 x 1000, two passes", y, want, n, 1e-5);
  else check("gpu softmax runs", false);
  free(x), free(y), free(want);
}

static void test_sgemm(MlcCudaModule *m, bool ints) {
  int64_t M = 259, N = 131, K = 517;
  float *a = malloc(M * K * 4), *b = malloc(K * N * 4), *c = malloc(M * N * 4), *want = malloc(M * N * 4);
  fill_operands(a, M * K, b, K * N, ints);
  ref_sgemm(a, b, want, M, N, K);
  MlcDevPtr da = put(a, M * K), db = put(b, K * N), dc = carve(M * N * 4);
  void *params[] = {&da, &db, &dc, &M, &N, &K};
  bool ok = launch(fn(m, "sgemm16"), (unsigned)(N + 15) / 16, (unsigned)(M + 15) / 16, 16, 16, 0, params) &&
            get(c, dc, M * N);
  if (!ok) check("gpu sgemm16 runs", false);
  else if (ints) check_exact("gpu sgemm16: 259x517 @ 517x131 integers", c, want, M * N);
  else check_close("gpu sgemm16: 259x517 @ 517x131 uniform values", c, want, M * N, 1e-5);
  free(a), free(b), free(c), free(want);
}

// Four batches through two slots: batch k's upload on the copy stream, the
// elementwise kernel on it on the compute stream, each result kept apart.
static void test_stage(MlcCudaModule *m) {
  int64_t n = 1 << 16;
  float a = 2.0f, *y = malloc(4 * n * 4), *want = malloc(4 * n * 4), *b = malloc(n * 4);
  fill_unit(b, n, 9);
  MlcDevPtr db = put(b, n), dy = carve(4 * n * 4), d0 = carve(n * 4), d1 = carve(n * 4);
  MlcCudaStage st;
  MlcCudaFunc *f = fn(m, "ew_axpy_relu");
  bool ok = f && !mlc_cuda_stage_init(&st, gpu, n * 4, d0, d1, err, sizeof err);
  for (int k = 0; ok && k < 4; k++) {
    float *h = mlc_cuda_stage_host(&st, k % 2, err, sizeof err);
    MlcDevPtr dx, out = dy + (MlcDevPtr)(k * n * 4);
    ok = h != NULL;
    if (ok) {
      fill_unit(h, n, 100 + k);
      ref_ew(h, b, want + k * n, a, n);
    }
    void *params[] = {&dx, &db, &out, &a, &n};
    unsigned grid[3] = {64, 1, 1}, block[3] = {256, 1, 1};
    ok = ok && !mlc_cuda_stage_upload(&st, k % 2, n * 4, err, sizeof err) &&
         !mlc_cuda_stage_acquire(&st, k % 2, &dx, err, sizeof err) &&
         !mlc_cuda_launch(gpu, f, grid, block, 0, MLC_CUDA_COMPUTE, params, err, sizeof err) &&
         !mlc_cuda_stage_release(&st, k % 2, err, sizeof err);
  }
  if (!ok) printf("  stage: %s\n", err);
  ok = ok && get(y, dy, 4 * n);
  if (ok) check_close("stage: 4 batches through 2 pinned slots and the copy stream", y, want, 4 * n, 1e-6);
  else check("stage: 4 batches through 2 slots", false);
  if (f) mlc_cuda_stage_free(&st);
  free(y), free(want), free(b);
}

// A second thread binds the context and uploads, as a loader thread would.
typedef struct Uploader {
  MlcDevPtr dst;
  const float *src;
  int64_t n;
  int rc;
  char err[512];
} Uploader;

static void *upload_thread(void *arg) {
  Uploader *u = arg;
  u->rc = mlc_cuda_bind_thread(gpu, u->err, sizeof u->err) ||
          mlc_cuda_upload(gpu, u->dst, u->src, (size_t)u->n * 4, MLC_CUDA_COPY, u->err, sizeof u->err) ||
          mlc_cuda_sync(gpu, MLC_CUDA_COPY, u->err, sizeof u->err);
  return NULL;
}

static void test_thread(void) {
  int64_t n = 4096;
  float *x = malloc(n * 4), *back = malloc(n * 4);
  fill_unit(x, n, 11);
  Uploader u = {.dst = carve(n * 4), .src = x, .n = n};
  pthread_t t;
  bool ok = pthread_create(&t, NULL, upload_thread, &u) == 0 && pthread_join(t, NULL) == 0;
  if (ok && u.rc) printf("  thread: %s\n", u.err);
  ok = ok && !u.rc && get(back, u.dst, n);
  if (ok) check_exact("thread: another thread binds the context and uploads", back, x, n);
  else check("thread: another thread binds the context and uploads", false);
  free(x), free(back);
}

static int skip_all(const char *why) {
  printf("[SKIP] the GPU tests: %s\n", why);
  printf("%d passed, %d failed\n", npass, nfail);
  return 77;
}

int main(void) {
  gpu = mlc_cuda_open(0, err, sizeof err);
  if (!gpu) return skip_all(err);
  const MlcCudaInfo *in = mlc_cuda_info(gpu);
  printf("  device: %s, sm_%d, %d SMs, %.1f GiB, driver %d\n", in->name, in->sm, in->multiprocessors,
         in->total_mem / 1073741824.0, in->driver_version);
  char nerr[1024];
  nv = cuda_nvrtc_open(nerr, sizeof nerr);
  if (!nv) {
    mlc_cuda_close(gpu);
    return skip_all(nerr);
  }
  block_reduce_h = read_text(KDIR "block_reduce.h");
  check("arena: 64 MiB on the device", mlc_cuda_arena(gpu, ARENA_BYTES, &arena, err, sizeof err) == 0);
  const char *files[] = {"elementwise.cu", "reduce.cu", "softmax.cu", "sgemm.cu"};
  MlcCudaModule *mods[4];
  for (int i = 0; i < 4; i++) mods[i] = load(files[i], false);
  test_elementwise(mods[0], "gpu ew_axpy_relu: 1M elements from the cubin");
  test_reduce(mods[1]);
  test_softmax(mods[2]);
  test_sgemm(mods[3], true);
  test_sgemm(mods[3], false);
  test_stage(mods[0]);
  test_thread();
  MlcCudaModule *ptx = load("elementwise.cu", true);
  check("ptx: a PTX-only bundle loads as PTX",
        ptx && mlc_cuda_module_image(ptx)->kind == MLC_CUDA_PTX);
  test_elementwise(ptx, "gpu ew_axpy_relu from the JIT-compiled PTX");
  mlc_cuda_module_unload(ptx);
  for (int i = 0; i < 4; i++) mlc_cuda_module_unload(mods[i]);
  free(block_reduce_h);
  cuda_nvrtc_close(nv);
  mlc_cuda_close(gpu);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
