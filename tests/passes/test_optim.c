// test_optim.c — checks of the training step graph (compiler/passes/optim.c) and
// the IR's state updates (store, optstate) against torch.optim.
//
// Usage: test_optim [DIR]   (DIR defaults to tests/passes/optim, from the repo root)
//
// 1. For every DIR/CASE.txt written by DIR/gen_torch.py: the model DIR/mlp.ir
//    (a 2-layer MLP with bias, a frozen param and cross_entropy) gets its
//    gradient function from ad_grad and a train_step from optim_build_step
//    with the case's recipe; the module must verify and round-trip through
//    the text form. Ten steps run in the interpreter (INTERP_F64) over the
//    batches of DIR/data.txt; after every step the loss, pre-clip grad norm
//    and lr, and at the end every param (the frozen one untouched), must
//    match torch within 1e-5 (relative above 1). optim_lr must agree too.
// 2. plateau_update against ReduceLROnPlateau (DIR/plateau.txt).
// 3. The verifier rejects bad stores; the interpreter applies stores only
//    after the whole function ran (reads see the old value).
//
// Prints "[PASS] name" / "[FAIL] name" per check and "N passed, N failed";
// exits 1 on any failure.
#include "unit.h"
#include "passes/autodiff.h"
#include "graph/interp.h"
#include "passes/optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// interp_run in f64; a failure's message is printed.
static int run_f64(IrModule *m, IrFunc *f, Tensor **in, int nin, const InterpParams *ip, Tensor **out) {
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  int rc = interp_run(m, f, INTERP_F64, in, nin, ip, out, &d);
  diag_print(&d, stdout);
  arena_free(a);
  return rc;
}

static const char *dir = "tests/passes/optim";

// ---- key/value files: `key n v1 .. vn` per line -------------------------------------------------
typedef struct Entry {
  char key[64];
  int n;
  double *v;
} Entry;

typedef struct Table {
  Entry e[128];
  int n;
} Table;

static bool load(Table *t, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  t->n = 0;
  if (!f) {
    printf("  cannot open %s\n", path);
    return false;
  }
  Entry *e;
  while (t->n < 128 && (e = &t->e[t->n], fscanf(f, "%63s %d", e->key, &e->n) == 2)) {
    e->v = calloc((size_t)(e->n + 1), sizeof(double));
    for (int i = 0; i < e->n; i++)
      if (fscanf(f, "%lf", &e->v[i]) != 1) {
        fclose(f);
        return false;
      }
    t->n++;
  }
  fclose(f);
  return true;
}

static void unload(Table *t) {
  for (int i = 0; i < t->n; i++) free(t->e[i].v);
  t->n = 0;
}

static const Entry *get(const Table *t, const char *key) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->e[i].key, key) == 0) return &t->e[i];
  printf("  missing key %s\n", key);
  return NULL;
}

static double num(const Table *t, const char *key) {
  const Entry *e = get(t, key);
  return e && e->n ? e->v[0] : NAN;
}

static bool close_to(double a, double want) { return fabs(a - want) <= 1e-5 * fmax(1, fabs(want)); }

// ---- model and state --------------------------------------------------------------------------------
static IrModule *parse_text(Arena *a, const char *path, const char *text, bool quiet) {
  DiagSink ds;
  diag_init(&ds, a);
  IrModule *m = ir_parse(a, src_from_string(a, path, text, strlen(text)), &ds);
  if (m && !ir_verify(m, &ds)) m = NULL;
  if (!m && !quiet) diag_print(&ds, stdout);
  return m;
}

static IrModule *parse_file(Arena *a, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  const char *err = NULL;
  SrcFile *src = src_read(a, path, &err);
  if (!src) {
    printf("  %s: %s\n", path, err ? err : "unreadable");
    return NULL;
  }
  DiagSink ds;
  diag_init(&ds, a);
  IrModule *m = ir_parse(a, src, &ds);
  if (m && !ir_verify(m, &ds)) m = NULL;
  if (!m) diag_print(&ds, stdout);
  return m;
}

typedef struct State {
  int n;
  const char *paths[64];
  Tensor *vals[64];
} State;

static Tensor *tensor_of(const Type *t, const double *vals) {
  int64_t dims[INTERP_MAX_RANK];
  for (int i = 0; i < t->rank; i++)
    if (!dim_is_const(t->dims[i], &dims[i])) return NULL;
  return interp_tensor_from(t->dtype, t->rank, dims, vals);
}

// Every module slot: params from data.txt's init.PATH, optimizer state from
// optim_state_init.
static bool init_state(State *s, IrModule *m, const Table *data, const OptimRecipe *r) {
  s->n = 0;
  for (int i = 0; i < m->params.len && s->n < 64; i++) {
    IrParam *p = VEC_AT(m->params, IrParam, i);
    Tensor *t = tensor_of(p->type, NULL);
    if (!t) return false;
    if (p->kind == IRP_OPTSTATE) {
      for (int64_t e = 0; e < t->numel; e++) t->data[e] = optim_state_init(r, p->name);
    } else {
      char key[128];
      snprintf(key, sizeof key, "init.%s", p->name);
      const Entry *e = get(data, key);
      if (!e || e->n != t->numel) return false;
      memcpy(t->data, e->v, sizeof(double) * (size_t)e->n);
    }
    s->paths[s->n] = p->name;
    s->vals[s->n++] = t;
  }
  return true;
}

static void free_state(State *s) {
  for (int i = 0; i < s->n; i++) interp_tensor_free(s->vals[i]);
  s->n = 0;
}

static Tensor *find_state(State *s, const char *path) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->paths[i], path) == 0) return s->vals[i];
  return NULL;
}

// ---- recipes ------------------------------------------------------------------------------------------
// Parameter groups: recipe.group gives the group of each trained param of
// mlp.ir (in the order below, -1: the default group), groupK.* group K's
// hyper-parameters (the optimizer's where the case does not set them).
static const char *const trained[] = {"fc1.w", "fc1.b", "fc2.w", "fc2.b"};
static const char *group_paths[OPTIM_MAX_GROUPS][4];

static void groups_of(const Table *t, OptimRecipe *r) {
  r->ngroups = (int)num(t, "recipe.ngroups");
  const Entry *of = get(t, "recipe.group");
  for (int g = 0; g < r->ngroups && g < OPTIM_MAX_GROUPS; g++) {
    OptimGroup *G = &r->groups[g];
    char key[64];
#define GET(field) (snprintf(key, sizeof key, "group%d." #field, g), num(t, key))
    G->name = "group";
    G->lr_scale = GET(lr_scale), G->momentum = GET(momentum), G->dampening = GET(dampening);
    G->weight_decay = GET(weight_decay), G->nesterov = GET(nesterov) != 0;
    G->beta1 = GET(beta1), G->beta2 = GET(beta2), G->eps = GET(eps);
#undef GET
    G->npaths = 0;
    for (int i = 0; of && i < of->n && i < 4; i++)
      if ((int)of->v[i] == g) group_paths[g][G->npaths++] = trained[i];
    G->paths = group_paths[g];
  }
}

static OptimRecipe recipe_of(const Table *t) {
  OptimRecipe r = {0};
  r.opt = (OptimKind)(int)num(t, "recipe.opt");
  r.lr = num(t, "recipe.lr");
  r.momentum = num(t, "recipe.momentum");
  r.dampening = num(t, "recipe.dampening");
  r.nesterov = num(t, "recipe.nesterov") != 0;
  r.weight_decay = num(t, "recipe.weight_decay");
  r.beta1 = num(t, "recipe.beta1");
  r.beta2 = num(t, "recipe.beta2");
  r.eps = num(t, "recipe.eps");
  r.sched = (SchedKind)(int)num(t, "recipe.sched");
  r.step_size = (int64_t)num(t, "recipe.step_size");
  const Entry *ms = get(t, "recipe.milestones");
  for (int i = 0; ms && i < ms->n && i < OPTIM_MAX_MILESTONES; i++) r.milestones[r.nmilestones++] = (int64_t)ms->v[i];
  r.gamma = num(t, "recipe.gamma");
  r.warmup = (int64_t)num(t, "recipe.warmup");
  r.min_lr = num(t, "recipe.min_lr");
  r.epochs = (int64_t)num(t, "recipe.epochs");
  r.steps_per_epoch = (int64_t)num(t, "recipe.steps_per_epoch");
  r.clip = num(t, "recipe.clip");
  r.accumulate = (int)num(t, "recipe.accumulate");
  groups_of(t, &r);
  return r;
}

// ---- one optimizer case ------------------------------------------------------------------------------------
static bool same_text(Arena *a, IrModule *m) {
  StrBuf b1 = {0}, b2 = {0};
  ir_print_module(&b1, m, 0);
  IrModule *back = parse_text(a, "train_step.ir", b1.data, false);
  if (back) ir_print_module(&b2, back, 0);
  bool ok = back && b2.data && strcmp(b1.data, b2.data) == 0;
  sb_free(&b1);
  sb_free(&b2);
  return ok;
}

// Runs the ten steps; compares every output with the case's expectations.
static bool run_steps(IrModule *m, IrFunc *step, State *s, const Table *data, const Table *want,
                      const OptimRecipe *r) {
  const Entry *wl = get(want, "loss"), *wn = get(want, "grad_norm"), *wr = get(want, "lr");
  if (!wl || !wn || !wr) return false;
  bool ok = true;
  double worst = 0;
  for (int k = 0; k < wl->n; k++) {
    Tensor *in[16];
    int nin = 0;
    for (int j = 0; j < r->accumulate; j++) {
      char kx[32], ky[32];
      int b = k * r->accumulate + j;
      snprintf(kx, sizeof kx, "x%d", b);
      snprintf(ky, sizeof ky, "y%d", b);
      const Entry *x = get(data, kx), *y = get(data, ky);
      if (!x || !y) return false;
      int64_t dx[2] = {y->n, x->n / y->n}, dy[1] = {y->n};
      in[nin++] = interp_tensor_from(DT_F64, 2, dx, x->v);
      in[nin++] = interp_tensor_from(DT_I64, 1, dy, y->v);
    }
    InterpParams ip = {s->n, s->paths, s->vals, 7};
    Tensor *out[3] = {0};
    int rc = run_f64(m, step, in, nin, &ip, out);
    for (int i = 0; i < nin; i++) interp_tensor_free(in[i]);
    if (rc) {
      printf("  step %d failed\n", k);
      return false;
    }
    double got[3] = {out[0]->data[0], out[1]->data[0], out[2]->data[0]};
    double exp[3] = {wl->v[k], wn->v[k], wr->v[k]};
    double lr_c = optim_lr(r, k, 1);
    for (int i = 0; i < 3; i++) {
      worst = fmax(worst, fabs(got[i] - exp[i]));
      if (!close_to(got[i], exp[i])) {
        printf("  step %d: %s %.17g, torch %.17g\n", k, i == 0 ? "loss" : i == 1 ? "grad_norm" : "lr", got[i],
               exp[i]);
        ok = false;
      }
    }
    if (!close_to(lr_c, exp[2])) {
      printf("  step %d: optim_lr %.17g, torch %.17g\n", k, lr_c, exp[2]);
      ok = false;
    }
    for (int i = 0; i < 3; i++) interp_tensor_free(out[i]);
  }
  const char *names[] = {"fc1.w", "fc1.b", "fc2.w", "fc2.b", "pre.s"};
  for (int i = 0; i < 5; i++) {
    char key[64];
    snprintf(key, sizeof key, "final.%s", names[i]);
    const Entry *e = get(want, key);
    Tensor *t = find_state(s, names[i]);
    if (!e || !t || e->n != t->numel) return false;
    for (int64_t j = 0; j < t->numel; j++) {
      worst = fmax(worst, fabs(t->data[j] - e->v[j]));
      if (!close_to(t->data[j], e->v[j])) {
        printf("  final %s[%lld]: %.17g, torch %.17g\n", names[i], (long long)j, t->data[j], e->v[j]);
        ok = false;
      }
    }
  }
  Tensor *cnt = find_state(s, "opt.step");
  if (!cnt || cnt->data[0] != (double)wl->n) {
    printf("  opt.step is %g after %d steps\n", cnt ? cnt->data[0] : -1, wl->n);
    ok = false;
  }
  printf("  largest difference from torch: %.3g\n", worst);
  return ok;
}

static void test_case(const char *name, const Table *data) {
  char file[128], label[160];
  snprintf(file, sizeof file, "%s.txt", name);
  Table want;
  Arena *a = arena_new();
  bool ok = load(&want, file);
  OptimRecipe r = recipe_of(&want);
  IrModule *m = ok ? parse_file(a, "mlp.ir") : NULL;
  IrFunc *loss = m ? ir_module_find_func(m, "loss") : NULL;
  IrFunc *g = loss ? ad_grad(m, loss, NULL) : NULL;
  IrFunc *step = g ? optim_build_step(m, loss, g, &r) : NULL;
  DiagSink ds;
  diag_init(&ds, a);
  bool built = step && ir_verify(m, &ds);
  if (step && !built) diag_print(&ds, stdout);
  snprintf(label, sizeof label, "%s: train_step builds and verifies", name);
  check(label, built);
  if (!built) goto done;
  snprintf(label, sizeof label, "%s: module round-trips through the text form", name);
  check(label, same_text(a, m));
  State s;
  ok = init_state(&s, m, data, &r);
  snprintf(label, sizeof label, "%s: 10 steps match torch.optim", name);
  check(label, ok && run_steps(m, step, &s, data, &want, &r));
  free_state(&s);
done:
  unload(&want);
  arena_free(a);
}

// ---- plateau ----------------------------------------------------------------------------------------------
static void test_plateau(const Table *data) {
  Table want;
  Arena *a = arena_new();
  bool ok = load(&want, "plateau.txt");
  OptimRecipe r = {.opt = OPT_SGD, .lr = num(&want, "recipe.lr"), .sched = SCHED_PLATEAU,
                   .factor = num(&want, "recipe.factor"), .patience = (int64_t)num(&want, "recipe.patience"),
                   .epochs = 1, .steps_per_epoch = 1, .accumulate = 1};
  IrModule *m = ok ? parse_file(a, "mlp.ir") : NULL;
  IrFunc *loss = m ? ir_module_find_func(m, "loss") : NULL;
  IrFunc *g = loss ? ad_grad(m, loss, NULL) : NULL;
  IrFunc *step = g ? optim_build_step(m, loss, g, &r) : NULL;
  IrFunc *pu = step ? optim_build_plateau(m, &r, DT_F64) : NULL;
  DiagSink ds;
  diag_init(&ds, a);
  ok = pu && ir_verify(m, &ds);
  if (pu && !ok) diag_print(&ds, stdout);
  check("plateau: plateau_update builds and verifies", ok);
  if (!ok) goto done;
  check("plateau: module round-trips through the text form", same_text(a, m));
  State s;
  ok = init_state(&s, m, data, &r);
  const Entry *met = get(&want, "metric"), *lrs = get(&want, "lr");
  ok = ok && met && lrs;
  for (int k = 0; ok && k < met->n; k++) {
    Tensor *in = interp_tensor_from(DT_F64, 0, NULL, &met->v[k]), *out = NULL;
    InterpParams ip = {s.n, s.paths, s.vals, 0};
    if (run_f64(m, pu, &in, 1, &ip, &out)) {
      ok = false;
    } else if (!close_to(r.lr * out->data[0], lrs->v[k]) ||
               !close_to(optim_lr(&r, 0, find_state(&s, "opt.plateau.scale")->data[0]), lrs->v[k])) {
      printf("  epoch %d: lr %.17g, torch %.17g\n", k, r.lr * out->data[0], lrs->v[k]);
      ok = false;
    }
    interp_tensor_free(in);
    interp_tensor_free(out);
  }
  check("plateau: lr after every epoch matches ReduceLROnPlateau", ok);
  free_state(&s);
done:
  unload(&want);
  arena_free(a);
}

// ---- stores: verifier and interpreter -------------------------------------------------------------------
static const char *store_ok =
    "module S\n"
    "param w : f64[2] trainable\n"
    "optstate opt.n : i64\n"
    "\n"
    "func f(%x: f64[2]) -> (f64[2], i64) {\n"
    "  %0 = param w : f64[2]\n"
    "  %1 = add(%0, %x) : f64[2]\n"
    "  %2 = store w(%1) : f64[2]\n"
    "  %3 = param w : f64[2]\n"
    "  %4 = optstate opt.n : i64\n"
    "  %5 = const {value = 1.0} : i64\n"
    "  %6 = add(%4, %5) : i64\n"
    "  %7 = store opt.n(%6) : i64\n"
    "  %8 = cos(%3) : f64[2]\n"
    "  return %8, %4\n"
    "}\n";

static bool rejects(const char *text, const char *want) {
  Arena *a = arena_new();
  DiagSink ds;
  diag_init(&ds, a);
  IrModule *m = ir_parse(a, src_from_string(a, "bad.ir", text, strlen(text)), &ds);
  bool ok = m && !ir_verify(m, &ds);
  bool found = false;
  for (int i = 0; i < ds.diags.len; i++)
    if (strstr(VEC_AT(ds.diags, Diag, i)->msg, want)) found = true;
  if (!found) diag_print(&ds, stdout);
  arena_free(a);
  return ok && found;
}

static void test_stores(void) {
  Arena *a = arena_new();
  IrModule *m = parse_text(a, "store.ir", store_ok, false);
  check("store: valid module verifies", m != NULL);
  if (m) check("store: round-trips through the text form", same_text(a, m));
  if (m) {
    int64_t d2[1] = {2};
    double wv[2] = {0, 1}, xv[2] = {10, 20};
    Tensor *w = interp_tensor_from(DT_F64, 1, d2, wv), *n = interp_tensor_new(DT_I64, 0, NULL);
    Tensor *x = interp_tensor_from(DT_F64, 1, d2, xv), *first[2] = {0}, *second[2] = {0};
    const char *paths[2] = {"w", "opt.n"};
    Tensor *vals[2] = {w, n};
    InterpParams ip = {2, paths, vals, 0};
    IrFunc *f = ir_module_find_func(m, "f");
    // f returns two values: each run gets its own array of two
    int rc = run_f64(m, f, &x, 1, &ip, first);
    rc |= run_f64(m, f, &x, 1, &ip, second) ? 1 : 0;
    // reads see the old value (cos of the old w, the old opt.n), stores land after the run
    check("store: reads see the old value, writes land after the function",
          rc == 0 && fabs(first[0]->data[1] - cos(1)) < 1e-15 && first[1]->data[0] == 0 &&
              fabs(second[0]->data[1] - cos(21)) < 1e-15 && second[1]->data[0] == 1 && w->data[0] == 20 &&
              w->data[1] == 41 && n->data[0] == 2);
    for (int i = 0; i < 2; i++) interp_tensor_free(first[i]), interp_tensor_free(second[i]);
    interp_tensor_free(w);
    interp_tensor_free(n);
    interp_tensor_free(x);
  }
  arena_free(a);
  check("store: unknown path is rejected",
        rejects("module S\nparam w : f64[2]\nfunc f(%x: f64[2]) -> () {\n  %0 = store v(%x) : f64[2]\n  return\n}\n",
                "no state named v"));
  check("store: type mismatch is rejected",
        rejects("module S\nparam w : f64[3]\nfunc f(%x: f64[2]) -> () {\n  %0 = store w(%x) : f64[2]\n  return\n}\n",
                "stores a f64[2] into w of type f64[3]"));
  check("store: two stores of one slot are rejected",
        rejects("module S\nparam w : f64[2]\nfunc f(%x: f64[2]) -> () {\n  %0 = store w(%x) : f64[2]\n"
                "  %1 = store w(%x) : f64[2]\n  return\n}\n",
                "already stored"));
  check("optstate: read of a param as optstate is rejected",
        rejects("module S\nparam w : f64[2]\nfunc f() -> (f64[2]) {\n  %0 = optstate w : f64[2]\n  return %0\n}\n",
                "w is a param"));
}

// Warmup given in epochs: 1 epoch of warmup is steps_per_epoch steps, and
// the graph reads steps_per_epoch and total_steps from state, so a runtime
// that sets them (here: 7 steps per epoch) gets the matching schedule.
static void test_warmup_epochs(void) {
  OptimRecipe r = {.opt = OPT_SGD, .lr = 0.1, .sched = SCHED_COSINE, .warmup = 1,
                   .warmup_epochs = true, .epochs = 3, .steps_per_epoch = 7, .accumulate = 1};
  check("warmup 1 epoch: lr at step 3 of 7 is lr * 3/7", fabs(optim_lr(&r, 3, 1) - 0.1 * 3 / 7) < 1e-15);
  check("warmup 1 epoch: lr at step 7 is the peak", fabs(optim_lr(&r, 7, 1) - 0.1) < 1e-15);
  check("steps_per_epoch state starts at the recipe's", optim_state_init(&r, "opt.steps_per_epoch") == 7);
  check("total_steps state starts at epochs * steps_per_epoch", optim_state_init(&r, "opt.total_steps") == 21);
}

int main(int argc, char **argv) {
  if (argc > 1) dir = argv[1];
  Table data;
  check("reference data loads", load(&data, "data.txt"));
  const char *cases[] = {"sgd_nesterov", "adam", "adamw", "accum_sgd_linear", "sgd_step",
                         "adamw_groups", "sgd_groups",
                         "adam_multistep", "adamw_exponential", "sgd_constant"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_case(cases[i], &data);
  test_plateau(&data);
  test_stores();
  test_warmup_epochs();
  unload(&data);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
