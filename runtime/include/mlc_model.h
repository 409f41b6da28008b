// mlc_model.h — the model ABI: what a compiled model object gives the
// runtime (libmlc_rt) and what the runtime gives back on every call.
//
// A model object exports one constant descriptor
//
//     const MlcModel mlc_model_<name> = { .abi = MLC_ABI_VERSION, ... };
//
// and the generated program's main is just
//
//     int main(int argc, char **argv) { return mlc_main(argc, argv, &mlc_model_<name>); }
//
// The descriptor is plain data plus four entry points (five with a
// reduce-on-plateau schedule). Everything a run needs
// that is not arithmetic — reading and validating data, shuffling, batching,
// initialising state, checkpoints, logging, the thread pool, the command line —
// lives in the runtime, so generated code stays loops over buffers.
//
// Conventions:
//   * Tensors are dense, row-major, little-endian, with the dtype and shape of
//     their descriptor; the symbolic batch dim B is passed per call (`batch`),
//     and a per-sample shape never includes it. Other symbolic dims of the
//     per-sample shapes (a sequence length T) are model->syms: the runtime
//     binds each from the data's record shape when the data is read (the
//     same symbol must get the same value in every input and in the test
//     data) and passes the values in ctx->syms, fixed for the run.
//   * The runtime owns every buffer: state tensors (64-byte aligned, one
//     allocation each), the scratch arena (one allocation, sized for the
//     largest batch by `scratch_bytes`), the inputs and the outputs.
//   * Entry points return MLC_OK, MLC_NONFINITE (only when ctx->check_finite
//     is set, with ctx->nonfinite_site filled in) or MLC_ERROR (with a message
//     in ctx->err). They never exit, print or allocate.
//   * Entry points are deterministic: the same state, inputs, ctx->step and
//     ctx->rng give the same bytes whatever the number of threads
//     (mlc_parallel_for partitions work by grain, not by thread count).
#ifndef MLC_MODEL_H
#define MLC_MODEL_H

#include <stddef.h>
#include <stdint.h>

// MLC_ABI_VERSION, MLC_MAX_RANK, MLC_MAX_INPUTS, MLC_MAX_SYMS, MLC_ERR_LEN
// and the MlcDType codes.
#include "kernels/abi.h"

// What a state tensor is; checkpoints hold all kinds, `eval`/`predict`
// weights files need only PARAM and BUFFER.
typedef enum MlcStateKind {
  MLC_STATE_PARAM,  // a parameter (trainable unless frozen)
  MLC_STATE_BUFFER, // non-trained model state (batch-norm running stats)
  MLC_STATE_OPTIM,  // optimizer state (momentum, Adam moments, step counts)
} MlcStateKind;

// How a state tensor starts (PyTorch's torch.nn.init semantics). fan_in /
// fan_out are given by the compiler (it knows which dims are which); `gain`
// is the already-computed gain (e.g. sqrt(2) for relu, or from `a`).
typedef enum MlcInitKind {
  MLC_INIT_ZEROS,           // 0
  MLC_INIT_ONES,            // 1
  MLC_INIT_CONSTANT,        // uses value
  MLC_INIT_NORMAL,          // N(mean, std^2)
  MLC_INIT_UNIFORM,         // U[low, high)
  MLC_INIT_KAIMING_UNIFORM, // U(-b, b), b = gain * sqrt(3 / fan), fan by mode
  MLC_INIT_KAIMING_NORMAL,  // N(0, (gain / sqrt(fan))^2), fan by mode
  MLC_INIT_XAVIER_UNIFORM,  // U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out))
  MLC_INIT_XAVIER_NORMAL,   // N(0, gain^2 * 2 / (fan_in + fan_out))
  MLC_INIT_TRUNC_NORMAL,    // N(mean, std^2) redrawn until in [low, high] (trunc_normal_'s a, b)
} MlcInitKind;

typedef enum MlcFanMode {
  MLC_FAN_IN,  // kaiming mode = fan_in (PyTorch's default)
  MLC_FAN_OUT, // kaiming mode = fan_out
} MlcFanMode;

typedef struct MlcInit {
  MlcInitKind kind;
  double value;          // CONSTANT
  double mean, std;      // NORMAL, TRUNC_NORMAL
  double low, high;      // UNIFORM; TRUNC_NORMAL: the bounds a, b
  double a;              // kaiming's negative slope (informational; gain has it)
  double gain;           // KAIMING_*, XAVIER_*; 0 means 1
  int64_t fan_in, fan_out;
  MlcFanMode mode;       // KAIMING_*
} MlcInit;

// One state tensor. `path` is its name in checkpoints ("fc1.w",
// "fc1.w.momentum", "bn1.running_mean"); paths are unique.
typedef struct MlcStateDesc {
  const char *path;
  MlcDType dtype;
  int rank;
  int64_t shape[MLC_MAX_RANK];
  MlcStateKind kind;
  int trainable; // PARAM: 0 when frozen
  MlcInit init;
} MlcStateDesc;

// Where an input's samples come from by default (the recipe's data; the
// command line may name other files of the same kinds).
typedef enum MlcDataKind {
  MLC_DATA_NONE, // no default: the user must give a file
  MLC_DATA_IDX,  // IDX (MNIST layout), gzip'd or not; record = first dim
  MLC_DATA_CSV,  // text table; record = line
  MLC_DATA_NPY,  // NumPy .npy v1/v2/v3; record = first dim
} MlcDataKind;

// A source's CSV column selection applies to whatever CSV file feeds the
// input (the recipe's or one given on the command line, shared by several
// inputs or not): the record is exactly the selected columns, in the order
// given. Without a selection an input reads every column of its own file,
// or, when one file feeds several inputs, the next columns in input order.
typedef struct MlcDataSource {
  MlcDataKind kind;
  const char *path;  // may be NULL
  double scale;      // integer data (u8 pixels, i32) into a float input:
                     // value * scale; 0 means 1; float and text data are
                     // used as they are
  int header;        // CSV: 1 when the first line is a header
  int ncols;         // CSV: selected columns; 0: none selected
  const int64_t *cols;          // CSV: column index per selected column, -1: by name
  const char *const *colnames;  // CSV: header name where cols[k] == -1
} MlcDataSource;

// One argument of the loss (and, for the first n_forward_inputs, of
// forward/predict). `dims` is the per-sample shape (the loss's shape without
// the leading B, rank < MLC_MAX_RANK); dims[d] == -1 is the symbol
// model->syms[sym[d]], bound from the data. The input that the loss's
// cross-entropy reads as its target sets num_classes: its values are
// checked against 0..num_classes-1 and compared with the argmax over the
// forward output's class dim for accuracy. value_limit bounds every
// integer input the model indexes with (embedding rows, classes): values
// must lie in 0..value_limit-1, checked when the data is loaded; limit_what
// says where the limit comes from, for messages ("the rows of tok.w").
// A label whose cross-entropy has ignore_index = K has has_ignore set and
// ignore_value K: its values lie in 0..num_classes-1 or are K, and accuracy
// counts only the positions whose label is not K (K may be a class, such as
// a padding class 0; then value_limit is num_classes as for any label,
// otherwise the classes set no value_limit).
typedef struct MlcInputDesc {
  const char *name;
  MlcDType dtype;
  int rank;
  int64_t dims[MLC_MAX_RANK];
  int sym[MLC_MAX_RANK]; // where dims[d] == -1: index into MlcModel.syms
  int64_t num_classes;   // 0: not a label
  int64_t value_limit;   // 0: no limit
  const char *limit_what;
  MlcDataSource train, test;
  int has_ignore;        // 1: a label whose value ignore_value counts for nothing
  int64_t ignore_value;
} MlcInputDesc;

// A named hyper-parameter of the recipe, for the run record and `--help`.
typedef struct MlcHyper {
  const char *name; // "lr", "momentum", "weight_decay", "warmup_steps", ...
  double value;
} MlcHyper;

// The `train` block. The runtime owns batch, epochs, seed (overridable from
// the command line) and the base learning rate (ctx->lr); everything else
// (schedule, clipping, accumulation) is computed inside train_step from
// ctx->step, ctx->steps_per_epoch and ctx->lr.
typedef struct MlcRecipe {
  int64_t batch;
  int64_t epochs;
  uint64_t seed;
  int64_t accumulate;    // informational: train_step accumulates itself
  double lr;             // base learning rate
  const char *optimizer; // "sgd", "adamw", ...
  const char *schedule;  // "constant", "cosine", ...
  int nhyper;
  const MlcHyper *hyper;
  const char *metric; // "accuracy" or NULL
  const char *precision; // "bf16" or "f16": what matmuls and convolutions round their
                         // operands to (train, eval, predict); NULL: f32 (ABI 6)
} MlcRecipe;

// A place in the user's source, for --check-finite reports:
//   step 12: loss became NaN at model.model:14:12 (matmul)
typedef struct MlcSite {
  const char *loc; // "model.model:14:12"
  const char *op;  // "matmul"
} MlcSite;

typedef struct MlcPool MlcPool;

// Philox-4x32-10 stream state: key = the run's seed, counter = how many
// 64-bit draws were taken. Saved in checkpoints (runtime/core/rng.h).
typedef struct MlcRng {
  uint64_t key;
  uint64_t counter;
} MlcRng;

typedef struct MlcModel MlcModel;

// ---- the device path (a model built with --target cuda) -------------------------------------
// What a program's generated host launchers (compiler/backend/cuda/cuda_gen.h)
// call for each launch: kernel `kernel` of the model's kernel table over
// `grid` blocks of `block` threads, params cuLaunchKernel's kernelParams.
// 0, or -1 (the launcher keeps the reason).
typedef struct MlcLauncher MlcLauncher;
struct MlcLauncher {
  int (*launch)(MlcLauncher *l, int kernel, int64_t grid, int64_t block, void **params);
};
// A program's launcher: dims as the CPU entry's, every pointer a device
// address (scratch: the block the plan lays temporaries into; flag: a zeroed
// uint32_t that a failed check sets to its message's number + 1). 0, or -1
// when a launch failed.
typedef int32_t (*MlcDeviceProgram)(MlcLauncher *l, const int64_t *dims, const uint64_t *inputs,
                                    const uint64_t *outputs, const uint64_t *state, uint64_t scratch,
                                    uint64_t seed, uint64_t flag);

// A model instance's state and buffers on a GPU (runtime/cuda/cuda_model.c).
typedef struct MlcDevice MlcDevice;

// What runs a model on a device. The runtime's side (instance, program)
// opens it, sizes it, moves the state; the glue's device entry points
// (MlcCtx.device set) place a call's buffers and run its program. Functions
// returning int give 0 or -1 (the reason in err, or in error(d)).
typedef struct MlcDeviceOps {
  // the driver, the model's module (its bundle) and kernels, its state
  // tensors on the device; NULL with one line ("no CUDA device").
  MlcDevice *(*open)(const MlcModel *m, int ordinal, char *err, size_t errlen);
  void (*close)(MlcDevice *d);
  const char *(*name)(const MlcDevice *d); // "NVIDIA H200 (sm_90; sm_90 cubin)"
  // buffers for batches up to b (the state survives a reallocation)
  int (*reserve)(MlcDevice *d, int64_t b, const int64_t *syms, char *err, size_t errlen);
  int (*push_state)(MlcDevice *d, void *const *host, char *err, size_t errlen); // host -> device
  int (*pull_state)(MlcDevice *d, void *const *host, char *err, size_t errlen); // device -> host
  // the batch after the current one, uploaded while a step computes; next
  // returns its size (0: none) and its inputs
  void (*set_next)(MlcDevice *d, int64_t (*next)(void *user, const void **inputs), void *user);
  // ---- the device entry points'
  // the model's first n inputs for a batch of b samples on the device
  int (*inputs)(MlcDevice *d, const void *const *in, int n, int64_t b, uint64_t *dev);
  uint64_t (*state)(MlcDevice *d, int i);                       // state tensor i
  int (*set_state)(MlcDevice *d, int i, const void *v, size_t n); // its first n bytes
  uint64_t (*output)(MlcDevice *d, int k, size_t bytes);        // output slot k (0..3)
  uint64_t (*scalar)(MlcDevice *d, const void *v, size_t n);    // a small input
  // launches fn (zeroed flag, the scratch block); writes: it stores state
  int (*run)(MlcDevice *d, MlcDeviceProgram fn, const int64_t *dims, const uint64_t *in,
             const uint64_t *out, const uint64_t *state, uint64_t seed, int writes);
  // downloads out[k] (n[k] bytes from dev[k]; NULL: none) and waits; 1 when
  // a check failed (error(d) is its message), else 0 or -1
  int (*finish)(MlcDevice *d, void *const *out, const uint64_t *dev, const size_t *n, int k);
  const char *(*error)(const MlcDevice *d);
  // ---- queued steps (the training loop's): with queue(d, 1) open, finish
  // queues its downloads and returns 0 without waiting; queue(d, 0) closes
  // the step. At most MLC_CUDA_QUEUE_DEPTH are pending; collect waits for
  // the oldest and copies its results where its finish calls said (1 when
  // one of its checks failed, error(d) its message).
  int (*queue)(MlcDevice *d, int on);
  int (*pending)(const MlcDevice *d);
  int (*collect)(MlcDevice *d);
} MlcDeviceOps;

// Train steps the host queues ahead of their results on a device.
#define MLC_CUDA_QUEUE_DEPTH 3

// The device side of a model built with --target cuda.
typedef struct MlcDeviceModel {
  const unsigned char *bundle;  // cubins and PTX (compiler/backend/cuda/nvrtc.h)
  const unsigned long long *bundle_size;
  const char *const *kernels;   // launch index -> kernel name; NULL-terminated
  const char *const *messages;  // a failed check's flag - 1 -> message; NULL-terminated
  // scratch of the gpu programs for a batch (as MlcModel.scratch_bytes)
  size_t (*scratch_bytes)(int64_t batch, const int64_t *syms);
  const MlcDeviceOps *ops;      // the runtime's CUDA layer (runtime/cuda)
} MlcDeviceModel;

// What each call sees. The runtime fills every field before the first call
// and keeps them across calls; generated code may read all, and writes only
// nonfinite_site / nonfinite_value / err.
typedef struct MlcCtx {
  const MlcModel *model;
  void *const *state;   // state[i]: the bytes of model->states[i]
  void *scratch;        // the arena: scratch_bytes(max batch, syms) bytes, 64-aligned
  size_t scratch_size;
  MlcPool *pool;        // for mlc_parallel_for; never NULL
  MlcRng rng;           // advanced by the runtime once per train_step
  uint64_t step_seed;   // per-step dropout seed: mlc_rng_step_seed before the call
  int64_t step;         // train_step calls completed before this one
  int64_t epoch;        // 0-based epoch of this call
  int64_t steps_per_epoch;
  int64_t total_steps;
  double lr;            // base learning rate (recipe or --lr)
  int64_t syms[MLC_MAX_SYMS]; // values of model->syms, bound from the data
  int check_finite;     // 1: report the first non-finite value (MLC_NONFINITE)
  int nonfinite_site;   // out: index into model->sites, -1 when unknown
  double nonfinite_value;
  char err[MLC_ERR_LEN]; // out: message for MLC_ERROR
  MlcDevice *device;    // the GPU the entry points run on (state resident there); NULL: the CPU
} MlcCtx;

enum {
  MLC_OK = 0,
  MLC_NONFINITE = 1, // check_finite found a NaN/Inf (see nonfinite_site)
  MLC_ERROR = -1,    // ctx->err says why
};

// Every entry point has this shape; `inputs` and `outputs` are arrays of
// buffer pointers whose meaning depends on the entry point:
//   init       inputs: none. outputs: none. Fills every state tensor. May be
//              NULL: the runtime then fills state from the MlcInit specs with
//              mlc_init_state (Philox stream keyed by the seed).
//   train_step inputs: the loss arguments, [B, dims...] each.
//              outputs: [0] f32 loss (mean over the batch), [1] f32 global
//              gradient norm (before clipping), [2] f32 learning rate used,
//              [3] f32 forward output [B, num_out] or NULL (for training
//              accuracy; the model skips writing it when NULL), [4 + i] f32
//              auxiliary value i of the loss (model->naux of them, each the
//              batch's like the loss), and with model->loss_scale three f32
//              more at [4 + naux + j]: the loss scale the step ran with, 1
//              when its gradients overflowed and the update was skipped (0
//              otherwise), the steps skipped so far (the caller passes 4 +
//              naux + 3 * loss_scale slots).
//              (Wherever a forward output is named it has num_out times
//              the product of ctx->syms[out_syms[k]] floats per sample.)
//              Updates parameters and optimizer state in place.
//   eval       inputs: the loss arguments. outputs: [0] f32 loss (mean),
//              [1] f32 forward output [B, num_out]. No state changes.
//   predict    inputs: the first n_forward_inputs loss arguments.
//              outputs: [0] f32 forward output [B, num_out] (logits unless
//              output_is_prob).
//   epoch_end  batch: 0. inputs: [0] a double, the epoch's metric: the test
//              loss, or the test accuracy when recipe.metric is "accuracy"
//              (the training loss / accuracy when there is no test data).
//              outputs: [0] a double, the learning-rate scale from now on, or
//              NULL. Updates the schedule's optimizer state (opt.plateau.*),
//              so a checkpoint written after it resumes exactly. NULL when
//              the schedule needs no per-epoch call; otherwise the runtime
//              calls it once after each complete epoch's evaluation.
typedef int (*MlcEntry)(MlcCtx *ctx, int64_t batch, const void *const *inputs,
                        void *const *outputs);

struct MlcModel {
  int abi;                  // MLC_ABI_VERSION
  const char *name;         // "FashionMLP"
  const char *hash;         // structural hash, hex; checkpoints must match it
  const char *compiler;     // "mlc 0.1.0"
  const char *source;       // the .model file, for messages
  int nstates;
  const MlcStateDesc *states;
  int ninputs;
  const MlcInputDesc *inputs;
  int n_forward_inputs;     // the first n inputs feed forward/predict
  int64_t num_out;          // the forward output's constant per-sample elements;
                            // a sample has num_out * (product of
  int nout_syms;            // ctx->syms[out_syms[k]]) floats
  int out_syms[MLC_MAX_SYMS]; // (the output's symbolic dims)
  int64_t out_classes;      // the output's last dim when the loss's cross-entropy
                            // takes its classes from it: a sample is rows of
                            // out_classes scores (accuracy and predict take the
                            // argmax per row); 0: no class dim (regression)
  int output_is_prob;       // 1: forward already returns probabilities
  MlcRecipe recipe;
  int nsites;
  const MlcSite *sites;     // --check-finite locations
  size_t (*scratch_bytes)(int64_t batch, const int64_t *syms); // NULL: no scratch
  MlcEntry init, train_step, eval, predict;
  MlcEntry epoch_end;       // NULL unless the schedule is plateau (ABI 2)
  int nsyms;                // symbolic per-sample dims bound from the data
  const char *const *syms;  // their names ("T"), for messages
  const int64_t *sym_max;   // per symbol, the largest value the model accepts
                            // (a position table's rows); 0: no limit. May be NULL
  const char *const *sym_max_what; // where sym_max comes from ("the rows of pos.w")
  int naux;                 // the loss's auxiliary values (train_step's outputs[4..]),
  const char *const *aux_names; // at most MLC_MAX_AUX, logged under these names ("ce")
  const MlcDeviceModel *device;    // --target cuda: the GPU side; NULL: none (ABI 4)
  int device_only;          // 1: the entry points run only with ctx->device (built
                            // with --target cuda alone); 0: on the CPU as well
  int loss_scale;           // 1: the recipe scales the loss (train_step's outputs after
                            // the auxiliary values; ABI 6)
  const int64_t *sym_min;   // per symbol, the smallest value that leaves every size of
                            // the model at least 1 (H >= 4 under a 3x3 conv and a 2x2
                            // pool); 0 or NULL: 1
  const char *const *sym_min_what; // the op that needs it ("max_pool2d at line 9 ...")
};

#endif
