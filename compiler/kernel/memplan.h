// memplan.h — the memory-plan pass (memplan.c): every temporary of a
// scheduled kernel-IR program gets its byte offset in the program's scratch
// block, and the program its scratch size. The pipeline's `memplan` row;
// backends print the offsets (kir.h, "Temporaries").
#ifndef MLC_MEMPLAN_H
#define MLC_MEMPLAN_H

#include "kir.h"

// Liveness-based: a temporary lives from the first kernel that takes it to
// the last; temporaries live at once get disjoint bytes, others may share
// (memplan.c has the placement). Each is 64-byte aligned. Offsets and the
// size are i64 expressions over the syms, valid for every value of them:
// maxima of polynomials written in a canonical order (B * 1024 + ...).
// Planning twice is an error (reported to d, false).
bool kir_plan_memory(KirProgram *p, DiagSink *d);

#endif
