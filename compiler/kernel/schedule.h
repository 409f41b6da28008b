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
//                max(ceil(n / chunks), 1) and its captures; gpu
//                (schedule_gpu.c): every top-level statement ends in a
//                launch, a gpu-block loop over gpu-thread loops: an
//                independent nest flattened onto blocks of block_threads
//                (the innermost index fastest), long reductions over a
//                block's threads (a shared buffer and a tree), the rest on
//                one thread;
//   3. barriers  one before every top-level statement that kir.h's rule
//                orders after an earlier one of its segment.
// Then p->target names t. Scheduling twice is an error (reported to d,
// false); nothing else fails.
bool kir_schedule(KirProgram *p, const KirTarget *t, DiagSink *d);

#endif
