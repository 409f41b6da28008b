// gemm_cache.c — k-major copies of constant TRANS_B operands (a model's
// weights while it only predicts), made once instead of on every call.
//
// A Linear's forward is x @ w^T with w stored [out, in]: op(B) is w^T, and
// mlc_sgemm packs it into k-major panels on every call, which at batch 1
// costs more than the product. A cache holds address ranges its owner
// declares constant (mlc_gemm_cache_add) and, for each TRANS_B operand
// met inside one, the copy dst[p*n + j] = b[j*ldb + p] ([K, N], row-major),
// which mlc_sgemm then reads as a plain (non-transposed) B in products of
// at most GEMV_MR rows (the small-M path; larger ones pack panels per call,
// which the kernel reads faster than a k-major B in place). Copying never
// changes a value and the GEMM's order depends on K alone, so results are
// the same bits with or without a cache.
//
// A product with MLC_GEMM_BF16 or MLC_GEMM_F16 reads only the rounded
// values of B, so its copy holds them as 16 bits (round16.h), half the
// bytes the small-M path then reads per call; widening is exact, so the
// bits are again those of rounding while packing. Where widening costs
// more than the bytes saved (gemm.c's mlc_sgemm chooses), the copy holds
// the rounded values as floats instead (GEMM_CACHE_WIDE). A copy is found
// by the operand's address, shape and kind: the f32, bf16 and f16 copies
// of one weight are different copies.
//
// Ownership: the owner (runtime/core/instance.c: one cache per model
// instance) declares the ranges, makes the cache current on its thread
// around the calls that may use it (mlc_gemm_cache_use), and forgets the
// copies whenever the memory may have changed (mlc_gemm_cache_clear) or
// drops a range for good (mlc_gemm_cache_remove). Only the thread that
// made a cache current reads it, so it needs no lock; a product computed
// on a pool worker simply packs as usual. Copies come from malloc.
#include <stdlib.h>
#include <string.h>

#include "../round16.h"
#include "gemv.h"

typedef struct Range {
  const char *lo, *hi; // [lo, hi)
} Range;

typedef struct Copy {
  const float *b;
  int64_t n, k, ldb;
  uint32_t kind; // 0, MLC_GEMM_BF16 or MLC_GEMM_F16, maybe | GEMM_CACHE_WIDE
  void *kmajor;  // float [k, n], or uint16_t [k, gemv_pad16(n)]
} Copy;

struct MlcGemmCache {
  Range *ranges;
  int nranges, cap_ranges;
  Copy *copies;
  int ncopies, cap_copies;
};

static _Thread_local MlcGemmCache *current;

MlcGemmCache *mlc_gemm_cache_new(void) { return calloc(1, sizeof(MlcGemmCache)); }

void mlc_gemm_cache_clear(MlcGemmCache *c) {
  if (!c) return;
  for (int i = 0; i < c->ncopies; i++) free(c->copies[i].kmajor);
  c->ncopies = 0;
}

void mlc_gemm_cache_free(MlcGemmCache *c) {
  if (!c) return;
  if (current == c) current = NULL;
  mlc_gemm_cache_clear(c);
  free(c->copies), free(c->ranges), free(c);
}

int mlc_gemm_cache_add(MlcGemmCache *c, const void *p, size_t bytes) {
  if (!c || !p || !bytes) return 0;
  if (c->nranges == c->cap_ranges) {
    int cap = c->cap_ranges ? 2 * c->cap_ranges : 16;
    Range *r = realloc(c->ranges, (size_t)cap * sizeof *r);
    if (!r) return -1;
    c->ranges = r, c->cap_ranges = cap;
  }
  c->ranges[c->nranges++] = (Range){p, (const char *)p + bytes};
  return 0;
}

void mlc_gemm_cache_remove(MlcGemmCache *c, const void *p) {
  if (!c) return;
  const char *q = p;
  for (int i = 0; i < c->nranges; i++)
    if (q >= c->ranges[i].lo && q < c->ranges[i].hi) {
      const char *lo = c->ranges[i].lo, *hi = c->ranges[i].hi;
      c->ranges[i--] = c->ranges[--c->nranges];
      for (int j = 0; j < c->ncopies; j++) {
        const char *b = (const char *)c->copies[j].b;
        if (b < lo || b >= hi) continue;
        free(c->copies[j].kmajor);
        c->copies[j--] = c->copies[--c->ncopies];
      }
    }
}

MlcGemmCache *mlc_gemm_cache_use(MlcGemmCache *c) {
  MlcGemmCache *was = current;
  current = c;
  return was;
}

// Whether every element op(B) reads, b[j*ldb + p] for j < n, p < k, lies
// in one declared range.
static bool constant(const MlcGemmCache *c, const float *b, int64_t n, int64_t k, int64_t ldb) {
  const char *lo = (const char *)b, *hi = (const char *)(b + (n - 1) * ldb + k);
  for (int i = 0; i < c->nranges; i++)
    if (lo >= c->ranges[i].lo && hi <= c->ranges[i].hi) return true;
  return false;
}

// dst[p*ldd + j] = b[j*ldb + p], in 16 x 16 tiles so that both sides stay
// in cache lines (run once per constant, so plain C is enough; this file
// needs nothing else of the kernel library, which keeps the runtime's fuzz
// builds free of it). A rounding kind stores round16.h's rounded value: as
// a float (GEMM_CACHE_WIDE), or its 16 bits, a bf16 column at its place in
// gemv_bf16_pos's order, zeros up to ldd.
static void transpose(const float *b, int64_t n, int64_t k, int64_t ldb, uint32_t kind, void *dst,
                      int64_t ldd) {
  enum { T = 16 };
  uint32_t fmt = kind & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  bool half = fmt && !(kind & GEMM_CACHE_WIDE);
  float *d32 = dst;
  uint16_t *d16 = dst;
  if (half) memset(dst, 0, (size_t)(k * ldd) * sizeof(uint16_t));
  for (int64_t j0 = 0; j0 < n; j0 += T)
    for (int64_t p0 = 0; p0 < k; p0 += T) {
      int64_t j1 = j0 + T < n ? j0 + T : n, p1 = p0 + T < k ? p0 + T : k;
      for (int64_t j = j0; j < j1; j++) {
        int64_t col = half && fmt == MLC_GEMM_BF16 ? j0 + gemv_bf16_pos((int)(j - j0)) : j;
        for (int64_t p = p0; p < p1; p++) {
          float x = b[j * ldb + p];
          if (half) d16[p * ldd + col] = fmt == MLC_GEMM_BF16 ? mlc_f32_to_bf16(x) : mlc_f32_to_f16(x);
          else d32[p * ldd + j] = fmt == MLC_GEMM_BF16 ? mlc_round_bf16(x) : fmt ? mlc_round_f16(x) : x;
        }
      }
    }
}

const void *gemm_cache_kmajor(const float *b, int64_t n, int64_t k, int64_t ldb, uint32_t kind) {
  MlcGemmCache *c = current;
  if (!c || n <= 0 || k <= 0) return NULL;
  for (int i = 0; i < c->ncopies; i++) {
    const Copy *x = &c->copies[i];
    if (x->b == b && x->n == n && x->k == k && x->ldb == ldb && x->kind == kind) return x->kmajor;
  }
  if (!constant(c, b, n, k, ldb)) return NULL;
  if (c->ncopies == c->cap_copies) {
    int cap = c->cap_copies ? 2 * c->cap_copies : 16;
    Copy *x = realloc(c->copies, (size_t)cap * sizeof *x);
    if (!x) return NULL;
    c->copies = x, c->cap_copies = cap;
  }
  bool half = (kind & (MLC_GEMM_BF16 | MLC_GEMM_F16)) && !(kind & GEMM_CACHE_WIDE);
  int64_t ldd = half ? gemv_pad16(n) : n;
  size_t bytes = ((size_t)ldd * (size_t)k * (half ? 2 : 4) + 63) & ~(size_t)63;
  void *dst = aligned_alloc(64, bytes);
  if (!dst) return NULL;
  transpose(b, n, k, ldb, kind, dst, ldd);
  c->copies[c->ncopies++] = (Copy){b, n, k, ldb, kind, dst};
  return dst;
}

// A derived copy's ldb is -1 - tag (so no k-major copy, ldb >= 1, has it).
static const float *derived(const float *src, int64_t n, int64_t k, int64_t tag, int64_t in_floats, uint32_t kind,
                            int64_t out_floats, GemmCacheMake *make, GemmCacheMakeCtx *make_ctx, const void *ctx) {
  MlcGemmCache *c = current;
  if (!c || in_floats <= 0 || out_floats <= 0 || tag < 0) return NULL;
  for (int i = 0; i < c->ncopies; i++) {
    const Copy *x = &c->copies[i];
    if (x->b == src && x->n == n && x->k == k && x->ldb == -1 - tag && x->kind == kind) return x->kmajor;
  }
  if (!constant(c, src, 1, in_floats, 0)) return NULL;
  if (c->ncopies == c->cap_copies) {
    int cap = c->cap_copies ? 2 * c->cap_copies : 16;
    Copy *x = realloc(c->copies, (size_t)cap * sizeof *x);
    if (!x) return NULL;
    c->copies = x, c->cap_copies = cap;
  }
  float *dst = aligned_alloc(64, ((size_t)out_floats * sizeof(float) + 63) & ~(size_t)63);
  if (!dst) return NULL;
  if (make) make(src, n, k, dst);
  else make_ctx(ctx, src, dst);
  c->copies[c->ncopies++] = (Copy){src, n, k, -1 - tag, kind, dst};
  return dst;
}

const float *gemm_cache_derived(const float *src, int64_t n, int64_t k, int64_t in_floats, uint32_t kind,
                                int64_t out_floats, GemmCacheMake *make) {
  return derived(src, n, k, 0, in_floats, kind, out_floats, make, NULL, NULL);
}

const float *gemm_cache_derived_ctx(const float *src, int64_t n, int64_t k, int64_t tag, int64_t in_floats,
                                    uint32_t kind, int64_t out_floats, GemmCacheMakeCtx *make, const void *ctx) {
  return derived(src, n, k, tag, in_floats, kind, out_floats, NULL, make, ctx);
}
