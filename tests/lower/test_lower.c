// test_lower.c — checks of the lowering from checked models to graph IR
// (compiler/lower/lower.c, emit.c) and of `mlc build` / `mlc run --interp`
// as far as lowering goes (the driver's pipeline).
//
// Run from the repo root (ctest does). Checks:
//   1. every examples/*.model lowers; every function verifies; the module's
//      text round-trips (print -> ir_parse -> print identical); ad_grad of
//      loss builds and verifies; `mlc build --emit ir|dot` succeeds;
//   2. structure: frozen params and stop_gradient cost no gradient node;
//      params carry their paths, trainability and initialisers;
//   3. the straight-through estimator of examples/frozen_ste.model: the
//      gradient through binarize is the declared rule, computed by hand;
//   4. train vs eval: dropout only in train mode; batch_norm on batch
//      statistics in train mode and on the running buffers in eval mode;
//      label smoothing lowers to the documented formula;
//   5. the interpreter runs fashion_mlp's loss and eval on a random batch
//      (B = 3): finite, and equal (no dropout or batch norm).
// Prints "[PASS] name" / "[FAIL] name" and "N passed, N failed"; exits 1 on
// any failure.
#include "unit.h"
#include "passes/autodiff.h"
#include "driver/driver.h"
#include "sema/frontend.h"
#include "graph/interp.h"
#include "lower/lower.h"
#include "passes/optim.h"
#include "sema/recipe.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double urand(double lo, double hi) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53;
}

// ---- helpers ---------------------------------------------------------------------------------------
typedef struct Lowered {
  Arena *a;
  DiagSink d;
  LowerResult r;
  Sema *S;
  bool ok;
} Lowered;

static Lowered lower_src(const char *path, const char *text, const char *model) {
  Lowered l = {.a = arena_new()};
  diag_init(&l.d, l.a);
  SrcFile *f = text ? src_from_string(l.a, path, text, strlen(text)) : src_read(l.a, path, NULL);
  Sema *S = NULL;
  if (!f || frontend_analyze(l.a, &l.d, f, &(SemaOptions){0}, &S) || !S) {
    diag_print(&l.d, stdout);
    return l;
  }
  l.S = S;
  l.ok = lower_model(l.a, &l.d, S, model, &l.r);
  if (!l.ok) diag_print(&l.d, stdout);
  return l;
}

static int count_op(IrFunc *f, IrOp op, int from) {
  int n = 0;
  for (int i = from; i < f->nodes.len; i++) n += VEC_AT(f->nodes, IrNode, i)->op == op;
  return n;
}

static const char *model_name(const char *path) {
  static char buf[128];
  FILE *f = fopen(path, "r");
  buf[0] = 0;
  char line[512];
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "model ", 6) && sscanf(line + 6, "%127[A-Za-z0-9_]", buf) == 1) break;
  if (f) fclose(f);
  return buf;
}

static bool round_trips(Lowered *l) {
  StrBuf b1 = {0}, b2 = {0};
  ir_print_module(&b1, l->r.module, 0);
  SrcFile *src = src_from_string(l->a, "<lowered>", b1.data, b1.len);
  DiagSink d;
  diag_init(&d, l->a);
  IrModule *m = ir_parse(l->a, src, &d);
  bool ok = m && ir_verify(m, &d);
  if (ok) {
    ir_print_module(&b2, m, 0);
    ok = b1.len == b2.len && !memcmp(b1.data, b2.data, b1.len);
  }
  if (!ok) diag_print(&d, stdout);
  sb_free(&b1);
  sb_free(&b2);
  return ok;
}

// ---- 1. every example ------------------------------------------------------------------------------
static void check_example(const char *path) {
  const char *model = model_name(path);
  Lowered l = lower_src(path, NULL, model);
  check(arena_printf(l.a, "%s: lowers", path), l.ok);
  if (!l.ok) {
    arena_free(l.a);
    return;
  }
  check(arena_printf(l.a, "%s: verifies", path), ir_verify(l.r.module, &l.d));
  check(arena_printf(l.a, "%s: forward, loss, eval, predict", path),
        l.r.forward && l.r.loss && l.r.eval && l.r.predict && l.r.eval->outputs.len == 2);
  if (l.r.loss) {
    IrFunc *g = ad_grad(l.r.module, l.r.loss, &(AdOptions){.name = "loss_grad", .diags = &l.d});
    if (!g) diag_print(&l.d, stdout);
    check(arena_printf(l.a, "%s: ad_grad(loss) verifies", path), g && ir_verify_func(g, &l.d));
    // the train step of the example's own recipe
    Recipe rc;
    sema_recipe(l.S, model, &rc);
    IrFunc *step = g ? optim_build_step(l.r.module, l.r.loss, g, &rc.opt) : NULL;
    check(arena_printf(l.a, "%s: train_step of its recipe verifies", path),
          step && rc.present && ir_verify_func(step, &l.d) &&
              step->params.len == rc.opt.accumulate * l.r.loss->params.len);
  }
  check(arena_printf(l.a, "%s: text round-trips", path), round_trips(&l));
  const char *out = arena_printf(l.a, "/tmp/mlc-test-lower-%d.ir", (int)getpid());
  char *argv_ir[] = {"build", (char *)path, "--emit", "ir", "-o", (char *)out, NULL};
  char *argv_dot[] = {"build", (char *)path, "--emit", "dot", "--dump-after=lower", "-o",
                      (char *)out, NULL};
  check(arena_printf(l.a, "%s: mlc build --emit ir", path), driver_build(6, argv_ir) == 0);
  check(arena_printf(l.a, "%s: mlc build --emit dot", path), driver_build(7, argv_dot) == 0);
  remove(out);
  arena_free(l.a);
}

// ---- 2. structure ------------------------------------------------------------------------------------
static void check_structure(void) {
  Lowered l = lower_src("examples/frozen_ste.model", NULL, "BinaryCodes");
  if (!l.ok) {
    check("frozen_ste lowers", false);
    return;
  }
  IrModule *m = l.r.module;
  IrParam *w1 = ir_module_find_param(m, "backbone.fc1.w"), *proj = ir_module_find_param(m, "proj");
  IrParam *hw = ir_module_find_param(m, "head.w"), *hb = ir_module_find_param(m, "head.b");
  check("paths and trainability: backbone frozen by the recipe, proj declared frozen",
        w1 && proj && hw && hb && !w1->trainable && !proj->trainable && hw->trainable);
  check("initialisers: Linear.w kaiming_uniform(a = sqrt(5)), fan_in 784; proj normal(0, 1/16)",
        w1 && w1->init && w1->init->kind == IRI_KAIMING_UNIFORM && fabs(w1->init->a - sqrt(5)) < 1e-12 &&
            w1->init->fan_in == 784 && w1->init->fan_out == 256 && proj && proj->init &&
            proj->init->kind == IRI_NORMAL && proj->init->std == 0.0625 && hb && hb->init &&
            hb->init->kind == IRI_UNIFORM && fabs(hb->init->high - 0.125) < 1e-12);
  int fl = 0;
  IrFunc *g = ad_grad(m, l.r.loss, &(AdOptions){.forward_len = &fl});
  bool ok = g && g->outputs.len == 3 && count_op(g, IR_RELU_GRAD, fl) == 0 &&
            count_op(g, IR_WHERE, fl) == 0;
  check("frozen backbone and proj: no gradient nodes behind the STE", ok);
  arena_free(l.a);

  l = lower_src("sg.model",
                "model SG {\n  fc = Linear(4, 3)\n  head = Linear(3, 2)\n"
                "  loss(x: f32[B, 4]) -> f32 {\n"
                "    return sum(head(stop_gradient(fc(x))))\n  }\n}\n",
                "SG");
  g = l.ok ? ad_grad(l.r.module, l.r.loss, &(AdOptions){.forward_len = &fl}) : NULL;
  ok = g && g->outputs.len == 5;
  for (int i = fl; ok && i < g->nodes.len; i++) {
    IrNode *n = VEC_AT(g->nodes, IrNode, i);
    int64_t r0 = 0, r1 = 0; // d fc.w would be a [3, 4] or [4, 3] product
    if (n->op == IR_MATMUL && n->type->rank == 2 && dim_is_const(n->type->dims[0], &r0) &&
        dim_is_const(n->type->dims[1], &r1))
      ok = !((r0 == 3 && r1 == 4) || (r0 == 4 && r1 == 3));
  }
  ok = ok && VEC_AT(g->outputs, IrNode, 1)->op == IR_CONST && VEC_AT(g->outputs, IrNode, 2)->op == IR_CONST;
  check("stop_gradient: fc gets zero constants and no backward nodes", ok);
  arena_free(l.a);
}

// ---- 3. the straight-through estimator -------------------------------------------------------------------
static Tensor *rand_tensor(DType dt, int rank, const int64_t *dims, double lo, double hi) {
  Tensor *t = interp_tensor_new(dt, rank, dims);
  for (int64_t i = 0; i < t->numel; i++) t->data[i] = urand(lo, hi);
  return t;
}

// Random values for every param and buffer of m, in order, uniform in
// [-s, s] with s = scale(path); free with free_state.
typedef struct State {
  int n;
  const char **paths;
  Tensor **vals;
} State;

static State random_state(IrModule *m, double (*scale)(const char *path)) {
  State st = {.n = m->params.len};
  st.paths = calloc((size_t)st.n + 1, sizeof *st.paths);
  st.vals = calloc((size_t)st.n + 1, sizeof *st.vals);
  for (int i = 0; i < st.n; i++) {
    IrParam *p = VEC_AT(m->params, IrParam, i);
    int64_t dims[4];
    for (int j = 0; j < p->type->rank; j++) dim_is_const(p->type->dims[j], &dims[j]);
    double s = scale(p->name);
    st.paths[i] = p->name;
    st.vals[i] = rand_tensor(p->type->dtype, p->type->rank, dims, -s, s);
  }
  return st;
}

static void free_state(State *st) {
  for (int i = 0; i < st->n; i++) interp_tensor_free(st->vals[i]);
  free(st->paths);
  free(st->vals);
}

static double ste_scale(const char *path) { return !strcmp(path, "proj") ? 3.0 : 0.06; }
static double modes_scale(const char *path) { return (void)path, 0.3; }
static double mlp_scale(const char *path) { return (void)path, 0.05; }

// y[n, o] = sum_i x[n, i] * w[o, i] (+ b[o]) — torch.nn.Linear.
static void linear(const double *x, const double *w, const double *b, double *y, int n, int in, int out) {
  for (int r = 0; r < n; r++)
    for (int o = 0; o < out; o++) {
      double s = b ? b[o] : 0;
      for (int i = 0; i < in; i++) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
}

static void check_ste(void) {
  Lowered l = lower_src("examples/frozen_ste.model", NULL, "BinaryCodes");
  if (!l.ok) {
    check("STE: lowers", false);
    return;
  }
  IrModule *m = l.r.module;
  // Train proj as well, so that a gradient flows through binarize.
  ir_module_find_param(m, "proj")->trainable = true;
  IrFunc *g = ad_grad(m, l.r.loss, NULL);
  check("STE: ad_grad verifies with proj trainable", g && ir_verify_func(g, &l.d));
  if (!g) return;
  enum { B = 3, D0 = 784, D1 = 256, C = 64, K = 10 };
  State st = random_state(m, ste_scale);
  int n = st.n;
  Tensor **vals = st.vals;
  InterpParams ip = {n, st.paths, vals, 1};
  int64_t xd[2] = {B, D0}, yd[1] = {B};
  Tensor *x = rand_tensor(DT_F32, 2, xd, 0, 1), *y = interp_tensor_new(DT_I32, 1, yd);
  for (int i = 0; i < B; i++) y->data[i] = (i * 7) % K;
  Tensor *in[2] = {x, y}, *out[8] = {0};
  int rc = interp_run(m, g, INTERP_F64, in, 2, &ip, out, &l.d);
  if (rc) diag_print(&l.d, stdout);
  check("STE: loss_grad runs", rc == 0);
  if (rc == 0) {
    // By hand: h = relu(fc2(relu(fc1(x)))) @ proj; codes = sign-like step;
    // logits = head(codes); dlogits = (softmax - onehot) / B;
    // dcodes = dlogits @ head.w; dh = where(|h| <= 1, dcodes, 0);
    // dproj = h2^T @ dh.
    static double h1[B * D1], h2[B * D1], h[B * C], codes[B * C], lg[B * K], dl[B * K], dh[B * C];
    linear(x->data, vals[0]->data, vals[1]->data, h1, B, D0, D1);
    for (int i = 0; i < B * D1; i++) h1[i] = h1[i] > 0 ? h1[i] : 0;
    linear(h1, vals[2]->data, vals[3]->data, h2, B, D1, D1);
    for (int i = 0; i < B * D1; i++) h2[i] = h2[i] > 0 ? h2[i] : 0;
    const double *P = vals[4]->data, *HW = vals[5]->data;
    for (int r = 0; r < B; r++)
      for (int c = 0; c < C; c++) {
        double s = 0;
        for (int i = 0; i < D1; i++) s += h2[r * D1 + i] * P[i * C + c];
        h[r * C + c] = s;
        codes[r * C + c] = s >= 0 ? 1 : -1;
      }
    linear(codes, HW, vals[6]->data, lg, B, C, K);
    for (int r = 0; r < B; r++) {
      double mx = -1e300, z = 0;
      for (int k = 0; k < K; k++) mx = fmax(mx, lg[r * K + k]);
      for (int k = 0; k < K; k++) z += exp(lg[r * K + k] - mx);
      for (int k = 0; k < K; k++)
        dl[r * K + k] = (exp(lg[r * K + k] - mx) / z - (k == (int)y->data[r])) / B;
    }
    int inside = 0, outside = 0;
    for (int r = 0; r < B; r++)
      for (int c = 0; c < C; c++) {
        double s = 0;
        for (int k = 0; k < K; k++) s += dl[r * K + k] * HW[k * C + c];
        bool pass = fabs(h[r * C + c]) <= 1;
        inside += pass;
        outside += !pass;
        dh[r * C + c] = pass ? s : 0;
      }
    double maxerr = 0, maxv = 0;
    for (int i = 0; i < D1; i++)
      for (int c = 0; c < C; c++) {
        double s = 0;
        for (int r = 0; r < B; r++) s += h2[r * D1 + i] * dh[r * C + c];
        maxerr = fmax(maxerr, fabs(s - out[1]->data[i * C + c]));
        maxv = fmax(maxv, fabs(s));
      }
    printf("  STE: %d elements pass, %d are cut; max |dproj| %.3g, max error %.3g\n", inside,
           outside, maxv, maxerr);
    check("STE: d loss / d proj equals the declared rule through binarize",
          maxerr <= 1e-9 * fmax(1, maxv) && maxv > 0 && inside > 0 && outside > 0);
    for (int i = 0; i < g->outputs.len; i++) interp_tensor_free(out[i]);
  }
  free_state(&st);
  interp_tensor_free(x);
  interp_tensor_free(y);
  arena_free(l.a);
}

// ---- 4. train vs eval ------------------------------------------------------------------------------------
static void check_modes(void) {
  Lowered l = lower_src("modes.model",
                        "model M {\n  conv = Conv2d(1, 4, 3, padding = 1)\n  bn = BatchNorm2d(4)\n"
                        "  drop = Dropout(0.25)\n  fc = Linear(4 * 8 * 8, 10)\n"
                        "  forward(x: f32[B, 1, 8, 8]) -> f32[B, 10] {\n"
                        "    h = relu(bn(conv(x)))\n    return fc(drop(flatten(h)))\n  }\n"
                        "  loss(x: f32[B, 1, 8, 8], y: i64[B]) -> f32 {\n"
                        "    return cross_entropy(forward(x), y, label_smoothing = 0.1)\n  }\n}\n",
                        "M");
  check("modes: lowers", l.ok);
  if (!l.ok) return;
  IrModule *m = l.r.module;
  check("modes: verifies", ir_verify(m, &l.d));
  check("modes: running stats are buffers",
        ir_module_find_param(m, "bn.running_mean") &&
            ir_module_find_param(m, "bn.running_mean")->kind == IRP_BUFFER &&
            ir_module_find_param(m, "bn.running_var")->init->kind == IRI_ONES);
  check("modes: dropout in forward and loss, none in predict and eval",
        count_op(l.r.forward, IR_DROPOUT, 0) == 1 && count_op(l.r.loss, IR_DROPOUT, 0) == 1 &&
            count_op(l.r.predict, IR_DROPOUT, 0) == 0 && count_op(l.r.eval, IR_DROPOUT, 0) == 0);
  bool train_stats = false, eval_buffers = false;
  for (int i = 0; i < l.r.forward->nodes.len; i++) {
    IrNode *n = VEC_AT(l.r.forward->nodes, IrNode, i);
    if (n->op == IR_BATCH_NORM) train_stats = n->in[3]->op == IR_MEAN && n->in[4]->op == IR_MEAN;
  }
  for (int i = 0; i < l.r.predict->nodes.len; i++) {
    IrNode *n = VEC_AT(l.r.predict->nodes, IrNode, i);
    if (n->op == IR_BATCH_NORM)
      eval_buffers = n->in[3]->op == IR_BUFFER && n->in[4]->op == IR_BUFFER &&
                     !strcmp(n->in[3]->name, "bn.running_mean");
  }
  check("modes: batch_norm on batch statistics in train mode", train_stats);
  check("modes: batch_norm on the running buffers in eval mode", eval_buffers);
  check("modes: label smoothing uses log_softmax", count_op(l.r.loss, IR_LOG_SOFTMAX, 0) == 1);
  check("modes: running-stat stores in train mode only",
        count_op(l.r.loss, IR_STORE, 0) == 2 && count_op(l.r.forward, IR_STORE, 0) == 2 &&
            count_op(l.r.eval, IR_STORE, 0) == 0 && count_op(l.r.predict, IR_STORE, 0) == 0);
  int fl = 0;
  IrFunc *g = ad_grad(m, l.r.loss, &(AdOptions){.forward_len = &fl});
  check("modes: ad_grad uses the fused batch_norm_grad and keeps the stores",
        g && ir_verify_func(g, &l.d) && count_op(g, IR_BATCH_NORM_GRAD, fl) == 1 &&
            count_op(g, IR_STORE, 0) == 2);
  // One train-mode step moves the running stats as torch does.
  State st = random_state(m, modes_scale);
  int n = st.n;
  const char **paths = st.paths;
  Tensor **vals = st.vals;
  for (int i = 0; i < n; i++)
    for (int k = 0; !strncmp(paths[i], "bn.running_", 11) && k < 4; k++)
      vals[i]->data[k] = strstr(paths[i], "var") ? 1 : 0;
  InterpParams ip = {n, paths, vals, 3};
  int64_t xd[4] = {2, 1, 8, 8}, yd[1] = {2};
  Tensor *x = rand_tensor(DT_F32, 4, xd, -1, 1), *y = interp_tensor_new(DT_I64, 1, yd);
  y->data[1] = 3;
  Tensor *in[2] = {x, y}, *out[2] = {0};
  bool ran = interp_run(m, l.r.loss, INTERP_F64, in, 2, &ip, out, &l.d) == 0;
  if (!ran) diag_print(&l.d, stdout);
  bool moved = false, finite = ran && isfinite(out[0]->data[0]);
  for (int i = 0; ran && i < n; i++)
    if (!strcmp(paths[i], "bn.running_mean") || !strcmp(paths[i], "bn.running_var"))
      for (int k = 0; k < 4; k++) moved |= vals[i]->data[k] != (strstr(paths[i], "var") ? 1 : 0);
  check("modes: loss runs and updates the running stats", ran && finite && moved);
  interp_tensor_free(out[0]);
  free_state(&st);
  interp_tensor_free(x);
  interp_tensor_free(y);
  check("modes: round-trips", round_trips(&l));
  arena_free(l.a);
}

// ---- 5. interpreter smoke test ------------------------------------------------------------------------------
static void check_interp(void) {
  Lowered l = lower_src("examples/fashion_mlp.model", NULL, "FashionMLP");
  if (!l.ok) {
    check("interp: fashion_mlp lowers", false);
    return;
  }
  IrModule *m = l.r.module;
  State st = random_state(m, mlp_scale);
  InterpParams ip = {st.n, st.paths, st.vals, 0};
  int64_t xd[2] = {3, 784}, yd[1] = {3};
  Tensor *x = rand_tensor(DT_F32, 2, xd, 0, 1), *y = interp_tensor_new(DT_I32, 1, yd);
  for (int i = 0; i < 3; i++) y->data[i] = i + 4;
  Tensor *in[2] = {x, y}, *lo[1] = {0}, *eo[2] = {0}, *po[1] = {0};
  bool ok = interp_run(m, l.r.loss, INTERP_F32, in, 2, &ip, lo, &l.d) == 0 &&
            interp_run(m, l.r.eval, INTERP_F32, in, 2, &ip, eo, &l.d) == 0 &&
            interp_run(m, l.r.predict, INTERP_F32, in, 1, &ip, po, &l.d) == 0;
  if (!ok) diag_print(&l.d, stdout);
  check("interp: loss, eval and predict run (B = 3)", ok);
  if (ok) {
    check("interp: the loss is finite and near log(10)",
          isfinite(lo[0]->data[0]) && fabs(lo[0]->data[0] - log(10.0)) < 0.5);
    check("interp: eval's loss equals loss (no dropout or batch norm)", eo[0]->data[0] == lo[0]->data[0]);
    bool same = eo[1]->numel == 30;
    for (int i = 0; same && i < 30; i++) same = eo[1]->data[i] == po[0]->data[i];
    check("interp: eval's second output is predict's", same);
  }
  interp_tensor_free(lo[0]);
  interp_tensor_free(eo[0]);
  interp_tensor_free(eo[1]);
  interp_tensor_free(po[0]);
  free_state(&st);
  interp_tensor_free(x);
  interp_tensor_free(y);
  arena_free(l.a);
}

// A version 1 .npy file of float32 ('<f4') or int32 ('<i4') values.
static bool write_npy(const char *path, bool f32, int rank, const int64_t *dims, const double *v) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  char hdr[128], shape[64] = "";
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld,%s", (long long)dims[i],
             i + 1 < rank ? " " : "");
    n *= dims[i];
  }
  int len = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     f32 ? "<f4" : "<i4", shape);
  int total = (10 + len + 1 + 15) / 16 * 16;
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  unsigned char hl[2] = {(unsigned char)((total - 10) & 255), (unsigned char)((total - 10) >> 8)};
  fwrite(hl, 1, 2, f);
  fwrite(hdr, 1, (size_t)len, f);
  for (int i = 10 + len; i < total - 1; i++) fputc(' ', f);
  fputc('\n', f);
  for (int64_t i = 0; i < n; i++) {
    if (f32) {
      float x = (float)v[i];
      fwrite(&x, 4, 1, f);
    } else {
      int32_t x = (int32_t)v[i];
      fwrite(&x, 4, 1, f);
    }
  }
  return fclose(f) == 0;
}

static void check_run(void) {
  static double xv[3 * 784], yv[3] = {1, 2, 3};
  for (int i = 0; i < 3 * 784; i++) xv[i] = urand(0, 1);
  int64_t xd[2] = {3, 784}, yd[1] = {3};
  char xp[64], yp[64], xa[80], ya[80];
  snprintf(xp, sizeof xp, "/tmp/mlc-test-lower-x-%d.npy", (int)getpid());
  snprintf(yp, sizeof yp, "/tmp/mlc-test-lower-y-%d.npy", (int)getpid());
  snprintf(xa, sizeof xa, "x=%s", xp);
  snprintf(ya, sizeof ya, "y=%s", yp);
  bool ok = write_npy(xp, true, 2, xd, xv) && write_npy(yp, false, 1, yd, yv);
  char *argv[] = {"run", "--interp", "examples/fashion_mlp.model", "--model", "FashionMLP",
                  "--entry", "loss", "--input", xa, "--input", ya, "--seed", "7", NULL};
  check("mlc run --interp: fashion_mlp loss from .npy inputs", ok && driver_run(13, argv) == 0);
  char *bad[] = {"run", "--interp", "examples/fashion_mlp.model", "--entry", "loss", "--input", xa, NULL};
  check("mlc run --interp: a missing input is an error", driver_run(7, bad) == 1);
  remove(xp);
  remove(yp);
}

// ---- the driver's usage errors ------------------------------------------------------------------------------
static void check_driver(void) {
  char *a1[] = {"build", "examples/fashion_mlp.model", "--emit", "ir", "--dump-after=fold", NULL};
  char *a2[] = {"build", "examples/fashion_mlp.model", "--emit", "frob", NULL};
  char *a3[] = {"build", "examples/fashion_mlp.model", "--model", "Nope", "--emit", "ir", NULL};
  check("mlc build: unknown pass is a usage error", driver_build(5, a1) == 2);
  check("mlc build: unknown emission is a usage error", driver_build(4, a2) == 2);
  check("mlc build: unknown model is an error", driver_build(6, a3) == 1);
}

// ---- 5b. spans -------------------------------------------------------------------------------------
// Nodes inlined from the prelude (Linear's matmul and add) carry the user's
// call span, so late reports (--check-finite) point into the user's file;
// parameter reads keep the span of their declaration.
static void check_spans(void) {
  Lowered l = lower_src("examples/fashion_mlp.model", NULL, "FashionMLP");
  bool ok = l.ok, some = false;
  for (int i = 0; ok && i < l.r.loss->nodes.len; i++) {
    IrNode *n = VEC_AT(l.r.loss->nodes, IrNode, i);
    if (!n->span.file || n->op == IR_PARAM || n->op == IR_BUFFER) continue;
    some = true;
    ok = !strcmp(n->span.file->path, "examples/fashion_mlp.model");
    if (!ok) printf("  %s from %s\n", ir_op_name(n->op), n->span.file->path);
  }
  check("fashion_mlp: every computing node of loss points into the user's file", ok && some);
  arena_free(l.a);
}

// ---- 5c. activations with scalar parameters ----------------------------------------------------------
// ops.def's defaults (softplus: beta 1, threshold 20) and the arguments given
// become the IR op's attributes a, b; a call on constants folds away; the
// gradient of each builds from the scalar table and verifies.
static void check_activations(void) {
  Lowered l = lower_src("tests/sema/ok/activations.model", NULL, "Acts");
  bool ok = l.ok && ir_verify(l.r.module, &l.d) && round_trips(&l);
  check("activations: lower, verify, round-trip", ok);
  if (!l.ok) return;
  int softplus = 0, defaults = 0, clamps = 0;
  for (int i = 0; i < l.r.forward->nodes.len; i++) {
    IrNode *n = VEC_AT(l.r.forward->nodes, IrNode, i);
    double a = 0, b = 0;
    ir_attr_float(&n->attrs, IRA_A, &a);
    ir_attr_float(&n->attrs, IRA_B, &b);
    softplus += n->op == IR_SOFTPLUS;
    defaults += n->op == IR_SOFTPLUS && a == 1 && b == 20;
    clamps += n->op == IR_CLAMP && a == -2 && b == 2;
  }
  check("activations: softplus with ops.def's defaults and with given ones; clamp(3.0, 0, 1) folded",
        softplus == 2 && defaults == 1 && clamps == 1);
  IrFunc *g = ad_grad(l.r.module, l.r.loss, &(AdOptions){.diags = &l.d});
  check("activations: ad_grad(loss) verifies", g && ir_verify_func(g, &l.d));
  arena_free(l.a);
}

// ---- 5d. sizes as numbers -----------------------------------------------------------------------------------
// x * B with B the batch: the size is a graph value (the count of a const of
// B elements), computed at run time; and a list bound to a name feeds concat.
static void check_size_numbers(void) {
  Lowered l = lower_src("sizes.model",
                        "model S {\n  forward(x: f32[B, 2]) -> f32[B, 2] {\n"
                        "    parts = [x, x * B]\n    return concat(parts, dim = 1)[:, 2:4]\n  }\n}\n",
                        "S");
  bool ok = l.ok && ir_verify(l.r.module, &l.d);
  for (int64_t b = 1; ok && b <= 5; b += 4) {
    int64_t dims[2] = {b, 2};
    Tensor *x = interp_tensor_new(DT_F32, 2, dims), *y = NULL;
    for (int64_t i = 0; i < x->numel; i++) x->data[i] = (double)i + 0.5;
    ok = interp_run(l.r.module, l.r.predict, INTERP_F64, &x, 1, NULL, &y, &l.d) == 0;
    for (int64_t i = 0; ok && i < y->numel; i++) ok = y->data[i] == ((double)i + 0.5) * (double)b;
    interp_tensor_free(x);
    interp_tensor_free(y);
  }
  if (!ok) diag_print(&l.d, stdout);
  check("a size used as a number is counted in the graph (x * B, B = 1 and 5)", ok);
  arena_free(l.a);
}

// ---- 5f. matmul with a vector ------------------------------------------------------------------------------
// [K] @ [K, N], [M, K] @ [K] and [K] @ [K] lower through rank-2 matmuls and
// give the numbers a hand computation gives.
static void check_vector_matmul(void) {
  Lowered l = lower_src("vec.model",
                        "model V {\n  forward(x: f32[B, 3]) -> f32[B, 3] {\n"
                        "    w = cast(reshape(arange(9), [3, 3]), f32)\n"
                        "    return x + x[0] @ w + sum(w @ x[1]) + x[0] @ x[1]\n  }\n}\n",
                        "V");
  int64_t dims[2] = {2, 3};
  double xv[6] = {1, 2, 3, 4, 5, 6}, want[6] = {243, 250, 257, 246, 253, 260};
  Tensor *x = interp_tensor_from(DT_F32, 2, dims, xv), *y = NULL;
  bool ok = l.ok && ir_verify(l.r.module, &l.d) &&
            interp_run(l.r.module, l.r.predict, INTERP_F64, &x, 1, NULL, &y, &l.d) == 0;
  for (int i = 0; ok && i < 6; i++) ok = y->data[i] == want[i];
  if (!ok) diag_print(&l.d, stdout);
  check("matmul with a vector operand: reshaped to rank 2, and back", ok);
  interp_tensor_free(x);
  interp_tensor_free(y);
  arena_free(l.a);
}

// ---- 5e. user gradients in shared code -----------------------------------------------------------------------
// A fn item with a grad block has one gradient function however many
// instances call it; a method's is per instance path (its params differ).
static void check_shared_grads(void) {
  Lowered l = lower_src("grads.model",
                        "fn clip(x: f32[B, D]) -> f32[B, D] {\n  return where(x > 1.0, 1.0, x)\n}"
                        " grad(dy) {\n  return dy\n}\n"
                        "block Blk(d) {\n  param g: f32[d]\n"
                        "  scaled(x: f32[B, d]) -> f32[B, d] {\n    return x * g\n  } grad(dy) {\n"
                        "    return dy * g\n  }\n"
                        "  forward(x: f32[B, d]) -> f32[B, d] {\n    return scaled(clip(x))\n  }\n}\n"
                        "model M {\n  a = Blk(4)\n  b = Blk(4)\n"
                        "  forward(x: f32[B, 4]) -> f32[B, 4] {\n    return b(a(x))\n  }\n}\n",
                        "M");
  bool ok = l.ok && ir_verify(l.r.module, &l.d);
  if (!ok) diag_print(&l.d, stdout);
  check("user gradients: one clip.grad, a.scaled.grad and b.scaled.grad",
        ok && ir_module_find_func(l.r.module, "clip.grad") &&
            ir_module_find_func(l.r.module, "a.scaled.grad") &&
            ir_module_find_func(l.r.module, "b.scaled.grad") && l.r.module->funcs.len == 5);
  arena_free(l.a);
}

// ---- 6. recipes ------------------------------------------------------------------------------------
// The train blocks of the examples read back as the numbers they declare.
static void check_recipes(void) {
  Lowered l = lower_src("examples/fashion_mlp.model", NULL, "FashionMLP");
  Recipe r;
  if (l.ok) sema_recipe(l.S, "FashionMLP", &r);
  check("fashion_mlp recipe: batch 64, 5 epochs, sgd lr 0.05 momentum 0.9",
        l.ok && r.present && r.batch == 64 && r.epochs == 5 && r.opt.opt == OPT_SGD &&
            r.opt.lr == 0.05 && r.opt.momentum == 0.9 && r.train_data.len == 2 &&
            r.test_data.len == 2 && !strcmp(r.metric, "accuracy"));
  if (l.ok) {
    RecipeSource *x = VEC_AT(r.train_data, RecipeSource, 0);
    check("fashion_mlp recipe: x from the gzip'd IDX images, scaled by 1/255",
          !strcmp(x->input, "x") && !strcmp(x->kind, "idx") && strstr(x->path, "train-images") &&
              fabs(x->scale - 1.0 / 255) < 1e-15);
  }
  arena_free(l.a);
  l = lower_src("examples/char_transformer.model", NULL, "CharGPT");
  if (l.ok) sema_recipe(l.S, "CharGPT", &r);
  check("char_transformer recipe: adamw, cosine warmup 100 steps, clip 1, batch 64",
        l.ok && r.opt.opt == OPT_ADAMW && r.opt.lr == 3e-4 && r.opt.beta2 == 0.95 &&
            r.opt.weight_decay == 0.1 && r.opt.sched == SCHED_COSINE && r.opt.warmup == 100 &&
            !r.opt.warmup_epochs && r.opt.min_lr == 3e-5 && r.opt.clip == 1.0 &&
            r.opt.accumulate == 1 && r.batch == 64 && r.seed == 1337);
  arena_free(l.a);
  l = lower_src("examples/regression.model", NULL, "Regressor");
  if (l.ok) sema_recipe(l.S, "Regressor", &r);
  check("regression recipe: adam with L2, warmup 2 epochs, csv columns",
        l.ok && r.opt.opt == OPT_ADAM && r.opt.weight_decay == 1e-4 && r.opt.warmup == 2 &&
            r.opt.warmup_epochs && VEC_AT(r.train_data, RecipeSource, 0)->ncols == 8 &&
            VEC_AT(r.train_data, RecipeSource, 1)->cols[0] == 8);
  arena_free(l.a);
  const char *none = "model M {\n  fc = Linear(2, 1)\n  forward(x: f32[B, 2]) -> f32[B, 1] { return fc(x) }\n"
                     "  loss(x: f32[B, 2], y: f32[B, 1]) -> f32 { return mse(forward(x), y) }\n}\n";
  l = lower_src("<none>", none, "M");
  if (l.ok) sema_recipe(l.S, "M", &r);
  check("no train block: the documented defaults (batch 32, sgd lr 0.01)",
        l.ok && !r.present && r.batch == 32 && r.epochs == 1 && r.opt.opt == OPT_SGD &&
            r.opt.lr == 0.01 && r.opt.sched == SCHED_CONSTANT && r.opt.accumulate == 1);
  arena_free(l.a);
}

// ---- lists of instances and loops ------------------------------------------------------------------
// A list's elements are state under positions (blocks.0.fc.w, as a
// ModuleList's state dict), and a loop over it is unrolled: each element's
// forward inlined once per iteration, reading its own params.
static void check_lists(void) {
  const char *src = "block Res(d) {\n  fc = Linear(d, d)\n"
                    "  forward(x: f32[B, d]) -> f32[B, d] { return x + fc(x) }\n}\n"
                    "model M {\n  blocks = [Res(4) for i in range(3)]\n"
                    "  heads = [Linear(4, 2), Linear(4, 1)]\n"
                    "  forward(x: f32[B, 4]) -> f32[B, 2] {\n    h = x\n"
                    "    for b in blocks { h = b(h) }\n"
                    "    return heads[0](h) + heads.1(h)\n  }\n}\n";
  Lowered l = lower_src("<lists>", src, "M");
  bool ok = l.ok && l.r.module->params.len == 10;
  const char *want[] = {"blocks.0.fc.w", "blocks.0.fc.b", "blocks.1.fc.w", "blocks.1.fc.b",
                        "blocks.2.fc.w", "blocks.2.fc.b", "heads.0.w", "heads.0.b", "heads.1.w",
                        "heads.1.b"};
  for (int i = 0; ok && i < 10; i++) ok = !strcmp(VEC_AT(l.r.module->params, IrParam, i)->name, want[i]);
  check("lists: elements' params under their positions, in order", ok);
  int reads = 0;
  for (int i = 0; l.ok && i < l.r.forward->nodes.len; i++) {
    IrNode *n = VEC_AT(l.r.forward->nodes, IrNode, i);
    reads += n->op == IR_PARAM && strstr(n->name, "blocks.") == n->name;
  }
  check("lists: the loop is unrolled, each element read once (5 matmuls: 3 blocks, 2 heads)",
        l.ok && count_op(l.r.forward, IR_MATMUL, 0) == 5 && reads == 6);
  check("lists: round-trips", l.ok && round_trips(&l));
  arena_free(l.a);
}

// ---- instances given to blocks ---------------------------------------------------------------------
// head = Head(tok) in a block instantiated twice: each Head reads its own
// parent's tok (the path goes up from the head), passed on to an inner block
// too.
static void check_instance_args(void) {
  const char *src = "block Inner(e) {\n  forward(h: f32[B, 4]) -> f32[B, 3] { return h @ e.w.T }\n}\n"
                    "block Head(emb) {\n  inner = Inner(emb)\n"
                    "  forward(h: f32[B, 4]) -> f32[B, 3] { return inner(h) + emb(h) }\n}\n"
                    "block Pair() {\n  tok = Linear(4, 3)\n  head = Head(tok)\n"
                    "  forward(h: f32[B, 4]) -> f32[B, 3] { return head(h) }\n}\n"
                    "model M {\n  p1 = Pair()\n  p2 = Pair()\n"
                    "  forward(x: f32[B, 4]) -> f32[B, 3] { return p1(x) - p2(x) }\n}\n";
  Lowered l = lower_src("<instance args>", src, "M");
  bool ok = l.ok && l.r.module->params.len == 4;
  int w1 = 0, w2 = 0, other = 0;
  for (int i = 0; ok && i < l.r.forward->nodes.len; i++) {
    IrNode *n = VEC_AT(l.r.forward->nodes, IrNode, i);
    if (n->op != IR_PARAM) continue;
    if (!strcmp(n->name, "p1.tok.w")) w1++;
    else if (!strcmp(n->name, "p2.tok.w")) w2++;
    else other += strcmp(n->name, "p1.tok.b") && strcmp(n->name, "p2.tok.b");
  }
  // (inner's h @ e.w.T and the Linear's product are one node: hash-consed)
  check("instance arguments: no state of their own, each head reads its own pair's tok",
        ok && w1 == 1 && w2 == 1 && other == 0 && count_op(l.r.forward, IR_MATMUL, 0) == 2);
  arena_free(l.a);
}

// ---- masked losses: finite differences ------------------------------------------------------------------
// cross_entropy with ignore_index (inside and outside the classes), label
// smoothing, reduction "sum" and "none" under a mask; mse and
// bce_with_logits per element. Run in f64 (INTERP_F64), d loss / d p of ad_grad(loss) must
// match central differences of loss for every trainable param element; the
// ignored rows' logits get no gradient.
static double masked_scale(const char *path) { return (void)path, 0.5; }

static void check_masked_fd(void) {
  Lowered l = lower_src(
      "masked.model",
      "model M {\n  fc = Linear(3, 4)\n  v = Linear(3, 1)\n"
      "  forward(x: f32[B, 3]) -> f32[B, 4] {\n    return fc(x)\n  }\n"
      "  loss(x: f32[B, 3], y: i64[B], m: f32[B], t: f32[B, 1]) -> f32 {\n"
      "    lg = forward(x)\n"
      "    a = cross_entropy(lg, y, ignore_index = 0)\n"
      "    b = cross_entropy(lg, y, ignore_index = -100, label_smoothing = 0.3)\n"
      "    c = cross_entropy(lg, y, reduction = \"sum\", label_smoothing = 0.2)\n"
      "    d = sum(cross_entropy(lg, y, reduction = \"none\") * m) / sum(m)\n"
      "    e = sum(reshape(mse(v(x), t, reduction = \"none\"), [B]) * m)\n"
      "    f = sum(bce_with_logits(v(x), t, reduction = \"none\")) + mse(v(x), t, reduction = \"sum\")\n"
      "    return a + b + 0.5 * c + d + e + f\n  }\n}\n",
      "M");
  check("masked: lowers", l.ok);
  if (!l.ok) return;
  IrModule *m = l.r.module;
  IrFunc *g = ad_grad(m, l.r.loss, &(AdOptions){.diags = &l.d});
  check("masked: ad_grad verifies", g && ir_verify_func(g, &l.d));
  if (!g) return;
  enum { B = 6 };
  State st = random_state(m, masked_scale);
  InterpParams ip = {st.n, st.paths, st.vals, 1};
  int64_t xd[2] = {B, 3}, bd[1] = {B}, td[2] = {B, 1};
  Tensor *x = rand_tensor(DT_F32, 2, xd, -1, 1), *y = interp_tensor_new(DT_I64, 1, bd);
  Tensor *mk = interp_tensor_new(DT_F32, 1, bd), *t = rand_tensor(DT_F32, 2, td, 0, 1);
  const double ys[B] = {1, 0, 3, -100, 2, 0}, ms[B] = {1, 0, 1, 0, 1, 1};
  for (int i = 0; i < B; i++) y->data[i] = ys[i], mk->data[i] = ms[i];
  Tensor *in[4] = {x, y, mk, t}, *out[8] = {0};
  bool ran = interp_run(m, g, INTERP_F64, in, 4, &ip, out, &l.d) == 0;
  if (!ran) diag_print(&l.d, stdout);
  double maxerr = 0, maxg = 0;
  int k = 1, checked = 0;
  for (int i = 0; ran && i < st.n; i++) {
    if (!ir_module_find_param(m, st.paths[i])->trainable) continue;
    Tensor *gp = out[k++];
    for (int64_t e = 0; gp && e < st.vals[i]->numel; e++) {
      double v0 = st.vals[i]->data[e], h = 1e-5, lo[2];
      for (int s = 0; s < 2; s++) {
        st.vals[i]->data[e] = v0 + (s ? -h : h);
        Tensor *o[1] = {0};
        ran &= interp_run(m, l.r.loss, INTERP_F64, in, 4, &ip, o, &l.d) == 0;
        lo[s] = o[0] ? o[0]->data[0] : NAN;
        interp_tensor_free(o[0]);
      }
      st.vals[i]->data[e] = v0;
      double fd = (lo[0] - lo[1]) / (2 * h);
      maxerr = fmax(maxerr, fabs(fd - gp->data[e]) / fmax(1, fabs(fd)));
      maxg = fmax(maxg, fabs(gp->data[e]));
      checked++;
    }
  }
  printf("  masked: %d gradient elements, max |g| %.3g, max error vs central differences %.3g\n", checked,
         maxg, maxerr);
  check("masked: d loss / d params match central differences (1e-7)",
        ran && checked == 4 * 3 + 4 + 3 + 1 && maxg > 0 && maxerr <= 1e-7);
  // the rows ignore_index drops count for nothing: changing their logits'
  // inputs leaves an ignore-only loss as it is
  Lowered l2 = lower_src("ignored.model",
                         "fn f(lg: f32[B, 4], y: i64[B]) -> f32 {\n"
                         "  return cross_entropy(lg, y, ignore_index = 0, label_smoothing = 0.1)\n}\n"
                         "model M {\n  fc = Linear(3, 4)\n"
                         "  forward(x: f32[B, 3]) -> f32[B, 4] {\n    return fc(x)\n  }\n"
                         "  loss(x: f32[B, 3], y: i64[B]) -> f32 {\n    return f(forward(x), y)\n  }\n}\n",
                         "M");
  Tensor *o1[1] = {0}, *o2[1] = {0};
  State st2 = l2.ok ? random_state(l2.r.module, masked_scale) : (State){0};
  InterpParams ip2 = {st2.n, st2.paths, st2.vals, 1};
  bool ok2 = l2.ok && interp_run(l2.r.module, l2.r.loss, INTERP_F64, in, 2, &ip2, o1, &l2.d) == 0;
  for (int j = 0; j < 3; j++) x->data[1 * 3 + j] += 5, x->data[5 * 3 + j] -= 7; // rows 1 and 5: y = 0
  ok2 = ok2 && interp_run(l2.r.module, l2.r.loss, INTERP_F64, in, 2, &ip2, o2, &l2.d) == 0;
  check("masked: ignored rows change nothing", ok2 && o1[0]->data[0] == o2[0]->data[0]);
  interp_tensor_free(o1[0]);
  interp_tensor_free(o2[0]);
  if (l2.ok) free_state(&st2);
  if (l2.a) arena_free(l2.a);
  for (int i = 0; i < 8; i++) interp_tensor_free(out[i]);
  free_state(&st);
  interp_tensor_free(x);
  interp_tensor_free(y);
  interp_tensor_free(mk);
  interp_tensor_free(t);
  arena_free(l.a);
}

// ---- noise: train mode only, gradients through it ----------------------------------------------------
// tests/e2e/denoise.model: rand and randn are graph nodes in forward and
// loss, their means (constants) in eval and predict; with the step's
// stream fixed the noise is a constant of the step, so ad_grad(loss)
// matches central differences of loss (f64), and a step with another
// rng_seed draws other noise (another loss).
static void check_noise(void) {
  Lowered l = lower_src("tests/e2e/denoise.model", NULL, "Denoise");
  check("noise: lowers", l.ok);
  if (!l.ok) return;
  IrModule *m = l.r.module;
  bool modes = count_op(l.r.forward, IR_RAND, 0) == 1 && count_op(l.r.forward, IR_RANDN, 0) == 1 &&
               count_op(l.r.loss, IR_RAND, 0) == 1 && count_op(l.r.loss, IR_RANDN, 0) == 1 &&
               count_op(l.r.eval, IR_RAND, 0) + count_op(l.r.eval, IR_RANDN, 0) == 0 &&
               count_op(l.r.predict, IR_RAND, 0) + count_op(l.r.predict, IR_RANDN, 0) == 0;
  check("noise: rand, randn in forward and loss, none in eval and predict", modes);
  IrFunc *g = ad_grad(m, l.r.loss, &(AdOptions){.diags = &l.d});
  check("noise: ad_grad verifies", g && ir_verify_func(g, &l.d));
  if (!g) return;
  enum { B = 3 };
  State st = random_state(m, masked_scale);
  InterpParams ip = {st.n, st.paths, st.vals, 11};
  int64_t xd[2] = {B, 16};
  Tensor *x = rand_tensor(DT_F32, 2, xd, -1, 1), *in[1] = {x}, *out[8] = {0}, *o[1] = {0};
  bool ran = interp_run(m, g, INTERP_F64, in, 1, &ip, out, &l.d) == 0;
  if (!ran) diag_print(&l.d, stdout);
  // eval sees the clean input: its loss is mse(dec(relu(enc(x))), x); the
  // train loss, on noisy inputs, differs, and so does another step's
  Tensor *ev[2] = {0}, *o2[1] = {0};
  InterpParams ip2 = ip;
  ip2.rng_seed = 12;
  ran = ran && interp_run(m, l.r.eval, INTERP_F64, in, 1, &ip, ev, &l.d) == 0 &&
        interp_run(m, l.r.loss, INTERP_F64, in, 1, &ip2, o2, &l.d) == 0;
  check("noise: the train loss differs from eval's and from another step's",
        ran && out[0]->data[0] != ev[0]->data[0] && out[0]->data[0] != o2[0]->data[0]);
  double maxerr = 0, maxg = 0;
  int k = 1, checked = 0;
  for (int i = 0; ran && i < st.n; i++) {
    if (!ir_module_find_param(m, st.paths[i])->trainable) continue;
    Tensor *gp = out[k++];
    for (int64_t e = 0; gp && e < st.vals[i]->numel; e += 7) {
      double v0 = st.vals[i]->data[e], h = 1e-5, lo[2];
      for (int s = 0; s < 2; s++) {
        st.vals[i]->data[e] = v0 + (s ? -h : h);
        ran &= interp_run(m, l.r.loss, INTERP_F64, in, 1, &ip, o, &l.d) == 0;
        lo[s] = o[0] ? o[0]->data[0] : NAN;
        interp_tensor_free(o[0]);
        o[0] = NULL;
      }
      st.vals[i]->data[e] = v0;
      double fd = (lo[0] - lo[1]) / (2 * h);
      maxerr = fmax(maxerr, fabs(fd - gp->data[e]) / fmax(1, fabs(fd)));
      maxg = fmax(maxg, fabs(gp->data[e]));
      checked++;
    }
  }
  printf("  noise: %d gradient elements, max |g| %.3g, max error vs central differences %.3g\n", checked, maxg,
         maxerr);
  check("noise: d loss / d params match central differences (1e-7)",
        ran && checked > 30 && maxg > 0 && maxerr <= 1e-7);
  for (int i = 0; i < 8; i++) interp_tensor_free(out[i]);
  for (int i = 0; i < 2; i++) interp_tensor_free(ev[i]);
  interp_tensor_free(o2[0]);
  free_state(&st);
  interp_tensor_free(x);
  arena_free(l.a);
}

int main(void) {
  DIR *dir = opendir("examples");
  if (!dir) {
    printf("[FAIL] run from the repo root (examples/ not found)\n");
    return 1;
  }
  struct dirent *de;
  char *names[64];
  int nn = 0;
  while ((de = readdir(dir)) && nn < 64) {
    size_t len = strlen(de->d_name);
    if (len > 6 && !strcmp(de->d_name + len - 6, ".model")) {
      names[nn] = malloc(len + 10);
      snprintf(names[nn++], len + 10, "examples/%s", de->d_name);
    }
  }
  closedir(dir);
  for (int i = 0; i < nn; i++) {
    check_example(names[i]);
    free(names[i]);
  }
  check_structure();
  check_ste();
  check_modes();
  check_interp();
  check_driver();
  check_recipes();
  check_spans();
  check_activations();
  check_size_numbers();
  check_shared_grads();
  check_vector_matmul();
  check_lists();
  check_instance_args();
  check_masked_fd();
  check_noise();
  check_run();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
