// conv_internal.h — what conv.c shares with its vector im2col
// (conv_avx512.c): the geometry record.
#ifndef MLC_CONV_INTERNAL_H
#define MLC_CONV_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../gemm_ref.h" // MLC_GEMM_KC_MAX

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

// The channel-lane forward (conv_lanes_avx512.c): any geometry but
// pointwise, any Kc (its K blocks as gemm_ref.h's), on a CPU with AVX-512
// or AVX2 (conv_lanes_fwd_ok, below). conv_lanes_pack_w packs w [G, O/G,
// Kc] into conv_lanes_wfloats(k) floats (64-byte aligned; x and w rounded
// by the MLC_GEMM_BF16 / F16 bits of flags); conv_lanes_fwd computes pixels
// [q0, q0+nq) of one image and group from the group's packed weights, as
// conv_fwd_avx512 (same arguments, the same bits as gemm_region over col);
// false only when a scratch buffer cannot be had. conv_lanes_ok is the
// AVX-512 grad_weight's test (below): the lane geometry with Kc <=
// MLC_GEMM_KC_MAX (its rows' tap offsets, ConvLanesGw.roff).
bool conv_lanes_ok(const Conv *k);
// conv_lanes_grad_weight over row ranges of at most MLC_GEMM_KC_MAX rows
// (any Kc): the lane geometry on AVX-512.
bool conv_lanes_gw_rows_ok(const Conv *k);
int64_t conv_lanes_wfloats(const Conv *k);
void conv_lanes_pack_w(const Conv *k, const float *w, uint32_t flags, float *wp);
bool conv_lanes_fwd(const Conv *k, const float *xg, const float *wpg, const float *bias, uint32_t flags,
                    float *y, int64_t q0, int64_t nq);
// The forward alone also runs on AVX2 + FMA (conv_lanes_avx2.c: the same
// packed weights, padded copy and chains, so the same bits):
// conv_lanes_fwd_ok is the lane geometry (any Kc) on either ISA, and
// conv_lanes_pack_w / conv_lanes_fwd take the AVX2 rows where the CPU (or
// MLC_CPU_ISA) has no AVX-512.
bool conv_lanes_fwd_ok(const Conv *k);
bool conv_lanes_avx2_ok(void);
void conv_lanes_avx2_enable(bool on); // on by default; off for measurements
void conv_lanes_pack_w_scalar(const Conv *k, const float *w, uint32_t flags, float *wp);
bool conv_lanes_fwd_avx2(const Conv *k, const float *xg, const float *wpg, const float *bias, uint32_t flags,
                         float *y, int64_t q0, int64_t nq);
// grad_input too (conv_lanes_pack_wt / conv_lanes_grad_input take these
// without AVX-512): the same packed wt, the same chains and tap order.
bool conv_lanes_pack_wt_scalar(const Conv *k, const float *w, uint32_t flags, float *wt);
bool conv_lanes_grad_input_avx2(const Conv *k, const float *dyg, const float *wtg, uint32_t flags, float *dxg);

// dw[g] [O/G, Kc] columns (rows of dw^T) [r0, r1) of group g over the
// whole batch (x [N, C, H, W], dy [N, O, HO, WO]) with dw's channels in
// the lanes: the bits of conv.c's grad_weight GEMMs (gemm_ref.h), any
// geometry conv_lanes_ok takes, r1 - r0 <= MLC_GEMM_KC_MAX; false only when a
// scratch buffer cannot be had.
bool conv_lanes_grad_weight(const Conv *k, const float *x, const float *dy, int64_t g, int64_t r0, int64_t r1,
                            uint32_t flags, float *dw);
// The same image by image, for a caller that makes dy[n, g] itself
// (conv_grad_pool.c): begin (rows [r0, r1) of group g), then every image
// in order (xn = x[n], dyg = dy[n, g] [O/G, P]), then end writes dw. The
// sums live in this thread's scratch slot PACK between the calls; slots
// COL and OUT are free for the caller between images.
// conv_lanes_gw_vectors(s, v0, v1) after begin restricts the call to dw's
// channels [16*v0, 16*v1) (whole vectors of lanes): dy is then read and
// dw written at those channels only.
typedef struct ConvLanesGw {
  const Conv *k;
  Conv kc; // the channels the rows read
  int64_t g, r0, r1, c0, rows;
  int64_t v0, v1; // dw's vectors of 16 channels

  uint32_t flags;
  bool first;
  int32_t roff[MLC_GEMM_KC_MAX];
} ConvLanesGw;
bool conv_lanes_gw_begin(ConvLanesGw *s, const Conv *k, int64_t g, int64_t r0, int64_t r1, uint32_t flags);
void conv_lanes_gw_vectors(ConvLanesGw *s, int64_t v0, int64_t v1);
bool conv_lanes_gw_image(ConvLanesGw *s, const float *xn, const float *dyg);
// The same from dy[n, g] already transposed: dyt [P, OP] (OP = O/G rounded
// up to 16, zeros past O/G; 64-byte aligned) as conv_lanes_dy_t writes it
// (conv_lanes_dytfloats(k) floats), with the precision bits of the flags
// begin got. Slot OUT is used as by conv_lanes_gw_image.
int64_t conv_lanes_dytfloats(const Conv *k);
void conv_lanes_dy_t(const Conv *k, const float *dyg, uint32_t flags, float *dyt);
bool conv_lanes_gw_image_t(ConvLanesGw *s, const float *xn, const float *dyt);
void conv_lanes_gw_end(const ConvLanesGw *s, float *dw);

// grad_input of one image and group (dyg [O/G, P], dxg [C/G, H, W], all
// of it written) with the input channels in the lanes, from w packed by
// conv_lanes_pack_wt ([G, KH*KW, O/G, C/G rounded to 16], rounded by the
// precision bits; false when some w is not finite, and then the packed
// copy must not be used): the bits of the GEMM + col2im path for stride
// 1 (conv_lanes_gin_ok); false only when a scratch
// buffer cannot be had.
bool conv_lanes_gin_ok(const Conv *k);
int64_t conv_lanes_wtfloats(const Conv *k);
bool conv_lanes_pack_wt(const Conv *k, const float *w, uint32_t flags, float *wt);
bool conv_lanes_grad_input(const Conv *k, const float *dyg, const float *wtg, uint32_t flags, float *dxg);

// mlc_conv2d_grad_pick's channel-lane tasks (conv_grad_pool.c), for a
// geometry where both lane passes apply (conv.c checks; HO, WO >= 2) and
// wt is conv_lanes_pack_wt's finite copy of w: dx, dw and db (NULL: none)
// of dy = max_pool2d_grad_pick(dyp, pick, mask), dy never stored. 0, or
// -1 (no memory).
// They run in two regions (each image's dy built once, its dy^T kept for
// the strips: conv_grad_pool.c) where conv_grad_pick_two_regions says,
// from the geometry, the flags and the pool's thread count alone.
int conv_grad_pick_lanes(struct MlcPool *pool, const Conv *k, uint32_t flags, const float *dyp, const uint8_t *pick,
                         bool mask, const float *wt, const float *x, float *dx, float *dw, float *db);
// The rule takes two regions only after conv_grad_pick_two_regions_enable(true)
// (process-wide; off by default: 6-9 % slower than one region at 2
// threads, docs/design/kernels.md "conv2's backward in two regions").
bool conv_grad_pick_two_regions(const struct MlcPool *pool, const Conv *k, uint32_t flags);
void conv_grad_pick_two_regions_enable(bool on);
// Whether mlc_conv2d_grad_pick runs the lane tasks in two regions for this
// geometry, flags and pool (conv.c; tests check the rule is taken).
bool conv_grad_pick_by_images(const struct MlcPool *pool, const int64_t *geom, uint32_t flags);

// mlc_conv2d_grad_weight_pick's channel-lane tasks (conv_grad_pool.c),
// for a geometry conv_lanes_ok takes with HO, WO >= 2: dw and db (NULL:
// none) of dy = max_pool2d_grad_pick(dyp, pick, mask), one task per group
// and run of whole vectors of dw's channels (conv_gw_pick_vector_tasks per
// group: as many as the threads want, at most one per vector). 0, or -1
// (no memory).
int64_t conv_gw_pick_vector_tasks(const struct MlcPool *pool, const Conv *k);
// Whether mlc_conv2d_grad_weight_pick runs conv_gw_pick_lanes for this
// geometry and pool (conv.c's rule; tests check it is taken).
bool conv_gw_pick_by_vectors(const struct MlcPool *pool, const int64_t *geom);
int conv_gw_pick_lanes(struct MlcPool *pool, const Conv *k, uint32_t flags, const float *dyp, const uint8_t *pick,
                       bool mask, const float *x, float *dw, float *db);

// Few channels per group (conv_narrow_avx512.c; depthwise: C/G = 1):
// conv_narrow_ok is its geometry (C/G and O/G at most 8, Kc <= 512, not
// pointwise, x^T of 16 channels within 4 MiB) on a CPU with AVX-512. The
// forward of one image and group over pixels [q0, q0+nq) (as
// conv_fwd_avx512, from the group's w [O/G, Kc] as it is); grad_input of
// one image and group (dx[n, g] all written, from the call's tables,
// below); grad_weight of dw's 16
// channels o0.. (all the images; db too when not NULL). The bits of the
// GEMM paths (gemm_ref.h); false only when a scratch buffer cannot be had.
bool conv_narrow_ok(const Conv *k);
// The geometry alone: grad_weight runs on any CPU (conv_narrow.c, its
// steps in plain C where the CPU has no AVX-512, vectorised for AVX2).
bool conv_narrow_geometry_ok(const Conv *k);
// grad_weight's two ISA steps (conv_narrow.c runs the rest): transpose,
// out [n, 16] = element t of rows src[l] (NULL: zeros) in lane l, rounded
// by the precision bits; rows, nr <= 16 rows of dw^T (tap offsets roff) of
// the 16 lanes over one K block of nq pixels (x^T offsets qoff, dy^T
// rows dyt), sums = the block's (first) or the block's + sums.
typedef struct NarrowGwOps {
  void (*transpose)(const float *const *src, int64_t n, uint32_t flags, float *out);
  void (*rows)(int nr, const int32_t *roff, const int32_t *qoff, const float *xt, const float *dyt, int64_t nq,
               bool first, float *sums);
  // the depthwise grad_input in channel lanes (conv_narrow_grad_input_lanes
  // below): its loop over one image's dx pixels, from dy^T [P, 16], the
  // lanes' weights wl [Kc, 16] and the call's table
  void (*gin_lanes)(const Conv *k, const int32_t *tab, const float *wl, const float *dyt, int64_t nl, int64_t c0,
                    float *dxn);
} NarrowGwOps;
extern const NarrowGwOps conv_narrow_gw_avx512;
// The depthwise grad_input's loop on AVX2 (conv_lanes_avx2.c), the
// gin_lanes of the ops a CPU with AVX2 but not AVX-512 gets (conv_narrow.c).
void conv_narrow_gin_lanes_avx2(const Conv *k, const int32_t *tab, const float *wl, const float *dyt, int64_t nl,
                                int64_t c0, float *dxn);
// and its transpose (the ops' `transpose`).
void conv_narrow_transpose_avx2(const float *const *src, int64_t n, uint32_t flags, float *out);
void conv_narrow_x_t(const NarrowGwOps *ops, const Conv *k, const float *xn, int64_t o0, uint32_t flags, float *xt);
// The depthwise forward (one channel per group in and out) with 16
// channels in the lanes (conv_narrow_avx512.c; conv_lanes_avx2.c's where
// the CPU has AVX2 but not AVX-512): y[n, o0..o0+16) of image xn = x[n],
// all pixels; Kc <= MLC_GEMM_KC_MAX.
bool conv_narrow_fwd_lanes(const Conv *k, const float *xn, const float *w, const float *bias, uint32_t flags,
                           int64_t o0, float *yn);
bool conv_narrow_fwd_lanes_avx2(const Conv *k, const float *xn, const float *w, const float *bias, uint32_t flags,
                                int64_t o0, float *yn);
// Its inputs, in slot COL: image xn's x^T for the 16 channels o0..
// (conv_narrow_x_t with this CPU's transpose), returned, and the taps'
// weights *wl [Kc, 16] (conv_narrow_lane_weights); NULL when out of memory.
float *conv_narrow_fwd_lanes_prep(const Conv *k, const float *xn, const float *w, int64_t o0, uint32_t flags,
                                  float **wl);
// grad_input the same way (conv_narrow.c; its loop AVX-512's, AVX2's or C's):
// dx[n, c0..c0+16) of image n (dyn = dy[n], dxn = dx[n]), all pixels, from
// the call's table (conv_narrow_gin_lanes_floats floats, made once by
// conv_narrow_gin_lanes_prep on the calling thread).
int64_t conv_narrow_gin_lanes_floats(const Conv *k);
void conv_narrow_gin_lanes_prep(const Conv *k, float *prep);
bool conv_narrow_grad_input_lanes(const Conv *k, const float *dyn, const float *w, const float *prep, int64_t c0,
                                  uint32_t flags, float *dxn);
// Both lane passes' weights: wl [Kc, 16], tap r's weight of lane l's
// channel c0 + l (zero past nl), rounded by the precision bits.
void conv_narrow_lane_weights(const Conv *k, const float *w, int64_t c0, int64_t nl, uint32_t flags, float *wl);
bool conv_narrow_fwd(const Conv *k, const float *xg, const float *wg, const float *bias, uint32_t flags,
                     float *y, int64_t q0, int64_t nq);
// grad_input's tables (which dy column and row each dx lane and row takes
// per tap, and w rounded) are made once per call, conv_narrow_gin_floats
// floats, by conv_narrow_gin_prep on the calling thread, for every task.
int64_t conv_narrow_gin_floats(const Conv *k);
void conv_narrow_gin_prep(const Conv *k, const float *w, uint32_t flags, float *prep);
bool conv_narrow_grad_input(const Conv *k, const float *dyg, const float *prep, int64_t g, uint32_t flags,
                            float *dxg);
bool conv_narrow_grad_weight(const Conv *k, const float *x, const float *dy, int64_t o0, uint32_t flags,
                             float *dw, float *db);

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
// conv_bias_lanes_add on the vector rows of one ISA (AVX-512: a vector of
// eight doubles per column, AVX2: two of four; four columns at once), the
// same bits on every one; conv_bias_lanes_add takes conv_bias_isa(), the
// widest this CPU has. Tests pass each their CPU has.
typedef enum { CONV_BIAS_SCALAR, CONV_BIAS_AVX2, CONV_BIAS_AVX512 } ConvBiasIsa;
ConvBiasIsa conv_bias_isa(void);
void conv_bias_lanes_add_isa(ConvBiasIsa isa, double *lanes, const float *rows, int64_t ld, int64_t cols, int64_t q0,
                             int64_t nq);
void conv_bias_lanes_fold(const double *lanes, int64_t cols, float *db);
// The same lanes held transposed, lanes_t [8, ld] (lane l of column o at
// l * ld + o; conv_bias_lanes_new(ld) gives the zeroed doubles), summed
// from an image's dy^T, dyt [nq, ld] (pixel q's row at q * ld, pixels
// from 0), ld a multiple of 8: each lane gets the terms of
// conv_bias_lanes_add's in the same order, so the fold gives its bits.
void conv_bias_lanes_add_t(double *lanes_t, const float *dyt, int64_t ld, int64_t nq);
void conv_bias_lanes_fold_t(const double *lanes_t, int64_t ld, int64_t cols, float *db);
// The same over all of dy [N, O, HO, WO] on the calling thread: 0, or -1 (no memory).
int conv_bias_grad_serial(const Conv *k, const float *dy, float *db);

#endif
