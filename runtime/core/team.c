// team.c — held teams (team.h): a batch-1 predict is three short products
// (a few microseconds each at two threads), and a publication and join of
// the pool per product costs a large share of that; a team publishes once
// (mlc_pool_post) and keeps each worker polling its own slot, so a product
// costs the caller a store and a load of a line per worker.
//
// A slot's `job` goes EMPTY -> POSTED (the caller, payload written first)
// -> TAKEN (the worker, or the caller taking it back: one compare-exchange
// decides) -> DONE (the worker) -> EMPTY (the caller). The caller takes
// back every part still POSTED once its own is done, and waits only on a
// TAKEN one, which a running worker finishes: a run never depends on a
// worker arriving. `joined` / `left` hold the tickets of the jobs the
// slot's worker last joined and left; the caller posts a new job when the
// last is no longer live, or a slot's worker has left it or never came.
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "team.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

// Idle polling, as the pool's: HOT_NS on the CPU, then yielding between
// polls, and after SPIN_NS the worker goes back to the pool (to sleep).
// The first HOT_POLLS polls after a part (a few microseconds: the next
// product of a predict comes within that) go without a pause, which would
// delay seeing the next post by up to its latency (~0.1 us of a run of
// two 0.9 us parts).
enum { HOT_NS = 20 * 1000, SPIN_NS = 200 * 1000, HOT_POLLS = 4096 };

enum { EMPTY, POSTED, TAKEN, DONE };

typedef struct Slot {
  _Alignas(64) atomic_int job;
  atomic_uint joined, left; // the tickets of the jobs its worker last joined, left
  bool missed;              // the owner's: the worker is away, post again
  MlcRangeFn fn;            // the payload, written while job is EMPTY
  void *arg;                // the caller's, or `copy`
  int64_t part;
  _Alignas(64) unsigned char copy[MLC_TEAM_ARG_BYTES];
} Slot;

struct MlcTeam {
  MlcPool *pool;
  int nslots; // the pool's workers
  bool posted;
  unsigned ticket;  // of the last post
  int64_t posted_ns; // when
  Slot *slot;
};

static _Thread_local MlcTeam *current;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

MlcTeam *mlc_team_new(MlcPool *pool) {
  int n = mlc_pool_threads(pool) - 1;
  if (n < 1) return NULL;
  MlcTeam *t = calloc(1, sizeof *t);
  Slot *s = t ? aligned_alloc(64, (size_t)n * sizeof *s) : NULL;
  if (!s) return free(t), NULL;
  for (int i = 0; i < n; i++) {
    s[i] = (Slot){.part = 0};
    atomic_init(&s[i].job, EMPTY);
  }
  *t = (MlcTeam){.pool = pool, .nslots = n, .slot = s};
  return t;
}

static void noop(void *arg, int64_t b, int64_t e) { (void)arg, (void)b, (void)e; }

void mlc_team_free(MlcTeam *t) {
  if (!t) return;
  if (current == t) current = NULL;
  // a new job of two chunks retires the posted one: once it is published
  // no worker is inside the old one, and none enters it later
  if (t->posted && mlc_pool_live(t->pool, t->ticket)) mlc_parallel_for(t->pool, 2, 1, noop, NULL);
  free(t->slot), free(t);
}

MlcTeam *mlc_team_use(MlcTeam *t) {
  MlcTeam *was = current;
  current = t;
  return was;
}

MlcTeam *mlc_team_current(void) { return current; }

int mlc_team_parts(const MlcTeam *t, const MlcPool *pool) {
  return t && t->pool == pool ? t->nslots + 1 : 0;
}

// ---- the worker's side -------------------------------------------------------------------------
static bool take(Slot *s) {
  int want = POSTED;
  return atomic_compare_exchange_strong(&s->job, &want, TAKEN);
}

// The payload's lines, fetched together rather than one by one as the
// part first reads them (each is a miss to the caller's core).
static void prefetch_copy(const Slot *s) {
  for (size_t i = 0; i < sizeof s->copy; i += 64) __builtin_prefetch(s->copy + i);
}

// Runs the slot's parts until the job stops being live or SPIN_NS pass
// without one.
static void serve(const MlcTeam *t, Slot *s, unsigned ticket) {
  atomic_store(&s->joined, ticket);
  int64_t t0 = 0;
  for (int i = 1;; i++) {
    if (atomic_load_explicit(&s->job, memory_order_acquire) == POSTED && (prefetch_copy(s), take(s))) {
      s->fn(s->arg, s->part, s->part + 1);
      atomic_store_explicit(&s->job, DONE, memory_order_release);
      t0 = 0, i = 0;
      continue;
    }
    if (i > HOT_POLLS) cpu_relax();
    if (i % 16) continue;
    if (!mlc_pool_live(t->pool, ticket)) break;
    if (i % 256) continue;
    if (!t0) t0 = now_ns();
    int64_t idle = now_ns() - t0;
    if (idle > SPIN_NS) break;
    if (idle > HOT_NS) sched_yield();
  }
  atomic_store(&s->left, ticket);
}

// The posted job's chunk i: slot i.
static void team_job(void *vt, int64_t b, int64_t e) {
  MlcTeam *t = vt;
  unsigned ticket = t->ticket; // written before the job was published
  for (int64_t i = b; i < e; i++) serve(t, &t->slot[i], ticket);
}

// ---- the owner's side ---------------------------------------------------------------------------
// Whether slot i's worker is away from the live job for good: it left, or
// it never came within MISSED_NS (a worker that started after the job
// was published takes it for one it has seen, pool.c).
enum { MISSED_NS = 1000 * 1000 };
static bool away(const MlcTeam *t, const Slot *s) {
  return atomic_load(&s->left) == t->ticket ||
         (atomic_load(&s->joined) != t->ticket && now_ns() - t->posted_ns > MISSED_NS);
}

// Whether the first n slots have a worker, or one on its way, under a
// live job; else posts a new one (false when the pool cannot take it).
static bool hold(MlcTeam *t, int64_t n) {
  bool need = !t->posted || !mlc_pool_live(t->pool, t->ticket);
  for (int64_t i = 0; i < n && !need; i++)
    need = atomic_load(&t->slot[i].left) == t->ticket || t->slot[i].missed;
  if (!need) return true;
  t->posted = mlc_pool_post(t->pool, t->nslots, team_job, t, &t->ticket);
  t->posted_ns = now_ns();
  for (int64_t i = 0; i < t->nslots; i++) t->slot[i].missed = false;
  return t->posted;
}

void mlc_team_run(MlcTeam *t, int64_t nparts, MlcRangeFn fn, void *arg, size_t bytes) {
  int64_t w = nparts - 1; // parts for the slots
  if (w > t->nslots) w = t->nslots;
  if (w < 1 || !hold(t, w)) {
    for (int64_t i = 0; i < nparts; i++) fn(arg, i, i + 1);
    return;
  }
  for (int64_t i = 0; i < w; i++) {
    Slot *s = &t->slot[i];
    s->fn = fn, s->arg = arg, s->part = i + 1;
    if (bytes && bytes <= sizeof s->copy) memcpy(s->copy, arg, bytes), s->arg = s->copy;
    atomic_store_explicit(&s->job, POSTED, memory_order_release);
  }
  fn(arg, 0, 1);
  for (int64_t i = 1 + w; i < nparts; i++) fn(arg, i, i + 1); // more parts than threads
  for (int64_t i = 0; i < w; i++) {
    Slot *s = &t->slot[i];
    if (take(s)) { // its worker is not there: the caller's
      fn(arg, i + 1, i + 2);
      s->missed = away(t, s);
    } else {
      for (int k = 0; atomic_load_explicit(&s->job, memory_order_acquire) != DONE; k++)
        if (k < 1 << 12) cpu_relax();
        else sched_yield(); // the worker was descheduled mid-part
    }
    atomic_store_explicit(&s->job, EMPTY, memory_order_relaxed);
  }
}
