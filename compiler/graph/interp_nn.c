// interp_nn.c — the reference interpreter's neural-network ops: conv2d and
// its two gradients, max/avg pooling and their gradients, batch and layer
// normalisation and their input gradients, embedding and its scatter-add
// gradient. Semantics follow PyTorch (docs/design/ir.md, "Interpreter
// semantics"); every loop is the textbook one over NCHW row-major tensors.
#include "interp_internal.h"
#include "kernels/gemm_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- convolution ---------------------------------------------------------------------------
// conv2d {stride, padding, dilation, groups}:
//   x[N, C, H, W] * w[O, C/g, KH, KW] -> y[N, O, HO, WO]
//   y[n, o, i, j] = sum over (c, a, b) of
//       x[n, g(o)*C/g + c, i*sh - ph + a*dh, j*sw - pw + b*dw] * w[o, c, a, b]
// (out-of-range x positions are zero padding; g(o) = o / (O/g)).
// conv2d_grad_input (dy, w) is d conv2d / dx applied to dy, conv2d_grad_weight
// (dy, x) d conv2d / dw summed over the batch. The order of every sum is
// kernels/cpu's (kernels/gemm_ref.h): the im2col GEMM, padding taps as
// products with 0, and the gradients' GEMMs with their chunk and scatter
// order; in f32 mode the library's bits. The node's precision rounds x (or
// dy) and w first.
Tensor *interp_conv(InterpCtx *c, IrNode *n, Tensor **in) {
  uint32_t round = interp_round_flags(n);
  const int64_t *s = interp_attr_ints(n, IRA_STRIDE), *p = interp_attr_ints(n, IRA_PADDING);
  const int64_t *d = interp_attr_ints(n, IRA_DILATION);
  Tensor *y = n->op == IR_CONV2D ? NULL : interp_alloc_type(c, n->type);
  if (n->op != IR_CONV2D && !y) return NULL;
  const Tensor *x = n->op == IR_CONV2D ? in[0] : n->op == IR_CONV2D_GRAD_INPUT ? y : in[1];
  const Tensor *w = n->op == IR_CONV2D ? in[1] : n->op == IR_CONV2D_GRAD_INPUT ? in[1] : y;
  int64_t geom[MLC_CONV_GEOM] = {
      [MLC_CONV_N] = x->dims[0], [MLC_CONV_C] = x->dims[1], [MLC_CONV_H] = x->dims[2], [MLC_CONV_W] = x->dims[3],
      [MLC_CONV_O] = w->dims[0], [MLC_CONV_KH] = w->dims[2], [MLC_CONV_KW] = w->dims[3],
      [MLC_CONV_SH] = s[0], [MLC_CONV_SW] = s[1], [MLC_CONV_PH] = p[0], [MLC_CONV_PW] = p[1],
      [MLC_CONV_DH] = d[0], [MLC_CONV_DW] = d[1], [MLC_CONV_G] = interp_attr_i(n, IRA_GROUPS)};
  MlcRefConv k;
  if (!mlc_ref_conv_of(geom, &k) || k.c != w->dims[1] * k.g) {
    interp_tensor_free(y);
    return interp_fail(c, "window or channels do not fit the input");
  }
  bool ok;
  if (n->op == IR_CONV2D) {
    int64_t od[4] = {k.n, k.o, k.ho, k.wo};
    if (!(y = interp_alloc(c, x->dtype, 4, od))) return NULL;
    ok = mlc_ref_conv2d(c->f32, geom, round, x->data, w->data, NULL, y->data);
  } else {
    const Tensor *dy = in[0];
    if (dy->dims[0] != k.n || dy->dims[1] != k.o || dy->dims[2] != k.ho || dy->dims[3] != k.wo) {
      interp_tensor_free(y);
      return interp_fail(c, "dy does not have the conv2d output's shape");
    }
    ok = n->op == IR_CONV2D_GRAD_INPUT ? mlc_ref_conv2d_grad_input(c->f32, geom, round, dy->data, w->data, y->data)
                                       : mlc_ref_conv2d_grad_weight(c->f32, geom, round, dy->data, x->data, y->data);
  }
  if (ok) return y;
  interp_tensor_free(y);
  return interp_fail(c, "out of memory");
}

static int64_t window_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  int64_t num = in + 2 * p - d * (k - 1) - 1;
  return num < 0 ? -1 : num / s + 1;
}

// ---- pooling ----------------------------------------------------------------------------------
// max_pool2d/avg_pool2d {kernel, stride, padding}: x[N, C, H, W] -> [N, C, HO, WO]
//   max: the window's largest element; ties and NaN keep the first in
//        row-major window order (padding never wins: it is skipped);
//   avg: the window's sum over in-range elements / (kh * kw), i.e.
//        count_include_pad=True (padding <= kernel/2, so every window lies
//        inside the padded input).
// max_pool2d_grad (dy, x): dy goes to the element the forward picked
// (adding when windows overlap); avg_pool2d_grad (dy, x): dy/(kh*kw) to
// every in-range element of the window.
typedef struct PoolGeom {
  int64_t planes, H, W, HO, WO;
  const int64_t *k, *s, *p;
} PoolGeom;

// Flat offset (within the plane) of the max of window (i, j), first on ties.
static int64_t window_argmax(const double *x, const PoolGeom *g, int64_t i, int64_t j) {
  int64_t arg = -1;
  double best = 0;
  for (int64_t a = 0; a < g->k[0]; a++)
    for (int64_t b = 0; b < g->k[1]; b++) {
      int64_t h = i * g->s[0] - g->p[0] + a, w = j * g->s[1] - g->p[1] + b;
      if (h < 0 || h >= g->H || w < 0 || w >= g->W) continue;
      double v = x[h * g->W + w];
      if (arg < 0 || v > best || (isnan(v) && !isnan(best))) {
        arg = h * g->W + w;
        best = v;
      }
    }
  return arg;
}

static void pool_plane(InterpCtx *c, IrOp op, const PoolGeom *g, const double *x, const double *dy,
                       double *out) {
  double area = (double)(g->k[0] * g->k[1]);
  for (int64_t i = 0; i < g->HO; i++)
    for (int64_t j = 0; j < g->WO; j++) {
      int64_t yo = i * g->WO + j;
      if (op == IR_MAX_POOL2D || op == IR_MAX_POOL2D_GRAD) {
        int64_t arg = window_argmax(x, g, i, j);
        if (op == IR_MAX_POOL2D) out[yo] = arg < 0 ? -INFINITY : x[arg];
        else if (arg >= 0) out[arg] = interp_r(c, out[arg] + dy[yo]);
        continue;
      }
      double s = 0, share = op == IR_AVG_POOL2D_GRAD ? interp_r(c, dy[yo] / area) : 0;
      for (int64_t a = 0; a < g->k[0]; a++)
        for (int64_t b = 0; b < g->k[1]; b++) {
          int64_t h = i * g->s[0] - g->p[0] + a, w = j * g->s[1] - g->p[1] + b;
          if (h < 0 || h >= g->H || w < 0 || w >= g->W) continue;
          if (op == IR_AVG_POOL2D) s = interp_r(c, s + x[h * g->W + w]);
          else out[h * g->W + w] = interp_r(c, out[h * g->W + w] + share);
        }
      if (op == IR_AVG_POOL2D) out[yo] = interp_r(c, s / area);
    }
}

Tensor *interp_pool(InterpCtx *c, IrNode *n, Tensor **in) {
  bool grad = n->op == IR_MAX_POOL2D_GRAD || n->op == IR_AVG_POOL2D_GRAD;
  Tensor *x = in[grad];
  PoolGeom g = {.k = interp_attr_ints(n, IRA_KERNEL), .s = interp_attr_ints(n, IRA_STRIDE),
                .p = interp_attr_ints(n, IRA_PADDING)};
  g.planes = x->dims[0] * x->dims[1], g.H = x->dims[2], g.W = x->dims[3];
  g.HO = window_extent(g.H, g.k[0], g.s[0], g.p[0], 1);
  g.WO = window_extent(g.W, g.k[1], g.s[1], g.p[1], 1);
  if (g.HO < 0 || g.WO < 0) return interp_fail(c, "window does not fit the input");
  int64_t od[4] = {x->dims[0], x->dims[1], g.HO, g.WO};
  if (grad && (in[0]->dims[2] != g.HO || in[0]->dims[3] != g.WO || in[0]->dims[0] != od[0] ||
               in[0]->dims[1] != od[1]))
    return interp_fail(c, "dy does not have the pool output's shape");
  Tensor *y = grad ? interp_alloc(c, x->dtype, 4, x->dims) : interp_alloc(c, x->dtype, 4, od);
  if (!y) return NULL;
  int64_t xp = g.H * g.W, yp = g.HO * g.WO;
  for (int64_t q = 0; q < g.planes; q++)
    pool_plane(c, n->op, &g, x->data + q * xp, grad ? in[0]->data + q * yp : NULL,
               y->data + q * (grad ? xp : yp));
  return y;
}

// ---- normalisation ------------------------------------------------------------------------------
// batch_norm (x[N, C, ..], gamma[C], beta[C], mean[C], var[C]) {eps}:
//   y = (x - mean[c]) * rstd[c] * gamma[c] + beta[c], rstd = 1/sqrt(var + eps)
// batch_norm_grad (dy, x, gamma, mean, var) {eps}: the training-mode input
// gradient, i.e. d/dx of batch_norm(x, gamma, beta, mean(x), var(x)) with
// mean/var the biased batch statistics over every dim but 1 (M elements per
// channel):
//   dx = gamma * rstd * (dy - sum(dy)/M - xhat * sum(dy * xhat)/M)
// summed per channel, xhat = (x - mean) * rstd. The two sums run in the
// defined order (kir.h): the innermost group is dims 2.. (dim 0 for
// x[N, C]), each sum rounded once.
static Tensor *batch_norm(InterpCtx *c, IrNode *n, Tensor **in) {
  bool grad = n->op == IR_BATCH_NORM_GRAD;
  Tensor *x = in[grad], *y = interp_alloc(c, x->dtype, x->rank, x->dims);
  if (!y) return NULL;
  const double *gamma = in[grad + 1]->data, *mean = in[3]->data, *var = in[4]->data;
  double eps = interp_attr_f(n, IRA_EPS);
  int64_t N = x->dims[0], C = x->dims[1], nc = N * C, inner = nc > 0 ? x->numel / nc : 0;
  double M = (double)(N * inner);
  for (int64_t ch = 0; ch < C; ch++) {
    double rstd = interp_r(c, 1 / interp_r(c, sqrt(interp_r(c, var[ch] + eps))));
    double sdy = 0, sdyx = 0;
    InterpSum s1 = {0}, s2 = {0};
    for (int pass = grad ? 0 : 1; pass < 2; pass++) {
      if (pass == 1 && grad) {
        sdy = interp_r(c, interp_sum_value(&s1));
        sdyx = interp_r(c, interp_sum_value(&s2));
      }
      for (int64_t b = 0; b < N; b++)
        for (int64_t e = 0; e < inner; e++) {
          int64_t o = (b * C + ch) * inner + e;
          double xh = interp_r(c, interp_r(c, x->data[o] - mean[ch]) * rstd);
          if (!grad) {
            y->data[o] = interp_r(c, interp_r(c, xh * gamma[ch]) + in[2]->data[ch]);
          } else if (pass == 0) {
            int64_t p = x->rank > 2 ? e : b; // the innermost group: dims 2.. (or dim 0)
            interp_sum_add(&s1, p, in[0]->data[o]);
            interp_sum_add(&s2, p, interp_r(c, in[0]->data[o] * xh));
          } else {
            double t = interp_r(c, interp_r(c, in[0]->data[o] - interp_r(c, sdy / M)) -
                                       interp_r(c, xh * interp_r(c, sdyx / M)));
            y->data[o] = interp_r(c, interp_r(c, gamma[ch] * rstd) * t);
          }
        }
    }
  }
  return y;
}

// layer_norm (x[.., D..], gamma[D..], beta[D..]) {eps, ndims}: over the last
// ndims dims (M elements per row), with biased variance:
//   y = (x - mean) * rstd * gamma + beta
// layer_norm_grad (dy, x, gamma): with g = dy * gamma and xhat as above,
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
// Every sum over a row runs in the defined order (kir.h) over the row's
// flat index; mean and variance divide the folded sum by M, rounded once;
// the gradient's two sums are rounded once, then divided.
static Tensor *layer_norm(InterpCtx *c, IrNode *n, Tensor **in) {
  bool grad = n->op == IR_LAYER_NORM_GRAD;
  Tensor *x = in[grad], *y = interp_alloc(c, x->dtype, x->rank, x->dims);
  if (!y) return NULL;
  const double *gamma = in[grad + 1]->data;
  double eps = interp_attr_f(n, IRA_EPS);
  int64_t M = in[grad + 1]->numel, rows = M ? x->numel / M : 0;
  for (int64_t r = 0; r < rows; r++) {
    const double *xs = x->data + r * M, *dy = grad ? in[0]->data + r * M : NULL;
    double *ys = y->data + r * M, mean, var, sg = 0, sgx = 0;
    InterpSum sm = {0}, sv = {0}, s1 = {0}, s2 = {0};
    for (int64_t k = 0; k < M; k++) interp_sum_add(&sm, k, xs[k]);
    mean = interp_r(c, interp_sum_value(&sm) / (double)M);
    for (int64_t k = 0; k < M; k++) {
      double d = interp_r(c, xs[k] - mean);
      interp_sum_add(&sv, k, interp_r(c, d * d));
    }
    var = interp_r(c, interp_sum_value(&sv) / (double)M);
    double rstd = interp_r(c, 1 / interp_r(c, sqrt(interp_r(c, var + eps))));
    for (int pass = grad ? 0 : 1; pass < 2; pass++) {
      if (pass == 1 && grad) {
        sg = interp_r(c, interp_sum_value(&s1));
        sgx = interp_r(c, interp_sum_value(&s2));
      }
      for (int64_t k = 0; k < M; k++) {
        double xh = interp_r(c, interp_r(c, xs[k] - mean) * rstd);
        if (!grad) {
          ys[k] = interp_r(c, interp_r(c, xh * gamma[k]) + in[2]->data[k]);
          continue;
        }
        double g = interp_r(c, dy[k] * gamma[k]);
        if (pass == 0) {
          interp_sum_add(&s1, k, g);
          interp_sum_add(&s2, k, interp_r(c, g * xh));
        } else {
          double t = interp_r(c, interp_r(c, g - interp_r(c, sg / (double)M)) -
                                     interp_r(c, xh * interp_r(c, sgx / (double)M)));
          ys[k] = interp_r(c, rstd * t);
        }
      }
    }
  }
  return y;
}

Tensor *interp_norm(InterpCtx *c, IrNode *n, Tensor **in) {
  if (n->op == IR_BATCH_NORM || n->op == IR_BATCH_NORM_GRAD) return batch_norm(c, n, in);
  return layer_norm(c, n, in);
}

// ---- indexing ------------------------------------------------------------------------------------
// embedding (table[V, D], idx[..]) -> [.., D]: row idx of the table.
// embedding_grad (dy[.., D], idx[..]) -> [V, D]: dy's rows added into row idx.
// An index outside [0, V) is an error.
Tensor *interp_index(InterpCtx *c, IrNode *n, Tensor **in) {
  bool grad = n->op == IR_EMBEDDING_GRAD;
  Tensor *idx = in[1], *y;
  if (grad) {
    y = interp_alloc_type(c, n->type);
  } else {
    int64_t od[INTERP_MAX_RANK];
    if (idx->rank + 1 > INTERP_MAX_RANK) return interp_fail(c, "rank exceeds %d", INTERP_MAX_RANK);
    memcpy(od, idx->dims, sizeof(int64_t) * (size_t)idx->rank);
    od[idx->rank] = in[0]->dims[1];
    y = interp_alloc(c, in[0]->dtype, idx->rank + 1, od);
  }
  if (!y) return NULL;
  const Tensor *tab = grad ? y : in[0];
  int64_t V = tab->dims[0], D = tab->dims[1];
  for (int64_t e = 0; e < idx->numel; e++) {
    double v = idx->data[e];
    if (v < 0 || v >= (double)V) {
      interp_tensor_free(y);
      return interp_fail(c, "index %lld out of range [0, %lld)", (long long)v, (long long)V);
    }
    int64_t row = (int64_t)v;
    for (int64_t k = 0; k < D; k++) {
      if (grad)
        y->data[row * D + k] = interp_r(c, y->data[row * D + k] + in[0]->data[e * D + k]);
      else
        y->data[e * D + k] = tab->data[row * D + k];
    }
  }
  return y;
}
