// sema_lists.c — lists of block instances, and the loops that run over them:
//
//   blocks = [Block(d, heads) for i in range(6)]   one instance per value of i
//   layers = [Linear(784, 256), Linear(256, 10)]   the instances as written
//   for b in blocks { h = b(h) }                   unrolled at compile time
//   for i in range(6) { h = blocks[i](h) }
//
// A list is an Inst of its own (Inst.is_list), as torch.nn.ModuleList is a
// Module: its members are the elements, named by position, so their params
// have the paths of PyTorch's state dicts (blocks.0.attn.w), and every walk
// of the instance tree (parameter counts, freeze, the product for lowering,
// --explain, the program's state) sees them without a case of its own.
//
// A loop is unrolled by the body checker (sema_body.c): its body is checked
// once per value this file lists, with the loop variable bound to it; an
// error found in one iteration says which (sema_loop_enter).
#include <string.h>

#include "sema_internal.h"

// ---- range(n) -------------------------------------------------------------------------
static bool is_range(const Expr *e) {
  return e->kind == EX_CALL && e->lhs->kind == EX_NAME && !strcmp(e->lhs->name, "range");
}

// An argument of range: a constant integer.
static bool range_arg(Scope *sc, Arg *a, int64_t *out) {
  Sema *S = sc->S;
  if (a->name) {
    sema_error(S, a->name_span, "range takes its arguments by position: range(n), "
               "range(start, stop) or range(start, stop, step)");
    return false;
  }
  Value *v = sema_eval(sc, a->value);
  if (!v) return false;
  if (v->kind == V_DIM && dim_is_const(v->dim, out)) return true;
  sema_error(S, a->value->span, "range needs integers known when the model is compiled, "
             "got %s", value_str(S->arena, v));
  if (v->kind == V_DIM)
    sema_note(S, (Span){0}, "loops are unrolled at compile time: their length cannot "
              "depend on a size the data binds");
  return false;
}

// range(n), range(start, stop), range(start, stop, step), as Python's.
static bool range_values(Scope *sc, Expr *e, Vec *out) {
  Sema *S = sc->S;
  int n = e->args.len;
  int64_t a[3] = {0, 0, 1};
  if (n < 1 || n > 3) {
    sema_error(S, e->span, "range takes 1 to 3 integers (stop; start, stop; start, stop, "
               "step), got %d", n);
    return false;
  }
  for (int i = 0; i < n; i++)
    if (!range_arg(sc, VEC_AT(e->args, Arg, i), &a[n == 1 ? 1 : i])) return false;
  if (a[2] == 0) {
    sema_error(S, VEC_AT(e->args, Arg, 2)->value->span, "range's step must not be zero");
    return false;
  }
  for (int64_t k = a[0]; a[2] > 0 ? k < a[1] : k > a[1]; k += a[2]) {
    if (out->len == SEMA_MAX_LIST) {
      sema_error(S, e->span, "this range has more than %d values (a loop or list is unrolled "
                 "at compile time)", SEMA_MAX_LIST);
      return false;
    }
    vec_push(S->arena, out, value_dim(S->arena, e->span, dim_const(S->arena, k)));
  }
  if (out->len) return true;
  sema_error(S, e->span, "this range has no values (a loop or a list needs at least one)");
  return false;
}

// ---- lists of instances --------------------------------------------------------------------
const char *sema_list_desc(Sema *S, Inst *list) {
  int n = list->item->members.len;
  bool same = true;
  for (int i = 1; i < n && same; i++)
    same = list->members[i]->child == list->members[0]->child;
  if (same && n && list->members[0]->child)
    return arena_printf(S->arena, "%d x %s", n, list->members[0]->child->label);
  return arena_printf(S->arena, "list of %d", n);
}

// The list's Inst: a synthetic block whose members are the elements.
static Inst *list_inst(Sema *S, Member *m, Vec elems, MInfo **kids) {
  Item *it = arena_alloc(S->arena, sizeof *it);
  it->kind = IT_BLOCK;
  it->name = m->name;
  it->span = it->name_span = m->span;
  it->members = elems;
  Inst *L = arena_alloc(S->arena, sizeof *L);
  L->item = it;
  L->is_list = true;
  L->members = kids;
  L->site = m->span;
  L->site_name = m->name_span;
  L->state = INST_DONE;
  for (int i = 0; i < elems.len; i++) sema_map_put(S->arena, &L->by_name, kids[i]->m->name, kids[i]);
  L->label = sema_list_desc(S, L);
  return L;
}

// Element k of a comprehension: the template named k, its arguments
// evaluated with the loop variable bound to v.
static MInfo *comprehension_elem(Sema *S, Inst *I, MInfo *mi, int k, Value *v) {
  Member *m = mi->m, *e = arena_alloc(S->arena, sizeof *e);
  *e = *VEC_AT(m->elems, Member, 0);
  e->name = arena_printf(S->arena, "%d", k);
  Scope sc;
  sema_member_scope(&sc, S, I, mi->idx);
  sc.arg_depth = 2; // blocks.3
  sema_bind_local(&sc, m->loop_var, m->loop_span, v);
  sema_loop_enter(S, m->loop_span, m->loop_var, v);
  MInfo *em = arena_alloc(S->arena, sizeof *em);
  em->m = e;
  em->idx = k;
  em->child = sema_member_inst(S, &sc, e);
  em->failed = em->child == NULL;
  sema_loop_leave(S);
  return em;
}

// A signature-only check (a block without arguments): the template's
// arguments once, the loop variable a size of its own.
static void lenient_template(Sema *S, Inst *I, MInfo *mi) {
  Member *m = mi->m;
  Scope sc;
  sema_member_scope(&sc, S, I, mi->idx);
  Sym *s = sym_new(S->arena, m->loop_var, m->loop_span, false);
  sema_bind_local(&sc, m->loop_var, m->loop_span, value_dim(S->arena, m->loop_span, dim_sym(S->arena, s)));
  sema_member_inst(S, &sc, VEC_AT(m->elems, Member, 0));
}

void sema_check_list_member(Sema *S, Inst *I, MInfo *mi) {
  Member *m = mi->m;
  mi->failed = true;
  Vec elems = {0}, vals = {0};
  if (m->loop_iter && I->sig_only) {
    lenient_template(S, I, mi);
    return;
  }
  if (m->loop_iter) {
    Scope sc;
    sema_member_scope(&sc, S, I, mi->idx);
    if (!sema_loop_values(&sc, m->loop_iter, &vals)) return;
  } else if (m->elems.len > SEMA_MAX_LIST) {
    sema_error(S, m->span, "a list of instances has at most %d elements, this one %d",
               SEMA_MAX_LIST, m->elems.len);
    return;
  }
  int n = m->loop_iter ? vals.len : m->elems.len;
  MInfo **kids = arena_alloc(S->arena, sizeof(MInfo *) * (size_t)n);
  bool ok = true;
  for (int k = 0; k < n; k++) {
    if (m->loop_iter) {
      kids[k] = comprehension_elem(S, I, mi, k, VEC_AT(vals, Value, k));
    } else {
      Scope sc;
      sema_member_scope(&sc, S, I, mi->idx);
      sc.arg_depth = 2; // heads.1
      kids[k] = arena_alloc(S->arena, sizeof(MInfo));
      kids[k]->m = VEC_AT(m->elems, Member, k);
      kids[k]->idx = k;
      kids[k]->child = sema_member_inst(S, &sc, kids[k]->m);
      kids[k]->failed = kids[k]->child == NULL;
    }
    vec_push(S->arena, &elems, kids[k]->m);
    ok = ok && !kids[k]->failed;
  }
  if (!ok) return;
  mi->child = list_inst(S, m, elems, kids);
  mi->failed = false;
}

// ---- loops ----------------------------------------------------------------------------------
// The elements of a list reached by r, as values a loop variable takes.
static void list_values(Scope *sc, InstRef *r, Span at, Vec *out) {
  Sema *S = sc->S;
  Inst *L = r->inst;
  bool own = r->top && r->top->child == L; // a list member of the scope's own instance
  for (int k = 0; k < L->item->members.len; k++) {
    MInfo *em = L->members[k];
    Value *v = sema_new_value(S, V_INST, at);
    v->inst = em->child;
    v->top = own ? em : r->top;
    v->path = sema_join_path(S, r->path, em->m->name);
    v->up = r->up;
    v->str = em->child->label;
    vec_push(S->arena, out, v);
  }
}

bool sema_loop_values(Scope *sc, Expr *e, Vec *out) {
  Sema *S = sc->S;
  if (is_range(e)) return range_values(sc, e, out);
  InstRef r = sema_resolve_instance(sc, e);
  if (r.err) return false;
  if (r.inst && r.inst->is_list) {
    list_values(sc, &r, e->span, out);
    return true;
  }
  if (r.inst) {
    sema_error(S, e->span, "'%s' is a block instance, not a list: a loop runs over a list of "
               "instances (blocks = [Block(...) for i in range(n)]) or range(n)", r.path);
    return false;
  }
  Value *v = sema_eval(sc, e);
  if (!v) return false;
  if (v->kind == V_LIST && !v->ck && v->items.len) {
    for (int i = 0; i < v->items.len; i++) vec_push(S->arena, out, VEC_AT(v->items, Value, i));
    return true;
  }
  sema_error(S, e->span, "a loop runs over a list of instances, range(n) or a list of "
             "constants, not %s: loops are unrolled when the model is compiled",
             v->kind == V_LIST ? "an empty or computed list" : value_str(S->arena, v));
  return false;
}

void sema_loop_enter(Sema *S, Span at, const char *var, const Value *v) {
  LoopFrame *f = arena_alloc(S->arena, sizeof *f);
  f->at = at;
  f->what = arena_printf(S->arena, "%s = %s", var,
                         v->kind == V_INST ? v->path : sema_const_str(S, v));
  vec_push(S->arena, &S->loops, f);
}

void sema_loop_leave(Sema *S) { S->loops.len--; }
