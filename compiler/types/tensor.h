// tensor.h — the reference tensors: what the graph interpreter (graph/interp.h)
// and the kernel-IR evaluator (kernel/kir.h) take and return, and how model
// state is passed to them by path. It sits below both so that neither the
// kernel IR nor a backend has to see the graph IR to name a tensor.
#ifndef MLC_TENSOR_H
#define MLC_TENSOR_H

#include "types.h"

enum { INTERP_MAX_RANK = 8 };

typedef enum {
  INTERP_F64, // compute and keep every float in double
  INTERP_F32, // round to float after every float op
} InterpMode;

// A dense row-major tensor. Every dtype is held in one double array: floats
// as their value (already rounded to float in INTERP_F32 mode), integers
// exactly (|v| < 2^53; i32 results wrap to 32 bits), bools as 0 or 1.
typedef struct Tensor {
  DType dtype;
  int rank;                        // 0: scalar (numel 1)
  int64_t dims[INTERP_MAX_RANK];
  int64_t numel;
  double *data;                    // numel values, malloc'd, owned
} Tensor;

// Zero-filled tensor (malloc); NULL if rank or size is out of range.
Tensor *interp_tensor_new(DType dt, int rank, const int64_t *dims);
// The same, filled from vals (numel values) or zeros when vals is NULL.
Tensor *interp_tensor_from(DType dt, int rank, const int64_t *dims,
                           const double *vals);
Tensor *interp_tensor_clone(const Tensor *t);
void interp_tensor_free(Tensor *t);

// Model state by path (fc1.w, bn1.running_mean): every param/buffer node the
// function reads must find its path here with the declared shape.
typedef struct InterpParams {
  int n;
  const char *const *paths;
  Tensor *const *values;
  // Mixed into every dropout mask together with the node's seed attribute,
  // so one compiled graph draws fresh masks per training step while one
  // (rng_seed, seed) pair always gives the same mask.
  uint64_t rng_seed;
} InterpParams;

#endif
