// schedule.c — the scheduling pass (kir_schedule, schedule.h): a lowered
// program (canonical nests, `parallel` marking independent loops) becomes
// one scheduled for a target: recipes chosen per kernel, every loop mapped,
// grains and captures written out, barriers placed. Whatever a backend
// would otherwise decide is decided here, from the Target's data.
//
// Why recipes, not rewrites of the canonical nest: the fast CPU forms of
// matmul, conv and pooling are library calls or other loop nests whose
// equality with the canonical nest rests on the op's semantics (each output
// element's accumulation order, kernels/gemm_ref.h for matmul and conv),
// not on loop algebra a generic rewrite could check. So, as TVM's op strategies do, a kernel carries its op record and
// the strategy table below picks, per target, the recipe that re-lowers it
// (schedule_nn.c); without a recipe the canonical nest stays. The mapping
// of loops and the barriers are generic and apply to every kernel.
//
// Input: a verified, unscheduled KirProgram and a KirTarget. Output: the
// same program, scheduled (p->target set).
#include "schedule_internal.h"

#include <math.h>
#include <string.h>

// ---- the builder (schedule_internal.h) ----------------------------------------------------------
KExpr *sk_i(Sk *s, int64_t v) { return kir_idx(s->p, v); }
KExpr *sk_add(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_ADD, a, b); }
KExpr *sk_sub(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_SUB, a, b); }
KExpr *sk_mul(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_MUL, a, b); }
KExpr *sk_div(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_DIV, a, b); }
KExpr *sk_mod(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_MOD, a, b); }
KExpr *sk_lt(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_LT, a, b); }
KExpr *sk_and(Sk *s, KExpr *a, KExpr *b) { return kir_bin(s->p, KB_AND, a, b); }
KExpr *sk_isnan(Sk *s, KExpr *x) { return kir_bin(s->p, KB_NE, x, x); }

KExpr *sk_in_range(Sk *s, KExpr *v, KExpr *n) {
  return sk_and(s, kir_bin(s->p, KB_GE, v, sk_i(s, 0)), sk_lt(s, v, n));
}

// As the lowering stores constants: integer dtypes get the truncated value.
KExpr *sk_f(Sk *s, DType dt, double v) {
  if (dtype_is_float(dt)) return kir_float(s->p, dt, v);
  return kir_int(s->p, dt, dt == DT_BOOL ? v != 0 : (int64_t)v);
}

KExpr *sk_dim(Sk *s, int role, int d) { return s->k->op->dims[role][d]; }
bool sk_is_one(const KExpr *e) { return e->kind == KE_CONST && e->dtype == DT_I64 && e->i == 1; }
KExpr *sk_ld(Sk *s, int b, KExpr *index) { return kir_load(s->p, b, index); }

void sk_st(Sk *s, Vec *blk, int b, KExpr *index, KExpr *v) {
  kir_store(s->p, blk, b, index, kir_cast(s->p, kir_buf(s->p, b)->dtype, v));
}

void sk_acc(Sk *s, Vec *blk, int b, KExpr *index, KExpr *v) { sk_st(s, blk, b, index, sk_add(s, sk_ld(s, b, index), v)); }

static int sk_var(Sk *s, const char *prefix, DType dt, bool loop) {
  return kir_var_new(s->p, s->k, arena_printf(s->p->arena, "%s%d", prefix, s->k->vars.len), dt, loop);
}

KStmt *sk_loop(Sk *s, Vec *blk, const char *name, KExpr *n, bool parallel, KExpr **iv) {
  int v = sk_var(s, name, DT_I64, true);
  KStmt *st = kir_for(s->p, blk, v, n, parallel);
  *iv = kir_varref(s->p, s->k, v);
  return st;
}

KExpr *sk_let(Sk *s, Vec *blk, const char *name, KExpr *value) {
  int v = sk_var(s, name, value->dtype, false);
  kir_let(s->p, blk, v, value);
  return kir_varref(s->p, s->k, v);
}

// k12_conv2d -> t12_NAME (the lowering's kernel names carry the node id);
// other names -> KERNEL_NAME.
int sk_temp(Sk *s, const char *name, DType dt, int rank, KExpr *const *dims) {
  const char *kn = s->k->name;
  size_t digits = kn[0] == 'k' ? strspn(kn + 1, "0123456789") : 0;
  const char *bn = digits && kn[1 + digits] == '_' ? arena_printf(s->p->arena, "t%.*s_%s", (int)digits, kn + 1, name)
                                                   : arena_printf(s->p->arena, "%s_%s", kn, name);
  int b = kir_buf_add(s->p, KBUF_TEMP, bn, dt, rank, dims);
  kir_kernel_use(s->p, s->k, b);
  return b;
}

void sk_restart(Sk *s) {
  s->k->body = (Vec){0};
  s->k->vars = (Vec){0};
}

// ---- strategies ------------------------------------------------------------------------------------
// Per op, the recipe a target with recipes uses: matmul and the
// convolutions become calls of the kernel library (kernels/cpu) where the
// target links it and the dtype is f32, pools an unrolled nest.
static const struct {
  KirOpKind op;
  bool (*recipe)(Sk *s);
} strategies[] = {
    {KOP_MATMUL, sk_matmul},
    {KOP_MATMUL_BIAS, sk_matmul},
    {KOP_MATMUL_RESIDUAL, sk_matmul},
    {KOP_MATMUL_RELU, sk_matmul},
    {KOP_MATMUL_RELU_MASK, sk_matmul},
    {KOP_CONV2D, sk_conv2d},
    {KOP_CONV2D_BIAS, sk_conv2d},
    {KOP_CONV2D_GRAD_INPUT, sk_conv2d_grad_input},
    {KOP_CONV2D_GRAD_WEIGHT, sk_conv2d_grad_weight},
    {KOP_MAX_POOL2D, sk_pool},
    {KOP_AVG_POOL2D, sk_pool},
    {KOP_MAX_POOL2D_GRAD, sk_pool},
    {KOP_AVG_POOL2D_GRAD, sk_pool},
    {KOP_MAX_POOL2D_GRAD_RELU_MASK, sk_pool},
};

static void choose_recipe(Sk *s) {
  if (s->t->kind == KT_GPU) {
    sk_gpu_recipe(s); // schedule_gpu.c
    return;
  }
  if (!s->t->recipes || !s->k->op) return;
  for (size_t i = 0; i < sizeof strategies / sizeof *strategies; i++)
    if (strategies[i].op == s->k->op->kind) {
      strategies[i].recipe(s);
      return;
    }
}

// ---- maps: cpu -----------------------------------------------------------------------------------------
static void set_captures(Sk *s, KStmt *l) { kir_loop_captures(s->p, s->k, l, &l->captures); }

static int64_t expr_work(const KExpr *e) {
  return e ? 1 + expr_work(e->a) + expr_work(e->b) + expr_work(e->c) : 0;
}

// (saturating near INT64_MAX / 2: only comparisons with chunk_min_work use it)
int64_t sk_block_work(const Vec *blk) {
  int64_t w = 0;
  for (int i = 0; i < blk->len && w >= 0; i++) {
    const KStmt *st = VEC_AT(*blk, KStmt, i);
    int64_t x = 1 + expr_work(st->value) + expr_work(st->index) + expr_work(st->cond);
    if (st->kind == KS_CALL) return -1;
    if (st->kind == KS_FOR) {
      int64_t body = sk_block_work(&st->body);
      if (st->n->kind != KE_CONST || body < 0) return -1;
      x += body && st->n->i > INT64_MAX / 4 / body ? INT64_MAX / 4 : st->n->i * body;
    }
    if (st->kind == KS_IF) {
      int64_t b = sk_block_work(&st->body), e = sk_block_work(&st->els);
      if (b < 0 || e < 0) return -1;
      x += b + e;
    }
    w = x > INT64_MAX / 2 - w ? INT64_MAX / 2 : w + x;
  }
  return w;
}

// A chunk loop's grain: max(ceil(n / chunks), 1), but where an iteration's
// work w is a constant, a chunk does at least chunk_min_work of it: for a
// constant n, ceil(n / c) with c = clamp(n * w / chunk_min_work, 1, chunks)
// chunks (so they stay even), for a symbolic one at least
// ceil(chunk_min_work / w) iterations. A loop of less work is one chunk,
// which the pool runs on the caller alone (mlc_parallel_for): no region is
// published for it. Either way the grain depends on sizes only.
static KExpr *chunk_grain(Sk *s, const KStmt *l) {
  int64_t w = sk_block_work(&l->body), min = s->t->chunk_min_work, c = s->t->chunks;
  KExpr *per = sk_div(s, sk_add(s, l->n, sk_i(s, c - 1)), sk_i(s, c));
  if (w <= 0 || min <= 0 || (l->n->kind != KE_CONST && min <= w))
    return kir_bin(s->p, KB_MAX, per, sk_i(s, 1));
  if (l->n->kind == KE_CONST) {
    int64_t n = l->n->i, k = n > 0 && w > min / n ? (n > INT64_MAX / w ? c : n * w / min) : 1;
    k = k < 1 ? 1 : k > c ? c : k;
    return sk_i(s, n > 0 ? (n + k - 1) / k : 1);
  }
  return kir_bin(s->p, KB_MAX, per, sk_i(s, (min + w - 1) / w));
}

// The first independent loop on every path becomes a chunk loop.
static void map_chunks(Sk *s, Vec *blk) {
  for (int i = 0; i < blk->len; i++) {
    KStmt *l = VEC_AT(*blk, KStmt, i);
    if (l->kind == KS_FOR && l->parallel) {
      l->map = KMAP_CHUNK;
      l->grain = chunk_grain(s, l);
      set_captures(s, l);
      continue;
    }
    map_chunks(s, &l->body);
    map_chunks(s, &l->els);
  }
}

// ---- barriers -----------------------------------------------------------------------------------------
static void place_barriers(Sk *s) {
  Vec old = s->k->body, *top = &s->k->body;
  *top = (Vec){0};
  for (int j = 0, first = 0; j < old.len; j++) {
    KStmt *st = VEC_AT(old, KStmt, j);
    bool need = false;
    for (int i = first; i < j && !need; i++) need = kir_barrier_conflict(s->p, VEC_AT(old, KStmt, i), st) >= 0;
    if (need) {
      kir_barrier(s->p, top);
      first = j;
    }
    vec_push(s->p->arena, top, st);
  }
}

// ---- the pass ------------------------------------------------------------------------------------------
bool kir_schedule(KirProgram *p, const KirTarget *t, DiagSink *d) {
  if (p->target) {
    diag_error(d, (Span){0}, "kir: program %s is scheduled already (for %s)", p->name, p->target);
    return false;
  }
  for (int i = 0; i < p->kernels.len; i++) {
    Sk s = {.p = p, .k = VEC_AT(p->kernels, KirKernel, i), .t = t};
    choose_recipe(&s);
    if (t->kind == KT_CPU) map_chunks(&s, &s.k->body);
    else sk_map_gpu(&s); // schedule_gpu.c
    place_barriers(&s);
  }
  if (t->kind == KT_CPU) {
    sk_fold_bias_grads(&(Sk){.p = p, .t = t}); // schedule_nn.c
    sk_fold_pool_grads(&(Sk){.p = p, .t = t});
    sk_fold_pool_picks(&(Sk){.p = p, .t = t});
    sk_fold_pick_grads(&(Sk){.p = p, .t = t});
    sk_fuse_sum_updates(&(Sk){.p = p, .t = t});
    sk_merge_kernels(&(Sk){.p = p, .t = t});   // schedule_merge.c
  }
  p->target = t->name;
  return true;
}
