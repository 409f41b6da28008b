// report_internal.h — what report.c shares with report_gpu.c: evaluating
// the planned kernel IR's integer expressions at one batch size.
#ifndef MLC_REPORT_INTERNAL_H
#define MLC_REPORT_INTERNAL_H

#include "kernel/kir.h"

#include <stdio.h>

typedef struct Eval {
  const KirProgram *p;
  int64_t *syms;
  int64_t *vars; // per kernel var: its value (a loop's midpoint)
  bool *bound;
} Eval;

// An integer or bool expression's value; false when it reads memory or an
// unbound variable.
bool report_ev(const Eval *e, const KExpr *x, int64_t *out);
// The syms of p with the batch sym at b and any other argument-bound sym at 64.
int64_t *report_bind(const KirProgram *p, int64_t b);

// The gpu programs' launches (report_gpu.c): grid, block, and each
// launch's longest thread, with the parallelism rule's verdict.
void report_launches(FILE *f, const KirProgram *const *progs, int n, int64_t b);

#endif
