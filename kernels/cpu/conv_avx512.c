// conv_avx512.c — im2col / col2im rows of a "same" convolution (both
// strides 1, WO == W, any padding, dilation and window) with AVX-512
// masked loads and stores.
//
// There col[r, q] = x[c][q + shift] (shift = (a*dh - ph)*W + b*dw - pw) for
// every pixel q whose tap lands inside the plane: its output row must map
// to an input row (a range of q that depends on the tap row a only) and
// its column j = q % W must have 0 <= j + b*dw - pw < W (a pattern that
// depends on the tap column b only). Both are precomputed once per call
// as 16-bit masks per vector of 16 pixels, so a row of col is one masked
// load (zero where the tap is outside x; masked lanes never fault) and one
// aligned store per 16 pixels (rows are padded to whole lines; the pad
// lanes get zeros no product reads), whatever the row length; fashion_cnn's conv2 rows
// are 14 pixels, which the scalar loops handled one short run at a time.
// col2im adds the in-mask lanes of each row into the plane, rows in
// order: each element of x gets the same additions in the same order as
// the scalar path and the reference (kernels/gemm_ref.h).
#include <immintrin.h>

#include "../gemm_ref.h"
#include "conv_internal.h"
#include "gemm_epi_avx512.h"
#include "gemm_internal.h"

enum { MASK_WORDS = 4096 }; // (KH + KW) * vectors per call; larger calls take the scalar path

static void clear_lane(__mmask16 *m, int64_t q, int64_t nq) {
  if (q >= 0 && q < nq) m[q / 16] &= (__mmask16)~(1u << (q % 16));
}

// rowm[a*nv + v]: the pixels of vector v whose output row reads an input
// row of tap row a (and that lie inside the chunk); colm[b*nv + v]: those
// whose column reads an input column of tap column b.
static void masks(const Conv *k, int64_t q0, int64_t nq, int64_t nv, __mmask16 *rowm, __mmask16 *colm) {
  for (int64_t a = 0; a < k->kh; a++) {
    int64_t dh = a * k->dh - k->ph, ilo = dh < 0 ? -dh : 0, ihi = k->h - dh < k->ho ? k->h - dh : k->ho;
    int64_t qa = ilo * k->w, qb = ihi * k->w; // pixels [qa, qb) read inside x
    if (qb > q0 + nq) qb = q0 + nq;
    for (int64_t v = 0; v < nv; v++) rowm[a * nv + v] = mask_range(qa - q0 - 16 * v, qb - q0 - 16 * v);
  }
  // Every pixel, less the |off| columns of each row that read outside x.
  for (int64_t b = 0; b < k->kw; b++) {
    int64_t off = b * k->dw - k->pw, jlo = off < 0 ? -off : 0, jhi = k->w - off < k->w ? k->w - off : k->w;
    __mmask16 *cm = colm + b * nv;
    for (int64_t v = 0; v < nv; v++) cm[v] = 0xffff;
    for (int64_t i = q0 / k->w; i * k->w < q0 + nq; i++) {
      for (int64_t j = 0; j < jlo && j < k->w; j++) clear_lane(cm, i * k->w + j - q0, nq);
      for (int64_t j = jhi > 0 ? jhi : 0; j < k->w; j++) clear_lane(cm, i * k->w + j - q0, nq);
    }
  }
}

bool conv_col_rows_avx512(const Conv *k, float *xg, int64_t r0, int64_t r1, int64_t q0, int64_t nq,
                          float *col, int64_t ld, bool add) {
  int64_t nv = (nq + 15) / 16;
  if (k->sh != 1 || k->sw != 1 || k->wo != k->w || (k->kh + k->kw) * nv > MASK_WORDS || !gemm_have_avx512())
    return false;
  __mmask16 rowm[MASK_WORDS], *colm = rowm + k->kh * nv;
  masks(k, q0, nq, nv, rowm, colm);
  for (int64_t r = r0; r < r1; r++) {
    int64_t c = r / (k->kh * k->kw), a = r / k->kw % k->kh, b = r % k->kw;
    int64_t shift = (a * k->dh - k->ph) * k->w + b * k->dw - k->pw;
    float *x = xg + c * k->h * k->w + q0 + shift, *row = col + (r - r0) * ld;
    const __mmask16 *rm = rowm + a * nv, *cm = colm + b * nv;
    if (add) {
      for (int64_t v = 0; v < nv; v++) {
        __mmask16 m = rm[v] & cm[v];
        __m512 s = _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + 16 * v), _mm512_maskz_loadu_ps(m, row + 16 * v));
        _mm512_mask_storeu_ps(x + 16 * v, m, s);
      }
      continue;
    }
    for (int64_t v = 0; v < nv; v++) _mm512_store_ps(row + 16 * v, _mm512_maskz_loadu_ps(rm[v] & cm[v], x + 16 * v));
  }
  return true;
}

// ---- implicit GEMM forward -------------------------------------------------------------------
// y = w @ col with B read straight from the plane: the k step p = (c, a, b)
// loads its two vectors of 16 pixels from x[c] at the tap's shift under
// the tap's masks (what the col row would hold), so no col is written.
// 8 rows x 32 pixels per tile, one fmaf chain per element in p order from
// +0 and gemm_epi_avx512.h's epilogue: the bits of gemm_region over col
// (one K block: Kc <= MLC_GEMM_KC_MAX).
enum { TAPS_MAX = 512 };

typedef struct Taps {
  int64_t off[TAPS_MAX]; // p -> c*H*W + shift of its tap
  int32_t mask[TAPS_MAX]; // p -> its tap's row of masks (tap * nv)
} Taps;

static inline void fwd_tile(int64_t kc, const Taps *t, const __mmask16 *m, const float *x, const float *w,
                            int mr, __mmask16 s0, __mmask16 s1, float *y, int64_t ldy, const GemmEpi *e,
                            const bool two) {
  __m512 acc[8][2];
  const float *ar[8];
  _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) {
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    ar[r] = w + (r < mr ? r : mr - 1) * kc;
  }
  for (int64_t p = 0; p < kc; p++) {
    const __mmask16 *mp = m + t->mask[p];
    const float *bp = x + t->off[p];
    __m512 b0 = _mm512_maskz_loadu_ps(mp[0], bp), b1 = two ? _mm512_maskz_loadu_ps(mp[1], bp + 16) : b0;
    _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) {
      __m512 av = _mm512_set1_ps(ar[r][p]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      if (two) acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  // acc is indexed by constants only, so it stays in registers; the store
  // loop (to mr) reads a copy.
  __m512 out[8][2];
  _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) out[r][0] = acc[r][0], out[r][1] = acc[r][1];
  for (int r = 0; r < mr; r++) {
    float *cr = y + r * ldy;
    _mm512_mask_storeu_ps(cr, s0, epi16(e, out[r][0], cr, s0, r, 0));
    if (two && s1) _mm512_mask_storeu_ps(cr + 16, s1, epi16(e, out[r][1], cr + 16, s1, r, 16));
  }
}

bool conv_fwd_avx512(const Conv *k, const float *xg, const float *w, const float *bias, uint32_t flags,
                     float *y, int64_t q0, int64_t nq) {
  int64_t nv = (nq + 15) / 16, ntap = k->kh * k->kw;
  if (k->sh != 1 || k->sw != 1 || k->wo != k->w || k->kc > TAPS_MAX || k->kc > MLC_GEMM_KC_MAX ||
      (k->kh + k->kw + ntap) * nv > MASK_WORDS || !gemm_have_avx512())
    return false;
  __mmask16 rc[MASK_WORDS], *m = rc + (k->kh + k->kw) * nv;
  masks(k, q0, nq, nv, rc, rc + k->kh * nv);
  for (int64_t a = 0; a < k->kh; a++)
    for (int64_t b = 0; b < k->kw; b++)
      for (int64_t v = 0; v < nv; v++) m[(a * k->kw + b) * nv + v] = rc[a * nv + v] & rc[(k->kh + b) * nv + v];
  Taps t;
  for (int64_t p = 0; p < k->kc; p++) {
    int64_t c = p / ntap, a = p / k->kw % k->kh, b = p % k->kw;
    t.off[p] = c * k->h * k->w + (a * k->dh - k->ph) * k->w + b * k->dw - k->pw + q0;
    t.mask[p] = (int32_t)((a * k->kw + b) * nv);
  }
  GemmEpi e = {.flags = flags, .alpha = 1, .beta = 0};
  for (int64_t v0 = 0; v0 < nv; v0 += 2) {
    bool two = v0 + 1 < nv;
    __mmask16 s0 = mask_range(0, nq - 16 * v0), s1 = mask_range(0, nq - 16 * v0 - 16);
    for (int64_t r0 = 0; r0 < k->og; r0 += 8) {
      int mr = (int)(k->og - r0 < 8 ? k->og - r0 : 8);
      e.bias_row = bias ? bias + r0 : NULL;
      const float *x = xg + 16 * v0, *wr = w + r0 * k->kc;
      float *yr = y + r0 * k->p + 16 * v0;
      if (two) fwd_tile(k->kc, &t, m + v0, x, wr, mr, s0, s1, yr, k->p, &e, true);
      else fwd_tile(k->kc, &t, m + v0, x, wr, mr, s0, s1, yr, k->p, &e, false);
    }
  }
  return true;
}
