// test_interp.c — unit tests for the reference interpreter (interp.c,
// interp_nn.c).
//
// Usage: test_interp [ROOT]   (ROOT: the repository root, default ".")
//
//   - hand-computed cases: small IR functions written inline with their
//     arguments and expected outputs, at least one per op, run in f64;
//   - PyTorch cases: every ROOT/tests/graph/interp/NAME.ir with NAME.vals (written
//     by tests/graph/interp/gen_torch.py), run in f64 and compared at 1e-9
//     relative;
//   - f32 vs f64 agreement of a composite graph on random inputs;
//   - dropout masks: deterministic per seed, values 0 or 1/(1-p);
//   - rand, randn: moments of 10^5 draws, determinism, dropout's uniform;
//   - errors: symbolic binding mismatches, missing state, bad indices.
//
// A case's values use the .vals format, one tensor a line:
//   in DTYPE RANK DIM.. : V..        argument (signature order)
//   param PATH DTYPE RANK DIM.. : V..  model state by path
//   out DTYPE RANK DIM.. : V..       expected output (in order)
//
// Prints "[PASS] name" / "[FAIL] name" per check and "N passed, N failed";
// exits 1 on any failure.
#include "unit.h"
#include "graph/interp.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Arena *A;

// ---- cases: IR text + values ---------------------------------------------------------------
typedef struct Case {
  IrModule *m;
  IrFunc *f;
  int nin, nout, nparam;
  Tensor *in[16], *out[16], *pval[16];
  const char *ppath[16];
} Case;

// The file's text, NUL-terminated, in the test's arena (NULL: unreadable).
static char *read_all(const char *path) {
  SrcFile *f = src_read(A, path, NULL);
  return f ? arena_strndup(A, f->text, f->len) : NULL;
}

// One "KIND [PATH] DTYPE RANK DIM.. : V.." line; returns the tensor.
static Tensor *parse_tensor(char **p, char *path, size_t pathlen) {
  char kind[16], dt[16];
  int used = 0;
  if (sscanf(*p, "%15s%n", kind, &used) != 1) return NULL;
  *p += used;
  if (strcmp(kind, "param") == 0) {
    if (sscanf(*p, "%255s%n", path, &used) != 1 || pathlen < 256) return NULL;
    *p += used;
  } else {
    snprintf(path, pathlen, "%s", kind);
  }
  int rank;
  if (sscanf(*p, "%15s %d%n", dt, &rank, &used) != 2 || rank < 0 || rank > INTERP_MAX_RANK) return NULL;
  *p += used;
  int64_t dims[INTERP_MAX_RANK];
  for (int i = 0; i < rank; i++) dims[i] = strtoll(*p, p, 10);
  while (**p == ' ') (*p)++;
  if (**p != ':') return NULL;
  (*p)++;
  Tensor *t = interp_tensor_new((DType)dtype_from_name(dt), rank, dims);
  for (int64_t e = 0; t && e < t->numel; e++) t->data[e] = strtod(*p, p);
  while (**p && **p != '\n') (*p)++;
  return t;
}

static bool load_vals(Case *c, const char *vals) {
  char *p = arena_strdup(A, vals), path[256];
  while (*p) {
    while (*p == '\n' || *p == ' ') p++;
    if (!*p) break;
    bool is_in = strncmp(p, "in ", 3) == 0, is_out = strncmp(p, "out ", 4) == 0;
    Tensor *t = parse_tensor(&p, path, sizeof path);
    if (!t) return false;
    if (is_in) c->in[c->nin++] = t;
    else if (is_out) c->out[c->nout++] = t;
    else {
      c->ppath[c->nparam] = arena_strdup(A, path);
      c->pval[c->nparam++] = t;
    }
  }
  return true;
}

static void case_free(Case *c) {
  for (int i = 0; i < c->nin; i++) interp_tensor_free(c->in[i]);
  for (int i = 0; i < c->nout; i++) interp_tensor_free(c->out[i]);
  for (int i = 0; i < c->nparam; i++) interp_tensor_free(c->pval[i]);
}

static bool load_case(Case *c, const char *name, const char *ir, const char *vals) {
  memset(c, 0, sizeof *c);
  DiagSink ds;
  diag_init(&ds, A);
  c->m = ir_parse(A, src_from_string(A, name, ir, strlen(ir)), &ds);
  if (!c->m || !ir_verify(c->m, &ds)) {
    diag_print(&ds, stdout);
    return false;
  }
  c->f = ir_module_find_func(c->m, "f");
  if (!c->f) c->f = VEC_AT(c->m->funcs, IrFunc, 0);
  if (!load_vals(c, vals)) {
    printf("  bad values for %s\n", name);
    return false;
  }
  return true;
}

// The first error a run reported, or "".
static const char *first_error(const DiagSink *d) {
  for (int i = 0; i < d->diags.len; i++)
    if (VEC_AT(d->diags, Diag, i)->level == DIAG_ERROR) return VEC_AT(d->diags, Diag, i)->msg;
  return "";
}

// Runs f of the case; on failure err holds the interpreter's message.
static int run_func(Case *c, IrFunc *f, InterpMode mode, int nin, Tensor **got, uint64_t rng, char *err,
                    size_t errlen) {
  InterpParams ps = {c->nparam, c->ppath, c->pval, rng};
  DiagSink d;
  diag_init(&d, A);
  int rc = interp_run(c->m, f, mode, c->in, nin, &ps, got, &d);
  snprintf(err, errlen, "%s", first_error(&d));
  return rc;
}

static int run_case(Case *c, InterpMode mode, Tensor **got, uint64_t rng, char *err, size_t errlen) {
  return run_func(c, c->f, mode, c->nin, got, rng, err, errlen);
}

static bool close_to(double got, double want, double rel, double abs_tol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= abs_tol + rel * fabs(want);
}

static bool same_tensor(const Tensor *got, const Tensor *want, double rel, double abs_tol) {
  if (got->rank != want->rank) {
    printf("  rank %d, want %d\n", got->rank, want->rank);
    return false;
  }
  for (int i = 0; i < got->rank; i++)
    if (got->dims[i] != want->dims[i]) {
      printf("  dim %d is %lld, want %lld\n", i, (long long)got->dims[i], (long long)want->dims[i]);
      return false;
    }
  for (int64_t e = 0; e < got->numel; e++)
    if (!close_to(got->data[e], want->data[e], rel, abs_tol)) {
      printf("  element %lld is %.17g, want %.17g\n", (long long)e, got->data[e], want->data[e]);
      return false;
    }
  return true;
}

// Runs a case in f64 and compares every output.
static void expect(const char *name, const char *ir, const char *vals, double rel) {
  Case c;
  Tensor *got[16] = {0};
  char err[512];
  bool ok = load_case(&c, name, ir, vals);
  if (ok && run_case(&c, INTERP_F64, got, 0, err, sizeof err) != 0) {
    printf("  %s\n", err);
    ok = false;
  }
  for (int i = 0; ok && i < c.nout; i++) ok = same_tensor(got[i], c.out[i], rel, 1e-12);
  check(name, ok);
  for (int i = 0; i < c.nout; i++) interp_tensor_free(got[i]);
  case_free(&c);
}

// Runs a case and expects an error containing `sub`.
static void expect_error(const char *name, const char *ir, const char *vals, const char *sub) {
  Case c;
  Tensor *got[16] = {0};
  char err[512] = "";
  bool ok = load_case(&c, name, ir, vals) && run_case(&c, INTERP_F64, got, 0, err, sizeof err) != 0;
  if (ok && !strstr(err, sub)) {
    printf("  error \"%s\" lacks \"%s\"\n", err, sub);
    ok = false;
  }
  check(name, ok);
  case_free(&c);
}

// ---- hand-computed cases ------------------------------------------------------------------------
#define F1(sig, res, body) "module T\nfunc f(" sig ") -> (" res ") {\n" body "\n}\n"

static void test_plumbing(void) {
  expect("const/arange/causal_mask",
         F1("", "f32[2, 2], i64[4], bool[3, 3]",
            "%0 = const {value = 2.5} : f32[2, 2]\n%1 = arange : i64[4]\n"
            "%2 = causal_mask : bool[3, 3]\nreturn %0, %1, %2"),
         "out f32 2 2 2 : 2.5 2.5 2.5 2.5\nout i64 1 4 : 0 1 2 3\n"
         "out bool 2 3 3 : 1 0 0 1 1 0 1 1 1\n", 0);
  expect("param/buffer",
         "module T\nparam fc.w : f64[2] trainable\nbuffer bn.m : f64[2]\n"
         "func f() -> (f64[2]) {\n%0 = param fc.w : f64[2]\n%1 = buffer bn.m : f64[2]\n"
         "%2 = add(%0, %1) : f64[2]\nreturn %2\n}\n",
         "param fc.w f64 1 2 : 1 2\nparam bn.m f64 1 2 : 10 20\nout f64 1 2 : 11 22\n", 0);
}

static void test_unary(void) {
  expect("exp/log/sqrt/rsqrt",
         F1("%x: f64[3]", "f64[3], f64[3], f64[3], f64[3]",
            "%0 = exp(%x) : f64[3]\n%1 = log(%x) : f64[3]\n%2 = sqrt(%x) : f64[3]\n"
            "%3 = rsqrt(%x) : f64[3]\nreturn %0, %1, %2, %3"),
         "in f64 1 3 : 1 4 0.25\n"
         "out f64 1 3 : 2.718281828459045 54.598150033144236 1.2840254166877414\n"
         "out f64 1 3 : 0 1.3862943611198906 -1.3862943611198906\n"
         "out f64 1 3 : 1 2 0.5\nout f64 1 3 : 1 0.5 2\n", 1e-15);
  expect("abs/neg/relu/sign",
         F1("%x: f64[4]", "f64[4], f64[4], f64[4], f64[4]",
            "%0 = abs(%x) : f64[4]\n%1 = neg(%x) : f64[4]\n%2 = relu(%x) : f64[4]\n"
            "%3 = sign(%x) : f64[4]\nreturn %0, %1, %2, %3"),
         "in f64 1 4 : -2 0 3 -0.5\nout f64 1 4 : 2 0 3 0.5\nout f64 1 4 : 2 0 -3 0.5\n"
         "out f64 1 4 : 0 0 3 0\nout f64 1 4 : -1 0 1 -1\n", 0);
  // gelu(1) = 0.5 * (1 + erf(1/sqrt 2)); sigmoid(0) = 0.5; silu(2) = 2 * sigmoid(2)
  expect("gelu/sigmoid/tanh/silu",
         F1("%x: f64[2]", "f64[2], f64[2], f64[2], f64[2]",
            "%0 = gelu(%x) : f64[2]\n%1 = sigmoid(%x) : f64[2]\n%2 = tanh(%x) : f64[2]\n"
            "%3 = silu(%x) : f64[2]\nreturn %0, %1, %2, %3"),
         "in f64 1 2 : 1 0\nout f64 1 2 : 0.8413447460685429 0\nout f64 1 2 : 0.7310585786300049 0.5\n"
         "out f64 1 2 : 0.7615941559557649 0\nout f64 1 2 : 0.7310585786300049 0\n", 1e-14);
  expect("relu_grad",
         F1("%dy: f64[3], %x: f64[3]", "f64[3]", "%0 = relu_grad(%dy, %x) : f64[3]\nreturn %0"),
         "in f64 1 3 : 5 6 7\nin f64 1 3 : -1 0 2\nout f64 1 3 : 0 0 7\n", 0);
  // d/dx tanh at y = 0.5: 1 - 0.25; sigmoid at y = 0.5: 0.25
  expect("tanh_grad/sigmoid_grad",
         F1("%dy: f64[1], %y: f64[1]", "f64[1], f64[1]",
            "%0 = tanh_grad(%dy, %y) : f64[1]\n%1 = sigmoid_grad(%dy, %y) : f64[1]\nreturn %0, %1"),
         "in f64 1 1 : 2\nin f64 1 1 : 0.5\nout f64 1 1 : 1.5\nout f64 1 1 : 0.5\n", 0);
  // gelu'(0) = 0.5, silu'(0) = 0.5
  expect("gelu_grad/silu_grad",
         F1("%dy: f64[1], %x: f64[1]", "f64[1], f64[1]",
            "%0 = gelu_grad(%dy, %x) : f64[1]\n%1 = silu_grad(%dy, %x) : f64[1]\nreturn %0, %1"),
         "in f64 1 1 : 3\nin f64 1 1 : 0\nout f64 1 1 : 1.5\nout f64 1 1 : 1.5\n", 0);
}

static void test_binary(void) {
  expect("add/sub/mul/div broadcast",
         F1("%a: f64[2, 2], %b: f64[2]", "f64[2, 2], f64[2, 2], f64[2, 2], f64[2, 2]",
            "%0 = add(%a, %b) : f64[2, 2]\n%1 = sub(%a, %b) : f64[2, 2]\n%2 = mul(%a, %b) : f64[2, 2]\n"
            "%3 = div(%a, %b) : f64[2, 2]\nreturn %0, %1, %2, %3"),
         "in f64 2 2 2 : 1 2 3 4\nin f64 1 2 : 10 20\nout f64 2 2 2 : 11 22 13 24\n"
         "out f64 2 2 2 : -9 -18 -7 -16\nout f64 2 2 2 : 10 40 30 80\nout f64 2 2 2 : 0.1 0.1 0.3 0.2\n", 1e-15);
  expect("outer product broadcast",
         F1("%a: f64[2, 1], %b: f64[1, 3]", "f64[2, 3]", "%0 = mul(%a, %b) : f64[2, 3]\nreturn %0"),
         "in f64 2 2 1 : 1 2\nin f64 2 1 3 : 1 10 100\nout f64 2 2 3 : 1 10 100 2 20 200\n", 0);
  expect("pow/maximum/minimum",
         F1("%a: f64[3], %b: f64[3]", "f64[3], f64[3], f64[3]",
            "%0 = pow(%a, %b) : f64[3]\n%1 = maximum(%a, %b) : f64[3]\n%2 = minimum(%a, %b) : f64[3]\n"
            "return %0, %1, %2"),
         "in f64 1 3 : 2 9 4\nin f64 1 3 : 3 0.5 -1\nout f64 1 3 : 8 3 0.25\nout f64 1 3 : 3 9 4\n"
         "out f64 1 3 : 2 0.5 -1\n", 0);
  expect("integer div floors",
         F1("%a: i64[4], %b: i64[4]", "i64[4]", "%0 = div(%a, %b) : i64[4]\nreturn %0"),
         "in i64 1 4 : 7 -7 7 -7\nin i64 1 4 : 2 2 -2 -2\nout i64 1 4 : 3 -4 -4 3\n", 0);
  expect("compares",
         F1("%a: f64[3], %b: f64[3]", "bool[3], bool[3], bool[3], bool[3], bool[3], bool[3]",
            "%0 = lt(%a, %b) : bool[3]\n%1 = le(%a, %b) : bool[3]\n%2 = gt(%a, %b) : bool[3]\n"
            "%3 = ge(%a, %b) : bool[3]\n%4 = eq(%a, %b) : bool[3]\n%5 = ne(%a, %b) : bool[3]\n"
            "return %0, %1, %2, %3, %4, %5"),
         "in f64 1 3 : 1 2 3\nin f64 1 3 : 2 2 2\nout bool 1 3 : 1 0 0\nout bool 1 3 : 1 1 0\n"
         "out bool 1 3 : 0 0 1\nout bool 1 3 : 0 1 1\nout bool 1 3 : 0 1 0\nout bool 1 3 : 1 0 1\n", 0);
  expect("and/or/not/where",
         F1("%p: bool[4], %q: bool[4], %a: f64[4], %b: f64[1]", "bool[4], bool[4], bool[4], f64[4]",
            "%0 = and(%p, %q) : bool[4]\n%1 = or(%p, %q) : bool[4]\n%2 = not(%p) : bool[4]\n"
            "%3 = where(%p, %a, %b) : f64[4]\nreturn %0, %1, %2, %3"),
         "in bool 1 4 : 0 0 1 1\nin bool 1 4 : 0 1 0 1\nin f64 1 4 : 1 2 3 4\nin f64 1 1 : -1\n"
         "out bool 1 4 : 0 0 0 1\nout bool 1 4 : 0 1 1 1\nout bool 1 4 : 1 1 0 0\nout f64 1 4 : -1 -1 3 4\n", 0);
}

static void test_reduce(void) {
  expect("sum/mean/max/min",
         F1("%x: f64[2, 3]", "f64[2], f64[1, 3], f64, f64[2]",
            "%0 = sum(%x) {dims = [1], keepdim = 0} : f64[2]\n"
            "%1 = mean(%x) {dims = [0], keepdim = 1} : f64[1, 3]\n"
            "%2 = max(%x) {dims = [0, 1], keepdim = 0} : f64\n"
            "%3 = min(%x) {dims = [1], keepdim = 0} : f64[2]\nreturn %0, %1, %2, %3"),
         "in f64 2 2 3 : 1 5 3 4 2 6\nout f64 1 2 : 9 12\nout f64 2 1 3 : 2.5 3.5 4.5\n"
         "out f64 0 : 6\nout f64 1 2 : 1 2\n", 1e-15);
  expect("argmax first on ties",
         F1("%x: f64[2, 4]", "i64[2], i64[1, 4], i64",
            "%0 = argmax(%x) {dims = [1], keepdim = 0} : i64[2]\n"
            "%1 = argmax(%x) {dims = [0], keepdim = 1} : i64[1, 4]\n"
            "%2 = argmax(%x) {dims = [0, 1], keepdim = 0} : i64\nreturn %0, %1, %2"),
         "in f64 2 2 4 : 1 7 7 0 7 2 7 9\nout i64 1 2 : 1 3\nout i64 2 1 4 : 1 0 0 1\nout i64 0 : 7\n", 0);
  expect("reduce_to",
         F1("%x: f64[2, 2, 3]", "f64[2, 1], f64[3]",
            "%0 = reduce_to(%x) : f64[2, 1]\n%1 = reduce_to(%x) : f64[3]\nreturn %0, %1"),
         "in f64 3 2 2 3 : 1 2 3 4 5 6 7 8 9 10 11 12\nout f64 2 2 1 : 30 48\nout f64 1 3 : 22 26 30\n", 0);
  // softmax([0, ln 3]) = [1/4, 3/4]
  expect("softmax/log_softmax",
         F1("%x: f64[1, 2]", "f64[1, 2], f64[1, 2]",
            "%0 = softmax(%x) {dim = 1} : f64[1, 2]\n%1 = log_softmax(%x) {dim = 1} : f64[1, 2]\n"
            "return %0, %1"),
         "in f64 2 1 2 : 1000 1001.0986122886681\nout f64 2 1 2 : 0.25 0.75\n"
         "out f64 2 1 2 : -1.3862943611198906 -0.28768207245178090\n", 1e-12);
}

static void test_views(void) {
  expect("reshape/transpose",
         F1("%x: f64[2, 3]", "f64[3, 2], f64[3, 2]",
            "%0 = reshape(%x) : f64[3, 2]\n%1 = transpose(%x) {perm = [1, 0]} : f64[3, 2]\n"
            "return %0, %1"),
         "in f64 2 2 3 : 1 2 3 4 5 6\nout f64 2 3 2 : 1 2 3 4 5 6\nout f64 2 3 2 : 1 4 2 5 3 6\n", 0);
  expect("slice/concat",
         F1("%x: f64[2, 5]", "f64[2, 2], f64[4, 5]",
            "%0 = slice(%x) {dim = 1, start = 1, step = 3} : f64[2, 2]\n"
            "%1 = concat(%x, %x) {dim = 0} : f64[4, 5]\nreturn %0, %1"),
         "in f64 2 2 5 : 0 1 2 3 4 5 6 7 8 9\nout f64 2 2 2 : 1 4 6 9\n"
         "out f64 2 4 5 : 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9\n", 0);
  expect("concat inner dim",
         F1("%x: f64[2, 1], %y: f64[2, 2]", "f64[2, 3]", "%0 = concat(%x, %y) {dim = 1} : f64[2, 3]\nreturn %0"),
         "in f64 2 2 1 : 1 2\nin f64 2 2 2 : 3 4 5 6\nout f64 2 2 3 : 1 3 4 2 5 6\n", 0);
  expect("broadcast_to",
         F1("%x: f64[2, 1]", "f64[3, 2, 2]", "%0 = broadcast_to(%x) : f64[3, 2, 2]\nreturn %0"),
         "in f64 2 2 1 : 1 2\nout f64 3 3 2 2 : 1 1 2 2 1 1 2 2 1 1 2 2\n", 0);
  expect("cast/stop_gradient",
         F1("%x: f64[4]", "i32[4], bool[4], f64[4]",
            "%0 = cast(%x) : i32[4]\n%1 = cast(%x) : bool[4]\n%2 = stop_gradient(%x) : f64[4]\n"
            "return %0, %1, %2"),
         "in f64 1 4 : 1.7 -1.7 0 3\nout i32 1 4 : 1 -1 0 3\nout bool 1 4 : 1 1 0 1\n"
         "out f64 1 4 : 1.7 -1.7 0 3\n", 0);
}

static void test_nn(void) {
  expect("matmul 2x2",
         F1("%a: f64[2, 3], %b: f64[3, 2]", "f64[2, 2]", "%0 = matmul(%a, %b) : f64[2, 2]\nreturn %0"),
         "in f64 2 2 3 : 1 2 3 4 5 6\nin f64 2 3 2 : 1 0 0 1 1 1\nout f64 2 2 2 : 4 5 10 11\n", 0);
  // 3x3 input 0..8, 2x2 kernel of ones, stride 1: window sums
  expect("conv2d window sums",
         F1("%x: f64[1, 1, 3, 3], %w: f64[1, 1, 2, 2]", "f64[1, 1, 2, 2]",
            "%0 = conv2d(%x, %w) {dilation = [1, 1], groups = 1, padding = [0, 0], stride = [1, 1]} : "
            "f64[1, 1, 2, 2]\nreturn %0"),
         "in f64 4 1 1 3 3 : 0 1 2 3 4 5 6 7 8\nin f64 4 1 1 2 2 : 1 1 1 1\nout f64 4 1 1 2 2 : 8 12 20 24\n", 0);
  expect("max_pool2d/avg_pool2d padded",
         F1("%x: f64[1, 1, 2, 2]", "f64[1, 1, 2, 2], f64[1, 1, 2, 2]",
            "%0 = max_pool2d(%x) {kernel = [2, 2], padding = [1, 1], stride = [2, 2]} : f64[1, 1, 2, 2]\n"
            "%1 = avg_pool2d(%x) {kernel = [2, 2], padding = [1, 1], stride = [2, 2]} : f64[1, 1, 2, 2]\n"
            "return %0, %1"),
         "in f64 4 1 1 2 2 : -1 -2 -3 -4\nout f64 4 1 1 2 2 : -1 -2 -3 -4\n"
         "out f64 4 1 1 2 2 : -0.25 -0.5 -0.75 -1\n", 0);
  expect("max_pool2d_grad tie goes first",
         F1("%dy: f64[1, 1, 1, 1], %x: f64[1, 1, 2, 2]", "f64[1, 1, 2, 2]",
            "%0 = max_pool2d_grad(%dy, %x) {kernel = [2, 2], padding = [0, 0], stride = [2, 2]} : "
            "f64[1, 1, 2, 2]\nreturn %0"),
         "in f64 4 1 1 1 1 : 5\nin f64 4 1 1 2 2 : 1 3 3 2\nout f64 4 1 1 2 2 : 0 5 0 0\n", 0);
  // batch_norm with mean 1, var 3, eps 1: (x - 1)/2 * gamma + beta
  expect("batch_norm closed form",
         F1("%x: f64[2, 1], %g: f64[1], %b: f64[1], %m: f64[1], %v: f64[1]", "f64[2, 1]",
            "%0 = batch_norm(%x, %g, %b, %m, %v) {eps = 1.0} : f64[2, 1]\nreturn %0"),
         "in f64 2 2 1 : 3 -1\nin f64 1 1 : 2\nin f64 1 1 : 1\nin f64 1 1 : 1\nin f64 1 1 : 3\n"
         "out f64 2 2 1 : 3 -1\n", 1e-15);
  // layer_norm of [1, 3] (mean 2, var 1) with eps 3: (x - 2)/2
  expect("layer_norm closed form",
         F1("%x: f64[1, 2], %g: f64[2], %b: f64[2]", "f64[1, 2]",
            "%0 = layer_norm(%x, %g, %b) {eps = 3.0, ndims = 1} : f64[1, 2]\nreturn %0"),
         "in f64 2 1 2 : 1 3\nin f64 1 2 : 1 1\nin f64 1 2 : 0 10\nout f64 2 1 2 : -0.5 10.5\n", 1e-15);
  expect("embedding/embedding_grad",
         F1("%t: f64[3, 2], %i: i32[3], %dy: f64[3, 2]", "f64[3, 2], f64[3, 2]",
            "%0 = embedding(%t, %i) : f64[3, 2]\n%1 = embedding_grad(%dy, %i) : f64[3, 2]\nreturn %0, %1"),
         "in f64 2 3 2 : 0 1 10 11 20 21\nin i32 1 3 : 2 0 2\nin f64 2 3 2 : 1 2 3 4 5 6\n"
         "out f64 2 3 2 : 20 21 0 1 20 21\nout f64 2 3 2 : 3 4 0 0 6 8\n", 0);
  // two equal logits: loss ln 2; grad (0.5 - onehot) / N
  expect("cross_entropy/grad closed form",
         F1("%x: f64[1, 2], %t: i64[1], %dy: f64", "f64, f64[1, 2]",
            "%0 = cross_entropy(%x, %t) : f64\n%1 = cross_entropy_grad(%dy, %x, %t) : f64[1, 2]\nreturn %0, %1"),
         "in f64 2 1 2 : 3 3\nin i64 1 1 : 1\nin f64 0 : 2\nout f64 0 : 0.69314718055994531\n"
         "out f64 2 1 2 : 1 -1\n", 1e-15);
  expect("mse/bce_with_logits closed form",
         F1("%a: f64[2], %b: f64[2]", "f64, f64",
            "%0 = mse(%a, %b) : f64\n%1 = bce_with_logits(%a, %b) : f64\nreturn %0, %1"),
         "in f64 1 2 : 0 0\nin f64 1 2 : 1 3\nout f64 0 : 5\nout f64 0 : 0.69314718055994531\n", 1e-15);
  // softmax_grad at uniform y = [0.5, 0.5], dy = [1, 0]: y*(dy - 0.5) = [0.25, -0.25];
  // log_softmax_grad: dy - exp(y) * sum(dy) with y = ln 0.5
  expect("softmax_grad/log_softmax_grad",
         F1("%dy: f64[2], %y: f64[2], %ly: f64[2]", "f64[2], f64[2]",
            "%0 = softmax_grad(%dy, %y) {dim = 0} : f64[2]\n%1 = log_softmax_grad(%dy, %ly) {dim = 0} : f64[2]\n"
            "return %0, %1"),
         "in f64 1 2 : 1 0\nin f64 1 2 : 0.5 0.5\nin f64 1 2 : -0.69314718055994531 -0.69314718055994531\n"
         "out f64 1 2 : 0.25 -0.25\nout f64 1 2 : 0.5 -0.5\n", 1e-15);
  // conv grads of a 1x1 kernel: dx = dy * w, dw = sum(dy * x)
  expect("conv2d_grad_input/weight 1x1",
         F1("%dy: f64[1, 1, 1, 2], %w: f64[1, 1, 1, 1], %x: f64[1, 1, 1, 2]", "f64[1, 1, 1, 2], f64[1, 1, 1, 1]",
            "%0 = conv2d_grad_input(%dy, %w) {dilation = [1, 1], groups = 1, padding = [0, 0], stride = [1, 1]} : "
            "f64[1, 1, 1, 2]\n"
            "%1 = conv2d_grad_weight(%dy, %x) {dilation = [1, 1], groups = 1, padding = [0, 0], stride = [1, 1]} : "
            "f64[1, 1, 1, 1]\nreturn %0, %1"),
         "in f64 4 1 1 1 2 : 1 2\nin f64 4 1 1 1 1 : 3\nin f64 4 1 1 1 2 : 5 7\n"
         "out f64 4 1 1 1 2 : 3 6\nout f64 4 1 1 1 1 : 19\n", 0);
  expect("avg_pool2d_grad",
         F1("%dy: f64[1, 1, 1, 1], %x: f64[1, 1, 2, 2]", "f64[1, 1, 2, 2]",
            "%0 = avg_pool2d_grad(%dy, %x) {kernel = [2, 2], padding = [0, 0], stride = [2, 2]} : "
            "f64[1, 1, 2, 2]\nreturn %0"),
         "in f64 4 1 1 1 1 : 8\nin f64 4 1 1 2 2 : 0 0 0 0\nout f64 4 1 1 2 2 : 2 2 2 2\n", 0);
  // batch_norm_grad: dy constant per channel gives dx = 0
  expect("batch_norm_grad/layer_norm_grad constant dy",
         F1("%dy: f64[2, 1], %x: f64[2, 1], %g: f64[1], %m: f64[1], %v: f64[1], %dz: f64[1, 2], %z: f64[1, 2], "
            "%h: f64[2]", "f64[2, 1], f64[1, 2]",
            "%0 = batch_norm_grad(%dy, %x, %g, %m, %v) {eps = 1e-05} : f64[2, 1]\n"
            "%1 = layer_norm_grad(%dz, %z, %h) {eps = 1e-05, ndims = 1} : f64[1, 2]\nreturn %0, %1"),
         "in f64 2 2 1 : 4 4\nin f64 2 2 1 : 1 3\nin f64 1 1 : 2\nin f64 1 1 : 2\nin f64 1 1 : 1\n"
         "in f64 2 1 2 : 4 4\nin f64 2 1 2 : 1 3\nin f64 1 2 : 1 1\n"
         "out f64 2 2 1 : 0 0\nout f64 2 1 2 : 0 0\n", 0);
}

// ---- dropout ---------------------------------------------------------------------------------------
// Two functions: f draws masks with seeds 7 and 8, g applies dropout with
// seed 7 (seeds are unique per function, not per module).
static void test_dropout(void) {
  const char *ir = "module T\n"
                   "func f(%x: f64[4000]) -> (f64[4000], f64[4000]) {\n"
                   "%0 = dropout_mask(%x) {p = 0.25, seed = 7} : f64[4000]\n"
                   "%1 = dropout_mask(%x) {p = 0.25, seed = 8} : f64[4000]\nreturn %0, %1\n}\n"
                   "func g(%x: f64[4000]) -> (f64[4000]) {\n"
                   "%0 = dropout(%x) {p = 0.25, seed = 7} : f64[4000]\nreturn %0\n}\n";
  Case c;
  Tensor *got[2] = {0}, *again[2] = {0}, *drop[1] = {0}, *other[2] = {0};
  char err[512] = "";
  static char vals[4000 * 2 + 64];
  char *p = vals + sprintf(vals, "in f64 1 4000 :");
  for (int i = 0; i < 4000; i++) p += sprintf(p, " 2");
  bool ok = load_case(&c, "dropout", ir, vals) && run_case(&c, INTERP_F64, got, 42, err, sizeof err) == 0 &&
            run_case(&c, INTERP_F64, again, 42, err, sizeof err) == 0 &&
            run_case(&c, INTERP_F64, other, 43, err, sizeof err) == 0;
  ok = ok && run_func(&c, ir_module_find_func(c.m, "g"), INTERP_F64, 1, drop, 42, err, sizeof err) == 0;
  check("dropout runs", ok);
  if (!ok) {
    printf("  %s\n", err);
    return;
  }
  int kept = 0, diff = 0, diff_step = 0;
  bool vals_ok = true, same = true, prod = true;
  for (int i = 0; i < 4000; i++) {
    double m = got[0]->data[i];
    vals_ok &= m == 0 || m == 1 / 0.75;
    kept += m != 0;
    diff += m != got[1]->data[i];
    diff_step += m != other[0]->data[i];
    same &= m == again[0]->data[i];
    prod &= drop[0]->data[i] == 2 * m;
  }
  check("dropout_mask values are 0 or 1/(1-p)", vals_ok);
  check("dropout keeps about 1-p", kept > 2850 && kept < 3150);
  check("dropout mask repeats for one seed", same);
  check("dropout masks differ across seeds", diff > 1000);
  check("dropout masks differ across rng_seed", diff_step > 1000);
  check("dropout = x * dropout_mask (same seed)", prod);
  // Philox-4x32-10 known answer (Random123): key 0, counter 0 -> first word
  // 0x6627e8d5, so u = 0x6627e8 / 2^24 = 0.39904785..
  check("dropout uses Philox-4x32-10",
        interp_dropout_scale(0, 0, 0, 0.399) == 1 / (1 - 0.399) && interp_dropout_scale(0, 0, 0, 0.3991) == 0);
  for (int i = 0; i < 2; i++) {
    interp_tensor_free(got[i]);
    interp_tensor_free(again[i]);
    interp_tensor_free(other[i]);
  }
  interp_tensor_free(drop[0]);
  case_free(&c);
}

// ---- rand, randn ------------------------------------------------------------------------------------
// 10^5 draws of each: mean and variance within 4 standard errors of the
// distribution's (uniform [0, 1): 1/2, 1/12; normal: 0, 1), the normal's
// mass within one sigma, independence across seeds, a deterministic stream
// per (seed, rng_seed) that a step changes, and rand as dropout's uniform:
// with the same seed, dropout_mask is 0 exactly where rand < p.
enum { NN = 100000 };

static void moments(const Tensor *t, double *mean, double *var) {
  double s = 0, q = 0;
  for (int64_t i = 0; i < t->numel; i++) s += t->data[i];
  *mean = s / (double)t->numel;
  for (int64_t i = 0; i < t->numel; i++) q += (t->data[i] - *mean) * (t->data[i] - *mean);
  *var = q / (double)(t->numel - 1);
}

static void test_noise(void) {
  const char *ir = "module T\n"
                   "func f(%x: f64[1]) -> (f64[100000], f64[100000], f64[100000], f64[100000]) {\n"
                   "%0 = rand {seed = 3} : f64[100000]\n%1 = randn {seed = 4} : f64[100000]\n"
                   "%2 = rand {seed = 5} : f64[100000]\n%3 = randn {seed = 6} : f64[100000]\n"
                   "return %0, %1, %2, %3\n}\n"
                   "func g(%x: f64[100000]) -> (f64[100000]) {\n"
                   "%0 = dropout_mask(%x) {p = 0.3, seed = 3} : f64[100000]\nreturn %0\n}\n";
  Case c;
  Tensor *got[4] = {0}, *again[4] = {0}, *step[4] = {0}, *mask[1] = {0};
  char err[512] = "";
  bool ok = load_case(&c, "noise", ir, "in f64 1 1 : 0\n") &&
            run_case(&c, INTERP_F64, got, 42, err, sizeof err) == 0 &&
            run_case(&c, INTERP_F64, again, 42, err, sizeof err) == 0 &&
            run_case(&c, INTERP_F64, step, 43, err, sizeof err) == 0;
  int64_t nd[1] = {NN};
  Tensor *ones = interp_tensor_new(DT_F64, 1, nd), *keep = c.in[0];
  for (int i = 0; i < NN; i++) ones->data[i] = 1;
  c.in[0] = ones;
  ok = ok && run_func(&c, ir_module_find_func(c.m, "g"), INTERP_F64, 1, mask, 42, err, sizeof err) == 0;
  c.in[0] = keep;
  interp_tensor_free(ones);
  check("rand, randn run", ok);
  if (!ok) {
    printf("  %s\n", err);
    return;
  }
  double mu, var, mn, vn, se_u = sqrt(1.0 / 12 / NN), se_uv = sqrt((1.0 / 80 - 1.0 / 144) / NN);
  moments(got[0], &mu, &var);
  moments(got[1], &mn, &vn);
  printf("  rand: mean %.6f (0.5 +- %.2g), var %.6f (%.6f +- %.2g)\n", mu, se_u, var, 1.0 / 12, se_uv);
  printf("  randn: mean %.6f (0 +- %.2g), var %.6f (1 +- %.2g)\n", mn, 1 / sqrt(NN), vn, sqrt(2.0 / NN));
  check("rand: mean and variance of 10^5 draws within 4 standard errors",
        fabs(mu - 0.5) < 4 * se_u && fabs(var - 1.0 / 12) < 4 * se_uv);
  check("randn: mean and variance of 10^5 draws within 4 standard errors",
        fabs(mn) < 4 / sqrt(NN) && fabs(vn - 1) < 4 * sqrt(2.0 / NN));
  int in1 = 0, range = 1, same = 1, diff_step = 0, drop = 1;
  double corr_u = 0, corr_n = 0, mx = 0, mu2, v2, mn2, vn2;
  moments(got[2], &mu2, &v2);
  moments(got[3], &mn2, &vn2);
  for (int i = 0; i < NN; i++) {
    double u = got[0]->data[i], z = got[1]->data[i];
    range &= u >= 0 && u < 1 && u == interp_noise(3, 42, (uint64_t)i, false) &&
             z == interp_noise(4, 42, (uint64_t)i, true);
    in1 += fabs(z) < 1;
    mx = fmax(mx, fabs(z));
    for (int k = 0; k < 4; k++) same &= got[k]->data[i] == again[k]->data[i];
    diff_step += u != step[0]->data[i];
    corr_u += (u - mu) * (got[2]->data[i] - mu2);
    corr_n += (z - mn) * (got[3]->data[i] - mn2);
    drop &= (mask[0]->data[i] == 0) == (u < 0.3);
  }
  corr_u /= (NN - 1) * sqrt(var * v2);
  corr_n /= (NN - 1) * sqrt(vn * vn2);
  double p1 = 0.6826894921370859, se1 = sqrt(p1 * (1 - p1) / NN);
  printf("  randn: P(|z| < 1) %.5f (%.5f +- %.2g), max |z| %.3f; corr across seeds %.2g, %.2g\n",
         (double)in1 / NN, p1, se1, mx, corr_u, corr_n);
  check("rand in [0, 1), both equal interp_noise per element", range);
  check("randn: P(|z| < 1) within 4 standard errors, |z| <= 5.78", fabs((double)in1 / NN - p1) < 4 * se1 && mx <= 5.78);
  check("rand, randn: other seeds are uncorrelated (|r| < 4 / sqrt(n))",
        fabs(corr_u) < 4 / sqrt(NN) && fabs(corr_n) < 4 / sqrt(NN));
  check("rand, randn repeat for one seed and rng_seed", same);
  check("rand differs across rng_seed (the step)", diff_step > NN / 2);
  check("rand is dropout's uniform: dropout_mask = 0 exactly where rand < p", drop);
  for (int i = 0; i < 4; i++) {
    interp_tensor_free(got[i]);
    interp_tensor_free(again[i]);
    interp_tensor_free(step[i]);
  }
  interp_tensor_free(mask[0]);
  case_free(&c);
}

// ---- f32 vs f64 -------------------------------------------------------------------------------------
// A composite graph over random inputs: conv, pool, norms, matmul, softmax,
// losses. f32 results must be float values and agree with f64 to ~1e-4.
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * 0x1p-53;
}

static void test_f32_vs_f64(void) {
  const char *ir =
      "module T\nparam c.w : f32[4, 2, 3, 3] trainable\nparam fc.w : f32[16, 5] trainable\n"
      "param ln.g : f32[5] trainable\nparam ln.b : f32[5] trainable\n"
      "func f(%x: f32[B, 2, 8, 8], %t: i64[B]) -> (f32, f32[B, 5], f32[B, 4, 4, 4]) {\n"
      "%0 = param c.w : f32[4, 2, 3, 3]\n"
      "%1 = conv2d(%x, %0) {dilation = [1, 1], groups = 1, padding = [1, 1], stride = [1, 1]} : f32[B, 4, 8, 8]\n"
      "%2 = gelu(%1) : f32[B, 4, 8, 8]\n"
      "%3 = max_pool2d(%2) {kernel = [2, 2], padding = [0, 0], stride = [2, 2]} : f32[B, 4, 4, 4]\n"
      "%4 = avg_pool2d(%3) {kernel = [2, 2], padding = [0, 0], stride = [2, 2]} : f32[B, 4, 2, 2]\n"
      "%5 = reshape(%4) : f32[B, 16]\n%6 = param fc.w : f32[16, 5]\n%7 = matmul(%5, %6) : f32[B, 5]\n"
      "%8 = param ln.g : f32[5]\n%9 = param ln.b : f32[5]\n"
      "%10 = layer_norm(%7, %8, %9) {eps = 1e-05, ndims = 1} : f32[B, 5]\n"
      "%11 = softmax(%10) {dim = 1} : f32[B, 5]\n"
      "%12 = cross_entropy(%10, %t) : f32\n"
      "return %12, %11, %3\n}\n";
  Case c;
  static char vals[20000];
  char *p = vals;
  p += sprintf(p, "in f32 4 3 2 8 8 :");
  for (int i = 0; i < 3 * 2 * 64; i++) p += sprintf(p, " %.17g", urand() * 2 - 1);
  p += sprintf(p, "\nin i64 1 3 : 0 4 2\nparam c.w f32 4 4 2 3 3 :");
  for (int i = 0; i < 72; i++) p += sprintf(p, " %.17g", urand() - 0.5);
  p += sprintf(p, "\nparam fc.w f32 2 16 5 :");
  for (int i = 0; i < 80; i++) p += sprintf(p, " %.17g", urand() - 0.5);
  p += sprintf(p, "\nparam ln.g f32 1 5 : 1 0.5 2 1 1\nparam ln.b f32 1 5 : 0 0.1 0 -0.1 0.2\n");
  Tensor *g64[3] = {0}, *g32[3] = {0};
  char err[512];
  bool ok = load_case(&c, "composite", ir, vals) && run_case(&c, INTERP_F64, g64, 0, err, sizeof err) == 0 &&
            run_case(&c, INTERP_F32, g32, 0, err, sizeof err) == 0;
  if (!ok) printf("  %s\n", err);
  check("composite graph runs in f32 and f64 (B bound to 3)", ok);
  if (!ok) return;
  bool agree = true, floats = true;
  for (int k = 0; k < 3; k++) {
    agree &= same_tensor(g32[k], g64[k], 1e-4, 1e-5);
    for (int64_t e = 0; e < g32[k]->numel; e++) floats &= (double)(float)g32[k]->data[e] == g32[k]->data[e];
  }
  check("f32 agrees with f64 on random inputs", agree);
  check("f32 mode keeps float values", floats);
  bool differs = false;
  for (int64_t e = 0; e < g64[1]->numel; e++) differs |= g64[1]->data[e] != g32[1]->data[e];
  check("f32 mode actually rounds", differs);
  for (int k = 0; k < 3; k++) {
    interp_tensor_free(g64[k]);
    interp_tensor_free(g32[k]);
  }
  case_free(&c);
}

// ---- errors --------------------------------------------------------------------------------------------
static void test_errors(void) {
  const char *two = F1("%x: f64[B, 3], %y: f64[B]", "f64[B, 3]", "%0 = mul(%x, %x) : f64[B, 3]\nreturn %0");
  expect_error("symbol bound twice differently", two,
               "in f64 2 2 3 : 1 2 3 4 5 6\nin f64 1 3 : 1 2 3\n", "dim 0 (B) is 2 but the tensor has 3");
  expect_error("constant dim mismatch", two, "in f64 2 2 4 : 1 2 3 4 5 6 7 8\nin f64 1 2 : 1 2\n",
               "dim 1 (3) is 3 but the tensor has 4");
  expect_error("rank mismatch", two, "in f64 1 3 : 1 2 3\nin f64 1 3 : 1 2 3\n", "has type f64[B, 3]");
  expect_error("argument count", two, "in f64 2 1 3 : 1 2 3\n", "takes 2 arguments, got 1");
  expect_error("unbindable dim", F1("%x: f64[2*B]", "f64[2*B]", "%0 = neg(%x) : f64[2*B]\nreturn %0"),
               "in f64 1 4 : 1 2 3 4\n", "cannot be bound from a size alone");
  expect("product dim binds after its symbols",
         F1("%x: f64[B*T], %y: f64[B, T]", "f64[B*T]", "%0 = reshape(%y) : f64[B*T]\n%1 = add(%x, %0) : f64[B*T]\n"
                                                          "return %1"),
         "in f64 1 6 : 1 1 1 1 1 1\nin f64 2 2 3 : 1 2 3 4 5 6\nout f64 1 6 : 2 3 4 5 6 7\n", 0);
  // A strided window over a symbolic extent has the floor-division size
  // (H - 1) // 2 + 1; it evaluates once H is bound from the input (H = 5: 3).
  expect("strided window size evaluates from the bound extent",
         F1("%x: f64[1, 1, H, 2], %w: f64[1, 1, 1, 1]", "f64[2*((H - 1) // 2) + 2]",
            "%0 = conv2d(%x, %w) {dilation = [1, 1], groups = 1, padding = [0, 0], stride = [2, 1]} : "
            "f64[1, 1, (H - 1) // 2 + 1, 2]\n%1 = reshape(%0) : f64[2*((H - 1) // 2) + 2]\nreturn %1"),
         "in f64 4 1 1 5 2 : 0 1 2 3 4 5 6 7 8 9\nin f64 4 1 1 1 1 : 2\nout f64 1 6 : 0 2 8 10 16 18\n", 0);
  expect_error("missing param", "module T\nparam w : f64[2] trainable\nfunc f() -> (f64[2]) {\n"
                                "%0 = param w : f64[2]\nreturn %0\n}\n",
               "", "no value given for param w");
  expect_error("embedding index out of range",
               F1("%t: f64[3, 1], %i: i64[1]", "f64[1, 1]", "%0 = embedding(%t, %i) : f64[1, 1]\nreturn %0"),
               "in f64 2 3 1 : 1 2 3\nin i64 1 1 : 3\n", "index 3 out of range [0, 3)");
  expect_error("cross_entropy target out of range",
               F1("%x: f64[1, 2], %t: i64[1]", "f64", "%0 = cross_entropy(%x, %t) : f64\nreturn %0"),
               "in f64 2 1 2 : 1 2\nin i64 1 1 : -1\n", "target -1 of row 0 out of range");
  expect_error("integer division by zero",
               F1("%a: i32[1]", "i32[1]", "%0 = div(%a, %a) : i32[1]\nreturn %0"), "in i32 1 1 : 0\n",
               "%0 = div(%a, %a): integer division by zero");
}

// Errors also go to a DiagSink at the node's span when one is given.
static void test_diag_sink(void) {
  Case c;
  Tensor *got[1] = {0};
  DiagSink ds;
  diag_init(&ds, A);
  bool ok = load_case(&c, "diag.ir", F1("%t: f64[2, 1], %i: i64[1]", "f64[1, 1]",
                                        "%0 = embedding(%t, %i) : f64[1, 1]\nreturn %0"),
                      "in f64 2 2 1 : 1 2\nin i64 1 1 : 5\n");
  ok = ok && interp_run(c.m, c.f, INTERP_F64, c.in, c.nin, NULL, got, &ds) != 0 && ds.nerrors == 1;
  int line = 0, col = 0;
  if (ok) span_linecol(VEC_AT(ds.diags, Diag, 0)->span, &line, &col);
  check("errors reach the DiagSink at the node", ok && line == 3);
  case_free(&c);
}

// ---- PyTorch cases ---------------------------------------------------------------------------------------
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void test_torch_cases(const char *root) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/graph/interp", root);
  DIR *d = opendir(dir);
  check("tests/graph/interp exists", d != NULL);
  if (!d) return;
  char *names[256];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 256;) {
    size_t len = strlen(e->d_name);
    if (len > 3 && strcmp(e->d_name + len - 3, ".ir") == 0) names[n++] = arena_strndup(A, e->d_name, len - 3);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], cmp_str);
  for (int i = 0; i < n; i++) {
    char *ir = read_all(arena_printf(A, "%s/%s.ir", dir, names[i]));
    char *vals = read_all(arena_printf(A, "%s/%s.vals", dir, names[i]));
    const char *name = arena_printf(A, "torch %s", names[i]);
    if (!ir || !vals) {
      check(name, false);
      continue;
    }
    expect(name, ir, vals, 1e-9);
  }
  check("torch cases present", n >= 20);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : ".";
  A = arena_new();
  test_plumbing();
  test_unary();
  test_binary();
  test_reduce();
  test_views();
  test_nn();
  test_dropout();
  test_noise();
  test_f32_vs_f64();
  test_errors();
  test_diag_sink();
  test_torch_cases(root);
  printf("%d passed, %d failed\n", npass, nfail);
  arena_free(A);
  return nfail ? 1 : 0;
}
