// test_cuda_emu.c — the CPU emulation of mlc's CUDA C subset
// (kernels/cuda/cuda_emu.h): the hand-written kernels of
// tests/backend/cuda/kernels, compiled here as C, match plain C references,
// and the emulator's own rules hold (thread and block numbering, shuffle
// lanes and widths, poisoned reads of inactive lanes, dynamic shared memory,
// divergent barriers, deadlocks, launch limits).
//
// Tolerances: built with -ffp-contract=off, the elementwise kernel and the
// sgemm (which accumulates over k in the reference's order) must match
// exactly; so must the reductions on integer-valued data (every partial sum
// is exact). On uniform data a row sum is within 1e-6 * sum |x| of the exact
// sum (its tree order differs from the reference's); softmax within 1e-6.
#include <time.h>

#include "cuda_test.h"
#include "mlc_cuda.h"

#include "kernels/elementwise.cu"
#include "kernels/mma.cu"
#include "kernels/reduce.cu"
#include "kernels/sgemm.cu"
#include "kernels/softmax.cu"

static char err[512];

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Launches and reports a failure; 0 or -1.
static int launch(const char *what, MlcEmuEntry e, void **args, dim3 grid, dim3 block,
                  size_t shared) {
  double t0 = now_ms();
  int rc = mlc_emu_launch(e, args, grid, block, shared, err, sizeof err);
  printf("  %s: grid (%u,%u,%u) x block (%u,%u,%u): %s in %.1f ms\n", what, grid.x, grid.y, grid.z,
         block.x, block.y, block.z, rc ? err : "ran", now_ms() - t0);
  return rc;
}

// ---- the hand-written kernels ------------------------------------------------------------------
static void test_elementwise(void) {
  int64_t n = 100003;
  float *x = malloc(n * sizeof *x), *b = malloc(n * sizeof *b), *y = malloc(n * sizeof *y),
        *want = malloc(n * sizeof *want), a = 0.75f;
  fill_unit(x, n, 1);
  fill_unit(b, n, 2);
  ref_ew(x, b, want, a, n);
  void *args[] = {&x, &b, &y, &a, &n};
  int rc = launch("ew_axpy_relu", ew_axpy_relu_entry, args, mlc_dim3(64, 1, 1), mlc_dim3(256, 1, 1), 0);
  if (rc == 0) check_exact("ew_axpy_relu: a grid-stride loop over 100003 elements", y, want, n);
  else check("ew_axpy_relu runs", false);
  free(x), free(b), free(y), free(want);
}

// Each out[r] within 1e-6 * sum_c |x[r, c]| of the row's exact (double) sum:
// a summation's error bound scales with the magnitudes summed, not with the
// result, which cancellation can make small.
static void check_sum_bound(const char *name, const float *x, const float *out, int64_t rows,
                            int64_t cols) {
  double worst = 0;
  for (int64_t r = 0; r < rows; r++) {
    double exact = 0, mag = 0;
    for (int64_t c = 0; c < cols; c++) {
      exact += x[r * cols + c];
      mag += fabs(x[r * cols + c]);
    }
    worst = fmax(worst, fabs(out[r] - exact) / mag);
  }
  char line[256];
  snprintf(line, sizeof line, "%s (max |err| / sum |x| %.3g <= 1e-6)", name, worst);
  check(line, worst <= 1e-6);
}

static void test_row_sum(bool ints) {
  int64_t rows = 37, cols = 1000;
  float *x = malloc(rows * cols * sizeof *x), out[37], want[37];
  if (ints) fill_int(x, rows * cols, 8, 3);
  else fill_unit(x, rows * cols, 3);
  ref_row_sum(x, want, rows, cols);
  void *args[] = {&x, &(float *){out}, &cols};
  int rc = launch("row_sum", row_sum_entry, args, mlc_dim3((unsigned)rows, 1, 1),
                  mlc_dim3(256, 1, 1), 8 * sizeof(float));
  if (rc) check("row_sum runs", false);
  else if (ints) check_exact("row_sum: 37 x 1000 integers, shuffles + dynamic shared", out, want, rows);
  else check_sum_bound("row_sum: 37 x 1000 uniform values", x, out, rows, cols);
  free(x);
}

static void test_sum_atomic(void) {
  int64_t n = 50000;
  float *x = malloc(n * sizeof *x), total = 0, want = 0;
  fill_int(x, n, 8, 4);
  for (int64_t i = 0; i < n; i++) want += x[i];
  float *pt = &total;
  void *args[] = {&x, &pt, &n};
  int rc = launch("sum_atomic", sum_atomic_entry, args, mlc_dim3(13, 1, 1), mlc_dim3(256, 1, 1), 0);
  if (rc == 0) check_exact("sum_atomic: 13 blocks combined with atomicAdd", &total, &want, 1);
  else check("sum_atomic runs", false);
  free(x);
}

static void test_softmax(void) {
  int64_t rows = 19, cols = 333;
  float *x = malloc(rows * cols * sizeof *x), *y = malloc(rows * cols * sizeof *y),
        *want = malloc(rows * cols * sizeof *want), stats[2 * 19];
  fill_unit(x, rows * cols, 5);
  for (int64_t i = 0; i < rows * cols; i++) x[i] *= 8; // logits in [-8, 8)
  ref_softmax(x, want, rows, cols);
  float *ps = stats;
  void *a1[] = {&x, &ps, &cols};
  void *a2[] = {&x, &ps, &y, &rows, &cols};
  int rc = launch("softmax_stats", softmax_stats_entry, a1, mlc_dim3((unsigned)rows, 1, 1),
                  mlc_dim3(128, 1, 1), 4 * sizeof(float));
  if (!rc)
    rc = launch("softmax_apply", softmax_apply_entry, a2, mlc_dim3(16, 1, 1), mlc_dim3(256, 1, 1), 0);
  if (rc == 0) check_close("softmax: two passes over 19 x 333 logits", y, want, rows * cols, 1e-6);
  else check("softmax runs", false);
  free(x), free(y), free(want);
}

static void test_sgemm(bool ints) {
  int64_t m = 67, n = 45, k = 83;
  float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b), *c = malloc(m * n * sizeof *c),
        *want = malloc(m * n * sizeof *want);
  fill_operands(a, m * k, b, k * n, ints);
  ref_sgemm(a, b, want, m, n, k);
  void *args[] = {&a, &b, &c, &m, &n, &k};
  int rc = launch("sgemm16", sgemm16_entry, args, mlc_dim3((unsigned)(n + 15) / 16, (unsigned)(m + 15) / 16, 1),
                  mlc_dim3(16, 16, 1), 0);
  if (rc) check("sgemm16 runs", false);
  else if (ints) check_exact("sgemm16: 67x83 @ 83x45 integers, 16x16 shared tiles", c, want, m * n);
  else check_exact("sgemm16: 67x83 @ 83x45 uniform values, the reference's k order", c, want, m * n);
  free(a), free(b), free(c), free(want);
}

// The tensor-core product (mlc_cuda.h's fragments, cuda_emu.h's mma): d =
// A B of operands rounded to bf16 / f16 equals the reference's fmaf chain
// over k from +0 bit for bit (kir.h's KMma order; the products are exact),
// on uniform values of both signs; A's fragment with two registers
// exchanged gives another result.
static void test_mma(int f16) {
  float a[256], b[128], d[128], want[128];
  uint32_t r = 12345;
  for (int i = 0; i < 256; i++) r = r * 1664525u + 1013904223u, a[i] = (float)(r >> 8) / 16777216.0f - 0.5f;
  for (int i = 0; i < 128; i++) r = r * 1664525u + 1013904223u, b[i] = (float)(r >> 8) / 16777216.0f - 0.5f;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 8; j++) {
      float acc = 0.0f;
      for (int k = 0; k < 16; k++)
        acc = f16 ? fmaf(mlc_round_f16(a[i * 16 + k]), mlc_round_f16(b[k * 8 + j]), acc)
                  : fmaf(mlc_round_bf16(a[i * 16 + k]), mlc_round_bf16(b[k * 8 + j]), acc);
      want[i * 8 + j] = acc;
    }
  const float *pa = a, *pb = b;
  float *pd = d;
  void *args[] = {&pa, &pb, &pd, &f16};
  int rc = launch("mma16816", mma16816_entry, args, mlc_dim3(1, 1, 1), mlc_dim3(32, 1, 1), 0);
  if (rc) check("mma16816 runs", false);
  else check_exact(f16 ? "mma f16: 16x16 @ 16x8, the fragments' layout and the fmaf order over k"
                       : "mma bf16: 16x16 @ 16x8, the fragments' layout and the fmaf order over k", d, want, 128);
  if (f16) return;
  rc = launch("mma_swapped", mma_swapped_entry, args, mlc_dim3(1, 1, 1), mlc_dim3(32, 1, 1), 0);
  int same = 0;
  for (int i = 0; i < 128; i++) same += d[i] == want[i];
  check("mma: a fragment with two registers exchanged gives another product", rc == 0 && same < 64);
}

// ---- the emulator's rules -----------------------------------------------------------------------
// out[global linear thread] = its (block, thread) coordinates packed in base 16
MLC_KERNEL emu_ids(int *out) {
  unsigned bl = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned tl = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  out[bl * blockDim.x * blockDim.y * blockDim.z + tl] =
      (int)(blockIdx.x | blockIdx.y << 4 | blockIdx.z << 8 | threadIdx.x << 12 |
            threadIdx.y << 16 | threadIdx.z << 20);
}
MLC_ENTRY1(emu_ids, int *)

static void test_ids(void) {
  dim3 g = {3, 2, 2}, b = {4, 3, 2};
  int n = 3 * 2 * 2 * 4 * 3 * 2, *out = calloc(n, sizeof *out);
  void *args[] = {&out};
  bool ok = launch("emu_ids", emu_ids_entry, args, g, b, 0) == 0;
  for (int i = 0; ok && i < n; i++) {
    int bl = i / 24, tl = i % 24;
    int want = bl % 3 | (bl / 3 % 2) << 4 | (bl / 6) << 8 | (tl % 4) << 12 | (tl / 4 % 3) << 16 |
               (tl / 12) << 20;
    ok = out[i] == want;
  }
  check("ids: threadIdx, blockIdx, blockDim, gridDim over a 3-d grid and block, x fastest", ok);
  free(out);
}

// out[kind * nthreads + t] = the shuffle of kind (0 idx, 1 down, 2 up, 3 xor)
// of value 10 * t with argument `arg` and width `width`
MLC_KERNEL emu_shfl(float *out, int arg, int width) {
  unsigned t = threadIdx.x, n = blockDim.x;
  float v = 10.0f * t;
  out[0 * n + t] = __shfl_sync(0xffffffffu, v, arg, width);
  out[1 * n + t] = __shfl_down_sync(0xffffffffu, v, arg, width);
  out[2 * n + t] = __shfl_up_sync(0xffffffffu, v, arg, width);
  out[3 * n + t] = __shfl_xor_sync(0xffffffffu, v, arg, width);
}
MLC_ENTRY3(emu_shfl, float *, int, int)

// CUDA's rule for the lane each shuffle reads (-1: the caller's own value).
static int want_src(int kind, int lane, int arg, int w) {
  int base = lane / w * w;
  switch (kind) {
  case 0: return base + arg % w;
  case 1: return lane % w + arg < w ? lane + arg : -1;
  case 2: return lane % w >= arg ? lane - arg : -1;
  default: return (lane ^ arg) < base + w ? lane ^ arg : -1;
  }
}

static void test_shfl(int arg, int width) {
  float out[4 * 64];
  void *args[] = {&(float *){out}, &arg, &width};
  bool ok = launch("emu_shfl", emu_shfl_entry, args, mlc_dim3(1, 1, 1), mlc_dim3(64, 1, 1), 0) == 0;
  for (int kind = 0; ok && kind < 4; kind++)
    for (int t = 0; ok && t < 64; t++) {
      int lane = t % 32, src = want_src(kind, lane, arg, width);
      float want = 10.0f * (src < 0 ? t : t - lane + src);
      ok = out[kind * 64 + t] == want;
      if (!ok) printf("  kind %d thread %d: %g, want %g\n", kind, t, out[kind * 64 + t], want);
    }
  char line[128];
  snprintf(line, sizeof line, "shfl: idx/down/up/xor with argument %d and width %d, two warps", arg, width);
  check(line, ok);
}

// out[t] = __shfl_down_sync(full, t, 16): a 48-thread block's second warp has 16 lanes
MLC_KERNEL emu_partial(float *out) {
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, (float)threadIdx.x, 16);
}
MLC_ENTRY1(emu_partial, float *)

static void test_partial_warp(void) {
  float out[48];
  void *args[] = {&(float *){out}};
  bool ok = launch("emu_partial", emu_partial_entry, args, mlc_dim3(1, 1, 1), mlc_dim3(48, 1, 1), 0) == 0;
  bool full = true, poison = true;
  for (int t = 0; ok && t < 16; t++) full &= out[t] == t + 16;
  for (int t = 32; ok && t < 48; t++) poison &= isnan(out[t]);
  check("partial warp: the full first warp reads its lanes 16..31", ok && full);
  check("partial warp: lanes reading a thread the block lacks get poison (NaN)", ok && poison);
}

// out[block] = the first dynamic shared float (never written: poison), then
// the sum of what every thread wrote there
MLC_KERNEL emu_dyn(float *out) {
  MLC_DYN_SHARED(float, s);
  float first = s[0];
  MLC_BARRIER();
  s[threadIdx.x] = (float)threadIdx.x;
  MLC_BARRIER();
  if (threadIdx.x == 0) {
    float sum = 0;
    for (unsigned i = 0; i < blockDim.x; i++) sum += s[i];
    out[2 * blockIdx.x] = first;
    out[2 * blockIdx.x + 1] = sum;
  }
}
MLC_ENTRY1(emu_dyn, float *)

static void test_dyn_shared(void) {
  float out[6];
  void *args[] = {&(float *){out}};
  bool ok = launch("emu_dyn", emu_dyn_entry, args, mlc_dim3(3, 1, 1), mlc_dim3(64, 1, 1),
                   64 * sizeof(float)) == 0;
  check("dynamic shared: refilled with 0xff bytes (NaN) before every block",
        ok && isnan(out[0]) && isnan(out[2]) && isnan(out[4]));
  check("dynamic shared: one buffer per block, seen by all its threads",
        ok && out[1] == 2016 && out[3] == 2016 && out[5] == 2016);
}

// 64-bit shuffles and atomics: out[t] = the xor-1 neighbour's t << 40;
// every thread adds 2^33 to *acc
MLC_KERNEL emu_wide(int64_t *out, uint64_t *acc) {
  int64_t v = (int64_t)threadIdx.x << 40;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, 1);
  atomicAdd(acc, (uint64_t)1 << 33);
}
MLC_ENTRY2(emu_wide, int64_t *, uint64_t *)

static void test_wide(void) {
  int64_t out[64];
  uint64_t acc = 0;
  void *args[] = {&(int64_t *){out}, &(uint64_t *){&acc}};
  bool ok = launch("emu_wide", emu_wide_entry, args, mlc_dim3(1, 1, 1), mlc_dim3(64, 1, 1), 0) == 0;
  for (int t = 0; ok && t < 64; t++) ok = out[t] == (int64_t)(t ^ 1) << 40;
  check("64-bit: int64_t shuffles keep all bits", ok);
  check("64-bit: atomicAdd on uint64_t", acc == (uint64_t)64 << 33);
}

MLC_KERNEL emu_diverge(int *out) {
  if (threadIdx.x == 3) MLC_BARRIER();
  else MLC_BARRIER();
  out[threadIdx.x] = 1;
}
MLC_ENTRY1(emu_diverge, int *)

MLC_KERNEL emu_exit_early(int *out) {
  if (threadIdx.x == 5) return;
  MLC_BARRIER();
  out[threadIdx.x] = 1;
}
MLC_ENTRY1(emu_exit_early, int *)

MLC_KERNEL emu_deadlock(float *out) {
  float v = (float)threadIdx.x;
  if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  else MLC_BARRIER();
  out[threadIdx.x] = v;
}
MLC_ENTRY1(emu_deadlock, float *)

static void test_failures(void) {
  int iout[64];
  float fout[64];
  void *ia[] = {&(int *){iout}}, *fa[] = {&(float *){fout}};
  int rc = launch("emu_diverge", emu_diverge_entry, ia, mlc_dim3(1, 1, 1), mlc_dim3(8, 1, 1), 0);
  check("divergent barrier: two barrier lines fail the launch, naming both",
        rc == -1 && strstr(err, "divergent barrier in block (0,0,0)") && strstr(err, "test_cuda_emu.c:"));
  rc = launch("emu_exit_early", emu_exit_early_entry, ia, mlc_dim3(1, 1, 1), mlc_dim3(8, 1, 1), 0);
  check("divergent barrier: a thread that returned while the others wait",
        rc == -1 && strstr(err, "thread (5,0,0) returned"));
  rc = launch("emu_deadlock", emu_deadlock_entry, fa, mlc_dim3(1, 1, 1), mlc_dim3(32, 1, 1), 0);
  check("deadlock: lanes at a shuffle while the rest of the warp waits at a barrier",
        rc == -1 && strstr(err, "deadlock"));
  rc = launch("emu_ids", emu_ids_entry, ia, mlc_dim3(1, 1, 1), mlc_dim3(2048, 1, 1), 0);
  check("limits: 2048 threads per block are refused", rc == -1 && strstr(err, "exceeds 1024"));
  rc = launch("emu_dyn", emu_dyn_entry, fa, mlc_dim3(1, 1, 1), mlc_dim3(32, 1, 1), 300 * 1024);
  check("limits: 300 KiB of dynamic shared memory are refused", rc == -1 && strstr(err, "exceed"));
  rc = launch("emu_ids", emu_ids_entry, ia, mlc_dim3(1, 0, 1), mlc_dim3(1, 1, 1), 0);
  check("limits: a zero grid dimension is refused", rc == -1);
}

int main(void) {
  test_elementwise();
  test_row_sum(true);
  test_row_sum(false);
  test_sum_atomic();
  test_softmax();
  test_sgemm(true);
  test_sgemm(false);
  test_mma(0);
  test_mma(1);
  test_ids();
  test_shfl(1, 32);
  test_shfl(16, 32);
  test_shfl(3, 8);
  test_shfl(37, 32);
  test_partial_warp();
  test_dyn_shared();
  test_wide();
  test_failures();
  mlc_emu_release();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
