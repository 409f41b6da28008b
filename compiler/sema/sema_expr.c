// sema_expr.c — what expressions denote: name lookup, constant folding,
// operators, calls of builtins and of user code (with argument
// unification), member access and indexing. Type expressions, statements
// and bodies are in sema_body.c.
//
// Input: a Scope (the enclosing instantiation, the visible members, block
// parameter values, signature symbols and locals) and an Expr. Output: a
// Value (value.h), or NULL once an error has been reported or when an
// operand was already poisoned by one, so one mistake gives one diagnostic.
// Every tensor-valued Expr gets its type in Expr.type.
//
// Evaluation recurses on the C stack; sema_eval counts the nesting and
// refuses more than SEMA_MAX_DEPTH levels with an error.
#include <math.h>
#include <string.h>

#include "graph/scalar.h"
#include "sema_internal.h"

static Value *eval_expr(Scope *sc, Expr *e);

// ---- scopes and small helpers ---------------------------------------------------------
void sema_scope_init(Scope *sc, Sema *S, Inst *I, int visible) {
  memset(sc, 0, sizeof *sc);
  sc->S = S;
  sc->inst = I;
  sc->visible = visible;
  if (I) {
    sc->bitem = I->item;
    sc->bargs = I->args;
    sc->nbargs = I->nargs;
  }
}

Value *sema_new_value(Sema *S, ValKind k, Span sp) {
  Value *v = arena_alloc(S->arena, sizeof(Value));
  v->kind = k;
  v->span = sp;
  return v;
}

// The same value, reported at a new place.
static Value *value_at(Sema *S, const Value *v, Span sp) {
  Value *c = arena_alloc(S->arena, sizeof(Value));
  *c = *v;
  c->span = sp;
  return c;
}

bool sema_const_num(const Value *v, double *out) {
  int64_t k;
  if (v->kind == V_FLOAT) {
    *out = v->f;
    return true;
  }
  if (v->kind == V_DIM && dim_is_const(v->dim, &k)) {
    *out = (double)k;
    return true;
  }
  return false;
}

const char *sema_dim_operand(Arena *a, const Dim *d) {
  const char *s = dim_str(a, d);
  return strchr(s, ' ') ? arena_printf(a, "(%s)", s) : s;
}

// Short one-line source text of a span, for suggestions; NULL if long.
static const char *span_text(Sema *S, Span sp) {
  if (!sp.file || sp.len == 0 || sp.len > 40) return NULL;
  const char *t = sp.file->text + sp.off;
  for (uint32_t i = 0; i < sp.len; i++)
    if (t[i] == '\n') return NULL;
  return arena_strndup(S->arena, t, sp.len);
}

Local *sema_find_local(Scope *sc, const char *name) {
  return sema_map_get(&sc->locals, name);
}

// A rebinding replaces the name's entry (bodies may rebind `h` thousands of
// times; lookups stay constant-time).
void sema_bind_local(Scope *sc, const char *name, Span sp, Value *v) {
  Local *l = arena_alloc(sc->S->arena, sizeof(Local));
  l->name = name;
  l->span = sp;
  l->value = v;
  l->slot = sc->nslots++;
  sema_map_put(sc->S->arena, &sc->locals, name, l);
}

// Index of a block parameter in scope: -1 if none, -2 if it is declared
// after the one whose default is being evaluated.
int sema_scope_bparam(Scope *sc, const char *name) {
  if (!sc->bitem) return -1;
  for (int i = 0; i < sc->bitem->bparams.len; i++)
    if (!strcmp(VEC_AT(sc->bitem->bparams, BlockParam, i)->name, name))
      return i < sc->nbargs ? i : -2;
  return -1;
}

Sym *sema_sig_sym(Scope *sc, const char *name) {
  if (!sc->sig) return NULL;
  for (int i = 0; i < sc->sig->syms.len; i++) {
    Sym *s = VEC_AT(sc->sig->syms, Sym, i);
    if (!strcmp(s->name, name)) return s;
  }
  return NULL;
}

// Candidate names for "did you mean": what a value name could have been.
Vec sema_value_names(Scope *sc) {
  Arena *a = sc->S->arena;
  Vec c = {0};
  if (sema_quiet(sc->S)) return c;
  for (int i = 0; i < sc->locals.cap; i++)
    if (sc->locals.keys[i]) vec_push(a, &c, (void *)sc->locals.keys[i]);
  if (sc->inst && !sc->const_only)
    for (int i = 0; i < sc->inst->item->members.len && i < sc->visible; i++) {
      Member *m = sc->inst->members[i]->m;
      if (m->kind == MB_PARAM || m->kind == MB_BUFFER || m->kind == MB_INSTANCE ||
          m->kind == MB_INSTANCE_LIST)
        vec_push(a, &c, (void *)m->name);
    }
  if (sc->bitem)
    for (int i = 0; i < sc->nbargs && i < sc->bitem->bparams.len; i++)
      vec_push(a, &c, (void *)VEC_AT(sc->bitem->bparams, BlockParam, i)->name);
  if (sc->sig)
    for (int i = 0; i < sc->sig->syms.len; i++)
      vec_push(a, &c, (void *)VEC_AT(sc->sig->syms, Sym, i)->name);
  return c;
}

// Candidate names for a call: instances, methods, fns and builtins.
static Vec callable_names(Scope *sc) {
  Sema *S = sc->S;
  Vec c = {0};
  if (sema_quiet(S)) return c;
  if (sc->inst)
    for (int i = 0; i < sc->inst->item->members.len; i++) {
      Member *m = sc->inst->members[i]->m;
      if (m->kind == MB_METHOD || ((m->kind == MB_INSTANCE || m->kind == MB_INSTANCE_LIST) &&
                                   i < sc->visible))
        vec_push(S->arena, &c, (void *)m->name);
    }
  for (int i = 0; i < S->item_infos.len; i++) {
    Item *it = VEC_AT(S->item_infos, ItemInfo, i)->item;
    if (it->kind == IT_FN) vec_push(S->arena, &c, (void *)it->name);
  }
  int n;
  const char *const *b = builtin_names(&n);
  for (int i = 0; i < n; i++)
    if (!builtin_is_data_source(b[i])) vec_push(S->arena, &c, (void *)b[i]);
  return c;
}

static const char *member_kind_name(Member *m) {
  switch (m->kind) {
  case MB_PARAM: return m->frozen ? "frozen param" : "param";
  case MB_BUFFER: return "buffer";
  case MB_INSTANCE: return "block instance";
  case MB_INSTANCE_LIST: return "list of block instances";
  case MB_METHOD: return "method";
  }
  return "member";
}

static void used_before(Scope *sc, MInfo *mi, Span at) {
  sema_error(sc->S, at, "'%s' is used before its declaration", mi->m->name);
  sema_note(sc->S, mi->m->name_span, "'%s' is declared here", mi->m->name);
}

// ---- names ---------------------------------------------------------------------------
// A read of a param or buffer at `path` below the body's instance.
static Value *state_value(Sema *S, Expr *e, const char *path, int up, bool buffer, Type *t) {
  CkExpr *ck = sema_ck_new(S, CK_STATE, e->span, t);
  ck->path = path;
  ck->up = up;
  ck->buffer = buffer;
  return sema_with_ck(S, value_tensor(S->arena, e->span, t), ck);
}

// A local as its uses see it: a tensor (or a list holding one) by its slot,
// a constant as itself.
static Value *local_value(Sema *S, Local *l, Span sp) {
  Value *v = value_at(S, l->value, sp);
  if (!v->ck && v->kind != V_TENSOR) return v;
  CkExpr *ck = sema_ck_new(S, CK_LOCAL, sp, v->kind == V_TENSOR ? v->type : NULL);
  ck->slot = l->slot;
  if (!v->def) v->def = v->ck; // a local of a local keeps the first's definition
  v->ck = ck;
  return v;
}

static Value *member_value(Scope *sc, MInfo *mi, Expr *e) {
  Sema *S = sc->S;
  Member *m = mi->m;
  if (m->kind != MB_METHOD && mi->idx >= sc->visible) {
    used_before(sc, mi, e->span);
    return NULL;
  }
  switch (m->kind) {
  case MB_PARAM:
  case MB_BUFFER:
    if (sc->const_only) {
      sema_error(S, e->span, "'%s' is a %s, not a compile-time constant",
                 m->name, member_kind_name(m));
      return NULL;
    }
    return mi->type ? state_value(S, e, e->name, 0, m->kind == MB_BUFFER, mi->type) : NULL;
  case MB_INSTANCE:
    if (!mi->failed)
      sema_error(S, e->span,
                 "'%s' is a block instance, not a value: call it, %s(...), or "
                 "use one of its params, %s.NAME",
                 m->name, m->name, m->name);
    return NULL;
  case MB_INSTANCE_LIST:
    if (!mi->failed)
      sema_error(S, e->span, "'%s' is a list of block instances, not a value: loop over it, "
                 "for b in %s { h = b(h) }, or index it, %s[0]", m->name, m->name, m->name);
    return NULL;
  case MB_METHOD:
    sema_error(S, e->span, "'%s' is a method, not a value: call it, %s(...)",
               m->name, m->name);
    return NULL;
  }
  return NULL;
}

// f8, i16, u32, bf8: a dtype-shaped name that is not a dtype.
static bool looks_like_dtype(const char *n) {
  if (n[0] == 'b' && n[1] == 'f') n += 2;
  else if (n[0] == 'f' || n[0] == 'i' || n[0] == 'u') n += 1;
  else return false;
  if (!*n) return false;
  for (; *n; n++)
    if (*n < '0' || *n > '9') return false;
  return true;
}

static Value *eval_name(Scope *sc, Expr *e) {
  Sema *S = sc->S;
  const char *n = e->name;
  Local *l = sema_find_local(sc, n);
  if (l && l->value && l->value->kind == V_INST) {
    sema_error(S, e->span, "'%s' is a block instance, not a value: call it, %s(...), or use "
               "one of its params, %s.NAME", n, n, n);
    return NULL;
  }
  if (l) return l->value ? local_value(S, l, e->span) : NULL;
  MInfo *mi = sc->inst ? sema_member(sc->inst, n) : NULL;
  if (mi) return member_value(sc, mi, e);
  int bp = sema_scope_bparam(sc, n);
  if (bp >= 0 && sc->bargs[bp] && sc->bargs[bp]->kind == V_INST) {
    sema_instance_as_value(sc, n, sc->bargs[bp], e->span);
    return NULL;
  }
  if (bp >= 0) return sc->bargs[bp] ? value_at(S, sc->bargs[bp], e->span) : NULL;
  if (bp == -2) {
    sema_error(S, e->span,
               "'%s' is declared later: a default can only use the parameters "
               "before it",
               n);
    return NULL;
  }
  Sym *s = sema_sig_sym(sc, n);
  if (s) return value_dim(S->arena, e->span, dim_sym(S->arena, s));
  ItemInfo *ii = sema_find_item(S, n);
  if (ii && ii->item->kind == IT_FN)
    sema_error(S, e->span, "'%s' is a function, not a value: call it, %s(...)",
               n, n);
  else if (ii)
    sema_error(S, e->span, "'%s' is a %s, not a value", n,
               ii->item->kind == IT_BLOCK ? "block" : "model");
  else if (builtin_exists(n))
    sema_error(S, e->span, "'%s' is a builtin function, not a value: call it, "
               "%s(...)", n, n);
  else if (looks_like_dtype(n))
    sema_error(S, e->span, "unknown dtype '%s' (the dtypes are f32, f16, bf16, "
               "f64, i32, i64 and bool)", n);
  else {
    Vec c = sema_value_names(sc);
    sema_error(S, e->span, "unknown name '%s'%s", n, sema_suggest(S, n, &c));
  }
  return NULL;
}

// ---- builtin calls ----------------------------------------------------------------------
static Sym *fresh_sym(void *env, const char *display, Span sp) {
  Scope *sc = env;
  return sym_new(sc->S->arena, display, sp, true);
}

// A builtin's warning, once per site and text (a function's body is checked
// once per distinct instantiation), never while checking quietly; its notes
// follow it or are dropped with it, as an error's are.
static void replay_warning(Sema *S, const Diag *d) {
  char *key = arena_printf(S->arena, "warning:%p:%u:%u:%s", (const void *)d->span.file, d->span.off,
                           d->span.len, d->msg);
  S->dropping = S->quiet || sema_map_get(&S->seen, key);
  if (S->dropping) return;
  sema_map_put(S->arena, &S->seen, key, key);
  diag_warning(S->diags, d->span, "%s", d->msg);
}

// Builtins report into a private sink whose diagnostics are replayed through
// sema_error/sema_note, so they are de-duplicated and get instantiation
// context like sema's own.
static void replay(Sema *S, DiagSink *tmp) {
  for (int i = 0; i < tmp->diags.len; i++) {
    Diag *d = VEC_AT(tmp->diags, Diag, i);
    if (d->level == DIAG_ERROR) sema_error(S, d->span, "%s", d->msg);
    else if (d->level == DIAG_NOTE) sema_note(S, d->span, "%s", d->msg);
    else replay_warning(S, d);
  }
}

static void add_flops(Scope *sc, Dim *f) {
  if (!f || !sc->body || sc->in_grad) return;
  Body *b = sc->body;
  b->own_flops = b->own_flops ? dim_add(sc->S->arena, b->own_flops, f) : f;
}

static Value *call_builtin(Scope *sc, const char *name, Span span,
                           Span name_span, int n, Value **args,
                           const char **names, Span *name_spans) {
  Sema *S = sc->S;
  DiagSink tmp;
  diag_init(&tmp, S->arena);
  tmp.max_errors = 0;
  BuiltinCall c = {0};
  c.arena = S->arena;
  c.diags = &tmp;
  c.span = span;
  c.name_span = name_span;
  c.name = name;
  c.nargs = n;
  c.args = args;
  c.names = names;
  c.name_spans = name_spans;
  c.fresh_sym = fresh_sym;
  c.env = sc;
  Value *v = builtin_check(&c);
  replay(S, &tmp);
  if (v) add_flops(sc, c.flops);
  if (v && v->kind == V_TENSOR) v->ck = sema_ck_op(S, &c, args, v->type);
  return v;
}

static Value *builtin2(Scope *sc, const char *name, Span sp, Value *x,
                       Value *y) {
  Value *args[2] = {x, y};
  const char *names[2] = {NULL, NULL};
  Span nsp[2] = {{0}, {0}};
  return call_builtin(sc, name, sp, sp, y ? 2 : 1, args, names, nsp);
}

// ---- constant folding -------------------------------------------------------------------
// Operators as written in source (ast.c's names, but '-' for negation).
static const char *op_text(int op) { return op == OP_NEG ? "-" : binop_name(op); }

static Value *bool_value(Sema *S, Span sp, bool b) {
  Value *v = sema_new_value(S, V_BOOL, sp);
  v->b = b;
  return v;
}

// Integer (dim) arithmetic stays integer: + - * exactly, / only when it
// divides exactly, ** with a constant non-negative exponent.
static Value *fold_dims(Scope *sc, Expr *e, Value *l, Value *r) {
  Sema *S = sc->S;
  Arena *a = S->arena;
  int64_t x, y;
  bool cx = dim_is_const(l->dim, &x), cy = dim_is_const(r->dim, &y);
  Dim *d = NULL;
  switch (e->op) {
  case OP_ADD: d = dim_add(a, l->dim, r->dim); break;
  case OP_SUB: d = dim_sub(a, l->dim, r->dim); break;
  case OP_MUL: d = dim_mul(a, l->dim, r->dim); break;
  case OP_FLOORDIV:
    if (!cy || y <= 0) {
      sema_error(S, e->rhs->span, "the divisor of // must be a positive integer "
                 "constant, got %s", dim_str(a, r->dim));
      return NULL;
    }
    d = dim_floordiv(a, l->dim, y);
    break;
  case OP_DIV:
    if (cy && y == 0) {
      sema_error(S, e->span, "division by zero");
      return NULL;
    }
    d = dim_div(a, l->dim, r->dim);
    if (!d) {
      if (cx && cy && S->in_list) // a size: a float is no reading of it
        sema_error(S, e->span,
                   "%lld / %lld is not exact: a size must be a whole number, and %lld / %lld = %g "
                   "(write %lld // %lld to round down to %lld, or sizes that divide evenly)",
                   (long long)x, (long long)y, (long long)x, (long long)y, (double)x / (double)y,
                   (long long)x, (long long)y, (long long)(x / y - (x % y && (x < 0) != (y < 0))));
      else if (cx && cy)
        sema_error(S, e->span,
                   "%lld / %lld is not exact: integer division must divide "
                   "evenly (write %lld.0 / %lld for a float)",
                   (long long)x, (long long)y, (long long)x, (long long)y);
      else
        sema_error(S, e->span,
                   "%s / %s is not exact: sizes divide only when the division "
                   "is exact",
                   sema_dim_operand(a, l->dim), sema_dim_operand(a, r->dim));
      return NULL;
    }
    break;
  case OP_POW:
    if (cx && cy && y >= 0 && y < 63) {
      d = dim_const(a, 1);
      for (int64_t i = 0; i < y && d; i++) d = dim_mul(a, d, l->dim);
      break;
    }
    if (cx && cy) return value_float(a, e->span, pow((double)x, (double)y));
    break;
  default:
    if (binop_is_compare(e->op)) {
      if (cx && cy) return bool_value(S, e->span, binop_compare(e->op, x, y));
      if (dim_eq(l->dim, r->dim) && (e->op == OP_EQ || e->op == OP_NE ||
                                     e->op == OP_LE || e->op == OP_GE))
        return bool_value(S, e->span, e->op != OP_NE);
      sema_error(S, e->span, "cannot compare sizes %s and %s at compile time",
                 dim_str(a, l->dim), dim_str(a, r->dim));
      return NULL;
    }
  }
  if (!d) {
    sema_error(S, e->span, "operator '%s' cannot be applied to sizes %s and %s",
               op_text(e->op), dim_str(a, l->dim), dim_str(a, r->dim));
    return NULL;
  }
  return value_dim(a, e->span, d);
}

static const char *binop_builtin(int op);

// Operators on numbers fold with the graph op's formula (graph/scalar.h);
// x // y is the floor of x / y.
static Value *fold_floats(Scope *sc, Expr *e, double x, double y) {
  Sema *S = sc->S;
  int bi = e->op == OP_FLOORDIV ? BI_DIV : binop_builtin(e->op) ? builtin_lookup(binop_builtin(e->op)) : -1;
  OpClass cls = bi >= 0 ? builtin_class(bi) : OC_DATA;
  if (cls != OC_ELEMWISE_BINARY && cls != OC_COMPARE) {
    sema_error(S, e->span, "operator '%s' cannot be applied to numbers", op_text(e->op));
    return NULL;
  }
  if (bi == BI_DIV && y == 0) {
    sema_error(S, e->span, "division by zero");
    return NULL;
  }
  double xy[2] = {x, y};
  double r = sc_eval((IrOp)builtin_ir_op(bi), xy, NULL);
  if (cls == OC_COMPARE) return bool_value(S, e->span, r != 0);
  if (e->op == OP_FLOORDIV) r = floor(r);
  if (r != r) {
    sema_error(S, e->span, "%g %s %g is not a number", x, op_text(e->op), y);
    return NULL;
  }
  return value_float(S->arena, e->span, r);
}

static Value *fold_binary(Scope *sc, Expr *e, Value *l, Value *r) {
  Sema *S = sc->S;
  if (e->op == OP_AND || e->op == OP_OR) {
    if (l->kind == V_BOOL && r->kind == V_BOOL)
      return bool_value(S, e->span, e->op == OP_AND ? l->b && r->b : l->b || r->b);
  } else if (l->kind == V_DIM && r->kind == V_DIM) {
    return fold_dims(sc, e, l, r);
  } else if (l->kind == V_BOOL && r->kind == V_BOOL &&
             (e->op == OP_EQ || e->op == OP_NE)) {
    return bool_value(S, e->span, (l->b == r->b) == (e->op == OP_EQ));
  } else {
    double x, y;
    if (sema_const_num(l, &x) && sema_const_num(r, &y))
      return fold_floats(sc, e, x, y);
    Value *sym = l->kind == V_DIM && !sema_const_num(l, &x) ? l
                 : r->kind == V_DIM && !sema_const_num(r, &y) ? r : NULL;
    if (sym && (l->kind == V_FLOAT || r->kind == V_FLOAT)) {
      sema_error(S, sym->span,
                 "'%s' is a symbolic size, not a number known at compile time",
                 dim_str(S->arena, sym->dim));
      return NULL;
    }
  }
  if (e->op == OP_MATMUL)
    sema_error(S, e->span, "'@' needs tensors, got %s and %s",
               value_str(S->arena, l), value_str(S->arena, r));
  else
    sema_error(S, e->span, "operator '%s' cannot be applied to %s and %s",
               op_text(e->op), valkind_name(l->kind), valkind_name(r->kind));
  return NULL;
}

// ---- operators ----------------------------------------------------------------------------
static const char *binop_builtin(int op) {
  switch (op) {
  case OP_ADD: return "add";
  case OP_SUB: return "sub";
  case OP_MUL: return "mul";
  case OP_DIV: return "div";
  case OP_POW: return "pow";
  case OP_MATMUL: return "matmul";
  case OP_LT: return "lt";
  case OP_LE: return "le";
  case OP_GT: return "gt";
  case OP_GE: return "ge";
  case OP_EQ: return "eq";
  case OP_NE: return "ne";
  case OP_AND: return "logical_and";
  case OP_OR: return "logical_or";
  }
  return NULL;
}

static Value *eval_binary(Scope *sc, Expr *e) {
  Value *l = sema_eval(sc, e->lhs);
  Value *r = sema_eval(sc, e->rhs);
  if (!l || !r) return NULL;
  if (l->kind != V_TENSOR && r->kind != V_TENSOR) return fold_binary(sc, e, l, r);
  const char *name = binop_builtin(e->op);
  if (!name) { // //: sizes and numbers only
    sema_error(sc->S, e->span, "operator '%s' applies to sizes and numbers, not to tensors "
               "(%s)", op_text(e->op), value_str(sc->S->arena, l->kind == V_TENSOR ? l : r));
    return NULL;
  }
  return builtin2(sc, name, e->span, l, r);
}

static Value *eval_unary(Scope *sc, Expr *e) {
  Sema *S = sc->S;
  Value *x = sema_eval(sc, e->lhs);
  if (!x) return NULL;
  if (x->kind == V_TENSOR)
    return builtin2(sc, e->op == OP_NOT ? "logical_not" : "neg", e->span, x, NULL);
  if (e->op == OP_NOT && x->kind == V_BOOL) return bool_value(S, e->span, !x->b);
  if (e->op == OP_NEG && x->kind == V_DIM)
    return value_dim(S->arena, e->span,
                     dim_sub(S->arena, dim_const(S->arena, 0), x->dim));
  if (e->op == OP_NEG && x->kind == V_FLOAT)
    return value_float(S->arena, e->span, -x->f);
  sema_error(S, e->span, "operator '%s' cannot be applied to %s",
             op_text(e->op), value_str(S->arena, x));
  return NULL;
}

// ---- instance paths ------------------------------------------------------------------------
const char *sema_join_path(Sema *S, const char *base, const char *name) {
  return base && *base ? arena_printf(S->arena, "%s.%s", base, name) : name;
}

static InstRef resolve_instance(Scope *sc, Expr *e, int depth);

static bool is_instance_member(const MInfo *mi) {
  return mi && (mi->m->kind == MB_INSTANCE || mi->m->kind == MB_INSTANCE_LIST);
}

static InstRef inst_value(const Value *v) {
  return (InstRef){v->top, v->inst, v->path, false, v->up};
}

// fc1, blocks, a loop variable bound to an instance, or a block parameter
// given one (head = Head(tok): `emb` inside Head).
static InstRef resolve_name(Scope *sc, Expr *e) {
  InstRef r = {0};
  Local *l = sema_find_local(sc, e->name);
  if (l) {
    if (l->value && l->value->kind == V_INST) r = inst_value(l->value);
    return r;
  }
  MInfo *mi = sc->inst ? sema_member(sc->inst, e->name) : NULL;
  int bp = mi ? -1 : sema_scope_bparam(sc, e->name);
  if (bp >= 0 && sc->bargs[bp] && sc->bargs[bp]->kind == V_INST) return inst_value(sc->bargs[bp]);
  if (!is_instance_member(mi)) return r;
  if (mi->idx >= sc->visible) {
    used_before(sc, mi, e->span);
    r.err = true;
    return r;
  }
  return (InstRef){mi, mi->child, e->name, mi->child == NULL, 0};
}

// blocks[k]: element k of a list (negative k counts from the end). The
// uses of an element of the scope's own list are counted on the element.
static InstRef resolve_elem(Scope *sc, Expr *e, int depth) {
  Sema *S = sc->S;
  InstRef o = resolve_instance(sc, e->lhs, depth + 1), r = {0};
  if (o.err || !o.inst || !o.inst->is_list) return o.err ? o : r;
  r.err = true;
  int n = o.inst->item->members.len;
  Arg *a = e->args.len == 1 ? VEC_AT(e->args, Arg, 0) : NULL;
  if (!a || a->name || a->value->kind == EX_SLICE) {
    sema_error(S, e->span, "a list of instances takes one index, an integer: %s[0]", o.path);
    return r;
  }
  Value *v = sema_eval(sc, a->value);
  int64_t k;
  if (!v) return r;
  if (v->kind != V_DIM || !dim_is_const(v->dim, &k)) {
    sema_error(S, a->value->span, "the index of a list of instances must be an integer known "
               "when the model is compiled, got %s", value_str(S->arena, v));
    return r;
  }
  if (k < -n || k >= n) {
    sema_error(S, a->value->span, "index %lld is out of range for %s, a list of %d instances",
               (long long)k, o.path, n);
    return r;
  }
  MInfo *em = o.inst->members[k < 0 ? k + n : k];
  bool own = o.top && o.top->child == o.inst;
  return (InstRef){own ? em : o.top, em->child, sema_join_path(S, o.path, em->m->name),
                   em->child == NULL, o.up};
}

static InstRef resolve_instance(Scope *sc, Expr *e, int depth) {
  InstRef r = {0};
  if (depth > SEMA_MAX_DEPTH) return r;
  if (e->kind == EX_NAME) return resolve_name(sc, e);
  if (e->kind == EX_INDEX) return resolve_elem(sc, e, depth);
  if (e->kind != EX_MEMBER) return r;
  InstRef o = resolve_instance(sc, e->lhs, depth + 1);
  if (o.err || !o.inst) return o;
  MInfo *mi = sema_member(o.inst, e->name);
  if (!is_instance_member(mi)) return r;
  if (o.inst->is_list && o.top && o.top->child == o.inst) o.top = mi; // blocks.0: the element's use
  o.inst = mi->child;
  o.path = sema_join_path(sc->S, o.path, e->name);
  o.err = mi->child == NULL;
  return o;
}

InstRef sema_resolve_instance(Scope *sc, Expr *e) { return resolve_instance(sc, e, 0); }

void sema_instance_as_value(Scope *sc, const char *name, const Value *v, Span use) {
  Sema *S = sc->S;
  const char *blk = sc->bitem ? sc->bitem->name : "the block";
  Span at = sc->inst && sc->inst->site.file ? sc->inst->site : use;
  sema_error(S, at, "parameter '%s' of %s is given the instance %s (%s), but %s uses it as a "
             "value: an instance argument is called or has its params read (%s.w)", name, blk,
             v->path, v->str, blk, name);
  sema_note(S, use, "'%s' is used as a value here", name);
}

// "'blocks' is a list of 6 instances ...": what to do with a list instead.
static void not_a_list_use(Scope *sc, Span at, const char *path, Inst *list) {
  sema_error(sc->S, at, "'%s' is a list of block instances (%s): loop over it, for b in %s "
             "{ h = b(h) }, or index it, %s[0]", path, list->label, path, path);
}

// Uses of an instance member, for --explain: a call, or a read of one of
// its params (`path`, so that reading w and b once each is one use).
static void count_call(Scope *sc, InstRef *r) {
  if (sc->body && r->top) r->top->calls++;
}

static void count_read(Scope *sc, InstRef *r, const char *path) {
  if (!sc->body || !r->top) return;
  int *n = sema_map_get(&r->top->reads, path);
  if (!n) {
    n = arena_alloc(sc->S->arena, sizeof *n);
    sema_map_put(sc->S->arena, &r->top->reads, path, n);
  }
  ++*n;
}

static const char *inst_desc(Sema *S, Expr *obj, Inst *I) {
  const char *t = span_text(S, obj->span);
  return t ? arena_printf(S->arena, "'%s' (%s)", t, I->label)
           : arena_printf(S->arena, "%s", I->label);
}

static Vec member_names(Sema *S, Inst *I, bool methods) {
  Vec c = {0};
  for (int i = 0; i < I->item->members.len; i++) {
    Member *m = I->members[i]->m;
    if ((m->kind == MB_METHOD) == methods) vec_push(S->arena, &c, (void *)m->name);
  }
  return c;
}

// inst.w: a param or buffer of an instance (how weight tying is written).
static Value *instance_member(Scope *sc, Expr *e, InstRef *r) {
  Sema *S = sc->S;
  const char *path = sema_join_path(S, r->path, e->name);
  if (r->inst->is_list) {
    not_a_list_use(sc, e->span, r->path, r->inst);
    return NULL;
  }
  count_read(sc, r, path);
  MInfo *mi = sema_member(r->inst, e->name);
  if (!mi) {
    Vec c = member_names(S, r->inst, false);
    sema_error(S, e->span, "%s has no member '%s'%s",
               inst_desc(S, e->lhs, r->inst), e->name, sema_suggest(S, e->name, &c));
    return NULL;
  }
  switch (mi->m->kind) {
  case MB_PARAM:
  case MB_BUFFER:
    if (sc->const_only) {
      sema_error(S, e->span, "'%s' is a %s, not a compile-time constant",
                 e->name, member_kind_name(mi->m));
      return NULL;
    }
    return mi->type ? state_value(S, e, path, r->up, mi->m->kind == MB_BUFFER, mi->type) : NULL;
  case MB_METHOD:
    sema_error(S, e->span, "'%s' is a method of %s: call it", e->name,
               inst_desc(S, e->lhs, r->inst));
    return NULL;
  case MB_INSTANCE:
  case MB_INSTANCE_LIST:
    sema_error(S, e->span, "'%s' is a block instance, not a value: call it or "
               "use one of its params", e->name);
    return NULL;
  }
  return NULL;
}

// x.T: the transpose of the last two dims, transpose(x, -2, -1).

static Value *tensor_member(Scope *sc, Expr *e, Value *x) {
  Sema *S = sc->S;
  if (x->kind == V_TENSOR && !strcmp(e->name, "T")) {
    Type *t = x->type;
    if (t->rank < 2) {
      sema_error(S, e->span,
                 "'.T' transposes the last two dims and needs a tensor of rank "
                 ">= 2, got %s",
                 type_str(S->arena, t));
      return NULL;
    }
    Value *args[3] = {x, value_dim(S->arena, e->span, dim_const(S->arena, -2)),
                      value_dim(S->arena, e->span, dim_const(S->arena, -1))};
    const char *names[3] = {NULL, NULL, NULL};
    Span nsp[3] = {{0}, {0}, {0}};
    return call_builtin(sc, "transpose", e->span, e->span, 3, args, names, nsp);
  }
  if (x->kind == V_TENSOR && builtin_exists(e->name))
    sema_error(S, e->span, "tensors have no methods: write %s(x, ...) instead "
               "of x.%s(...)", e->name, e->name);
  else if (x->kind == V_TENSOR)
    sema_error(S, e->span, "tensors have no member '%s' (only .T)", e->name);
  else
    sema_error(S, e->span, "%s has no member '%s'", value_str(S->arena, x),
               e->name);
  return NULL;
}

static Value *eval_member(Scope *sc, Expr *e) {
  InstRef r = resolve_instance(sc, e->lhs, 0);
  if (r.err) return NULL;
  if (r.inst) return instance_member(sc, e, &r);
  Value *x = sema_eval(sc, e->lhs);
  return x ? tensor_member(sc, e, x) : NULL;
}

// ---- indexing --------------------------------------------------------------------------------
// An index value: an integer (constant or symbolic size).
static bool index_int(Scope *sc, Expr *x, Dim **out) {
  Sema *S = sc->S;
  Value *v = sema_eval(sc, x);
  if (!v) return false;
  if (v->kind == V_DIM) {
    *out = v->dim;
    return true;
  }
  if (v->kind == V_TENSOR)
    sema_error(S, x->span,
               "indexing with a tensor is not supported; use embedding() to "
               "gather rows or where() to select");
  else
    sema_error(S, x->span, "an index must be an integer or a slice, got %s",
               value_str(S->arena, v));
  return false;
}

// A negative constant counts from the end of a dim of size n.
static Dim *from_end(Arena *a, Dim *i, Dim *n) {
  int64_t k;
  if (dim_is_const(i, &k) && k < 0) return dim_add(a, n, i);
  return i;
}

// a:b:c over a dim of size n -> the number of elements selected; *first and
// *stride get the first index (negative ones counted from the end) and c.
static Dim *slice_len(Scope *sc, Expr *x, Dim *n, Dim **first, int64_t *stride) {
  Sema *S = sc->S;
  Arena *a = S->arena;
  Dim *start = dim_const(a, 0), *stop = n;
  int64_t step = 1, k0, k1, kn;
  if (x->step) {
    Dim *d;
    if (!index_int(sc, x->step, &d)) return NULL;
    if (!dim_is_const(d, &step) || step <= 0) {
      sema_error(S, x->step->span, "a slice step must be a positive integer "
                 "constant, got %s", dim_str(a, d));
      return NULL;
    }
  }
  if (x->lhs && !index_int(sc, x->lhs, &start)) return NULL;
  if (x->rhs && !index_int(sc, x->rhs, &stop)) return NULL;
  start = from_end(a, start, n);
  stop = from_end(a, stop, n);
  *first = start;
  *stride = step;
  bool cn = dim_is_const(n, &kn);
  if (dim_is_const(start, &k0) && dim_is_const(stop, &k1) &&
      (k0 < 0 || k1 <= k0 || (cn && k1 > kn))) {
    if (cn && (k0 < 0 || k1 > kn))
      sema_error(S, x->span, "slice %lld:%lld is out of range for a dim of "
                 "size %lld", (long long)k0, (long long)k1, (long long)kn);
    else
      sema_error(S, x->span, "slice %lld:%lld selects nothing", (long long)k0,
                 (long long)k1);
    return NULL;
  }
  Dim *len = dim_sub(a, stop, start);
  if (dim_nonpositive(len)) {
    sema_error(S, x->span, "this slice selects nothing (%s elements)",
               dim_str(a, len));
    return NULL;
  }
  if (step == 1) return len;
  int64_t kl;
  if (dim_is_const(len, &kl)) return dim_const(a, (kl + step - 1) / step);
  Dim *q = dim_div(a, len, dim_const(a, step));
  if (q) return q;
  const char *disp = arena_printf(a, "ceil((%s)/%lld)", dim_str(a, len),
                                  (long long)step);
  Sym *s = sym_new(a, disp, x->span, true);
  Dim *up = dim_add(a, len, dim_const(a, step - 1));
  Dim *ceil = up ? dim_floordiv(a, up, step) : NULL;
  if (sc->body && ceil) // what it is, for lowering: floor((len + step - 1) / step)
    subst_bind(a, &sc->body->ck->defs, s, ceil);
  return dim_sym(a, s);
}

// x[i, a:b, :, ::2]: an integer removes its dim, a slice keeps it; dims
// past the last index are kept whole.
static Value *eval_index(Scope *sc, Expr *e) {
  Sema *S = sc->S;
  Arena *a = S->arena;
  Value *v = sema_eval(sc, e->lhs);
  if (!v) return NULL;
  if (v->kind != V_TENSOR) {
    sema_error(S, e->lhs->span, "only tensors can be indexed, got %s",
               value_str(a, v));
    return NULL;
  }
  Type *t = v->type;
  int n = e->args.len;
  if (n > t->rank) {
    sema_error(S, e->span, "too many indices: %s has %d dim%s, got %d",
               type_str(a, t), t->rank, t->rank == 1 ? "" : "s", n);
    return NULL;
  }
  Dim **dims = arena_alloc(a, sizeof(Dim *) * (t->rank + 1));
  Span *orig = arena_alloc(a, sizeof(Span) * (t->rank + 1));
  CkExpr *ck = sema_ck_new(S, CK_INDEX, e->span, NULL);
  ck->nargs = 1;
  ck->args = arena_alloc(a, sizeof(CkExpr *));
  ck->args[0] = sema_ck_of(S, v);
  ck->slices = arena_alloc(a, sizeof(CkSlice) * (size_t)(n + 1));
  ck->drop = arena_alloc(a, sizeof(bool) * (size_t)(t->rank + 1));
  int r = 0;
  bool ok = true;
  for (int i = 0; i < t->rank; i++) {
    Span o = t->origin ? t->origin[i] : e->span;
    if (i >= n) {
      dims[r] = t->dims[i];
      orig[r++] = o;
      continue;
    }
    Arg *arg = VEC_AT(e->args, Arg, i);
    Expr *x = arg->value;
    if (arg->name) {
      sema_error(S, arg->name_span, "an index cannot be named");
      ok = false;
    } else if (x->kind == EX_SLICE) {
      Dim *first = NULL;
      int64_t step = 1;
      Dim *len = slice_len(sc, x, t->dims[i], &first, &step);
      if (!len) ok = false;
      ck->slices[ck->nslices++] = (CkSlice){i, first, len, step, t->dims[i]};
      dims[r] = len;
      orig[r++] = x->span;
    } else {
      Dim *k;
      if (!index_int(sc, x, &k)) {
        ok = false;
        continue;
      }
      int64_t ki, kn;
      if (dim_is_const(k, &ki) && dim_is_const(t->dims[i], &kn) &&
          (ki >= kn || ki < -kn)) {
        sema_error(S, x->span, "index %lld is out of range for dim %d of size "
                   "%lld", (long long)ki, i, (long long)kn);
        ok = false;
      }
      ck->slices[ck->nslices++] = (CkSlice){i, from_end(a, k, t->dims[i]), dim_const(a, 1), 1, t->dims[i]};
      ck->drop[i] = true;
    }
  }
  if (!ok) return NULL;
  Type *u = type_new(a, t->dtype, r);
  for (int i = 0; i < r; i++) u->dims[i] = dims[i];
  if (!u->origin) u->origin = orig;
  else memcpy(u->origin, orig, sizeof(Span) * r);
  ck->type = u;
  return sema_with_ck(S, value_tensor(a, e->span, u), ck);
}

// ---- calls of user code ------------------------------------------------------------------------
// How a call site sees its callee, for messages and the call graph.
typedef struct Callee {
  Body *body;
  Sig *sig;
  const char *label;       // "Linear(784, 256).forward"
  const char *short_label; // "Linear.forward"
  MInfo *via;              // the instance member called through, or NULL
  const char *path;        // the callee's instance below the caller's ("" for its own)
  int up;                  // .. after going up that many path segments (InstRef.up)
  Inst *inst;              // the callee's instantiation (NULL: a fn)
  MInfo *method;           // the method member (NULL: a fn, see fn)
  ItemInfo *fn;
} Callee;

typedef struct Unify {
  Scope *sc;
  Callee *ce;
  DimSubst subst;
  Span *bound_at; // per sig symbol: the argument that bound it
  int *bound_param;
  Value **args;   // per parameter: its argument
} Unify;

static int sym_index(Sig *g, const Sym *s) {
  for (int i = 0; i < g->syms.len; i++)
    if (VEC_AT(g->syms, Sym, i) == s) return i;
  return -1;
}

static bool occurs(Arena *a, Dim *d, Sym *s) {
  return !dim_eq(dim_set(a, d, s, 0), d);
}

// The one callee symbol still unbound in `d`, or NULL (none, or several).
static Sym *one_unbound(Unify *u, Dim *d, bool *several) {
  Arena *a = u->sc->S->arena;
  Sym *found = NULL;
  *several = false;
  for (int i = 0; i < u->ce->sig->syms.len; i++) {
    Sym *s = VEC_AT(u->ce->sig->syms, Sym, i);
    if (subst_lookup(&u->subst, s) || !occurs(a, d, s)) continue;
    if (found) *several = true;
    found = s;
  }
  return found;
}

// Solves exp(s) == actual for s when exp is linear in s: exp = c*s + k.
static Dim *solve_linear(Arena *a, Dim *exp, Sym *s, Dim *actual) {
  Dim *k = dim_set(a, exp, s, 0);
  Dim *c = dim_sub(a, dim_set(a, exp, s, 1), k);
  Dim *x = dim_div(a, dim_sub(a, actual, k), c);
  if (!x) return NULL;
  DimSubst one = {0};
  subst_bind(a, &one, s, x);
  return dim_eq(dim_subst(a, exp, &one), actual) ? x : NULL;
}

const char *sema_param_name(Sig *g, int i) {
  return VEC_AT(g->fn->params, Param, i)->name;
}

static void note_instantiation(Unify *u) {
  MInfo *via = u->ce->via;
  if (via && via->child)
    sema_note(u->sc->S, via->m->span, "'%s' is %s, instantiated here",
              via->child == u->ce->inst ? u->ce->path : via->m->name, via->child->label);
}

// [B, 8, 26, 26] into Linear(5408, ..)'s f32[..., 5408]: the last dims of
// the argument multiply to the size expected, so it wants flattening.
static void flatten_hint(Unify *u, int pi, int j, Dim *exp, Span at) {
  Sema *S = u->sc->S;
  Arena *a = S->arena;
  const Value *v = u->args ? u->args[pi] : NULL;
  if (!v || v->kind != V_TENSOR || j != v->type->rank - 1 || !u->ce->sig->nlead) return;
  const Type *T = v->type;
  for (int s = T->rank - 2; s >= 0; s--) {
    if (!dim_eq(type_numel_from(a, T, s), exp)) continue;
    const char *txt = span_text(S, at);
    sema_note(S, (Span){0}, "its last %d dims hold %s values: flatten them first, flatten(%s%s)",
              T->rank - s, dim_str(a, exp), txt ? txt : "x",
              s == 1 ? "" : arena_printf(a, ", start_dim = %d", s));
    return;
  }
}

static void dim_mismatch(Unify *u, int pi, int j, Dim *exp, Dim *act, Span at) {
  Sema *S = u->sc->S;
  Arena *a = S->arena;
  Type *P = u->ce->sig->params[pi];
  Sym *s = dim_as_sym(P->dims[j]);
  int si = s ? sym_index(u->ce->sig, s) : -1;
  if (si >= 0 && u->bound_param[si] >= 0) {
    sema_error(S, at, "dim %d is %s but %s expects '%s', which parameter '%s' "
               "bound to %s", j, dim_str(a, act), u->ce->label, s->name,
               sema_param_name(u->ce->sig, u->bound_param[si]), dim_str(a, exp));
    sema_note(S, u->bound_at[si], "'%s' is bound to %s here", s->name,
              dim_str(a, exp));
    return;
  }
  sema_error(S, at, "dim %d is %s but %s expects %s", j, dim_str(a, act),
             u->ce->label, dim_str(a, exp));
  flatten_hint(u, pi, j, exp, at);
  const char *t = P->origin ? span_text(S, P->origin[j]) : NULL;
  if (t && P->origin[j].file)
    sema_note(S, P->origin[j], "dim %d of parameter '%s' is declared as '%s' "
              "here", j, sema_param_name(u->ce->sig, pi), t);
  note_instantiation(u);
}

// After a rank mismatch, what takes this rank: the builtin behind a prelude
// block of fixed rank, or, for the user's own block or fn, `...`.
static void rank_hint(Unify *u, int pi, const Type *T, const char *txt) {
  Sema *S = u->sc->S;
  Type *P = u->ce->sig->params[pi];
  Inst *I = u->ce->inst;
  const char *path = u->ce->path && *u->ce->path ? u->ce->path : "bn";
  if (I && I->item->from_prelude && !strcmp(I->item->name, "BatchNorm2d") &&
      (T->rank == 2 || T->rank == 3)) {
    sema_note(S, (Span){0}, "BatchNorm2d normalises [B, C, H, W]; for [N, C] and [N, C, L] (as "
              "BatchNorm1d) call the builtin: batch_norm(%s, %s.weight, %s.bias, "
              "%s.running_mean, %s.running_var)", txt, path, path, path, path);
  } else if (I && I->item->from_prelude && !strcmp(I->item->name, "Conv2d") && T->rank == 3) {
    sema_note(S, (Span){0}, "Conv2d takes a batch of images [B, C, H, W]: add the channel dim "
              "with unsqueeze(%s, 1) for [B, H, W], or the batch dim with unsqueeze(%s, 0) for "
              "one image [C, H, W]", txt, txt);
  } else if (I && !I->item->from_prelude && T->rank > P->rank && P->rank >= 1) {
    const char *last = P->origin ? span_text(S, P->origin[P->rank - 1]) : NULL;
    sema_note(S, u->ce->sig->fn->name_span, "to take any number of leading dims, as Linear does, "
              "start the parameter's type with '...': %s[..., %s]", dtype_name(P->dtype),
              last ? last : dim_str(S->arena, P->dims[P->rank - 1]));
  }
}

// dtype and rank of one argument against its parameter type.
static bool unify_kind(Unify *u, int pi, Value *v, Span at) {
  Sema *S = u->sc->S;
  Arena *a = S->arena;
  Type *P = u->ce->sig->params[pi];
  const char *pn = sema_param_name(u->ce->sig, pi);
  if (v->kind != V_TENSOR) {
    double x;
    if (P->rank == 0 && ((sema_const_num(v, &x) && dtype_is_float(P->dtype)) ||
                         (v->kind == V_DIM && dtype_is_int(P->dtype)) ||
                         (v->kind == V_BOOL && P->dtype == DT_BOOL)))
      return true;
    sema_error(S, at, "expected %s for parameter '%s' of %s, got %s",
               type_str(a, P), pn, u->ce->label, value_str(a, v));
    return false;
  }
  Type *T = v->type;
  if (T->weak && T->rank == 0 && P->rank == 0) return true;
  if (T->weak && T->rank == 0) {
    sema_error(S, at, "expected %s for parameter '%s' of %s, got a scalar "
               "constant", type_str(a, P), pn, u->ce->label);
    return false;
  }
  if (T->dtype != P->dtype) {
    sema_error(S, at, "expected %s for parameter '%s' of %s, got %s: mlc "
               "never converts dtypes implicitly", type_str(a, P), pn,
               u->ce->label, type_str(a, T));
    const char *txt = span_text(S, at);
    sema_note(S, (Span){0}, "use cast(%s, %s)", txt ? txt : "...",
              dtype_name(P->dtype));
    return false;
  }
  if (T->rank != P->rank) {
    sema_error(S, at, "rank mismatch: %s expects a %d-D input %s, got %s (%d-D)",
               u->ce->label,
               P->rank, type_str(a, P), type_str(a, T), T->rank);
    const char *txt = span_text(S, at);
    if (P->rank == 2 && T->rank > 2 && txt)
      sema_note(S, (Span){0}, "flatten it first: flatten(%s) or reshape(%s, "
                "[%s, %s])", txt, txt, dim_str(a, T->dims[0]),
                dim_str(a, type_numel_from(a, T, 1)));
    rank_hint(u, pi, T, txt ? txt : "x");
    return false;
  }
  return true;
}

// Binds the callee's bare symbols (B in f32[B, 784]) on first use.
static void bind_bare(Unify *u, int pi, Value *v, Span at) {
  Type *P = u->ce->sig->params[pi];
  if (v->kind != V_TENSOR || v->type->rank != P->rank) return;
  for (int j = 0; j < P->rank; j++) {
    Sym *s = dim_as_sym(P->dims[j]);
    int si = s ? sym_index(u->ce->sig, s) : -1;
    if (si < 0 || subst_lookup(&u->subst, s)) continue;
    subst_bind(u->sc->S->arena, &u->subst, s, v->type->dims[j]);
    u->bound_at[si] = at;
    u->bound_param[si] = pi;
  }
}

// Every dim equal after substitution; a symbol that only appears inside an
// expression (f32[2*N]) is solved when the expression is linear in it.
static bool check_dims(Unify *u, int pi, Value *v, Span at) {
  Arena *a = u->sc->S->arena;
  Type *P = u->ce->sig->params[pi];
  if (v->kind != V_TENSOR || P->rank == 0) return true;
  for (int j = 0; j < P->rank; j++) {
    Dim *act = v->type->dims[j];
    Dim *exp = dim_subst(a, P->dims[j], &u->subst);
    bool several;
    Sym *s = one_unbound(u, exp, &several);
    if (s && !several) {
      Dim *x = solve_linear(a, exp, s, act);
      if (x) {
        subst_bind(a, &u->subst, s, x);
        int si = sym_index(u->ce->sig, s);
        u->bound_at[si] = at;
        u->bound_param[si] = pi;
        exp = dim_subst(a, P->dims[j], &u->subst);
      }
    }
    if (!dim_eq(exp, act)) {
      dim_mismatch(u, pi, j, exp, act, at);
      return false;
    }
  }
  return true;
}

// Matches call arguments (positional, then named) to the callee's
// parameters; NULL after an arity or naming error.
static Expr **match_args(Scope *sc, Expr *call, Callee *ce) {
  Sema *S = sc->S;
  Func *fn = ce->sig->fn;
  int np = fn->params.len;
  const char **names = arena_alloc(S->arena, sizeof(char *) * (size_t)(np + 1));
  for (int k = 0; k < np; k++) names[k] = VEC_AT(fn->params, Param, k)->name;
  ArgBind b = {.owner = ce->short_label, .n = np, .names = names};
  bool ok = sema_bind_args(S, &call->args, &b);
  Expr **out = arena_alloc(S->arena, sizeof(Expr *) * (np + 1));
  int given = 0;
  for (int k = 0; k < np; k++) {
    out[k] = b.arg[k] ? b.arg[k]->value : NULL;
    given += out[k] != NULL;
  }
  if (ok && (b.extra || given < np)) {
    int n = call->args.len;
    sema_error(S, call->span, "wrong number of arguments: %s takes %d "
               "argument%s, got %d", ce->short_label, np, np == 1 ? "" : "s", n);
    sema_note(S, fn->name_span, "'%s' is defined here", ce->short_label);
    ok = false;
  }
  return ok ? out : NULL;
}

// A generic callee (`...` in its types): the specialisation for the dims
// `...` stands for here, counted at the first tensor given for a `...`
// parameter (unification then checks the others against it).
static bool specialise(Scope *sc, Callee *ce, Value **pv, Expr **args) {
  Sema *S = sc->S;
  Sig *g = ce->sig;
  int k = 0;
  Dim *const *lead = NULL;
  for (int i = 0; i < g->nparams; i++) {
    if (!g->lead[i] || pv[i]->kind != V_TENSOR) continue;
    k = pv[i]->type->rank - g->params[i]->rank;
    lead = pv[i]->type->dims;
    if (k >= 0) break;
    sema_error(S, args[i]->span, "rank mismatch: %s expects %s, at least %d dim%s, got %s",
               ce->label, type_str(S->arena, g->params[i]), g->params[i]->rank,
               g->params[i]->rank == 1 ? "" : "s", type_str(S->arena, pv[i]->type));
    return false;
  }
  Body *b = sema_generic_body(S, ce->inst, ce->method, ce->fn, k, lead);
  ce->body = b;
  ce->sig = b->sig;
  return b->sig->ok;
}

static Value *call_user(Scope *sc, Expr *call, Callee *ce) {
  Sema *S = sc->S;
  Arena *a = S->arena;
  if (sc->const_only) {
    sema_error(S, call->span, "%s cannot be called in a compile-time constant",
               ce->short_label);
    return NULL;
  }
  int n = call->args.len;
  Value **vals = arena_alloc(a, sizeof(Value *) * (n + 1));
  bool ok = true;
  for (int i = 0; i < n; i++) {
    Arg *arg = VEC_AT(call->args, Arg, i);
    vals[i] = sema_eval(sc, arg->value);
    if (!vals[i]) ok = false;
  }
  Expr **args = match_args(sc, call, ce);
  if (!args || !ok || !ce->sig->ok) return NULL;
  Value **pv = arena_alloc(a, sizeof(Value *) * (ce->sig->nparams + 1));
  for (int i = 0; i < ce->sig->nparams; i++)
    for (int k = 0; k < n; k++)
      if (VEC_AT(call->args, Arg, k)->value == args[i]) pv[i] = vals[k];
  if (ce->sig->ellipsis && !specialise(sc, ce, pv, args)) return NULL;
  Sig *g = ce->sig;
  Unify u = {sc, ce, {0}, NULL, NULL, pv};
  u.bound_at = arena_alloc(a, sizeof(Span) * (g->syms.len + 1));
  u.bound_param = arena_alloc(a, sizeof(int) * (g->syms.len + 1));
  for (int i = 0; i < g->syms.len; i++) u.bound_param[i] = -1;
  bool *kind_ok = arena_alloc(a, sizeof(bool) * (g->nparams + 1));
  for (int i = 0; i < g->nparams; i++) {
    kind_ok[i] = unify_kind(&u, i, pv[i], args[i]->span);
    if (!kind_ok[i]) ok = false;
  }
  for (int i = 0; i < g->nparams; i++)
    if (kind_ok[i]) bind_bare(&u, i, pv[i], args[i]->span);
  for (int i = 0; i < g->nparams; i++)
    if (kind_ok[i] && !check_dims(&u, i, pv[i], args[i]->span)) ok = false;
  if (!ok) return NULL;
  if (sc->body && !sc->in_grad && ce->body) {
    CallEdge *edge = arena_alloc(a, sizeof(CallEdge));
    edge->callee = ce->body;
    edge->subst = u.subst;
    edge->span = call->span;
    vec_push(a, &sc->body->calls, edge);
  }
  Type **ts = arena_alloc(a, sizeof(Type *) * (size_t)g->nrets);
  for (int r = 0; r < g->nrets; r++) {
    Type *t = ts[r] = type_subst(a, g->rets[r], &u.subst);
    for (int j = 0; j < t->rank; j++) {
      if (!dim_nonpositive(t->dims[j])) continue;
      sema_error(S, call->span, "%s returns %s for these arguments: dim %d is %s",
                 ce->label, type_str(a, t), j, dim_str(a, t->dims[j]));
      sema_note(S, g->fn->ret->span, "the return type is declared as %s here",
                type_str(a, g->rets[r]));
      return NULL;
    }
  }
  if (g->nrets > 1 && call != sc->tuple_site) {
    sema_error(S, call->span, "%s returns %d values: bind each of them, as in a, b = %s(...)",
               ce->short_label, g->nrets, span_text(S, call->lhs->span) ? span_text(S, call->lhs->span) : "f");
    return NULL;
  }
  CkExpr *ck = sema_ck_new(S, CK_CALL, call->span, g->nrets > 1 ? NULL : ts[0]);
  ck->callee = ce->body ? ce->body->ck : NULL;
  ck->path = ce->path;
  ck->up = ce->up;
  ck->subst = u.subst;
  ck->nargs = g->nparams;
  ck->args = arena_alloc(a, sizeof(CkExpr *) * (size_t)(g->nparams + 1));
  for (int i = 0; i < g->nparams; i++) ck->args[i] = sema_ck_of(S, pv[i]);
  if (g->nrets == 1) return sema_with_ck(S, value_tensor(a, call->span, ts[0]), ck);
  Value *v = sema_new_value(S, V_TUPLE, call->span);
  for (int r = 0; r < g->nrets; r++) vec_push(a, &v->items, value_tensor(a, call->span, ts[r]));
  v->ck = ck;
  return v;
}

// inst(x) and inst.m(x).
static Value *call_instance(Scope *sc, Expr *call, InstRef *r, Expr *obj,
                            const char *mname, Span mspan) {
  Sema *S = sc->S;
  if (r->inst->is_list) {
    not_a_list_use(sc, obj->span, r->path, r->inst);
    return NULL;
  }
  count_call(sc, r);
  MInfo *mm = sema_member(r->inst, mname);
  if (!mm || mm->m->kind != MB_METHOD) {
    Vec c = member_names(S, r->inst, true);
    if (mm)
      sema_error(S, mspan, "'%s' is a %s of %s, not a method", mname,
                 member_kind_name(mm->m), inst_desc(S, obj, r->inst));
    else
      sema_error(S, mspan, "%s has no method '%s'%s", inst_desc(S, obj, r->inst),
                 mname, sema_suggest(S, mname, &c));
    return NULL;
  }
  Callee ce = {mm->body, sema_method_sig(S, r->inst, mm),
               arena_printf(S->arena, "%s.%s", r->inst->label, mname),
               arena_printf(S->arena, "%s.%s", r->inst->item->name, mname),
               r->top, r->path, r->up, r->inst, mm, NULL};
  return call_user(sc, call, &ce);
}

// A model or block calling one of its own methods: forward(x).
static Value *call_own(Scope *sc, Expr *call, MInfo *mm) {
  Sema *S = sc->S;
  Callee ce = {mm->body, sema_method_sig(S, sc->inst, mm),
               mm->body ? mm->body->label : mm->m->name,
               mm->body ? mm->body->short_label : mm->m->name, NULL, "", 0, sc->inst, mm, NULL};
  return call_user(sc, call, &ce);
}

static Value *call_fn(Scope *sc, Expr *call, ItemInfo *ii) {
  Body *b = sema_fn_body(sc->S, ii);
  const char *name = ii->item->name;
  Callee ce = {b, sema_fn_sig(sc->S, ii), name, name, NULL, "", 0, NULL, NULL, ii};
  return call_user(sc, call, &ce);
}

// The member `e` names when it is state of the model: `running_mean` of
// the current block or `bn.running_mean` of one of its instances (no local
// of that name in the way); NULL otherwise.
static MInfo *stat_member(Scope *sc, Expr *e) {
  Inst *I = sc->inst;
  if (!I) return NULL;
  if (e->kind == EX_NAME) {
    if (sema_find_local(sc, e->name)) return NULL;
    return sema_member(I, e->name);
  }
  if (e->kind == EX_MEMBER && e->lhs->kind == EX_NAME &&
      !sema_find_local(sc, e->lhs->name)) {
    MInfo *owner = sema_member(I, e->lhs->name);
    if (!owner || owner->m->kind != MB_INSTANCE || !owner->child) return NULL;
    return sema_member(owner->child, e->name);
  }
  return NULL;
}

// batch_norm(x, weight, bias, running_mean, running_var): the running
// statistics are updated by training, so they must be buffers (state the
// optimizer never touches), not params or computed values.
static bool check_running_stats(Scope *sc, Expr *call) {
  static const char *const names[2] = {"running_mean", "running_var"};
  bool ok = true;
  for (int k = 0; k < 2; k++) {
    Arg *found = NULL;
    for (int i = 0; i < call->args.len; i++) {
      Arg *a = VEC_AT(call->args, Arg, i);
      if ((a->name && !strcmp(a->name, names[k])) || (!a->name && i == 3 + k))
        found = a;
    }
    if (!found) continue;
    MInfo *mi = stat_member(sc, found->value);
    if (mi && mi->m->kind == MB_BUFFER) continue;
    sema_error(sc->S, found->value->span,
               "batch_norm's %s must be a buffer of the block (state that "
               "training updates), not %s",
               names[k], mi ? "a param (the optimizer would train it)"
                            : "a computed value");
    if (mi) sema_note(sc->S, mi->m->span, "declare it as: buffer %s: ...",
                      mi->m->name);
    ok = false;
  }
  return ok;
}

static Value *call_builtin_expr(Scope *sc, Expr *call, const char *name) {
  Sema *S = sc->S;
  Arena *a = S->arena;
  int n = call->args.len;
  Value **vals = arena_alloc(a, sizeof(Value *) * (n + 1));
  const char **names = arena_alloc(a, sizeof(char *) * (n + 1));
  Span *nsp = arena_alloc(a, sizeof(Span) * (n + 1));
  bool ok = true;
  for (int i = 0; i < n; i++) {
    Arg *arg = VEC_AT(call->args, Arg, i);
    if (arg->unit) {
      sema_error(S, arg->unit_span, "unexpected unit '%s' in a call", arg->unit);
      ok = false;
    }
    names[i] = arg->name;
    nsp[i] = arg->name_span;
    vals[i] = sema_eval(sc, arg->value);
    if (!vals[i]) ok = false;
  }
  if (!ok) return NULL;
  if (sc->const_only)
    for (int i = 0; i < n; i++)
      if (vals[i]->kind == V_TENSOR) return NULL; // reported where it was named
  Value *v = call_builtin(sc, name, call->span, call->lhs->span, n, vals, names,
                          nsp);
  if (v && !strcmp(name, "batch_norm") && !check_running_stats(sc, call))
    return NULL;
  if (v && sc->const_only && v->kind == V_TENSOR) {
    sema_error(S, call->span, "%s(...) makes a tensor, not a compile-time "
               "constant", name);
    return NULL;
  }
  if (v && builtin_is_data_source(name) && !sc->const_only) {
    sema_error(S, call->lhs->span, "%s(...) is a data source: it belongs in a "
               "train recipe's train_data or test_data", name);
    return NULL;
  }
  return v;
}

static Value *call_name(Scope *sc, Expr *call) {
  Sema *S = sc->S;
  Expr *f = call->lhs;
  const char *n = f->name;
  Local *l = sema_find_local(sc, n);
  MInfo *mi = sc->inst ? sema_member(sc->inst, n) : NULL;
  InstRef r = resolve_instance(sc, f, 0); // a member, a loop variable, a block argument
  if (r.err) return NULL;
  if (r.inst) return call_instance(sc, call, &r, f, "forward", f->span);
  if (mi && mi->m->kind == MB_METHOD) return call_own(sc, call, mi);
  if (mi) {
    sema_error(S, f->span, "'%s' is a %s, not a function", n,
               member_kind_name(mi->m));
    return NULL;
  }
  ItemInfo *ii = sema_find_item(S, n);
  if (ii && ii->item->kind == IT_FN) return call_fn(sc, call, ii);
  if (builtin_exists(n)) return call_builtin_expr(sc, call, n);
  if (ii) {
    sema_error(S, f->span,
               "'%s' is a %s: declare an instance as a member (x = %s(...)) "
               "and call the instance",
               n, ii->item->kind == IT_BLOCK ? "block" : "model", n);
    return NULL;
  }
  if (l) { // silent when poisoned by an earlier error
    if (l->value) sema_error(S, f->span, "'%s' is a value, not a function", n);
    return NULL;
  }
  Vec c = callable_names(sc);
  sema_error(S, f->span, "unknown function '%s'%s", n, sema_suggest(S, n, &c));
  return NULL;
}

static Value *eval_call(Scope *sc, Expr *call) {
  Sema *S = sc->S;
  Expr *f = call->lhs;
  if (f->kind == EX_NAME) return call_name(sc, call);
  if (f->kind == EX_MEMBER) {
    InstRef whole = resolve_instance(sc, f, 0); // enc.fc1(x): fc1's forward
    if (whole.err) return NULL;
    if (whole.inst)
      return call_instance(sc, call, &whole, f, "forward", f->span);
    InstRef r = resolve_instance(sc, f->lhs, 0);
    if (r.err) return NULL;
    if (r.inst) return call_instance(sc, call, &r, f->lhs, f->name, f->span);
    Value *x = sema_eval(sc, f->lhs);
    if (!x) return NULL;
    return tensor_member(sc, f, x);
  }
  if (f->kind == EX_INDEX) { // blocks[0](x)
    InstRef r = resolve_instance(sc, f, 0);
    if (r.err) return NULL;
    if (r.inst) return call_instance(sc, call, &r, f, "forward", f->span);
  }
  sema_error(S, f->span, "this expression cannot be called");
  return NULL;
}

// ---- the evaluator ---------------------------------------------------------------------------
// [a, b]: a constant list, or, when an item is computed (a tensor), a
// CK_LIST of the items (concat's argument).
static Value *eval_list(Scope *sc, Expr *e) {
  Sema *S = sc->S;
  Value *v = sema_new_value(S, V_LIST, e->span);
  bool ok = true, computed = false;
  S->in_list++;
  for (int i = 0; i < e->args.len; i++) {
    Value *x = sema_eval(sc, VEC_AT(e->args, Arg, i)->value);
    if (!x) ok = false;
    else vec_push(S->arena, &v->items, x);
    computed = computed || (x && (x->ck || x->kind == V_TENSOR));
  }
  S->in_list--;
  if (!ok) return NULL;
  if (!computed) return v;
  v->ck = sema_ck_new(S, CK_LIST, e->span, NULL);
  v->ck->nargs = v->items.len;
  v->ck->args = arena_alloc(S->arena, sizeof(CkExpr *) * (size_t)(v->items.len + 1));
  for (int i = 0; i < v->items.len; i++) v->ck->args[i] = sema_ck_of(S, VEC_AT(v->items, Value, i));
  return v;
}

static Value *eval_expr(Scope *sc, Expr *e) {
  Sema *S = sc->S;
  Value *v;
  switch (e->kind) {
  case EX_INT: return value_dim(S->arena, e->span, dim_const(S->arena, e->ival));
  case EX_FLOAT: return value_float(S->arena, e->span, e->fval);
  case EX_BOOL: return bool_value(S, e->span, e->ival != 0);
  case EX_STR:
    v = sema_new_value(S, V_STR, e->span);
    v->str = e->name;
    return v;
  case EX_DTYPE:
    v = sema_new_value(S, V_DTYPE, e->span);
    v->dtype = e->dtype;
    return v;
  case EX_NAME: return eval_name(sc, e);
  case EX_UNARY: return eval_unary(sc, e);
  case EX_BINARY: return eval_binary(sc, e);
  case EX_CALL: return eval_call(sc, e);
  case EX_MEMBER: return eval_member(sc, e);
  case EX_INDEX: return eval_index(sc, e);
  case EX_LIST: return eval_list(sc, e);
  case EX_SLICE:
    sema_error(S, e->span, "a slice a:b is only allowed inside an index x[...]");
    return NULL;
  case EX_ELLIPSIS:
    sema_error(S, e->span, "'...' is only for the types of a signature");
    return NULL;
  }
  MLC_UNREACHABLE();
}

Value *sema_eval(Scope *sc, Expr *e) {
  if (sc->depth >= SEMA_MAX_DEPTH) {
    if (!sc->too_deep)
      sema_error(sc->S, e->span, "expression nested too deeply (more than %d "
                 "levels)", SEMA_MAX_DEPTH);
    sc->too_deep = true;
    return NULL;
  }
  sc->depth++;
  Value *v = eval_expr(sc, e);
  sc->depth--;
  if (v && v->kind == V_TENSOR) e->type = v->type;
  return v;
}
