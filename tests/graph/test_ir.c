// test_ir.c — unit tests for the graph IR: the op table, construction and
// hash-consing (ir.c), the builder's error policy (builder.c), shape rules
// (ir_shape.c), the text form both ways (ir_print.c, ir_parse.c), the
// verifier (ir_verify.c) and the DOT dump.
//
// Usage: test_ir [DIR]   (DIR defaults to tests/graph/ir, relative to the repo root)
// Every DIR/*.ir file is parsed and verified: a valid file must pass, print
// back byte-identical to its text, and round-trip print -> parse -> print
// with and without locations; a bad_*.ir file starts with
//   ; expect error: SUBSTRING
// and must be rejected by the parser or the verifier with an error whose
// message contains SUBSTRING.
//
// Prints one "[PASS] name" / "[FAIL] name" line per check and a last line
// "N passed, N failed"; exits 1 on any failure.
#include "unit.h"
#include "graph/builder.h"
#include "graph/ir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Arena *A;

static char *print_module(IrModule *m, unsigned flags) {
  StrBuf b = {0};
  ir_print_module(&b, m, flags);
  char *s = arena_strdup(A, b.data ? b.data : "");
  sb_free(&b);
  return s;
}

static IrModule *parse_text(const char *path, const char *text, DiagSink *ds) {
  SrcFile *src = src_from_string(A, path, text, strlen(text));
  return ir_parse(A, src, ds);
}

// print -> parse -> print must be byte-identical (flags: with/without locs).
static bool round_trips(IrModule *m, unsigned flags, const char *what) {
  char *once = print_module(m, flags);
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *back = parse_text(what, once, &ds);
  if (!back) {
    diag_print(&ds, stdout);
    return false;
  }
  char *twice = print_module(back, flags);
  bool ok = strcmp(once, twice) == 0;
  if (!ok) printf("  first print:\n%s  second print:\n%s", once, twice);
  return ok;
}

static bool diags_contain(const DiagSink *ds, const char *sub) {
  for (int i = 0; i < ds->diags.len; i++) {
    Diag *d = VEC_AT(ds->diags, Diag, i);
    if (d->level == DIAG_ERROR && strstr(d->msg, sub)) return true;
  }
  return false;
}

// ---- op table -----------------------------------------------------------------------------
static void test_op_table(void) {
  bool ok = true;
  for (int i = 0; i < IR_OP_COUNT; i++) {
    if (ir_op_lookup(ir_op_name((IrOp)i)) != i) ok = false;
    if (!(ir_op_flags((IrOp)i) & IRF_IMPURE) && (ir_op_attrs((IrOp)i) & (1u << IRA_SEED))) ok = false;
    if ((ir_op_flags((IrOp)i) & IRF_IMPURE) && !(ir_op_attrs((IrOp)i) & (1u << IRA_SEED))) ok = false;
  }
  check("op names unique and looked up", ok);
  static const char *const surface[] = {
      "matmul", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "lt", "eq", "where",
      "exp", "log", "sqrt", "rsqrt", "abs", "neg", "relu", "gelu", "sigmoid", "tanh", "silu",
      "sum", "mean", "max", "min", "argmax", "softmax", "log_softmax", "reshape", "transpose",
      "slice", "concat", "broadcast_to", "conv2d", "max_pool2d", "avg_pool2d", "batch_norm",
      "layer_norm", "dropout", "embedding", "cross_entropy", "mse", "bce_with_logits", "cast",
      "stop_gradient", "arange", "causal_mask", "const", "reduce_to", "relu_grad",
      "conv2d_grad_input", "conv2d_grad_weight", "max_pool2d_grad", "avg_pool2d_grad",
      "embedding_grad", "layer_norm_grad", "batch_norm_grad", "softmax_grad",
      "log_softmax_grad", "cross_entropy_grad", "dropout_mask", "param", "buffer", "input"};
  ok = true;
  for (size_t i = 0; i < sizeof surface / sizeof *surface; i++)
    if (ir_op_lookup(surface[i]) < 0) {
      printf("  missing op %s\n", surface[i]);
      ok = false;
    }
  check("op table covers the first release's ops", ok);
}

// ---- building a graph through the C API ---------------------------------------------------------
static Type *ty(DType dt, int rank, Dim **dims) {
  Type *t = type_new(A, dt, rank);
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  return t;
}

static Dim *K(int64_t v) { return dim_const(A, v); }

static IrNode *build(IrFunc *f, IrOp op, IrNode **in, int nin, IrAttrs *as, Type *given, Span sp) {
  char err[256];
  IrNode *n = ir_build(f, op, in, nin, as, given, sp, err, sizeof err);
  if (!n) printf("  ir_build %s: %s\n", ir_op_name(op), err);
  return n;
}

// A small MLP forward: relu(x @ w.T + b), dropout, sum over dim 1. Spans
// point into a fake source file so printing with locations has something
// to say.
static IrModule *build_mlp(IrFunc **fout, IrNode **dup_check) {
  static const char text[] = "model M {\n  forward(x) { return relu(x @ w.T + b) }\n}\n";
  SrcFile *src = src_from_string(A, "m.model", text, sizeof text - 1);
  Span sp = {src, 12, 30};
  IrModule *m = ir_module_new(A, "M");
  ir_module_add_param(m, "fc1.w", ty(DT_F32, 2, (Dim *[]){K(256), K(784)}), IRP_PARAM, true, sp);
  ir_module_add_param(m, "fc1.b", ty(DT_F32, 1, (Dim *[]){K(256)}), IRP_PARAM, false, sp);
  IrFunc *f = ir_func_new(m, "forward");
  Dim *B = dim_sym(A, ir_sym(m, f, "B"));
  IrNode *x = ir_input(f, "x", ty(DT_F32, 2, (Dim *[]){B, K(784)}), sp);
  IrNode *w = ir_param_ref(f, "fc1.w", sp), *b = ir_param_ref(f, "fc1.b", sp);
  IrAttrs perm = {0};
  ir_attr_set_ints(A, &perm, IRA_PERM, (int64_t[]){1, 0}, 2);
  IrNode *wt = build(f, IR_TRANSPOSE, &w, 1, &perm, NULL, sp);
  IrNode *h = build(f, IR_MATMUL, (IrNode *[]){x, wt}, 2, NULL, NULL, sp);
  h = build(f, IR_ADD, (IrNode *[]){h, b}, 2, NULL, NULL, sp);
  h = build(f, IR_RELU, &h, 1, NULL, NULL, sp);
  IrAttrs dp = {0};
  ir_attr_set_float(A, &dp, IRA_P, 0.1);
  IrNode *d1 = build(f, IR_DROPOUT, &h, 1, &dp, NULL, sp);
  IrNode *d2 = build(f, IR_DROPOUT, &h, 1, &dp, NULL, sp);
  IrNode *s = build(f, IR_ADD, (IrNode *[]){d1, d2}, 2, NULL, NULL, (Span){0});
  IrAttrs red = {0};
  ir_attr_set_ints(A, &red, IRA_DIMS, (int64_t[]){1}, 1);
  ir_attr_set_int(A, &red, IRA_KEEPDIM, 0);
  IrNode *out = build(f, IR_SUM, &s, 1, &red, NULL, sp);
  ir_return(f, out, NULL);
  dup_check[0] = wt;
  dup_check[1] = build(f, IR_TRANSPOSE, &w, 1, &perm, NULL, sp);
  dup_check[2] = d1;
  dup_check[3] = d2;
  *fout = f;
  return m;
}

static void test_build(void) {
  IrFunc *f;
  IrNode *d[4];
  IrModule *m = build_mlp(&f, d);
  check("hash-consing merges equal pure nodes", d[0] && d[0] == d[1]);
  check("hash-consing keeps dropouts apart", d[2] && d[3] && d[2] != d[3]);
  int64_t s1 = 0, s2 = 0;
  ir_attr_int(&d[2]->attrs, IRA_SEED, &s1);
  ir_attr_int(&d[3]->attrs, IRA_SEED, &s2);
  check("impure nodes get distinct seeds", s1 > 0 && s2 > 0 && s1 != s2);
  check("body has 10 nodes", f->nodes.len == 10);
  DiagSink ds;
  diag_init(&ds, A);
  bool ok = ir_verify(m, &ds);
  if (!ok) diag_print(&ds, stdout);
  check("built MLP verifies", ok);
  char *text = print_module(m, 0);
  check("printed form has the transpose",
        strstr(text, "%2 = transpose(%0) {perm = [1, 0]} : f32[784, 256]\n") != NULL);
  check("printed form has the matmul", strstr(text, "%3 = matmul(%x, %2) : f32[B, 256]\n") != NULL);
  check("round trip without locations", round_trips(m, 0, "built.ir"));
  char *with = print_module(m, IR_PRINT_LOCS);
  check("printed form has locations", strstr(with, "loc(m.model:2:3)") != NULL);
  check("round trip with locations", round_trips(m, IR_PRINT_LOCS, "built_locs.ir"));
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  ir_dot(f, mem);
  fclose(mem);
  check("dot dump has nodes and edges",
        buf && strstr(buf, "digraph \"forward\"") && strstr(buf, "matmul") && strstr(buf, "a0 -> n3"));
  free(buf);
  // A pass that rewires an operand to a later node makes a cycle; the
  // verifier must catch it.
  IrNode *relu = VEC_AT(f->nodes, IrNode, 5), *later = VEC_AT(f->nodes, IrNode, 9);
  IrNode *saved = relu->in[0];
  relu->in[0] = later;
  diag_init(&ds, A);
  check("verifier catches a use before definition (cycle)",
        !ir_verify(m, &ds) && diags_contain(&ds, "operand 0 is not defined before its use"));
  relu->in[0] = saved;
}

// ---- shape rules through ir_build ----------------------------------------------------------------
static void test_rules(void) {
  IrModule *m = ir_module_new(A, "R");
  IrFunc *f = ir_func_new(m, "f");
  Dim *B = dim_sym(A, ir_sym(m, f, "B"));
  IrNode *x = ir_input(f, "x", ty(DT_F32, 2, (Dim *[]){B, K(784)}), (Span){0});
  IrNode *w = ir_input(f, "w", ty(DT_F32, 2, (Dim *[]){K(256), K(10)}), (Span){0});
  char err[256];
  IrNode *bad = ir_build(f, IR_MATMUL, (IrNode *[]){x, w}, 2, NULL, NULL, (Span){0}, err, sizeof err);
  check("matmul inner-dim mismatch refused", !bad && strcmp(err, "inner dims 784 and 256 differ") == 0);
  // A builder with a DiagSink (lowering's) reports a refused node as a
  // located user error, records it, and goes on with an unchecked node.
  DiagSink ds;
  diag_init(&ds, A);
  bool failed = false;
  IrBuilder bl = ir_builder(f, "test");
  bl.diags = &ds;
  bl.failed = &failed;
  IrNode *kept = ir_mk(&bl, IR_MATMUL, (IrNode *[]){x, w}, 2, NULL, NULL);
  check("a builder with diags reports a refused node and goes on",
        kept && failed && ds.nerrors == 1 &&
            diags_contain(&ds, "matmul does not fit the sizes it is given here: inner dims 784 "
                               "and 256 differ"));
  IrNode *img = ir_input(f, "img", ty(DT_F32, 4, (Dim *[]){B, K(1), K(28), K(28)}), (Span){0});
  IrNode *k = ir_input(f, "k", ty(DT_F32, 4, (Dim *[]){K(8), K(1), K(3), K(3)}), (Span){0});
  IrAttrs ca = {0};
  ir_attr_set_ints(A, &ca, IRA_STRIDE, (int64_t[]){2, 2}, 2);
  ir_attr_set_ints(A, &ca, IRA_PADDING, (int64_t[]){1, 1}, 2);
  ir_attr_set_ints(A, &ca, IRA_DILATION, (int64_t[]){1, 1}, 2);
  ir_attr_set_int(A, &ca, IRA_GROUPS, 1);
  IrNode *c = build(f, IR_CONV2D, (IrNode *[]){img, k}, 2, &ca, NULL, (Span){0});
  check("conv2d stride 2 pad 1: 28 -> 14",
        c && strcmp(type_str(A, c->type), "f32[B, 8, 14, 14]") == 0);
  IrNode *none = ir_build(f, IR_CONV2D, (IrNode *[]){img, k}, 2, NULL, NULL, (Span){0}, err, sizeof err);
  check("missing attribute refused", !none && strstr(err, "missing attribute") != NULL);
  IrAttrs ks = {0};
  ir_attr_set_ints(A, &ks, IRA_DIMS, (int64_t[]){1}, 1);
  ir_attr_set_int(A, &ks, IRA_KEEPDIM, 1);
  IrNode *am = build(f, IR_ARGMAX, &x, 1, &ks, NULL, (Span){0});
  check("argmax keepdim gives i64[B, 1]", am && strcmp(type_str(A, am->type), "i64[B, 1]") == 0);
}

// Dim expressions in any spelling parse to the normal form dim_str prints.
static void test_dim_syntax(void) {
  static const char text[] =
      "module D\n"
      "func f(%x: f32[B*(T + 1), (2 + 3)*4, -(1 - B) + 1, 2*T^2/T, T*T]) -> () {\n"
      "  return\n"
      "}\n";
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *m = parse_text("dims.ir", text, &ds);
  char *out = m ? print_module(m, 0) : "";
  bool ok = strstr(out, "%x: f32[B*T + B, 20, B, 2*T, T^2]") != NULL;
  if (!ok) {
    printf("  got:\n%s", out);
    diag_print(&ds, stdout);
  }
  check("dim expressions parse to normal form", ok);
  m = parse_text("inexact.ir", "module D\nfunc f(%x: f32[B/2]) -> () {\n  return\n}\n", &ds);
  check("inexact dim division refused", !m && diags_contain(&ds, "does not divide exactly"));
}

// ---- files --------------------------------------------------------------------------------------------
static char *first_line_expect(const char *text) {
  static const char tag[] = "; expect error: ";
  if (strncmp(text, tag, sizeof tag - 1) != 0) return NULL;
  const char *s = text + sizeof tag - 1, *e = strchr(s, '\n');
  return arena_strndup(A, s, e ? (size_t)(e - s) : strlen(s));
}

static void run_bad(const char *path, SrcFile *src) {
  char *want = first_line_expect(src->text);
  char *name = arena_printf(A, "%s rejected", path);
  if (!want) {
    printf("  %s: first line must be '; expect error: SUBSTRING'\n", path);
    check(name, false);
    return;
  }
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *m = ir_parse(A, src, &ds);
  if (m) ir_verify(m, &ds);
  bool ok = ds.nerrors > 0 && diags_contain(&ds, want);
  if (!ok) {
    printf("  want an error containing \"%s\", got:\n", want);
    diag_print(&ds, stdout);
  }
  check(name, ok);
}

// The file without its whole-line `;` comments (the printer has none).
static char *strip_comment_lines(const char *text) {
  StrBuf b = {0};
  for (const char *s = text; *s;) {
    const char *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
    if (*s != ';') {
      char *line = arena_strndup(A, s, n);
      sb_puts(&b, line);
    }
    s += n;
  }
  char *r = arena_strdup(A, b.data ? b.data : "");
  sb_free(&b);
  return r;
}

static void run_good(const char *path, SrcFile *src) {
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *m = ir_parse(A, src, &ds);
  bool ok = m && ir_verify(m, &ds);
  if (!ok) diag_print(&ds, stdout);
  check(arena_printf(A, "%s parses and verifies", path), ok);
  if (!ok) return;
  char *printed = print_module(m, IR_PRINT_LOCS);
  bool same = strcmp(printed, strip_comment_lines(src->text)) == 0;
  if (!same) printf("  printed:\n%s", printed);
  check(arena_printf(A, "%s prints back as written", path), same);
  check(arena_printf(A, "%s round-trips without locations", path), round_trips(m, 0, path));
  check(arena_printf(A, "%s round-trips with locations", path), round_trips(m, IR_PRINT_LOCS, path));
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    printf("  cannot open %s\n", dir);
    check("tests/graph/ir directory readable", false);
    return;
  }
  char *names[512];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 512;) {
    size_t len = strlen(e->d_name);
    if (len > 3 && strcmp(e->d_name + len - 3, ".ir") == 0) names[n++] = arena_strdup(A, e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  check("tests/graph/ir has cases", n > 0);
  for (int i = 0; i < n; i++) {
    char *path = arena_printf(A, "%s/%s", dir, names[i]);
    const char *why = NULL;
    SrcFile *src = src_read(A, path, &why);
    if (!src) {
      printf("  %s: %s\n", path, why);
      check(path, false);
    } else if (strncmp(names[i], "bad_", 4) == 0) {
      run_bad(path, src);
    } else {
      run_good(path, src);
    }
  }
}

int main(int argc, char **argv) {
  A = arena_new();
  test_op_table();
  test_build();
  test_rules();
  test_dim_syntax();
  test_files(argc > 1 ? argv[1] : "tests/graph/ir");
  printf("%d passed, %d failed\n", npass, nfail);
  arena_free(A);
  return nfail ? 1 : 0;
}
