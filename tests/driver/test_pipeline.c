// test_pipeline.c — the stage table and the pipeline run in-process
// (compiler/driver/pipeline.c, stages.def).
//
// Run from the repo root (ctest does). Checks:
//   1. the table: names unique and found by name; every graph and kernel-IR
//      row has a printer and a verifier; graph rows come before kir, kir
//      before glue, codegen and link; `ir` shows the last graph row;
//   2. the forward output train_step returns (result 3, accumulate 1): it
//      is a node the loss itself is computed from (the optim stage found
//      it, added nothing), on every example and on a model with dropout
//      (where autodiff split the dropout); its value equals eval's forward
//      output on fashion_mlp (no dropout or batch norm, so train and eval
//      mode agree) in the interpreter; with accumulate 2 there is none;
//   3. a verifier that fails after a stage is an internal compiler error
//      naming that stage (a child process, stderr captured), and runs only
//      when verify_each is on;
//   4. a model without a loss lowers but stops at kir with an error.
// Prints "[PASS] name" / "[FAIL] name" and "N passed, N failed"; exits 1 on
// any failure.
#include "unit.h"
#include "driver/pipeline.h"
#include "graph/interp.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

// ---- 1. the table -------------------------------------------------------------------------------
static void check_table(void) {
  bool unique = true, found = true, forms = true, order = true;
  for (int i = 0; i < STAGE_COUNT; i++) {
    const Stage *s = pipeline_stage(i);
    found &= pipeline_stage_lookup(s->name) == i;
    for (int j = 0; j < i; j++) unique &= strcmp(s->name, pipeline_stage(j)->name) != 0;
    if (s->form == FORM_GRAPH || s->form == FORM_KIR) forms &= s->print && s->verify;
    if (s->form == FORM_GRAPH) order &= i < STAGE_KIR;
    if (s->form == FORM_KIR) order &= i < STAGE_GLUE;
  }
  order &= STAGE_KIR < STAGE_GLUE && STAGE_GLUE < STAGE_CODEGEN && STAGE_CODEGEN < STAGE_LINK;
  check("table: stage names are unique and found by name", unique && found);
  check("table: graph and kernel-IR stages have a printer and a verifier", forms);
  check("table: graph stages, then kir, then glue, codegen, link", order);
  check("table: --emit ir shows the last graph stage (optim)", pipeline_last_graph_stage() == STAGE_OPTIM);
  check("table: an unknown stage name is not found", pipeline_stage_lookup("fold") == -1);
}

// ---- helpers ------------------------------------------------------------------------------------
typedef struct Run {
  Arena *a;
  DiagSink d;
  Pipeline P;
  bool ok;
} Run;

static void run_to(Run *r, const char *path, StageId last, bool verify) {
  r->a = arena_new();
  diag_init(&r->d, r->a);
  PipelineOptions po = {.path = path, .cname = "t", .verify_each = verify};
  pipeline_init(&r->P, r->a, &r->d, &po);
  r->ok = pipeline_run(&r->P, last);
  if (!r->ok) diag_print(&r->d, stdout);
}

static void run_free(Run *r) {
  pipeline_free(&r->P);
  arena_free(r->a);
}

static const char *write_tmp(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "/tmp/mlc-test-pipeline-%d-%s", (int)getpid(), name);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fputs(text, f);
  fclose(f);
  return path;
}

// Whether n is in the cone of root (root itself included).
static bool in_cone(IrNode *root, IrNode *n, IrFunc *f) {
  ir_number(f);
  int np = f->params.len;
  bool *seen = calloc((size_t)(np + f->nodes.len), 1);
  seen[np + root->order] = true;
  for (int i = root->order; i >= 0; i--) {
    IrNode *x = VEC_AT(f->nodes, IrNode, i);
    for (int j = 0; seen[np + i] && j < x->nin; j++) seen[np + x->in[j]->order] = true;
  }
  bool r = n->order >= 0 && seen[np + n->order];
  free(seen);
  return r;
}

// ---- 2. the forward output ------------------------------------------------------------------------
static const char *const models[] = {
    "examples/fashion_mlp.model", "examples/fashion_cnn.model", "examples/frozen_ste.model",
    "examples/regression.model",  "tests/e2e/plateau.model",    "tests/e2e/tiny_gpt.model",
};

static const char dropout_model[] =
    "model DropMLP {\n"
    "  fc1 = Linear(16, 8)\n  drop = Dropout(0.5)\n  fc2 = Linear(8, 3)\n"
    "  forward(x: f32[B, 16]) -> f32[B, 3] {\n    return fc2(drop(relu(fc1(x))))\n  }\n"
    "  loss(x: f32[B, 16], y: i32[B]) -> f32 {\n    return cross_entropy(forward(x), y)\n  }\n"
    "}\n"
    "train DropMLP {\n  batch 4  epochs 1\n  optimizer sgd(lr = 0.1)\n}\n";

static void check_step_output(const char *name, const char *path) {
  Run r;
  run_to(&r, path, STAGE_OPTIM, true);
  IrFunc *step = r.P.u.train_step;
  bool ok = r.ok && step && r.P.u.step_has_out && step->outputs.len == 4;
  IrNode *loss = ok ? VEC_AT(step->outputs, IrNode, 0) : NULL, *out = ok ? VEC_AT(step->outputs, IrNode, 3) : NULL;
  ok = ok && in_cone(loss, out, step);
  check(arena_printf(r.a, "%s: train_step's result 3 is the value its loss is computed from", name), ok);
  run_free(&r);
}

static Tensor *random_tensor(const Type *t, int64_t b, int64_t classes, uint64_t *s) {
  int64_t dims[INTERP_MAX_RANK];
  for (int i = 0; i < t->rank; i++)
    if (!dim_is_const(t->dims[i], &dims[i])) dims[i] = b;
  Tensor *x = interp_tensor_new(t->dtype, t->rank, dims);
  for (int64_t e = 0; e < x->numel; e++) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*s >> 11) * 0x1p-53;
    x->data[e] = dtype_is_float(t->dtype) ? (double)(float)(0.2 * (2 * u - 1)) : floor(u * (double)classes);
  }
  return x;
}

// train_step's forward output against eval's on one random batch and state.
static void check_step_output_value(void) {
  Run r;
  run_to(&r, "examples/fashion_mlp.model", STAGE_OPTIM, true);
  bool ok = r.ok && r.P.u.step_has_out;
  uint64_t s = 1;
  IrModule *m = ok ? r.P.u.lr.module : NULL;
  int n = m ? m->params.len : 0;
  const char **paths = calloc((size_t)n + 1, sizeof *paths);
  Tensor **st = calloc((size_t)n + 1, sizeof *st), *args[2] = {0}, *so[4] = {0}, *eo[2] = {0};
  for (int i = 0; i < n; i++) {
    IrParam *p = VEC_AT(m->params, IrParam, i);
    paths[i] = p->name, st[i] = random_tensor(p->type, 1, 1, &s);
    if (!dtype_is_float(p->type->dtype)) st[i]->data[0] = 10; // step counts: no division by zero
  }
  IrFunc *step = ok ? r.P.u.train_step : NULL;
  for (int i = 0; ok && i < 2; i++) args[i] = random_tensor(VEC_AT(step->params, IrNode, i)->type, 5, 10, &s);
  DiagSink d;
  diag_init(&d, r.a);
  InterpParams ip = {n, paths, st, 3};
  ok = ok && interp_run(m, r.P.u.eval, INTERP_F32, args, 2, &ip, eo, &d) == 0 &&
       interp_run(m, step, INTERP_F32, args, 2, &ip, so, &d) == 0;
  if (d.nerrors) diag_print(&d, stdout);
  for (int64_t e = 0; ok && e < eo[1]->numel; e++) ok = fabs(so[3]->data[e] - eo[1]->data[e]) <= 1e-6;
  check("fashion_mlp: train_step's result 3 equals eval's forward output (interpreter)",
        ok && so[3]->numel == eo[1]->numel && so[3]->numel == 50);
  for (int i = 0; i < 4; i++) interp_tensor_free(so[i]);
  for (int i = 0; i < 2; i++) interp_tensor_free(eo[i]), interp_tensor_free(args[i]);
  for (int i = 0; i < n; i++) interp_tensor_free(st[i]);
  free(paths), free(st);
  run_free(&r);
}

static void check_step_outputs(void) {
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) check_step_output(models[i], models[i]);
  const char *drop = write_tmp("drop.model", dropout_model);
  check_step_output("a model with dropout", drop);
  Run r;
  run_to(&r, drop, STAGE_OPTIM, true);
  bool split = false;
  for (int i = 0; r.ok && i < r.P.u.train_step->nodes.len; i++)
    split |= VEC_AT(r.P.u.train_step->nodes, IrNode, i)->op == IR_DROPOUT_MASK;
  check("a model with dropout: autodiff split its dropout (the case the optim stage maps)", split);
  run_free(&r);
  remove(drop);
  run_to(&r, "tests/e2e/accum.model", STAGE_OPTIM, true);
  check("accum.model (accumulate 2): train_step returns loss, grad_norm, lr only",
        r.ok && !r.P.u.step_has_out && r.P.u.train_step->outputs.len == 3);
  run_free(&r);
  check_step_output_value();
}

// ---- 3. a failing verifier -------------------------------------------------------------------------
static const char forward_only[] =
    "model Fwd {\n  fc = Linear(4, 2)\n"
    "  forward(x: f32[B, 4]) -> f32[B, 2] {\n    return fc(x)\n  }\n}\n";

// In a child: lower, break the graph (forward's result gets a type its
// node does not have), then run autodiff (a no-op without a loss) so only
// the verifier can notice. Returns the child's status and its stderr.
static int broken_run(const char *path, bool verify, char *err, size_t errlen) {
  int fds[2];
  if (pipe(fds)) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    Run r;
    run_to(&r, path, STAGE_LOWER, verify);
    IrFunc *f = r.P.u.lr.forward;
    VEC_AT(f->outputs, IrNode, 0)->type = type_scalar(r.a, DT_I64);
    _exit(pipeline_run(&r.P, STAGE_AUTODIFF) ? 0 : 1);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t k;
  while (n + 1 < errlen && (k = read(fds[0], err + n, errlen - 1 - n)) > 0) n += (size_t)k;
  err[n] = 0;
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

static void check_verifier(void) {
  const char *path = write_tmp("fwd.model", forward_only);
  char err[4096];
  int st = broken_run(path, true, err, sizeof err);
  check("verify_each: a graph that does not verify after autodiff is an ICE naming the stage",
        WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(err, "internal compiler error") &&
            strstr(err, "stage autodiff"));
  st = broken_run(path, false, err, sizeof err);
  check("without verify_each no verifier runs (the broken graph passes autodiff)", WIFEXITED(st) && WEXITSTATUS(st) == 0);
  // 4. no loss: graph stages run, kir refuses
  Run r;
  run_to(&r, path, STAGE_OPTIM, true);
  bool graph_ok = r.ok && r.P.u.lr.forward && !r.P.u.train_step;
  bool kir_refused = !pipeline_run(&r.P, STAGE_KIR) && r.d.nerrors == 1 &&
                     strstr(VEC_AT(r.d.diags, Diag, 0)->msg, "needs forward and loss");
  check("a model without a loss: graph stages run, kir stops with an error", graph_ok && kir_refused);
  run_free(&r);
  remove(path);
}

int main(void) {
  check_table();
  check_step_outputs();
  check_verifier();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
