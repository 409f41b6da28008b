// cuda_internal.h — what the CUDA printer's files share (emit.c: the
// generator, the device source; emit_host.c: the host launchers and tables).
#ifndef MLC_CUDA_INTERNAL_H
#define MLC_CUDA_INTERNAL_H

#include "backend/backend.h" // MLC_MAX_RANK: the dims stride
#include "cuda_gen.h"

// A kernel printed once: its key and the table index of its first launch.
typedef struct CudaFn {
  char *key;     // malloc'd; NULL: empty slot
  uint64_t hash;
  int first;     // index in CudaGen.names of its first __global__
  int nlaunch;
} CudaFn;

struct CudaGen {
  CudaGenOptions opt;
  Arena *a;                // names, messages
  StrBuf dev, host;        // the sources so far (host: the launchers)
  StrBuf host_all;         // cuda_gen_host: prologue + launchers + tables
  int dev_line;            // lines of dev so far
  Vec names;               // char*: the __global__ functions, table order
  Vec msgs;                // char*: check messages, flag value - 1
  CudaKernelLines *lines;
  int nlines, caplines;
  CudaFn *fns;             // open addressing, power-of-2 capacity
  int nfns, capfns;
  int reused;
};

// The index (0-based) of check message msg in g->msgs, added when new.
int cuda_message(CudaGen *g, const char *msg);
// The launches of k, printed or found by key: the table index of the
// first (its launches are consecutive) and *n their count; -1 with err.
int cuda_kernel(CudaGen *g, const KirProgram *p, const KirKernel *k, int *n, char *err, size_t errlen);
// The launcher of p into g->host (emit_host.c). 0, or -1 with err.
int cuda_host_program(CudaGen *g, const KirProgram *p, char *err, size_t errlen);
// The block size of a launch (a top-level gpu-block loop): the largest
// gpu-thread trip count in its body, 1 without one.
int64_t cuda_block_threads(const KStmt *launch);
// C's name for a program sym or buffer, made an identifier.
const char *cuda_ident(Arena *a, const char *prefix, const char *name);

#endif
