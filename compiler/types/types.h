// types.h — dtypes, symbolic dims and tensor types, and the algebra sema
// uses to check shapes at compile time.
//
// A Dim is an immutable, normalised polynomial with integer coefficients over
// symbols (B, T, or opaque symbols such as the output height of a strided
// conv over a symbolic input). Two dims are equal iff their normal forms are
// equal, so B*7*7 == 49*B and (B+1)-1 == B. Division is exact or refused.
//
// Symbols are objects, not names: each function check creates its own B, and
// a call site instantiates the callee's symbols by substitution (DimSubst).
#ifndef MLC_TYPES_H
#define MLC_TYPES_H

#include "base/common.h"

// ---- dtypes -------------------------------------------------------------------
#define MLC_DTYPES(X)                                                          \
  X(F32, "f32", 4, 1, 0)                                                       \
  X(F16, "f16", 2, 1, 0)                                                       \
  X(BF16, "bf16", 2, 1, 0)                                                     \
  X(F64, "f64", 8, 1, 0)                                                       \
  X(I32, "i32", 4, 0, 1)                                                       \
  X(I64, "i64", 8, 0, 1)                                                       \
  X(BOOL, "bool", 1, 0, 0)                                                     \
  X(U8, "u8", 1, 0, 1) /* data files only; not a model dtype */

typedef enum {
#define X(id, name, size, isfloat, isint) DT_##id,
  MLC_DTYPES(X)
#undef X
  DT_COUNT
} DType;

const char *dtype_name(DType t);
int dtype_size(DType t);
bool dtype_is_float(DType t);
bool dtype_is_int(DType t);
// Returns -1 if `name` is not a dtype keyword.
int dtype_from_name(const char *name);

// ---- symbols and dims --------------------------------------------------------------
typedef struct Sym {
  const char *name; // as written (B) or a readable form for opaque symbols
  int id;           // unique per compilation
  Span span;        // where it was introduced (first binding in a signature)
  bool opaque;      // introduced by sema for an unknowable size
  // A floor-division atom floor(floor_num / floor_den) (dim_floordiv): one
  // symbol per (numerator, divisor) in a compilation, re-evaluated when a
  // substitution makes the numerator known. NULL for ordinary symbols.
  const struct Dim *floor_num;
  int64_t floor_den;
} Sym;

typedef struct Dim Dim; // normalised polynomial; opaque outside dims.c

Sym *sym_new(Arena *a, const char *name, Span span, bool opaque);

Dim *dim_const(Arena *a, int64_t v);
Dim *dim_sym(Arena *a, Sym *s);
Dim *dim_add(Arena *a, const Dim *x, const Dim *y);
Dim *dim_sub(Arena *a, const Dim *x, const Dim *y);
Dim *dim_mul(Arena *a, const Dim *x, const Dim *y);
// Exact division: NULL if x is not a multiple of y (for constants: not
// divisible; for polynomials: y must be a constant dividing every coefficient,
// or a monomial dividing every term).
Dim *dim_div(Arena *a, const Dim *x, const Dim *y);
// floor(x / k) for k > 0: exact division when it divides, the constant when
// x is constant, else the compilation's one floor atom for (x, k) (interned
// in the arena, so equal expressions give equal dims). NULL on overflow.
// Output sizes of strided windows (conv, pooling) are written with it.
Dim *dim_floordiv(Arena *a, const Dim *x, int64_t k);
bool dim_eq(const Dim *x, const Dim *y);
bool dim_is_const(const Dim *x, int64_t *out);
// The single symbol x consists of (x == 1*s), or NULL.
Sym *dim_as_sym(const Dim *x);
// Readable form: 784, B, 49*B, B*T, T^2, B + 1 (terms in a stable order).
char *dim_str(Arena *a, const Dim *x);
// Worst-case bound check helpers: true if x is a constant <= 0.
bool dim_nonpositive(const Dim *x);

// A substitution from symbols to dims (linear list; functions have few).
typedef struct DimSubst {
  int len, cap;
  Sym **from;
  Dim **to;
} DimSubst;
void subst_bind(Arena *a, DimSubst *s, Sym *from, Dim *to);
Dim *subst_lookup(const DimSubst *s, const Sym *from); // NULL if unbound
Dim *dim_subst(Arena *a, const Dim *x, const DimSubst *s);
// Value of x with every symbol set to `v` (used to report "per sample"
// figures with the batch symbol at 1); returns false if x has other symbols
// not listed in `keep`... simpler: dim_eval_with(x, sym, value, &out) binds one
// symbol and succeeds only if nothing else is left.
bool dim_eval1(const Dim *x, const Sym *s, int64_t v, int64_t *out);
// Replace one symbol by a constant, keeping the others symbolic.
Dim *dim_set(Arena *a, const Dim *x, const Sym *s, int64_t v);

// ---- tensor types -----------------------------------------------------------------------
// rank 0 is a scalar. `origin[i]` is where dim i came from (a signature, a
// param declaration, an op) for "note: dim bound here" diagnostics; it may be
// an empty span.
struct Type {
  DType dtype;
  int rank;
  Dim **dims;
  Span *origin;
  bool weak; // an untyped literal (2.0, 1): adopts the other operand's dtype
};
typedef struct Type Type;

Type *type_new(Arena *a, DType dt, int rank);            // dims NULL-filled
Type *type_scalar(Arena *a, DType dt);
Type *type_copy(Arena *a, const Type *t);
bool type_eq(const Type *x, const Type *y); // dtype, rank and every dim
char *type_str(Arena *a, const Type *t);    // f32[B, 784], f32, bool[T, T]
Type *type_subst(Arena *a, const Type *t, const DimSubst *s);
// Product of all dims (element count), and of dims [from, rank).
Dim *type_numel(Arena *a, const Type *t);
Dim *type_numel_from(Arena *a, const Type *t, int from);

// ---- broadcasting -------------------------------------------------------------------------
// NumPy rules, aligned from the right, with two mlc restrictions that turn
// silent surprises into errors:
//   1. dims pair only if equal (same normal form) or one is the literal 1;
//      distinct symbols (B vs T) never broadcast;
//   2. when the ranks differ, the higher-rank operand's own 1s must not be
//      expanded: [B,1] - [B] would be [B,B] in NumPy and is an error here;
//      [B,10] + [10] and [B,10] + [1] are fine (the result is the
//      higher-rank operand's shape). Equal ranks may expand 1s on either side
//      ([B,1] * [1,N] is an explicit outer product).
typedef enum {
  BC_OK,
  BC_MISMATCH,       // dims differ and neither is 1: .dim_a/.dim_b index it
  BC_SURPRISE,       // restriction 2 violated: .dim_a/.dim_b say which 1 expanded
} BcStatus;

typedef struct BcResult {
  BcStatus status;
  Type *result;      // on BC_OK (and on BC_SURPRISE: what NumPy would give)
  int dim_a, dim_b;  // offending dim index in a and b (-1 if absent)
} BcResult;

BcResult broadcast2(Arena *a, const Type *x, const Type *y);

#endif
