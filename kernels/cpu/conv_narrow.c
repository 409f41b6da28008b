// conv_narrow.c — the narrow-group convolutions' parts that run on any CPU
// (conv_narrow_avx512.c has the passes and their description): the
// geometry they take, grad_weight, whose two inner steps (transposing
// 16 rows into lanes, the sums of a K block) come from the AVX-512 file
// where the CPU has it and from plain C here otherwise, and the depthwise
// grad_input in channel lanes (its table, dy^T and loop likewise). The C
// steps run the same fmaf chains in the same order (16 lanes a step, which GCC
// vectorises: an x86-64-v3 (AVX2 + FMA) clone beside the baseline), so every CPU gets
// gemm_ref.h's bits. Without them an AVX2-only CPU summed depthwise
// weight gradients as 1 x P x 9 GEMMs (1.4 GFLOP/s).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../gemm_ref.h"
#include "conv_internal.h"
#include "conv_lanes.h"
#include "gemm_internal.h"

enum {
  NARROW_XT_MAX = 1 << 20, // x^T of one image and 16 channels: 4 MiB at most
  NARROW_ROWS_MAX = 16,    // rows of dw^T per rows() call
  C_ROWS = 4               // the C step's rows at once (4 x 16 sums: 8 AVX2 registers)
};

bool conv_narrow_geometry_ok(const Conv *k) {
  bool pointwise = k->kh == 1 && k->kw == 1 && k->sh == 1 && k->sw == 1 && k->ph == 0 && k->pw == 0;
  return !pointwise && k->cg <= 8 && k->og <= 8 && k->kc <= MLC_GEMM_KC_MAX && k->ho > 0 && k->wo > 0 &&
         narrow_xt_floats(k) <= NARROW_XT_MAX;
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define NARROW_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define NARROW_CLONES
#endif

// ---- the C steps ---------------------------------------------------------------------------------
// By 16 x 16 blocks, each in L1 while its lanes are filled.
NARROW_CLONES static void transpose_c(const float *const *src, int64_t n, uint32_t flags, float *out) {
  for (int64_t t0 = 0; t0 < n; t0 += 16) {
    int64_t m = n - t0 < 16 ? n - t0 : 16;
    float *blk = out + t0 * 16;
    for (int l = 0; l < 16; l++) {
      const float *s = src[l] ? src[l] + t0 : NULL;
      for (int64_t t = 0; t < m; t++) blk[t * 16 + l] = s ? s[t] : 0;
    }
  }
  if (flags & (MLC_GEMM_BF16 | MLC_GEMM_F16))
    for (int64_t i = 0; i < n * 16; i++) out[i] = lanes_round(flags, out[i]);
}

// C_ROWS rows at once, each its own 16 sums (written out, so that GCC
// vectorises the lane loop and keeps the sums in registers); a short last
// group repeats its last row's offset (computed and dropped).
NARROW_CLONES static void rows_c(int nr, const int32_t *roff, const int32_t *qoff, const float *xt,
                                 const float *dyt, int64_t nq, bool first, float *sums) {
  _Static_assert(C_ROWS == 4, "rows_c writes out four rows");
  for (int r0 = 0; r0 < nr; r0 += C_ROWS) {
    int m = nr - r0 < C_ROWS ? nr - r0 : C_ROWS;
    int64_t o0 = roff[r0], o1 = roff[r0 + (m > 1)], o2 = roff[r0 + (m > 2 ? 2 : m - 1)],
            o3 = roff[r0 + (m > 3 ? 3 : m - 1)];
    float a0[16] = {0}, a1[16] = {0}, a2[16] = {0}, a3[16] = {0};
    for (int64_t q = 0; q < nq; q++) {
      const float *d = dyt + q * 16, *xq = xt + qoff[q];
      const float *x0 = xq + o0, *x1 = xq + o1, *x2 = xq + o2, *x3 = xq + o3;
      for (int l = 0; l < 16; l++) {
        a0[l] = fmaf(x0[l], d[l], a0[l]);
        a1[l] = fmaf(x1[l], d[l], a1[l]);
        a2[l] = fmaf(x2[l], d[l], a2[l]);
        a3[l] = fmaf(x3[l], d[l], a3[l]);
      }
    }
    const float *acc[C_ROWS] = {a0, a1, a2, a3};
    for (int r = 0; r < m; r++)
      for (int l = 0; l < 16; l++) {
        float *s = &sums[(r0 + r) * 16 + l];
        *s = first ? acc[r][l] : acc[r][l] + *s;
      }
  }
}

// The depthwise grad_input's dx pixels 4 at a time (conv_narrow_avx512.c,
// "grad_input in channel lanes"): per tap in order, the dcol element
// fmaf(w, dy, +0) added where the table has the tap, nothing where it has
// -1 (so an infinite w never meets a zero).
NARROW_CLONES static void gin_lanes_c(const Conv *k, const int32_t *tab, const float *wl, const float *dyt,
                                      int64_t nl, int64_t c0, float *dxn) {
  int64_t hw = k->h * k->w, kc = k->kc;
  for (int64_t q0 = 0; q0 < hw; q0 += 4) {
    int m = hw - q0 < 4 ? (int)(hw - q0) : 4;
    float acc[4][16] = {{0}};
    for (int64_t r = 0; r < kc; r++)
      for (int t = 0; t < m; t++) {
        int32_t off = tab[(q0 + t) * kc + r];
        if (off < 0) continue;
        const float *wr = wl + 16 * r, *d = dyt + off;
        for (int l = 0; l < 16; l++) acc[t][l] = acc[t][l] + fmaf(wr[l], d[l], 0.0f);
      }
    for (int t = 0; t < m; t++)
      for (int64_t l = 0; l < nl; l++) dxn[(c0 + l) * hw + q0 + t] = acc[t][l];
  }
}

static const NarrowGwOps gw_c = {transpose_c, rows_c, gin_lanes_c};
#if defined(__x86_64__) || defined(__i386__)
static const NarrowGwOps gw_avx2 = {conv_narrow_transpose_avx2, rows_c, conv_narrow_gin_lanes_avx2};
#endif

static const NarrowGwOps *gw_ops(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (gemm_have_avx512()) return &conv_narrow_gw_avx512;
  if (gemm_have_avx2()) return &gw_avx2;
#endif
  return &gw_c;
}

// ---- grad_weight -----------------------------------------------------------------------------------
// x^T of image xn for the lanes' channels: [C/G, rows, WP, 16], lane l
// reading channel (o0 + l) / (O/G) * C/G + c of x, zero outside x and for
// lanes past O (grad_weight's, and the depthwise forward's in lanes).
void conv_narrow_x_t(const NarrowGwOps *ops, const Conv *k, const float *xn, int64_t o0, uint32_t flags, float *xt) {
  int64_t rows = narrow_rows(k), wp = lanes_pad_w(k);
  memset(xt, 0, (size_t)narrow_xt_floats(k) * sizeof(float));
  int64_t u0 = k->pw, u1 = k->pw + k->w < wp ? k->pw + k->w : wp;
  for (int64_t c = 0; c < k->cg; c++)
    for (int64_t r = 0; r < rows; r++) {
      int64_t h = r - k->ph;
      if (h < 0 || h >= k->h || u1 <= u0) continue;
      const float *src[16];
      for (int l = 0; l < 16; l++) {
        int64_t o = o0 + l;
        src[l] = o < k->o ? xn + ((o / k->og * k->cg + c) * k->h + h) * k->w : NULL;
      }
      ops->transpose(src, u1 - u0, flags, xt + ((c * rows + r) * wp + u0) * 16);
    }
}

// dw[o, :] for the 16 channels o0.. (past O: none), over the whole batch
// (x [N, C, H, W], dy [N, O, HO, WO]), images in order, each image's pixel
// chunks and their K blocks in order; db too (not NULL), from the same dy
// rows in conv_bias.c's order.
bool conv_narrow_grad_weight(const Conv *k, const float *x, const float *dy, int64_t o0, uint32_t flags,
                             float *dw, float *db) {
  const NarrowGwOps *ops = gw_ops();
  int64_t rows = narrow_rows(k), wp = lanes_pad_w(k), nl = k->o - o0 < 16 ? k->o - o0 : 16;
  int64_t qc = k->qchunk, need = narrow_xt_floats(k) + k->p * 16 + k->kc * 16;
  float *xt = gemm_scratch(GEMM_SCRATCH_COL, need);
  int32_t *ints = (int32_t *)gemm_scratch(GEMM_SCRATCH_OUT, k->kc + k->p);
  double *lanes = db ? conv_bias_lanes_new(nl) : NULL;
  if (!xt || !ints || (db && !lanes)) return free(lanes), false;
  float *dyt = xt + narrow_xt_floats(k), *sums = dyt + k->p * 16;
  int32_t *roff = ints, *qoff = ints + k->kc;
  int64_t p = 0;
  for (int64_t c = 0; c < k->cg; c++)
    for (int64_t a = 0; a < k->kh; a++)
      for (int64_t b = 0; b < k->kw; b++) roff[p++] = (int32_t)(((c * rows + a * k->dh) * wp + b * k->dw) * 16);
  for (int64_t q = 0, i = 0, j = 0; q < k->p; q++) {
    qoff[q] = (int32_t)((i * k->sh * wp + j * k->sw) * 16);
    if (++j == k->wo) j = 0, i++;
  }
  bool first = true;
  for (int64_t n = 0; n < k->n; n++) {
    const float *src[16];
    for (int l = 0; l < 16; l++) src[l] = l < nl ? dy + (n * k->o + o0 + l) * k->p : NULL;
    ops->transpose(src, k->p, flags, dyt);
    conv_narrow_x_t(ops, k, x + n * k->c * k->h * k->w, o0, flags, xt);
    if (lanes) conv_bias_lanes_add(lanes, dy + (n * k->o + o0) * k->p, k->p, nl, 0, k->p);
    for (int64_t q0 = 0; q0 < k->p; q0 += qc) {
      int64_t nq = k->p - q0 < qc ? k->p - q0 : qc, kb = mlc_gemm_kblock(nq);
      for (int64_t b0 = 0; b0 < nq; b0 += kb, first = false)
        for (int64_t r0 = 0; r0 < k->kc; r0 += NARROW_ROWS_MAX) {
          int nr = (int)(k->kc - r0 < NARROW_ROWS_MAX ? k->kc - r0 : NARROW_ROWS_MAX);
          ops->rows(nr, roff + r0, qoff + q0 + b0, xt, dyt + (q0 + b0) * 16, nq - b0 < kb ? nq - b0 : kb, first,
                    sums + r0 * 16);
        }
    }
  }
  for (int64_t l = 0; l < nl; l++)
    for (int64_t r = 0; r < k->kc; r++) dw[(o0 + l) * k->kc + r] = sums[r * 16 + l];
  if (lanes) conv_bias_lanes_fold(lanes, nl, db + o0);
  free(lanes);
  return true;
}

// ---- the depthwise forward in channel lanes ----------------------------------------------------------
float *conv_narrow_fwd_lanes_prep(const Conv *k, const float *xn, const float *w, int64_t o0, uint32_t flags,
                                  float **wl) {
  float *xt = gemm_scratch(GEMM_SCRATCH_COL, narrow_xt_floats(k) + 16 * k->kc);
  if (!xt) return NULL;
  *wl = xt + narrow_xt_floats(k);
  conv_narrow_x_t(gw_ops(), k, xn, o0, flags, xt);
  conv_narrow_lane_weights(k, w, o0, k->o - o0 < 16 ? k->o - o0 : 16, flags, *wl);
  return xt;
}

// ---- the depthwise grad_input in channel lanes -------------------------------------------------------
int64_t conv_narrow_gin_lanes_floats(const Conv *k) { return k->h * k->w * k->kc; }

// tab[q * Kc + r]: dy^T's offset of dx pixel q's tap r (r = a * KW + b), or
// -1 where the tap falls outside y or between strides.
void conv_narrow_gin_lanes_prep(const Conv *k, float *prep) {
  int32_t *tab = (int32_t *)prep;
  for (int64_t h = 0, q = 0; h < k->h; h++)
    for (int64_t w = 0; w < k->w; w++, q++)
      for (int64_t a = 0, r = 0; a < k->kh; a++)
        for (int64_t b = 0; b < k->kw; b++, r++) {
          int64_t u = h + k->ph - a * k->dh, v = w + k->pw - b * k->dw;
          bool in = u >= 0 && v >= 0 && u % k->sh == 0 && v % k->sw == 0 && u / k->sh < k->ho && v / k->sw < k->wo;
          tab[q * k->kc + r] = in ? (int32_t)((u / k->sh * k->wo + v / k->sw) * 16) : -1;
        }
}

void conv_narrow_lane_weights(const Conv *k, const float *w, int64_t c0, int64_t nl, uint32_t flags, float *wl) {
  for (int64_t r = 0; r < k->kc; r++)
    for (int64_t l = 0; l < 16; l++) wl[16 * r + l] = l < nl ? lanes_round(flags, w[(c0 + l) * k->kc + r]) : 0.0f;
}

// dy^T of the 16 channels and their weights, then the ISA's loop.
bool conv_narrow_grad_input_lanes(const Conv *k, const float *dyn, const float *w, const float *prep, int64_t c0,
                                  uint32_t flags, float *dxn) {
  const NarrowGwOps *ops = gw_ops();
  int64_t kc = k->kc, nl = k->c - c0 < 16 ? k->c - c0 : 16;
  float *dyt = gemm_scratch(GEMM_SCRATCH_COL, 16 * k->p + 16 * kc);
  if (!dyt) return false;
  float *wl = dyt + 16 * k->p;
  const float *src[16];
  for (int l = 0; l < 16; l++) src[l] = l < nl ? dyn + (c0 + l) * k->p : NULL;
  ops->transpose(src, k->p, flags, dyt);
  conv_narrow_lane_weights(k, w, c0, nl, flags, wl);
  ops->gin_lanes(k, (const int32_t *)prep, wl, dyt, nl, c0, dxn);
  return true;
}
