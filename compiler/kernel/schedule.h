// schedule.h — the scheduling pass (schedule.c, schedule_nn.c): a lowered
// kernel-IR program becomes one scheduled for a target (target.h). The
// pipeline's `schedule` row; what it decides is written into the program
// (kir.h), so a backend only prints it.
#ifndef MLC_SCHEDULE_H
#define MLC_SCHEDULE_H

#include "target.h"

// Per kernel, in this order:
//   1. recipe    a kernel with an op record whose recipe applies to the
//                target (the strategy table in schedule.c) is re-lowered
//                by it (its own temporaries become program buffers);
//   2. maps      cpu: the first independent loop on every path from a
//                kernel's top becomes a chunk loop with grain
//                max(ceil(n / chunks), 1), coarser where an iteration's
//                work is a constant so that a chunk does at least
//                chunk_min_work (schedule.c, chunk_grain), and its
//                captures; gpu
//                (schedule_gpu.c): every top-level statement ends in a
//                launch, a gpu-block loop over gpu-thread loops: an
//                independent nest flattened onto blocks of block_threads
//                (the innermost index fastest), long reductions over a
//                block's threads (a shared buffer and a tree), the rest on
//                one thread;
//   3. barriers  one before every top-level statement that kir.h's rule
//                orders after an earlier one of its segment.
// Then, cpu only:
//   4. groups    runs of independent kernels that are each one chunk loop
//                or have none (no call, check or op record) become one
//                kernel whose chunk loop runs their chunks and whole serial
//                bodies as tasks (schedule_merge.c): one pool region for
//                them, serial sums beside the updates; at most 8 members,
//                one of them serial; no kernel moves past one with a check.
// Then p->target names t. Scheduling twice is an error (reported to d,
// false); nothing else fails.
bool kir_schedule(KirProgram *p, const KirTarget *t, DiagSink *d);

// Whether a scheduled kernel's convolution runs the library's Winograd
// path (a `call conv2d` / `conv2d_pool` / `conv2d_grad_input` with the
// winograd flag): for
// `mlc build -v` and --report.
bool kir_kernel_winograd(const KirKernel *k);

#endif
