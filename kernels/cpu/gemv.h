// gemv.h — what gemm.c's dispatch shares with the small-M path (gemv.c,
// gemv_avx512.c) and the cache of constant operands (gemm_cache.c).
#ifndef MLC_GEMV_H
#define MLC_GEMV_H

#include <stdbool.h>

#include "gemm_internal.h"

// The small-M path: products of at most GEMV_MR rows whose op(B) is
// k-major (csb == 1), on the AVX-512 variant. One strip kernel call
// computes rows [0, mr) x columns [0, nr) over kc steps with GemmKernel's
// contract (gemm_internal.h): each element one fmaf chain in k order from
// 0, then the epilogue record. So the path gives the blocked GEMM's bits.
enum { GEMV_MR = 4 };

bool gemv_fits(const Gemm *g);
int gemv_run(MlcPool *pool, const Gemm *g);

// Columns per strip for mr rows (256, 128, 80, 64), and the strip kernel.
int gemv_avx512_width(int mr);
GemmKernel gemv_avx512_strip;

// A k-major copy of the TRANS_B operand b [N, ldb] (op(B)(p, j) =
// b[j*ldb + p]): dst[p*n + j], made once while b lies in a range the
// calling thread's current cache (mlc_gemm_cache_use) holds constant.
// NULL when there is no such range or no memory (the caller packs as
// usual).
const float *gemm_cache_kmajor(const float *b, int64_t n, int64_t k, int64_t ldb);

#endif
