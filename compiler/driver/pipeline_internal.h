// pipeline_internal.h — what pipeline.c (the stage table and the stages up
// to codegen) and link.c (the link stage and the external tools) share.
#ifndef MLC_PIPELINE_INTERNAL_H
#define MLC_PIPELINE_INTERNAL_H

#include "pipeline.h"

// The link stage (link.c): the kernels' object from the LLVM module, the
// glue compiled by cc, then the program (cc), the object (cc -r) or the
// library (a copy of libmlc_rt.a + ar rs) in P->tmp; P->linked names it.
bool link_run(Pipeline *P);
// The glue stage, on the way to link: glue.c into P->tmp, cc compiling it
// in the background (the link waits). False after reporting.
bool link_start_glue(Pipeline *P);
// Makes P->tmp (once): $TMPDIR or /tmp, mlc-build-XXXXXX. False after reporting.
bool link_make_tmp(Pipeline *P);
// Removes the temporary directory and everything in it (unless kept).
void link_cleanup(Pipeline *P);

#endif
