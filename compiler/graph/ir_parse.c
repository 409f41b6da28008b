// ir_parse.c — the graph IR's text form, reading side: the grammar printed
// by ir_print.c (docs/design/ir.md has it in full), parsed by recursive
// descent over a small hand-written lexer. `;` starts a comment to the end of
// the line; newlines are plain white space.
//
// Input: a SrcFile with IR text. Output: an IrModule whose nodes are built
// through ir_node (so duplicate pure nodes merge) with the types as written,
// unchecked: the verifier checks them. Each node's span points into the IR
// text (so verifier errors on hand-written IR name its line), and its loc
// field holds the `loc(...)` text, or "" when there was none, so printing
// reproduces exactly what was read.
//
// The first syntax error is reported to the DiagSink and ends the parse
// (longjmp back to ir_parse); nothing outside the arena is allocated.
#include "ir.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef enum { T_EOF, T_IDENT, T_VALUE, T_INT, T_FLOAT, T_ARROW, T_PUNCT } TokKind;

typedef struct Tok {
  TokKind kind;
  const char *s; // start in the source text
  int len;
  char c; // T_PUNCT: the character
} Tok;

typedef struct P {
  Arena *a;
  const SrcFile *src;
  DiagSink *diags;
  const char *pos; // first byte after tok
  Tok tok;
  const char *prev_end; // end of the token before tok (span ends)
  IrModule *m;
  IrFunc *f;   // NULL at module level
  Vec vnames;  // char*, value names of the current function
  Vec vnodes;  // IrNode*, parallel to vnames
  jmp_buf fail;
} P;

// ---- errors --------------------------------------------------------------------------
static Span tok_span(P *p, Tok t) {
  return (Span){p->src, (uint32_t)(t.s - p->src->text), (uint32_t)(t.len ? t.len : 1)};
}

static void error_at(P *p, Tok t, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
static void error_at(P *p, Tok t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_vreport(p->diags, DIAG_ERROR, tok_span(p, t), fmt, ap);
  va_end(ap);
  longjmp(p->fail, 1);
}

static const char *tok_text(P *p, Tok t) {
  if (t.kind == T_EOF) return "end of file";
  return arena_printf(p->a, "'%.*s'", t.len, t.s);
}

// ---- lexer -------------------------------------------------------------------------------
static bool is_name(int c) { return isalnum(c) || c == '_'; }

static void skip_blank(P *p) {
  for (;;) {
    while (*p->pos && isspace((unsigned char)*p->pos)) p->pos++;
    if (*p->pos != ';') return;
    while (*p->pos && *p->pos != '\n') p->pos++;
  }
}

static void lex_number(P *p, Tok *t) {
  const char *s = p->pos;
  while (isdigit((unsigned char)*s)) s++;
  t->kind = T_INT;
  if (*s == '.') {
    t->kind = T_FLOAT;
    for (s++; isdigit((unsigned char)*s);) s++;
  }
  if ((*s == 'e' || *s == 'E') &&
      (isdigit((unsigned char)s[1]) || ((s[1] == '-' || s[1] == '+') && isdigit((unsigned char)s[2])))) {
    t->kind = T_FLOAT;
    for (s += 2; isdigit((unsigned char)*s);) s++;
  }
  p->pos = s;
}

static void next(P *p) {
  p->prev_end = p->tok.s ? p->tok.s + p->tok.len : p->pos;
  skip_blank(p);
  Tok t = {T_EOF, p->pos, 0, 0};
  unsigned char c = (unsigned char)*p->pos;
  if (!c && p->pos >= p->src->text + p->src->len) {
    p->tok = t;
    return;
  }
  if (c == '%') {
    const char *s = ++p->pos;
    while (is_name((unsigned char)*p->pos)) p->pos++;
    t.kind = T_VALUE;
    if (p->pos == s) error_at(p, (Tok){T_PUNCT, t.s, 1, '%'}, "expected a value name after '%%'");
  } else if (isalpha(c) || c == '_') {
    while (is_name((unsigned char)*p->pos) || *p->pos == '.') p->pos++;
    t.kind = T_IDENT;
  } else if (isdigit(c)) {
    lex_number(p, &t);
  } else if (c == '-' && p->pos[1] == '>') {
    p->pos += 2;
    t.kind = T_ARROW;
  } else if (strchr("(){}[],:=+-*/^", c) && c) {
    p->pos++;
    t.kind = T_PUNCT;
    t.c = (char)c;
  } else {
    error_at(p, (Tok){T_PUNCT, t.s, 1, 0}, "stray character 0x%02x in IR text", c);
  }
  t.len = (int)(p->pos - t.s);
  p->tok = t;
}

static bool is_punct(P *p, char c) { return p->tok.kind == T_PUNCT && p->tok.c == c; }
static bool is_word(P *p, const char *w) {
  return p->tok.kind == T_IDENT && (int)strlen(w) == p->tok.len && !memcmp(p->tok.s, w, (size_t)p->tok.len);
}

static bool accept(P *p, char c) {
  if (!is_punct(p, c)) return false;
  next(p);
  return true;
}

static void expect(P *p, char c) {
  if (!accept(p, c)) error_at(p, p->tok, "expected '%c', got %s", c, tok_text(p, p->tok));
}

static void expect_word(P *p, const char *w) {
  if (!is_word(p, w)) error_at(p, p->tok, "expected '%s', got %s", w, tok_text(p, p->tok));
  next(p);
}

static char *take(P *p, TokKind k, const char *what) {
  if (p->tok.kind != k) error_at(p, p->tok, "expected %s, got %s", what, tok_text(p, p->tok));
  char *s = arena_strndup(p->a, p->tok.s, (size_t)p->tok.len);
  next(p);
  return s;
}

// ---- numbers -------------------------------------------------------------------------------
static int64_t parse_int(P *p) {
  bool neg = accept(p, '-');
  Tok t = p->tok;
  char *s = take(p, T_INT, "an integer");
  errno = 0;
  long long v = strtoll(s, NULL, 10);
  if (errno == ERANGE) error_at(p, t, "integer %s out of range", s);
  return neg ? -v : v;
}

// float := ['-'] (INT | FLOAT | 'inf' | 'nan')
static double parse_float(P *p) {
  bool neg = accept(p, '-');
  double v;
  if (is_word(p, "inf") || is_word(p, "nan")) {
    v = p->tok.s[0] == 'i' ? HUGE_VAL : NAN;
    next(p);
  } else if (p->tok.kind == T_INT || p->tok.kind == T_FLOAT) {
    v = strtod(take(p, p->tok.kind, "a number"), NULL);
  } else {
    error_at(p, p->tok, "expected a number, got %s", tok_text(p, p->tok));
  }
  return neg ? -v : v;
}

// ---- dims and types ---------------------------------------------------------------------------
static Dim *parse_dim_expr(P *p);

// atom := INT | NAME | '(' expr ')'
static Dim *parse_dim_atom(P *p) {
  if (p->tok.kind == T_INT) return dim_const(p->a, parse_int(p));
  if (p->tok.kind == T_IDENT) return dim_sym(p->a, ir_sym(p->m, p->f, take(p, T_IDENT, "a symbol")));
  if (accept(p, '(')) {
    Dim *d = parse_dim_expr(p);
    expect(p, ')');
    return d;
  }
  error_at(p, p->tok, "expected a dimension, got %s", tok_text(p, p->tok));
}

// power := atom ['^' INT];  unary := '-' unary | power
static Dim *parse_dim_unary(P *p) {
  if (accept(p, '-')) return dim_sub(p->a, dim_const(p->a, 0), parse_dim_unary(p));
  Dim *d = parse_dim_atom(p);
  if (!accept(p, '^')) return d;
  Tok t = p->tok;
  int64_t e = parse_int(p);
  if (e < 1 || e > 64) error_at(p, t, "exponent must be in 1..64");
  Dim *r = d;
  for (int64_t i = 1; i < e && r; i++) r = dim_mul(p->a, r, d);
  return r;
}

// term := unary {('*' | '/' | '//') unary}; '//' is floor division by a
// positive constant (the output sizes of strided windows)
static Dim *parse_dim_term(P *p) {
  Dim *d = parse_dim_unary(p);
  for (;;) {
    if (accept(p, '*')) {
      d = dim_mul(p->a, d, parse_dim_unary(p));
    } else if (accept(p, '/')) {
      if (!accept(p, '/')) {
        d = dim_div(p->a, d, parse_dim_unary(p));
        continue;
      }
      int64_t k = 0;
      Dim *r = parse_dim_unary(p);
      d = r && dim_is_const(r, &k) && k > 0 ? dim_floordiv(p->a, d, k) : NULL;
    } else {
      return d;
    }
  }
}

// expr := term {('+' | '-') term}
static Dim *parse_dim_expr(P *p) {
  Dim *d = parse_dim_term(p);
  for (;;) {
    if (accept(p, '+'))
      d = dim_add(p->a, d, parse_dim_term(p));
    else if (accept(p, '-'))
      d = dim_sub(p->a, d, parse_dim_term(p));
    else
      return d;
  }
}

static Dim *parse_dim(P *p) {
  Tok t = p->tok;
  Dim *d = parse_dim_expr(p);
  if (!d) error_at(p, t, "dimension overflows or does not divide exactly");
  return d;
}

// type := DTYPE ['[' dim {',' dim} ']']
static Type *parse_type(P *p) {
  Tok t = p->tok;
  char *name = take(p, T_IDENT, "a dtype");
  int dt = dtype_from_name(name);
  if (dt < 0) error_at(p, t, "unknown dtype '%s'", name);
  Dim *dims[64];
  int rank = 0;
  if (accept(p, '[')) {
    do {
      if (rank == 64) error_at(p, p->tok, "too many dimensions");
      dims[rank++] = parse_dim(p);
    } while (accept(p, ','));
    expect(p, ']');
  }
  Type *ty = type_new(p->a, (DType)dt, rank);
  for (int i = 0; i < rank; i++) ty->dims[i] = dims[i];
  return ty;
}

// ---- values ----------------------------------------------------------------------------------
static IrNode *lookup_value(P *p, const char *name) {
  for (int i = 0; i < p->vnames.len; i++)
    if (strcmp(VEC_AT(p->vnames, char, i), name) == 0) return VEC_AT(p->vnodes, IrNode, i);
  return NULL;
}

static void define_value(P *p, Tok t, const char *name, IrNode *n) {
  if (lookup_value(p, name)) error_at(p, t, "redefinition of %%%s", name);
  vec_push(p->a, &p->vnames, (void *)name);
  vec_push(p->a, &p->vnodes, n);
}

static IrNode *use_value(P *p) {
  Tok t = p->tok;
  char *name = take(p, T_VALUE, "a value");
  IrNode *n = lookup_value(p, name + 1);
  if (!n) error_at(p, t, "use of undefined value %s", name);
  return n;
}

// ---- attributes ----------------------------------------------------------------------------------
// attr := NAME '=' (INT | '[' [INT {',' INT}] ']' | FLOAT | DTYPE), by the key's kind
static void parse_attr(P *p, IrAttrs *as) {
  Tok t = p->tok;
  char *name = take(p, T_IDENT, "an attribute name");
  int k = ir_attr_lookup(name);
  if (k < 0) error_at(p, t, "unknown attribute '%s'", name);
  if (ir_attr_get(as, (IrAttrKey)k)) error_at(p, t, "attribute '%s' given twice", name);
  expect(p, '=');
  switch (ir_attr_kind((IrAttrKey)k)) {
  case IRK_INT: ir_attr_set_int(p->a, as, (IrAttrKey)k, parse_int(p)); return;
  case IRK_FLOAT: ir_attr_set_float(p->a, as, (IrAttrKey)k, parse_float(p)); return;
  case IRK_DTYPE: {
    Tok dt = p->tok;
    int d = dtype_from_name(take(p, T_IDENT, "a dtype"));
    if (d < 0) error_at(p, dt, "attribute '%s' expects a dtype", name);
    ir_attr_set_int(p->a, as, (IrAttrKey)k, d);
    return;
  }
  case IRK_INTS: break;
  }
  if (!is_punct(p, '[')) error_at(p, p->tok, "attribute '%s' expects a list of integers", name);
  next(p);
  int64_t v[64];
  int n = 0;
  if (!is_punct(p, ']')) do {
      if (n == 64) error_at(p, p->tok, "list too long");
      v[n++] = parse_int(p);
    } while (accept(p, ','));
  expect(p, ']');
  ir_attr_set_ints(p->a, as, (IrAttrKey)k, v, n);
}

static IrAttrs parse_attrs(P *p) {
  IrAttrs as = {0};
  if (!accept(p, '{')) return as;
  do parse_attr(p, &as);
  while (accept(p, ','));
  expect(p, '}');
  return as;
}

// loc := 'loc' '(' any text without ')' ')'
static const char *parse_loc(P *p) {
  if (!is_word(p, "loc")) return "";
  next(p);
  if (!is_punct(p, '(')) error_at(p, p->tok, "expected '(' after loc");
  const char *s = p->pos, *e = strchr(s, ')');
  const char *nl = strchr(s, '\n');
  if (!e || (nl && nl < e)) error_at(p, p->tok, "unterminated loc(...)");
  p->pos = e + 1;
  next(p);
  return arena_strndup(p->a, s, (size_t)(e - s));
}

// ---- statements ------------------------------------------------------------------------------------
static int parse_op(P *p) {
  Tok t = p->tok;
  char *name = take(p, T_IDENT, "an op name");
  int op = ir_op_lookup(name);
  if (op < 0) error_at(p, t, "unknown op '%s'", name);
  if (op == IR_INPUT) error_at(p, t, "inputs are declared in the function signature");
  return op;
}

// node := VALUE '=' OP [PATH] ['(' VALUE {',' VALUE} ')'] [attrs] ':' type [loc]
static void parse_node(P *p) {
  Tok vt = p->tok;
  char *name = take(p, T_VALUE, "a value");
  expect(p, '=');
  IrOp op = (IrOp)parse_op(p);
  char *path = NULL;
  if (op == IR_PARAM || op == IR_BUFFER || op == IR_OPTSTATE || op == IR_STORE)
    path = take(p, T_IDENT, "a parameter path");
  IrNode *ins[64];
  int nin = 0;
  if (accept(p, '(')) {
    if (!is_punct(p, ')')) do {
        if (nin == 64) error_at(p, p->tok, "too many operands");
        ins[nin++] = use_value(p);
      } while (accept(p, ','));
    expect(p, ')');
  }
  IrAttrs as = parse_attrs(p);
  expect(p, ':');
  Type *ty = parse_type(p);
  Span sp = {p->src, (uint32_t)(vt.s - p->src->text), (uint32_t)(p->prev_end - vt.s)};
  const char *loc = parse_loc(p);
  if (op == IR_STORE && (nin != 1 || as.n)) error_at(p, vt, "store takes one operand and no attributes");
  if (path && op != IR_STORE && (nin || as.n))
    error_at(p, vt, "%s takes no operands or attributes", ir_op_name(op));
  int before = p->f->nodes.len;
  IrNode *n = op == IR_STORE ? ir_store(p->f, path, ins[0], sp)
              : path         ? ir_state_ref(p->f, op, path, ty, sp)
                             : ir_node(p->f, op, ins, nin, &as, ty, sp);
  if (op == IR_STORE) n->type = ty;
  if (p->f->nodes.len > before) n->loc = loc;
  define_value(p, vt, name + 1, n);
}

// return := 'return' [VALUE {',' VALUE}]
static void parse_return(P *p) {
  Tok t = p->tok;
  expect_word(p, "return");
  p->f->span = tok_span(p, t);
  if (p->tok.kind != T_VALUE) return;
  do vec_push(p->a, &p->f->outputs, use_value(p));
  while (accept(p, ','));
  p->f->span.len = (uint32_t)(p->prev_end - t.s);
}

// func := 'func' NAME '(' [VALUE ':' type {','...}] ')' '->' '(' [type {',' type}] ')'
//         '{' node* return '}'
static void parse_signature(P *p) {
  expect(p, '(');
  if (!is_punct(p, ')')) do {
      Tok t = p->tok;
      char *name = take(p, T_VALUE, "an argument");
      expect(p, ':');
      Type *ty = parse_type(p);
      define_value(p, t, name + 1, ir_input(p->f, name + 1, ty, (Span){0}));
    } while (accept(p, ','));
  expect(p, ')');
  if (p->tok.kind != T_ARROW) error_at(p, p->tok, "expected '->', got %s", tok_text(p, p->tok));
  next(p);
  expect(p, '(');
  if (!is_punct(p, ')')) do vec_push(p->a, &p->f->results, parse_type(p));
    while (accept(p, ','));
  expect(p, ')');
}

static void parse_func(P *p) {
  expect_word(p, "func");
  Tok t = p->tok;
  char *name = take(p, T_IDENT, "a function name");
  if (ir_module_find_func(p->m, name)) error_at(p, t, "redefinition of function %s", name);
  p->f = ir_func_new(p->m, name);
  p->vnames = (Vec){0};
  p->vnodes = (Vec){0};
  parse_signature(p);
  expect(p, '{');
  while (p->tok.kind == T_VALUE) parse_node(p);
  parse_return(p);
  expect(p, '}');
  p->f = NULL;
}

// state := ('param' | 'buffer' | 'optstate') PATH ':' type ['trainable' | 'frozen']
static void parse_state(P *p) {
  bool opt = is_word(p, "optstate");
  bool buffer = opt || is_word(p, "buffer");
  next(p);
  Tok t = p->tok;
  char *path = take(p, T_IDENT, "a parameter path");
  if (ir_module_find_param(p->m, path)) error_at(p, t, "redefinition of %s", path);
  expect(p, ':');
  Type *ty = parse_type(p);
  bool trainable = true;
  if (!buffer && is_word(p, "frozen")) {
    trainable = false;
    next(p);
  } else if (!buffer && is_word(p, "trainable")) {
    next(p);
  }
  ir_module_add_param(p->m, path, ty, opt ? IRP_OPTSTATE : buffer ? IRP_BUFFER : IRP_PARAM, trainable,
                      tok_span(p, t));
}

// module := 'module' NAME (state | func)*
static void parse_module(P *p) {
  next(p);
  expect_word(p, "module");
  p->m = ir_module_new(p->a, take(p, T_IDENT, "a module name"));
  while (p->tok.kind != T_EOF) {
    if (is_word(p, "param") || is_word(p, "buffer") || is_word(p, "optstate"))
      parse_state(p);
    else if (is_word(p, "func"))
      parse_func(p);
    else
      error_at(p, p->tok, "expected 'param', 'buffer' or 'func', got %s", tok_text(p, p->tok));
  }
}

IrModule *ir_parse(Arena *a, const SrcFile *src, DiagSink *diags) {
  P *p = arena_alloc(a, sizeof *p);
  p->a = a;
  p->src = src;
  p->diags = diags;
  p->pos = src->text;
  if (setjmp(p->fail)) return NULL;
  parse_module(p);
  return p->m;
}
