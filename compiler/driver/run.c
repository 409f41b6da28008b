// run.c — `mlc run --interp`: runs one entry point of a model in the
// reference interpreter (graph/interp.h) on inputs read from .npy files.
//
//   mlc run --interp FILE.model [--model NAME] --entry ENTRY --input name=path.npy ...
//           [--weights FILE] [--save OUT] [--f32|--f64] [--seed N] [--verify-each]
//
// ENTRY is a function of the graph module: forward, loss, eval, predict,
// loss_grad (the loss, then the gradient of every trainable parameter the
// loss reads) or train_step (one optimizer step: loss, gradient norm,
// learning rate and, with one micro-batch, the forward output); or init,
// which runs nothing and gives the state itself. The pipeline (pipeline.h)
// runs through the last graph stage, so these are the functions `mlc build`
// compiles, and the module hash is the program's.
//
// The state is the compiled program's (run_state.c): the same seed gives the
// same initial bytes, --weights is checked as the program checks it. Each
// result is printed as `NAME: DTYPE[dims] = [v0, v1, ...]` (row-major) with
// the fewest digits that read back as the same value, and --save writes
// the results under the same names (run_save.c).
#include "run_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void run_help_tail(FILE *out) {
  fputs("\nentries:\n", out);
  driver_help_row(out, "forward, loss, eval, predict", "the model's functions: one result is printed as\n"
                                                        "ENTRY, several as ENTRY.0, ENTRY.1, ...");
  driver_help_row(out, "loss_grad", "the loss and the gradient of every trainable\nparameter: "
                                    "loss_grad.loss, loss_grad.PATH");
  driver_help_row(out, "train_step", "one optimizer step from the state: train_step.loss,\n"
                                     ".grad_norm, .lr, the loss's named values, with loss\n"
                                     "scaling .loss_scale, .overflow, .skipped_steps (and\n"
                                     ".output, the forward output)");
  driver_help_row(out, "init", "no function: the state itself (parameters, buffers,\n"
                               "optimizer state), each under its path");
  fputs("\nEach result is printed as `NAME: DTYPE[dims] = [v0, v1, ...]` (row-major), every\n"
        "number in the fewest digits that read back as the same value (f32 values as a\n"
        "float, f64 and every value under --f64 as a double). The state starts as the\n"
        "compiled program's does: the same --seed gives the same initial bytes, and\n"
        "dropout draws the masks of the program's first step. --weights replaces the\n"
        "parameters and buffers: every one must be in the file with its shape (a float\n"
        "in f32 or f64, an integer in i32 or i64), and a tensor the model has no state\n"
        "for is refused. --save OUT.safetensors writes every result to one file,\n"
        "OUT.npy the one result, any other OUT a directory of NAME.npy files.\n",
        out);
}

// ---- entries ------------------------------------------------------------------------------------
static const char *const entries[] = {"forward",   "loss",       "eval", "predict",
                                      "loss_grad", "train_step", "init"};
enum { NENTRIES = sizeof entries / sizeof entries[0] };

// The path of each gradient loss_grad returns after the loss: the trainable
// params the loss reads, in module order (passes/autodiff.h).
static int grad_paths(IrModule *m, IrFunc *loss, const char **out, int max) {
  int n = 0;
  for (int i = 0; i < m->params.len; i++) {
    IrParam *p = VEC_AT(m->params, IrParam, i);
    bool read = false;
    for (int j = 0; p->kind == IRP_PARAM && p->trainable && !read && j < loss->nodes.len; j++) {
      IrNode *x = VEC_AT(loss->nodes, IrNode, j);
      read = x->op == IR_PARAM && !strcmp(x->name, p->name);
    }
    if (read && n < max) out[n] = p->name;
    n += read;
  }
  return n;
}

// train_step's result i, in optim_build_step's order: loss, grad_norm, lr,
// the loss's auxiliary values, the scaler's three (with loss scaling), then
// the forward output (run_optim); NULL when f does not have that layout.
static const char *step_result(const BuildUnit *u, const IrFunc *f, int i) {
  static const char *const head[] = {"loss", "grad_norm", "lr"};
  static const char *const scaler[] = {"loss_scale", "overflow", "skipped_steps"};
  int naux = u->lr.naux, nsc = u->recipe.opt.loss_scale != LSCALE_NONE ? MLC_SCALER_OUTPUTS : 0;
  if (f->outputs.len != 3 + naux + nsc + u->step_has_out) return NULL;
  if (i < 3) return head[i];
  if ((i -= 3) < naux) return u->lr.aux_names[i];
  if ((i -= naux) < nsc) return scaler[i];
  return "output";
}

// The name of result i of entry f: ENTRY or ENTRY.i, and named results for
// loss_grad and train_step.
static const char *result_name(Pipeline *P, const char *entry, IrFunc *f, int i) {
  Arena *a = P->arena;
  const char *sr = !strcmp(entry, "train_step") ? step_result(&P->u, f, i) : NULL;
  if (sr) return arena_printf(a, "%s.%s", entry, sr);
  if (!strcmp(entry, "loss_grad")) {
    int n = f->outputs.len - 1;
    const char **paths = arena_alloc(a, sizeof *paths * (size_t)(n + 1));
    MLC_ASSERT(grad_paths(P->u.lr.module, P->u.lr.loss, paths, n) == n);
    return i ? arena_printf(a, "%s.%s", entry, paths[i - 1]) : arena_printf(a, "%s.loss", entry);
  }
  return f->outputs.len == 1 ? entry : arena_printf(a, "%s.%d", entry, i);
}

// ---- printing -----------------------------------------------------------------------------------
// v in the fewest %g digits that read back as v: as a float (at most 9
// digits), or as a double (at most 17). The search starts at 6 (15) digits:
// a value whose shortest form is shorter lies far closer to it than half a
// step of the 6th (15th) digit, so %.6g (%.15g) prints that form too.
static void put_number(FILE *out, double v, bool as_float) {
  char buf[40];
  if (!isfinite(v)) {
    fputs(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", out);
    return;
  }
  for (int p = as_float ? 6 : 15, hi = as_float ? 9 : 17; p <= hi; p++) {
    snprintf(buf, sizeof buf, "%.*g", p, v);
    if (as_float ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v) break;
  }
  fputs(buf, out);
}

static void print_result(FILE *out, const RunResult *r, bool f64) {
  const Tensor *t = r->t;
  fprintf(out, "%s: %s", r->name, dtype_name(t->dtype));
  for (int k = 0; k < t->rank; k++) fprintf(out, "%s%lld", k ? ", " : "[", (long long)t->dims[k]);
  fputs(t->rank ? "] = [" : " = [", out);
  bool is_float = dtype_is_float(t->dtype), as_float = is_float && !f64 && t->dtype != DT_F64;
  for (int64_t i = 0; i < t->numel; i++) {
    if (i) fputs(", ", out);
    if (is_float) put_number(out, t->data[i], as_float);
    else fprintf(out, "%lld", (long long)t->data[i]);
  }
  fputs("]\n", out);
}

// Prints the results, then writes them when --save asks.
static bool report_results(Pipeline *P, const DriverOpts *o, const RunResult *r, int n) {
  for (int i = 0; i < n; i++) print_result(stdout, &r[i], o->f64);
  return !o->save || run_save(P->diags, o->save, r, n, o->f64);
}

// ---- run ---------------------------------------------------------------------------------------
// The path given for argument `name` (--input name=path), or NULL.
static const char *input_path(const DriverOpts *o, const char *name) {
  size_t len = strlen(name);
  const char *path = NULL;
  for (int k = 0; k < o->ninputs; k++)
    if (!strncmp(o->inputs[k], name, len) && o->inputs[k][len] == '=') path = o->inputs[k] + len + 1;
  return path;
}

static bool read_inputs(DiagSink *d, const DriverOpts *o, IrFunc *f, Tensor **args) {
  if (f->params.len > DRIVER_MAX_INPUTS) {
    diag_error(d, (Span){0}, "%s takes %d arguments; mlc run reads at most %d", o->entry, f->params.len,
               DRIVER_MAX_INPUTS);
    return false;
  }
  for (int i = 0; i < f->params.len; i++) {
    IrNode *x = VEC_AT(f->params, IrNode, i);
    const char *path = input_path(o, x->name);
    if (!path) {
      diag_error(d, (Span){0}, "no --input for argument '%s' of %s", x->name, o->entry);
      return false;
    }
    if (!(args[i] = run_read_npy(d, path, x->type->dtype))) return false;
  }
  return true;
}

// The input a value comes from through the views that keep its values, or NULL.
static const IrNode *input_origin(const IrNode *n) {
  while (n->nin >= 1 && (n->op == IR_RESHAPE || n->op == IR_TRANSPOSE || n->op == IR_SLICE ||
                         n->op == IR_BROADCAST_TO || n->op == IR_STOP_GRADIENT))
    n = n->in[0];
  return n->op == IR_INPUT && n->name ? n : NULL;
}

// A cross_entropy lowered per row (ignore_index, or a reduction other than
// the mean; lower/emit.c) finds the target's class by comparing it with each
// class, so a target outside the classes that is not the ignored value would
// be a row of no class: loss 0, yet counted in the mean. The graph's own
// cross_entropy refuses such a target (interp.c); this refuses it for the
// per-row form, as the compiled program's data check does (runtime/data).
static bool check_labels(Pipeline *P, const DriverOpts *o, IrFunc *f, Tensor **args) {
  const LowerResult *lr = &P->u.lr;
  const IrNode *t = lr->label_target ? input_origin(lr->label_target) : NULL;
  const Type *lt = lr->label_logits ? lr->label_logits->type : NULL;
  int64_t c;
  if (!t || !lt || lt->rank < 1 || !dim_is_const(lt->dims[lt->rank - 1], &c)) return true;
  for (int i = 0; i < f->params.len; i++) {
    IrNode *x = VEC_AT(f->params, IrNode, i);
    if (strcmp(x->name, t->name)) continue;
    for (int64_t j = 0; j < args[i]->numel; j++) {
      double v = args[i]->data[j];
      if ((v >= 0 && v < (double)c) || (lr->label_ignore && v == (double)lr->label_ignore_value)) continue;
      diag_error(P->diags, (Span){0}, "%s: element %lld of input %s: label %g is out of range 0..%lld%s%s",
                 input_path(o, x->name), (long long)j + 1, x->name, v, (long long)c - 1,
                 lr->label_ignore ? " and not the ignore_index " : "",
                 lr->label_ignore ? arena_printf(P->arena, "%lld", (long long)lr->label_ignore_value) : "");
      return false;
    }
  }
  return true;
}

// The entry's function, or NULL after an error saying why there is none.
static IrFunc *entry_func(Pipeline *P, const char *entry) {
  IrFunc *f = ir_module_find_func(P->u.lr.module, entry);
  bool derived = !strcmp(entry, "loss_grad") || !strcmp(entry, "train_step");
  if (!f)
    diag_error(P->diags, (Span){0}, "model %s has no %s entry point%s", P->u.model, entry,
               derived && !P->u.lr.loss ? " (it has no loss)" : "");
  return f;
}

// init: the state, each tensor under its path.
static bool run_init(Pipeline *P, const DriverOpts *o, RunState *s) {
  RunResult *r = calloc((size_t)s->n + 1, sizeof *r);
  for (int i = 0; r && i < s->n; i++) r[i] = (RunResult){s->paths[i], s->values[i]};
  bool ok = r && report_results(P, o, r, s->n);
  free(r);
  return ok;
}

static bool run_func(Pipeline *P, const DriverOpts *o, IrFunc *f, Tensor **args, RunState *s) {
  int n = f->outputs.len;
  Tensor **outs = calloc((size_t)n + 1, sizeof *outs);
  RunResult *r = calloc((size_t)n + 1, sizeof *r);
  bool ok = outs && r &&
            interp_run(P->u.lr.module, f, o->f64 ? INTERP_F64 : INTERP_F32, args, f->params.len, &s->ip, outs,
                       P->diags) == 0;
  for (int i = 0; ok && i < n; i++) r[i] = (RunResult){result_name(P, o->entry, f, i), outs[i]};
  ok = ok && report_results(P, o, r, n);
  for (int i = 0; outs && i < n; i++) interp_tensor_free(outs[i]);
  free(outs);
  free(r);
  return ok;
}

static bool run_entry(Pipeline *P, const DriverOpts *o, Tensor **args, RunState *s) {
  bool init = !strcmp(o->entry, "init");
  IrFunc *f = init ? NULL : entry_func(P, o->entry);
  if (!init && (!f || !read_inputs(P->diags, o, f, args) || !check_labels(P, o, f, args))) return false;
  if (f && o->save && run_save_form(o->save) == SAVE_NPY && f->outputs.len != 1) {
    diag_error(P->diags, (Span){0}, "--save %s: %s has %d results for one .npy file; name a directory "
               "(one NAME.npy each) or a .safetensors file", o->save, o->entry, f->outputs.len);
    return false;
  }
  uint64_t seed = o->have_seed ? o->seed : (uint64_t)P->u.recipe.seed;
  if (!run_state_init(s, P, o->weights, seed, o->f64)) return false;
  return init ? run_init(P, o, s) : run_func(P, o, f, args, s);
}

int driver_run(int argc, char **argv) {
  DriverOpts o;
  if (driver_parse(CMD_RUN, argc, argv, &o)) return EXIT_USAGE;
  if (o.help) return driver_help(CMD_RUN, stdout), EXIT_OK;
  if (!o.interp) return driver_usage_error("run", "only --interp is supported");
  int k = 0;
  while (k < NENTRIES && (!o.entry || strcmp(o.entry, entries[k]))) k++;
  if (k == NENTRIES)
    return driver_usage_error("run", "--entry must be forward, loss, eval, predict, loss_grad, train_step "
                                     "or init");
  Arena *a = arena_new();
  DiagSink d;
  driver_diag_init(&d, a, &o);
  struct stat st;
  Pipeline P;
  PipelineOptions po = {.path = o.files[0], .model = o.model, .verify_each = o.verify_each || pipeline_default_verify(),
                        .have_precision = o.have_precision, .precision = o.precision};
  pipeline_init(&P, a, &d, &po);
  Tensor *args[DRIVER_MAX_INPUTS] = {0};
  RunState s = {0};
  bool ok = driver_check_input(&d, o.files[0], &st) && (!o.save || run_save_check(&d, o.save, &st)) &&
            pipeline_run(&P, pipeline_last_graph_stage()) && run_entry(&P, &o, args, &s);
  for (int i = 0; i < DRIVER_MAX_INPUTS; i++) interp_tensor_free(args[i]);
  run_state_free(&s);
  pipeline_free(&P);
  int status = driver_report(&d, "run", ok ? EXIT_OK : EXIT_ERRORS);
  arena_free(a);
  return status;
}
