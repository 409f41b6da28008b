// team.h — held teams (team.c): the pool's workers kept on call across the
// short parallel products of one predict or eval, and the pool primitive
// they stand on (pool.c, at the end).
#ifndef MLC_TEAM_H
#define MLC_TEAM_H

#include <stdbool.h>

#include "mlc_rt.h"

// Publishes fn over [0, n) (chunks of 1) to the pool's workers alone: the
// caller runs none of it and does not wait. false, publishing nothing, for
// a pool of one thread or a call from inside a chunk. *ticket names the
// job; it stays live (mlc_pool_live) until the next publication, which
// first waits until no worker is inside it, so a chunk that keeps its
// worker must return soon after the job stops being live.
bool mlc_pool_post(MlcPool *pool, int64_t n, MlcRangeFn fn, void *arg, unsigned *ticket);
bool mlc_pool_live(const MlcPool *pool, unsigned ticket);

// A team holds each of a pool's workers in a loop of its own (a slot) while
// its owner runs a sequence of parallel parts: mlc_team_run(t, n, fn, arg,
// bytes) runs fn(arg, 0, 1) on the caller and fn(arg', i, i + 1) on slot
// i - 1's worker, then returns when all n are done, with a handshake on the
// slot's cache lines instead of a publication and a join of the pool's.
// arg' is a copy of arg's first `bytes` bytes in the slot when 0 < bytes <=
// MLC_TEAM_ARG_BYTES (a self-contained argument: the worker then fetches
// its lines at once, not one pointer at a time from the caller's core),
// else arg. Part i
// runs on the same thread call after call while the worker is held, so
// what part i reads stays in that core's cache. A part whose worker is not
// there (asleep, descheduled, gone after SPIN_NS idle, or taken by another
// of the pool's jobs) runs on the caller once its own part is done: which
// thread runs a part never changes what it computes.
//
// Ownership: one owner thread (an instance's caller); mlc_team_use makes
// the team current on it (like mlc_gemm_cache_use), so that kernels reach
// it. mlc_team_free retires the team's job and must run before the pool
// is freed.
typedef struct MlcTeam MlcTeam;
MlcTeam *mlc_team_new(MlcPool *pool); // NULL: no memory, or a pool of one thread
void mlc_team_free(MlcTeam *t);
MlcTeam *mlc_team_use(MlcTeam *t); // returns the previous current team
MlcTeam *mlc_team_current(void);
// The parts a run may have when the product's pool is `pool` (its threads),
// or 0 when t is NULL or holds another pool's workers.
int mlc_team_parts(const MlcTeam *t, const MlcPool *pool);
enum { MLC_TEAM_ARG_BYTES = 256 };
void mlc_team_run(MlcTeam *t, int64_t nparts, MlcRangeFn fn, void *arg, size_t bytes);

#endif
