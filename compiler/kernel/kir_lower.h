// kir_lower.h — graph IR function -> kernel IR program (kir_lower*.c).
//
// This is the one kernel-IR header that sees the graph IR: backends include
// kir.h only.
#ifndef MLC_KIR_LOWER_H
#define MLC_KIR_LOWER_H

#include "graph/ir.h"
#include "kir.h"

// ---- lowering (kir_lower*.c) -------------------------------------------------------------------
// One canonical kernel per graph op (views become copy kernels with index
// maps; param/buffer/optstate reads and inputs are buffers, not kernels):
// the interpreter's loop nest, with no target in it. Loops whose iterations
// are independent are marked parallel; matmul, conv2d (+ grads) and the
// pools carry an op record for the schedule's recipes (schedule.h). The
// program is unscheduled: kir_schedule and kir_plan_memory come next.
// Returns NULL and writes "kir: %5 = foo(..): not supported" to err on an
// op it cannot lower.
KirProgram *kir_lower_func(Arena *a, IrModule *m, IrFunc *f, char *err,
                           size_t errlen);

// ---- finite checks (kir_lower.c) ------------------------------------------------------------
// With check_finite, lowering follows every kernel that computes a float
// value with a check kernel ("k<id>_finite") over that value's buffer; the
// first element that is NaN or +-Inf stops the program (kernels after it do
// not run, state stores included) with the message
//
//     nonfinite SITE KIND at FILE:LINE:COL (OP)
//
// SITE indexes `sites` (one per check kernel, in program order), KIND is
// nan, inf or -inf. Checks run in program order, so the site named is the
// first value that went non-finite (forward ops come before their
// gradients). The check loops are serial: which element's KIND is reported
// does not depend on the thread count.
typedef struct KirSite {
  Span span;        // the graph op's span (gradient ops: their forward op's)
  const char *op;   // the graph op's name: "matmul"
} KirSite;

typedef struct KirLowerOptions {
  bool check_finite;
  // Fusion (kir_fuse.c, docs/design/fusion.md): elementwise ops of one shape
  // share a loop nest, intermediates read only inside it stay in registers,
  // constants become literals, updated state is written in place. The
  // results are the unfused program's, bit for bit. Ignored with
  // check_finite (every op's value is checked, so each is materialised).
  bool fuse;
  // With check_finite: a state slot whose value makes what depends on it
  // non-finite by design (loss scaling's opt.scaler.scale: the scaled
  // backward pass may overflow, and the step is then skipped). Values that
  // depend on it are not checked, up to a `where` whose condition depends
  // on it (the skip's select, which keeps the old, checked value). NULL: none.
  const char *overflow_ok;
  // A float reduce_to over leading dims (a bias's gradient) sums 8 or 16
  // adjacent outputs per task, the same sums in the same order (kir_lower.c,
  // reduce_to_cols): the CPU's form, whose vectoriser then reads rows
  // whole; a GPU wants a thread per output, so its lowering leaves it off.
  bool reduce_cols;
  // softmax / log_softmax (and the cross entropy's log-sum-exp): the line's
  // max in 8 lanes (position p into lane p mod 8, folded in halves: eight
  // compare chains, not one), and a softmax's exps stored as the sum reads
  // them, its last pass then dividing the stored values, so each exp is
  // computed once (f32 and f64 results: the stored value is the computed
  // one). Max is exact, so the results are the one-chain form's but for
  // which of +0 / -0 a line's max is, which x - max and its exp do not
  // show, and which NaN it is when a line holds several (the outputs are
  // NaN either way; their sign or payload may differ). The CPU's form; the
  // GPU's lowering keeps the plain
  // passes, which its schedule maps onto threads.
  bool line_lanes;
  Vec sites;        // out: KirSite*, indexed by the checks' SITE
} KirLowerOptions;

#define KIR_NONFINITE_PREFIX "nonfinite "

// kir_lower_func with options (o may be NULL: the defaults, no checks).
KirProgram *kir_lower_func_opts(Arena *a, IrModule *m, IrFunc *f,
                                KirLowerOptions *o, char *err, size_t errlen);

#endif
