// sema_train.c — train recipes: `train Model { settings }`.
//
// Input: a train Item and the checked model it names. Output: diagnostics,
// the model's frozen paths (Inst.frozen) that --explain counts as frozen,
// and the recipe as data (recipe.h) in the model's ItemInfo: sema's product
// for the train block, which the optimizer step and the program's defaults
// read (no later stage evaluates the block again). Everything a recipe says
// is checked here, before anything runs:
// each setting's name (with a suggestion when misspelt), the optimizer and
// schedule and their hyperparameters (the ranges torch.optim would refuse at
// run time), freeze paths against the model's instance tree, and each data
// binding against the parameter of `loss` it feeds: the source's element
// dtype and, when the file's header can be read now, its per-record element
// count (builtins_data.c reads the headers).
#include <string.h>

#include "sema_internal.h"

// ---- hyperparameter tables ----------------------------------------------------------
typedef enum {
  HK_NUM,      // a number
  HK_INT,      // an integer
  HK_BOOL,     // true/false
  HK_DURATION, // a number with a unit: 1 epoch, 500 steps
  HK_INTLIST,  // [3, 6]
  HK_PATTERNS, // "*.b" or ["*.b", "*.bias"]: param path patterns
} HKind;

typedef struct HParam {
  const char *name;
  HKind kind;
  bool required;
  double deflt; // the value when absent (docs/language.md, "The train block")
} HParam;

typedef struct HSpec {
  const char *name;
  int n;
  HParam p[10];
} HSpec;

static const HSpec optimizers[] = {
    {"sgd", 5,
     {{"lr", HK_NUM, true, 0.01}, {"momentum", HK_NUM, false, 0},
      {"dampening", HK_NUM, false, 0}, {"nesterov", HK_BOOL, false, 0},
      {"weight_decay", HK_NUM, false, 0}}},
    {"adam", 5,
     {{"lr", HK_NUM, false, 1e-3}, {"beta1", HK_NUM, false, 0.9},
      {"beta2", HK_NUM, false, 0.999}, {"eps", HK_NUM, false, 1e-8},
      {"weight_decay", HK_NUM, false, 0}}},
    {"adamw", 5,
     {{"lr", HK_NUM, false, 1e-3}, {"beta1", HK_NUM, false, 0.9},
      {"beta2", HK_NUM, false, 0.999}, {"eps", HK_NUM, false, 1e-8},
      {"weight_decay", HK_NUM, false, 0.01}}},
};

static const HSpec schedules[] = {
    {"constant", 0, {{0}}},
    {"step", 2, {{"step_size", HK_INT, true, 1}, {"gamma", HK_NUM, false, 0.1}}},
    {"multistep", 2, {{"milestones", HK_INTLIST, true, 0}, {"gamma", HK_NUM, false, 0.1}}},
    {"exponential", 1, {{"gamma", HK_NUM, true, 0.1}}},
    {"cosine", 2, {{"warmup", HK_DURATION, false, 0}, {"min_lr", HK_NUM, false, 0}}},
    {"linear", 2, {{"warmup", HK_DURATION, false, 0}, {"end_lr", HK_NUM, false, 0}}},
    {"plateau", 2, {{"factor", HK_NUM, false, 0.1}, {"patience", HK_INT, false, 10}}},
};

// group NAME(match = patterns, hyper-parameters...): a parameter group. Which
// hyper-parameters a group may set depends on the optimizer (finish_groups).
static const HSpec group_spec = {
    "group", 10,
    {{"match", HK_PATTERNS, true, 0}, {"lr_scale", HK_NUM, false, 1}, {"lr", HK_NUM, false, 0},
     {"momentum", HK_NUM, false, 0}, {"dampening", HK_NUM, false, 0},
     {"nesterov", HK_BOOL, false, 0}, {"weight_decay", HK_NUM, false, 0},
     {"beta1", HK_NUM, false, 0}, {"beta2", HK_NUM, false, 0}, {"eps", HK_NUM, false, 0}}};
enum { G_MATCH, G_LR_SCALE, G_LR, G_MOMENTUM, G_DAMPENING, G_NESTEROV, G_WD, G_BETA1, G_BETA2, G_EPS };

// loss_scale dynamic(...): torch.cuda.amp.GradScaler's arguments and defaults
// (the same names).
static const HSpec dynamic_spec = {
    "dynamic", 4,
    {{"init_scale", HK_NUM, false, 65536.0}, {"growth_factor", HK_NUM, false, 2.0},
     {"backoff_factor", HK_NUM, false, 0.5}, {"growth_interval", HK_INT, false, 2000}}};

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

// One bound hyperparameter.
typedef struct HVal {
  bool given;
  double num;
  bool b;
  const char *unit; // HK_DURATION: as written (NULL for 0)
  Expr *src;
  Value *v;
} HVal;

// Parameter i of a spec as the recipe records it: the value given, or the
// spec's default.
static double hnum(const HSpec *sp, const HVal *h, int i) {
  return h[i].given ? (sp->p[i].kind == HK_BOOL ? h[i].b : h[i].num) : sp->p[i].deflt;
}

typedef struct Train {
  Sema *S;
  Item *item;
  Inst *model;
  MInfo *loss;
  Sig *loss_sig;
  SMap seen; // setting key -> Setting* (settings that may appear once)
  Recipe *r; // the model's recipe being filled (a scratch one without a model)
  Vec groups; // GroupSetting*: checked once the optimizer and freezes are known
} Train;

// ---- small helpers --------------------------------------------------------------------
static Vec names_of(Sema *S, const char *const *names, int n) {
  Vec c = {0};
  for (int i = 0; i < n; i++) vec_push(S->arena, &c, (void *)names[i]);
  return c;
}

static const HSpec *find_spec(Sema *S, const HSpec *specs, int n,
                              const char *name, Span sp, const char *what) {
  Vec c = {0};
  for (int i = 0; i < n; i++) {
    if (!strcmp(specs[i].name, name)) return &specs[i];
    vec_push(S->arena, &c, (void *)specs[i].name);
  }
  StrBuf b = {0};
  for (int i = 0; i < n; i++) sb_printf(&b, "%s%s", i ? ", " : "", specs[i].name);
  sema_error(S, sp, "unknown %s '%s'%s (%s: %s)", what, name,
             sema_suggest(S, name, &c), what, b.data);
  sb_free(&b);
  return NULL;
}

static bool unit_ok(const char *u) {
  return !strcmp(u, "epoch") || !strcmp(u, "epochs") || !strcmp(u, "step") ||
         !strcmp(u, "steps");
}

// A constant integer from an expression evaluated in the recipe's scope.
static bool const_int(Value *v, int64_t *out) {
  return v && v->kind == V_DIM && dim_is_const(v->dim, out);
}

static Value *eval_const(Train *t, Expr *e) {
  Scope sc;
  sema_scope_init(&sc, t->S, NULL, 0);
  sc.const_only = true;
  return sema_eval(&sc, e);
}

// Checks one hyperparameter value against its kind.
static bool hval_kind(Train *t, const HParam *p, Arg *a, HVal *h) {
  Sema *S = t->S;
  if (a->unit && p->kind != HK_DURATION) {
    sema_error(S, a->unit_span, "'%s' takes no unit", p->name);
    return false;
  }
  h->v = eval_const(t, a->value);
  if (!h->v) return false;
  int64_t k;
  switch (p->kind) {
  case HK_BOOL:
    if (h->v->kind == V_BOOL) {
      h->b = h->v->b;
      return true;
    }
    sema_error(S, a->value->span, "'%s' must be true or false, got %s", p->name,
               value_str(S->arena, h->v));
    return false;
  case HK_INT:
    if (const_int(h->v, &k)) {
      h->num = (double)k;
      return true;
    }
    sema_error(S, a->value->span, "'%s' must be an integer, got %s", p->name,
               value_str(S->arena, h->v));
    return false;
  case HK_PATTERNS: {
    bool ok = h->v->kind == V_STR || (h->v->kind == V_LIST && h->v->items.len);
    for (int i = 0; ok && h->v->kind == V_LIST && i < h->v->items.len; i++)
      ok = VEC_AT(h->v->items, Value, i)->kind == V_STR;
    if (ok) return true;
    sema_error(S, a->value->span, "'%s' takes a param path pattern or a list of them, like "
               "\"*.bias\" or [\"*.b\", \"*.bias\"] (* matches anything), got %s", p->name,
               value_str(S->arena, h->v));
    return false;
  }
  case HK_INTLIST:
    if (h->v->kind == V_LIST) return true;
    sema_error(S, a->value->span, "'%s' must be a list of integers like [30, "
               "60], got %s", p->name, value_str(S->arena, h->v));
    return false;
  case HK_DURATION:
    if (a->unit && !unit_ok(a->unit)) {
      sema_error(S, a->unit_span, "unknown unit '%s' (epoch, epochs, step, "
                 "steps)", a->unit);
      return false;
    }
    if (!const_int(h->v, &k) || k < 0) {
      sema_error(S, a->value->span, "'%s' must be a non-negative whole number "
                 "of epochs or steps, got %s", p->name, value_str(S->arena, h->v));
      return false;
    }
    if (!a->unit && k != 0) {
      sema_error(S, a->value->span, "'%s' needs a unit: %lld epoch%s or %lld "
                 "steps", p->name, (long long)k, k == 1 ? "" : "s", (long long)k);
      return false;
    }
    h->num = (double)k;
    h->unit = a->unit;
    return true;
  case HK_NUM:
    if (sema_const_num(h->v, &h->num)) return true;
    sema_error(S, a->value->span, "'%s' must be a number, got %s", p->name,
               value_str(S->arena, h->v));
    return false;
  }
  return false;
}

// Binds `name(args)` to a spec: positional in order, then named.
static bool bind_hparams(Train *t, const HSpec *sp, Vec *args, Span call,
                         HVal *h) {
  Sema *S = t->S;
  const char *names[10];
  for (int k = 0; k < sp->n; k++) names[k] = sp->p[k].name;
  ArgBind b = {.owner = sp->name, .n = sp->n, .names = names, .report_extra = true};
  bool ok = sema_bind_args(S, args, &b);
  for (int k = 0; k < sp->n; k++) {
    if (b.arg[k]) {
      h[k].given = true;
      h[k].src = b.arg[k]->value;
      if (!hval_kind(t, &sp->p[k], b.arg[k], &h[k])) ok = false;
    } else if (sp->p[k].required) {
      sema_error(S, call, "%s needs '%s'", sp->name, sp->p[k].name);
      ok = false;
    }
  }
  return ok;
}

// `name` or `name(args)`: the spec name, its span and its argument list.
static bool split_call(Expr *e, const char **name, Span *sp, Vec **args) {
  static Vec none;
  if (e->kind == EX_NAME) {
    *name = e->name;
    *sp = e->span;
    *args = &none;
    return true;
  }
  if (e->kind == EX_CALL && e->lhs->kind == EX_NAME) {
    *name = e->lhs->name;
    *sp = e->lhs->span;
    *args = &e->args;
    return true;
  }
  return false;
}

// A range check on a given hyperparameter; `what` completes "must be ...".
static bool hcheck(Train *t, HVal *h, const char *name, bool ok,
                   const char *what) {
  if (!h->given || ok) return true;
  sema_error(t->S, h->src->span, "%s must be %s, got %g", name, what, h->num);
  return false;
}

// ---- optimizer and schedule -------------------------------------------------------------
// The optimizer's numbers into the recipe (parameter order: optimizers[]).
static void record_optimizer(Recipe *r, const HSpec *sp, const HVal *h) {
  OptimRecipe *o = &r->opt;
  r->optimizer = sp->name;
  o->opt = !strcmp(sp->name, "sgd") ? OPT_SGD : !strcmp(sp->name, "adamw") ? OPT_ADAMW : OPT_ADAM;
  o->lr = hnum(sp, h, 0);
  o->weight_decay = hnum(sp, h, 4);
  if (o->opt == OPT_SGD) {
    o->momentum = hnum(sp, h, 1);
    o->dampening = hnum(sp, h, 2);
    o->nesterov = hnum(sp, h, 3) != 0;
    return;
  }
  o->beta1 = hnum(sp, h, 1);
  o->beta2 = hnum(sp, h, 2);
  o->eps = hnum(sp, h, 3);
}

// The schedule's numbers into the recipe (parameter order: schedules[]).
static void record_schedule(Recipe *r, const HSpec *sp, const HVal *h) {
  static const struct {
    const char *name;
    SchedKind kind;
  } kinds[] = {{"constant", SCHED_CONSTANT}, {"step", SCHED_STEP},     {"multistep", SCHED_MULTISTEP},
               {"exponential", SCHED_EXPONENTIAL}, {"cosine", SCHED_COSINE}, {"linear", SCHED_LINEAR},
               {"plateau", SCHED_PLATEAU}};
  OptimRecipe *o = &r->opt;
  r->schedule = sp->name;
  for (int i = 0; i < NELEM(kinds); i++)
    if (!strcmp(kinds[i].name, sp->name)) o->sched = kinds[i].kind;
  switch (o->sched) {
  case SCHED_STEP: o->step_size = (int64_t)hnum(sp, h, 0), o->gamma = hnum(sp, h, 1); break;
  case SCHED_MULTISTEP:
    o->gamma = hnum(sp, h, 1);
    for (int i = 0; i < h[0].v->items.len && i < OPTIM_MAX_MILESTONES; i++) {
      int64_t k = 0; // checked by check_milestones
      Value *m = VEC_AT(h[0].v->items, Value, i);
      if (m->kind == V_DIM) dim_is_const(m->dim, &k);
      o->milestones[o->nmilestones++] = k;
    }
    break;
  case SCHED_EXPONENTIAL: o->gamma = hnum(sp, h, 0); break;
  case SCHED_COSINE: case SCHED_LINEAR:
    o->warmup = (int64_t)hnum(sp, h, 0);
    o->warmup_epochs = h[0].unit && !strncmp(h[0].unit, "epoch", 5);
    o->min_lr = hnum(sp, h, 1);
    break;
  case SCHED_PLATEAU: o->factor = hnum(sp, h, 0), o->patience = (int64_t)hnum(sp, h, 1); break;
  case SCHED_CONSTANT: break;
  }
}

// The ranges torch.optim checks when the optimizer is built.
static void check_optimizer(Train *t, Setting *st) {
  Sema *S = t->S;
  const char *name;
  Span sp;
  Vec *args;
  if (!split_call(st->value, &name, &sp, &args)) {
    sema_error(S, st->value->span, "optimizer takes sgd(...), adam(...) or "
               "adamw(...)");
    return;
  }
  const HSpec *spec = find_spec(S, optimizers, NELEM(optimizers), name, sp,
                                "optimizer");
  if (!spec) return;
  HVal h[10] = {{0}};
  if (!bind_hparams(t, spec, args, st->value->span, h)) return;
  record_optimizer(t->r, spec, h);
  hcheck(t, &h[0], "lr", h[0].num > 0, "positive");
  if (!strcmp(name, "sgd")) {
    hcheck(t, &h[1], "momentum", h[1].num >= 0, "non-negative");
    hcheck(t, &h[2], "dampening", h[2].num >= 0, "non-negative");
    hcheck(t, &h[4], "weight_decay", h[4].num >= 0, "non-negative");
    if (h[3].given && h[3].b && (!(h[1].num > 0) || h[2].num != 0))
      sema_error(S, h[3].src->span, "nesterov needs momentum > 0 and dampening "
                 "= 0 (momentum = %g, dampening = %g)", h[1].num, h[2].num);
    return;
  }
  hcheck(t, &h[1], "beta1", h[1].num >= 0 && h[1].num < 1, "in [0, 1)");
  hcheck(t, &h[2], "beta2", h[2].num >= 0 && h[2].num < 1, "in [0, 1)");
  hcheck(t, &h[3], "eps", h[3].num > 0, "positive");
  hcheck(t, &h[4], "weight_decay", h[4].num >= 0, "non-negative");
}

static void check_milestones(Train *t, HVal *h) {
  int64_t prev = 0, k;
  if (h->v->items.len > OPTIM_MAX_MILESTONES) {
    sema_error(t->S, h->src->span, "a multistep schedule takes at most %d milestones, got %d",
               OPTIM_MAX_MILESTONES, h->v->items.len);
    return;
  }
  for (int i = 0; i < h->v->items.len; i++) {
    Value *m = VEC_AT(h->v->items, Value, i);
    if (!const_int(m, &k) || k <= prev) {
      sema_error(t->S, m->span, "milestones must be increasing positive epoch "
                 "numbers, got %s", value_str(t->S->arena, m));
      return;
    }
    prev = k;
  }
}

static void check_schedule(Train *t, Setting *st) {
  const char *name;
  Span sp;
  Vec *args;
  if (!split_call(st->value, &name, &sp, &args)) {
    sema_error(t->S, st->value->span, "schedule takes a schedule name, like "
               "constant or cosine(warmup = 1 epoch)");
    return;
  }
  const HSpec *spec =
      find_spec(t->S, schedules, NELEM(schedules), name, sp, "schedule");
  if (!spec) return;
  HVal h[10] = {{0}};
  if (!bind_hparams(t, spec, args, st->value->span, h)) return;
  record_schedule(t->r, spec, h);
  if (!strcmp(name, "step")) {
    hcheck(t, &h[0], "step_size", h[0].num >= 1, "a positive number of epochs");
    hcheck(t, &h[1], "gamma", h[1].num > 0, "positive");
  } else if (!strcmp(name, "multistep")) {
    check_milestones(t, &h[0]);
    hcheck(t, &h[1], "gamma", h[1].num > 0, "positive");
  } else if (!strcmp(name, "exponential")) {
    hcheck(t, &h[0], "gamma", h[0].num > 0, "positive");
  } else if (!strcmp(name, "cosine") || !strcmp(name, "linear")) {
    hcheck(t, &h[1], spec->p[1].name, h[1].num >= 0, "non-negative");
  } else if (!strcmp(name, "plateau")) {
    hcheck(t, &h[0], "factor", h[0].num > 0 && h[0].num < 1, "in (0, 1)");
    hcheck(t, &h[1], "patience", h[1].num >= 0, "non-negative");
  }
}

// ---- simple settings ----------------------------------------------------------------------
// An integer setting in [min, max]; false after an error.
static bool check_count(Train *t, Setting *st, int64_t min, int64_t max, int64_t *out) {
  Sema *S = t->S;
  Value *v = eval_const(t, st->value);
  int64_t k;
  if (!v) return false;
  if (!const_int(v, &k))
    sema_error(S, st->value->span, "%s takes an integer, got %s", st->key,
               value_str(S->arena, v));
  else if (k < min)
    sema_error(S, st->value->span, "%s must be %s, got %lld", st->key,
               min > 0 ? "positive" : "non-negative", (long long)k);
  else if (k > max)
    sema_error(S, st->value->span, "%s is at most %lld, got %lld%s", st->key, (long long)max,
               (long long)k,
               !strcmp(st->key, "accumulate") ? " (each micro-batch is a copy of the gradient "
                                                "graph in the training step)"
                                              : "");
  else {
    *out = k;
    return true;
  }
  return false;
}

static void record_count(Train *t, Setting *st) {
  int64_t k = 0, min = strcmp(st->key, "seed") ? 1 : 0;
  int64_t max = !strcmp(st->key, "accumulate") ? OPTIM_MAX_ACCUMULATE : INT64_MAX;
  if (!check_count(t, st, min, max, &k)) return;
  Recipe *r = t->r;
  if (!strcmp(st->key, "batch")) r->batch = k;
  else if (!strcmp(st->key, "epochs")) r->epochs = r->opt.epochs = k;
  else if (!strcmp(st->key, "seed")) r->seed = k;
  else r->opt.accumulate = (int)k;
}

// One of `words`; returns it (NULL after an error).
static const char *check_word(Train *t, Setting *st, const char *const *words,
                              int n) {
  Sema *S = t->S;
  Expr *e = st->value;
  if (e->kind == EX_NAME)
    for (int i = 0; i < n; i++)
      if (!strcmp(e->name, words[i])) return words[i];
  Vec c = names_of(S, words, n);
  StrBuf b = {0};
  for (int i = 0; i < n; i++) sb_printf(&b, "%s%s", i ? ", " : "", words[i]);
  if (e->kind == EX_NAME)
    sema_error(S, e->span, "unknown %s '%s'%s (%s)", st->key, e->name,
               sema_suggest(S, e->name, &c), b.data);
  else
    sema_error(S, e->span, "%s takes one of %s", st->key, b.data);
  sb_free(&b);
  return NULL;
}

static void check_precision(Train *t, Setting *st) {
  Expr *e = st->value;
  if (e->kind == EX_DTYPE &&
      (e->dtype == DT_F32 || e->dtype == DT_BF16 || e->dtype == DT_F16)) {
    t->r->precision = e->dtype;
    return;
  }
  sema_error(t->S, e->span, "precision must be f32, bf16 or f16");
}

// A loss scale must be a positive number that f32 holds (the scale and the
// scaled loss are f32 values, as GradScaler's are).
static bool scale_ok(double x) { return x > 0 && x <= 3.4028234663852886e38; }

static void record_dynamic(OptimRecipe *o, const HVal *h) {
  o->loss_scale = LSCALE_DYNAMIC;
  o->scale_init = hnum(&dynamic_spec, h, 0);
  o->scale_growth = hnum(&dynamic_spec, h, 1);
  o->scale_backoff = hnum(&dynamic_spec, h, 2);
  o->scale_interval = (int64_t)hnum(&dynamic_spec, h, 3);
}

// loss_scale none | dynamic | dynamic(init = .., growth_factor = ..,
// backoff_factor = .., growth_interval = ..) | a number (a static scale).
static void check_loss_scale(Train *t, Setting *st) {
  Sema *S = t->S;
  OptimRecipe *o = &t->r->opt;
  const char *name;
  Span sp;
  Vec *args;
  if (split_call(st->value, &name, &sp, &args) && (!strcmp(name, "dynamic") ||
                                                   (!strcmp(name, "none") && st->value->kind == EX_NAME))) {
    if (!strcmp(name, "none")) {
      o->loss_scale = LSCALE_NONE;
      return;
    }
    HVal h[10] = {{0}};
    if (!bind_hparams(t, &dynamic_spec, args, st->value->span, h)) return;
    record_dynamic(o, h);
    hcheck(t, &h[0], "init_scale", scale_ok(h[0].num), "a positive number at most 3.4e38 (f32's largest)");
    hcheck(t, &h[1], "growth_factor", h[1].num > 1 && scale_ok(h[1].num), "greater than 1");
    hcheck(t, &h[2], "backoff_factor", h[2].num > 0 && h[2].num < 1, "in (0, 1)");
    hcheck(t, &h[3], "growth_interval", h[3].num >= 1, "a positive number of steps");
    return;
  }
  if (st->value->kind == EX_NAME || st->value->kind == EX_CALL) {
    const char *const words[] = {"none", "dynamic"};
    const char *n = st->value->kind == EX_NAME ? st->value->name
                    : st->value->lhs->kind == EX_NAME ? st->value->lhs->name : NULL;
    Vec c = names_of(S, words, 2);
    sema_error(S, st->value->kind == EX_CALL ? st->value->lhs->span : st->value->span,
               "loss_scale takes none, dynamic, dynamic(init_scale = .., growth_interval = ..) or a "
               "number%s", n ? sema_suggest(S, n, &c) : "");
    return;
  }
  Value *v = eval_const(t, st->value);
  double x;
  if (!v) return;
  if (!sema_const_num(v, &x) || !scale_ok(x)) {
    sema_error(S, st->value->span, "a static loss_scale must be a positive number at most "
               "3.4e38 (f32's largest), got %s", value_str(S->arena, v));
    return;
  }
  o->loss_scale = LSCALE_STATIC;
  o->scale_init = x;
}

static void check_clip(Train *t, Setting *st) {
  Sema *S = t->S;
  if (!st->sub_key || strcmp(st->sub_key, "grad_norm")) {
    const char *const names[] = {"grad_norm"};
    Vec c = names_of(S, names, 1);
    if (st->sub_key)
      sema_error(S, st->sub_span, "unknown clip '%s'%s (clip grad_norm = X)",
                 st->sub_key, sema_suggest(S, st->sub_key, &c));
    else
      sema_error(S, st->span, "write clip grad_norm = X");
    return;
  }
  Value *v = eval_const(t, st->value);
  double x;
  if (!v) return;
  if (!sema_const_num(v, &x) || !(x > 0))
    sema_error(S, st->value->span, "grad_norm must be a positive number, got %s",
               value_str(S->arena, v));
  else t->r->opt.clip = x;
}

// checkpoint every = N (epochs), checkpoint keep = N, checkpoint path = "..."
static void check_checkpoint(Train *t, Setting *st) {
  Sema *S = t->S;
  const char *const keys[] = {"every", "keep", "path"};
  if (!st->sub_key) {
    sema_error(S, st->span, "write checkpoint every = N, checkpoint keep = N "
               "or checkpoint path = \"...\"");
    return;
  }
  int k = -1;
  for (int i = 0; i < 3; i++)
    if (!strcmp(st->sub_key, keys[i])) k = i;
  if (k < 0) {
    Vec c = names_of(S, keys, 3);
    sema_error(S, st->sub_span, "unknown checkpoint setting '%s'%s",
               st->sub_key, sema_suggest(S, st->sub_key, &c));
    return;
  }
  Value *v = eval_const(t, st->value);
  int64_t n;
  if (!v) return;
  if (k == 2 && (v->kind != V_STR || !v->str[0]))
    sema_error(S, st->value->span, "checkpoint path must be a non-empty string");
  else if (k < 2 && (!const_int(v, &n) || n < 1))
    sema_error(S, st->value->span, "checkpoint %s must be a positive integer, "
               "got %s", keys[k], value_str(S->arena, v));
  else if (k == 2) t->r->ckpt_path = v->str;
  else if (k == 1) t->r->ckpt_keep = n;
  else t->r->ckpt_every = n;
}

// ---- freeze --------------------------------------------------------------------------------
// The member one segment of a freeze path names in `cur`: `.name`, or
// `[k]` of a list of instances (negative k counts from the end); its name
// in the path ("attn", "2"). NULL after an error.
static MInfo *freeze_seg(Train *t, Expr *s, Inst *cur, const char **name) {
  Sema *S = t->S;
  if (s->kind != EX_INDEX) {
    *name = s->name;
    return sema_member(cur, s->name);
  }
  Arg *a = s->args.len == 1 ? VEC_AT(s->args, Arg, 0) : NULL;
  Expr *x = a && !a->name ? a->value : NULL;
  bool neg = x && x->kind == EX_UNARY && x->op == OP_NEG;
  if (neg) x = x->lhs;
  int n = cur->item->members.len;
  if (!cur->is_list || !x || x->kind != EX_INT) {
    sema_error(S, s->span, cur->is_list ? "an element of a list is written with an integer, "
               "like blocks[0]" : "only a list of instances can be indexed in a freeze path");
    return NULL;
  }
  int64_t k = neg ? -x->ival : x->ival;
  if (k < -n || k >= n) {
    sema_error(S, x->span, "index %lld is out of range for a list of %d instances",
               (long long)k, n);
    return NULL;
  }
  MInfo *mi = cur->members[k < 0 ? k + n : k];
  *name = mi->m->name;
  return mi;
}

// freeze fc1, freeze enc.layer1, freeze fc1.w, freeze blocks[0]: an
// instance (all of its params), a list of them, or one param of the
// model's instance tree.
static void check_freeze(Train *t, Setting *st) {
  Sema *S = t->S;
  Expr *segs[64];
  int n = 0;
  Expr *e = st->value;
  while ((e->kind == EX_MEMBER || e->kind == EX_INDEX) && n < 63) {
    segs[n++] = e;
    e = e->lhs;
  }
  if (e->kind != EX_NAME) {
    sema_error(S, st->value->span, "freeze takes an instance or param path, "
               "like backbone or encoder.fc1");
    return;
  }
  segs[n++] = e;
  Inst *cur = t->model;
  StrBuf path = {0};
  for (int i = n - 1; i >= 0; i--) {
    Expr *s = segs[i];
    const char *name = NULL;
    MInfo *mi = freeze_seg(t, s, cur, &name);
    Member *m = mi ? mi->m : NULL;
    if (!m || m->kind == MB_METHOD) {
      Vec c = {0};
      for (int k = 0; k < cur->item->members.len; k++) {
        Member *o = cur->members[k]->m;
        if (o->kind == MB_INSTANCE || o->kind == MB_INSTANCE_LIST || o->kind == MB_PARAM)
          vec_push(S->arena, &c, (void *)o->name);
      }
      if (name && cur->is_list)
        sema_error(S, s->span, "%s has no element '%s': its elements are 0 to %d",
                   cur->label, name, cur->item->members.len - 1);
      else if (name)
        sema_error(S, s->span, "%s has no instance or param '%s'%s", cur->label,
                   name, sema_suggest(S, name, &c));
      sb_free(&path);
      return;
    }
    sb_printf(&path, "%s%s", path.len ? "." : "", name);
    if (m->kind == MB_BUFFER) {
      sema_error(S, s->span, "'%s' is a buffer: buffers are never trained, so "
                 "there is nothing to freeze", name);
      sb_free(&path);
      return;
    }
    if (m->kind == MB_PARAM && i > 0) {
      sema_error(S, segs[i - 1]->span, "'%s' is a param and has no members", name);
      sb_free(&path);
      return;
    }
    if (m->kind == MB_INSTANCE || m->kind == MB_INSTANCE_LIST) {
      cur = mi->child;
      if (!cur) {
        sb_free(&path);
        return;
      }
    }
  }
  const char *p = arena_strdup(S->arena, path.data);
  vec_push(S->arena, &t->model->frozen, (void *)p);
  vec_push(S->arena, &t->r->freeze, (void *)p);
  sb_free(&path);
}

// ---- parameter groups ----------------------------------------------------------------------
// group no_decay(match = ["*.b", "*.bias"], weight_decay = 0): torch.optim's
// param_groups. The setting is bound here; what it may set depends on the
// optimizer and what it matches on the freezes, so the rest waits for the
// end of the block (finish_groups).
typedef struct GroupSetting {
  Setting *st;
  const char *name;
  Span name_span;
  HVal h[10];
} GroupSetting;

static void check_group(Train *t, Setting *st) {
  Sema *S = t->S;
  Expr *e = st->value;
  if (e->kind != EX_CALL || e->lhs->kind != EX_NAME) {
    sema_error(S, e->span, "write group NAME(match = \"pattern\", hyper-parameters...), like "
               "group no_decay(match = [\"*.b\", \"*.bias\"], weight_decay = 0)");
    return;
  }
  GroupSetting *g = arena_alloc(S->arena, sizeof *g);
  g->st = st;
  g->name = e->lhs->name;
  g->name_span = e->lhs->span;
  if (!bind_hparams(t, &group_spec, &e->args, e->span, g->h)) return;
  for (int i = 0; i < t->groups.len; i++) {
    GroupSetting *o = VEC_AT(t->groups, GroupSetting, i);
    if (strcmp(o->name, g->name)) continue;
    sema_error(S, g->name_span, "two parameter groups named '%s'", g->name);
    sema_note(S, o->name_span, "the first is here");
    return;
  }
  vec_push(S->arena, &t->groups, g);
}

// `*` matches any run of characters (dots too), `?` any one.
static bool glob_match(const char *p, const char *s) {
  const char *star = NULL, *resume = NULL;
  while (*s) {
    if (*p == '?' || (*p && *p == *s && *p != '*')) p++, s++;
    else if (*p == '*') star = p++, resume = s;
    else if (star) p = star + 1, s = ++resume;
    else return false;
  }
  while (*p == '*') p++;
  return !*p;
}

// The params of I below `path`, in the model's order: trainable ones into
// out, frozen ones into frozen.
static void param_paths(Train *t, Inst *I, const char *path, Vec *out, Vec *frozen, int depth) {
  Sema *S = t->S;
  if (!I || depth > SEMA_MAX_INST_DEPTH) return;
  for (int i = 0; i < I->item->members.len; i++) {
    MInfo *mi = I->members[i];
    Member *m = mi->m;
    const char *p = sema_join_path(S, path, m->name);
    if (m->kind == MB_INSTANCE || m->kind == MB_INSTANCE_LIST)
      param_paths(t, mi->child, p, out, frozen, depth + 1);
    else if (m->kind == MB_PARAM)
      vec_push(S->arena, m->frozen || sema_path_frozen(&t->model->frozen, p) ? frozen : out, (void *)p);
  }
}

// A group may set the hyper-parameters of the recipe's optimizer (and
// lr or lr_scale); the ranges are the optimizer's.
static bool group_values(Train *t, GroupSetting *g, OptimGroup *G) {
  Sema *S = t->S;
  const OptimRecipe *o = &t->r->opt;
  HVal *h = g->h;
  bool sgd = o->opt == OPT_SGD, ok = true;
  for (int k = G_MOMENTUM; k <= G_EPS; k++) {
    if (!h[k].given || (k <= G_NESTEROV ? sgd : !sgd) || k == G_WD) continue;
    sema_error(S, h[k].src->span, "%s has no '%s': a group of it may set %s", t->r->optimizer,
               group_spec.p[k].name, sgd ? "lr_scale, lr, momentum, dampening, nesterov and "
               "weight_decay" : "lr_scale, lr, beta1, beta2, eps and weight_decay");
    ok = false;
  }
  if (h[G_LR].given && h[G_LR_SCALE].given) {
    sema_error(S, h[G_LR].src->span, "a group sets lr or lr_scale, not both");
    return false;
  }
  double scale = h[G_LR].given ? h[G_LR].num / o->lr : h[G_LR_SCALE].given ? h[G_LR_SCALE].num : 1;
  HVal *lr = h[G_LR].given ? &h[G_LR] : &h[G_LR_SCALE];
  ok &= hcheck(t, lr, h[G_LR].given ? "lr" : "lr_scale", lr->num > 0, "positive");
#define OR(k, dflt) (h[k].given ? (k == G_NESTEROV ? (double)h[k].b : h[k].num) : (dflt))
  *G = (OptimGroup){.name = g->name, .lr_scale = scale, .momentum = OR(G_MOMENTUM, o->momentum),
                    .dampening = OR(G_DAMPENING, o->dampening),
                    .weight_decay = OR(G_WD, o->weight_decay),
                    .nesterov = OR(G_NESTEROV, o->nesterov) != 0, .beta1 = OR(G_BETA1, o->beta1),
                    .beta2 = OR(G_BETA2, o->beta2), .eps = OR(G_EPS, o->eps)};
#undef OR
  ok &= hcheck(t, &h[G_MOMENTUM], "momentum", h[G_MOMENTUM].num >= 0, "non-negative");
  ok &= hcheck(t, &h[G_DAMPENING], "dampening", h[G_DAMPENING].num >= 0, "non-negative");
  ok &= hcheck(t, &h[G_WD], "weight_decay", h[G_WD].num >= 0, "non-negative");
  ok &= hcheck(t, &h[G_BETA1], "beta1", h[G_BETA1].num >= 0 && h[G_BETA1].num < 1, "in [0, 1)");
  ok &= hcheck(t, &h[G_BETA2], "beta2", h[G_BETA2].num >= 0 && h[G_BETA2].num < 1, "in [0, 1)");
  ok &= hcheck(t, &h[G_EPS], "eps", h[G_EPS].num > 0, "positive");
  if (ok && sgd && G->nesterov && (!(G->momentum > 0) || G->dampening != 0)) {
    Span at = h[G_NESTEROV].given ? h[G_NESTEROV].src->span : g->name_span;
    sema_error(S, at, "nesterov needs momentum > 0 and dampening = 0 (group '%s': momentum = %g, "
               "dampening = %g)", g->name, G->momentum, G->dampening);
    ok = false;
  }
  return ok;
}

// The params one pattern of group gi matches (owner: the group index that
// holds each param so far, -1 none). False after reporting a pattern that
// matches nothing or a param another group holds.
static bool group_match(Train *t, int gi, Value *pat, const Vec *paths, const Vec *frozen,
                        int *owner, Vec *mine) {
  Sema *S = t->S;
  GroupSetting *g = VEC_AT(t->groups, GroupSetting, gi);
  int hits = 0;
  for (int i = 0; i < paths->len; i++) {
    const char *p = VEC_AT(*paths, const char, i);
    if (!glob_match(pat->str, p)) continue;
    hits++;
    if (owner[i] == gi) continue;
    if (owner[i] >= 0) {
      GroupSetting *o = VEC_AT(t->groups, GroupSetting, owner[i]);
      sema_error(S, pat->span, "'%s' matches groups '%s' and '%s': a param belongs to one group "
                 "(torch.optim refuses a param in two)", p, o->name, g->name);
      sema_note(S, o->name_span, "group '%s' is here", o->name);
      return false;
    }
    owner[i] = gi;
    vec_push(S->arena, mine, (void *)p);
  }
  if (hits) return true;
  for (int i = 0; i < frozen->len; i++) {
    const char *p = VEC_AT(*frozen, const char, i);
    if (!glob_match(pat->str, p)) continue;
    sema_error(S, pat->span, "pattern \"%s\" of group '%s' matches only frozen params, like "
               "'%s': a group holds params the optimizer updates", pat->str, g->name, p);
    return false;
  }
  StrBuf b = {0};
  for (int i = 0; i < paths->len && i < 6; i++)
    sb_printf(&b, "%s%s", i ? ", " : "", VEC_AT(*paths, const char, i));
  sema_error(S, pat->span, "pattern \"%s\" of group '%s' matches no trainable param", pat->str,
             g->name);
  sema_note(S, (Span){0}, "the trainable params are %s%s (* matches any characters, dots too)",
            b.data ? b.data : "none", paths->len > 6 ? ", ..." : "");
  sb_free(&b);
  return false;
}

// Once the block is read: every group's values and params into the recipe.
static void finish_groups(Train *t) {
  Sema *S = t->S;
  if (!t->groups.len || !t->model) return;
  if (t->groups.len > OPTIM_MAX_GROUPS) {
    sema_error(S, VEC_AT(t->groups, GroupSetting, OPTIM_MAX_GROUPS)->name_span, "at most %d "
               "parameter groups", OPTIM_MAX_GROUPS);
    return;
  }
  Vec paths = {0}, frozen = {0};
  param_paths(t, t->model, "", &paths, &frozen, 0);
  int *owner = arena_alloc(S->arena, sizeof(int) * (size_t)(paths.len + 1));
  for (int i = 0; i < paths.len; i++) owner[i] = -1;
  OptimRecipe *o = &t->r->opt;
  bool ok = true;
  for (int gi = 0; gi < t->groups.len; gi++) {
    GroupSetting *g = VEC_AT(t->groups, GroupSetting, gi);
    OptimGroup *G = &o->groups[gi];
    ok &= group_values(t, g, G);
    Value *m = g->h[G_MATCH].v;
    Vec mine = {0};
    int n = m->kind == V_LIST ? m->items.len : 1;
    for (int k = 0; k < n; k++)
      ok &= group_match(t, gi, m->kind == V_LIST ? VEC_AT(m->items, Value, k) : m, &paths, &frozen,
                        owner, &mine);
    G->npaths = mine.len;
    G->paths = (const char *const *)mine.data;
  }
  o->ngroups = ok ? t->groups.len : 0;
}

// ---- data ------------------------------------------------------------------------------------
// "idx file 'x.gz' has records of 28x28 = 784 values"
static const char *record_desc(Sema *S, const DataSource *ds) {
  const char *kind = ds->kind == DS_IDX ? "idx file" : ds->kind == DS_CSV ? "csv"
                                                                         : "npy file";
  StrBuf b = {0};
  sb_printf(&b, "%s '%s' has records of ", kind, ds->path);
  if (ds->rank <= 1)
    sb_printf(&b, "%lld value%s", (long long)ds->record_elems,
              ds->record_elems == 1 ? "" : "s");
  else {
    for (int i = 0; i < ds->rank; i++)
      sb_printf(&b, "%s%lld", i ? "x" : "", (long long)ds->dims[i]);
    sb_printf(&b, " = %lld values", (long long)ds->record_elems);
  }
  if (ds->kind == DS_CSV && ds->ncols)
    sb_printf(&b, " (%d column%s)", ds->ncols, ds->ncols == 1 ? "" : "s");
  char *s = arena_strdup(S->arena, b.data);
  sb_free(&b);
  return s;
}

// A data split: which loss parameters are bound, and the batch symbol.
typedef struct Split {
  const char *key;
  Expr **bound;   // per loss parameter: the source expression
  Sym *batch;
  const char *batch_param;
  int64_t nrecords;
  const char *nrec_param;
  DimSubst sizes; // loss symbols other than the batch, bound by records
} Split;

// One record fills one sample: the input type without its batch dim.
static void check_record(Train *t, Split *sp, const char *pname, Type *P,
                         DataSource *ds, Span at) {
  Sema *S = t->S;
  Arena *a = S->arena;
  if (!ds->known || ds->record_elems < 0) return;
  Dim *need = dim_subst(a, type_numel_from(a, P, 1), &sp->sizes);
  int64_t k;
  if (!dim_is_const(need, &k) && ds->rank == P->rank - 1) {
    // Bind the sample's own symbols (T in i64[B, T]) dim by dim.
    for (int i = 1; i < P->rank; i++) {
      Sym *s = dim_as_sym(P->dims[i]);
      if (s && !subst_lookup(&sp->sizes, s))
        subst_bind(a, &sp->sizes, s, dim_const(a, ds->dims[i - 1]));
    }
    need = dim_subst(a, type_numel_from(a, P, 1), &sp->sizes);
  }
  if (!dim_is_const(need, &k) || k == ds->record_elems) return;
  sema_error(S, at, "%s but input '%s' is %s: %lld value%s per sample",
             record_desc(S, ds), pname, type_str(a, P), (long long)k,
             k == 1 ? "" : "s");
}

static bool check_dtype(Train *t, const char *pname, Type *P, DataSource *ds,
                        Span at) {
  Sema *S = t->S;
  if (!ds->known) return true;
  DType d = ds->dtype;
  bool ok = dtype_is_float(P->dtype) ? dtype_is_float(d) || dtype_is_int(d)
            : dtype_is_int(P->dtype) ? dtype_is_int(d)
                                     : d == P->dtype;
  if (ok) return true;
  const char *fix = ds->kind == DS_CSV && dtype_is_int(P->dtype)
                        ? arena_printf(S->arena, " (write dtype = %s in csv(...))",
                                       dtype_name(P->dtype))
                        : "";
  sema_error(S, at, "input '%s' is %s but the data is %s: %s data cannot fill "
             "%s input%s", pname, type_str(S->arena, P), dtype_name(d),
             dtype_is_float(d) ? "float" : dtype_name(d),
             dtype_is_int(P->dtype) ? "an integer"
                                    : arena_printf(S->arena, "a %s",
                                                   dtype_name(P->dtype)),
             fix);
  return false;
}

// The input's first dim is the batch: one symbol shared by every input.
static bool check_batch(Train *t, Split *sp, const char *pname, Type *P,
                        Span at) {
  Sema *S = t->S;
  Sym *b = P->rank ? dim_as_sym(P->dims[0]) : NULL;
  if (!b) {
    sema_error(S, at, "input '%s' is %s: a data input's first dim must be the "
               "batch symbol, like %s[B, ...]", pname, type_str(S->arena, P),
               dtype_name(P->dtype));
    return false;
  }
  if (!sp->batch) {
    sp->batch = b;
    sp->batch_param = pname;
  } else if (sp->batch != b) {
    sema_error(S, at, "input '%s' has batch dim %s but '%s' has %s: every "
               "input of loss must share its first dim", pname, b->name,
               sp->batch_param, sp->batch->name);
    return false;
  }
  return true;
}

// Evaluates a source call and describes it (builtin_data_source).
static bool eval_source(Train *t, Expr *e, DataSource *ds) {
  Sema *S = t->S;
  Arena *a = S->arena;
  if (e->kind != EX_CALL || e->lhs->kind != EX_NAME ||
      !builtin_is_data_source(e->lhs->name)) {
    const char *n = e->kind == EX_CALL && e->lhs->kind == EX_NAME ? e->lhs->name
                    : e->kind == EX_NAME                         ? e->name
                                                                 : NULL;
    const char *const srcs[] = {"idx", "csv", "npy"};
    Vec c = names_of(S, srcs, 3);
    sema_error(S, n && e->kind == EX_CALL ? e->lhs->span : e->span,
               "a data source is idx(...), csv(...) or npy(...)%s",
               n ? sema_suggest(S, n, &c) : "");
    return false;
  }
  int n = e->args.len;
  Value **vals = arena_alloc(a, sizeof(Value *) * (n + 1));
  const char **names = arena_alloc(a, sizeof(char *) * (n + 1));
  Span *nsp = arena_alloc(a, sizeof(Span) * (n + 1));
  for (int i = 0; i < n; i++) {
    Arg *arg = VEC_AT(e->args, Arg, i);
    vals[i] = eval_const(t, arg->value);
    names[i] = arg->name;
    nsp[i] = arg->name_span;
    if (!vals[i]) return false;
  }
  DiagSink tmp;
  diag_init(&tmp, a);
  tmp.max_errors = 0;
  BuiltinCall c = {0};
  c.arena = a;
  c.diags = &tmp;
  c.span = e->span;
  c.name_span = e->lhs->span;
  c.name = e->lhs->name;
  c.nargs = n;
  c.args = vals;
  c.names = names;
  c.name_spans = nsp;
  bool ok = builtin_data_source(&c, ds);
  for (int i = 0; i < tmp.diags.len; i++) {
    Diag *d = VEC_AT(tmp.diags, Diag, i);
    if (d->level == DIAG_ERROR) sema_error(S, d->span, "%s", d->msg);
    else if (d->level == DIAG_NOTE) sema_note(S, d->span, "%s", d->msg);
    else diag_warning(S->diags, d->span, "%s", d->msg);
  }
  return ok && !tmp.nerrors;
}

static int loss_param(Train *t, const char *name) {
  Func *fn = t->loss->m->method;
  for (int i = 0; i < fn->params.len; i++)
    if (!strcmp(VEC_AT(fn->params, Param, i)->name, name)) return i;
  return -1;
}

// "x, y": the loss parameters no binding of the split names.
static const char *unbound_list(Train *t, Split *sp) {
  Func *fn = t->loss->m->method;
  StrBuf b = {0};
  for (int i = 0; i < fn->params.len; i++)
    if (!sp->bound[i])
      sb_printf(&b, "%s'%s'", b.len ? ", " : "", VEC_AT(fn->params, Param, i)->name);
  char *s = arena_strdup(t->S->arena, b.len ? b.data : "");
  sb_free(&b);
  return s;
}

// One `input = source(...)` into the recipe's train_data / test_data.
static void record_source(Train *t, Split *sp, Stmt *bd, const DataSource *ds) {
  Sema *S = t->S;
  if (ds->ncols > RECIPE_MAX_COLS) {
    sema_error(S, ds->span, "csv selects %d columns; a program reads at most %d", ds->ncols,
               RECIPE_MAX_COLS);
    return;
  }
  RecipeSource *s = arena_alloc(S->arena, sizeof *s);
  static const char *const kinds[] = {[DS_IDX] = "idx", [DS_CSV] = "csv", [DS_NPY] = "npy"};
  s->input = bd->name;
  s->kind = kinds[ds->kind];
  s->path = ds->path;
  s->scale = ds->scale;
  s->header = ds->kind != DS_CSV || ds->header;
  s->dtype = ds->kind == DS_CSV ? (int)ds->dtype : DT_F32;
  s->ncols = ds->ncols;
  for (int i = 0; i < ds->ncols; i++) {
    s->cols[i] = ds->col_index[i] >= 0 ? ds->col_index[i] : 0;
    s->colnames[i] = ds->col_name ? ds->col_name[i] : NULL;
  }
  vec_push(S->arena, !strcmp(sp->key, "train_data") ? &t->r->train_data : &t->r->test_data, s);
}

static void check_binding(Train *t, Split *sp, Stmt *bd, bool *unknown) {
  Sema *S = t->S;
  Func *fn = t->loss->m->method;
  int pi = loss_param(t, bd->name);
  if (pi < 0) {
    Vec c = {0};
    for (int i = 0; i < fn->params.len; i++)
      vec_push(S->arena, &c, (void *)VEC_AT(fn->params, Param, i)->name);
    const char *free = unbound_list(t, sp);
    sema_error(S, bd->name_span, "'%s' is not a parameter of %s.loss%s%s%s",
               bd->name, t->model->label, sema_suggest(S, bd->name, &c),
               *free ? "; unbound: " : "", free);
    *unknown = true;
    return;
  }
  if (sp->bound[pi]) {
    sema_error(S, bd->name_span, "'%s' is bound twice in %s", bd->name, sp->key);
    sema_note(S, sp->bound[pi]->span, "first bound here");
    return;
  }
  sp->bound[pi] = bd->value;
  DataSource ds;
  if (!eval_source(t, bd->value, &ds)) return;
  record_source(t, sp, bd, &ds);
  Type *P = t->loss_sig->params[pi];
  if (!P) return;
  Span at = bd->value->span;
  if (!check_batch(t, sp, bd->name, P, at)) return;
  if (!check_dtype(t, bd->name, P, &ds, at)) return;
  check_record(t, sp, bd->name, P, &ds, at);
  if (ds.nrecords < 0) return;
  if (sp->nrecords < 0) {
    sp->nrecords = ds.nrecords;
    sp->nrec_param = bd->name;
  } else if (ds.nrecords != sp->nrecords) {
    sema_error(S, at, "'%s' has %lld records but '%s' has %lld: every source "
               "of %s must have as many", bd->name, (long long)ds.nrecords,
               sp->nrec_param, (long long)sp->nrecords, sp->key);
  }
}

static void check_data(Train *t, Setting *st) {
  Sema *S = t->S;
  if (!st->has_bindings) {
    sema_error(S, st->span, "write %s { input = source ... }", st->key);
    return;
  }
  if (!t->loss_sig) return;
  Split sp = {0};
  sp.key = st->key;
  sp.nrecords = -1;
  sp.bound = arena_alloc(S->arena, sizeof(Expr *) * (t->loss_sig->nparams + 1));
  bool unknown = false;
  for (int i = 0; i < st->bindings.len; i++)
    check_binding(t, &sp, VEC_AT(st->bindings, Stmt, i), &unknown);
  const char *free = unbound_list(t, &sp);
  if (*free && !unknown)
    sema_error(S, st->key_span, "%s does not bind %s: every parameter of %s.loss "
               "needs a source", st->key, free, t->model->label);
}

// ---- the recipe ------------------------------------------------------------------------------
static const char *const setting_names[] = {
    "batch",  "epochs",    "seed",   "accumulate", "optimizer",  "schedule",
    "clip",   "freeze",    "checkpoint", "precision", "metric", "train_data",
    "test_data", "group", "loss_scale",
};

// Settings other than freeze, checkpoint and group may appear once.
static bool check_once(Train *t, Setting *st) {
  if (!strcmp(st->key, "freeze") || !strcmp(st->key, "checkpoint") || !strcmp(st->key, "group"))
    return true;
  Setting *prev = sema_map_put(t->S->arena, &t->seen, st->key, st);
  if (!prev) return true;
  sema_error(t->S, st->key_span, "'%s' is set twice", st->key);
  sema_note(t->S, prev->key_span, "first set here");
  return false;
}

static bool check_form(Train *t, Setting *st) {
  bool data = !strcmp(st->key, "train_data") || !strcmp(st->key, "test_data");
  bool sub = !strcmp(st->key, "clip") || !strcmp(st->key, "checkpoint");
  if (data || (st->sub_key && sub) || (!st->has_bindings && !st->sub_key))
    return true;
  sema_error(t->S, st->span, "%s takes a value: %s VALUE", st->key, st->key);
  return false;
}

static void check_setting(Train *t, Setting *st) {
  Sema *S = t->S;
  const char *k = st->key;
  int n = NELEM(setting_names), i = 0;
  while (i < n && strcmp(setting_names[i], k)) i++;
  if (i == n) {
    Vec c = names_of(S, setting_names, n);
    sema_error(S, st->key_span, "unknown train setting '%s'%s", k,
               sema_suggest(S, k, &c));
    return;
  }
  if (!check_once(t, st) || !check_form(t, st)) return;
  if (!strcmp(k, "batch") || !strcmp(k, "epochs") || !strcmp(k, "accumulate") ||
      !strcmp(k, "seed"))
    record_count(t, st);
  else if (!strcmp(k, "optimizer")) check_optimizer(t, st);
  else if (!strcmp(k, "schedule")) check_schedule(t, st);
  else if (!strcmp(k, "clip")) check_clip(t, st);
  else if (!strcmp(k, "checkpoint")) check_checkpoint(t, st);
  else if (!strcmp(k, "precision")) check_precision(t, st);
  else if (!strcmp(k, "loss_scale")) check_loss_scale(t, st);
  else if (!strcmp(k, "metric")) {
    const char *const m[] = {"accuracy", "loss"};
    const char *w = check_word(t, st, m, 2);
    if (w) t->r->metric = w;
    t->r->opt.plateau_max = w && !strcmp(w, "accuracy");
  } else if (!strcmp(k, "freeze")) {
    if (t->model) check_freeze(t, st);
  } else if (!strcmp(k, "group")) {
    check_group(t, st);
  } else check_data(t, st);
}

// The model named by the recipe, with a loss method returning a float scalar.
static bool find_model(Train *t) {
  Sema *S = t->S;
  Item *it = t->item;
  ItemInfo *ii = sema_find_item(S, it->name);
  if (!ii || ii->item->kind != IT_MODEL) {
    Vec c = {0};
    for (int i = 0; i < S->item_infos.len; i++) {
      Item *o = VEC_AT(S->item_infos, ItemInfo, i)->item;
      if (o->kind == IT_MODEL) vec_push(S->arena, &c, (void *)o->name);
    }
    if (ii)
      sema_error(S, it->name_span, "'%s' is a %s, not a model: train takes a "
                 "model", it->name, ii->item->kind == IT_BLOCK ? "block" : "function");
    else
      sema_error(S, it->name_span, "unknown model '%s'%s", it->name,
                 sema_suggest(S, it->name, &c));
    return false;
  }
  t->model = sema_model_inst(S, ii);
  if (!t->model) return false;
  MInfo *lm = sema_member(t->model, "loss");
  if (!lm || lm->m->kind != MB_METHOD) {
    sema_error(S, it->name_span, "model '%s' has no loss method: train needs "
               "loss(inputs...) -> f32", it->name);
    return true;
  }
  t->loss = lm;
  t->loss_sig = sema_method_sig(S, t->model, lm);
  Type *R = t->loss_sig->ret;
  if (R && (R->rank != 0 || !dtype_is_float(R->dtype))) {
    sema_error(S, lm->m->method->ret->span, "loss must return a scalar float "
               "like f32, got %s", type_str(S->arena, R));
    t->loss_sig = NULL;
  } else if (!t->loss_sig->ok) t->loss_sig = NULL;
  return true;
}

void sema_recipe_defaults(Recipe *r, const char *model) {
  memset(r, 0, sizeof *r);
  r->model = model;
  r->batch = 32;
  r->epochs = 1;
  r->optimizer = "sgd";
  r->schedule = "constant";
  r->metric = "loss";
  r->precision = DT_F32;
  r->opt.opt = OPT_SGD;
  r->opt.lr = 0.01;
  r->opt.sched = SCHED_CONSTANT;
  r->opt.accumulate = 1;
  r->opt.epochs = 1;
  r->opt.steps_per_epoch = 1; // the runtime sets the real count from the data
}

void sema_check_train(Sema *S, Item *it) {
  Train t = {0};
  t.S = S;
  t.item = it;
  if (!strcmp(it->name, "<error>")) return;
  bool model = find_model(&t);
  Recipe scratch;
  ItemInfo *mi = model && t.model ? sema_find_item(S, it->name) : NULL;
  t.r = mi && mi->model == t.model ? &mi->recipe : &scratch;
  if (t.r == &scratch) sema_recipe_defaults(&scratch, it->name);
  t.r->present = true;
  for (int i = 0; i < it->settings.len; i++) {
    Setting *st = VEC_AT(it->settings, Setting, i);
    if (!model && (!strcmp(st->key, "freeze") || !strcmp(st->key, "group") ||
                   !strcmp(st->key, "train_data") ||
                   !strcmp(st->key, "test_data")))
      continue; // they need the model
    check_setting(&t, st);
  }
  finish_groups(&t);
  t.r->loss_scale_written = sema_map_get(&t.seen, "loss_scale") != NULL;
  recipe_set_precision(t.r, t.r->precision);
}

// f16 autocast goes with a GradScaler in PyTorch: f16 training scales the
// loss dynamically unless the recipe says otherwise (loss_scale none), and
// the same holds when --precision f16 replaces the recipe's f32 (or f32 its
// f16: the implied scaler goes with it).
void recipe_set_precision(Recipe *r, int precision) {
  r->precision = precision;
  if (r->loss_scale_written) return;
  if (precision == DT_F16) {
    HVal none[10] = {{0}};
    record_dynamic(&r->opt, none);
  } else {
    r->opt.loss_scale = LSCALE_NONE;
  }
}
