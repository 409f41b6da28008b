// conv_lanes.h — the ISA-independent parts of the channel-lane
// convolutions (conv_lanes_avx512.c, and the AVX2 forward in
// conv_lanes_avx2.c): the packed weights' row length, the zero-padded
// copy's geometry, a tile's pixel pointers and the K steps' tap offsets.
// Both forwards read the same packed weights [Kc, OP] and the same padded
// copy, and sum each output's chain over p in the same order.
#ifndef MLC_CONV_LANES_H
#define MLC_CONV_LANES_H

#include "../round16.h"
#include "conv_internal.h"
#include "gemm_internal.h"

// Packed weight rows: O/G rounded up to a 16-channel vector.
static inline int64_t lanes_op(const Conv *k) { return (k->og + 15) / 16 * 16; }

static inline float lanes_round(uint32_t flags, float v) {
  if (flags & MLC_GEMM_BF16) return mlc_round_bf16(v);
  if (flags & MLC_GEMM_F16) return mlc_round_f16(v);
  return v;
}

// The padded copy's rows: output rows [i0, i1] read input rows
// i*sh - ph + a*dh, i.e. padded rows [i0*sh, i1*sh + (KH-1)*dh].
static inline int64_t lanes_pad_w(const Conv *k) { return (k->wo - 1) * k->sw + (k->kw - 1) * k->dw + 1; }
static inline int64_t lanes_pad_rows(const Conv *k, int64_t i0, int64_t i1) {
  return (i1 - i0) * k->sh + (k->kh - 1) * k->dh + 1;
}

// The narrow-group convolutions' (conv_narrow.c, conv_narrow_avx512.c)
// padded rows (all the output rows'), and grad_weight's x^T of one image
// for 16 channels: [C/G, rows, padded columns, 16] floats.
static inline int64_t narrow_rows(const Conv *k) { return lanes_pad_rows(k, 0, k->ho - 1); }
static inline int64_t narrow_xt_floats(const Conv *k) { return k->cg * narrow_rows(k) * lanes_pad_w(k) * 16; }

// The depthwise lane forward's offsets in x^T [rows, WP, 16]: roff[r]
// of tap r = (a, b), and qo[t] of output pixels q0 + t (t < 16; past the
// plane, x^T's first pixel, computed but never stored), (*i, *j) the
// output pixel q0's row and column, stepped on to q0 + 16's.
static inline void narrow_fwd_roff(const Conv *k, int32_t *roff) {
  int64_t wp = lanes_pad_w(k);
  for (int64_t a = 0, p = 0; a < k->kh; a++)
    for (int64_t b = 0; b < k->kw; b++) roff[p++] = (int32_t)(((a * k->dh) * wp + b * k->dw) * 16);
}
static inline int narrow_fwd_qo(const Conv *k, int64_t q0, int64_t *i, int64_t *j, int32_t qo[16]) {
  int n16 = (int)(k->p - q0 < 16 ? k->p - q0 : 16);
  int64_t wp = lanes_pad_w(k);
  for (int t = 0; t < 16; t++) {
    if (t >= n16) { qo[t] = 0; continue; }
    qo[t] = (int32_t)((*i * k->sh * wp + *j * k->sw) * 16);
    if (++*j == k->wo) *j = 0, ++*i;
  }
  return n16;
}

// Pixels [q, q+n) of the chunk (n <= np) as input pointers into the
// padded copy (rows from r0); a short tile repeats its last pixel.
static inline void lanes_pixel_ptrs(const Conv *k, const float *xp, int64_t r0, int64_t wp, int64_t q, int n, int np,
                                    const float **at) {
  int64_t i = q / k->wo, j = q % k->wo;
  for (int t = 0; t < np; t++) {
    at[t] = xp + (i * k->sh - r0) * wp + j * k->sw;
    if (t + 1 < n && ++j == k->wo) j = 0, i++;
  }
}

// off[p]: step p = (c, a, b)'s offset in a padded copy of `rows` rows
// (p = (c*KH + a)*KW + b counted up, no division per step: with three
// 64-bit divisions a step this was 6 % of conv2's forward).
static inline void lanes_tap_offsets(const Conv *k, int64_t rows, int64_t wpw, int32_t *off) {
  int64_t p = 0;
  for (int64_t c = 0; c < k->cg; c++)
    for (int64_t a = 0; a < k->kh; a++)
      for (int64_t b = 0; b < k->kw; b++) off[p++] = (int32_t)((c * rows + a * k->dh) * wpw + b * k->dw);
}

// What a tile does with its chains: start them at +0 and store them
// (START), continue them from a buffer (RESUME: a stored float reloaded
// leaves an fmaf chain as it was), start at +0 and add them to yt as acc +
// yt (ADD: gemm_ref.h's C = s + C for a later K block, the GEMM epilogue's
// beta = 1 operand order; grad_weight's next image), continue them and add
// them so (RESUME_ADD: a later K block's last slice), or start at +0 and
// add as yt + acc (ACCUM: grad_input's next tap, as col2im adds; the operand
// order keeps a NaN's payload the scalar code's).
enum { LANES_START, LANES_RESUME, LANES_ADD, LANES_RESUME_ADD, LANES_ACCUM };

// The forward's K walk: the K blocks of gemm_ref.h (mlc_gemm_kblock(Kc)
// steps), each cut into the fewest slices of at most kb steps, of equal
// length but the last (lanes_slice_len). Block 0 chains into yt; a later
// block chains from +0 into a buffer of its own, ys, and its last slice adds
// the block's sums into yt (C = s + C), so every output gets gemm_ref.h's
// block sums in block order, whatever the slices. Slice [p0, p1) of block
// [b0, b1): its mode; *from and *to get where its chains resume from and
// where they go.
static inline int64_t lanes_slice_len(int64_t b0, int64_t b1, int64_t kb) {
  int64_t ns = (b1 - b0 + kb - 1) / kb;
  return (b1 - b0 + ns - 1) / ns;
}
static inline int lanes_slice_mode(int64_t b0, int64_t b1, int64_t p0, int64_t p1, float *yt, float *ys,
                                   float **from, float **to) {
  if (b0 == 0) {
    *from = *to = yt;
    return p0 == 0 ? LANES_START : LANES_RESUME;
  }
  *from = ys, *to = p1 == b1 ? yt : ys;
  if (p1 == b1) return p0 == b0 ? LANES_ADD : LANES_RESUME_ADD;
  return p0 == b0 ? LANES_START : LANES_RESUME;
}

// The forward's scratch in slot OUT: yt [ytq, OP], then (more than one K
// block) ys [ytq, OP], then the Kc tap offsets; NULL: no memory.
static inline float *lanes_fwd_scratch(const Conv *k, int64_t ytq, float **ys, int32_t **off) {
  int64_t n = ytq * lanes_op(k), nys = k->kc > mlc_gemm_kblock(k->kc) ? n : 0;
  float *yt = gemm_scratch(GEMM_SCRATCH_OUT, n + nys + k->kc);
  if (!yt) return NULL;
  *ys = nys ? yt + n : NULL, *off = (int32_t *)(yt + n + nys);
  return yt;
}

// One 16 x 16 block of wp [Kc, OP] (steps p0.., channels o0..) from w [O/G,
// Kc] of one group, element by element (rounded by the precision bits,
// zero past O/G).
static inline void lanes_pack_block(const Conv *k, const float *wg, int64_t p0, int64_t o0, uint32_t flags,
                                    float *dg) {
  int64_t op = lanes_op(k);
  for (int64_t p = p0; p < p0 + 16 && p < k->kc; p++)
    for (int64_t o = o0; o < o0 + 16; o++) dg[p * op + o] = o < k->og ? lanes_round(flags, wg[o * k->kc + p]) : 0;
}

// Whether conv_lanes_* may run this geometry at all (ISA aside): every
// offset within int32 and the copy a few MiB. Any Kc: the forward walks its
// K blocks (lanes_slice_mode); grad_weight's rows of dw^T (their tap
// offsets, ConvLanesGw) take Kc <= MLC_GEMM_KC_MAX, conv_lanes_ok's bound.
static inline bool lanes_geometry_ok(const Conv *k) {
  if (k->kc < 1 || k->og < 1) return false;
  int64_t rows = lanes_pad_rows(k, 0, k->ho - 1), plane = rows * lanes_pad_w(k);
  return plane <= (INT64_C(1) << 22) / (k->cg > 0 ? k->cg : 1) && k->qchunk * lanes_op(k) <= (INT64_C(1) << 22);
}

// grad_input in lanes: dx's channels C/G rounded to 16, and the plane of dy
// padded by the flipped filter's reach. With a stride s > 1 (AVX-512:
// conv_lanes_avx512.c's gin_strided) dx pixel h reads y rows (h + ph)/s -
// (a*dh - r)/s for its phase r = (h + ph) mod s, so the copy holds
// (KH-1)*dh/s rows above y and reaches row (H-1 + ph)/s.
static inline int64_t lanes_cp(const Conv *k) { return (k->cg + 15) / 16 * 16; }
// The phase layout (either stride above 1) holds both dims that way, a
// stride-1 one too (then (KH-1)*dh rows above y, and H + ph rows from
// there: the stride-1 layout's H + (KH-1)*dh would be ph short).
static inline int64_t gin_reach(bool unit, int64_t n, int64_t no, int64_t kk, int64_t s, int64_t p, int64_t d) {
  if (unit) return n + (kk - 1) * d;
  int64_t last = (n - 1 + p) / s + 1;
  return (kk - 1) * d / s + (last > no ? last : no);
}
static inline bool gin_unit(const Conv *k) { return k->sh == 1 && k->sw == 1; }
static inline int64_t gin_hq(const Conv *k) { return gin_reach(gin_unit(k), k->h, k->ho, k->kh, k->sh, k->ph, k->dh); }
static inline int64_t gin_wq(const Conv *k) { return gin_reach(gin_unit(k), k->w, k->wo, k->kw, k->sw, k->pw, k->dw); }

// grad_input's scratch after dxt's xtq * cp floats: ooff[o], dy plane o's
// offset in the padded dy [O/G, HQ, WQ], and xoff[pixel], dx pixel (h, w)'s
// offset in a plane of it; returns dyp's slot and dxt (NULL: no scratch).
static inline float *lanes_gin_scratch(const Conv *k, int64_t xtq, float **dyp, int32_t **ooff, int32_t **xoff) {
  int64_t cp = lanes_cp(k), hq = gin_hq(k), wq = gin_wq(k), nx = k->h * k->w;
  *dyp = gemm_scratch(GEMM_SCRATCH_COL, k->og * hq * wq);
  float *dxt = gemm_scratch(GEMM_SCRATCH_OUT, xtq * cp + k->og + nx);
  if (!*dyp || !dxt) return NULL;
  *ooff = (int32_t *)(dxt + xtq * cp), *xoff = *ooff + k->og;
  for (int64_t h = 0; h < k->h; h++)
    for (int64_t w = 0; w < k->w; w++) (*xoff)[h * k->w + w] = (int32_t)(h * wq + w);
  for (int64_t o = 0; o < k->og; o++) (*ooff)[o] = (int32_t)(o * hq * wq);
  return dxt;
}

// Whether conv_lanes_grad_input may run this geometry (ISA aside; the
// AVX2 form takes stride 1 only): O/G in one K block, the copies a few MiB.
// (Any number of pixel chunks: each dx element's taps in (a, b) order is
// the reference's order whatever the chunking, gemm_ref.h.)
static inline bool lanes_gin_geometry_ok(const Conv *k) {
  return k->og >= 1 && k->og <= MLC_GEMM_KC_MAX && k->cg >= 1 &&
         k->og * gin_hq(k) * gin_wq(k) <= (INT64_C(1) << 22) && k->h * k->w * lanes_cp(k) <= (INT64_C(1) << 22);
}

#endif
