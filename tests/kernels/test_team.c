// test_team.c — held teams (runtime/core/team.c) and the pool's posted jobs
// they stand on (pool.c): every part of a run once, part 0 on the caller,
// with 2 to 4 threads and fewer or more parts than threads; runs back to
// back, between the pool's own regions (which take the workers back), after
// the workers went idle past the spin, and from inside a pool chunk (run
// inline); a part whose worker is away still runs; teams and pools free in
// every state.
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mlc_rt.h"
#include "runtime/core/team.h"
#include "unit.h"

enum { MAXP = 8 };

typedef struct Parts {
  atomic_int hits[MAXP];
  atomic_int bad; // a part not [i, i + 1), or part 0 away from the caller
  pthread_t caller;
} Parts;

static void part(void *vp, int64_t b, int64_t e) {
  Parts *p = vp;
  if (e != b + 1 || b < 0 || b >= MAXP || (b == 0 && !pthread_equal(pthread_self(), p->caller)))
    atomic_store(&p->bad, 1);
  else atomic_fetch_add(&p->hits[b], 1);
}

// n runs of `parts` parts: each part ran n times, nothing else.
static bool runs(MlcTeam *t, int64_t parts, int n) {
  Parts p = {.caller = pthread_self()};
  for (int i = 0; i < n; i++) mlc_team_run(t, parts, part, &p, 0);
  bool ok = !atomic_load(&p.bad);
  for (int64_t i = 0; i < MAXP; i++) ok &= atomic_load(&p.hits[i]) == (i < parts ? n : 0);
  return ok;
}

static void sleep_ms(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

static void contract(void) {
  for (int th = 2; th <= 4; th++) {
    MlcPool *pool = mlc_pool_new(th);
    MlcTeam *t = mlc_team_new(pool);
    bool ok = t && mlc_team_parts(t, pool) == th && mlc_team_parts(t, NULL) == 0 &&
              mlc_team_parts(NULL, pool) == 0;
    for (int64_t parts = 1; ok && parts <= th + 2; parts++) ok &= runs(t, parts, 1000);
    char name[80];
    snprintf(name, sizeof name, "%d threads: 1 to %d parts, each once per run, part 0 on the caller", th, th + 2);
    check(name, ok);
    mlc_team_free(t);
    mlc_pool_free(pool);
  }
}

static void count(void *vn, int64_t b, int64_t e) { atomic_fetch_add((atomic_long *)vn, e - b); }

typedef struct Inner {
  MlcTeam *t;
  atomic_int ok;
} Inner;

static void run_inside(void *vi, int64_t b, int64_t e) {
  Inner *in = vi;
  for (int64_t i = b; i < e; i++)
    if (!runs(in->t, 2, 3)) atomic_store(&in->ok, 0);
}

static void with_the_pool(void) {
  MlcPool *pool = mlc_pool_new(2);
  MlcTeam *t = mlc_team_new(pool);
  atomic_long total = 0;
  bool ok = true;
  for (int i = 0; i < 2000; i++) {
    ok &= runs(t, 2, 3);
    mlc_parallel_for(pool, 8, 1, count, &total);
  }
  check("team runs between the pool's regions", ok && atomic_load(&total) == 16000);
  ok = true;
  for (int i = 0; i < 5; i++) { // longer than the spin: the worker has left the team
    sleep_ms(2);
    ok &= runs(t, 2, 5);
  }
  check("team runs after the worker went idle past the spin", ok);
  // the caller is inside a chunk of the pool's: the worker is not the team's
  Inner in = {t, 1};
  mlc_parallel_for(pool, 4, 1, run_inside, &in);
  check("a team run from inside a pool chunk runs inline", atomic_load(&in.ok));
  mlc_team_free(t);
  total = 0;
  mlc_parallel_for(pool, 100, 1, count, &total);
  check("the pool runs its own regions after its team is freed", atomic_load(&total) == 100);
  mlc_pool_free(pool);
}

static void lifetimes(void) {
  MlcPool *one = mlc_pool_new(1), *pool = mlc_pool_new(3);
  check("team: none for a pool of one thread, or no pool", !mlc_team_new(one) && !mlc_team_new(NULL));
  mlc_pool_free(one);
  MlcTeam *t = mlc_team_new(pool);
  mlc_team_free(t); // never run
  t = mlc_team_new(pool);
  bool ok = runs(t, 3, 10);
  mlc_team_free(t); // its workers held
  t = mlc_team_new(pool);
  ok &= runs(t, 3, 10);
  sleep_ms(2);
  mlc_team_free(t); // its workers gone back to the pool
  MlcTeam *was = mlc_team_use(t = mlc_team_new(pool));
  ok &= mlc_team_current() == t;
  mlc_team_free(t); // current: no longer
  ok &= mlc_team_current() == NULL;
  mlc_team_use(was);
  mlc_pool_free(pool);
  check("teams free never run, held, idle and current; then the pool", ok);
}

int main(void) {
  contract();
  with_the_pool();
  lifetimes();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}
