// recipe.c — reads a checked train block into a Recipe (recipe.h).
//
// Values in a train block are compile-time constants: numbers with + - * /
// ** and sqrt/exp/log, words (cosine, accuracy), dtypes, strings, lists,
// and durations with a unit (100 steps, 1 epoch). Sema has checked every
// setting, so anything unexpected here is a compiler bug (MLC_ASSERT).
#include "recipe.h"

#include <math.h>
#include <string.h>

// ---- constants ---------------------------------------------------------------------------
static double num(const Expr *e) {
  switch (e->kind) {
  case EX_INT: case EX_BOOL: return (double)e->ival;
  case EX_FLOAT: return e->fval;
  case EX_UNARY: MLC_ASSERT(e->op == OP_NEG); return -num(e->lhs);
  case EX_BINARY: {
    double x = num(e->lhs), y = num(e->rhs);
    switch (e->op) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_DIV: return x / y;
    case OP_FLOORDIV: return floor(x / y);
    case OP_POW: return pow(x, y);
    }
    break;
  }
  case EX_CALL: {
    MLC_ASSERT(e->lhs->kind == EX_NAME && e->args.len == 1);
    double x = num(VEC_AT(e->args, Arg, 0)->value);
    if (!strcmp(e->lhs->name, "sqrt")) return sqrt(x);
    if (!strcmp(e->lhs->name, "exp")) return exp(x);
    if (!strcmp(e->lhs->name, "log")) return log(x);
    break;
  }
  default: break;
  }
  mlc_ice(__FILE__, __LINE__, "recipe: not a constant number");
}

// fc1.w -> "fc1.w"
static const char *path_of(Arena *a, const Expr *e) {
  if (e->kind == EX_MEMBER) return arena_printf(a, "%s.%s", path_of(a, e->lhs), e->name);
  MLC_ASSERT(e->kind == EX_NAME);
  return e->name;
}

static const char *word(const Expr *e) {
  if (e->kind == EX_NAME || e->kind == EX_STR) return e->name;
  if (e->kind == EX_DTYPE) return dtype_name((DType)e->dtype);
  if (e->kind == EX_CALL) return e->lhs->name;
  mlc_ice(__FILE__, __LINE__, "recipe: not a word");
}

// The named argument `name` of a call, or its positional argument `pos`.
static const Arg *arg(const Expr *call, const char *name, int pos) {
  if (call->kind != EX_CALL) return NULL;
  for (int i = 0; i < call->args.len; i++) {
    const Arg *a = VEC_AT(call->args, Arg, i);
    if (a->name ? !strcmp(a->name, name) : i == pos) return a;
  }
  return NULL;
}

static double num_arg(const Expr *call, const char *name, int pos, double dflt) {
  const Arg *a = arg(call, name, pos);
  return a ? num(a->value) : dflt;
}

// ---- settings ----------------------------------------------------------------------------
static void read_optimizer(Recipe *r, const Expr *e) {
  OptimRecipe *o = &r->opt;
  r->optimizer = word(e);
  bool sgd = !strcmp(r->optimizer, "sgd"), adamw = !strcmp(r->optimizer, "adamw");
  o->opt = sgd ? OPT_SGD : adamw ? OPT_ADAMW : OPT_ADAM;
  o->lr = num_arg(e, "lr", 0, sgd ? 0.01 : 1e-3);
  if (sgd) {
    o->momentum = num_arg(e, "momentum", 1, 0);
    o->dampening = num_arg(e, "dampening", 2, 0);
    o->nesterov = num_arg(e, "nesterov", 3, 0) != 0;
    o->weight_decay = num_arg(e, "weight_decay", 4, 0);
    return;
  }
  o->beta1 = num_arg(e, "beta1", 1, 0.9);
  o->beta2 = num_arg(e, "beta2", 2, 0.999);
  o->eps = num_arg(e, "eps", 3, 1e-8);
  o->weight_decay = num_arg(e, "weight_decay", 4, adamw ? 0.01 : 0);
}

static void read_warmup(OptimRecipe *o, const Expr *e) {
  const Arg *a = arg(e, "warmup", 0);
  if (!a) return;
  o->warmup = (int64_t)num(a->value);
  o->warmup_epochs = a->unit && !strncmp(a->unit, "epoch", 5);
}

static void read_schedule(Recipe *r, const Expr *e) {
  OptimRecipe *o = &r->opt;
  const char *s = r->schedule = word(e);
  if (!strcmp(s, "constant")) {
    o->sched = SCHED_CONSTANT;
  } else if (!strcmp(s, "step")) {
    o->sched = SCHED_STEP;
    o->step_size = (int64_t)num_arg(e, "step_size", 0, 1);
    o->gamma = num_arg(e, "gamma", 1, 0.1);
  } else if (!strcmp(s, "multistep")) {
    o->sched = SCHED_MULTISTEP;
    const Arg *m = arg(e, "milestones", 0);
    MLC_ASSERT(m && m->value->kind == EX_LIST && m->value->args.len <= OPTIM_MAX_MILESTONES);
    for (int i = 0; i < m->value->args.len; i++)
      o->milestones[o->nmilestones++] = (int64_t)num(VEC_AT(m->value->args, Arg, i)->value);
    o->gamma = num_arg(e, "gamma", 1, 0.1);
  } else if (!strcmp(s, "exponential")) {
    o->sched = SCHED_EXPONENTIAL;
    o->gamma = num_arg(e, "gamma", 0, 0.1);
  } else if (!strcmp(s, "cosine") || !strcmp(s, "linear")) {
    o->sched = s[0] == 'c' ? SCHED_COSINE : SCHED_LINEAR;
    read_warmup(o, e);
    o->min_lr = num_arg(e, s[0] == 'c' ? "min_lr" : "end_lr", 1, 0);
  } else {
    MLC_ASSERT(!strcmp(s, "plateau"));
    o->sched = SCHED_PLATEAU;
    o->factor = num_arg(e, "factor", 0, 0.1);
    o->patience = (int64_t)num_arg(e, "patience", 1, 10);
  }
}

static RecipeSource *read_source(Arena *a, const Stmt *bd) {
  RecipeSource *s = arena_alloc(a, sizeof *s);
  const Expr *e = bd->value;
  s->input = bd->name;
  s->kind = word(e);
  const Arg *p = arg(e, "path", 0);
  MLC_ASSERT(p && p->value->kind == EX_STR);
  s->path = p->value->name;
  s->scale = 1;
  s->header = true;
  s->dtype = DT_F32;
  if (!strcmp(s->kind, "idx")) s->scale = num_arg(e, "scale", 1, 1);
  if (strcmp(s->kind, "csv")) return s;
  // csv(path, cols = all, header = true, dtype = f32)
  s->header = num_arg(e, "header", 2, 1) != 0;
  const Arg *dt = arg(e, "dtype", 3);
  if (dt) s->dtype = dtype_from_name(word(dt->value));
  const Arg *cols = arg(e, "cols", 1);
  if (cols && cols->value->kind == EX_LIST) {
    for (int i = 0; i < cols->value->args.len && s->ncols < RECIPE_MAX_COLS; i++) {
      const Expr *c = VEC_AT(cols->value->args, Arg, i)->value;
      if (c->kind == EX_STR) s->colnames[s->ncols++] = c->name;
      else s->cols[s->ncols++] = (int64_t)num(c);
    }
  }
  return s;
}

static void read_setting(Arena *a, Recipe *r, const Setting *st) {
  const char *k = st->key;
  if (st->has_bindings) {
    Vec *dst = !strcmp(k, "train_data") ? &r->train_data : &r->test_data;
    for (int i = 0; i < st->bindings.len; i++)
      vec_push(a, dst, read_source(a, VEC_AT(st->bindings, Stmt, i)));
  } else if (!strcmp(k, "batch")) r->batch = (int64_t)num(st->value);
  else if (!strcmp(k, "epochs")) r->epochs = (int64_t)num(st->value);
  else if (!strcmp(k, "seed")) r->seed = (int64_t)num(st->value);
  else if (!strcmp(k, "accumulate")) r->opt.accumulate = (int)num(st->value);
  else if (!strcmp(k, "optimizer")) read_optimizer(r, st->value);
  else if (!strcmp(k, "schedule")) read_schedule(r, st->value);
  else if (!strcmp(k, "clip")) r->opt.clip = num(st->value);
  else if (!strcmp(k, "metric")) r->metric = word(st->value);
  else if (!strcmp(k, "precision")) r->precision = dtype_from_name(word(st->value));
  else if (!strcmp(k, "freeze")) vec_push(a, &r->freeze, (void *)path_of(a, st->value));
  else if (!strcmp(k, "checkpoint")) {
    MLC_ASSERT(st->sub_key);
    if (!strcmp(st->sub_key, "every")) r->ckpt_every = (int64_t)num(st->value);
    else if (!strcmp(st->sub_key, "keep")) r->ckpt_keep = (int64_t)num(st->value);
    else r->ckpt_path = word(st->value);
  }
}

// The defaults of docs/language.md, "The train block".
static void defaults(Recipe *r, const char *model) {
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
}

void recipe_read(Arena *a, const Program *prog, const char *model, Recipe *r) {
  defaults(r, model);
  for (int i = 0; i < prog->items.len; i++) {
    const Item *it = VEC_AT(prog->items, Item, i);
    if (it->kind != IT_TRAIN || strcmp(it->name, model)) continue;
    r->present = true;
    for (int j = 0; j < it->settings.len; j++)
      read_setting(a, r, VEC_AT(it->settings, Setting, j));
  }
  r->opt.epochs = r->epochs;
  r->opt.steps_per_epoch = 1;
  r->opt.plateau_max = !strcmp(r->metric, "accuracy");
}
