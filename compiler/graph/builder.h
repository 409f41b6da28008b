// builder.h — the one way passes make graph IR nodes: an IrBuilder holds the
// function being built and the span policy, and every constructor below goes
// through ir_mk, which types the node by the op's shape rule (ir_shape.c) and
// appends it (hash-consed) in one step, as ggml's ggml_add_impl checks and
// records in one place. Lowering, autodiff and the optimizer step use it.
//
// A node the shape rule refuses is a compiler bug in autodiff and the
// training step: ir_mk reports it through mlc_ice with the builder's `who`,
// the op and the rule's reason. Lowering sets `diags`: a body sema checked
// once, generically, can still meet sizes at an inlined call site that no
// node fits (a window larger than the extent a caller passes), and that is
// the user's error, reported at the node's span; the builder then records
// `failed` and returns an unchecked node so the walk can go on.
// (ir_build in ir.h is the fallible form, for the parser and tests.)
//
// Span policy: every node gets `span`; with `at_site` set it gets `site`
// instead (lowering inlines prelude code at the user's call, so late reports
// name the user's line). `loc`, when set, is copied to nodes that have no
// text location of their own (autodiff keeps a parsed module's locations).
#ifndef MLC_BUILDER_H
#define MLC_BUILDER_H

#include "ir.h"
#include "scalar.h"

typedef struct IrBuilder {
  IrFunc *f;
  Arena *a;         // the module's arena
  Span span;        // the span of the nodes being made
  bool at_site;     // give them `site` instead
  Span site;
  const char *loc;  // text location for nodes without one (NULL: none)
  const char *who;  // names the pass in internal errors: "autodiff"
  DiagSink *diags;  // set: a refused node is a user error reported here
  bool *failed;     // with diags: set when one was reported
} IrBuilder;

IrBuilder ir_builder(IrFunc *f, const char *who);

// The constructor every other one calls: op over in[0..nin) with attrs,
// typed by the shape rule (`given`: the type of ops that take one).
IrNode *ir_mk(IrBuilder *b, IrOp op, IrNode **in, int nin, const IrAttrs *as, const Type *given);

IrNode *ir_un(IrBuilder *b, IrOp op, IrNode *x);
IrNode *ir_bin(IrBuilder *b, IrOp op, IrNode *x, IrNode *y);
IrNode *ir_add(IrBuilder *b, IrNode *x, IrNode *y);
IrNode *ir_sub(IrBuilder *b, IrNode *x, IrNode *y);
IrNode *ir_mul(IrBuilder *b, IrNode *x, IrNode *y);
IrNode *ir_div(IrBuilder *b, IrNode *x, IrNode *y);
IrNode *ir_where(IrBuilder *b, IrNode *c, IrNode *x, IrNode *y);
// const {value}: every element v, of type t (rank 0: a scalar that broadcasts).
IrNode *ir_const(IrBuilder *b, double v, const Type *t);
IrNode *ir_scalar(IrBuilder *b, double v, DType dt);
// Views; each returns x itself when it would not change anything.
IrNode *ir_reshape(IrBuilder *b, IrNode *x, const Type *t);
IrNode *ir_broadcast(IrBuilder *b, IrNode *x, const Type *t);
IrNode *ir_transpose(IrBuilder *b, IrNode *x, const int64_t *perm);
IrNode *ir_transpose_last2(IrBuilder *b, IrNode *x); // [.., M, K] -> [.., K, M]
IrNode *ir_cast(IrBuilder *b, IrNode *x, DType dt);
// Sums a value that broadcasting widened back to type t (reduce_to).
IrNode *ir_reduce_to(IrBuilder *b, IrNode *x, const Type *t);
IrNode *ir_reduce(IrBuilder *b, IrOp op, IrNode *x, const int64_t *dims, int nd, bool keep);
IrNode *ir_sum_all(IrBuilder *b, IrNode *x);
IrNode *ir_slice(IrBuilder *b, IrNode *x, int dim, int64_t start, int64_t step, const Type *t);
IrNode *ir_concat(IrBuilder *b, IrNode **in, int n, int dim);

// The scalar table's builder over graph IR: constants are rank-0 `const`s of
// dtype dt, primitives the graph ops of the same meaning (select is where),
// and a table op named by a formula (sc_apply) is that op's node. A formula
// that needs a primitive the graph IR lacks (log1p, erf) is a compiler bug.
typedef struct IrScalarBuilder {
  ScBuilder sb;
  IrBuilder *b;
  DType dt;
} IrScalarBuilder;

IrScalarBuilder ir_scalar_builder(IrBuilder *b, DType dt);

#endif
