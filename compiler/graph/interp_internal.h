// interp_internal.h — what the interpreter's files share: the run context,
// rounding and error helpers, and the op groups each file implements
// (interp.c: driver, elementwise, reductions, views, matmul, losses, RNG;
// interp_nn.c: conv, pooling, normalisation layers, embedding).
#ifndef MLC_INTERP_INTERNAL_H
#define MLC_INTERP_INTERNAL_H

#include "interp.h"

typedef struct InterpCtx {
  IrModule *m;
  IrFunc *f;
  bool f32;            // INTERP_F32: round floats after every op
  Arena *scratch;      // dims arithmetic and message strings, freed per run
  DimSubst bind;       // symbol -> dim_const(size)
  const InterpParams *params;
  IrNode *cur;         // node being evaluated (for messages)
  DiagSink *diags;     // where failures are reported (NULL: nowhere)
} InterpCtx;

// Reports "interp: %3 = op(..): message" at the current node's span (the
// function's when there is none); returns NULL.
void *interp_fail(InterpCtx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// A value rounded as a tensor of dtype dt holds it: floats to float in f32
// mode, i32 wrapped, i64 truncated toward zero, bool to 0/1.
double interp_store(const InterpCtx *c, DType dt, double v);
// Float rounding of one arithmetic step in the current mode.
static inline double interp_r(const InterpCtx *c, double v) {
  return c->f32 ? (double)(float)v : v;
}

// The node's declared type evaluated under the current bindings (every dim
// must be known). Returns a fresh zeroed tensor of that shape, or NULL.
Tensor *interp_alloc_type(InterpCtx *c, const Type *t);
Tensor *interp_alloc(InterpCtx *c, DType dt, int rank, const int64_t *dims);

// interp_nn.c
Tensor *interp_conv(InterpCtx *c, IrNode *n, Tensor **in);
Tensor *interp_pool(InterpCtx *c, IrNode *n, Tensor **in);
Tensor *interp_norm(InterpCtx *c, IrNode *n, Tensor **in);
Tensor *interp_index(InterpCtx *c, IrNode *n, Tensor **in);

// Attribute helpers (the verifier guarantees presence).
int64_t interp_attr_i(const IrNode *n, IrAttrKey k);
const int64_t *interp_attr_ints(const IrNode *n, IrAttrKey k);
double interp_attr_f(const IrNode *n, IrAttrKey k);

#endif
