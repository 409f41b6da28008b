// builtins_internal.h — what the builtin op files share: the bound argument
// list and the argument helpers (builtins.c), and the shape rules that live
// in builtins_nn.c (layers, losses, constructors) and builtins_data.c (data
// sources). Nothing outside compiler/sema/builtins*.c includes this.
//
// Every helper that can fail reports one error at the most specific span
// (the offending argument, else the call) and returns false/NULL; a rule
// that sees a failure returns NULL at once.
#ifndef MLC_BUILTINS_INTERNAL_H
#define MLC_BUILTINS_INTERNAL_H

#include "builtins.h"

enum {
  BI_MAXP = 8,     // most parameters any op has
  BI_MAXRANK = 64, // highest tensor rank the rules accept
};

// A call after argument binding: v[i] is the argument bound to parameter i
// (positional or named), or its default from the signature when that is a
// number, bool or dtype; NULL for the defaults a rule applies (all, none,
// kernel). A rule that resolves the call to another op (max(a, b) ->
// maximum) sets op; the IR attributes it computes go to c->attrs.
typedef struct Args {
  BuiltinCall *c;
  Arena *a;
  int op;             // BuiltinOp
  const char *opname; // "sum"
  int np;             // number of parameters
  const char *pname[BI_MAXP];
  Value *v[BI_MAXP];
  bool given[BI_MAXP]; // the call wrote the argument
  int src[BI_MAXP];    // its index among the call's arguments (-1: a default)
} Args;

// ---- argument helpers (builtins.c) -------------------------------------------------
// The argument's span, or the call's when it is absent or has none.
Span bi_span(const Args *g, int i);
// The argument's source text when short and on one line, else `fallback`
// (used to write runnable suggestions: "reshape(y, [B])").
const char *bi_text(const Args *g, int i, const char *fallback);
// A real tensor argument (constants are refused).
Type *bi_tensor(Args *g, int i);
// A tensor operand: tensors as they are, constants as weak rank-0 tensors.
Type *bi_operand(Args *g, int i);
// Constant arguments (the parameter is given or has a signature default).
// A constant integer.
bool bi_int(Args *g, int i, int64_t *out);
// A constant number (float, or integer).
bool bi_float(Args *g, int i, double *out);
bool bi_bool(Args *g, int i, bool *out);
// A dtype keyword.
bool bi_dtype(Args *g, int i, DType *out);
// An int or a list of two ints (stride = 2, padding = [1, 0]). Values below
// `min` are refused.
bool bi_pair(Args *g, int i, int64_t min, int64_t out[2]);
// Records the rule's IR attributes for the emitter (c->attrs).
void bi_attr_int(Args *g, IrAttrKey k, int64_t v);
void bi_attr_ints(Args *g, IrAttrKey k, const int64_t *v, int n);
void bi_attr_float(Args *g, IrAttrKey k, double v);
// A list of sizes ([B, 28, 28]): each item an integer (symbolic allowed);
// -1 is accepted only when `allow_infer`. Returns the list value.
Value *bi_shape(Args *g, int i, bool allow_infer);
// Normalises a possibly negative dim index `d` for a tensor `t` with `n`
// valid positions (rank, or rank + 1 for unsqueeze); errors at `sp`.
bool bi_norm_dim(Args *g, Span sp, int64_t d, const Type *t, int n, int *out);
// Checks a dtype class; reports "<op> expects a float tensor, got ..." at
// argument i.
bool bi_need_float(Args *g, int i, const Type *t);
bool bi_need_int(Args *g, int i, const Type *t); // i32 or i64
// Equal dtypes of two tensor arguments (no implicit conversion).
bool bi_same_dtype(Args *g, int i, const Type *x, int j, const Type *y);
// Reports "dimension too large" at the call when d is NULL (overflow).
Dim *bi_ok(Args *g, Dim *d);
// A fresh opaque symbol for a size only known at run time.
Sym *bi_fresh(Args *g, const char *display, Span sp);
// The call's tensor result (span = the call).
Value *bi_result(Args *g, Type *t);
Dim *bi_k(Args *g, int64_t v); // dim_const in the call's arena
// "[B, 700]": a list value without its "list " prefix.
const char *bi_list_str(Args *g, const Value *l);

// ---- the rules: bi_rule_RULE of every ops.def row (builtins.c, builtins_nn.c,
// builtins_data.c) ---------------------------------------------------------------------------
#define OP(id, name, sig, cls, ir, rule, emit) Value *bi_rule_##rule(Args *g);
#include "ops.def"

// ---- data sources in builtins_data.c ---------------------------------------------------------
bool bi_data_source(Args *g, DataSource *out);
// Binds a call's arguments to the op's parameters (builtins.c); false after
// reporting an error.
bool bi_bind(BuiltinCall *c, int op, Args *g);

#endif
