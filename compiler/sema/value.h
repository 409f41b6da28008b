// value.h — what an expression denotes during semantic analysis.
//
// Most expressions are tensors (V_TENSOR with a Type). Integer expressions
// over block parameters and dim symbols are dims (V_DIM: `784`, `B*7*7`,
// `C/H`), floats and bools are compile-time constants, `[a, b]` is a list
// (reshape shapes, permutations), `f16` is a dtype, "..." a string. A
// constant used where a tensor is expected becomes a weak scalar tensor that
// adopts the other operand's dtype (x * 2.0 stays f32).
#ifndef MLC_VALUE_H
#define MLC_VALUE_H

#include "types/types.h"

typedef enum {
  V_TENSOR, // .type
  V_DIM,    // .dim (integer, constant or symbolic)
  V_FLOAT,  // .f
  V_BOOL,   // .b
  V_DTYPE,  // .dtype
  V_LIST,   // .items (Value*)
  V_STR,    // .str
  V_INST,   // a block instance: .inst, .top, .path, .up, .str (its label); what
            // a loop over a list binds (for b in blocks), or a block argument
            // (head = Head(tok))
  V_TUPLE,  // the results of a call of several (a, b = f(x)): .items
} ValKind;

typedef struct Value {
  ValKind kind;
  Span span;
  Type *type;
  Dim *dim;
  double f;
  bool b;
  int dtype;
  Vec items;
  const char *str;
  // Inside a body: how the value is computed (sema/checked.h), for tensors
  // and lists holding tensors; NULL for constants (the value is its own
  // recipe).
  struct CkExpr *ck;
  // A local's use: how its binding computed it (the let's value), so that
  // a diagnostic can name what made it (a reduction without keepdim).
  struct CkExpr *def;
  // V_INST: the instantiation, the member its uses are counted on, and
  // where it is: `up` path segments above the scope's instance, then `path`
  // ("blocks.2"; up > 0 for an instance passed to a block as an argument,
  // which lives in the block's parent).
  struct Inst *inst;
  struct MInfo *top;
  const char *path;
  int up;
} Value;

const char *valkind_name(ValKind k); // "tensor", "integer", "float", ...
// "f32[B, 10]", "integer 784", "float 0.5", "list [0, 2, 1]", ...
char *value_str(Arena *a, const Value *v);
Value *value_tensor(Arena *a, Span sp, Type *t);
Value *value_dim(Arena *a, Span sp, Dim *d);
Value *value_float(Arena *a, Span sp, double f);

#endif
