// lower_ops.c — operators, builtins and indexing as graph IR ops, for the
// lowering evaluator (lower.c).
//
// Input: evaluated operands (LVal: IR nodes for tensors, constants for the
// rest). Output: IR nodes typed by the IR's shape rules. The surface
// spellings map as docs/design/lowering.md lists: .T/transpose/permute ->
// transpose {perm}; flatten/squeeze/unsqueeze -> reshape; zeros/ones/full ->
// const; indexing -> slice (+ reshape for integer indices); max(a, b) ->
// maximum; conv2d's bias -> an add of the bias reshaped to [C, 1, 1];
// embedding(idx, w) -> embedding(w, idx); a smoothed cross_entropy ->
// (1 - ls) * cross_entropy + ls * mean(-log_softmax); batch_norm in train
// mode -> batch statistics (mean over every dim but 1) fed to batch_norm,
// in eval mode -> the running buffers; dropout in eval mode -> identity.
// Constants that meet a tensor become `const` scalars of its dtype.
#include "lower_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- building nodes ---------------------------------------------------------------------------
IrNode *lower_build(Env *e, IrOp op, IrNode **in, int nin, const IrAttrs *as, Type *given,
                    Span sp) {
  char err[256];
  if (e->at_site) sp = e->site;
  IrNode *n = ir_build(e->f, op, in, nin, as, given, sp, err, sizeof err);
  if (!n) lower_fail(e->L, sp, "internal: building %s: %s", ir_op_name(op), err);
  return n;
}

IrNode *lower_const(Env *e, double v, Type *t, Span sp) {
  IrAttrs as = {0};
  ir_attr_set_float(e->L->a, &as, IRA_VALUE, v);
  return lower_build(e, IR_CONST, NULL, 0, &as, t, sp);
}

double lower_num(Lower *L, const LVal *v) {
  int64_t k;
  switch (v->kind) {
  case LV_FLOAT: return v->f;
  case LV_BOOL: return v->b;
  case LV_DIM:
    if (dim_is_const(v->dim, &k)) return (double)k;
    lower_fail(L, v->span, "the symbolic size %s used as a number", dim_str(L->a, v->dim));
  default: break;
  }
  lower_fail(L, v->span, "expected a number");
}

static int64_t int_of(Lower *L, const LVal *v) {
  int64_t k;
  if (v->kind == LV_DIM && dim_is_const(v->dim, &k)) return k;
  if (v->kind == LV_BOOL) return v->b;
  lower_fail(L, v->span, "expected an integer constant");
}

static IrNode *un(Env *e, IrOp op, IrNode *x, Span sp) {
  return lower_build(e, op, &x, 1, NULL, NULL, sp);
}

static IrNode *bin(Env *e, IrOp op, IrNode *x, IrNode *y, Span sp) {
  IrNode *in[2] = {x, y};
  return lower_build(e, op, in, 2, NULL, NULL, sp);
}

static IrNode *stop_grad(Env *e, IrNode *x, Span sp) { return un(e, IR_STOP_GRADIENT, x, sp); }

static IrNode *reshape(Env *e, IrNode *x, Type *t, Span sp) {
  if (type_eq(x->type, t)) return x;
  return lower_build(e, IR_RESHAPE, &x, 1, NULL, t, sp);
}

static IrNode *transpose(Env *e, IrNode *x, const int64_t *perm, Span sp) {
  IrAttrs as = {0};
  ir_attr_set_ints(e->L->a, &as, IRA_PERM, perm, x->type->rank);
  return lower_build(e, IR_TRANSPOSE, &x, 1, &as, NULL, sp);
}

IrNode *lower_transpose_last2(Env *e, IrNode *x, Span sp) {
  int r = x->type->rank;
  int64_t perm[64];
  MLC_ASSERT(r >= 2 && r <= 64);
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 1] = r - 2;
  perm[r - 2] = r - 1;
  return transpose(e, x, perm, sp);
}

static IrNode *reduce(Env *e, IrOp op, IrNode *x, const int64_t *dims, int nd, bool keep, Span sp) {
  IrAttrs as = {0};
  ir_attr_set_ints(e->L->a, &as, IRA_DIMS, dims, nd);
  ir_attr_set_int(e->L->a, &as, IRA_KEEPDIM, keep);
  return lower_build(e, op, &x, 1, &as, NULL, sp);
}

static Type *type_of(Lower *L, DType dt, int rank, Dim **dims) {
  Type *t = type_new(L->a, dt, rank);
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  return t;
}

// A tensor operand: tensors as they are, constants as scalars of dtype dt.
static IrNode *operand(Env *e, LVal *v, DType dt) {
  if (v->kind == LV_TENSOR) return v->node;
  return lower_num_node(e, v, dt, v->span);
}

// The dtype a constant operand adopts: the other tensor's.
static DType partner_dtype(LVal *x, LVal *y) {
  if (x->kind == LV_TENSOR) return x->node->type->dtype;
  if (y && y->kind == LV_TENSOR) return y->node->type->dtype;
  return DT_F32;
}

static LVal *tv(Env *e, IrNode *n, Span sp) { return lower_tensor(e->L, n, sp); }

// ---- constant folding ----------------------------------------------------------------------------
static LVal *fold(Env *e, int op, LVal *l, LVal *r, Span sp) {
  Lower *L = e->L;
  if (op == OP_AND || op == OP_OR)
    return lower_boolv(L, op == OP_AND ? l->b && r->b : l->b || r->b, sp);
  if (l->kind == LV_DIM && r->kind == LV_DIM) {
    Dim *d = NULL;
    int64_t y;
    switch (op) {
    case OP_ADD: d = dim_add(L->a, l->dim, r->dim); break;
    case OP_SUB: d = dim_sub(L->a, l->dim, r->dim); break;
    case OP_MUL: d = dim_mul(L->a, l->dim, r->dim); break;
    case OP_DIV: d = dim_div(L->a, l->dim, r->dim); break;
    case OP_POW:
      if (dim_is_const(r->dim, &y) && y >= 0) {
        d = dim_const(L->a, 1);
        for (int64_t i = 0; i < y; i++) d = dim_mul(L->a, d, l->dim);
      }
      break;
    default:
      if (binop_is_compare(op) && dim_eq(l->dim, r->dim))
        return lower_boolv(L, op == OP_EQ || op == OP_LE || op == OP_GE, sp);
      break;
    }
    if (d) return lower_dimv(L, d, sp);
  }
  if (l->kind == LV_BOOL && r->kind == LV_BOOL && (op == OP_EQ || op == OP_NE))
    return lower_boolv(L, (l->b == r->b) == (op == OP_EQ), sp);
  double x = lower_num(L, l), y = lower_num(L, r);
  switch (op) {
  case OP_ADD: return lower_floatv(L, x + y, sp);
  case OP_SUB: return lower_floatv(L, x - y, sp);
  case OP_MUL: return lower_floatv(L, x * y, sp);
  case OP_DIV: return lower_floatv(L, x / y, sp);
  case OP_POW: return lower_floatv(L, pow(x, y), sp);
  default: break;
  }
  MLC_ASSERT(binop_is_compare(op));
  return lower_boolv(L, binop_compare(op, x, y), sp);
}

static double fold_unary(int op, double x) {
  switch (op) {
  case BI_EXP: return exp(x);
  case BI_LOG: return log(x);
  case BI_SQRT: return sqrt(x);
  case BI_RSQRT: return 1 / sqrt(x);
  case BI_ABS: return fabs(x);
  case BI_NEG: return -x;
  case BI_RELU: return x > 0 ? x : 0;
  case BI_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case BI_SIGMOID: return 1 / (1 + exp(-x));
  case BI_TANH: return tanh(x);
  case BI_SILU: return x / (1 + exp(-x));
  }
  MLC_UNREACHABLE();
}

// ---- operators --------------------------------------------------------------------------------------
static IrOp binop_ir(int op) {
  switch (op) {
  case OP_ADD: return IR_ADD;
  case OP_SUB: return IR_SUB;
  case OP_MUL: return IR_MUL;
  case OP_DIV: return IR_DIV;
  case OP_POW: return IR_POW;
  case OP_MATMUL: return IR_MATMUL;
  case OP_LT: return IR_LT;
  case OP_LE: return IR_LE;
  case OP_GT: return IR_GT;
  case OP_GE: return IR_GE;
  case OP_EQ: return IR_EQ;
  case OP_NE: return IR_NE;
  case OP_AND: return IR_AND;
  case OP_OR: return IR_OR;
  }
  MLC_UNREACHABLE();
}

static LVal *binary(Env *e, IrOp op, LVal *l, LVal *r, Span sp) {
  DType dt = partner_dtype(l, r);
  return tv(e, bin(e, op, operand(e, l, dt), operand(e, r, dt), sp), sp);
}

LVal *lower_binary(Env *e, Expr *x) {
  LVal *l = lower_eval(e, x->lhs), *r = lower_eval(e, x->rhs);
  if (l->kind != LV_TENSOR && r->kind != LV_TENSOR) return fold(e, x->op, l, r, x->span);
  return binary(e, binop_ir(x->op), l, r, x->span);
}

LVal *lower_unary(Env *e, Expr *x) {
  Lower *L = e->L;
  LVal *v = lower_eval(e, x->lhs);
  if (v->kind == LV_TENSOR) return tv(e, un(e, x->op == OP_NOT ? IR_NOT : IR_NEG, v->node, x->span), x->span);
  if (x->op == OP_NOT) return lower_boolv(L, !v->b, x->span);
  if (v->kind == LV_DIM) return lower_dimv(L, dim_sub(L->a, dim_const(L->a, 0), v->dim), x->span);
  return lower_floatv(L, -lower_num(L, v), x->span);
}

// ---- indexing -------------------------------------------------------------------------------------------
static Dim *from_end(Lower *L, Dim *i, Dim *n) {
  int64_t k;
  if (dim_is_const(i, &k) && k < 0) return dim_add(L->a, n, i);
  return i;
}

static IrNode *slice(Env *e, IrNode *x, int dim, int64_t start, int64_t step, Dim *len, Span sp) {
  Type *t = type_copy(e->L->a, x->type);
  t->weak = false;
  t->dims[dim] = len;
  IrAttrs as = {0};
  ir_attr_set_int(e->L->a, &as, IRA_DIM, dim);
  ir_attr_set_int(e->L->a, &as, IRA_START, start);
  ir_attr_set_int(e->L->a, &as, IRA_STEP, step);
  return lower_build(e, IR_SLICE, &x, 1, &as, t, sp);
}

// x[dim: a:b:c] as one slice node (none for the whole range).
static IrNode *slice_range(Env *e, IrNode *x, int dim, Dim *a, Dim *b, int64_t step, Span sp) {
  Lower *L = e->L;
  Dim *n = x->type->dims[dim];
  a = from_end(L, a, n);
  b = from_end(L, b, n);
  int64_t k0;
  if (!dim_is_const(a, &k0)) lower_fail(L, sp, "a slice with a symbolic start");
  Dim *len = dim_sub(L->a, b, a);
  int64_t kl;
  if (step > 1) {
    if (dim_is_const(len, &kl)) len = dim_const(L->a, (kl + step - 1) / step);
    else {
      len = dim_div(L->a, len, dim_const(L->a, step));
      if (!len) lower_fail(L, sp, "a strided slice of a symbolic extent");
    }
  }
  if (k0 == 0 && step == 1 && dim_eq(len, n)) return x;
  return slice(e, x, dim, k0, step, len, sp);
}

LVal *lower_index(Env *e, Expr *x) {
  Lower *L = e->L;
  LVal *v = lower_eval(e, x->lhs);
  MLC_ASSERT(v->kind == LV_TENSOR);
  IrNode *t = v->node;
  int rank = t->type->rank;
  bool *drop = arena_alloc(L->a, sizeof(bool) * (size_t)(rank + 1));
  bool any = false;
  for (int i = 0; i < x->args.len; i++) {
    Expr *ix = VEC_AT(x->args, Arg, i)->value;
    if (ix->kind == EX_SLICE) {
      Dim *a = ix->lhs ? lower_eval(e, ix->lhs)->dim : dim_const(L->a, 0);
      Dim *b = ix->rhs ? lower_eval(e, ix->rhs)->dim : t->type->dims[i];
      int64_t step = ix->step ? int_of(L, lower_eval(e, ix->step)) : 1;
      t = slice_range(e, t, i, a, b, step, ix->span);
    } else {
      LVal *k = lower_eval(e, ix);
      MLC_ASSERT(k->kind == LV_DIM);
      Dim *a = from_end(L, k->dim, t->type->dims[i]);
      t = slice_range(e, t, i, a, dim_add(L->a, a, dim_const(L->a, 1)), 1, ix->span);
      drop[i] = any = true;
    }
  }
  if (any) {
    Dim **dims = arena_alloc(L->a, sizeof(Dim *) * (size_t)(rank + 1));
    int r = 0;
    for (int i = 0; i < rank; i++)
      if (!drop[i]) dims[r++] = t->type->dims[i];
    t = reshape(e, t, type_of(L, t->type->dtype, r, dims), x->span);
  }
  return tv(e, t, x->span);
}

// ---- builtin argument binding ---------------------------------------------------------------------
typedef struct BArgs {
  int op, np;
  const char *names[8];
  LVal *v[8];
  Span span;
} BArgs;

static void parse_names(Lower *L, int op, BArgs *g) {
  const char *sig = builtin_signature(L->a, op);
  const char *p = strchr(sig, '(');
  p = p ? p + 1 : sig;
  while (*p && *p != ')' && g->np < 8) {
    while (*p == ' ' || *p == ',') p++;
    const char *s = p;
    while (*p && *p != ',' && *p != ' ' && *p != ')' && *p != '=') p++;
    if (p > s) g->names[g->np++] = arena_strndup(L->a, s, (size_t)(p - s));
    while (*p && *p != ',' && *p != ')') p++;
  }
}

static BArgs bind_args(Env *e, Expr *call, int op) {
  BArgs g = {.op = op, .span = call->span};
  parse_names(e->L, op, &g);
  int pos = 0;
  for (int i = 0; i < call->args.len; i++) {
    Arg *a = VEC_AT(call->args, Arg, i);
    int idx = pos;
    if (a->name) {
      idx = -1;
      for (int k = 0; k < g.np; k++)
        if (!strcmp(g.names[k], a->name)) idx = k;
    } else pos++;
    MLC_ASSERT(idx >= 0 && idx < g.np);
    g.v[idx] = lower_eval(e, a->value);
  }
  return g;
}

static IrNode *T(Env *e, BArgs *g, int i) {
  MLC_ASSERT(g->v[i]);
  if (g->v[i]->kind != LV_TENSOR) lower_fail(e->L, g->v[i]->span, "expected a tensor");
  return g->v[i]->node;
}

static int64_t I(Env *e, BArgs *g, int i, int64_t deflt) {
  return g->v[i] ? int_of(e->L, g->v[i]) : deflt;
}

static double F(Env *e, BArgs *g, int i, double deflt) {
  return g->v[i] ? lower_num(e->L, g->v[i]) : deflt;
}

static int norm_dim(int64_t d, int n) { return (int)(d < 0 ? d + n : d); }

// stride = 2 or [2, 1]
static void pair(Env *e, BArgs *g, int i, int64_t deflt, int64_t out[2]) {
  LVal *v = g->v[i];
  if (!v) out[0] = out[1] = deflt;
  else if (v->kind == LV_LIST) {
    MLC_ASSERT(v->items.len == 2);
    out[0] = int_of(e->L, VEC_AT(v->items, LVal, 0));
    out[1] = int_of(e->L, VEC_AT(v->items, LVal, 1));
  } else out[0] = out[1] = int_of(e->L, v);
}

// A shape list ([B, 28, 28]) with at most one -1, inferred from numel.
static Type *shape_type(Env *e, LVal *l, DType dt, Dim *numel) {
  Lower *L = e->L;
  MLC_ASSERT(l->kind == LV_LIST);
  int r = l->items.len, infer = -1;
  Dim **dims = arena_alloc(L->a, sizeof(Dim *) * (size_t)(r + 1));
  Dim *known = dim_const(L->a, 1);
  for (int i = 0; i < r; i++) {
    LVal *x = VEC_AT(l->items, LVal, i);
    int64_t k;
    MLC_ASSERT(x->kind == LV_DIM);
    if (dim_is_const(x->dim, &k) && k == -1) {
      infer = i;
      continue;
    }
    dims[i] = x->dim;
    known = dim_mul(L->a, known, x->dim);
  }
  if (infer >= 0) {
    MLC_ASSERT(numel);
    dims[infer] = dim_div(L->a, numel, known);
    MLC_ASSERT(dims[infer]);
  }
  return type_of(L, dt, r, dims);
}

// ---- builtins by family ------------------------------------------------------------------------------
static IrOp ir_of(const char *name) {
  if (!strcmp(name, "logical_and")) return IR_AND;
  if (!strcmp(name, "logical_or")) return IR_OR;
  if (!strcmp(name, "logical_not")) return IR_NOT;
  int k = ir_op_lookup(name);
  MLC_ASSERT(k >= 0);
  return (IrOp)k;
}

static LVal *b_reduce(Env *e, BArgs *g, const char *name) {
  Lower *L = e->L;
  LVal *d = g->v[1];
  // max(a, b) with a tensor (or number) second operand is elementwise
  if ((g->op == BI_MAX || g->op == BI_MIN) && d && (d->kind == LV_TENSOR || d->kind == LV_FLOAT))
    return binary(e, g->op == BI_MAX ? IR_MAXIMUM : IR_MINIMUM, g->v[0], d, g->span);
  IrNode *x = T(e, g, 0);
  int r = x->type->rank, nd = 0;
  int64_t dims[64];
  if (!d) {
    for (int i = 0; i < r; i++) dims[nd++] = i;
  } else if (d->kind == LV_LIST) {
    for (int i = 0; i < d->items.len; i++) dims[nd++] = norm_dim(int_of(L, VEC_AT(d->items, LVal, i)), r);
  } else {
    dims[nd++] = norm_dim(int_of(L, d), r);
  }
  for (int i = 1; i < nd; i++) // ascending
    for (int j = i; j > 0 && dims[j - 1] > dims[j]; j--) {
      int64_t t = dims[j];
      dims[j] = dims[j - 1];
      dims[j - 1] = t;
    }
  bool keep = g->v[2] && g->v[2]->b;
  return tv(e, reduce(e, ir_of(name), x, dims, nd, keep, g->span), g->span);
}

static LVal *b_view(Env *e, BArgs *g) {
  Lower *L = e->L;
  Span sp = g->span;
  IrNode *x = g->op == BI_CONCAT ? NULL : T(e, g, 0);
  int r = x ? x->type->rank : 0;
  Type *t;
  switch (g->op) {
  case BI_RESHAPE:
    t = shape_type(e, g->v[1], x->type->dtype, type_numel(L->a, x->type));
    return tv(e, reshape(e, x, t, sp), sp);
  case BI_BROADCAST_TO:
    t = shape_type(e, g->v[1], x->type->dtype, NULL);
    if (type_eq(t, x->type)) return tv(e, x, sp);
    return tv(e, lower_build(e, IR_BROADCAST_TO, &x, 1, NULL, t, sp), sp);
  case BI_FLATTEN: {
    int s = norm_dim(I(e, g, 1, 1), r), en = norm_dim(I(e, g, 2, -1), r), k = 0;
    Dim **dims = arena_alloc(L->a, sizeof(Dim *) * (size_t)(r + 1));
    for (int i = 0; i < r; i++) {
      if (i > s && i <= en) dims[k - 1] = dim_mul(L->a, dims[k - 1], x->type->dims[i]);
      else dims[k++] = x->type->dims[i];
    }
    return tv(e, reshape(e, x, type_of(L, x->type->dtype, k, dims), sp), sp);
  }
  case BI_UNSQUEEZE: {
    int d = norm_dim(I(e, g, 1, 0), r + 1), k = 0;
    Dim **dims = arena_alloc(L->a, sizeof(Dim *) * (size_t)(r + 2));
    for (int i = 0; i <= r; i++) dims[i] = i == d ? dim_const(L->a, 1) : x->type->dims[k++];
    return tv(e, reshape(e, x, type_of(L, x->type->dtype, r + 1, dims), sp), sp);
  }
  case BI_SQUEEZE: {
    int d = norm_dim(I(e, g, 1, 0), r), k = 0;
    Dim **dims = arena_alloc(L->a, sizeof(Dim *) * (size_t)(r + 1));
    for (int i = 0; i < r; i++)
      if (i != d) dims[k++] = x->type->dims[i];
    return tv(e, reshape(e, x, type_of(L, x->type->dtype, k, dims), sp), sp);
  }
  case BI_TRANSPOSE: {
    int64_t perm[64];
    for (int i = 0; i < r; i++) perm[i] = i;
    int a = norm_dim(I(e, g, 1, 0), r), b = norm_dim(I(e, g, 2, 1), r);
    if (a == b) return tv(e, x, sp);
    perm[a] = b;
    perm[b] = a;
    return tv(e, transpose(e, x, perm, sp), sp);
  }
  case BI_PERMUTE: {
    int64_t perm[64];
    LVal *l = g->v[1];
    for (int i = 0; i < r; i++) perm[i] = norm_dim(int_of(L, VEC_AT(l->items, LVal, i)), r);
    return tv(e, transpose(e, x, perm, sp), sp);
  }
  case BI_SLICE: {
    int d = norm_dim(I(e, g, 1, 0), r);
    return tv(e, slice_range(e, x, d, g->v[2]->dim, g->v[3]->dim, I(e, g, 4, 1), sp), sp);
  }
  case BI_CONCAT: {
    LVal *l = g->v[0];
    int n = l->items.len;
    IrNode **in = arena_alloc(L->a, sizeof(IrNode *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) in[i] = VEC_AT(l->items, LVal, i)->node;
    IrAttrs as = {0};
    ir_attr_set_int(L->a, &as, IRA_DIM, norm_dim(I(e, g, 1, 0), in[0]->type->rank));
    return tv(e, lower_build(e, IR_CONCAT, in, n, &as, NULL, sp), sp);
  }
  }
  MLC_UNREACHABLE();
}

static LVal *b_conv_pool(Env *e, BArgs *g) {
  Lower *L = e->L;
  Span sp = g->span;
  IrAttrs as = {0};
  int64_t p[2];
  if (g->op == BI_CONV2D) {
    IrNode *in[2] = {T(e, g, 0), T(e, g, 1)};
    pair(e, g, 3, 1, p);
    ir_attr_set_ints(L->a, &as, IRA_STRIDE, p, 2);
    pair(e, g, 4, 0, p);
    ir_attr_set_ints(L->a, &as, IRA_PADDING, p, 2);
    pair(e, g, 5, 1, p);
    ir_attr_set_ints(L->a, &as, IRA_DILATION, p, 2);
    ir_attr_set_int(L->a, &as, IRA_GROUPS, I(e, g, 6, 1));
    IrNode *y = lower_build(e, IR_CONV2D, in, 2, &as, NULL, sp);
    if (g->v[2]) { // bias [C] -> [C, 1, 1], added over [B, C, H, W]
      IrNode *b = T(e, g, 2);
      Dim *dims[3] = {b->type->dims[0], dim_const(L->a, 1), dim_const(L->a, 1)};
      y = bin(e, IR_ADD, y, reshape(e, b, type_of(L, b->type->dtype, 3, dims), sp), sp);
    }
    return tv(e, y, sp);
  }
  IrNode *x = T(e, g, 0);
  int64_t k[2];
  pair(e, g, 1, 0, k);
  ir_attr_set_ints(L->a, &as, IRA_KERNEL, k, 2);
  if (g->v[2]) pair(e, g, 2, 0, p);
  else p[0] = k[0], p[1] = k[1];
  ir_attr_set_ints(L->a, &as, IRA_STRIDE, p, 2);
  pair(e, g, 3, 0, p);
  ir_attr_set_ints(L->a, &as, IRA_PADDING, p, 2);
  return tv(e, lower_build(e, g->op == BI_MAX_POOL2D ? IR_MAX_POOL2D : IR_AVG_POOL2D, &x, 1, &as,
                           NULL, sp),
            sp);
}

// torch's running-stat update, as stores of the buffers:
//   running_mean = (1 - momentum) * running_mean + momentum * mean
//   running_var  = (1 - momentum) * running_var  + momentum * var * M / (M - 1)
// (the unbiased variance; M elements per channel, counted in the graph when
// the batch size is symbolic).
static void running_update(Env *e, IrNode *buf, IrNode *stat, double mom, bool unbias, IrNode *x,
                           const int64_t *R, int nr, Span sp) {
  if (buf->op != IR_BUFFER) return;
  Lower *L = e->L;
  Type *s = type_scalar(L->a, buf->type->dtype);
  if (unbias) {
    Dim *M = dim_const(L->a, 1);
    for (int i = 0; i < nr; i++) M = dim_mul(L->a, M, x->type->dims[R[i]]);
    int64_t k;
    if (dim_is_const(M, &k)) {
      stat = bin(e, IR_MUL, stat, lower_const(e, k > 1 ? (double)k / (double)(k - 1) : 1, s, sp), sp);
    } else {
      IrNode *cnt = reduce(e, IR_SUM, lower_const(e, 1, x->type, sp), R, nr, false, sp);
      IrNode *cm1 = bin(e, IR_SUB, cnt, lower_const(e, 1, s, sp), sp);
      stat = bin(e, IR_DIV, bin(e, IR_MUL, stat, cnt, sp), cm1, sp);
    }
  }
  IrNode *a = bin(e, IR_MUL, buf, lower_const(e, 1 - mom, s, sp), sp);
  IrNode *b = bin(e, IR_MUL, stop_grad(e, stat, sp), lower_const(e, mom, s, sp), sp);
  ir_store(e->f, buf->name, bin(e, IR_ADD, a, b, sp), sp);
}

// Training: the biased batch statistics over every dim but 1, in the form
// autodiff recognises (mean(x) and mean(d * d) with d = x - mean(x, keepdim)),
// and the running-stat updates as stores.
static LVal *b_batch_norm(Env *e, BArgs *g) {
  Lower *L = e->L;
  Span sp = g->span;
  IrNode *in[5];
  for (int i = 0; i < 5; i++) in[i] = T(e, g, i);
  IrAttrs as = {0};
  ir_attr_set_float(L->a, &as, IRA_EPS, F(e, g, 6, 1e-5));
  if (L->train) {
    IrNode *x = in[0];
    int64_t R[64];
    int nr = 0;
    for (int i = 0; i < x->type->rank; i++)
      if (i != 1) R[nr++] = i;
    in[3] = reduce(e, IR_MEAN, x, R, nr, false, sp);
    IrNode *d = bin(e, IR_SUB, x, reduce(e, IR_MEAN, x, R, nr, true, sp), sp);
    in[4] = reduce(e, IR_MEAN, bin(e, IR_MUL, d, d, sp), R, nr, false, sp);
    double mom = F(e, g, 5, 0.1);
    running_update(e, T(e, g, 3), in[3], mom, false, x, R, nr, sp);
    running_update(e, T(e, g, 4), in[4], mom, true, x, R, nr, sp);
  }
  return tv(e, lower_build(e, IR_BATCH_NORM, in, 5, &as, NULL, sp), sp);
}

static LVal *b_nn(Env *e, BArgs *g) {
  Lower *L = e->L;
  Span sp = g->span;
  IrAttrs as = {0};
  switch (g->op) {
  case BI_BATCH_NORM: return b_batch_norm(e, g);
  case BI_LAYER_NORM: {
    IrNode *in[3] = {T(e, g, 0), T(e, g, 1), T(e, g, 2)};
    ir_attr_set_float(L->a, &as, IRA_EPS, F(e, g, 3, 1e-5));
    ir_attr_set_int(L->a, &as, IRA_NDIMS, in[1]->type->rank);
    return tv(e, lower_build(e, IR_LAYER_NORM, in, 3, &as, NULL, sp), sp);
  }
  case BI_DROPOUT: {
    IrNode *x = T(e, g, 0);
    double p = F(e, g, 1, 0.5);
    if (!L->train || p == 0) return tv(e, x, sp);
    ir_attr_set_float(L->a, &as, IRA_P, p);
    return tv(e, lower_build(e, IR_DROPOUT, &x, 1, &as, NULL, sp), sp);
  }
  case BI_EMBEDDING: {
    IrNode *in[2] = {T(e, g, 1), T(e, g, 0)};
    return tv(e, lower_build(e, IR_EMBEDDING, in, 2, NULL, NULL, sp), sp);
  }
  }
  MLC_UNREACHABLE();
}

static LVal *b_loss(Env *e, BArgs *g) {
  Span sp = g->span;
  IrNode *x = T(e, g, 0), *y = T(e, g, 1);
  if (g->op == BI_MSE) return tv(e, bin(e, IR_MSE, x, y, sp), sp);
  if (g->op == BI_BCE_WITH_LOGITS) return tv(e, bin(e, IR_BCE_WITH_LOGITS, x, y, sp), sp);
  IrNode *ce = bin(e, IR_CROSS_ENTROPY, x, y, sp);
  double ls = F(e, g, 2, 0);
  if (ls == 0) return tv(e, ce, sp);
  // (1 - ls) * cross_entropy + ls * mean(-log_softmax(x))
  DType dt = x->type->dtype;
  Type *s = type_scalar(e->L->a, dt);
  IrAttrs as = {0};
  ir_attr_set_int(e->L->a, &as, IRA_DIM, x->type->rank - 1);
  IrNode *lsm = lower_build(e, IR_LOG_SOFTMAX, &x, 1, &as, NULL, sp);
  int64_t all[64];
  for (int i = 0; i < x->type->rank; i++) all[i] = i;
  IrNode *sm = reduce(e, IR_MEAN, un(e, IR_NEG, lsm, sp), all, x->type->rank, false, sp);
  IrNode *a = bin(e, IR_MUL, lower_const(e, 1 - ls, s, sp), ce, sp);
  IrNode *b = bin(e, IR_MUL, lower_const(e, ls, s, sp), sm, sp);
  return tv(e, bin(e, IR_ADD, a, b, sp), sp);
}

static LVal *b_construct(Env *e, BArgs *g) {
  Lower *L = e->L;
  Span sp = g->span;
  switch (g->op) {
  case BI_ARANGE: {
    Dim *n = g->v[0]->dim;
    return tv(e, lower_build(e, IR_ARANGE, NULL, 0, NULL, type_of(L, DT_I64, 1, &n), sp), sp);
  }
  case BI_CAUSAL_MASK: {
    Dim *n[2] = {g->v[0]->dim, g->v[0]->dim};
    return tv(e, lower_build(e, IR_CAUSAL_MASK, NULL, 0, NULL, type_of(L, DT_BOOL, 2, n), sp), sp);
  }
  default: break;
  }
  bool full = g->op == BI_FULL;
  int di = full ? 2 : 1;
  DType dt = g->v[di] ? (DType)g->v[di]->dtype : DT_F32;
  double v = full ? lower_num(L, g->v[1]) : g->op == BI_ONES;
  return tv(e, lower_const(e, v, shape_type(e, g->v[0], dt, NULL), sp), sp);
}

LVal *lower_builtin(Env *e, Expr *call, const char *name) {
  Lower *L = e->L;
  int op = builtin_lookup(name);
  MLC_ASSERT(op >= 0);
  BArgs g = bind_args(e, call, op);
  Span sp = call->span;
  switch (builtin_class(op)) {
  case OC_ELEMWISE_UNARY:
    if (g.v[0]->kind != LV_TENSOR) return lower_floatv(L, fold_unary(op, lower_num(L, g.v[0])), sp);
    return tv(e, un(e, ir_of(name), g.v[0]->node, sp), sp);
  case OC_ELEMWISE_BINARY:
  case OC_COMPARE:
  case OC_LOGICAL:
    if (op == BI_LOGICAL_NOT) {
      if (g.v[0]->kind != LV_TENSOR) return lower_boolv(L, !g.v[0]->b, sp);
      return tv(e, un(e, IR_NOT, g.v[0]->node, sp), sp);
    }
    if (g.v[0]->kind != LV_TENSOR && g.v[1]->kind != LV_TENSOR) {
      static const int ops[] = {[BI_ADD] = OP_ADD, [BI_SUB] = OP_SUB, [BI_MUL] = OP_MUL,
                                [BI_DIV] = OP_DIV, [BI_POW] = OP_POW, [BI_LT] = OP_LT,
                                [BI_LE] = OP_LE, [BI_GT] = OP_GT, [BI_GE] = OP_GE,
                                [BI_EQ] = OP_EQ, [BI_NE] = OP_NE, [BI_LOGICAL_AND] = OP_AND,
                                [BI_LOGICAL_OR] = OP_OR};
      if (op == BI_MAXIMUM || op == BI_MINIMUM) {
        double a = lower_num(L, g.v[0]), b = lower_num(L, g.v[1]);
        return lower_floatv(L, (op == BI_MAXIMUM) == (a > b) ? a : b, sp);
      }
      return fold(e, ops[op], g.v[0], g.v[1], sp);
    }
    return binary(e, ir_of(name), g.v[0], g.v[1], sp);
  case OC_SELECT: {
    DType dt = partner_dtype(g.v[1], g.v[2]);
    IrNode *in[3] = {operand(e, g.v[0], DT_BOOL), operand(e, g.v[1], dt), operand(e, g.v[2], dt)};
    return tv(e, lower_build(e, IR_WHERE, in, 3, NULL, NULL, sp), sp);
  }
  case OC_REDUCE: return b_reduce(e, &g, name);
  case OC_NORMALIZE: {
    IrNode *x = T(e, &g, 0);
    IrAttrs as = {0};
    ir_attr_set_int(L->a, &as, IRA_DIM, norm_dim(I(e, &g, 1, -1), x->type->rank));
    return tv(e, lower_build(e, ir_of(name), &x, 1, &as, NULL, sp), sp);
  }
  case OC_VIEW: return b_view(e, &g);
  case OC_MATMUL: return tv(e, bin(e, IR_MATMUL, T(e, &g, 0), T(e, &g, 1), sp), sp);
  case OC_CONV:
  case OC_POOL: return b_conv_pool(e, &g);
  case OC_NN: return b_nn(e, &g);
  case OC_LOSS: return b_loss(e, &g);
  case OC_CAST: {
    IrNode *x = T(e, &g, 0);
    if (op == BI_STOP_GRADIENT) return tv(e, un(e, IR_STOP_GRADIENT, x, sp), sp);
    Type *t = type_copy(L->a, x->type);
    t->weak = false;
    t->dtype = (DType)g.v[1]->dtype;
    if (t->dtype == x->type->dtype) return tv(e, x, sp);
    return tv(e, lower_build(e, IR_CAST, &x, 1, NULL, t, sp), sp);
  }
  case OC_CONSTRUCT: return b_construct(e, &g);
  case OC_DATA: break;
  }
  lower_fail(L, sp, "%s(...) is not a graph op", name);
}
