// test_pool.c — the thread pool's contract (runtime/core/pool.c): every
// chunk [k*grain, min(n, (k+1)*grain)) runs exactly once, whatever the
// thread count; per-chunk reductions are identical with 1..4 threads; a
// chunk that calls mlc_parallel_for runs it inline; back-to-back regions,
// regions after the workers went to sleep, and freeing a pool all work.
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

int main(void) {
  contract();
  reduction_is_thread_independent();
  nested_runs_inline();
  back_to_back_and_asleep();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
