// interp.h — the reference interpreter: runs one IrFunc of an IrModule on the
// CPU with plain loops. It is the oracle every later backend (fused kernels,
// LLVM, CUDA) and autodiff's finite-difference checks are compared against,
// so it favours clarity over speed: every op is a direct loop nest over
// contiguous row-major tensors, with the semantics of the PyTorch op of the
// same name (docs/design/ir.md, "Interpreter semantics").
//
// Arithmetic modes:
//   INTERP_F64  every float op is computed and kept in double;
//   INTERP_F32  every float op is computed in double and rounded to float
//               after each op (and after each step of an accumulation), which
//               for + - * / sqrt gives exactly IEEE float results; f16/bf16
//               tensors are treated as f32.
// Integer and bool tensors are exact in both modes.
//
// Symbolic dims bind from the actual argument shapes: a dim that is a bare
// symbol (B) binds to the size given; any other dim (784, B*T) must evaluate
// equal to it. Opaque symbols inside the body (the output height of a strided
// conv over a symbolic input) bind the first time a computed shape meets them.
#ifndef MLC_INTERP_H
#define MLC_INTERP_H

#include "ir.h"

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

// Runs f with nin arguments (signature order; shapes bind the symbols) and
// model state params (may be NULL when f reads none). On success returns 0
// and sets outputs[0..f->outputs.len) to fresh tensors the caller frees with
// interp_tensor_free. On failure returns -1, writes a message such as
//   interp: %3 = embedding(%0, %idx): index 12 out of range [0, 10)
// to err (when errlen > 0) and, when d is not NULL, reports it as an error at
// the node's span. Nothing is written to outputs on failure. The run numbers
// f's values (ir_number) so messages name them as the printer does.
int interp_run(IrModule *m, IrFunc *f, InterpMode mode, Tensor **inputs,
               int nin, const InterpParams *params, Tensor **outputs,
               DiagSink *d, char *err, size_t errlen);

// The dropout keep/scale factor of element `index` of a dropout or
// dropout_mask node: 0 or 1/(1-p). Philox-4x32-10 with key = the node's
// seed (lo, hi) and counter = (index lo, index hi, rng_seed lo, rng_seed hi);
// the first output word w gives u = (w >> 8) * 2^-24, and the element is kept
// iff u >= p. Backends reproduce masks with the same function.
double interp_dropout_scale(uint64_t seed, uint64_t rng_seed, uint64_t index,
                            double p);

#endif
