// sema_entry.c — what a compiled program needs of a model, checked where
// the user wrote it. A model with both forward and loss can be built into a
// program (`mlc build`), whose entry points follow the ABI of
// runtime/include/mlc_model.h: train_step and eval take the loss's
// arguments, predict the first n_forward_inputs of them, each fed from the
// data as [B, ...] records. So, at the signatures and declarations:
//
//   - loss takes at most MLC_MAX_INPUTS arguments (kernels/abi.h);
//   - every loss argument is [B, ...] with one batch symbol B shared by all,
//     and each dim after B is a constant or a symbol of its own (T), at
//     most MLC_MAX_RANK - 1 dims per sample and MLC_MAX_SYMS symbols in
//     all, bound from the data's records;
//   - forward's parameters are the first parameters of loss, with the same
//     types (predict is fed the loss's first inputs);
//   - forward returns [B, ...] whose other dims are constants or symbols its
//     inputs bind (its first result: a program's output);
//   - loss's results after the first are named scalars of its dtype, at
//     most MLC_MAX_AUX (the values the program logs);
//   - inputs and state have dtypes the runtime can feed and hold (f32, f64,
//     i32, i64, bool), and state has at most MLC_MAX_RANK dims.
//
// Input: a model's Inst after its bodies are checked. Output: diagnostics at
// the parameter, return type or member that breaks a rule. These are the
// checks the program's glue would otherwise refuse at `mlc build` time with
// no location; the glue now only asserts them.
#include <string.h>

#include "kernels/abi.h" // MLC_MAX_RANK, MLC_MAX_INPUTS, MLC_MAX_SYMS
#include "sema_internal.h"

static bool feedable(DType dt) {
  return dt == DT_F32 || dt == DT_F64 || dt == DT_I32 || dt == DT_I64 || dt == DT_BOOL;
}

static Param *param_of(Sig *g, int i) { return VEC_AT(g->fn->params, Param, i); }

// Where dim j of parameter i was written (the parameter when it has no dims).
static Span dim_span(Sig *g, int i, int j) {
  TypeExpr *te = param_of(g, i)->type;
  if (te && te->has_dims && j < te->dims.len) return VEC_AT(te->dims, Expr, j)->span;
  return te ? te->span : param_of(g, i)->span;
}

// Dims after the batch: constants or bare symbols other than the batch;
// counts the distinct symbols in *syms (names, deduplicated).
static bool sample_dims_ok(Sema *S, Sig *g, int i, Sym *batch, Vec *syms, const char *what) {
  Type *t = g->params[i];
  for (int j = 1; j < t->rank; j++) {
    Sym *s = dim_as_sym(t->dims[j]);
    if (dim_is_const(t->dims[j], NULL) || (s && s != batch)) {
      bool seen = !s;
      for (int k = 0; s && k < syms->len; k++) seen = seen || !strcmp(VEC_AT(*syms, char, k), s->name);
      if (!seen) vec_push(S->arena, syms, (void *)s->name);
      continue;
    }
    sema_error(S, dim_span(g, i, j), "dim %d of %s '%s' is %s: in a compiled program each dim "
               "after the batch is a constant or a size symbol of its own", j, what,
               param_of(g, i)->name, dim_str(S->arena, t->dims[j]));
    return false;
  }
  return true;
}

// How to write t with a batch dim: the first dim (a constant, or another
// symbol) becomes B; a scalar gets one.
static void note_batch(Sema *S, const Type *t, const char *b) {
  StrBuf sb = {0};
  sb_printf(&sb, "%s[%s", dtype_name(t->dtype), b);
  for (int j = 1; j < t->rank; j++) sb_printf(&sb, ", %s", dim_str(S->arena, t->dims[j]));
  sb_putc(&sb, ']');
  if (t->rank == 1 && dim_is_const(t->dims[0], NULL)) // or one such row per sample
    sb_printf(&sb, ", or %s[%s, %s]", dtype_name(t->dtype), b, dim_str(S->arena, t->dims[0]));
  sema_note(S, (Span){0}, "the program feeds loss one batch of records at a time (--batch "
            "sets its size): write %s", sb.data);
  sb_free(&sb);
}

// Every loss argument is [B, ...] with one B, feedable, with sample dims a
// program can bind. Returns the batch symbol, NULL after an error.
static Sym *check_loss_inputs(Sema *S, Sig *loss) {
  Func *fn = loss->fn;
  if (loss->nparams > MLC_MAX_INPUTS) {
    sema_error(S, fn->name_span, "loss takes %d arguments; a compiled program feeds it at most %d",
               loss->nparams, MLC_MAX_INPUTS);
    return NULL;
  }
  Sym *batch = NULL;
  Vec syms = {0};
  bool ok = true;
  for (int i = 0; i < loss->nparams; i++) {
    Type *t = loss->params[i];
    Param *p = param_of(loss, i);
    Sym *b = t->rank ? dim_as_sym(t->dims[0]) : NULL;
    if (!feedable(t->dtype)) {
      sema_error(S, p->type->dtype_span, "loss argument '%s' is %s: a compiled program feeds "
                 "f32, f64, i32, i64 or bool inputs", p->name, type_str(S->arena, t));
      ok = false;
    } else if (!b || (batch && b != batch)) {
      sema_error(S, t->rank ? dim_span(loss, i, 0) : p->type->span,
                 "loss argument '%s' is %s: in a compiled program every input of loss is "
                 "[B, ...] with one batch symbol, the first dim%s", p->name,
                 type_str(S->arena, t), batch ? arena_printf(S->arena, " (%s here)", batch->name) : "");
      note_batch(S, t, batch ? batch->name : "B");
      ok = false;
    } else if (t->rank > MLC_MAX_RANK) {
      sema_error(S, p->type->span, "loss argument '%s' has %d dims per sample; a compiled "
                 "program feeds at most %d", p->name, t->rank - 1, MLC_MAX_RANK - 1);
      ok = false;
    } else if (!sample_dims_ok(S, loss, i, b, &syms, "loss argument")) {
      ok = false;
    }
    if (b && !batch) batch = b;
  }
  if (ok && syms.len > MLC_MAX_SYMS) {
    sema_error(S, fn->name_span, "the inputs of loss use %d size symbols; a compiled program "
               "binds at most %d", syms.len, MLC_MAX_SYMS);
    ok = false;
  }
  return ok ? batch : NULL;
}

// forward(x..) is fed the first inputs of loss: the same types, in order.
static bool check_forward_inputs(Sema *S, Sig *fwd, Sig *loss) {
  if (fwd->nparams > loss->nparams) {
    sema_error(S, fwd->fn->name_span, "forward takes %d parameters but loss only %d: a compiled "
               "program feeds predict the first inputs of loss", fwd->nparams, loss->nparams);
    return false;
  }
  for (int i = 0; i < fwd->nparams; i++) {
    const char *a = type_str(S->arena, fwd->params[i]), *b = type_str(S->arena, loss->params[i]);
    if (!strcmp(a, b)) continue;
    sema_error(S, param_of(fwd, i)->type->span, "forward's parameter '%s' is %s but loss's "
               "parameter %d ('%s') is %s: a compiled program feeds predict the first inputs of "
               "loss, so forward's parameters must be the first parameters of loss",
               param_of(fwd, i)->name, a, i + 1, param_of(loss, i)->name, b);
    sema_note(S, param_of(loss, i)->span, "loss's parameter %d is declared here", i + 1);
    return false;
  }
  return true;
}

// forward returns [B, ...]: other dims constants or symbols of its inputs.
static void check_forward_output(Sema *S, Sig *fwd, Sym *loss_batch) {
  Type *t = fwd->ret;
  TypeExpr *te = fwd->fn->ret;
  Sym *b = t->rank ? dim_as_sym(t->dims[0]) : NULL;
  if (!b || strcmp(b->name, loss_batch->name)) {
    sema_error(S, te->span, "forward returns %s: in a compiled program its output is [%s, ...], "
               "one row per sample of the batch", type_str(S->arena, t), loss_batch->name);
    return;
  }
  for (int j = 1; j < t->rank; j++) {
    Sym *s = dim_as_sym(t->dims[j]);
    if (dim_is_const(t->dims[j], NULL) || (s && s != b)) continue;
    Span at = te->has_dims && j < te->dims.len ? VEC_AT(te->dims, Expr, j)->span : te->span;
    sema_error(S, at, "dim %d of forward's output is %s: in a compiled program each dim after "
               "the batch is a constant or a size symbol of forward's inputs", j,
               dim_str(S->arena, t->dims[j]));
    return;
  }
}

// Every param and buffer of I (and below) can be held by the runtime.
static void check_state(Sema *S, Inst *I, int depth) {
  if (depth > SEMA_MAX_INST_DEPTH) return;
  for (int i = 0; i < I->item->members.len; i++) {
    MInfo *mi = I->members[i];
    Member *m = mi->m;
    if ((m->kind == MB_INSTANCE || m->kind == MB_INSTANCE_LIST) && mi->child)
      check_state(S, mi->child, depth + 1);
    if ((m->kind != MB_PARAM && m->kind != MB_BUFFER) || !mi->type) continue;
    if (!feedable(mi->type->dtype))
      sema_error(S, m->type->dtype_span, "%s '%s' is %s: a compiled program holds f32, f64, "
                 "i32, i64 or bool state", m->kind == MB_PARAM ? "param" : "buffer", m->name,
                 type_str(S->arena, mi->type));
    else if (mi->type->rank > MLC_MAX_RANK)
      sema_error(S, m->type->span, "'%s' has %d dims; a compiled program holds at most %d",
                 m->name, mi->type->rank, MLC_MAX_RANK);
  }
}

// loss -> (f32, ce: f32, reg: f32): the first result is the loss, the others
// auxiliary values the program logs by name, so each is named, a scalar of
// the loss's dtype, and there are at most MLC_MAX_AUX.
static void check_loss_results(Sema *S, Sig *loss) {
  Func *fn = loss->fn;
  if (loss->nrets - 1 > MLC_MAX_AUX) {
    sema_error(S, fn->ret->span, "loss returns %d auxiliary values; a compiled program logs "
               "at most %d", loss->nrets - 1, MLC_MAX_AUX);
    return;
  }
  for (int i = 1; i < loss->nrets; i++) {
    Param *r = VEC_AT(fn->results, Param, i);
    Type *t = loss->rets[i], *l = loss->rets[0];
    if (!r->name)
      sema_error(S, r->type->span, "name the loss's auxiliary values, which the program logs "
                 "by name: (f32, %s: %s)", i == 1 ? "ce" : "aux", type_str(S->arena, t));
    else if (t && l && (t->rank != 0 || t->dtype != l->dtype))
      sema_error(S, r->type->span, "auxiliary value '%s' is %s: the program logs scalars of "
                 "the loss's dtype (%s)", r->name, type_str(S->arena, t), type_str(S->arena, l));
  }
}

void sema_check_entries(Sema *S, Inst *model) {
  MInfo *f = sema_member(model, "forward"), *l = sema_member(model, "loss");
  if (!f || !l || f->m->kind != MB_METHOD || l->m->kind != MB_METHOD) return;
  Sig *fwd = sema_method_sig(S, model, f), *loss = sema_method_sig(S, model, l);
  if (!fwd->ok || !loss->ok) return;
  check_loss_results(S, loss);
  Sym *batch = check_loss_inputs(S, loss);
  if (batch && check_forward_inputs(S, fwd, loss)) check_forward_output(S, fwd, batch);
  check_state(S, model, 0);
}

// ---- sizes once the calls are inlined ---------------------------------------------------------
// A slice's start is a graph attribute: it must be a constant once the
// bodies are inlined. In a callee it may be a symbol its caller binds to a
// constant; and a callee's values may be empty, or its slices out of
// range, only for the sizes one caller gives. So the check walks each
// entry's calls with their substitutions composed, as lowering inlines them. Each (body, substitution) is visited
// once; WALK_BUDGET bounds the walk (lowering reports what it leaves).
enum { WALK_BUDGET = 100000 };

typedef struct Walk {
  Sema *S;
  SMap seen; // "body|dims" visited
  int budget;
  const CkExpr *site; // the call whose body is walked (NULL: an entry's)
  bool empty;         // an empty value of the body walked was reported
} Walk;

static void walk_func(Walk *w, const CkFunc *f, const DimSubst *env);

// Each slice of x with the call's sizes: a constant start, and within its
// dim when the sizes are known (a callee's x[0:4] called with N = 2).
static void walk_slices(Walk *w, const CkExpr *x, const DimSubst *env) {
  Arena *a = w->S->arena;
  for (int i = 0; i < x->nslices; i++) {
    const CkSlice *sl = &x->slices[i];
    Dim *start = dim_subst(a, sl->start, env), *len = dim_subst(a, sl->len, env);
    Dim *n = dim_subst(a, sl->n, env);
    int64_t k0, kl, kn;
    if (!start || !len || !n) continue;
    if (!dim_is_const(start, &k0)) {
      sema_error(w->S, x->span, "this slice starts at %s, which is only known when the model "
                 "runs; a slice start must be a constant once the calls are inlined",
                 dim_str(a, start));
    } else if (k0 < 0 || (dim_is_const(len, &kl) && dim_is_const(n, &kn) &&
                          (kl < 1 || k0 + (kl - 1) * sl->step >= kn))) {
      sema_error(w->S, x->span, "this slice is out of range of its dim (size %s) where it is "
                 "called: it starts at %lld", dim_str(a, n), (long long)k0);
    }
  }
}

// A body checked once over its symbols can meet sizes at a call that leave
// one of its values empty: a callee's 3x3 conv2d of an image its caller
// says is 2x2. The first (innermost) such value of a body is reported; the
// values computed from it would only repeat it.
static void walk_sizes(Walk *w, const CkExpr *x, const DimSubst *env) {
  if (w->empty || !x->type || !env->len || (x->kind != CK_OP && x->kind != CK_INDEX)) return;
  Type *t = type_subst(w->S->arena, x->type, env);
  for (int j = 0; t && j < t->rank; j++) {
    if (!dim_nonpositive(t->dims[j])) continue;
    sema_error(w->S, x->span, "this gives %s where it is called: dim %d is %s, and a size must be at least 1",
               type_str(w->S->arena, t), j, dim_str(w->S->arena, t->dims[j]));
    if (w->site) sema_note(w->S, w->site->span, "called from here");
    w->empty = true;
    return;
  }
}

static void walk_expr(Walk *w, const CkExpr *x, const DimSubst *env) {
  if (!x || w->budget <= 0) return;
  for (int i = 0; i < x->nargs; i++) walk_expr(w, x->args[i], env);
  walk_sizes(w, x, env);
  walk_slices(w, x, env);
  if (x->kind != CK_CALL || !x->callee) return;
  DimSubst ce = {0};
  for (int i = 0; i < x->subst.len; i++)
    subst_bind(w->S->arena, &ce, x->subst.from[i], dim_subst(w->S->arena, x->subst.to[i], env));
  const CkExpr *outer = w->site;
  w->site = x;
  walk_func(w, x->callee, &ce);
  w->site = outer;
}

static void walk_lets(Walk *w, const Vec *lets, const DimSubst *env) {
  for (int i = 0; i < lets->len; i++) walk_expr(w, VEC_AT(*lets, CkLet, i)->value, env);
}

static void walk_func(Walk *w, const CkFunc *f, const DimSubst *env) {
  if (!f || !f->checked || --w->budget <= 0) return;
  StrBuf k = {0};
  sb_printf(&k, "%p", (const void *)f);
  for (int i = 0; i < env->len; i++) sb_printf(&k, "|%s", dim_str(w->S->arena, env->to[i]));
  const char *key = arena_strdup(w->S->arena, k.data);
  sb_free(&k);
  if (sema_map_get(&w->seen, key)) return;
  sema_map_put(w->S->arena, &w->seen, key, (void *)key);
  bool outer_empty = w->empty;
  w->empty = false;
  DimSubst e = *env; // the body's own named sizes (strided slices)
  for (int i = 0; i < f->defs.len; i++)
    subst_bind(w->S->arena, &e, f->defs.from[i], dim_subst(w->S->arena, f->defs.to[i], &e));
  walk_lets(w, &f->lets, &e);
  for (int i = 0; i < f->nrets; i++) walk_expr(w, f->rets[i], &e);
  walk_lets(w, &f->grad_lets, &e);
  for (int i = 0; f->grad_rets && i < f->sig->nparams; i++) walk_expr(w, f->grad_rets[i], &e);
  w->empty = outer_empty;
}

void sema_check_inlined(Sema *S, Inst *model) {
  Walk w = {.S = S, .budget = WALK_BUDGET};
  DimSubst none = {0};
  const char *const entries[] = {"forward", "loss"};
  for (int i = 0; i < 2; i++) {
    MInfo *mi = sema_member(model, entries[i]);
    if (mi && mi->m->kind == MB_METHOD && mi->body) walk_func(&w, mi->body->ck, &none);
  }
}
