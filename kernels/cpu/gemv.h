// gemv.h — what gemm.c's dispatch shares with the small-M path (gemv.c,
// gemv_avx512.c, gemv_avx2.c) and the cache of constant operands (gemm_cache.c).
#ifndef MLC_GEMV_H
#define MLC_GEMV_H

#include <stdbool.h>

#include "gemm_internal.h"

// The small-M path: products of at most GEMV_MR rows whose op(B) is
// k-major (csb == 1), on the AVX-512 and AVX2 variants. One strip kernel call
// computes rows [0, mr) x columns [0, nr) over kc steps with GemmKernel's
// contract (gemm_internal.h): each element one fmaf chain in k order from
// 0, then the epilogue record. So the path gives the blocked GEMM's bits.
enum { GEMV_MR = 4 };

// Whether the path runs (the AVX-512 or AVX2 variant is in use, the
// latter with F16C), and whether it takes g.
bool gemv_available(void);
bool gemv_fits(const Gemm *g);

// The forms of op(B) the strip kernel reads (rows rsb elements apart):
//   GEMV_B_F32        floats, read as they are (f32 products);
//   GEMV_B_ROUND_BF16 floats, rounded to bf16 (f16) as they are loaded
//   GEMV_B_ROUND_F16  (MLC_GEMM_BF16 / F16 products of a B not cached);
//   GEMV_B_BF16       a constant's 16-bit k-major copy (gemm_cache.c): rows
//   GEMV_B_F16        of gemv_pad16(n) values, zero past n; bf16 groups of
//                     16 columns in gemv_bf16_pos's order, f16 in order.
// The A elements of a rounded product are rounded before the call
// (GemvKernel.round), so the kernel only multiplies rounded operands.
enum { GEMV_B_F32, GEMV_B_ROUND_BF16, GEMV_B_ROUND_F16, GEMV_B_BF16, GEMV_B_F16 };

// mlc_sgemm through the small-M path (gemv_fits(g)): B is g->b, or with
// b16 != NULL the 16-bit copy of g->flags' format (g->b unused);
// b_rounded: g->b holds rounded values already (a GEMM_CACHE_WIDE copy).
int gemv_run(MlcPool *pool, const Gemm *g, const uint16_t *b16, bool b_rounded);

// A strip kernel (gemv_avx512.c, gemv_avx2.c), one per GEMM variant that
// has one (gemv.c): width(mr) is its columns per strip for mr rows, whole
// 16-column groups; strip(form, ...) GemmKernel's contract
// (gemm_internal.h) with B of the given form; round(flags, n, src, dst):
// dst[j] = src[j] rounded to bf16 (MLC_GEMM_BF16 in flags) or f16, j < n;
// supported(): the CPU runs it.
typedef struct GemvKernel {
  int (*width)(int mr);
  void (*strip)(int form, int64_t kc, const float *a, int64_t rsa, int64_t csa, const void *b,
                int64_t rsb, int mr, int nr, float *c, int64_t ldc, const GemmEpi *e);
  void (*round)(uint32_t flags, int64_t n, const float *src, float *dst);
  int (*supported)(void);
} GemvKernel;

extern const GemvKernel gemv_avx512, gemv_avx2;

// The row length of a 16-bit copy: whole 16-column groups.
static inline int64_t gemv_pad16(int64_t n) { return (n + 15) / 16 * 16; }

// Where column j of a bf16 group of 16 is stored: the middle two quads
// swapped (0-3, 8-11, 4-7, 12-15), so that the strip kernel widens a
// group with one broadcast load and one byte shuffle (gemv_avx512.c), and
// AVX2 each half of it with one load and one shuffle (gemv_avx2.c).
static inline int gemv_bf16_pos(int j) { return (j / 4 % 2) * 8 + j / 8 * 4 + j % 4; }

// A k-major copy of the TRANS_B operand b [N, ldb] (op(B)(p, j) =
// b[j*ldb + p]), made once while b lies in a range the calling thread's
// current cache (mlc_gemm_cache_use) holds constant, one per operand and
// kind: `kind` 0 gives floats dst[p*n + j]; MLC_GEMM_BF16 or MLC_GEMM_F16
// gives the rounded values as uint16 bits in the GEMV_B_BF16 or GEMV_B_F16
// layout above; either with GEMM_CACHE_WIDE, the rounded values as floats
// [k, n] (read as GEMV_B_F32). NULL when there is no such range or no
// memory (the caller packs as usual).
enum { GEMM_CACHE_WIDE = 1u << 30 };
const void *gemm_cache_kmajor(const float *b, int64_t n, int64_t k, int64_t ldb, uint32_t kind);

// Another derived copy of a constant operand: make(src, n, k, dst) fills
// `out_floats` floats from src[0 .. in_floats), once while src lies in one
// range of the current cache, kept under (src, n, k, kind) like the copies
// above (the Winograd filter transform of a constant conv weight,
// conv_winograd.c: n = O, k = C). NULL when there is none or no memory.
// (GEMM_CACHE_WINOGRAD_T: the same in the fused path's layout, [16][C][O].)
enum { GEMM_CACHE_WINOGRAD = 1u << 29, GEMM_CACHE_WINOGRAD_T = 1u << 28 };
typedef void GemmCacheMake(const float *src, int64_t n, int64_t k, float *dst);
const float *gemm_cache_derived(const float *src, int64_t n, int64_t k, int64_t in_floats, uint32_t kind,
                                int64_t out_floats, GemmCacheMake *make);

// The same for a copy whose layout needs more than (n, k): make(ctx, src,
// dst), keyed by (src, n, k, tag >= 0, kind) (the channel-lane packing of
// a constant conv weight, conv.c: n = O, k = Kc, tag = the groups, kind
// GEMM_CACHE_LANES | the rounding bits).
enum { GEMM_CACHE_LANES = 1u << 27 };
typedef void GemmCacheMakeCtx(const void *ctx, const float *src, float *dst);
const float *gemm_cache_derived_ctx(const float *src, int64_t n, int64_t k, int64_t tag, int64_t in_floats,
                                    uint32_t kind, int64_t out_floats, GemmCacheMakeCtx *make, const void *ctx);

#endif
