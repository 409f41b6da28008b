// types.c — dtypes, tensor types and broadcasting (types.h).
//
// A Type is dtype + rank + one Dim per axis (+ where each dim came from).
// Types are values: helpers return fresh arena copies and never mutate their
// inputs. broadcast2 is the one place that decides which shapes combine
// elementwise; every binary op and `where` goes through it.
#include "types.h"

#include <string.h>

// ---- dtypes ---------------------------------------------------------------------
static const struct {
  const char *name;
  int size;
  bool isfloat, isint;
} dtype_info[DT_COUNT] = {
#define X(id, name, size, isfloat, isint) {name, size, isfloat, isint},
    MLC_DTYPES(X)
#undef X
};

const char *dtype_name(DType t) {
  return (unsigned)t < DT_COUNT ? dtype_info[t].name : "?";
}

int dtype_size(DType t) { return (unsigned)t < DT_COUNT ? dtype_info[t].size : 0; }

bool dtype_is_float(DType t) {
  return (unsigned)t < DT_COUNT && dtype_info[t].isfloat;
}

bool dtype_is_int(DType t) {
  return (unsigned)t < DT_COUNT && dtype_info[t].isint;
}

int dtype_from_name(const char *name) {
  for (int i = 0; i < DT_COUNT; i++)
    if (strcmp(dtype_info[i].name, name) == 0) return i;
  return -1;
}

// ---- types ----------------------------------------------------------------------------
Type *type_new(Arena *a, DType dt, int rank) {
  Type *t = arena_alloc(a, sizeof *t);
  t->dtype = dt;
  t->rank = rank;
  if (rank > 0) {
    t->dims = arena_alloc(a, sizeof(Dim *) * (size_t)rank);
    t->origin = arena_alloc(a, sizeof(Span) * (size_t)rank);
  }
  return t;
}

Type *type_scalar(Arena *a, DType dt) { return type_new(a, dt, 0); }

Type *type_copy(Arena *a, const Type *t) {
  Type *c = type_new(a, t->dtype, t->rank);
  c->weak = t->weak;
  for (int i = 0; i < t->rank; i++) {
    c->dims[i] = t->dims[i];
    c->origin[i] = t->origin ? t->origin[i] : (Span){0};
  }
  return c;
}

// Weakness is not part of equality: a weak f32 scalar and an f32 scalar
// denote the same type.
bool type_eq(const Type *x, const Type *y) {
  if (!x || !y) return false;
  if (x->dtype != y->dtype || x->rank != y->rank) return false;
  for (int i = 0; i < x->rank; i++)
    if (!dim_eq(x->dims[i], y->dims[i])) return false;
  return true;
}

// f32[B, 784], f32 (rank 0), bool[T, T]
char *type_str(Arena *a, const Type *t) {
  if (!t) return arena_strdup(a, "?");
  if (t->rank == 0) return arena_strdup(a, dtype_name(t->dtype));
  StrBuf b = {0};
  sb_printf(&b, "%s[", dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++)
    sb_printf(&b, "%s%s", i ? ", " : "", dim_str(a, t->dims[i]));
  sb_putc(&b, ']');
  char *s = arena_strdup(a, b.data);
  sb_free(&b);
  return s;
}

// NULL if a substituted dim overflows.
Type *type_subst(Arena *a, const Type *t, const DimSubst *s) {
  Type *c = type_copy(a, t);
  for (int i = 0; i < c->rank; i++) {
    c->dims[i] = dim_subst(a, t->dims[i], s);
    if (!c->dims[i]) return NULL;
  }
  return c;
}

// Product of dims [from, rank); 1 for an empty range; NULL on overflow.
Dim *type_numel_from(Arena *a, const Type *t, int from) {
  Dim *n = dim_const(a, 1);
  for (int i = from < 0 ? 0 : from; i < t->rank; i++) n = dim_mul(a, n, t->dims[i]);
  return n;
}

Dim *type_numel(Arena *a, const Type *t) { return type_numel_from(a, t, 0); }

// ---- broadcasting -----------------------------------------------------------------------------
static bool dim_is_one(const Dim *d) {
  int64_t v;
  return dim_is_const(d, &v) && v == 1;
}

// broadcast2: [.., a_i] (+) [.., b_i] -> [.., c_i], aligned from the right,
//   c_i = a_i if a_i == b_i; the other side if one of them is the literal 1;
//   a missing leading dim takes the other operand's.
// Restriction 2 as implemented: when the ranks differ, the higher-rank
// operand's own 1s must not be expanded. [B, 1] - [B] (NumPy: [B, B]) and
// [B, 1, 10] + [5, 10] are BC_SURPRISE; [B, 10] + [10] and [B, 10] + [1]
// (the lower-rank operand simply spreads over the other) are fine, since the
// result there is the higher-rank operand's own shape. Equal ranks may
// expand 1s on either side ([B, 1] * [1, N] is an explicit outer product).
// Rank-0 operands (weak literals, scalars) combine with anything.
// The result dtype is x's unless x is weak (then y's); weak only if both are.
// Dtype compatibility is the caller's check.
BcResult broadcast2(Arena *a, const Type *x, const Type *y) {
  BcResult r = {BC_OK, NULL, -1, -1};
  int rank = x->rank > y->rank ? x->rank : y->rank;
  Type *t = type_new(a, x->weak ? y->dtype : x->dtype, rank);
  t->weak = x->weak && y->weak;
  bool surprise = false;
  for (int k = 1; k <= rank; k++) { // k-th dim from the right
    int ia = x->rank - k, ib = y->rank - k, ic = rank - k;
    if (ia < 0 || ib < 0) {
      const Type *s = ia < 0 ? y : x;
      int is = ia < 0 ? ib : ia;
      t->dims[ic] = s->dims[is];
      t->origin[ic] = s->origin ? s->origin[is] : (Span){0};
      continue;
    }
    const Dim *da = x->dims[ia], *db = y->dims[ib];
    const Type *from = x;
    int ifrom = ia;
    if (dim_eq(da, db) || dim_is_one(db)) {
      // keep x's dim
    } else if (dim_is_one(da)) {
      from = y, ifrom = ib;
      if (x->rank > y->rank && !surprise) surprise = true, r.dim_a = ia, r.dim_b = ib;
    } else {
      r.status = BC_MISMATCH;
      r.dim_a = ia, r.dim_b = ib;
      return r;
    }
    if (from == x && !dim_eq(da, db) && y->rank > x->rank && !surprise)
      surprise = true, r.dim_a = ia, r.dim_b = ib; // y's 1 expanded
    t->dims[ic] = from->dims[ifrom];
    t->origin[ic] = from->origin ? from->origin[ifrom] : (Span){0};
  }
  r.result = t;
  if (surprise) r.status = BC_SURPRISE;
  return r;
}
