// pool.c — the runtime's thread pool and mlc_parallel_for.
//
// One job at a time, published without a lock. Chunks are [k*grain,
// min(n, (k+1)*grain)), fixed by n and grain alone, so results that are
// reduced per chunk do not depend on the thread count. Chunk k of n is
// first thread floor(k*T/n)'s (T threads, the caller thread 0): each
// thread owns a contiguous range [ceil(t*n/T), ceil((t+1)*n/T)), claims it
// from its front, and once it is empty steals from the back of the other
// ranges (the next thread's first). So the same thread touches the same
// part of the data in every region split the same way (a weight's rows in
// its gradient, its update and the next forward's packing: each core keeps
// its part in its own L2), and a late thread's chunks still run. The
// caller returns once `done` reaches the number of chunks. Nothing is
// allocated per region.
//
// Publishing is a seqlock on `gen`: the caller makes gen odd, waits until no
// worker is inside a job (`inside` == 0), writes the job, then makes gen
// even and new. A worker increments `inside` before it reads gen and leaves
// when gen is odd or already seen; both sides use sequentially consistent
// operations, so either the caller sees the worker inside and waits, or the
// worker sees the odd gen and backs off (the Dekker pattern). A worker that
// slept through a job joins the current one, never a stale one.
//
// Between jobs a worker spins on gen for about SPIN_NS (a train step
// issues its kernels back to back, so the next job usually arrives within
// that), then sleeps on a futex (Linux; a condition variable elsewhere).
// The caller wakes sleepers only when `sleepers` says there are some.
// A chunk that calls mlc_parallel_for again runs the inner loop inline.
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mlc_rt.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

// A worker polls for the next job for SPIN_NS before it sleeps: the first
// HOT_NS on the CPU (a step's next kernel usually comes within that), the
// rest yielding between polls, so that on a machine with no idle core the
// poll costs the other runnable threads little.
enum { HOT_NS = 20 * 1000, SPIN_NS = 200 * 1000 };

static _Thread_local int in_job; // this thread is running a chunk

// A thread's range of chunks: front in the low 32 bits, end in the high;
// the owner takes the front, thieves the back, each with one
// compare-exchange. Regions of 2^32 chunks or more use one shared counter.
typedef struct Range {
  _Alignas(64) atomic_uint_fast64_t fb;
} Range;

typedef struct Worker {
  struct MlcPool *pool;
  int self; // 1..nthreads-1; the caller is 0
} Worker;

struct MlcPool {
  int nthreads; // including the caller
  pthread_t *threads;
  Worker *workers;
  Range *ranges; // one per thread
  // the job; written only while gen is odd and no worker is inside
  MlcRangeFn fn;
  void *arg;
  int64_t n, grain, nchunks;
  int first, owners;                     // threads first..first+owners-1 own the ranges
  bool shared;                           // too many chunks for the ranges: `next` alone
  _Alignas(64) atomic_int_fast64_t next; // next chunk to claim (shared)
  _Alignas(64) atomic_int_fast64_t done; // chunks finished
  _Alignas(64) atomic_uint gen;          // odd: a job is being written
  atomic_int inside;                     // workers between entry and exit of a job
  atomic_int sleepers;                   // workers asleep (or about to be) on gen
  atomic_bool quit;
#if !defined(__linux__)
  pthread_mutex_t mu;
  pthread_cond_t cv;
#endif
};

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// ---- sleeping on gen ----------------------------------------------------------------------------
static void gen_wait(MlcPool *p, unsigned seen) {
#if defined(__linux__)
  syscall(SYS_futex, (unsigned *)&p->gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
  pthread_mutex_lock(&p->mu);
  while (atomic_load(&p->gen) == seen && !atomic_load(&p->quit)) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
#endif
}

static void gen_wake(MlcPool *p) {
#if defined(__linux__)
  syscall(SYS_futex, (unsigned *)&p->gen, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
#else
  pthread_mutex_lock(&p->mu);
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
#endif
}

// The caller's waits (for workers to leave a job, for the last chunks):
// spin, then yield, in case the thread it waits for was descheduled (more
// threads than CPUs, or the host took a vCPU away).
static void backoff(int i) {
  if (i < 1 << 12)
    cpu_relax();
  else
    sched_yield();
}

// ---- running chunks -------------------------------------------------------------------------
static int64_t claim_front(Range *r) {
  uint_fast64_t v = atomic_load_explicit(&r->fb, memory_order_relaxed);
  while ((uint32_t)v < (uint32_t)(v >> 32))
    if (atomic_compare_exchange_weak(&r->fb, &v, v + 1)) return (int64_t)(uint32_t)v;
  return -1;
}

static int64_t claim_back(Range *r) {
  uint_fast64_t v = atomic_load_explicit(&r->fb, memory_order_relaxed);
  while ((uint32_t)v < (uint32_t)(v >> 32))
    if (atomic_compare_exchange_weak(&r->fb, &v, v - ((uint_fast64_t)1 << 32)))
      return (int64_t)(v >> 32) - 1;
  return -1;
}

// The next chunk for thread `self`: its own range's front, then the other
// ranges' backs, starting with the next owner's; -1 when none is left.
static int64_t claim(MlcPool *p, int self) {
  if (p->shared) {
    int64_t k = atomic_fetch_add(&p->next, 1);
    return k < p->nchunks ? k : -1;
  }
  int own = self - p->first, m = p->owners;
  if (own >= 0 && own < m) {
    int64_t k = claim_front(&p->ranges[own]);
    if (k >= 0) return k;
  }
  int base = own >= 0 && own < m ? own : 0;
  for (int d = 1; d <= m; d++) {
    int v = (base + d) % m;
    if (v == own) continue;
    int64_t k = claim_back(&p->ranges[v]);
    if (k >= 0) return k;
  }
  return -1;
}

static void run_chunks(MlcPool *p, int self) {
  int64_t ran = 0; // added to `done` once, at the end
  for (;; ran++) {
    int64_t k = claim(p, self);
    if (k < 0) break;
    int64_t b = k * p->grain, e = b + p->grain < p->n ? b + p->grain : p->n;
    in_job = 1;
    p->fn(p->arg, b, e);
    in_job = 0;
  }
  if (ran) atomic_fetch_add_explicit(&p->done, ran, memory_order_release);
}

// Writes a job of nchunks chunks whose ranges belong to threads first..
// nthreads-1 (gen is odd and no worker is inside).
static void set_job(MlcPool *p, int64_t n, int64_t grain, int64_t nchunks, MlcRangeFn fn, void *arg,
                    int first) {
  p->fn = fn, p->arg = arg, p->n = n, p->grain = grain, p->nchunks = nchunks;
  p->first = first, p->owners = p->nthreads - first;
  p->shared = nchunks > (int64_t)UINT32_MAX;
  int64_t m = p->owners;
  for (int64_t t = 0; t < m && !p->shared; t++) {
    uint_fast64_t lo = (uint_fast64_t)((t * nchunks + m - 1) / m);
    uint_fast64_t hi = (uint_fast64_t)(((t + 1) * nchunks + m - 1) / m);
    atomic_store_explicit(&p->ranges[t].fb, lo | hi << 32, memory_order_relaxed);
  }
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
}

// Waits until gen is even and differs from `seen` (spinning, then asleep);
// returns it. An odd gen (a job being written) is passed over: entering
// `inside` only to leave again would keep the caller waiting for it.
static unsigned next_gen(MlcPool *p, unsigned seen) {
  int64_t t0 = 0;
  for (int i = 0;; i++) {
    unsigned g = atomic_load(&p->gen);
    if ((g != seen && !(g & 1)) || atomic_load(&p->quit)) return g;
    cpu_relax();
    if (i % 64) continue;
    if (!t0) t0 = now_ns();
    int64_t waited = now_ns() - t0;
    if (waited < SPIN_NS) {
      if (waited > HOT_NS) sched_yield(); // let a runnable thread have this CPU
      continue;
    }
    atomic_fetch_add(&p->sleepers, 1);
    if (atomic_load(&p->gen) == seen && !atomic_load(&p->quit)) gen_wait(p, seen);
    atomic_fetch_sub(&p->sleepers, 1);
    t0 = 0;
  }
}

static void *worker(void *vw) {
  Worker *w = vw;
  MlcPool *p = w->pool;
  unsigned seen = atomic_load(&p->gen);
  for (;;) {
    unsigned g = next_gen(p, seen);
    if (atomic_load(&p->quit)) return NULL;
    atomic_fetch_add(&p->inside, 1);
    g = atomic_load(&p->gen);
    if (!(g & 1) && g != seen) { // a published job this worker has not run
      run_chunks(p, w->self);
      seen = g;
    } else if (g & 1) {
      seen = g; // being written: wait for the next change
    }
    atomic_fetch_sub(&p->inside, 1);
  }
}

// ---- the pool -------------------------------------------------------------------------------------
MlcPool *mlc_pool_new(int nthreads) {
  if (nthreads <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    nthreads = c > 0 ? (int)c : 1;
  }
  if (nthreads > 256) nthreads = 256;
  MlcPool *p = aligned_alloc(64, (sizeof(MlcPool) + 63) & ~(size_t)63);
  if (!p) return NULL;
  *p = (MlcPool){.nthreads = nthreads};
#if !defined(__linux__)
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
#endif
  p->threads = calloc((size_t)nthreads, sizeof *p->threads);
  p->workers = calloc((size_t)nthreads, sizeof *p->workers);
  p->ranges = aligned_alloc(64, (size_t)nthreads * sizeof *p->ranges);
  if (!p->threads || !p->workers || !p->ranges) p->nthreads = 1;
  for (int i = 1; i < p->nthreads; i++) {
    p->workers[i] = (Worker){.pool = p, .self = i};
    if (pthread_create(&p->threads[i], NULL, worker, &p->workers[i])) {
      p->nthreads = i; // run with what started
      break;
    }
  }
  return p;
}

void mlc_pool_free(MlcPool *p) {
  if (!p) return;
  atomic_store(&p->quit, true);
  atomic_fetch_add(&p->gen, 2);
  gen_wake(p);
  for (int i = 1; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
#if !defined(__linux__)
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
#endif
  free(p->threads);
  free(p->workers);
  free(p->ranges);
  free(p);
}

int mlc_pool_threads(const MlcPool *p) { return p ? p->nthreads : 1; }

void mlc_parallel_for(MlcPool *p, int64_t n, int64_t grain, MlcRangeFn fn, void *arg) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t nchunks = (n + grain - 1) / grain;
  if (!p || p->nthreads == 1 || nchunks == 1 || in_job) {
    for (int64_t b = 0; b < n; b += grain) fn(arg, b, b + grain < n ? b + grain : n);
    return;
  }
  unsigned g = atomic_load(&p->gen);
  atomic_store(&p->gen, g + 1); // odd: writing
  for (int i = 0; atomic_load(&p->inside); i++) backoff(i);
  set_job(p, n, grain, nchunks, fn, arg, 0);
  atomic_store(&p->gen, g + 2); // even: published
  if (atomic_load(&p->sleepers)) gen_wake(p);
  run_chunks(p, 0);
  // The last chunks finish on other threads.
  for (int i = 0; atomic_load_explicit(&p->done, memory_order_acquire) < nchunks; i++) backoff(i);
}

// ---- posted jobs (runtime/core/team.c) ------------------------------------------------------
#include "team.h"

// A job published to the workers alone: the caller runs none of its
// chunks and returns at once. It stays the pool's job until the next
// publication, which (like any) first waits until no worker is inside it:
// a chunk that holds its worker (team.c's) returns once the job is no
// longer live. *ticket (written before the job is visible) names it.
bool mlc_pool_post(MlcPool *p, int64_t n, MlcRangeFn fn, void *arg, unsigned *ticket) {
  if (!p || p->nthreads == 1 || n <= 0 || in_job) return false;
  unsigned g = atomic_load(&p->gen);
  atomic_store(&p->gen, g + 1); // odd: writing
  for (int i = 0; atomic_load(&p->inside); i++) backoff(i);
  set_job(p, n, 1, n, fn, arg, 1); // the workers own the ranges: chunk i-1 first worker i's
  *ticket = g + 2;
  atomic_store(&p->gen, g + 2); // even: published
  if (atomic_load(&p->sleepers)) gen_wake(p);
  return true;
}

bool mlc_pool_live(const MlcPool *p, unsigned ticket) {
  return atomic_load_explicit(&((MlcPool *)p)->gen, memory_order_acquire) == ticket;
}
