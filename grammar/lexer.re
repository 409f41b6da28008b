// lexer.re — the tokens of the .model language (re2c).
//
// Input: a SrcFile whose text ends in a NUL sentinel. Output: tokens with
// byte-offset locations for the bison parser. Lexical errors (stray bytes,
// unterminated strings, malformed or oversized numbers) are reported here
// and lexing goes on, so the parser sees a plausible token stream and every
// error in the file is reported once.
#include "front/lexer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void lex_init(Lexer *lx, Arena *a, DiagSink *d, const SrcFile *f) {
  memset(lx, 0, sizeof *lx);
  lx->arena = a;
  lx->diags = d;
  lx->file = f;
  lx->cur = f->text;
  lx->lim = f->text + f->len;
  lx->bad_token = UINT32_MAX;
}

// Marks the current line as already diagnosed: a syntax error that follows a
// lexical one on the same line is its echo, not news.
static void lex_mark_error(Lexer *lx) {
  lx->lex_error_at = (uint32_t)(lx->tok - lx->file->text) + 1;
}

static Span tok_span(Lexer *lx) {
  return (Span){lx->file, (uint32_t)(lx->tok - lx->file->text),
                (uint32_t)(lx->cur - lx->tok)};
}

typedef struct Keyword {
  const char *name;
  int tok;
} Keyword;

static const Keyword keywords[] = {
    {"block", KW_BLOCK},   {"model", KW_MODEL},   {"fn", KW_FN},
    {"param", KW_PARAM},   {"buffer", KW_BUFFER}, {"frozen", KW_FROZEN},
    {"init", KW_INIT},     {"return", KW_RETURN}, {"grad", KW_GRAD},
    {"train", KW_TRAIN},   {"true", KW_TRUE},     {"false", KW_FALSE},
    {"and", KW_AND},       {"or", KW_OR},         {"not", KW_NOT},
    {"for", KW_FOR},
};

// Identifiers, keywords and dtype names share one rule; the table decides.
static int lex_word(Lexer *lx, MLC_STYPE *val) {
  size_t n = (size_t)(lx->cur - lx->tok);
  for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
    if (strlen(keywords[i].name) == n && !memcmp(keywords[i].name, lx->tok, n))
      return keywords[i].tok;
  char *s = arena_strndup(lx->arena, lx->tok, n);
  int dt = dtype_from_name(s);
  if (dt >= 0) {
    val->dtype = dt;
    return DTYPE;
  }
  val->str = s;
  return IDENT;
}

static int lex_int(Lexer *lx, MLC_STYPE *val) {
  char *s = arena_strndup(lx->arena, lx->tok, (size_t)(lx->cur - lx->tok));
  errno = 0;
  long long v = strtoll(s, NULL, 10);
  if (errno == ERANGE) {
    diag_error(lx->diags, tok_span(lx),
               "integer literal '%.40s' is too large (the limit is %lld)", s,
               (long long)INT64_MAX);
    v = 0;
  }
  Expr *e = ast_expr(lx->arena, EX_INT, tok_span(lx));
  e->ival = v;
  e->name = s;
  val->expr = e;
  return INT;
}

static int lex_float(Lexer *lx, MLC_STYPE *val) {
  char *s = arena_strndup(lx->arena, lx->tok, (size_t)(lx->cur - lx->tok));
  errno = 0;
  double v = strtod(s, NULL);
  if (errno == ERANGE && (v > 1.0 || v < -1.0)) {
    diag_error(lx->diags, tok_span(lx), "float literal '%.40s' is out of range",
               s);
    v = 0;
  }
  Expr *e = ast_expr(lx->arena, EX_FLOAT, tok_span(lx));
  e->fval = v;
  e->name = s;
  val->expr = e;
  return FLOAT;
}

// The token text is "...", escapes already validated by the rule.
static int lex_string(Lexer *lx, MLC_STYPE *val, bool closed) {
  const char *p = lx->tok + 1, *end = closed ? lx->cur - 1 : lx->cur;
  char *out = arena_alloc(lx->arena, (size_t)(end - p) + 1), *o = out;
  while (p < end) {
    if (*p == '\\' && p + 1 < end) {
      p++;
      switch (*p) {
      case 'n': *o++ = '\n'; break;
      case 't': *o++ = '\t'; break;
      case '\\': *o++ = '\\'; break;
      case '"': *o++ = '"'; break;
      default: {
        Span sp = {lx->file, (uint32_t)(p - 1 - lx->file->text), 2};
        diag_error(lx->diags, sp, "unknown escape sequence '\\%c' in string",
                   *p >= 32 && *p < 127 ? *p : '?');
        *o++ = *p;
      }
      }
      p++;
    } else {
      *o++ = *p++;
    }
  }
  *o = 0;
  if (!closed) {
    lx->bad_token = (uint32_t)(lx->tok - lx->file->text);
    lex_mark_error(lx);
    lx->depth = 0; // the line end after it must end the statement
  }
  if (!closed)
    diag_error(lx->diags, tok_span(lx),
               "unterminated string literal (strings end on the same line)");
  Expr *e = ast_expr(lx->arena, EX_STR, tok_span(lx));
  e->name = out;
  val->expr = e;
  return STRING;
}

// Decodes one UTF-8 sequence at p (at most n bytes); returns its length, or
// 0 if the bytes are not valid UTF-8.
static int utf8_decode(const unsigned char *p, size_t n, uint32_t *cp) {
  int len = p[0] >= 0xF0 && p[0] < 0xF5 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
  if (len == 0 || (size_t)len > n) return 0;
  uint32_t c = p[0] & (0x7F >> len);
  for (int i = 1; i < len; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    c = c << 6 | (p[i] & 0x3F);
  }
  if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
      (c >= 0xD800 && c <= 0xDFFF))
    return 0;
  *cp = c;
  return len;
}

static void lex_stray(Lexer *lx) {
  const unsigned char *p = (const unsigned char *)lx->tok;
  lex_mark_error(lx);
  uint32_t cp;
  int len;
  if (*p >= 32 && *p < 127)
    diag_error(lx->diags, tok_span(lx), "stray '%c' in program", *p);
  else if (*p >= 0x80 && (len = utf8_decode(p, (size_t)(lx->lim - lx->tok), &cp)))
    diag_error(lx->diags, tok_span(lx),
               "stray character '%.*s' (U+%04X) in program; only ASCII is "
               "allowed outside comments and strings",
               len, lx->tok, cp);
  else if (*p >= 0x80)
    diag_error(lx->diags, tok_span(lx),
               "invalid UTF-8 byte 0x%02X in program", *p);
  else
    diag_error(lx->diags, tok_span(lx), "stray byte 0x%02X in program", *p);
}

// One raw token; NL for every line end (the filter in mlc_lex drops most).
static int lex_raw(Lexer *lx, MLC_STYPE *val) {
  for (;;) {
    lx->tok = lx->cur;
    /*!re2c
      re2c:api:style = free-form;
      re2c:yyfill:enable = 0;
      re2c:eof = 0;
      re2c:define:YYCTYPE = "unsigned char";
      re2c:define:YYCURSOR = "lx->cur";
      re2c:define:YYMARKER = "lx->mar";
      re2c:define:YYLIMIT = "lx->lim";
      re2c:define:YYPEEK = "(unsigned char)*lx->cur";
      re2c:define:YYSKIP = "++lx->cur;";
      re2c:define:YYBACKUP = "lx->mar = lx->cur;";
      re2c:define:YYRESTORE = "lx->cur = lx->mar;";
      re2c:define:YYLESSTHAN = "lx->lim - lx->cur < @@{len}";

      dec   = [0-9]+;
      exp   = [eE] [+-]? [0-9]+;
      word  = [a-zA-Z_] [a-zA-Z_0-9]*;

      $                       { return MLC_EOF; }
      [ \t\r\f\v]+            { continue; }
      "#" [^\n]*              { continue; }
      "\n"                    { return NL; }
      ";"                     { return NL; }

      word                    { return lex_word(lx, val); }
      dec                     { return lex_int(lx, val); }
      dec "." [0-9]* exp? | "." [0-9]+ exp? | dec exp
                              { return lex_float(lx, val); }
      [0-9] [a-zA-Z_0-9.]* | "." [0-9] [a-zA-Z_0-9.]* {
        diag_error(lx->diags, tok_span(lx), "malformed number '%.*s'",
                   (int)(lx->cur - lx->tok > 40 ? 40 : lx->cur - lx->tok), lx->tok);
        val->expr = ast_expr(lx->arena, EX_INT, tok_span(lx));
        lx->bad_token = (uint32_t)(lx->tok - lx->file->text);
        lex_mark_error(lx);
        return INT;
      }
      ["] ([^"\\\n] | "\\" [^\n])* ["]  { return lex_string(lx, val, true); }
      ["] ([^"\\\n] | "\\" [^\n])*      { return lex_string(lx, val, false); }

      "..." { return ELLIPSIS; }
      "->"  { return ARROW; }
      "<="  { return LE; }
      ">="  { return GE; }
      "=="  { return EQ; }
      "!="  { return NE; }
      "**"  { return POW; }
      "//"  { return FLOORDIV; }
      [-+*/@<>=(){}[\],:.] { return (unsigned char)*lx->tok; }

      [\x80-\xff]+          { lex_stray(lx); continue; }
      *                       { lex_stray(lx); continue; }
    */
  }
}

// `blocks.0.attn`: a '.' and digits right after a name or a closing
// bracket are a member access by position (the paths of a list's elements,
// as PyTorch's state dicts spell them), not the float .0. The '.' is
// returned and the digits held back as an integer.
static bool position_member(Lexer *lx, MLC_LTYPE *loc) {
  const char *p = lx->cur;
  uint32_t off = (uint32_t)(p - lx->file->text);
  if (*p != '.' || p[1] < '0' || p[1] > '9' || off != lx->prev_end ||
      (lx->last != IDENT && lx->last != ')' && lx->last != ']'))
    return false;
  const char *q = p + 1;
  while (*q >= '0' && *q <= '9') q++;
  if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_') return false;
  lx->tok = p + 1;
  lx->cur = q;
  Expr *e = ast_expr(lx->arena, EX_INT, tok_span(lx));
  e->name = arena_strndup(lx->arena, p + 1, (size_t)(q - p - 1));
  errno = 0;
  e->ival = strtoll(e->name, NULL, 10);
  if (errno == ERANGE) diag_error(lx->diags, tok_span(lx), "position '%.40s' is too large", e->name);
  lx->pending = INT;
  lx->pending_val.expr = e;
  lx->pending_loc = (MLC_LTYPE){off + 1, (uint32_t)(q - lx->file->text)};
  *loc = (MLC_LTYPE){off, off + 1};
  lx->prev_end = off + 1;
  return true;
}

// Decides which line ends are tokens and inserts NL before '}' and EOF.
int mlc_lex(MLC_STYPE *val, MLC_LTYPE *loc, Lexer *lx) {
  if (lx->pending) {
    int t = lx->pending;
    lx->pending = 0;
    *val = lx->pending_val;
    *loc = lx->pending_loc;
    if (t == INT) lx->prev_end = loc->end; // a held-back position (blocks.0)
    return lx->last = t;
  }
  for (;;) {
    if (position_member(lx, loc)) return lx->last = '.';
    int t = lex_raw(lx, val);
    loc->off = (uint32_t)(lx->tok - lx->file->text);
    loc->end = (uint32_t)(lx->cur - lx->file->text);
    if (t == NL) {
      if (lx->depth > 0 || lx->last == 0 || lx->last == NL || lx->last == '{')
        continue;
      loc->off = loc->end = lx->prev_end; // "end of line" right after the last token
      return lx->last = NL;
    }
    if (t == '(' || t == '[') lx->depth++;
    if ((t == ')' || t == ']') && lx->depth > 0) lx->depth--;
    if (t == '{' || t == '}') lx->depth = 0; // braces never nest in brackets
    if ((t == '}' || t == MLC_EOF) && lx->last != 0 && lx->last != NL &&
        lx->last != '{') {
      lx->pending = t;
      lx->pending_val = *val;
      lx->pending_loc = *loc;
      loc->off = loc->end = lx->prev_end; // empty, right after the last token
      return lx->last = NL;
    }
    lx->prev_end = loc->end;
    return lx->last = t;
  }
}
