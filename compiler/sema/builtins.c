// builtins.c — built-in operators: argument binding, the argument helpers,
// and the shape rules of the elementwise, reduction, view and matmul ops.
// Layers, losses and constructors are in builtins_nn.c, data sources in
// builtins_data.c; the op list itself is ops.def.
//
// Input: a BuiltinCall (evaluated argument Values, positional or named).
// Output: the result Value (a tensor type, or a folded constant for scalar
// math on constants) and the call's forward FLOPs in c->flops, or NULL
// after reporting errors at the offending argument's span.
//
// Dtype rules: no implicit promotion. Binary operands need equal dtypes; an
// untyped literal (a weak rank-0 tensor) adopts the other operand's dtype
// (an integer literal fits any numeric dtype, a float literal only float
// dtypes). Ops that only make sense on floats (exp, mean, softmax, ...)
// refuse integer and bool tensors.
//
// FLOPs convention (c->flops, a polynomial in the shape symbols; NULL = 0):
//   elementwise, compare, logical, where ... numel of the result
//   matmul ................................. 2*M*N*K*batch
//   conv2d ................................. 2*B*Cout*Ho*Wo*(Cin/groups)*kh*kw
//                                            (+ B*Cout*Ho*Wo with a bias)
//   max/avg pooling ........................ numel_out*kh*kw
//   reductions ............................. numel of the input
//   softmax, log_softmax ................... 5*numel
//   batch_norm, layer_norm ................. 8*numel
//   dropout ................................ numel
//   cross_entropy .......................... 5*N*C
//   mse 3*numel, bce_with_logits 5*numel
//   views, casts, embedding, constructors .. 0
#include "builtins_internal.h"
#include "sema/checked.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/scalar.h"

// ---- the op table ------------------------------------------------------------------
typedef Value *(*Rule)(Args *g);

#define IR_NONE (-1) // data sources: not graph ops
static const struct {
  const char *name;
  const char *sig; // parameter names, "= default" marks an optional one
  OpClass cls;
  int ir;          // IrOp, or IR_NONE
  Rule rule;
} op_table[] = {
#define OP(id, name, sig, cls, ir, rule, emit) {name, sig, OC_##cls, IR_##ir, bi_rule_##rule},
#include "ops.def"
};
#undef IR_NONE
static_assert(sizeof op_table / sizeof op_table[0] == BI_COUNT,
              "op_table out of step with ops.def");

static const char *const op_names[] = {
#define OP(id, name, sig, cls, ir, rule, emit) name,
#include "ops.def"
};

int builtin_lookup(const char *name) {
  for (int i = 0; i < BI_COUNT; i++)
    if (strcmp(op_table[i].name, name) == 0) return i;
  return -1;
}

bool builtin_exists(const char *name) { return builtin_lookup(name) >= 0; }

const char *const *builtin_names(int *n) {
  *n = BI_COUNT;
  return op_names;
}

const char *builtin_name(int op) {
  return op >= 0 && op < BI_COUNT ? op_table[op].name : "?";
}

OpClass builtin_class(int op) {
  MLC_ASSERT(op >= 0 && op < BI_COUNT);
  return op_table[op].cls;
}

int builtin_ir_op(int op) {
  MLC_ASSERT(op >= 0 && op < BI_COUNT);
  return op_table[op].ir;
}

bool builtin_is_data_source(const char *name) {
  int op = builtin_lookup(name);
  return op >= 0 && op_table[op].cls == OC_DATA;
}

// ---- signatures and binding ---------------------------------------------------------------
// One parameter of a signature: its name and the text of its default (NULL:
// required).
typedef struct SigParam {
  const char *name;
  const char *deflt;
} SigParam;

// Splits "x, dim = all, keepdim = false" into parameters (copied into the
// arena); returns how many.
static int parse_sig(Arena *a, const char *sig, SigParam *out) {
  int n = 0;
  for (const char *p = sig; *p && n < BI_MAXP;) {
    while (*p == ' ' || *p == ',') p++;
    const char *s = p;
    while (*p && *p != ' ' && *p != ',') p++;
    if (p == s) break;
    out[n].name = arena_strndup(a, s, (size_t)(p - s));
    while (*p == ' ') p++;
    out[n].deflt = NULL;
    if (*p == '=') {
      p++;
      while (*p == ' ') p++;
      s = p;
      int depth = 0; // the default runs to the next top-level comma
      while (*p && !(*p == ',' && depth == 0)) {
        depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
        p++;
      }
      out[n].deflt = arena_strndup(a, s, (size_t)(p - s));
    }
    n++;
  }
  return n;
}

// The value of a default written in a signature: an integer, a float,
// true/false or a dtype; NULL for the ones a rule applies (all, none,
// kernel, []).
static Value *default_value(Arena *a, const char *text) {
  char *end;
  long long k = strtoll(text, &end, 10);
  if (end != text && !*end) return value_dim(a, (Span){0}, dim_const(a, k));
  double f = strtod(text, &end);
  if (end != text && !*end) return value_float(a, (Span){0}, f);
  Value *v = arena_alloc(a, sizeof *v);
  if (!strcmp(text, "true") || !strcmp(text, "false")) {
    v->kind = V_BOOL;
    v->b = text[0] == 't';
    return v;
  }
  if (dtype_from_name(text) >= 0) {
    v->kind = V_DTYPE;
    v->dtype = dtype_from_name(text);
    return v;
  }
  return NULL;
}

static int count_required(const SigParam *ps, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) k += ps[i].deflt == NULL;
  return k;
}

const char *builtin_signature(Arena *a, int op) {
  MLC_ASSERT(op >= 0 && op < BI_COUNT);
  return arena_printf(a, "%s(%s)", op_table[op].name, op_table[op].sig);
}

static void note_sig(Args *g) {
  diag_note(g->c->diags, (Span){0}, "%s", builtin_signature(g->a, g->op));
}

static void report_count(BuiltinCall *c, int op, int lo, int hi, Span sp) {
  const char *name = op_table[op].name;
  if (lo == hi)
    diag_error(c->diags, sp,
               "wrong number of arguments: %s takes %d argument%s, got %d", name,
               lo, lo == 1 ? "" : "s", c->nargs);
  else
    diag_error(c->diags, sp,
               "wrong number of arguments: %s takes %d to %d arguments, got %d",
               name, lo, hi, c->nargs);
}

static Span arg_span(BuiltinCall *c, int k) {
  Span sp = c->args[k] ? c->args[k]->span : (Span){0};
  if (c->names && c->names[k] && c->name_spans) sp = span_join(c->name_spans[k], sp);
  return sp.file ? sp : c->span;
}

// Binds one named argument k; false after an error.
static bool bind_named(BuiltinCall *c, Args *g, int k, Span *where) {
  const char *nm = c->names[k];
  Span nsp = c->name_spans && c->name_spans[k].file ? c->name_spans[k] : arg_span(c, k);
  for (int p = 0; p < g->np; p++) {
    if (strcmp(g->pname[p], nm) != 0) continue;
    if (g->given[p]) {
      diag_error(c->diags, nsp, "argument `%s` of %s given twice", nm, g->opname);
      diag_note(c->diags, where[p], "first given here");
      return false;
    }
    g->v[p] = c->args[k];
    g->given[p] = true;
    g->src[p] = k;
    where[p] = arg_span(c, k);
    return true;
  }
  const char *best = closest_name(nm, g->pname, g->np);
  if (best)
    diag_error(c->diags, nsp, "%s has no argument named `%s`; did you mean `%s`?",
               g->opname, nm, best);
  else
    diag_error(c->diags, nsp, "%s has no argument named `%s`", g->opname, nm);
  note_sig(g);
  return false;
}

bool bi_bind(BuiltinCall *c, int op, Args *g) {
  memset(g, 0, sizeof *g);
  g->c = c;
  g->a = c->arena;
  g->op = op;
  g->opname = op_table[op].name;
  SigParam ps[BI_MAXP];
  g->np = parse_sig(c->arena, op_table[op].sig, ps);
  int nreq = count_required(ps, g->np);
  for (int p = 0; p < g->np; p++) {
    g->pname[p] = ps[p].name;
    g->src[p] = -1;
  }
  Span where[BI_MAXP] = {{0}};
  int npos = 0;
  bool seen_named = false;
  for (int k = 0; k < c->nargs; k++) {
    if (c->names && c->names[k]) {
      seen_named = true;
      if (!bind_named(c, g, k, where)) return false;
      continue;
    }
    if (seen_named) {
      diag_error(c->diags, arg_span(c, k),
                 "positional argument after named arguments in a call to %s",
                 g->opname);
      return false;
    }
    if (npos >= g->np) {
      report_count(c, op, nreq, g->np, arg_span(c, k));
      note_sig(g);
      return false;
    }
    g->v[npos] = c->args[k];
    g->given[npos] = true;
    g->src[npos] = k;
    where[npos] = arg_span(c, k);
    npos++;
  }
  for (int p = 0; p < g->np; p++) {
    if (g->given[p]) continue;
    if (ps[p].deflt) { // the default, as a value the rule and the emitter read
      g->v[p] = default_value(c->arena, ps[p].deflt);
      continue;
    }
    if (c->nargs < nreq)
      report_count(c, op, nreq, g->np, c->span);
    else
      diag_error(c->diags, c->span, "missing argument `%s` in a call to %s",
                 g->pname[p], g->opname);
    note_sig(g);
    return false;
  }
  return true;
}

// The call's outputs for the emitter: the op the rule resolved, the value
// bound to each parameter and where it came from.
static void record_binding(BuiltinCall *c, const Args *g) {
  c->op = g->op;
  c->nparams = g->np;
  c->bound = arena_alloc(c->arena, sizeof(Value *) * (size_t)(g->np ? g->np : 1));
  c->source = arena_alloc(c->arena, sizeof(int) * (size_t)(g->np ? g->np : 1));
  for (int p = 0; p < g->np; p++) {
    c->bound[p] = g->v[p];
    c->source[p] = g->src[p];
  }
}

Value *builtin_check(BuiltinCall *c) {
  c->flops = NULL;
  c->attrs = (IrAttrs){0};
  c->slice_start = NULL;
  int op = builtin_lookup(c->name);
  if (op < 0) {
    diag_error(c->diags, c->name_span.file ? c->name_span : c->span,
               "unknown function `%s`", c->name);
    return NULL;
  }
  for (int k = 0; k < c->nargs; k++)
    if (!c->args[k]) return NULL; // an argument already reported an error
  Args g;
  if (!bi_bind(c, op, &g)) return NULL;
  Value *v = op_table[op].rule(&g);
  if (v) record_binding(c, &g);
  return v;
}

// ---- argument helpers ----------------------------------------------------------------------------
Span bi_span(const Args *g, int i) {
  if (i >= 0 && i < g->np && g->v[i] && g->v[i]->span.file) return g->v[i]->span;
  return g->c->span;
}

const char *bi_text(const Args *g, int i, const char *fallback) {
  if (i < 0 || i >= g->np || !g->v[i]) return fallback;
  Span s = g->v[i]->span;
  if (!s.file || s.len == 0 || s.len > 32 || s.off + s.len > s.file->len)
    return fallback;
  const char *t = s.file->text + s.off;
  for (uint32_t k = 0; k < s.len; k++)
    if (t[k] == '\n' || t[k] == '\r') return fallback;
  return arena_strndup(g->a, t, s.len);
}

static void bad_kind(Args *g, int i, const char *want) {
  diag_error(g->c->diags, bi_span(g, i), "argument `%s` of %s must be %s, got %s",
             g->pname[i], g->opname, want, value_str(g->a, g->v[i]));
}

// Ranks above this are refused once, here, so rules may use fixed arrays.
static Type *rank_ok(Args *g, int i, Type *t) {
  if (t->rank <= BI_MAXRANK) return t;
  diag_error(g->c->diags, bi_span(g, i), "tensors of rank %d are not supported (at most %d)",
             t->rank, BI_MAXRANK);
  return NULL;
}

Type *bi_tensor(Args *g, int i) {
  Value *v = g->v[i];
  if (v && v->kind == V_TENSOR && v->type) return rank_ok(g, i, v->type);
  if (v)
    bad_kind(g, i, "a tensor");
  else
    diag_error(g->c->diags, g->c->span, "missing argument `%s` in a call to %s",
               g->pname[i], g->opname);
  return NULL;
}

// A constant operand becomes a weak scalar: integer literals (and symbolic
// sizes) i64, float literals f32, bool literals bool. Its dtype is only
// provisional: unify() lets it adopt the other operand's.
Type *bi_operand(Args *g, int i) {
  Value *v = g->v[i];
  if (!v) return bi_tensor(g, i);
  Type *t = NULL;
  switch (v->kind) {
  case V_TENSOR: return rank_ok(g, i, v->type);
  case V_DIM: t = type_scalar(g->a, DT_I64); break;
  case V_FLOAT: t = type_scalar(g->a, DT_F32); break;
  case V_BOOL: t = type_scalar(g->a, DT_BOOL); break;
  default: bad_kind(g, i, "a tensor or a number"); return NULL;
  }
  t->weak = true;
  return t;
}

bool bi_int(Args *g, int i, int64_t *out) {
  Value *v = g->v[i];
  MLC_ASSERT(v); // given, or a number default in ops.def
  if (v->kind == V_DIM && dim_is_const(v->dim, out)) return true;
  bad_kind(g, i, v->kind == V_DIM ? "a constant integer" : "an integer");
  return false;
}

bool bi_float(Args *g, int i, double *out) {
  Value *v = g->v[i];
  int64_t k;
  MLC_ASSERT(v);
  if (v->kind == V_FLOAT)
    *out = v->f;
  else if (v->kind == V_DIM && dim_is_const(v->dim, &k))
    *out = (double)k;
  else {
    bad_kind(g, i, "a constant number");
    return false;
  }
  return true;
}

// Argument i when it is of `kind`; else reported as not `what`.
static Value *of_kind(Args *g, int i, ValKind kind, const char *what) {
  Value *v = g->v[i];
  MLC_ASSERT(v);
  if (v->kind == kind) return v;
  bad_kind(g, i, what);
  return NULL;
}

bool bi_bool(Args *g, int i, bool *out) {
  Value *v = of_kind(g, i, V_BOOL, "true or false");
  if (v) *out = v->b;
  return v != NULL;
}

bool bi_dtype(Args *g, int i, DType *out) {
  Value *v = of_kind(g, i, V_DTYPE, "a dtype (f32, f16, bf16, f64, i32, i64, bool)");
  if (!v) return false;
  *out = (DType)v->dtype;
  if (*out == DT_U8) {
    diag_error(g->c->diags, bi_span(g, i),
               "u8 is a data-file dtype, not a model dtype; use i32 or f32");
    return false;
  }
  return true;
}

static bool pair_item(Args *g, int i, Value *v, int64_t min, int64_t *out) {
  if (!v || v->kind != V_DIM || !dim_is_const(v->dim, out)) {
    bad_kind(g, i, "an integer or a list of two integers");
    return false;
  }
  if (*out < min) {
    diag_error(g->c->diags, v->span.file ? v->span : bi_span(g, i),
               "%s of %s must be at least %lld, got %lld", g->pname[i], g->opname,
               (long long)min, (long long)*out);
    return false;
  }
  return true;
}

bool bi_pair(Args *g, int i, int64_t min, int64_t out[2]) {
  Value *v = g->v[i];
  MLC_ASSERT(v);
  if (v->kind == V_LIST) {
    if (v->items.len != 2) {
      bad_kind(g, i, "an integer or a list of two integers");
      return false;
    }
    return pair_item(g, i, VEC_AT(v->items, Value, 0), min, &out[0]) &&
           pair_item(g, i, VEC_AT(v->items, Value, 1), min, &out[1]);
  }
  if (!pair_item(g, i, v, min, &out[0])) return false;
  out[1] = out[0];
  return true;
}

Value *bi_shape(Args *g, int i, bool allow_infer) {
  Value *l = g->v[i];
  if (!l || l->kind != V_LIST) {
    bad_kind(g, i, "a list of sizes such as [B, 784]");
    return NULL;
  }
  int ninfer = 0;
  for (int k = 0; k < l->items.len; k++) {
    Value *it = VEC_AT(l->items, Value, k);
    Span sp = it->span.file ? it->span : bi_span(g, i);
    int64_t v;
    if (it->kind != V_DIM) {
      diag_error(g->c->diags, sp, "sizes in %s must be integers, got %s",
                 g->opname, value_str(g->a, it));
      return NULL;
    }
    if (!dim_is_const(it->dim, &v) || v > 0) continue;
    if (v == -1 && allow_infer && ++ninfer == 1) continue;
    if (v == -1 && allow_infer)
      diag_error(g->c->diags, sp, "%s can infer only one size; this is a second -1",
                 g->opname);
    else
      diag_error(g->c->diags, sp, "sizes in %s must be positive%s, got %lld",
                 g->opname, allow_infer ? " (or -1 to infer one)" : "",
                 (long long)v);
    return NULL;
  }
  return l;
}

bool bi_norm_dim(Args *g, Span sp, int64_t d, const Type *t, int n, int *out) {
  if (d >= -n && d < n) {
    *out = (int)(d < 0 ? d + n : d);
    return true;
  }
  if (n == 0)
    diag_error(g->c->diags, sp, "dim %lld is out of range for %s (rank 0): a scalar has no dims",
               (long long)d, type_str(g->a, t));
  else if (n == t->rank)
    diag_error(g->c->diags, sp,
               "dim %lld is out of range for %s (rank %d); valid dims are %d to %d",
               (long long)d, type_str(g->a, t), t->rank, -n, n - 1);
  else
    diag_error(g->c->diags, sp,
               "dim %lld is out of range for %s of %s (rank %d); valid dims are %d to %d",
               (long long)d, g->opname, type_str(g->a, t), t->rank, -n, n - 1);
  return false;
}

static const char *literal_desc(Args *g, int i);

bool bi_need_float(Args *g, int i, const Type *t) {
  if (dtype_is_float(t->dtype)) return true;
  bool tensor = g->v[i] && g->v[i]->kind == V_TENSOR;
  diag_error(g->c->diags, bi_span(g, i), "%s expects a float tensor, got %s", g->opname,
             tensor ? type_str(g->a, t) : literal_desc(g, i));
  if (tensor)
    diag_note(g->c->diags, (Span){0}, "mlc never converts implicitly; use cast(%s, f32)",
              bi_text(g, i, g->pname[i]));
  return false;
}

bool bi_need_int(Args *g, int i, const Type *t) {
  if (t->dtype == DT_I32 || t->dtype == DT_I64) return true;
  diag_error(g->c->diags, bi_span(g, i), "%s expects an i32 or i64 tensor, got %s",
             g->opname, type_str(g->a, t));
  return false;
}

bool bi_same_dtype(Args *g, int i, const Type *x, int j, const Type *y) {
  if (x->dtype == y->dtype) return true;
  diag_error(g->c->diags, bi_span(g, j),
             "dtype mismatch: %s and %s; mlc never converts implicitly, use cast(%s, %s)",
             type_str(g->a, x), type_str(g->a, y), bi_text(g, j, g->pname[j]),
             dtype_name(x->dtype));
  (void)i;
  return false;
}

Dim *bi_ok(Args *g, Dim *d) {
  if (!d)
    diag_error(g->c->diags, g->c->span,
               "dimension too large: a size in %s overflows 64-bit integers", g->opname);
  return d;
}

Sym *bi_fresh(Args *g, const char *display, Span sp) {
  if (g->c->fresh_sym) return g->c->fresh_sym(g->c->env, display, sp);
  return sym_new(g->a, display, sp, true);
}

Value *bi_result(Args *g, Type *t) { return value_tensor(g->a, g->c->span, t); }

Dim *bi_k(Args *g, int64_t v) { return dim_const(g->a, v); }

const char *bi_list_str(Args *g, const Value *l) {
  const char *s = value_str(g->a, l);
  return l->kind == V_LIST ? s + strlen("list ") : s;
}

static void set_flops(Args *g, Dim *d) { g->c->flops = d; }

void bi_attr_int(Args *g, IrAttrKey k, int64_t v) { ir_attr_set_int(g->a, &g->c->attrs, k, v); }
void bi_attr_ints(Args *g, IrAttrKey k, const int64_t *v, int n) {
  ir_attr_set_ints(g->a, &g->c->attrs, k, v, n);
}
void bi_attr_float(Args *g, IrAttrKey k, double v) { ir_attr_set_float(g->a, &g->c->attrs, k, v); }

// ---- constants ---------------------------------------------------------------------------------------
static bool num_const(const Value *v, double *f, int64_t *iv, bool *isint) {
  if (v->kind == V_FLOAT) {
    *f = v->f, *isint = false;
    return true;
  }
  if (v->kind == V_DIM && dim_is_const(v->dim, iv)) {
    *f = (double)*iv, *isint = true;
    return true;
  }
  return false;
}

static Value *const_float(Args *g, double f) {
  if (isfinite(f)) return value_float(g->a, g->c->span, f);
  diag_error(g->c->diags, g->c->span, "%s on these constants has no finite value",
             g->opname);
  return NULL;
}

static Value *const_bool(Args *g, bool b) {
  Value *v = arena_alloc(g->a, sizeof *v);
  v->kind = V_BOOL;
  v->span = g->c->span;
  v->b = b;
  return v;
}

// ---- folding with the graph op's formula (graph/scalar.h) ------------------------------------
static IrOp ir_of(const Args *g) { return (IrOp)builtin_ir_op(g->op); }

// An integer whose double is exact (|k| <= 2^53).
static bool exact_int(int64_t k) { return k >= -(INT64_C(1) << 53) && k <= (INT64_C(1) << 53); }

// The constant result of an elementwise op of the table on numbers x[]: an
// integer when the op keeps integers (its row says `ints`) and every operand
// is one (abs(-3) = 3, maximum(2, 5) = 5), else a float (sqrt(64) = 8.0).
static Value *fold_elementwise(Args *g, const double *x, const bool *isint, int n, const double *p) {
  const ScOp *o = sc_op(ir_of(g));
  double r = sc_eval(ir_of(g), x, p);
  bool ints = o->ints;
  for (int i = 0; i < n; i++) ints = ints && isint[i] && exact_int((int64_t)x[i]);
  if (ints && r == floor(r) && exact_int((int64_t)r)) return value_dim(g->a, g->c->span, bi_k(g, (int64_t)r));
  if (ints) return bi_ok(g, NULL), NULL; // an integer out of exact range
  return const_float(g, r);
}

// The scalar parameters of an elementwise op (the arguments after its
// operands: compile-time numbers) into p and the IR attributes a, b.
static bool scalar_params(Args *g, double *p) {
  const ScOp *o = sc_op(ir_of(g));
  MLC_ASSERT(o && g->np == o->nin + o->nparams);
  for (int i = 0; i < o->nparams; i++)
    if (!bi_float(g, o->nin + i, &p[i])) return false;
  if (o->nparams) sc_set_params(g->a, &g->c->attrs, ir_of(g), p);
  return true;
}

// Unary ops on a constant fold at compile time. The caller has checked
// num_const.
static Value *fold_unary_const(Args *g, const Value *v, const double *p) {
  double f;
  int64_t k;
  bool isint;
  MLC_ASSERT(num_const(v, &f, &k, &isint));
  return fold_elementwise(g, &f, &isint, 1, p);
}

// Two constants fold: integers stay integers (also symbolic ones) for
// + - *, and maximum/minimum of integers; / and pow give floats (pow(2, 3)
// = 8.0). Returns NULL with *folded false when the operands are not both
// constants.
static Value *fold_binary_const(Args *g, const Value *x, const Value *y, bool *folded) {
  int op = g->op;
  *folded = true;
  bool intop = op == BI_ADD || op == BI_SUB || op == BI_MUL;
  if (intop && x->kind == V_DIM && y->kind == V_DIM) {
    Dim *d = op == BI_ADD   ? dim_add(g->a, x->dim, y->dim)
             : op == BI_SUB ? dim_sub(g->a, x->dim, y->dim)
                            : dim_mul(g->a, x->dim, y->dim);
    return bi_ok(g, d) ? value_dim(g->a, g->c->span, d) : NULL;
  }
  double f[2];
  int64_t k[2];
  bool isint[2];
  if (!num_const(x, &f[0], &k[0], &isint[0]) || !num_const(y, &f[1], &k[1], &isint[1])) {
    *folded = false;
    return NULL;
  }
  isint[0] = isint[0] && op != BI_DIV && op != BI_POW; // / and pow give floats
  return fold_elementwise(g, f, isint, 2, NULL);
}

static bool is_const_value(const Value *v) {
  return v->kind == V_FLOAT || v->kind == V_BOOL ||
         (v->kind == V_DIM && dim_is_const(v->dim, NULL));
}

// ---- dtype unification -----------------------------------------------------------------------------
static const char *literal_desc(Args *g, int i) {
  const Value *v = g->v[i];
  if (v->kind == V_TENSOR) return type_str(g->a, v->type);
  const char *what = v->kind == V_FLOAT ? "float" : v->kind == V_BOOL ? "bool" : "integer";
  return arena_printf(g->a, "the %s constant %s", what,
                      value_str(g->a, v) + strlen(valkind_name(v->kind)) + 1);
}

// Can a weak literal of provisional dtype `lit` take dtype `dt`? Integer
// literals fit any numeric dtype, float literals float dtypes, bool bool.
static bool literal_fits(DType lit, DType dt) {
  if (lit == DT_BOOL) return dt == DT_BOOL;
  if (lit == DT_F32) return dtype_is_float(dt);
  return dt != DT_BOOL;
}

// The common dtype of operand parameters pi[0..n): the first strong operand's;
// weak literals adopt it. All weak: float if any float literal, else i64,
// else bool. Returns -1 after reporting a mismatch at `sp`.
static int unify(Args *g, Type **ts, const int *pi, int n, Span sp) {
  int strong = -1;
  for (int k = 0; k < n; k++) {
    if (ts[k]->weak) continue;
    if (strong < 0) {
      strong = k;
    } else if (ts[k]->dtype != ts[strong]->dtype) {
      diag_error(g->c->diags, sp,
                 "dtype mismatch: %s and %s; mlc never converts implicitly, use cast(%s, %s)",
                 type_str(g->a, ts[strong]), type_str(g->a, ts[k]),
                 bi_text(g, pi[k], g->pname[pi[k]]), dtype_name(ts[strong]->dtype));
      return -1;
    }
  }
  DType dt = strong >= 0 ? ts[strong]->dtype : DT_BOOL;
  if (strong < 0)
    for (int k = 0; k < n; k++)
      if (ts[k]->dtype == DT_F32 || (ts[k]->dtype == DT_I64 && dt == DT_BOOL))
        dt = ts[k]->dtype;
  for (int k = 0; k < n; k++) {
    if (!ts[k]->weak || literal_fits(ts[k]->dtype, dt)) continue;
    int other = strong >= 0 ? strong : (k == 0 ? 1 : 0);
    diag_error(g->c->diags, sp, "dtype mismatch: %s and %s; mlc never converts implicitly",
               literal_desc(g, pi[other]), literal_desc(g, pi[k]));
    if (strong >= 0 && dt != DT_BOOL)
      diag_note(g->c->diags, (Span){0}, "write the constant as %s, or use cast(%s, f32)",
                dtype_is_float(dt) ? "a float" : "an integer",
                bi_text(g, pi[strong], g->pname[pi[strong]]));
    return -1;
  }
  return (int)dt;
}

// ---- broadcasting diagnostics ------------------------------------------------------------------------
// Aligned (right-justified) index of dim `i` of a rank-`r` operand in a
// result of rank `rank`: the dim number the user sees in the result.
static int aligned(int i, int r, int rank) { return rank - (r - i); }

// The source text at sp when it is short and on one line, else NULL.
static const char *span_text(Arena *a, Span sp) {
  if (!sp.file || sp.len == 0 || sp.len > 48 || sp.off + sp.len > sp.file->len) return NULL;
  const char *t = sp.file->text + sp.off;
  if (memchr(t, '\n', sp.len)) return NULL;
  return arena_strndup(a, t, sp.len);
}

// The reduction without keepdim that made operand i (directly, or the local
// it was bound to): its check, the reduced dims (ascending, >= 0) and their
// count; NULL when operand i is no such reduction.
static const CkExpr *dropping_reduction(Args *g, int i, const int64_t **dims, int *nd) {
  Value *v = i >= 0 && i < g->np ? g->v[i] : NULL;
  const CkExpr *c = v ? (v->def ? v->def : v->ck) : NULL;
  if (!c || c->kind != CK_OP || c->nargs < 1 || !c->args[0] || !c->args[0]->type) return NULL;
  if (c->op != BI_SUM && c->op != BI_MEAN && c->op != BI_MAX && c->op != BI_MIN && c->op != BI_ARGMAX)
    return NULL;
  int64_t keep = 1;
  *dims = ir_attr_ints(&c->attrs, IRA_DIMS, nd);
  if (!ir_attr_int(&c->attrs, IRA_KEEPDIM, &keep) || keep || !*dims || *nd < 1) return NULL;
  return c;
}

// The reduced dims as text: "1" or "1, 2".
static const char *dims_text(Arena *a, const int64_t *dims, int nd) {
  StrBuf b = {0};
  for (int k = 0; k < nd; k++) sb_printf(&b, "%s%lld", k ? ", " : "", (long long)dims[k]);
  const char *t = arena_strdup(a, b.data ? b.data : "");
  sb_free(&b);
  return t;
}

// `name = call` when operand i is a local bound to the reduction, else the call.
static const char *reduction_text(Args *g, const CkExpr *c, int i) {
  const char *call = span_text(g->a, c->span), *name = bi_text(g, i, NULL);
  if (name && call && strcmp(name, call)) return arena_printf(g->a, "%s = %s", name, call);
  return call ? call : g->opname;
}

// The reduction's input type with the reduced dims kept as 1, in dtype dt.
static Type *kept_type(Args *g, const CkExpr *c, const int64_t *dims, int nd, DType dt) {
  Type *kept = type_copy(g->a, c->args[0]->type);
  kept->dtype = dt;
  for (int k = 0; k < nd; k++)
    if (dims[k] >= 0 && dims[k] < kept->rank) kept->dims[dims[k]] = dim_const(g->a, 1);
  return kept;
}

// After a broadcast mismatch: an operand that a reduction without keepdim
// made, whose form with the reduced dims kept as 1 broadcasts with the other
// operand, gets a note naming keepdim = true (x - mean(x, dim = 1) for
// x: [B, 10]).
static void note_keepdim(Args *g, const Type *x, const Type *y, int xi, int yi) {
  for (int s = 0; s < 2; s++) {
    int i = s ? yi : xi, nd = 0;
    const int64_t *dims = NULL;
    const CkExpr *c = dropping_reduction(g, i, &dims, &nd);
    if (!c) continue;
    Type *kept = kept_type(g, c, dims, nd, (s ? y : x)->dtype);
    BcResult r = s ? broadcast2(g->a, x, kept) : broadcast2(g->a, kept, y);
    if (r.status != BC_OK) continue;
    diag_note(g->c->diags, c->span,
              "%s drops dim%s %s of %s (giving %s); keepdim = true keeps %s as 1: %s broadcasts with %s",
              reduction_text(g, c, i), nd > 1 ? "s" : "", dims_text(g->a, dims, nd),
              type_str(g->a, c->args[0]->type), type_str(g->a, s ? y : x), nd > 1 ? "them" : "it",
              type_str(g->a, kept), type_str(g->a, s ? x : y));
    return;
  }
}

// After a broadcast that worked: an operand that a reduction without keepdim
// made and that the broadcast gives leading dims lines its kept dims up from
// the right. When that puts one of them under a different dim of the result
// than the one it had in the reduction's input (x / sum(x, dim = 1) for a
// square x: row j of the sum divides column j), the shapes agree by
// coincidence of sizes, and PyTorch computes the same thing silently; a
// warning says so, and how to say either meaning (keepdim = true, or an
// explicit unsqueeze/reshape, which makes the ranks equal and silences it).
// Reducing leading dims only (x - mean(x, dim = 0)) lines up as it came.
static void warn_realigned(Args *g, const Type *x, const Type *y, const Type *res, int xi, int yi, Span sp) {
  for (int s = 0; s < 2; s++) {
    const Type *t = s ? y : x;
    int i = s ? yi : xi, nd = 0;
    const int64_t *dims = NULL;
    const CkExpr *c = dropping_reduction(g, i, &dims, &nd);
    if (!c || t->rank == 0 || t->rank >= res->rank) continue;
    const Type *in = c->args[0]->type;
    if (in->rank - nd != t->rank || in->rank > res->rank) continue;
    int moved = -1, from = -1; // the first kept dim that lands elsewhere: its result dim, its input dim
    for (int d = 0, k = 0; d < in->rank && moved < 0; d++) {
      bool reduced = false;
      for (int j = 0; j < nd; j++) reduced |= dims[j] == d;
      if (reduced) continue;
      int64_t size = 0;
      int now = aligned(k++, t->rank, res->rank), was = aligned(d, in->rank, res->rank);
      bool one = dim_is_const(in->dims[d], &size) && size == 1; // a 1 has no positions to move
      if (now != was && !one) moved = now, from = d;
    }
    if (moved < 0) continue;
    diag_warning(g->c->diags, sp,
                 "%s drops dim%s %s of %s (giving %s), and broadcasting it to %s moves its values "
                 "from dim %d to dim %d: the sizes agree, the positions do not",
                 reduction_text(g, c, i), nd > 1 ? "s" : "", dims_text(g->a, dims, nd), type_str(g->a, in),
                 type_str(g->a, t), type_str(g->a, res), from + (res->rank - in->rank), moved);
    diag_note(g->c->diags, c->span,
              "keepdim = true keeps each value at its own position (%s); if this broadcast is meant, "
              "make the ranks equal with unsqueeze or reshape",
              type_str(g->a, kept_type(g, c, dims, nd, t->dtype)));
    return;
  }
}

static void report_bc(Args *g, const BcResult *r, const Type *x, const Type *y,
                      int xi, int yi, Span sp, const char *what) {
  Arena *a = g->a;
  int rank = x->rank > y->rank ? x->rank : y->rank;
  if (r->status == BC_MISMATCH) {
    diag_error(g->c->diags, sp, "cannot broadcast %s%s and %s: dim %d is %s vs %s", what,
               type_str(a, x), type_str(a, y), aligned(r->dim_a, x->rank, rank),
               dim_str(a, x->dims[r->dim_a]), dim_str(a, y->dims[r->dim_b]));
    if (!*what) note_keepdim(g, x, y, xi, yi);
    return;
  }
  // BC_SURPRISE: the higher-rank operand h has a 1 that would expand.
  bool xh = x->rank > y->rank;
  const Type *h = xh ? x : y, *l = xh ? y : x;
  int hd = xh ? r->dim_a : r->dim_b, ld = xh ? r->dim_b : r->dim_a;
  diag_error(g->c->diags, sp,
             "broadcasting %s%s with %s would expand the 1 in dim %d to %s and give %s; "
             "mlc refuses to broadcast a size-1 dim while also adding leading dims",
             what, type_str(a, x), type_str(a, y), hd, dim_str(a, l->dims[ld]),
             type_str(a, r->result));
  if (*what) return; // batch dims of matmul: the operands are not reshaped whole
  StrBuf b = {0};
  for (int k = 0, first = 1; k < h->rank; k++) {
    if (k == hd) continue;
    sb_printf(&b, "%s%s", first ? "" : ", ", dim_str(a, h->dims[k]));
    first = 0;
  }
  StrBuf o = {0};
  for (int k = 0; k < r->result->rank; k++)
    sb_printf(&o, "%s%s", k ? ", " : "", dim_str(a, r->result->dims[k]));
  diag_note(g->c->diags, (Span){0},
            "if you meant elementwise, make the ranks equal: reshape(%s, [%s]); "
            "if you meant an outer product, use broadcast_to(%s, [%s])",
            bi_text(g, xh ? xi : yi, "x"), b.data ? b.data : "",
            bi_text(g, xh ? yi : xi, "y"), o.data);
  sb_free(&b);
  sb_free(&o);
}

static Type *bcast(Args *g, Type *x, Type *y, int xi, int yi, Span sp) {
  BcResult r = broadcast2(g->a, x, y);
  if (r.status == BC_OK) {
    warn_realigned(g, x, y, r.result, xi, yi, sp);
    return r.result;
  }
  report_bc(g, &r, x, y, xi, yi, sp, "");
  return NULL;
}

// ---- elementwise ------------------------------------------------------------------------------------
// Ops the scalar table defines on floats only (its row lacks `ints`).
static bool float_only(const Args *g) { return !sc_op(ir_of(g))->ints; }

// unary: x[..] -> x[..], then its scalar parameters (numbers); float-only
// unless the op's row keeps integers (abs, neg, relu). On a constant it
// folds: sqrt(64) -> 8.0.
Value *bi_rule_unary(Args *g) {
  double p[SC_MAX_PARAMS];
  if (!scalar_params(g, p)) return NULL;
  if (is_const_value(g->v[0]) && g->v[0]->kind != V_BOOL) return fold_unary_const(g, g->v[0], p);
  Type *x = bi_operand(g, 0);
  if (!x) return NULL;
  if (float_only(g) ? !bi_need_float(g, 0, x) : x->dtype == DT_BOOL) {
    if (!float_only(g))
      diag_error(g->c->diags, bi_span(g, 0), "%s expects a numeric tensor, got %s",
                 g->opname, type_str(g->a, x));
    return NULL;
  }
  set_flops(g, type_numel(g->a, x));
  return bi_result(g, type_copy(g->a, x));
}

// binary: x[..] (+) y[..] -> broadcast2(x, y); equal dtypes (literals adopt).
// div and pow need floats (the graph's integer div floors, where PyTorch's /
// divides exactly, so the language refuses it); bool is not a number.
// Constants fold.
Value *bi_rule_binary(Args *g) {
  if (g->v[0]->kind != V_TENSOR && g->v[1]->kind != V_TENSOR) {
    bool folded;
    Value *f = fold_binary_const(g, g->v[0], g->v[1], &folded);
    if (folded) return f;
  }
  Type *ts[2] = {bi_operand(g, 0), bi_operand(g, 1)};
  if (!ts[0] || !ts[1]) return NULL;
  int dt = unify(g, ts, (int[]){0, 1}, 2, g->c->span);
  if (dt < 0) return NULL;
  int strong = ts[0]->weak ? 1 : 0;
  if (dt == DT_BOOL) {
    diag_error(g->c->diags, bi_span(g, strong), "%s expects numeric tensors, got %s",
               g->opname, type_str(g->a, ts[strong]));
    return NULL;
  }
  if ((float_only(g) || g->op == BI_DIV) && !dtype_is_float((DType)dt)) {
    Type *t = type_copy(g->a, ts[strong]);
    t->dtype = (DType)dt;
    return bi_need_float(g, strong, t), NULL;
  }
  Type *r = bcast(g, ts[0], ts[1], 0, 1, g->c->span);
  if (!r) return NULL;
  r->dtype = (DType)dt;
  set_flops(g, type_numel(g->a, r));
  return bi_result(g, r);
}

// compare: x[..] < y[..] -> bool[broadcast2(x, y)]; lt le gt ge need
// numbers, eq ne also take bools.
Value *bi_rule_compare(Args *g) {
  double f[2];
  int64_t kx, ky;
  bool ix, iy;
  if (num_const(g->v[0], &f[0], &kx, &ix) && num_const(g->v[1], &f[1], &ky, &iy)) {
    bool b = sc_eval(ir_of(g), f, NULL) != 0;
    if (ix && iy) // sizes compare exactly, however large
      b = g->op == BI_LT ? kx < ky : g->op == BI_LE ? kx <= ky : g->op == BI_GT ? kx > ky
        : g->op == BI_GE ? kx >= ky : g->op == BI_EQ ? kx == ky : kx != ky;
    return const_bool(g, b);
  }
  Type *ts[2] = {bi_operand(g, 0), bi_operand(g, 1)};
  if (!ts[0] || !ts[1]) return NULL;
  int dt = unify(g, ts, (int[]){0, 1}, 2, g->c->span);
  if (dt < 0) return NULL;
  if (dt == DT_BOOL && g->op != BI_EQ && g->op != BI_NE) {
    int s = ts[0]->weak ? 1 : 0;
    diag_error(g->c->diags, bi_span(g, s), "%s expects numeric tensors, got %s",
               g->opname, type_str(g->a, ts[s]));
    return NULL;
  }
  Type *r = bcast(g, ts[0], ts[1], 0, 1, g->c->span);
  if (!r) return NULL;
  r->dtype = DT_BOOL;
  set_flops(g, type_numel(g->a, r));
  return bi_result(g, r);
}

// logical: bool[..] and bool[..] -> bool[broadcast2]; not: bool[..] -> bool[..]
Value *bi_rule_logical(Args *g) {
  int n = g->op == BI_LOGICAL_NOT ? 1 : 2;
  if (g->v[0]->kind == V_BOOL && (n == 1 || g->v[1]->kind == V_BOOL)) {
    double b[2] = {g->v[0]->b, n == 2 && g->v[1]->b};
    return const_bool(g, sc_eval(ir_of(g), b, NULL) != 0);
  }
  Type *ts[2] = {NULL, NULL};
  for (int k = 0; k < n; k++) {
    if (!(ts[k] = bi_operand(g, k))) return NULL;
    if (ts[k]->dtype != DT_BOOL) {
      diag_error(g->c->diags, bi_span(g, k), "%s expects bool operands, got %s",
                 g->opname, literal_desc(g, k));
      diag_note(g->c->diags, (Span){0}, "compare to get a bool tensor, e.g. %s != 0",
                bi_text(g, k, "x"));
      return NULL;
    }
  }
  Type *r = n == 1 ? type_copy(g->a, ts[0]) : bcast(g, ts[0], ts[1], 0, 1, g->c->span);
  if (!r) return NULL;
  set_flops(g, type_numel(g->a, r));
  return bi_result(g, r);
}

// where: cond bool[..], x[..], y[..] -> broadcast of all three, dtype of x/y
Value *bi_rule_where(Args *g) {
  Type *ts[3] = {bi_operand(g, 0), bi_operand(g, 1), bi_operand(g, 2)};
  if (!ts[0] || !ts[1] || !ts[2]) return NULL;
  if (ts[0]->dtype != DT_BOOL) {
    diag_error(g->c->diags, bi_span(g, 0), "where expects a bool condition, got %s",
               literal_desc(g, 0));
    return NULL;
  }
  int dt = unify(g, ts + 1, (int[]){1, 2}, 2, g->c->span);
  if (dt < 0) return NULL;
  Type *xy = bcast(g, ts[1], ts[2], 1, 2, g->c->span);
  if (!xy) return NULL;
  xy->dtype = (DType)dt;
  Type *r = bcast(g, ts[0], xy, 0, 1, g->c->span);
  if (!r) return NULL;
  r->dtype = (DType)dt;
  r->weak = ts[1]->weak && ts[2]->weak;
  set_flops(g, type_numel(g->a, r));
  return bi_result(g, r);
}

// ---- reductions -----------------------------------------------------------------------------------------
// Marks the reduced dims of t in mask[] from parameter `pi` (absent: all
// dims; an integer; or a list of integers unless `single`).
static bool reduce_mask(Args *g, int pi, const Type *t, bool *mask, bool single) {
  Value *v = g->v[pi];
  if (!v) {
    for (int k = 0; k < t->rank; k++) mask[k] = true;
    return true;
  }
  Value *one[1] = {v};
  Value **items = one;
  int n = 1;
  if (v->kind == V_LIST && !single) {
    items = (Value **)v->items.data;
    n = v->items.len;
  }
  for (int k = 0; k < n; k++) {
    int64_t d;
    int nd;
    Span sp = items[k]->span.file ? items[k]->span : bi_span(g, pi);
    if (items[k]->kind != V_DIM || !dim_is_const(items[k]->dim, &d)) {
      bad_kind(g, pi, single ? "an integer" : "an integer or a list of integers");
      return false;
    }
    if (!bi_norm_dim(g, sp, d, t, t->rank, &nd)) return false;
    if (mask[nd]) {
      diag_error(g->c->diags, sp, "dim %d appears twice in %s", nd, g->opname);
      return false;
    }
    mask[nd] = true;
  }
  return true;
}

// sum mean max min argmax: x[d0, .., dn] -> the reduced dims dropped (or
// kept as 1 with keepdim); argmax -> i64; mean needs floats; max(a, b) with
// two tensors is maximum(a, b).
Value *bi_rule_reduce(Args *g) {
  Value *d = g->v[1];
  if ((g->op == BI_MAX || g->op == BI_MIN) && d &&
      (d->kind == V_TENSOR || d->kind == V_FLOAT)) {
    if (g->given[2]) {
      diag_error(g->c->diags, bi_span(g, 2),
                 "keepdim applies to %s over a dim; %s(a, b) is elementwise", g->opname,
                 g->opname);
      return NULL;
    }
    g->op = g->op == BI_MAX ? BI_MAXIMUM : BI_MINIMUM;
    return bi_rule_binary(g);
  }
  Type *x = bi_tensor(g, 0);
  bool keep;
  if (!x || !bi_bool(g, 2, &keep)) return NULL;
  if (g->op == BI_MEAN && !bi_need_float(g, 0, x)) return NULL;
  if (x->dtype == DT_BOOL) {
    diag_error(g->c->diags, bi_span(g, 0), "%s expects a numeric tensor, got %s",
               g->opname, type_str(g->a, x));
    diag_note(g->c->diags, (Span){0}, "count with cast(%s, i32)", bi_text(g, 0, "x"));
    return NULL;
  }
  bool mask[BI_MAXRANK] = {false};
  if (!reduce_mask(g, 1, x, mask, g->op == BI_ARGMAX)) return NULL;
  int n = 0;
  for (int k = 0; k < x->rank; k++) n += keep || !mask[k];
  Type *r = type_new(g->a, g->op == BI_ARGMAX ? DT_I64 : x->dtype, n);
  for (int k = 0, j = 0; k < x->rank; k++) {
    if (mask[k] && !keep) continue;
    r->dims[j] = mask[k] ? bi_k(g, 1) : x->dims[k];
    r->origin[j++] = mask[k] ? g->c->span : x->origin[k];
  }
  int64_t dims[BI_MAXRANK];
  int nd = 0;
  for (int k = 0; k < x->rank; k++)
    if (mask[k]) dims[nd++] = k; // ascending, as the graph IR wants them
  bi_attr_ints(g, IRA_DIMS, dims, nd);
  bi_attr_int(g, IRA_KEEPDIM, keep);
  set_flops(g, type_numel(g->a, x));
  return bi_result(g, r);
}

// softmax, log_softmax: x[..] -> x[..] along `dim` (default -1); floats
Value *bi_rule_softmax(Args *g) {
  Type *x = bi_tensor(g, 0);
  int64_t d;
  int nd;
  if (!x || !bi_int(g, 1, &d) || !bi_need_float(g, 0, x)) return NULL;
  if (!bi_norm_dim(g, bi_span(g, 1), d, x, x->rank, &nd)) return NULL;
  bi_attr_int(g, IRA_DIM, nd);
  set_flops(g, dim_mul(g->a, bi_k(g, 5), type_numel(g->a, x)));
  return bi_result(g, type_copy(g->a, x));
}

// ---- views ----------------------------------------------------------------------------------------------
// reshape: x[d..] -> [s..] with prod(s) == prod(d); one -1 is inferred by
// exact division.
Value *bi_rule_reshape(Args *g) {
  Type *x = bi_tensor(g, 0);
  Value *l = x ? bi_shape(g, 1, true) : NULL;
  if (!l) return NULL;
  int n = l->items.len, infer = -1;
  Type *r = type_new(g->a, x->dtype, n);
  Dim *prod = bi_k(g, 1);
  for (int k = 0; k < n; k++) {
    Value *it = VEC_AT(l->items, Value, k);
    int64_t v;
    r->origin[k] = it->span;
    if (dim_is_const(it->dim, &v) && v == -1) {
      infer = k;
      continue;
    }
    r->dims[k] = it->dim;
    prod = dim_mul(g->a, prod, it->dim);
  }
  Dim *numel = type_numel(g->a, x);
  if (!bi_ok(g, prod) || !bi_ok(g, numel)) return NULL;
  if (infer >= 0) {
    r->dims[infer] = dim_div(g->a, numel, prod);
    if (!r->dims[infer]) {
      diag_error(g->c->diags, bi_span(g, 1),
                 "reshape cannot infer the -1 in %s: %s has %s elements, not a multiple of %s",
                 bi_list_str(g, l), type_str(g->a, x), dim_str(g->a, numel),
                 dim_str(g->a, prod));
      return NULL;
    }
  } else if (!dim_eq(numel, prod)) {
    diag_error(g->c->diags, bi_span(g, 1),
               "reshape cannot turn %s (%s elements) into %s (%s elements)",
               type_str(g->a, x), dim_str(g->a, numel), bi_list_str(g, l),
               dim_str(g->a, prod));
    return NULL;
  }
  return bi_result(g, r);
}

// flatten: x[d0, .., dn] -> dims start_dim..end_dim multiplied into one
Value *bi_rule_flatten(Args *g) {
  Type *x = bi_tensor(g, 0);
  int64_t s, e;
  int ns, ne;
  if (!x || !bi_int(g, 1, &s) || !bi_int(g, 2, &e)) return NULL;
  if (!bi_norm_dim(g, bi_span(g, 1), s, x, x->rank, &ns) ||
      !bi_norm_dim(g, bi_span(g, 2), e, x, x->rank, &ne))
    return NULL;
  if (ns > ne) {
    diag_error(g->c->diags, bi_span(g, 1), "flatten start_dim %d comes after end_dim %d",
               ns, ne);
    return NULL;
  }
  Type *r = type_new(g->a, x->dtype, x->rank - (ne - ns));
  Dim *p = bi_k(g, 1);
  for (int k = ns; k <= ne; k++) p = dim_mul(g->a, p, x->dims[k]);
  if (!bi_ok(g, p)) return NULL;
  for (int k = 0, j = 0; k < x->rank; k++) {
    if (k > ns && k <= ne) continue;
    r->dims[j] = k == ns ? p : x->dims[k];
    r->origin[j++] = k == ns ? g->c->span : x->origin[k];
  }
  return bi_result(g, r);
}

// unsqueeze: x[d0, .., dn] -> a 1 inserted at `dim` (-rank-1 .. rank)
Value *bi_rule_unsqueeze(Args *g) {
  Type *x = bi_tensor(g, 0);
  int64_t d;
  int nd;
  if (!x || !bi_int(g, 1, &d)) return NULL;
  if (!bi_norm_dim(g, bi_span(g, 1), d, x, x->rank + 1, &nd)) return NULL;
  Type *r = type_new(g->a, x->dtype, x->rank + 1);
  for (int k = 0, j = 0; k < r->rank; k++) {
    r->dims[k] = k == nd ? bi_k(g, 1) : x->dims[j];
    r->origin[k] = k == nd ? g->c->span : x->origin[j++];
  }
  return bi_result(g, r);
}

// squeeze: x[.., 1, ..] -> that 1 removed; the dim must be the literal 1
Value *bi_rule_squeeze(Args *g) {
  Type *x = bi_tensor(g, 0);
  int64_t d, one;
  int nd;
  if (!x || !bi_int(g, 1, &d)) return NULL;
  if (!bi_norm_dim(g, bi_span(g, 1), d, x, x->rank, &nd)) return NULL;
  if (!dim_is_const(x->dims[nd], &one) || one != 1) {
    diag_error(g->c->diags, bi_span(g, 1), "squeeze needs dim %d of %s to be 1, but it is %s",
               nd, type_str(g->a, x), dim_str(g->a, x->dims[nd]));
    return NULL;
  }
  Type *r = type_new(g->a, x->dtype, x->rank - 1);
  for (int k = 0, j = 0; k < x->rank; k++) {
    if (k == nd) continue;
    r->dims[j] = x->dims[k];
    r->origin[j++] = x->origin[k];
  }
  return bi_result(g, r);
}

// transpose: x[.., a, .., b, ..] -> dims dim0 and dim1 swapped
Value *bi_rule_transpose(Args *g) {
  Type *x = bi_tensor(g, 0);
  int64_t d0, d1;
  int n0, n1;
  if (!x || !bi_int(g, 1, &d0) || !bi_int(g, 2, &d1)) return NULL;
  if (!bi_norm_dim(g, bi_span(g, 1), d0, x, x->rank, &n0) ||
      !bi_norm_dim(g, bi_span(g, 2), d1, x, x->rank, &n1))
    return NULL;
  int64_t perm[BI_MAXRANK];
  for (int k = 0; k < x->rank; k++) perm[k] = k == n0 ? n1 : k == n1 ? n0 : k;
  bi_attr_ints(g, IRA_PERM, perm, x->rank);
  Type *r = type_copy(g->a, x);
  r->dims[n0] = x->dims[n1], r->origin[n0] = x->origin[n1];
  r->dims[n1] = x->dims[n0], r->origin[n1] = x->origin[n0];
  return bi_result(g, r);
}

// permute: x[d0, .., dn] -> [d_p0, .., d_pn]; p a permutation of 0..n
Value *bi_rule_permute(Args *g) {
  Type *x = bi_tensor(g, 0);
  if (!x) return NULL;
  Value *l = g->v[1];
  if (l->kind != V_LIST) return bad_kind(g, 1, "a list of dims such as [0, 2, 1]"), NULL;
  if (l->items.len != x->rank) {
    diag_error(g->c->diags, bi_span(g, 1), "permute of %s needs %d dims, got %d",
               type_str(g->a, x), x->rank, l->items.len);
    return NULL;
  }
  Type *r = type_new(g->a, x->dtype, x->rank);
  bool seen[BI_MAXRANK] = {false};
  int64_t perm[BI_MAXRANK];
  for (int k = 0; k < x->rank; k++) {
    Value *it = VEC_AT(l->items, Value, k);
    Span sp = it->span.file ? it->span : bi_span(g, 1);
    int64_t d;
    int nd;
    if (it->kind != V_DIM || !dim_is_const(it->dim, &d))
      return bad_kind(g, 1, "a list of dims such as [0, 2, 1]"), NULL;
    if (!bi_norm_dim(g, sp, d, x, x->rank, &nd)) return NULL;
    if (seen[nd]) {
      diag_error(g->c->diags, sp,
                 "permute needs a permutation of 0 to %d; dim %d appears twice in %s",
                 x->rank - 1, nd, bi_list_str(g, l));
      return NULL;
    }
    seen[nd] = true;
    perm[k] = nd;
    r->dims[k] = x->dims[nd];
    r->origin[k] = x->origin[nd];
  }
  bi_attr_ints(g, IRA_PERM, perm, x->rank);
  return bi_result(g, r);
}

// Slice bound: an integer (symbolic allowed); a negative constant counts
// from the end of the dim `size`.
static Dim *slice_bound(Args *g, int i, Dim *size) {
  Value *v = g->v[i];
  int64_t k;
  if (v->kind != V_DIM) return bad_kind(g, i, "an integer"), NULL;
  if (dim_is_const(v->dim, &k) && k < 0) return bi_ok(g, dim_add(g->a, size, v->dim));
  return v->dim;
}

// slice: x[.., n, ..] -> x[.., ceil((end - start)/step), ..] along `dim`.
// On a constant dim, bounds must lie in 0..n after counting negatives from
// the end; a symbolic dim's bounds are checked when the data is bound.
Value *bi_rule_slice(Args *g) {
  Type *x = bi_tensor(g, 0);
  int64_t d, step, n, s, e;
  int nd;
  if (!x || !bi_int(g, 1, &d) || !bi_int(g, 4, &step)) return NULL;
  if (!bi_norm_dim(g, bi_span(g, 1), d, x, x->rank, &nd)) return NULL;
  if (step < 1) {
    diag_error(g->c->diags, bi_span(g, 4), "slice step must be positive, got %lld",
               (long long)step);
    return NULL;
  }
  Dim *size = x->dims[nd];
  Dim *start = slice_bound(g, 2, size), *end = start ? slice_bound(g, 3, size) : NULL;
  if (!end) return NULL;
  bool cs = dim_is_const(start, &s), ce = dim_is_const(end, &e);
  if (dim_is_const(size, &n) && ((cs && (s < 0 || s > n)) || (ce && (e < 0 || e > n)))) {
    int bad = cs && (s < 0 || s > n) ? 2 : 3;
    diag_error(g->c->diags, bi_span(g, bad),
               "slice %s %s is out of range for dim %d of %s (size %lld)",
               bad == 2 ? "start" : "end", value_str(g->a, g->v[bad]) + strlen("integer "),
               nd, type_str(g->a, x), (long long)n);
    return NULL;
  }
  Dim *len = bi_ok(g, dim_sub(g->a, end, start));
  if (!len) return NULL;
  if (dim_nonpositive(len)) {
    diag_error(g->c->diags, g->c->span, "slice %s:%s of dim %d of %s is empty",
               dim_str(g->a, start), dim_str(g->a, end), nd, type_str(g->a, x));
    return NULL;
  }
  Dim *out = len;
  if (step > 1) { // ceil(len/step): exact when step divides len (or len + step - 1)
    Dim *up = bi_ok(g, dim_add(g->a, len, bi_k(g, step - 1)));
    if (!up) return NULL;
    int64_t u;
    out = dim_is_const(up, &u) ? bi_k(g, u / step) : dim_div(g->a, len, bi_k(g, step));
    if (!out) out = dim_div(g->a, up, bi_k(g, step));
    if (!out) out = dim_floordiv(g->a, up, step); // ceil(len/step)
  }
  Type *r = type_copy(g->a, x);
  r->dims[nd] = out;
  r->origin[nd] = g->c->span;
  bi_attr_int(g, IRA_DIM, nd);
  bi_attr_int(g, IRA_STEP, step);
  g->c->slice_start = start;
  return bi_result(g, r);
}

// concat: [a[.., n1, ..], b[.., n2, ..], ..] -> [.., n1 + n2 + .., ..] along
// `dim`; every other dim and the dtypes equal
Value *bi_rule_concat(Args *g) {
  Value *l = g->v[0];
  if (l->kind != V_LIST || l->items.len == 0)
    return bad_kind(g, 0, "a non-empty list of tensors such as [a, b]"), NULL;
  int n = l->items.len;
  Type **ts = arena_alloc(g->a, sizeof(Type *) * (size_t)n);
  for (int k = 0; k < n; k++) {
    Value *it = VEC_AT(l->items, Value, k);
    if (it->kind != V_TENSOR) {
      diag_error(g->c->diags, it->span.file ? it->span : bi_span(g, 0),
                 "concat takes a list of tensors, got %s", value_str(g->a, it));
      return NULL;
    }
    ts[k] = it->type;
  }
  int64_t d;
  int nd;
  if (!bi_int(g, 1, &d) || !bi_norm_dim(g, bi_span(g, 1), d, ts[0], ts[0]->rank, &nd))
    return NULL;
  bi_attr_int(g, IRA_DIM, nd);
  Type *r = type_copy(g->a, ts[0]);
  r->origin[nd] = g->c->span;
  for (int k = 1; k < n; k++) {
    Span sp = VEC_AT(l->items, Value, k)->span;
    sp = sp.file ? sp : bi_span(g, 0);
    const char *x0 = type_str(g->a, ts[0]), *xk = type_str(g->a, ts[k]);
    if (ts[k]->dtype != ts[0]->dtype || ts[k]->rank != ts[0]->rank) {
      diag_error(g->c->diags, sp, "concat needs tensors of one dtype and rank: %s and %s",
                 x0, xk);
      return NULL;
    }
    for (int j = 0; j < r->rank; j++) {
      if (j == nd || dim_eq(ts[0]->dims[j], ts[k]->dims[j])) continue;
      diag_error(g->c->diags, sp,
                 "concat along dim %d needs the other dims equal: dim %d is %s in %s but %s in %s",
                 nd, j, dim_str(g->a, ts[0]->dims[j]), x0, dim_str(g->a, ts[k]->dims[j]), xk);
      return NULL;
    }
    if (!bi_ok(g, r->dims[nd] = dim_add(g->a, r->dims[nd], ts[k]->dims[nd]))) return NULL;
  }
  return bi_result(g, r);
}

// broadcast_to: x[..] -> shape, NumPy rules without mlc's restrictions (the
// expansion is explicit): aligned from the right, each dim of x equals the
// target's or is 1.
Value *bi_rule_broadcast_to(Args *g) {
  Type *x = bi_tensor(g, 0);
  Value *l = x ? bi_shape(g, 1, false) : NULL;
  if (!l) return NULL;
  int n = l->items.len;
  if (n < x->rank) {
    diag_error(g->c->diags, bi_span(g, 1), "broadcast_to cannot lower the rank of %s to %d",
               type_str(g->a, x), n);
    return NULL;
  }
  Type *r = type_new(g->a, x->dtype, n);
  for (int k = 0; k < n; k++) {
    Value *it = VEC_AT(l->items, Value, k);
    r->dims[k] = it->dim;
    r->origin[k] = it->span;
    int i = k - (n - x->rank);
    int64_t one;
    if (i < 0 || dim_eq(x->dims[i], it->dim)) continue;
    if (dim_is_const(x->dims[i], &one) && one == 1) continue;
    diag_error(g->c->diags, it->span.file ? it->span : bi_span(g, 1),
               "cannot broadcast_to %s to %s: dim %d is %s vs %s", type_str(g->a, x),
               bi_list_str(g, l), k, dim_str(g->a, x->dims[i]), dim_str(g->a, it->dim));
    return NULL;
  }
  return bi_result(g, r);
}

// ---- matmul ---------------------------------------------------------------------------------------------
static Type *batch_part(Args *g, const Type *t) {
  int n = t->rank > 2 ? t->rank - 2 : 0;
  Type *b = type_new(g->a, t->dtype, n);
  for (int k = 0; k < n; k++) b->dims[k] = t->dims[k], b->origin[k] = t->origin[k];
  return b;
}

// matmul: [.., M, K] @ [.., K, N] -> [.., M, N], batch dims broadcast
// (broadcast2 rules); [K] @ [K, N] -> [N]; [M, K] @ [K] -> [M]; [K] @ [K] -> scalar
Value *bi_rule_matmul(Args *g) {
  Type *a = bi_tensor(g, 0), *b = a ? bi_tensor(g, 1) : NULL;
  if (!b) return NULL;
  for (int k = 0; k < 2; k++) {
    Type *t = k ? b : a;
    if (t->rank > 0 && t->dtype != DT_BOOL) continue;
    if (t->rank == 0)
      diag_error(g->c->diags, bi_span(g, k),
                 "matmul needs tensors of rank 1 or more, got %s; scale with * instead",
                 type_str(g->a, t));
    else
      diag_error(g->c->diags, bi_span(g, k), "matmul expects numeric tensors, got %s",
                 type_str(g->a, t));
    return NULL;
  }
  if (!bi_same_dtype(g, 0, a, 1, b)) return NULL;
  Dim *ka = a->dims[a->rank - 1], *kb = b->dims[b->rank > 1 ? b->rank - 2 : 0];
  if (!dim_eq(ka, kb)) {
    diag_error(g->c->diags, g->c->span,
               "mat1 and mat2 shapes cannot be multiplied (%s @ %s): inner dims %s and %s differ",
               type_str(g->a, a), type_str(g->a, b), dim_str(g->a, ka), dim_str(g->a, kb));
    return NULL;
  }
  Type *ba = batch_part(g, a), *bb = batch_part(g, b);
  BcResult bc = broadcast2(g->a, ba, bb);
  if (bc.status != BC_OK) {
    report_bc(g, &bc, ba, bb, 0, 1, g->c->span, "the batch dims ");
    return NULL;
  }
  int nb = bc.result->rank;
  Type *r = type_new(g->a, a->dtype, nb + (a->rank > 1) + (b->rank > 1));
  for (int k = 0; k < nb; k++) r->dims[k] = bc.result->dims[k], r->origin[k] = bc.result->origin[k];
  int j = nb;
  Dim *m = bi_k(g, 1), *n = bi_k(g, 1);
  if (a->rank > 1) {
    r->dims[j] = m = a->dims[a->rank - 2];
    r->origin[j++] = a->origin[a->rank - 2];
  }
  if (b->rank > 1) {
    r->dims[j] = n = b->dims[b->rank - 1];
    r->origin[j++] = b->origin[b->rank - 1];
  }
  Dim *f = dim_mul(g->a, dim_mul(g->a, bi_k(g, 2), m), dim_mul(g->a, n, ka));
  set_flops(g, dim_mul(g->a, f, type_numel(g->a, bc.result)));
  return bi_result(g, r);
}
