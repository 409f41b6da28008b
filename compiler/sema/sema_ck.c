// sema_ck.c — sema's product for lowering (checked.h): the resolved
// expressions the evaluator records as it checks bodies, and, once every
// check is done, the instance trees and models.
//
// Input: Values with their CkExpr recipes (sema_expr.c, sema_body.c), the
// Inst/MInfo/Body tree (sema_internal.h). Output: CkModel per user model,
// reachable through sema_model; CkFunc per Body (filled while checking).
// Nothing here reports errors: a program with errors has no product.
#include <string.h>

#include "sema_internal.h"

// ---- expressions --------------------------------------------------------------------------------
CkExpr *sema_ck_new(Sema *S, CkKind k, Span sp, Type *t) {
  CkExpr *x = arena_alloc(S->arena, sizeof *x);
  x->kind = k;
  x->span = sp;
  x->type = t;
  return x;
}

CkExpr *sema_ck_of(Sema *S, Value *v) {
  if (v->ck) return v->ck;
  CkExpr *x = sema_ck_new(S, CK_CONST, v->span, v->kind == V_TENSOR ? v->type : NULL);
  x->value = v;
  return x;
}

Value *sema_with_ck(Sema *S, Value *v, CkExpr *ck) {
  Value *c = arena_alloc(S->arena, sizeof *c);
  *c = *v;
  c->ck = ck;
  return c;
}

CkExpr *sema_ck_op(Sema *S, const BuiltinCall *c, Value **args, Type *t) {
  CkExpr *x = sema_ck_new(S, CK_OP, c->span, t);
  x->op = c->op;
  x->attrs = c->attrs;
  x->nargs = c->nparams;
  x->args = arena_alloc(S->arena, sizeof(CkExpr *) * (size_t)(c->nparams ? c->nparams : 1));
  for (int i = 0; i < c->nparams; i++) {
    Value *v = c->source[i] >= 0 ? args[c->source[i]] : c->bound[i];
    x->args[i] = v ? sema_ck_of(S, v) : NULL;
  }
  if (c->op == BI_SLICE) { // one narrowed dim: the rule's start, the result's length
    CkSlice *sl = arena_alloc(S->arena, sizeof *sl);
    int64_t d = 0, step = 1;
    ir_attr_int(&c->attrs, IRA_DIM, &d);
    ir_attr_int(&c->attrs, IRA_STEP, &step);
    *sl = (CkSlice){(int)d, c->slice_start, t->dims[d], step, c->bound[0]->type->dims[d]};
    x->nslices = 1;
    x->slices = sl;
  }
  return x;
}

// ---- instances and models -------------------------------------------------------------------------
static CkInst *ck_inst(Sema *S, Inst *I) {
  if (I->ck) return I->ck;
  CkInst *c = arena_alloc(S->arena, sizeof *c);
  I->ck = c;
  c->label = I->label;
  int n = I->item->members.len;
  c->members = arena_alloc(S->arena, sizeof(CkMember) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) {
    MInfo *mi = I->members[i];
    Member *m = mi->m;
    if (m->kind == MB_METHOD) continue;
    CkMember *cm = &c->members[c->nmembers++];
    cm->name = m->name;
    cm->name_span = m->name_span;
    if (m->kind == MB_INSTANCE || m->kind == MB_INSTANCE_LIST) { // a list: members 0, 1, ..
      MLC_ASSERT(mi->child);
      cm->kind = CKM_INSTANCE;
      cm->child = ck_inst(S, mi->child);
      continue;
    }
    MLC_ASSERT(mi->type);
    cm->kind = m->kind == MB_PARAM ? CKM_PARAM : CKM_BUFFER;
    cm->type = mi->type;
    cm->frozen = m->frozen;
    cm->init = mi->init_ir;
  }
  return c;
}

static CkFunc *method(Inst *I, const char *name) {
  MInfo *mi = sema_member(I, name);
  return mi && mi->m->kind == MB_METHOD && mi->body ? mi->body->ck : NULL;
}

void sema_product(Sema *S) {
  if (S->nerrors) return;
  for (int i = 0; i < S->bodies.len; i++) {
    Body *b = VEC_AT(S->bodies, Body, i);
    if (b->inst && !b->inst->sig_only) b->ck->inst = ck_inst(S, b->inst);
  }
  for (int i = 0; i < S->item_infos.len; i++) {
    ItemInfo *ii = VEC_AT(S->item_infos, ItemInfo, i);
    if (ii->item->kind != IT_MODEL || ii->item->from_prelude || !ii->model) continue;
    CkModel *m = arena_alloc(S->arena, sizeof *m);
    m->name = ii->item->name;
    m->name_span = ii->item->name_span;
    m->inst = ck_inst(S, ii->model);
    m->forward = method(ii->model, "forward");
    m->loss = method(ii->model, "loss");
    m->frozen = ii->model->frozen;
    m->recipe = ii->recipe;
    ii->ck = m;
  }
}

static ItemInfo *model_item(const Sema *S, const char *name) {
  ItemInfo *ii = sema_map_get(&S->items, name);
  return ii && ii->item->kind == IT_MODEL ? ii : NULL;
}

const CkModel *sema_model(const Sema *S, const char *name) {
  ItemInfo *ii = model_item(S, name);
  return ii ? ii->ck : NULL;
}

int sema_nerrors(const Sema *S) { return S->nerrors; }

bool sema_recipe(const Sema *S, const char *name, Recipe *out) {
  ItemInfo *ii = model_item(S, name);
  if (ii && ii->model) *out = ii->recipe;
  else sema_recipe_defaults(out, name);
  return ii && ii->model;
}
