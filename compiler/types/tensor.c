// tensor.c — dense row-major tensors of doubles (tensor.h): what the graph
// interpreter and the kernel-IR evaluator compute on.
#include "tensor.h"

#include <stdlib.h>
#include <string.h>

// ---- tensors -----------------------------------------------------------------------------
Tensor *interp_tensor_new(DType dt, int rank, const int64_t *dims) {
  if (rank < 0 || rank > INTERP_MAX_RANK) return NULL;
  int64_t numel = 1;
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0 || __builtin_mul_overflow(numel, dims[i], &numel) || numel > ((int64_t)1 << 40))
      return NULL;
  Tensor *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->dtype = dt;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->numel = numel;
  t->data = calloc((size_t)(numel ? numel : 1), sizeof(double));
  if (!t->data) {
    free(t);
    return NULL;
  }
  return t;
}

Tensor *interp_tensor_from(DType dt, int rank, const int64_t *dims, const double *vals) {
  Tensor *t = interp_tensor_new(dt, rank, dims);
  if (t && vals) memcpy(t->data, vals, sizeof(double) * (size_t)t->numel);
  return t;
}

Tensor *interp_tensor_clone(const Tensor *t) {
  return interp_tensor_from(t->dtype, t->rank, t->dims, t->data);
}

void interp_tensor_free(Tensor *t) {
  if (!t) return;
  free(t->data);
  free(t);
}
