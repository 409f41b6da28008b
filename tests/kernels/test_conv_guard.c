// test_conv_guard.c — the convolution kernels read nothing past the end of
// their per-thread scratch buffers.
//
// Linked with -Wl,--wrap=aligned_alloc,--wrap=free: every aligned_alloc of
// 4 KiB or more (the kernels' scratch, gemm.c's gemm_scratch) gets pages of
// its own, the block ending where a PROT_NONE guard page starts, so a read
// past its end faults here where in a plain build it reads the heap's next
// bytes and faults only when the block ends a mapping. The case: the lane
// forward (conv_lanes_avx512.c) resumes a tile's chains from yt [round16(nq),
// OP] when K is walked in slices; its short last tile of 6 pixels loaded
// all 6 rows (q = 126 of nq = 128: rows up to 131), found by the CUDA fuzz
// run's CPU side (tests/fuzz_conv/gen_conv.py seed 193, predict at batch 1
// on 2 threads). Each geometry's y must also be the serial call's bits.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mlc_kernels.h"
#include "mlc_rt.h"
#include "rand_data.h"
#include "unit.h"

void *__real_aligned_alloc(size_t align, size_t n);
void __real_free(void *p);

// The guarded blocks: the pointer handed out, the mapping under it.
enum { GUARDED_BYTES = 4096, MAX_GUARDED = 256 };
static struct {
  void *p, *base;
  size_t len;
} guarded[MAX_GUARDED];
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;

void *__wrap_aligned_alloc(size_t align, size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (n < GUARDED_BYTES || align > page || page % align) return __real_aligned_alloc(align, n);
  size_t body = (n + page - 1) / page * page, len = body + page;
  char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  mprotect(base + body, page, PROT_NONE);
  void *p = base + body - (n + align - 1) / align * align; // ends at the guard, aligned
  pthread_mutex_lock(&guard_lock);
  int i = 0;
  while (i < MAX_GUARDED && guarded[i].p) i++;
  if (i < MAX_GUARDED) guarded[i].p = p, guarded[i].base = base, guarded[i].len = len;
  pthread_mutex_unlock(&guard_lock);
  if (i == MAX_GUARDED) abort(); // more live scratch blocks than any test here makes
  return p;
}

void __wrap_free(void *p) {
  pthread_mutex_lock(&guard_lock);
  int i = 0;
  while (p && i < MAX_GUARDED && guarded[i].p != p) i++;
  bool mine = p && i < MAX_GUARDED;
  void *base = mine ? guarded[i].base : NULL;
  size_t len = mine ? guarded[i].len : 0;
  if (mine) guarded[i].p = NULL;
  pthread_mutex_unlock(&guard_lock);
  if (mine) munmap(base, len);
  else __real_free(p);
}

// x [n, c, h, w] through o k x k filters (pad, stride 1) on 0-3 threads:
// no fault, and every thread count gives the serial call's y.
static void check_geometry(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t k, int64_t pad) {
  int64_t g[MLC_CONV_GEOM] = {n, c, h, w, o, k, k, 1, 1, pad, pad, 1, 1, 1};
  int64_t ho = h + 2 * pad - k + 1, wo = w + 2 * pad - k + 1, ny = n * o * ho * wo;
  float *x = rand_buf(n * c * h * w), *wt = rand_buf(o * c * k * k), *b = rand_buf(o);
  float *y0 = malloc((size_t)ny * 4), *y = malloc((size_t)ny * 4);
  int rc = mlc_conv2d(NULL, g, 0, x, wt, b, y0);
  bool same = true;
  for (int t = 1; t <= 3; t++) {
    MlcPool *pool = mlc_pool_new(t);
    memset(y, 0xff, (size_t)ny * 4);
    rc |= mlc_conv2d(pool, g, 0, x, wt, b, y);
    same &= !memcmp(y, y0, (size_t)ny * 4);
    mlc_pool_free(pool);
  }
  char msg[200];
  snprintf(msg, sizeof msg, "conv2d x[%lld,%lld,%lld,%lld] -> %lld, %lldx%lld pad %lld: 0-3 threads, scratch ends "
           "at a guard page, the same bits",
           (long long)n, (long long)c, (long long)h, (long long)w, (long long)o, (long long)k, (long long)k,
           (long long)pad);
  check(msg, !rc && same);
  free(x), free(wt), free(b), free(y0), free(y);
}

int main(void) {
  check_geometry(1, 16, 15, 15, 200, 3, 1); // seed 193's c0: K = 144 in slices, short last tiles
  check_geometry(1, 200, 15, 15, 16, 3, 2); // its c1
  check_geometry(1, 1, 28, 28, 32, 3, 1);   // fashion_cnn's conv1 at batch 1
  check_geometry(1, 32, 14, 14, 64, 3, 1);  // its conv2
  check_geometry(3, 7, 13, 11, 70, 5, 2);   // odd sizes, a few images, K = 175
  check_geometry(2, 70, 7, 9, 40, 3, 1);    // K = 630: two K blocks, the second's chains in their own buffer
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
