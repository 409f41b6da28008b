// instance.c — model instances: one model's state, scratch arena, output
// buffer and thread pool, and the calls on them (mlc_rt.h, instance.h).
//
// The embedding API of every `mlc build --emit lib` header is a typed
// wrapper of mlc_instance_*; the generated program's driver uses the same
// instance through instance.h. What the API checks at its boundary, before
// any kernel runs (mlc_rt.h states the contract, docs/embedding.md the
// user's view): a NULL instance, path or buffer; the options' ranges; the
// batch (1..MLC_MAX_BATCH, and every buffer size it implies computed with
// overflow checks); integer inputs against the model's ranges (labels,
// embedding rows) and float inputs for NaN/Inf.
//
// Scratch: the model's scratch_bytes(b) is a sum (or a max of sums) of
// 64-byte aligned buffers whose sizes are polynomials in b with
// non-negative coefficients, of degree at most 16 in b (the memory plan,
// compiler/kernel/memplan.c, multiplies at most 8 atoms), so doubling b
// multiplies it by at most 2^16. scratch_size grows b by doublings and
// stops past RT_MAX_BYTES, so the model's own int64 arithmetic never sees
// a batch that could wrap it.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "kernels/cpu/mlc_kernels.h"
#include "instance.h"
#include "rng.h"
#include "rt_util.h"
#include "team.h"

// Why the last call on a NULL instance, or the last failed
// mlc_instance_new, failed (mlc_instance_error(NULL)).
static _Thread_local char last_error[1024];

// ---- memory --------------------------------------------------------------------------

static void *hook_alloc(const MlcOptions *o, int64_t n, void **raw) {
  void *p = n < 0 || n > RT_MAX_BYTES ? NULL
            : o->alloc          ? o->alloc((size_t)n + 64, o->user)
                                : malloc((size_t)n + 64);
  *raw = p;
  if (!p) return NULL;
  void *q = (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
  memset(q, 0, (size_t)n);
  return q;
}

static void hook_free(const MlcOptions *o, void *raw) {
  if (!raw) return;
  if (o->free) o->free(raw, o->user);
  else free(raw);
}

static int64_t state_bytes(const MlcStateDesc *d) {
  int64_t n = 1;
  for (int k = 0; k < d->rank; k++)
    if (!rt_mul(&n, d->shape[k])) return -1;
  return rt_bytes(n, mlc_dtype_size(d->dtype));
}

static int drain(MlcInstance *in, const char *fn);

void mlc_instance_free(MlcInstance *in) {
  if (!in) return;
  drain(in, "destroy"); // the results' destinations are the caller's until then
  MlcOptions o = in->opt;
  if (in->dev) in->m->device->ops->close(in->dev);
  mlc_team_free(in->team); // before its pool
  if (in->ctx.pool) mlc_pool_free(in->ctx.pool);
  mlc_gemm_cache_free(in->gcache);
  for (int i = 0; in->raw && i < in->m->nstates; i++) hook_free(&o, in->raw[i]);
  hook_free(&o, in->state_raw), hook_free(&o, in->rawv_raw);
  hook_free(&o, in->scratch_raw), hook_free(&o, in->logits_raw), hook_free(&o, in->self_raw);
}

// ---- sizes ---------------------------------------------------------------------------

// The scratch bytes for batch b, or -1 with a message when b is too large.
// The model's scratch_bytes is evaluated at 1, 2, 4, .. up to b, each
// result held to RT_MAX_BYTES: by the bound in this file's opening
// comment the next value is then at most 2^16 times larger, below 2^63, so
// the model's own arithmetic never wraps on the way to b.
static int64_t scratch_size(const MlcModel *m, int64_t b, const int64_t *syms, char *err,
                            size_t errlen) {
  if (!m->scratch_bytes) return 0;
  int64_t x = 1, s = (int64_t)m->scratch_bytes(1, syms);
  while (s >= 0 && s <= RT_MAX_BYTES && x < b) {
    x = x > b / 2 ? b : 2 * x;
    s = (int64_t)m->scratch_bytes(x, syms);
  }
  if (s < 0 || s > RT_MAX_BYTES)
    return rt_err(err, errlen, "batch %lld is too large: its scratch arena would exceed %lld bytes",
                  (long long)b, (long long)RT_MAX_BYTES);
  return s;
}

int rt_instance_reserve(MlcInstance *in, int64_t b) {
  if (b < 1 || b > MLC_MAX_BATCH)
    return rt_err(in->err, sizeof in->err, "batch %lld is out of range 1..%lld", (long long)b,
                  (long long)MLC_MAX_BATCH);
  if (b <= in->capacity) return 0;
  if (in->dev && in->m->device->ops->reserve(in->dev, b, in->ctx.syms, in->err, sizeof in->err)) return -1;
  int64_t sb = scratch_size(in->m, b, in->ctx.syms, in->err, sizeof in->err);
  int64_t lb = b;
  if (sb < 0) return -1;
  if (!rt_mul(&lb, in->out_numel ? in->out_numel : 1) || (lb = rt_bytes(lb, sizeof(float))) < 0)
    return rt_err(in->err, sizeof in->err, "batch %lld is too large: its outputs would exceed %lld "
                  "bytes", (long long)b, (long long)RT_MAX_BYTES);
  // the new buffers first: when they cannot be had, the old ones stay
  void *sraw = NULL, *lraw = NULL;
  void *scratch = hook_alloc(&in->opt, sb, &sraw);
  float *logits = scratch ? hook_alloc(&in->opt, lb, &lraw) : NULL;
  if (!logits) {
    hook_free(&in->opt, sraw);
    return rt_err(in->err, sizeof in->err, "out of memory allocating %lld bytes for batch %lld",
                  (long long)(sb + lb), (long long)b);
  }
  hook_free(&in->opt, in->scratch_raw), hook_free(&in->opt, in->logits_raw);
  in->scratch_raw = sraw, in->logits_raw = lraw;
  in->ctx.scratch = scratch, in->ctx.scratch_size = (size_t)sb, in->logits = logits;
  in->capacity = b;
  return 0;
}

// ---- creation --------------------------------------------------------------------------

MlcOptions mlc_instance_defaults(const MlcModel *m) {
  if (!m) return (MlcOptions){.steps_per_epoch = 1, .epochs = 1};
  const MlcRecipe *r = &m->recipe;
  return (MlcOptions){.seed = r->seed, .max_batch = r->batch, .steps_per_epoch = 1,
                      .epochs = r->epochs};
}

static int check_options(const MlcOptions *o, char *err, size_t errlen) {
  if (o->threads < 0 || o->threads > MLC_MAX_THREADS)
    return rt_err(err, errlen, "options: threads = %d is out of range 0..%d", o->threads,
                  MLC_MAX_THREADS);
  if (o->max_batch < 0 || o->max_batch > MLC_MAX_BATCH)
    return rt_err(err, errlen, "options: max_batch = %lld is out of range 0..%lld",
                  (long long)o->max_batch, (long long)MLC_MAX_BATCH);
  int64_t total = o->steps_per_epoch > 0 ? o->steps_per_epoch : 1;
  if (o->steps_per_epoch < 0 || o->epochs < 0 || !rt_mul(&total, o->epochs > 0 ? o->epochs : 1) ||
      total > MLC_CKPT_MAX_STEP)
    return rt_err(err, errlen, "options: steps_per_epoch = %lld and epochs = %lld must be >= 0 "
                  "with a product up to %lld", (long long)o->steps_per_epoch,
                  (long long)o->epochs, (long long)MLC_CKPT_MAX_STEP);
  if (!o->alloc != !o->free)
    return rt_err(err, errlen, "options: alloc and free must be given together");
  if (o->device != MLC_DEVICE_CPU && o->device != MLC_DEVICE_CUDA && o->device != MLC_DEVICE_AUTO)
    return rt_err(err, errlen, "options: device = %d is not MLC_DEVICE_CPU, MLC_DEVICE_CUDA or MLC_DEVICE_AUTO",
                  o->device);
  if (o->queue_steps < 0 || o->queue_steps > MLC_CUDA_QUEUE_DEPTH)
    return rt_err(err, errlen, "options: queue_steps = %d is out of range 0..%d", o->queue_steps,
                  MLC_CUDA_QUEUE_DEPTH);
  return 0;
}

// The device the options ask for: the model's ops open it (the driver, the
// module, the state's place); one line on failure ("no CUDA device").
// MLC_DEVICE_AUTO takes the GPU when the model has a device side and one
// opens, else the CPU (unless the model runs only on the GPU); in->device
// says which, and why not the GPU.
static int open_device(MlcInstance *in, char *err, size_t errlen) {
  const MlcModel *m = in->m;
  int want = in->opt.device;
  snprintf(in->device, sizeof in->device, "cpu");
  if (want == MLC_DEVICE_CPU) {
    if (m->device_only)
      return rt_err(err, errlen, "model %s was built with --target cuda alone: it runs only on a CUDA device",
                    m->name);
    return 0;
  }
  if (!m->device || !m->device->ops) {
    if (want == MLC_DEVICE_AUTO) return 0;
    return rt_err(err, errlen, "model %s was built without --target cuda: it runs only on the CPU", m->name);
  }
  char why[512];
  if (!(in->dev = m->device->ops->open(m, 0, why, sizeof why))) {
    if (want == MLC_DEVICE_CUDA || m->device_only) return rt_err(err, errlen, "%s", why);
    snprintf(in->device, sizeof in->device, "cpu (%.380s)", why);
    return 0;
  }
  snprintf(in->device, sizeof in->device, "cuda: %.380s", m->device->ops->name(in->dev));
  in->ctx.device = in->dev;
  return 0;
}

const char *mlc_instance_device(const MlcInstance *in) { return in ? in->device : "cpu"; }

int rt_instance_to_device(MlcInstance *in) {
  mlc_gemm_cache_clear(in->gcache);
  if (!in->dev) return 0;
  return in->m->device->ops->push_state(in->dev, in->state, in->err, sizeof in->err);
}

int rt_instance_from_device(const MlcInstance *in) {
  if (!in->dev) return 0;
  return in->m->device->ops->pull_state(in->dev, in->state, (char *)in->err, sizeof in->err);
}

static bool alloc_state(MlcInstance *in) {
  const MlcModel *m = in->m;
  int64_t pb = rt_bytes((int64_t)m->nstates + 1, sizeof(void *));
  in->state = hook_alloc(&in->opt, pb, &in->state_raw);
  in->raw = hook_alloc(&in->opt, pb, &in->rawv_raw);
  bool ok = in->state && in->raw;
  for (int i = 0; ok && i < m->nstates; i++) {
    int64_t n = state_bytes(&m->states[i]);
    ok = n >= 0 && (in->state[i] = hook_alloc(&in->opt, n, &in->raw[i])) != NULL;
  }
  return ok;
}

// The parameters are constant during predict and eval, so the GEMM may
// keep transposed copies of them (mlc_kernels.h, "Constant operands"):
// each f32 parameter is a constant range of the instance's cache. The
// cache is an optimisation: without memory for it, there is none.
static void gemm_cache_init(MlcInstance *in) {
  const MlcModel *m = in->m;
  if (in->dev || !(in->gcache = mlc_gemm_cache_new())) return;
  for (int i = 0; i < m->nstates; i++)
    if (m->states[i].kind == MLC_STATE_PARAM && m->states[i].dtype == MLC_F32 &&
        mlc_gemm_cache_add(in->gcache, in->state[i], (size_t)state_bytes(&m->states[i]))) {
      mlc_gemm_cache_free(in->gcache);
      in->gcache = NULL;
      return;
    }
}

MlcInstance *rt_instance_new(const MlcModel *m, const MlcOptions *opt, const int64_t *syms,
                             char *err, size_t errlen) {
  if (!m) return rt_err(err, errlen, "no model"), NULL;
  if (m->abi != MLC_ABI_VERSION)
    return rt_err(err, errlen, "model %s was compiled for runtime ABI %d; this runtime is ABI %d",
                  m->name, m->abi, MLC_ABI_VERSION), NULL;
  MlcOptions o = opt ? *opt : mlc_instance_defaults(m);
  if (check_options(&o, err, errlen)) return NULL;
  void *raw;
  MlcInstance *in = hook_alloc(&o, sizeof *in, &raw);
  if (!in) return rt_err(err, errlen, "out of memory"), NULL;
  in->self_raw = raw, in->opt = o, in->m = m;
  for (int k = 0; syms && k < m->nsyms && k < MLC_MAX_SYMS; k++) in->ctx.syms[k] = syms[k];
  in->out_numel = mlc_output_numel(m, in->ctx.syms);
  MlcCtx *c = &in->ctx;
  bool ok = in->out_numel >= 0 && alloc_state(in);
  c->model = m, c->state = in->state, c->nonfinite_site = -1;
  c->pool = ok ? mlc_pool_new(o.threads) : NULL;
  if (ok && c->pool && open_device(in, err, errlen)) {
    mlc_instance_free(in);
    return NULL;
  }
  if (ok && c->pool) gemm_cache_init(in);
  if (ok && c->pool && !in->dev) in->team = mlc_team_new(c->pool); // NULL: products fork and join
  int64_t want = o.max_batch > 0 ? o.max_batch : m->recipe.batch > 0 ? m->recipe.batch : 1;
  if (!ok || !c->pool || rt_instance_reserve(in, want)) {
    rt_err(err, errlen, "%s", in->err[0] ? in->err : "out of memory allocating the model's state");
    mlc_instance_free(in);
    return NULL;
  }
  c->rng = mlc_rng_new(o.seed);
  c->lr = m->recipe.lr;
  c->steps_per_epoch = o.steps_per_epoch > 0 ? o.steps_per_epoch : 1;
  c->total_steps = c->steps_per_epoch * (o.epochs > 0 ? o.epochs : 1);
  return in;
}

int rt_instance_init(MlcInstance *in, uint64_t seed) {
  in->ctx.rng = mlc_rng_new(seed);
  if (!in->m->init) {
    mlc_init_state(in->m, seed, in->state);
    return rt_instance_to_device(in);
  }
  MlcDevice *dev = in->ctx.device;
  in->ctx.device = NULL; // a model's own init fills the host state
  int rc = in->m->init(&in->ctx, 0, NULL, NULL);
  in->ctx.device = dev;
  if (rc != MLC_OK) return rt_err(in->err, sizeof in->err, "init: %s", in->ctx.err);
  in->ctx.rng = mlc_rng_new(seed); // init's draws do not shift the training stream
  return rt_instance_to_device(in);
}

MlcInstance *mlc_instance_new(const MlcModel *m, const MlcOptions *opt) {
  MlcInstance *in = rt_instance_new(m, opt, NULL, last_error, sizeof last_error);
  if (in && rt_instance_init(in, in->opt.seed)) {
    snprintf(last_error, sizeof last_error, "%s", in->err);
    mlc_instance_free(in);
    return NULL;
  }
  return in;
}

const char *mlc_instance_error(const MlcInstance *in) { return in ? in->err : last_error; }

// ---- steps -----------------------------------------------------------------------------

int rt_instance_step_into(MlcInstance *in, int64_t b, const void *const *inputs, float out[3], float *logits,
                          float *aux, float *scaler, bool queued) {
  MlcCtx *c = &in->ctx;
  mlc_gemm_cache_clear(in->gcache); // the step updates the parameters
  c->step_seed = mlc_rng_step_seed(&c->rng);
  c->nonfinite_site = -1;
  void *outs[4 + MLC_MAX_AUX + MLC_SCALER_OUTPUTS] = {&out[0], &out[1], &out[2], logits};
  int naux = in->m->naux < MLC_MAX_AUX ? in->m->naux : MLC_MAX_AUX;
  for (int i = 0; i < naux; i++) outs[4 + i] = &aux[i];
  for (int j = 0; in->m->loss_scale && j < MLC_SCALER_OUTPUTS; j++) outs[4 + naux + j] = &scaler[j];
  const MlcDeviceOps *ops = queued ? in->m->device->ops : NULL;
  if (ops && ops->queue(in->dev, 1)) {
    snprintf(c->err, sizeof c->err, "%s", ops->error(in->dev));
    return MLC_ERROR;
  }
  int rc = in->m->train_step(c, b, inputs, outs);
  if (ops) ops->queue(in->dev, 0);
  if (rc == MLC_ERROR) return rc;
  c->step++;
  if (!queued) in->last_lr = out[2], in->last_gnorm = out[1], in->stepped = true;
  return rc;
}

int rt_instance_step(MlcInstance *in, int64_t b, const void *const *inputs, float out[3],
                     float *logits) {
  return rt_instance_step_into(in, b, inputs, out, logits, in->aux, in->scaler, false);
}

int rt_instance_collect(MlcInstance *in, const float out[3]) {
  MlcCtx *c = &in->ctx;
  int rc = in->m->device->ops->collect(in->dev);
  if (rc) {
    const char *msg = in->m->device->ops->error(in->dev);
    snprintf(c->err, sizeof c->err, "%s", msg);
    if (rc != 1 || strncmp(msg, "nonfinite ", 10)) return MLC_ERROR;
    // "nonfinite SITE KIND at ..." (the glue's reading of a failed finite check)
    char *end;
    c->nonfinite_site = (int)strtol(msg + 10, &end, 10);
    c->nonfinite_value = !strncmp(end, " -inf", 5) ? -INFINITY : !strncmp(end, " inf", 4) ? INFINITY : NAN;
    return MLC_NONFINITE;
  }
  in->last_lr = out[2], in->last_gnorm = out[1], in->stepped = true;
  return MLC_OK;
}

int rt_instance_finite(const MlcInstance *in, char *err, size_t errlen) {
  const MlcModel *m = in->m;
  if (rt_instance_from_device(in)) return rt_err(err, errlen, "%s", in->err);
  for (int i = 0; i < m->nstates; i++) {
    const MlcStateDesc *d = &m->states[i];
    // optimizer state may hold infinities by design (plateau's best loss)
    if ((d->dtype != MLC_F32 && d->dtype != MLC_F64) || d->kind == MLC_STATE_OPTIM) continue;
    int64_t n = state_bytes(d) / (int64_t)mlc_dtype_size(d->dtype);
    for (int64_t j = 0; j < n; j++) {
      double v = d->dtype == MLC_F32 ? ((const float *)in->state[i])[j] : ((const double *)in->state[i])[j];
      if (!isfinite(v))
        return rt_err(err, errlen, "the state is no longer finite: '%s' element %lld is %s", d->path,
                      (long long)j, isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
    }
  }
  return 0;
}

// ---- the API's boundary checks -----------------------------------------------------------

// A NULL instance: the message goes where mlc_instance_error(NULL) finds it.
static int null_instance(const char *fn) {
  snprintf(last_error, sizeof last_error, "%s: the model instance is NULL", fn);
  return -1;
}

static double elem(MlcDType dt, const void *p, int64_t k) {
  switch (dt) {
  case MLC_F32: return ((const float *)p)[k];
  case MLC_F64: return ((const double *)p)[k];
  case MLC_I32: return ((const int32_t *)p)[k];
  case MLC_I64: return (double)((const int64_t *)p)[k];
  default: return ((const uint8_t *)p)[k];
  }
}

// Whether n floats are all finite (no exponent field of all ones): the
// exponent bits plus one low exponent step carry into the sign bit exactly
// for an all-ones exponent, so one OR over every element decides, four
// lanes at a time (no branch, no conversion), where the general scan below
// converts each element to double and branches on it.
static bool all_finite_f32(const void *p, int64_t n) {
  typedef uint32_t V4 __attribute__((vector_size(16)));
  const unsigned char *b = p;
  const V4 e = {0x7f800000u, 0x7f800000u, 0x7f800000u, 0x7f800000u};
  const V4 one = {0x00800000u, 0x00800000u, 0x00800000u, 0x00800000u};
  V4 acc = {0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    V4 u;
    memcpy(&u, b + 4 * k, sizeof u);
    acc |= (u & e) + one;
  }
  uint32_t bad = acc[0] | acc[1] | acc[2] | acc[3];
  for (; k < n; k++) {
    uint32_t u;
    memcpy(&u, b + 4 * k, 4);
    bad |= (u & 0x7f800000u) + 0x00800000u;
  }
  return !(bad & 0x80000000u);
}

// Input i of a call: its size for the batch, then every value valid for
// the model (after the buffers are known to fit, so a batch too large for
// memory is refused before anything reads the caller's buffers).
static int check_input(MlcInstance *in, const char *fn, int i, const void *p, int64_t b) {
  const MlcInputDesc *d = &in->m->inputs[i];
  int64_t w = mlc_input_numel(d, in->ctx.syms), n = w;
  if (w < 0 || !rt_mul(&n, b) || rt_bytes(n, mlc_dtype_size(d->dtype)) < 0)
    return rt_err(in->err, sizeof in->err, "%s: batch %lld of in_%s is too large", fn, (long long)b,
                  d->name);
  bool fl = d->dtype == MLC_F32 || d->dtype == MLC_F64;
  int64_t lim = d->num_classes;
  if (d->value_limit && (!lim || d->value_limit < lim)) lim = d->value_limit;
  if (d->dtype == MLC_BOOL && !lim) lim = 2;
  const char *what = lim && lim == d->num_classes ? "the loss's classes"
                     : d->limit_what                ? d->limit_what
                                                    : mlc_dtype_name(d->dtype);
  if (d->dtype == MLC_F32 && all_finite_f32(p, n)) return 0; // the common case; else find the first
  for (int64_t k = 0; k < n; k++) {
    double v = elem(d->dtype, p, k);
    // a label's ignore_index: valid unless another limit (embedding rows) excludes it
    if (!fl && d->has_ignore && v == (double)d->ignore_value &&
        (!d->value_limit || (v >= 0 && v < (double)d->value_limit)))
      continue;
    if (fl && !isfinite(v))
      return rt_err(in->err, sizeof in->err, "%s: in_%s[%lld] (sample %lld) is %s", fn, d->name,
                    (long long)k, (long long)(k / w), isnan(v) ? "NaN" : "infinite");
    if (!fl && lim && (v < 0 || v >= (double)lim))
      return rt_err(in->err, sizeof in->err, "%s: in_%s[%lld] (sample %lld) is %.0f, out of range "
                    "0..%lld (%s)", fn, d->name, (long long)k, (long long)(k / w), v,
                    (long long)lim - 1, what);
  }
  return 0;
}

// The checks every entry-point call makes; nin = the inputs it reads.
static int check_call(MlcInstance *in, const char *fn, int64_t b, const void *const *inputs,
                      int nin) {
  if (b < 1 || b > MLC_MAX_BATCH)
    return rt_err(in->err, sizeof in->err, "%s: batch %lld is out of range 1..%lld", fn,
                  (long long)b, (long long)MLC_MAX_BATCH);
  if (!inputs) return rt_err(in->err, sizeof in->err, "%s: the inputs array is NULL", fn);
  for (int i = 0; i < nin; i++)
    if (!inputs[i])
      return rt_err(in->err, sizeof in->err, "%s: in_%s is NULL", fn, in->m->inputs[i].name);
  if (rt_instance_reserve(in, b)) {
    char why[1024];
    snprintf(why, sizeof why, "%s", in->err);
    return rt_err(in->err, sizeof in->err, "%s: %s", fn, why);
  }
  for (int i = 0; i < nin; i++)
    if (check_input(in, fn, i, inputs[i], b)) return -1;
  return 0;
}

// One entry point's call. constant: it changes no parameter (predict,
// eval), so the GEMM may read its copies of them (gcache) meanwhile, and
// its small products split across the held team (team.h).
static int entry(MlcInstance *in, const char *fn, MlcEntry e, int64_t b, const void *const *inputs,
                 void *const *outs, bool constant) {
  in->ctx.nonfinite_site = -1;
  if (!constant) mlc_gemm_cache_clear(in->gcache);
  MlcGemmCache *was = mlc_gemm_cache_use(constant ? in->gcache : NULL);
  MlcTeam *team_was = mlc_team_use(constant ? in->team : NULL);
  int rc = e(&in->ctx, b, inputs, outs);
  mlc_team_use(team_was);
  mlc_gemm_cache_use(was);
  if (rc != MLC_OK) return rt_err(in->err, sizeof in->err, "%s: %s", fn, in->ctx.err);
  return 0;
}

int mlc_instance_predict(MlcInstance *in, int64_t batch, const void *const *inputs, float *out) {
  if (!in) return null_instance("predict");
  if (drain(in, "predict")) return -1;
  if (!out) return rt_err(in->err, sizeof in->err, "predict: out is NULL");
  if (check_call(in, "predict", batch, inputs, in->m->n_forward_inputs)) return -1;
  void *outs[1] = {out};
  return entry(in, "predict", in->m->predict, batch, inputs, outs, true);
}

int mlc_instance_eval(MlcInstance *in, int64_t batch, const void *const *inputs, float *loss,
                      float *out) {
  if (!in) return null_instance("eval");
  if (drain(in, "eval")) return -1;
  if (check_call(in, "eval", batch, inputs, in->m->ninputs)) return -1;
  float l = 0;
  void *outs[2] = {&l, out ? out : in->logits};
  if (entry(in, "eval", in->m->eval, batch, inputs, outs, true)) return -1;
  if (loss) *loss = l;
  return 0;
}

// A step's loss: -1 with the message when it is not finite.
static int loss_check(MlcInstance *in, const char *fn, int64_t step, float loss) {
  if (isfinite(loss)) return 0;
  return rt_err(in->err, sizeof in->err, "%s: step %lld: the loss is %s; the update has made the state "
                "non-finite (load weights saved before)", fn, (long long)step, isnan(loss) ? "NaN" : "infinite");
}

// The oldest queued step of the API's ring: its results to the caller's
// loss, the last lr / gradient norm / scaler values; -1 when it failed.
static int collect_one(MlcInstance *in, const char *fn) {
  int k = in->qhead;
  in->qhead = (in->qhead + 1) % MLC_CUDA_QUEUE_DEPTH, in->qcount--;
  int rc = rt_instance_collect(in, in->q[k].out);
  if (rc != MLC_OK)
    return rt_err(in->err, sizeof in->err, "%s: step %lld: %s", fn, (long long)in->q[k].step, in->ctx.err);
  memcpy(in->aux, in->q[k].aux, sizeof in->aux);
  memcpy(in->scaler, in->q[k].scaler, sizeof in->scaler);
  if (in->q[k].loss) *in->q[k].loss = in->q[k].out[0];
  return loss_check(in, fn, in->q[k].step, in->q[k].out[0]);
}

// Collects every step in flight, the first failure reported (the later
// steps ran on its state; they are collected all the same).
static int drain(MlcInstance *in, const char *fn) {
  int rc = 0;
  char first[sizeof in->err];
  while (in->qcount)
    if (collect_one(in, fn) && !rc) rc = -1, snprintf(first, sizeof first, "%s", in->err);
  if (rc) snprintf(in->err, sizeof in->err, "%s", first);
  return rc;
}

int mlc_instance_sync(MlcInstance *in) {
  if (!in) return null_instance("sync");
  return drain(in, "sync");
}

// On a device with queue_steps: the step issued into the ring, collected later.
static int train_step_queued(MlcInstance *in, int64_t batch, const void *const *inputs, float *loss) {
  if (in->qcount == in->opt.queue_steps && collect_one(in, "train_step")) return -1;
  int k = (in->qhead + in->qcount) % MLC_CUDA_QUEUE_DEPTH;
  in->q[k].loss = loss, in->q[k].step = in->ctx.step + 1;
  if (rt_instance_step_into(in, batch, inputs, in->q[k].out, NULL, in->q[k].aux, in->q[k].scaler, true) ==
      MLC_ERROR) {
    char why[sizeof in->ctx.err];
    snprintf(why, sizeof why, "%s", in->ctx.err);
    // a step that failed after queueing part of its work holds a device
    // slot of its own: the steps before it are collected, then that slot
    const MlcDeviceOps *ops = in->m->device->ops;
    if (ops->pending(in->dev) > in->qcount) {
      drain(in, "train_step");
      while (ops->pending(in->dev)) ops->collect(in->dev);
    }
    return rt_err(in->err, sizeof in->err, "train_step: %s", why);
  }
  in->qcount++;
  return 0;
}

int mlc_instance_train_step(MlcInstance *in, int64_t batch, const void *const *inputs, float *loss) {
  if (!in) return null_instance("train_step");
  // a larger batch re-lays the device's buffers: nothing may be in flight then
  if (batch > in->capacity && drain(in, "train_step")) return -1;
  if (check_call(in, "train_step", batch, inputs, in->m->ninputs)) return -1;
  in->ctx.epoch = in->ctx.step / in->ctx.steps_per_epoch;
  if (in->dev && in->opt.queue_steps > 0) return train_step_queued(in, batch, inputs, loss);
  float out[3] = {0};
  if (rt_instance_step(in, batch, inputs, out, NULL) == MLC_ERROR)
    return rt_err(in->err, sizeof in->err, "train_step: %s", in->ctx.err);
  if (loss) *loss = out[0];
  return loss_check(in, "train_step", in->ctx.step, out[0]);
}

int mlc_instance_epoch_end(MlcInstance *in, double metric) {
  if (!in) return null_instance("epoch_end");
  if (drain(in, "epoch_end")) return -1;
  if (!in->m->epoch_end)
    return rt_err(in->err, sizeof in->err, "epoch_end: model %s has no per-epoch schedule update",
                  in->m->name);
  if (!isfinite(metric))
    return rt_err(in->err, sizeof in->err, "epoch_end: metric %g is not finite", metric);
  const void *ins[1] = {&metric};
  void *outs[1] = {NULL};
  return entry(in, "epoch_end", in->m->epoch_end, 0, ins, outs, false);
}

// ---- weights and state -----------------------------------------------------------------------

int mlc_instance_load(MlcInstance *in, const char *path) {
  if (!in) return null_instance("load_weights");
  if (drain(in, "load_weights")) return -1;
  if (!path) return rt_err(in->err, sizeof in->err, "load_weights: path is NULL");
  if (rt_instance_from_device(in)) return -1; // a refused file leaves the state as it was
  if (mlc_load_weights(path, in->m, in->state, in->err, sizeof in->err)) return -1;
  return rt_instance_to_device(in);
}

int mlc_instance_save(MlcInstance *in, const char *path) {
  if (!in) return null_instance("save_weights");
  if (drain(in, "save_weights")) return -1;
  if (!path) return rt_err(in->err, sizeof in->err, "save_weights: path is NULL");
  MlcRunState rs = {.epoch = in->ctx.epoch, .step = in->ctx.step, .rng = in->ctx.rng,
                    .seed = in->opt.seed, .lr = in->ctx.lr};
  if (rt_instance_from_device(in)) return -1;
  return mlc_ckpt_save(path, in->m, in->state, &rs, in->err, sizeof in->err);
}

int64_t mlc_instance_steps(const MlcInstance *in) { return in ? in->ctx.step : 0; }
float mlc_instance_last_lr(const MlcInstance *in) { return in ? in->last_lr : NAN; }
float mlc_instance_last_grad_norm(const MlcInstance *in) { return in ? in->last_gnorm : NAN; }

float mlc_instance_last_loss_scale(const MlcInstance *in) {
  if (!in) return NAN;
  return !in->m->loss_scale ? 1.0f : in->stepped ? in->scaler[0] : NAN;
}

int64_t mlc_instance_skipped_steps(const MlcInstance *in) {
  return in && in->m->loss_scale && in->stepped ? (int64_t)in->scaler[2] : 0;
}

void *mlc_instance_state(MlcInstance *in, const char *path, int64_t *numel) {
  if (!in) return null_instance("state"), NULL;
  if (drain(in, "state")) return NULL;
  if (!path) return rt_err(in->err, sizeof in->err, "state: path is NULL"), NULL;
  for (int i = 0; i < in->m->nstates; i++) {
    const MlcStateDesc *d = &in->m->states[i];
    if (strcmp(d->path, path)) continue;
    if (numel) *numel = state_bytes(d) / (int64_t)mlc_dtype_size(d->dtype);
    // the caller may write through the pointer at any time from now on
    mlc_gemm_cache_remove(in->gcache, in->state[i]);
    if (rt_instance_from_device(in)) return NULL; // the host copy is the device's now
    return in->state[i];
  }
  rt_err(in->err, sizeof in->err, "state: model %s has no state '%s'", in->m->name, path);
  return NULL;
}
