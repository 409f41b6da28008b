// lexer.h — the lexer's state (grammar/lexer.re) shared with the parser.
//
// The lexer runs over a whole in-memory file with a NUL sentinel. It turns
// line ends into NL tokens only where they end something: never inside (...)
// or [...], never twice in a row, never right after '{'. It also inserts an
// NL before '}' and before end of file, so `{ return x }` and a last line
// without '\n' need no special grammar.
#ifndef MLC_LEXER_H
#define MLC_LEXER_H

#include "ast.h"
#include "parser.h"

struct Lexer {
  Arena *arena;
  DiagSink *diags;
  const SrcFile *file;
  const char *cur, *tok, *lim, *mar; // re2c cursor, token start, limit, marker
  int depth;        // nesting of ( and [ : newlines inside are not tokens
  int last;         // last token returned (0 at start)
  uint32_t prev_end; // end offset of the last token returned
  int pending;      // a token held back while an NL is inserted before it
  MLC_STYPE pending_val;
  MLC_LTYPE pending_loc;
  bool syntax_reported; // a syntax error was reported and not yet recovered
  int nsyntax;          // syntax errors reported so far
  uint32_t bad_token;   // offset of the last token with a lexical error
  uint32_t lex_error_at; // offset+1 of the last lexical error (0: none)
  Program *prog;    // the parser's result
};

void lex_init(Lexer *lx, Arena *a, DiagSink *d, const SrcFile *f);
int mlc_lex(MLC_STYPE *val, MLC_LTYPE *loc, Lexer *lx);
// A readable name for a token kind: "identifier", "'('", "end of file".
const char *lex_token_name(int tok);
static inline Span lex_span(const Lexer *lx, MLC_LTYPE loc) {
  return (Span){lx->file, loc.off, loc.end - loc.off};
}

#endif
