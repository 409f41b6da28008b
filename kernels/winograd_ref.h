// winograd_ref.h — the order of mlc_conv2d's Winograd F(2x2, 3x3) path
// (MLC_CONV_WINOGRAD; kernels/cpu/conv_winograd.c), written once as scalar
// code over double arrays like the rest of gemm_ref.h, which includes it:
// the kernel-IR evaluator and the tests run this for a `call conv2d` that
// carries the flag, and the library must give these bits.
//
// Which convolutions: mlc_winograd_applies (3x3, both strides and
// dilations 1, one group, no bf16/f16 rounding, any padding and plane
// size). Output tile (ty, tx) is y rows 2ty, 2ty+1 and columns 2tx, 2tx+1
// (tiles past HO or WO are computed and dropped); it reads the 4 x 4 input
// window d at rows 2ty - ph + r, columns 2tx - pw + s (0 outside x).
//   filter  U = G g G^T, per (o, c):  rows first (t = G g, per column b):
//             t0 = g0, t1 = ((g0 + g1) + g2) * 0.5, t2 = ((g0 - g1) + g2) * 0.5, t3 = g2;
//           then the same on each row of t (U[i][j], j from t[i][0..2]).
//   input   V = B^T d B, per (tile, c): columns first, e[r][s] from d[0..3][s]:
//             e0 = d0 - d2, e1 = d1 + d2, e2 = d2 - d1, e3 = d1 - d3;
//           then V[r][0..3] = e[r][0] - e[r][2], e[r][1] + e[r][2],
//           e[r][2] - e[r][1], e[r][1] - e[r][3].
//   product M[xi][o][tile] = the GEMM sum over c of U[xi][o][c] * V[xi][c][tile]
//           (xi = r*4 + s: 16 GEMMs [O x C] @ [C x tiles], K = C, blocked
//           as any K: mlc_ref_ksum);
//   output  Y = A^T M A: columns first, s0 = (m0 + m1) + m2, s1 = (m1 - m2) - m3
//           over m[0..3][j]; then y[a][0] = (s[a][0] + s[a][1]) + s[a][2],
//           y[a][1] = (s[a][1] - s[a][2]) - s[a][3]; then + bias[o], relu.
// f32: every operation rounds to float (0.5 * v is one multiply); the
// products are fmaf chains (mlc_ref_ksum). !f32: the same in double.
#ifndef MLC_WINOGRAD_REF_H
#define MLC_WINOGRAD_REF_H

// Included by gemm_ref.h after its scalar steps and MlcRefConv.
//
// GCC 12's SLP vectorizer miscompiles these transforms at -O2 (the filter
// transform of fashion_cnn's weights lost roundings: -0x1.105032p-5 where
// the float operations give -0x1.10503p-5; right at -O1 and -O3, and with
// -fno-tree-slp-vectorize), so they are kept scalar. Reference code: the
// speed does not matter.
#if defined(__GNUC__) && !defined(__clang__)
#define MLC_WG_REF static inline __attribute__((optimize("no-tree-slp-vectorize")))
#else
#define MLC_WG_REF static inline
#endif

static inline bool mlc_winograd_applies(const MlcRefConv *k, uint32_t flags) {
  return k->kh == 3 && k->kw == 3 && k->sh == 1 && k->sw == 1 && k->dh == 1 && k->dw == 1 && k->g == 1 &&
         !(flags & (MLC_GEMM_BF16 | MLC_GEMM_F16));
}

// The three forms of one 1-D transform (a stride between the elements).
MLC_WG_REF void mlc_ref_wg_filter1(bool f32, const double *g, int64_t sg, double *t, int64_t st) {
  double g0 = g[0], g1 = g[sg], g2 = g[2 * sg];
  t[0] = g0;
  t[st] = mlc_ref_rnd(f32, mlc_ref_rnd(f32, mlc_ref_rnd(f32, g0 + g1) + g2) * 0.5);
  t[2 * st] = mlc_ref_rnd(f32, mlc_ref_rnd(f32, mlc_ref_rnd(f32, g0 - g1) + g2) * 0.5);
  t[3 * st] = g2;
}

MLC_WG_REF void mlc_ref_wg_input1(bool f32, const double *d, int64_t sd, double *e, int64_t se) {
  double d0 = d[0], d1 = d[sd], d2 = d[2 * sd], d3 = d[3 * sd];
  e[0] = mlc_ref_rnd(f32, d0 - d2), e[se] = mlc_ref_rnd(f32, d1 + d2);
  e[2 * se] = mlc_ref_rnd(f32, d2 - d1), e[3 * se] = mlc_ref_rnd(f32, d1 - d3);
}

MLC_WG_REF void mlc_ref_wg_output1(bool f32, const double *m, int64_t sm, double *s, int64_t ss) {
  s[0] = mlc_ref_rnd(f32, mlc_ref_rnd(f32, m[0] + m[sm]) + m[2 * sm]);
  s[ss] = mlc_ref_rnd(f32, mlc_ref_rnd(f32, m[sm] - m[2 * sm]) - m[3 * sm]);
}

// u[xi] (16) of one 3 x 3 filter w (row-major), its taps first made
// floats in f32 (a caller's doubles need not be: the direct order's fmaf
// rounds its operands the same way).
MLC_WG_REF void mlc_ref_wg_filter(bool f32, const double *w, double *u) {
  double g[9], t[12]; // t: [4][3]
  for (int q = 0; q < 9; q++) g[q] = mlc_ref_rnd(f32, w[q]);
  for (int b = 0; b < 3; b++) mlc_ref_wg_filter1(f32, g + b, 3, t + b, 3);
  for (int i = 0; i < 4; i++) mlc_ref_wg_filter1(f32, t + i * 3, 1, u + i * 4, 1);
}

// v[xi] (16) of one 4 x 4 window d (row-major).
MLC_WG_REF void mlc_ref_wg_input(bool f32, const double *d, double *v) {
  double e[16];
  for (int s = 0; s < 4; s++) mlc_ref_wg_input1(f32, d + s, 4, e + s, 4);
  for (int r = 0; r < 4; r++) mlc_ref_wg_input1(f32, e + r * 4, 1, v + r * 4, 1);
}

// y[a*2 + b] (4) of one tile's m[xi] (16).
MLC_WG_REF void mlc_ref_wg_output(bool f32, const double *m, double *y) {
  double s[8]; // [2][4]
  for (int j = 0; j < 4; j++) mlc_ref_wg_output1(f32, m + j, 4, s + j, 4);
  for (int a = 0; a < 2; a++) mlc_ref_wg_output1(f32, s + a * 4, 1, y + a * 2, 1);
}

// mlc_conv2d with MLC_CONV_WINOGRAD on a geometry mlc_winograd_applies to.
MLC_WG_REF bool mlc_ref_conv2d_winograd(bool f32, const MlcRefConv *k, uint32_t flags, const double *x,
                                           const double *w, const double *bias, double *y) {
  int64_t th = (k->ho + 1) / 2, tw = (k->wo + 1) / 2;
  double *u = malloc(sizeof(double) * (size_t)(16 * k->o * k->c + 1)); // [O][C][16]
  double *v = malloc(sizeof(double) * (size_t)(16 * k->c + 1));        // [C][16]
  if (!u || !v) {
    free(u), free(v);
    return false;
  }
  for (int64_t oc = 0; oc < k->o * k->c; oc++) mlc_ref_wg_filter(f32, w + oc * 9, u + oc * 16);
  for (int64_t n = 0; n < k->n; n++)
    for (int64_t ty = 0; ty < th; ty++)
      for (int64_t tx = 0; tx < tw; tx++) {
        for (int64_t c = 0; c < k->c; c++) {
          double d[16];
          for (int r = 0; r < 4; r++)
            for (int s = 0; s < 4; s++) {
              int64_t hh = 2 * ty - k->ph + r, ww = 2 * tx - k->pw + s;
              bool in = hh >= 0 && hh < k->h && ww >= 0 && ww < k->w;
              d[r * 4 + s] = in ? mlc_ref_rnd(f32, x[((n * k->c + c) * k->h + hh) * k->w + ww]) : 0;
            }
          mlc_ref_wg_input(f32, d, v + c * 16);
        }
        for (int64_t o = 0; o < k->o; o++) {
          double m[16], yt[4];
          for (int xi = 0; xi < 16; xi++)
            m[xi] = mlc_ref_ksum(f32, 0, k->c, u + o * k->c * 16 + xi, 16, v + xi, 16, 1, 0, 0);
          mlc_ref_wg_output(f32, m, yt);
          for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
              int64_t i = 2 * ty + a, j = 2 * tx + b;
              if (i >= k->ho || j >= k->wo) continue;
              double t = yt[a * 2 + b];
              if (bias) t = mlc_ref_rnd(f32, t + bias[o]);
              if (flags & MLC_CONV_RELU) t = t > 0 || isnan(t) ? t : 0;
              y[((n * k->o + o) * k->ho + i) * k->wo + j] = t;
            }
        }
      }
  free(u), free(v);
  return true;
}

// mlc_conv2d_grad_input with MLC_CONV_WINOGRAD where mlc_winograd_grad_applies:
// dx = the conv above of dy with w~[c][o][a][b] = w[o][c][2-a][2-b] and
// padding 2 - p (dy as the input: O channels, HO x WO; C outputs, H x W).
static inline bool mlc_winograd_grad_applies(const MlcRefConv *k, uint32_t flags) {
  return mlc_winograd_applies(k, flags) && k->ph <= 2 && k->pw <= 2;
}

MLC_WG_REF bool mlc_ref_conv2d_grad_input_winograd(bool f32, const MlcRefConv *k, uint32_t flags,
                                                   const double *dy, const double *w, double *dx) {
  MlcRefConv t = {.n = k->n, .c = k->o, .h = k->ho, .w = k->wo, .o = k->c, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
                  .ph = 2 - k->ph, .pw = 2 - k->pw, .dh = 1, .dw = 1, .g = 1, .ho = k->h, .wo = k->w};
  double *wt = malloc(sizeof(double) * (size_t)(k->o * k->c * 9 + 1));
  if (!wt) return false;
  for (int64_t o = 0; o < k->o; o++)
    for (int64_t c = 0; c < k->c; c++)
      for (int q = 0; q < 9; q++) wt[(c * k->o + o) * 9 + 8 - q] = w[(o * k->c + c) * 9 + q];
  bool ok = mlc_ref_conv2d_winograd(f32, &t, flags & ~(uint32_t)MLC_CONV_RELU, dy, wt, NULL, dx);
  free(wt);
  return ok;
}

#endif
