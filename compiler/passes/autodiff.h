// autodiff.h — compile-time reverse-mode differentiation of graph IR
// functions (autodiff.c).
//
// ad_grad takes a function whose chosen output is the loss (a scalar, or any
// tensor with a seed gradient passed in) and adds to the same module a new
// function that recomputes the forward graph and then runs the backward
// graph. Its signature and results:
//
//   func NAME(<f's arguments>, [%dy: <loss type> when the loss is not a scalar,
//             or with AdOptions.seed_arg])
//       -> (loss, d loss/d p for every trainable param p read by f, in module
//           declaration order, then d loss/d x for every argument x chosen in
//           AdOptions.wrt_inputs, in signature order, then, with
//           AdOptions.keep_outputs, f's other outputs in order: a loss's
//           auxiliary values, recomputed, not differentiated)
//
// Frozen params, buffers, integer values and everything behind
// stop_gradient get no gradient and cost no node: only values on a path
// from the loss to a trainable param (or chosen argument) are
// differentiated. A trainable param that the loss does not depend on gets a
// zero constant. Gradient nodes inherit the span (and text location) of the
// forward node whose rule made them.
#ifndef MLC_AUTODIFF_H
#define MLC_AUTODIFF_H

#include "graph/ir.h"

typedef struct AdOptions {
  const char *name;       // name of the new function; NULL: "<f>_grad"
  int output;             // index of f's output that is the loss (default 0)
  const bool *wrt_inputs; // NULL, or one flag per argument of f: also return its gradient
  bool keep_outputs;      // also return f's outputs other than the loss, last
  bool seed_arg;          // a scalar loss's seed gradient is an argument %dy too, not 1:
                          // loss scaling's backward pass starts from d(loss * S) = S
  DiagSink *diags;        // on failure: the reason, at the node's span (may be NULL)
  int *forward_len;       // out, if set: how many leading body nodes of the result
                          // recompute f; the backward graph is the rest
} AdOptions;

// Builds the gradient function of f in m (opts may be NULL). Returns NULL,
// after reporting "cannot differentiate concat: ..." to opts->diags at the
// forward node's span, when some value on the path has no usable rule (concat
// along a symbolic extent). Run ir_verify on the result in tests; a rule that
// builds an ill-typed node is a compiler bug (ICE).
IrFunc *ad_grad(IrModule *m, IrFunc *f, const AdOptions *opts);

#endif
