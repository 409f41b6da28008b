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
  bool f32_mode;       // the run is INTERP_F32
  bool f32;            // the current node rounds floats after every op: f32
                       // mode and a dtype other than f64
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

// A value rounded as a tensor of dtype dt holds it: f32/f16/bf16 to float in
// f32 mode, f64 kept, i32 wrapped, i64 truncated toward zero, bool to 0/1.
double interp_store(const InterpCtx *c, DType dt, double v);
// Float rounding of one arithmetic step of the current node.
static inline double interp_r(const InterpCtx *c, double v) {
  return c->f32 ? (double)(float)v : v;
}

// Float sums, in the one order kir.h defines ("Float sums") and the kernel
// IR spells out: term t at position p of the reduction's innermost group
// goes to chunk p / INTERP_SUM_CHUNK, lane p mod 8 of it; lanes are
// doubles, never rounded; a chunk's value is its lanes folded in halves,
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)); the sum is chunk j's
// value added to combine lane j mod 8, those lanes folded the same way
// (one chunk: its value), which the caller rounds once (interp_r) to the
// reduction's dtype. Chunk 0's lanes are in the struct; the others (a sum
// of more than INTERP_SUM_CHUNK positions) in `more`, which
// interp_sum_value frees (it consumes the sum).
enum { INTERP_SUM_LANES = 8, INTERP_SUM_CHUNK = 8192 };
typedef struct InterpSum {
  double lane[INTERP_SUM_LANES];
  double *more;   // chunk j >= 1's lanes at more[(j - 1) * 8]
  int64_t nmore;  // chunks in more
} InterpSum;

void interp_sum_grow(InterpSum *s, int64_t chunk);

static inline void interp_sum_add(InterpSum *s, int64_t p, double t) {
  if (p < INTERP_SUM_CHUNK) {
    s->lane[p & (INTERP_SUM_LANES - 1)] += t;
    return;
  }
  int64_t j = p / INTERP_SUM_CHUNK;
  if (j > s->nmore) interp_sum_grow(s, j);
  s->more[(j - 1) * INTERP_SUM_LANES + (p & (INTERP_SUM_LANES - 1))] += t;
}

static inline double interp_sum_fold(const double *l) {
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

double interp_sum_value(InterpSum *s);

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
// A matmul's or conv's precision as the kernel library's flag
// (MLC_GEMM_BF16, MLC_GEMM_F16, or 0): gemm_ref.h then rounds the operands.
uint32_t interp_round_flags(const IrNode *n);
const int64_t *interp_attr_ints(const IrNode *n, IrAttrKey k);
double interp_attr_f(const IrNode *n, IrAttrKey k);

#endif
