// gemv.c — the small-M path of mlc_sgemm: products of 1 to GEMV_MR rows
// (batch-1 inference, a Linear of a few samples) with a k-major op(B).
// The blocked GEMM computes whole 8-row tiles, so one row costs it as much
// as eight; here each strip of up to 256 columns is one kernel call per K
// block that reads B once, with as many accumulators as the rows need.
//
// Order: the K blocks are the GEMM's (mlc_gemm_kblock), added into C in
// block order with the epilogue after the last, and each element's block
// sum is one fmaf chain in k order: the bits of gemm_region, for any
// split. Threads split the columns into runs of whole 16-column vectors
// once B is large enough that reading it (not the call) costs the time:
// each thread then reads its own columns of B, from its own core's cache.
#include "../gemm_ref.h"
#include "gemv.h"
#include "mlc_rt.h"

// Below this many bytes of B a product runs on the caller: a parallel
// region costs about 0.5 us (runtime/core/pool.c), reading 256 KiB from L2
// about 4 us.
#define GEMV_PAR_MIN_BYTES (256 << 10)

#if defined(__x86_64__) || defined(__i386__)
bool gemv_fits(const Gemm *g) {
  return g->m <= GEMV_MR && g->csb == 1 && gemm_current() == &gemm_avx512;
}
#else
bool gemv_fits(const Gemm *g) { return (void)g, false; }
int gemv_avx512_width(int mr) { return (void)mr, 16; }
void gemv_avx512_strip(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                       int64_t rsb, int mr, int nr, float *c, int64_t ldc, const GemmEpi *e) {
  (void)kc, (void)a, (void)rsa, (void)csa, (void)b, (void)rsb, (void)mr, (void)nr, (void)c, (void)ldc, (void)e;
}
#endif

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Columns [j0, j1) of C, strip by strip, each over all K blocks.
static void gemv_region(const Gemm *g, int64_t j0, int64_t j1) {
  int mr = (int)g->m, w = gemv_avx512_width(mr);
  int64_t kcb = mlc_gemm_kblock(g->k), nkb = mlc_gemm_kblocks(g->k);
  for (int64_t jc = j0; jc < j1; jc += w) {
    int nr = (int)min64(w, j1 - jc);
    for (int64_t kb = 0; kb < nkb; kb++) {
      int64_t pc = kb * kcb, kc = min64(kcb, g->k - pc);
      GemmEpi e = {.flags = kb == nkb - 1 ? g->flags : 0, .alpha = g->alpha,
                   .beta = kb == 0 ? g->beta : 1.0f, .ldaux = g->ldaux,
                   .bias_col = g->bias ? g->bias + jc : NULL, .bias_row = g->bias,
                   .aux = g->aux ? g->aux + jc : NULL};
      gemv_avx512_strip(kc, g->a + pc * g->csa, g->rsa, g->csa, g->b + pc * g->rsb + jc, g->rsb,
                        mr, nr, g->c + jc, g->ldc, &e);
    }
  }
}

typedef struct GemvSplit {
  const Gemm *g;
  int64_t step; // columns per task, whole vectors
} GemvSplit;

static void gemv_task(void *vs, int64_t b, int64_t e) {
  const GemvSplit *s = vs;
  for (int64_t t = b; t < e; t++) gemv_region(s->g, t * s->step, min64((t + 1) * s->step, s->g->n));
}

// Tasks take runs of whole 16-column vectors (narrower strips than one
// thread would use: fc1's 256 columns at batch 1 are one strip).
int gemv_run(MlcPool *pool, const Gemm *g) {
  int64_t vecs = (g->n + 15) / 16, parts = mlc_pool_threads(pool);
  if ((double)g->k * (double)g->n * sizeof(float) < GEMV_PAR_MIN_BYTES) parts = 1;
  parts = min64(parts < 1 ? 1 : parts, vecs);
  if (parts <= 1) {
    gemv_region(g, 0, g->n);
    return 0;
  }
  GemvSplit s = {.g = g, .step = (vecs + parts - 1) / parts * 16};
  mlc_parallel_for(pool, (g->n + s.step - 1) / s.step, 1, gemv_task, &s);
  return 0;
}
