// interp.h — the reference interpreter: runs one IrFunc of an IrModule on the
// CPU with plain loops. It is the oracle every later backend (fused kernels,
// LLVM, CUDA) and autodiff's finite-difference checks are compared against,
// so it favours clarity over speed: every op is a direct loop nest over
// contiguous row-major tensors, with the semantics of the PyTorch op of the
// same name (docs/design/ir.md, "Interpreter semantics").
//
// Arithmetic modes:
//   INTERP_F64  every float op is computed and kept in double;
//   INTERP_F32  every op on f32 values is computed in double and rounded to
//               float after each op (and after each step of a dot product or
//               scatter), which for + - * / sqrt gives exactly IEEE float
//               results; f16/bf16 tensors are treated as f32; f64 values are
//               kept in double, as compiled code keeps them.
// Float sums of reductions (sum, mean, reduce_to, norms' statistics, softmax
// denominators, loss means) follow kernel/kir.h's "Float sums" in both modes:
// eight f64 lanes, folded, rounded once (InterpSum, interp_internal.h).
// Integer and bool tensors are exact in both modes.
//
// Symbolic dims bind from the actual argument shapes: a dim that is a bare
// symbol (B) binds to the size given; any other dim (784, B*T) must evaluate
// equal to it. Opaque symbols inside the body (the output height of a strided
// conv over a symbolic input) bind the first time a computed shape meets them.
#ifndef MLC_INTERP_H
#define MLC_INTERP_H

#include "ir.h"
#include "types/tensor.h"

// Runs f with nin arguments (signature order; shapes bind the symbols) and
// model state params (may be NULL when f reads none). On success returns 0
// and sets outputs[0..f->outputs.len) to fresh tensors the caller frees with
// interp_tensor_free. On failure returns -1 and, when d is not NULL, reports
// an error such as
//   interp: %3 = embedding(%0, %idx): index 12 out of range [0, 10)
// at the node's span (the function's for argument mismatches). Nothing is
// written to outputs on failure. The run numbers f's values (ir_number) so
// messages name them as the printer does.
int interp_run(IrModule *m, IrFunc *f, InterpMode mode, Tensor **inputs,
               int nin, const InterpParams *params, Tensor **outputs,
               DiagSink *d);

// The dropout keep/scale factor of element `index` of a dropout or
// dropout_mask node: 0 or 1/(1-p). Philox-4x32-10 with key = the node's
// seed (lo, hi) and counter = (index lo, index hi, rng_seed lo, rng_seed hi);
// the first output word w gives u = (w >> 8) * 2^-24, and the element is kept
// iff u >= p. Backends reproduce masks with the same function.
double interp_dropout_scale(uint64_t seed, uint64_t rng_seed, uint64_t index,
                            double p);

// Element `index` of a rand or randn node, from the same draws: with
// u(i) = (w >> 8) * 2^-24 for the first word w of Philox at key = seed and
// counter = (i, rng_seed), rand is u(index) (dropout's uniform), randn is
// Box-Muller over two of them:
//   sqrt(-2 * log(1 - u(2 * index))) * cos(2 * pi * u(2 * index + 1))
// in f64 (1 - u > 0, so the value is finite: |randn| <= 5.77), rounded to
// the node's dtype. Backends build the same formula.
double interp_noise(uint64_t seed, uint64_t rng_seed, uint64_t index, bool normal);

#endif
