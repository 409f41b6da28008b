// conv_internal.h — what conv.c shares with its vector im2col
// (conv_avx512.c): the geometry record.
#ifndef MLC_CONV_INTERNAL_H
#define MLC_CONV_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct Conv {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g;
  int64_t ho, wo, cg, og, kc, p; // derived: HO, WO, C/G, O/G, Kc, P
  int64_t qchunk;                // pixels per col chunk
} Conv;

// Rows [r0, r1) of col over pixels [q0, q0+nq) of the image-group plane xg
// [C/G, H, W], row stride ld, a multiple of 16 floats >= nq, and col
// 64-byte aligned (add: col2im instead, xg += the rows inside
// x, rows in order), with AVX-512 masked loads and stores, for a "same"
// convolution (both strides 1, WO == W). Returns false, doing nothing,
// for any other geometry or when the CPU lacks AVX-512; the caller then
// runs the scalar rows. The copies are exact, so the result is the
// scalar path's bit for bit.
bool conv_col_rows_avx512(const Conv *k, float *xg, int64_t r0, int64_t r1, int64_t q0, int64_t nq,
                          float *col, int64_t ld, bool add);

// The forward of one image and group over pixels [q0, q0+nq) without a
// col: y (pointing at row 0, pixel q0 of the group's output; row stride
// P) = w [O/G, Kc] @ col, then the epilogue `flags` (MLC_GEMM_BIAS_ROW
// with bias, MLC_GEMM_RELU). The same geometries as above, Kc <= 512
// and no rounding (the caller checks that); false (nothing done) otherwise. Bit-identical to
// gemm_region over the col conv_col_rows_avx512 builds.
bool conv_fwd_avx512(const Conv *k, const float *xg, const float *w, const float *bias, uint32_t flags,
                     float *y, int64_t q0, int64_t nq);

// The bias gradient of mlc_conv2d_grad_weight_bias (conv_bias.c): db[o] =
// the sum of dy over images and pixels in kir.h's float-sum order (f64
// lane q mod 8 for pixel q, images in order, lanes folded in halves,
// rounded once; gemm_ref.h's mlc_ref_conv_bias_grad). A task owns the
// lanes of its columns: conv_bias_lanes_new (zeroed, 8 per column; NULL:
// no memory, free() them), adds each chunk of dy it reads, rows [0, cols)
// of stride ld, each pointing at pixel q0 of nq (conv_bias_lanes_add, in
// image and chunk order), then folds them into db[0, cols).
double *conv_bias_lanes_new(int64_t cols);
void conv_bias_lanes_add(double *lanes, const float *rows, int64_t ld, int64_t cols, int64_t q0, int64_t nq);
void conv_bias_lanes_fold(const double *lanes, int64_t cols, float *db);
// The same over all of dy [N, O, HO, WO] on the calling thread: 0, or -1 (no memory).
int conv_bias_grad_serial(const Conv *k, const float *dy, float *db);

#endif
