// mlc_kernels.h — the hand-written CPU kernels generated code calls: a
// packed, cache-blocked f32 GEMM with a fused epilogue, and NCHW
// convolution (forward, input gradient, weight gradient) built on it.
//
// Every entry point takes plain C scalars and pointers (no struct by value),
// so the LLVM backend declares each with one LLVMFunctionType. All run on
// the runtime's thread pool (mlc_parallel_for; NULL runs on the caller
// alone) and split only M and N (or images), never a reduction: results are
// bit-identical for any thread count, and for every micro-kernel variant
// (each one accumulates every output element with fmaf in the same order).
// docs/design/kernels.md has the blocking, dispatch and measurements.
//
// Return value: 0, or -1 when a work buffer could not be allocated (the
// outputs are then unspecified). Bad shapes are the caller's bug.
#ifndef MLC_KERNELS_H
#define MLC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef struct MlcPool MlcPool;

// ---- GEMM --------------------------------------------------------------------------------
// C = alpha * op(A) @ op(B) + beta * C, then the epilogue, all row-major:
//   op(A) [M, K]: A stored [M, lda] (lda >= K), or with MLC_GEMM_TRANS_A
//                 A stored [K, lda] (lda >= M) and op(A) = A^T;
//   op(B) [K, N]: B stored [K, ldb] (ldb >= N), or with MLC_GEMM_TRANS_B
//                 B stored [N, ldb] (ldb >= K) and op(B) = B^T;
//   C     [M, N]: stored [M, ldc] (ldc >= N).
// beta == 0 does not read C (NaNs there are ignored, as in BLAS). The
// epilogue, applied to t = alpha*acc + beta*c, in this order:
//   MLC_GEMM_BIAS_COL  t += bias[j]         bias [N]   (Linear: x @ w^T + b)
//   MLC_GEMM_BIAS_ROW  t += bias[i]         bias [M]   (conv: per channel)
//   MLC_GEMM_RESIDUAL  t += aux[i*ldaux+j]  aux [M, ldaux]
//   MLC_GEMM_RELU      t = t > 0 || isnan(t) ? t : 0          (the interpreter's relu)
//   MLC_GEMM_RELU_MASK t = aux[i*ldaux+j] > 0 ? t : 0         (relu_grad(t, aux))
// RESIDUAL and RELU_MASK share aux and exclude each other. MLC_GEMM_BF16 or
// MLC_GEMM_F16 (`precision bf16 | f16`) rounds every element of op(A) and
// op(B) to that format (kernels/round16.h) as it is read, then computes the
// f32 GEMM of the rounded operands: the products are exact in f32, the sum
// and the epilogue are the f32 ones (kernels/gemm_ref.h, mlc_ref_round16). Every operation
// is one IEEE op (no contraction), so the epilogue rounds like the
// reference interpreter; the K sum itself is a chain of fused multiply-adds
// in k order, restarted every K block (see kernels.md, "Blocking").
enum {
  MLC_GEMM_TRANS_A = 1 << 0,
  MLC_GEMM_TRANS_B = 1 << 1,
  MLC_GEMM_BIAS_COL = 1 << 2,
  MLC_GEMM_BIAS_ROW = 1 << 3,
  MLC_GEMM_RESIDUAL = 1 << 4,
  MLC_GEMM_RELU = 1 << 5,
  MLC_GEMM_RELU_MASK = 1 << 6,
  MLC_GEMM_BF16 = 1 << 7,      // round op(A), op(B) elements to bfloat16 (ties to even) first
  MLC_GEMM_F16 = 1 << 8,       // round them to IEEE binary16 (ties to even, overflow to inf) first
};

int mlc_sgemm(MlcPool *pool, uint32_t flags, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
              int64_t ldc, const float *bias, const float *aux, int64_t ldaux);

// `batch` independent products of the same shape (attention's
// [B, H, T, T] @ [B, H, T, d]): product i reads a + i*stride_a,
// b + i*stride_b, aux + i*stride_aux and writes c + i*stride_c (strides in
// elements; 0 shares an operand, e.g. one weight for every product). bias
// is shared. The products run in parallel with each other, each as
// mlc_sgemm would compute it (the same bits).
int mlc_sgemm_batched(MlcPool *pool, uint32_t flags, int64_t batch, int64_t m, int64_t n, int64_t k,
                      float alpha, const float *a, int64_t lda, int64_t stride_a, const float *b,
                      int64_t ldb, int64_t stride_b, float beta, float *c, int64_t ldc,
                      int64_t stride_c, const float *bias, const float *aux, int64_t ldaux,
                      int64_t stride_aux);

// Products of at most 4 rows with a k-major op(B) (batch-1 inference)
// run a strip kernel that reads B once instead of whole 8-row tiles
// (kernels/cpu/gemv.c), rounding the operands of MLC_GEMM_BF16 / F16
// products as it reads them; the bits are the same.
//
// Constant operands (kernels/cpu/gemm_cache.c). The TRANS_B operand of a
// product of at most 4 rows that lies in a range declared constant in the
// calling thread's current cache is transposed once into a k-major copy,
// kept until the cache is cleared, and read in place of B on every later
// call: x @ w^T with fixed weights packs nothing per call at batch 1 to 4
// (more rows amortise the panels packed per call). For an MLC_GEMM_BF16 or
// MLC_GEMM_F16 product the copy holds the rounded values as 16 bits, half
// the bytes read per call; one weight may have an f32, a bf16 and an f16
// copy, each used only by products of its format. Same bits. The owner clears the cache whenever
// the declared memory may change; a cache is used only by the thread that
// made it current (one model instance's calls).
typedef struct MlcGemmCache MlcGemmCache;
MlcGemmCache *mlc_gemm_cache_new(void); // NULL: no memory
void mlc_gemm_cache_free(MlcGemmCache *cache);
// [p, p + bytes) holds values that do not change until the next clear: 0, or -1 (no memory).
int mlc_gemm_cache_add(MlcGemmCache *cache, const void *p, size_t bytes);
// Forgets every copy (the ranges stay declared).
void mlc_gemm_cache_clear(MlcGemmCache *cache);
// Drops the range holding p, and its copies, for good.
void mlc_gemm_cache_remove(MlcGemmCache *cache, const void *p);
// Makes cache (or NULL: none) current for this thread's mlc_sgemm calls; returns the previous.
MlcGemmCache *mlc_gemm_cache_use(MlcGemmCache *cache);

// The micro-kernel variant in use: "avx512", "avx2" or "generic". The first
// call picks the best the CPU supports (__builtin_cpu_supports), unless
// MLC_GEMM_VARIANT names one. mlc_gemm_select forces one (tests): 0, or -1
// when the name is unknown or the CPU lacks it (the choice is unchanged).
// MLC_CPU_ISA=avx2 (or scalar) caps every kernel's ISA: a CPU with
// AVX-512 (or AVX2) is then treated as one without, here too.
const char *mlc_gemm_variant(void);
int mlc_gemm_select(const char *name);

// ---- convolution -------------------------------------------------------------------------
// conv2d over NCHW f32 tensors, PyTorch's (and the reference interpreter's,
// compiler/graph/interp_nn.c) definition:
//   x [N, C, H, W] * w [O, C/G, KH, KW] -> y [N, O, HO, WO]
//   y[n,o,i,j] = sum over (c, a, b) of x[n, g*C/G + c, i*sh - ph + a*dh, j*sw - pw + b*dw]
//                * w[o, c, a, b]     (g = o / (O/G); outside x reads zero)
//   HO = (H + 2ph - dh(KH-1) - 1) / sh + 1, WO likewise.
// The geometry is one array of MLC_CONV_GEOM int64s, indexed by the enum:
enum {
  MLC_CONV_N, MLC_CONV_C, MLC_CONV_H, MLC_CONV_W, // input
  MLC_CONV_O, MLC_CONV_KH, MLC_CONV_KW,           // weight (w is [O, C/G, KH, KW])
  MLC_CONV_SH, MLC_CONV_SW, MLC_CONV_PH, MLC_CONV_PW, MLC_CONV_DH, MLC_CONV_DW,
  MLC_CONV_G, // groups: C and O are multiples of it
  MLC_CONV_GEOM
};
// The flags of all three: MLC_CONV_RELU (forward only), and MLC_GEMM_BF16 or
// MLC_GEMM_F16, which round x (or dy) and w as the GEMMs read them (the
// im2col matrix holds x's elements, so rounding it is rounding x).
// MLC_CONV_WINOGRAD (forward, conv2d_pool and grad_input; opt-in, `mlc
// build --conv winograd`): a 3x3 convolution with both strides and
// dilations 1, one group and no rounding flag (any padding, plane and
// channel counts; grad_input: padding at most 2, as the convolution of dy
// with the flipped, transposed filter) is computed as Winograd F(2x2, 3x3), 16 GEMMs [O x C] @ [C x 2x2 tiles]
// between a filter, an input and an output transform: 2.25x fewer
// multiplies, another rounding (kernels/winograd_ref.h defines the order;
// docs/design/kernels.md, "Winograd", has its measured error). Still the
// same bits for any thread count. Other geometries ignore the flag.
enum { MLC_CONV_RELU = 1 << 0, MLC_CONV_WINOGRAD = 1 << 1 };

// y = conv2d(x, w) (+ bias[o] when bias != NULL), then relu with MLC_CONV_RELU.
int mlc_conv2d(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *x,
               const float *w, const float *bias, float *y);
// mlc_conv2d, then yp [N, O, HO/2, WO/2] = mlc_max_pool2d(y, 2 x 2, stride 2);
// y is written too, unless y == NULL (inference: nothing else reads it).
// The same bits as the two calls.
int mlc_conv2d_pool(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *x,
                    const float *w, const float *bias, float *y, float *yp);
// dx [N, C, H, W] = d conv2d / dx applied to dy [N, O, HO, WO] (overwritten).
int mlc_conv2d_grad_input(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dy,
                          const float *w, float *dx);
// dw [O, C/G, KH, KW] = d conv2d / dw applied to dy, summed over the batch
// in image order (overwritten).
int mlc_conv2d_grad_weight(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dy,
                           const float *x, float *dw);
// mlc_conv2d_grad_weight, and db [O] (when not NULL) = the bias's gradient,
// the sum of dy over images and pixels in the kernel IR's float-sum order
// (kir.h: f64 lanes by pixel mod 8, images in order, folded in halves,
// rounded once), from the dy it reads for dw.
int mlc_conv2d_grad_weight_bias(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dy,
                                const float *x, float *dw, float *db);
// mlc_conv2d_grad_weight_bias of dy = mlc_max_pool2d_grad(2 x 2, stride 2; dyp
// [N, O, HO/2, WO/2], px and aux [N, O, HO, WO], aux may be NULL): dy is
// built image by image inside the call and never stored. The same bits as
// the two calls.
int mlc_conv2d_grad_weight_pool(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dyp,
                                const float *px, const float *aux, const float *x, float *dw, float *db);
// The pick of a 2 x 2 max pool window, one byte per window (mlc_conv2d_pool_pick
// writes them for the backward): bits 0-1 the tap the pool picked (row-major:
// 0, 1 the upper row, 2, 3 the lower; the first maximum, a NaN beating any
// number once), bit 2 set when the picked value is > 0 (the relu mask of a
// pool over a relu's output is then that bit: aux[pick] > 0 with aux == x).
enum { MLC_PICK_TAP = 3, MLC_PICK_POS = 4 };
// mlc_conv2d_pool, and pick [N, O, HO/2, WO/2] the windows' picks (pick may
// be NULL: mlc_conv2d_pool). y may be NULL as there. The same bits in y and
// yp as mlc_conv2d_pool.
int mlc_conv2d_pool_pick(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *x,
                         const float *w, const float *bias, float *y, float *yp, uint8_t *pick);
// mlc_conv2d_grad_weight_pool of the pool whose picks are `pick`: dy = the
// pool's gradient (mlc_max_pool2d_grad_pick with mask), built image by
// image inside the call. The same bits as mlc_conv2d_grad_weight_pool of
// the y the picks came from (aux = mask ? y : NULL).
int mlc_conv2d_grad_weight_pick(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dyp,
                                const uint8_t *pick, int64_t mask, const float *x, float *dw, float *db);
// Both gradients of a convolution followed by a 2 x 2, stride-2 max pool
// whose picks the forward kept: dy = mlc_max_pool2d_grad_pick(dyp, pick,
// mask), then dx = mlc_conv2d_grad_input(dy, w) and dw, db (db may be
// NULL) = mlc_conv2d_grad_weight_bias(dy, x). dy is built image by image
// inside the call and read there by both gradients; it is never stored.
// The same bits as the three calls.
int mlc_conv2d_grad_pick(MlcPool *pool, const int64_t *geom, uint32_t flags, const float *dyp,
                         const uint8_t *pick, int64_t mask, const float *w, const float *x, float *dx, float *dw,
                         float *db);
// HO and WO of a geometry (-1 when the window does not fit).
int64_t mlc_conv_out_h(const int64_t *geom);
int64_t mlc_conv_out_w(const int64_t *geom);

// ---- max pooling -------------------------------------------------------------------------------
// Unpadded windows of KH x KW with stride (sh, sw) over x [N, C, H, W]:
//   y [N, C, HO, WO], HO = floor((H - KH) / sh) + 1, WO likewise (0 when the window
//   is larger than the plane),
//   y[n,c,i,j] = the first maximum of the taps in row-major order, where a
//   NaN beats any number and later NaNs do not replace it (the recipe's
//   `v > best || isnan(v) && !isnan(best)`).
int mlc_max_pool2d(MlcPool *pool, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw,
                   int64_t sh, int64_t sw, const float *x, float *y);
// Its gradient for disjoint windows (sh >= KH, sw >= KW; -1 otherwise):
// dx [N, C, H, W] is 0 but at each window's picked tap, which gets 0 + dy,
// and with aux != NULL (relu_grad of the sum, `max_pool2d_grad_relu_mask`)
// aux[tap] > 0 ? 0 + dy : 0 there. Overwrites dx.
int mlc_max_pool2d_grad(MlcPool *pool, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh,
                        int64_t kw, int64_t sh, int64_t sw, const float *dy, const float *x,
                        const float *aux, float *dx);
// The 2 x 2, stride-2 pool of x [N, C, H, W] with its picks: y as
// mlc_max_pool2d, pick [N, C, H/2, W/2] (MLC_PICK_*).
int mlc_max_pool2d_pick(MlcPool *pool, int64_t n, int64_t c, int64_t h, int64_t w, const float *x, float *y,
                        uint8_t *pick);
// Its gradient from the picks alone: dx [N, C, H, W] is 0 but at each
// window's picked tap, which gets 0 + dy, or with mask != 0 0 + dy only
// where the pick's MLC_PICK_POS bit is set (0 there otherwise). The same
// bits as mlc_max_pool2d_grad(2, 2, 2, 2, dy, x, mask ? x : NULL) over the
// x the picks came from; no x is read.
int mlc_max_pool2d_grad_pick(MlcPool *pool, int64_t n, int64_t c, int64_t h, int64_t w, int64_t mask,
                             const float *dy, const uint8_t *pick, float *dx);

#endif
