// sema_body.c — type expressions (dims over block parameters, signature
// symbols and locals), statements, and whole bodies: a method of one
// instantiation or a fn item, and its user-declared gradient.
//
// Input: a Body whose signature is computed (sema.c). Output: diagnostics,
// the Body's bindings (for --explain), its own FLOPs and call edges (which
// expression evaluation, sema_expr.c, records).
#include <string.h>

#include "sema_internal.h"

// ---- type expressions ------------------------------------------------------------------------
static Dim *eval_dim(Scope *sc, Expr *x, TypeMode mode, int depth);

static const char *type_place(Scope *sc) {
  return sc->bitem && sc->bitem->kind == IT_BLOCK ? "a block parameter"
                                                  : "a constant";
}

static Dim *dim_from_value(Scope *sc, Expr *x, Value *v, const char *what) {
  if (!v) return NULL;
  if (v->kind == V_DIM) return v->dim;
  sema_error(sc->S, x->span, "%s '%s' is %s; a dim must be an integer", what,
             x->name, value_str(sc->S->arena, v));
  return NULL;
}

static Dim *dim_name(Scope *sc, Expr *x, TypeMode mode) {
  Sema *S = sc->S;
  const char *n = x->name;
  if (mode == TM_LOCAL) {
    Local *l = sema_find_local(sc, n);
    if (l) return l->value ? dim_from_value(sc, x, l->value, "local") : NULL;
  }
  int bp = sema_scope_bparam(sc, n);
  if (bp >= 0 && sc->bargs[bp] && sc->bargs[bp]->kind == V_INST) {
    sema_instance_as_value(sc, n, sc->bargs[bp], x->span);
    return NULL;
  }
  if (bp >= 0) return dim_from_value(sc, x, sc->bargs[bp], "block parameter");
  Sym *s = sema_sig_sym(sc, n);
  if (s) return dim_sym(S->arena, s);
  switch (mode) {
  case TM_SIG_PARAM:
    s = sym_new(S->arena, n, x->span, false);
    vec_push(S->arena, &sc->sig->syms, s);
    return dim_sym(S->arena, s);
  case TM_SIG_RET:
    sema_error(S, x->span, "return dim '%s' is not bound by any parameter", n);
    return NULL;
  case TM_MEMBER:
    sema_error(S, x->span, "'%s' is not %s: parameter shapes must be known at "
               "compile time", n, type_place(sc));
    return NULL;
  case TM_LOCAL: {
    Vec c = sema_value_names(sc);
    sema_error(S, x->span, "unknown dim '%s'%s", n, sema_suggest(S, n, &c));
    return NULL;
  }
  }
  return NULL;
}

static Dim *eval_dim_binary(Scope *sc, Expr *x, TypeMode mode, int depth) {
  Sema *S = sc->S;
  Arena *a = S->arena;
  Dim *l = eval_dim(sc, x->lhs, mode, depth + 1);
  Dim *r = eval_dim(sc, x->rhs, mode, depth + 1);
  if (!l || !r) return NULL;
  switch (x->op) {
  case OP_ADD: return dim_add(a, l, r);
  case OP_SUB: return dim_sub(a, l, r);
  case OP_MUL: return dim_mul(a, l, r);
  case OP_DIV: {
    int64_t k;
    if (dim_is_const(r, &k) && k == 0) {
      sema_error(S, x->span, "division by zero");
      return NULL;
    }
    Dim *q = dim_div(a, l, r);
    if (q) return q;
    if (sc->lenient)
      return dim_sym(a, sym_new(a, arena_printf(a, "(%s)/(%s)", dim_str(a, l),
                                                dim_str(a, r)),
                                x->span, true));
    int64_t k2;
    sema_error(S, x->span, "%s / %s is not exact: a dim must divide evenly",
               sema_dim_operand(a, l), sema_dim_operand(a, r));
    if (!dim_is_const(l, &k2))
      sema_note(S, (Span){0}, "%s is symbolic here, so the division cannot be "
                "shown exact for every size; a signature with concrete sizes "
                "(f32[B, 1, 28, 28]) can be checked", dim_str(a, l));
    return NULL;
  }
  case OP_FLOORDIV: {
    int64_t k;
    if (!dim_is_const(r, &k) || k <= 0) {
      sema_error(S, x->rhs->span, "the divisor of // must be a positive integer "
                 "constant, got %s", dim_str(a, r));
      return NULL;
    }
    return dim_floordiv(a, l, k);
  }
  }
  sema_error(S, x->span, "a dim must be an integer, a name, or + - * / // of them");
  return NULL;
}

static Dim *eval_dim(Scope *sc, Expr *x, TypeMode mode, int depth) {
  Sema *S = sc->S;
  if (depth > SEMA_MAX_DEPTH) {
    if (!sc->too_deep)
      sema_error(S, x->span, "dim expression nested too deeply (more than %d "
                 "levels)", SEMA_MAX_DEPTH);
    sc->too_deep = true;
    return NULL;
  }
  switch (x->kind) {
  case EX_INT: return dim_const(S->arena, x->ival);
  case EX_NAME: return dim_name(sc, x, mode);
  case EX_BINARY: return eval_dim_binary(sc, x, mode, depth);
  case EX_UNARY:
    if (x->op == OP_NEG) {
      Dim *d = eval_dim(sc, x->lhs, mode, depth + 1);
      return d ? dim_sub(S->arena, dim_const(S->arena, 0), d) : NULL;
    }
    break;
  default: break;
  }
  sema_error(S, x->span, "a dim must be an integer, a name, or + - * / of them");
  return NULL;
}

// `...` as the first dim of a signature's type stands for the leading
// symbols of the signature being computed (sc->sig->nlead of them);
// anywhere else it is an error. Returns how many dims it stands for, or -1.
static int ellipsis_dims(Scope *sc, TypeExpr *te, TypeMode mode) {
  Sema *S = sc->S;
  int at = -1;
  for (int i = 0; i < te->dims.len; i++)
    if (VEC_AT(te->dims, Expr, i)->kind == EX_ELLIPSIS) {
      if (at >= 0 || i > 0) {
        sema_error(S, VEC_AT(te->dims, Expr, i)->span, "'...' stands for the leading dims: it "
                   "comes first, once (f32[..., d])");
        return -1;
      }
      at = i;
    }
  if (at < 0) return 0;
  if (mode != TM_SIG_PARAM && mode != TM_SIG_RET) {
    sema_error(S, VEC_AT(te->dims, Expr, 0)->span, "'...' is only for the types of a "
               "signature (forward(x: f32[..., d]) -> f32[..., d])");
    return -1;
  }
  return sc->sig->nlead;
}

Type *sema_eval_type(Scope *sc, TypeExpr *te, TypeMode mode) {
  Sema *S = sc->S;
  Arena *a = S->arena;
  if (!te) return NULL;
  if (te->dtype == DT_U8) {
    sema_error(S, te->dtype_span, "u8 is only a data-file type; declare the "
               "input as f32 (or i32) and it is converted when loaded");
    return NULL;
  }
  int lead = te->has_dims ? ellipsis_dims(sc, te, mode) : 0;
  if (lead < 0) return NULL;
  int skip = lead || (te->has_dims && te->dims.len &&
                      VEC_AT(te->dims, Expr, 0)->kind == EX_ELLIPSIS);
  int r = te->has_dims ? te->dims.len - skip + lead : 0;
  Type *t = type_new(a, (DType)te->dtype, r);
  if (!t->origin && r) t->origin = arena_alloc(a, sizeof(Span) * r);
  bool ok = true;
  for (int i = 0; i < lead; i++) {
    t->dims[i] = dim_sym(a, VEC_AT(sc->sig->syms, Sym, i));
    t->origin[i] = VEC_AT(te->dims, Expr, 0)->span;
  }
  for (int i = lead; i < r; i++) {
    Expr *x = VEC_AT(te->dims, Expr, i - lead + skip);
    Dim *d = eval_dim(sc, x, mode, 0);
    if (d && dim_nonpositive(d)) {
      sema_error(S, x->span, "a dim must be positive, got %s", dim_str(a, d));
      d = NULL;
    }
    if (!d) ok = false;
    t->dims[i] = d ? d : dim_const(a, 1);
    t->origin[i] = x->span;
  }
  return ok ? t : NULL;
}

// ---- statements and bodies -----------------------------------------------------------------
// Does v fit a declared type T exactly? A constant fits a scalar type of its
// kind; a weak literal tensor fits any scalar of a matching dtype class.
static bool fits(const Value *v, const Type *T) {
  double x;
  switch (v->kind) {
  case V_TENSOR:
    if (v->type->weak && v->type->rank == 0 && T->rank == 0)
      return dtype_is_float(T->dtype) || !dtype_is_float(v->type->dtype);
    return type_eq(v->type, T);
  case V_FLOAT: return T->rank == 0 && dtype_is_float(T->dtype);
  case V_DIM:
    return T->rank == 0 && (dtype_is_int(T->dtype) ||
                            (dtype_is_float(T->dtype) && sema_const_num(v, &x)));
  case V_BOOL: return T->rank == 0 && T->dtype == DT_BOOL;
  default: return false;
  }
}

static void record(Scope *sc, const char *name, Span sp, Value *v, bool ret) {
  if (!sc->body || sc->in_grad) return;
  Binding *b = arena_alloc(sc->S->arena, sizeof(Binding));
  b->name = name;
  b->span = sp;
  b->value = v;
  b->is_return = ret;
  vec_push(sc->S->arena, &sc->body->bindings, b);
}

// Records `slot = value` for lowering (constants fold into their uses).
static void add_let(Scope *sc, const char *name, Value *v) {
  if (!v || !sc->lets || (!v->ck && v->kind != V_TENSOR)) return;
  CkLet *let = arena_alloc(sc->S->arena, sizeof *let);
  let->slot = sema_find_local(sc, name)->slot;
  let->value = sema_ck_of(sc->S, v);
  vec_push(sc->S->arena, sc->lets, let);
}

// a, b = f(x): the call's results, one per name (`_` drops one). The call
// is bound to a slot of its own, each name to one of its results.
static void check_destructure(Scope *sc, Stmt *st) {
  Sema *S = sc->S;
  int n = st->names.len;
  sc->tuple_site = st->value;
  Value *v = sema_eval(sc, st->value);
  sc->tuple_site = NULL;
  if (v && v->kind != V_TUPLE) {
    sema_error(S, st->value->span, "%d names, but this is one value (%s): only a call of a "
               "function of several results gives several", n, value_str(S->arena, v));
    v = NULL;
  } else if (v && v->items.len != n) {
    sema_error(S, st->span, "%d names for %d results", n, v->items.len);
    v = NULL;
  }
  const char *tuple = arena_printf(S->arena, "(%s)", st->name); // a name no source can write
  if (v) {
    sema_bind_local(sc, tuple, st->span, v);
    add_let(sc, tuple, v);
  }
  Local *t = v ? sema_find_local(sc, tuple) : NULL;
  for (int i = 0; i < n; i++) {
    Param *nm = VEC_AT(st->names, Param, i);
    if (!strcmp(nm->name, "_")) continue;
    Value *item = v ? sema_with_ck(S, VEC_AT(v->items, Value, i), NULL) : NULL;
    if (item) {
      CkExpr *ck = sema_ck_new(S, CK_ITEM, nm->name_span, item->type);
      ck->nargs = 1;
      ck->args = arena_alloc(S->arena, sizeof(CkExpr *));
      ck->args[0] = sema_ck_new(S, CK_LOCAL, st->value->span, NULL);
      ck->args[0]->slot = t->slot;
      ck->slot = i;
      item->ck = ck;
    }
    sema_bind_local(sc, nm->name, nm->name_span, item);
    record(sc, nm->name, nm->name_span, item, false);
    add_let(sc, nm->name, item);
  }
}

static void check_let(Scope *sc, Stmt *st) {
  Sema *S = sc->S;
  if (st->names.len) {
    check_destructure(sc, st);
    return;
  }
  Value *v = sema_eval(sc, st->value);
  if (st->type) {
    Type *T = sema_eval_type(sc, st->type, TM_LOCAL);
    if (T && v && !fits(v, T)) {
      sema_error(S, st->value->span, "declared %s but the value is %s",
                 type_str(S->arena, T), value_str(S->arena, v));
      sema_note(S, st->type->span, "'%s' is declared here", st->name);
    }
    // The declared type is what later statements see, even after an error;
    // the value is still computed by its expression.
    if (T && (!v || v->kind == V_TENSOR || !fits(v, T))) {
      CkExpr *ck = v && fits(v, T) ? v->ck : NULL;
      v = value_tensor(S->arena, st->name_span, T);
      v->ck = ck;
    }
  }
  sema_bind_local(sc, st->name, st->name_span, v);
  record(sc, st->name, st->name_span, v, false);
  add_let(sc, st->name, v);
}

// return x, or return a, b for a function of several results: each checked
// against its declared type.
static void check_return(Scope *sc, Stmt *st, Body *b) {
  Sema *S = sc->S;
  Func *fn = b->fn;
  Sig *g = b->sig;
  int n = st->value->kind == EX_LIST ? st->value->args.len : 1;
  if (n != g->nrets) {
    if (g->nrets == 1)
      sema_error(S, st->value->span, "this returns %d values, but '%s' returns one", n, fn->name);
    else
      sema_error(S, st->value->span, "'%s' returns %d values, this returns %d", fn->name,
                 g->nrets, n);
    sema_note(S, fn->ret->span, "return type declared here");
    return;
  }
  b->ck->nrets = n;
  b->ck->rets = arena_alloc(S->arena, sizeof(CkExpr *) * (size_t)n);
  Value *shown = n > 1 ? sema_new_value(S, V_TUPLE, st->value->span) : NULL;
  for (int i = 0; i < n; i++) {
    Expr *x = n > 1 ? VEC_AT(st->value->args, Arg, i)->value : st->value;
    Value *v = sema_eval(sc, x);
    if (n == 1) shown = v;
    else if (v && shown) vec_push(S->arena, &shown->items, v);
    else shown = NULL;
    if (v) b->ck->rets[i] = sema_ck_of(S, v);
    Type *R = g->rets[i];
    if (!v || !R || fits(v, R)) continue;
    TypeExpr *te = fn->results.len ? VEC_AT(fn->results, Param, i)->type : fn->ret;
    if (n > 1)
      sema_error(S, x->span, "result %d of '%s' is declared as %s, but this is %s", i + 1,
                 fn->name, type_str(S->arena, R), value_str(S->arena, v));
    else
      sema_error(S, x->span, "'%s' is declared to return %s, but this is %s",
                 fn->name, type_str(S->arena, R), value_str(S->arena, v));
    sema_note(S, te->span, "return type declared here");
  }
  b->ck->ret = b->ck->rets[0];
  record(sc, "return", st->span, shown, true);
}

// The gradient returns one tensor per forward parameter, each typed exactly
// like its parameter: `return dx` for one, `return dx, dw` for several.
static void check_grad_return(Scope *sc, Stmt *st, Body *b) {
  Sema *S = sc->S;
  Sig *g = b->sig;
  Expr *e = st->value;
  int n = e->kind == EX_LIST ? e->args.len : 1;
  if (n != g->nparams) {
    sema_error(S, e->span, "the gradient must return one tensor per parameter: "
               "'%s' has %d parameter%s, this returns %d", b->fn->name,
               g->nparams, g->nparams == 1 ? "" : "s", n);
    return;
  }
  b->ck->grad_rets = arena_alloc(S->arena, sizeof(CkExpr *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    Expr *x = e->kind == EX_LIST ? VEC_AT(e->args, Arg, i)->value : e;
    Value *v = sema_eval(sc, x);
    if (v) b->ck->grad_rets[i] = sema_ck_of(S, v);
    Type *P = g->params[i];
    if (!v || !P || fits(v, P)) continue;
    sema_error(S, x->span, "the gradient for parameter '%s' must be %s, got %s",
               sema_param_name(g, i), type_str(S->arena, P), value_str(S->arena, v));
  }
}

static bool check_stmts(Scope *sc, Vec *stmts, Body *b, bool grad, int loops);

// for x in ITER { body }: the body checked once per value, with x bound to
// it; what the body binds stays visible after the loop (the last
// iteration's), as in Python. After an error in ITER the body is checked
// once with x poisoned, for its independent errors.
static void check_for(Scope *sc, Stmt *st, Body *b, bool grad, int loops) {
  Sema *S = sc->S;
  Vec vals = {0};
  Span head = span_join(st->span, st->value->span);
  if (!sema_loop_values(sc, st->value, &vals)) {
    sema_bind_local(sc, st->name, st->name_span, NULL);
    check_stmts(sc, &st->body, b, grad, loops + 1);
    return;
  }
  if ((sc->unrolled += vals.len) > SEMA_MAX_UNROLL) {
    sema_error(S, head, "the loops of '%s' unroll to more than %d iterations (each is a "
               "copy of the loop's body)", b->fn->name, SEMA_MAX_UNROLL);
    return;
  }
  for (int k = 0; k < vals.len; k++) {
    Value *v = VEC_AT(vals, Value, k);
    sema_bind_local(sc, st->name, st->name_span, v);
    sema_loop_enter(S, head, st->name, v);
    check_stmts(sc, &st->body, b, grad, loops + 1);
    sema_loop_leave(S);
  }
}

// Checks statements in order; returns whether a return was seen. `loops`
// counts the loops around them (a return cannot be inside one).
static bool check_stmts(Scope *sc, Vec *stmts, Body *b, bool grad, int loops) {
  bool returned = false, warned = false;
  for (int i = 0; i < stmts->len; i++) {
    Stmt *st = VEC_AT(*stmts, Stmt, i);
    if (returned && !warned) {
      sema_error(sc->S, st->span, "statement after 'return' is never executed");
      warned = true;
    }
    if (st->kind == ST_LET) check_let(sc, st);
    else if (st->kind == ST_FOR) check_for(sc, st, b, grad, loops);
    else if (loops)
      sema_error(sc->S, st->span, "return inside a loop: a loop is unrolled and always runs to "
                 "its end, so return after it");
    else if (grad) check_grad_return(sc, st, b);
    else check_return(sc, st, b);
    if (st->kind == ST_RETURN && !loops) returned = true;
  }
  return returned;
}

static void bind_params(Scope *sc, Body *b) {
  Sema *S = sc->S;
  for (int i = 0; i < b->fn->params.len; i++) {
    Param *p = VEC_AT(b->fn->params, Param, i);
    Type *t = b->sig->params[i];
    sema_bind_local(sc, p->name, p->name_span,
               t ? value_tensor(S->arena, p->name_span, t) : NULL);
  }
}

static void check_grad(Sema *S, Body *b) {
  Scope sc;
  sema_scope_init(&sc, S, b->inst, b->member ? b->member->idx : 0);
  sc.body = b;
  sc.sig = b->sig;
  sc.in_grad = true;
  sc.lets = &b->ck->grad_lets;
  bind_params(&sc, b);
  Type *R = b->sig->ret;
  sema_bind_local(&sc, b->fn->grad_name, b->fn->grad_name_span,
             R ? value_tensor(S->arena, b->fn->grad_name_span, R) : NULL);
  if (!check_stmts(&sc, &b->fn->grad_body, b, true, 0))
    sema_error(S, b->fn->grad_span, "missing return: the gradient of '%s' must "
               "return one tensor per parameter", b->fn->name);
  b->ck->grad_nslots = sc.nslots;
}

void sema_check_body(Sema *S, Body *b) {
  if (b->state != BODY_NEW) return;
  b->state = BODY_BUSY;
  Scope sc;
  sema_scope_init(&sc, S, b->inst, b->member ? b->member->idx : 0);
  sc.body = b;
  sc.sig = b->sig;
  sc.lets = &b->ck->lets;
  bind_params(&sc, b);
  if (!check_stmts(&sc, &b->fn->body, b, false, 0) && b->sig->ret)
    sema_error(S, b->fn->name_span, "missing return: '%s' must return %s",
               b->fn->name, type_str(S->arena, b->sig->ret));
  b->ck->nslots = sc.nslots;
  if (b->fn->has_grad) check_grad(S, b);
  b->ck->checked = true;
  b->state = BODY_DONE;
}
