// test_dims.c — unit tests for the Dim algebra (dims.c), tensor types and
// broadcasting (types.c) and value printing (value.c).
//
// Prints one "[PASS] name" / "[FAIL] name" line per check and a last line
// "N passed, N failed"; exits 1 on any failure.
#include "unit.h"
#include "types/types.h"
#include "sema/value.h"

#include <stdio.h>
#include <string.h>


static void check_str(const char *name, const char *got, const char *want) {
  bool ok = got && strcmp(got, want) == 0;
  if (!ok) printf("  got \"%s\", want \"%s\"\n", got ? got : "(null)", want);
  check(name, ok);
}

static Arena *A;
static Sym *sB, *sT, *sH;
static Dim *B, *T, *H;

static Dim *K(int64_t v) { return dim_const(A, v); }
static Dim *add(Dim *x, Dim *y) { return dim_add(A, x, y); }
static Dim *sub(Dim *x, Dim *y) { return dim_sub(A, x, y); }
static Dim *mul(Dim *x, Dim *y) { return dim_mul(A, x, y); }
static char *S(Dim *d) { return dim_str(A, d); }

// ---- normal forms and printing ---------------------------------------------------
static void test_normal_forms(void) {
  check("const fold 3+4", dim_eq(add(K(3), K(4)), K(7)));
  check("B*7*7 == 49*B", dim_eq(mul(mul(B, K(7)), K(7)), mul(K(49), B)));
  check("(B+1)-1 == B", dim_eq(sub(add(B, K(1)), K(1)), B));
  check("B*T == T*B", dim_eq(mul(B, T), mul(T, B)));
  check("B+T == T+B", dim_eq(add(B, T), add(T, B)));
  check("B-B == 0", dim_eq(sub(B, B), K(0)));
  check("B != T", !dim_eq(B, T));
  check("B != 2*B", !dim_eq(B, mul(K(2), B)));
  check("(B+1)*(B-1) == B^2-1",
        dim_eq(mul(add(B, K(1)), sub(B, K(1))), sub(mul(B, B), K(1))));
  int64_t v = 0;
  check("is_const 12", dim_is_const(mul(K(3), K(4)), &v) && v == 12);
  check("is_const zero", dim_is_const(sub(B, B), &v) && v == 0);
  check("not const B", !dim_is_const(B, &v));
  check("as_sym B", dim_as_sym(B) == sB);
  check("as_sym (B+1)-1", dim_as_sym(sub(add(B, K(1)), K(1))) == sB);
  check("as_sym 2*B is NULL", dim_as_sym(mul(K(2), B)) == NULL);
  check("as_sym 5 is NULL", dim_as_sym(K(5)) == NULL);
  check("nonpositive 0", dim_nonpositive(K(0)));
  check("nonpositive -3", dim_nonpositive(K(-3)));
  check("nonpositive 1 false", !dim_nonpositive(K(1)));
  check("nonpositive B false", !dim_nonpositive(B));

  check_str("str 784", S(K(784)), "784");
  check_str("str 0", S(K(0)), "0");
  check_str("str -5", S(K(-5)), "-5");
  check_str("str B", S(B), "B");
  check_str("str 49*B", S(mul(mul(B, K(7)), K(7))), "49*B");
  check_str("str B*T", S(mul(T, B)), "B*T");
  check_str("str T^2", S(mul(T, T)), "T^2");
  check_str("str 2*B + 1", S(add(K(1), mul(K(2), B))), "2*B + 1");
  check_str("str B - 1", S(sub(B, K(1))), "B - 1");
  check_str("str -B", S(sub(K(0), B)), "-B");
  check_str("str 1 - B", S(sub(K(1), B)), "-B + 1");
  check_str("str B^2 + B*T + 3",
            S(add(add(mul(B, T), K(3)), mul(B, B))), "B^2 + B*T + 3");
  check_str("str B*T - 2*T", S(sub(mul(B, T), mul(K(2), T))), "B*T - 2*T");
  check_str("str NULL", S(NULL), "?");
  check_str("str INT64_MIN", S(K(INT64_MIN)), "-9223372036854775808");
  Sym *op = sym_new(A, "(H - 3)/2 + 1", (Span){0}, true);
  check_str("str opaque alone", S(dim_sym(A, op)), "(H - 3)/2 + 1");
  check_str("str opaque in product", S(mul(K(4), dim_sym(A, op))),
            "4*((H - 3)/2 + 1)");
}

// ---- division ---------------------------------------------------------------------------
static void test_div(void) {
  int64_t v;
  check("12/4 == 3", dim_is_const(dim_div(A, K(12), K(4)), &v) && v == 3);
  check("13/4 refused", dim_div(A, K(13), K(4)) == NULL);
  check("x/0 refused", dim_div(A, K(13), K(0)) == NULL);
  check("-12/4 == -3", dim_is_const(dim_div(A, K(-12), K(4)), &v) && v == -3);
  check("49*B/7 == 7*B", dim_eq(dim_div(A, mul(K(49), B), K(7)), mul(K(7), B)));
  check("49*B/B == 49", dim_eq(dim_div(A, mul(K(49), B), B), K(49)));
  check("B*T/T == B", dim_eq(dim_div(A, mul(B, T), T), B));
  check("(2*B+4)/2 == B+2",
        dim_eq(dim_div(A, add(mul(K(2), B), K(4)), K(2)), add(B, K(2))));
  check("(2*B+3)/2 refused", dim_div(A, add(mul(K(2), B), K(3)), K(2)) == NULL);
  check("(B*T+B)/B == T+1",
        dim_eq(dim_div(A, add(mul(B, T), B), B), add(T, K(1))));
  check("(B*T+1)/B refused", dim_div(A, add(mul(B, T), K(1)), B) == NULL);
  check("B/T refused", dim_div(A, B, T) == NULL);
  check("B/(2*B) refused", dim_div(A, B, mul(K(2), B)) == NULL);
  check("T^2/T == T", dim_eq(dim_div(A, mul(T, T), T), T));
  Dim *p = mul(add(B, K(1)), add(T, K(2)));
  check("(B+1)(T+2)/(B+1) == T+2", dim_eq(dim_div(A, p, add(B, K(1))), add(T, K(2))));
  check("(B+1)(T+2)/(T+1) refused", dim_div(A, p, add(T, K(1))) == NULL);
  check("(B^2-1)/(B-1) == B+1",
        dim_eq(dim_div(A, sub(mul(B, B), K(1)), sub(B, K(1))), add(B, K(1))));
  check("0/B == 0", dim_eq(dim_div(A, K(0), B), K(0)));
  check("INT64_MIN/-1 refused", dim_div(A, K(INT64_MIN), K(-1)) == NULL);
}

// ---- overflow ----------------------------------------------------------------------------
static void test_overflow(void) {
  Dim *big = K(INT64_MAX);
  check("add overflow -> NULL", add(big, K(1)) == NULL);
  check("sub overflow -> NULL", sub(K(INT64_MIN), K(1)) == NULL);
  check("mul overflow -> NULL", mul(big, K(2)) == NULL);
  check("mul overflow symbolic -> NULL", mul(mul(big, B), K(3)) == NULL);
  check("NULL propagates add", add(NULL, B) == NULL);
  check("NULL propagates mul", mul(B, NULL) == NULL);
  check("NULL not equal", !dim_eq(NULL, NULL));
  check("no overflow near limit", dim_is_const(add(K(INT64_MAX - 1), K(1)), NULL));
}

// ---- substitution ---------------------------------------------------------------------------
static void test_subst(void) {
  DimSubst s = {0};
  subst_bind(A, &s, sB, K(64));
  subst_bind(A, &s, sT, add(H, K(1)));
  check("lookup B", dim_eq(subst_lookup(&s, sB), K(64)));
  check("lookup H unbound", subst_lookup(&s, sH) == NULL);
  int64_t v;
  check("subst 49*B -> 3136",
        dim_is_const(dim_subst(A, mul(K(49), B), &s), &v) && v == 3136);
  check("subst B*T -> 64*H + 64",
        dim_eq(dim_subst(A, mul(B, T), &s), add(mul(K(64), H), K(64))));
  check("subst T^2 -> H^2 + 2*H + 1",
        dim_eq(dim_subst(A, mul(T, T), &s), add(add(mul(H, H), mul(K(2), H)), K(1))));
  check_str("subst str", S(dim_subst(A, add(mul(B, T), T), &s)), "65*H + 65");
  subst_bind(A, &s, sB, K(32)); // rebinding replaces
  check("rebind B", dim_eq(subst_lookup(&s, sB), K(32)) && s.len == 2);
  check("eval1 49*B at 1", dim_eval1(mul(K(49), B), sB, 1, &v) && v == 49);
  check("eval1 B*T fails", !dim_eval1(mul(B, T), sB, 1, &v));
  check("set B=2 in B*T+B", dim_eq(dim_set(A, add(mul(B, T), B), sB, 2),
                                   add(mul(K(2), T), K(2))));
  for (int i = 0; i < 20; i++) // growth past the initial capacity
    subst_bind(A, &s, sym_new(A, "X", (Span){0}, false), K(i));
  check("subst grows", s.len == 22 && dim_eq(subst_lookup(&s, sB), K(32)));
}

// ---- types --------------------------------------------------------------------------------------
static Type *ty(DType dt, int rank, Dim **dims) {
  Type *t = type_new(A, dt, rank);
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  return t;
}
#define TY(dt, ...)                                                            \
  ty(dt, (int)(sizeof((Dim *[]){__VA_ARGS__}) / sizeof(Dim *)),                \
     (Dim *[]){__VA_ARGS__})

static void test_types(void) {
  check_str("type_str f32[B, 784]", type_str(A, TY(DT_F32, B, K(784))), "f32[B, 784]");
  check_str("type_str scalar", type_str(A, type_scalar(A, DT_F32)), "f32");
  check_str("type_str bool[T, T]", type_str(A, TY(DT_BOOL, T, T)), "bool[T, T]");
  check_str("dtype names", dtype_name(DT_BF16), "bf16");
  check("dtype_from_name i64", dtype_from_name("i64") == DT_I64);
  check("dtype_from_name bad", dtype_from_name("f8") == -1);
  check("dtype sizes", dtype_size(DT_F64) == 8 && dtype_size(DT_BOOL) == 1 &&
                           dtype_size(DT_F16) == 2);
  check("dtype float/int", dtype_is_float(DT_BF16) && !dtype_is_float(DT_I32) &&
                               dtype_is_int(DT_U8) && !dtype_is_int(DT_BOOL));
  Type *x = TY(DT_F32, B, mul(K(7), K(7)));
  check("type_eq", type_eq(x, TY(DT_F32, B, K(49))));
  check("type_eq dtype", !type_eq(x, TY(DT_F64, B, K(49))));
  check("type_eq rank", !type_eq(x, TY(DT_F32, B)));
  check("numel", dim_eq(type_numel(A, TY(DT_F32, B, K(28), K(28))), mul(K(784), B)));
  check("numel scalar", dim_eq(type_numel(A, type_scalar(A, DT_F32)), K(1)));
  check("numel_from 1", dim_eq(type_numel_from(A, TY(DT_F32, B, T, K(4)), 1), mul(K(4), T)));
  Type *c = type_copy(A, x);
  c->dims[0] = T;
  check("copy is independent", dim_eq(x->dims[0], B));
  DimSubst s = {0};
  subst_bind(A, &s, sB, K(8));
  check_str("type_subst", type_str(A, type_subst(A, TY(DT_F32, B, mul(B, K(3))), &s)),
            "f32[8, 24]");
}

// ---- broadcasting ---------------------------------------------------------------------------------
static void test_broadcast(void) {
  BcResult r = broadcast2(A, TY(DT_F32, B, K(10)), TY(DT_F32, B, K(10)));
  check("bc equal", r.status == BC_OK && type_eq(r.result, TY(DT_F32, B, K(10))));
  r = broadcast2(A, TY(DT_F32, B, K(10)), TY(DT_F32, K(10)));
  check("bc rank extension [B,10]+[10]",
        r.status == BC_OK && type_eq(r.result, TY(DT_F32, B, K(10))));
  r = broadcast2(A, TY(DT_F32, K(10)), TY(DT_F32, B, K(10)));
  check("bc rank extension [10]+[B,10]",
        r.status == BC_OK && type_eq(r.result, TY(DT_F32, B, K(10))));
  r = broadcast2(A, TY(DT_F32, B, K(10)), TY(DT_F32, B, K(1)));
  check("bc [B,10]*[B,1]", r.status == BC_OK && type_eq(r.result, TY(DT_F32, B, K(10))));
  r = broadcast2(A, TY(DT_F32, B, K(1)), TY(DT_F32, K(1), K(5)));
  check("bc equal-rank outer [B,1]*[1,5]",
        r.status == BC_OK && type_eq(r.result, TY(DT_F32, B, K(5))));
  r = broadcast2(A, TY(DT_F32, B, K(10)), TY(DT_F32, K(1)));
  check("bc [B,10]+[1] (lower rank spreads)",
        r.status == BC_OK && type_eq(r.result, TY(DT_F32, B, K(10))));
  r = broadcast2(A, TY(DT_F32, B, K(10)), TY(DT_F32, B, K(5)));
  check("bc mismatch 10 vs 5", r.status == BC_MISMATCH && r.dim_a == 1 && r.dim_b == 1);
  r = broadcast2(A, TY(DT_F32, B, K(10)), TY(DT_F32, T, K(10)));
  check("bc distinct symbols never pair", r.status == BC_MISMATCH && r.dim_a == 0);
  r = broadcast2(A, TY(DT_F32, B, K(10)), TY(DT_F32, K(10), K(10)));
  check("bc B vs 10 mismatch", r.status == BC_MISMATCH);
  r = broadcast2(A, TY(DT_F32, B, K(1)), TY(DT_F32, B));
  check("bc surprise [B,1]-[B]", r.status == BC_SURPRISE && r.dim_a == 1 && r.dim_b == 0 &&
                                     type_eq(r.result, TY(DT_F32, B, B)));
  r = broadcast2(A, TY(DT_F32, B), TY(DT_F32, B, K(1)));
  check("bc surprise [B]-[B,1]", r.status == BC_SURPRISE && r.dim_a == 0 && r.dim_b == 1);
  r = broadcast2(A, TY(DT_F32, B, K(1), K(10)), TY(DT_F32, K(5), K(10)));
  check("bc surprise [B,1,10]+[5,10]", r.status == BC_SURPRISE && r.dim_a == 1 &&
                                           type_eq(r.result, TY(DT_F32, B, K(5), K(10))));
  Type *w = type_scalar(A, DT_F32);
  w->weak = true;
  Type *xi = TY(DT_F64, B, K(1));
  r = broadcast2(A, w, xi);
  check("bc weak scalar adopts", r.status == BC_OK && r.result->dtype == DT_F64 &&
                                     !r.result->weak && type_eq(r.result, xi));
  r = broadcast2(A, xi, w);
  check("bc weak scalar right", r.status == BC_OK && type_eq(r.result, xi));
  r = broadcast2(A, w, w);
  check("bc weak+weak stays weak", r.status == BC_OK && r.result->weak && r.result->rank == 0);
  r = broadcast2(A, TY(DT_F32, B, K(10)), TY(DT_F64, B, K(10)));
  check("bc dtype is x's", r.status == BC_OK && r.result->dtype == DT_F32);
  r = broadcast2(A, TY(DT_F32, K(1), K(1)), TY(DT_F32, K(1)));
  check("bc all ones", r.status == BC_OK && type_eq(r.result, TY(DT_F32, K(1), K(1))));
  Type *o = TY(DT_F32, B, K(10));
  o->origin[0] = (Span){NULL, 5, 1};
  r = broadcast2(A, TY(DT_F32, K(1), K(10)), o);
  check("bc origin follows source dim", r.status == BC_OK && r.result->origin[0].off == 5);
}

// ---- values -------------------------------------------------------------------------------------
static void test_values(void) {
  Span sp = {0};
  check_str("value tensor", value_str(A, value_tensor(A, sp, TY(DT_F32, B, K(10)))),
            "f32[B, 10]");
  check_str("value dim", value_str(A, value_dim(A, sp, K(784))), "integer 784");
  check_str("value sym dim", value_str(A, value_dim(A, sp, mul(K(49), B))), "integer 49*B");
  check_str("value float", value_str(A, value_float(A, sp, 0.5)), "float 0.5");
  Value *l = arena_alloc(A, sizeof *l);
  l->kind = V_LIST;
  vec_push(A, &l->items, value_dim(A, sp, K(0)));
  vec_push(A, &l->items, value_dim(A, sp, K(2)));
  vec_push(A, &l->items, value_dim(A, sp, K(1)));
  check_str("value list", value_str(A, l), "list [0, 2, 1]");
  Value d = {.kind = V_DTYPE, .dtype = DT_F16};
  check_str("value dtype", value_str(A, &d), "dtype f16");
  Value s = {.kind = V_STR, .str = "a.idx"};
  check_str("value str", value_str(A, &s), "string \"a.idx\"");
  Value b = {.kind = V_BOOL, .b = true};
  check_str("value bool", value_str(A, &b), "bool true");
  check_str("valkind names", valkind_name(V_DIM), "integer");
}

// floor(x / k): constants fold (rounding toward minus infinity), exact
// quotients stay polynomials, the rest is one interned atom per (x, k) that
// a substitution re-evaluates.
static void test_floordiv(void) {
  check("27 // 2 == 13", dim_eq(dim_floordiv(A, K(27), 2), K(13)));
  check("-3 // 2 == -2", dim_eq(dim_floordiv(A, K(-3), 2), K(-2)));
  check("4*B // 2 == 2*B", dim_eq(dim_floordiv(A, mul(K(4), B), 2), mul(K(2), B)));
  Dim *f = dim_floordiv(A, sub(H, K(1)), 2);
  check_str("(H - 1) // 2 prints", S(f), "(H - 1) // 2");
  check("same numerator and divisor: same dim",
        dim_eq(f, dim_floordiv(A, sub(H, K(1)), 2)));
  check("other divisor: other dim", !dim_eq(f, dim_floordiv(A, sub(H, K(1)), 3)));
  check("other numerator: other dim", !dim_eq(f, dim_floordiv(A, sub(T, K(1)), 2)));
  check_str("atom inside a product is parenthesised", S(mul(B, f)), "B*((H - 1) // 2)");
  DimSubst s = {0};
  subst_bind(A, &s, sH, K(28));
  check("H = 28 makes (H - 1) // 2 + 1 equal 14",
        dim_eq(dim_subst(A, add(f, K(1)), &s), K(14)));
  DimSubst s2 = {0};
  subst_bind(A, &s2, sH, mul(K(2), T));
  check("H = 2*T makes (H - 1) // 2 equal T - 1",
        dim_eq(dim_subst(A, f, &s2), sub(T, K(1))));
  check("(4*B + H) // 2 == 2*B + H // 2",
        dim_eq(dim_floordiv(A, add(mul(K(4), B), H), 2),
               add(mul(K(2), B), dim_floordiv(A, H, 2))));
  check("divisor must be positive", dim_floordiv(A, B, 0) == NULL);
}

int main(void) {
  A = arena_new();
  sB = sym_new(A, "B", (Span){0}, false);
  sT = sym_new(A, "T", (Span){0}, false);
  sH = sym_new(A, "H", (Span){0}, false);
  check("sym ids increase", sB->id < sT->id && sT->id < sH->id);
  B = dim_sym(A, sB);
  T = dim_sym(A, sT);
  H = dim_sym(A, sH);
  test_normal_forms();
  test_div();
  test_overflow();
  test_subst();
  test_floordiv();
  test_types();
  test_broadcast();
  test_values();
  arena_free(A);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
