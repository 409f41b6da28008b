// sema.h — semantic analysis: names, block instantiation, dtype and shape
// inference over symbolic dims, train-recipe checks, and the --explain
// summary.
//
// Input: a parsed Program (plus the prelude's). Output: diagnostics in the
// sink, and, for a program without errors, what sema resolved for later
// stages (checked.h: each model's instance tree, its resolved bodies and
// its train recipe), which lowering walks without evaluating anything again.
#ifndef MLC_SEMA_H
#define MLC_SEMA_H

#include "checked.h"
#include "front/ast.h"
#include "value.h"

typedef struct Sema Sema;

// The file name of the built-in prelude's source in spans and diagnostics.
#define SEMA_PRELUDE_PATH "<prelude>"

typedef struct SemaOptions {
  bool explain;       // collect the --explain report
  FILE *explain_out;  // where to print it
} SemaOptions;

// Checks every item of `prog` (whose items may include prelude items).
// Returns the number of errors reported to `diags`.
int sema_check(Arena *a, DiagSink *diags, Program *prog,
               const SemaOptions *opt);

// Like sema_check, but returns the analysis for later stages (lower.h);
// NULL only if `prog` is NULL. The result lives in arena `a`.
Sema *sema_analyze(Arena *a, DiagSink *diags, Program *prog,
                   const SemaOptions *opt);

// The program the analysis checked (the prelude's items first).
const Program *sema_program(const Sema *S);

#endif
