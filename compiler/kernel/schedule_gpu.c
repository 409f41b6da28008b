// schedule_gpu.c — the gpu target's part of the scheduling pass (schedule.h):
// how a lowered kernel becomes launches of GPU blocks and threads, and the
// gpu recipes. Everything is decided here, from the Target's numbers
// (target.h), and written into the kernel IR, so the CUDA printer only
// prints: one launch per top-level gpu-block loop, its grid the loop's trip
// count, its block the largest gpu-thread trip count inside.
//
// Per kernel, the top-level statements are cut into launches:
//
//   mapped loop    an independent top-level loop whose body reads no local
//                  of the kernel's top level (nothing crosses a launch). Its
//                  perfect nest of independent loops (n0, .., nk) is
//                  flattened, the innermost index fastest, so consecutive
//                  threads touch consecutive elements of a row-major buffer
//                  (coalesced):
//                    for gb < ceil(N / T) @gpu-block { for gt < T @gpu-thread {
//                      let g = gb * T + gt; if g < N { let i0 = g / (n1*..*nk); ..;
//                      let ik = g % nk; body } } }
//                  T = block_threads, or N rounded up to the warp for a
//                  smaller constant N. A nest whose body is a reduction of
//                  a long or unknown length (reduce_min) over few rows (a
//                  constant count up to reduce_rows) gets a block per row
//                  instead (below); one whose body is a long float sum
//                  gets a thread per lane chain (32 rows x 8 lanes a block,
//                  "float sums: a lane per thread").
//   a launch       a loop a recipe mapped gpu-block already (the tiled
//                  GEMMs) stays as it is.
//   serial run     the other statements between two mapped loops run on one
//                  thread of one block; a run that is a reduction (below)
//                  gets the threads of one block (max_threads), one that
//                  is a long float sum a thread per lane (8 threads).
//
// A reduction is `let acc = ID` followed by a loop nest whose body updates
// acc only as `acc = acc OP e` (OP add, mul, max or min with ID its identity:
// 0, 1, -inf, +inf), reads acc nowhere else, stores nothing and assigns no
// other variable declared outside it. Its block form: thread t combines the
// terms t, t + T, t + 2T, .. of the flattened nest (consecutive threads,
// consecutive terms) into its own acc, stores it in a shared buffer; a tree
// (T/2, T/4, .., 1 threads, a barrier before each level) combines the
// partials; thread 0 loads the result into acc and runs the statements after
// the loop. Float results thus differ from the sequential order by
// rounding; the order is fixed by T, so runs are deterministic. No atomics.
//
// Recipes (the gpu strategy table): matmul (all its epilogue kinds),
// conv2d(_bias), conv2d_grad_input and conv2d_grad_weight are tiled GEMMs
// (schedule_gpu_gemm.c), written here as mapped launches with shared
// buffers and barriers, which the mapping below passes through; they keep
// the library's sum order (kernels/gemm_ref.h), so their results are the
// interpreter's bits.
#include "schedule_internal.h"

#include <math.h>
#include <string.h>

// ---- variables an expression or block uses ----------------------------------------------------------
static bool expr_uses(const KExpr *x, int var) {
  if (!x) return false;
  if (x->kind == KE_VAR && x->var == var) return true;
  return expr_uses(x->a, var) || expr_uses(x->b, var) || expr_uses(x->c, var);
}

static void mark_expr(const KExpr *x, bool *used) {
  if (!x) return;
  if (x->kind == KE_VAR) used[x->var] = true;
  mark_expr(x->a, used), mark_expr(x->b, used), mark_expr(x->c, used);
}

// Every variable a statement reads or assigns.
static void mark_stmt(const KStmt *s, bool *used) {
  if (s->kind == KS_ASSIGN) used[s->var] = true;
  mark_expr(s->n, used), mark_expr(s->grain, used), mark_expr(s->index, used);
  mark_expr(s->value, used), mark_expr(s->cond, used);
  for (int i = 0; i < s->body.len; i++) mark_stmt(VEC_AT(s->body, KStmt, i), used);
  for (int i = 0; i < s->els.len; i++) mark_stmt(VEC_AT(s->els, KStmt, i), used);
}

// live[i]: some top-level local let before statement i is used at or after
// it (so no launch may start at i). live has blk->len + 1 entries.
static void live_cuts(Sk *s, const Vec *blk, bool *live) {
  bool *used = arena_alloc(s->p->arena, (size_t)s->k->vars.len + 1); // by blk[i..]
  live[blk->len] = false;
  for (int i = blk->len - 1; i >= 0; i--) {
    mark_stmt(VEC_AT(*blk, KStmt, i), used);
    bool any = false;
    for (int j = 0; j < i && !any; j++) {
      const KStmt *d = VEC_AT(*blk, KStmt, j);
      any = d->kind == KS_LET && used[d->var];
    }
    live[i] = any;
  }
}

static bool assigns(const Vec *blk, int var) {
  for (int i = 0; i < blk->len; i++) {
    const KStmt *st = VEC_AT(*blk, KStmt, i);
    if ((st->kind == KS_ASSIGN && st->var == var) || assigns(&st->body, var) || assigns(&st->els, var)) return true;
  }
  return false;
}

// ---- building blocks -----------------------------------------------------------------------------------
static KExpr *prod(Sk *s, KExpr *const *n, int from, int to) {
  KExpr *e = sk_i(s, 1);
  for (int i = from; i < to; i++) e = sk_mul(s, e, n[i]);
  return e;
}

static KExpr *ceil_div(Sk *s, KExpr *n, int64_t t) { return sk_div(s, sk_add(s, n, sk_i(s, t - 1)), sk_i(s, t)); }

static bool is_multiple(const KExpr *n, int64_t t) {
  int64_t v;
  return kir_eval_i64(n, NULL, &v) && v % t == 0;
}

// let vars[i] = its coordinate of the flat index g over dims n[0..k), the
// last fastest; the vars turn from loop indices into locals.
static void unflatten(Sk *s, Vec *blk, KExpr *g, const int *vars, KExpr *const *n, int k) {
  for (int i = 0; i < k; i++) {
    KExpr *stride = prod(s, n, i + 1, k), *v = g;
    if (!(stride->kind == KE_CONST && stride->i == 1)) v = sk_div(s, v, stride);
    if (i > 0) v = sk_mod(s, v, n[i]);
    VEC_AT(s->k->vars, KirVar, vars[i])->is_loop = false;
    kir_let(s->p, blk, vars[i], v);
  }
}

// for gb < nb @gpu-block { for gt < T @gpu-thread { ... } }: the block loop
// and, in *thread, the thread loop's body; *gb / *gt their variables.
static KStmt *launch(Sk *s, KExpr *nb, int64_t T, KExpr **gb, KExpr **gt, Vec **thread) {
  Vec one = {0};
  KStmt *b = sk_loop(s, &one, "gb", nb, true, gb);
  KStmt *t = sk_loop(s, &b->body, "gt", sk_i(s, T), true, gt);
  b->map = KMAP_GPU_BLOCK, t->map = KMAP_GPU_THREAD;
  *thread = &t->body;
  return b;
}

static KStmt *thread_loop(Sk *s, Vec *blk, int64_t T, KExpr **gt) {
  KStmt *t = sk_loop(s, blk, "gt", sk_i(s, T), true, gt);
  t->map = KMAP_GPU_THREAD;
  return t;
}

// The statements of blk[from, to) on one thread of one block.
static KStmt *single(Sk *s, const Vec *blk, int from, int to) {
  KExpr *gb, *gt;
  Vec *body;
  KStmt *b = launch(s, sk_i(s, 1), 1, &gb, &gt, &body);
  for (int i = from; i < to; i++) vec_push(s->p->arena, body, blk->data[i]);
  return b;
}

// ---- reductions ---------------------------------------------------------------------------------------------
typedef struct Reduction {
  int acc;           // the accumulator
  KBinOp op;
  int nloops;        // the loop nest over the terms
  int vars[SK_MAX_RANK];
  KExpr *n[SK_MAX_RANK];
  const Vec *body;   // its innermost body (updates acc)
} Reduction;

// Whether x is OP's identity in dtype dt.
static bool is_identity(const KExpr *x, KBinOp op) {
  if (x->kind != KE_CONST) return false;
  bool fl = dtype_is_float(x->dtype);
  switch (op) {
  case KB_ADD: return fl ? x->f == 0 && !signbit(x->f) : x->i == 0;
  case KB_MUL: return fl ? x->f == 1 : x->i == 1;
  case KB_MAX: return fl && isinf(x->f) && x->f < 0;
  case KB_MIN: return fl && isinf(x->f) && x->f > 0;
  default: return false;
  }
}

// blk updates acc only as acc = acc OP e (*op fixed on first sight), reads
// it nowhere else, stores nothing, assigns only variables it declares.
static bool updates_only(Sk *s, const Vec *blk, int acc, KBinOp *op, bool *own) {
  for (int i = 0; i < blk->len; i++) {
    const KStmt *st = VEC_AT(*blk, KStmt, i);
    switch (st->kind) {
    case KS_ASSIGN: {
      if (st->var != acc) {
        if (!own[st->var] || expr_uses(st->value, acc)) return false;
        break;
      }
      const KExpr *v = st->value;
      if (v->kind != KE_BINARY || (v->bin != KB_ADD && v->bin != KB_MUL && v->bin != KB_MAX && v->bin != KB_MIN))
        return false;
      const KExpr *e = v->a->kind == KE_VAR && v->a->var == acc ? v->b : v->b->kind == KE_VAR && v->b->var == acc ? v->a : NULL;
      if (!e || expr_uses(e, acc) || (*op != KB_COUNT && *op != v->bin)) return false;
      *op = v->bin;
      break;
    }
    case KS_LET:
      if (expr_uses(st->value, acc)) return false;
      own[st->var] = true;
      break;
    case KS_FOR:
      if (expr_uses(st->n, acc)) return false;
      own[st->var] = true;
      if (!updates_only(s, &st->body, acc, op, own)) return false;
      break;
    case KS_IF:
      if (expr_uses(st->cond, acc) || !updates_only(s, &st->body, acc, op, own) ||
          !updates_only(s, &st->els, acc, op, own))
        return false;
      break;
    case KS_CHECK:
      if (expr_uses(st->cond, acc)) return false;
      break;
    default: return false; // stores, barriers
    }
  }
  return true;
}

// blk[i] = let acc = ID, blk[i + 1] the loop nest that reduces into it.
static bool find_reduction(Sk *s, const Vec *blk, int i, Reduction *r) {
  if (i + 1 >= blk->len) return false;
  const KStmt *let = VEC_AT(*blk, KStmt, i), *loop = VEC_AT(*blk, KStmt, i + 1);
  if (let->kind != KS_LET || loop->kind != KS_FOR || let->value->dtype == DT_BOOL) return false;
  *r = (Reduction){.acc = let->var};
  const KStmt *l = loop;
  for (;;) {
    if (r->nloops == SK_MAX_RANK || expr_uses(l->n, r->acc)) return false;
    r->vars[r->nloops] = l->var, r->n[r->nloops++] = l->n;
    if (l->body.len == 1 && VEC_AT(l->body, KStmt, 0)->kind == KS_FOR) l = VEC_AT(l->body, KStmt, 0);
    else break;
  }
  r->body = &l->body;
  KBinOp op = KB_COUNT;
  bool *own = arena_alloc(s->p->arena, (size_t)s->k->vars.len + 1);
  if (!updates_only(s, r->body, r->acc, &op, own) || op == KB_COUNT || !is_identity(let->value, op)) return false;
  r->op = op;
  return true;
}

// The terms' count is long or unknown.
static bool long_reduction(Sk *s, const Reduction *r) {
  int64_t n;
  KExpr *total = prod(s, r->n, 0, r->nloops);
  return !kir_eval_i64(total, NULL, &n) || n >= s->t->reduce_min;
}

// Into thread loop body `tb` (thread gt of T): acc = ID, then the terms
// gt, gt + T, .. of the nest, then sh[gt] = acc.
static void partials(Sk *s, Vec *tb, const Reduction *r, KExpr *init, KExpr *gt, int64_t T, int sh) {
  kir_let(s->p, tb, r->acc, init);
  KExpr *R = prod(s, r->n, 0, r->nloops), *j;
  KStmt *jl = sk_loop(s, tb, "j", ceil_div(s, R, T), false, &j);
  KExpr *g = sk_let(s, &jl->body, "g", sk_add(s, sk_mul(s, j, sk_i(s, T)), gt));
  Vec *in = &jl->body;
  if (!is_multiple(R, T)) in = &kir_if(s->p, in, sk_lt(s, g, R))->body;
  unflatten(s, in, g, r->vars, r->n, r->nloops);
  for (int i = 0; i < r->body->len; i++) vec_push(s->p->arena, in, r->body->data[i]);
  sk_st(s, tb, sh, gt, kir_varref(s->p, s->k, r->acc));
}

// Into block body `bb`: the tree over sh[0, T), then thread 0 runs
// let acc = sh[0] and `after`.
static void tree(Sk *s, Vec *bb, const Reduction *r, int64_t T, int sh, const Vec *after, int from, int to) {
  KExpr *gt;
  for (int64_t h = T / 2; h >= 1; h /= 2) {
    kir_barrier(s->p, bb);
    Vec *tb = &thread_loop(s, bb, h, &gt)->body;
    KExpr *a = sk_ld(s, sh, gt), *b = sk_ld(s, sh, sk_add(s, gt, sk_i(s, h)));
    sk_st(s, tb, sh, gt, kir_bin(s->p, r->op, a, b));
  }
  kir_barrier(s->p, bb);
  Vec *tb = &thread_loop(s, bb, 1, &gt)->body;
  kir_let(s->p, tb, r->acc, sk_ld(s, sh, sk_i(s, 0)));
  for (int i = from; i < to; i++) vec_push(s->p->arena, tb, after->data[i]);
}

static int shared_named(Sk *s, const char *name, DType dt, int64_t T) {
  KExpr *d = sk_i(s, T);
  int b = sk_temp(s, name, dt, 1, &d);
  kir_buf(s->p, b)->kind = KBUF_SHARED;
  return b;
}

static int shared_buf(Sk *s, DType dt, int64_t T) {
  KExpr *d = sk_i(s, T);
  int b = sk_temp(s, "sh", dt, 1, &d);
  kir_buf(s->p, b)->kind = KBUF_SHARED;
  return b;
}

// blk[i] = let acc, blk[i + 1] its loop, blk[i + 2, n) what follows: one
// block of T threads.
static KStmt *block_reduction(Sk *s, const Vec *blk, int i, int n, const Reduction *r, int64_t T) {
  KExpr *gb, *gt;
  Vec *tb;
  KStmt *b = launch(s, sk_i(s, 1), T, &gb, &gt, &tb);
  int sh = shared_buf(s, VEC_AT(s->k->vars, KirVar, r->acc)->dtype, T);
  partials(s, tb, r, VEC_AT(*blk, KStmt, i)->value, gt, T, sh);
  tree(s, &b->body, r, T, sh, blk, i + 2, n);
  return b;
}

// ---- float sums: a lane per thread ---------------------------------------------------------------------
// A float sum (docs/design/kir.md, "Float sums") is eight lane lets of
// +0, statements that add terms to the lanes (lane j only as
// `lj = lj + e`, e reading no lane), and a let of the lanes' fold. The
// eight lane chains are independent, so each may run on a thread of its
// own: thread (lane j, slot r) of a block of 8 x 32 threads runs the
// statements with every update of a lane other than j skipped, which is
// lane j's chain exactly as the one thread ran it, and stores lj into a
// shared buffer; after a barrier, thread r folds the row's eight values in
// the fold's own expression and runs what follows. So the sum keeps its
// bits and a row's chain is an eighth as long. The lane is the warp (j =
// thread / 32), so the skips never diverge within a warp.
enum { LANES = 8, LANE_ROWS = 32 };

typedef struct LaneSum {
  int at;              // the first lane let in the row body
  int lanes[LANES];
  int fold;            // the body index of the fold's let
} LaneSum;

static int lane_of(const LaneSum *ls, int var) {
  for (int j = 0; j < LANES; j++)
    if (ls->lanes[j] == var) return j;
  return -1;
}

static bool uses_lane(const LaneSum *ls, const KExpr *x) {
  for (int j = 0; j < LANES; j++)
    if (expr_uses(x, ls->lanes[j])) return true;
  return false;
}

// blk touches the lanes only as updates `lj = lj + e`; it stores nothing
// and assigns only lanes and variables it declares. *mask: the lanes it
// updates; *trips: its loops' longest nest of trips (-1: not a constant).
static bool lane_stmts(const LaneSum *ls, const Vec *blk, bool *own, unsigned *mask, int64_t *trips) {
  for (int i = 0; i < blk->len; i++) {
    const KStmt *st = VEC_AT(*blk, KStmt, i);
    int64_t n, inner = 1;
    switch (st->kind) {
    case KS_LET: // a float +0 let: a sum nested in this one (a chunk's lanes), which every lane would redo
      if (uses_lane(ls, st->value) || (st->value->kind == KE_CONST && dtype_is_float(st->value->dtype))) return false;
      own[st->var] = true;
      break;
    case KS_ASSIGN: {
      int j = lane_of(ls, st->var);
      const KExpr *v = st->value;
      if (j < 0) {
        if (!own[st->var] || uses_lane(ls, v)) return false;
        break;
      }
      if (v->kind != KE_BINARY || v->bin != KB_ADD || v->a->kind != KE_VAR || v->a->var != st->var || uses_lane(ls, v->b))
        return false;
      *mask |= 1u << j;
      break;
    }
    case KS_IF:
      if (uses_lane(ls, st->cond) || !lane_stmts(ls, &st->body, own, mask, trips) || !lane_stmts(ls, &st->els, own, mask, trips))
        return false;
      break;
    case KS_FOR:
      if (st->map != KMAP_SERIAL || uses_lane(ls, st->n)) return false;
      own[st->var] = true;
      if (!lane_stmts(ls, &st->body, own, mask, &inner)) return false;
      if (!kir_eval_i64(st->n, NULL, &n) || inner < 0) *trips = -1;
      else if (*trips >= 0 && n * inner > *trips) *trips = n * inner;
      break;
    default: return false; // stores, barriers, checks, calls
    }
  }
  return true;
}

static bool is_zero_let(const KStmt *st, DType *dt) {
  if (st->kind != KS_LET || st->value->kind != KE_CONST || !dtype_is_float(st->value->dtype)) return false;
  if (*dt == DT_COUNT) *dt = st->value->dtype;
  return st->value->dtype == *dt && st->value->f == 0 && !signbit(st->value->f);
}

// A row body: lets, then a float sum whose loops are long (a symbolic trip
// count or at least reduce_min / 8 blocks of positions), then statements
// that do not read its lanes.
static bool lane_sum_fits(Sk *s, const Vec *body, LaneSum *ls) {
  int i = 0;
  DType dt = DT_COUNT;
  while (i < body->len && VEC_AT(*body, KStmt, i)->kind == KS_LET && !is_zero_let(VEC_AT(*body, KStmt, i), &dt)) i++;
  for (int j = 0; j < LANES; j++) {
    if (i + j >= body->len || !is_zero_let(VEC_AT(*body, KStmt, i + j), &dt)) return false;
    ls->lanes[j] = VEC_AT(*body, KStmt, i + j)->var;
  }
  if (dt != DT_F64 && dt != DT_F32) return false;
  ls->at = i;
  bool *own = arena_alloc(s->p->arena, (size_t)s->k->vars.len + 1);
  unsigned mask = 0;
  int64_t trips = 1;
  int f = i + LANES; // the fold: the first let after the lanes that reads them
  while (f < body->len && !(VEC_AT(*body, KStmt, f)->kind == KS_LET && uses_lane(ls, VEC_AT(*body, KStmt, f)->value))) f++;
  if (f >= body->len || f == i + LANES) return false;
  Vec mid = {.data = body->data + i + LANES, .len = f - i - LANES};
  if (!lane_stmts(ls, &mid, own, &mask, &trips) || (trips >= 0 && trips * LANES < s->t->reduce_min)) return false;
  ls->fold = f;
  for (int k = f + 1; k < body->len; k++) { // nothing after the fold reads a lane
    bool *used = arena_alloc(s->p->arena, (size_t)s->k->vars.len + 1);
    mark_stmt(VEC_AT(*body, KStmt, k), used);
    for (int j = 0; j < LANES; j++)
      if (used[ls->lanes[j]]) return false;
  }
  // the lets before the sum are recomputed by the folding thread: none may be assigned later
  Vec rest = {.data = body->data + i, .len = body->len - i};
  for (int j = 0; j < i; j++)
    if (assigns(&rest, VEC_AT(*body, KStmt, j)->var)) return false;
  return true;
}

static bool stmt_uses(const KStmt *st, int var, int nvars, Arena *a) {
  bool *used = arena_alloc(a, (size_t)nvars + 1);
  mark_stmt(st, used);
  return used[var];
}

// The lanes' statements for the thread of lane `lane`: each update of lane
// j, and the lets before it that only it reads, under `if lane == j`; an
// `if` that updates one lane only, whole under its guard.
static void lane_copy(Sk *s, const LaneSum *ls, const Vec *blk, KExpr *lane, Vec *out) {
  int nv = s->k->vars.len;
  Vec pend = {0};
  for (int i = 0; i < blk->len; i++) {
    KStmt *st = VEC_AT(*blk, KStmt, i);
    if (st->kind == KS_LET) {
      vec_push(s->p->arena, &pend, st);
      continue;
    }
    unsigned mask = 0;
    int64_t trips = 1;
    bool *own = arena_alloc(s->p->arena, (size_t)nv + 1);
    int j = st->kind == KS_ASSIGN ? lane_of(ls, st->var) : -1;
    if (st->kind == KS_IF && lane_stmts(ls, &st->body, own, &mask, &trips) && lane_stmts(ls, &st->els, own, &mask, &trips) &&
        mask && !(mask & (mask - 1)))
      for (j = 0; !(mask >> j & 1); j++) {}
    Vec *g = NULL;
    if (j >= 0) g = &kir_if(s->p, out, kir_bin(s->p, KB_EQ, lane, sk_i(s, j)))->body;
    // a pending let goes under the guard when nothing after this statement reads it
    for (int q = 0; q < pend.len; q++) {
      KStmt *l = pend.data[q];
      bool later = false;
      for (int r = i + 1; r < blk->len && !later; r++) later = stmt_uses(VEC_AT(*blk, KStmt, r), l->var, nv, s->p->arena);
      if (!g || later) {
        // keep it before the guard (the guard is already in out: insert before it)
        if (g) {
          KStmt *gi = out->data[out->len - 1];
          out->data[out->len - 1] = l;
          vec_push(s->p->arena, out, gi);
        } else vec_push(s->p->arena, out, l);
      } else vec_push(s->p->arena, g, l);
    }
    pend.len = 0;
    if (g) {
      vec_push(s->p->arena, g, st);
      continue;
    }
    if (st->kind == KS_FOR || st->kind == KS_IF) {
      KStmt *c = arena_alloc(s->p->arena, sizeof *c);
      *c = *st, c->body = (Vec){0}, c->els = (Vec){0};
      lane_copy(s, ls, &st->body, lane, &c->body);
      lane_copy(s, ls, &st->els, lane, &c->els);
      vec_push(s->p->arena, out, c);
    } else vec_push(s->p->arena, out, st);
  }
  for (int q = 0; q < pend.len; q++) vec_push(s->p->arena, out, pend.data[q]);
}

// x with each lane j replaced by sh[base + j].
static KExpr *fold_from(Sk *s, const LaneSum *ls, const KExpr *x, int sh, KExpr *base) {
  if (!x) return NULL;
  if (x->kind == KE_VAR) {
    int j = lane_of(ls, x->var);
    if (j >= 0) return sk_ld(s, sh, sk_add(s, base, sk_i(s, j)));
  }
  KExpr *c = arena_alloc(s->p->arena, sizeof *c);
  *c = *x;
  c->a = fold_from(s, ls, x->a, sh, base), c->b = fold_from(s, ls, x->b, sh, base), c->c = fold_from(s, ls, x->c, sh, base);
  return c;
}

// One lane's chain in thread (lane, slot): the lets and lane inits before
// the sum (statements 0 .. at + LANES), the updates of this thread's lane
// only (lane_copy), then its lane stored at sh[slot * LANES + lane].
static void lane_chain_store(Sk *s, const LaneSum *ls, const Vec *body, KExpr *lane, KExpr *slot, int sh, Vec *in) {
  for (int i = 0; i < ls->at + LANES; i++) vec_push(s->p->arena, in, body->data[i]);
  Vec mid = {.data = body->data + ls->at + LANES, .len = ls->fold - ls->at - LANES};
  lane_copy(s, ls, &mid, lane, in);
  KExpr *at = sk_mul(s, slot, sk_i(s, LANES));
  for (int j = 0; j < LANES; j++) {
    Vec *put = &kir_if(s->p, in, kir_bin(s->p, KB_EQ, lane, sk_i(s, j)))->body;
    sk_st(s, put, sh, sk_add(s, at, sk_i(s, j)), kir_varref(s->p, s->k, ls->lanes[j]));
  }
}

// The rows of n[0..k) (k = 0: one row), each body = lets, the float sum,
// the rest: blocks of LANE_ROWS rows x LANES lanes.
static KStmt *lane_rows(Sk *s, KExpr *const *n, const int *vars, int k, const Vec *body, const LaneSum *ls) {
  KExpr *N = prod(s, n, 0, k), *gb, *gt;
  int64_t R = LANE_ROWS, c;
  if (kir_eval_i64(N, NULL, &c) && c < R) R = c < 1 ? 1 : c;
  Vec *tb;
  KStmt *b = launch(s, ceil_div(s, N, R), R * LANES, &gb, &gt, &tb);
  DType dt = VEC_AT(s->k->vars, KirVar, ls->lanes[0])->dtype;
  int sh = shared_buf(s, dt, R * LANES);
  // thread gt: lane gt / R (a warp's threads share it when R is 32), row slot gt % R
  KExpr *lane = sk_let(s, tb, "ln", sk_div(s, gt, sk_i(s, R))), *slot = sk_let(s, tb, "rs", sk_mod(s, gt, sk_i(s, R)));
  KExpr *g = sk_let(s, tb, "g", sk_add(s, sk_mul(s, gb, sk_i(s, R)), slot));
  Vec *in = is_multiple(N, R) ? tb : &kir_if(s->p, tb, sk_lt(s, g, N))->body;
  unflatten(s, in, g, vars, n, k);
  lane_chain_store(s, ls, body, lane, slot, sh, in);
  kir_barrier(s->p, &b->body);
  Vec *fb = &thread_loop(s, &b->body, R, &gt)->body;
  g = sk_let(s, fb, "g", sk_add(s, sk_mul(s, gb, sk_i(s, R)), gt));
  in = is_multiple(N, R) ? fb : &kir_if(s->p, fb, sk_lt(s, g, N))->body;
  unflatten(s, in, g, vars, n, k);
  for (int i = 0; i < ls->at; i++) vec_push(s->p->arena, in, body->data[i]);
  const KStmt *f = VEC_AT(*body, KStmt, ls->fold);
  kir_let(s->p, in, f->var, fold_from(s, ls, f->value, sh, sk_mul(s, gt, sk_i(s, LANES))));
  for (int i = ls->fold + 1; i < body->len; i++) vec_push(s->p->arena, in, body->data[i]);
  return b;
}

// ---- chunked float sums: a lane per thread, the chunks at block level -----------------------------------
// A sum of more than 8192 positions per output, or of a symbolic count
// (kir.md, "Long sums are chunked"), is eight combine lanes of +0, one
// serial chunk loop, the combine lanes' fold and what follows; the chunk
// loop's body is lets, the chunk's own eight lanes and their statements
// (a float sum as above), the chunk's fold, and the combine updates
// `lj = lj + e` (e: a select of the fold). Its trip count reads no
// variable, so it is the same for every row of a block and runs at block
// level: per chunk, thread (lane j, slot r) runs lane j of row r's chunk
// (lane_copy) and stores it in `sh`; after a barrier thread r folds the
// chunk in the fold's expression and runs the combine updates on its
// row's combine lanes, which live in a second shared buffer `cb` (+0
// before the chunk loop); a barrier ends the chunk (the next one rewrites
// sh). After the loop thread r folds cb[8 r ..] and runs the rest. Each
// addition is the one-thread form's, in its order, so the bits stay.
typedef struct ChunkSum {
  LaneSum outer;       // the combine lanes in the row body; .fold its fold
  LaneSum inner;       // the chunk's lanes in the chunk loop's body
  int loop;            // the chunk loop's index in the row body
} ChunkSum;

static bool uses_any_var(const KExpr *x) {
  if (!x) return false;
  return x->kind == KE_VAR || uses_any_var(x->a) || uses_any_var(x->b) || uses_any_var(x->c);
}

static bool stmts_read_lanes(Sk *s, const LaneSum *ls, const KStmt *const *st, int n) {
  for (int k = 0; k < n; k++) {
    bool *used = arena_alloc(s->p->arena, (size_t)s->k->vars.len + 1);
    mark_stmt(st[k], used);
    for (int j = 0; j < LANES; j++)
      if (used[ls->lanes[j]]) return true;
  }
  return false;
}

// body from i: eight +0 lets of one float dtype (*dt) into ls->lanes.
static bool zero_lanes(const Vec *body, int i, LaneSum *ls, DType *dt) {
  for (int j = 0; j < LANES; j++) {
    if (i + j >= body->len || !is_zero_let(VEC_AT(*body, KStmt, i + j), dt)) return false;
    ls->lanes[j] = VEC_AT(*body, KStmt, i + j)->var;
  }
  ls->at = i;
  return true;
}

static bool chunk_sum_fits(Sk *s, const Vec *body, ChunkSum *cs) {
  LaneSum *o = &cs->outer, *in = &cs->inner;
  int i = 0;
  DType dt = DT_COUNT;
  while (i < body->len && VEC_AT(*body, KStmt, i)->kind == KS_LET && !is_zero_let(VEC_AT(*body, KStmt, i), &dt)) i++;
  if (!zero_lanes(body, i, o, &dt) || dt != DT_F64 || i + LANES + 1 >= body->len) return false;
  const KStmt *cl = VEC_AT(*body, KStmt, i + LANES), *fo = VEC_AT(*body, KStmt, i + LANES + 1);
  if (cl->kind != KS_FOR || cl->map != KMAP_SERIAL || uses_any_var(cl->n)) return false;
  if (fo->kind != KS_LET || !uses_lane(o, fo->value)) return false;
  cs->loop = i + LANES, o->fold = i + LANES + 1;
  if (stmts_read_lanes(s, o, (const KStmt *const *)body->data + o->fold + 1, body->len - o->fold - 1)) return false;
  Vec rest = {.data = body->data + i, .len = body->len - i};
  for (int j = 0; j < i; j++)
    if (assigns(&rest, VEC_AT(*body, KStmt, j)->var)) return false;
  // the chunk loop's body: lets, the chunk's lanes, their statements, the fold, combine updates
  const Vec *cb = &cl->body;
  int q = 0;
  DType dt2 = DT_COUNT;
  while (q < cb->len && VEC_AT(*cb, KStmt, q)->kind == KS_LET && !is_zero_let(VEC_AT(*cb, KStmt, q), &dt2)) q++;
  if (!zero_lanes(cb, q, in, &dt2) || (dt2 != DT_F64 && dt2 != DT_F32)) return false;
  int f = q + LANES;
  while (f < cb->len && !(VEC_AT(*cb, KStmt, f)->kind == KS_LET && uses_lane(in, VEC_AT(*cb, KStmt, f)->value))) f++;
  if (f >= cb->len || f == q + LANES) return false;
  in->fold = f;
  Vec mid = {.data = cb->data + q + LANES, .len = f - q - LANES};
  bool *own = arena_alloc(s->p->arena, (size_t)s->k->vars.len + 1);
  unsigned mask = 0;
  int64_t trips = 1;
  if (!lane_stmts(in, &mid, own, &mask, &trips) || stmts_read_lanes(s, o, (const KStmt *const *)mid.data, mid.len) ||
      uses_lane(o, VEC_AT(*cb, KStmt, f)->value))
    return false;
  for (int k = f + 1; k < cb->len; k++) { // the combine updates
    const KStmt *u = VEC_AT(*cb, KStmt, k);
    int j = u->kind == KS_ASSIGN ? lane_of(o, u->var) : -1;
    if (j < 0 || u->value->kind != KE_BINARY || u->value->bin != KB_ADD || u->value->a->kind != KE_VAR ||
        u->value->a->var != u->var || uses_lane(o, u->value->b) || uses_lane(in, u->value->b))
      return false;
  }
  Vec crest = {.data = cb->data + q, .len = cb->len - q};
  for (int j = 0; j < q; j++)
    if (assigns(&crest, VEC_AT(*cb, KStmt, j)->var)) return false;
  return true;
}

// Thread loop of T threads in bb for row slots: g = gb R + slot, the guard,
// the row's indices and its lets body[0, nlets); returns the body to fill.
static Vec *row_threads(Sk *s, Vec *bb, int64_t T, KExpr *gb, int64_t R, KExpr *N, KExpr *const *n, const int *vars,
                        int k, const Vec *body, int nlets, KExpr **gt, KExpr **lane, KExpr **slot) {
  Vec *tb = &thread_loop(s, bb, T, gt)->body;
  *slot = *gt, *lane = NULL;
  if (T > R) {
    *lane = sk_let(s, tb, "ln", sk_div(s, *gt, sk_i(s, R)));
    *slot = sk_let(s, tb, "rs", sk_mod(s, *gt, sk_i(s, R)));
  }
  KExpr *g = sk_let(s, tb, "g", sk_add(s, sk_mul(s, gb, sk_i(s, R)), *slot));
  Vec *in = is_multiple(N, R) ? tb : &kir_if(s->p, tb, sk_lt(s, g, N))->body;
  unflatten(s, in, g, vars, n, k);
  for (int i = 0; i < nlets; i++) vec_push(s->p->arena, in, body->data[i]);
  return in;
}

static KStmt *chunk_rows(Sk *s, KExpr *const *n, const int *vars, int k, const Vec *body, const ChunkSum *cs) {
  const LaneSum *o = &cs->outer, *ls = &cs->inner;
  KExpr *N = prod(s, n, 0, k), *gb, *gt, *lane, *slot;
  int64_t R = LANE_ROWS, c;
  if (kir_eval_i64(N, NULL, &c) && c < R) R = c < 1 ? 1 : c;
  Vec one = {0};
  KStmt *b = sk_loop(s, &one, "gb", ceil_div(s, N, R), true, &gb);
  b->map = KMAP_GPU_BLOCK;
  int sh = shared_buf(s, VEC_AT(s->k->vars, KirVar, ls->lanes[0])->dtype, R * LANES);
  int cb = shared_named(s, "cb", DT_F64, R * LANES);
  // the combine lanes: +0 (their lets' value) for every row slot
  Vec *tb = &thread_loop(s, &b->body, R, &gt)->body;
  for (int j = 0; j < LANES; j++)
    sk_st(s, tb, cb, sk_add(s, sk_mul(s, gt, sk_i(s, LANES)), sk_i(s, j)), VEC_AT(*body, KStmt, o->at + j)->value);
  // the chunk loop at block level, its index the one-thread loop's
  const KStmt *cl = VEC_AT(*body, KStmt, cs->loop);
  KStmt *L = arena_alloc(s->p->arena, sizeof *L);
  *L = *cl, L->body = (Vec){0}, L->els = (Vec){0};
  vec_push(s->p->arena, &b->body, L);
  const Vec *cbody = &cl->body;
  Vec *in = row_threads(s, &L->body, R * LANES, gb, R, N, n, vars, k, body, o->at, &gt, &lane, &slot);
  lane_chain_store(s, ls, cbody, lane, slot, sh, in);
  kir_barrier(s->p, &L->body);
  in = row_threads(s, &L->body, R, gb, R, N, n, vars, k, body, o->at, &gt, &lane, &slot);
  for (int i = 0; i < ls->at; i++) vec_push(s->p->arena, in, cbody->data[i]);
  KExpr *base = sk_mul(s, gt, sk_i(s, LANES));
  const KStmt *f = VEC_AT(*cbody, KStmt, ls->fold);
  kir_let(s->p, in, f->var, fold_from(s, ls, f->value, sh, base));
  for (int i = ls->fold + 1; i < cbody->len; i++) { // lj = lj + e  ->  cb[8 r + j] = cb[8 r + j] + e
    const KStmt *u = VEC_AT(*cbody, KStmt, i);
    sk_st(s, in, cb, sk_add(s, base, sk_i(s, lane_of(o, u->var))), fold_from(s, o, u->value, cb, base));
  }
  kir_barrier(s->p, &L->body);
  in = row_threads(s, &b->body, R, gb, R, N, n, vars, k, body, o->at, &gt, &lane, &slot);
  f = VEC_AT(*body, KStmt, o->fold);
  kir_let(s->p, in, f->var, fold_from(s, o, f->value, cb, sk_mul(s, gt, sk_i(s, LANES))));
  for (int i = o->fold + 1; i < body->len; i++) vec_push(s->p->arena, in, body->data[i]);
  return b;
}

// ---- serial runs -----------------------------------------------------------------------------------------------
// blk[from, to): a run that is lets, a long float sum and what follows it
// gets a thread per lane; a reduction with nothing live across its start
// gets one block (what comes before it a launch of its own); anything else
// runs on one thread.
static void map_run(Sk *s, const Vec *blk, int from, int to, const bool *live, Vec *out) {
  if (from == to) return;
  Reduction r;
  LaneSum ls;
  Vec run = {.data = blk->data + from, .len = to - from};
  ChunkSum cs;
  if (!live[from] && chunk_sum_fits(s, &run, &cs)) { // a chunked float sum of a symbolic count: one row
    vec_push(s->p->arena, out, chunk_rows(s, NULL, NULL, 0, &run, &cs));
    return;
  }
  if (!live[from] && lane_sum_fits(s, &run, &ls)) { // a float sum: one row of 8 lanes
    vec_push(s->p->arena, out, lane_rows(s, NULL, NULL, 0, &run, &ls));
    return;
  }
  for (int i = from; i + 1 < to; i++) {
    if (live[i] || !find_reduction(s, blk, i, &r) || !long_reduction(s, &r)) continue;
    if (i > from) vec_push(s->p->arena, out, single(s, blk, from, i));
    vec_push(s->p->arena, out, block_reduction(s, blk, i, to, &r, s->t->max_threads));
    return;
  }
  vec_push(s->p->arena, out, single(s, blk, from, to));
}

// ---- mapped loops -----------------------------------------------------------------------------------------------
// The perfect nest of independent loops from l: dims and vars; its
// innermost body.
static int parallel_nest(KStmt *l, KExpr **n, int *vars, Vec **body) {
  int k = 0;
  for (;;) {
    n[k] = l->n, vars[k++] = l->var;
    KStmt *m = l->body.len == 1 ? VEC_AT(l->body, KStmt, 0) : NULL;
    if (!m || m->kind != KS_FOR || !m->parallel || k == SK_MAX_RANK) break;
    l = m;
  }
  *body = &l->body;
  return k;
}

// A block per row: the nest's rows (n, vars), body = lets, then the
// reduction at i, then what follows it.
static KStmt *row_reductions(Sk *s, KExpr *const *n, const int *vars, int k, const Vec *body, int i,
                             const Reduction *r) {
  int64_t T = s->t->reduce_threads;
  KExpr *gb, *gt;
  Vec one = {0};
  KStmt *b = sk_loop(s, &one, "gb", prod(s, n, 0, k), true, &gb);
  b->map = KMAP_GPU_BLOCK;
  unflatten(s, &b->body, gb, vars, n, k);
  for (int j = 0; j < i; j++) vec_push(s->p->arena, &b->body, body->data[j]);
  Vec *tb = &thread_loop(s, &b->body, T, &gt)->body;
  int sh = shared_buf(s, VEC_AT(s->k->vars, KirVar, r->acc)->dtype, T);
  partials(s, tb, r, VEC_AT(*body, KStmt, i)->value, gt, T, sh);
  tree(s, &b->body, r, T, sh, body, i + 2, body->len);
  return b;
}

// A row body that starts with lets (uniform over the block) and then a
// long reduction; few rows.
static bool row_reduction_fits(Sk *s, KExpr *const *n, int k, const Vec *body, int *at, Reduction *r) {
  int64_t rows;
  if (!kir_eval_i64(prod(s, n, 0, k), NULL, &rows) || rows > s->t->reduce_rows) return false;
  int i = 0;
  while (i < body->len && VEC_AT(*body, KStmt, i)->kind == KS_LET && !find_reduction(s, body, i, r)) i++;
  if (!find_reduction(s, body, i, r) || !long_reduction(s, r)) return false;
  // the lets before it are the block's, outside its thread loops: none is assigned later
  for (int j = 0; j < i; j++) {
    Vec rest = {.data = body->data + i, .len = body->len - i};
    if (assigns(&rest, VEC_AT(*body, KStmt, j)->var)) return false;
  }
  *at = i;
  return true;
}

static KStmt *map_loop(Sk *s, KStmt *l) {
  KExpr *n[SK_MAX_RANK];
  int vars[SK_MAX_RANK], at;
  Vec *body;
  int k = parallel_nest(l, n, vars, &body);
  Reduction r;
  if (row_reduction_fits(s, n, k, body, &at, &r)) return row_reductions(s, n, vars, k, body, at, &r);
  LaneSum ls;
  if (lane_sum_fits(s, body, &ls)) return lane_rows(s, n, vars, k, body, &ls);
  ChunkSum cs;
  if (chunk_sum_fits(s, body, &cs)) return chunk_rows(s, n, vars, k, body, &cs);
  KExpr *N = prod(s, n, 0, k), *gb, *gt;
  int64_t T = s->t->block_threads, c;
  if (kir_eval_i64(N, NULL, &c) && c < T) T = c < 1 ? 1 : (c + s->t->warp_size - 1) / s->t->warp_size * s->t->warp_size;
  Vec *tb;
  KStmt *b = launch(s, ceil_div(s, N, T), T, &gb, &gt, &tb);
  KExpr *g = sk_let(s, tb, "g", sk_add(s, sk_mul(s, gb, sk_i(s, T)), gt));
  Vec *in = tb;
  if (!is_multiple(N, T)) in = &kir_if(s->p, in, sk_lt(s, g, N))->body;
  unflatten(s, in, g, vars, n, k);
  for (int i = 0; i < body->len; i++) vec_push(s->p->arena, in, body->data[i]);
  return b;
}

void sk_map_gpu(Sk *s) {
  Vec old = s->k->body, *top = &s->k->body;
  bool *live = arena_alloc(s->p->arena, (size_t)old.len + 1);
  live_cuts(s, &old, live);
  *top = (Vec){0};
  int run = 0;
  for (int i = 0; i < old.len; i++) {
    KStmt *l = VEC_AT(old, KStmt, i);
    Vec caps = {0};
    if (l->kind == KS_FOR && l->map == KMAP_GPU_BLOCK) { // a recipe's launch, mapped already
      map_run(s, &old, run, i, live, top);
      vec_push(s->p->arena, top, l);
      run = i + 1;
      continue;
    }
    if (l->kind != KS_FOR || !l->parallel || live[i]) continue;
    kir_loop_captures(s->p, s->k, l, &caps);
    if (caps.len) continue;
    map_run(s, &old, run, i, live, top);
    vec_push(s->p->arena, top, map_loop(s, l));
    run = i + 1;
  }
  map_run(s, &old, run, old.len, live, top);
  for (int i = 0; i < top->len; i++) {
    KStmt *b = VEC_AT(*top, KStmt, i);
    kir_loop_captures(s->p, s->k, b, &b->captures);
  }
}

// ---- recipes ---------------------------------------------------------------------------------------------------
// The GEMM-shaped ops are tiled GEMMs (schedule_gpu_gemm.c).
static const struct {
  KirOpKind op;
  bool (*recipe)(Sk *s);
} gpu_strategies[] = {
    {KOP_MATMUL, sk_gpu_matmul},
    {KOP_MATMUL_BIAS, sk_gpu_matmul},
    {KOP_MATMUL_RESIDUAL, sk_gpu_matmul},
    {KOP_MATMUL_RELU, sk_gpu_matmul},
    {KOP_MATMUL_RELU_MASK, sk_gpu_matmul},
    {KOP_CONV2D, sk_gpu_conv2d},
    {KOP_CONV2D_BIAS, sk_gpu_conv2d},
    {KOP_CONV2D_GRAD_INPUT, sk_gpu_conv2d_grad_input},
    {KOP_CONV2D_GRAD_WEIGHT, sk_gpu_conv2d_grad_weight},
};

void sk_gpu_recipe(Sk *s) {
  if (!s->k->op) return;
  for (size_t i = 0; i < sizeof gpu_strategies / sizeof *gpu_strategies; i++)
    if (gpu_strategies[i].op == s->k->op->kind) {
      gpu_strategies[i].recipe(s);
      return;
    }
}
