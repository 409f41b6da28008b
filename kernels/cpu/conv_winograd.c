// conv_winograd.c — mlc_conv2d's opt-in Winograd F(2x2, 3x3) path
// (MLC_CONV_WINOGRAD): 3x3 convolutions with both strides and dilations 1
// and one group, any padding, plane and channel counts, NCHW.
//
// Per call the filter transform U = G g G^T makes 16 matrices [O, C] (or
// the current GEMM cache's copy of it, made once, when w is a declared
// constant: predict). The output's 2 x 2 tiles, flattened over (image,
// tile row, tile column), are cut into blocks of whole tile rows; a task
// takes one block (and, when there are fewer blocks than threads, one
// slice of the output channels) and
//   1. transforms its input windows, V = B^T d B, into 16 matrices [C, T]
//      (T tiles; channel c's row of matrix xi holds that element of every
//      tile's V);
//   2. runs 16 GEMMs M_xi [O, T] = U_xi [O, C] @ V_xi [C, T] (gemm_region:
//      each element one fmaf chain over c in order, K-blocked as any K);
//   3. transforms M back, Y = A^T M A, adds the bias, applies relu, writes
//      the tile's in-range outputs and, for mlc_conv2d_pool, its 2 x 2 max
//      (a tile is a pool window).
// Each output is computed by one task with kernels/winograd_ref.h's
// operations in its order (the transforms are plain float adds and
// subtracts, -ffp-contract=off, vectorised by the compiler without
// reordering), so the bits are the reference's for any thread count and
// block split. Only the filter transform's 0.5 scaling multiplies.
//
// 4 x 4 windows of neighbouring tiles overlap by two columns: the input
// transform reads each padded input row once, split into even and odd
// columns, applies the column pass to whole rows and the row pass to
// neighbouring (even, odd) pairs, so its loops are unit-stride over tiles.
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conv_winograd.h"
#include "gemm_internal.h"
#include "gemv.h"
#include "mlc_rt.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define WG_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WG_CLONES
#endif

bool conv_winograd_applies(const Conv *k, uint32_t flags) {
  return (flags & MLC_CONV_WINOGRAD) && k->kh == 3 && k->kw == 3 && k->sh == 1 && k->sw == 1 && k->dh == 1 &&
         k->dw == 1 && k->g == 1 && k->c > 0 && !(flags & (MLC_GEMM_BF16 | MLC_GEMM_F16));
}

// ---- filter transform ----------------------------------------------------------------------------
static void filter1(const float *g, int64_t sg, float *t, int64_t st) {
  float g0 = g[0], g1 = g[sg], g2 = g[2 * sg];
  t[0] = g0, t[st] = ((g0 + g1) + g2) * 0.5f, t[2 * st] = ((g0 - g1) + g2) * 0.5f, t[3 * st] = g2;
}

// u [16][O][C] from w [O][C][3][3]: U_xi[o][c] = (G w[o][c] G^T)[xi].
static void filter_transform(const float *w, int64_t o, int64_t c, float *u) {
  for (int64_t oc = 0; oc < o * c; oc++) {
    float t[12], v[16];
    for (int b = 0; b < 3; b++) filter1(w + oc * 9 + b, 3, t + b, 3);
    for (int i = 0; i < 4; i++) filter1(t + i * 3, 1, v + i * 4, 1);
    for (int xi = 0; xi < 16; xi++) u[xi * o * c + oc] = v[xi];
  }
}

// ---- input transform -------------------------------------------------------------------------------
typedef struct WgJob {
  const Conv *k;
  uint32_t flags;
  const float *x, *u, *bias;
  float *y, *yp;
  int64_t th, tw;        // tile rows and columns per image
  int64_t rows;          // tile rows per block
  int64_t osplit, ostep; // output-channel slices per block, channels per slice
  atomic_int failed;
} WgJob;

// ev[k] = x row at column 2k - pw, od[k] at 2k + 1 - pw, k < tw + 1 (0 outside x).
WG_CLONES static void split_row(const Conv *k, const float *row, int64_t tw, float *ev, float *od) {
  int64_t n = tw + 1, pw = k->pw, w = k->w;
  if (!row) {
    for (int64_t i = 0; i < n; i++) ev[i] = 0, od[i] = 0;
    return;
  }
  int64_t e0 = min64((pw + 1) / 2, n), e1 = max64(min64((w + pw + 1) / 2, n), e0);
  int64_t o0 = min64(pw / 2, n), o1 = max64(min64((w + pw) / 2, n), o0);
  for (int64_t i = 0; i < e0; i++) ev[i] = 0;
  for (int64_t i = e0; i < e1; i++) ev[i] = row[2 * i - pw];
  for (int64_t i = e1; i < n; i++) ev[i] = 0;
  for (int64_t i = 0; i < o0; i++) od[i] = 0;
  for (int64_t i = o0; i < o1; i++) od[i] = row[2 * i + 1 - pw];
  for (int64_t i = o1; i < n; i++) od[i] = 0;
}

// The column pass on four (split) rows d[0..3], each n long, in place.
WG_CLONES static void input_cols(float *restrict d0, float *restrict d1, float *restrict d2, float *restrict d3,
                                 int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float a = d0[i], b = d1[i], c = d2[i], e = d3[i];
    d0[i] = a - c, d1[i] = b + c, d2[i] = c - b, d3[i] = b - e;
  }
}

// The row pass of window row r for tw tiles: v[s*ld + t] gets V[r][s] of tile t.
WG_CLONES static void input_row(const float *restrict ev, const float *restrict od, int64_t tw, float *restrict v0,
                                float *restrict v1, float *restrict v2, float *restrict v3) {
  for (int64_t t = 0; t < tw; t++) {
    float a = ev[t], b = od[t], c = ev[t + 1], d = od[t + 1];
    v0[t] = a - c, v1[t] = b + c, v2[t] = c - b, v3[t] = b - d;
  }
}

// V [16][C][ld] of the block's tile rows [gr0, gr1); buf holds 8 * (tw + 1) floats.
static void input_transform(const WgJob *j, int64_t gr0, int64_t gr1, float *v, int64_t ld, float *buf) {
  const Conv *k = j->k;
  int64_t tw = j->tw, n1 = tw + 1;
  for (int64_t c = 0; c < k->c; c++)
    for (int64_t gr = gr0; gr < gr1; gr++) {
      int64_t n = gr / j->th, ty = gr % j->th, t0 = (gr - gr0) * tw;
      const float *xc = j->x + (n * k->c + c) * k->h * k->w;
      float *ev[4], *od[4];
      for (int r = 0; r < 4; r++) {
        int64_t hh = 2 * ty - k->ph + r;
        ev[r] = buf + (2 * r) * n1, od[r] = buf + (2 * r + 1) * n1;
        split_row(k, hh >= 0 && hh < k->h ? xc + hh * k->w : NULL, tw, ev[r], od[r]);
      }
      input_cols(ev[0], ev[1], ev[2], ev[3], n1);
      input_cols(od[0], od[1], od[2], od[3], n1);
      for (int r = 0; r < 4; r++) {
        float *base = v + (int64_t)(r * 4) * k->c * ld + c * ld + t0;
        int64_t xs = k->c * ld; // matrix xi to xi + 1
        input_row(ev[r], od[r], tw, base, base + xs, base + 2 * xs, base + 3 * xs);
      }
    }
}

// ---- output transform ------------------------------------------------------------------------------
// Tiles [0, tw) of one tile row of channel o: m[xi*ms + t]; writes the two
// output rows r0, r1 (2*tw each): r_a[2t + b] = Y[a][b] + bias, relu.
WG_CLONES static void output_row(const float *restrict m, int64_t ms, int64_t tw, bool has_bias, float bias,
                                 bool relu, float *restrict r0, float *restrict r1) {
  for (int64_t t = 0; t < tw; t++) {
    float s[2][4], y[4];
    for (int jj = 0; jj < 4; jj++) {
      float m0 = m[jj * ms + t], m1 = m[(4 + jj) * ms + t], m2 = m[(8 + jj) * ms + t], m3 = m[(12 + jj) * ms + t];
      s[0][jj] = (m0 + m1) + m2, s[1][jj] = (m1 - m2) - m3;
    }
    for (int a = 0; a < 2; a++)
      y[a * 2] = (s[a][0] + s[a][1]) + s[a][2], y[a * 2 + 1] = (s[a][1] - s[a][2]) - s[a][3];
    for (int q = 0; q < 4; q++) {
      float v = y[q];
      if (has_bias) v = v + bias;
      if (relu) v = v > 0 || v != v ? v : 0;
      y[q] = v;
    }
    r0[2 * t] = y[0], r0[2 * t + 1] = y[1], r1[2 * t] = y[2], r1[2 * t + 1] = y[3];
  }
}

// The first maximum of a window's taps in row-major order, a NaN winning
// once: mlc_max_pool2d's pick.
static float pool4(float a, float b, float c, float d) {
  float best = a, v[3] = {b, c, d};
  for (int i = 0; i < 3; i++)
    if (v[i] > best || (v[i] != v[i] && best == best)) best = v[i];
  return best;
}

static void output_transform(const WgJob *j, int64_t gr0, int64_t gr1, int64_t o0, int64_t o1, const float *m,
                             int64_t ld, float *buf) {
  const Conv *k = j->k;
  int64_t tw = j->tw, om = o1 - o0, hp = k->ho / 2, wp = k->wo / 2;
  float *r0 = buf, *r1 = buf + 2 * tw;
  for (int64_t o = o0; o < o1; o++)
    for (int64_t gr = gr0; gr < gr1; gr++) {
      int64_t n = gr / j->th, ty = gr % j->th, t0 = (gr - gr0) * tw;
      output_row(m + (o - o0) * ld + t0, om * ld, tw, j->bias != NULL, j->bias ? j->bias[o] : 0,
                 j->flags & MLC_CONV_RELU, r0, r1);
      float *yo = j->y + ((n * k->o + o) * k->ho + 2 * ty) * k->wo;
      memcpy(yo, r0, (size_t)k->wo * sizeof(float));
      if (2 * ty + 1 < k->ho) memcpy(yo + k->wo, r1, (size_t)k->wo * sizeof(float));
      if (j->yp && ty < hp) {
        float *p = j->yp + ((n * k->o + o) * hp + ty) * wp;
        for (int64_t t = 0; t < wp; t++) p[t] = pool4(r0[2 * t], r0[2 * t + 1], r1[2 * t], r1[2 * t + 1]);
      }
    }
}

// ---- tasks -------------------------------------------------------------------------------------------
static int wg_block(const WgJob *j, int64_t blk, int64_t o0, int64_t o1) {
  const Conv *k = j->k;
  int64_t gr0 = blk * j->rows, gr1 = min64(gr0 + j->rows, k->n * j->th), tiles = (gr1 - gr0) * j->tw;
  int64_t ld = pad16(tiles), om = o1 - o0, extra = pad16(8 * (j->tw + 1));
  float *v = gemm_scratch(GEMM_SCRATCH_COL, 16 * k->c * ld + extra);
  float *m = gemm_scratch(GEMM_SCRATCH_OUT, 16 * om * ld + extra);
  if (!v || !m) return -1;
  input_transform(j, gr0, gr1, v, ld, v + 16 * k->c * ld);
  for (int xi = 0; xi < 16; xi++) {
    Gemm g = {.m = om, .n = tiles, .k = k->c, .alpha = 1, .beta = 0, .a = j->u + (xi * k->o + o0) * k->c,
              .rsa = k->c, .csa = 1, .b = v + xi * k->c * ld, .rsb = ld, .csb = 1, .c = m + xi * om * ld, .ldc = ld};
    if (gemm_region(&g, 0, om, 0, tiles)) return -1;
  }
  output_transform(j, gr0, gr1, o0, o1, m, ld, m + 16 * om * ld);
  return 0;
}

static void wg_task(void *vj, int64_t b, int64_t e) {
  WgJob *j = vj;
  for (int64_t t = b; t < e; t++) {
    int64_t o0 = t % j->osplit * j->ostep, o1 = min64(o0 + j->ostep, j->k->o);
    if (o0 < o1 && wg_block(j, t / j->osplit, o0, o1)) atomic_store(&j->failed, 1);
  }
}

// Tiles per block: V and M of a block in about 1 MiB (2^14 / (C + O)
// tiles), 32 to 512, in whole tile rows. A function of the geometry.
static int64_t block_rows(const Conv *k, int64_t tw) {
  int64_t want = min64(max64((1 << 14) / (k->c + k->o), 32), 512);
  return max64(1, want / tw);
}

#define WG_PAR_MIN_FLOPS 1.0e6

int conv_winograd(MlcPool *pool, const Conv *k, uint32_t flags, const float *x, const float *w, const float *bias,
                  float *y, float *yp) {
  WgJob j = {.k = k, .flags = flags, .x = x, .bias = bias, .y = y, .yp = yp};
  if (!k->n || !k->o || !k->p) return 0;
  j.th = (k->ho + 1) / 2, j.tw = (k->wo + 1) / 2, j.rows = block_rows(k, j.tw);
  int64_t blocks = (k->n * j.th + j.rows - 1) / j.rows, threads = mlc_pool_threads(pool);
  double flops = 2.0 * 16 * (double)k->o * (double)k->c * (double)(k->n * j.th * j.tw);
  j.osplit = 1, j.ostep = k->o;
  if (blocks < threads && flops >= WG_PAR_MIN_FLOPS) { // batch 1: slices of whole micro-rows
    int64_t unit = gemm_current()->mr, want = (threads + blocks - 1) / blocks;
    j.ostep = ((k->o + want - 1) / want + unit - 1) / unit * unit;
    j.osplit = (k->o + j.ostep - 1) / j.ostep;
  }
  float *own = NULL;
  const float *u = gemm_cache_derived(w, k->o, k->c, k->o * k->c * 9, GEMM_CACHE_WINOGRAD, 16 * k->o * k->c,
                                      filter_transform);
  if (!u) {
    own = aligned_alloc(64, ((size_t)(16 * k->o * k->c) * sizeof(float) + 63) & ~(size_t)63);
    if (!own) return -1;
    filter_transform(w, k->o, k->c, own);
    u = own;
  }
  j.u = u;
  mlc_parallel_for(pool, blocks * j.osplit, 1, wg_task, &j);
  free(own);
  return atomic_load(&j.failed) ? -1 : 0;
}
