// kir_lower.c — graph IR function -> kernel IR program, one kernel per op.
//
// Input: a verified IrFunc. Output: a KirProgram (kir.h) whose buffers are the
// function's arguments (input i), its results (output i), the model state it
// reads or stores (state, by path) and one temporary per other value; and
// whose kernels, in the function's topological order, compute each value
// with the reference interpreter's exact formulas and accumulation order
// (interp.c, interp_nn.c; float sums in kir.h's one order, kl_sum_*), so
// kir_interp agrees with interp_run bit for bit in f64, and in f32 but for
// the composite elementwise formulas the interpreter rounds once. The nests
// are canonical, for no target: the schedule (schedule.c) maps their loops
// and may re-lower the kernels that carry an op record.
//
// This file owns the driver, symbolic sizes (a Dim becomes an i64 expression
// over the program's syms), buffers, the loop-nest helpers shared with
// kir_lower_nn.c (float sums among them), and the general ops:
// elementwise, reductions, softmax, views, matmul, constants, casts, dropout,
// rand and randn, and state stores.
// With KirLowerOptions.check_finite it also adds the finite-check kernels
// (kir.h) after each op that computes a float value.
//
// Views: reshape, stop_gradient, custom_grad and same-dtype casts share their
// operand's buffer (row-major data is unchanged); transpose, slice, concat
// and broadcast_to are copy kernels whose loads carry the index map.
#include "kir_lower_internal.h"
#include "graph/scalar.h"
#include "kernels/gemm_ref.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ---- errors and attributes -----------------------------------------------------------------------
void *kl_fail(KLower *c, const IrNode *n, const char *fmt, ...) {
  if (c->failed) return NULL;
  c->failed = true;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (c->errlen) {
    if (n)
      snprintf(c->err, c->errlen, "kir: %s = %s: %s", ir_value_name(c->p->arena, n), ir_op_name(n->op), msg);
    else
      snprintf(c->err, c->errlen, "kir: func %s: %s", c->f->name, msg);
  }
  return NULL;
}

int64_t kl_attr_i(const IrNode *n, IrAttrKey k) { return ir_node_int(n, k); }
const int64_t *kl_attr_ints(const IrNode *n, IrAttrKey k) { return ir_node_ints(n, k); }
double kl_attr_f(const IrNode *n, IrAttrKey k) { return ir_node_float(n, k); }

// ---- symbolic sizes ------------------------------------------------------------------------------
// Dims are opaque polynomials; their canonical text (dim_str) is parsed back
// into an expression:
//   poly    := ['-'] term {(' + ' | ' - ') term}
//   term    := factor {'*' factor}
//   factor  := primary ['^' INT] [' // ' INT]     (floor-division atoms)
//   primary := INT | NAME | '(' poly ')' | '(' NAME-with-spaces ')'
typedef struct DimParse {
  KLower *c;
  const char *s;
  bool bad;
} DimParse;

static int sym_by_name(KLower *c, const char *name, size_t len) {
  for (int i = 0; i < c->p->syms.len; i++) {
    const char *sn = VEC_AT(c->p->syms, KirSym, i)->name;
    if (strlen(sn) == len && !strncmp(sn, name, len)) return i;
  }
  return -1;
}

static bool dp_lit(DimParse *d, const char *lit) {
  size_t n = strlen(lit);
  if (strncmp(d->s, lit, n)) return false;
  d->s += n;
  return true;
}

static int64_t dp_int(DimParse *d) {
  char *end;
  long long v = strtoll(d->s, &end, 10);
  if (end == d->s) d->bad = true;
  d->s = end;
  return v;
}

static KExpr *dp_poly(DimParse *d);

// The closing parenthesis matching the one at s.
static const char *match_paren(const char *s) {
  int depth = 0;
  for (; *s; s++) {
    depth += *s == '(' ? 1 : *s == ')' ? -1 : 0;
    if (depth == 0) return s;
  }
  return NULL;
}

static KExpr *dp_primary(DimParse *d) {
  KirProgram *p = d->c->p;
  if (isdigit((unsigned char)*d->s)) return kir_idx(p, dp_int(d));
  if (*d->s == '(') {
    const char *end = match_paren(d->s);
    int s = end ? sym_by_name(d->c, d->s + 1, (size_t)(end - d->s - 1)) : -1;
    if (s >= 0) {
      d->s = end + 1;
      return kir_symref(p, s);
    }
    d->s++;
    KExpr *e = dp_poly(d);
    if (!dp_lit(d, ")")) d->bad = true;
    return e;
  }
  const char *start = d->s;
  while (isalnum((unsigned char)*d->s) || *d->s == '_') d->s++;
  int s = sym_by_name(d->c, start, (size_t)(d->s - start));
  if (s < 0) {
    d->bad = true;
    return kir_idx(p, 0);
  }
  return kir_symref(p, s);
}

static KExpr *dp_factor(DimParse *d) {
  KExpr *e = dp_primary(d);
  if (dp_lit(d, "^")) {
    int64_t n = dp_int(d);
    KExpr *base = e;
    for (int64_t i = 1; i < n; i++) e = kir_bin(d->c->p, KB_MUL, e, base);
  }
  // a floor atom of a floor atom prints as a chain, "(H - 3) // 2 // 2",
  // left to right (dims.c floor_atom: a lone atom's numerator is unbracketed)
  while (dp_lit(d, " // ")) e = kir_bin(d->c->p, KB_DIV, e, kir_idx(d->c->p, dp_int(d)));
  return e;
}

static KExpr *dp_term(DimParse *d) {
  KExpr *e = dp_factor(d);
  while (!d->bad && dp_lit(d, "*")) e = kir_bin(d->c->p, KB_MUL, e, dp_factor(d));
  return e;
}

static KExpr *dp_poly(DimParse *d) {
  KirProgram *p = d->c->p;
  bool neg = dp_lit(d, "-");
  KExpr *e = dp_term(d);
  if (neg) e = kir_bin(p, KB_SUB, kir_idx(p, 0), e);
  for (;;) {
    if (d->bad) return e;
    if (dp_lit(d, " + ")) e = kir_bin(p, KB_ADD, e, dp_term(d));
    else if (dp_lit(d, " - ")) e = kir_bin(p, KB_SUB, e, dp_term(d));
    else return e;
  }
}

KExpr *kl_dim(KLower *c, const Dim *dim) {
  int64_t v;
  if (dim_is_const(dim, &v)) return kir_idx(c->p, v);
  const char *text = dim_str(c->p->arena, dim);
  int s = sym_by_name(c, text, strlen(text));
  if (s >= 0) return kir_symref(c->p, s);
  DimParse d = {.c = c, .s = text};
  KExpr *e = dp_poly(&d);
  if (d.bad || *d.s) return kl_fail(c, NULL, "size %s has a symbol without a definition", text);
  return e;
}

KExpr *kl_tdim(KLower *c, const Type *t, int i) {
  KExpr *e = kl_dim(c, t->dims[i]);
  return e ? e : kl_i(c, 0);
}

int kl_buf_new(KLower *c, KirBufKind kind, const char *name, const Type *t) {
  KExpr *dims[KL_MAX_RANK];
  for (int i = 0; i < t->rank; i++) dims[i] = kl_tdim(c, t, i);
  return kir_buf_add(c->p, kind, name, t->dtype, t->rank, dims);
}

KExpr *kl_prod(KLower *c, const Type *t, int from, int to) {
  KExpr *e = kl_i(c, 1);
  for (int i = from; i < to; i++) e = kl_mul(c, e, kl_tdim(c, t, i));
  return e;
}

// ---- expression shorthands ----------------------------------------------------------------------------
KExpr *kl_add(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_ADD, a, b); }
KExpr *kl_sub(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_SUB, a, b); }
KExpr *kl_mul(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_MUL, a, b); }
KExpr *kl_div(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_DIV, a, b); }
KExpr *kl_i(KLower *c, int64_t v) { return kir_idx(c->p, v); }

// A float constant of dt; integer/bool dtypes get the value as the
// interpreter would store it.
KExpr *kl_f(KLower *c, DType dt, double v) {
  if (dtype_is_float(dt)) return kir_float(c->p, dt, v);
  if (dt == DT_BOOL) return kir_int(c->p, dt, v != 0);
  int64_t i = isfinite(v) ? (int64_t)v : 0;
  if (dt == DT_I32) i = (int32_t)(uint32_t)i;
  return kir_int(c->p, dt, i);
}

KExpr *kl_isnan(KLower *c, KExpr *x) { return kir_bin(c->p, KB_NE, x, x); }

// ---- buffers and kernels ---------------------------------------------------------------------------
int kl_buf(KLower *c, const IrNode *n) { return c->buf[n->order + c->nparams]; }

KExpr *kl_ld(KLower *c, const IrNode *n, KExpr *index) { return kir_load(c->p, kl_buf(c, n), index); }

DType kl_precision(const IrNode *n) {
  int64_t p = ir_node_int(n, IRA_PRECISION);
  return p == DT_BF16 || p == DT_F16 ? (DType)p : DT_F32;
}

KExpr *kl_round(KLower *c, const IrNode *n, KExpr *v) {
  DType p = kl_precision(n);
  if (p == DT_F32 || v->dtype != DT_F32) return v;
  return kir_un(c->p, p == DT_BF16 ? KU_ROUND_BF16 : KU_ROUND_F16, v);
}

void kl_st(KLower *c, Vec *blk, const IrNode *n, KExpr *index, KExpr *v) {
  kir_store(c->p, blk, kl_buf(c, n), index, kir_cast(c->p, n->type->dtype, v));
}

// (An elided transpose has no buffer: a matmul reading one takes its source's.)
KirKernel *kl_kernel(KLower *c, const IrNode *n, const char *what) {
  KirKernel *k = kir_kernel_new(c->p, arena_printf(c->p->arena, "k%d_%s", n->id, what), n->span);
  kir_kernel_use(c->p, k, kl_buf(c, n));
  for (int i = 0; i < n->nin; i++)
    if (kl_buf(c, n->in[i]) >= 0) kir_kernel_use(c->p, k, kl_buf(c, n->in[i])); // < 0: a prologue's
  return k;
}

int kl_var(KLower *c, KirKernel *k, const char *prefix, DType dt, bool loop) {
  return kir_var_new(c->p, k, arena_printf(c->p->arena, "%s%d", prefix, k->vars.len), dt, loop);
}

KExpr *kl_v(KLower *c, KirKernel *k, int var) { return kir_varref(c->p, k, var); }

void kl_op(KLower *c, KirKernel *k, KirOpKind kind, IrNode *const *roles, int nroles, const int64_t *attrs) {
  int bufs[KIR_OP_MAX_BUFS], rank[KIR_OP_MAX_BUFS];
  KExpr *dims[KIR_OP_MAX_BUFS][KIR_OP_MAX_RANK];
  for (int i = 0; i < nroles; i++) {
    const Type *t = roles[i]->type;
    bufs[i] = kl_buf(c, roles[i]);
    rank[i] = t->rank;
    for (int d = 0; d < t->rank; d++) dims[i][d] = kl_tdim(c, t, d);
  }
  kir_kernel_op(c->p, k, kind, bufs, rank, (KExpr *const (*)[KIR_OP_MAX_RANK])dims, attrs);
}

// A fresh local holding value; returns a reference to it.
static KExpr *let_local(KLower *c, KirKernel *k, Vec *blk, const char *prefix, KExpr *value) {
  int v = kl_var(c, k, prefix, value->dtype, false);
  kir_let(c->p, blk, v, value);
  return kl_v(c, k, v);
}

Vec *kl_loops(KLower *c, KirKernel *k, Vec *blk, const Type *t, int from, int to, KExpr **iv,
              bool parallel) {
  for (int i = from; i < to; i++) {
    int v = kl_var(c, k, "i", DT_I64, true);
    KStmt *s = kir_for(c->p, blk, v, kl_tdim(c, t, i), parallel);
    iv[i] = kl_v(c, k, v);
    blk = &s->body;
  }
  return blk;
}

KExpr *kl_flat(KLower *c, const Type *t, KExpr **iv) {
  KExpr *e = kl_i(c, 0);
  for (int i = 0; i < t->rank; i++) e = kl_add(c, kl_mul(c, e, kl_tdim(c, t, i)), iv[i]);
  return e;
}

KExpr *kl_bcast(KLower *c, const Type *x, int r, KExpr **iv) {
  KExpr *e = kl_i(c, 0);
  for (int j = 0, i = r - x->rank; j < x->rank; j++, i++) {
    int64_t one;
    bool b1 = dim_is_const(x->dims[j], &one) && one == 1;
    e = kl_add(c, kl_mul(c, e, kl_tdim(c, x, j)), b1 ? kl_i(c, 0) : iv[i]);
  }
  return e;
}

void kl_zero(KLower *c, KirKernel *k, const IrNode *n) {
  int v = kl_var(c, k, "z", DT_I64, true);
  KStmt *s = kir_for(c->p, &k->body, v, kl_prod(c, n->type, 0, n->type->rank), true);
  kl_st(c, &s->body, n, kl_v(c, k, v), kl_f(c, n->type->dtype, 0));
}

// ---- the library's K sum ---------------------------------------------------------------------------
// kernels/gemm_ref.h's blocking as i64 expressions (constants when K is):
//   KC = ceil(K / max(ceil(K / 512), 1))   (0 for K = 0)
//   NB = max(ceil(K / max(KC, 1)), 1)
// Block kb covers p in [kb*KC, min(K, (kb+1)*KC)).
static KExpr *kmax(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_MAX, a, b); }
static KExpr *kmin(KLower *c, KExpr *a, KExpr *b) { return kir_bin(c->p, KB_MIN, a, b); }

static void ksum_blocks(KlKSum *q, Vec *blk, KExpr *K, KExpr *acc, bool fresh, KExpr **out) {
  KLower *c = q->c;
  KExpr *one = kl_i(c, 1), *nb0 = kmax(c, kl_div(c, kl_add(c, K, kl_i(c, MLC_GEMM_KC_MAX - 1)), kl_i(c, MLC_GEMM_KC_MAX)), one);
  KExpr *KC = kl_div(c, kl_sub(c, kl_add(c, K, nb0), one), nb0);
  KExpr *NB = kmax(c, kl_div(c, kl_sub(c, kl_add(c, K, KC), one), kmax(c, KC, one)), one);
  int64_t nb;
  bool single = kir_eval_i64(NB, NULL, &nb) && nb == 1;
  KExpr *kb = NULL;
  Vec *body = blk;
  if (!single) {
    int v = kl_var(c, q->k, "kb", DT_I64, true);
    body = &kir_for(c->p, blk, v, NB, false)->body;
    kb = kl_v(c, q->k, v);
  }
  KExpr *s = let_local(c, q->k, body, "s", kl_f(c, q->dt, 0));
  int v = kl_var(c, q->k, "p", DT_I64, true);
  KExpr *n = single ? K : kmin(c, KC, kl_sub(c, K, kl_mul(c, kb, KC)));
  Vec *in = &kir_for(c->p, body, v, n, false)->body;
  KExpr *p = single ? kl_v(c, q->k, v) : kl_add(c, kl_mul(c, kb, KC), kl_v(c, q->k, v));
  q->step(q, in, p, s);
  if (single && fresh) {
    *out = s;
    return;
  }
  kir_assign(c->p, body, acc->var, kl_add(c, acc, s));
  *out = acc;
}

// The sum of one element: a single block is its chain; more start from -0
// (-0 + s0 is s0 exactly, as the library's first block is C = s0).
KExpr *kl_ksum(KlKSum *q, Vec *blk, KExpr *K) {
  KLower *c = q->c;
  KExpr *out, *one = kl_i(c, 1);
  KExpr *nb0 = kmax(c, kl_div(c, kl_add(c, K, kl_i(c, MLC_GEMM_KC_MAX - 1)), kl_i(c, MLC_GEMM_KC_MAX)), one);
  int64_t nb;
  if (kir_eval_i64(nb0, NULL, &nb) && nb == 1) {
    ksum_blocks(q, blk, K, NULL, true, &out);
    return out;
  }
  KExpr *acc = let_local(c, q->k, blk, "acc", kl_f(c, q->dt, -0.0));
  ksum_blocks(q, blk, K, acc, false, &out);
  return out;
}

void kl_ksum_add(KlKSum *q, Vec *blk, KExpr *K, KExpr *acc) {
  KExpr *out;
  ksum_blocks(q, blk, K, acc, false, &out);
}

// ---- float sums ---------------------------------------------------------------------------------------
// kir.h's order spelled out. With a constant P < 8 the lanes no position
// reaches are left out: each would hold +0, and a lane plus +0 is the lane
// (a lane starts at +0, so it is never -0), so the fold is unchanged.
static void declare_lanes(KLower *c, KirKernel *k, Vec *blk, int n, int *lane) {
  for (int l = 0; l < n; l++) {
    lane[l] = kl_var(c, k, "l", DT_F64, false);
    kir_let(c->p, blk, lane[l], kir_float(c->p, DT_F64, 0));
  }
}

// The chunk loop of a long sum (kl_sum_begin): its body opens with the
// chunk's first position c0 and count len, then the lanes.
static Vec *open_chunks(KLower *c, KirKernel *k, Vec *blk, KlSum *s) {
  KExpr *C = kl_i(c, KL_SUM_CHUNK);
  int64_t pc;
  s->chunked = true;
  s->split = blk == &k->body && kir_eval_i64(s->P, NULL, &pc);
  s->nchunks = kl_div(c, kl_add(c, s->P, kl_i(c, KL_SUM_CHUNK - 1)), C);
  for (int i = 0; i < s->nsums; i++) {
    if (s->split) {
      s->part[i] = kir_buf_add(c->p, KBUF_TEMP, arena_printf(c->p->arena, "%s_part%d", k->name, c->p->bufs.len),
                               DT_F64, 1, &s->nchunks);
      kir_kernel_use(c->p, k, s->part[i]);
    } else {
      declare_lanes(c, k, blk, KL_SUM_LANES, s->comb[i]);
    }
  }
  int v = kl_var(c, k, "c", DT_I64, true);
  s->body = &kir_for(c->p, blk, v, s->nchunks, s->split)->body;
  s->ci = kl_v(c, k, v);
  s->c0 = let_local(c, k, s->body, "c0", kl_mul(c, s->ci, C));
  s->len = let_local(c, k, s->body, "cn", kir_bin(c->p, KB_MIN, kl_sub(c, s->P, s->c0), C));
  return s->body;
}

Vec *kl_sum_begin(KLower *c, KirKernel *k, Vec *blk, KlSum *s, int nsums, KExpr *P) {
  int64_t pc;
  MLC_ASSERT(nsums >= 1 && nsums <= KL_SUM_MAX);
  *s = (KlSum){.nsums = nsums, .P = P, .only = -1};
  bool cst = kir_eval_i64(P, NULL, &pc);
  s->nlanes = cst && pc < KL_SUM_LANES ? (int)(pc > 0 ? pc : 0) : KL_SUM_LANES;
  if (!cst || pc > KL_SUM_CHUNK) blk = open_chunks(c, k, blk, s);
  for (int i = 0; i < nsums; i++) declare_lanes(c, k, blk, s->nlanes, s->lane[i]);
  return blk;
}

// The terms of position p into lane l.
static void sum_position(KLower *c, KirKernel *k, Vec *blk, KlSum *s, KExpr *p, int l, KlTerms terms, void *ctx) {
  KExpr *t[KL_SUM_MAX];
  terms(c, k, blk, p, ctx, t);
  for (int i = 0; i < s->nsums; i++)
    if (s->only < 0 || i == s->only)
      kir_assign(c->p, blk, s->lane[i][l], kl_add(c, kl_v(c, k, s->lane[i][l]), kir_cast(c->p, DT_F64, t[i])));
}

// Positions base + q for q < n into the lanes (lane q mod 8: base is 0 or a
// multiple of 8).
static void sum_run(KLower *c, KirKernel *k, Vec *blk, KlSum *s, KExpr *base, KExpr *n, KlTerms terms, void *ctx) {
  int64_t pc;
  bool cst = kir_eval_i64(n, NULL, &pc);
  KExpr *L = kl_i(c, KL_SUM_LANES), *blocks = kl_div(c, n, L);
  if (cst && pc >= KL_SUM_LANES && pc < 2 * KL_SUM_LANES) { // one block: no loop
    for (int l = 0; l < KL_SUM_LANES; l++) sum_position(c, k, blk, s, kl_add(c, base, kl_i(c, l)), l, terms, ctx);
  } else if (!cst || pc >= KL_SUM_LANES) {
    int b = kl_var(c, k, "b", DT_I64, true);
    Vec *body = &kir_for(c->p, blk, b, blocks, false)->body;
    for (int l = 0; l < KL_SUM_LANES; l++)
      sum_position(c, k, body, s, kl_add(c, base, kl_add(c, kl_mul(c, kl_v(c, k, b), L), kl_i(c, l))), l, terms, ctx);
  }
  KExpr *tail = kl_mul(c, blocks, L);
  int ntail = cst ? (int)(pc > 0 ? pc % KL_SUM_LANES : 0) : KL_SUM_LANES - 1;
  for (int t = 0; t < ntail; t++) {
    KExpr *q = kl_add(c, tail, kl_i(c, t));
    Vec *tb = cst ? blk : &kir_if(c->p, blk, kir_bin(c->p, KB_LT, q, n))->body;
    sum_position(c, k, tb, s, kl_add(c, base, q), t, terms, ctx);
  }
}

void kl_sum_add(KLower *c, KirKernel *k, Vec *blk, KlSum *s, KlTerms terms, void *ctx) {
  if (s->chunked) sum_run(c, k, blk, s, s->c0, s->len, terms, ctx);
  else sum_run(c, k, blk, s, kl_i(c, 0), s->P, terms, ctx);
}

void kl_sum_add_one(KLower *c, KirKernel *k, Vec *blk, KlSum *s, int i, KlTerms terms, void *ctx) {
  s->only = i;
  kl_sum_add(c, k, blk, s, terms, ctx);
  s->only = -1;
}

// The lanes folded in halves into a new f64 local.
static KExpr *fold(KLower *c, KirKernel *k, Vec *blk, const int *lane, int nlanes) {
  KExpr *l[KL_SUM_LANES];
  for (int j = 0; j < KL_SUM_LANES; j++) l[j] = j < nlanes ? kl_v(c, k, lane[j]) : NULL;
  for (int half = KL_SUM_LANES / 2; half >= 1; half /= 2) // l[j] += l[j + half]
    for (int j = 0; j < half; j++)
      if (l[j + half]) l[j] = l[j] ? kl_add(c, l[j], l[j + half]) : l[j + half];
  return let_local(c, k, blk, "sum", l[0] ? l[0] : kir_float(c->p, DT_F64, 0));
}

// The split form's combine: part[i] read as a sum of nchunks positions.
typedef struct PartTerms {
  int part[KL_SUM_MAX];
  int n;
} PartTerms;

static void part_terms(KLower *c, KirKernel *k, Vec *blk, KExpr *p, void *ctx, KExpr **t) {
  (void)k, (void)blk;
  PartTerms *pt = ctx;
  for (int i = 0; i < pt->n; i++) t[i] = kir_load(c->p, pt->part[i], p);
}

// Ends the chunk loop's body and combines the chunks: chunk j's value goes
// to combine lane j mod 8 (in the serial form a select picks the lane: the
// others add +0, which changes no lane, none being -0), the lanes fold.
static void close_chunks(KLower *c, KirKernel *k, Vec *blk, KlSum *s) {
  KExpr *cm = kir_bin(c->p, KB_MOD, s->ci, kl_i(c, KL_SUM_LANES));
  s->closed = true;
  for (int i = 0; i < s->nsums; i++) {
    KExpr *v = fold(c, k, s->body, s->lane[i], s->nlanes);
    if (s->split) {
      kir_store(c->p, s->body, s->part[i], s->ci, v);
      continue;
    }
    for (int l = 0; l < KL_SUM_LANES; l++) {
      KExpr *pick = kir_select(c->p, kir_bin(c->p, KB_EQ, cm, kl_i(c, l)), v, kir_float(c->p, DT_F64, 0));
      kir_assign(c->p, s->body, s->comb[i][l], kl_add(c, kl_v(c, k, s->comb[i][l]), pick));
    }
  }
  if (s->split) { // the chunks' values as a short sum of their own
    PartTerms pt = {.n = s->nsums};
    int64_t nc = s->nchunks->i; // a constant: split sums have a constant count
    KlSum q = {.nsums = s->nsums, .P = s->nchunks, .only = -1, .nlanes = nc < KL_SUM_LANES ? (int)nc : KL_SUM_LANES};
    for (int i = 0; i < s->nsums; i++) {
      pt.part[i] = s->part[i];
      declare_lanes(c, k, blk, q.nlanes, q.lane[i]);
    }
    sum_run(c, k, blk, &q, kl_i(c, 0), s->nchunks, part_terms, &pt);
    for (int i = 0; i < s->nsums; i++) s->sum[i] = fold(c, k, blk, q.lane[i], q.nlanes)->var;
    return;
  }
  for (int i = 0; i < s->nsums; i++) s->sum[i] = fold(c, k, blk, s->comb[i], KL_SUM_LANES)->var;
}

KExpr *kl_sum_value(KLower *c, KirKernel *k, Vec *blk, KlSum *s, int i) {
  if (!s->chunked) return fold(c, k, blk, s->lane[i], s->nlanes);
  if (!s->closed) close_chunks(c, k, blk, s);
  return kl_v(c, k, s->sum[i]);
}

// ---- elementwise ------------------------------------------------------------------------------------
// Formulas come from the one scalar table (graph/scalar.h), built here as
// KExpr trees: constants in the operands' dtype, primitives as kernel IR ops.
typedef struct KBuild {
  ScBuilder b;
  KLower *c;
  DType dt;
} KBuild;

static ScVal kb_konst(ScBuilder *b, double v) {
  KBuild *k = (KBuild *)b;
  return (ScVal){.p = kl_f(k->c, k->dt, v)};
}

static ScVal kb_prim(ScBuilder *b, ScPrim op, const ScVal *a) {
  static const KUnOp un[SCP_COUNT] = {[SCP_NEG] = KU_NEG, [SCP_NOT] = KU_NOT, [SCP_ABS] = KU_ABS,
                                      [SCP_EXP] = KU_EXP, [SCP_LOG] = KU_LOG, [SCP_LOG1P] = KU_LOG1P,
                                      [SCP_SQRT] = KU_SQRT, [SCP_TANH] = KU_TANH, [SCP_ERF] = KU_ERF,
                                      [SCP_COS] = KU_COS};
  static const KBinOp bin[SCP_COUNT] = {
      [SCP_ADD] = KB_ADD, [SCP_SUB] = KB_SUB, [SCP_MUL] = KB_MUL, [SCP_DIV] = KB_DIV, [SCP_POW] = KB_POW,
      [SCP_MAX] = KB_MAX, [SCP_MIN] = KB_MIN, [SCP_LT] = KB_LT,   [SCP_LE] = KB_LE,   [SCP_GT] = KB_GT,
      [SCP_GE] = KB_GE,   [SCP_EQ] = KB_EQ,   [SCP_NE] = KB_NE,   [SCP_AND] = KB_AND, [SCP_OR] = KB_OR};
  KirProgram *p = ((KBuild *)b)->c->p;
  switch (sc_prim_arity(op)) {
  case 1: return (ScVal){.p = kir_un(p, un[op], a[0].p)};
  case 2: return (ScVal){.p = kir_bin(p, bin[op], a[0].p, a[1].p)};
  default: return (ScVal){.p = kir_select(p, a[0].p, a[1].p, a[2].p)};
  }
}

// The node's formula over its operands' values v[]; NULL if it has none.
static KExpr *elementwise_expr(KLower *c, const IrNode *n, KExpr **v) {
  const ScOp *op = sc_op(n->op);
  if (!op) return NULL;
  KBuild k = {{kb_konst, kb_prim, NULL}, c, v[n->op == IR_WHERE ? 1 : 0]->dtype};
  ScVal x[SC_MAX_IN];
  double params[SC_MAX_PARAMS];
  for (int i = 0; i < op->nin; i++) x[i].p = v[i];
  sc_params(n, params);
  return op->fwd(&k.b, x, params).p;
}

// unary/binary/compare/logical/where/(dy, saved) grads: out[i..] =
// f(operands broadcast to i..).
static bool lower_elementwise(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  KExpr *iv[KL_MAX_RANK], *v[3];
  const Type *t = n->type;
  Vec *blk = kl_loops(c, k, &k->body, t, 0, t->rank, iv, true);
  for (int i = 0; i < n->nin; i++) v[i] = kl_ld(c, n->in[i], kl_bcast(c, n->in[i]->type, t->rank, iv));
  KExpr *r = elementwise_expr(c, n, v);
  if (!r) return kl_fail(c, n, "no elementwise form"), false;
  if (n->op == IR_DIV && dtype_is_int(v[0]->dtype))
    kir_check(c->p, blk, kir_bin(c->p, KB_NE, v[1], kl_f(c, v[1]->dtype, 0)), "integer division by zero");
  kl_st(c, blk, n, kl_flat(c, t, iv), r);
  return true;
}

// ---- constants and casts --------------------------------------------------------------------------------
// const: every element = value; arange: the flat index; causal_mask:
// [i, j] = j <= i.
static bool lower_const(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  KExpr *iv[KL_MAX_RANK];
  const Type *t = n->type;
  Vec *blk = kl_loops(c, k, &k->body, t, 0, t->rank, iv, true);
  KExpr *flat = kl_flat(c, t, iv), *v;
  if (n->op == IR_CONST) v = kl_f(c, t->dtype, kl_attr_f(n, IRA_VALUE));
  else if (n->op == IR_ARANGE) v = flat;
  else if (t->rank == 2) v = kir_bin(c->p, KB_LE, iv[1], iv[0]);
  else v = kir_bin(c->p, KB_LE, flat, kl_i(c, 0)); // rank < 2: T = 1
  kl_st(c, blk, n, flat, v);
  return true;
}

// cast: float -> int truncates (kir cast semantics match interp's convert)
static bool lower_cast(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, "cast");
  KExpr *iv[KL_MAX_RANK];
  Vec *blk = kl_loops(c, k, &k->body, n->type, 0, n->type->rank, iv, true);
  KExpr *flat = kl_flat(c, n->type, iv);
  kl_st(c, blk, n, flat, kl_ld(c, n->in[0], flat));
  return true;
}

// ---- reductions -------------------------------------------------------------------------------------------
// The lowest value of dt (the max reduction's start).
static KExpr *lowest(KLower *c, DType dt) {
  if (dtype_is_float(dt)) return kl_f(c, dt, -INFINITY);
  if (dt == DT_I32) return kir_int(c->p, dt, INT32_MIN);
  if (dt == DT_I64) return kir_int(c->p, dt, INT64_MIN);
  return kir_int(c->p, dt, 0);
}

static KExpr *highest(KLower *c, DType dt) {
  if (dtype_is_float(dt)) return kl_f(c, dt, INFINITY);
  if (dt == DT_I32) return kir_int(c->p, dt, INT32_MAX);
  if (dt == DT_I64) return kir_int(c->p, dt, INT64_MAX);
  return kir_int(c->p, dt, 1);
}

// The innermost group of the dims red[] marks (kir.h, "Float sums"): the
// last reduced dim and the reduced dims right before it, [*first, *last];
// -1, -1 when none is. The interpreter decides it the same way.
static void sum_group(const bool *red, int rank, int *first, int *last) {
  *last = -1;
  for (int i = 0; i < rank; i++)
    if (red[i]) *last = i;
  *first = *last;
  while (*first > 0 && red[*first - 1]) --*first;
}

typedef struct ReduceTerm {
  const IrNode *x;
  KExpr *base, *stride; // x's offset at position 0 of the group, and per position
  DType od;
} ReduceTerm;

static KExpr *prologue_value(KLower *c, KirKernel *k, Vec *blk, const IrNode *x, KExpr *off);

static void reduce_term(KLower *c, KirKernel *k, Vec *blk, KExpr *p, void *ctx, KExpr **t) {
  ReduceTerm *r = ctx;
  KExpr *off = kl_add(c, r->base, kl_mul(c, p, r->stride));
  t[0] = kir_cast(c->p, r->od, c->npro ? prologue_value(c, k, blk, r->x, off) : kl_ld(c, r->x, off));
}

// The float sum of x over the dims red[] marks, at the output element blk
// is inside (iv[] holds x's index in every dim not reduced), stored at
// out (divided by the count first for a mean): the lanes, the outer reduced
// dims as loops in input order, then the innermost group as one loop over
// its row-major position, whose offset is linear (its dims are adjacent).
static void float_sum(KLower *c, KirKernel *k, Vec *blk, IrNode *n, const IrNode *x, const bool *red, KExpr **iv,
                      KExpr *out) {
  const Type *xt = x->type;
  int g0, g1;
  sum_group(red, xt->rank, &g0, &g1);
  KExpr *P = g1 < 0 ? kl_i(c, 1) : kl_prod(c, xt, g0, g1 + 1), *count = kl_i(c, 1);
  KlSum s;
  Vec *in = kl_sum_begin(c, k, blk, &s, 1, P);
  for (int i = 0; i < xt->rank; i++) {
    if (!red[i]) continue;
    count = kl_mul(c, count, kl_tdim(c, xt, i));
    if (i >= g0) {
      iv[i] = kl_i(c, 0);
      continue;
    }
    int v = kl_var(c, k, "r", DT_I64, true);
    in = &kir_for(c->p, in, v, kl_tdim(c, xt, i), false)->body;
    iv[i] = kl_v(c, k, v);
  }
  ReduceTerm rt = {x, kl_flat(c, xt, iv), g1 < 0 ? kl_i(c, 0) : kl_prod(c, xt, g1 + 1, xt->rank), n->type->dtype};
  c->pro_iv = iv; // a prologue's broadcast operands: indexed by the kept dims
  kl_sum_add(c, k, in, &s, reduce_term, &rt);
  c->pro_iv = NULL;
  KExpr *v = kl_sum_value(c, k, blk, &s, 0);
  if (n->op == IR_MEAN) v = kl_div(c, v, kir_cast(c->p, DT_F64, count));
  kl_st(c, blk, n, out, v);
}

// A float sum or mean over every dim but one middle dim d, x [R.., C,
// S..] -> C values (a batch norm's statistics and its gradient's sums over
// NCHW: dims 0, 2, 3): each task sums `chans` adjacent channels together
// (chans sums of kl_sum_*), each outer index (an image) reading their
// chans planes side by side, where one channel per task reads one plane
// per image, a short run (1 KiB for a 16 x 16 plane) 64 KiB from the next
// one that the hardware prefetchers pick up too late (such a sum ran at
// ~2.5 GB/s). Per outer index the channels' position loops run one after
// the other (kl_sum_add_one), so each reads a contiguous plane and
// vectorises along it, and the task reads chans planes in a row. Each
// output's sum is still kir.h's order (positions of the S.. group into its
// own lanes, outer indices in order around them): the bits of one channel
// per task. chans is 8 for C >= 64 (8 tasks or more), else 4; C a constant
// multiple of it. CPU programs only (reduce_cols).
typedef struct ChanTerms {
  const IrNode *x;
  KExpr *base, *j0, *S; // x's offset of (outer index, channel 0); the task's first channel; S.. elements
  int chans;
  DType od;
  KExpr **iv;           // per dim: the outer indices, 0 for the S.. group; dim d set per term
  int d;
  int only;             // the channel whose term is made
} ChanTerms;

// The term of channel j0 + only alone (kl_sum_add_one reads no other).
static void chan_terms(KLower *c, KirKernel *k, Vec *blk, KExpr *p, void *ctx, KExpr **t) {
  ChanTerms *r = ctx;
  for (int i = 0; i < r->chans; i++) t[i] = NULL;
  KExpr *ch = kl_add(c, r->j0, kl_i(c, r->only));
  KExpr *off = kl_add(c, kl_add(c, r->base, kl_mul(c, ch, r->S)), p);
  r->iv[r->d] = ch;
  c->pro_iv = r->iv;
  t[r->only] = kir_cast(c->p, r->od, c->npro ? prologue_value(c, k, blk, r->x, off) : kl_ld(c, r->x, off));
  c->pro_iv = NULL;
}

static bool reduce_chans(KLower *c, KirKernel *k, IrNode *n, const bool *red) {
  const IrNode *x = n->in[0];
  const Type *xt = x->type;
  int d = -1;
  for (int i = 0; i < xt->rank; i++)
    if (!red[i]) {
      if (d >= 0) return false;
      d = i;
    }
  int64_t C;
  if (d < 1 || d >= xt->rank - 1 || !dim_is_const(xt->dims[d], &C)) return false;
  int chans = C >= 64 && C % 8 == 0 ? 8 : 4;
  if (C % chans || C < 2 * chans) return false;
  int v = kl_var(c, k, "i", DT_I64, true);
  Vec *blk = &kir_for(c->p, &k->body, v, kl_i(c, C / chans), true)->body;
  KExpr *j0 = kl_mul(c, kl_v(c, k, v), kl_i(c, chans)), *S = kl_prod(c, xt, d + 1, xt->rank);
  KExpr *iv[KL_MAX_RANK], *outer = kl_i(c, 0), *count = S;
  KlSum s;
  Vec *in = kl_sum_begin(c, k, blk, &s, chans, S);
  for (int i = 0; i < d; i++) {
    int r = kl_var(c, k, "r", DT_I64, true);
    in = &kir_for(c->p, in, r, kl_tdim(c, xt, i), false)->body;
    iv[i] = kl_v(c, k, r);
    outer = kl_add(c, kl_mul(c, outer, kl_tdim(c, xt, i)), iv[i]);
    count = kl_mul(c, count, kl_tdim(c, xt, i));
  }
  for (int i = d + 1; i < xt->rank; i++) iv[i] = kl_i(c, 0);
  ChanTerms ct = {x, kl_mul(c, kl_mul(c, outer, kl_i(c, C)), S), j0, S, chans, n->type->dtype, iv, d, 0};
  for (ct.only = 0; ct.only < chans; ct.only++) kl_sum_add_one(c, k, in, &s, ct.only, chan_terms, &ct);
  for (int i = 0; i < chans; i++) {
    KExpr *val = kl_sum_value(c, k, blk, &s, i);
    if (n->op == IR_MEAN) val = kl_div(c, val, kir_cast(c->p, DT_F64, count));
    kl_st(c, blk, n, kl_add(c, j0, kl_i(c, i)), val);
  }
  return true;
}

// sum/mean/max/min/argmax {dims, keepdim}: one output element per kept
// index. Float sums and means: float_sum (kir.h's order). The others: the
// reduced dims are inner loops in input order (the interpreter's order;
// integer sums wrap, so any order gives the same). argmax counts the flat
// index over the reduced dims and keeps the first maximum (NaN counts as
// the largest).
static bool lower_reduce(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const IrNode *x = n->in[0];
  const Type *xt = x->type;
  int nd = 0;
  const int64_t *dims = ir_attr_ints(&n->attrs, IRA_DIMS, &nd);
  bool red[KL_MAX_RANK] = {0};
  for (int i = 0; i < nd; i++) red[dims[i]] = true;
  if (c->reduce_cols && (n->op == IR_SUM || n->op == IR_MEAN) && dtype_is_float(xt->dtype) &&
      dtype_is_float(n->type->dtype) && reduce_chans(c, k, n, red))
    return true;
  KExpr *iv[KL_MAX_RANK], *ov[KL_MAX_RANK];
  Vec *blk = &k->body;
  int r = 0;
  bool keep = kl_attr_i(n, IRA_KEEPDIM) != 0;
  for (int i = 0; i < xt->rank; i++) {
    if (red[i]) {
      if (keep) ov[r++] = kl_i(c, 0);
      continue;
    }
    int v = kl_var(c, k, "i", DT_I64, true);
    blk = &kir_for(c->p, blk, v, kl_tdim(c, xt, i), true)->body;
    iv[i] = ov[r++] = kl_v(c, k, v);
  }
  DType xd = xt->dtype, od = n->type->dtype;
  if ((n->op == IR_SUM || n->op == IR_MEAN) && dtype_is_float(xd) && dtype_is_float(od)) {
    float_sum(c, k, blk, n, x, red, iv, kl_flat(c, n->type, ov));
    return true;
  }
  bool am = n->op == IR_ARGMAX;
  int acc = kl_var(c, k, am ? "best" : "acc", am ? xd : od, false);
  int arg = am ? kl_var(c, k, "arg", DT_I64, false) : -1;
  KExpr *init = n->op == IR_MAX ? lowest(c, od) : n->op == IR_MIN ? highest(c, od) : kl_f(c, am ? xd : od, 0);
  kir_let(c->p, blk, acc, init);
  if (am) kir_let(c->p, blk, arg, kl_i(c, 0));
  Vec *inner = blk;
  KExpr *kflat = kl_i(c, 0), *count = kl_i(c, 1);
  for (int i = 0; i < xt->rank; i++) {
    if (!red[i]) continue;
    int v = kl_var(c, k, "r", DT_I64, true);
    inner = &kir_for(c->p, inner, v, kl_tdim(c, xt, i), false)->body;
    iv[i] = kl_v(c, k, v);
    kflat = kl_add(c, kl_mul(c, kflat, kl_tdim(c, xt, i)), iv[i]);
    count = kl_mul(c, count, kl_tdim(c, xt, i));
  }
  KExpr *val = kl_ld(c, x, kl_flat(c, xt, iv)), *a = kl_v(c, k, acc);
  if (am) {
    KExpr *better = kir_bin(c->p, KB_AND, kir_un(c->p, KU_NOT, kl_isnan(c, a)),
                            kir_bin(c->p, KB_OR, kir_bin(c->p, KB_GT, val, a), kl_isnan(c, val)));
    KStmt *s = kir_if(c->p, inner, kir_bin(c->p, KB_OR, kir_bin(c->p, KB_EQ, kflat, kl_i(c, 0)), better));
    kir_assign(c->p, &s->body, acc, val);
    kir_assign(c->p, &s->body, arg, kflat);
  } else {
    KBinOp op = n->op == IR_MAX ? KB_MAX : n->op == IR_MIN ? KB_MIN : KB_ADD;
    kir_assign(c->p, inner, acc, kir_bin(c->p, op, a, kir_cast(c->p, od, val)));
  }
  KExpr *res = am ? kl_v(c, k, arg) : a;
  if (n->op == IR_MEAN) res = kl_div(c, a, kir_cast(c->p, od, count));
  kl_st(c, blk, n, kl_flat(c, n->type, ov), res);
  return true;
}

// A float reduce_to whose reduced dims are a prefix of x's, x [R.., C..] ->
// [C..] with C (the kept dims' product) a constant multiple of 8 (a bias's
// gradient over the batch): each task sums `cols` adjacent outputs over the
// same positions together (cols sums of kl_sum_*), so every position reads
// cols adjacent floats of a row instead of one float per row cols apart,
// and the CPU's vectoriser can pack the columns' lanes. cols is 16 (a
// 64-byte line of the row) when that still leaves 8 tasks or more (C >=
// 128), else 8: 16 reads each line once where 8 reads half of it per task
// (char_transformer's 256-wide bias sums 3.9 % -> 2.0 % of its profile),
// and 8 tasks keep threads busy for narrow biases. Each output's sum is
// still kir.h's order (its own lanes, chunks and fold): the bits of one
// output per task.
enum { KL_COLS_MIN = 8, KL_COLS_MAX = KL_SUM_MAX };

typedef struct ColTerms {
  const IrNode *x;
  KExpr *j0; // the task's first output (and column of x)
  int64_t C;
  int cols;
  DType od;
} ColTerms;

static void col_terms(KLower *c, KirKernel *k, Vec *blk, KExpr *p, void *ctx, KExpr **t) {
  ColTerms *r = ctx;
  for (int i = 0; i < r->cols; i++) {
    KExpr *off = kl_add(c, kl_mul(c, p, kl_i(c, r->C)), kl_add(c, r->j0, kl_i(c, i)));
    t[i] = kir_cast(c->p, r->od, c->npro ? prologue_value(c, k, blk, r->x, off) : kl_ld(c, r->x, off));
  }
}

static bool reduce_to_cols(KLower *c, KirKernel *k, IrNode *n, const bool *red) {
  const Type *xt = n->in[0]->type;
  int f = 0;
  int64_t C = 1, d;
  while (f < xt->rank && red[f]) f++;
  for (int j = f; j < xt->rank; j++) {
    if (red[j] || !dim_is_const(xt->dims[j], &d)) return false;
    C *= d;
  }
  if (f < 1 || C % KL_COLS_MIN || C < 2 * KL_COLS_MIN) return false;
  int cols = C % KL_COLS_MAX == 0 && C >= 8 * KL_COLS_MAX ? KL_COLS_MAX : KL_COLS_MIN;
  int v = kl_var(c, k, "i", DT_I64, true);
  Vec *blk = &kir_for(c->p, &k->body, v, kl_i(c, C / cols), true)->body;
  KExpr *j0 = kl_mul(c, kl_v(c, k, v), kl_i(c, cols));
  KlSum s;
  Vec *in = kl_sum_begin(c, k, blk, &s, cols, kl_prod(c, xt, 0, f));
  ColTerms ct = {n->in[0], j0, C, cols, n->type->dtype};
  kl_sum_add(c, k, in, &s, col_terms, &ct);
  for (int i = 0; i < cols; i++) kl_st(c, blk, n, kl_add(c, j0, kl_i(c, i)), kl_sum_value(c, k, blk, &s, i));
  return true;
}

// reduce_to: x[..] -> the type's shape, summing the leading dims the type
// lacks and the dims where it has 1 (statically: not where both have 1).
// Floats: float_sum (by columns where reduce_to_cols applies); integers:
// inner loops in input order.
static bool lower_reduce_to(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, "reduce_to");
  const Type *xt = n->in[0]->type, *t = n->type;
  KExpr *ov[KL_MAX_RANK], *iv[KL_MAX_RANK];
  int lead = xt->rank - t->rank;
  bool red[KL_MAX_RANK] = {0};
  for (int j = 0; j < xt->rank; j++) {
    int64_t one;
    red[j] = j < lead || (dim_is_const(t->dims[j - lead], &one) && one == 1 &&
                          !(dim_is_const(xt->dims[j], &one) && one == 1));
  }
  if (c->reduce_cols && dtype_is_float(xt->dtype) && dtype_is_float(t->dtype) && reduce_to_cols(c, k, n, red))
    return true;
  Vec *blk = kl_loops(c, k, &k->body, t, 0, t->rank, ov, true);
  for (int j = 0; j < xt->rank; j++)
    if (!red[j]) iv[j] = ov[j - lead];
  if (dtype_is_float(xt->dtype) && dtype_is_float(t->dtype)) {
    float_sum(c, k, blk, n, n->in[0], red, iv, kl_flat(c, t, ov));
    // A conv bias's gradient (dy [N, O, H, W] summed over n, h, w): the cpu
    // schedule may fold it into the conv2d_grad_weight call reading that dy.
    if (xt->dtype == DT_F32 && t->dtype == DT_F32 && xt->rank == 4 && red[0] && !red[1] && red[2] && red[3])
      kl_op(c, k, KOP_CONV_BIAS_GRAD, (IrNode *[]){n->in[0], n}, 2, NULL);
    return true;
  }
  int acc = kl_var(c, k, "acc", t->dtype, false);
  kir_let(c->p, blk, acc, kl_f(c, t->dtype, 0));
  Vec *inner = blk;
  for (int j = 0; j < xt->rank; j++) {
    if (!red[j]) continue;
    int v = kl_var(c, k, "r", DT_I64, true);
    inner = &kir_for(c->p, inner, v, kl_tdim(c, xt, j), false)->body;
    iv[j] = kl_v(c, k, v);
  }
  kir_assign(c->p, inner, acc, kl_add(c, kl_v(c, k, acc), kl_ld(c, n->in[0], kl_flat(c, xt, iv))));
  kl_st(c, blk, n, kl_flat(c, t, ov), kl_v(c, k, acc));
  return true;
}

// softmax/log_softmax {dim} and their grads: per line along dim, the
// interpreter's three passes (max, sum of exp, write) or two (sum, write);
// the sums in kir.h's order over the position along dim, rounded once.
typedef struct LineTerm {
  const IrNode *n, *x;
  KExpr *base, *stride, *mx;
  bool store;  // line_lanes' softmax: each exp also goes to the output
} LineTerm;

static void line_term(KLower *c, KirKernel *k, Vec *blk, KExpr *p, void *ctx, KExpr **t) {
  LineTerm *l = ctx;
  KExpr *off = kl_add(c, l->base, kl_mul(c, p, l->stride)), *xv = kl_ld(c, l->x, off);
  if (l->n->op == IR_SOFTMAX_GRAD) t[0] = kl_mul(c, kl_ld(c, l->n->in[0], off), xv);
  else if (l->n->op == IR_LOG_SOFTMAX_GRAD) t[0] = kl_ld(c, l->n->in[0], off);
  else t[0] = kir_un(c->p, KU_EXP, kl_sub(c, xv, l->mx));
  if (l->store) { // the exp, kept in the output for the last pass
    t[0] = let_local(c, k, blk, "e", t[0]);
    kl_st(c, blk, l->n, off, t[0]);
  }
}

// m = x when x > m or x is NaN: the interpreter's max, NaN-sticky.
static KExpr *max_step(KLower *c, KExpr *m, KExpr *x) {
  return kir_select(c->p, kir_bin(c->p, KB_OR, kir_bin(c->p, KB_GT, x, m), kl_isnan(c, x)), x, m);
}

KExpr *kl_line_max(KLower *c, KirKernel *k, Vec *blk, const IrNode *x, KExpr *base, KExpr *stride, KExpr *P) {
  DType dt = x->type->dtype;
  KExpr *lane[KL_SUM_LANES];
  int nl = c->line_lanes ? KL_SUM_LANES : 1;
  for (int l = 0; l < nl; l++) lane[l] = let_local(c, k, blk, "mx", kl_f(c, dt, -INFINITY));
  int v = kl_var(c, k, "k", DT_I64, true);
  Vec *in = &kir_for(c->p, blk, v, nl == 1 ? P : kl_div(c, P, kl_i(c, nl)), false)->body;
  for (int l = 0; l < nl; l++) {
    KExpr *p = nl == 1 ? kl_v(c, k, v) : kl_add(c, kl_mul(c, kl_v(c, k, v), kl_i(c, nl)), kl_i(c, l));
    kir_assign(c->p, in, lane[l]->var, max_step(c, lane[l], kl_ld(c, x, kl_add(c, base, kl_mul(c, p, stride)))));
  }
  if (nl == 1) return lane[0];
  int64_t pc;
  bool cst = kir_eval_i64(P, NULL, &pc);
  KExpr *tail = kl_mul(c, kl_div(c, P, kl_i(c, nl)), kl_i(c, nl));
  for (int l = 0; l < (cst ? (int)(pc > 0 ? pc % nl : 0) : nl - 1); l++) {
    KExpr *q = kl_add(c, tail, kl_i(c, l));
    Vec *tb = cst ? blk : &kir_if(c->p, blk, kir_bin(c->p, KB_LT, q, P))->body;
    kir_assign(c->p, tb, lane[l]->var, max_step(c, lane[l], kl_ld(c, x, kl_add(c, base, kl_mul(c, q, stride)))));
  }
  for (int half = nl / 2; half >= 1; half /= 2)
    for (int j = 0; j < half; j++) kir_assign(c->p, blk, lane[j]->var, max_step(c, lane[j], lane[j + half]));
  return lane[0];
}

static bool lower_normalize(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const IrNode *x = n->in[n->nin - 1];
  const Type *t = x->type;
  int d = (int)kl_attr_i(n, IRA_DIM);
  DType dt = t->dtype;
  KExpr *iv[KL_MAX_RANK];
  Vec *blk = &k->body;
  for (int i = 0; i < t->rank; i++) {
    if (i == d) continue;
    int v = kl_var(c, k, "i", DT_I64, true);
    blk = &kir_for(c->p, blk, v, kl_tdim(c, t, i), true)->body;
    iv[i] = kl_v(c, k, v);
  }
  bool grad = n->op == IR_SOFTMAX_GRAD || n->op == IR_LOG_SOFTMAX_GRAD;
  iv[d] = kl_i(c, 0);
  KExpr *base = kl_flat(c, t, iv), *stride = kl_prod(c, t, d + 1, t->rank);
  KExpr *mx = grad ? NULL : kl_line_max(c, k, blk, x, base, stride, kl_tdim(c, t, d));
  LineTerm lt = {n, x, base, stride, mx,
                 c->line_lanes && n->op == IR_SOFTMAX && n->type->dtype == dt && (dt == DT_F32 || dt == DT_F64)};
  KlSum sum;
  kl_sum_add(c, k, kl_sum_begin(c, k, blk, &sum, 1, kl_tdim(c, t, d)), &sum, line_term, &lt);
  int sv = kl_var(c, k, "s", dt, false);
  kir_let(c->p, blk, sv, kir_cast(c->p, dt, kl_sum_value(c, k, blk, &sum, 0)));
  KExpr *S = kl_v(c, k, sv);
  int v = kl_var(c, k, "k", DT_I64, true);
  Vec *in = &kir_for(c->p, blk, v, kl_tdim(c, t, d), false)->body;
  iv[d] = kl_v(c, k, v);
  KExpr *off = kl_flat(c, t, iv), *xv = kl_ld(c, x, off);
  if (grad) {
    KExpr *dy = kl_ld(c, n->in[0], off);
    kl_st(c, in, n, off,
          n->op == IR_SOFTMAX_GRAD ? kl_mul(c, xv, kl_sub(c, dy, S))
                                   : kl_sub(c, dy, kl_mul(c, kir_un(c->p, KU_EXP, xv), S)));
  } else {
    KExpr *z = kl_sub(c, xv, lt.mx);
    kl_st(c, in, n, off, lt.store ? kl_div(c, kl_ld(c, n, off), S)
                         : n->op == IR_SOFTMAX ? kl_div(c, kir_un(c->p, KU_EXP, z), S)
                                               : kl_sub(c, z, kir_un(c->p, KU_LOG, S)));
  }
  return true;
}

// ---- views ----------------------------------------------------------------------------------------------
// transpose {perm}: out[i..] = x[i at perm positions]; slice {dim, start,
// step}: x index start + i*step along dim; broadcast_to: broadcast load.
static bool lower_view(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const Type *t = n->type, *xt = n->in[0]->type;
  KExpr *iv[KL_MAX_RANK], *xv[KL_MAX_RANK], *src;
  Vec *blk = kl_loops(c, k, &k->body, t, 0, t->rank, iv, true);
  if (n->op == IR_TRANSPOSE) {
    const int64_t *perm = kl_attr_ints(n, IRA_PERM);
    for (int i = 0; i < t->rank; i++) xv[perm[i]] = iv[i];
    src = kl_flat(c, xt, xv);
  } else if (n->op == IR_SLICE) {
    int d = (int)kl_attr_i(n, IRA_DIM);
    for (int i = 0; i < t->rank; i++) xv[i] = iv[i];
    xv[d] = kl_add(c, kl_i(c, kl_attr_i(n, IRA_START)), kl_mul(c, iv[d], kl_i(c, kl_attr_i(n, IRA_STEP))));
    src = kl_flat(c, xt, xv);
  } else {
    src = kl_bcast(c, xt, t->rank, iv);
  }
  kl_st(c, blk, n, kl_flat(c, t, iv), kl_ld(c, n->in[0], src));
  return true;
}

// concat {dim}: one loop nest per operand, writing at its offset along dim.
static bool lower_concat(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, "concat");
  int d = (int)kl_attr_i(n, IRA_DIM);
  KExpr *at = kl_i(c, 0);
  for (int j = 0; j < n->nin; j++) {
    const Type *xt = n->in[j]->type;
    KExpr *iv[KL_MAX_RANK], *ov[KL_MAX_RANK];
    Vec *blk = kl_loops(c, k, &k->body, xt, 0, xt->rank, iv, true);
    for (int i = 0; i < xt->rank; i++) ov[i] = i == d ? kl_add(c, at, iv[i]) : iv[i];
    kl_st(c, blk, n, kl_flat(c, n->type, ov), kl_ld(c, n->in[j], kl_flat(c, xt, iv)));
    at = kl_add(c, at, kl_tdim(c, xt, d));
  }
  return true;
}

// ---- views ---------------------------------------------------------------------------------------------
// A transpose whose every reader is a matmul operand (or another such
// transpose) is not materialised: it is "elided", and each matmul reads its
// source through permuted strides, which the schedule turns into a GEMM's
// transpose flags and leading dimensions (or the canonical nest indexes).
// A matmul whose one reader is a transpose writes straight into that
// transpose's buffer, again through permuted strides (dW = (x^T dy)^T).
// Only matmuls see strides; reshape, an alias, needs a row-major buffer, so
// a transpose read by one is materialised.
static bool is_result(const KLower *c, const IrNode *n) {
  for (int i = 0; i < c->f->outputs.len; i++)
    if (VEC_AT(c->f->outputs, IrNode, i) == n) return true;
  return false;
}

static int slot_of(const KLower *c, const IrNode *n) { return n->order + c->nparams; }

// Readers of every body node, as counts: by matmul operands, by elided
// transposes, by anything else; results and stores count as other readers.
static void plan_epilogues(KLower *c, const int *users, IrNode *const *last);

static void plan_views(KLower *c, bool epilogues) {
  IrFunc *f = c->f;
  int total = f->params.len + f->nodes.len + 1;
  int *other = arena_alloc(c->p->arena, sizeof(int) * (size_t)total);
  int *users = arena_alloc(c->p->arena, sizeof(int) * (size_t)total);
  IrNode **last = arena_alloc(c->p->arena, sizeof(IrNode *) * (size_t)total);
  c->elided = arena_alloc(c->p->arena, (size_t)total);
  c->placed = arena_alloc(c->p->arena, (size_t)total);
  c->into = arena_alloc(c->p->arena, sizeof(IrNode *) * (size_t)total);
  c->epi_end = arena_alloc(c->p->arena, sizeof(IrNode *) * (size_t)total);
  c->epi_of = arena_alloc(c->p->arena, sizeof(IrNode *) * (size_t)total);
  for (int i = 0; i < f->outputs.len; i++) other[slot_of(c, VEC_AT(f->outputs, IrNode, i))]++;
  // Readers come after what they read: walking backwards, a transpose's
  // readers are settled before it.
  for (int i = f->nodes.len - 1; i >= 0; i--) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    int me = slot_of(c, n);
    c->elided[me] = n->op == IR_TRANSPOSE && !other[me] && users[me] > 0;
    for (int j = 0; j < n->nin; j++) {
      int s = slot_of(c, n->in[j]);
      users[s]++, last[s] = n;
      bool view_reader = ir_op_class(n->op) == IRC_MATMUL || (n->op == IR_TRANSPOSE && c->elided[me]);
      if (!view_reader) other[s]++;
    }
  }
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    int me = slot_of(c, n);
    if (ir_op_class(n->op) == IRC_MATMUL && users[me] == 1 && last[me]->op == IR_TRANSPOSE &&
        !c->elided[slot_of(c, last[me])] && !is_result(c, n))
      c->into[me] = last[me];
  }
  if (epilogues) plan_epilogues(c, users, last);
}

// The view of value n: its buffer, row-major; through an elided transpose,
// the source's view permuted (out dim i is source dim perm[i]).
static KlView view_of(KLower *c, const IrNode *n) {
  KlView v;
  if (c->elided[slot_of(c, n)]) {
    KlView s = view_of(c, n->in[0]);
    const int64_t *perm = kl_attr_ints(n, IRA_PERM);
    v = s;
    for (int i = 0; i < s.rank; i++) v.dims[i] = s.dims[perm[i]], v.strides[i] = s.strides[perm[i]];
    return v;
  }
  const Type *t = n->type;
  v.buf = kl_buf(c, n), v.rank = t->rank;
  KExpr *st = kl_i(c, 1);
  for (int i = t->rank - 1; i >= 0; i--) {
    v.dims[i] = kl_tdim(c, t, i), v.strides[i] = st;
    st = kl_mul(c, st, v.dims[i]);
  }
  return v;
}

// Where matmul n writes: its own buffer, or the transpose it feeds with the
// transpose's strides moved back (matmul dim perm[i] is transpose dim i).
static KlView out_view(KLower *c, const IrNode *n) {
  IrNode *t = c->into[slot_of(c, n)];
  if (!t) return view_of(c, n);
  KlView tv = view_of(c, t), v = tv;
  const int64_t *perm = kl_attr_ints(t, IRA_PERM);
  for (int i = 0; i < tv.rank; i++) v.dims[perm[i]] = tv.dims[i], v.strides[perm[i]] = tv.strides[i];
  return v;
}

// ---- matmul epilogues --------------------------------------------------------------------------------------
// An elementwise op that is the only reader of a row-major matmul result
// folds into the matmul's kernel (kir.h, the matmul_* op kinds; the kernel
// library's epilogue flags): a bias add (an operand [N] along the last
// dim), a residual add (an operand of the result's type), a relu after
// either or alone, or relu_grad(matmul, x) (the mask of an incoming
// gradient). The chain's last op owns the buffer; the matmul's kernel
// applies each op's own formula after the K sum, so results are the
// separate kernels' bit for bit. Not in checked programs (each op keeps
// its finite check there). max_pool2d_grad takes relu_grad(pool_grad, x)
// the same way (max_pool2d_grad_relu_mask: the mask after the scatter),
// and batch_norm a relu, or a residual add and a relu after it (the
// normalised value is then never stored: relu's gradient reads relu's
// output, batch_norm_grad the input x).
typedef enum { EPI_NONE, EPI_BIAS, EPI_RESIDUAL, EPI_RELU, EPI_RELU_MASK } EpiKind;

// The one reader of n when n has exactly one (and is no result), else NULL.
static IrNode *only_reader(const KLower *c, const int *users, IrNode *const *last, const IrNode *n) {
  int me = slot_of(c, n);
  return users[me] == 1 && !is_result(c, n) ? last[me] : NULL;
}

// The operand of e that is not v (NULL when both are v).
static IrNode *other_in(const IrNode *e, const IrNode *v) {
  if (e->nin != 2 || (e->in[0] == v) == (e->in[1] == v)) return NULL;
  return e->in[0] == v ? e->in[1] : e->in[0];
}

// A conv2d bias: [O, 1, 1] or [1, O, 1, 1] against y [N, O, HO, WO].
static bool conv_bias(const Type *x, const Type *y) {
  if (y->rank != 4 || x->rank < 3 || x->rank > 4 || !dim_eq(x->dims[x->rank - 3], y->dims[1])) return false;
  for (int i = 0; i < x->rank; i++) {
    int64_t one;
    if (i != x->rank - 3 && !(dim_is_const(x->dims[i], &one) && one == 1)) return false;
  }
  return true;
}

// What e does to v (its operand) as an epilogue step, or EPI_NONE.
static EpiKind epi_step(const KLower *c, const IrNode *e, const IrNode *v) {
  const Type *t = v->type;
  if (!type_eq(e->type, t)) return EPI_NONE;
  if (e->op == IR_RELU) return EPI_RELU;
  IrNode *x = other_in(e, v);
  if (!x || c->elided[slot_of(c, x)] || x->type->dtype != t->dtype) return EPI_NONE;
  if (e->op == IR_RELU_GRAD) return e->in[0] == v && type_eq(x->type, t) ? EPI_RELU_MASK : EPI_NONE;
  if (e->op != IR_ADD) return EPI_NONE;
  if (v->op == IR_CONV2D) return conv_bias(x->type, t) ? EPI_BIAS : EPI_NONE;
  if (type_eq(x->type, t)) return EPI_RESIDUAL;
  return x->type->rank == 1 && dim_eq(x->type->dims[0], t->dims[t->rank - 1]) ? EPI_BIAS : EPI_NONE;
}

static void plan_epilogues(KLower *c, const int *users, IrNode *const *last) {
  IrFunc *f = c->f;
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i), *e = only_reader(c, users, last, n);
    bool mm = ir_op_class(n->op) == IRC_MATMUL, conv = n->op == IR_CONV2D, pool = n->op == IR_MAX_POOL2D_GRAD;
    bool bn = n->op == IR_BATCH_NORM;
    if (!(mm || conv || pool || bn) || !dtype_is_float(n->type->dtype) || c->into[slot_of(c, n)] || !e) continue;
    EpiKind k = epi_step(c, e, n);
    if (k == EPI_NONE || (conv && k != EPI_BIAS) || (pool && k != EPI_RELU_MASK) ||
        (bn && k != EPI_RELU && k != EPI_RESIDUAL) || c->epi_of[slot_of(c, e)])
      continue; // add(mm, mm): the first's
    c->epi_of[slot_of(c, e)] = n, c->epi_end[slot_of(c, n)] = e;
    IrNode *r = only_reader(c, users, last, e);
    if ((k == EPI_BIAS || k == EPI_RESIDUAL) && r && epi_step(c, r, e) == EPI_RELU)
      c->epi_of[slot_of(c, r)] = n, c->epi_end[slot_of(c, n)] = r;
  }
}

// ---- matmul -------------------------------------------------------------------------------------------------
// [.., M, K] @ [.., K, N] -> [.., M, N], batch dims broadcast (an operand's
// dim of 1 indexes 0), operands and result as strided views: per output
// element the library's K sum (kl_ksum; kernels/gemm_ref.h), the order the
// interpreter computes. The op record (with the views' strides) lets a
// schedule call the GEMM instead. With a precision, each operand load is
// rounded (kl_round) before its product.
typedef struct MatmulSum {
  const IrNode *n;
  KlView *a, *b;
  KExpr *oa, *ob; // batch and row/column parts of each operand's offset
} MatmulSum;

static void matmul_step(KlKSum *q, Vec *blk, KExpr *p, KExpr *s) {
  KLower *c = q->c;
  MatmulSum *m = q->ctx;
  KExpr *ia = kl_add(c, m->oa, kl_mul(c, p, m->a->strides[m->a->rank - 1]));
  KExpr *ib = kl_add(c, m->ob, kl_mul(c, p, m->b->strides[m->b->rank - 2]));
  KExpr *x = kl_round(c, m->n, kir_load(c->p, m->a->buf, ia)), *y = kl_round(c, m->n, kir_load(c->p, m->b->buf, ib));
  kir_assign(c->p, blk, s->var, kir_fma(c->p, x, y, s));
}

// Batch offset of operand v (rank rv) under output index iv of rank r.
static KExpr *batch_off(KLower *c, const KlView *v, int r, KExpr **iv) {
  KExpr *e = kl_i(c, 0);
  for (int j = 0, i = r - v->rank; j < v->rank - 2; j++, i++) {
    int64_t one;
    if (kir_eval_i64(v->dims[j], NULL, &one) && one == 1) continue;
    e = kl_add(c, e, kl_mul(c, iv[i], v->strides[j]));
  }
  return e;
}

KlEpilogue kl_epilogue_of(KLower *c, IrNode *n) {
  bool conv = n->op == IR_CONV2D, pool = n->op == IR_MAX_POOL2D_GRAD;
  KlEpilogue e = {.kind = conv ? KOP_CONV2D : pool ? KOP_MAX_POOL2D_GRAD : KOP_MATMUL};
  IrNode *end = c->epi_end[slot_of(c, n)];
  if (!end) return e;
  if (end->op == IR_RELU && end->in[0] != n) e.ops[e.nops++] = end->in[0];
  e.ops[e.nops++] = end;
  IrNode *first = e.ops[0];
  e.relu = end->op == IR_RELU;
  switch (epi_step(c, first, n)) {
  case EPI_BIAS: e.kind = conv ? KOP_CONV2D_BIAS : KOP_MATMUL_BIAS; break;
  case EPI_RESIDUAL: e.kind = KOP_MATMUL_RESIDUAL; break;
  case EPI_RELU_MASK: e.kind = pool ? KOP_MAX_POOL2D_GRAD_RELU_MASK : KOP_MATMUL_RELU_MASK; break;
  default: e.kind = KOP_MATMUL_RELU; break;
  }
  if (e.kind != KOP_MATMUL_RELU) e.operand = other_in(first, n);
  return e;
}

// Operands load as lower_elementwise loads them.
KExpr *kl_apply_epilogue(KLower *c, KirKernel *k, const KlEpilogue *e, const IrNode *n, Vec *blk, KExpr **iv,
                         KExpr *v) {
  const IrNode *prev = n;
  for (int i = 0; i < e->nops; i++) {
    IrNode *op = e->ops[i];
    KExpr *in[3];
    for (int j = 0; j < op->nin; j++)
      in[j] = op->in[j] == prev ? v : kl_ld(c, op->in[j], kl_bcast(c, op->in[j]->type, op->type->rank, iv));
    v = let_local(c, k, blk, "e", elementwise_expr(c, op, in));
    prev = op;
  }
  return v;
}

static bool lower_matmul(KLower *c, IrNode *n) {
  KlView a = view_of(c, n->in[0]), b = view_of(c, n->in[1]), y = out_view(c, n);
  KlEpilogue epi = kl_epilogue_of(c, n);
  const char *what = epi.kind == KOP_MATMUL ? "matmul" : kir_op_name(epi.kind);
  KirKernel *k = kir_kernel_new(c->p, arena_printf(c->p->arena, "k%d_%s", n->id, what), n->span);
  int nb = epi.operand ? 4 : 3;
  KlView x = epi.operand ? view_of(c, epi.operand) : y;
  int bufs[4] = {a.buf, b.buf, y.buf, x.buf}, rank[4] = {a.rank, b.rank, y.rank, x.rank};
  KExpr *dims[KIR_OP_MAX_BUFS][KIR_OP_MAX_RANK];
  KlView *views[4] = {&a, &b, &y, &x};
  for (int i = 0; i < nb; i++) memcpy(dims[i], views[i]->dims, sizeof(KExpr *) * (size_t)views[i]->rank);
  int64_t relu = epi.relu;
  KirOp *op = kir_kernel_op(c->p, k, epi.kind, bufs, rank, (KExpr *const (*)[KIR_OP_MAX_RANK])dims, &relu);
  op->precision = kl_precision(n);
  for (int i = 0; i < 3; i++)
    for (int d = 0; d < views[i]->rank; d++)
      if (!kir_expr_equal(views[i]->strides[d], kir_op_stride(c->p, op, i, d))) {
        memcpy(op->strides[i], views[i]->strides, sizeof(KExpr *) * (size_t)views[i]->rank);
        break;
      }
  const Type *t = n->type;
  int r = t->rank;
  KExpr *iv[KL_MAX_RANK];
  Vec *blk = kl_loops(c, k, &k->body, t, 0, r, iv, true);
  MatmulSum m = {.n = n, .a = &a, .b = &b};
  m.oa = kl_add(c, batch_off(c, &a, r, iv), kl_mul(c, iv[r - 2], a.strides[a.rank - 2]));
  m.ob = kl_add(c, batch_off(c, &b, r, iv), kl_mul(c, iv[r - 1], b.strides[b.rank - 1]));
  KlKSum q = {.c = c, .k = k, .dt = t->dtype, .step = matmul_step, .ctx = &m};
  KExpr *sum = kl_ksum(&q, blk, a.dims[a.rank - 1]);
  KExpr *oy = kl_i(c, 0);
  for (int d = 0; d < r; d++) oy = kl_add(c, oy, kl_mul(c, iv[d], y.strides[d]));
  KExpr *v = kir_cast(c->p, kir_buf(c->p, y.buf)->dtype, sum);
  v = kl_apply_epilogue(c, k, &epi, n, blk, iv, v);
  kir_store(c->p, blk, y.buf, oy, v);
  return true;
}

// ---- dropout ------------------------------------------------------------------------------------------------
// mask(e) = rand(seed, e, rngseed) >= p ? 1/(1-p) : 0; dropout = x * mask
static bool lower_dropout(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const Type *t = n->type;
  KExpr *iv[KL_MAX_RANK];
  Vec *blk = kl_loops(c, k, &k->body, t, 0, t->rank, iv, true);
  KExpr *e = kl_flat(c, t, iv);
  double p = kl_attr_f(n, IRA_P);
  KExpr *u = kir_rand(c->p, kl_i(c, kl_attr_i(n, IRA_SEED)), e, kir_rngseed(c->p));
  KExpr *m = kir_select(c->p, kir_bin(c->p, KB_GE, u, kir_float(c->p, DT_F64, p)),
                        kir_float(c->p, DT_F64, 1 / (1 - p)), kir_float(c->p, DT_F64, 0));
  m = kir_cast(c->p, t->dtype, m);
  kl_st(c, blk, n, e, n->op == IR_DROPOUT_MASK ? m : kl_mul(c, kl_ld(c, n->in[0], e), m));
  return true;
}

// ---- rand, randn --------------------------------------------------------------------------------------------
// rand(e) = rand(seed, e, rngseed); randn(e) = Box-Muller over the draws
// 2e and 2e + 1, in f64 as interp_noise computes it:
//   sqrt(-2 * log(1 - u(2e))) * cos(2 pi * u(2e + 1))
static bool lower_noise(KLower *c, IrNode *n) {
  KirKernel *k = kl_kernel(c, n, ir_op_name(n->op));
  const Type *t = n->type;
  KExpr *iv[KL_MAX_RANK];
  Vec *blk = kl_loops(c, k, &k->body, t, 0, t->rank, iv, true);
  KExpr *e = kl_flat(c, t, iv), *seed = kl_i(c, kl_attr_i(n, IRA_SEED));
  KExpr *v;
  if (n->op == IR_RAND) {
    v = kir_rand(c->p, seed, e, kir_rngseed(c->p));
  } else {
    KExpr *e2 = kl_mul(c, e, kl_i(c, 2));
    KExpr *u1 = kir_rand(c->p, seed, e2, kir_rngseed(c->p));
    KExpr *u2 = kir_rand(c->p, seed, kl_add(c, e2, kl_i(c, 1)), kir_rngseed(c->p));
    KExpr *lg = kir_un(c->p, KU_LOG, kir_bin(c->p, KB_SUB, kir_float(c->p, DT_F64, 1), u1));
    KExpr *r = kir_un(c->p, KU_SQRT, kir_bin(c->p, KB_MUL, kir_float(c->p, DT_F64, -2), lg));
    KExpr *cs = kir_un(c->p, KU_COS, kir_bin(c->p, KB_MUL, kir_float(c->p, DT_F64, 6.283185307179586), u2));
    v = kir_bin(c->p, KB_MUL, r, cs);
  }
  kl_st(c, blk, n, e, kir_cast(c->p, t->dtype, v));
  return true;
}

// ---- fused groups (kir_fuse.c) ------------------------------------------------------------------------
// One member's element value from its operands' values v[] at index iv
// (flat: the row-major offset), as its own kernel computes it.
static KExpr *member_value(KLower *c, Vec *blk, const IrNode *n, KExpr **v, KExpr **iv, KExpr *flat) {
  const Type *t = n->type;
  switch (ir_op_class(n->op)) {
  case IRC_CONST:
    if (n->op == IR_CONST) return kl_f(c, t->dtype, kl_attr_f(n, IRA_VALUE));
    if (n->op == IR_ARANGE) return flat;
    return t->rank == 2 ? kir_bin(c->p, KB_LE, iv[1], iv[0]) : kir_bin(c->p, KB_LE, flat, kl_i(c, 0));
  case IRC_CAST: return v[0];
  case IRC_RNG: {
    double p = kl_attr_f(n, IRA_P);
    KExpr *u = kir_rand(c->p, kl_i(c, kl_attr_i(n, IRA_SEED)), flat, kir_rngseed(c->p));
    KExpr *m = kir_select(c->p, kir_bin(c->p, KB_GE, u, kir_float(c->p, DT_F64, p)),
                          kir_float(c->p, DT_F64, 1 / (1 - p)), kir_float(c->p, DT_F64, 0));
    m = kir_cast(c->p, t->dtype, m);
    return n->op == IR_DROPOUT_MASK ? m : kl_mul(c, v[0], m);
  }
  default: {
    KExpr *r = elementwise_expr(c, n, v);
    if (!r) return kl_fail(c, n, "no elementwise form");
    if (n->op == IR_DIV && dtype_is_int(v[0]->dtype))
      kir_check(c->p, blk, kir_bin(c->p, KB_NE, v[1], kl_f(c, v[1]->dtype, 0)), "integer division by zero");
    return r;
  }
  }
}

static void cover(KLower *c, KirKernel *k, const IrNode *n) {
  KirCover *cv = arena_alloc(c->p->arena, sizeof *cv);
  int col = 0;
  cv->span = n->span, cv->op = ir_op_name(n->op), cv->node = n->id;
  if (n->span.file) span_linecol(n->span, &cv->line, &col);
  vec_push(c->p->arena, &k->covers, cv);
}

// A group of elementwise ops of one shape: one loop nest; per element each
// member in order is a local (operands: a member's local, a literal const,
// or a broadcast load); then the members read outside the group are stored,
// after every load of the element (a state slot written in place is read
// only before).
static bool lower_group(KLower *c, const int *mem, int nm) {
  KlFuse *z = c->fz;
  IrNode *last = VEC_AT(c->f->nodes, IrNode, mem[nm - 1]);
  const char *name = nm == 1 ? arena_printf(c->p->arena, "k%d_%s", last->id, ir_op_name(last->op))
                             : arena_printf(c->p->arena, "k%d_fused", last->id);
  KirKernel *k = kir_kernel_new(c->p, name, last->span);
  const Type *t = last->type;
  KExpr *iv[KL_MAX_RANK], **val = arena_alloc(c->p->arena, sizeof(KExpr *) * (size_t)nm);
  Vec *blk = kl_loops(c, k, &k->body, t, 0, t->rank, iv, true);
  KExpr *flat = kl_flat(c, t, iv);
  for (int j = 0; j < nm; j++) {
    IrNode *n = VEC_AT(c->f->nodes, IrNode, mem[j]);
    KExpr *v[3] = {0};
    for (int i = 0; i < n->nin && i < 3; i++) {
      IrNode *x = n->in[i];
      int o = x->order;
      if (kl_fuse_const(x)) { // the value its buffer would hold
        v[i] = kl_f(c, x->type->dtype, kl_attr_f(x, IRA_VALUE));
        continue;
      }
      if (o >= 0 && z->group[o] == z->group[mem[j]]) {
        int at = 0;
        while (mem[at] != o) at++;
        v[i] = val[at];
        continue;
      }
      kir_kernel_use(c->p, k, kl_buf(c, x));
      v[i] = kl_ld(c, x, kl_bcast(c, x->type, t->rank, iv));
    }
    KExpr *r = member_value(c, blk, n, v, iv, flat);
    if (!r) return false;
    val[j] = let_local(c, k, blk, "v", kir_cast(c->p, n->type->dtype, r));
    if (nm > 1) cover(c, k, n);
  }
  for (int j = 0; j < nm; j++) {
    IrNode *n = VEC_AT(c->f->nodes, IrNode, mem[j]);
    if (z->reg[mem[j]]) continue;
    kir_kernel_use(c->p, k, kl_buf(c, n));
    kir_store(c->p, blk, kl_buf(c, n), flat, val[j]);
  }
  return true;
}

// A reduction's prologue (c->pro) at flat offset off of its operand x:
// each member a local, operands from outside loaded at off (x's shape), at
// 0 (one element), or broadcast (constant along the reduced dims: at the
// kept dims' indices, c->pro_iv, which float_sum sets); x's local.
static KExpr *prologue_value(KLower *c, KirKernel *k, Vec *blk, const IrNode *x, KExpr *off) {
  KExpr **val = arena_alloc(c->p->arena, sizeof(KExpr *) * (size_t)c->npro), *res = NULL;
  for (int j = 0; j < c->npro; j++) {
    IrNode *n = VEC_AT(c->f->nodes, IrNode, c->pro[j]);
    KExpr *v[3] = {0};
    for (int i = 0; i < n->nin && i < 3; i++) {
      IrNode *e = n->in[i];
      int o = e->order, at = 0;
      if (kl_fuse_const(e)) {
        v[i] = kl_f(c, e->type->dtype, kl_attr_f(e, IRA_VALUE));
        continue;
      }
      while (at < j && c->pro[at] != o) at++;
      if (at < j) {
        v[i] = val[at];
        continue;
      }
      kir_kernel_use(c->p, k, kl_buf(c, e));
      bool same = e->type->rank == x->type->rank, one = true;
      for (int d = 0; same && d < e->type->rank; d++) same = dim_eq(e->type->dims[d], x->type->dims[d]);
      for (int d = 0; one && d < e->type->rank; d++) {
        int64_t v1;
        one = dim_is_const(e->type->dims[d], &v1) && v1 == 1;
      }
      MLC_ASSERT(same || one || c->pro_iv);
      v[i] = kl_ld(c, e, same ? off : one ? kl_i(c, 0) : kl_bcast(c, e->type, x->type->rank, c->pro_iv));
    }
    KExpr *r = member_value(c, blk, n, v, NULL, off);
    if (!r) return kl_f(c, n->type->dtype, 0);
    val[j] = let_local(c, k, blk, "v", kir_cast(c->p, n->type->dtype, r));
    if (n == x) res = val[j];
  }
  return res;
}

// ---- driver -------------------------------------------------------------------------------------------------
static int state_buf(KLower *c, const char *path, const Type *t) {
  for (int i = 0; i < c->p->bufs.len; i++) {
    KirBuf *b = kir_buf(c->p, i);
    if (b->kind == KBUF_STATE && !strcmp(b->path, path)) return i;
  }
  int b = kl_buf_new(c, KBUF_STATE, arena_printf(c->p->arena, "state:%s", path), t);
  kir_buf(c->p, b)->path = arena_strdup(c->p->arena, path);
  return b;
}

// Ops whose value is their first operand's data unchanged.
static bool is_alias(const IrNode *n) {
  switch (n->op) {
  case IR_RESHAPE: case IR_STOP_GRADIENT: case IR_CUSTOM_GRAD: case IR_STORE: return true;
  case IR_CAST: return n->type->dtype == n->in[0]->type->dtype;
  default: return false;
  }
}

static bool lower_node(KLower *c, IrNode *n) {
  // A matmul with an epilogue is lowered at its last op: every operand of
  // the chain is computed by then.
  IrNode *head = c->epi_of[slot_of(c, n)];
  if (head && head->op == IR_MAX_POOL2D_GRAD) return kl_pool(c, head);
  if (head && head->op == IR_BATCH_NORM) return kl_norm(c, head);
  if (head) return head->op == IR_CONV2D ? kl_conv(c, head) : lower_matmul(c, head);
  switch (ir_op_class(n->op)) {
  case IRC_INPUT: return true;
  case IRC_CONST: return lower_const(c, n);
  case IRC_UNARY: case IRC_BINARY: case IRC_COMPARE: case IRC_LOGICAL: case IRC_SELECT:
    return lower_elementwise(c, n);
  case IRC_GRAD:
    if (n->op == IR_SOFTMAX_GRAD || n->op == IR_LOG_SOFTMAX_GRAD) return lower_normalize(c, n);
    return lower_elementwise(c, n);
  case IRC_REDUCE: return n->op == IR_REDUCE_TO ? lower_reduce_to(c, n) : lower_reduce(c, n);
  case IRC_NORMALIZE: return lower_normalize(c, n);
  case IRC_VIEW: return n->op == IR_CONCAT ? lower_concat(c, n) : lower_view(c, n);
  case IRC_MATMUL: return lower_matmul(c, n);
  case IRC_CONV: return kl_conv(c, n);
  case IRC_POOL: return kl_pool(c, n);
  case IRC_NORM: return kl_norm(c, n);
  case IRC_INDEX: return kl_index(c, n);
  case IRC_RNG: return n->nin ? lower_dropout(c, n) : lower_noise(c, n);
  case IRC_LOSS: return kl_loss(c, n);
  case IRC_CAST: return lower_cast(c, n);
  }
  return kl_fail(c, n, "not supported"), false;
}

// Gives node n its buffer: state slots by path, aliases share, the rest a
// fresh temporary.
// An elided transpose has none (-1); a matmul writing into a transpose
// takes (and makes) that transpose's buffer. A matmul with an epilogue
// writes the buffer of the epilogue's last op; the ops before it have none.
static void node_buffer(KLower *c, IrNode *n) {
  int me = slot_of(c, n), *slot = &c->buf[me];
  if (c->placed[me]) return;
  c->placed[me] = true;
  IrNode *owner = c->into[me] ? c->into[me] : c->epi_end[me];
  if (c->fz && c->fz->reg[n->order]) *slot = -1;
  else if (c->fz && c->fz->state[n->order]) *slot = state_buf(c, c->fz->state[n->order], n->type);
  else if (n->op == IR_PARAM || n->op == IR_BUFFER || n->op == IR_OPTSTATE) *slot = state_buf(c, n->name, n->type);
  else if (c->elided[me]) *slot = -1;
  else if (c->epi_of[me] && c->epi_end[slot_of(c, c->epi_of[me])] != n) *slot = -1;
  else if (is_alias(n)) *slot = kl_buf(c, n->in[0]);
  else if (owner) {
    node_buffer(c, owner);
    *slot = kl_buf(c, owner);
  } else {
    *slot = kl_buf_new(c, KBUF_TEMP, arena_printf(c->p->arena, "t%d", n->id), n->type);
  }
}

// A transpose a matmul wrote already, or one that is only a view: no kernel;
// nor a matmul with an epilogue, nor its epilogue's ops but the last.
static bool no_kernel(const KLower *c, const IrNode *n) {
  int me = slot_of(c, n);
  if (c->elided[me] || c->epi_end[me]) return true;
  if (c->epi_of[me]) return c->epi_end[slot_of(c, c->epi_of[me])] != n;
  return n->op == IR_TRANSPOSE && c->into[slot_of(c, n->in[0])] == n;
}

// Whether the fusion plan may group n: an elementwise op that no view or
// matmul/conv epilogue (plan_views) has claimed.
bool kl_fuses(const KLower *c, const IrNode *n) {
  if (!kl_fusable(n)) return false;
  int me = slot_of(c, n);
  return !c->elided[me] && !c->epi_of[me] && !c->epi_end[me] && !c->into[me] && !no_kernel(c, n);
}

// Arguments: one buffer each; bare symbols bind from their dims.
static void lower_args(KLower *c) {
  for (int i = 0; i < c->f->params.len; i++) {
    IrNode *a = VEC_AT(c->f->params, IrNode, i);
    for (int j = 0; j < a->type->rank; j++) {
      Sym *s = dim_as_sym(a->type->dims[j]);
      if (s && sym_by_name(c, s->name, strlen(s->name)) < 0) kir_sym_add(c->p, s->name, i, j, NULL);
    }
  }
  for (int i = 0; i < c->f->params.len; i++) {
    IrNode *a = VEC_AT(c->f->params, IrNode, i);
    int b = kl_buf_new(c, KBUF_INPUT, arena_printf(c->p->arena, "%%%s", a->name), a->type);
    kir_buf(c->p, b)->index = i;
    c->buf[i] = b;
  }
  c->p->ninputs = c->f->params.len;
}

// A copy kernel src -> dst over n elements.
static void copy_kernel(KLower *c, const char *name, Span sp, int dst, int src) {
  KirKernel *k = kir_kernel_new(c->p, name, sp);
  kir_kernel_use(c->p, k, dst);
  kir_kernel_use(c->p, k, src);
  int v = kl_var(c, k, "e", DT_I64, true);
  KStmt *s = kir_for(c->p, &k->body, v, kir_buf(c->p, dst)->numel, true);
  KExpr *x = kir_load(c->p, src, kl_v(c, k, v));
  kir_store(c->p, &s->body, dst, kl_v(c, k, v), kir_cast(c->p, kir_buf(c->p, dst)->dtype, x));
}

// Results: a temporary computed only for this output becomes the output
// buffer; anything else (an argument, state, an alias, a repeated output)
// is copied. Then the state stores, after every read.
static void lower_results(KLower *c) {
  IrFunc *f = c->f;
  for (int i = 0; i < f->outputs.len; i++) {
    IrNode *o = VEC_AT(f->outputs, IrNode, i);
    KirBuf *b = kir_buf(c->p, kl_buf(c, o));
    if (b->kind == KBUF_TEMP && o->order >= 0 && !is_alias(o)) {
      b->kind = KBUF_OUTPUT;
      b->index = i;
      b->name = arena_printf(c->p->arena, "out%d", i);
      continue;
    }
    int d = kl_buf_new(c, KBUF_OUTPUT, arena_printf(c->p->arena, "out%d", i), o->type);
    kir_buf(c->p, d)->index = i;
    copy_kernel(c, arena_printf(c->p->arena, "result%d", i), f->span, d, kl_buf(c, o));
  }
  c->p->noutputs = f->outputs.len;
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    if (n->op != IR_STORE) continue;
    int dst = state_buf(c, n->name, n->type);
    if (kl_buf(c, n) == dst) continue; // written in place (kir_fuse.c)
    copy_kernel(c, arena_printf(c->p->arena, "k%d_store", n->id), n->span, dst, kl_buf(c, n));
  }
}

// ---- finite checks -------------------------------------------------------------------------------------
// Values that may hold an infinity by design: a non-finite constant (an
// attention mask's -inf) and what elementwise ops, views, casts and max/min
// reductions make of one. Their checks look for NaN only, so masking does
// not stop a checked program.
static bool inf_by_design(KLower *c, const bool *infok, const IrNode *n) {
  IrClass cls = ir_op_class(n->op);
  if (cls == IRC_CONST) return n->op == IR_CONST && !isfinite(kl_attr_f(n, IRA_VALUE));
  bool passes = cls == IRC_UNARY || cls == IRC_BINARY || cls == IRC_SELECT || cls == IRC_VIEW ||
                cls == IRC_CAST || n->op == IR_STORE || (cls == IRC_REDUCE && (n->op == IR_MAX || n->op == IR_MIN));
  for (int i = 0; passes && i < n->nin; i++)
    if (infok[n->in[i]->order + c->nparams]) return true;
  return false;
}

// After n's kernel: a serial scan of n's buffer that stops at the first
// NaN / +-Inf (NaN only when infinities are by design) with the message
// kir.h describes, and a site for it. One compare per element on the
// finite path: x - x is 0 for every finite x, NaN otherwise.
static void finite_check(KLower *c, KirLowerOptions *o, const IrNode *n, bool nan_only) {
  KirProgram *p = c->p;
  int site = o->sites.len;
  KirSite *st = arena_alloc(p->arena, sizeof *st);
  st->span = n->span, st->op = ir_op_name(n->op);
  vec_push(p->arena, &o->sites, st);
  int line = 0, col = 0;
  if (n->span.file) span_linecol(n->span, &line, &col);
  const char *at = n->span.file ? arena_printf(p->arena, "%s:%d:%d", n->span.file->path, line, col) : "?";
  KirKernel *k = kir_kernel_new(p, arena_printf(p->arena, "k%d_finite", n->id), n->span);
  int b = kl_buf(c, n);
  kir_kernel_use(p, k, b);
  int e = kl_var(c, k, "e", DT_I64, true);
  KStmt *loop = kir_for(p, &k->body, e, kir_buf(p, b)->numel, false);
  KExpr *x = let_local(c, k, &loop->body, "x", kir_load(p, b, kl_v(c, k, e)));
  DType dt = x->dtype;
  KExpr *bad = nan_only ? kl_isnan(c, x) : kir_bin(p, KB_NE, kl_sub(c, x, x), kl_f(c, dt, 0));
  Vec *blk = &kir_if(p, &loop->body, bad)->body;
  const char *kinds[3] = {"nan", "inf", "-inf"};
  KExpr *conds[3] = {kir_bin(p, KB_EQ, x, x), kir_bin(p, KB_LT, x, kl_f(c, dt, 0)), kir_int(p, DT_BOOL, 0)};
  for (int i = 0; i < (nan_only ? 1 : 3); i++)
    kir_check(p, blk, conds[i],
              arena_printf(p->arena, KIR_NONFINITE_PREFIX "%d %s at %s (%s)", site, kinds[i], at, st->op));
}

// Whether n depends on the slot o->overflow_ok names (ovf holds the
// answer for earlier nodes): such values may overflow by design and are not
// checked; a where whose condition depends on it is the select of a skipped
// step and is checked again.
static bool overflows_by_design(KLower *c, const KirLowerOptions *o, const bool *ovf, const IrNode *n) {
  if (!o->overflow_ok) return false;
  if (n->op == IR_OPTSTATE) return !strcmp(n->name, o->overflow_ok);
  if (n->op == IR_WHERE && ovf[n->in[0]->order + c->nparams]) return false;
  for (int i = 0; i < n->nin; i++)
    if (ovf[n->in[i]->order + c->nparams]) return true;
  return false;
}

KirProgram *kir_lower_func(Arena *a, IrModule *m, IrFunc *f, char *err, size_t errlen) {
  return kir_lower_func_opts(a, m, f, NULL, err, errlen);
}

KirProgram *kir_lower_func_opts(Arena *a, IrModule *m, IrFunc *f, KirLowerOptions *o, char *err,
                                size_t errlen) {
  ir_number(f);
  KLower c = {.m = m, .f = f, .err = err, .errlen = errlen, .nparams = f->params.len,
              .reduce_cols = o && o->reduce_cols, .line_lanes = o && o->line_lanes};
  if (errlen) err[0] = 0;
  c.p = kir_program_new(a, f->name);
  c.buf = arena_alloc(a, sizeof(int) * (size_t)(f->params.len + f->nodes.len + 1));
  bool checks = o && o->check_finite;
  bool *infok = checks ? arena_alloc(a, (size_t)(f->params.len + f->nodes.len + 1)) : NULL;
  bool *ovf = checks ? arena_alloc(a, (size_t)(f->params.len + f->nodes.len + 1)) : NULL;
  lower_args(&c);
  plan_views(&c, !checks);
  if (o && o->fuse && !checks) {
    KlFuse *z = c.fz = kl_fuse_plan(&c);
    // State slots in the unfused program's order (reads in node order, then
    // the slots only stored): the glue runs the checked, unfused train_step
    // with the state table of this one.
    for (int i = 0; i < f->nodes.len; i++) {
      IrNode *n = VEC_AT(f->nodes, IrNode, i);
      if (n->op == IR_PARAM || n->op == IR_BUFFER || n->op == IR_OPTSTATE) state_buf(&c, n->name, n->type);
    }
    for (int i = 0; i < f->nodes.len; i++) {
      IrNode *n = VEC_AT(f->nodes, IrNode, i);
      if (n->op == IR_STORE) state_buf(&c, n->name, n->type);
    }
    for (int s = 0; s < z->nseq && !c.failed; s++) {
      int g = z->seq[s], *mem = z->members[g], nm = z->nmembers[g];
      for (int j = 0; j < nm; j++) node_buffer(&c, VEC_AT(f->nodes, IrNode, mem[j]));
      IrNode *n = VEC_AT(f->nodes, IrNode, mem[0]), *last = VEC_AT(f->nodes, IrNode, mem[nm - 1]);
      if (nm > 1 && !kl_fusable(last)) { // a reduction and its prologue
        c.pro = mem, c.npro = nm - 1;
        int k0 = c.p->kernels.len;
        lower_node(&c, last);
        for (int j = 0; j < nm && c.p->kernels.len > k0; j++)
          cover(&c, VEC_AT(c.p->kernels, KirKernel, k0), VEC_AT(f->nodes, IrNode, mem[j]));
        c.pro = NULL, c.npro = 0;
      } else if (nm > 1 || (kl_fuses(&c, n) && !z->reg[mem[0]])) lower_group(&c, mem, nm);
      else if (nm == 1 && !z->reg[mem[0]] && !is_alias(n) && !no_kernel(&c, n)) lower_node(&c, n);
    }
    if (!c.failed) lower_results(&c);
    return c.failed ? NULL : c.p;
  }
  for (int i = 0; i < f->nodes.len && !c.failed; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    node_buffer(&c, n);
    int before = c.p->kernels.len;
    if (!c.failed && !is_alias(n) && !no_kernel(&c, n)) lower_node(&c, n);
    if (!checks || c.failed) continue;
    infok[n->order + c.nparams] = inf_by_design(&c, infok, n);
    ovf[n->order + c.nparams] = overflows_by_design(&c, o, ovf, n);
    if (c.p->kernels.len > before && dtype_is_float(n->type->dtype) && !ovf[n->order + c.nparams])
      finite_check(&c, o, n, infok[n->order + c.nparams]);
  }
  if (!c.failed) lower_results(&c);
  return c.failed ? NULL : c.p;
}
