// front.h — the front end proper: one file's text to tokens and an AST with
// spans (front.c over the generated lexer and parser).
#ifndef MLC_FRONT_H
#define MLC_FRONT_H

#include "ast.h"

#include <stdio.h>

// Parses one file. Never NULL: on syntax errors the Program holds what was
// recovered and the errors are in `d`.
Program *frontend_parse(Arena *a, DiagSink *d, const SrcFile *f);

// `mlc dump-tokens`: one token per line, "line:col kind text".
void frontend_dump_tokens(Arena *a, DiagSink *d, const SrcFile *f, FILE *out);

#endif
