// lower_internal.h — what the lowering files share (lower.c: the walk over
// sema's resolved bodies, inlining, user-declared gradients, model state and
// the entry points; emit.c: one emitter per ops.def EMIT column).
//
// Shape of the walk: an Env is one inlined body — the function being built
// (an IrBuilder with the span policy), the body's instance path in the
// model, the substitution of the body's symbols by the dims of the function
// being built, and its slots (parameters and let bindings, as nodes).
// Constants need no evaluation: sema folded them (CK_CONST); their dims are
// substituted, nothing more.
#ifndef MLC_LOWER_INTERNAL_H
#define MLC_LOWER_INTERNAL_H

#include "graph/builder.h"
#include "lower.h"
#include "sema/builtins.h"
#include "sema/checked.h"

// The loss's labels where no graph cross_entropy names them (a
// cross_entropy with ignore_index or reduction "sum"/"none"): the target,
// the logits, and the ignored value (LowerResult.label).
typedef struct LwLabel {
  IrNode *target, *logits;
  bool ignore;
  int64_t ignore_value;
} LwLabel;

typedef struct Lower {
  Arena *a;
  DiagSink *diags;
  const CkModel *model;
  IrModule *m;
  bool train;            // dropout on, batch norm on batch statistics
  IrNode *loss_out;  // the model's forward output seen while lowering an entry
  Vec grads;             // GradEntry* (lower.c)
  LwLabel label;         // while the loss entry is lowered (emit.c)
  bool failed;           // a user error was reported (lower.h)
} Lower;

// A slot's value: a tensor node, or a list of them (a let bound to [a, b]).
typedef struct LwVal {
  IrNode *node;
  int n;
  IrNode **items;
} LwVal;

typedef struct Env {
  Lower *L;
  IrBuilder b;           // the function being built; nodes get the span of
                         // their expression, or the user's call (at_site)
  const char *path;      // the body's instance in the model ("" at the top)
  DimSubst subst;        // the body's symbols -> dims of the function being built
  LwVal *slots;
} Env;

// ---- the walk (lower.c) ------------------------------------------------------------------
IrNode *lw_node(Env *e, const CkExpr *x);          // a tensor expression
LwVal lw_val(Env *e, const CkExpr *x);             // a tensor or a list of tensors
// A constant's dim, substituted; a constant number as a double.
Dim *lw_dim(Env *e, const CkExpr *x);
double lw_number(Env *e, const CkExpr *x);
// x as a node of dtype dt: a tensor as it is; a constant (a weak literal)
// as a rank-0 const of dt; a size only known at run time as the count of a
// const tensor of that many elements.
IrNode *lw_operand(Env *e, const CkExpr *x, DType dt);
// A type over the body's symbols as the function being built sees it.
Type *lw_type(Env *e, const Type *t);
// One narrowed dim (a slice or an index): node unchanged for the whole range.
IrNode *lw_slice(Env *e, IrNode *x, const CkSlice *sl, Span sp);

// ---- the emitters (emit.c): lw_emit_EMIT of ops.def's EMIT column ------------------------
// v[i]: parameter i's tensor argument, lowered (NULL: a constant, a list, absent).
#define OP(id, name, sig, cls, ir, rule, emit) IrNode *lw_emit_##emit(Env *e, const CkExpr *x, IrNode **v);
#include "sema/ops.def"
// The emitter of a CK_OP.
IrNode *lw_emit(Env *e, const CkExpr *x);

#endif
