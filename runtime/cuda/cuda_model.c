// cuda_model.c — a model on the GPU: the MlcDeviceOps (mlc_model.h) that
// the instance and the generated glue's device entry points call, over the
// driver layer (cuda_rt.h). mlc_cuda_device_ops is referenced by the glue of
// a model built with --target cuda, so only such programs link this file.
//
// One device arena (mlc_cuda_arena) holds everything, 256-byte aligned:
//
//   [flag | small outputs (NOUT slots of 256 bytes) | small inputs | state tensors
//    | the large output (batch x forward output) | input slot 0 | input slot 1
//    | scratch (the gpu programs' memory plan, MlcDeviceModel.scratch_bytes)]
//
// State lives there between calls; push_state / pull_state move all of it
// (checkpoints, finite checks and weights files read the host copy). A
// call's inputs go through the two upload slots (MlcCudaStage: pinned host
// buffers, the copy stream): the batch is packed into a slot, uploaded, and
// the compute stream waits for it; after a train step's launches are queued
// the next batch (set_next: the training loader's next batch) is packed into
// the other slot and uploaded while the GPU computes, and the next call that
// names those buffers (and batch size) uses it. finish downloads the results and the check
// flag into pinned memory and waits once per call, except inside a queued
// step (queue): then its copies go to the next of QUEUE_DEPTH pinned result
// slots, an event is recorded behind them and nothing waits; collect later
// waits for the oldest slot's event, checks its flags and copies its results
// to where the step named them, so the host queues step N + 1 while the GPU
// still runs step N. The device's flag and output slots are reused by every
// step: each step's zeroing, launches and downloads follow the last step's
// on the one compute stream.
//
// Small uploads (the schedule's step slots, set_state; scalar inputs,
// scalar) are copied into pinned host memory first (stage_small): an
// asynchronous copy from pageable memory may make the driver wait for the
// stream (which would undo the queue) and reads a caller's stack variable
// at an unspecified time. A call's bytes go to its own region of SMALL_IN
// bytes: per queued slot one per call of the step, one more for the calls
// outside the queue (those wait in finish before the region is reused), so
// a region is rewritten only after the copies from it have run.
#include <stdlib.h>
#include <string.h>

#include "cuda_rt_internal.h"
#include "mlc_rt.h"

// small outputs: loss, grad norm, lr, the loss's auxiliary values, the loss
// scaler's values, a small forward output
enum { ALIGN = 256, NOUT = 4 + MLC_MAX_AUX + MLC_SCALER_OUTPUTS, SMALL_IN = 1024 };
// a queued step's finish calls (predict before the step, the step)
enum { QUEUE_CALLS = 2, QUEUE_COPIES = QUEUE_CALLS * (NOUT + 1) };
// the pinned regions of the small uploads: a call of a queued step each,
// and one for the calls outside the queue
enum { SMALL_REGIONS = MLC_CUDA_QUEUE_DEPTH * QUEUE_CALLS + 1 };

// One queued step's results: the downloads into res (pinned), the flags'
// offsets there, and where each result goes when collected.
typedef struct Queued {
  unsigned char *res;   // pinned, QUEUE_CALLS * res_bytes
  size_t bytes;
  CUevent done;         // recorded on the compute stream after the downloads
  size_t used;
  int nflags, ncopies;
  size_t flag[QUEUE_CALLS];
  void *dst[QUEUE_COPIES];
  size_t off[QUEUE_COPIES], n[QUEUE_COPIES];
} Queued;

struct MlcDevice {
  MlcLauncher launcher; // first: the launcher callbacks get the device
  const MlcModel *m;
  const MlcDeviceModel *dm;
  MlcCuda *c;
  MlcCudaModule *mod;
  MlcCudaFunc **fn;     // per kernel of dm->kernels
  int nkernels, nmessages;
  MlcDevPtr base;       // the arena
  size_t bytes;
  size_t state_off[256], state_bytes[256];
  size_t small_out, small_in, big_out, big_bytes, slot_off[2], slot_bytes, scratch, scratch_bytes;
  size_t small_used;    // small inputs handed out since the last finish
  int64_t cap;          // the batch the buffers are sized for
  int64_t syms[MLC_MAX_SYMS];
  MlcCudaStage stage;
  bool staged;
  // the inputs in each slot: their host buffers and batch
  const void *slot_in[2][MLC_MAX_INPUTS];
  int64_t slot_b[2];
  int slot_n[2];
  int cur;              // the slot the current call reads (-1: none)
  bool prefetched;      // slot 1 - cur holds the next batch, uploaded
  int64_t (*next)(void *user, const void **inputs);
  void *next_user;
  unsigned char *res;   // pinned: the flag and the results of a call
  size_t res_bytes;
  unsigned char *hsmall; // pinned: the small uploads' regions (stage_small)
  size_t hsmall_used;   // bytes of the current call's region handed out
  Queued q[MLC_CUDA_QUEUE_DEPTH]; // a ring: q[qhead] the oldest of qcount
  int qhead, qcount;
  bool qopen;           // finish queues into q[(qhead + qcount) % depth]
  char name[320];
  char err[1024];
};

static size_t up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

static int dev_err(MlcDevice *d, const char *msg) {
  snprintf(d->err, sizeof d->err, "%s", msg);
  return -1;
}

// ---- launches ------------------------------------------------------------------------------
static int launch(MlcLauncher *l, int k, int64_t grid, int64_t block, void **params) {
  MlcDevice *d = (MlcDevice *)l;
  if (k < 0 || k >= d->nkernels) return rt_err(d->err, sizeof d->err, "kernel %d out of range", k);
  if (grid > 0x7fffffff || block > 1024)
    return rt_err(d->err, sizeof d->err, "kernel %s: grid %lld x block %lld exceeds the device's limits",
                  d->dm->kernels[k], (long long)grid, (long long)block);
  unsigned g[3] = {(unsigned)grid, 1, 1}, b[3] = {(unsigned)block, 1, 1};
  char why[800];
  if (mlc_cuda_launch(d->c, d->fn[k], g, b, 0, MLC_CUDA_COMPUTE, params, why, sizeof why))
    return rt_err(d->err, sizeof d->err, "kernel %s: %s", d->dm->kernels[k], why);
  return 0;
}

// ---- buffers -------------------------------------------------------------------------------
static int64_t state_bytes(const MlcStateDesc *s) {
  int64_t n = 1;
  for (int k = 0; k < s->rank; k++) n *= s->shape[k];
  return n * (int64_t)mlc_dtype_size(s->dtype);
}

static size_t sample_bytes(const MlcDevice *d, int i) {
  return mlc_dtype_size(d->m->inputs[i].dtype) * (size_t)mlc_input_numel(&d->m->inputs[i], d->syms);
}

// The arena's layout for batches up to b; its size.
static size_t layout(MlcDevice *d, int64_t b) {
  const MlcModel *m = d->m;
  size_t off = ALIGN; // the flag
  d->small_out = off, off += NOUT * ALIGN;
  d->small_in = off, off += SMALL_IN;
  for (int i = 0; i < m->nstates; i++) {
    d->state_off[i] = off;
    d->state_bytes[i] = (size_t)state_bytes(&m->states[i]);
    off += up(d->state_bytes[i]);
  }
  int64_t on = mlc_output_numel(m, d->syms);
  d->big_bytes = (size_t)b * (size_t)(on > 0 ? on : 1) * sizeof(float);
  d->big_out = off, off += up(d->big_bytes);
  d->slot_bytes = 0;
  for (int i = 0; i < m->ninputs; i++) d->slot_bytes += up((size_t)b * sample_bytes(d, i));
  d->slot_off[0] = off, off += d->slot_bytes;
  d->slot_off[1] = off, off += d->slot_bytes;
  d->scratch_bytes = d->dm->scratch_bytes ? d->dm->scratch_bytes(b, d->syms) : 0;
  d->scratch = off, off += up(d->scratch_bytes);
  return off;
}

static int transfer_state(MlcDevice *d, void *const *host, bool down, char *err, size_t errlen) {
  for (int i = 0; i < d->m->nstates; i++) {
    MlcDevPtr p = d->base + d->state_off[i];
    int rc = down ? mlc_cuda_download(d->c, host[i], p, d->state_bytes[i], MLC_CUDA_COMPUTE, err, errlen)
                  : mlc_cuda_upload(d->c, p, host[i], d->state_bytes[i], MLC_CUDA_COMPUTE, err, errlen);
    if (rc) return -1;
  }
  return mlc_cuda_sync(d->c, MLC_CUDA_COMPUTE, err, errlen);
}

static int push_state(MlcDevice *d, void *const *host, char *err, size_t errlen) {
  return transfer_state(d, host, false, err, errlen);
}

static int pull_state(MlcDevice *d, void *const *host, char *err, size_t errlen) {
  return transfer_state(d, host, true, err, errlen);
}

// Buffers for batches up to b: a larger arena keeps the state (through the
// host), the stage and the pinned results are made anew.
static int reserve(MlcDevice *d, int64_t b, const int64_t *syms, char *err, size_t errlen) {
  if (b <= d->cap && d->base) return 0;
  for (int k = 0; k < MLC_MAX_SYMS && syms && k < d->m->nsyms; k++) d->syms[k] = syms[k];
  void **keep = NULL;
  if (d->base) { // the state, through the host
    keep = calloc((size_t)d->m->nstates + 1, sizeof *keep);
    for (int i = 0; keep && i < d->m->nstates; i++)
      if (!(keep[i] = malloc(d->state_bytes[i] ? d->state_bytes[i] : 1))) return rt_err(err, errlen, "out of memory");
    if (!keep || pull_state(d, keep, err, errlen)) return -1;
  }
  size_t bytes = layout(d, b);
  int rc = mlc_cuda_arena(d->c, bytes, &d->base, err, errlen);
  if (!rc && keep) rc = push_state(d, keep, err, errlen);
  for (int i = 0; keep && i < d->m->nstates; i++) free(keep[i]);
  free(keep);
  if (rc) return -1;
  d->bytes = bytes, d->cap = b;
  if (d->staged) mlc_cuda_stage_free(&d->stage);
  d->staged = false;
  if (mlc_cuda_stage_init(&d->stage, d->c, d->slot_bytes ? d->slot_bytes : ALIGN, d->base + d->slot_off[0],
                          d->base + d->slot_off[1], err, errlen))
    return -1;
  d->staged = true;
  d->cur = -1, d->prefetched = false, d->slot_b[0] = d->slot_b[1] = -1;
  mlc_cuda_host_free(d->c, d->res);
  d->res_bytes = ALIGN + NOUT * ALIGN + up(d->big_bytes);
  if (!(d->res = mlc_cuda_host_alloc(d->c, d->res_bytes, err, errlen))) return -1;
  if (!d->hsmall && !(d->hsmall = mlc_cuda_host_alloc(d->c, SMALL_REGIONS * SMALL_IN, err, errlen))) return -1;
  d->hsmall_used = 0;
  return 0;
}

// ---- opening -------------------------------------------------------------------------------
static void dev_close(MlcDevice *d) {
  if (!d) return;
  char ignore[256];
  for (int i = 0; i < MLC_CUDA_QUEUE_DEPTH; i++) {
    if (d->q[i].done) MLC_CU(d->c, cuEventDestroy, (d->q[i].done), ignore, sizeof ignore);
    if (d->q[i].res) mlc_cuda_host_free(d->c, d->q[i].res);
  }
  if (d->staged) mlc_cuda_stage_free(&d->stage);
  if (d->res) mlc_cuda_host_free(d->c, d->res);
  if (d->hsmall) mlc_cuda_host_free(d->c, d->hsmall);
  free(d->fn);
  mlc_cuda_module_unload(d->mod);
  mlc_cuda_close(d->c);
  free(d);
}

static MlcDevice *dev_open(const MlcModel *m, int ordinal, char *err, size_t errlen) {
  if (!m->device) return rt_err(err, errlen, "model %s was built without --target cuda", m->name), NULL;
  if (m->nstates > 256) return rt_err(err, errlen, "model %s has more than 256 state tensors", m->name), NULL;
  MlcDevice *d = calloc(1, sizeof *d);
  if (!d) return rt_err(err, errlen, "out of memory"), NULL;
  d->launcher.launch = launch;
  d->m = m, d->dm = m->device, d->cur = -1;
  while (d->dm->kernels[d->nkernels]) d->nkernels++;
  while (d->dm->messages[d->nmessages]) d->nmessages++;
  if (!(d->c = mlc_cuda_open(ordinal, err, errlen)) ||
      !(d->mod = mlc_cuda_module_load(d->c, d->dm->bundle, (size_t)*d->dm->bundle_size, err, errlen)) ||
      !(d->fn = calloc((size_t)d->nkernels + 1, sizeof *d->fn))) {
    if (d->c && d->mod && !d->fn) rt_err(err, errlen, "out of memory");
    dev_close(d);
    return NULL;
  }
  for (int k = 0; k < d->nkernels; k++)
    if (!(d->fn[k] = mlc_cuda_function(d->mod, d->dm->kernels[k], err, errlen))) {
      dev_close(d);
      return NULL;
    }
  const MlcCudaInfo *in = mlc_cuda_info(d->c);
  const MlcCudaImage *im = mlc_cuda_module_image(d->mod);
  snprintf(d->name, sizeof d->name, "%s (sm_%d; %s_%d %s)", in->name, in->sm,
           im->kind == MLC_CUDA_CUBIN ? "sm" : "compute", im->arch, im->kind == MLC_CUDA_CUBIN ? "cubin" : "PTX");
  return d;
}

static const char *dev_name(const MlcDevice *d) { return d->name; }
static const char *dev_error(const MlcDevice *d) { return d->err; }

static void set_next(MlcDevice *d, int64_t (*next)(void *, const void **), void *user) {
  d->next = next, d->next_user = user;
}

// ---- a call's buffers -------------------------------------------------------------------------
// Slot `slot` holds inputs [0, n) of this batch (it may hold more).
static bool same(const MlcDevice *d, int slot, const void *const *in, int n, int64_t b) {
  if (d->slot_b[slot] != b || d->slot_n[slot] < n) return false;
  for (int i = 0; i < n; i++)
    if (d->slot_in[slot][i] != in[i]) return false;
  return true;
}

// Packs inputs [0, n) of a batch of b into slot s and uploads it on the copy stream.
static int upload(MlcDevice *d, int s, const void *const *in, int n, int64_t b) {
  if (b > d->cap)
    return rt_err(d->err, sizeof d->err, "batch %lld exceeds the device buffers (%lld)", (long long)b,
                  (long long)d->cap);
  unsigned char *h = mlc_cuda_stage_host(&d->stage, s, d->err, sizeof d->err);
  if (!h) return -1;
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    size_t len = (size_t)b * sample_bytes(d, i);
    memcpy(h + off, in[i], len);
    off += up((size_t)d->cap * sample_bytes(d, i));
  }
  if (mlc_cuda_stage_upload(&d->stage, s, off, d->err, sizeof d->err)) return -1;
  for (int i = 0; i < n; i++) d->slot_in[s][i] = in[i];
  d->slot_n[s] = n, d->slot_b[s] = b;
  return 0;
}

static int inputs(MlcDevice *d, const void *const *in, int n, int64_t b, uint64_t *dev) {
  int s;
  // the buffers the prefetch read (the loader keeps them as they were until
  // it hands them out); any other call uploads anew, even from the same
  // buffers (their contents may have changed)
  if (d->prefetched && same(d, 1 - d->cur, in, n, b)) {
    s = 1 - d->cur;
  } else {
    s = d->cur < 0 ? 0 : 1 - d->cur;
    if (upload(d, s, in, n, b)) return -1;
  }
  d->prefetched = false;
  MlcDevPtr p;
  if (mlc_cuda_stage_acquire(&d->stage, s, &p, d->err, sizeof d->err)) return -1;
  d->cur = s;
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    dev[i] = p + off;
    off += up((size_t)d->cap * sample_bytes(d, i));
  }
  return 0;
}

static uint64_t state_addr(MlcDevice *d, int i) { return d->base + d->state_off[i]; }

// The pinned region of the current call: in a queued step its slot's
// region for the step's next finish, else the last one.
static unsigned char *small_region(MlcDevice *d) {
  int r = SMALL_REGIONS - 1;
  if (d->qopen) {
    const Queued *q = &d->q[(d->qhead + d->qcount) % MLC_CUDA_QUEUE_DEPTH];
    if (q->nflags >= QUEUE_CALLS) return NULL;
    r = (d->qhead + d->qcount) % MLC_CUDA_QUEUE_DEPTH * QUEUE_CALLS + q->nflags;
  }
  return d->hsmall + (size_t)r * SMALL_IN;
}

// Uploads n bytes of v to dst from a pinned copy (see the top of the file);
// what does not fit the call's region is uploaded from v and waited for.
static int stage_small(MlcDevice *d, MlcDevPtr dst, const void *v, size_t n) {
  size_t at = (d->hsmall_used + 15) & ~(size_t)15;
  unsigned char *h = d->hsmall ? small_region(d) : NULL;
  if (!h || at + n > SMALL_IN)
    return mlc_cuda_upload(d->c, dst, v, n, MLC_CUDA_COMPUTE, d->err, sizeof d->err) ||
           mlc_cuda_sync(d->c, MLC_CUDA_COMPUTE, d->err, sizeof d->err);
  memcpy(h + at, v, n);
  d->hsmall_used = at + n;
  return mlc_cuda_upload(d->c, dst, h + at, n, MLC_CUDA_COMPUTE, d->err, sizeof d->err);
}

static int set_state(MlcDevice *d, int i, const void *v, size_t n) {
  if (i < 0 || i >= d->m->nstates || n > d->state_bytes[i])
    return rt_err(d->err, sizeof d->err, "set_state: state %d, %zu bytes", i, n);
  return stage_small(d, d->base + d->state_off[i], v, n);
}

static uint64_t output(MlcDevice *d, int k, size_t bytes) {
  if (bytes > ALIGN) return bytes <= d->big_bytes ? d->base + d->big_out : 0;
  return k >= 0 && k < NOUT ? d->base + d->small_out + (size_t)k * ALIGN : 0;
}

// Copies v (n bytes) into the small-input area; its device address (0 when full).
static uint64_t scalar(MlcDevice *d, const void *v, size_t n) {
  size_t at = up(d->small_used);
  if (at + n > SMALL_IN) return 0;
  if (stage_small(d, d->base + d->small_in + at, v, n)) return 0;
  d->small_used = at + n;
  return d->base + d->small_in + at;
}

// The next batch into the other slot, on the copy stream, while the
// compute stream works on this one.
static int prefetch(MlcDevice *d) {
  if (!d->next || d->prefetched || d->cur < 0) return 0;
  const void *in[MLC_MAX_INPUTS] = {0};
  int64_t b = d->next(d->next_user, in);
  if (b <= 0 || b > d->cap) return 0;
  int s = 1 - d->cur;
  if (upload(d, s, in, d->m->ninputs, b)) return -1;
  d->prefetched = true;
  return 0;
}

// The launches of fn; after a call that writes the state (a train step, the
// plateau update) the next batch's upload is queued behind them (prefetch),
// not after predict or eval, which the training loop runs between steps on
// other data.
static int run(MlcDevice *d, MlcDeviceProgram fn, const int64_t *dims, const uint64_t *in, const uint64_t *out,
               const uint64_t *state, uint64_t seed, int writes) {
  if (mlc_cuda_zero(d->c, d->base, 4, MLC_CUDA_COMPUTE, d->err, sizeof d->err)) return -1;
  if (fn(&d->launcher, dims, in, out, state, d->base + d->scratch, seed, d->base)) return -1;
  if (d->cur >= 0 && mlc_cuda_stage_release(&d->stage, d->cur, d->err, sizeof d->err)) return -1;
  return writes ? prefetch(d) : 0;
}

// A check flag's message (flag: its number + 1).
static int flag_error(MlcDevice *d, uint32_t flag) {
  const char *msg = flag <= (uint32_t)d->nmessages ? d->dm->messages[flag - 1] : "a run-time check failed";
  snprintf(d->err, sizeof d->err, "%s", msg);
  return 1;
}

// finish inside a queued step: the flag and the results into the open
// slot, its event recorded behind them; no wait.
static int finish_queued(MlcDevice *d, void *const *out, const uint64_t *dev, const size_t *n, int k) {
  Queued *q = &d->q[(d->qhead + d->qcount) % MLC_CUDA_QUEUE_DEPTH];
  if (q->nflags == QUEUE_CALLS) return dev_err(d, "finish: too many calls in a queued step");
  if (q->used + ALIGN > q->bytes) return dev_err(d, "finish: results larger than their buffer");
  q->flag[q->nflags++] = q->used;
  if (mlc_cuda_download(d->c, q->res + q->used, d->base, 4, MLC_CUDA_COMPUTE, d->err, sizeof d->err)) return -1;
  q->used += ALIGN;
  for (int i = 0; i < k; i++) {
    if (!out[i] || !n[i] || !dev[i]) continue;
    if (q->used + n[i] > q->bytes || q->ncopies == QUEUE_COPIES)
      return dev_err(d, "finish: results larger than their buffer");
    if (mlc_cuda_download(d->c, q->res + q->used, dev[i], n[i], MLC_CUDA_COMPUTE, d->err, sizeof d->err))
      return -1;
    q->dst[q->ncopies] = out[i], q->off[q->ncopies] = q->used, q->n[q->ncopies++] = n[i];
    q->used += up(n[i]);
  }
  d->small_used = 0, d->hsmall_used = 0;
  return MLC_CU(d->c, cuEventRecord, (q->done, d->c->stream[MLC_CUDA_COMPUTE]), d->err, sizeof d->err);
}

static int finish(MlcDevice *d, void *const *out, const uint64_t *dev, const size_t *n, int k) {
  size_t off[NOUT + 1] = {0}, at = ALIGN;
  if (k > NOUT) return dev_err(d, "finish: too many outputs");
  if (d->qopen) return finish_queued(d, out, dev, n, k);
  if (mlc_cuda_download(d->c, d->res, d->base, 4, MLC_CUDA_COMPUTE, d->err, sizeof d->err)) return -1;
  for (int i = 0; i < k; i++) {
    if (!out[i] || !n[i] || !dev[i]) continue;
    if (at + n[i] > d->res_bytes) return dev_err(d, "finish: results larger than their buffer");
    off[i] = at;
    if (mlc_cuda_download(d->c, d->res + at, dev[i], n[i], MLC_CUDA_COMPUTE, d->err, sizeof d->err)) return -1;
    at += up(n[i]);
  }
  d->small_used = 0, d->hsmall_used = 0;
  if (mlc_cuda_sync(d->c, MLC_CUDA_COMPUTE, d->err, sizeof d->err)) return -1;
  uint32_t flag;
  memcpy(&flag, d->res, 4);
  if (flag) return flag_error(d, flag);
  for (int i = 0; i < k; i++)
    if (out[i] && n[i] && dev[i]) memcpy(out[i], d->res + off[i], n[i]);
  return 0;
}

// ---- queued steps ------------------------------------------------------------------------------
// on: the calls until queue(d, 0) are one step whose results collect hands
// out later (-1 when QUEUE_DEPTH steps are pending: collect one first).
static int queue(MlcDevice *d, int on) {
  if (!on) { // a step that failed before its first finish queued nothing: its slot stays free
    if (d->qopen) d->qopen = false, d->qcount += d->q[(d->qhead + d->qcount) % MLC_CUDA_QUEUE_DEPTH].nflags > 0;
    return 0;
  }
  if (d->qopen) return dev_err(d, "queue: a queued step is already open");
  if (d->qcount == MLC_CUDA_QUEUE_DEPTH) return dev_err(d, "queue: every result slot is pending");
  Queued *q = &d->q[(d->qhead + d->qcount) % MLC_CUDA_QUEUE_DEPTH];
  size_t want = QUEUE_CALLS * d->res_bytes;
  if (q->bytes < want) {
    mlc_cuda_host_free(d->c, q->res);
    q->bytes = 0;
    if (!(q->res = mlc_cuda_host_alloc(d->c, want, d->err, sizeof d->err))) return -1;
    q->bytes = want;
  }
  if (!q->done && MLC_CU(d->c, cuEventCreate, (&q->done, CU_EVENT_DISABLE_TIMING), d->err, sizeof d->err))
    return -1;
  q->used = 0, q->nflags = 0, q->ncopies = 0;
  d->qopen = true, d->hsmall_used = 0;
  return 0;
}

static int pending(const MlcDevice *d) { return d->qcount; }

// The oldest queued step: waits for its event, then its first set flag (1,
// error(d) its message) or its results copied out (0); -1 when none.
static int collect(MlcDevice *d) {
  if (!d->qcount) return dev_err(d, "collect: no queued step");
  Queued *q = &d->q[d->qhead];
  d->qhead = (d->qhead + 1) % MLC_CUDA_QUEUE_DEPTH, d->qcount--;
  if (MLC_CU(d->c, cuEventSynchronize, (q->done), d->err, sizeof d->err)) return -1;
  for (int i = 0; i < q->nflags; i++) {
    uint32_t flag;
    memcpy(&flag, q->res + q->flag[i], 4);
    if (flag) return flag_error(d, flag);
  }
  for (int i = 0; i < q->ncopies; i++) memcpy(q->dst[i], q->res + q->off[i], q->n[i]);
  return 0;
}

const MlcDeviceOps mlc_cuda_device_ops = {
    .open = dev_open, .close = dev_close, .name = dev_name, .reserve = reserve,
    .push_state = push_state, .pull_state = pull_state, .set_next = set_next,
    .inputs = inputs, .state = state_addr, .set_state = set_state, .output = output,
    .scalar = scalar, .run = run, .finish = finish, .error = dev_error,
    .queue = queue, .pending = pending, .collect = collect,
};
