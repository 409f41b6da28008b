// schedule_merge.c — the cpu schedule's last step (schedule.h, 4.): runs of
// independent small kernels become one kernel whose single chunk loop runs
// their work as tasks, so the pool publishes one region for them instead of
// one per kernel, and kernels with no chunk loop (a squared norm's sum,
// whose float order is serial) run at the same time as the others.
//
// A task is a whole serial kernel, or one chunk of a kernel that is a
// single chunk loop (its iterations [c * grain, min(n, (c + 1) * grain))).
// Each task computes what its kernel computed, in the same order, and the
// members share no buffer that one of them writes, so the results are the
// kernels' own whichever thread runs which task and in whatever order.
//
//   parallel for t0 < T @chunk(1) {
//     if (t0 < 1) { <k40_sum's statements> }
//     else { if (t0 < 65) { let c = t0 - 1; for j < min(4, 256 - c * 4) {
//                             let i0 = c * 4 + j; <k74's loop body> } }
//     else { ... } }
//   }
//
// Serial members come first, the largest first, so the caller (whose
// range of tasks starts at 0, pool.c) takes the longest task while the
// others work through their ranges of chunks and then steal from its;
// chunked members of one constant task count interleave (same_tasks). The
// region's grain is T (one chunk: the caller runs it alone) when the
// members' work together is below chunk_min_work.
#include "schedule_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Kernels looked at past the first of a group: bounds the pass's work.
// Members of one group: its chunk loop's body is one function holding every
// member's code, which the module's sharing of identical kernels cannot
// share and LLVM's passes compile in more than linear time (grouping every
// run of up to 65 kernels took char_transformer's build from 1.4 to 2.8 s).
// So a group has at most MERGE_MAX members, and is kept only when one of
// them is serial: that is what pays (a squared norm's sum that would run on
// one thread while the others wait).
enum { MERGE_WINDOW = 64, MERGE_MAX = 8 };

typedef struct Member {
  KirKernel *k;
  bool chunked;  // its body is one chunk loop; else it has no chunk loop at all
  int64_t work;  // block_work of the whole kernel (-1: not a constant)
  int order;     // position in the program
} Member;

static bool plain_block(const Vec *blk, bool *has_chunk) {
  for (int i = 0; i < blk->len; i++) {
    const KStmt *st = VEC_AT(*blk, KStmt, i);
    if (st->kind == KS_CALL || st->kind == KS_CHECK || st->kind == KS_BARRIER) return false;
    if (st->kind == KS_FOR && st->map != KMAP_SERIAL && st->map != KMAP_VECTOR) {
      if (st->map != KMAP_CHUNK) return false;
      *has_chunk = true;
    }
    if (!plain_block(&st->body, has_chunk) || !plain_block(&st->els, has_chunk)) return false;
  }
  return true;
}

// A kernel that may be a group's member: no op record (a recipe's), no
// library call (the library runs on the pool itself), no check (a checked
// program reports the first failing check; tasks would race for it), no
// barrier; either one top-level chunk loop or no chunk loop at all.
static bool member_of(KirKernel *k, int order, Member *m) {
  bool has_chunk = false;
  if (k->op || !k->body.len || !plain_block(&k->body, &has_chunk)) return false;
  const KStmt *first = VEC_AT(k->body, KStmt, 0);
  bool chunked = k->body.len == 1 && first->kind == KS_FOR && first->map == KMAP_CHUNK, inner = false;
  if (has_chunk && !chunked) return false;
  if (chunked && plain_block(&first->body, &inner) && inner) return false; // a chunk loop in it
  *m = (Member){.k = k, .chunked = chunked, .work = sk_block_work(&k->body), .order = order};
  return true;
}

static bool has_check(const Vec *blk) {
  for (int i = 0; i < blk->len; i++) {
    const KStmt *st = VEC_AT(*blk, KStmt, i);
    if (st->kind == KS_CHECK || has_check(&st->body) || has_check(&st->els)) return true;
  }
  return false;
}

// ---- buffer sets --------------------------------------------------------------------------
typedef struct Access {
  bool *reads, *writes; // one per program buffer
} Access;

static Access access_new(KirProgram *p) {
  bool *b = arena_alloc(p->arena, (size_t)(2 * p->bufs.len + 1));
  return (Access){b, b + p->bufs.len};
}

// What k writes, and as read every other buffer it takes: a kernel may take
// one only for its shape (dropout_mask), and the memory plan starts a
// temporary's life at the first kernel that takes it, which must write it.
static void access_add(Access *a, const KirKernel *k) {
  for (int i = 0; i < k->body.len; i++) kir_stmt_access(VEC_AT(k->body, KStmt, i), a->reads, a->writes);
  for (int i = 0; i < k->params.len; i++) a->reads[kir_param(k, i)] = true;
}

// Whether kernel k (its accesses ka) touches a buffer of set a with one of the two writing it.
static bool conflicts(const KirKernel *k, const Access *ka, const Access *a) {
  for (int i = 0; i < k->params.len; i++) {
    int b = kir_param(k, i);
    if ((ka->writes[b] && (a->reads[b] || a->writes[b])) || (ka->reads[b] && a->writes[b])) return true;
  }
  return false;
}

static void access_union(const KirKernel *k, const Access *ka, Access *a) {
  for (int i = 0; i < k->params.len; i++) {
    int b = kir_param(k, i);
    a->reads[b] |= ka->reads[b], a->writes[b] |= ka->writes[b];
  }
}

// ---- copying a member into the group ----------------------------------------------------------
typedef struct Copy {
  Sk *s;
  KirKernel *to;
  int *var; // member var -> group var
} Copy;

static KExpr *copy_expr(Copy *c, const KExpr *e) {
  if (!e) return NULL;
  KExpr *x = arena_alloc(c->s->p->arena, sizeof *x);
  *x = *e;
  if (e->kind == KE_VAR) x->var = c->var[e->var];
  x->a = copy_expr(c, e->a), x->b = copy_expr(c, e->b), x->c = copy_expr(c, e->c);
  return x;
}

static void copy_block(Copy *c, Vec *to, const Vec *from);

static KStmt *copy_stmt(Copy *c, const KStmt *st) {
  KStmt *x = arena_alloc(c->s->p->arena, sizeof *x);
  *x = *st;
  if (st->kind == KS_FOR || st->kind == KS_LET || st->kind == KS_ASSIGN) x->var = c->var[st->var];
  x->n = copy_expr(c, st->n), x->grain = copy_expr(c, st->grain);
  x->index = copy_expr(c, st->index), x->value = copy_expr(c, st->value), x->cond = copy_expr(c, st->cond);
  x->captures = (Vec){0}, x->body = (Vec){0}, x->els = (Vec){0};
  copy_block(c, &x->body, &st->body);
  copy_block(c, &x->els, &st->els);
  return x;
}

static void copy_block(Copy *c, Vec *to, const Vec *from) {
  for (int i = 0; i < from->len; i++) vec_push(c->s->p->arena, to, copy_stmt(c, VEC_AT(*from, KStmt, i)));
}

// The group's variable for each of m's: its name's letters and the group's index.
static Copy member_vars(Sk *s, KirKernel *to, const KirKernel *m, int loop_var_as_let) {
  Copy c = {s, to, arena_alloc(s->p->arena, sizeof(int) * (size_t)(m->vars.len + 1))};
  for (int i = 0; i < m->vars.len; i++) {
    const KirVar *v = VEC_AT(m->vars, KirVar, i);
    size_t len = strcspn(v->name, "0123456789");
    const char *name = arena_printf(s->p->arena, "%.*s%d", (int)len, v->name, to->vars.len);
    c.var[i] = kir_var_new(s->p, to, name, v->dtype, v->is_loop && i != loop_var_as_let);
  }
  return c;
}

// m's task number c (an i64 expression) into blk.
static KExpr *member_tasks(Sk *s, const Member *m) {
  if (!m->chunked) return sk_i(s, 1);
  const KStmt *l = VEC_AT(m->k->body, KStmt, 0);
  return sk_div(s, sk_add(s, l->n, sk_sub(s, l->grain, sk_i(s, 1))), l->grain);
}

static void member_task(Sk *s, KirKernel *g, const Member *m, Vec *blk, KExpr *c) {
  if (!m->chunked) {
    Copy cp = member_vars(s, g, m->k, -1);
    copy_block(&cp, blk, &m->k->body);
    return;
  }
  const KStmt *l = VEC_AT(m->k->body, KStmt, 0);
  Copy cp = member_vars(s, g, m->k, l->var);
  KExpr *grain = copy_expr(&cp, l->grain), *n = copy_expr(&cp, l->n);
  KExpr *lo = sk_let(s, blk, "lo", sk_mul(s, c, grain)), *j;
  KStmt *in = sk_loop(s, blk, "j", kir_bin(s->p, KB_MIN, grain, sk_sub(s, n, lo)), l->parallel, &j);
  kir_let(s->p, &in->body, cp.var[l->var], sk_add(s, lo, j));
  copy_block(&cp, &in->body, &l->body);
}

static void add_covers(Sk *s, KirKernel *g, const KirKernel *k) {
  for (int i = 0; i < k->covers.len; i++) vec_push(s->p->arena, &g->covers, k->covers.data[i]);
  int node, at = 0;
  if (k->covers.len || sscanf(k->name, "k%d_%n", &node, &at) != 1 || !at) return;
  KirCover *cv = arena_alloc(s->p->arena, sizeof *cv);
  *cv = (KirCover){.span = k->span, .op = arena_strdup(s->p->arena, k->name + at), .node = node};
  int col;
  if (k->span.file) span_linecol(k->span, &cv->line, &col);
  vec_push(s->p->arena, &g->covers, cv);
}

static int by_work(const void *a, const void *b) {
  const Member *x = a, *y = b;
  if (x->chunked != y->chunked) return x->chunked ? 1 : -1;
  if (!x->chunked) {
    int64_t wx = x->work < 0 ? INT64_MAX : x->work, wy = y->work < 0 ? INT64_MAX : y->work;
    if (wx != wy) return wx > wy ? -1 : 1;
  }
  return x->order - y->order;
}

// A member's number of tasks when it is a constant, else -1.
static int64_t task_count(const Member *m) {
  if (!m->chunked) return 1;
  const KStmt *l = VEC_AT(m->k->body, KStmt, 0);
  if (l->n->kind != KE_CONST || l->grain->kind != KE_CONST || l->grain->i < 1) return -1;
  return (l->n->i + l->grain->i - 1) / l->grain->i;
}

// Chunked members with the same constant number of tasks interleave: task
// base + c * w + q is member q's chunk c. The pool gives each thread a
// contiguous range of a region's tasks first (pool.c), so each thread then
// gets the same part of every such member's rows: fc1.b's bias gradient (64
// chunks of 4 columns of dy) and fc2.w's update (64 chunks of 2 rows) split
// as the GEMMs that wrote their operands did, where one after the other
// each went to one thread. So after the serial members (the largest
// first), those of one count are put next to each other, in the order the
// first of them ran; same_tasks says how many from i on interleave.
static void group_counts(Member *ms, int n) {
  Member out[MERGE_MAX];
  bool used[MERGE_MAX] = {0};
  int o = 0;
  for (int i = 0; i < n; i++) {
    if (used[i]) continue;
    out[o++] = ms[i], used[i] = true;
    int64_t c = task_count(&ms[i]);
    for (int j = i + 1; j < n && ms[i].chunked && c >= 2; j++)
      if (!used[j] && ms[j].chunked && task_count(&ms[j]) == c) out[o++] = ms[j], used[j] = true;
  }
  memcpy(ms, out, sizeof *ms * (size_t)n);
}

static int same_tasks(const Member *ms, int i, int n) {
  int64_t c = task_count(&ms[i]);
  int w = 1;
  while (ms[i].chunked && c >= 2 && i + w < n && ms[i + w].chunked && task_count(&ms[i + w]) == c) w++;
  return w;
}

static KirKernel *merge(Sk *s, Member *ms, int n) {
  qsort(ms, (size_t)n, sizeof *ms, by_work);
  group_counts(ms, n);
  KirKernel *g = arena_alloc(s->p->arena, sizeof *g);
  int first = 0; // the member that ran first: the group's name and span
  for (int i = 1; i < n; i++)
    if (ms[i].order < ms[first].order) first = i;
  g->name = arena_printf(s->p->arena, "%s_group", ms[first].k->name);
  g->span = ms[first].k->span;
  int64_t work = 0;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < ms[i].k->params.len; j++) kir_kernel_use(s->p, g, kir_param(ms[i].k, j));
    add_covers(s, g, ms[i].k);
    work = work < 0 || ms[i].work < 0 ? -1 : work + ms[i].work;
  }
  KExpr *total = sk_i(s, 0), *t;
  Sk gs = {.p = s->p, .k = g, .t = s->t};
  for (int i = 0; i < n; i++) total = sk_add(&gs, total, member_tasks(&gs, &ms[i]));
  KStmt *loop = sk_loop(&gs, &g->body, "task", total, true, &t);
  Vec *blk = &loop->body;
  KExpr *base = sk_i(&gs, 0);
  for (int i = 0; i < n;) {
    int w = same_tasks(ms, i, n); // members i..i+w-1 interleave
    KExpr *end = sk_add(&gs, base, sk_mul(&gs, sk_i(&gs, w), member_tasks(&gs, &ms[i])));
    Vec *task = blk;
    if (i + w < n) {
      KStmt *br = kir_if(s->p, blk, sk_lt(&gs, t, end));
      task = &br->body, blk = &br->els;
    }
    if (w == 1) {
      member_task(&gs, g, &ms[i], task, ms[i].chunked ? sk_let(&gs, task, "c", sk_sub(&gs, t, base)) : NULL);
    } else {
      KExpr *r = sk_let(&gs, task, "r", sk_sub(&gs, t, base));
      KExpr *c = sk_let(&gs, task, "c", sk_div(&gs, r, sk_i(&gs, w)));
      KExpr *which = sk_let(&gs, task, "m", sk_mod(&gs, r, sk_i(&gs, w)));
      for (int q = 0; q < w; q++) {
        Vec *mt = task;
        if (q < w - 1) {
          KStmt *br = kir_if(s->p, task, sk_lt(&gs, which, sk_i(&gs, q + 1)));
          mt = &br->body, task = &br->els;
        }
        member_task(&gs, g, &ms[i + q], mt, c);
      }
    }
    base = end;
    i += w;
  }
  loop->map = KMAP_CHUNK;
  bool small = work >= 0 && work < s->t->chunk_min_work;
  loop->grain = small ? total : sk_i(&gs, 1);
  kir_loop_captures(s->p, g, loop, &loop->captures);
  return g;
}

// ---- a long sum's chunks and an update of the same positions -----------------------------------
// A split long sum (kir.h, "Long sums are chunked": its top-level chunk
// loop `for c < NC { let c0 = c * C; let cn = min(P - c0, C); .. }`) and a
// later elementwise kernel of P iterations that reads a buffer the sum
// reads (SGD's update of a weight whose gradient's squared norm the sum
// is): the elementwise body runs in the sum's tasks, over the chunk's
// positions c0 .. c0 + cn - 1 right after the chunk's sum, so the gradient
// is read from memory once and from L1 the second time. Each element is
// computed as before and the sum is untouched, so no bit changes.
//
//   parallel for c0 < 25 @chunk(1) {
//     let c01 = c0 * 8192; let cn2 = min(200704 - c01, 8192); <the chunk's sum>
//     k40_sum_part35[c0] = sum27
//     for j < cn2 { let f = c01 + j; <k74's body, (i0 * 784) + i1 read as f> }
//   }
//
// The elementwise kernel is one loop nest `for i0 < R { for i1 < Q { B } }`
// of constants, R * Q = P (or one loop of P), whose body uses its indices
// only as i0 * Q + i1: its iterations are then positions. It must conflict
// with neither the sum nor any kernel between the two, which it moves past,
// and nothing with a check may lie between (a checked program's first
// failure stays first).
typedef struct Flat {
  int i0, i1;   // the nest's loop variables (i1 -1: a single loop)
  int64_t q;    // the inner trip count
  int f;        // the position's variable, once chosen
  bool bad;     // an index used other than as i0 * q + i1
} Flat;

static bool flat_index(const Flat *fl, const KExpr *e) {
  if (fl->i1 < 0) return e->kind == KE_VAR && e->var == fl->i0;
  const KExpr *m = e->a;
  return e->kind == KE_BINARY && e->bin == KB_ADD && e->b->kind == KE_VAR && e->b->var == fl->i1 &&
         m->kind == KE_BINARY && m->bin == KB_MUL && m->a->kind == KE_VAR && m->a->var == fl->i0 &&
         m->b->kind == KE_CONST && m->b->i == fl->q;
}

// e with every i0 * q + i1 replaced by f (f < 0: only checked, fl->bad set
// where an index appears otherwise); copied with c's variables.
static KExpr *flat_expr(Copy *c, Flat *fl, const KExpr *e) {
  if (!e) return NULL;
  if (flat_index(fl, e)) return fl->f < 0 ? NULL : kir_varref(c->s->p, c->to, fl->f);
  if (e->kind == KE_VAR && (e->var == fl->i0 || e->var == fl->i1)) fl->bad = true;
  if (fl->f < 0) {
    flat_expr(c, fl, e->a), flat_expr(c, fl, e->b), flat_expr(c, fl, e->c);
    return NULL;
  }
  KExpr *x = arena_alloc(c->s->p->arena, sizeof *x);
  *x = *e;
  if (e->kind == KE_VAR) x->var = c->var[e->var];
  x->a = flat_expr(c, fl, e->a), x->b = flat_expr(c, fl, e->b), x->c = flat_expr(c, fl, e->c);
  return x;
}

static void flat_block(Copy *c, Flat *fl, Vec *to, const Vec *from) {
  for (int i = 0; i < from->len; i++) {
    const KStmt *st = VEC_AT(*from, KStmt, i);
    if (fl->f < 0) {
      flat_expr(c, fl, st->n), flat_expr(c, fl, st->index), flat_expr(c, fl, st->value), flat_expr(c, fl, st->cond);
      if (st->kind == KS_FOR && st->map != KMAP_SERIAL) fl->bad = true;
      if (st->kind == KS_CALL || st->kind == KS_CHECK || st->kind == KS_BARRIER) fl->bad = true;
      flat_block(c, fl, NULL, &st->body), flat_block(c, fl, NULL, &st->els);
      continue;
    }
    KStmt *x = arena_alloc(c->s->p->arena, sizeof *x);
    *x = *st;
    if (st->kind == KS_FOR || st->kind == KS_LET || st->kind == KS_ASSIGN) x->var = c->var[st->var];
    x->n = flat_expr(c, fl, st->n), x->grain = flat_expr(c, fl, st->grain);
    x->index = flat_expr(c, fl, st->index), x->value = flat_expr(c, fl, st->value);
    x->cond = flat_expr(c, fl, st->cond);
    x->captures = (Vec){0}, x->body = (Vec){0}, x->els = (Vec){0};
    flat_block(c, fl, &x->body, &st->body), flat_block(c, fl, &x->els, &st->els);
    vec_push(c->s->p->arena, to, x);
  }
}

// The elementwise kernel's nest of P positions: its innermost body, or NULL.
static const Vec *flat_nest(const KirKernel *e, int64_t P, Flat *fl) {
  if (e->op || e->body.len != 1) return NULL;
  const KStmt *l0 = VEC_AT(e->body, KStmt, 0), *l1;
  if (l0->kind != KS_FOR || !l0->parallel || l0->n->kind != KE_CONST) return NULL;
  *fl = (Flat){.i0 = l0->var, .i1 = -1, .q = 1, .f = -1};
  const Vec *body = &l0->body;
  if (body->len == 1 && (l1 = VEC_AT(*body, KStmt, 0))->kind == KS_FOR && l1->parallel && l1->n->kind == KE_CONST &&
      l1->map == KMAP_SERIAL) {
    fl->i1 = l1->var, fl->q = l1->n->i, body = &l1->body;
  }
  if (l0->n->i * fl->q != P) return NULL;
  flat_block(&(Copy){0}, fl, NULL, body);
  return fl->bad ? NULL : body;
}

// The sum's chunk loop, its c0 and cn variables and its count P, or NULL.
static KStmt *sum_chunks(const KirKernel *k, int *c0, int *cn, int64_t *P) {
  if (k->op || !k->body.len) return NULL;
  KStmt *l = VEC_AT(k->body, KStmt, 0);
  if (l->kind != KS_FOR || l->map != KMAP_CHUNK || l->body.len < 2) return NULL;
  const KStmt *a = VEC_AT(l->body, KStmt, 0), *b = VEC_AT(l->body, KStmt, 1);
  if (a->kind != KS_LET || b->kind != KS_LET) return NULL;
  const KExpr *x = a->value, *y = b->value;
  bool first = x->kind == KE_BINARY && x->bin == KB_MUL && x->a->kind == KE_VAR && x->a->var == l->var &&
               x->b->kind == KE_CONST && x->b->i == KIR_SUM_CHUNK;
  bool count = y->kind == KE_BINARY && y->bin == KB_MIN && y->b->kind == KE_CONST && y->b->i == KIR_SUM_CHUNK &&
               y->a->kind == KE_BINARY && y->a->bin == KB_SUB && y->a->a->kind == KE_CONST && y->a->b->kind == KE_VAR &&
               y->a->b->var == a->var;
  if (!first || !count) return NULL;
  *c0 = a->var, *cn = b->var, *P = y->a->a->i;
  return l;
}

// Whether e reads a buffer that k reads.
static bool shares_read(const KirProgram *p, const Access *ka, const Access *ea, const KirKernel *e) {
  (void)p;
  for (int i = 0; i < e->params.len; i++) {
    int b = kir_param(e, i);
    if (ka->reads[b] && ea->reads[b] && !ea->writes[b]) return true;
  }
  return false;
}

static void fuse_into_sum(Sk *s, KirKernel *k, KStmt *l, int c0, int cn, KirKernel *e, Flat fl, const Vec *body) {
  Copy cp = member_vars(s, k, e, -1);
  Sk ks = {.p = s->p, .k = k, .t = s->t};
  KExpr *j;
  KStmt *in = sk_loop(&ks, &l->body, "j", kir_varref(s->p, k, cn), true, &j);
  fl.f = kir_var_new(s->p, k, arena_printf(s->p->arena, "f%d", k->vars.len), DT_I64, false);
  kir_let(s->p, &in->body, fl.f, sk_add(&ks, kir_varref(s->p, k, c0), j));
  flat_block(&cp, &fl, &in->body, body);
  for (int i = 0; i < e->params.len; i++) kir_kernel_use(s->p, k, kir_param(e, i));
  if (!k->covers.len) add_covers(s, k, k); // the sum's own, from its name
  add_covers(s, k, e);
  l->captures = (Vec){0};
  kir_loop_captures(s->p, k, l, &l->captures);
}

void sk_fuse_sum_updates(Sk *s) {
  KirProgram *p = s->p;
  Vec out = {0};
  bool *gone = arena_alloc(p->arena, (size_t)p->kernels.len + 1);
  for (int i = 0; i < p->kernels.len; i++) {
    KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    int c0, cn;
    int64_t P;
    KStmt *l = gone[i] ? NULL : sum_chunks(k, &c0, &cn, &P);
    if (!gone[i]) vec_push(p->arena, &out, k);
    if (!l) continue;
    Access ka = access_new(p), passed = access_new(p);
    access_add(&ka, k);
    for (int j = i + 1; j < p->kernels.len && j <= i + MERGE_WINDOW; j++) {
      KirKernel *e = VEC_AT(p->kernels, KirKernel, j);
      if (has_check(&e->body)) break;
      Access ea = access_new(p);
      access_add(&ea, e);
      Flat fl;
      const Vec *body = gone[j] ? NULL : flat_nest(e, P, &fl);
      if (body && shares_read(p, &ka, &ea, e) && !conflicts(e, &ea, &ka) && !conflicts(e, &ea, &passed)) {
        fuse_into_sum(s, k, l, c0, cn, e, fl, body);
        gone[j] = true;
        break;
      }
      access_union(e, &ea, &passed);
    }
  }
  p->kernels = out;
}

// ---- the pass --------------------------------------------------------------------------------
void sk_merge_kernels(Sk *s) {
  KirProgram *p = s->p;
  int nk = p->kernels.len;
  Vec out = {0};
  bool *done = arena_alloc(p->arena, (size_t)nk + 1);
  Member *ms = arena_alloc(p->arena, sizeof *ms * (size_t)(MERGE_WINDOW + 1));
  for (int i = 0; i < nk; i++) {
    if (done[i]) continue;
    KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    done[i] = true;
    int n = 0;
    if (!member_of(k, i, &ms[n])) {
      vec_push(p->arena, &out, k);
      continue;
    }
    n++;
    Access group = access_new(p), skipped = access_new(p), ka = access_new(p);
    access_add(&ka, k);
    access_union(k, &ka, &group);
    int picked[MERGE_WINDOW + 1] = {i};
    for (int j = i + 1; j < nk && j <= i + MERGE_WINDOW && n < MERGE_MAX; j++) {
      if (done[j]) continue;
      KirKernel *kj = VEC_AT(p->kernels, KirKernel, j);
      if (has_check(&kj->body)) break; // nothing moves past a check (below)
      Access aj = access_new(p);
      access_add(&aj, kj);
      if (member_of(kj, j, &ms[n]) && !conflicts(kj, &aj, &group) && !conflicts(kj, &aj, &skipped)) {
        access_union(kj, &aj, &group);
        picked[n++] = j;
      } else {
        access_union(kj, &aj, &skipped);
      }
    }
    bool serial = false; // a member with no chunk loop, which would run alone
    for (int m = 0; m < n; m++) serial |= !ms[m].chunked;
    if (n < 2 || !serial) {
      vec_push(p->arena, &out, k);
      continue;
    }
    for (int m = 0; m < n; m++) done[picked[m]] = true;
    vec_push(p->arena, &out, merge(s, ms, n));
  }
  p->kernels = out;
}
