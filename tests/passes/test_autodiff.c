// test_autodiff.c — checks of compile-time reverse-mode autodiff
// (compiler/passes/autodiff.c).
//
// Usage: test_autodiff [DIR]   (DIR defaults to tests/passes/autodiff, from the repo root)
//
// 1. Finite differences in f64. Every function of every DIR/*.ir module is
//    differentiated with respect to its trainable params and all its float
//    arguments; the gradient function must verify, and its gradients, run in
//    the reference interpreter, must match central differences of the
//    original function within the file's tolerance. A function whose output
//    is not a scalar is checked through sum(output * dy) with a random dy (the
//    seed argument of its gradient function). Random values are uniform in
//    [-1, 1] unless a comment directive in the file says otherwise:
//      ; positive NAME   argument %NAME or state NAME drawn from [0.5, 2]
//      ; int NAME N      integers in [0, N)
//      ; tol X           tolerance for the file: |a - n| <= X * max(1, |a|, |n|)
//      ; dim NAME N      symbolic dim NAME is N in the random inputs
//    Every differentiable op (IRF_DIFF) must appear in some passing case; the
//    test fails and prints the ops without one.
// 2. Structure: frozen params and stop_gradient cost no gradient node,
//    several uses accumulate with add, gradient nodes carry the forward
//    node's span, dropout reuses its mask, a non-scalar loss takes a seed.
//
// Prints "[PASS] name" / "[FAIL] name" / "[SKIP] name: reason" per check and
// a last line "N passed, N failed" (and skipped); exits 1 on any failure.
#include "unit.h"
#include "passes/autodiff.h"
#include "graph/interp.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Arena *A;
static bool covered[IR_OP_COUNT];

// ---- random numbers (fixed seed: the test is deterministic) ----------------------------------------
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double urand(void) { // [0, 1)
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1p-53;
}

// ---- directives ----------------------------------------------------------------------------------------
typedef struct Directives {
  const char *text; // the whole file
  double tol;
  IrFunc *f;        // the function whose symbols `; dim` binds
} Directives;

// The extent of d with every symbol bound by a `; dim NAME N` directive.
static bool extent(const Directives *dr, const Dim *d, int64_t *out) {
  for (int i = 0; dr->f && i < dr->f->syms.len + dr->f->module->syms.len; i++) {
    if (dim_is_const(d, out)) return true;
    int nf = dr->f->syms.len;
    Sym *s = i < nf ? VEC_AT(dr->f->syms, Sym, i) : VEC_AT(dr->f->module->syms, Sym, i - nf);
    char key[256];
    snprintf(key, sizeof key, "; dim %s ", s->name);
    const char *p = strstr(dr->text, key);
    if (p) d = dim_set(A, d, s, strtoll(p + strlen(key), NULL, 10));
  }
  return dim_is_const(d, out);
}

// How values named `name` are drawn: 'u' uniform [-1, 1], 'p' positive, 'i' ints in [0, *n).
static char kind_of(const Directives *d, const char *name, int64_t *n) {
  char key[256];
  snprintf(key, sizeof key, "; positive %s\n", name);
  if (strstr(d->text, key)) return 'p';
  snprintf(key, sizeof key, "; int %s ", name);
  const char *p = strstr(d->text, key);
  if (p) {
    *n = strtoll(p + strlen(key), NULL, 10);
    return 'i';
  }
  return 'u';
}

static Tensor *random_tensor(const Directives *d, const char *name, const Type *t) {
  int64_t dims[INTERP_MAX_RANK], n = 2;
  for (int i = 0; i < t->rank; i++)
    if (!extent(d, t->dims[i], &dims[i])) return NULL;
  Tensor *x = interp_tensor_new(t->dtype, t->rank, dims);
  char k = kind_of(d, name, &n);
  if (t->dtype == DT_BOOL) k = 'b';
  for (int64_t e = 0; x && e < x->numel; e++) {
    double u = urand();
    x->data[e] = k == 'p' ? 0.5 + 1.5 * u : k == 'i' ? floor(u * (double)n)
                 : k == 'b' ? (u < 0.5)
                            : 2 * u - 1;
  }
  return x;
}

// ---- one finite-difference case -------------------------------------------------------------------------
typedef struct Case {
  IrModule *m;
  IrFunc *f, *g;
  const Directives *dir;
  Tensor *args[64];   // f's arguments
  int nargs;
  Tensor *dy;         // seed for a non-scalar loss, else NULL
  const char *paths[64];
  Tensor *state[64];  // every param and buffer of the module
  int nstate;
  char err[512];
} Case;

// The first error in d, or "".
static const char *first_error(const DiagSink *d) {
  for (int i = 0; i < d->diags.len; i++)
    if (VEC_AT(d->diags, Diag, i)->level == DIAG_ERROR) return VEC_AT(d->diags, Diag, i)->msg;
  return "";
}

// interp_run with the failure's message in err.
static int run(IrModule *m, IrFunc *f, Tensor **in, int nin, const InterpParams *p, Tensor **out,
               char *err, size_t errlen) {
  DiagSink d;
  diag_init(&d, A);
  int rc = interp_run(m, f, INTERP_F64, in, nin, p, out, &d);
  snprintf(err, errlen, "%s", first_error(&d));
  return rc;
}

static InterpParams params_of(Case *c) {
  InterpParams p = {c->nstate, c->paths, c->state, 12345};
  return p;
}

// The objective: f's first output (dotted with dy when not a scalar).
static bool objective(Case *c, double *out) {
  InterpParams p = params_of(c);
  Tensor *o[64] = {0};
  if (run(c->m, c->f, c->args, c->nargs, &p, o, c->err, sizeof c->err))
    return false;
  double s = 0;
  for (int64_t e = 0; e < o[0]->numel; e++) s += o[0]->data[e] * (c->dy ? c->dy->data[e] : 1);
  *out = s;
  for (int i = 0; i < c->f->outputs.len; i++) interp_tensor_free(o[i]);
  return true;
}

static bool close_enough(double a, double n, double tol) {
  double s = fmax(1, fmax(fabs(a), fabs(n)));
  return fabs(a - n) <= tol * s;
}

// Central differences of every element of x against the analytic gradient.
static bool compare(Case *c, const char *what, Tensor *x, const Tensor *grad, int *shown) {
  const double h = 1e-6;
  bool ok = true;
  if (!grad || grad->numel != x->numel) {
    printf("  %s: gradient has the wrong shape\n", what);
    return false;
  }
  for (int64_t e = 0; e < x->numel; e++) {
    double keep = x->data[e], lo, hi;
    x->data[e] = keep + h;
    bool r1 = objective(c, &hi);
    x->data[e] = keep - h;
    bool r2 = objective(c, &lo);
    x->data[e] = keep;
    if (!r1 || !r2) return false;
    double num = (hi - lo) / (2 * h), an = grad->data[e];
    if (!close_enough(an, num, c->dir->tol)) {
      ok = false;
      if ((*shown)++ < 6)
        printf("  %s[%lld]: analytic %.12g, numeric %.12g\n", what, (long long)e, an, num);
    }
  }
  return ok;
}

static bool interp_missing(const char *msg) {
  return strstr(msg, "not supported") || strstr(msg, "unsupported") ||
         strstr(msg, "not implemented");
}

// Ops of f that a passing case covers: every IRF_DIFF op in its body.
static void mark_covered(IrFunc *f) {
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    if (ir_op_flags(n->op) & IRF_DIFF) covered[n->op] = true;
  }
}

static bool setup(Case *c) {
  for (int i = 0; i < c->f->params.len; i++) {
    IrNode *x = VEC_AT(c->f->params, IrNode, i);
    c->args[c->nargs++] = random_tensor(c->dir, x->name, x->type);
    if (!c->args[i]) return false;
  }
  for (int i = 0; i < c->m->params.len; i++) {
    IrParam *p = VEC_AT(c->m->params, IrParam, i);
    c->paths[c->nstate] = p->name;
    c->state[c->nstate++] = random_tensor(c->dir, p->name, p->type);
    if (!c->state[i]) return false;
  }
  const Type *lt = VEC_AT(c->f->outputs, IrNode, 0)->type;
  if (lt->rank) c->dy = random_tensor(c->dir, "dy", lt);
  return true;
}

static void free_case(Case *c) {
  for (int i = 0; i < c->nargs; i++) interp_tensor_free(c->args[i]);
  for (int i = 0; i < c->nstate; i++) interp_tensor_free(c->state[i]);
  interp_tensor_free(c->dy);
}

static bool param_read(IrFunc *f, const char *path) {
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    if (n->op == IR_PARAM && strcmp(n->name, path) == 0) return true;
  }
  return false;
}

// Runs the gradient function and checks every gradient output; false on a
// mismatch, -1 (via *skipped) when the interpreter lacks an op.
static bool fd_check(Case *c, bool *skipped) {
  InterpParams p = params_of(c);
  Tensor *in[65], *out[130] = {0};
  for (int i = 0; i < c->nargs; i++) in[i] = c->args[i];
  int nin = c->nargs;
  if (c->dy) in[nin++] = c->dy;
  if (run(c->m, c->g, in, nin, &p, out, c->err, sizeof c->err)) {
    *skipped = interp_missing(c->err);
    printf("  interp: %s\n", c->err);
    return false;
  }
  double obj;
  bool ok = objective(c, &obj);
  if (!ok) {
    *skipped = interp_missing(c->err);
    printf("  interp: %s\n", c->err);
    return false;
  }
  double gl = 0;
  for (int64_t e = 0; e < out[0]->numel; e++) gl += out[0]->data[e] * (c->dy ? c->dy->data[e] : 1);
  if (!close_enough(gl, obj, 1e-12)) {
    printf("  loss %.17g of the gradient function differs from %.17g\n", gl, obj);
    ok = false;
  }
  int k = 1, shown = 0;
  for (int i = 0; i < c->nstate; i++) {
    IrParam *q = VEC_AT(c->m->params, IrParam, i);
    if (q->kind != IRP_PARAM || !q->trainable || !param_read(c->f, q->name)) continue;
    ok &= compare(c, q->name, c->state[i], out[k++], &shown);
  }
  for (int i = 0; i < c->nargs; i++)
    if (dtype_is_float(c->args[i]->dtype))
      ok &= compare(c, VEC_AT(c->f->params, IrNode, i)->name, c->args[i], out[k++], &shown);
  for (int i = 0; i < c->g->outputs.len; i++) interp_tensor_free(out[i]);
  return ok;
}

// Backward nodes (from index nfwd on) that neither an output nor a later
// node uses: the rules must build nothing off the loss-to-leaf paths.
static int count_dead(IrFunc *g, int nfwd) {
  ir_number(g);
  int n = g->nodes.len, dead = 0;
  bool *used = calloc((size_t)n + 1, 1);
  for (int i = 0; i < g->outputs.len; i++) {
    IrNode *o = VEC_AT(g->outputs, IrNode, i);
    if (o->op != IR_INPUT) used[o->order] = true;
  }
  for (int i = n - 1; i >= 0; i--) {
    IrNode *x = VEC_AT(g->nodes, IrNode, i);
    if (!used[i]) {
      dead += i >= nfwd;
      continue;
    }
    for (int j = 0; j < x->nin; j++)
      if (x->in[j]->op != IR_INPUT) used[x->in[j]->order] = true;
  }
  free(used);
  return dead;
}

static void run_case(IrModule *m, IrFunc *f, Directives *dir, const char *file) {
  const char *name = arena_printf(A, "fd %s:%s", file, f->name);
  Case *c = calloc(1, sizeof *c);
  c->m = m;
  c->f = f;
  c->dir = dir;
  dir->f = f;
  bool wrt[64] = {0};
  for (int i = 0; i < f->params.len && i < 64; i++)
    wrt[i] = dtype_is_float(VEC_AT(f->params, IrNode, i)->type->dtype);
  int nfwd = 0;
  DiagSink ad;
  diag_init(&ad, A);
  AdOptions o = {.wrt_inputs = wrt, .diags = &ad, .forward_len = &nfwd};
  c->g = ad_grad(m, f, &o);
  snprintf(c->err, sizeof c->err, "%s", first_error(&ad));
  if (c->g) {
    int dead = count_dead(c->g, nfwd);
    if (dead) printf("  %d backward nodes are used by nothing\n", dead);
    check(arena_printf(A, "no dead backward nodes %s:%s", file, f->name), dead == 0);
  }
  DiagSink ds;
  diag_init(&ds, A);
  if (!c->g || !ir_verify_func(c->g, &ds)) {
    if (!c->g) printf("  ad_grad: %s\n", c->err);
    diag_print(&ds, stdout);
    check(name, false);
  } else if (!setup(c)) {
    printf("  cannot make inputs (symbolic dims?)\n");
    check(name, false);
  } else {
    bool skipped = false, ok = fd_check(c, &skipped);
    if (skipped)
      skip(name, arena_printf(A, "the interpreter lacks an op (%s)", c->err));
    else
      check(name, ok);
    if (ok) mark_covered(f);
  }
  free_case(c);
  free(c);
}

// The file's text, NUL-terminated, in the test's arena (NULL: unreadable).
static char *slurp(const char *path) {
  SrcFile *f = src_read(A, path, NULL);
  return f ? arena_strndup(A, f->text, f->len) : NULL;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void run_file(const char *dir, const char *file) {
  const char *path = arena_printf(A, "%s/%s", dir, file);
  char *text = slurp(path);
  if (!text) {
    check(arena_printf(A, "read %s", path), false);
    return;
  }
  Directives d = {text, 1e-6, NULL};
  const char *t = strstr(text, "; tol ");
  if (t) d.tol = strtod(t + 6, NULL);
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *m = ir_parse(A, src_from_string(A, path, text, strlen(text)), &ds);
  if (!m || !ir_verify(m, &ds)) {
    diag_print(&ds, stdout);
    check(arena_printf(A, "parse %s", path), false);
    return;
  }
  int nf = m->funcs.len;
  for (int i = 0; i < nf; i++) run_case(m, VEC_AT(m->funcs, IrFunc, i), &d, file);
  diag_init(&ds, A);
  bool ok = ir_verify(m, &ds);
  if (!ok) diag_print(&ds, stdout);
  check(arena_printf(A, "verify %s with its gradient functions", file), ok);
  StrBuf b1 = {0}, b2 = {0};
  ir_print_module(&b1, m, 0);
  diag_init(&ds, A);
  IrModule *back = ir_parse(A, src_from_string(A, path, b1.data, b1.len), &ds);
  if (back) ir_print_module(&b2, back, 0);
  check(arena_printf(A, "round-trip %s with its gradient functions", file),
        back && b2.data && strcmp(b1.data, b2.data) == 0);
  sb_free(&b1);
  sb_free(&b2);
}

static void run_dir(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) {
    check(arena_printf(A, "open %s", dir), false);
    return;
  }
  const char *names[512];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)) && n < 512) {
    size_t len = strlen(e->d_name);
    if (len > 3 && strcmp(e->d_name + len - 3, ".ir") == 0) names[n++] = arena_strdup(A, e->d_name);
  }
  closedir(dp);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) run_file(dir, names[i]);
}

static void check_coverage(void) {
  bool ok = true;
  for (int op = 0; op < IR_OP_COUNT; op++) {
    if (!(ir_op_flags((IrOp)op) & IRF_DIFF) || op == IR_PARAM || covered[op]) continue;
    if (ok) printf("  differentiable ops without a passing finite-difference case:");
    printf(" %s", ir_op_name((IrOp)op));
    ok = false;
  }
  if (!ok) printf("\n");
  check("every differentiable op has a finite-difference case", ok);
}

// ---- structural checks -------------------------------------------------------------------------------------
static IrModule *parse(const char *text) {
  DiagSink ds;
  diag_init(&ds, A);
  IrModule *m = ir_parse(A, src_from_string(A, "structural.ir", text, strlen(text)), &ds);
  if (!m || !ir_verify(m, &ds)) {
    diag_print(&ds, stdout);
    return NULL;
  }
  return m;
}

static IrFunc *grad_of(IrModule *m, const char *fname, int *nfwd) {
  AdOptions o = {.forward_len = nfwd};
  IrFunc *g = ad_grad(m, ir_module_find_func(m, fname), &o);
  DiagSink ds;
  diag_init(&ds, A);
  if (g && !ir_verify_func(g, &ds)) {
    diag_print(&ds, stdout);
    return NULL;
  }
  return g;
}

// Backward nodes (after the forward clone) that depend on a node for which
// pred holds, directly or through other nodes.
static int count_dependent(IrFunc *g, int nfwd, bool (*pred)(const IrNode *)) {
  ir_number(g);
  int n = g->nodes.len, cnt = 0;
  bool *dep = calloc((size_t)n + 1, 1);
  for (int i = 0; i < n; i++) {
    IrNode *x = VEC_AT(g->nodes, IrNode, i);
    dep[i] = pred(x);
    for (int j = 0; j < x->nin && !dep[i]; j++)
      dep[i] = x->in[j]->op != IR_INPUT && dep[x->in[j]->order];
    if (dep[i] && i >= nfwd) cnt++;
  }
  free(dep);
  return cnt;
}

static bool is_frozen_read(const IrNode *n) { return n->op == IR_PARAM && strcmp(n->name, "enc.w") == 0; }
static bool is_cut_read(const IrNode *n) { return n->op == IR_PARAM && strcmp(n->name, "cut.w") == 0; }
static bool is_scale_arg(const IrNode *n) { return n->op == IR_MUL && n->in[1]->op == IR_INPUT; }

static const char structural_src[] =
    "module S\n"
    "param enc.w : f64[4, 4] frozen\n"
    "param cut.w : f64[4] trainable\n"
    "param head.w : f64[4, 3] trainable\n"
    "func base(%x: f64[2, 4]) -> (f64) {\n"
    "  %0 = param head.w : f64[4, 3]\n"
    "  %1 = matmul(%x, %0) : f64[2, 3]\n"
    "  %2 = tanh(%1) : f64[2, 3]\n"
    "  %3 = sum(%2) {dims = [0, 1], keepdim = 0} : f64\n"
    "  return %3\n"
    "}\n"
    "func frozen(%x: f64[2, 4]) -> (f64) {\n"
    "  %0 = param enc.w : f64[4, 4]\n"
    "  %1 = relu(%0) : f64[4, 4]\n"
    "  %2 = sum(%1) {dims = [0, 1], keepdim = 0} : f64\n"
    "  %3 = param head.w : f64[4, 3]\n"
    "  %4 = matmul(%x, %3) : f64[2, 3]\n"
    "  %5 = tanh(%4) : f64[2, 3]\n"
    "  %6 = sum(%5) {dims = [0, 1], keepdim = 0} : f64\n"
    "  %7 = add(%6, %2) : f64\n"
    "  return %7\n"
    "}\n"
    "func cut(%x: f64[2, 4]) -> (f64) {\n"
    "  %0 = param cut.w : f64[4]\n"
    "  %1 = exp(%0) : f64[4]\n"
    "  %2 = stop_gradient(%1) : f64[4]\n"
    "  %3 = mul(%x, %2) : f64[2, 4]\n"
    "  %4 = param head.w : f64[4, 3]\n"
    "  %5 = matmul(%3, %4) : f64[2, 3]\n"
    "  %6 = tanh(%5) : f64[2, 3]\n"
    "  %7 = sum(%6) {dims = [0, 1], keepdim = 0} : f64\n"
    "  return %7\n"
    "}\n"
    "func cut_ref(%x: f64[2, 4], %s: f64[4]) -> (f64) {\n"
    "  %0 = mul(%x, %s) : f64[2, 4]\n"
    "  %1 = param head.w : f64[4, 3]\n"
    "  %2 = matmul(%0, %1) : f64[2, 3]\n"
    "  %3 = tanh(%2) : f64[2, 3]\n"
    "  %4 = sum(%3) {dims = [0, 1], keepdim = 0} : f64\n"
    "  return %4\n"
    "}\n"
    "func reuse(%x: f64[3]) -> (f64) {\n"
    "  %0 = param cut.w : f64[4]\n"
    "  %1 = slice(%0) {dim = 0, start = 0, step = 1} : f64[3]\n"
    "  %2 = mul(%1, %1) : f64[3]\n"
    "  %3 = dropout(%2) {p = 0.25, seed = 40} : f64[3]\n"
    "  %4 = mul(%3, %x) : f64[3]\n"
    "  %5 = sum(%4) {dims = [0], keepdim = 0} : f64\n"
    "  return %5\n"
    "}\n"
    "func vector(%x: f64[2, 4]) -> (f64[2, 3]) {\n"
    "  %0 = param head.w : f64[4, 3]\n"
    "  %1 = matmul(%x, %0) : f64[2, 3]\n"
    "  return %1\n"
    "}\n";

static bool has_op(IrFunc *g, int from, IrOp op) {
  for (int i = from; i < g->nodes.len; i++)
    if (VEC_AT(g->nodes, IrNode, i)->op == op) return true;
  return false;
}

static void test_structure(void) {
  IrModule *m = parse(structural_src);
  check("structural module parses and verifies", m != NULL);
  if (!m) return;
  int nb = 0, nf = 0, nc = 0, ncr = 0, nr = 0, nv = 0;
  IrFunc *gb = grad_of(m, "base", &nb), *gf = grad_of(m, "frozen", &nf);
  IrFunc *gc = grad_of(m, "cut", &nc), *gr = grad_of(m, "reuse", &nr);
  IrFunc *gv = grad_of(m, "vector", &nv), *gcr = grad_of(m, "cut_ref", &ncr);
  check("gradient functions verify", gb && gf && gc && gr && gv && gcr);
  if (!gb || !gf || !gc || !gr || !gv || !gcr) return;

  // frozen: outputs are loss + cut.w + head.w (enc.w frozen, cut.w not read: absent)
  check("frozen param: no gradient output", gf->outputs.len == 2);
  check("frozen param: no backward node depends on it", count_dependent(gf, nf, is_frozen_read) == 0);
  check("frozen branch adds no backward nodes",
        gf->nodes.len - nf == gb->nodes.len - nb);

  // stop_gradient: cut.w is trainable and read, its gradient is a zero constant
  check("stop_gradient: one output per trainable param read", gc->outputs.len == 3);
  IrNode *dcut = VEC_AT(gc->outputs, IrNode, 1);
  double v = -1;
  check("stop_gradient: the cut param's gradient is a zero constant",
        dcut->op == IR_CONST && ir_attr_float(&dcut->attrs, IRA_VALUE, &v) && v == 0);
  // behind stop_gradient, exp(cut.w) costs what an argument in its place costs
  check("stop_gradient: the cut branch adds no backward nodes",
        gc->nodes.len - nc == gcr->nodes.len - ncr + 1); // + the zero gradient
  check("stop_gradient: only the forward value of the cut param is used",
        count_dependent(gc, nc, is_cut_read) == count_dependent(gcr, ncr, is_scale_arg));

  // reuse: mul(a, a) accumulates with add; dropout's mask node is reused
  check("two uses of a value accumulate with add", has_op(gr, nr, IR_ADD));
  check("dropout becomes x * dropout_mask in the gradient function",
        !has_op(gr, 0, IR_DROPOUT) && has_op(gr, 0, IR_DROPOUT_MASK));
  int masks = 0;
  for (int i = 0; i < gr->nodes.len; i++) masks += VEC_AT(gr->nodes, IrNode, i)->op == IR_DROPOUT_MASK;
  check("dropout mask drawn once (forward and backward share it)", masks == 1);
  int64_t seed = 0;
  for (int i = 0; i < gr->nodes.len; i++) {
    IrNode *n = VEC_AT(gr->nodes, IrNode, i);
    if (n->op == IR_DROPOUT_MASK) ir_attr_int(&n->attrs, IRA_SEED, &seed);
  }
  check("dropout mask keeps the forward seed", seed == 40);

  // spans: every backward node inherits the span of a forward node
  bool spans = true;
  for (int i = nb; i < gb->nodes.len; i++) spans &= VEC_AT(gb->nodes, IrNode, i)->span.file != NULL;
  check("backward nodes carry the forward node's span", spans);

  // non-scalar loss: a seed argument %dy of the output's type
  IrNode *dy = VEC_AT(gv->params, IrNode, gv->params.len - 1);
  check("non-scalar loss takes a seed argument",
        gv->params.len == 2 && strcmp(dy->name, "dy") == 0 &&
            type_eq(dy->type, VEC_AT(gv->outputs, IrNode, 0)->type));

  // the module with all gradient functions prints and parses back
  StrBuf b = {0};
  ir_print_module(&b, m, 0);
  IrModule *back = parse(b.data);
  StrBuf b2 = {0};
  if (back) ir_print_module(&b2, back, 0);
  check("gradient functions round-trip through the text form",
        back && strcmp(b.data, b2.data) == 0);
  sb_free(&b);
  sb_free(&b2);
}

// concat along a symbolic extent has no constant offsets: a clean error.
static void test_symbolic_concat(void) {
  IrModule *m = parse("module C\n"
                      "func f(%x: f64[B], %y: f64[3]) -> (f64) {\n"
                      "  %0 = concat(%x, %y) {dim = 0} : f64[B + 3]\n"
                      "  %1 = sum(%0) {dims = [0], keepdim = 0} : f64\n"
                      "  return %1\n"
                      "}\n");
  DiagSink ds;
  diag_init(&ds, A);
  bool wrt[2] = {true, true};
  AdOptions o = {.wrt_inputs = wrt, .diags = &ds};
  IrFunc *g = m ? ad_grad(m, VEC_AT(m->funcs, IrFunc, 0), &o) : NULL;
  const Diag *e = ds.diags.len ? VEC_AT(ds.diags, Diag, 0) : NULL;
  check("concat along a symbolic extent is refused at the concat, with a reason",
        m && !g && e && e->level == DIAG_ERROR && strstr(e->msg, "cannot differentiate concat") &&
            e->span.file && m->funcs.len == 1);
}

// ---- ties, exactly ---------------------------------------------------------------------------------
// Runs the gradient of the module's only function on fixed 1-D inputs and
// compares the argument gradients with want (nin arrays of len values).
static bool exact_grads(const char *text, int nin, int len, const double *vals,
                        const double *want) {
  IrModule *m = parse(text);
  if (!m) return false;
  IrFunc *f = VEC_AT(m->funcs, IrFunc, 0);
  bool wrt[4] = {true, true, true, true};
  AdOptions o = {.wrt_inputs = wrt};
  IrFunc *g = ad_grad(m, f, &o);
  if (!g) return false;
  Tensor *in[4], *out[8] = {0};
  int64_t dims[1] = {len};
  for (int i = 0; i < nin; i++) in[i] = interp_tensor_from(DT_F64, 1, dims, vals + i * len);
  char err[256];
  bool ok = run(m, g, in, nin, NULL, out, err, sizeof err) == 0;
  if (!ok) printf("  interp: %s\n", err);
  for (int i = 0; ok && i < nin; i++)
    for (int e = 0; e < len; e++)
      if (out[1 + i]->data[e] != want[i * len + e]) {
        printf("  d%d[%d] = %g, want %g\n", i, e, out[1 + i]->data[e], want[i * len + e]);
        ok = false;
      }
  for (int i = 0; i < nin; i++) interp_tensor_free(in[i]);
  for (int i = 0; i < g->outputs.len; i++) interp_tensor_free(out[i]);
  return ok;
}

static void test_ties(void) {
  static const double x[] = {1, 3, 3, 2}, dmax[] = {0, 1, 0, 0};
  check("max: a tie gives everything to the first arg max",
        exact_grads("module T\nfunc f(%x: f64[4]) -> (f64) {\n"
                    "  %0 = max(%x) {dims = [0], keepdim = 0} : f64\n  return %0\n}\n",
                    1, 4, x, dmax));
  static const double y[] = {2, 1, 1, 3}, dmin[] = {0, 1, 0, 0};
  check("min: a tie gives everything to the first arg min",
        exact_grads("module T\nfunc f(%x: f64[4]) -> (f64) {\n"
                    "  %0 = min(%x) {dims = [0], keepdim = 0} : f64\n  return %0\n}\n",
                    1, 4, y, dmin));
  static const double ab[] = {1, 2, 3, 1, 5, 0}, dab[] = {0.5, 0, 1, 0.5, 1, 0};
  check("maximum: a tie splits the gradient evenly",
        exact_grads("module T\nfunc f(%a: f64[3], %b: f64[3]) -> (f64) {\n"
                    "  %0 = maximum(%a, %b) : f64[3]\n"
                    "  %1 = sum(%0) {dims = [0], keepdim = 0} : f64\n  return %1\n}\n",
                    2, 3, ab, dab));
  static const double dba[] = {0.5, 1, 0, 0.5, 0, 1};
  check("minimum: a tie splits the gradient evenly",
        exact_grads("module T\nfunc f(%a: f64[3], %b: f64[3]) -> (f64) {\n"
                    "  %0 = minimum(%a, %b) : f64[3]\n"
                    "  %1 = sum(%0) {dims = [0], keepdim = 0} : f64\n  return %1\n}\n",
                    2, 3, ab, dba));
  static const double r[] = {-1, 0, 2}, drelu[] = {0, 0, 1};
  check("relu: the gradient at 0 is 0",
        exact_grads("module T\nfunc f(%x: f64[3]) -> (f64) {\n"
                    "  %0 = relu(%x) : f64[3]\n"
                    "  %1 = sum(%0) {dims = [0], keepdim = 0} : f64\n  return %1\n}\n",
                    1, 3, r, drelu));
  static const double dabs[] = {-1, 0, 1};
  check("abs: the gradient at 0 is 0",
        exact_grads("module T\nfunc f(%x: f64[3]) -> (f64) {\n"
                    "  %0 = abs(%x) : f64[3]\n"
                    "  %1 = sum(%0) {dims = [0], keepdim = 0} : f64\n  return %1\n}\n",
                    1, 3, r, dabs));
}

// ---- PyTorch's gradients ------------------------------------------------------------------------------
// DIR/torch/NAME.{ir,vals} (written by DIR/torch/gen_torch.py): f(x) -> y,
// with x, dy, y and torch's dy^T dy/dx. The gradient function ad_grad builds
// (it takes dy: y is not a scalar) must give y and dx within 1e-9 relative.

// The tensors of a .vals text, in order ("in|out f64 RANK DIMS.. : V.."):
// inputs to in[], outputs to out[]; false if malformed.
static bool read_vals(char *text, Tensor **in, int *nin, Tensor **out, int *nout) {
  *nin = *nout = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char kind[8];
    int rank, used;
    if (sscanf(line, "%7s f64 %d%n", kind, &rank, &used) != 2 || rank < 0 || rank > 8) return false;
    char *p = line + used;
    int64_t dims[8];
    for (int i = 0; i < rank; i++) dims[i] = strtoll(p, &p, 10);
    Tensor *t = interp_tensor_new(DT_F64, rank, dims);
    p = strchr(p, ':');
    for (int64_t e = 0; p && e < t->numel; e++) t->data[e] = strtod(p + 1, &p);
    if (!p || (*nin + *nout) >= 8) return false;
    if (!strcmp(kind, "in")) in[(*nin)++] = t;
    else out[(*nout)++] = t;
  }
  return *nin == 2 && *nout == 2;
}

static void torch_case(const char *dir, const char *name) {
  char *text = slurp(arena_printf(A, "%s/%s.ir", dir, name));
  char *vals = slurp(arena_printf(A, "%s/%s.vals", dir, name));
  Tensor *in[8] = {0}, *want[8] = {0}, *got[8] = {0};
  int nin = 0, nout = 0;
  IrModule *m = text ? parse(text) : NULL;
  bool wrt[1] = {true}, ok = m && vals && read_vals(vals, in, &nin, want, &nout);
  IrFunc *g = ok ? ad_grad(m, VEC_AT(m->funcs, IrFunc, 0), &(AdOptions){.wrt_inputs = wrt}) : NULL;
  char err[256] = "";
  ok = g && run(m, g, in, 2, NULL, got, err, sizeof err) == 0;
  if (!ok && err[0]) printf("  %s\n", err);
  for (int k = 0; ok && k < 2; k++)
    for (int64_t e = 0; ok && e < want[k]->numel; e++)
      if (fabs(got[k]->data[e] - want[k]->data[e]) > 1e-12 + 1e-9 * fabs(want[k]->data[e])) {
        printf("  %s[%lld] is %.17g, torch %.17g\n", k ? "dx" : "y", (long long)e, got[k]->data[e],
               want[k]->data[e]);
        ok = false;
      }
  check(arena_printf(A, "torch gradient %s", name), ok);
  for (int k = 0; k < 8; k++) {
    interp_tensor_free(in[k]);
    interp_tensor_free(want[k]);
    interp_tensor_free(got[k]);
  }
}

static void test_torch(const char *dir) {
  const char *names[] = {"softplus", "leaky_relu", "elu", "hardtanh", "clamp", "log_sigmoid"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) torch_case(dir, names[i]);
}

// `precision`: the backward products of a matmul and a conv2d carry the
// forward op's precision attribute (every matmul, conv2d_grad_input and
// conv2d_grad_weight of the gradient function), so they round as it does.
static void test_precision(void) {
  IrModule *m = parse("module P\n"
                      "func f(%x: f32[2, 1, 5, 5], %w: f32[3, 1, 3, 3], %v: f32[75, 4]) -> (f32) {\n"
                      "  %0 = conv2d(%x, %w) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], groups = 1, "
                      "precision = bf16} : f32[2, 3, 5, 5]\n"
                      "  %1 = reshape(%0) : f32[2, 75]\n"
                      "  %2 = matmul(%1, %v) {precision = bf16} : f32[2, 4]\n"
                      "  %3 = sum(%2) {dims = [0, 1], keepdim = 0} : f32\n"
                      "  return %3\n"
                      "}\n");
  bool wrt[3] = {true, true, true};
  IrFunc *g = m ? ad_grad(m, VEC_AT(m->funcs, IrFunc, 0), &(AdOptions){.wrt_inputs = wrt}) : NULL;
  int products = 0, rounded = 0;
  for (int i = 0; g && i < g->nodes.len; i++) {
    IrNode *n = VEC_AT(g->nodes, IrNode, i);
    if (n->op != IR_MATMUL && n->op != IR_CONV2D && n->op != IR_CONV2D_GRAD_INPUT && n->op != IR_CONV2D_GRAD_WEIGHT)
      continue;
    products++;
    rounded += ir_node_int(n, IRA_PRECISION) == DT_BF16;
  }
  // forward conv2d, matmul; backward 2 matmuls, conv2d_grad_input, conv2d_grad_weight
  check("the backward matmuls and conv gradients keep the forward op's precision", g && products == 6 && rounded == 6);
}

int main(int argc, char **argv) {
  A = arena_new();
  test_precision();
  const char *dir = argc > 1 ? argv[1] : "tests/passes/autodiff";
  test_structure();
  test_symbolic_concat();
  test_ties();
  test_torch(arena_printf(A, "%s/torch", dir));
  run_dir(dir);
  check_coverage();
  printf("%d passed, %d failed", npass, nfail);
  if (nskip) printf(", %d skipped", nskip);
  printf("\n");
  arena_free(A);
  return nfail ? 1 : 0;
}
