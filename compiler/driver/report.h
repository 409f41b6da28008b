// report.h — `mlc build --report` (report.c): what the compiled programs
// cost at one batch size, read off the planned kernel IR.
//
//   kernels  every kernel of train_step, eval and predict in run order, with
//            the .model lines it comes from, its FLOPs and the bytes it
//            moves at the batch size
//   memory   training's peak at the batch size: parameters, gradients,
//            optimizer state, other state, activations and temporaries
//            (the memory plan's scratch), workspace, the data batch
//   fit      with a memory limit: the largest batch size whose peak fits
//
// docs/design/pipeline.md ("mlc build --report") describes the columns.
#ifndef MLC_REPORT_H
#define MLC_REPORT_H

#include "backend/host/host.h"

#include <stdio.h>

typedef struct ReportOptions {
  int64_t batch;      // the batch sym's value; 0: the recipe's batch
  int64_t max_memory; // bytes; 0: no fit section
} ReportOptions;

// The report of u (planned: after the memplan stage) to f.
void report_write(FILE *f, const BuildUnit *u, const ReportOptions *o);

// "512M", "2G", "1.5GiB", "1000000": bytes (K, M, G, T are powers of 1024);
// false when s is not such a size.
bool report_parse_size(const char *s, int64_t *out);

// The peak bytes of training at batch b (the memory section's total).
int64_t report_peak(const BuildUnit *u, int64_t b);

#endif
