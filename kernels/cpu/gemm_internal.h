// gemm_internal.h — what the GEMM driver (gemm.c), the convolutions
// (conv.c) and the micro-kernel variants (gemm_avx512.c, gemm_avx2.c,
// gemm_generic.c) share: the epilogue record, the micro-kernel and packing
// signatures, the variant table and the single-threaded blocked GEMM the
// convolutions call inside their own parallel tasks.
#ifndef MLC_GEMM_INTERNAL_H
#define MLC_GEMM_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "mlc_kernels.h"

// What a micro-kernel does when it stores its tile: t = alpha*acc (+ beta*c
// when beta != 0), then the epilogue bits of `flags` (only on the last K
// block; the earlier ones store with beta = 1 and no epilogue). Pointers
// are already offset to the tile's row 0 / column 0.
typedef struct GemmEpi {
  uint32_t flags;
  float alpha, beta;
  const float *bias_col; // [nr]: bias of the tile's columns
  const float *bias_row; // [mr]: bias of the tile's rows
  const float *aux;      // [mr, ldaux]: residual or relu mask
  int64_t ldaux;
} GemmEpi;

// One MR x NR tile over kc steps:
//   acc[r][j] = sum over p < kc, in order, fmaf(a(r,p), b(p,j), acc)
//   a(r,p) = a[r*rsa + p*csa]  (rows r >= mr are never read)
//   b(p,j) = b[p*rsb + j]      (columns j >= nr are never read)
// then C[r*ldc + j] = epilogue(acc, C) for r < mr, j < nr.
typedef void GemmKernel(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                        int64_t rsb, int mr, int nr, float *c, int64_t ldc, const GemmEpi *e);

// Packs one panel of a transposed operand: dst[p*panel + j] = src[j*lds + p]
// for p < kc, j < w, and zero for w <= j < panel. Copies only; the
// rounding of MLC_GEMM_BF16 / F16 follows in the driver (gemm.c, round_panel).
typedef void GemmPackT(int64_t kc, int w, const float *src, int64_t lds, float *dst, int panel);

// The same for an operand already k-major: dst[p*panel + j] = src[p*lds + j].
void gemm_pack_copy(int64_t kc, int w, const float *src, int64_t lds, float *dst, int panel);
// The scalar GemmPackT, for panels of any width.
void gemm_pack_t_scalar(int64_t kc, int w, const float *src, int64_t lds, float *dst, int panel);

typedef struct GemmVariant {
  const char *name;
  int mr, nr;            // the micro-tile
  GemmKernel *kernel;
  GemmPackT *pack_t;
  int (*supported)(void); // this CPU runs it
} GemmVariant;

extern const GemmVariant gemm_avx512, gemm_avx2, gemm_generic;
// True when this CPU runs the AVX-512 variant (gemm_avx512.supported(),
// asked once): the test every AVX-512 path of the library makes.
bool gemm_have_avx512(void);
// The same for the AVX2 variant (AVX2 and FMA): the test of the AVX2 rows
// that stand in where the CPU lacks AVX-512 (pool_avx2.c, conv_bias.c).
bool gemm_have_avx2(void);

const GemmVariant *gemm_current(void);

// One GEMM as the driver sees it, operands by strides:
//   op(A)(i,p) = a[i*rsa + p*csa], op(B)(p,j) = b[p*rsb + j*csb] (csb == 1:
//   read in place; otherwise packed per block), C[i*ldc + j].
typedef struct Gemm {
  uint32_t flags; // epilogue and rounding bits (the transposes are in the strides)
  int64_t m, n, k;
  float alpha, beta;
  const float *a;
  int64_t rsa, csa;
  const float *b;
  int64_t rsb, csb;
  float *c;
  int64_t ldc;
  const float *bias, *aux;
  int64_t ldaux;
  // Rows [ap_i0, ap_i0 + ap_rows) of A already packed (or ap NULL): the
  // micro-panel of rows [ir, ir + MR) in the K block at pc is at
  // ap + pc * ap_rows + (ir - ap_i0) * kc (ap_rows a multiple of MR). Set
  // by the driver only (gemm.c, gemm_parallel); regions stay inside it.
  const float *ap;
  int64_t ap_i0, ap_rows;
} Gemm;

// The blocked loops over C[i0:i1, j0:j1] on the calling thread (no pool).
int gemm_region(const Gemm *g, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

// How mlc_sgemm(_batched) splits each of `batch` products for `threads`
// threads: the number of strips, across N (*by_cols) or M (gemm.c).
int64_t gemm_strips(const Gemm *g, int64_t threads, int64_t batch, bool *by_cols);

// Whether the column strips (by_cols) of `batch` products read one shared,
// once-packed A (gemm.c, gemm_parallel) instead of packing their own.
bool gemm_shared_a(const Gemm *g, int64_t batch, bool by_cols);

// The most bytes of A that gemm_parallel packs at once for all its strips
// (16 MiB; a larger A goes in row blocks). For the tests, which reach the
// row blocks on small shapes with a small limit; bytes <= 0 restores it.
void gemm_set_apack_limit(int64_t bytes);

// A per-thread work buffer of at least `floats` floats, 64-byte aligned,
// kept for the thread's life (no allocation per call once grown). Slot 0
// is the GEMM's packing buffer; slots 1 and 2 are the convolutions'; slot
// 3 the small-M path's rounded A rows (gemv.c); slot 4 a convolution's
// packed weights (conv.c, on the calling thread, read by all its tasks);
// slot 5 the Winograd filter transform of a call, on its calling thread
// (conv_winograd.c); slot 6 the dy planes conv2d_grad_weight_pool builds
// from the pool's gradient; slot 7 the output planes of a pooled forward
// that does not store them (conv.c's fwd_task: the forward kernels use
// slots 1 and 2 themselves); slot 8 a pooled forward's whole y when the
// caller does not store it but the pool needs all of it (conv_y_temp);
// slot 9 the whole dy^T of conv2d_grad_pick in two regions, on its calling
// thread (conv_grad_pool.c: written by the first region's tasks, read by
// the second's); slot 10 a large product's packed A, on its calling thread
// (gemm.c, gemm_parallel: packed by one region, read by the next).
enum { GEMM_SCRATCH_PACK, GEMM_SCRATCH_COL, GEMM_SCRATCH_OUT, GEMM_SCRATCH_ROUND, GEMM_SCRATCH_WPACK,
       GEMM_SCRATCH_WINOGRAD, GEMM_SCRATCH_DY, GEMM_SCRATCH_PLANES, GEMM_SCRATCH_YTEMP, GEMM_SCRATCH_DYT,
       GEMM_SCRATCH_APACK, GEMM_SCRATCH_SLOTS };
float *gemm_scratch(int slot, int64_t floats);

// A call's temporary of `floats` floats, on the calling thread: up to
// CONV_YTEMP_MAX_BYTES from slot 8 (kept, so a batch-1 predict allocates
// nothing per call: a malloc of conv1's 100 KB y each call, trimmed and
// faulted back in, was ~2.5 % of it), larger ones from malloc with *owned
// set, for the caller to free (a thread should not keep a large batch's
// y for its lifetime). NULL when out of memory.
enum { CONV_YTEMP_MAX_BYTES = 4 << 20 };
float *conv_y_temp(int64_t floats, float **owned);

// The scalar epilogue, shared by every variant's tails and by the generic
// kernel, so all of them round alike. i, j index the tile.
static inline float gemm_epi_scalar(const GemmEpi *e, float acc, const float *c, int i, int j) {
  float t = e->alpha * acc;
  if (e->beta != 0) t = t + e->beta * *c;
  uint32_t f = e->flags;
  if (f & MLC_GEMM_BIAS_COL) t = t + e->bias_col[j];
  if (f & MLC_GEMM_BIAS_ROW) t = t + e->bias_row[i];
  if (f & MLC_GEMM_RESIDUAL) t = t + e->aux[i * e->ldaux + j];
  if (f & MLC_GEMM_RELU) t = t > 0 || isnan(t) ? t : 0;
  if (f & MLC_GEMM_RELU_MASK) t = e->aux[i * e->ldaux + j] > 0 ? t : 0;
  return t;
}

#endif
