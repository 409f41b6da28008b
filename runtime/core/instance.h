// instance.h — a model instance's internals (instance.c), private to
// runtime/: the generated program's driver runs its training on the same
// instance the embedding API wraps, so state allocation, scratch sizing,
// weight loading and the step bookkeeping exist once.
#ifndef MLC_RT_INSTANCE_H
#define MLC_RT_INSTANCE_H

#include "mlc_rt.h"

struct MlcInstance {
  const MlcModel *m;
  MlcOptions opt;
  MlcCtx ctx;            // ctx.state = state, ctx.scratch sized for `capacity`
  void **state;          // m->nstates tensors, 64-byte aligned
  void **raw;            // what the allocator returned for each (for free)
  void *state_raw, *rawv_raw, *scratch_raw, *logits_raw, *self_raw;
  float *logits;         // [capacity, out_numel]: forward outputs
  int64_t capacity;      // batch that scratch and logits are sized for
  int64_t out_numel;     // forward output floats per sample
  float last_lr, last_gnorm;
  float aux[MLC_MAX_AUX]; // the last train_step's auxiliary values (m->naux of them)
  struct MlcGemmCache *gcache; // k-major copies of the parameters for predict/eval (NULL: none)
  struct MlcTeam *team;        // the pool's workers held across predict/eval's products (NULL: none)
  MlcDevice *dev;        // on a GPU (opt.device CUDA, or AUTO and one opened): where the state lives
  char device[400];      // "cuda: NVIDIA H200 (...)", "cpu", "cpu (no CUDA device)"
  char err[1024];
  float scaler[MLC_SCALER_OUTPUTS]; // with m->loss_scale, the last train_step's: scale,
                                    // overflowed (0/1), skipped steps so far
  bool stepped;          // a train_step has run (scaler holds its values)
  // the API's train steps in flight (opt.queue_steps): a ring, the oldest at qhead
  struct {
    float out[3], aux[MLC_MAX_AUX], scaler[MLC_SCALER_OUTPUTS];
    float *loss;         // the caller's, written when collected
    int64_t step;        // its number (1-based)
  } q[MLC_CUDA_QUEUE_DEPTH];
  int qhead, qcount;
};

// An instance whose symbols have the values syms (m->nsyms of them; NULL
// when the model has none), state zeroed. NULL with a message on failure.
MlcInstance *rt_instance_new(const MlcModel *m, const MlcOptions *opt, const int64_t *syms,
                             char *err, size_t errlen);
// Fills the state from the model's initialisers (m->init, or the MlcInit
// specs) with the stream keyed by seed; the run stream starts at seed.
int rt_instance_init(MlcInstance *in, uint64_t seed);
// Scratch and logits for batches up to b (checked sizes); -1 with in->err.
int rt_instance_reserve(MlcInstance *in, int64_t b);
// One train_step on a batch of b: a fresh dropout seed, the entry point,
// then the step count and last lr / gradient norm. out: loss, gradient
// norm, lr; logits (may be NULL): the forward output for accuracy; the
// loss's auxiliary values land in in->aux. Returns
// MLC_OK, MLC_NONFINITE or MLC_ERROR (ctx.err says why); the step counts
// unless MLC_ERROR.
int rt_instance_step(MlcInstance *in, int64_t b, const void *const *inputs, float out[3],
                     float *logits);
// The same with the auxiliary values and the scaler's into aux and scaler;
// queued (on a device only): the step's launches and downloads are queued
// and its results (out, logits, aux, scaler, its checks) arrive at
// rt_instance_collect, the oldest step first; they must stay valid until
// then. At most MLC_CUDA_QUEUE_DEPTH steps are pending (the device's
// ops->pending).
int rt_instance_step_into(MlcInstance *in, int64_t b, const void *const *inputs, float out[3], float *logits,
                          float *aux, float *scaler, bool queued);
// The oldest queued step's results (out: its loss, gradient norm, lr, for
// the last lr / gradient norm): MLC_OK, MLC_NONFINITE (a failed finite
// check: ctx's site and value) or MLC_ERROR (ctx.err).
int rt_instance_collect(MlcInstance *in, const float out[3]);
// On a device, the state lives there: after the host copy was written
// (initialised, loaded) rt_instance_to_device uploads it; before it is read
// (checkpoints, weights files, finite checks) rt_instance_from_device
// downloads it. Both are no-ops on the CPU, but rt_instance_to_device also
// forgets the GEMM's copies of the parameters (gcache), which the new
// values replace. 0, or -1 with in->err.
int rt_instance_to_device(MlcInstance *in);
int rt_instance_from_device(const MlcInstance *in);
// The first parameter or buffer holding a NaN or infinity (optimizer state
// may hold infinities by design): 0, or -1 with
// "the state is no longer finite: 'fc1.w' element 12 is inf" in err.
int rt_instance_finite(const MlcInstance *in, char *err, size_t errlen);

#endif
