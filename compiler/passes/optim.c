// optim.c — builds the training step as one graph IR function: the loss and
// gradients of K micro-batches (the gradient function inlined K times), their
// average, the global gradient norm and clipping, the learning rate computed
// in-graph from the step counter, the optimizer update with PyTorch's exact
// arithmetic (torch.optim.SGD, Adam, AdamW of 1.13), and `store`s of the new
// params, optimizer state and step counter. Also the plateau schedule's
// per-epoch update function.
//
// Input: a module whose `loss` function returns a scalar, its gradient
// function from ad_grad, and an OptimRecipe. Output: `train_step` (and
// `plateau_update`) in the same module, plus the optimizer state slots
// (IRP_OPTSTATE) they read and write. Formulas: docs/design/optim.md.
//
// Every store is functional: all reads in the step see the state as it was
// before the step, so the order of the stores does not matter.
#include "optim.h"

#include <math.h>
#include <string.h>

#include "graph/builder.h"

static const double PI = 3.14159265358979323846;

typedef struct Bld {
  IrModule *m;
  IrFunc *f;
  Arena *a;
  IrBuilder b; // every node has the loss's span
  const OptimRecipe *r;
  DType dt;    // float dtype of the loss: every scalar of the update
  IrNode *skip; // loss scaling, while the update is built: the step's gradients overflowed
} Bld;

// ---- node helpers -----------------------------------------------------------------------------
// Nodes come from the IrBuilder (graph/builder.h); an ill-typed one is a bug.
static IrNode *un(Bld *b, IrOp op, IrNode *x) { return ir_un(&b->b, op, x); }
static IrNode *bin(Bld *b, IrOp op, IrNode *x, IrNode *y) { return ir_bin(&b->b, op, x, y); }
static IrNode *sel(Bld *b, IrNode *c, IrNode *x, IrNode *y) { return ir_where(&b->b, c, x, y); }
static IrNode *num(Bld *b, double v) { return ir_scalar(&b->b, v, b->dt); }       // the loss's float dtype
static IrNode *inum(Bld *b, int64_t v) { return ir_scalar(&b->b, (double)v, DT_I64); }
static IrNode *cast(Bld *b, IrNode *x, DType dt) { return ir_cast(&b->b, x, dt); }

// An optimizer state slot (created on first use) and its read in f.
static IrNode *state(Bld *b, const char *path, Type *t) {
  if (!ir_module_find_param(b->m, path))
    ir_module_add_param(b->m, path, t, IRP_OPTSTATE, false, (Span){0});
  return ir_param_ref(b->f, path, b->b.span);
}

static IrNode *state_of(Bld *b, const char *param, const char *what, Type *t) {
  return state(b, arena_printf(b->a, "opt.%s.%s", param, what), t);
}

static void store(Bld *b, const char *path, IrNode *v) { ir_store(b->f, path, v, b->b.span); }

// A store of the update (a param or its optimizer state): a skipped step
// (loss scaling, an overflow) keeps the slot's old value.
static void store_update(Bld *b, const char *path, IrNode *v) {
  if (b->skip) v = sel(b, b->skip, ir_param_ref(b->f, path, b->b.span), v);
  store(b, path, v);
}

// ---- inlining the gradient function ---------------------------------------------------------------
// Copies g's body into b->f with its arguments bound to args; returns g's
// outputs as values of f. Copies after the first get fresh seeds for their
// impure ops (each micro-batch draws its own dropout masks).
static IrNode **inline_grad(Bld *b, IrFunc *g, IrNode **args, bool reseed) {
  ir_number(g);
  int np = g->params.len, total = np + g->nodes.len;
  IrNode **map = arena_alloc(b->a, sizeof(IrNode *) * (size_t)(total + 1));
  for (int i = 0; i < np; i++) map[i] = args[i];
  for (int i = 0; i < g->syms.len; i++) ir_sym_add(b->m, b->f, VEC_AT(g->syms, Sym, i));
  for (int i = 0; i < g->nodes.len; i++) {
    IrNode *n = VEC_AT(g->nodes, IrNode, i), *c;
    IrNode **ins = arena_alloc(b->a, sizeof(IrNode *) * (size_t)(n->nin + 1));
    for (int j = 0; j < n->nin; j++) ins[j] = map[n->in[j]->order + np];
    if (ir_op_class(n->op) == IRC_INPUT) {
      c = ir_state_ref(b->f, n->op, n->name, n->type, n->span);
    } else if (n->op == IR_STORE) {
      c = ir_store(b->f, n->name, ins[0], n->span);
    } else {
      IrAttrs as = {0};
      for (int k = 0; k < n->attrs.n; k++) {
        const IrAttr *x = &n->attrs.a[k];
        if (reseed && x->key == IRA_SEED) continue;
        if (ir_attr_kind(x->key) == IRK_FLOAT) ir_attr_set_float(b->a, &as, x->key, x->f);
        else ir_attr_set_ints(b->a, &as, x->key, x->ints, x->n);
      }
      c = ir_node(b->f, n->op, ins, n->nin, &as, n->type, n->span);
    }
    if (!c->loc) c->loc = n->loc;
    map[np + i] = c;
  }
  IrNode **outs = arena_alloc(b->a, sizeof(IrNode *) * (size_t)(g->outputs.len + 1));
  for (int i = 0; i < g->outputs.len; i++) outs[i] = map[VEC_AT(g->outputs, IrNode, i)->order + np];
  return outs;
}

// ---- learning rate --------------------------------------------------------------------------------
static bool reads_param(IrFunc *f, const char *path) {
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    if (n->op == IR_PARAM && strcmp(n->name, path) == 0) return true;
  }
  return false;
}

static int64_t total_steps(const OptimRecipe *r) { return r->epochs * r->steps_per_epoch; }

static int64_t warmup_steps(const OptimRecipe *r) {
  return r->warmup_epochs ? r->warmup * r->steps_per_epoch : r->warmup;
}

// The rate of step s (s: i64[] steps taken, sf: the same as a float). The
// number of steps per epoch and in all are state (opt.steps_per_epoch,
// opt.total_steps) that the runtime sets from the data it was given, so a
// compiled schedule follows --epochs and the size of the training set.
static IrNode *sched_lr(Bld *b, IrNode *s, IrNode *sf) {
  const OptimRecipe *r = b->r;
  // The base rate is state too (opt.base_lr, the recipe's lr until the
  // program's --lr overrides it); schedules scale it.
  IrNode *lr0 = state(b, "opt.base_lr", type_scalar(b->a, b->dt));
  Type *i64 = type_scalar(b->a, DT_I64);
  IrNode *spe = state(b, "opt.steps_per_epoch", i64);
  IrNode *epoch = bin(b, IR_DIV, s, spe); // floor(s / steps_per_epoch)
  switch (r->sched) {
  case SCHED_CONSTANT: return lr0;
  case SCHED_STEP: {
    IrNode *k = cast(b, bin(b, IR_DIV, epoch, inum(b, r->step_size)), b->dt);
    return bin(b, IR_MUL, lr0, bin(b, IR_POW, num(b, r->gamma), k));
  }
  case SCHED_MULTISTEP: {
    IrNode *cnt = num(b, 0);
    for (int i = 0; i < r->nmilestones; i++)
      cnt = bin(b, IR_ADD, cnt, cast(b, bin(b, IR_GE, epoch, inum(b, r->milestones[i])), b->dt));
    return bin(b, IR_MUL, lr0, bin(b, IR_POW, num(b, r->gamma), cnt));
  }
  case SCHED_EXPONENTIAL:
    return bin(b, IR_MUL, lr0, bin(b, IR_POW, num(b, r->gamma), cast(b, epoch, b->dt)));
  case SCHED_COSINE: case SCHED_LINEAR: {
    // W = warmup steps, T = max(total - W, 1) decay steps
    IrNode *Wi = r->warmup_epochs ? bin(b, IR_MUL, spe, inum(b, r->warmup)) : inum(b, r->warmup);
    IrNode *W = cast(b, Wi, b->dt);
    IrNode *total = cast(b, state(b, "opt.total_steps", i64), b->dt);
    IrNode *T = bin(b, IR_MAXIMUM, bin(b, IR_SUB, total, W), num(b, 1));
    // p = min((s - W) / T, 1): progress of the decay phase
    IrNode *p = bin(b, IR_MINIMUM, bin(b, IR_DIV, bin(b, IR_SUB, sf, W), T), num(b, 1));
    IrNode *dec;
    if (r->sched == SCHED_COSINE) { // min_lr + (lr - min_lr) * (1 + cos(pi p)) / 2
      IrNode *c = bin(b, IR_ADD, num(b, 1), un(b, IR_COS, bin(b, IR_MUL, num(b, PI), p)));
      IrNode *span = bin(b, IR_SUB, lr0, num(b, r->min_lr));
      dec = bin(b, IR_ADD, num(b, r->min_lr), bin(b, IR_DIV, bin(b, IR_MUL, span, c), num(b, 2)));
    } else { // end_lr + (lr - end_lr) * (1 - p)
      IrNode *span = bin(b, IR_SUB, lr0, num(b, r->min_lr));
      dec = bin(b, IR_ADD, num(b, r->min_lr), bin(b, IR_MUL, span, bin(b, IR_SUB, num(b, 1), p)));
    }
    if (r->warmup <= 0) return dec;
    IrNode *warm = bin(b, IR_MUL, lr0, bin(b, IR_DIV, sf, W)); // lr * s / W
    return sel(b, bin(b, IR_LT, sf, W), warm, dec);
  }
  case SCHED_PLATEAU:
    return bin(b, IR_MUL, lr0, state(b, "opt.plateau.scale", type_scalar(b->a, b->dt)));
  }
  MLC_UNREACHABLE();
}

double optim_lr(const OptimRecipe *r, int64_t s, double plateau_scale) {
  int64_t epoch = s / r->steps_per_epoch;
  switch (r->sched) {
  case SCHED_CONSTANT: return r->lr;
  case SCHED_STEP: return r->lr * pow(r->gamma, (double)(epoch / r->step_size));
  case SCHED_MULTISTEP: {
    double cnt = 0;
    for (int i = 0; i < r->nmilestones; i++) cnt += epoch >= r->milestones[i];
    return r->lr * pow(r->gamma, cnt);
  }
  case SCHED_EXPONENTIAL: return r->lr * pow(r->gamma, (double)epoch);
  case SCHED_COSINE: case SCHED_LINEAR: {
    int64_t W = warmup_steps(r), T = total_steps(r) - W;
    if (T < 1) T = 1;
    if (W > 0 && s < W) return r->lr * ((double)s / (double)W);
    double p = fmin(((double)s - (double)W) / (double)T, 1);
    if (r->sched == SCHED_COSINE) return r->min_lr + (r->lr - r->min_lr) * (1 + cos(PI * p)) / 2;
    return r->min_lr + (r->lr - r->min_lr) * (1 - p);
  }
  case SCHED_PLATEAU: return r->lr * plateau_scale;
  }
  MLC_UNREACHABLE();
}

double optim_state_init(const OptimRecipe *r, const char *path) {
  if (strcmp(path, "opt.base_lr") == 0) return r->lr;
  if (strcmp(path, "opt.steps_per_epoch") == 0) return (double)r->steps_per_epoch;
  if (strcmp(path, "opt.total_steps") == 0) return (double)total_steps(r);
  if (strcmp(path, "opt.plateau.scale") == 0) return 1;
  if (strcmp(path, "opt.scaler.scale") == 0) return r->scale_init;
  if (strcmp(path, "opt.plateau.best") == 0) return r->plateau_max ? -INFINITY : INFINITY;
  return 0;
}

// ---- parameter groups ---------------------------------------------------------------------------------
// The hyper-parameters one param is updated with: its group's
// (torch.optim's param_groups), else the optimizer's.
typedef struct Hyper {
  double lr_scale, momentum, dampening, weight_decay, beta1, beta2, eps;
  bool nesterov;
} Hyper;

static Hyper hyper_of(const OptimRecipe *r, const char *path) {
  for (int g = 0; g < r->ngroups; g++) {
    const OptimGroup *G = &r->groups[g];
    for (int i = 0; i < G->npaths; i++)
      if (!strcmp(G->paths[i], path))
        return (Hyper){G->lr_scale, G->momentum, G->dampening, G->weight_decay, G->beta1, G->beta2,
                       G->eps, G->nesterov};
  }
  return (Hyper){1, r->momentum, r->dampening, r->weight_decay, r->beta1, r->beta2, r->eps, r->nesterov};
}

// ---- optimizers ---------------------------------------------------------------------------------------
// torch.optim.SGD (1.13, single tensor):
//   d = g + wd * p;  buf = first step ? d : momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf;  p = p - lr * d
static void sgd(Bld *b, const char *path, IrNode *p, IrNode *g, IrNode *lr, IrNode *s) {
  Hyper hy = hyper_of(b->r, path);
  const Hyper *r = &hy;
  IrNode *d = g;
  if (r->weight_decay != 0) d = bin(b, IR_ADD, d, bin(b, IR_MUL, p, num(b, r->weight_decay)));
  if (r->momentum != 0) {
    IrNode *buf = state_of(b, path, "momentum_buffer", p->type);
    IrNode *upd = bin(b, IR_ADD, bin(b, IR_MUL, buf, num(b, r->momentum)),
                      bin(b, IR_MUL, d, num(b, 1 - r->dampening)));
    IrNode *nb = sel(b, bin(b, IR_EQ, s, inum(b, 0)), d, upd);
    store_update(b, arena_printf(b->a, "opt.%s.momentum_buffer", path), nb);
    d = r->nesterov ? bin(b, IR_ADD, d, bin(b, IR_MUL, nb, num(b, r->momentum))) : nb;
  }
  store_update(b, path, bin(b, IR_ADD, p, bin(b, IR_MUL, d, un(b, IR_NEG, lr))));
}

// torch.optim.Adam / AdamW (1.13, single tensor), t = s + 1:
//   adamw: p = p * (1 - lr * wd);   adam: g = g + wd * p
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
static void adam(Bld *b, const char *path, IrNode *p, IrNode *g, IrNode *lr, IrNode *sf) {
  Hyper hy = hyper_of(b->r, path);
  const Hyper *r = &hy;
  OptimKind kind = b->r->opt;
  if (kind == OPT_ADAMW && r->weight_decay != 0)
    p = bin(b, IR_MUL, p, bin(b, IR_SUB, num(b, 1), bin(b, IR_MUL, lr, num(b, r->weight_decay))));
  if (kind == OPT_ADAM && r->weight_decay != 0)
    g = bin(b, IR_ADD, g, bin(b, IR_MUL, p, num(b, r->weight_decay)));
  IrNode *m = state_of(b, path, "exp_avg", p->type), *v = state_of(b, path, "exp_avg_sq", p->type);
  IrNode *m1 = bin(b, IR_ADD, bin(b, IR_MUL, m, num(b, r->beta1)), bin(b, IR_MUL, g, num(b, 1 - r->beta1)));
  IrNode *v1 = bin(b, IR_ADD, bin(b, IR_MUL, v, num(b, r->beta2)),
                   bin(b, IR_MUL, bin(b, IR_MUL, g, g), num(b, 1 - r->beta2)));
  IrNode *t = bin(b, IR_ADD, sf, num(b, 1));
  IrNode *bc1 = bin(b, IR_SUB, num(b, 1), bin(b, IR_POW, num(b, r->beta1), t));
  IrNode *bc2 = bin(b, IR_SUB, num(b, 1), bin(b, IR_POW, num(b, r->beta2), t));
  IrNode *step = bin(b, IR_DIV, lr, bc1);
  IrNode *den = bin(b, IR_ADD, bin(b, IR_DIV, un(b, IR_SQRT, v1), un(b, IR_SQRT, bc2)), num(b, r->eps));
  store_update(b, arena_printf(b->a, "opt.%s.exp_avg", path), m1);
  store_update(b, arena_printf(b->a, "opt.%s.exp_avg_sq", path), v1);
  store_update(b, path, bin(b, IR_SUB, p, bin(b, IR_MUL, step, bin(b, IR_DIV, m1, den))));
}

// ---- train_step ----------------------------------------------------------------------------------------
// The recipe is sema's product for the train block (sema_train.c checked
// every range), so a malformed one is a compiler bug.
static void assert_recipe(const OptimRecipe *r) {
  MLC_ASSERT(r->ngroups >= 0 && r->ngroups <= OPTIM_MAX_GROUPS);
  for (int g = 0; g < r->ngroups; g++) MLC_ASSERT(r->groups[g].lr_scale > 0);
  MLC_ASSERT(r->accumulate >= 1 && r->accumulate <= OPTIM_MAX_ACCUMULATE);
  MLC_ASSERT(r->steps_per_epoch >= 1 && r->epochs >= 1 && r->lr > 0 && r->clip >= 0);
  MLC_ASSERT(r->sched != SCHED_STEP || r->step_size >= 1);
  MLC_ASSERT(r->nmilestones >= 0 && r->nmilestones <= OPTIM_MAX_MILESTONES);
  MLC_ASSERT(r->sched != SCHED_PLATEAU || (r->factor > 0 && r->factor < 1));
  MLC_ASSERT(r->loss_scale == LSCALE_NONE || r->scale_init > 0);
  MLC_ASSERT(r->loss_scale != LSCALE_DYNAMIC ||
             (r->scale_growth > 1 && r->scale_backoff > 0 && r->scale_backoff < 1 && r->scale_interval >= 1));
}

// ---- loss scaling ---------------------------------------------------------------------------------------
// torch.cuda.amp.GradScaler (1.13). The gradient function's seed is S =
// opt.scaler.scale, so g holds the scaled gradients of the mean loss. Like
// _amp_foreach_non_finite_check_and_unscale_, found_inf looks at the scaled
// values: g * 0 is 0 for every finite element and NaN otherwise, so one sum
// over all of them is NaN exactly when some element is not finite (a sum of
// zeros cannot overflow). Then g *= 1 / S, in the loss's dtype (GradScaler's
// inv_scale is the f32 rounding of the reciprocal: the same value).
static IrNode *unscale(Bld *b, IrNode **g, int np, IrNode *S) {
  IrNode *chk = num(b, 0);
  for (int j = 0; j < np; j++) chk = bin(b, IR_ADD, chk, ir_sum_all(&b->b, bin(b, IR_MUL, g[j], num(b, 0))));
  IrNode *inv = bin(b, IR_DIV, num(b, 1), S);
  for (int j = 0; j < np; j++) g[j] = bin(b, IR_MUL, g[j], inv);
  return bin(b, IR_NE, chk, chk);
}

// _amp_update_scale_: an overflow multiplies S by backoff and resets the
// growth tracker; otherwise the tracker counts the good step, and at
// growth_interval S grows (only to a finite value) and the tracker restarts.
// A static scale never changes. The skipped steps are counted either way.
// Returns the number of skipped steps after this one.
static IrNode *update_scale(Bld *b, IrNode *S, IrNode *found) {
  const OptimRecipe *r = b->r;
  Type *i64 = type_scalar(b->a, DT_I64);
  IrNode *skipped = state(b, "opt.scaler.skipped", i64);
  IrNode *skipped1 = sel(b, found, bin(b, IR_ADD, skipped, inum(b, 1)), skipped);
  store(b, "opt.scaler.skipped", skipped1);
  if (r->loss_scale != LSCALE_DYNAMIC) return skipped1;
  IrNode *tracker = state(b, "opt.scaler.growth_tracker", i64);
  IrNode *good = bin(b, IR_ADD, tracker, inum(b, 1));
  IrNode *grow = bin(b, IR_EQ, good, inum(b, r->scale_interval));
  IrNode *bigger = bin(b, IR_MUL, S, num(b, r->scale_growth));
  IrNode *finite = bin(b, IR_EQ, bin(b, IR_SUB, bigger, bigger), num(b, 0));
  IrNode *grown = sel(b, bin(b, IR_AND, grow, finite), bigger, S);
  store(b, "opt.scaler.scale", sel(b, found, bin(b, IR_MUL, S, num(b, r->scale_backoff)), grown));
  store(b, "opt.scaler.growth_tracker", sel(b, bin(b, IR_OR, found, grow), inum(b, 0), good));
  return skipped1;
}

// The K micro-batches' arguments: the loss's names for K = 1, NAME_k otherwise.
static IrNode **micro_args(Bld *b, IrFunc *loss, int k) {
  int np = loss->params.len;
  IrNode **args = arena_alloc(b->a, sizeof(IrNode *) * (size_t)(np + 1));
  for (int i = 0; i < np; i++) {
    IrNode *x = VEC_AT(loss->params, IrNode, i);
    const char *name = b->r->accumulate == 1 ? x->name : arena_printf(b->a, "%s_%d", x->name, k);
    args[i] = ir_input(b->f, name, x->type, x->span);
  }
  return args;
}

IrFunc *optim_build_step(IrModule *m, IrFunc *loss, IrFunc *grad, const OptimRecipe *r) {
  assert_recipe(r);
  MLC_ASSERT(loss->outputs.len);
  IrNode *l0 = VEC_AT(loss->outputs, IrNode, 0);
  MLC_ASSERT(l0->type->rank == 0 && dtype_is_float(l0->type->dtype)); // sema checked the loss
  // the trainable params the loss reads, in the order ad_grad returns them
  Vec params = {0};
  for (int i = 0; i < m->params.len; i++) {
    IrParam *p = VEC_AT(m->params, IrParam, i);
    if (p->kind == IRP_PARAM && p->trainable && reads_param(loss, p->name)) vec_push(m->arena, &params, p);
  }
  // the loss's other outputs follow the gradients (ad_grad's keep_outputs);
  // with loss scaling the gradient function takes the seed (S) last
  int naux = grad->outputs.len - params.len - 1;
  MLC_ASSERT(naux >= 0 && naux == loss->outputs.len - 1);
  bool scaled = r->loss_scale != LSCALE_NONE;
  MLC_ASSERT(grad->params.len == loss->params.len + scaled);
  Bld b = {.m = m, .a = m->arena, .r = r, .dt = l0->type->dtype};
  b.f = ir_func_new(m, "train_step");
  b.f->span = loss->span;
  b.b = ir_builder(b.f, "optim");
  b.b.span = loss->span;
  int nk = r->accumulate, np = params.len;
  IrNode ***argv = arena_alloc(b.a, sizeof(IrNode **) * (size_t)nk);
  for (int k = 0; k < nk; k++) argv[k] = micro_args(&b, loss, k);
  IrNode *S = scaled ? state(&b, "opt.scaler.scale", type_scalar(b.a, b.dt)) : NULL;
  // With loss scaling each micro-batch's backward starts from S / K, as
  // PyTorch's (loss_k / K * S).backward() does, and the scaled gradients are
  // summed: the same values, in the same order, that GradScaler sees.
  IrNode *seed = scaled && nk > 1 ? bin(&b, IR_DIV, S, num(&b, (double)nk)) : S;
  for (int k = 0; scaled && k < nk; k++) argv[k][loss->params.len] = seed;
  IrNode *lsum = NULL, **g = arena_alloc(b.a, sizeof(IrNode *) * (size_t)(np + naux + 1));
  IrNode **aux = g + np; // the auxiliary values, averaged like the loss
  for (int k = 0; k < nk; k++) {
    IrNode **o = inline_grad(&b, grad, argv[k], k > 0);
    lsum = k ? bin(&b, IR_ADD, lsum, o[0]) : o[0];
    for (int j = 0; j < np + naux; j++) g[j] = k ? bin(&b, IR_ADD, g[j], o[j + 1]) : o[j + 1];
  }
  if (nk > 1) { // the average over micro-batches
    IrNode *inv = num(&b, 1.0 / nk);
    lsum = bin(&b, IR_MUL, lsum, inv);
    for (int j = scaled ? np : 0; j < np + naux; j++) g[j] = bin(&b, IR_MUL, g[j], inv);
  }
  // scaler.unscale_(optimizer): the found_inf check and g / S, before the norm
  IrNode *found = scaled ? unscale(&b, g, np, S) : NULL;
  // clip_grad_norm_: total L2 norm, scale = min(max_norm / (norm + 1e-6), 1)
  IrNode *sq = num(&b, 0);
  for (int j = 0; j < np; j++) sq = bin(&b, IR_ADD, sq, ir_sum_all(&b.b, bin(&b, IR_MUL, g[j], g[j])));
  IrNode *norm = un(&b, IR_SQRT, sq);
  if (r->clip > 0) {
    IrNode *coef = bin(&b, IR_MINIMUM, bin(&b, IR_DIV, num(&b, r->clip), bin(&b, IR_ADD, norm, num(&b, 1e-6))),
                       num(&b, 1));
    for (int j = 0; j < np; j++) g[j] = bin(&b, IR_MUL, g[j], coef);
  }
  IrNode *s = state(&b, "opt.step", type_scalar(b.a, DT_I64));
  IrNode *sf = cast(&b, s, b.dt);
  IrNode *lr = sched_lr(&b, s, sf);
  // scaler.step(optimizer): an overflow skips the update, so the optimizer's
  // own step count (Adam's t, SGD's first step) counts only the updates
  // taken; the schedule follows opt.step, which counts every step
  // (scheduler.step() runs each iteration).
  IrNode *skipped = scaled ? state(&b, "opt.scaler.skipped", type_scalar(b.a, DT_I64)) : NULL;
  IrNode *taken = scaled ? bin(&b, IR_SUB, s, skipped) : s;
  IrNode *takenf = scaled ? cast(&b, taken, b.dt) : sf;
  b.skip = found;
  for (int j = 0; j < np; j++) {
    IrParam *p = VEC_AT(params, IrParam, j);
    IrNode *pv = ir_param_ref(b.f, p->name, b.b.span);
    double scale = hyper_of(r, p->name).lr_scale; // its group's lr
    IrNode *plr = scale == 1 ? lr : bin(&b, IR_MUL, lr, num(&b, scale));
    if (r->opt == OPT_SGD) sgd(&b, p->name, pv, g[j], plr, taken);
    else adam(&b, p->name, pv, g[j], plr, takenf);
  }
  b.skip = NULL;
  store(&b, "opt.step", bin(&b, IR_ADD, s, inum(&b, 1)));
  IrNode *nskipped = scaled ? update_scale(&b, S, found) : NULL;
  ir_return(b.f, lsum, NULL);
  ir_return(b.f, norm, NULL);
  ir_return(b.f, lr, NULL);
  for (int j = 0; j < naux; j++) ir_return(b.f, aux[j], NULL);
  if (scaled) { // the scale this step ran with, whether it overflowed, the steps skipped so far
    ir_return(b.f, S, NULL);
    ir_return(b.f, cast(&b, found, b.dt), NULL);
    ir_return(b.f, cast(&b, nskipped, b.dt), NULL);
  }
  ir_number(b.f);
  return b.f;
}

// ---- plateau ------------------------------------------------------------------------------------------------
// torch.optim.lr_scheduler.ReduceLROnPlateau(mode, factor, patience,
// threshold=1e-4 rel, cooldown=0, min_lr=0, eps=1e-8), one call per epoch:
//   better = metric < best * (1 - 1e-4)   (max mode: metric > best * (1 + 1e-4))
//   best = better ? metric : best;  bad = better ? 0 : bad + 1
//   if bad > patience: bad = 0, and if lr - lr * factor > 1e-8: scale *= factor
IrFunc *optim_build_plateau(IrModule *m, const OptimRecipe *r, DType dt) {
  Bld b = {.m = m, .a = m->arena, .r = r, .dt = dt};
  b.f = ir_func_new(m, "plateau_update");
  b.b = ir_builder(b.f, "optim");
  Type *st = type_scalar(b.a, dt);
  IrNode *metric = ir_input(b.f, "metric", st, b.b.span);
  IrNode *scale = state(&b, "opt.plateau.scale", st), *best = state(&b, "opt.plateau.best", st);
  IrNode *bad = state(&b, "opt.plateau.bad", type_scalar(b.a, DT_I64));
  IrNode *better = r->plateau_max ? bin(&b, IR_GT, metric, bin(&b, IR_MUL, best, num(&b, 1 + 1e-4)))
                                  : bin(&b, IR_LT, metric, bin(&b, IR_MUL, best, num(&b, 1 - 1e-4)));
  IrNode *bad1 = sel(&b, better, inum(&b, 0), bin(&b, IR_ADD, bad, inum(&b, 1)));
  IrNode *reduce = bin(&b, IR_GT, bad1, inum(&b, r->patience));
  IrNode *old = bin(&b, IR_MUL, num(&b, r->lr), scale);
  IrNode *drop = bin(&b, IR_SUB, old, bin(&b, IR_MUL, old, num(&b, r->factor)));
  IrNode *ok = bin(&b, IR_AND, reduce, bin(&b, IR_GT, drop, num(&b, 1e-8)));
  IrNode *nscale = sel(&b, ok, bin(&b, IR_MUL, scale, num(&b, r->factor)), scale);
  store(&b, "opt.plateau.best", sel(&b, better, metric, best));
  store(&b, "opt.plateau.bad", sel(&b, reduce, inum(&b, 0), bad1));
  store(&b, "opt.plateau.scale", nscale);
  ir_return(b.f, nscale, NULL);
  ir_number(b.f);
  return b.f;
}
