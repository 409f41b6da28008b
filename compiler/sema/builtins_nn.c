// builtins_nn.c — shape rules of the layer ops (conv2d, pooling, batch and
// layer norm, dropout, embedding), the losses, casts and the constructors.
//
// Each rule receives the bound arguments (builtins_internal.h), checks
// dtypes and shapes, reports errors at the most specific span, sets the
// call's FLOPs (convention at the top of builtins.c) and returns the result
// value. Shapes are symbolic: a size the compiler cannot compute exactly
// (a strided conv over a symbolic height) becomes a fresh opaque symbol
// with a readable name.
#include "builtins_internal.h"

#include <math.h>
#include <string.h>

// ---- shared checks ------------------------------------------------------------------------
static const char *ts(Args *g, const Type *t) { return type_str(g->a, t); }
static const char *ds(Args *g, const Dim *d) { return dim_str(g->a, d); }

static bool is_one(const Dim *d) {
  int64_t v;
  return dim_is_const(d, &v) && v == 1;
}

// A 4-D image batch [B, C, H, W]; otherwise an error that suggests the
// likely fix (a missing channel dim, or flat rows of square images).
static bool need_nchw(Args *g, int i, const Type *x) {
  if (x->rank == 4) return true;
  diag_error(g->c->diags, bi_span(g, i),
             "%s expects a 4-D input [batch, channels, height, width], got %s (%d-D)",
             g->opname, ts(g, x), x->rank);
  const char *xt = bi_text(g, i, "x");
  int64_t n = 0, s = 0;
  if (x->rank == 2 && dim_is_const(x->dims[1], &n) && n > 1) s = (int64_t)sqrt((double)n);
  if (x->rank == 3) {
    diag_note(g->c->diags, (Span){0},
              "for single-channel images add the channel dim: unsqueeze(%s, 1) gives %s[%s, 1, %s, %s]",
              xt, dtype_name(x->dtype), ds(g, x->dims[0]), ds(g, x->dims[1]),
              ds(g, x->dims[2]));
  } else if (s > 1 && s * s == n) {
    diag_note(g->c->diags, (Span){0},
              "if each row is a %lldx%lld image, reshape first: reshape(%s, [%s, 1, %lld, %lld])",
              (long long)s, (long long)s, xt, ds(g, x->dims[0]), (long long)s, (long long)s);
  } else {
    diag_note(g->c->diags, (Span){0},
              "reshape(%s, [batch, channels, height, width]) first", xt);
  }
  return false;
}

// A vector argument that must be exactly [n] with x's dtype.
static bool need_vec(Args *g, int i, const Type *v, const Dim *n, const Type *x,
                     const char *what) {
  if (v->rank == 1 && dim_eq(v->dims[0], n)) return bi_same_dtype(g, 0, x, i, v);
  diag_error(g->c->diags, bi_span(g, i), "%s %s must be [%s] for %s %s, got %s",
             g->opname, g->pname[i], ds(g, n), what, ts(g, x), ts(g, v));
  return false;
}

// Output size of a sliding window over one spatial dim:
//   out = (size + 2*pad - dil*(k - 1) - 1)/stride + 1    (floor division)
// Constant-folded when possible; with a symbolic size, exact division when
// it divides, else the floor atom of dim_floordiv, the same one a signature
// writes as (H + 2*p - k) // s + 1. NULL after an error.
static Dim *window_out(Args *g, Dim *size, Dim *k, int64_t stride, int64_t pad,
                       int64_t dil, const char *which) {
  Arena *a = g->a;
  Dim *eff = dim_mul(a, bi_k(g, dil), dim_sub(a, k, bi_k(g, 1)));
  Dim *padded = dim_add(a, size, dim_mul(a, bi_k(g, 2), bi_k(g, pad)));
  Dim *num = bi_ok(g, dim_sub(a, dim_sub(a, padded, eff), bi_k(g, 1)));
  if (!num) return NULL;
  int64_t v;
  if (dim_is_const(num, &v)) {
    if (v >= 0) return bi_k(g, v / stride + 1);
    int64_t out = (v - (stride - 1)) / stride + 1; // floor for negatives
    diag_error(g->c->diags, g->c->span,
               "%s output %s would be %lld: input %s %s, kernel %s, stride %lld, "
               "padding %lld, dilation %lld",
               g->opname, which, (long long)out, which, ds(g, size), ds(g, k),
               (long long)stride, (long long)pad, (long long)dil);
    return NULL;
  }
  return bi_ok(g, dim_add(a, dim_floordiv(a, num, stride), bi_k(g, 1)));
}

// ---- conv2d ------------------------------------------------------------------------------
// conv2d: x[B, Cin, H, W] * weight[Cout, Cin/groups, kh, kw] (+ bias[Cout])
//   -> [B, Cout, Ho, Wo],  Ho = (H + 2*ph - dh*(kh - 1) - 1)/sh + 1, same for W
Value *bi_rule_conv2d(Args *g) {
  Type *x = bi_tensor(g, 0), *w = x ? bi_tensor(g, 1) : NULL;
  if (!w || !need_nchw(g, 0, x) || !bi_need_float(g, 0, x)) return NULL;
  if (w->rank != 4) {
    diag_error(g->c->diags, bi_span(g, 1),
               "conv2d expects a 4-D weight [out_channels, in_channels/groups, kh, kw], got %s",
               ts(g, w));
    return NULL;
  }
  if (!bi_same_dtype(g, 0, x, 1, w)) return NULL;
  if (!dim_is_const(w->dims[2], NULL) || !dim_is_const(w->dims[3], NULL)) {
    diag_error(g->c->diags, bi_span(g, 1),
               "conv2d's kernel size must be known when the model is compiled; the weight is %s",
               ts(g, w));
    return NULL;
  }
  int64_t st[2], pad[2], dil[2], groups;
  if (!bi_pair(g, 3, 1, st) || !bi_pair(g, 4, 0, pad) || !bi_pair(g, 5, 1, dil) ||
      !bi_int(g, 6, &groups))
    return NULL;
  if (groups < 1) {
    diag_error(g->c->diags, bi_span(g, 6), "conv2d groups must be at least 1, got %lld",
               (long long)groups);
    return NULL;
  }
  Dim *cin = x->dims[1], *cout = w->dims[0];
  Dim *want = bi_ok(g, dim_mul(g->a, w->dims[1], bi_k(g, groups)));
  if (!want) return NULL;
  if (!dim_div(g->a, cin, bi_k(g, groups))) { // Conv2d(3, 8, 3, groups = 2)
    diag_error(g->c->diags, bi_span(g, 6), "conv2d groups %lld must divide in_channels %s (input %s)",
               (long long)groups, ds(g, cin), ts(g, x));
    return NULL;
  }
  if (!dim_eq(cin, want)) {
    diag_error(g->c->diags, bi_span(g, 1),
               "conv2d input %s has %s channels but the weight %s expects %s (weight dim 1 = %s, groups = %lld)",
               ts(g, x), ds(g, cin), ts(g, w), ds(g, want), ds(g, w->dims[1]),
               (long long)groups);
    return NULL;
  }
  if (!dim_div(g->a, cout, bi_k(g, groups))) {
    diag_error(g->c->diags, bi_span(g, 6), "conv2d groups %lld must divide out_channels %s",
               (long long)groups, ds(g, cout));
    return NULL;
  }
  Type *bias = NULL;
  if (g->v[2] && (!(bias = bi_tensor(g, 2)) || !need_vec(g, 2, bias, cout, w, "weight")))
    return NULL;
  Dim *ho = window_out(g, x->dims[2], w->dims[2], st[0], pad[0], dil[0], "height");
  Dim *wo = ho ? window_out(g, x->dims[3], w->dims[3], st[1], pad[1], dil[1], "width") : NULL;
  if (!wo) return NULL;
  Type *r = type_new(g->a, x->dtype, 4);
  Dim *dims[4] = {x->dims[0], cout, ho, wo};
  Span org[4] = {x->origin[0], w->origin[0], g->c->span, g->c->span};
  for (int k = 0; k < 4; k++) r->dims[k] = dims[k], r->origin[k] = org[k];
  // 2*B*Cout*Ho*Wo*(Cin/groups)*kh*kw (+ B*Cout*Ho*Wo for the bias)
  Dim *out = type_numel(g->a, r);
  Dim *per = dim_mul(g->a, dim_mul(g->a, w->dims[1], w->dims[2]), w->dims[3]);
  Dim *f = dim_mul(g->a, dim_mul(g->a, bi_k(g, 2), out), per);
  g->c->flops = bias ? dim_add(g->a, f, out) : f;
  bi_attr_ints(g, IRA_STRIDE, st, 2);
  bi_attr_ints(g, IRA_PADDING, pad, 2);
  bi_attr_ints(g, IRA_DILATION, dil, 2);
  bi_attr_int(g, IRA_GROUPS, groups);
  return bi_result(g, r);
}

// ---- pooling --------------------------------------------------------------------------------
// max_pool2d, avg_pool2d: x[B, C, H, W] -> [B, C, Ho, Wo] with a kh x kw
// window, Ho = (H + 2*ph - kh)/sh + 1; stride defaults to the kernel,
// padding at most half the kernel
Value *bi_rule_pool2d(Args *g) {
  Type *x = bi_tensor(g, 0);
  if (!x || !need_nchw(g, 0, x)) return NULL;
  if (g->op == BI_AVG_POOL2D ? !bi_need_float(g, 0, x) : x->dtype == DT_BOOL) {
    if (g->op != BI_AVG_POOL2D)
      diag_error(g->c->diags, bi_span(g, 0), "%s expects a numeric tensor, got %s",
                 g->opname, ts(g, x));
    return NULL;
  }
  int64_t k[2], st[2], pad[2];
  if (!bi_pair(g, 1, 1, k)) return NULL;
  if (g->v[2] && !bi_pair(g, 2, 1, st)) return NULL;
  if (!g->v[2]) st[0] = k[0], st[1] = k[1]; // stride = kernel
  if (!bi_pair(g, 3, 0, pad)) return NULL;
  for (int i = 0; i < 2; i++)
    if (pad[i] > k[i] / 2) {
      diag_error(g->c->diags, bi_span(g, 3),
                 "%s padding %lld is more than half the kernel size %lld", g->opname,
                 (long long)pad[i], (long long)k[i]);
      return NULL;
    }
  Dim *ho = window_out(g, x->dims[2], bi_k(g, k[0]), st[0], pad[0], 1, "height");
  Dim *wo = ho ? window_out(g, x->dims[3], bi_k(g, k[1]), st[1], pad[1], 1, "width") : NULL;
  if (!wo) return NULL;
  Type *r = type_copy(g->a, x);
  r->dims[2] = ho, r->dims[3] = wo;
  r->origin[2] = r->origin[3] = g->c->span;
  g->c->flops = dim_mul(g->a, type_numel(g->a, r), dim_mul(g->a, bi_k(g, k[0]), bi_k(g, k[1])));
  bi_attr_ints(g, IRA_KERNEL, k, 2);
  bi_attr_ints(g, IRA_STRIDE, st, 2);
  bi_attr_ints(g, IRA_PADDING, pad, 2);
  return bi_result(g, r);
}

// ---- normalisation, dropout, embedding ------------------------------------------------------------
static Dim *flops_per_elem(Args *g, const Type *x, int64_t n) {
  return dim_mul(g->a, bi_k(g, n), type_numel(g->a, x));
}

static bool need_range(Args *g, int i, double v, double lo, double hi, bool hi_open) {
  if (isfinite(v) && v >= lo && (hi_open ? v < hi : v <= hi)) return true;
  diag_error(g->c->diags, bi_span(g, i), "%s %s must be in [%g, %g%c, got %g", g->opname,
             g->pname[i], lo, hi, hi_open ? ')' : ']', v);
  return false;
}

// batch_norm: x[N, C] / [N, C, L] / [N, C, H, W], weight/bias/running_mean/
// running_var [C] -> x's shape
Value *bi_rule_batch_norm(Args *g) {
  Type *x = bi_tensor(g, 0);
  if (!x || !bi_need_float(g, 0, x)) return NULL;
  if (x->rank < 2 || x->rank > 4) {
    diag_error(g->c->diags, bi_span(g, 0),
               "batch_norm expects [N, C], [N, C, L] or [N, C, H, W], got %s (%d-D)", ts(g, x),
               x->rank);
    return NULL;
  }
  for (int i = 1; i <= 4; i++) {
    Type *v = bi_tensor(g, i);
    if (!v || !need_vec(g, i, v, x->dims[1], x, "input")) return NULL;
  }
  double mom, eps;
  if (!bi_float(g, 5, &mom) || !need_range(g, 5, mom, 0, 1, false)) return NULL;
  if (!bi_float(g, 6, &eps)) return NULL;
  if (!(eps > 0) || !isfinite(eps)) {
    diag_error(g->c->diags, bi_span(g, 6), "batch_norm eps must be positive, got %g", eps);
    return NULL;
  }
  bi_attr_float(g, IRA_EPS, eps);
  g->c->flops = flops_per_elem(g, x, 8);
  return bi_result(g, type_copy(g->a, x));
}

// layer_norm: x[.., d1, .., dk], weight/bias [d1, .., dk] (x's trailing dims)
// -> x's shape
Value *bi_rule_layer_norm(Args *g) {
  Type *x = bi_tensor(g, 0);
  if (!x || !bi_need_float(g, 0, x)) return NULL;
  for (int i = 1; i <= 2; i++) {
    Type *w = bi_tensor(g, i);
    if (!w) return NULL;
    bool ok = w->rank >= 1 && w->rank <= x->rank;
    for (int k = 0; ok && k < w->rank; k++)
      ok = dim_eq(w->dims[k], x->dims[x->rank - w->rank + k]);
    if (!ok) {
      diag_error(g->c->diags, bi_span(g, i),
                 "layer_norm %s %s does not match the trailing dims of %s", g->pname[i],
                 ts(g, w), ts(g, x));
      if (x->rank >= 1)
        diag_note(g->c->diags, (Span){0}, "to normalise over the last dim it must be %s[%s]",
                  dtype_name(x->dtype), ds(g, x->dims[x->rank - 1]));
      return NULL;
    }
    if (!bi_same_dtype(g, 0, x, i, w)) return NULL;
  }
  double eps;
  if (!bi_float(g, 3, &eps)) return NULL;
  if (!(eps > 0) || !isfinite(eps)) {
    diag_error(g->c->diags, bi_span(g, 3), "layer_norm eps must be positive, got %g", eps);
    return NULL;
  }
  bi_attr_float(g, IRA_EPS, eps);
  bi_attr_int(g, IRA_NDIMS, g->v[1]->type->rank);
  g->c->flops = flops_per_elem(g, x, 8);
  return bi_result(g, type_copy(g->a, x));
}

// dropout: x[..] -> x[..], 0 <= p < 1 (a constant)
Value *bi_rule_dropout(Args *g) {
  Type *x = bi_tensor(g, 0);
  double p;
  if (!x || !bi_need_float(g, 0, x) || !bi_float(g, 1, &p)) return NULL;
  if (!need_range(g, 1, p, 0, 1, true)) return NULL;
  bi_attr_float(g, IRA_P, p);
  g->c->flops = type_numel(g->a, x);
  return bi_result(g, type_copy(g->a, x));
}

// embedding: indices i32/i64[..], weight f[V, D] -> f[.., D]
Value *bi_rule_embedding(Args *g) {
  Type *ix = bi_tensor(g, 0), *w = ix ? bi_tensor(g, 1) : NULL;
  if (!w || !bi_need_int(g, 0, ix) || !bi_need_float(g, 1, w)) return NULL;
  if (w->rank != 2) {
    diag_error(g->c->diags, bi_span(g, 1),
               "embedding expects a 2-D weight [num_embeddings, dim], got %s", ts(g, w));
    return NULL;
  }
  Type *r = type_new(g->a, w->dtype, ix->rank + 1);
  for (int k = 0; k < ix->rank; k++) r->dims[k] = ix->dims[k], r->origin[k] = ix->origin[k];
  r->dims[ix->rank] = w->dims[1];
  r->origin[ix->rank] = w->origin[1];
  return bi_result(g, r);
}

// ---- losses ------------------------------------------------------------------------------------------
static void note_onehot(Args *g) {
  diag_note(g->c->diags, (Span){0}, "use argmax(%s, dim = 1) to get indices",
            bi_text(g, 1, "target"));
}

// reduction = "mean" (the default), "sum" or "none" (one loss per element),
// as PyTorch's losses take it: 0, 1, 2 in *out.
static bool reduction_arg(Args *g, int i, int *out) {
  static const char *const names[] = {"mean", "sum", "none"};
  Value *v = g->v[i];
  *out = 0;
  if (!v) return true;
  for (int k = 0; v->kind == V_STR && k < 3; k++)
    if (!strcmp(v->str, names[k])) return *out = k, true;
  diag_error(g->c->diags, bi_span(g, i), "%s's reduction is \"mean\", \"sum\" or \"none\", got %s",
             g->opname, value_str(g->a, v));
  return false;
}

// The loss's value: a scalar, or with reduction "none" `elems` (one per
// sample: [N] for cross_entropy, the operands' shape for mse and bce).
static Value *loss_result(Args *g, int red, const Type *elems) {
  return bi_result(g, red == 2 ? type_copy(g->a, elems) : type_scalar(g->a, elems->dtype));
}

// cross_entropy: logits f[N, C], target i32/i64[N] -> f (scalar; [N] with
// reduction "none"), with an integrated log_softmax; label_smoothing in
// [0, 1] (torch's range); ignore_index: a target value whose rows count for nothing (the
// mean is over the others)
Value *bi_rule_cross_entropy(Args *g) {
  Type *x = bi_tensor(g, 0), *y = x ? bi_tensor(g, 1) : NULL;
  if (!y || !bi_need_float(g, 0, x)) return NULL;
  if (x->rank != 2) {
    diag_error(g->c->diags, bi_span(g, 0), "cross_entropy expects logits [N, C], got %s (%d-D)",
               ts(g, x), x->rank);
    if (x->rank == 3)
      diag_note(g->c->diags, (Span){0},
                "flatten the positions first: reshape(%s, [%s, %s]) and reshape(%s, [%s])",
                bi_text(g, 0, "logits"), ds(g, dim_mul(g->a, x->dims[0], x->dims[1])),
                ds(g, x->dims[2]), bi_text(g, 1, "target"),
                ds(g, dim_mul(g->a, x->dims[0], x->dims[1])));
    return NULL;
  }
  bool onehot = y->rank == 2 && dim_eq(y->dims[0], x->dims[0]) &&
                dim_eq(y->dims[1], x->dims[1]) && !is_one(y->dims[1]);
  if (onehot || (y->dtype != DT_I32 && y->dtype != DT_I64)) {
    diag_error(g->c->diags, bi_span(g, 1),
               "cross_entropy takes integer class indices (i32/i64), got %s%s", ts(g, y),
               onehot ? ": one-hot targets are not accepted" : "");
    if (onehot)
      note_onehot(g);
    else if (y->rank == 1)
      diag_note(g->c->diags, (Span){0}, "if these are class indices, use cast(%s, i64)",
                bi_text(g, 1, "target"));
    return NULL;
  }
  if (y->rank != 1 || !dim_eq(y->dims[0], x->dims[0])) {
    diag_error(g->c->diags, bi_span(g, 1),
               "cross_entropy expects class indices of shape [N] for logits [N, C] = %s, got %s",
               ts(g, x), ts(g, y));
    if (y->rank == 2 && dim_eq(y->dims[0], x->dims[0]) && is_one(y->dims[1]))
      diag_note(g->c->diags, (Span){0}, "drop the trailing 1: reshape(%s, [%s])",
                bi_text(g, 1, "target"), ds(g, y->dims[0]));
    return NULL;
  }
  double ls;
  int64_t ignore;
  int red;
  if (!bi_float(g, 2, &ls) || !need_range(g, 2, ls, 0, 1, false)) return NULL;
  if ((g->v[3] && !bi_int(g, 3, &ignore)) || !reduction_arg(g, 4, &red)) return NULL;
  g->c->flops = dim_mul(g->a, bi_k(g, 5), dim_mul(g->a, x->dims[0], x->dims[1]));
  Type *rows = type_new(g->a, x->dtype, 1);
  rows->dims[0] = x->dims[0], rows->origin[0] = x->origin[0];
  return loss_result(g, red, rows);
}

// Is t's shape u's with one extra trailing 1 ([B, 1] vs [B])?
static bool extra_one(const Type *t, const Type *u) {
  if (t->rank != u->rank + 1 || !is_one(t->dims[t->rank - 1])) return false;
  for (int k = 0; k < u->rank; k++)
    if (!dim_eq(t->dims[k], u->dims[k])) return false;
  return true;
}

static const char *dims_str(Args *g, const Type *t) {
  StrBuf b = {0};
  for (int k = 0; k < t->rank; k++) sb_printf(&b, "%s%s", k ? ", " : "", ds(g, t->dims[k]));
  const char *s = arena_strdup(g->a, b.data ? b.data : "");
  sb_free(&b);
  return s;
}

// mse, bce_with_logits: pred f[..], target f[..] of exactly the same shape
// (losses never broadcast) -> f (scalar mean; the sum, or f[..] per element
// with reduction "sum", "none")
Value *bi_rule_pair_loss(Args *g) {
  Type *x = bi_tensor(g, 0), *y = x ? bi_tensor(g, 1) : NULL;
  if (!y || !bi_need_float(g, 0, x) || !bi_need_float(g, 1, y) ||
      !bi_same_dtype(g, 0, x, 1, y))
    return NULL;
  if (!type_eq(x, y)) {
    diag_error(g->c->diags, g->c->span,
               "%s needs %s and %s of the same shape, got %s and %s; losses never broadcast",
               g->opname, g->pname[0], g->pname[1], ts(g, x), ts(g, y));
    int fix = extra_one(x, y) ? 0 : extra_one(y, x) ? 1 : -1;
    if (fix >= 0)
      diag_note(g->c->diags, (Span){0}, "drop the trailing 1: reshape(%s, [%s])",
                bi_text(g, fix, g->pname[fix]), dims_str(g, fix ? x : y));
    return NULL;
  }
  int red;
  if (!reduction_arg(g, 2, &red)) return NULL;
  g->c->flops = flops_per_elem(g, x, g->op == BI_MSE ? 3 : 5);
  return loss_result(g, red, x);
}

// ---- casts ---------------------------------------------------------------------------------------------
// cast: x[..] -> dtype[..] (the only dtype conversion there is)
Value *bi_rule_cast(Args *g) {
  Type *x = bi_operand(g, 0);
  DType dt;
  if (!x || !bi_dtype(g, 1, &dt)) return NULL;
  Type *r = type_copy(g->a, x);
  r->dtype = dt;
  r->weak = false;
  return bi_result(g, r);
}

// stop_gradient: x[..] -> x[..], no gradient flows back (detach)
Value *bi_rule_stop_gradient(Args *g) {
  Type *x = bi_tensor(g, 0);
  return x ? bi_result(g, type_copy(g->a, x)) : NULL;
}

// ---- constructors ----------------------------------------------------------------------------------------
// A size argument: an integer (symbolic allowed), positive when constant.
static Dim *size_arg(Args *g, int i) {
  Value *v = g->v[i];
  int64_t n;
  if (v->kind != V_DIM) {
    diag_error(g->c->diags, bi_span(g, i), "argument `%s` of %s must be an integer, got %s",
               g->pname[i], g->opname, value_str(g->a, v));
    return NULL;
  }
  if (dim_is_const(v->dim, &n) && n < 1) {
    diag_error(g->c->diags, bi_span(g, i), "%s needs a positive size, got %lld", g->opname,
               (long long)n);
    return NULL;
  }
  return v->dim;
}

// arange: n -> i64[n] (0, 1, .., n-1)
Value *bi_rule_arange(Args *g) {
  Dim *n = size_arg(g, 0);
  if (!n) return NULL;
  Type *r = type_new(g->a, DT_I64, 1);
  r->dims[0] = n, r->origin[0] = bi_span(g, 0);
  return bi_result(g, r);
}

// causal_mask: T -> bool[T, T], true on and below the diagonal
Value *bi_rule_causal_mask(Args *g) {
  Dim *n = size_arg(g, 0);
  if (!n) return NULL;
  Type *r = type_new(g->a, DT_BOOL, 2);
  r->dims[0] = r->dims[1] = n;
  r->origin[0] = r->origin[1] = bi_span(g, 0);
  return bi_result(g, r);
}

// The type of dtype dt whose dims are a shape list's sizes (each dim's
// origin the list item's span).
static Type *shape_type(Args *g, DType dt, const Value *l) {
  Type *r = type_new(g->a, dt, l->items.len);
  for (int k = 0; k < r->rank; k++) {
    Value *it = VEC_AT(l->items, Value, k);
    r->dims[k] = it->dim;
    r->origin[k] = it->span;
  }
  return r;
}

// zeros, ones: [d..] -> dtype[d..]; full: [d..], value -> dtype[d..]; the
// value must fit the dtype without conversion (float values need a float
// dtype, bools bool)
// rand, randn: shape [d0, ..], a float dtype (f32) -> dtype[d0, ..]: noise
// in train mode, drawn like dropout's mask; its mean (0.5, 0) in eval and
// predict (the lowering)
Value *bi_rule_noise(Args *g) {
  Value *x = g->v[0];
  if (x && x->kind == V_TENSOR && x->type) { // torch.randn_like(x)
    diag_error(g->c->diags, bi_span(g, 0), "%s takes a shape, got the tensor %s %s", g->opname,
               bi_text(g, 0, "x"), ts(g, x->type));
    diag_note(g->c->diags, bi_span(g, 0), "for noise shaped like it (randn_like) write %s([%s])", g->opname,
              dims_str(g, x->type));
    return NULL;
  }
  Value *l = bi_shape(g, 0, false);
  DType dt;
  if (!l || !bi_dtype(g, 1, &dt)) return NULL;
  if (!dtype_is_float(dt)) {
    diag_error(g->c->diags, bi_span(g, 1), "%s draws floats, got dtype %s", g->opname, dtype_name(dt));
    if (dt == DT_BOOL)
      diag_note(g->c->diags, bi_span(g, 1), "for a random mask write rand(shape) < p");
    else
      diag_note(g->c->diags, bi_span(g, 1), "for random integers in [0, n) write cast(rand(shape) * n, %s)",
                dtype_name(dt));
    return NULL;
  }
  Type *r = shape_type(g, dt, l);
  g->c->flops = flops_per_elem(g, r, g->op == BI_RANDN ? 20 : 10);
  return bi_result(g, r);
}

Value *bi_rule_fill(Args *g) {
  bool full = g->op == BI_FULL;
  Value *l = bi_shape(g, 0, false);
  DType dt;
  if (!l || !bi_dtype(g, full ? 2 : 1, &dt)) return NULL;
  if (full) {
    Value *v = g->v[1];
    bool ok = v->kind == V_BOOL    ? dt == DT_BOOL
              : v->kind == V_FLOAT ? dtype_is_float(dt)
              : v->kind == V_DIM   ? dim_is_const(v->dim, NULL) && dt != DT_BOOL
                                   : false;
    if (!ok) {
      if (v->kind == V_BOOL || v->kind == V_FLOAT || v->kind == V_DIM)
        diag_error(g->c->diags, bi_span(g, 1),
                   "full value %s does not fit dtype %s; mlc never converts implicitly",
                   value_str(g->a, v), dtype_name(dt));
      else
        diag_error(g->c->diags, bi_span(g, 1),
                   "argument `value` of full must be a constant, got %s", value_str(g->a, v));
      return NULL;
    }
  }
  Type *r = shape_type(g, dt, l);
  double value = g->op == BI_ONES;
  if (full) {
    Value *v = g->v[1];
    int64_t k = 0;
    value = v->kind == V_BOOL ? v->b : v->kind == V_FLOAT ? v->f : (dim_is_const(v->dim, &k), (double)k);
  }
  bi_attr_float(g, IRA_VALUE, value);
  return bi_result(g, r);
}
