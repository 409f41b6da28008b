// lower.c — from sema's checked models to graph IR entry points: the model's
// state (params and buffers by path, with the initialisers sema resolved),
// the entry functions (forward, loss, eval, predict) and one function per
// user-declared gradient.
//
// Input: a CkModel (sema/checked.h): the instance tree and the resolved
// bodies. Output: an IrModule (lower.h). The walk is straight: a CkExpr
// says what to emit (a local, a state read by path, a call to inline with
// its bound arguments, a builtin whose emitter is its ops.def row's, an
// index); names, instances, argument binding and constants were resolved by
// sema. Calls of user code are inlined into a fresh Env whose symbols are
// the call's substitution composed with the caller's. Everything sema
// checked is asserted here; the one user error left is a slice start that
// only the inlined call site makes known (lower.h).
//
// Modes: forward and loss are built in train mode (dropout draws a mask,
// batch norm uses the batch statistics), eval and predict in eval mode
// (dropout is the identity, batch norm reads the running buffers).
#include "lower_internal.h"

#include <string.h>

static const char *join_path(Lower *L, const char *base, const char *name) {
  if (!*base) return name;
  return *name ? arena_printf(L->a, "%s.%s", base, name) : base;
}

// base without its last `up` segments ("p1.head", 1 -> "p1"): where an
// instance a block was given as an argument lives, seen from the block.
static const char *up_path(Lower *L, const char *base, int up) {
  size_t n = strlen(base);
  for (; up > 0; up--) {
    MLC_ASSERT(n > 0); // sema counted the segments
    while (n > 0 && base[n - 1] != '.') n--;
    n = n > 0 ? n - 1 : 0;
  }
  return arena_strndup(L->a, base, n);
}

// ---- constants and types ------------------------------------------------------------------
Type *lw_type(Env *e, const Type *t) { return type_subst(e->L->a, t, &e->subst); }

Dim *lw_dim(Env *e, const CkExpr *x) {
  MLC_ASSERT(x->kind == CK_CONST && x->value->kind == V_DIM);
  return dim_subst(e->L->a, x->value->dim, &e->subst);
}

double lw_number(Env *e, const CkExpr *x) {
  MLC_ASSERT(x->kind == CK_CONST);
  const Value *v = x->value;
  int64_t k = 0;
  switch (v->kind) {
  case V_FLOAT: return v->f;
  case V_BOOL: return v->b;
  case V_DIM:
    MLC_ASSERT(dim_is_const(lw_dim(e, x), &k)); // sema requires constant numbers here
    return (double)k;
  default: break;
  }
  MLC_UNREACHABLE();
}

// A size only known at run time, as a value: the count of a const tensor
// of d elements (the kernels know every size of the function's inputs).
static IrNode *count(Env *e, Dim *d, DType dt) {
  Type *t = type_new(e->L->a, dt, 1);
  t->dims[0] = d;
  return ir_sum_all(&e->b, ir_const(&e->b, 1, t));
}

IrNode *lw_operand(Env *e, const CkExpr *x, DType dt) {
  if (x->kind != CK_CONST) return lw_node(e, x);
  const Value *v = x->value;
  e->b.span = x->span;
  if (v->kind == V_DIM) {
    Dim *d = lw_dim(e, x);
    int64_t k;
    return dim_is_const(d, &k) ? ir_scalar(&e->b, (double)k, dt) : count(e, d, dt);
  }
  return ir_scalar(&e->b, lw_number(e, x), dt);
}

// ---- state ----------------------------------------------------------------------------------
static IrNode *state_read(Env *e, const CkExpr *x) {
  const char *path = join_path(e->L, up_path(e->L, e->path, x->up), x->path);
  IrParam *p = ir_module_find_param(e->L->m, path);
  MLC_ASSERT(p && (p->kind == IRP_BUFFER) == x->buffer);
  return ir_state_ref(e->b.f, x->buffer ? IR_BUFFER : IR_PARAM, path, p->type, x->span);
}

// Every param and buffer of I under `path`, depth first in member order.
static void add_state(Lower *L, const CkInst *I, const char *path, bool frozen_above) {
  for (int i = 0; i < I->nmembers; i++) {
    const CkMember *cm = &I->members[i];
    const char *p = join_path(L, path, cm->name);
    bool frozen = frozen_above || sema_path_frozen(&L->model->frozen, p);
    if (cm->kind == CKM_INSTANCE) {
      add_state(L, cm->child, p, frozen);
      continue;
    }
    IrParamKind k = cm->kind == CKM_PARAM ? IRP_PARAM : IRP_BUFFER;
    IrParam *ip = ir_module_add_param(L->m, p, cm->type, k, !frozen && !cm->frozen, cm->name_span);
    ip->init = arena_alloc(L->a, sizeof *ip->init);
    *ip->init = cm->init;
  }
}

// ---- bodies ------------------------------------------------------------------------------------
static Env env_new(Lower *L, IrFunc *f, const char *path, int nslots) {
  Env e = {.L = L, .b = ir_builder(f, "lowering"), .path = path};
  e.b.diags = L->diags;
  e.b.failed = &L->failed;
  e.slots = arena_alloc(L->a, sizeof(LwVal) * (size_t)(nslots + 1));
  return e;
}

// The sizes sema named inside fn's body (a strided slice of a symbolic
// extent), in terms of the symbols already bound.
static void bind_defs(Env *e, const CkFunc *fn) {
  for (int i = 0; i < fn->defs.len; i++)
    subst_bind(e->L->a, &e->subst, fn->defs.from[i], dim_subst(e->L->a, fn->defs.to[i], &e->subst));
}

static void run_lets(Env *e, const Vec *lets) {
  for (int i = 0; i < lets->len; i++) {
    const CkLet *let = VEC_AT(*lets, CkLet, i);
    e->slots[let->slot] = lw_val(e, let->value);
  }
}

// The body's results as nodes of their declared types (a constant return is
// a rank-0 const): one, or the n of a function of several.
static LwVal results(Env *e, const CkFunc *fn) {
  run_lets(e, &fn->lets);
  int n = fn->nrets > 1 ? fn->nrets : 1;
  if (n == 1) return (LwVal){.node = lw_operand(e, fn->ret, fn->sig->ret->dtype)};
  LwVal v = {.n = n, .items = arena_alloc(e->L->a, sizeof(IrNode *) * (size_t)n)};
  for (int i = 0; i < n; i++) v.items[i] = lw_operand(e, fn->rets[i], fn->sig->rets[i]->dtype);
  v.node = v.items[0];
  return v;
}

// The function's inputs for signature g (its symbols registered so the text
// form prints and parses them back), bound to slots 0..n-1.
static void add_inputs(Env *e, const Sig *g) {
  IrFunc *f = e->b.f;
  for (int i = 0; i < g->syms.len; i++) ir_sym_add(e->L->m, f, VEC_AT(g->syms, Sym, i));
  for (int i = 0; i < g->nparams; i++) {
    Param *p = VEC_AT(g->fn->params, Param, i);
    e->slots[i].node = ir_input(f, p->name, g->params[i], p->span);
  }
}

// ---- user-declared gradients ---------------------------------------------------------------------
// One IrFunc per (function, instance path): NAME.grad(x1..xn, dy) -> (dx1..dxn).
// Two members with equal arguments share a CkFunc but not their params, so
// a method's gradient is per path.
typedef struct GradEntry {
  const CkFunc *fn;
  const char *path;
  IrFunc *g;
  int index; // in the module's functions
} GradEntry;

static GradEntry *grad_func(Lower *L, const CkFunc *fn, const char *path) {
  if (!fn->inst) path = ""; // a fn item reads no state: one gradient function
  for (int i = 0; i < L->grads.len; i++) {
    GradEntry *ge = VEC_AT(L->grads, GradEntry, i);
    if (ge->fn == fn && !strcmp(ge->path, path)) return ge;
  }
  const char *name = fn->inst ? arena_printf(L->a, "%s.%s.grad", *path ? path : L->model->name, fn->fn->name)
                              : arena_printf(L->a, "%s.grad", fn->fn->name);
  GradEntry *ent = arena_alloc(L->a, sizeof *ent);
  *ent = (GradEntry){fn, path, ir_func_new(L->m, name), L->m->funcs.len - 1};
  vec_push(L->a, &L->grads, ent);
  IrFunc *g = ent->g;
  g->span = fn->fn->grad_span;
  const Sig *sig = fn->sig;
  Env ge = env_new(L, g, path, fn->grad_nslots);
  add_inputs(&ge, sig);
  bind_defs(&ge, fn);
  ge.slots[sig->nparams].node = ir_input(g, fn->fn->grad_name, sig->ret, fn->fn->grad_name_span);
  bool train = L->train;
  L->train = true;
  run_lets(&ge, &fn->grad_lets);
  for (int i = 0; i < sig->nparams; i++) {
    Type *pt = sig->params[i];
    IrNode *d = lw_operand(&ge, fn->grad_rets[i], pt->dtype);
    ge.b.span = fn->grad_rets[i]->span;
    ir_return(g, ir_broadcast(&ge.b, d, pt), pt); // a constant or rank-0 value broadcasts
  }
  L->train = train;
  return ent;
}

// ---- calls of user code -------------------------------------------------------------------------
// Inlines x (a CK_CALL): the callee's body with its parameters bound to the
// arguments and its symbols to the call's substitution, composed with ours.
// A body from another file (the prelude's Linear) gives its nodes the span of
// the user's call, so late reports (--check-finite) name the user's line.
static LwVal inline_call(Env *e, const CkExpr *x) {
  Lower *L = e->L;
  const CkFunc *fn = x->callee;
  MLC_ASSERT(fn && fn->checked);
  Env ce = env_new(L, e->b.f, join_path(L, up_path(L, e->path, x->up), x->path), fn->nslots);
  ce.b.at_site = e->b.at_site;
  ce.b.site = e->b.site;
  if (!ce.b.at_site && fn->fn->span.file != L->model->name_span.file) {
    ce.b.at_site = true;
    ce.b.site = x->span;
  }
  for (int i = 0; i < x->subst.len; i++)
    subst_bind(L->a, &ce.subst, x->subst.from[i], dim_subst(L->a, x->subst.to[i], &e->subst));
  bind_defs(&ce, fn);
  for (int i = 0; i < fn->sig->nparams; i++)
    ce.slots[i].node = lw_operand(e, x->args[i], fn->sig->params[i]->dtype);
  LwVal ys = results(&ce, fn);
  IrNode *y = ys.node;
  if (fn->fn->has_grad) { // one result (sema)
    GradEntry *g = grad_func(L, fn, ce.path);
    int n = fn->sig->nparams;
    IrNode **in = arena_alloc(L->a, sizeof(IrNode *) * (size_t)(n + 1));
    in[0] = y;
    for (int i = 0; i < n; i++) in[i + 1] = ce.slots[i].node;
    IrAttrs as = {0};
    ir_attr_set_int(L->a, &as, IRA_FUNC, g->index);
    e->b.span = x->span;
    ys.node = ir_mk(&e->b, IR_CUSTOM_GRAD, in, n + 1, &as, NULL);
  }
  if (fn == L->model->forward && !L->loss_out) L->loss_out = ys.node; // eval's second output
  return ys;
}

// ---- the walk -------------------------------------------------------------------------------------
IrNode *lw_slice(Env *e, IrNode *x, const CkSlice *sl, Span sp) {
  Lower *L = e->L;
  Dim *n = x->type->dims[sl->dim];
  Dim *start = dim_subst(L->a, sl->start, &e->subst), *len = dim_subst(L->a, sl->len, &e->subst);
  int64_t k0;
  if (!dim_is_const(start, &k0)) {
    diag_error(L->diags, sp, "this slice starts at %s, which is only known when the model runs; "
               "a slice start must be a constant where the function is called",
               dim_str(L->a, start));
    L->failed = true;
    return x;
  }
  if (k0 == 0 && sl->step == 1 && dim_eq(len, n)) return x;
  Type *t = type_copy(L->a, x->type);
  t->weak = false;
  t->dims[sl->dim] = len;
  e->b.span = sp;
  return ir_slice(&e->b, x, sl->dim, k0, sl->step, t);
}

// x[i, a:b:c]: one slice per narrowed dim, then a reshape dropping the
// integer-indexed ones.
static IrNode *lower_index(Env *e, const CkExpr *x) {
  IrNode *t = lw_node(e, x->args[0]);
  int rank = t->type->rank, r = 0;
  bool any = false;
  for (int i = 0; i < x->nslices; i++) t = lw_slice(e, t, &x->slices[i], x->span);
  Type *u = type_new(e->L->a, t->type->dtype, rank);
  for (int i = 0; i < rank; i++) {
    any = any || x->drop[i];
    if (!x->drop[i]) u->dims[r++] = t->type->dims[i];
  }
  u->rank = r;
  e->b.span = x->span;
  return any ? ir_reshape(&e->b, t, u) : t;
}

LwVal lw_val(Env *e, const CkExpr *x) {
  if (x->kind == CK_LOCAL) return e->slots[x->slot];
  if (x->kind == CK_CALL) return inline_call(e, x); // several results: .items
  if (x->kind != CK_LIST) return (LwVal){.node = lw_node(e, x)};
  LwVal v = {.n = x->nargs};
  v.items = arena_alloc(e->L->a, sizeof(IrNode *) * (size_t)(x->nargs + 1));
  for (int i = 0; i < x->nargs; i++) v.items[i] = lw_node(e, x->args[i]);
  return v;
}

IrNode *lw_node(Env *e, const CkExpr *x) {
  switch (x->kind) {
  case CK_LOCAL: MLC_ASSERT(e->slots[x->slot].node); return e->slots[x->slot].node;
  case CK_STATE: return state_read(e, x);
  case CK_CALL: return inline_call(e, x).node;
  case CK_ITEM: {
    LwVal t = lw_val(e, x->args[0]);
    MLC_ASSERT(x->slot < t.n);
    return t.items[x->slot];
  }
  case CK_OP: return lw_emit(e, x);
  case CK_INDEX: return lower_index(e, x);
  case CK_CONST: case CK_LIST: break;
  }
  MLC_UNREACHABLE(); // sema types these as constants or lists, not tensors
}

// ---- entry points ---------------------------------------------------------------------------------
// One entry function: fn's results (all of them, or with `all` false the
// first, the program's output), then the forward output seen inside it.
static IrFunc *entry(Lower *L, const char *name, const CkFunc *fn, bool train, bool all,
                     bool with_out) {
  if (!fn) return NULL;
  MLC_ASSERT(fn->checked && fn->sig->ok);
  IrFunc *f = ir_func_new(L->m, name);
  f->span = fn->fn->name_span;
  Env e = env_new(L, f, "", fn->nslots);
  add_inputs(&e, fn->sig);
  bind_defs(&e, fn);
  L->train = train;
  L->loss_out = NULL;
  L->label = (LwLabel){0};
  LwVal r = results(&e, fn);
  for (int i = 0; i < (all && r.n ? r.n : 1); i++) ir_return(f, r.n ? r.items[i] : r.node, NULL);
  if (with_out && L->loss_out) ir_return(f, L->loss_out, NULL);
  return f;
}

bool lower_model(Arena *a, DiagSink *d, Sema *S, const char *model, LowerResult *out) {
  memset(out, 0, sizeof *out);
  const CkModel *cm = sema_model(S, model);
  if (sema_nerrors(S)) {
    diag_error(d, cm ? cm->name_span : (Span){0}, "model '%s' has errors", model);
    return false;
  }
  if (!cm) {
    diag_error(d, (Span){0}, "unknown model '%s'", model);
    return false;
  }
  Lower *L = arena_alloc(a, sizeof *L);
  *L = (Lower){.a = a, .diags = d, .model = cm, .m = ir_module_new(a, model)};
  add_state(L, cm->inst, "", false);
  out->module = L->m;
  out->forward = entry(L, "forward", cm->forward, true, true, false);
  out->loss = L->failed ? NULL : entry(L, "loss", cm->loss, true, true, false);
  out->loss_out = L->loss_out;
  out->label_target = L->label.target, out->label_logits = L->label.logits;
  out->label_ignore = L->label.ignore, out->label_ignore_value = L->label.ignore_value;
  out->eval = L->failed ? NULL : entry(L, "eval", cm->loss, false, false, true);
  out->predict = L->failed ? NULL : entry(L, "predict", cm->forward, false, false, false);
  if (cm->loss) { // the loss's other results: auxiliary values the program logs
    out->naux = cm->loss->sig->nrets - 1;
    out->aux_names = cm->loss->sig->ret_names + 1;
  }
  return !L->failed; // one entry's errors are enough: the others inline the same bodies
}
