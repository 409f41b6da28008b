// mlc_rt.h — the public interface of libmlc_rt: what generated code, the
// generated glue and embedders call.
//
// The runtime's surface has three layers, as Lua's has lua.h, lauxlib.h and
// its l*.h files:
//   mlc_model.h    the model ABI: the descriptor a compiled model exports and
//                  the context its entry points see (kernels/abi.h holds the
//                  shared constants)
//   mlc_rt.h       this file: the thread pool generated kernels call, model
//                  instances (the embedding API every `--emit lib` header
//                  wraps) and the generated program's main
//   mlc_data.h     the data-file readers (IDX, NPY, CSV and CSV column
//                  selection), for the runtime and for the compiler's data
//                  checks
// Everything else (datasets, the loader, checkpoints, the RNG streams, logs,
// the training driver) is private to runtime/: runtime/core/*.h,
// runtime/data/dataset.h, runtime/program/*.h.
//
// Errors never exit and never print: functions return -1 (or NULL) and keep
// a one-line message that names the file, record, field or argument.
#ifndef MLC_RT_H
#define MLC_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlc_model.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- thread pool (core/pool.c) --------------------------------------------------------
// mlc_parallel_for(pool, n, grain, fn, arg) calls fn(arg, begin, end) over
// [0, n) in chunks of `grain` items (the last may be shorter); chunks run on
// the pool's threads and the caller's, and the call returns when all are done.
// Chunk boundaries depend only on n and grain, so a per-chunk reduction is the
// same with 1 thread or 16. A pool of 1 thread runs everything inline.
// Chunk k of c chunks goes first to thread floor(k*T/c) of T (the caller is
// thread 0): each thread runs its own contiguous range front to back, then
// takes what is left of the others' from their backs. So regions cut the
// same way give the same rows to the same thread (its core's cache), which
// changes no result: a chunk computes the same whichever thread runs it.
MlcPool *mlc_pool_new(int nthreads); // nthreads <= 0: the number of CPUs
void mlc_pool_free(MlcPool *pool);
int mlc_pool_threads(const MlcPool *pool);
typedef void (*MlcRangeFn)(void *arg, int64_t begin, int64_t end);
void mlc_parallel_for(MlcPool *pool, int64_t n, int64_t grain, MlcRangeFn fn,
                      void *arg);

// ---- dtypes and per-sample sizes (data/data.c) -------------------------------------------
size_t mlc_dtype_size(MlcDType dt);      // 0 for a code that is not an MlcDType
const char *mlc_dtype_name(MlcDType dt); // "f32", ...; "?" for an unknown code
// Elements per sample of an input / of the forward output, given the values
// of the model's symbols; -1 when the product overflows.
int64_t mlc_input_numel(const MlcInputDesc *in, const int64_t *syms);
int64_t mlc_output_numel(const MlcModel *m, const int64_t *syms);

// ---- model instances: the embedding API (core/instance.c) ----------------------------------
// An instance holds one model's state tensors, scratch arena and thread
// pool. Every `mlc build --emit lib` header (mlc_NAME_*) is a typed wrapper
// of these functions; docs/embedding.md is the contract, restated here:
//   * Functions returning int return 0 on success and -1 on failure; the
//     instance keeps the reason (mlc_instance_error). A failed call changes
//     no state, except train_step once its update ran (a non-finite loss).
//   * A NULL instance is an error, never a crash: the call returns -1 (NULL,
//     0 or NAN for the getters) and mlc_instance_error(NULL) gives the
//     reason, as it gives why the last mlc_instance_new on this thread
//     failed. mlc_instance_free(NULL) does nothing.
//   * batch must be 1..MLC_MAX_BATCH (kernels/abi.h) and small enough that its buffers fit in
//     memory (a larger one is refused before anything is allocated).
//   * Input pointers must be non-NULL and hold batch samples each; integer
//     inputs are checked against the model's ranges (class labels,
//     embedding rows) and float inputs must be finite: a bad value is
//     refused, naming the input, sample and element, before any kernel runs.
typedef struct MlcOptions {
  uint64_t seed;           // initial weights and dropout stream
  int threads;             // kernel threads, 0..MLC_MAX_THREADS; 0: one per CPU
  int64_t max_batch;       // scratch is sized for it (grown on demand); 0: the recipe's
  int64_t steps_per_epoch; // for learning-rate schedules; 0: 1
  int64_t epochs;          // schedule length in epochs; 0: 1
  // Allocator hook for the instance, its state, scratch and output buffers
  // (both NULL: malloc/free; one without the other is refused).
  // alloc(size, user) may return any alignment.
  void *(*alloc)(size_t size, void *user);
  void (*free)(void *ptr, void *user);
  void *user;
  // Where the entry points run: MLC_DEVICE_CPU (0), MLC_DEVICE_CUDA for a
  // model built with --target cuda (its state then lives on the GPU; no
  // driver or device fails mlc_instance_new), or MLC_DEVICE_AUTO: the GPU
  // when the model has a device side and one opens, else the CPU.
  int device;
  // On a GPU: train steps mlc_instance_train_step may leave in flight,
  // 0..MLC_CUDA_QUEUE_DEPTH (0: each call waits for its step). With N > 0
  // a call returns once its step is issued; the step's *loss is written and
  // its failure returned when it is collected: by a train_step that finds N
  // in flight, by mlc_instance_sync, or first thing in any other call. No
  // effect on the CPU.
  int queue_steps;
} MlcOptions;

enum { MLC_DEVICE_CPU = 0, MLC_DEVICE_CUDA = 1, MLC_DEVICE_AUTO = 2 };

typedef struct MlcInstance MlcInstance;

// The recipe's seed, batch and epochs; all CPUs; steps_per_epoch 1; malloc.
MlcOptions mlc_instance_defaults(const MlcModel *m);
// A new instance with freshly initialised weights (opt NULL: defaults).
// NULL when m is NULL, an option is out of range, or memory runs out; the
// reason is in mlc_instance_error(NULL).
MlcInstance *mlc_instance_new(const MlcModel *m, const MlcOptions *opt);
void mlc_instance_free(MlcInstance *in);
// The last failure's message ("" when none); never NULL.
const char *mlc_instance_error(const MlcInstance *in);
// Where the instance runs: "cuda: NVIDIA H200 (sm_90; sm_90 cubin)", "cpu",
// or with MLC_DEVICE_AUTO why not the GPU: "cpu (no CUDA device)".
const char *mlc_instance_device(const MlcInstance *in);
// Parameters and buffers from a safetensors file (an mlc checkpoint, or a
// PyTorch state_dict under the model's names, dtypes and shapes). A tensor
// the model does not have, a missing one, another model's checkpoint or a
// corrupted file is refused, and the state is then left as it was.
int mlc_instance_load(MlcInstance *in, const char *path);
// A full checkpoint (weights, optimizer state, step, RNG), written atomically.
int mlc_instance_save(MlcInstance *in, const char *path);
// Entry points; inputs[i] is model input i (predict: the forward inputs).
// out: batch * (forward output per sample) floats. loss and eval's out may
// be NULL.
int mlc_instance_predict(MlcInstance *in, int64_t batch, const void *const *inputs,
                         float *out);
int mlc_instance_train_step(MlcInstance *in, int64_t batch, const void *const *inputs,
                            float *loss);
int mlc_instance_eval(MlcInstance *in, int64_t batch, const void *const *inputs,
                      float *loss, float *out);
// The plateau schedule's per-epoch update; metric must be finite. -1 for a
// model without one.
int mlc_instance_epoch_end(MlcInstance *in, double metric);
// Collects every train step still in flight (queue_steps): 0, or -1 with
// the first failed step's reason.
int mlc_instance_sync(MlcInstance *in);
int64_t mlc_instance_steps(const MlcInstance *in);       // 0 for NULL
float mlc_instance_last_lr(const MlcInstance *in);       // NAN for NULL
float mlc_instance_last_grad_norm(const MlcInstance *in); // NAN for NULL
// Loss scaling (docs/language.md): the scale the last train_step ran with
// (1 for a model that does not scale its loss; NAN before the first step and
// for NULL), and the steps skipped because their gradients overflowed, as
// of the last train_step (0 before it, without loss scaling, and for NULL).
float mlc_instance_last_loss_scale(const MlcInstance *in);
int64_t mlc_instance_skipped_steps(const MlcInstance *in);
// A state tensor's bytes by path and its element count (numel may be NULL);
// NULL for a NULL instance or path, or an unknown path.
void *mlc_instance_state(MlcInstance *in, const char *path, int64_t *numel);

// ---- the generated program's main (program/driver.c) ----------------------------------------
// Subcommands train / eval / predict; exit codes 0 ok, 1 runtime error,
// 2 usage. Messages on stderr.
int mlc_main(int argc, char **argv, const MlcModel *m);

#ifdef __cplusplus
}
#endif

#endif
