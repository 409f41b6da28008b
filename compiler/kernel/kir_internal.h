// kir_internal.h — what the kernel IR's own files share (kir.c: construction
// and printer; kir_parse.c: the text parser; kir_verify.c: the verifier):
// the tables behind the text form's words.
#ifndef MLC_KIR_INTERNAL_H
#define MLC_KIR_INTERNAL_H

#include "kir.h"

// Buffer kinds as the text form spells them, indexed by KirBufKind.
extern const char *const kir_buf_kind_names[KBUF_KIND_COUNT];

// An op's roles ("x w y") and attribute groups ("stride:2 ... groups:1"),
// unpacked: role names, attribute group names and their lengths.
typedef struct KirOpSpec {
  int nbufs;
  char roles[KIR_OP_MAX_BUFS][24];
  int ngroups;
  char group[KIR_OP_MAX_ATTRS][24];
  int count[KIR_OP_MAX_ATTRS]; // attributes in the group (1: a scalar, 2: [h, w])
} KirOpSpec;
void kir_op_spec(KirOpKind op, KirOpSpec *out);

// Infix spelling of a binary op in the text form ("+", "<=", "&&"), or NULL
// when it prints as a call (div, mod, pow, max, min).
const char *kir_infix(KBinOp op);

#endif
