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
//
// MLC_GEMM_BF16 / F16: the A rows are rounded once per call into a buffer
// (at most 4 x K floats) and B is either a constant's 16-bit copy
// (gemm_cache.c), widened exactly as it is loaded, or a plain k-major B
// rounded as it is loaded: every product is the f32 product of the
// rounded operands, in the same chain, as the packing path computes it.
#include "../gemm_ref.h"
#include "gemv.h"
#include "mlc_rt.h"
#include "runtime/core/team.h"

// Below this many bytes of B a product runs on the caller: a parallel
// region costs about 0.5 us (runtime/core/pool.c), reading 256 KiB from L2
// about 2 us; a held team's run (runtime/core/team.c) costs about 0.1 us.
#define GEMV_PAR_MIN_BYTES (256 << 10)
#define GEMV_TEAM_MIN_BYTES (32 << 10)

// The strip kernel of the GEMM variant in use, NULL where it has none
// (the blocked GEMM then takes every product).
static const GemvKernel *gemv_kernel(void) {
#if defined(__x86_64__) || defined(__i386__)
  const GemmVariant *v = gemm_current();
  if (v == &gemm_avx512) return &gemv_avx512;
  if (v == &gemm_avx2 && gemv_avx2.supported()) return &gemv_avx2;
#endif
  return NULL;
}

bool gemv_available(void) { return gemv_kernel() != NULL; }

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

bool gemv_fits(const Gemm *g) { return g->m <= GEMV_MR && g->csb == 1 && gemv_available(); }

// One call's operands as the strips read them: A (rounded when the
// product is), B in one of gemv.h's forms, rsb its row stride in elements.
// Self-contained (no pointer to the caller's frame), so that a held team
// copies it to its workers whole (runtime/core/team.h).
typedef struct Gemv {
  Gemm g;
  const float *a;
  int64_t rsa, csa;
  const void *b;
  int64_t rsb;
  int form, esize; // GEMV_B_*, bytes per B element
  const GemvKernel *kern;
} Gemv;

// A's rows (k-contiguous) fetched at once: on a thread other than the one
// that wrote them (the previous layer's other columns), each line is a
// miss to that core, which the strip's k loop would meet one at a time.
static void prefetch_a(const Gemv *s) {
  if (s->csa != 1) return;
  for (int64_t i = 0; i < s->g.m; i++)
    for (int64_t p = 0; p < s->g.k; p += 16) __builtin_prefetch(s->a + i * s->rsa + p);
}

// Columns [j0, j1) of C, strip by strip, each over all K blocks.
static void gemv_region(const Gemv *s, int64_t j0, int64_t j1) {
  const Gemm *g = &s->g;
  int mr = (int)g->m, w = s->kern->width(mr);
  int64_t kcb = mlc_gemm_kblock(g->k), nkb = mlc_gemm_kblocks(g->k);
  uint32_t epi = g->flags & ~(uint32_t)(MLC_GEMM_BF16 | MLC_GEMM_F16);
  for (int64_t jc = j0; jc < j1; jc += w) {
    int nr = (int)min64(w, j1 - jc);
    for (int64_t kb = 0; kb < nkb; kb++) {
      int64_t pc = kb * kcb, kc = min64(kcb, g->k - pc);
      GemmEpi e = {.flags = kb == nkb - 1 ? epi : 0, .alpha = g->alpha,
                   .beta = kb == 0 ? g->beta : 1.0f, .ldaux = g->ldaux,
                   .bias_col = g->bias ? g->bias + jc : NULL, .bias_row = g->bias,
                   .aux = g->aux ? g->aux + jc : NULL};
      const char *b = (const char *)s->b + (pc * s->rsb + jc) * s->esize;
      s->kern->strip(s->form, kc, s->a + pc * s->csa, s->rsa, s->csa, b, s->rsb, mr, nr,
                     g->c + jc, g->ldc, &e);
    }
  }
}

typedef struct GemvSplit {
  Gemv s;
  int64_t step; // columns per task, whole vectors
} GemvSplit;

_Static_assert(sizeof(GemvSplit) <= MLC_TEAM_ARG_BYTES, "a team copies the split whole");

static void gemv_task(void *vs, int64_t b, int64_t e) {
  const GemvSplit *t = vs;
  prefetch_a(&t->s);
  for (int64_t i = b; i < e; i++) gemv_region(&t->s, i * t->step, min64((i + 1) * t->step, t->s.g.n));
}

// Tasks take runs of whole 16-column vectors (narrower strips than one
// thread would use: fc1's 256 columns at batch 1 are one strip), so a
// 16-bit copy's column groups are never cut.
int gemv_run(MlcPool *pool, const Gemm *g, const uint16_t *b16, bool b_rounded) {
  uint32_t round = g->flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  Gemv s = {.g = *g, .a = g->a, .rsa = g->rsa, .csa = g->csa, .b = g->b, .rsb = g->rsb,
            .form = GEMV_B_F32, .esize = 4, .kern = gemv_kernel()};
  if (round) {
    bool bf = round & MLC_GEMM_BF16;
    if (b16) s.b = b16, s.rsb = gemv_pad16(g->n), s.esize = 2, s.form = bf ? GEMV_B_BF16 : GEMV_B_F16;
    else if (!b_rounded) s.form = bf ? GEMV_B_ROUND_BF16 : GEMV_B_ROUND_F16;
    if (g->k > 0) { // A's rows, rounded, [m, k]
      float *ar = gemm_scratch(GEMM_SCRATCH_ROUND, g->m * g->k);
      if (!ar) return -1;
      for (int64_t i = 0; i < g->m; i++) {
        const float *src = g->a + i * g->rsa;
        float *dst = ar + i * g->k;
        if (g->csa != 1) {
          for (int64_t p = 0; p < g->k; p++) dst[p] = src[p * g->csa];
          src = dst;
        }
        s.kern->round(round, g->k, src, dst);
      }
      s.a = ar, s.rsa = g->k, s.csa = 1;
    }
  }
  MlcTeam *team = mlc_team_current();
  bool held = mlc_team_parts(team, pool) > 1;
  int64_t vecs = (g->n + 15) / 16, parts = mlc_pool_threads(pool);
  if ((double)g->k * (double)g->n * s.esize < (held ? GEMV_TEAM_MIN_BYTES : GEMV_PAR_MIN_BYTES)) parts = 1;
  parts = min64(parts < 1 ? 1 : parts, vecs);
  if (parts <= 1) {
    gemv_region(&s, 0, g->n);
    return 0;
  }
  GemvSplit t = {.s = s, .step = (vecs + parts - 1) / parts * 16};
  int64_t tasks = (g->n + t.step - 1) / t.step;
  if (held) mlc_team_run(team, tasks, gemv_task, &t, sizeof t);
  else mlc_parallel_for(pool, tasks, 1, gemv_task, &t);
  return 0;
}
