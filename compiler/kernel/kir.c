// kir.c — the kernel IR's data structures (kir.h): construction helpers with
// light constant folding of index arithmetic, the canonical text printer,
// and the verifier that every producer (lowering, later fusion) is checked
// by before a backend prints the program.
//
// Input: calls from kir_lower*.c (and later the fusion pass). Output: a
// KirProgram in its arena; text via kir_print; verdicts via kir_verify.
#include "kir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const unop_names[] = {
#define X(id, name) name,
    KIR_UNOPS(X)
#undef X
};
static const char *const binop_names[] = {
#define X(id, name) name,
    KIR_BINOPS(X)
#undef X
};
_Static_assert(sizeof unop_names / sizeof *unop_names == KU_COUNT, "unop names");
_Static_assert(sizeof binop_names / sizeof *binop_names == KB_COUNT, "binop names");

const char *kir_unop_name(KUnOp op) { return unop_names[op]; }
const char *kir_binop_name(KBinOp op) { return binop_names[op]; }

// ---- program, syms, buffers, kernels, vars ------------------------------------------------------
KirProgram *kir_program_new(Arena *a, const char *name) {
  KirProgram *p = arena_alloc(a, sizeof *p);
  p->arena = a;
  p->name = arena_strdup(a, name);
  return p;
}

int kir_sym_add(KirProgram *p, const char *name, Sym *sym, int arg, int dim, KExpr *def) {
  KirSym *s = arena_alloc(p->arena, sizeof *s);
  s->name = arena_strdup(p->arena, name);
  s->sym = sym;
  s->arg = arg;
  s->dim = dim;
  s->def = def;
  vec_push(p->arena, &p->syms, s);
  return p->syms.len - 1;
}

int kir_buf_add(KirProgram *p, KirBufKind kind, const char *name, DType dt, Type *type, KExpr *numel) {
  KirBuf *b = arena_alloc(p->arena, sizeof *b);
  b->name = arena_strdup(p->arena, name);
  b->kind = kind;
  b->dtype = dt;
  b->type = type;
  b->numel = numel;
  vec_push(p->arena, &p->bufs, b);
  return p->bufs.len - 1;
}

KirKernel *kir_kernel_new(KirProgram *p, const char *name, Span sp) {
  KirKernel *k = arena_alloc(p->arena, sizeof *k);
  k->name = arena_strdup(p->arena, name);
  k->span = sp;
  vec_push(p->arena, &p->kernels, k);
  return k;
}

int kir_var_new(KirProgram *p, KirKernel *k, const char *name, DType dt, bool is_loop) {
  KirVar *v = arena_alloc(p->arena, sizeof *v);
  v->name = arena_strdup(p->arena, name);
  v->dtype = dt;
  v->is_loop = is_loop;
  vec_push(p->arena, &k->vars, v);
  return k->vars.len - 1;
}

void kir_kernel_use(KirProgram *p, KirKernel *k, int b) {
  int at = 0;
  while (at < k->params.len && kir_param(k, at) < b) at++;
  if (at < k->params.len && kir_param(k, at) == b) return;
  vec_push(p->arena, &k->params, NULL);
  for (int i = k->params.len - 1; i > at; i--) k->params.data[i] = k->params.data[i - 1];
  k->params.data[at] = (void *)(intptr_t)b;
}

// ---- expressions -----------------------------------------------------------------------------------
static KExpr *expr(KirProgram *p, KExprKind kind, DType dt) {
  KExpr *e = arena_alloc(p->arena, sizeof *e);
  e->kind = kind;
  e->dtype = dt;
  return e;
}

KExpr *kir_int(KirProgram *p, DType dt, int64_t v) {
  KExpr *e = expr(p, KE_CONST, dt);
  e->i = v;
  e->f = (double)v;
  return e;
}

KExpr *kir_idx(KirProgram *p, int64_t v) { return kir_int(p, DT_I64, v); }

KExpr *kir_float(KirProgram *p, DType dt, double v) {
  KExpr *e = expr(p, KE_CONST, dt);
  e->f = v;
  return e;
}

KExpr *kir_varref(KirProgram *p, KirKernel *k, int var) {
  KExpr *e = expr(p, KE_VAR, VEC_AT(k->vars, KirVar, var)->dtype);
  e->var = var;
  return e;
}

KExpr *kir_symref(KirProgram *p, int sym) {
  KExpr *e = expr(p, KE_SYM, DT_I64);
  e->sym = sym;
  return e;
}

KExpr *kir_rngseed(KirProgram *p) { return expr(p, KE_RNGSEED, DT_I64); }

KExpr *kir_load(KirProgram *p, int buf, KExpr *index) {
  KExpr *e = expr(p, KE_LOAD, kir_buf(p, buf)->dtype);
  e->buf = buf;
  e->a = index;
  return e;
}

KExpr *kir_un(KirProgram *p, KUnOp op, KExpr *a) {
  KExpr *e = expr(p, KE_UNARY, op == KU_NOT ? DT_BOOL : a->dtype);
  e->un = op;
  e->a = a;
  return e;
}

static bool is_icst(const KExpr *e, int64_t v) {
  return e->kind == KE_CONST && e->dtype == DT_I64 && e->i == v;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Folds i64 constant arithmetic and the neutral elements of index math.
static KExpr *fold_i64(KirProgram *p, KBinOp op, KExpr *a, KExpr *b) {
  if (a->dtype != DT_I64 || b->dtype != DT_I64) return NULL;
  bool ca = a->kind == KE_CONST, cb = b->kind == KE_CONST;
  if (ca && cb) {
    switch (op) {
    case KB_ADD: return kir_idx(p, (int64_t)((uint64_t)a->i + (uint64_t)b->i));
    case KB_SUB: return kir_idx(p, (int64_t)((uint64_t)a->i - (uint64_t)b->i));
    case KB_MUL: return kir_idx(p, (int64_t)((uint64_t)a->i * (uint64_t)b->i));
    case KB_DIV: if (b->i) return kir_idx(p, floor_div(a->i, b->i)); break;
    case KB_MOD: if (b->i) return kir_idx(p, a->i - floor_div(a->i, b->i) * b->i); break;
    default: break;
    }
  }
  if (op == KB_ADD && is_icst(a, 0)) return b;
  if ((op == KB_ADD || op == KB_SUB) && is_icst(b, 0)) return a;
  if (op == KB_MUL && (is_icst(a, 0) || is_icst(b, 1))) return a;
  if (op == KB_MUL && (is_icst(b, 0) || is_icst(a, 1))) return b;
  if (op == KB_DIV && is_icst(b, 1)) return a;
  if (op == KB_MOD && is_icst(b, 1)) return kir_idx(p, 0);
  return NULL;
}

static bool is_compare(KBinOp op) { return op >= KB_LT && op <= KB_NE; }

KExpr *kir_bin(KirProgram *p, KBinOp op, KExpr *a, KExpr *b) {
  KExpr *f = fold_i64(p, op, a, b);
  if (f) return f;
  KExpr *e = expr(p, KE_BINARY, is_compare(op) ? DT_BOOL : a->dtype);
  e->bin = op;
  e->a = a;
  e->b = b;
  return e;
}

KExpr *kir_select(KirProgram *p, KExpr *c, KExpr *a, KExpr *b) {
  KExpr *e = expr(p, KE_SELECT, a->dtype);
  e->a = c;
  e->b = a;
  e->c = b;
  return e;
}

KExpr *kir_cast(KirProgram *p, DType dt, KExpr *a) {
  if (a->dtype == dt) return a;
  if (a->kind == KE_CONST && dtype_is_float(dt) && !dtype_is_float(a->dtype))
    return kir_float(p, dt, (double)a->i);
  KExpr *e = expr(p, KE_CAST, dt);
  e->a = a;
  return e;
}

KExpr *kir_rand(KirProgram *p, KExpr *key, KExpr *counter, KExpr *stream) {
  KExpr *e = expr(p, KE_RAND, DT_F64);
  e->a = key;
  e->b = counter;
  e->c = stream;
  return e;
}

// ---- statements -------------------------------------------------------------------------------------
static KStmt *stmt(KirProgram *p, Vec *block, KStmtKind kind) {
  KStmt *s = arena_alloc(p->arena, sizeof *s);
  s->kind = kind;
  vec_push(p->arena, block, s);
  return s;
}

KStmt *kir_for(KirProgram *p, Vec *block, int var, KExpr *n, bool parallel) {
  KStmt *s = stmt(p, block, KS_FOR);
  s->var = var;
  s->n = n;
  s->parallel = parallel;
  return s;
}

KStmt *kir_let(KirProgram *p, Vec *block, int var, KExpr *value) {
  KStmt *s = stmt(p, block, KS_LET);
  s->var = var;
  s->value = value;
  return s;
}

KStmt *kir_assign(KirProgram *p, Vec *block, int var, KExpr *value) {
  KStmt *s = stmt(p, block, KS_ASSIGN);
  s->var = var;
  s->value = value;
  return s;
}

KStmt *kir_store(KirProgram *p, Vec *block, int buf, KExpr *index, KExpr *value) {
  KStmt *s = stmt(p, block, KS_STORE);
  s->buf = buf;
  s->index = index;
  s->value = value;
  return s;
}

KStmt *kir_if(KirProgram *p, Vec *block, KExpr *cond) {
  KStmt *s = stmt(p, block, KS_IF);
  s->cond = cond;
  return s;
}

KStmt *kir_check(KirProgram *p, Vec *block, KExpr *cond, const char *msg) {
  KStmt *s = stmt(p, block, KS_CHECK);
  s->cond = cond;
  s->msg = arena_strdup(p->arena, msg);
  return s;
}

// ---- printer -------------------------------------------------------------------------------------------
// Expressions print in prefix form with explicit dtypes where they are not
// implied: constants as 3 / 1.5:f32, loads as buf[index], casts as
// cast<i32>(..), binary ops infix for + - * and compares, calls otherwise.
static void put_expr(StrBuf *b, const KirProgram *p, const KirKernel *k, const KExpr *e);

static const char *infix(KBinOp op) {
  switch (op) {
  case KB_ADD: return "+";
  case KB_SUB: return "-";
  case KB_MUL: return "*";
  case KB_LT: return "<";
  case KB_LE: return "<=";
  case KB_GT: return ">";
  case KB_GE: return ">=";
  case KB_EQ: return "==";
  case KB_NE: return "!=";
  case KB_AND: return "&&";
  case KB_OR: return "||";
  default: return NULL;
  }
}

static void put_const(StrBuf *b, const KExpr *e) {
  if (!dtype_is_float(e->dtype)) {
    sb_printf(b, "%lld", (long long)e->i);
    if (e->dtype != DT_I64) sb_printf(b, ":%s", dtype_name(e->dtype));
    return;
  }
  if (isnan(e->f)) sb_puts(b, "nan");
  else if (isinf(e->f)) sb_puts(b, e->f > 0 ? "inf" : "-inf");
  else {
    char buf[64];
    for (int prec = 6; prec <= 17; prec++) {
      snprintf(buf, sizeof buf, "%.*g", prec, e->f);
      if (strtod(buf, NULL) == e->f) break;
    }
    sb_puts(b, buf);
    if (!strpbrk(buf, ".e")) sb_puts(b, ".0");
  }
  sb_printf(b, ":%s", dtype_name(e->dtype));
}

static void put_expr(StrBuf *b, const KirProgram *p, const KirKernel *k, const KExpr *e) {
  switch (e->kind) {
  case KE_CONST: put_const(b, e); return;
  case KE_VAR: sb_puts(b, VEC_AT(k->vars, KirVar, e->var)->name); return;
  case KE_SYM: sb_puts(b, VEC_AT(p->syms, KirSym, e->sym)->name); return;
  case KE_RNGSEED: sb_puts(b, "rngseed"); return;
  case KE_LOAD:
    sb_printf(b, "%s[", kir_buf(p, e->buf)->name);
    put_expr(b, p, k, e->a);
    sb_putc(b, ']');
    return;
  case KE_UNARY:
    sb_printf(b, "%s(", unop_names[e->un]);
    put_expr(b, p, k, e->a);
    sb_putc(b, ')');
    return;
  case KE_BINARY: {
    const char *op = infix(e->bin);
    sb_puts(b, op ? "(" : binop_names[e->bin]);
    if (!op) sb_putc(b, '(');
    put_expr(b, p, k, e->a);
    sb_printf(b, op ? " %s " : ", ", op ? op : "");
    put_expr(b, p, k, e->b);
    sb_putc(b, ')');
    return;
  }
  case KE_SELECT:
  case KE_RAND:
    sb_puts(b, e->kind == KE_SELECT ? "select(" : "rand(");
    put_expr(b, p, k, e->a);
    sb_puts(b, ", ");
    put_expr(b, p, k, e->b);
    sb_puts(b, ", ");
    put_expr(b, p, k, e->c);
    sb_putc(b, ')');
    return;
  case KE_CAST:
    sb_printf(b, "cast<%s>(", dtype_name(e->dtype));
    put_expr(b, p, k, e->a);
    sb_putc(b, ')');
    return;
  }
}

static void put_block(StrBuf *b, const KirProgram *p, const KirKernel *k, const Vec *blk, int ind);

static void put_stmt(StrBuf *b, const KirProgram *p, const KirKernel *k, const KStmt *s, int ind) {
  sb_printf(b, "%*s", ind, "");
  const KirVar *v = (s->kind == KS_FOR || s->kind == KS_LET || s->kind == KS_ASSIGN)
                        ? VEC_AT(k->vars, KirVar, s->var) : NULL;
  switch (s->kind) {
  case KS_FOR:
    sb_printf(b, "%sfor %s < ", s->parallel ? "parallel " : "", v->name);
    put_expr(b, p, k, s->n);
    sb_puts(b, " {\n");
    put_block(b, p, k, &s->body, ind + 2);
    sb_printf(b, "%*s}\n", ind, "");
    return;
  case KS_LET:
  case KS_ASSIGN:
    if (s->kind == KS_LET) sb_printf(b, "let %s: %s = ", v->name, dtype_name(v->dtype));
    else sb_printf(b, "%s = ", v->name);
    break;
  case KS_STORE:
    sb_printf(b, "%s[", kir_buf(p, s->buf)->name);
    put_expr(b, p, k, s->index);
    sb_puts(b, "] = ");
    put_expr(b, p, k, s->value);
    sb_putc(b, '\n');
    return;
  case KS_IF:
    sb_puts(b, "if ");
    put_expr(b, p, k, s->cond);
    sb_puts(b, " {\n");
    put_block(b, p, k, &s->body, ind + 2);
    if (s->els.len) {
      sb_printf(b, "%*s} else {\n", ind, "");
      put_block(b, p, k, &s->els, ind + 2);
    }
    sb_printf(b, "%*s}\n", ind, "");
    return;
  case KS_CHECK:
    sb_puts(b, "check ");
    put_expr(b, p, k, s->cond);
    sb_printf(b, " \"%s\"\n", s->msg);
    return;
  }
  put_expr(b, p, k, s->value);
  sb_putc(b, '\n');
}

static void put_block(StrBuf *b, const KirProgram *p, const KirKernel *k, const Vec *blk, int ind) {
  for (int i = 0; i < blk->len; i++) put_stmt(b, p, k, VEC_AT(*blk, KStmt, i), ind);
}

static const char *const buf_kinds[] = {"input", "output", "state", "temp"};

void kir_print(StrBuf *b, const KirProgram *p) {
  sb_printf(b, "program %s\n", p->name);
  for (int i = 0; i < p->syms.len; i++) {
    KirSym *s = VEC_AT(p->syms, KirSym, i);
    sb_printf(b, "sym %s = ", s->name);
    if (s->arg >= 0) sb_printf(b, "arg %d dim %d\n", s->arg, s->dim);
    else {
      put_expr(b, p, NULL, s->def);
      sb_putc(b, '\n');
    }
  }
  for (int i = 0; i < p->bufs.len; i++) {
    KirBuf *bf = kir_buf(p, i);
    sb_printf(b, "buf %s : %s[", bf->name, dtype_name(bf->dtype));
    put_expr(b, p, NULL, bf->numel);
    sb_printf(b, "] %s", buf_kinds[bf->kind]);
    if (bf->kind == KBUF_INPUT || bf->kind == KBUF_OUTPUT) sb_printf(b, " %d", bf->index);
    if (bf->kind == KBUF_STATE) sb_printf(b, " %s", bf->path);
    sb_putc(b, '\n');
  }
  for (int i = 0; i < p->kernels.len; i++) {
    KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    sb_printf(b, "\nkernel %s(", k->name);
    for (int j = 0; j < k->params.len; j++)
      sb_printf(b, "%s%s", j ? ", " : "", kir_buf(p, kir_param(k, j))->name);
    sb_puts(b, ") {\n");
    put_block(b, p, k, &k->body, 2);
    sb_puts(b, "}\n");
  }
}

void kir_dump(const KirProgram *p, FILE *out) {
  StrBuf b = {0};
  kir_print(&b, p);
  if (b.data) fputs(b.data, out);
  sb_free(&b);
}

// ---- verifier ----------------------------------------------------------------------------------------------
// Walks each kernel with the set of variables in scope; the first problem in
// a kernel is reported (later ones are usually its echoes).
typedef struct Verify {
  const KirProgram *p;
  const KirKernel *k; // NULL for program-level expressions (sym defs, sizes)
  bool *live;         // per kernel var: in scope
  int nsyms;          // syms visible (program-level: the earlier ones)
  char msg[256];
} Verify;

static bool vfail(Verify *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool vfail(Verify *v, const char *fmt, ...) {
  if (v->msg[0]) return false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->msg, sizeof v->msg, fmt, ap);
  va_end(ap);
  return false;
}

static bool has_param(const KirKernel *k, int b) {
  for (int i = 0; i < k->params.len; i++)
    if (kir_param(k, i) == b) return true;
  return false;
}

static bool v_expr(Verify *v, const KExpr *e);

static bool v_idx(Verify *v, const KExpr *e, const char *what) {
  if (!v_expr(v, e)) return false;
  return e->dtype == DT_I64 || vfail(v, "%s has dtype %s, not i64", what, dtype_name(e->dtype));
}

static bool v_unary(Verify *v, const KExpr *e) {
  DType t = e->a->dtype;
  if (e->un == KU_NOT) return t == DT_BOOL || vfail(v, "not of %s", dtype_name(t));
  if (e->dtype != t)
    return vfail(v, "%s: result %s, operand %s", unop_names[e->un], dtype_name(e->dtype), dtype_name(t));
  if (e->un != KU_NEG && e->un != KU_ABS && !dtype_is_float(t))
    return vfail(v, "%s of non-float %s", unop_names[e->un], dtype_name(t));
  return true;
}

static bool v_binary(Verify *v, const KExpr *e) {
  DType t = e->a->dtype;
  const char *n = binop_names[e->bin];
  if (e->b->dtype != t) return vfail(v, "%s of %s and %s", n, dtype_name(t), dtype_name(e->b->dtype));
  if (e->dtype != (is_compare(e->bin) ? DT_BOOL : t)) return vfail(v, "%s: result dtype %s", n, dtype_name(e->dtype));
  if ((e->bin == KB_AND || e->bin == KB_OR) && t != DT_BOOL) return vfail(v, "%s of %s", n, dtype_name(t));
  if (e->bin == KB_POW && !dtype_is_float(t)) return vfail(v, "pow of %s", dtype_name(t));
  if (e->bin == KB_MOD && !dtype_is_int(t)) return vfail(v, "mod of %s", dtype_name(t));
  return true;
}

static bool v_expr(Verify *v, const KExpr *e) {
  if (!e) return vfail(v, "missing expression");
  switch (e->kind) {
  case KE_CONST: case KE_RNGSEED: return true;
  case KE_VAR:
    if (!v->k || e->var < 0 || e->var >= v->k->vars.len) return vfail(v, "variable #%d out of range", e->var);
    if (!v->live[e->var]) return vfail(v, "variable %s used out of scope", VEC_AT(v->k->vars, KirVar, e->var)->name);
    return e->dtype == VEC_AT(v->k->vars, KirVar, e->var)->dtype || vfail(v, "variable dtype mismatch");
  case KE_SYM: return (e->sym >= 0 && e->sym < v->nsyms) || vfail(v, "sym #%d not defined here", e->sym);
  case KE_LOAD:
    if (!v->k || e->buf < 0 || e->buf >= v->p->bufs.len || !has_param(v->k, e->buf))
      return vfail(v, "load from buffer #%d, not a parameter", e->buf);
    if (e->dtype != kir_buf(v->p, e->buf)->dtype) return vfail(v, "load dtype differs from the buffer's");
    return v_idx(v, e->a, "load index");
  case KE_UNARY: return v_expr(v, e->a) && v_unary(v, e);
  case KE_BINARY: return v_expr(v, e->a) && v_expr(v, e->b) && v_binary(v, e);
  case KE_SELECT:
    if (!v_expr(v, e->a) || !v_expr(v, e->b) || !v_expr(v, e->c)) return false;
    if (e->a->dtype != DT_BOOL) return vfail(v, "select condition is %s", dtype_name(e->a->dtype));
    return (e->b->dtype == e->dtype && e->c->dtype == e->dtype) || vfail(v, "select arms differ in dtype");
  case KE_CAST: return v_expr(v, e->a);
  case KE_RAND:
    return e->dtype == DT_F64 && v_idx(v, e->a, "rand key") && v_idx(v, e->b, "rand counter") &&
           v_idx(v, e->c, "rand stream");
  }
  return vfail(v, "bad expression kind %d", (int)e->kind);
}

static bool v_block(Verify *v, const Vec *blk);

static bool v_var(Verify *v, int var, bool loop, bool want_live) {
  if (var < 0 || var >= v->k->vars.len) return vfail(v, "variable #%d out of range", var);
  KirVar *kv = VEC_AT(v->k->vars, KirVar, var);
  if (kv->is_loop != loop) return vfail(v, "%s is %sa loop variable", kv->name, loop ? "not " : "");
  if (v->live[var] != want_live)
    return vfail(v, want_live ? "%s assigned before its let" : "%s defined twice in scope", kv->name);
  return true;
}

static bool v_stmt(Verify *v, const KStmt *s) {
  switch (s->kind) {
  case KS_FOR: {
    if (!v_var(v, s->var, true, false) || !v_idx(v, s->n, "trip count")) return false;
    if (VEC_AT(v->k->vars, KirVar, s->var)->dtype != DT_I64) return vfail(v, "loop variable not i64");
    v->live[s->var] = true;
    bool ok = v_block(v, &s->body);
    v->live[s->var] = false;
    return ok;
  }
  case KS_LET: case KS_ASSIGN:
    if (!v_var(v, s->var, false, s->kind == KS_ASSIGN) || !v_expr(v, s->value)) return false;
    if (s->value->dtype != VEC_AT(v->k->vars, KirVar, s->var)->dtype)
      return vfail(v, "%s: value is %s", VEC_AT(v->k->vars, KirVar, s->var)->name, dtype_name(s->value->dtype));
    v->live[s->var] = true;
    return true;
  case KS_STORE:
    if (s->buf < 0 || s->buf >= v->p->bufs.len || !has_param(v->k, s->buf))
      return vfail(v, "store to buffer #%d, not a parameter", s->buf);
    if (kir_buf(v->p, s->buf)->kind == KBUF_INPUT) return vfail(v, "store to input %s", kir_buf(v->p, s->buf)->name);
    if (!v_idx(v, s->index, "store index") || !v_expr(v, s->value)) return false;
    return s->value->dtype == kir_buf(v->p, s->buf)->dtype ||
           vfail(v, "store of %s into %s buffer %s", dtype_name(s->value->dtype),
                 dtype_name(kir_buf(v->p, s->buf)->dtype), kir_buf(v->p, s->buf)->name);
  case KS_IF: case KS_CHECK:
    if (!v_expr(v, s->cond)) return false;
    if (s->cond->dtype != DT_BOOL) return vfail(v, "condition is %s", dtype_name(s->cond->dtype));
    return s->kind == KS_CHECK || (v_block(v, &s->body) && v_block(v, &s->els));
  }
  return vfail(v, "bad statement kind %d", (int)s->kind);
}

// Locals declared in a block go out of scope at its end.
static bool v_block(Verify *v, const Vec *blk) {
  int n = v->k->vars.len;
  bool *saved = arena_alloc(v->p->arena, sizeof(bool) * (size_t)(n ? n : 1));
  memcpy(saved, v->live, sizeof(bool) * (size_t)n);
  bool ok = true;
  for (int i = 0; i < blk->len && ok; i++) ok = v_stmt(v, VEC_AT(*blk, KStmt, i));
  memcpy(v->live, saved, sizeof(bool) * (size_t)n);
  return ok;
}

static bool v_program_level(Verify *v, DiagSink *d) {
  const KirProgram *p = v->p;
  for (int i = 0; i < p->syms.len; i++) {
    KirSym *s = VEC_AT(p->syms, KirSym, i);
    v->nsyms = i;
    if (s->arg < 0 && !v_idx(v, s->def, "sym definition")) {
      diag_error(d, (Span){0}, "kir: program %s: sym %s: %s", p->name, s->name, v->msg);
      return false;
    }
  }
  v->nsyms = p->syms.len;
  for (int i = 0; i < p->bufs.len; i++)
    if (!v_idx(v, kir_buf(p, i)->numel, "size")) {
      diag_error(d, (Span){0}, "kir: program %s: buf %s: %s", p->name, kir_buf(p, i)->name, v->msg);
      return false;
    }
  return true;
}

bool kir_verify(const KirProgram *p, DiagSink *d) {
  Verify v = {.p = p};
  if (!v_program_level(&v, d)) return false;
  bool ok = true;
  for (int i = 0; i < p->kernels.len; i++) {
    KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    v.k = k;
    v.msg[0] = 0;
    v.live = arena_alloc(p->arena, sizeof(bool) * (size_t)(k->vars.len ? k->vars.len : 1));
    if (!v_block(&v, &k->body)) {
      diag_error(d, k->span, "kir: kernel %s: %s", k->name, v.msg);
      ok = false;
    }
  }
  return ok;
}
