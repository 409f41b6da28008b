// builder.c — IrBuilder (builder.h): node construction for the passes, with
// the shape check and the node's creation in one constructor (ir_mk), the
// common shapes built on it, and the scalar table's graph-IR builder.
//
// Input: a function under construction and the operand nodes. Output: typed,
// hash-consed nodes appended to the function. A refused node is an internal
// error (mlc_ice), never a user diagnostic: see builder.h.
#include "builder.h"

#include <string.h>

IrBuilder ir_builder(IrFunc *f, const char *who) {
  return (IrBuilder){.f = f, .a = f->module->arena, .who = who};
}

IrNode *ir_mk(IrBuilder *b, IrOp op, IrNode **in, int nin, const IrAttrs *as, const Type *given) {
  char why[256];
  Span sp = b->at_site ? b->site : b->span;
  IrNode *n = ir_build(b->f, op, in, nin, as, (Type *)given, sp, why, sizeof why);
  if (!n && !b->diags)
    mlc_ice(__FILE__, __LINE__, "%s: building %s: %s", b->who, ir_op_name(op), why);
  if (!n) { // lowering: the sizes an inlined call gives do not fit (builder.h)
    diag_error(b->diags, b->span, "%s does not fit the sizes it is given here: %s",
               ir_op_name(op), why);
    *b->failed = true;
    const Type *t = given ? given : nin ? in[0]->type : type_scalar(b->a, DT_F32);
    n = ir_node(b->f, op, in, nin, as, (Type *)t, sp);
  }
  if (!n->loc) n->loc = b->loc;
  return n;
}

IrNode *ir_un(IrBuilder *b, IrOp op, IrNode *x) { return ir_mk(b, op, &x, 1, NULL, NULL); }

IrNode *ir_bin(IrBuilder *b, IrOp op, IrNode *x, IrNode *y) {
  IrNode *in[2] = {x, y};
  return ir_mk(b, op, in, 2, NULL, NULL);
}

IrNode *ir_add(IrBuilder *b, IrNode *x, IrNode *y) { return ir_bin(b, IR_ADD, x, y); }
IrNode *ir_sub(IrBuilder *b, IrNode *x, IrNode *y) { return ir_bin(b, IR_SUB, x, y); }
IrNode *ir_mul(IrBuilder *b, IrNode *x, IrNode *y) { return ir_bin(b, IR_MUL, x, y); }
IrNode *ir_div(IrBuilder *b, IrNode *x, IrNode *y) { return ir_bin(b, IR_DIV, x, y); }

IrNode *ir_where(IrBuilder *b, IrNode *c, IrNode *x, IrNode *y) {
  IrNode *in[3] = {c, x, y};
  return ir_mk(b, IR_WHERE, in, 3, NULL, NULL);
}

IrNode *ir_const(IrBuilder *b, double v, const Type *t) {
  IrAttrs as = {0};
  ir_attr_set_float(b->a, &as, IRA_VALUE, v);
  return ir_mk(b, IR_CONST, NULL, 0, &as, t);
}

IrNode *ir_scalar(IrBuilder *b, double v, DType dt) { return ir_const(b, v, type_scalar(b->a, dt)); }

IrNode *ir_reshape(IrBuilder *b, IrNode *x, const Type *t) {
  return type_eq(x->type, t) ? x : ir_mk(b, IR_RESHAPE, &x, 1, NULL, t);
}

IrNode *ir_broadcast(IrBuilder *b, IrNode *x, const Type *t) {
  return type_eq(x->type, t) ? x : ir_mk(b, IR_BROADCAST_TO, &x, 1, NULL, t);
}

IrNode *ir_reduce_to(IrBuilder *b, IrNode *x, const Type *t) {
  return type_eq(x->type, t) ? x : ir_mk(b, IR_REDUCE_TO, &x, 1, NULL, t);
}

IrNode *ir_cast(IrBuilder *b, IrNode *x, DType dt) {
  if (x->type->dtype == dt) return x;
  Type *t = type_copy(b->a, x->type);
  t->dtype = dt;
  t->weak = false;
  return ir_mk(b, IR_CAST, &x, 1, NULL, t);
}

IrNode *ir_transpose(IrBuilder *b, IrNode *x, const int64_t *perm) {
  int r = x->type->rank;
  bool id = true;
  for (int i = 0; i < r; i++) id = id && perm[i] == i;
  if (id) return x;
  IrAttrs as = {0};
  ir_attr_set_ints(b->a, &as, IRA_PERM, perm, r);
  return ir_mk(b, IR_TRANSPOSE, &x, 1, &as, NULL);
}

IrNode *ir_transpose_last2(IrBuilder *b, IrNode *x) {
  int r = x->type->rank;
  int64_t *perm = arena_alloc(b->a, sizeof(int64_t) * (size_t)(r ? r : 1));
  MLC_ASSERT(r >= 2);
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  return ir_transpose(b, x, perm);
}

IrNode *ir_reduce(IrBuilder *b, IrOp op, IrNode *x, const int64_t *dims, int nd, bool keep) {
  IrAttrs as = {0};
  ir_attr_set_ints(b->a, &as, IRA_DIMS, dims, nd);
  ir_attr_set_int(b->a, &as, IRA_KEEPDIM, keep);
  return ir_mk(b, op, &x, 1, &as, NULL);
}

IrNode *ir_sum_all(IrBuilder *b, IrNode *x) {
  int r = x->type->rank;
  int64_t *dims = arena_alloc(b->a, sizeof(int64_t) * (size_t)(r ? r : 1));
  for (int i = 0; i < r; i++) dims[i] = i;
  return ir_reduce(b, IR_SUM, x, dims, r, false);
}

IrNode *ir_slice(IrBuilder *b, IrNode *x, int dim, int64_t start, int64_t step, const Type *t) {
  IrAttrs as = {0};
  ir_attr_set_int(b->a, &as, IRA_DIM, dim);
  ir_attr_set_int(b->a, &as, IRA_START, start);
  ir_attr_set_int(b->a, &as, IRA_STEP, step);
  return ir_mk(b, IR_SLICE, &x, 1, &as, t);
}

IrNode *ir_concat(IrBuilder *b, IrNode **in, int n, int dim) {
  IrAttrs as = {0};
  ir_attr_set_int(b->a, &as, IRA_DIM, dim);
  return ir_mk(b, IR_CONCAT, in, n, &as, NULL);
}

// ---- the scalar table over graph IR ----------------------------------------------------------------
static ScVal sb_konst(ScBuilder *sb, double v) {
  IrScalarBuilder *s = (IrScalarBuilder *)sb;
  return (ScVal){.p = ir_scalar(s->b, v, s->dt)};
}

static ScVal sb_prim(ScBuilder *sb, ScPrim p, const ScVal *a) {
  static const IrOp ops[SCP_COUNT] = {
      [SCP_NEG] = IR_NEG, [SCP_NOT] = IR_NOT, [SCP_ABS] = IR_ABS, [SCP_EXP] = IR_EXP,
      [SCP_LOG] = IR_LOG, [SCP_SQRT] = IR_SQRT, [SCP_TANH] = IR_TANH, [SCP_COS] = IR_COS,
      [SCP_ADD] = IR_ADD, [SCP_SUB] = IR_SUB, [SCP_MUL] = IR_MUL, [SCP_DIV] = IR_DIV,
      [SCP_POW] = IR_POW, [SCP_MAX] = IR_MAXIMUM, [SCP_MIN] = IR_MINIMUM, [SCP_LT] = IR_LT,
      [SCP_LE] = IR_LE, [SCP_GT] = IR_GT, [SCP_GE] = IR_GE, [SCP_EQ] = IR_EQ,
      [SCP_NE] = IR_NE, [SCP_AND] = IR_AND, [SCP_OR] = IR_OR, [SCP_SELECT] = IR_WHERE};
  IrBuilder *b = ((IrScalarBuilder *)sb)->b;
  if (!ops[p]) // IR_INPUT (0) is no scalar's op
    mlc_ice(__FILE__, __LINE__, "%s: the graph IR has no op for the scalar %s", b->who, sc_prim_name(p));
  IrNode *in[3];
  int n = sc_prim_arity(p);
  for (int i = 0; i < n; i++) in[i] = a[i].p;
  return (ScVal){.p = ir_mk(b, ops[p], in, n, NULL, NULL)};
}

static ScVal sb_op(ScBuilder *sb, IrOp op, const ScVal *x, const double *params) {
  IrBuilder *b = ((IrScalarBuilder *)sb)->b;
  const ScOp *o = sc_op(op);
  IrNode *in[SC_MAX_IN];
  for (int i = 0; i < o->nin; i++) in[i] = x[i].p;
  IrAttrs as = {0};
  if (o->nparams) sc_set_params(b->a, &as, op, params);
  return (ScVal){.p = ir_mk(b, op, in, o->nin, &as, NULL)};
}

IrScalarBuilder ir_scalar_builder(IrBuilder *b, DType dt) {
  return (IrScalarBuilder){{sb_konst, sb_prim, sb_op}, b, dt};
}
