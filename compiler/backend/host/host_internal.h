// host_internal.h — what the host glue's files share (build_glue.c: the
// model descriptor and entry wrappers; glue_ranges.c: the value ranges the
// graph implies; glue_api.c: the embedding API and its header).
#ifndef MLC_HOST_INTERNAL_H
#define MLC_HOST_INTERNAL_H

#include "host.h"
#include "kernels/abi.h"

#define MLC_STR_(x) #x
#define MLC_STR(x) MLC_STR_(x) // a number macro as a string literal

typedef struct GlueInput {
  const char *name;
  DType dt;
  int rank;                  // per sample (< MLC_MAX_RANK: the batch dim takes a slot)
  int64_t dims[MLC_MAX_RANK]; // -1: the symbol syms[sym[d]]
  int sym[MLC_MAX_RANK];
  int64_t numel;             // per sample (of the constant dims)
  int64_t num_classes;       // the loss's cross-entropy target: its classes
  int64_t value_limit;       // integer input the model indexes with: values < this; 0: none
  const char *limit_what;    // "the rows of tok.w"
  bool has_ignore;           // the label's cross-entropy ignores ignore_value
  int64_t ignore_value;
} GlueInput;

typedef struct Glue {
  const BuildUnit *u;
  GlueInput in[MLC_MAX_INPUTS];
  int nin, nfwd;
  int64_t num_out;           // the forward output's constant dims per sample
  int64_t out_classes;       // its last dim when cross-entropy's classes; 0: none
  const char *syms[MLC_MAX_SYMS]; // symbolic per-sample dims (T), bound from data
  int nsyms;
  int out_syms[MLC_MAX_SYMS], nout_syms; // the output's symbolic dims
  int64_t sym_max[MLC_MAX_SYMS];          // largest value the model takes; 0: no limit
  const char *sym_max_what[MLC_MAX_SYMS];
  int64_t sym_min[MLC_MAX_SYMS];          // smallest value that leaves no size below 1; 0: 1
  const char *sym_min_what[MLC_MAX_SYMS];
  char *err;
  size_t errlen;
} Glue;

// The inputs, the output's dims and the symbols of u (build_glue.c); false
// with a message in g->err when the model does not fit the runtime ABI.
bool glue_collect(Glue *g);
// Labels, the output's class dim and the limits of integer inputs and of
// symbols, from the loss's graph (glue_ranges.c).
void glue_ranges(Glue *g);

// C text helpers (build_glue.c).
void glue_c_str(StrBuf *b, const char *s);
const char *glue_c_type(DType dt);

// "static const int NAME_state[] = {...};": the state index of each
// KBUF_STATE buffer of p, in p->bufs order; their count (build_glue.c).
int glue_state_map(StrBuf *b, const Glue *g, const KirProgram *p, const char *name);

// The device side (glue_device.c, --target cuda): the gpu programs'
// prototypes, state maps and output sizes; the device entry points and the
// MlcDeviceModel `device`; without the cpu target, the CPU stand-ins.
void glue_device_defs(StrBuf *b, const Glue *g);
void glue_device_wrappers(StrBuf *b, const Glue *g);
void glue_no_cpu(StrBuf *b);

// The embedding API (glue_api.c): its header text, and its implementation
// (the header again, then wrappers of the runtime's mlc_instance_*).
void glue_api_header(StrBuf *b, const Glue *g);
void glue_api_source(StrBuf *b, const Glue *g);

#endif
