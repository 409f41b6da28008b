// conv_lanes_avx512.c — convolution with a channel dimension in the
// vector lanes (AVX-512). The forward: y[o, q] for 16 channels o of one
// pixel q in one register, each step p = (c, a, b) of the K sum one load
// of 16 packed weights w[o, p] and one broadcast of the input value x(p,
// q). grad_weight (dw's channels in the lanes) and grad_input (dx's) run
// the same tile, below. docs/design/kernels.md has the measurements.
//
// Why lanes of channels: the pixel-lane forward (conv_avx512.c) puts 16
// pixels in a vector, so a 14 x 14 plane (fashion_cnn's conv2, 196 pixels)
// fills 224 lanes (12.5 % lost) and every step reads a tap offset, two
// masks and two masked vectors. Here the K-major packed weights
// ([Kc, OP], OP = O/G rounded up to 16, zeros past O/G) and a zero-padded
// copy of the plane make every step mask-free, and a tile is any set of
// pixels (whatever the stride, dilation or padding): 6 pixels x 4 vectors
// of channels (24 accumulators) read 4 weight vectors and 6 broadcasts per
// 24 FMAs. The tile writes yt [pixel, channel]; a 16 x 16 transpose per
// block then applies gemm_epi_avx512.h's epilogue and stores y [channel,
// pixel].
//
// Bits: each output is, per K block (mlc_gemm_kblock(Kc) steps), one fmaf
// chain over the block's p in order from +0 (a padding tap multiplies a
// zero of the padded copy, as col's zero in the reference), the block sums
// added in order (C = s + C), then the epilogue: gemm_region's result over
// col, and kernels/gemm_ref.h's. fmaf(w, x, acc) == fmaf(x, w, acc)
// exactly. With MLC_GEMM_BF16 / F16 the copy and the packing round x and w
// (kernels/round16.h), as gemm.c's packing does.
#include <immintrin.h>
#include <string.h>

#include "../gemm_ref.h"
#include "../round16.h"
#include "conv_internal.h"
#include "conv_lanes.h"
#include "gemm_epi_avx512.h"
#include "gemm_internal.h"
#include "transpose_avx512.h"

bool conv_lanes_ok(const Conv *k) {
  return gemm_have_avx512() && lanes_geometry_ok(k) && k->kc <= MLC_GEMM_KC_MAX;
}

bool conv_lanes_gw_rows_ok(const Conv *k) { return gemm_have_avx512() && lanes_geometry_ok(k); }

bool conv_lanes_fwd_ok(const Conv *k) {
  return lanes_geometry_ok(k) && (gemm_have_avx512() || conv_lanes_avx2_ok());
}

int64_t conv_lanes_wfloats(const Conv *k) { return k->g * k->kc * lanes_op(k); }

// xp [C/G, rows, WP] = x rows r0 - ph .. , columns -pw .., zero outside x.
static void pad_plane(const Conv *k, const float *xg, int64_t r0, int64_t rows, uint32_t flags, float *xp) {
  int64_t wp = lanes_pad_w(k);
  for (int64_t c = 0; c < k->cg; c++)
    for (int64_t r = 0; r < rows; r++) {
      float *d = xp + (c * rows + r) * wp;
      int64_t h = r0 + r - k->ph;
      if (h < 0 || h >= k->h) {
        for (int64_t j = 0; j < wp; j += 16) _mm512_mask_storeu_ps(d + j, mask_range(0, wp - j), _mm512_setzero_ps());
        continue;
      }
      const float *s = xg + (c * k->h + h) * k->w - k->pw; // s[j]: padded column j
      int64_t lo = k->pw < wp ? k->pw : wp, hi = k->pw + k->w < wp ? k->pw + k->w : wp;
      if (flags & (MLC_GEMM_BF16 | MLC_GEMM_F16)) {
        for (int64_t j = 0; j < wp; j++) d[j] = j >= lo && j < hi ? lanes_round(flags, s[j]) : 0;
        continue;
      }
      // 16 columns at a time: lanes outside [lo, hi) load zero (and never fault)
      for (int64_t j = 0; j < wp; j += 16)
        _mm512_mask_storeu_ps(d + j, mask_range(0, wp - j), _mm512_maskz_loadu_ps(mask_range(lo - j, hi - j), s + j));
    }
}

// One tile: NP pixels (input pointers at[t], tap offsets off[p]) x NV
// vectors of channels (packed weights wp, row stride ldw) over kc steps;
// yt[t*ldt + 16*v] gets the sums of the first nreal pixels as the mode
// says (conv_lanes.h), resumed from ys[t*ldt + 16*v] (RESUME, RESUME_ADD;
// ys may be yt). Called with constant nv and np only, so acc stays in
// registers. (grad_weight runs it with the roles swapped: rows r of dw^T
// for pixels, pixels for taps.)
static inline __attribute__((always_inline)) void tile(const int nv, const int np, int64_t kc, const int32_t *off,
                                                       const float *wp, int64_t ldw, const float *const *at,
                                                       int nreal, const float *ys, float *yt, int64_t ldt,
                                                       int mode) {
  __m512 acc[24];
  const float *a[24];
  _Pragma("GCC unroll 24") for (int t = 0; t < np; t++) a[t] = at[t];
  if (mode == LANES_RESUME || mode == LANES_RESUME_ADD) {
    // only the nreal rows ys holds: a short last tile's rows past them lie
    // past the end of ys [round16(nq), ldt] (a masked-off load never faults)
    _Pragma("GCC unroll 24") for (int t = 0; t < np; t++) {
      __mmask16 live = t < nreal ? 0xffff : 0;
      _Pragma("GCC unroll 4") for (int v = 0; v < nv; v++)
        acc[t * nv + v] = _mm512_maskz_load_ps(live, ys + t * ldt + 16 * v);
    }
  } else {
    _Pragma("GCC unroll 24") for (int i = 0; i < nv * np; i++) acc[i] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; p++, wp += ldw) {
    __m512 wv[4];
    _Pragma("GCC unroll 4") for (int v = 0; v < nv; v++) wv[v] = _mm512_load_ps(wp + 16 * v);
    int64_t o = off[p];
    _Pragma("GCC unroll 24") for (int t = 0; t < np; t++) {
      __m512 xb = _mm512_set1_ps(a[t][o]);
      _Pragma("GCC unroll 4") for (int v = 0; v < nv; v++) acc[t * nv + v] = _mm512_fmadd_ps(wv[v], xb, acc[t * nv + v]);
    }
  }
  // acc is indexed by constants only, so it stays in registers; the store
  // loop (to nreal) reads a copy.
  __m512 out[24];
  _Pragma("GCC unroll 24") for (int i = 0; i < nv * np; i++) out[i] = acc[i];
  if (nreal > np) nreal = np; // never; says so to the compiler
  for (int t = 0; t < nreal; t++)
    _Pragma("GCC unroll 4") for (int v = 0; v < nv; v++) {
      float *d = yt + t * ldt + 16 * v;
      __m512 y = out[t * nv + v];
      if (mode == LANES_ADD || mode == LANES_RESUME_ADD) y = _mm512_add_ps(y, _mm512_load_ps(d));
      if (mode == LANES_ACCUM) y = _mm512_add_ps(_mm512_load_ps(d), y);
      _mm512_store_ps(d, y);
    }
}

#define TILE_CASE(NV, NP)                                                                           \
  case NV:                                                                                          \
    for (int64_t b0 = 0; b0 < k->kc; b0 += kbl) {                                                   \
      int64_t b1 = b0 + kbl < k->kc ? b0 + kbl : k->kc, sl = lanes_slice_len(b0, b1, kb);          \
      for (int64_t p0 = b0; p0 < b1; p0 += sl) {                                                    \
        int64_t p1 = p0 + sl < b1 ? p0 + sl : b1;                                                   \
        float *from, *to;                                                                           \
        int mode = lanes_slice_mode(b0, b1, p0, p1, yt, ys, &from, &to);                            \
        for (int64_t q = 0; q < nq; q += NP) {                                                      \
          int n = (int)(nq - q < NP ? nq - q : NP);                                                 \
          const float *at[NP];                                                                      \
          lanes_pixel_ptrs(k, xp, r0, wpw, q0 + q, n, NP, at);                                      \
          tile(NV, NP, p1 - p0, off + p0, wpg + p0 * op + 16 * v0, op, at, n, from + q * op + 16 * v0, \
               to + q * op + 16 * v0, op, mode);                                                    \
        }                                                                                           \
      }                                                                                             \
    }                                                                                               \
    break;

// yt [nq, OP] (rows 64-byte aligned) for pixels [q0, q0+nq): channel
// blocks of 4 vectors, the last block 1-3 (each with as many pixels as
// keep 24 accumulators or fewer; 2 vectors take 8 pixels, as 12 would
// spill their pointers). K is walked in slices whose weights
// (LANES_KB_BYTES) stay in L1 across all the pixel tiles, within K blocks
// (lanes_slice_mode: a later block's chains in ys, then added to yt); a
// tile resumes its chains from the buffer (a stored float reloaded: the
// chain is unchanged).
// conv2 at batch 64, 1 thread: the tile loop alone from ~90 % of an FMA
// loop's rate with the whole K (73 KiB of weights from L2 per tile) to
// ~98 % with slices of 96 steps.
enum { LANES_KB_BYTES = 24576 };
static void lanes_sums(const Conv *k, const float *xp, int64_t r0, int64_t wpw, const int32_t *off, const float *wpg,
                       int64_t q0, int64_t nq, float *yt, float *ys) {
  int64_t op = lanes_op(k), kbl = mlc_gemm_kblock(k->kc);
  for (int64_t v0 = 0; v0 < op / 16; v0 += 4) {
    int64_t nvb = op / 16 - v0 < 4 ? op / 16 - v0 : 4, kb = LANES_KB_BYTES / (nvb * 64);
    switch (op / 16 - v0 < 4 ? op / 16 - v0 : 4) {
      TILE_CASE(4, 6)
      TILE_CASE(3, 8)
      TILE_CASE(2, 8)
      TILE_CASE(1, 12)
    }
  }
}

// wp [Kc, OP] of one group = w [O/G, Kc]^T, zero columns past O/G: 16 x
// 16 blocks through registers (the pack runs once per call, and at batch
// 1 it is a tenth of conv2's work done one element at a time), the
// blocks at the edges and the rounding scalar.
void conv_lanes_pack_w(const Conv *k, const float *w, uint32_t flags, float *wp) {
  if (!gemm_have_avx512()) {
    conv_lanes_pack_w_scalar(k, w, flags, wp);
    return;
  }
  int64_t op = lanes_op(k);
  bool rnd = flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  for (int64_t g = 0; g < k->g; g++) {
    const float *wg = w + g * k->og * k->kc;
    float *dg = wp + g * k->kc * op;
    for (int64_t p0 = 0; p0 < k->kc; p0 += 16)
      for (int64_t o0 = 0; o0 < op; o0 += 16) {
        if (!rnd && p0 + 16 <= k->kc && o0 + 16 <= k->og) {
          __m512 r[16];
          for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(wg + (o0 + i) * k->kc + p0);
          transpose16(r);
          for (int j = 0; j < 16; j++) _mm512_store_ps(dg + (p0 + j) * op + o0, r[j]);
          continue;
        }
        lanes_pack_block(k, wg, p0, o0, flags, dg);
      }
  }
}

// y [rows, ldy] (at pixel 0) = epilogue(yt^T) for rows < nrows (channels),
// pixels < nq; yt [>= nq rounded to 16, ldt], e NULL: stored as it is.
static void lanes_store(const float *yt, int64_t ldt, int64_t nrows, int64_t nq, const GemmEpi *e, float *y,
                        int64_t ldy) {
  for (int64_t c0 = 0; c0 < nrows; c0 += 16)
    for (int64_t q = 0; q < nq; q += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; i++) r[i] = _mm512_load_ps(yt + (q + i) * ldt + c0);
      transpose16(r);
      __mmask16 m = mask_range(0, nq - q);
      int rows = (int)(nrows - c0 < 16 ? nrows - c0 : 16);
      for (int i = 0; i < rows; i++) {
        float *yr = y + (c0 + i) * ldy + q;
        _mm512_mask_storeu_ps(yr, m, e ? epi16(e, r[i], yr, m, (int)c0 + i, 0) : r[i]);
      }
    }
}

bool conv_lanes_fwd(const Conv *k, const float *xg, const float *wpg, const float *bias, uint32_t flags,
                    float *y, int64_t q0, int64_t nq) {
  if (nq <= 0) return true;
  if (!gemm_have_avx512()) return conv_lanes_fwd_avx2(k, xg, wpg, bias, flags, y, q0, nq);
  int64_t op = lanes_op(k), wpw = lanes_pad_w(k), i0 = q0 / k->wo, i1 = (q0 + nq - 1) / k->wo;
  int64_t r0 = i0 * k->sh, rows = lanes_pad_rows(k, i0, i1);
  int64_t ytq = (nq + 15) / 16 * 16;
  float *xp = gemm_scratch(GEMM_SCRATCH_COL, k->cg * rows * wpw), *ys;
  int32_t *off;
  float *yt = lanes_fwd_scratch(k, ytq, &ys, &off);
  if (!xp || !yt) return false;
  pad_plane(k, xg, r0, rows, flags, xp);
  lanes_tap_offsets(k, rows, wpw, off);
  lanes_sums(k, xp, r0, wpw, off, wpg, q0, nq, yt, ys);
  memset(yt + nq * op, 0, (size_t)((ytq - nq) * op) * sizeof(float)); // rows the transpose reads, never stores
  GemmEpi e = {.flags = flags & ~(uint32_t)(MLC_GEMM_BF16 | MLC_GEMM_F16), .alpha = 1, .beta = 0, .bias_row = bias};
  lanes_store(yt, op, k->og, nq, &e, y, k->p);
  return true;
}

// ---- grad_weight ------------------------------------------------------------------------------
// dw[g]^T rows [r0, r1) (r = (c, a, b)) with the channels of dw in the
// lanes: dwt[r][o] = the sum over images n in order, pixel chunks in
// order, K blocks of the chunk in order (mlc_gemm_kblock: 784 pixels are
// two of 392), of the chain over the block's pixels q of x(r, q) *
// dy[n, o, q] (from +0; the first block's stored, each later one added:
// acc + dwt, the GEMM's beta = 1), which is gemm_ref.h's grad_weight. A tile is 6
// rows x 4 vectors of channels: per pixel 4 loads of dyt [q, OP] (dy of
// the chunk transposed, zeros past O/G) and 6 broadcasts of x from the
// padded plane (rows r at their tap offsets, the pixel's offset as the
// step's). The padded plane's zeros are col's padding zeros, so even an
// infinite dy gives the reference's NaN.

// dyt [nq, OP] = dy [O/G, P] at pixels [q0, q0+nq), transposed by 16 x 16
// blocks (rounded as the GEMM's operands are with the precision bits);
// only the vectors of channels [16*v0, 16*v1).
static void dy_transpose(const Conv *k, const float *dyg, int64_t q0, int64_t nq, uint32_t flags, int64_t v0,
                         int64_t v1, float *dyt) {
  int64_t op = lanes_op(k);
  bool rnd = flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  for (int64_t o0 = 16 * v0; o0 < 16 * v1; o0 += 16)
    for (int64_t q = 0; q < nq; q += 16) {
      __mmask16 m = mask_range(0, nq - q);
      __m512 r[16];
      for (int i = 0; i < 16; i++)
        r[i] = o0 + i < k->og ? _mm512_maskz_loadu_ps(m, dyg + (o0 + i) * k->p + q0 + q) : _mm512_setzero_ps();
      transpose16(r);
      int rows = (int)(nq - q < 16 ? nq - q : 16);
      for (int j = 0; j < rows; j++) {
        float *d = dyt + (q + j) * op + o0;
        _mm512_store_ps(d, r[j]);
        if (rnd)
          for (int i = 0; i < 16; i++) d[i] = lanes_round(flags, d[i]);
      }
    }
}

#define GW_TILES(NV, NP)                                                                       \
  for (int64_t r = r0; r < r1; r += NP) {                                                      \
    int n = (int)(r1 - r < NP ? r1 - r : NP);                                                  \
    const float *at[NP];                                                                       \
    for (int t = 0; t < NP; t++) at[t] = xp + roff[(t < n ? r + t : r + n - 1) - r0];          \
    tile(NV, NP, nq, qoff, dyt + 16 * v0, op, at, n, NULL, dwt + (r - r0) * op + 16 * v0, op, mode); \
  }
#define GW_CASE(NV, NP) \
  case NV:              \
    GW_TILES(NV, NP)    \
    break;

static void gw_chunk(const Conv *k, const float *xp, const int32_t *roff, const int32_t *qoff, const float *dyt,
                     int64_t nq, int64_t r0, int64_t r1, int64_t va, int64_t vb, int mode, float *dwt) {
  int64_t op = lanes_op(k);
  for (int64_t v0 = va; v0 < vb; v0 += 4) {
    switch (vb - v0 < 4 ? vb - v0 : 4) {
      GW_CASE(4, 6)
      GW_CASE(3, 8)
      GW_CASE(2, 8)
    case 1: // tiles of 12 rows, or one of 9 when that is all (Kc = 9: a one-channel 3 x 3 filter)
      if (r1 - r0 <= 9) {
        GW_TILES(1, 9)
      } else {
        GW_TILES(1, 12)
      }
      break;
    }
  }
}

// The padded copy's channels are those rows [r0, r1) read; roff[r] is row
// r's tap offset in it.
bool conv_lanes_gw_begin(ConvLanesGw *s, const Conv *k, int64_t g, int64_t r0, int64_t r1, uint32_t flags) {
  int64_t op = lanes_op(k), wpw = lanes_pad_w(k), ntap = k->kh * k->kw;
  *s = (ConvLanesGw){.k = k, .kc = *k, .g = g, .r0 = r0, .r1 = r1, .flags = flags, .first = true,
                     .rows = lanes_pad_rows(k, 0, k->ho - 1), .c0 = r0 / ntap, .v0 = 0, .v1 = op / 16};
  s->kc.cg = (r1 - 1) / ntap + 1 - s->c0;
  if (!gemm_scratch(GEMM_SCRATCH_PACK, (r1 - r0) * op)) return false;
  for (int64_t r = r0; r < r1; r++) {
    int64_t c = r / ntap, a = r / k->kw % k->kh, b = r % k->kw;
    s->roff[r - r0] = (int32_t)(((c - s->c0) * s->rows + a * k->dh) * wpw + b * k->dw);
  }
  return true;
}

void conv_lanes_gw_vectors(ConvLanesGw *s, int64_t v0, int64_t v1) { s->v0 = v0, s->v1 = v1; }

int64_t conv_lanes_dytfloats(const Conv *k) { return k->p * lanes_op(k); }

void conv_lanes_dy_t(const Conv *k, const float *dyg, uint32_t flags, float *dyt) {
  dy_transpose(k, dyg, 0, k->p, flags, 0, lanes_op(k) / 16, dyt);
}

// One image: xn = x[n] (all channels), dyg = dy[n, g] [O/G, P] transposed
// here chunk by chunk, or dyt (not NULL) that image's conv_lanes_dy_t. The
// scratch pointers are fetched per image, so a caller may use slots COL
// and OUT between images (the fused pool gradient's grad_input does).
static bool gw_image(ConvLanesGw *s, const float *xn, const float *dyg, const float *dyt_all) {
  const Conv *k = s->k;
  int64_t op = lanes_op(k), wpw = lanes_pad_w(k), ytq = (k->qchunk + 15) / 16 * 16;
  float *xp = gemm_scratch(GEMM_SCRATCH_COL, s->kc.cg * s->rows * wpw);
  float *dyt = gemm_scratch(GEMM_SCRATCH_OUT, ytq * op + ytq); // then qoff, ytq int32
  float *dwt = gemm_scratch(GEMM_SCRATCH_PACK, (s->r1 - s->r0) * op);
  if (!xp || !dyt || !dwt) return false;
  int32_t *qoff = (int32_t *)(dyt + ytq * op);
  pad_plane(&s->kc, xn + ((s->g * k->cg + s->c0) * k->h) * k->w, 0, s->rows, s->flags, xp);
  for (int64_t q0 = 0; q0 < k->p; q0 += k->qchunk) {
    int64_t nq = k->p - q0 < k->qchunk ? k->p - q0 : k->qchunk;
    const float *dt = dyt_all ? dyt_all + q0 * op : dyt; // dyt_all: the floats dy_transpose would write
    if (!dyt_all) dy_transpose(k, dyg, q0, nq, s->flags, s->v0, s->v1, dyt);
    // pixel q0 + q at (i, j), stepped without a division per pixel (a
    // divide and a modulo per pixel were a fifth of conv1's grad_weight)
    for (int64_t q = 0, i = q0 / k->wo, j = q0 % k->wo; q < nq; q++) {
      qoff[q] = (int32_t)(i * k->sh * wpw + j * k->sw);
      if (++j == k->wo) j = 0, i++;
    }
    int64_t kb = mlc_gemm_kblock(nq); // the chunk's K blocks, each its own chain (gemm_ref.h)
    for (int64_t b0 = 0; b0 < nq; b0 += kb, s->first = false)
      gw_chunk(k, xp, s->roff, qoff + b0, dt + b0 * op, nq - b0 < kb ? nq - b0 : kb, s->r0, s->r1,
               s->v0, s->v1, s->first ? LANES_START : LANES_ADD, dwt);
  }
  return true;
}

bool conv_lanes_gw_image(ConvLanesGw *s, const float *xn, const float *dyg) { return gw_image(s, xn, dyg, NULL); }

bool conv_lanes_gw_image_t(ConvLanesGw *s, const float *xn, const float *dyt) { return gw_image(s, xn, NULL, dyt); }

void conv_lanes_gw_end(const ConvLanesGw *s, float *dw) {
  const Conv *k = s->k;
  int64_t op = lanes_op(k);
  const float *dwt = gemm_scratch(GEMM_SCRATCH_PACK, (s->r1 - s->r0) * op); // grown by begin: no allocation
  float *dwg = dw + s->g * k->og * k->kc;
  for (int64_t o = 16 * s->v0; o < k->og && o < 16 * s->v1; o++)
    for (int64_t r = s->r0; r < s->r1; r++) dwg[o * k->kc + r] = dwt[(r - s->r0) * op + o];
}

bool conv_lanes_grad_weight(const Conv *k, const float *x, const float *dy, int64_t g, int64_t r0, int64_t r1,
                            uint32_t flags, float *dw) {
  if (r0 >= r1) return true;
  ConvLanesGw s;
  if (!conv_lanes_gw_begin(&s, k, g, r0, r1, flags)) return false;
  for (int64_t n = 0; n < k->n; n++)
    if (!conv_lanes_gw_image(&s, x + n * k->c * k->h * k->w, dy + (n * k->o + g * k->og) * k->p)) return false;
  conv_lanes_gw_end(&s, dw);
  return true;
}

// ---- grad_input ---------------------------------------------------------------------------------
// dx[c, h, w] of one image and group with the input channels in the
// lanes, for stride 1 (any number of pixel chunks): tap by tap (a, b) in order, a
// tile of 8 dx pixels x 2 vectors of channels (fashion_cnn's conv2: 32;
// 12 pixels spill their pointers, 1.2x slower) runs the chain over o of
// w[o, c, a, b] * dy[o, h + ph - a*dh, w + pw - b*dw] from +0 (dcol's
// element, K = O/G) and adds it to the pixel's sum, dx + v, from +0: for
// one element of dx the taps arrive in r = (c, a, b) order, as col2im
// adds them (gemm_ref.h). dy is read from a zero-padded copy, so a tap
// that falls outside y gives a chain of w * 0 = +0 and dx + 0 == dx (dx
// starts at +0 and a sum is -0 only of two -0s, so it never is -0): the
// reference skips those taps, which is the same bits as long as every w
// is finite (conv_lanes_pack_wt checks; an inf * 0 would be a NaN).

bool conv_lanes_gin_ok(const Conv *k) {
  bool unit = k->sh == 1 && k->sw == 1;
  return lanes_gin_geometry_ok(k) && (gemm_have_avx512() || (unit && conv_lanes_avx2_ok()));
}

int64_t conv_lanes_wtfloats(const Conv *k) { return k->g * k->kh * k->kw * k->og * lanes_cp(k); }

bool conv_lanes_pack_wt(const Conv *k, const float *w, uint32_t flags, float *wt) {
  if (!gemm_have_avx512()) return conv_lanes_pack_wt_scalar(k, w, flags, wt);
  int64_t cp = lanes_cp(k), ntap = k->kh * k->kw;
  __mmask16 bad = 0; // lanes that held an inf or a NaN: the exponent all ones
  for (int64_t g = 0; g < k->g; g++)
    for (int64_t t = 0; t < ntap; t++)
      for (int64_t o = 0; o < k->og; o++) {
        float *d = wt + ((g * ntap + t) * k->og + o) * cp;
        const float *s = w + (g * k->og + o) * k->kc + t;
        for (int64_t c = 0; c < cp; c++) d[c] = c < k->cg ? lanes_round(flags, s[c * ntap]) : 0;
        __m512 inf = _mm512_set1_ps(__builtin_inff());
        for (int64_t c = 0; c < cp; c += 16)
          bad |= _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_load_ps(d + c), inf), inf, _CMP_EQ_OQ);
      }
  return !bad;
}

// One tap's tiles over NX dx pixels whose dyp offsets are XOFF[], into
// the rows of DXT (one per pixel).
#define GIN_CASE(NV, NP, XOFF, NX, DXT)                                                        \
  case NV:                                                                                     \
    for (int64_t q = 0; q < (NX); q += NP) {                                                   \
      int n = (int)((NX) - q < NP ? (NX) - q : NP);                                            \
      const float *at[NP];                                                                     \
      for (int t = 0; t < NP; t++) at[t] = dyp + (XOFF)[q + (t < n ? t : n - 1)] + toff;       \
      tile(NV, NP, k->og, ooff, wtt + 16 * v0, cp, at, n, NULL, (DXT) + q * cp + 16 * v0, cp, LANES_ACCUM); \
    }                                                                                          \
    break;

// dyp [O/G, hq, wq]: row ii, column jj = dy[o] row ii - eh, column jj - ew
// (zero outside dy), rounded by the precision bits.
static void pad_dy(const Conv *k, const float *dyg, int64_t eh, int64_t ew, int64_t hq, int64_t wq,
                   uint32_t flags, float *dyp) {
  bool rnd = flags & (MLC_GEMM_BF16 | MLC_GEMM_F16);
  for (int64_t o = 0; o < k->og; o++)
    for (int64_t ii = 0; ii < hq; ii++) {
      float *d = dyp + (o * hq + ii) * wq;
      int64_t i = ii - eh;
      const float *s = dyg + (o * k->ho + i) * k->wo - ew; // s[jj]: y column jj - ew
      for (int64_t jj = 0; jj < wq; jj += 16) {
        __mmask16 in = i >= 0 && i < k->ho ? mask_range(ew - jj, ew + k->wo - jj) : 0;
        _mm512_mask_storeu_ps(d + jj, mask_range(0, wq - jj), _mm512_maskz_loadu_ps(in, s + jj));
      }
      if (rnd)
        for (int64_t jj = 0; jj < wq; jj++) d[jj] = lanes_round(flags, d[jj]);
    }
}

// A stride above 1: dx pixel (h, w) takes tap (a, b) only when (h + ph -
// a*dh) and (w + pw - b*dw) are multiples of the strides, i.e. when a*dh
// mod sh is its row phase rh = (h + ph) mod sh (and likewise b, rw). So
// the pixels go by phase classes: a class's pixels, listed in pix[] (dx
// order), form the rows of dxt that its taps' tiles accumulate, each valid
// tap (a, b) in order reading y row (h + ph)/sh - (a*dh - rh)/sh and
// column (w + pw)/sw - (b*dw - rw)/sw of the padded copy (row ii of it is
// y row ii - eh: eh = (KH-1)*dh/sh rows above y, zeros below and right
// where a tap reaches past y). A dx element thus gets its taps in (a, b)
// order from +0, the reference's; taps past y add chains of w * 0 = +0.
// dxt's rows are then stored in dx order (a class's rows are not).
static bool gin_strided(const Conv *k, const float *dyg, const float *wtg, uint32_t flags, float *dxg) {
  int64_t cp = lanes_cp(k), hq = gin_hq(k), wq = gin_wq(k), nx = k->h * k->w;
  int64_t eh = (k->kh - 1) * k->dh / k->sh, ew = (k->kw - 1) * k->dw / k->sw;
  int64_t xtq = (nx + 15) / 16 * 16;
  float *dyp = gemm_scratch(GEMM_SCRATCH_COL, k->og * hq * wq);
  float *dxt = gemm_scratch(GEMM_SCRATCH_OUT, xtq * cp + k->og + 2 * nx);
  if (!dyp || !dxt) return false;
  int32_t *ooff = (int32_t *)(dxt + xtq * cp), *xoff = ooff + k->og, *pix = xoff + nx;
  for (int64_t o = 0; o < k->og; o++) ooff[o] = (int32_t)(o * hq * wq);
  pad_dy(k, dyg, eh, ew, hq, wq, flags, dyp);
  memset(dxt, 0, (size_t)(xtq * cp) * sizeof(float));
  int64_t c0 = 0; // the class's first row of dxt
  for (int64_t rh = 0; rh < k->sh; rh++)
    for (int64_t rw = 0; rw < k->sw; rw++) {
      int64_t nc = 0;
      for (int64_t h = 0; h < k->h; h++)
        for (int64_t w = 0; w < k->w; w++)
          if ((h + k->ph) % k->sh == rh && (w + k->pw) % k->sw == rw) {
            pix[c0 + nc] = (int32_t)(h * k->w + w);
            xoff[c0 + nc++] = (int32_t)(((h + k->ph) / k->sh + eh) * wq + (w + k->pw) / k->sw + ew);
          }
      for (int64_t v0 = 0; nc && v0 < cp / 16; v0 += 4)
        for (int64_t a = 0; a < k->kh; a++)
          for (int64_t b = 0; b < k->kw; b++) {
            if ((a * k->dh) % k->sh != rh || (b * k->dw) % k->sw != rw) continue;
            int64_t toff = -(((a * k->dh - rh) / k->sh) * wq + (b * k->dw - rw) / k->sw);
            const float *wtt = wtg + (a * k->kw + b) * k->og * cp;
            switch (cp / 16 - v0 < 4 ? cp / 16 - v0 : 4) {
              GIN_CASE(4, 6, xoff + c0, nc, dxt + c0 * cp)
              GIN_CASE(3, 8, xoff + c0, nc, dxt + c0 * cp)
              GIN_CASE(2, 8, xoff + c0, nc, dxt + c0 * cp)
              GIN_CASE(1, 8, xoff + c0, nc, dxt + c0 * cp)
            }
          }
      c0 += nc;
    }
  // dx pixel p's row of dxt, then dxt's rows in dx order through the
  // 16 x 16 transposes (a scalar scatter through pix[] took half the time)
  int32_t *row = xoff;
  for (int64_t q = 0; q < nx; q++) row[pix[q]] = (int32_t)q;
  for (int64_t c0 = 0; c0 < k->cg; c0 += 16)
    for (int64_t q = 0; q < nx; q += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; i++) r[i] = q + i < nx ? _mm512_load_ps(dxt + row[q + i] * cp + c0) : _mm512_setzero_ps();
      transpose16(r);
      __mmask16 m = mask_range(0, nx - q);
      int rows = (int)(k->cg - c0 < 16 ? k->cg - c0 : 16);
      for (int i = 0; i < rows; i++) _mm512_mask_storeu_ps(dxg + (c0 + i) * nx + q, m, r[i]);
    }
  return true;
}

// GIN_TAPS pixels (dyp pointers at[t]) x the one vector of dx channels
// of a block at v0 (dx's channels per group at most 16, or the last
// block) over every tap: per tap (a, b) in order, its chain over o from
// +0 (the per-tap tile's LANES_ACCUM one), added to the pixel's sum held
// in a register, where the per-tap tiles above add it to dxt in memory:
// the same adds in the same order, 0 + t00 + t01 + ..., without a load
// and a store of the tile per tap, which for one vector hold only 8
// accumulators and run O/G steps between them: batch 64, 1 thread, 16 ->
// 16 channels, 3x3 at 32 x 32 3.7 -> 3.1-3.6 ms, 5x5 at 28 x 28 9.6 ->
// 7.9. Two vectors (6 pixels, 24 registers of sums) lost to the per-tap
// tiles (32 channels at 16 x 16 2.44 -> 2.66), and 12 pixels of one
// vector spilled their pointers (3.1 -> 3.8).
enum { GIN_TAPS = 8 };
static void gin_taps_tile(const Conv *k, int64_t wq, const int32_t *ooff, const float *wtv, int64_t cp,
                          const float *const *at, int nreal, float *dxt) {
  __m512 d[GIN_TAPS];
  _Pragma("GCC unroll 8") for (int t = 0; t < GIN_TAPS; t++) d[t] = _mm512_setzero_ps();
  for (int64_t a = 0; a < k->kh; a++)
    for (int64_t b = 0; b < k->kw; b++) {
      int64_t toff = (k->kh - 1 - a) * k->dh * wq + (k->kw - 1 - b) * k->dw;
      const float *wt = wtv + (a * k->kw + b) * k->og * cp;
      __m512 acc[GIN_TAPS];
      _Pragma("GCC unroll 8") for (int t = 0; t < GIN_TAPS; t++) acc[t] = _mm512_setzero_ps();
      for (int64_t o = 0; o < k->og; o++, wt += cp) {
        __m512 wv = _mm512_load_ps(wt);
        int64_t off = ooff[o] + toff;
        _Pragma("GCC unroll 8") for (int t = 0; t < GIN_TAPS; t++)
          acc[t] = _mm512_fmadd_ps(wv, _mm512_set1_ps(at[t][off]), acc[t]);
      }
      _Pragma("GCC unroll 8") for (int t = 0; t < GIN_TAPS; t++) d[t] = _mm512_add_ps(d[t], acc[t]);
    }
  __m512 out[GIN_TAPS];
  _Pragma("GCC unroll 8") for (int t = 0; t < GIN_TAPS; t++) out[t] = d[t];
  for (int t = 0; t < nreal && t < GIN_TAPS; t++) _mm512_store_ps(dxt + t * cp, out[t]);
}

bool conv_lanes_grad_input(const Conv *k, const float *dyg, const float *wtg, uint32_t flags, float *dxg) {
  if (!gemm_have_avx512()) return conv_lanes_grad_input_avx2(k, dyg, wtg, flags, dxg);
  if (k->sh > 1 || k->sw > 1) return gin_strided(k, dyg, wtg, flags, dxg);
  int64_t cp = lanes_cp(k), hq = gin_hq(k), wq = gin_wq(k), nx = k->h * k->w;
  int64_t eh = (k->kh - 1) * k->dh - k->ph, ew = (k->kw - 1) * k->dw - k->pw; // dyp row ii: y row ii - eh
  int64_t xtq = (nx + 15) / 16 * 16;
  float *dyp;
  int32_t *ooff, *xoff; // o -> its plane, dx pixel -> its dyp offset
  float *dxt = lanes_gin_scratch(k, xtq, &dyp, &ooff, &xoff);
  if (!dxt) return false;
  pad_dy(k, dyg, eh, ew, hq, wq, flags, dyp);
  memset(dxt, 0, (size_t)(xtq * cp) * sizeof(float));
  for (int64_t v0 = 0; v0 < cp / 16; v0 += 4) {
    if (cp / 16 - v0 == 1) { // every tap at once, over tiles of GIN_TAPS pixels (a short one repeats its last)
      for (int64_t q = 0; q < nx; q += GIN_TAPS) {
        int n = (int)(nx - q < GIN_TAPS ? nx - q : GIN_TAPS);
        const float *at[GIN_TAPS];
        for (int t = 0; t < GIN_TAPS; t++) at[t] = dyp + xoff[q + (t < n ? t : n - 1)];
        gin_taps_tile(k, wq, ooff, wtg + 16 * v0, cp, at, n, dxt + q * cp + 16 * v0);
      }
      continue;
    }
    for (int64_t a = 0; a < k->kh; a++)
      for (int64_t b = 0; b < k->kw; b++) {
        int64_t toff = (k->kh - 1 - a) * k->dh * wq + (k->kw - 1 - b) * k->dw;
        const float *wtt = wtg + (a * k->kw + b) * k->og * cp;
        switch (cp / 16 - v0 < 4 ? cp / 16 - v0 : 4) {
          GIN_CASE(4, 6, xoff, nx, dxt)
          GIN_CASE(3, 8, xoff, nx, dxt)
          GIN_CASE(2, 8, xoff, nx, dxt)
          GIN_CASE(1, 8, xoff, nx, dxt)
        }
      }
  }
  lanes_store(dxt, cp, k->cg, nx, NULL, dxg, nx);
  return true;
}
