// tensor_bytes.h — the data the tests that run compiled programs feed them:
// random tensors of a type (urand, make), and the interpreter's tensors to
// and from the bytes an entry point takes (to_bytes, elem). Shared by
// test_e2e_agree and test_cuda_examples (header-only; static inline so a
// test that uses a part compiles without warnings).
#ifndef MLC_TEST_TENSOR_BYTES_H
#define MLC_TEST_TENSOR_BYTES_H

#include "graph/interp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

// xorshift64: the same sequence in every test run.
static uint64_t tb_rng = 0x2545f4914f6cdd1dull;
static inline double urand(void) {
  tb_rng ^= tb_rng << 13, tb_rng ^= tb_rng >> 7, tb_rng ^= tb_rng << 17;
  return (double)(tb_rng >> 11) * 0x1p-53;
}

// A tensor of type t with every symbolic dim b: floats uniform in
// [-scale, scale) (rounded to f32), integers in [0, classes).
static inline Tensor *make(const Type *t, int64_t b, int64_t classes, double scale) {
  int64_t dims[INTERP_MAX_RANK];
  for (int i = 0; i < t->rank; i++)
    if (!dim_is_const(t->dims[i], &dims[i])) dims[i] = b;
  Tensor *x = interp_tensor_new(t->dtype, t->rank, dims);
  for (int64_t e = 0; x && e < x->numel; e++) {
    double u = urand();
    x->data[e] = dtype_is_float(t->dtype) ? (double)(float)(scale * (2 * u - 1)) : floor(u * (double)classes);
  }
  return x;
}

// t's elements in its dtype (malloc'd; at least one element).
static inline void *to_bytes(const Tensor *t) {
  size_t sz = (size_t)dtype_size(t->dtype);
  unsigned char *b = calloc((size_t)(t->numel ? t->numel : 1), sz);
  for (int64_t e = 0; e < t->numel; e++) {
    double v = t->data[e];
    switch (t->dtype) {
    case DT_F32: ((float *)b)[e] = (float)v; break;
    case DT_F64: ((double *)b)[e] = v; break;
    case DT_I32: ((int32_t *)b)[e] = (int32_t)v; break;
    case DT_I64: ((int64_t *)b)[e] = (int64_t)v; break;
    default: b[e] = (unsigned char)v; break;
    }
  }
  return b;
}

// Element e of bytes b of dtype dt.
static inline double elem(const void *b, DType dt, int64_t e) {
  switch (dt) {
  case DT_F32: return ((const float *)b)[e];
  case DT_F64: return ((const double *)b)[e];
  case DT_I32: return ((const int32_t *)b)[e];
  case DT_I64: return (double)((const int64_t *)b)[e];
  default: return ((const unsigned char *)b)[e];
  }
}

#endif
