// frontend.h — the front end and sema as one call: source text -> tokens ->
// AST (front/front.h) -> checked program, with the built-in prelude
// parsed in front of the user's items. Used by the driver, the tests and the fuzz target.
#ifndef MLC_FRONTEND_H
#define MLC_FRONTEND_H

#include "front/front.h"
#include "sema.h"

// Parses the prelude and `f`, and runs sema unless parsing failed (the
// driver stops at the stage boundary). Returns the number of errors.
int frontend_check(Arena *a, DiagSink *d, const SrcFile *f,
                   const SemaOptions *opt, Program **out);

// Like frontend_check, but also returns sema's analysis (NULL when parsing
// failed) for the later stages (lower.h).
int frontend_analyze(Arena *a, DiagSink *d, const SrcFile *f,
                     const SemaOptions *opt, Sema **out);

// Reads `path`, runs the front end, and picks the model to compile: *model
// if set, else the file's first model (written back to *model). NULL after
// reporting to `d` (an unreadable file, errors in it, no model).
Sema *frontend_load_model(Arena *a, DiagSink *d, const char *path, const char **model);

// All of the above on an in-memory buffer; diagnostics are printed to
// `diag_out` (may be NULL to discard). For the fuzz target and tests.
int frontend_check_buffer(const char *path, const char *data, size_t len,
                          FILE *diag_out, bool explain, FILE *explain_out);

#endif
