// cuda_emu.c — the scheduler behind cuda_emu.h: runs a kernel's blocks one
// after another, each block's threads as ucontext fibers that switch only at
// barriers, warp shuffles and __syncwarp.
//
// One Launch per mlc_emu_launch call. For each block the scheduler makes a
// fiber per thread, then repeats rounds: every READY fiber runs (in linear
// thread order) until it waits or returns; then, for each warp whose live
// lanes all wait at a warp sync, those lanes become READY; if none did and
// every live thread waits at one barrier, they all do. A round that frees
// nobody while threads are still live is a divergent barrier or a deadlock,
// and the launch fails with a message naming the threads and the lines.
//
// Blocks without syncs run without fibers: when no thread of the first
// block reached a barrier, shuffle or __syncwarp, every later block's
// threads are plain calls, one after another (the kernel's code is then
// straight-line per thread, and a fiber switch costs two system calls). A
// later block that does reach a sync fails the launch (CUDA code whose
// barriers depend on the block is outside what this emulates).
//
// Switches: a fiber is entered once per launch through setcontext (its
// ucontext made by makecontext, its thread of every block run by one loop);
// after that the scheduler and the fibers switch with
// _setjmp/_longjmp, which keep the signal mask alone and so make no system
// call (swapcontext makes two: a block of 256 threads meeting 9 barriers
// switched 4,600 times, about 9 ms here). _FORTIFY_SOURCE is off for this
// file: its longjmp check refuses a jump to another stack.
//
// Stacks: one mmap per OS thread, grown on demand and kept between launches
// (mlc_emu_release frees it); each fiber's stack has a PROT_NONE guard page
// below it, so an overflow faults instead of corrupting a neighbour.
#undef _FORTIFY_SOURCE
#include "cuda_emu.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

_Thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

typedef enum {
  FIB_READY,   // runs in the next round
  FIB_BARRIER, // waits at MLC_BARRIER() (.file, .line)
  FIB_WARP,    // waits at a shuffle or __syncwarp (.mask, .gen)
  FIB_DONE,    // returned
} FiberState;

typedef struct Fiber {
  ucontext_t uc;      // the entry (makecontext), used once
  jmp_buf jb;         // where it resumes after a yield
  bool started;
  FiberState st;
  dim3 tid;
  int lin;            // linear thread id: x + y*bx + z*bx*by
  const char *file;   // FIB_BARRIER: where
  int line;
  unsigned mask;      // FIB_WARP: the sync's mask
  unsigned gen;       // warp syncs this lane has passed
} Fiber;

typedef struct Launch {
  jmp_buf sched;      // where the scheduler resumes
  Fiber *fib;
  int nthreads;
  MlcEmuEntry entry;
  void **args;
  unsigned char *dyn; // dynamic shared memory
  size_t dyn_bytes;
  MlcEmuWord *xchg;   // [2][nthreads]: shuffle values, by generation parity
  bool *valid;        // [2][nthreads]: the lane took part in that exchange
  Fiber *cur;
  bool synced;        // some thread reached a sync (in the blocks run so far)
  bool direct;        // threads run as plain calls (no sync in block 0)
  jmp_buf escape;     // direct: where a sync returns to, failing the launch
  char *err;
  size_t errlen;
} Launch;

static _Thread_local Launch *cur_launch;

// ---- stacks ----------------------------------------------------------------------------------
static _Thread_local unsigned char *stack_base;
static _Thread_local size_t stack_count; // fibers the mapping holds

static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

static size_t stack_slot(void) { return MLC_EMU_STACK_BYTES + page_size(); }

void mlc_emu_release(void) {
  if (stack_base) munmap(stack_base, stack_count * stack_slot());
  stack_base = NULL;
  stack_count = 0;
}

// Makes room for n fiber stacks, each above its guard page. 0 or -1 (errno).
static int stacks_reserve(size_t n) {
  if (n <= stack_count) return 0;
  mlc_emu_release();
  size_t slot = stack_slot();
  void *p = mmap(NULL, n * slot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return -1;
  for (size_t i = 0; i < n; i++)
    if (mprotect((unsigned char *)p + i * slot, page_size(), PROT_NONE) != 0) {
      munmap(p, n * slot);
      return -1;
    }
  stack_base = p;
  stack_count = n;
  return 0;
}

// ---- errors ----------------------------------------------------------------------------------
static int fail(Launch *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(Launch *L, const char *fmt, ...) {
  if (L->err && L->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->err, L->errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static void misuse(const char *what) {
  fprintf(stderr, "cuda_emu: %s called outside mlc_emu_launch\n", what);
  abort();
}

// ---- fibers ----------------------------------------------------------------------------------
// A fiber's first frame: the kernel for its thread of every block; after
// each it waits (as FIB_DONE) until the next block runs it again.
static void fiber_main(void) {
  for (;;) {
    Launch *L = cur_launch;
    L->entry(L->args);
    Fiber *f = L->cur;
    f->st = FIB_DONE;
    if (!_setjmp(f->jb)) _longjmp(L->sched, 1);
  }
}

// getcontext in a function of its own keeps -Wclobbered quiet in callers.
static int fiber_init(Launch *L, Fiber *f, unsigned char *stack) {
  (void)L;
  if (getcontext(&f->uc) != 0) return -1;
  f->uc.uc_stack.ss_sp = stack;
  f->uc.uc_stack.ss_size = MLC_EMU_STACK_BYTES;
  f->uc.uc_link = NULL;
  f->started = false;
  makecontext(&f->uc, fiber_main, 0);
  return 0;
}

// Switches from the running fiber back to the scheduler.
static void fiber_yield(Launch *L, Fiber *f) {
  if (!_setjmp(f->jb)) _longjmp(L->sched, 1);
}

// Runs f until it yields or returns.
static void fiber_run(Launch *L, Fiber *f) {
  threadIdx = f->tid;
  L->cur = f;
  if (_setjmp(L->sched)) return;
  if (f->started) _longjmp(f->jb, 1);
  f->started = true;
  setcontext(&f->uc);
  perror("cuda_emu: setcontext");
  abort();
}

// ---- what kernel code calls ------------------------------------------------------------------
// A sync in a block run without fibers: the launch fails.
static void sync_reached(Launch *L, const char *what) {
  L->synced = true;
  if (!L->direct) return;
  fail(L, "%s in block (%u,%u,%u), but block (0,0,0) ran without any sync (the emulation runs "
       "blocks after a sync-free first block without fibers)", what, blockIdx.x, blockIdx.y, blockIdx.z);
  longjmp(L->escape, 1);
}

void mlc_emu_barrier(const char *file, int line) {
  Launch *L = cur_launch;
  if (!L) misuse("MLC_BARRIER");
  sync_reached(L, "a barrier");
  Fiber *f = L->cur;
  f->st = FIB_BARRIER;
  f->file = file;
  f->line = line;
  fiber_yield(L, f);
}

void *mlc_emu_dyn_shared(void) {
  if (!cur_launch) misuse("MLC_DYN_SHARED");
  return cur_launch->dyn;
}

// Waits until the live lanes of this warp reach a warp sync; returns the
// parity of the exchange this lane took part in.
static unsigned warp_wait(Launch *L, Fiber *f, unsigned mask) {
  unsigned gen = f->gen;
  f->st = FIB_WARP;
  f->mask = mask;
  fiber_yield(L, f);
  f->gen = gen + 1;
  return gen & 1;
}

void mlc_emu_syncwarp(unsigned mask) {
  Launch *L = cur_launch;
  if (!L) misuse("__syncwarp");
  sync_reached(L, "__syncwarp");
  warp_wait(L, L->cur, mask);
}

// The lane a shuffle reads, within this lane's group of `width`; -1: its own value.
static int shfl_source(MlcEmuShfl kind, int lane, int arg, int width) {
  int base = lane - lane % width;
  switch (kind) {
  case MLC_EMU_SHFL_IDX: return base + ((arg % width) + width) % width;
  case MLC_EMU_SHFL_DOWN: return lane % width + arg >= width ? -1 : lane + arg;
  case MLC_EMU_SHFL_UP: return lane % width < arg ? -1 : lane - arg;
  case MLC_EMU_SHFL_XOR: {
    int src = lane ^ arg; // earlier groups are readable, later ones give our own value
    return src >= base + width ? -1 : src;
  }
  }
  return -1;
}

MlcEmuWord mlc_emu_shfl(MlcEmuShfl kind, unsigned mask, MlcEmuWord v, int arg,
                        int width) {
  Launch *L = cur_launch;
  if (!L) misuse("__shfl_*_sync");
  sync_reached(L, "a shuffle");
  Fiber *f = L->cur;
  int n = L->nthreads, warp0 = f->lin - f->lin % warpSize;
  L->xchg[(f->gen & 1) * n + f->lin] = v;
  unsigned par = warp_wait(L, f, mask);
  if (width <= 0 || width > warpSize || (width & (width - 1)))
    width = warpSize; // CUDA: a width that is not a power of two up to 32 is undefined
  int src = shfl_source(kind, f->lin - warp0, arg, width);
  if (src < 0) return v;
  int s = warp0 + src;
  if (s >= n || !L->valid[par * n + s] || !(mask >> src & 1u))
    return (MlcEmuWord){.bits = ~(uint64_t)0}; // an inactive lane: poison
  return L->xchg[par * n + s];
}

// ---- the scheduler -------------------------------------------------------------------------
static const char *state_name(FiberState s) {
  switch (s) {
  case FIB_READY: return "running";
  case FIB_BARRIER: return "at a barrier";
  case FIB_WARP: return "at a warp sync";
  case FIB_DONE: return "returned";
  }
  return "?";
}

// "thread (x,y,z) at a barrier k.cu:12"
static void describe(const Fiber *f, char *buf, size_t n) {
  int k = snprintf(buf, n, "thread (%u,%u,%u) %s", f->tid.x, f->tid.y, f->tid.z, state_name(f->st));
  if (f->st == FIB_BARRIER && k > 0 && (size_t)k < n)
    snprintf(buf + k, n - (size_t)k, " %s:%d", f->file, f->line);
}

static int block_fail(Launch *L, const char *what, const Fiber *a, const Fiber *b) {
  char wa[256], wb[256];
  describe(a, wa, sizeof wa);
  describe(b, wb, sizeof wb);
  return fail(L, "%s in block (%u,%u,%u): %s, %s", what, blockIdx.x, blockIdx.y, blockIdx.z, wa,
              wb);
}

// Frees the lanes of warps whose live lanes all wait at a warp sync. The
// number freed, or -1 (lanes at different generations or masks).
static int release_warps(Launch *L) {
  int freed = 0, n = L->nthreads;
  for (int w0 = 0; w0 < n; w0 += warpSize) {
    int end = w0 + warpSize < n ? w0 + warpSize : n;
    const Fiber *first = NULL;
    bool all = true;
    for (int t = w0; t < end && all; t++) {
      const Fiber *f = &L->fib[t];
      if (f->st == FIB_DONE) continue;
      if (f->st != FIB_WARP) all = false;
      else if (!first) first = f;
      else if (f->gen != first->gen || f->mask != first->mask)
        return block_fail(L, "divergent warp sync (different masks or sync counts)", first, f);
    }
    if (!all || !first) continue;
    unsigned par = first->gen & 1;
    for (int t = w0; t < end; t++) {
      Fiber *f = &L->fib[t];
      L->valid[par * n + t] = f->st == FIB_WARP;
      if (f->st == FIB_WARP) {
        f->st = FIB_READY;
        freed++;
      }
    }
  }
  return freed;
}

// Frees the block's threads when every one waits at the same barrier. 1
// freed, 0 not yet (or nobody waits), -1 divergent.
static int release_barrier(Launch *L) {
  const Fiber *first = NULL, *done = NULL;
  for (int t = 0; t < L->nthreads; t++) {
    const Fiber *f = &L->fib[t];
    if (f->st == FIB_DONE) {
      done = done ? done : f;
      continue;
    }
    if (f->st != FIB_BARRIER) return 0;
    if (!first) first = f;
    else if (f->line != first->line || strcmp(f->file, first->file) != 0)
      return block_fail(L, "divergent barrier", first, f);
  }
  if (!first) return 0;
  if (done) return block_fail(L, "divergent barrier", first, done);
  for (int t = 0; t < L->nthreads; t++) L->fib[t].st = FIB_READY;
  return 1;
}

// The first two live threads that block each other, for the deadlock message.
static int deadlock(Launch *L) {
  const Fiber *a = NULL;
  for (int t = 0; t < L->nthreads; t++) {
    const Fiber *f = &L->fib[t];
    if (f->st == FIB_DONE) continue;
    if (!a) a = f;
    else if (f->st != a->st) return block_fail(L, "deadlock", a, f);
  }
  return fail(L, "deadlock in block (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z);
}

// The fibers are made for the first block and run every later block's
// threads again (fiber_main), so a block costs no system call.
static int run_block(Launch *L) {
  for (int t = 0; t < L->nthreads; t++) {
    Fiber *f = &L->fib[t];
    f->st = FIB_READY;
    f->gen = 0;
    if (!f->started && fiber_init(L, f, stack_base + t * stack_slot() + page_size()) != 0)
      return fail(L, "cuda_emu.c:%d: getcontext: %s", __LINE__, strerror(errno));
  }
  if (L->dyn_bytes) memset(L->dyn, 0xff, L->dyn_bytes);
  for (;;) {
    int live = 0;
    for (int t = 0; t < L->nthreads; t++) {
      if (L->fib[t].st == FIB_READY) fiber_run(L, &L->fib[t]);
      live += L->fib[t].st != FIB_DONE;
    }
    if (!live) return 0;
    int freed = release_warps(L);
    if (freed < 0) return -1;
    if (freed == 0) freed = release_barrier(L);
    if (freed < 0) return -1;
    if (freed == 0) return deadlock(L);
  }
}

// One thread as a plain call; 1 when it reached a sync (the launch fails).
static int call_direct(Launch *L) {
  if (setjmp(L->escape)) return 1;
  L->entry(L->args);
  return 0;
}

static int run_block_direct(Launch *L) {
  if (L->dyn_bytes) memset(L->dyn, 0xff, L->dyn_bytes);
  for (int t = 0; t < L->nthreads; t++) {
    threadIdx = L->fib[t].tid;
    L->cur = &L->fib[t];
    if (call_direct(L)) return -1;
  }
  return 0;
}

static int check_geometry(Launch *L, dim3 grid, dim3 block, size_t shared_bytes) {
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
    return fail(L, "launch: a grid or block dimension is 0");
  if (grid.y > 65535 || grid.z > 65535)
    return fail(L, "launch: grid (%u,%u,%u) exceeds 65535 in y or z", grid.x, grid.y, grid.z);
  if (block.x > 1024 || block.y > 1024 || block.z > 64 ||
      (uint64_t)block.x * block.y * block.z > 1024)
    return fail(L, "launch: block (%u,%u,%u) exceeds 1024 threads (or 1024, 1024, 64)",
                block.x, block.y, block.z);
  if (shared_bytes > MLC_EMU_MAX_SHARED)
    return fail(L, "launch: %zu bytes of dynamic shared memory exceed %d", shared_bytes,
                MLC_EMU_MAX_SHARED);
  return 0;
}

// Allocates the per-launch arrays; -1 with the reason.
static int launch_alloc(Launch *L, size_t shared_bytes) {
  int n = L->nthreads;
  L->fib = calloc((size_t)n, sizeof *L->fib);
  L->xchg = calloc(2 * (size_t)n, sizeof *L->xchg);
  L->valid = calloc(2 * (size_t)n, sizeof *L->valid);
  L->dyn = malloc(shared_bytes ? shared_bytes : 1);
  if (!L->fib || !L->xchg || !L->valid || !L->dyn)
    return fail(L, "launch: out of memory for %d threads", n);
  if (stacks_reserve((size_t)n) != 0)
    return fail(L, "cuda_emu.c:%d: mmap of %d fiber stacks: %s", __LINE__, n, strerror(errno));
  return 0;
}

static void launch_free(Launch *L) {
  free(L->fib);
  free(L->xchg);
  free(L->valid);
  free(L->dyn);
}

static void init_threads(Launch *L, dim3 block) {
  for (unsigned z = 0, t = 0; z < block.z; z++)
    for (unsigned y = 0; y < block.y; y++)
      for (unsigned x = 0; x < block.x; x++, t++) {
        L->fib[t].tid = (dim3){x, y, z};
        L->fib[t].lin = (int)t;
      }
}

int mlc_emu_launch(MlcEmuEntry entry, void **args, dim3 grid, dim3 block,
                   size_t shared_bytes, char *err, size_t errlen) {
  Launch L = {.entry = entry, .args = args, .dyn_bytes = shared_bytes, .err = err,
              .errlen = errlen};
  if (cur_launch) return fail(&L, "launch: mlc_emu_launch called from inside a kernel");
  if (check_geometry(&L, grid, block, shared_bytes) != 0) return -1;
  L.nthreads = (int)(block.x * block.y * block.z);
  int rc = launch_alloc(&L, shared_bytes);
  if (rc == 0) {
    init_threads(&L, block);
    cur_launch = &L;
    blockDim = block;
    gridDim = grid;
    for (unsigned z = 0; z < grid.z && rc == 0; z++)
      for (unsigned y = 0; y < grid.y && rc == 0; y++)
        for (unsigned x = 0; x < grid.x && rc == 0; x++) {
          blockIdx = (dim3){x, y, z};
          rc = L.direct ? run_block_direct(&L) : run_block(&L);
          L.direct = !L.synced;
        }
    cur_launch = NULL;
  }
  launch_free(&L);
  return rc;
}
