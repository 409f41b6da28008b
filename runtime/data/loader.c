// loader.c — batches over a dataset, shuffled per epoch, formed ahead of use.
//
// Order: epoch e visits records in mlc_permutation(seed, e) when shuffling
// (a fresh, reproducible order each epoch, like a DataLoader with
// shuffle=True and a seeded generator), in file order otherwise. Batches are
// consecutive slices of that order; the last one is smaller when the batch
// size does not divide n (drop_last=false), or dropped (drop_last=true).
//
// Cursor: (epoch, pos) = samples handed out in the current epoch. It moves
// only when the caller takes a batch, so a checkpoint taken between steps
// resumes exactly at the next unseen sample, whatever the prefetcher did.
//
// Prefetch: two slots. After handing out slot k the loader asks a worker
// thread to form the following batch in slot 1-k while the caller runs its
// step; the next call waits for the worker, then uses its slot if it holds
// the wanted (epoch, pos), or forms the batch itself. mlc_loader_peek shows
// slot 1-k early (formed the same way), so the buffers it shows are the
// ones the next call hands out. Only one of the two
// threads forms a batch at a time, so the permutation cache needs no lock.
//
// Pool (mlc_loader_set_pool): when the step's thread pool has a thread per
// CPU, no CPU is left for the prefetch thread: it would take one from a
// pool thread in the middle of a step, and the step's other threads would
// wait for that one at the next join. Then the prefetch thread stops and
// the caller forms each batch when it asks for it, its samples gathered by
// the pool's threads (a gather writes each sample's bytes, so the batch is
// the same whoever forms it).
//
// Buffers are sized for min(batch, records) samples (a --batch larger than
// the data never allocates more than the data), with checked arithmetic.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rng.h"
#include "core/rt_util.h"
#include "dataset.h"

typedef struct Slot {
  int64_t epoch, pos, size; // what the slot holds; size -1: nothing
  void *inputs[MLC_MAX_INPUTS];
  int64_t *indices;
} Slot;

struct MlcLoader {
  const MlcDataset *ds;
  int64_t batch;
  bool shuffle, drop_last;
  uint64_t seed;
  int64_t *perm, perm_epoch; // order of perm_epoch (-1: none yet)
  int64_t epoch, pos;        // the cursor
  Slot slot[2];
  int cur;                   // the slot last handed out
  // prefetch worker
  bool threaded, quit, busy;
  int req_slot;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  MlcPool *pool; // forms batches (no prefetch thread) when set
};

static const int64_t *order(MlcLoader *l, int64_t epoch) {
  if (l->perm_epoch != epoch) {
    if (l->shuffle) mlc_permutation(l->seed, epoch, l->ds->n, l->perm);
    else
      for (int64_t i = 0; i < l->ds->n; i++) l->perm[i] = i;
    l->perm_epoch = epoch;
  }
  return l->perm;
}

// Samples [b, e) of slot s, every input.
typedef struct Gather {
  const MlcLoader *l;
  const Slot *s;
} Gather;

static void gather_range(void *vg, int64_t b, int64_t e) {
  const Gather *g = vg;
  const MlcDataset *ds = g->l->ds;
  for (int i = 0; i < ds->ninputs; i++)
    mlc_dataset_gather(ds, i, g->s->indices + b, e - b,
                       (char *)g->s->inputs[i] + (size_t)b * mlc_dataset_sample_bytes(ds, i));
}

// Samples a chunk of the pool's gather takes: a few images' worth (784
// bytes each), so the per-call table of gather's u8 path stays small.
enum { GATHER_GRAIN = 16 };

static void form(MlcLoader *l, Slot *s, int64_t epoch, int64_t pos) {
  int64_t n = l->ds->n, size = n - pos < l->batch ? n - pos : l->batch;
  if (size < 0 || (l->drop_last && size < l->batch)) size = 0;
  s->epoch = epoch, s->pos = pos, s->size = size;
  if (!size) return;
  memcpy(s->indices, order(l, epoch) + pos, (size_t)size * sizeof *s->indices);
  Gather g = {l, s};
  if (l->pool) mlc_parallel_for(l->pool, size, GATHER_GRAIN, gather_range, &g);
  else gather_range(&g, 0, size);
}

static void *worker(void *vp) {
  MlcLoader *l = vp;
  pthread_mutex_lock(&l->mu);
  for (;;) {
    while (!l->quit && l->req_slot < 0) pthread_cond_wait(&l->cv, &l->mu);
    if (l->quit) break;
    Slot *s = &l->slot[l->req_slot];
    int64_t epoch = s->epoch, pos = s->pos;
    pthread_mutex_unlock(&l->mu);
    form(l, s, epoch, pos);
    pthread_mutex_lock(&l->mu);
    l->req_slot = -1;
    l->busy = false;
    pthread_cond_broadcast(&l->cv);
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

static void wait_idle(MlcLoader *l) {
  if (!l->threaded) return;
  pthread_mutex_lock(&l->mu);
  while (l->busy) pthread_cond_wait(&l->cv, &l->mu);
  pthread_mutex_unlock(&l->mu);
}

// Asks the worker to form (epoch, pos) in the slot not handed out.
static void kick(MlcLoader *l, int64_t epoch, int64_t pos) {
  if (!l->threaded) return;
  Slot *s = &l->slot[1 - l->cur];
  pthread_mutex_lock(&l->mu);
  s->epoch = epoch, s->pos = pos, s->size = -1;
  l->req_slot = 1 - l->cur;
  l->busy = true;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

MlcLoader *mlc_loader_new(const MlcDataset *ds, int64_t batch, bool shuffle, uint64_t seed,
                          bool drop_last, bool prefetch) {
  MlcLoader *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->ds = ds, l->batch = batch < 1 ? 1 : batch, l->shuffle = shuffle, l->seed = seed;
  l->drop_last = drop_last, l->perm_epoch = -1, l->req_slot = -1;
  int64_t most = l->batch < ds->n ? l->batch : ds->n > 0 ? ds->n : 1;
  l->perm = malloc((size_t)(ds->n ? ds->n : 1) * sizeof *l->perm);
  bool ok = l->perm != NULL;
  for (int k = 0; k < 2; k++) {
    l->slot[k].size = -1;
    l->slot[k].indices = malloc((size_t)most * sizeof(int64_t));
    ok = ok && l->slot[k].indices;
    for (int i = 0; i < ds->ninputs; i++) {
      int64_t bytes = rt_bytes(most, mlc_dataset_sample_bytes(ds, i));
      l->slot[k].inputs[i] = bytes >= 0 ? malloc((size_t)bytes + 1) : NULL;
      ok = ok && l->slot[k].inputs[i];
    }
  }
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
  if (ok && prefetch) l->threaded = !pthread_create(&l->thread, NULL, worker, l);
  if (!ok) {
    mlc_loader_free(l);
    return NULL;
  }
  return l;
}

static void stop_thread(MlcLoader *l) {
  if (!l->threaded) return;
  pthread_mutex_lock(&l->mu);
  l->quit = true;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
  pthread_join(l->thread, NULL);
  l->threaded = false;
}

void mlc_loader_set_pool(MlcLoader *l, MlcPool *pool) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (!pool || mlc_pool_threads(pool) < (cpus > 0 ? cpus : 1)) return;
  stop_thread(l); // a batch it formed stays in its slot, still valid
  l->pool = pool;
}

void mlc_loader_free(MlcLoader *l) {
  if (!l) return;
  stop_thread(l);
  for (int k = 0; k < 2; k++) {
    free(l->slot[k].indices);
    for (int i = 0; i < MLC_MAX_INPUTS; i++) free(l->slot[k].inputs[i]);
  }
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
  free(l->perm);
  free(l);
}

void mlc_loader_seek(MlcLoader *l, int64_t epoch, int64_t pos) {
  wait_idle(l);
  l->epoch = epoch, l->pos = pos < 0 ? 0 : pos > l->ds->n ? l->ds->n : pos;
  l->slot[0].size = l->slot[1].size = -1;
}

int64_t mlc_loader_next(MlcLoader *l, MlcBatch *b) {
  wait_idle(l);
  int k = 1 - l->cur;
  Slot *s = &l->slot[k];
  if (s->size < 0 || s->epoch != l->epoch || s->pos != l->pos) form(l, s, l->epoch, l->pos);
  l->cur = k;
  memset(b, 0, sizeof *b);
  b->size = s->size;
  b->indices = s->indices;
  for (int i = 0; i < l->ds->ninputs; i++) b->inputs[i] = s->inputs[i];
  if (s->size == 0) l->epoch++, l->pos = 0;
  else l->pos += s->size;
  kick(l, l->epoch, l->pos);
  return b->size;
}

int64_t mlc_loader_peek(MlcLoader *l, MlcBatch *b) {
  wait_idle(l);
  memset(b, 0, sizeof *b);
  Slot *s = &l->slot[1 - l->cur]; // where next() looks first
  if (s->size < 0 || s->epoch != l->epoch || s->pos != l->pos) form(l, s, l->epoch, l->pos);
  b->size = s->size;
  b->indices = s->indices;
  for (int i = 0; i < l->ds->ninputs; i++) b->inputs[i] = s->inputs[i];
  return b->size;
}

int64_t mlc_loader_epoch(const MlcLoader *l) { return l->epoch; }
int64_t mlc_loader_pos(const MlcLoader *l) { return l->pos; }

int64_t mlc_loader_batches(const MlcLoader *l) {
  int64_t n = l->ds->n;
  return l->drop_last ? n / l->batch : (n + l->batch - 1) / l->batch;
}
