// pool.c — the runtime's thread pool and mlc_parallel_for.
//
// One job at a time: the caller publishes (fn, arg, n, grain), bumps a
// generation counter and wakes the workers; every thread, the caller
// included, takes chunk numbers from an atomic counter until none are left.
// Chunks are [k*grain, min(n, (k+1)*grain)), fixed by n and grain alone, so
// results that are reduced per chunk do not depend on the thread count.
// Workers sleep on a condition variable between jobs.
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "mlc_rt.h"

struct MlcPool {
  int nthreads; // including the caller
  pthread_t *threads;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  uint64_t generation;
  int busy;     // workers still in the current job
  bool quit;
  // the current job
  MlcRangeFn fn;
  void *arg;
  int64_t n, grain, nchunks;
  atomic_int_fast64_t next;
};

static void run_chunks(MlcPool *p) {
  for (;;) {
    int64_t k = atomic_fetch_add(&p->next, 1);
    if (k >= p->nchunks) return;
    int64_t b = k * p->grain, e = b + p->grain < p->n ? b + p->grain : p->n;
    p->fn(p->arg, b, e);
  }
}

static void *worker(void *vp) {
  MlcPool *p = vp;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->quit && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
    if (p->quit) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

MlcPool *mlc_pool_new(int nthreads) {
  if (nthreads <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    nthreads = c > 0 ? (int)c : 1;
  }
  if (nthreads > 256) nthreads = 256;
  MlcPool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->nthreads = nthreads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  p->threads = calloc((size_t)nthreads, sizeof *p->threads);
  for (int i = 1; p->threads && i < nthreads; i++)
    if (pthread_create(&p->threads[i], NULL, worker, p)) {
      p->nthreads = i; // run with what started
      break;
    }
  return p;
}

void mlc_pool_free(MlcPool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->quit = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p->threads);
  free(p);
}

int mlc_pool_threads(const MlcPool *p) { return p ? p->nthreads : 1; }

void mlc_parallel_for(MlcPool *p, int64_t n, int64_t grain, MlcRangeFn fn, void *arg) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t nchunks = (n + grain - 1) / grain;
  if (!p || p->nthreads == 1 || nchunks == 1) {
    for (int64_t b = 0; b < n; b += grain) fn(arg, b, b + grain < n ? b + grain : n);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  p->grain = grain;
  p->nchunks = nchunks;
  atomic_store(&p->next, 0);
  p->busy = p->nthreads - 1;
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  run_chunks(p);
  pthread_mutex_lock(&p->mu);
  while (p->busy) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
