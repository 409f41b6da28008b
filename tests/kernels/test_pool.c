// test_pool.c — the thread pool's contract (runtime/core/pool.c): every
// chunk [k*grain, min(n, (k+1)*grain)) runs exactly once, whatever the
// thread count; per-chunk reductions are identical with 1..4 threads; a
// chunk that calls mlc_parallel_for runs it inline; back-to-back regions,
// regions after the workers went to sleep, and freeing a pool all work;
// chunk k of n goes first to thread floor(k*T/n), which claims its range
// front to back before it steals the others' from their backs.
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlc_rt.h"
#include "unit.h"

typedef struct Cover {
  int64_t n, grain;
  atomic_int *hits;   // [n]: times each item was visited
  atomic_int badcut;  // a chunk that was not [k*grain, min(n, (k+1)*grain))
  double *partial;    // [nchunks]: a per-chunk sum
} Cover;

static void cover(void *vc, int64_t b, int64_t e) {
  Cover *c = vc;
  if (b % c->grain || e != (b + c->grain < c->n ? b + c->grain : c->n)) atomic_store(&c->badcut, 1);
  double s = 0;
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1), s += 1.0 / (double)(i + 1);
  c->partial[b / c->grain] = s;
}

static void contract(void) {
  static const int64_t ns[] = {1, 2, 7, 64, 1000, 4097};
  static const int64_t grains[] = {1, 3, 64, 5000};
  for (int t = 1; t <= 4; t++) {
    MlcPool *pool = mlc_pool_new(t);
    int ok = pool && mlc_pool_threads(pool) == t;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
      for (size_t b = 0; b < sizeof grains / sizeof grains[0]; b++) {
        Cover c = {ns[a], grains[b], calloc((size_t)ns[a], sizeof(atomic_int)), 0,
                   calloc((size_t)ns[a], sizeof(double))};
        mlc_parallel_for(pool, c.n, c.grain, cover, &c);
        for (int64_t i = 0; i < c.n; i++) ok &= atomic_load(&c.hits[i]) == 1;
        ok &= !atomic_load(&c.badcut);
        free(c.hits), free(c.partial);
      }
    char name[80];
    snprintf(name, sizeof name, "%d threads: every chunk once, cut by n and grain alone", t);
    check(name, ok);
    mlc_pool_free(pool);
  }
}

static double chunked_sum(MlcPool *pool, int64_t n, int64_t grain) {
  Cover c = {n, grain, calloc((size_t)n, sizeof(atomic_int)), 0, calloc((size_t)n, sizeof(double))};
  mlc_parallel_for(pool, n, grain, cover, &c);
  double s = 0;
  for (int64_t k = 0; k < (n + grain - 1) / grain; k++) s += c.partial[k];
  free(c.hits), free(c.partial);
  return s;
}

static void reduction_is_thread_independent(void) {
  double ref = chunked_sum(NULL, 100003, 17);
  int ok = 1;
  for (int t = 1; t <= 4; t++) {
    MlcPool *pool = mlc_pool_new(t);
    double s = chunked_sum(pool, 100003, 17);
    ok &= !memcmp(&s, &ref, sizeof s);
    mlc_pool_free(pool);
  }
  check("a per-chunk reduction has the same bits with 1, 2, 3, 4 threads", ok);
}

typedef struct Nested {
  MlcPool *pool;
  atomic_long total;
} Nested;

static void inner(void *vn, int64_t b, int64_t e) {
  atomic_fetch_add(&((Nested *)vn)->total, e - b);
}

static void outer(void *vn, int64_t b, int64_t e) {
  Nested *n = vn;
  for (int64_t i = b; i < e; i++) mlc_parallel_for(n->pool, 10, 3, inner, n);
}

static void nested_runs_inline(void) {
  MlcPool *pool = mlc_pool_new(3);
  Nested n = {pool, 0};
  mlc_parallel_for(pool, 50, 1, outer, &n);
  check("mlc_parallel_for inside a chunk runs inline (50 x 10 items)", atomic_load(&n.total) == 500);
  mlc_pool_free(pool);
}

static void count(void *vn, int64_t b, int64_t e) { atomic_fetch_add((atomic_long *)vn, e - b); }

static void sleep_ms(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

static void back_to_back_and_asleep(void) {
  MlcPool *pool = mlc_pool_new(2);
  atomic_long total = 0;
  for (int i = 0; i < 100000; i++) mlc_parallel_for(pool, 8, 1, count, &total);
  check("100,000 regions back to back", atomic_load(&total) == 800000);
  total = 0;
  for (int i = 0; i < 20; i++) { // longer than the spin: the worker sleeps in between
    sleep_ms(2);
    mlc_parallel_for(pool, 1000, 10, count, &total);
  }
  check("regions after the workers went to sleep", atomic_load(&total) == 20000);
  mlc_pool_free(pool);
  sleep_ms(1);
  pool = mlc_pool_new(4);
  sleep_ms(2);
  mlc_pool_free(pool); // with every worker asleep
  check("a pool frees with its workers asleep", 1);
}


// ---- the first assignment -----------------------------------------------------------------------
// Each thread logs the chunks it ran, in order. Its first chunk waits until
// every thread has run one (or 10 s: a failure), so no thread can finish its
// own range and steal before every owner has claimed its front. Then the
// contract says: the caller's first chunk is 0; thread t's is the start of
// its range, ceil(t*n/T); an owner's chunks of its own range are a prefix of
// it, run in order, before any chunk of another's; a thread takes another's
// chunks from the back (decreasing); every chunk runs once.
enum { AFF_MAX_T = 4 };
typedef struct Aff {
  int64_t n;
  int t;
  pthread_mutex_t mu;
  pthread_t ids[AFF_MAX_T];
  int nids;
  int64_t *log[AFF_MAX_T];
  int64_t len[AFF_MAX_T];
  atomic_int started;
  atomic_int timed_out;
  int64_t wait_ms; // the first chunk's wait for the others; 0: 10 s
} Aff;

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int aff_slot(Aff *a) {
  pthread_mutex_lock(&a->mu);
  int i = 0;
  while (i < a->nids && !pthread_equal(a->ids[i], pthread_self())) i++;
  if (i == a->nids && i < AFF_MAX_T) a->ids[a->nids++] = pthread_self();
  pthread_mutex_unlock(&a->mu);
  return i;
}

static void aff_chunk(void *va, int64_t b, int64_t e) {
  Aff *a = va;
  int i = aff_slot(a);
  if (i >= AFF_MAX_T || e != b + 1) {
    atomic_store(&a->timed_out, 1);
    return;
  }
  a->log[i][a->len[i]++] = b;
  if (a->len[i] > 1) return;
  atomic_fetch_add(&a->started, 1);
  for (int64_t t0 = now_ms(); atomic_load(&a->started) < a->t;) {
    if (now_ms() - t0 > (a->wait_ms ? a->wait_ms : 10000)) {
      atomic_store(&a->timed_out, 1);
      break;
    }
    sched_yield(); // 4 threads on fewer cores
  }
}

static int64_t range_start(int64_t t, int64_t n, int64_t threads) { return (t * n + threads - 1) / threads; }

// Whether thread i's log keeps the contract for the range it owns (the
// one its first chunk starts), given every chunk's runner in `by`.
static bool aff_log_ok(const Aff *a, int i, const int *by) {
  int64_t n = a->n, T = a->t, r = 0;
  while (r < T && range_start(r, n, T) != a->log[i][0]) r++;
  if (r == T) return false;
  int64_t lo = range_start(r, n, T), hi = range_start(r + 1, n, T), j = 0;
  for (; j < a->len[i] && a->log[i][j] == lo + j; j++) // own: a prefix, in order
    if (lo + j >= hi) return false;
  for (int64_t k = lo + j; k < hi; k++)
    if (by[k] == i) return false; // its own chunk after a steal
  for (int64_t q = j; q < a->len[i]; q++) {
    int64_t k = a->log[i][q];
    if (k >= lo && k < hi) return false;
    for (int64_t p = q + 1; p < a->len[i]; p++) { // the same victim's: decreasing
      int64_t l = a->log[i][p];
      int64_t v = 0;
      while (range_start(v + 1, n, T) <= k) v++;
      if (l >= range_start(v, n, T) && l < range_start(v + 1, n, T) && l > k) return false;
    }
  }
  return true;
}

// by[k] = the slot of the thread that ran chunk k; false unless every
// chunk of [0, n) ran exactly once.
static bool aff_owners(const Aff *a, int *by) {
  bool ok = true;
  for (int64_t k = 0; k < a->n; k++) by[k] = -1;
  for (int i = 0; i < a->nids; i++)
    for (int64_t q = 0; q < a->len[i]; q++) {
      int64_t k = a->log[i][q];
      ok &= k >= 0 && k < a->n && by[k] == -1;
      if (k >= 0 && k < a->n) by[k] = i;
    }
  for (int64_t k = 0; k < a->n; k++) ok &= by[k] >= 0;
  return ok;
}

static void first_assignment(void) {
  static const int64_t ns[] = {4, 7, 64, 67, 1000};
  for (int t = 1; t <= AFF_MAX_T; t++) {
    MlcPool *pool = mlc_pool_new(t);
    bool ok = pool && mlc_pool_threads(pool) == t;
    // A worker that starts after a publication takes it for one it has seen
    // (pool.c): first wait until a region of t chunks saw every thread.
    for (int w = 0; w < 200; w++) {
      Aff f = {.n = t, .t = t, .wait_ms = 50};
      pthread_mutex_init(&f.mu, NULL);
      for (int i = 0; i < AFF_MAX_T; i++) f.log[i] = calloc((size_t)t, sizeof(int64_t));
      mlc_parallel_for(pool, t, 1, aff_chunk, &f);
      bool all = !atomic_load(&f.timed_out);
      for (int i = 0; i < AFF_MAX_T; i++) free(f.log[i]);
      pthread_mutex_destroy(&f.mu);
      if (all) break;
    }
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
      for (int round = 0; round < 20; round++) {
        int64_t n = ns[a];
        Aff f = {.n = n, .t = t, .ids = {pthread_self()}, .nids = 1}; // the caller: slot 0
        pthread_mutex_init(&f.mu, NULL);
        for (int i = 0; i < AFF_MAX_T; i++) f.log[i] = calloc((size_t)n, sizeof(int64_t));
        mlc_parallel_for(pool, n, 1, aff_chunk, &f);
        int *by = malloc((size_t)n * sizeof *by);
        ok &= aff_owners(&f, by);
        ok &= !atomic_load(&f.timed_out) && f.nids == t && f.len[0] > 0 && f.log[0][0] == 0;
        for (int i = 0; i < f.nids; i++) ok &= f.len[i] > 0 && aff_log_ok(&f, i, by);
        if (!ok) {
          fprintf(stderr, "%d threads, %lld chunks:", t, (long long)n);
          for (int i = 0; i < f.nids; i++)
            for (int64_t q = 0; q < f.len[i]; q++) fprintf(stderr, "%s%lld", q ? " " : " | ", (long long)f.log[i][q]);
          fprintf(stderr, "\n");
        }
        for (int i = 0; i < f.nids; i++)
          for (int j = 0; j < i; j++) ok &= f.log[i][0] != f.log[j][0];
        free(by);
        for (int i = 0; i < AFF_MAX_T; i++) free(f.log[i]);
        pthread_mutex_destroy(&f.mu);
      }
    char name[120];
    snprintf(name, sizeof name,
             "%d threads: chunk k of n first thread floor(k*T/n)'s, own range front to back, then steals from the back", t);
    check(name, ok);
    mlc_pool_free(pool);
  }
}

// Without the barrier, whenever the workers come (a thread may find its
// range stolen, or steal a range's front as its last chunk): every chunk
// runs once, and a thread's chunks of any one range are either that range's
// prefix in order (its owner's) or decreasing (a thief's).
static bool aff_runs_ok(const Aff *a, int i) {
  for (int64_t v = 0; v < a->t; v++) {
    int64_t lo = range_start(v, a->n, a->t), hi = range_start(v + 1, a->n, a->t), seen = 0, last = -1;
    bool front = true, down = true;
    for (int64_t q = 0; q < a->len[i]; q++) {
      int64_t k = a->log[i][q];
      if (k < lo || k >= hi) continue;
      front &= k == lo + seen;
      down &= last < 0 || k < last;
      last = k, seen++;
    }
    if (!front && !down) return false;
  }
  return true;
}
static void aff_free_chunk(void *va, int64_t b, int64_t e) {
  Aff *a = va;
  int i = aff_slot(a);
  if (i >= AFF_MAX_T || e != b + 1) {
    atomic_store(&a->timed_out, 1);
    return;
  }
  a->log[i][a->len[i]++] = b;
}

static void stealing(void) {
  bool ok = true;
  for (int t = 2; t <= AFF_MAX_T; t++) {
    MlcPool *pool = mlc_pool_new(t);
    for (int round = 0; round < 200; round++) {
      int64_t n = 37 + round % 5;
      Aff f = {.n = n, .t = t, .ids = {pthread_self()}, .nids = 1};
      pthread_mutex_init(&f.mu, NULL);
      for (int i = 0; i < AFF_MAX_T; i++) f.log[i] = calloc((size_t)n, sizeof(int64_t));
      mlc_parallel_for(pool, n, 1, aff_free_chunk, &f);
      int *by = malloc((size_t)n * sizeof *by);
      ok &= aff_owners(&f, by);
      ok &= !atomic_load(&f.timed_out);
      for (int i = 0; i < f.nids; i++) ok &= aff_runs_ok(&f, i);
      free(by);
      for (int i = 0; i < AFF_MAX_T; i++) free(f.log[i]);
      pthread_mutex_destroy(&f.mu);
    }
    mlc_pool_free(pool);
  }
  check("2-4 threads without a barrier: every chunk once, owners front to back, thieves from the back", ok);
}

int main(void) {
  contract();
  reduction_is_thread_independent();
  nested_runs_inline();
  back_to_back_and_asleep();
  first_assignment();
  stealing();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
