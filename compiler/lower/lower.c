// lower.c — from sema's checked program to graph IR entry points: the
// model's state (params and buffers by path, with initialisers), the entry
// functions (forward, loss, eval, predict) and one function per
// user-declared gradient.
//
// Input: the Sema result (one Inst tree per model: every member's constant
// type, every instance's child Inst) and the AST of the method bodies.
// Output: an IrModule (lower.h). The bodies are evaluated a second time, by
// an evaluator that mirrors sema_expr.c's name resolution but produces IR
// nodes instead of types: calls of user code are inlined (callee locals in a
// fresh environment, the callee's dim names bound from the actual argument
// types), block parameters are constants, operators and builtins map to IR
// ops (lower_ops.c). Sema has checked everything already, so an
// inconsistency found here is a compiler bug; constructs the lowering does
// not support yet are reported as errors and end the lowering (longjmp back
// to lower_model).
//
// Modes: forward and loss are built in train mode (dropout draws a mask,
// batch norm uses the batch statistics), eval and predict in eval mode
// (dropout is the identity, batch norm reads the running buffers).
#include "lower_internal.h"

#include <math.h>
#include <string.h>

// ---- values -------------------------------------------------------------------------------
LVal *lower_val(Lower *L, LKind k, Span sp) {
  LVal *v = arena_alloc(L->a, sizeof *v);
  v->kind = k;
  v->span = sp;
  return v;
}

LVal *lower_tensor(Lower *L, IrNode *n, Span sp) {
  LVal *v = lower_val(L, LV_TENSOR, sp);
  v->node = n;
  return v;
}

LVal *lower_dimv(Lower *L, Dim *d, Span sp) {
  LVal *v = lower_val(L, LV_DIM, sp);
  v->dim = d;
  return v;
}

LVal *lower_floatv(Lower *L, double f, Span sp) {
  LVal *v = lower_val(L, LV_FLOAT, sp);
  v->f = f;
  return v;
}

LVal *lower_boolv(Lower *L, bool b, Span sp) {
  LVal *v = lower_val(L, LV_BOOL, sp);
  v->b = b;
  return v;
}

// A sema constant (block argument) as a lowering value.
static LVal *from_value(Lower *L, const Value *x, Span sp) {
  switch (x->kind) {
  case V_DIM: return lower_dimv(L, x->dim, sp);
  case V_FLOAT: return lower_floatv(L, x->f, sp);
  case V_BOOL: return lower_boolv(L, x->b, sp);
  case V_STR: {
    LVal *v = lower_val(L, LV_STR, sp);
    v->str = x->str;
    return v;
  }
  case V_DTYPE: {
    LVal *v = lower_val(L, LV_DTYPE, sp);
    v->dtype = x->dtype;
    return v;
  }
  default: break;
  }
  lower_fail(L, sp, "a block argument of kind %s", valkind_name(x->kind));
}

void lower_fail(Lower *L, Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = arena_vprintf(L->a, fmt, ap);
  va_end(ap);
  diag_error(L->diags, sp, "cannot lower to IR: %s", msg);
  longjmp(L->jmp, 1);
}

// ---- environments -----------------------------------------------------------------------------
static const char *join_path(Lower *L, const char *base, const char *name) {
  return *base ? arena_printf(L->a, "%s.%s", base, name) : name;
}

static int bparam_index(Inst *I, const char *name) {
  if (!I || I->item->kind != IT_BLOCK) return -1;
  for (int i = 0; i < I->item->bparams.len && i < I->nargs; i++)
    if (!strcmp(VEC_AT(I->item->bparams, BlockParam, i)->name, name)) return i;
  return -1;
}

static void bind(Lower *L, SMap *m, const char *name, LVal *v) { sema_map_put(L->a, m, name, v); }

// Reads of model state go through one node per path and function (the
// constructor hash-conses them).
static LVal *state_read(Env *e, MInfo *mi, const char *path, Span sp) {
  Lower *L = e->L;
  IrParam *p = ir_module_find_param(L->m, path);
  MLC_ASSERT(p && mi->type);
  IrNode *n = ir_state_ref(e->f, p->kind == IRP_PARAM ? IR_PARAM : IR_BUFFER, path, p->type, sp);
  return lower_tensor(L, n, sp);
}

static LVal *eval_name(Env *e, Expr *x) {
  Lower *L = e->L;
  LVal *v = sema_map_get(&e->locals, x->name);
  if (v) return v;
  MInfo *mi = e->inst ? sema_member(e->inst, x->name) : NULL;
  if (mi && (mi->m->kind == MB_PARAM || mi->m->kind == MB_BUFFER))
    return state_read(e, mi, join_path(L, e->path, x->name), x->span);
  MLC_ASSERT(!mi);
  int bp = bparam_index(e->inst, x->name);
  if (bp >= 0) return from_value(L, e->inst->args[bp], x->span);
  v = sema_map_get(&e->syms, x->name);
  if (v) return v;
  lower_fail(L, x->span, "unresolved name '%s'", x->name);
}

// What `fc1` or `enc.fc1` names when it is a block instance (NULL if not):
// the instantiation and its path in the model.
typedef struct InstRef {
  Inst *inst;
  const char *path;
} InstRef;

static InstRef resolve_instance(Env *e, Expr *x) {
  InstRef r = {0};
  if (x->kind == EX_NAME) {
    if (sema_map_get(&e->locals, x->name) || !e->inst) return r;
    MInfo *mi = sema_member(e->inst, x->name);
    if (!mi || mi->m->kind != MB_INSTANCE) return r;
    r.inst = mi->child;
    r.path = join_path(e->L, e->path, x->name);
    return r;
  }
  if (x->kind != EX_MEMBER) return r;
  InstRef o = resolve_instance(e, x->lhs);
  if (!o.inst) return r;
  MInfo *mi = sema_member(o.inst, x->name);
  if (!mi || mi->m->kind != MB_INSTANCE) return r;
  o.inst = mi->child;
  o.path = join_path(e->L, o.path, x->name);
  return o;
}

// ---- user code ------------------------------------------------------------------------------------
// Binds the callee's dim names (B in f32[B, in]) from an argument's type.
static void bind_dims(Env *ce, TypeExpr *te, LVal *arg) {
  if (!te || !te->has_dims || arg->kind != LV_TENSOR) return;
  Type *t = arg->node->type;
  for (int j = 0; j < te->dims.len && j < t->rank; j++) {
    Expr *d = VEC_AT(te->dims, Expr, j);
    if (d->kind != EX_NAME || bparam_index(ce->inst, d->name) >= 0) continue;
    if (ce->inst && sema_member(ce->inst, d->name)) continue;
    if (!sema_map_get(&ce->syms, d->name))
      bind(ce->L, &ce->syms, d->name, lower_dimv(ce->L, t->dims[j], d->span));
  }
}

// Evaluates statements until the return; NULL if there is none.
static LVal *run_stmts(Env *e, Vec *stmts) {
  for (int i = 0; i < stmts->len; i++) {
    Stmt *st = VEC_AT(*stmts, Stmt, i);
    LVal *v = lower_eval(e, st->value);
    if (st->kind == ST_RETURN) return v;
    bind(e->L, &e->locals, st->name, v);
  }
  return NULL;
}

// An argument as a node of the parameter's declared dtype (constants passed
// to scalar parameters become constants).
static IrNode *arg_node(Env *e, LVal *v, TypeExpr *te, Span sp) {
  if (v->kind == LV_TENSOR) return v->node;
  DType dt = te ? (DType)te->dtype : DT_F32;
  return lower_const(e, lower_num(e->L, v), type_scalar(e->L->a, dt), sp);
}

static IrFunc *grad_func(Lower *L, Func *fn, Inst *I, const char *path, Sig *sig);

IrNode *lower_num_node(Env *e, LVal *v, DType dt, Span sp) {
  return lower_const(e, lower_num(e->L, v), type_scalar(e->L->a, dt), sp);
}

// Inlines one call of user code: fn's body with its parameters bound to
// args (one per parameter, in order), in instantiation I at `path`.
static LVal *inline_call(Env *e, Func *fn, Inst *I, const char *path, LVal **args, Span sp,
                         Sig *sig) {
  Lower *L = e->L;
  if (++L->depth > 200) lower_fail(L, sp, "calls nested more than 200 deep");
  Env ce = {.L = L, .f = e->f, .inst = I, .path = path, .at_site = e->at_site, .site = e->site};
  if (!ce.at_site && fn->span.file != sema_program(L->S)->file) {
    ce.at_site = true; // a prelude block: its nodes take this call's span
    ce.site = sp;
  }
  for (int i = 0; i < fn->params.len; i++) {
    Param *p = VEC_AT(fn->params, Param, i);
    bind(L, &ce.locals, p->name, args[i]);
    bind_dims(&ce, p->type, args[i]);
  }
  LVal *y = run_stmts(&ce, &fn->body);
  MLC_ASSERT(y);
  if (fn->has_grad && y->kind == LV_TENSOR) {
    IrFunc *g = grad_func(L, fn, I, path, sig);
    int n = fn->params.len;
    IrNode **in = arena_alloc(L->a, sizeof(IrNode *) * (size_t)(n + 1));
    in[0] = y->node;
    for (int i = 0; i < n; i++)
      in[i + 1] = arg_node(e, args[i], VEC_AT(fn->params, Param, i)->type, sp);
    IrAttrs as = {0};
    int k = 0;
    while (VEC_AT(L->m->funcs, IrFunc, k) != g) k++;
    ir_attr_set_int(L->a, &as, IRA_FUNC, k);
    y = lower_tensor(L, lower_build(e, IR_CUSTOM_GRAD, in, n + 1, &as, NULL, sp), sp);
  }
  L->depth--;
  return y;
}

// Matches call arguments (positional, then named) to fn's parameters and
// evaluates them in the caller's environment.
static LVal **call_args(Env *e, Expr *call, Func *fn) {
  int np = fn->params.len, pos = 0;
  LVal **out = arena_alloc(e->L->a, sizeof(LVal *) * (size_t)(np + 1));
  for (int i = 0; i < call->args.len; i++) {
    Arg *a = VEC_AT(call->args, Arg, i);
    int idx = pos;
    if (a->name) {
      for (int k = 0; k < np; k++)
        if (!strcmp(VEC_AT(fn->params, Param, k)->name, a->name)) idx = k;
    } else pos++;
    MLC_ASSERT(idx < np);
    out[idx] = lower_eval(e, a->value);
  }
  for (int k = 0; k < np; k++) MLC_ASSERT(out[k]);
  return out;
}

static LVal *call_method(Env *e, Expr *call, Inst *I, const char *path, const char *mname) {
  Lower *L = e->L;
  MInfo *mm = sema_member(I, mname);
  MLC_ASSERT(mm && mm->m->kind == MB_METHOD);
  Func *fn = mm->m->method;
  LVal **args = call_args(e, call, fn);
  Sig *sig = sema_method_sig(L->S, I, mm);
  LVal *y = inline_call(e, fn, I, path, args, call->span, sig);
  // eval's second output: the model's own forward as called from loss.
  if (I == L->model && !strcmp(mname, "forward") && e->inst == L->model && !L->fwd_out &&
      y->kind == LV_TENSOR)
    L->fwd_out = y->node;
  return y;
}

static LVal *eval_call(Env *e, Expr *call) {
  Lower *L = e->L;
  Expr *f = call->lhs;
  if (f->kind == EX_NAME) {
    MInfo *mi = e->inst && !sema_map_get(&e->locals, f->name) ? sema_member(e->inst, f->name)
                                                               : NULL;
    if (mi && mi->m->kind == MB_INSTANCE)
      return call_method(e, call, mi->child, join_path(L, e->path, f->name), "forward");
    if (mi && mi->m->kind == MB_METHOD) return call_method(e, call, e->inst, e->path, f->name);
    ItemInfo *ii = sema_find_item(L->S, f->name);
    if (ii && ii->item->kind == IT_FN) {
      Func *fn = ii->item->fn;
      return inline_call(e, fn, NULL, "", call_args(e, call, fn), call->span,
                         sema_fn_sig(L->S, ii));
    }
    return lower_builtin(e, call, f->name);
  }
  MLC_ASSERT(f->kind == EX_MEMBER);
  InstRef whole = resolve_instance(e, f);
  if (whole.inst) return call_method(e, call, whole.inst, whole.path, "forward");
  InstRef r = resolve_instance(e, f->lhs);
  MLC_ASSERT(r.inst);
  return call_method(e, call, r.inst, r.path, f->name);
}

// ---- user-declared gradients ---------------------------------------------------------------
// One IrFunc per (function, instantiation): NAME.grad(x1..xn, dy) -> (dx1..dxn).
typedef struct GradEntry {
  Func *fn;
  Inst *inst;
  IrFunc *g;
} GradEntry;

static void add_inputs(Lower *L, IrFunc *g, Env *ge, Func *fn, Sig *sig) {
  for (int i = 0; i < sig->syms.len; i++) {
    Sym *s = VEC_AT(sig->syms, Sym, i);
    ir_sym_add(L->m, g, s);
    bind(L, &ge->syms, s->name, lower_dimv(L, dim_sym(L->a, s), s->span));
  }
  for (int i = 0; i < fn->params.len; i++) {
    Param *p = VEC_AT(fn->params, Param, i);
    MLC_ASSERT(sig->params[i]);
    IrNode *x = ir_input(g, p->name, sig->params[i], p->span);
    bind(L, &ge->locals, p->name, lower_tensor(L, x, p->span));
  }
}

static IrFunc *grad_func(Lower *L, Func *fn, Inst *I, const char *path, Sig *sig) {
  for (int i = 0; i < L->grads.len; i++) {
    GradEntry *ge = VEC_AT(L->grads, GradEntry, i);
    if (ge->fn == fn && ge->inst == I) return ge->g;
  }
  MLC_ASSERT(sig && sig->ok);
  const char *name = I ? arena_printf(L->a, "%s.%s.grad", *path ? path : L->model->label, fn->name)
                       : arena_printf(L->a, "%s.grad", fn->name);
  IrFunc *g = ir_func_new(L->m, name);
  g->span = fn->grad_span;
  GradEntry *ent = arena_alloc(L->a, sizeof *ent);
  *ent = (GradEntry){fn, I, g};
  vec_push(L->a, &L->grads, ent);
  Env ge = {.L = L, .f = g, .inst = I, .path = path};
  add_inputs(L, g, &ge, fn, sig);
  IrNode *dy = ir_input(g, fn->grad_name, sig->ret, fn->grad_name_span);
  bind(L, &ge.locals, fn->grad_name, lower_tensor(L, dy, fn->grad_name_span));
  bool train = L->train;
  L->train = true;
  Stmt *ret = NULL;
  for (int i = 0; i < fn->grad_body.len; i++) {
    Stmt *st = VEC_AT(fn->grad_body, Stmt, i);
    if (st->kind == ST_RETURN) {
      ret = st;
      break;
    }
    bind(L, &ge.locals, st->name, lower_eval(&ge, st->value));
  }
  MLC_ASSERT(ret);
  Expr *rv = ret->value;
  int n = rv->kind == EX_LIST ? rv->args.len : 1;
  MLC_ASSERT(n == fn->params.len);
  for (int i = 0; i < n; i++) {
    Expr *x = rv->kind == EX_LIST ? VEC_AT(rv->args, Arg, i)->value : rv;
    LVal *v = lower_eval(&ge, x);
    IrNode *node = v->kind == LV_TENSOR ? v->node : NULL;
    Type *pt = sig->params[i];
    if (!node) node = lower_const(&ge, lower_num(L, v), pt, x->span);
    if (!type_eq(node->type, pt)) // a broadcast constant or a rank-0 value
      node = lower_build(&ge, IR_BROADCAST_TO, &node, 1, NULL, pt, x->span);
    ir_return(g, node, pt);
  }
  L->train = train;
  return g;
}

// ---- the evaluator ----------------------------------------------------------------------------------
static LVal *eval_list(Env *e, Expr *x) {
  LVal *v = lower_val(e->L, LV_LIST, x->span);
  for (int i = 0; i < x->args.len; i++)
    vec_push(e->L->a, &v->items, lower_eval(e, VEC_AT(x->args, Arg, i)->value));
  return v;
}

static LVal *eval_member(Env *e, Expr *x) {
  Lower *L = e->L;
  InstRef r = resolve_instance(e, x->lhs);
  if (r.inst) {
    MInfo *mi = sema_member(r.inst, x->name);
    MLC_ASSERT(mi && (mi->m->kind == MB_PARAM || mi->m->kind == MB_BUFFER));
    return state_read(e, mi, join_path(L, r.path, x->name), x->span);
  }
  LVal *v = lower_eval(e, x->lhs);
  MLC_ASSERT(v->kind == LV_TENSOR && !strcmp(x->name, "T"));
  return lower_tensor(L, lower_transpose_last2(e, v->node, x->span), x->span);
}

LVal *lower_eval(Env *e, Expr *x) {
  Lower *L = e->L;
  switch (x->kind) {
  case EX_INT: return lower_dimv(L, dim_const(L->a, x->ival), x->span);
  case EX_FLOAT: return lower_floatv(L, x->fval, x->span);
  case EX_BOOL: return lower_boolv(L, x->ival != 0, x->span);
  case EX_STR: {
    LVal *v = lower_val(L, LV_STR, x->span);
    v->str = x->name;
    return v;
  }
  case EX_DTYPE: {
    LVal *v = lower_val(L, LV_DTYPE, x->span);
    v->dtype = x->dtype;
    return v;
  }
  case EX_NAME: return eval_name(e, x);
  case EX_UNARY: return lower_unary(e, x);
  case EX_BINARY: return lower_binary(e, x);
  case EX_CALL: return eval_call(e, x);
  case EX_MEMBER: return eval_member(e, x);
  case EX_INDEX: return lower_index(e, x);
  case EX_LIST: return eval_list(e, x);
  case EX_SLICE: break;
  }
  MLC_UNREACHABLE();
}

// ---- model state ---------------------------------------------------------------------------------------
static const char *const init_names[] = {
    "zeros", "ones", "normal", "uniform", "constant", "kaiming_uniform", "kaiming_normal",
    "xavier_uniform", "xavier_normal", "trunc_normal"};

const char *lower_init_name(IrInitKind k) { return init_names[k]; }

static void fans(const Type *t, IrInit *in) {
  int64_t d0, d1, rest = 1, k;
  if (t->rank < 2 || !dim_is_const(t->dims[0], &d0) || !dim_is_const(t->dims[1], &d1)) return;
  for (int i = 2; i < t->rank; i++) {
    if (!dim_is_const(t->dims[i], &k)) return;
    rest *= k;
  }
  in->fan_in = d1 * rest;
  in->fan_out = d0 * rest;
}

// Parameter names of each initialiser, in positional order (sema.c's table).
static const char *const init_params[][4] = {
    {0}, {0}, {"mean", "std"}, {"low", "high"}, {"value"},
    {"a", "mode", "nonlinearity"}, {"a", "mode", "nonlinearity"}, {"gain"}, {"gain"},
    {"std", "mean", "a", "b"}};

static void init_arg(Lower *L, Inst *I, MInfo *mi, IrInit *in, const char *pname, Expr *x) {
  if (!strcmp(pname, "mode") || !strcmp(pname, "nonlinearity")) {
    const char *w = x->name;
    if (!strcmp(pname, "mode")) in->mode = w;
    else in->nonlinearity = w;
    return;
  }
  Scope sc;
  sema_scope_init(&sc, L->S, I, mi->idx);
  sc.const_only = true;
  Value *v = sema_eval(&sc, x);
  double d = 0;
  MLC_ASSERT(v && sema_const_num(v, &d));
  bool tn = in->kind == IRI_TRUNC_NORMAL;
  if (!strcmp(pname, "mean")) in->mean = d;
  else if (!strcmp(pname, "std")) in->std = d;
  else if (!strcmp(pname, "low") || (tn && !strcmp(pname, "a"))) in->low = d;
  else if (!strcmp(pname, "high") || (tn && !strcmp(pname, "b"))) in->high = d;
  else if (!strcmp(pname, "value")) in->value = d;
  else if (!strcmp(pname, "gain")) in->gain = d;
  else if (!strcmp(pname, "a")) in->a = d;
}

static IrInit *resolve_init(Lower *L, Inst *I, MInfo *mi) {
  IrInit *in = arena_alloc(L->a, sizeof *in);
  Member *m = mi->m;
  fans(mi->type, in);
  in->mode = "fan_in";
  in->nonlinearity = "leaky_relu";
  in->std = 1;
  in->high = 1;
  in->gain = 1;
  Expr *x = m->init;
  if (!x) { // zeros; params of rank >= 2 kaiming_uniform(a = sqrt(5)) like torch.nn.Linear
    if (m->kind == MB_PARAM && mi->type->rank >= 2) {
      in->kind = IRI_KAIMING_UNIFORM;
      in->a = sqrt(5.0);
    }
    return in;
  }
  const char *name = x->kind == EX_CALL ? x->lhs->name : x->name;
  int k = 0;
  while (k < (int)(sizeof init_names / sizeof init_names[0]) && strcmp(init_names[k], name)) k++;
  MLC_ASSERT(k < (int)(sizeof init_names / sizeof init_names[0]));
  in->kind = (IrInitKind)k;
  if (in->kind == IRI_TRUNC_NORMAL) {
    in->low = -2;
    in->high = 2;
  }
  if (in->kind == IRI_UNIFORM) in->low = 0;
  if (x->kind != EX_CALL) return in;
  int pos = 0;
  for (int i = 0; i < x->args.len; i++) {
    Arg *a = VEC_AT(x->args, Arg, i);
    const char *pn = a->name ? a->name : init_params[k][pos++];
    MLC_ASSERT(pn);
    init_arg(L, I, mi, in, pn, a->value);
  }
  return in;
}

// Every param and buffer of I under `path`, depth first in member order.
static void add_state(Lower *L, Inst *I, const char *path, bool frozen_above) {
  for (int i = 0; i < I->item->members.len; i++) {
    MInfo *mi = I->members[i];
    Member *m = mi->m;
    const char *p = join_path(L, path, m->name);
    if (m->kind == MB_INSTANCE) {
      MLC_ASSERT(mi->child);
      add_state(L, mi->child, p, frozen_above || sema_path_frozen(&L->model->frozen, p));
    } else if (m->kind == MB_PARAM || m->kind == MB_BUFFER) {
      MLC_ASSERT(mi->type);
      bool frozen = frozen_above || m->frozen || sema_path_frozen(&L->model->frozen, p);
      IrParam *ip = ir_module_add_param(L->m, p, mi->type,
                                        m->kind == MB_PARAM ? IRP_PARAM : IRP_BUFFER, !frozen,
                                        m->name_span);
      ip->init = resolve_init(L, I, mi);
    }
  }
}

// ---- entry points ------------------------------------------------------------------------------------------
static IrFunc *entry(Lower *L, const char *name, const char *method, bool train, bool with_out) {
  MInfo *mi = sema_member(L->model, method);
  if (!mi || mi->m->kind != MB_METHOD) return NULL;
  Sig *sig = sema_method_sig(L->S, L->model, mi);
  MLC_ASSERT(sig && sig->ok);
  Func *fn = mi->m->method;
  IrFunc *f = ir_func_new(L->m, name);
  f->span = fn->name_span;
  Env e = {.L = L, .f = f, .inst = L->model, .path = ""};
  add_inputs(L, f, &e, fn, sig);
  L->train = train;
  L->fwd_out = NULL;
  L->depth = 0;
  LVal *y = run_stmts(&e, &fn->body);
  MLC_ASSERT(y);
  IrNode *out = y->kind == LV_TENSOR ? y->node : lower_num_node(&e, y, sig->ret->dtype, fn->span);
  ir_return(f, out, NULL);
  if (with_out && L->fwd_out) ir_return(f, L->fwd_out, NULL);
  return f;
}

bool lower_model(Arena *a, DiagSink *d, Sema *S, const char *model, LowerResult *out) {
  memset(out, 0, sizeof *out);
  ItemInfo *ii = sema_find_item(S, model);
  if (!ii || ii->item->kind != IT_MODEL) {
    diag_error(d, (Span){0}, "unknown model '%s'", model);
    return false;
  }
  Lower *L = arena_alloc(a, sizeof *L);
  L->a = a;
  L->diags = d;
  L->S = S;
  L->model = sema_model_inst(S, ii);
  if (!L->model || S->nerrors) {
    diag_error(d, ii->item->name_span, "model '%s' has errors", model);
    return false;
  }
  L->m = ir_module_new(a, model);
  if (setjmp(L->jmp)) return false;
  add_state(L, L->model, "", false);
  out->module = L->m;
  out->forward = entry(L, "forward", "forward", true, false);
  out->loss = entry(L, "loss", "loss", true, false);
  out->loss_out = out->loss ? L->fwd_out : NULL;
  out->eval = entry(L, "eval", "loss", false, true);
  out->predict = entry(L, "predict", "forward", false, false);
  return true;
}
