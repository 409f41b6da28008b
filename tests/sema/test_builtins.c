// test_builtins.c — unit tests for the built-in ops (builtins*.c, ops.def):
// the op table, argument binding, every shape rule's good and bad cases,
// constant folding, FLOPs and data sources.
//
// Calls builtin_check with hand-made Values. Tensor arguments are written as
// types ("f32[B, 10]"); each argument gets a one-token source file of its
// own holding its name, so suggestions that quote the user's text
// ("reshape(y, [B])") can be checked too.
//
// Prints one "[PASS] name" / "[FAIL] name" line per check and a last line
// "N passed, N failed"; exits 1 on any failure.
#define _POSIX_C_SOURCE 200809L // mkdtemp
#include "unit.h"
#include "sema/builtins.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static Arena *A;
static DiagSink D;
static int diag_mark;   // first diagnostic of the current call
static Dim *last_flops; // c->flops of the last call

// ---- building values ------------------------------------------------------------------
static Span text_span(const char *text) {
  SrcFile *f = src_from_string(A, "t.model", text, strlen(text));
  return (Span){f, 0, (uint32_t)strlen(text)};
}

static Sym *syms[32];
static int nsyms;

static Sym *sym(const char *name) {
  for (int i = 0; i < nsyms; i++)
    if (strcmp(syms[i]->name, name) == 0) return syms[i];
  syms[nsyms] = sym_new(A, arena_strdup(A, name), (Span){0}, false);
  return syms[nsyms++];
}

// "B", "784", "B*T", "2*B" (products only)
static Dim *parse_dim(const char *s, size_t n) {
  Dim *d = dim_const(A, 1);
  while (n > 0) {
    size_t k = 0;
    while (k < n && s[k] != '*') k++;
    char tok[32];
    snprintf(tok, sizeof tok, "%.*s", (int)k, s);
    char *end;
    long long v = strtoll(tok, &end, 10);
    d = dim_mul(A, d, *end == 0 ? dim_const(A, v) : dim_sym(A, sym(tok)));
    s += k, n -= k;
    if (n) s++, n--;
  }
  return d;
}

// "f32[B, 10]" or "f32" -> a Type
static Type *parse_type(const char *s) {
  const char *br = strchr(s, '[');
  char dt[16];
  snprintf(dt, sizeof dt, "%.*s", br ? (int)(br - s) : (int)strlen(s), s);
  int dtype = dtype_from_name(dt);
  if (dtype < 0) abort();
  if (!br) return type_scalar(A, (DType)dtype);
  const char *p = br + 1;
  Dim *dims[16];
  int n = 0;
  while (*p && *p != ']') {
    while (*p == ' ' || *p == ',') p++;
    const char *e = p;
    while (*e && *e != ',' && *e != ']') e++;
    dims[n++] = parse_dim(p, (size_t)(e - p));
    p = e;
  }
  Type *t = type_new(A, (DType)dtype, n);
  for (int i = 0; i < n; i++) t->dims[i] = dims[i];
  return t;
}

static Value *named(Value *v, const char *text) {
  v->span = text_span(text);
  return v;
}
static Value *T(const char *ty) {
  return value_tensor(A, text_span("x"), parse_type(ty));
}
static Value *TN(const char *text, const char *ty) { return named(T(ty), text); }
static Value *I(int64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", (long long)v);
  return value_dim(A, text_span(arena_strdup(A, buf)), dim_const(A, v));
}
static Value *DIM(const char *s) {
  return value_dim(A, text_span(s), parse_dim(s, strlen(s)));
}
static Value *F(double f) { return value_float(A, text_span("f"), f); }
static Value *BOOLV(bool b) {
  Value *v = arena_alloc(A, sizeof *v);
  v->kind = V_BOOL;
  v->b = b;
  v->span = text_span(b ? "true" : "false");
  return v;
}
static Value *DT(const char *name) {
  Value *v = arena_alloc(A, sizeof *v);
  v->kind = V_DTYPE;
  v->dtype = dtype_from_name(name);
  v->span = text_span(name);
  return v;
}
static Value *STR(const char *s) {
  Value *v = arena_alloc(A, sizeof *v);
  v->kind = V_STR;
  v->str = s;
  v->span = text_span("\"...\"");
  return v;
}
// L(n, v1, .., vn)
static Value *L(int n, ...) {
  Value *v = arena_alloc(A, sizeof *v);
  v->kind = V_LIST;
  v->span = text_span("[...]");
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) vec_push(A, &v->items, va_arg(ap, Value *));
  va_end(ap);
  return v;
}

// ---- calling ------------------------------------------------------------------------------
static int nfresh;
static const char *last_fresh;
static Sym *fresh(void *env, const char *display, Span sp) {
  (void)env;
  nfresh++;
  last_fresh = display;
  return sym_new(A, display, sp, true);
}

static BuiltinCall make_call(const char *op, va_list ap) {
  BuiltinCall c = {0};
  c.arena = A;
  c.diags = &D;
  c.span = text_span("call");
  c.name_span = text_span(op);
  c.name = op;
  c.args = arena_alloc(A, sizeof(Value *) * 16);
  c.names = arena_alloc(A, sizeof(char *) * 16);
  c.name_spans = arena_alloc(A, sizeof(Span) * 16);
  c.fresh_sym = fresh;
  for (const char *nm; (nm = va_arg(ap, const char *));) {
    Value *v = va_arg(ap, Value *);
    c.names[c.nargs] = *nm ? nm : NULL;
    c.name_spans[c.nargs] = *nm ? text_span(nm) : (Span){0};
    c.args[c.nargs++] = v;
  }
  return c;
}

// call(op, name1, value1, name2, value2, ..., NULL); "" = positional
static Value *call(const char *op, ...) {
  va_list ap;
  va_start(ap, op);
  BuiltinCall c = make_call(op, ap);
  va_end(ap);
  diag_mark = D.diags.len;
  Value *v = builtin_check(&c);
  last_flops = c.flops;
  return v;
}

static int new_errors(void) {
  int n = 0;
  for (int i = diag_mark; i < D.diags.len; i++)
    n += VEC_AT(D.diags, Diag, i)->level == DIAG_ERROR;
  return n;
}

static void dump_diags(void) {
  for (int i = diag_mark; i < D.diags.len; i++) {
    Diag *d = VEC_AT(D.diags, Diag, i);
    printf("  %s: %s\n", d->level == DIAG_ERROR ? "error" : "note", d->msg);
  }
}

static const char *show(const Value *v) {
  if (!v) return "(null)";
  return v->kind == V_TENSOR ? type_str(A, v->type) : value_str(A, v);
}

// The call succeeded, reported nothing and gave `want`.
static void ok(const char *name, const Value *v, const char *want) {
  bool good = v && new_errors() == 0 && strcmp(show(v), want) == 0;
  if (!good) {
    printf("  got %s, want %s\n", show(v), want);
    dump_diags();
  }
  check(name, good);
}

// The call failed with exactly one error containing `msg`, and (if `note`)
// a note containing it.
static void err(const char *name, const Value *v, const char *msg, const char *note) {
  bool good = !v && new_errors() == 1 && D.diags.len > diag_mark &&
              strstr(VEC_AT(D.diags, Diag, diag_mark)->msg, msg);
  if (good && note) {
    good = false;
    for (int i = diag_mark + 1; i < D.diags.len; i++)
      if (strstr(VEC_AT(D.diags, Diag, i)->msg, note)) good = true;
  }
  if (!good) {
    printf("  got %s; want error \"%s\"%s%s\n", show(v), msg, note ? " + note " : "",
           note ? note : "");
    dump_diags();
  }
  check(name, good);
}

// The exact text of the first new error.
static void err_exact(const char *name, const Value *v, const char *msg) {
  bool good = !v && D.diags.len > diag_mark &&
              strcmp(VEC_AT(D.diags, Diag, diag_mark)->msg, msg) == 0;
  if (!good) {
    printf("  want \"%s\"\n", msg);
    dump_diags();
  }
  check(name, good);
}

static void flops(const char *name, const char *want) {
  const char *got = last_flops ? dim_str(A, last_flops) : "0";
  bool good = strcmp(got, want) == 0;
  if (!good) printf("  flops %s, want %s\n", got, want);
  check(name, good);
}

#define P "" // positional argument

// ---- the table ------------------------------------------------------------------------------
static void test_table(void) {
  int n;
  const char *const *names = builtin_names(&n);
  check("table size", n == BI_COUNT && n > 60);
  bool all = true;
  for (int op = 0; op < n; op++) {
    all &= builtin_lookup(names[op]) == op && builtin_exists(names[op]);
    // parameter counts in the signature match ops.def's min/max
    const char *sig = builtin_signature(A, op);
    int params = 0, req = 0, depth = 0;
    bool opt = false;
    for (const char *p = strchr(sig, '(') + 1; *p; p++) {
      if (*p == '[') depth++;
      if (*p == ']') depth--;
      if (*p == '=' && depth == 0) opt = true;
      if ((*p == ',' && depth == 0) || (*p == ')' && p[1] == 0)) {
        params++;
        req += !opt;
        opt = false;
      }
    }
    Value *dummy[8];
    (void)dummy;
    // Calling with zero arguments reports the expected range.
    char want[128];
    BuiltinCall c = {.arena = A, .diags = &D, .name = names[op], .args = (Value **)dummy};
    diag_mark = D.diags.len;
    builtin_check(&c);
    const char *msg = D.diags.len > diag_mark ? VEC_AT(D.diags, Diag, diag_mark)->msg : "";
    int lo = req, hi = params;
    if (lo == hi)
      snprintf(want, sizeof want, "%s takes %d argument%s, got 0", names[op], lo,
               lo == 1 ? "" : "s");
    else
      snprintf(want, sizeof want, "%s takes %d to %d arguments, got 0", names[op], lo, hi);
    if (!strstr(msg, want)) {
      printf("  %s: %s (want %s)\n", sig, msg, want);
      all = false;
    }
  }
  check("every op: lookup, signature arity == ops.def min/max", all);
  check("lookup unknown", builtin_lookup("softmaxx") == -1 && !builtin_exists("foo"));
  check("class", builtin_class(BI_MATMUL) == OC_MATMUL && builtin_class(BI_SUM) == OC_REDUCE);
  check("data sources", builtin_is_data_source("idx") && builtin_is_data_source("csv") &&
                            builtin_is_data_source("npy") && !builtin_is_data_source("sum") &&
                            !builtin_is_data_source("nope"));
  check("signature text", strcmp(builtin_signature(A, BI_SUM),
                                 "sum(x, dim = all, keepdim = false)") == 0);
}

// ---- binding ---------------------------------------------------------------------------------
static void test_binding(void) {
  Value *x = T("f32[B, 10]");
  ok("sum named dim", call("sum", P, x, "dim", I(1), NULL), "f32[B]");
  ok("sum named x", call("sum", "keepdim", BOOLV(true), "x", x, NULL), "f32[1, 1]");
  err_exact("too many", call("sum", P, x, P, I(1), P, BOOLV(false), P, I(0), NULL),
            "wrong number of arguments: sum takes 1 to 3 arguments, got 4");
  err_exact("too few", call("reshape", P, x, NULL),
            "wrong number of arguments: reshape takes 2 arguments, got 1");
  err_exact("too few 1", call("relu", NULL),
            "wrong number of arguments: relu takes 1 argument, got 0");
  err("unknown named, did you mean", call("sum", P, x, "keepdims", BOOLV(true), NULL),
      "sum has no argument named `keepdims`; did you mean `keepdim`?", "sum(x, dim = all");
  err("unknown named, nothing close", call("sum", P, x, "zzz", BOOLV(true), NULL),
      "sum has no argument named `zzz`", NULL);
  err("duplicate", call("sum", P, x, P, I(1), "dim", I(0), NULL),
      "argument `dim` of sum given twice", "first given here");
  err("positional after named", call("sum", "x", x, P, I(1), NULL),
      "positional argument after named arguments", NULL);
  err("missing required with enough args",
      call("slice", P, x, P, I(1), P, I(0), "step", I(2), NULL),
      "missing argument `end` in a call to slice", NULL);
  err_exact("wrong kind", call("sum", P, x, "dim", T("f32[B, 10]"), NULL),
            "argument `dim` of sum must be an integer or a list of integers, got f32[B, 10]");
  err_exact("wrong kind bool", call("sum", P, x, "keepdim", I(1), NULL),
            "argument `keepdim` of sum must be true or false, got integer 1");
  err("unknown function", call("frobnicate", P, x, NULL), "unknown function `frobnicate`", NULL);
  BuiltinCall c = {.arena = A, .diags = &D, .name = "relu", .nargs = 1,
                   .args = (Value *[]){NULL}};
  diag_mark = D.diags.len;
  check("NULL argument: silent failure", builtin_check(&c) == NULL && D.diags.len == diag_mark);
}

// ---- elementwise --------------------------------------------------------------------------------
static void test_elementwise(void) {
  Value *x = T("f32[B, 10]");
  ok("relu", call("relu", P, x, NULL), "f32[B, 10]");
  flops("relu flops", "10*B");
  ok("relu int", call("relu", P, T("i32[B]"), NULL), "i32[B]");
  ok("abs int", call("abs", P, T("i64[B]"), NULL), "i64[B]");
  err("abs bool", call("abs", P, T("bool[B]"), NULL), "abs expects a numeric tensor, got bool[B]",
      NULL);
  err("exp int", call("exp", P, TN("ids", "i32[B, 10]"), NULL),
      "exp expects a float tensor, got i32[B, 10]", "use cast(ids, f32)");
  ok("gelu f16", call("gelu", P, T("f16[B, T, 64]"), NULL), "f16[B, T, 64]");
  const char *fl[] = {"log", "sqrt", "rsqrt", "sigmoid", "tanh", "silu", "exp", "gelu"};
  bool all = true;
  for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++) {
    Value *r = call(fl[k], P, T("bf16[B]"), NULL);
    all &= r && strcmp(show(r), "bf16[B]") == 0;
    all &= call(fl[k], P, T("i64[B]"), NULL) == NULL;
  }
  check("float-only unary ops", all);
  // scalar math on constants folds
  ok("sqrt(64)", call("sqrt", P, I(64), NULL), "float 8");
  ok("exp(0)", call("exp", P, F(0.0), NULL), "float 1");
  ok("rsqrt(4)", call("rsqrt", P, F(4.0), NULL), "float 0.5");
  ok("log(1)", call("log", P, I(1), NULL), "float 0");
  ok("neg(3) stays integer", call("neg", P, I(3), NULL), "integer -3");
  ok("abs(-3) stays integer", call("abs", P, I(-3), NULL), "integer 3");
  ok("relu(-2.5)", call("relu", P, F(-2.5), NULL), "float 0");

  // activations with scalar parameters: numbers, defaults from ops.def, the
  // IR op's attributes a and b; constants fold with the graph op's formula
  ok("softplus", call("softplus", P, x, NULL), "f32[B, 10]");
  ok("leaky_relu slope", call("leaky_relu", P, x, P, F(0.1), NULL), "f32[B, 10]");
  ok("hardtanh named bounds", call("hardtanh", P, x, "hi", F(0.5), "lo", I(0), NULL), "f32[B, 10]");
  ok("clamp", call("clamp", P, x, P, F(-1.0), P, I(3), NULL), "f32[B, 10]");
  ok("elu, log_sigmoid", call("elu", P, call("log_sigmoid", P, x, NULL), NULL), "f32[B, 10]");
  err("clamp needs both bounds", call("clamp", P, x, P, F(-1.0), NULL),
      "wrong number of arguments: clamp takes 3 arguments, got 2", "clamp(x, lo, hi)");
  err("leaky_relu slope is a number", call("leaky_relu", P, x, P, T("f32[B, 10]"), NULL),
      "argument `slope` of leaky_relu must be a constant number, got f32[B, 10]", NULL);
  err("elu on ints", call("elu", P, T("i64[B]"), NULL), "elu expects a float tensor, got i64[B]", NULL);
  ok("leaky_relu(-2.0, 0.1) folds", call("leaky_relu", P, F(-2.0), P, F(0.1), NULL), "float -0.2");
  ok("clamp(5, 0, 2) folds", call("clamp", P, F(5.0), P, I(0), P, I(2), NULL), "float 2");
  ok("hardtanh(-3) folds to its default bound", call("hardtanh", P, F(-3.0), NULL), "float -1");
  ok("softplus(0) folds", call("softplus", P, F(0.0), NULL), "float 0.693147");
  ok("softplus above its threshold is x", call("softplus", P, F(30.0), NULL), "float 30");
  err("sqrt(-1)", call("sqrt", P, I(-1), NULL), "sqrt on these constants has no finite value",
      NULL);
  err("log(0)", call("log", P, F(0), NULL), "no finite value", NULL);
  err("sqrt of a symbolic size", call("sqrt", P, DIM("B"), NULL),
      "sqrt expects a float tensor, got the integer constant B", NULL);
  err("unary on a list", call("relu", P, L(1, I(1)), NULL),
      "argument `x` of relu must be a tensor or a number, got list [1]", NULL);

  // binary
  ok("add same", call("add", P, x, P, T("f32[B, 10]"), NULL), "f32[B, 10]");
  flops("add flops", "10*B");
  ok("add rank extension", call("add", P, x, P, T("f32[10]"), NULL), "f32[B, 10]");
  ok("mul by float literal", call("mul", P, x, P, F(2.0), NULL), "f32[B, 10]");
  ok("mul by int literal", call("mul", P, T("f64[B]"), P, I(2), NULL), "f64[B]");
  ok("int tensor * int literal", call("mul", P, T("i32[B]"), P, I(2), NULL), "i32[B]");
  ok("literal on the left", call("sub", P, F(1.0), P, T("bf16[B]"), NULL), "bf16[B]");
  err("int tensor * float literal", call("mul", P, TN("n", "i32[B]"), P, F(0.5), NULL),
      "dtype mismatch: i32[B] and the float constant 0.5; mlc never converts implicitly",
      "cast(n, f32)");
  err_exact("dtype mismatch", call("add", P, x, P, TN("h", "f64[B, 10]"), NULL),
            "dtype mismatch: f32[B, 10] and f64[B, 10]; mlc never converts implicitly, "
            "use cast(h, f32)");
  err_exact("broadcast mismatch", call("add", P, x, P, T("f32[B, 5]"), NULL),
            "cannot broadcast f32[B, 10] and f32[B, 5]: dim 1 is 10 vs 5");
  err_exact("broadcast mismatch, ranks differ", call("add", P, x, P, T("f32[5]"), NULL),
            "cannot broadcast f32[B, 10] and f32[5]: dim 1 is 10 vs 5");
  err("symbols never pair", call("add", P, T("f32[B]"), P, T("f32[T]"), NULL),
      "dim 0 is B vs T", NULL);
  err("broadcast surprise", call("sub", P, TN("a", "f32[B, 1]"), P, TN("b", "f32[B]"), NULL),
      "broadcasting f32[B, 1] with f32[B] would expand the 1 in dim 1 to B and give f32[B, B]; "
      "mlc refuses to broadcast a size-1 dim while also adding leading dims",
      "if you meant elementwise, make the ranks equal: reshape(a, [B]); if you meant an outer "
      "product, use broadcast_to(b, [B, B])");
  ok("equal-rank outer product", call("mul", P, T("f32[B, 1]"), P, T("f32[1, N]"), NULL),
     "f32[B, N]");
  err("div on ints", call("div", P, T("i32[B]"), P, T("i32[B]"), NULL),
      "div expects a float tensor, got i32[B]", NULL);
  ok("div floats", call("div", P, x, P, F(255.0), NULL), "f32[B, 10]");
  err("add bools", call("add", P, T("bool[B]"), P, T("bool[B]"), NULL),
      "add expects numeric tensors, got bool[B]", NULL);
  ok("pow(x, 2)", call("pow", P, x, P, I(2), NULL), "f32[B, 10]");
  ok("pow(2, 3) folds", call("pow", P, I(2), P, I(3), NULL), "float 8");
  ok("add(2, 3) folds to integer", call("add", P, I(2), P, I(3), NULL), "integer 5");
  ok("mul(B, 7) folds to a dim", call("mul", P, DIM("B"), P, I(7), NULL), "integer 7*B");
  ok("div(1, 4) folds to float", call("div", P, I(1), P, I(4), NULL), "float 0.25");
  ok("maximum(2, 5) folds", call("maximum", P, I(2), P, I(5), NULL), "integer 5");
  err("div(1, 0)", call("div", P, I(1), P, I(0), NULL), "no finite value", NULL);
  ok("maximum", call("maximum", P, x, P, F(0.0), NULL), "f32[B, 10]");
  ok("minimum", call("minimum", P, T("i64[B]"), P, T("i64[B]"), NULL), "i64[B]");

  // comparisons and logic
  ok("lt", call("lt", P, x, P, F(0.5), NULL), "bool[B, 10]");
  ok("eq ints", call("eq", P, T("i64[B]"), P, T("i64[B]"), NULL), "bool[B]");
  ok("eq bools", call("eq", P, T("bool[B]"), P, BOOLV(true), NULL), "bool[B]");
  err("lt bools", call("lt", P, T("bool[B]"), P, T("bool[B]"), NULL),
      "lt expects numeric tensors, got bool[B]", NULL);
  err("compare dtype mismatch", call("gt", P, T("f32[B]"), P, T("i32[B]"), NULL),
      "dtype mismatch: f32[B] and i32[B]", NULL);
  ok("lt(2, 3) folds", call("lt", P, I(2), P, I(3), NULL), "bool true");
  ok("logical_and", call("logical_and", P, T("bool[B, 1]"), P, T("bool[1, T]"), NULL),
     "bool[B, T]");
  ok("logical_not", call("logical_not", P, T("bool[B]"), NULL), "bool[B]");
  ok("logical_or folds", call("logical_or", P, BOOLV(false), P, BOOLV(true), NULL), "bool true");
  err("logical_and on floats", call("logical_and", P, TN("m", "f32[B]"), P, T("bool[B]"), NULL),
      "logical_and expects bool operands, got f32[B]", "m != 0");
  ok("where", call("where", P, T("bool[T, T]"), P, T("f32[B, T, T]"), P, F(-1e9), NULL),
     "f32[B, T, T]");
  ok("where broadcast", call("where", P, T("bool[B, 1]"), P, T("f32[B, 10]"), P, T("f32[10]"),
                             NULL),
     "f32[B, 10]");
  err("where cond float", call("where", P, T("f32[B]"), P, T("f32[B]"), P, T("f32[B]"), NULL),
      "where expects a bool condition, got f32[B]", NULL);
  err("where dtype mismatch", call("where", P, T("bool[B]"), P, T("f32[B]"), P, T("f64[B]"), NULL),
      "dtype mismatch: f32[B] and f64[B]", NULL);
  err("where shape mismatch", call("where", P, T("bool[T]"), P, T("f32[B]"), P, T("f32[B]"), NULL),
      "cannot broadcast bool[T] and f32[B]", NULL);
}

// ---- reductions ----------------------------------------------------------------------------------
static void test_reduce(void) {
  Value *x = T("f32[B, 10]");
  ok("sum all", call("sum", P, x, NULL), "f32");
  flops("sum flops", "10*B");
  ok("sum dim 1", call("sum", P, x, P, I(1), NULL), "f32[B]");
  ok("sum dim -1 keepdim", call("sum", P, x, P, I(-1), "keepdim", BOOLV(true), NULL), "f32[B, 1]");
  ok("sum list", call("sum", P, T("f32[B, C, H, W]"), P, L(2, I(2), I(3)), NULL), "f32[B, C]");
  ok("sum list keepdim", call("sum", P, T("f32[B, C, H, W]"), "dim", L(2, I(-1), I(-2)),
                              "keepdim", BOOLV(true), NULL),
     "f32[B, C, 1, 1]");
  ok("sum ints", call("sum", P, T("i32[B, 10]"), NULL), "i32");
  err_exact("dim out of range", call("sum", P, x, P, I(2), NULL),
            "dim 2 is out of range for f32[B, 10] (rank 2); valid dims are -2 to 1");
  err("dim out of range negative", call("mean", P, x, P, I(-3), NULL), "dim -3 is out of range",
      NULL);
  err("dim of a scalar", call("sum", P, T("f32"), P, I(0), NULL),
      "dim 0 is out of range for f32 (rank 0): a scalar has no dims", NULL);
  err("dim twice", call("sum", P, x, P, L(2, I(1), I(-1)), NULL), "dim 1 appears twice in sum",
      NULL);
  err("mean on ints", call("mean", P, T("i32[B]"), NULL), "mean expects a float tensor, got i32[B]",
      NULL);
  err("sum on bool", call("sum", P, TN("mask", "bool[B]"), NULL),
      "sum expects a numeric tensor, got bool[B]", "cast(mask, i32)");
  ok("mean", call("mean", P, x, P, I(0), NULL), "f32[10]");
  ok("argmax", call("argmax", P, x, "dim", I(1), NULL), "i64[B]");
  ok("argmax all", call("argmax", P, x, NULL), "i64");
  ok("argmax keepdim", call("argmax", P, x, P, I(1), P, BOOLV(true), NULL), "i64[B, 1]");
  err("argmax list", call("argmax", P, x, P, L(1, I(1)), NULL),
      "argument `dim` of argmax must be an integer, got list [1]", NULL);
  ok("max reduce", call("max", P, x, P, I(1), NULL), "f32[B]");
  ok("min reduce all", call("min", P, T("i64[N]"), NULL), "i64");
  ok("max elementwise", call("max", P, x, P, T("f32[B, 10]"), NULL), "f32[B, 10]");
  ok("max with float constant", call("max", P, x, P, F(0.0), NULL), "f32[B, 10]");
  err("max elementwise keepdim", call("max", P, x, P, T("f32[10]"), P, BOOLV(true), NULL),
      "keepdim applies to max over a dim; max(a, b) is elementwise", NULL);
  ok("softmax", call("softmax", P, x, NULL), "f32[B, 10]");
  flops("softmax flops", "50*B");
  ok("log_softmax dim 0", call("log_softmax", P, x, P, I(0), NULL), "f32[B, 10]");
  err("softmax int", call("softmax", P, T("i32[B, 10]"), NULL), "softmax expects a float tensor",
      NULL);
  err("softmax dim range", call("softmax", P, x, "dim", I(5), NULL),
      "dim 5 is out of range for f32[B, 10]", NULL);
}

// ---- views ------------------------------------------------------------------------------------------
static void test_views(void) {
  Value *img = T("f32[B, 28, 28]");
  ok("reshape", call("reshape", P, img, P, L(2, DIM("B"), I(784)), NULL), "f32[B, 784]");
  flops("reshape is free", "0");
  ok("reshape infer", call("reshape", P, img, P, L(2, I(-1), I(784)), NULL), "f32[B, 784]");
  ok("reshape infer middle", call("reshape", P, T("f32[B, T, 64]"), P,
                                  L(3, DIM("B"), I(-1), I(8)), NULL),
     "f32[B, 8*T, 8]");
  ok("reshape B*T", call("reshape", P, T("f32[B, T, V]"), P, L(2, I(-1), DIM("V")), NULL),
     "f32[B*T, V]");
  err_exact("reshape count", call("reshape", P, img, P, L(2, DIM("B"), I(700)), NULL),
            "reshape cannot turn f32[B, 28, 28] (784*B elements) into [B, 700] (700*B elements)");
  err("reshape infer not divisible", call("reshape", P, img, P, L(2, I(-1), I(700)), NULL),
      "reshape cannot infer the -1 in [-1, 700]: f32[B, 28, 28] has 784*B elements, not a "
      "multiple of 700",
      NULL);
  err("reshape two -1", call("reshape", P, img, P, L(3, I(-1), I(-1), I(28)), NULL),
      "reshape can infer only one size; this is a second -1", NULL);
  err("reshape zero", call("reshape", P, img, P, L(2, I(0), I(784)), NULL),
      "sizes in reshape must be positive (or -1 to infer one), got 0", NULL);
  err("reshape float size", call("reshape", P, img, P, L(2, F(2.5), I(784)), NULL),
      "sizes in reshape must be integers, got float 2.5", NULL);
  err("reshape not a list", call("reshape", P, img, P, I(784), NULL),
      "argument `shape` of reshape must be a list of sizes", NULL);
  ok("flatten", call("flatten", P, T("f32[B, 64, 7, 7]"), NULL), "f32[B, 3136]");
  ok("flatten range", call("flatten", P, T("f32[B, T, H, D]"), "start_dim", I(0), "end_dim",
                           I(1), NULL),
     "f32[B*T, H, D]");
  err("flatten rank 1", call("flatten", P, T("f32[B]"), NULL), "dim 1 is out of range", NULL);
  err("flatten start after end", call("flatten", P, img, P, I(2), P, I(1), NULL),
      "flatten start_dim 2 comes after end_dim 1", NULL);
  ok("unsqueeze", call("unsqueeze", P, img, P, I(1), NULL), "f32[B, 1, 28, 28]");
  ok("unsqueeze end", call("unsqueeze", P, img, P, I(-1), NULL), "f32[B, 28, 28, 1]");
  err("unsqueeze range", call("unsqueeze", P, img, P, I(4), NULL),
      "dim 4 is out of range for unsqueeze of f32[B, 28, 28] (rank 3); valid dims are -4 to 3",
      NULL);
  ok("squeeze", call("squeeze", P, T("f32[B, 1]"), P, I(1), NULL), "f32[B]");
  err("squeeze non-1", call("squeeze", P, T("f32[B, 10]"), P, I(1), NULL),
      "squeeze needs dim 1 of f32[B, 10] to be 1, but it is 10", NULL);
  ok("transpose", call("transpose", P, T("f32[B, T, C]"), P, I(1), P, I(2), NULL), "f32[B, C, T]");
  ok("transpose negative", call("transpose", P, T("f32[M, N]"), P, I(-1), P, I(-2), NULL),
     "f32[N, M]");
  ok("permute", call("permute", P, T("f32[B, H, W, C]"), P, L(4, I(0), I(3), I(1), I(2)), NULL),
     "f32[B, C, H, W]");
  err("permute not a permutation", call("permute", P, T("f32[B, C, H]"), P,
                                        L(3, I(0), I(0), I(1)), NULL),
      "permute needs a permutation of 0 to 2; dim 0 appears twice in [0, 0, 1]", NULL);
  err("permute length", call("permute", P, T("f32[B, C, H]"), P, L(2, I(0), I(1)), NULL),
      "permute of f32[B, C, H] needs 3 dims, got 2", NULL);
  // slice
  ok("slice", call("slice", P, T("f32[B, 10]"), P, I(1), P, I(2), P, I(5), NULL), "f32[B, 3]");
  ok("slice negative", call("slice", P, T("f32[B, 10]"), P, I(1), P, I(-3), P, I(10), NULL),
     "f32[B, 3]");
  ok("slice negative end", call("slice", P, T("f32[B, 10]"), P, I(1), P, I(0), P, I(-1), NULL),
     "f32[B, 9]");
  ok("slice step", call("slice", P, T("f32[B, 10]"), P, I(1), P, I(0), P, I(10), P, I(3), NULL),
     "f32[B, 4]");
  err("slice out of range", call("slice", P, T("f32[B, 10]"), P, I(1), P, I(0), P, I(11), NULL),
      "slice end 11 is out of range for dim 1 of f32[B, 10] (size 10)", NULL);
  err("slice negative out of range",
      call("slice", P, T("f32[B, 10]"), P, I(1), P, I(-11), P, I(5), NULL),
      "slice start -11 is out of range", NULL);
  err("slice empty", call("slice", P, T("f32[B, 10]"), P, I(1), P, I(5), P, I(5), NULL),
      "slice 5:5 of dim 1 of f32[B, 10] is empty", NULL);
  err("slice step 0", call("slice", P, T("f32[B, 10]"), P, I(1), P, I(0), P, I(5), P, I(0), NULL),
      "slice step must be positive, got 0", NULL);
  ok("slice symbolic", call("slice", P, T("f32[B, T, C]"), P, I(1), P, I(0), P, DIM("T"), NULL),
     "f32[B, T, C]");
  ok("slice symbolic negative", call("slice", P, T("f32[B, T]"), P, I(1), P, I(-1), P, DIM("T"),
                                     NULL),
     "f32[B, 1]");
  ok("slice symbolic prefix", call("slice", P, T("f32[B, T]"), P, I(1), P, I(1), P, DIM("T"), NULL),
     "f32[B, T - 1]");
  nfresh = 0;
  Value *r = call("slice", P, T("f32[B, T]"), P, I(1), P, I(0), P, DIM("T"), P, I(2), NULL);
  check("slice symbolic step gives a floor-division size",
        r && nfresh == 0 && strcmp(show(r), "f32[B, (T + 1) // 2]") == 0);
  ok("slice symbolic step exact", call("slice", P, T("f32[B, 2*T]"), P, I(1), P, I(0), P,
                                       DIM("2*T"), P, I(2), NULL),
     "f32[B, T]");
  // concat
  ok("concat", call("concat", P, L(2, T("f32[B, 10]"), T("f32[B, 5]")), "dim", I(1), NULL),
     "f32[B, 15]");
  ok("concat dim 0", call("concat", P, L(3, T("f32[B, 4]"), T("f32[T, 4]"), T("f32[2, 4]")), NULL),
     "f32[B + T + 2, 4]");
  err("concat dtype", call("concat", P, L(2, T("f32[B, 10]"), T("f64[B, 5]")), P, I(1), NULL),
      "concat needs tensors of one dtype and rank: f32[B, 10] and f64[B, 5]", NULL);
  err("concat other dims", call("concat", P, L(2, T("f32[B, 10]"), T("f32[T, 5]")), P, I(1), NULL),
      "concat along dim 1 needs the other dims equal: dim 0 is B in f32[B, 10] but T in f32[T, 5]",
      NULL);
  err("concat non-tensor", call("concat", P, L(2, T("f32[B]"), I(3)), NULL),
      "concat takes a list of tensors, got integer 3", NULL);
  err("concat empty", call("concat", P, L(0), NULL),
      "argument `tensors` of concat must be a non-empty list of tensors", NULL);
  // broadcast_to
  ok("broadcast_to", call("broadcast_to", P, T("f32[B]"), P, L(2, DIM("B"), DIM("B")), NULL),
     "f32[B, B]");
  ok("broadcast_to expands 1", call("broadcast_to", P, T("f32[B, 1]"), P,
                                    L(3, I(4), DIM("B"), I(7)), NULL),
     "f32[4, B, 7]");
  err("broadcast_to mismatch", call("broadcast_to", P, T("f32[B, 3]"), P, L(2, DIM("B"), I(4)),
                                    NULL),
      "cannot broadcast_to f32[B, 3] to [B, 4]: dim 1 is 3 vs 4", NULL);
  err("broadcast_to lower rank", call("broadcast_to", P, T("f32[B, 3]"), P, L(1, I(3)), NULL),
      "broadcast_to cannot lower the rank of f32[B, 3] to 1", NULL);
}

// ---- matmul -----------------------------------------------------------------------------------------
static void test_matmul(void) {
  ok("matmul 2d", call("matmul", P, T("f32[B, 784]"), P, T("f32[784, 256]"), NULL), "f32[B, 256]");
  flops("matmul flops", "401408*B");
  ok("matmul batched", call("matmul", P, T("f32[B, H, T, D]"), P, T("f32[B, H, D, T]"), NULL),
     "f32[B, H, T, T]");
  flops("batched flops", "2*B*T^2*H*D"); // symbols in creation order
  ok("matmul batch broadcast", call("matmul", P, T("f32[B, T, C]"), P, T("f32[C, V]"), NULL),
     "f32[B, T, V]");
  ok("matmul batch 1 expands", call("matmul", P, T("f32[1, M, K]"), P, T("f32[B, K, N]"), NULL),
     "f32[B, M, N]");
  ok("vector @ matrix", call("matmul", P, T("f32[K]"), P, T("f32[K, N]"), NULL), "f32[N]");
  ok("matrix @ vector", call("matmul", P, T("f32[M, K]"), P, T("f32[K]"), NULL), "f32[M]");
  ok("vector @ vector", call("matmul", P, T("f32[K]"), P, T("f32[K]"), NULL), "f32");
  ok("batched @ vector", call("matmul", P, T("f32[B, M, K]"), P, T("f32[K]"), NULL), "f32[B, M]");
  err_exact("inner mismatch", call("matmul", P, T("f32[B, 8192]"), P, T("f32[4096, 256]"), NULL),
            "mat1 and mat2 shapes cannot be multiplied (f32[B, 8192] @ f32[4096, 256]): "
            "inner dims 8192 and 4096 differ");
  err("rank 0", call("matmul", P, T("f32"), P, T("f32[4, 4]"), NULL),
      "matmul needs tensors of rank 1 or more, got f32", NULL);
  err("matmul dtype", call("matmul", P, T("f32[B, 4]"), P, T("f16[4, 4]"), NULL),
      "dtype mismatch: f32[B, 4] and f16[4, 4]", NULL);
  err("matmul batch mismatch", call("matmul", P, T("f32[B, 4, 5]"), P, T("f32[T, 5, 6]"), NULL),
      "cannot broadcast the batch dims f32[B] and f32[T]: dim 0 is B vs T", NULL);
  err("matmul constant", call("matmul", P, F(2.0), P, T("f32[4, 4]"), NULL),
      "argument `a` of matmul must be a tensor, got float 2", NULL);
}

// ---- conv and pooling -----------------------------------------------------------------------------------
static void test_conv(void) {
  Value *x = T("f32[B, 1, 28, 28]"), *w = T("f32[32, 1, 3, 3]");
  ok("conv2d", call("conv2d", P, x, P, w, NULL), "f32[B, 32, 26, 26]");
  flops("conv2d flops", "389376*B");
  ok("conv2d bias padding", call("conv2d", P, x, P, w, "bias", T("f32[32]"), "padding", I(1), NULL),
     "f32[B, 32, 28, 28]");
  flops("conv2d flops with bias", "476672*B");
  ok("conv2d stride 2", call("conv2d", P, x, P, w, "stride", I(2), "padding", I(1), NULL),
     "f32[B, 32, 14, 14]");
  ok("conv2d pair stride", call("conv2d", P, x, P, w, "stride", L(2, I(1), I(2)), NULL),
     "f32[B, 32, 26, 13]");
  ok("conv2d dilation", call("conv2d", P, x, P, w, "dilation", I(2), NULL), "f32[B, 32, 24, 24]");
  ok("conv2d groups", call("conv2d", P, T("f32[B, 32, 8, 8]"), P, T("f32[64, 8, 3, 3]"), "groups",
                           I(4), NULL),
     "f32[B, 64, 6, 6]");
  ok("conv2d symbolic H", call("conv2d", P, T("f32[B, 3, H, W]"), P, T("f32[16, 3, 3, 3]"), NULL),
     "f32[B, 16, H - 2, W - 2]");
  ok("conv2d symbolic exact stride", call("conv2d", P, T("f32[B, 3, 2*H, 2*W]"), P,
                                          T("f32[16, 3, 2, 2]"), "stride", I(2), NULL),
     "f32[B, 16, H, W]");
  nfresh = 0;
  Value *r = call("conv2d", P, T("f32[B, 3, H, H]"), P, T("f32[16, 3, 3, 3]"), "stride", I(2), NULL);
  check("conv2d symbolic stride: floor-division size",
        r && nfresh == 0 && strcmp(show(r), "f32[B, 16, (H - 3) // 2 + 1, (H - 3) // 2 + 1]") == 0);
  // The same window over the same extent is the same dim (one floor atom).
  Value *r2 = call("max_pool2d", P, T("f32[B, 3, H, H]"), P, I(3), "stride", I(2), NULL);
  check("pool and conv share the floor-division size",
        r && r2 && dim_eq(r->type->dims[2], r2->type->dims[2]));
  err("conv2d 3-D input",
      call("conv2d", P, TN("img", "f32[B, 28, 28]"), P, w, NULL),
      "conv2d expects a 4-D input [batch, channels, height, width], got f32[B, 28, 28] (3-D)",
      "unsqueeze(img, 1) gives f32[B, 1, 28, 28]");
  err("conv2d flat input", call("conv2d", P, TN("x", "f32[B, 784]"), P, w, NULL),
      "got f32[B, 784] (2-D)", "reshape(x, [B, 1, 28, 28])");
  err("conv2d weight rank", call("conv2d", P, x, P, T("f32[32, 9]"), NULL),
      "conv2d expects a 4-D weight [out_channels, in_channels/groups, kh, kw], got f32[32, 9]",
      NULL);
  err("conv2d channels", call("conv2d", P, T("f32[B, 3, 32, 32]"), P, w, NULL),
      "conv2d input f32[B, 3, 32, 32] has 3 channels but the weight f32[32, 1, 3, 3] expects 1",
      NULL);
  err("conv2d groups divide", call("conv2d", P, T("f32[B, 6, 8, 8]"), P, T("f32[16, 2, 3, 3]"),
                                   "groups", I(3), NULL),
      "conv2d groups 3 must divide out_channels 16", NULL);
  err("conv2d bias", call("conv2d", P, x, P, w, P, T("f32[16]"), NULL),
      "conv2d bias must be [32] for weight f32[32, 1, 3, 3], got f32[16]", NULL);
  err("conv2d int", call("conv2d", P, T("i32[B, 1, 28, 28]"), P, w, NULL),
      "conv2d expects a float tensor", NULL);
  err("conv2d output too small", call("conv2d", P, T("f32[B, 1, 2, 2]"), P, w, NULL),
      "conv2d output height would be 0: input height 2, kernel 3, stride 1, padding 0, dilation 1",
      NULL);
  err("conv2d stride 0", call("conv2d", P, x, P, w, "stride", I(0), NULL),
      "stride of conv2d must be at least 1, got 0", NULL);
  err("conv2d padding list length", call("conv2d", P, x, P, w, "padding", L(3, I(1), I(1), I(1)),
                                         NULL),
      "argument `padding` of conv2d must be an integer or a list of two integers", NULL);

  ok("max_pool2d", call("max_pool2d", P, T("f32[B, 32, 28, 28]"), P, I(2), NULL),
     "f32[B, 32, 14, 14]");
  flops("pool flops", "25088*B");
  ok("avg_pool2d stride padding", call("avg_pool2d", P, T("f32[B, 8, 7, 7]"), P, I(3), "stride",
                                       I(2), "padding", I(1), NULL),
     "f32[B, 8, 4, 4]");
  ok("max_pool2d ints", call("max_pool2d", P, T("i32[B, 1, 4, 4]"), P, I(2), NULL),
     "i32[B, 1, 2, 2]");
  err("avg_pool2d ints", call("avg_pool2d", P, T("i32[B, 1, 4, 4]"), P, I(2), NULL),
      "avg_pool2d expects a float tensor", NULL);
  err("pool padding", call("max_pool2d", P, T("f32[B, 1, 8, 8]"), P, I(2), "padding", I(2), NULL),
      "max_pool2d padding 2 is more than half the kernel size 2", NULL);
  err("pool 3-D", call("max_pool2d", P, T("f32[B, 8, 8]"), P, I(2), NULL),
      "max_pool2d expects a 4-D input", NULL);
  err("pool too big", call("max_pool2d", P, T("f32[B, 1, 2, 2]"), P, I(3), NULL),
      "max_pool2d output height would be 0", NULL);
}

// ---- layers -----------------------------------------------------------------------------------------------
static void test_layers(void) {
  Value *v16 = T("f32[16]");
  ok("batch_norm 4-D", call("batch_norm", P, T("f32[B, 16, 8, 8]"), P, v16, P, v16, P, v16, P, v16,
                            NULL),
     "f32[B, 16, 8, 8]");
  flops("batch_norm flops", "8192*B");
  ok("batch_norm 2-D", call("batch_norm", P, T("f32[B, 16]"), P, v16, P, v16, P, v16, P, v16,
                            "momentum", F(0.01), "eps", F(1e-3), NULL),
     "f32[B, 16]");
  err("batch_norm vector", call("batch_norm", P, T("f32[B, 16]"), P, v16, P, T("f32[8]"), P, v16,
                                P, v16, NULL),
      "batch_norm bias must be [16] for input f32[B, 16], got f32[8]", NULL);
  err("batch_norm rank", call("batch_norm", P, T("f32[B]"), P, v16, P, v16, P, v16, P, v16, NULL),
      "batch_norm expects [N, C], [N, C, L] or [N, C, H, W], got f32[B] (1-D)", NULL);
  err("batch_norm momentum", call("batch_norm", P, T("f32[B, 16]"), P, v16, P, v16, P, v16, P, v16,
                                  "momentum", F(1.5), NULL),
      "batch_norm momentum must be in [0, 1], got 1.5", NULL);
  ok("layer_norm", call("layer_norm", P, T("f32[B, T, 256]"), P, T("f32[256]"), P, T("f32[256]"),
                        NULL),
     "f32[B, T, 256]");
  ok("layer_norm 2 dims", call("layer_norm", P, T("f32[B, T, 256]"), P, T("f32[T, 256]"), P,
                               T("f32[T, 256]"), NULL),
     "f32[B, T, 256]");
  err("layer_norm mismatch", call("layer_norm", P, T("f32[B, T, 256]"), P, T("f32[512]"), P,
                                  T("f32[512]"), NULL),
      "layer_norm weight f32[512] does not match the trailing dims of f32[B, T, 256]",
      "it must be f32[256]");
  err("layer_norm eps", call("layer_norm", P, T("f32[B, 4]"), P, T("f32[4]"), P, T("f32[4]"), P,
                             F(0.0), NULL),
      "layer_norm eps must be positive, got 0", NULL);
  ok("dropout", call("dropout", P, T("f32[B, 256]"), P, F(0.1), NULL), "f32[B, 256]");
  ok("dropout default", call("dropout", P, T("f32[B, 256]"), NULL), "f32[B, 256]");
  err("dropout p = 1", call("dropout", P, T("f32[B]"), "p", F(1.0), NULL),
      "dropout p must be in [0, 1), got 1", NULL);
  err("dropout p tensor", call("dropout", P, T("f32[B]"), "p", T("f32"), NULL),
      "argument `p` of dropout must be a constant number, got f32", NULL);
  ok("embedding", call("embedding", P, T("i64[B, T]"), P, T("f32[V, 64]"), NULL), "f32[B, T, 64]");
  flops("embedding is free", "0");
  err("embedding float indices", call("embedding", P, T("f32[B, T]"), P, T("f32[V, 64]"), NULL),
      "embedding expects an i32 or i64 tensor, got f32[B, T]", NULL);
  err("embedding weight rank", call("embedding", P, T("i32[B]"), P, T("f32[V]"), NULL),
      "embedding expects a 2-D weight [num_embeddings, dim], got f32[V]", NULL);
}

// ---- losses ------------------------------------------------------------------------------------------------
static void test_losses(void) {
  Value *lg = TN("logits", "f32[B, 10]");
  ok("cross_entropy", call("cross_entropy", P, lg, P, T("i32[B]"), NULL), "f32");
  flops("cross_entropy flops", "50*B");
  ok("cross_entropy smoothing", call("cross_entropy", P, lg, P, T("i64[B]"), "label_smoothing",
                                     F(0.1), NULL),
     "f32");
  err_exact("cross_entropy [B, 1] target",
            call("cross_entropy", P, lg, P, TN("y", "i32[B, 1]"), NULL),
            "cross_entropy expects class indices of shape [N] for logits [N, C] = f32[B, 10], "
            "got i32[B, 1]");
  err("cross_entropy [B, 1] note", call("cross_entropy", P, lg, P, TN("y", "i32[B, 1]"), NULL),
      "got i32[B, 1]", "drop the trailing 1: reshape(y, [B])");
  err("cross_entropy one-hot float",
      call("cross_entropy", P, lg, P, TN("y", "f32[B, 10]"), NULL),
      "cross_entropy takes integer class indices (i32/i64), got f32[B, 10]: one-hot targets are "
      "not accepted",
      "use argmax(y, dim = 1) to get indices");
  err("cross_entropy one-hot int", call("cross_entropy", P, lg, P, TN("y", "i64[B, 10]"), NULL),
      "got i64[B, 10]: one-hot targets are not accepted", "argmax(y, dim = 1)");
  err("cross_entropy float indices", call("cross_entropy", P, lg, P, TN("y", "f32[B]"), NULL),
      "cross_entropy takes integer class indices (i32/i64), got f32[B]", "cast(y, i64)");
  err("cross_entropy batch mismatch", call("cross_entropy", P, lg, P, T("i32[T]"), NULL),
      "expects class indices of shape [N] for logits [N, C] = f32[B, 10], got i32[T]", NULL);
  err("cross_entropy rank-3 logits",
      call("cross_entropy", P, TN("logits", "f32[B, T, V]"), P, TN("targets", "i64[B, T]"), NULL),
      "cross_entropy expects logits [N, C], got f32[B, T, V] (3-D)",
      "reshape(logits, [B*T, V]) and reshape(targets, [B*T])");
  err("cross_entropy int logits", call("cross_entropy", P, T("i32[B, 10]"), P, T("i32[B]"), NULL),
      "cross_entropy expects a float tensor", NULL);
  err("cross_entropy smoothing range", call("cross_entropy", P, lg, P, T("i32[B]"),
                                            "label_smoothing", F(1.5), NULL),
      "label_smoothing must be in [0, 1]", NULL);
  ok("cross_entropy smoothing 1 (torch allows it)",
     call("cross_entropy", P, lg, P, T("i32[B]"), "label_smoothing", F(1.0), NULL), "f32");
  ok("mse", call("mse", P, T("f32[B, 1]"), P, T("f32[B, 1]"), NULL), "f32");
  flops("mse flops", "3*B");
  err("mse [B, 1] vs [B]", call("mse", P, TN("pred", "f32[B, 1]"), P, TN("y", "f32[B]"), NULL),
      "mse needs pred and target of the same shape, got f32[B, 1] and f32[B]; losses never "
      "broadcast",
      "drop the trailing 1: reshape(pred, [B])");
  err("bce [B] vs [B, 1]", call("bce_with_logits", P, TN("z", "f32[B]"), P, TN("t", "f32[B, 1]"),
                                NULL),
      "bce_with_logits needs logits and target of the same shape", "reshape(t, [B])");
  err("mse dtype", call("mse", P, T("f32[B]"), P, T("f64[B]"), NULL), "dtype mismatch", NULL);
  err("bce int target", call("bce_with_logits", P, T("f32[B]"), P, T("i32[B]"), NULL),
      "bce_with_logits expects a float tensor, got i32[B]", NULL);
}

// ---- casts and constructors ---------------------------------------------------------------------------------------
static void test_misc(void) {
  ok("cast", call("cast", P, T("i32[B, 10]"), P, DT("f32"), NULL), "f32[B, 10]");
  ok("cast constant", call("cast", P, I(2), P, DT("f16"), NULL), "f16");
  err("cast bad dtype", call("cast", P, T("i32[B]"), P, I(3), NULL),
      "argument `dtype` of cast must be a dtype", NULL);
  err("cast u8", call("cast", P, T("i32[B]"), P, DT("u8"), NULL),
      "u8 is a data-file dtype, not a model dtype", NULL);
  ok("stop_gradient", call("stop_gradient", P, T("f32[B]"), NULL), "f32[B]");
  ok("arange", call("arange", P, DIM("T"), NULL), "i64[T]");
  ok("arange const", call("arange", P, I(5), NULL), "i64[5]");
  err("arange 0", call("arange", P, I(0), NULL), "arange needs a positive size, got 0", NULL);
  err("arange float", call("arange", P, F(2.0), NULL),
      "argument `n` of arange must be an integer, got float 2", NULL);
  ok("causal_mask", call("causal_mask", P, DIM("T"), NULL), "bool[T, T]");
  ok("zeros", call("zeros", P, L(2, DIM("B"), I(10)), NULL), "f32[B, 10]");
  ok("ones i64", call("ones", P, L(1, I(3)), "dtype", DT("i64"), NULL), "i64[3]");
  ok("full", call("full", P, L(2, DIM("T"), DIM("T")), P, F(-1e9), NULL), "f32[T, T]");
  ok("full bool", call("full", P, L(1, I(4)), P, BOOLV(true), P, DT("bool"), NULL), "bool[4]");
  err("full value dtype", call("full", P, L(1, I(4)), P, F(0.5), "dtype", DT("i32"), NULL),
      "full value float 0.5 does not fit dtype i32", NULL);
  err("zeros -1", call("zeros", P, L(1, I(-1)), NULL), "sizes in zeros must be positive, got -1",
      NULL);
}

// ---- data sources ----------------------------------------------------------------------------------------------
static BuiltinCall data_call(const char *op, ...) {
  va_list ap;
  va_start(ap, op);
  BuiltinCall c = make_call(op, ap);
  va_end(ap);
  diag_mark = D.diags.len;
  return c;
}

static void write_file(const char *path, const void *data, size_t n, bool gz) {
  if (gz) {
    gzFile f = gzopen(path, "wb");
    gzwrite(f, data, (unsigned)n);
    gzclose(f);
  } else {
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, n, f);
    fclose(f);
  }
}

static void test_data(void) {
  char dir[] = "/tmp/mlc_test_builtins_XXXXXX";
  if (!mkdtemp(dir)) {
    check("mkdtemp", false);
    return;
  }
  const char *img = arena_printf(A, "%s/img.idx.gz", dir);
  const char *lab = arena_printf(A, "%s/lab.idx", dir);
  const char *bad = arena_printf(A, "%s/bad.idx", dir);
  const char *npy = arena_printf(A, "%s/x.npy", dir);
  const char *csv = arena_printf(A, "%s/d.csv", dir);
  unsigned char h3[16] = {0, 0, 0x08, 3, 0, 0, 0x0E, 0x60, 0, 0, 0, 28, 0, 0, 0, 28};
  write_file(img, h3, sizeof h3, true); // 3680 x 28 x 28 u8, gzip'd
  unsigned char h1[8] = {0, 0, 0x08, 1, 0, 0, 0x0E, 0x60};
  write_file(lab, h1, sizeof h1, false);
  write_file(bad, "PK\3\4junk", 8, false);
  const char npyhdr[] = "\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (100, 3, 4), }                    \n";
  write_file(npy, npyhdr, sizeof npyhdr - 1, false);
  const char csvtext[] = "label,\"a\",b,c\n1,2,3,4\n";
  write_file(csv, csvtext, sizeof csvtext - 1, false);

  DataSource ds;
  BuiltinCall c = data_call("idx", P, STR(img), "scale", F(1.0 / 255), NULL);
  bool okk = builtin_data_source(&c, &ds);
  check("idx3 gzip header", okk && ds.known && ds.kind == DS_IDX && ds.dtype == DT_U8 &&
                                ds.rank == 2 && ds.dims[0] == 28 && ds.dims[1] == 28 &&
                                ds.record_elems == 784 && ds.nrecords == 3680 &&
                                ds.scale > 0.0039 && ds.scale < 0.004);
  c = data_call("idx", P, STR(lab), NULL);
  okk = builtin_data_source(&c, &ds);
  check("idx1 labels: scalar u8 records", okk && ds.known && ds.rank == 0 &&
                                              ds.record_elems == 1 && ds.dtype == DT_U8 &&
                                              ds.nrecords == 3680);
  c = data_call("idx", P, STR("/nonexistent/train.idx"), NULL);
  okk = builtin_data_source(&c, &ds);
  check("idx missing file: unknown, no error",
        okk && !ds.known && ds.rank == -1 && D.diags.len == diag_mark && !ds.resolved);
  c = data_call("idx", P, STR(bad), NULL);
  okk = builtin_data_source(&c, &ds);
  err("idx bad magic", okk ? (Value *)&ds : NULL, "is not an IDX file", NULL);
  c = data_call("idx", P, STR(dir), NULL);
  okk = builtin_data_source(&c, &ds);
  err("idx directory", okk ? (Value *)&ds : NULL, "is a directory", NULL);
  c = data_call("idx", P, I(3), NULL);
  okk = builtin_data_source(&c, &ds);
  err("idx path kind", okk ? (Value *)&ds : NULL,
      "argument `path` of idx must be a non-empty string, got integer 3", NULL);
  c = data_call("idx", P, STR(img), "scale", F(0.0), NULL);
  okk = builtin_data_source(&c, &ds);
  err("idx scale 0", okk ? (Value *)&ds : NULL, "idx scale must be finite and non-zero", NULL);

  // relative to the .model file's folder
  Value *rel = STR("lab.idx");
  rel->span.file = src_from_string(A, arena_printf(A, "%s/m.model", dir), "\"lab.idx\"", 9);
  c = data_call("idx", P, rel, NULL);
  okk = builtin_data_source(&c, &ds);
  check("idx path relative to the model file", okk && ds.known && ds.resolved &&
                                                   strstr(ds.resolved, "/lab.idx"));

  c = data_call("npy", P, STR(npy), NULL);
  okk = builtin_data_source(&c, &ds);
  check("npy header", okk && ds.known && ds.kind == DS_NPY && ds.dtype == DT_F32 &&
                          ds.rank == 2 && ds.dims[0] == 3 && ds.dims[1] == 4 &&
                          ds.nrecords == 100 && ds.record_elems == 12);
  c = data_call("npy", P, STR(bad), NULL);
  okk = builtin_data_source(&c, &ds);
  err("npy bad magic", okk ? (Value *)&ds : NULL, "is not a .npy file", NULL);

  c = data_call("csv", P, STR(csv), "cols", L(2, I(1), I(2)), NULL);
  okk = builtin_data_source(&c, &ds);
  check("csv cols by index", okk && ds.known && ds.rank == 1 && ds.dims[0] == 2 &&
                                 ds.dtype == DT_F32 && ds.ncols == 2 && ds.col_index[1] == 2);
  c = data_call("csv", P, STR(csv), "cols", L(1, STR("label")), "dtype", DT("i32"), NULL);
  okk = builtin_data_source(&c, &ds);
  check("csv col by name: scalar records", okk && ds.known && ds.rank == 0 &&
                                               ds.col_index[0] == 0 && ds.dtype == DT_I32);
  c = data_call("csv", P, STR(csv), NULL);
  okk = builtin_data_source(&c, &ds);
  check("csv width from the first row", okk && ds.rank == 1 && ds.dims[0] == 4);
  c = data_call("csv", P, STR(csv), "cols", L(1, STR("lable")), NULL);
  okk = builtin_data_source(&c, &ds);
  err("csv unknown column", okk ? (Value *)&ds : NULL,
      "column \"lable\" is not in the header", NULL);
  check("csv unknown column suggests", D.diags.len > diag_mark &&
            strstr(VEC_AT(D.diags, Diag, diag_mark)->msg, "did you mean \"label\"?"));
  c = data_call("csv", P, STR(csv), "cols", L(1, STR("a")), "header", BOOLV(false), NULL);
  okk = builtin_data_source(&c, &ds);
  err("csv names without header", okk ? (Value *)&ds : NULL,
      "csv column names need a header row", NULL);

  Value *v = call("idx", P, STR(img), NULL);
  check("builtin_check on a data source gives a string",
        v && v->kind == V_STR && strcmp(v->str, img) == 0);

  const char *fm = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  if (access(fm, R_OK) == 0) {
    c = data_call("idx", P, STR(fm), NULL);
    okk = builtin_data_source(&c, &ds);
    check("fashion-mnist train images", okk && ds.known && ds.nrecords == 60000 &&
                                            ds.rank == 2 && ds.record_elems == 784);
  }
  unlink(img), unlink(lab), unlink(bad), unlink(npy), unlink(csv);
  rmdir(dir);
}

int main(void) {
  A = arena_new();
  diag_init(&D, A);
  D.max_errors = 0;
  test_table();
  test_binding();
  test_elementwise();
  test_reduce();
  test_views();
  test_matmul();
  test_conv();
  test_layers();
  test_losses();
  test_misc();
  test_data();
  arena_free(A);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
