// lower_internal.h — what the lowering files share (lower.c: environments,
// calls of user code, gradients, model state and entry points; lower_ops.c:
// operators, builtins and indexing as IR ops).
//
// Values during lowering (LVal) mirror sema's Values: a tensor is an IR node,
// integers are dims (constant or symbolic), floats/bools/dtypes/lists/strings
// are compile-time constants that become `const` nodes only where they meet
// a tensor (a weak literal takes the other operand's dtype).
#ifndef MLC_LOWER_INTERNAL_H
#define MLC_LOWER_INTERNAL_H

#include <setjmp.h>

#include "lower.h"
#include "sema/sema_internal.h"

typedef enum { LV_TENSOR, LV_DIM, LV_FLOAT, LV_BOOL, LV_DTYPE, LV_LIST, LV_STR } LKind;

typedef struct LVal {
  LKind kind;
  Span span;
  IrNode *node;     // LV_TENSOR
  Dim *dim;         // LV_DIM
  double f;         // LV_FLOAT
  bool b;           // LV_BOOL
  int dtype;        // LV_DTYPE
  Vec items;        // LV_LIST: LVal*
  const char *str;  // LV_STR
} LVal;

typedef struct Lower {
  Arena *a;
  DiagSink *diags;
  Sema *S;
  Inst *model;
  IrModule *m;
  bool train;       // dropout on, batch norm on batch statistics
  IrNode *fwd_out;  // the model's forward output seen while lowering loss
  int depth;        // inlined call nesting
  Vec grads;        // GradEntry* (lower.c)
  jmp_buf jmp;      // lower_fail jumps back to lower_model
} Lower;

// One function body being lowered: a fresh environment per inlined call.
typedef struct Env {
  Lower *L;
  IrFunc *f;        // the function being built
  Inst *inst;       // the enclosing instantiation (NULL in fn items)
  const char *path; // its path in the model ("" at the top)
  SMap locals;      // name -> LVal*: parameters and let bindings
  SMap syms;        // dim name -> LVal* (LV_DIM) bound from argument types
  // Inside a body from another file (the prelude's Linear, Conv2d, ...),
  // every node gets the span of the user's call instead: a late report
  // (--check-finite, a verifier message) then points at the user's line.
  bool at_site;
  Span site;
} Env;

// ---- lower.c ------------------------------------------------------------------------------
void lower_fail(Lower *L, Span sp, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
LVal *lower_val(Lower *L, LKind k, Span sp);
LVal *lower_tensor(Lower *L, IrNode *n, Span sp);
LVal *lower_dimv(Lower *L, Dim *d, Span sp);
LVal *lower_floatv(Lower *L, double f, Span sp);
LVal *lower_boolv(Lower *L, bool b, Span sp);
LVal *lower_eval(Env *e, Expr *x);
IrNode *lower_num_node(Env *e, LVal *v, DType dt, Span sp);

// ---- lower_ops.c ----------------------------------------------------------------------------
// Builds a node typed by its shape rule (given: the type of ops that take
// one); a failure is a compiler bug.
IrNode *lower_build(Env *e, IrOp op, IrNode **in, int nin, const IrAttrs *as, Type *given,
                    Span sp);
IrNode *lower_const(Env *e, double v, Type *t, Span sp);
double lower_num(Lower *L, const LVal *v); // a constant number (dim, float, bool)
IrNode *lower_transpose_last2(Env *e, IrNode *x, Span sp);
LVal *lower_unary(Env *e, Expr *x);
LVal *lower_binary(Env *e, Expr *x);
LVal *lower_index(Env *e, Expr *x);
LVal *lower_builtin(Env *e, Expr *call, const char *name);

#endif
