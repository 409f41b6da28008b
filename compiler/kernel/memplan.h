// memplan.h — the memory-plan pass (memplan.c): every temporary of a
// scheduled kernel-IR program gets its byte offset in the program's scratch
// block, and the program its scratch size. The pipeline's `memplan` row;
// backends print the offsets (kir.h, "Temporaries").
#ifndef MLC_MEMPLAN_H
#define MLC_MEMPLAN_H

#include "kir.h"

// The first plan: temporaries end to end in order of first use (the kernel
// that first takes them; ties and unused temporaries by buffer index),
// each 64-byte aligned; scratch is their total. Offsets and the size are
// i64 polynomials over the syms, written in a canonical order (B * 1024 +
// ...). Planning twice is an error (reported to d, false).
bool kir_plan_memory(KirProgram *p, DiagSink *d);

#endif
