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

#include "conv_internal.h"
#include "gemm_internal.h"

enum { MASK_WORDS = 4096 }; // (KH + KW) * vectors per call; larger calls take the scalar path

static bool have_avx512(void) {
  static _Atomic int known; // 0 unknown, 1 no, 2 yes
  int v = known;
  if (!v) known = v = gemm_avx512.supported() ? 2 : 1;
  return v == 2;
}

// Lanes [lo, hi) of a 16-lane mask, the bounds clamped to [0, 16].
static __mmask16 lanes(int64_t lo, int64_t hi) {
  lo = lo < 0 ? 0 : lo > 16 ? 16 : lo;
  hi = hi < lo ? lo : hi > 16 ? 16 : hi;
  return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

// rowm[a*nv + v]: the pixels of vector v whose output row reads an input
// row of tap row a (and that lie inside the chunk); colm[b*nv + v]: those
// whose column reads an input column of tap column b.
static void masks(const Conv *k, int64_t q0, int64_t nq, int64_t nv, __mmask16 *rowm, __mmask16 *colm) {
  for (int64_t a = 0; a < k->kh; a++) {
    int64_t dh = a * k->dh - k->ph, ilo = dh < 0 ? -dh : 0, ihi = k->h - dh < k->ho ? k->h - dh : k->ho;
    int64_t qa = ilo * k->w, qb = ihi * k->w; // pixels [qa, qb) read inside x
    if (qb > q0 + nq) qb = q0 + nq;
    for (int64_t v = 0; v < nv; v++) rowm[a * nv + v] = lanes(qa - q0 - 16 * v, qb - q0 - 16 * v);
  }
  for (int64_t b = 0; b < k->kw; b++) {
    int64_t off = b * k->dw - k->pw;
    int64_t j = q0 % k->w; // the column of pixel q0 + 16*v + t, stepped
    for (int64_t v = 0; v < nv; v++) {
      unsigned m = 0;
      for (int t = 0; t < 16; t++, j = j + 1 == k->w ? 0 : j + 1)
        m |= (unsigned)(j + off >= 0 && j + off < k->w) << t;
      colm[b * nv + v] = (__mmask16)m;
    }
  }
}

bool conv_col_rows_avx512(const Conv *k, float *xg, int64_t r0, int64_t r1, int64_t q0, int64_t nq,
                          float *col, int64_t ld, bool add) {
  int64_t nv = (nq + 15) / 16;
  if (k->sh != 1 || k->sw != 1 || k->wo != k->w || (k->kh + k->kw) * nv > MASK_WORDS || !have_avx512())
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
