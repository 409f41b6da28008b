// report_gpu.c — the launches section of `mlc build --report` for the gpu
// programs (--target cuda): how much parallelism every launch of
// train_step, eval and predict has, read off the scheduled kernel IR, so
// that it can be checked without a GPU.
//
// A launch is a top-level gpu-block loop (the CUDA printer's one kernel
// launch per such loop). Its grid is the loop's trip count at the batch
// size, its block the largest gpu-thread trip count inside it. A thread's
// chain is what one thread runs in order: `trips`, the serial loop
// iterations it executes (block-level loops included: every thread runs
// them), and `updates`, its assignments and mma statements (an
// accumulator's add or fma: the terms it sums one after another). Counted
// for two threads, thread 0 of block 0 and the last thread of the last
// block, and the longer taken. Trip counts are evaluated with the thread's
// own indices; one that depends on an enclosing serial loop is taken at
// that loop's midpoint; an `if` whose condition reads memory counts its
// longer branch.
//
// The rule (a launch is flagged with `!`): its thread's chain is longer
// than REPORT_CHAIN_MAX updates scaled by its threads over REPORT_FILL
// (132 SMs x 128 threads, four warps each, when it has more: a launch of several waves of
// full blocks may run longer chains, each wave still fills the GPU), or its work (threads x updates) is more
// than REPORT_WORK_MAX with fewer than REPORT_MIN_THREADS threads. Both say
// a launch that leaves an H100 / H200 (132 SMs of 2048 threads) nearly
// idle on the step's critical path. tests/backend/cuda/parallelism.py holds
// every example to it at its recipe's batch.
#include "report_internal.h"

#include <string.h>

enum { REPORT_CHAIN_MAX = 8192, REPORT_MIN_THREADS = 4096, REPORT_FILL = 132 * 128 };
#define REPORT_WORK_MAX ((int64_t)1 << 22)

typedef struct Chain {
  int64_t trips, updates;
} Chain;

static void chain_block(Eval *e, const Vec *blk, int64_t gt, int64_t mult, Chain *c);

static void chain_stmt(Eval *e, const KStmt *s, int64_t gt, int64_t mult, Chain *c) {
  int64_t v;
  switch (s->kind) {
  case KS_LET:
    e->bound[s->var] = report_ev(e, s->value, &v);
    if (e->bound[s->var]) e->vars[s->var] = v;
    break;
  case KS_ASSIGN: case KS_MMA: c->updates += mult; break;
  case KS_FOR: {
    if (s->map == KMAP_GPU_THREAD) { // this thread's iteration, if it has one
      if (!report_ev(e, s->n, &v) || gt >= v) break;
      e->vars[s->var] = gt, e->bound[s->var] = true;
      chain_block(e, &s->body, gt, mult, c);
      e->bound[s->var] = false;
      break;
    }
    if (!report_ev(e, s->n, &v) || v <= 0) break;
    c->trips += mult * v;
    e->vars[s->var] = (v - 1) / 2, e->bound[s->var] = true;
    chain_block(e, &s->body, gt, mult * v, c);
    e->bound[s->var] = false;
    break;
  }
  case KS_IF: {
    if (report_ev(e, s->cond, &v)) {
      chain_block(e, v ? &s->body : &s->els, gt, mult, c);
      break;
    }
    Chain a = {0}, b = {0};
    chain_block(e, &s->body, gt, mult, &a), chain_block(e, &s->els, gt, mult, &b);
    Chain *m = a.updates >= b.updates ? &a : &b;
    c->trips += m->trips, c->updates += m->updates;
    break;
  }
  default: break;
  }
}

static void chain_block(Eval *e, const Vec *blk, int64_t gt, int64_t mult, Chain *c) {
  for (int i = 0; i < blk->len; i++) chain_stmt(e, VEC_AT(*blk, KStmt, i), gt, mult, c);
}

static int64_t block_threads(const Eval *e, const Vec *blk) {
  int64_t t = 1, v;
  for (int i = 0; i < blk->len; i++) {
    const KStmt *s = VEC_AT(*blk, KStmt, i);
    if (s->kind == KS_FOR && s->map == KMAP_GPU_THREAD && report_ev(e, s->n, &v) && v > t) t = v;
    if (s->kind == KS_FOR || s->kind == KS_IF) {
      int64_t a = block_threads(e, &s->body), b = block_threads(e, &s->els);
      t = a > t ? a : t, t = b > t ? b : t;
    }
  }
  return t;
}

// Thread gt of block gb of launch L.
static Chain thread_chain(Eval *e, const KStmt *L, int64_t gb, int64_t gt) {
  Chain c = {0};
  e->vars[L->var] = gb, e->bound[L->var] = true;
  chain_block(e, &L->body, gt, 1, &c);
  e->bound[L->var] = false;
  return c;
}

static const char *num(char *buf, int64_t v) { // 1234567 -> "1,234,567"
  char t[32];
  int n = snprintf(t, sizeof t, "%lld", (long long)v), o = 0;
  for (int i = 0; i < n; i++) {
    if (i && t[i] != '-' && (n - i) % 3 == 0 && t[i - 1] != '-') buf[o++] = ',';
    buf[o++] = t[i];
  }
  buf[o] = 0;
  return buf;
}

static int program_launches(FILE *f, const KirProgram *p, int64_t b) {
  if (!p) return 0;
  int flagged = 0;
  fprintf(f, "%s:\n  %-4s %-30s %-7s %9s %6s %11s %11s %11s\n", p->name, "#", "kernel", "launch", "grid", "block",
          "threads", "trips", "updates");
  for (int i = 0; i < p->kernels.len; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    Eval e = {.p = p, .syms = report_bind(p, b)};
    e.vars = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(k->vars.len + 1));
    e.bound = arena_alloc(p->arena, sizeof(bool) * (size_t)(k->vars.len + 1));
    int n = 0, at = 0;
    for (int j = 0; j < k->body.len; j++) {
      const KStmt *s = VEC_AT(k->body, KStmt, j);
      n += s->kind == KS_FOR && s->map == KMAP_GPU_BLOCK;
    }
    for (int j = 0; j < k->body.len; j++) {
      const KStmt *L = VEC_AT(k->body, KStmt, j);
      if (L->kind != KS_FOR || L->map != KMAP_GPU_BLOCK) continue;
      int64_t grid = 0, T = block_threads(&e, &L->body);
      report_ev(&e, L->n, &grid);
      Chain c = {0};
      if (grid > 0) {
        Chain c0 = thread_chain(&e, L, 0, 0), c1 = thread_chain(&e, L, grid - 1, T - 1);
        c = c1.updates > c0.updates || (c1.updates == c0.updates && c1.trips > c0.trips) ? c1 : c0;
      }
      int64_t threads = grid * T;
      // the chain bound: REPORT_CHAIN_MAX, times threads / REPORT_FILL past one full wave
      int64_t chain_max = threads > REPORT_FILL ? REPORT_CHAIN_MAX * threads / REPORT_FILL : REPORT_CHAIN_MAX;
      bool bad = c.updates > chain_max || (threads < REPORT_MIN_THREADS && threads * c.updates > REPORT_WORK_MAX);
      flagged += bad;
      char a[32], g[32], t[32], u[32], w[32], l[32];
      snprintf(l, sizeof l, "%d/%d", ++at, n);
      fprintf(f, "  %-4d %-30s %-7s %9s %6s %11s %11s %11s%s\n", i, k->name, l, num(a, grid), num(g, T), num(t, threads),
              num(u, c.trips), num(w, c.updates), bad ? "  !" : "");
    }
  }
  fprintf(f, "  flagged: %d\n\n", flagged);
  return flagged;
}

void report_launches(FILE *f, const KirProgram *const *progs, int n, int64_t b) {
  fprintf(f, "gpu launches at batch %lld: grid x block threads; a thread's chain: serial loop trips and updates\n"
             "(assignments and mma: the terms it adds in order), the longer of block 0's thread 0 and the last\n"
             "block's last thread; ! marks a launch whose chain passes %d updates (times threads / %d\n"
             "above %d threads), or whose work (threads x updates) passes %lld with fewer than %d threads\n\n",
          (long long)b, REPORT_CHAIN_MAX, REPORT_FILL, REPORT_FILL, (long long)REPORT_WORK_MAX, REPORT_MIN_THREADS);
  for (int i = 0; i < n; i++) program_launches(f, progs[i], b);
}
