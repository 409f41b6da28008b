// front.c — the front end proper: source text -> tokens -> AST.
//
// frontend_parse runs the bison parser (grammar/parser.y) over the re2c
// lexer (grammar/lexer.re); frontend_dump_tokens prints the lexer's view.
// Sema (sema/frontend.h) takes the Program from here.
#include "front.h"

#include "lexer.h"

int mlc_parse(Lexer *lx);

Program *frontend_parse(Arena *a, DiagSink *d, const SrcFile *f) {
  Lexer lx;
  lex_init(&lx, a, d, f);
  mlc_parse(&lx);
  if (!lx.prog) { // the parser gave up before its first reduction
    lx.prog = arena_alloc(a, sizeof(Program));
    lx.prog->file = f;
  }
  return lx.prog;
}

void frontend_dump_tokens(Arena *a, DiagSink *d, const SrcFile *f, FILE *out) {
  Lexer lx;
  lex_init(&lx, a, d, f);
  MLC_STYPE val;
  MLC_LTYPE loc;
  for (;;) {
    int t = mlc_lex(&val, &loc, &lx);
    Span sp = lex_span(&lx, loc);
    int line, col;
    span_linecol(sp, &line, &col);
    fprintf(out, "%d:%d %s", line, col, lex_token_name(t));
    if (t == IDENT || t == INT || t == FLOAT || t == DTYPE || t == STRING)
      fprintf(out, " %.*s", (int)sp.len, f->text + sp.off);
    fputc('\n', out);
    if (t == MLC_EOF) break;
  }
}
