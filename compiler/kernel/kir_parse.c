// kir_parse.c — the kernel IR's text form read back (kir_parse, kir.h):
// what kir_print writes, at any stage (lowered, scheduled, planned), so
// kernel-level tests start from text and a printed program parses to one
// that prints the same. Grammar (docs/design/kir.md, "Text form"):
//
//   file    := program*
//   program := 'program' NAME ['target' NAME] sym* buf* ['scratch' expr] kernel*
//   sym     := 'sym' NAME '=' ('arg' INT 'dim' INT | expr)
//   buf     := 'buf' NAME ':' DTYPE dims KIND [INT | PATH] ['at' expr]
//   dims    := '[' [expr {',' expr}] ']' 
//   kernel  := 'kernel' NAME '(' [NAME {',' NAME}] ')' '{' [op] stmt* '}'
//   op      := 'op' OP '(' ROLE '=' NAME dims ['strides' dims] {',' ...} ')'
//              ['{' GROUP '=' (INT | '[' INT {',' INT} ']') {',' ...} '}']
//   stmt    := ['parallel'] 'for' NAME '<' expr ['@' MAP ['(' expr ')']]
//                ['capture' '(' NAME {',' NAME} ')'] block
//            | 'let' NAME ':' DTYPE '=' expr | NAME '=' expr | NAME '[' expr ']' '=' expr
//            | 'if' expr block ['else' block] | 'check' expr STRING | 'barrier'
//            | 'call' FN '(' PARAM '=' arg {',' PARAM '=' arg} ')'
//            | 'mma' DTYPE NAME '[' INT ']' '+=' operand '*' operand
//   operand := NAME '[' expr ']' 'strides' '[' INT ',' INT ']'
//   arg     := expr | '[' [FLAG {',' FLAG}] ']' | NAME '[' expr ']' | 'none' | '[' expr {',' expr} ']'
//   block   := '{' stmt* '}'
//   expr    := INT [':' DTYPE] | FLOAT ':' DTYPE | NAME | NAME '[' expr ']' | 'rngseed'
//            | '(' expr INFIX expr ')' | CALL '(' expr {',' expr} ')' | 'cast' '<' DTYPE '>' '(' expr ')'
//
// Whitespace and newlines separate tokens; `;` starts a comment. A bare
// NAME is a variable of the kernel, else a sym. Expressions are built with
// kir.h's constructors (so dtypes follow their rules); kir_verify checks
// the result. Input: a SrcFile. Output: KirPrograms in the arena; the
// first error is reported at file:line:col.
#include "kir_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Parser {
  Arena *a;
  const SrcFile *src;
  const char *s;    // next character
  DiagSink *d;
  bool failed;
  KirProgram *p;
  KirKernel *k;     // NULL outside kernels
} Parser;

// ---- characters and tokens -------------------------------------------------------------------
static bool perr(Parser *ps, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool perr(Parser *ps, const char *at, const char *fmt, ...) {
  if (ps->failed) return false;
  ps->failed = true;
  va_list ap;
  va_start(ap, fmt);
  char *msg = arena_vprintf(ps->a, fmt, ap);
  va_end(ap);
  Span sp = {ps->src, (uint32_t)(at - ps->src->text), 1};
  diag_error(ps->d, sp, "kir: %s", msg);
  return false;
}

static void skip_ws(Parser *ps) {
  for (;;) {
    while (isspace((unsigned char)*ps->s)) ps->s++;
    if (*ps->s != ';') return;
    while (*ps->s && *ps->s != '\n') ps->s++;
  }
}

static bool name_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '%' || c == '.'; }

// A name: letters, digits, _ % . and a ':' inside (state:fc1.w).
static const char *peek_name(Parser *ps, size_t *len) {
  skip_ws(ps);
  const char *s = ps->s;
  size_t n = 0;
  while (name_char(s[n]) || (s[n] == ':' && n && name_char(s[n + 1]) && !isdigit((unsigned char)s[0]))) n++;
  *len = n;
  return s;
}

static char *name(Parser *ps, const char *what) {
  size_t n;
  const char *s = peek_name(ps, &n);
  if (!n) return perr(ps, s, "expected %s", what), NULL;
  ps->s += n;
  return arena_strndup(ps->a, s, n);
}

static bool at_word(Parser *ps, const char *w) {
  size_t n;
  const char *s = peek_name(ps, &n);
  return n == strlen(w) && !strncmp(s, w, n);
}

static bool word(Parser *ps, const char *w) {
  if (!at_word(ps, w)) return false;
  ps->s += strlen(w);
  return true;
}

static bool expect_word(Parser *ps, const char *w) {
  return word(ps, w) || perr(ps, ps->s, "expected '%s'", w);
}

static bool punct(Parser *ps, const char *p) {
  skip_ws(ps);
  size_t n = strlen(p);
  if (strncmp(ps->s, p, n)) return false;
  ps->s += n;
  return true;
}

static bool expect(Parser *ps, const char *p) { return punct(ps, p) || perr(ps, ps->s, "expected '%s'", p); }

static bool integer(Parser *ps, int64_t *v) {
  skip_ws(ps);
  char *end;
  long long x = strtoll(ps->s, &end, 10);
  if (end == ps->s || !(isdigit((unsigned char)*ps->s) || *ps->s == '-')) return perr(ps, ps->s, "expected an integer");
  ps->s = end;
  *v = x;
  return true;
}

static bool dtype(Parser *ps, DType *dt) {
  const char *at = (skip_ws(ps), ps->s);
  size_t n = 0;
  while (isalnum((unsigned char)at[n])) n++;
  char buf[16];
  snprintf(buf, sizeof buf, "%.*s", (int)(n < 15 ? n : 15), at);
  int t = dtype_from_name(buf);
  if (t < 0) return perr(ps, at, "expected a dtype, not '%s'", buf);
  ps->s += n;
  *dt = (DType)t;
  return true;
}

// ---- names -----------------------------------------------------------------------------------
static int find_buf(const KirProgram *p, const char *n) {
  for (int i = 0; i < p->bufs.len; i++)
    if (!strcmp(kir_buf(p, i)->name, n)) return i;
  return -1;
}

static int find_sym(const KirProgram *p, const char *n) {
  for (int i = 0; i < p->syms.len; i++)
    if (!strcmp(VEC_AT(p->syms, KirSym, i)->name, n)) return i;
  return -1;
}

static int find_var(const KirKernel *k, const char *n) {
  for (int i = 0; k && i < k->vars.len; i++)
    if (!strcmp(VEC_AT(k->vars, KirVar, i)->name, n)) return i;
  return -1;
}

static int buffer(Parser *ps) {
  const char *at = (skip_ws(ps), ps->s);
  char *n = name(ps, "a buffer name");
  int b = n ? find_buf(ps->p, n) : -1;
  if (n && b < 0) perr(ps, at, "unknown buffer %s", n);
  return b;
}

// A declaration of var `n` (for, let): the kernel's var of that name, or a new one.
static int declare(Parser *ps, const char *at, const char *n, DType dt, bool loop) {
  int v = find_var(ps->k, n);
  if (v < 0) return kir_var_new(ps->p, ps->k, n, dt, loop);
  KirVar *kv = VEC_AT(ps->k->vars, KirVar, v);
  if (kv->is_loop != loop || kv->dtype != dt) return perr(ps, at, "%s declared again as another kind", n), -1;
  return v;
}

// ---- expressions -----------------------------------------------------------------------------
static KExpr *expr(Parser *ps);

static KExpr *constant(Parser *ps) {
  const char *at = ps->s;
  bool neg = *at == '-';
  const char *q = at + neg;
  KExpr *e = NULL;
  if (!strncmp(q, "inf", 3) || !strncmp(q, "nan", 3)) {
    ps->s = q + 3;
    double v = q[0] == 'i' ? INFINITY : NAN;
    DType dt;
    if (!expect(ps, ":") || !dtype(ps, &dt)) return NULL;
    return kir_float(ps->p, dt, neg ? -v : v);
  }
  size_t n = strspn(q, "0123456789");
  bool fl = q[n] == '.' || q[n] == 'e' || q[n] == 'E';
  char *end;
  double f = fl ? strtod(at, &end) : 0;
  long long i = fl ? 0 : strtoll(at, &end, 10);
  ps->s = end;
  DType dt = fl ? DT_F32 : DT_I64;
  if (*ps->s == ':') {
    ps->s++;
    if (!dtype(ps, &dt)) return NULL;
  } else if (fl) {
    return perr(ps, at, "a float constant needs its dtype (1.5:f32)"), NULL;
  }
  if (dtype_is_float(dt)) e = kir_float(ps->p, dt, fl ? f : (double)i);
  else if (fl) return perr(ps, at, "%s constant with a fraction", dtype_name(dt)), NULL;
  else e = kir_int(ps->p, dt, i);
  return e;
}

static int call_args(Parser *ps, KExpr **args, int max) {
  int n = 0;
  if (!expect(ps, "(")) return -1;
  do {
    if (n == max) return perr(ps, ps->s, "too many arguments"), -1;
    if (!(args[n++] = expr(ps))) return -1;
  } while (punct(ps, ","));
  return expect(ps, ")") ? n : -1;
}

// name(args): unary and binary ops by name, select, rand.
static KExpr *call(Parser *ps, const char *at, const char *fn) {
  KExpr *x[3];
  int n = call_args(ps, x, 3);
  if (n < 0) return NULL;
  bool three = !strcmp(fn, "select") || !strcmp(fn, "rand") || !strcmp(fn, "fma");
  if (three && n == 3)
    return fn[0] == 's' ? kir_select(ps->p, x[0], x[1], x[2])
           : fn[0] == 'r' ? kir_rand(ps->p, x[0], x[1], x[2])
                          : kir_fma(ps->p, x[0], x[1], x[2]);
  for (int op = 0; op < KU_COUNT && n == 1; op++)
    if (!strcmp(fn, kir_unop_name((KUnOp)op))) return kir_un(ps->p, (KUnOp)op, x[0]);
  for (int op = 0; op < KB_COUNT && n == 2; op++)
    if (!strcmp(fn, kir_binop_name((KBinOp)op))) return kir_bin(ps->p, (KBinOp)op, x[0], x[1]);
  return perr(ps, at, "no operation %s with %d argument(s)", fn, n), NULL;
}

static KExpr *infix(Parser *ps) {
  KExpr *a = expr(ps);
  if (!a) return NULL;
  skip_ws(ps);
  const char *at = ps->s;
  for (int op = KB_COUNT - 1; op >= 0; op--) { // longest spellings first: <= before <
    const char *sp = kir_infix((KBinOp)op);
    if (!sp || strncmp(at, sp, strlen(sp)) || at[strlen(sp)] != ' ') continue;
    ps->s += strlen(sp);
    KExpr *b = expr(ps);
    return b && expect(ps, ")") ? kir_bin(ps->p, (KBinOp)op, a, b) : NULL;
  }
  return perr(ps, at, "expected an infix operator"), NULL;
}

static KExpr *named(Parser *ps, const char *at, const char *n) {
  if (punct(ps, "[")) {
    int b = find_buf(ps->p, n);
    if (b < 0) return perr(ps, at, "unknown buffer %s", n), NULL;
    KExpr *i = expr(ps);
    return i && expect(ps, "]") ? kir_load(ps->p, b, i) : NULL;
  }
  skip_ws(ps);
  if (*ps->s == '(') return call(ps, at, n);
  if (!strcmp(n, "rngseed")) return kir_rngseed(ps->p);
  int v = find_var(ps->k, n);
  if (v >= 0) return kir_varref(ps->p, ps->k, v);
  int s = find_sym(ps->p, n);
  if (s >= 0) return kir_symref(ps->p, s);
  return perr(ps, at, "unknown name %s", n), NULL;
}

static KExpr *expr(Parser *ps) {
  skip_ws(ps);
  const char *at = ps->s;
  if (isdigit((unsigned char)*at) || (*at == '-' && (isdigit((unsigned char)at[1]) || !strncmp(at + 1, "inf", 3))))
    return constant(ps);
  if (!strncmp(at, "nan:", 4) || !strncmp(at, "inf:", 4)) return constant(ps);
  if (punct(ps, "(")) return infix(ps);
  if (word(ps, "cast")) {
    DType dt;
    KExpr *x;
    if (!expect(ps, "<") || !dtype(ps, &dt) || !expect(ps, ">") || call_args(ps, &x, 1) != 1) return NULL;
    return kir_cast(ps->p, dt, x);
  }
  char *n = name(ps, "an expression");
  return n ? named(ps, at, n) : NULL;
}

// '[' [expr {',' expr}] ']' into dims (at most max).
static int expr_list(Parser *ps, KExpr **dims, int max) {
  int rank = 0;
  if (!expect(ps, "[")) return -1;
  if (punct(ps, "]")) return 0;
  do {
    if (rank == max) return perr(ps, ps->s, "more than %d values", max), -1;
    if (!(dims[rank++] = expr(ps))) return -1;
  } while (punct(ps, ","));
  return expect(ps, "]") ? rank : -1;
}

static int dims_list(Parser *ps, KExpr **dims) { return expr_list(ps, dims, INTERP_MAX_RANK); }

// ---- statements ------------------------------------------------------------------------------
static bool block(Parser *ps, Vec *blk);
static bool block_rest(Parser *ps, Vec *blk);

static bool loop_map(Parser *ps, KStmt *s) {
  if (punct(ps, "@")) {
    const char *at = ps->s;
    size_t n = strspn(at, "abcdefghijklmnopqrstuvwxyz-");
    int m = 0;
    while (m < KMAP_COUNT && (strlen(kir_map_name((KLoopMap)m)) != n || strncmp(at, kir_map_name((KLoopMap)m), n))) m++;
    if (m == KMAP_COUNT) return perr(ps, at, "unknown loop map '%.*s'", (int)n, at);
    ps->s += n;
    s->map = (KLoopMap)m;
    if (*ps->s == '(') {
      ps->s++;
      if (!(s->grain = expr(ps)) || !expect(ps, ")")) return false;
    }
  }
  if (!word(ps, "capture")) return true;
  if (!expect(ps, "(")) return false;
  do {
    const char *at = (skip_ws(ps), ps->s);
    char *n = name(ps, "a variable");
    int v = n ? find_var(ps->k, n) : -1;
    if (v < 0) return n ? perr(ps, at, "unknown variable %s", n) : false;
    vec_push(ps->a, &s->captures, (void *)(intptr_t)v);
  } while (punct(ps, ","));
  return expect(ps, ")");
}

static bool for_stmt(Parser *ps, Vec *blk, bool parallel) {
  const char *at = (skip_ws(ps), ps->s);
  char *n = name(ps, "a loop variable");
  if (!n || !expect(ps, "<")) return false;
  KExpr *trip = expr(ps);
  int v = trip ? declare(ps, at, n, DT_I64, true) : -1;
  if (v < 0) return false;
  KStmt *s = kir_for(ps->p, blk, v, trip, parallel);
  return loop_map(ps, s) && block(ps, &s->body);
}

static bool let_stmt(Parser *ps, Vec *blk) {
  const char *at = (skip_ws(ps), ps->s);
  char *n = name(ps, "a variable");
  DType dt;
  if (!n || !expect(ps, ":") || !dtype(ps, &dt) || !expect(ps, "=")) return false;
  KExpr *x = expr(ps);
  int v = x ? declare(ps, at, n, dt, false) : -1;
  return v >= 0 && kir_let(ps->p, blk, v, x);
}

static bool if_stmt(Parser *ps, Vec *blk) {
  KExpr *c = expr(ps);
  if (!c) return false;
  KStmt *s = kir_if(ps->p, blk, c);
  if (!block(ps, &s->body)) return false;
  return !word(ps, "else") || block(ps, &s->els);
}

static bool check_stmt(Parser *ps, Vec *blk) {
  KExpr *c = expr(ps);
  if (!c || !expect(ps, "\"")) return false;
  StrBuf m = {0};
  for (; *ps->s && *ps->s != '"'; ps->s++) {
    if (*ps->s == '\\' && ps->s[1]) ps->s++;
    sb_putc(&m, *ps->s);
  }
  bool ok = expect(ps, "\"");
  if (ok) kir_check(ps->p, blk, c, m.data ? m.data : "");
  sb_free(&m);
  return ok;
}

// NAME = expr (assign) or NAME[expr] = expr (store).
static bool assign_or_store(Parser *ps, Vec *blk) {
  const char *at = (skip_ws(ps), ps->s);
  char *n = name(ps, "a statement");
  if (!n) return false;
  if (punct(ps, "[")) {
    int b = find_buf(ps->p, n);
    if (b < 0) return perr(ps, at, "unknown buffer %s", n);
    KExpr *i = expr(ps), *x = i && expect(ps, "]") && expect(ps, "=") ? expr(ps) : NULL;
    return x && kir_store(ps->p, blk, b, i, x);
  }
  int v = find_var(ps->k, n);
  if (v < 0) return perr(ps, at, "assignment to %s, which no let declares", n);
  KExpr *x = expect(ps, "=") ? expr(ps) : NULL;
  return x && kir_assign(ps->p, blk, v, x);
}

// call NAME(PARAM = VALUE, ...), parameters in the table's order.
static bool call_flags(Parser *ps, KCallArgKind kind, uint32_t *flags) {
  int n;
  const char *const *names = kir_call_flag_names(kind, &n);
  if (!expect(ps, "[")) return false;
  if (punct(ps, "]")) return true;
  do {
    const char *at = (skip_ws(ps), ps->s);
    char *f = name(ps, "a flag name");
    int i = 0;
    while (f && i < n && strcmp(f, names[i])) i++;
    if (!f || i == n) return f ? perr(ps, at, "unknown flag %s", f) : false;
    *flags |= 1u << i;
  } while (punct(ps, ","));
  return expect(ps, "]");
}

static bool call_operand(Parser *ps, KStmt *s, const KirCallParam *pa) {
  if ((pa->kind == KCA_OPT || pa->kind == KCA_OPTW) && word(ps, "none")) return true;
  int b = buffer(ps);
  KExpr *off = b >= 0 && expect(ps, "[") ? expr(ps) : NULL;
  if (!off || !expect(ps, "]")) return false;
  s->call->buf[pa->slot] = b;
  s->call->slot[pa->slot] = off;
  return true;
}

static bool call_stmt(Parser *ps, Vec *blk) {
  const char *at = (skip_ws(ps), ps->s);
  char *n = name(ps, "a library function");
  int fn = 0;
  while (n && fn < KCALL_COUNT && strcmp(n, kir_call_name((KirCallFn)fn))) fn++;
  if (!n || fn == KCALL_COUNT) return n ? perr(ps, at, "unknown library function %s", n) : false;
  KStmt *s = kir_call(ps->p, blk, (KirCallFn)fn);
  KirCallSpec sp;
  kir_call_spec((KirCallFn)fn, &sp);
  if (!expect(ps, "(")) return false;
  for (int i = 0; i < sp.nparams; i++) {
    const KirCallParam *pa = &sp.param[i];
    if ((i && !expect(ps, ",")) || !expect_word(ps, pa->name) || !expect(ps, "=")) return false;
    bool ok;
    switch (pa->kind) {
    case KCA_GFLAGS: case KCA_CFLAGS: ok = call_flags(ps, pa->kind, &s->call->flags); break;
    case KCA_GEOM: {
      KExpr *g[KIR_CONV_GEOM];
      int r = expr_list(ps, g, KIR_CONV_GEOM);
      ok = r == KIR_CONV_GEOM ? (kir_call_geom(s, g), true)
                              : r >= 0 && perr(ps, ps->s, "a geometry has %d values", KIR_CONV_GEOM);
      break;
    }
    case KCA_READ: case KCA_WRITE: case KCA_UPDATE: case KCA_OPT: case KCA_OPTW: ok = call_operand(ps, s, pa); break;
    default: ok = (s->call->slot[pa->slot] = expr(ps)) != NULL; break;
    }
    if (!ok) return false;
  }
  return expect(ps, ")");
}

// BUF[OFF] strides [S1, S2]: an mma operand.
static bool mma_operand(Parser *ps, int *buf, KExpr **off, int64_t *s1, int64_t *s2) {
  *buf = buffer(ps);
  return *buf >= 0 && expect(ps, "[") && (*off = expr(ps)) && expect(ps, "]") && expect_word(ps, "strides") &&
         expect(ps, "[") && integer(ps, s1) && expect(ps, ",") && integer(ps, s2) && expect(ps, "]");
}

// mma PREC D[d0] += A[oa] strides [ars, aks] * B[ob] strides [bks, bcs]
static bool mma_stmt(Parser *ps, Vec *blk) {
  KMma m = {0};
  int64_t d0;
  if (!dtype(ps, &m.prec)) return false;
  int d = buffer(ps);
  if (d < 0 || !expect(ps, "[") || !integer(ps, &d0) || !expect(ps, "]") || !expect(ps, "+=")) return false;
  if (!mma_operand(ps, &m.a, &m.oa, &m.ars, &m.aks) || !expect(ps, "*")) return false;
  if (!mma_operand(ps, &m.b, &m.ob, &m.bks, &m.bcs)) return false;
  return kir_mma(ps->p, blk, d, d0, &m) != NULL;
}

static bool stmt(Parser *ps, Vec *blk) {
  if (word(ps, "parallel")) return expect_word(ps, "for") && for_stmt(ps, blk, true);
  if (word(ps, "for")) return for_stmt(ps, blk, false);
  if (word(ps, "let")) return let_stmt(ps, blk);
  if (word(ps, "if")) return if_stmt(ps, blk);
  if (word(ps, "check")) return check_stmt(ps, blk);
  if (word(ps, "barrier")) return kir_barrier(ps->p, blk) != NULL;
  if (word(ps, "call")) return call_stmt(ps, blk);
  if (word(ps, "mma")) return mma_stmt(ps, blk);
  return assign_or_store(ps, blk);
}

// The statements of a block whose '{' has been read, and its '}'.
static bool block_rest(Parser *ps, Vec *blk) {
  while (!punct(ps, "}"))
    if (!*(skip_ws(ps), ps->s) ? perr(ps, ps->s, "unexpected end of file in a block") : !stmt(ps, blk)) return false;
  return true;
}

static bool block(Parser *ps, Vec *blk) { return expect(ps, "{") && block_rest(ps, blk); }

// ---- kernels and programs --------------------------------------------------------------------
static bool op_attrs(Parser *ps, const KirOpSpec *sp, int64_t *attr) {
  if (!sp->ngroups) return true;
  if (!expect(ps, "{")) return false;
  for (int g = 0, a = 0; g < sp->ngroups; g++) {
    if ((g && !expect(ps, ",")) || !expect_word(ps, sp->group[g]) || !expect(ps, "=")) return false;
    if (sp->count[g] > 1 && !expect(ps, "[")) return false;
    for (int j = 0; j < sp->count[g]; j++)
      if ((j && !expect(ps, ",")) || !integer(ps, &attr[a++])) return false;
    if (sp->count[g] > 1 && !expect(ps, "]")) return false;
  }
  return expect(ps, "}");
}

static bool op_record(Parser *ps) {
  const char *at = (skip_ws(ps), ps->s);
  char *n = name(ps, "an op name");
  int kind = 0;
  while (n && kind < KOP_COUNT && strcmp(n, kir_op_name((KirOpKind)kind))) kind++;
  if (!n || kind == KOP_COUNT) return n ? perr(ps, at, "unknown op %s", n) : false;
  KirOpSpec sp;
  kir_op_spec((KirOpKind)kind, &sp);
  int bufs[KIR_OP_MAX_BUFS], rank[KIR_OP_MAX_BUFS];
  KExpr *dims[KIR_OP_MAX_BUFS][KIR_OP_MAX_RANK], *strides[KIR_OP_MAX_BUFS][KIR_OP_MAX_RANK];
  int64_t attr[KIR_OP_MAX_ATTRS] = {0};
  if (!expect(ps, "(")) return false;
  for (int i = 0; i < sp.nbufs; i++) {
    if ((i && !expect(ps, ",")) || !expect_word(ps, sp.roles[i]) || !expect(ps, "=")) return false;
    bufs[i] = word(ps, "none") ? -1 : buffer(ps); // none: not stored (a folded conv's y)
    if ((bufs[i] < 0 && ps->failed) || (rank[i] = dims_list(ps, dims[i])) < 0) return false;
    strides[i][0] = NULL;
    if (word(ps, "strides") && dims_list(ps, strides[i]) != rank[i])
      return perr(ps, ps->s, "%s: one stride per dim", sp.roles[i]);
  }
  if (!expect(ps, ")") || !op_attrs(ps, &sp, attr)) return false;
  int prec = DT_F32;
  if (word(ps, "precision")) {
    const char *pat = (skip_ws(ps), ps->s);
    char *d = name(ps, "a dtype");
    if (!d) return false;
    if ((prec = dtype_from_name(d)) != DT_BF16 && prec != DT_F16) return perr(ps, pat, "precision must be bf16 or f16");
  }
  KirOp *op = kir_kernel_op(ps->p, ps->k, (KirOpKind)kind, bufs, rank, (KExpr *const (*)[KIR_OP_MAX_RANK])dims, attr);
  op->precision = (DType)prec;
  for (int i = 0; i < sp.nbufs; i++)
    if (strides[i][0]) memcpy(op->strides[i], strides[i], sizeof strides[i]);
  return true;
}

// covers OP %ID line N, ...
static bool covers(Parser *ps) {
  do {
    KirCover *cv = arena_alloc(ps->a, sizeof *cv);
    const char *at = (skip_ws(ps), ps->s);
    char *op = name(ps, "an op name"), *id = op ? name(ps, "a graph value (%12)") : NULL;
    int64_t line;
    if (!id || !expect_word(ps, "line") || !integer(ps, &line)) return false;
    if (id[0] != '%' || !isdigit((unsigned char)id[1])) return perr(ps, at, "expected a graph value (%%12)");
    cv->op = op, cv->node = atoi(id + 1), cv->line = (int)line;
    vec_push(ps->a, &ps->k->covers, cv);
  } while (punct(ps, ","));
  return true;
}

static bool kernel(Parser *ps) {
  const char *at = (skip_ws(ps), ps->s);
  char *n = name(ps, "a kernel name");
  if (!n || !expect(ps, "(")) return false;
  ps->k = kir_kernel_new(ps->p, n, (Span){ps->src, (uint32_t)(at - ps->src->text), (uint32_t)strlen(n)});
  if (!punct(ps, ")")) {
    do {
      int b = buffer(ps);
      if (b < 0) return false;
      kir_kernel_use(ps->p, ps->k, b);
    } while (punct(ps, ","));
    if (!expect(ps, ")")) return false;
  }
  if (!expect(ps, "{")) return false;
  if (word(ps, "op") && !op_record(ps)) return false;
  if (word(ps, "covers") && !covers(ps)) return false;
  bool ok = block_rest(ps, &ps->k->body);
  ps->k = NULL;
  return ok;
}

static bool sym_line(Parser *ps) {
  char *n = name(ps, "a sym name");
  if (!n || !expect(ps, "=")) return false;
  int64_t arg, dim;
  if (word(ps, "arg")) {
    if (!integer(ps, &arg) || !expect_word(ps, "dim") || !integer(ps, &dim)) return false;
    kir_sym_add(ps->p, n, (int)arg, (int)dim, NULL);
    return true;
  }
  KExpr *def = expr(ps);
  return def && kir_sym_add(ps->p, n, -1, 0, def) >= 0;
}

static bool buf_kind(Parser *ps, KirBuf *b) {
  const char *at = (skip_ws(ps), ps->s);
  char *k = name(ps, "a buffer kind");
  int kind = 0;
  while (k && kind < KBUF_KIND_COUNT && strcmp(k, kir_buf_kind_names[kind])) kind++;
  if (!k || kind == KBUF_KIND_COUNT) return k ? perr(ps, at, "unknown buffer kind %s", k) : false;
  b->kind = (KirBufKind)kind;
  int64_t idx = 0;
  if (kind == KBUF_INPUT || kind == KBUF_OUTPUT) {
    if (!integer(ps, &idx)) return false;
    b->index = (int)idx;
    kind == KBUF_INPUT ? ps->p->ninputs++ : ps->p->noutputs++;
  }
  if (kind == KBUF_STATE && !(b->path = name(ps, "a state path"))) return false;
  return !word(ps, "at") || (b->offset = expr(ps)) != NULL;
}

static bool buf_line(Parser *ps) {
  const char *at = (skip_ws(ps), ps->s);
  char *n = name(ps, "a buffer name");
  DType dt;
  if (!n || !expect(ps, ":") || !dtype(ps, &dt)) return false;
  if (find_buf(ps->p, n) >= 0) return perr(ps, at, "buffer %s defined twice", n);
  KExpr *dims[INTERP_MAX_RANK];
  int rank = dims_list(ps, dims);
  if (rank < 0) return false;
  int b = kir_buf_add(ps->p, KBUF_TEMP, n, dt, rank, dims);
  return buf_kind(ps, kir_buf(ps->p, b));
}

static bool program(Parser *ps, Vec *progs) {
  char *n = name(ps, "a program name");
  if (!n) return false;
  ps->p = kir_program_new(ps->a, n);
  vec_push(ps->a, progs, ps->p);
  if (word(ps, "target") && !(ps->p->target = name(ps, "a target name"))) return false;
  while (!ps->failed) {
    if (word(ps, "sym")) sym_line(ps);
    else if (word(ps, "buf")) buf_line(ps);
    else if (word(ps, "scratch")) ps->p->scratch = expr(ps);
    else if (word(ps, "kernel")) kernel(ps);
    else return !ps->failed;
  }
  return false;
}

bool kir_parse(Arena *a, const SrcFile *src, Vec *progs, DiagSink *d) {
  Parser ps = {.a = a, .src = src, .s = src->text, .d = d};
  while (!ps.failed) {
    skip_ws(&ps);
    if (!*ps.s) return true;
    if (!word(&ps, "program")) return perr(&ps, ps.s, "expected 'program'");
    program(&ps, progs);
  }
  return false;
}
