// scalar.h — the scalar math of every elementwise graph op, written once.
//
// Each elementwise IrOp (unary, binary, compare, logical, where and the fused
// (dy, saved) gradients) has one row in scalar.c: its forward formula and,
// when it is differentiable, its gradient formula, both written against a
// small abstract builder (ScBuilder) of scalar primitives. Four consumers
// run the same formulas through different builders:
//
//   sc_eval        doubles: sema's constant folding and the reference
//                  interpreter (interp.c), one element at a time
//   kernel IR      KExpr trees: kernel lowering (kernel/kir_lower.c)
//   graph IR       IrNodes: autodiff's rule for the op (graph/builder.h's
//                  ir_scalar_builder), where a formula's call of another
//                  table op (sc_apply) becomes that op's node
//
// so the interpreter, the kernels, the folder and the gradient cannot
// disagree about what `gelu` or `softplus` computes. The primitives are the
// kernel IR's scalar operations; a formula that needs more is written in
// them (tinygrad's composite ops are the model).
//
// Semantics of the primitives on doubles (the interpreter's and kir_interp's):
// max/min propagate NaN (the result is NaN if either operand is), compares
// give 0/1, not(a) is a == 0, and/or treat nonzero as true, select(c, a, b)
// is c != 0 ? a : b. Integer operands follow their dtype's arithmetic in the
// kernel IR; the interpreter keeps its own wrapping and floor division for
// integer add/sub/mul/div and only calls this table for what is exact.
//
// Scalar parameters (leaky_relu's slope, hardtanh's bounds) travel as the
// node's float attributes `a` and `b` (sc_params reads them), in the order
// the row's parameter list gives.
#ifndef MLC_SCALAR_H
#define MLC_SCALAR_H

#include "ir.h"

// ---- primitives ---------------------------------------------------------------------
//   X(ID, "name", arity)
#define SC_PRIMS(X)                                                            \
  X(NEG, "neg", 1)                                                             \
  X(NOT, "not", 1)                                                             \
  X(ABS, "abs", 1)                                                             \
  X(EXP, "exp", 1)                                                             \
  X(LOG, "log", 1)                                                             \
  X(LOG1P, "log1p", 1)                                                         \
  X(SQRT, "sqrt", 1)                                                           \
  X(TANH, "tanh", 1)                                                           \
  X(ERF, "erf", 1)                                                             \
  X(COS, "cos", 1)                                                             \
  X(ADD, "add", 2)                                                             \
  X(SUB, "sub", 2)                                                             \
  X(MUL, "mul", 2)                                                             \
  X(DIV, "div", 2)                                                             \
  X(POW, "pow", 2)                                                             \
  X(MAX, "max", 2)                                                             \
  X(MIN, "min", 2)                                                             \
  X(LT, "lt", 2)                                                               \
  X(LE, "le", 2)                                                               \
  X(GT, "gt", 2)                                                               \
  X(GE, "ge", 2)                                                               \
  X(EQ, "eq", 2)                                                               \
  X(NE, "ne", 2)                                                               \
  X(AND, "and", 2)                                                             \
  X(OR, "or", 2)                                                               \
  X(SELECT, "select", 3)

typedef enum {
#define X(id, name, arity) SCP_##id,
  SC_PRIMS(X)
#undef X
  SCP_COUNT
} ScPrim;

const char *sc_prim_name(ScPrim p);
int sc_prim_arity(ScPrim p);

// ---- builders -------------------------------------------------------------------------
// A scalar value of one builder: a double (sc_eval) or a pointer (a KExpr,
// an IrNode).
typedef union ScVal {
  double f;
  void *p;
} ScVal;

// Implementations embed it as their first member and cast back.
typedef struct ScBuilder ScBuilder;
struct ScBuilder {
  // A constant of the operands' dtype (a compare's result is bool whatever
  // this dtype is).
  ScVal (*konst)(ScBuilder *b, double v);
  ScVal (*prim)(ScBuilder *b, ScPrim p, const ScVal *args);
  // The whole table op as one value (the graph builder makes one node);
  // NULL: the op's forward formula is expanded into primitives.
  ScVal (*op)(ScBuilder *b, IrOp op, const ScVal *x, const double *params);
};

enum { SC_MAX_IN = 3, SC_MAX_PARAMS = 2 };

// What a gradient formula gets and fills: the operands, the forward output
// and its gradient; dx[i] for each operand with need[i], shaped like the
// output (autodiff sums broadcast dims back).
typedef struct ScGrad {
  const ScVal *x;
  ScVal y, dy;
  const double *p;
  const bool *need;
  ScVal *dx;
} ScGrad;

// One row of the table.
typedef struct ScOp {
  int nin;         // operands
  int nparams;     // scalar parameters: attributes a, b
  bool ints;       // also defined on integer operands (abs, neg, relu, add, ...)
  ScVal (*fwd)(ScBuilder *b, const ScVal *x, const double *p);
  void (*grad)(ScBuilder *b, const ScGrad *g); // NULL: no gradient (a fused grad op)
} ScOp;

// The row of op, or NULL when op is not elementwise.
const ScOp *sc_op(IrOp op);
// op applied through b: b->op when the builder has it, else the formula.
ScVal sc_apply(ScBuilder *b, IrOp op, const ScVal *x, const double *params);
// The double evaluator: op's formula on x[0..nin) with params.
double sc_eval(IrOp op, const double *x, const double *params);
double sc_prim_eval(ScPrim p, const double *args);
// A node's scalar parameters (attributes a, b) into p; returns how many.
int sc_params(const IrNode *n, double *p);
// Sets a node's scalar parameters from p (the count the op's row says).
void sc_set_params(Arena *a, IrAttrs *as, IrOp op, const double *p);

#endif
