// run_internal.h — what the files of `mlc run --interp` share: run.c the
// command (entry points, result names, printing), run_state.c the inputs and
// the model state through the runtime (libmlc_rt), run_save.c --save.
#ifndef MLC_RUN_INTERNAL_H
#define MLC_RUN_INTERNAL_H

#include "driver.h"
#include "pipeline.h"

#include "graph/interp.h"

// The state an entry point runs on: every state of the graph module
// (params, buffers, optimizer state) in module order, which is the order of
// the compiled program's states[]; ip points at paths and values.
typedef struct RunState {
  int n;
  const char **paths;
  Tensor **values;
  InterpParams ip;
} RunState;

// Fills s the way the compiled program starts: every state drawn from its
// initialiser by a runtime instance (the glue's specs, host_init_spec) from
// `seed`, then, when `weights` is not NULL, the params and buffers of that
// safetensors file, checked by the runtime's weights loader as the
// program's `train --weights` checks them (a float tensor may
// also come in the other float width, an integer one in the other integer
// width). In f32 mode f32 values are rounded to float. ip.rng_seed is the
// dropout seed of the program's first train_step. False after an error
// naming the file and tensor.
bool run_state_init(RunState *s, Pipeline *P, const char *weights, uint64_t seed, bool f64);
void run_state_free(RunState *s);

// The .npy file `path` as a tensor of dtype dt, read by the runtime's NPY
// reader (the one the programs use); NULL after an error naming the file.
Tensor *run_read_npy(DiagSink *d, const char *path, DType dt);

// One result of a run, under the name it is printed with.
typedef struct RunResult {
  const char *name;
  Tensor *t;
} RunResult;

// --save OUT: the form OUT asks for, decided by its name.
typedef enum {
  SAVE_SAFETENSORS, // OUT.safetensors: one file, a tensor per result
  SAVE_NPY,         // OUT.npy: the one result
  SAVE_DIR,         // anything else: a directory, NAME.npy per result
} SaveForm;

SaveForm run_save_form(const char *out);
// Checks OUT before any work (output.h's rules: not the input file, a
// folder that can take a new file); false after an error naming it.
bool run_save_check(DiagSink *d, const char *out, const struct stat *input);
// Writes the results; in f64 mode float results are F64 / '<f8', else each
// in its dtype (f16 and bf16, computed as f32, as f32). False after an
// error naming the file.
bool run_save(DiagSink *d, const char *out, const RunResult *r, int n, bool f64);

#endif
