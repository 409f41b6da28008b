// kir.c — the kernel IR's data structures (kir.h): construction helpers with
// light constant folding of index arithmetic, the analysis helpers the
// passes and backends share (captures, buffer accesses, structural
// equality, evaluation of sizes), and the canonical text printer with the
// position-named kernel key a backend dedups kernels by. The verifier is
// kir_verify.c, the parser of the text kir_parse.c.
//
// Input: calls from kir_lower*.c, schedule*.c, memplan.c, kir_parse.c (and
// later the fusion pass). Output: a KirProgram in its arena; text via
// kir_print.
#include "kir_internal.h"

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

static const char *const map_names[] = {
#define X(id, name) name,
    KIR_MAPS(X)
#undef X
};
static const struct {
  const char *name, *roles, *attrs;
} op_table[] = {
#define X(id, name, roles, attrs) {name, roles, attrs},
    KIR_OPS(X)
#undef X
};
static const struct {
  const char *name, *cfn, *params;
} call_table[] = {
#define X(id, name, cfn, params) {name, cfn, params},
    KIR_CALLS(X)
#undef X
};
static const char *const gemm_flag_names[KIR_GEMM_FLAGS] = {"trans_a", "trans_b", "bias_col", "bias_row",
                                                            "residual", "relu", "relu_mask", "bf16", "f16"};
// "": no flag at that bit (the verifier rejects it).
static const char *const conv_flag_names[KIR_CONV_FLAGS] = {"relu", "winograd", "", "", "", "", "", "bf16", "f16"};
_Static_assert(sizeof map_names / sizeof *map_names == KMAP_COUNT, "map names");
_Static_assert(sizeof op_table / sizeof *op_table == KOP_COUNT, "op table");
_Static_assert(sizeof call_table / sizeof *call_table == KCALL_COUNT, "call table");

const char *const kir_buf_kind_names[KBUF_KIND_COUNT] = {"input", "output", "state", "temp", "shared", "local"};

const char *kir_unop_name(KUnOp op) { return unop_names[op]; }
const char *kir_binop_name(KBinOp op) { return binop_names[op]; }
const char *kir_map_name(KLoopMap m) { return map_names[m]; }
const char *kir_op_name(KirOpKind op) { return op_table[op].name; }

// Splits the table's words: roles "x w y", attributes "stride:2 groups:1".
void kir_op_spec(KirOpKind op, KirOpSpec *o) {
  memset(o, 0, sizeof *o);
  for (const char *s = op_table[op].roles; *s;) {
    int n = 0;
    while (s[n] && s[n] != ' ') n++;
    MLC_ASSERT(o->nbufs < KIR_OP_MAX_BUFS && n < 24);
    memcpy(o->roles[o->nbufs++], s, (size_t)n);
    s += n + (s[n] == ' ');
  }
  for (const char *s = op_table[op].attrs; *s;) {
    int n = 0;
    while (s[n] != ':') n++;
    MLC_ASSERT(o->ngroups < KIR_OP_MAX_ATTRS && n < 24);
    memcpy(o->group[o->ngroups], s, (size_t)n);
    o->count[o->ngroups++] = s[n + 1] - '0';
    s += n + 2;
    s += *s == ' ';
  }
}

// ---- library calls -----------------------------------------------------------------------------
const char *kir_call_name(KirCallFn fn) { return call_table[fn].name; }
const char *kir_call_cfn(KirCallFn fn) { return call_table[fn].cfn; }

const char *const *kir_call_flag_names(KCallArgKind kind, int *n) {
  *n = kind == KCA_GFLAGS ? KIR_GEMM_FLAGS : KIR_CONV_FLAGS;
  return kind == KCA_GFLAGS ? gemm_flag_names : conv_flag_names;
}

// Splits the table's "name:kind ..." into parameters and slot positions.
void kir_call_spec(KirCallFn fn, KirCallSpec *o) {
  static const char kinds[] = "ifFCrwmoug";
  memset(o, 0, sizeof *o);
  o->name = call_table[fn].name, o->cfn = call_table[fn].cfn;
  for (const char *s = call_table[fn].params; *s;) {
    int n = 0;
    while (s[n] != ':') n++;
    MLC_ASSERT(o->nparams < KIR_CALL_MAX_PARAMS && n < (int)sizeof o->param[0].name);
    KirCallParam *pa = &o->param[o->nparams++];
    memcpy(pa->name, s, (size_t)n);
    const char *k = strchr(kinds, s[n + 1]);
    MLC_ASSERT(k && *k);
    pa->kind = (KCallArgKind)(k - kinds);
    pa->nslots = pa->kind == KCA_GEOM ? KIR_CONV_GEOM : pa->kind == KCA_GFLAGS || pa->kind == KCA_CFLAGS ? 0 : 1;
    pa->slot = o->nslots;
    o->nslots += pa->nslots;
    s += n + 2;
    s += *s == ' ';
  }
  MLC_ASSERT(o->nslots <= KIR_CALL_MAX_SLOTS);
}

const KirCallParam *kir_call_param(const KirCallSpec *sp, const char *name) {
  for (int i = 0; i < sp->nparams; i++)
    if (!strcmp(sp->param[i].name, name)) return &sp->param[i];
  return NULL;
}

bool kir_call_set(KStmt *s, const char *param, KExpr *e) {
  KirCallSpec sp;
  kir_call_spec(s->call->fn, &sp);
  const KirCallParam *pa = kir_call_param(&sp, param);
  if (!pa || (pa->kind != KCA_I64 && pa->kind != KCA_F32)) return false;
  s->call->slot[pa->slot] = e;
  return true;
}

bool kir_call_operand(KStmt *s, const char *param, int buf, KExpr *offset) {
  KirCallSpec sp;
  kir_call_spec(s->call->fn, &sp);
  const KirCallParam *pa = kir_call_param(&sp, param);
  if (!pa || pa->kind < KCA_READ || pa->kind > KCA_OPTW || (buf < 0 && pa->kind < KCA_OPT)) return false;
  s->call->buf[pa->slot] = buf;
  s->call->slot[pa->slot] = buf < 0 ? NULL : offset;
  return true;
}

bool kir_call_geom(KStmt *s, KExpr *const *geom) {
  KirCallSpec sp;
  kir_call_spec(s->call->fn, &sp);
  for (int i = 0; i < sp.nparams; i++)
    if (sp.param[i].kind == KCA_GEOM) {
      for (int j = 0; j < KIR_CONV_GEOM; j++) s->call->slot[sp.param[i].slot + j] = geom[j];
      return true;
    }
  return false;
}

static int64_t max0(int64_t v) { return v > 0 ? v : 0; }

// Elements [lo, hi) of a strided operand: `count` blocks of rows x cols,
// offset off, element (b, i, j) at off + b*sb + i*rs + j*cs.
static void span3(int64_t off, int64_t count, int64_t sb, int64_t rows, int64_t rs, int64_t cols, int64_t cs,
                  int64_t *lo, int64_t *hi) {
  if (count <= 0 || rows <= 0 || cols <= 0) {
    *lo = *hi = off;
    return;
  }
  *lo = off;
  *hi = off + (count - 1) * sb + (rows - 1) * rs + (cols - 1) * cs + 1;
}

static bool gemm_extents(const KirCallSpec *sp, const KCall *c, const int64_t *v, int64_t *lo, int64_t *hi) {
#define V(name) v[kir_call_param(sp, name)->slot]
#define S(name) kir_call_param(sp, name)->slot
  bool batched = c->fn == KCALL_SGEMM_BATCHED;
  int64_t nb = batched ? V("batch") : 1, m = V("m"), n = V("n"), k = V("k");
  int64_t sa = batched ? V("sa") : 0, sb = batched ? V("sb") : 0, sc = batched ? V("sc") : 0;
  int64_t saux = batched ? V("saux") : 0, lda = V("lda"), ldb = V("ldb"), ldc = V("ldc"), ldaux = V("ldaux");
  if (nb < 0 || m < 0 || n < 0 || k < 0 || sa < 0 || sb < 0 || sc < 0 || saux < 0 || lda < 0 || ldb < 0 ||
      ldc < 0 || ldaux < 0)
    return false;
  if (m == 0 || n == 0) nb = 0; // the library returns at once
  bool ta = c->flags & KIR_GEMM_TRANS_A, tb = c->flags & KIR_GEMM_TRANS_B;
  span3(V("a"), nb, sa, ta ? k : m, lda, ta ? m : k, 1, &lo[S("a")], &hi[S("a")]);
  span3(V("b"), nb, sb, tb ? n : k, ldb, tb ? k : n, 1, &lo[S("b")], &hi[S("b")]);
  span3(V("c"), nb, sc, m, ldc, n, 1, &lo[S("c")], &hi[S("c")]);
  bool col = c->flags & KIR_GEMM_BIAS_COL, row = c->flags & KIR_GEMM_BIAS_ROW;
  span3(V("bias"), nb ? 1 : 0, 0, 1, 0, col ? n : row ? m : 0, 1, &lo[S("bias")], &hi[S("bias")]);
  bool aux = c->flags & (KIR_GEMM_RESIDUAL | KIR_GEMM_RELU_MASK);
  span3(V("aux"), aux ? nb : 0, saux, m, ldaux, n, 1, &lo[S("aux")], &hi[S("aux")]);
  return true;
#undef V
#undef S
}

// A convolution's operands: x [N, C, H, W], w [O, C/G, KH, KW], bias [O],
// y [N, O, HO, WO], by role name.
static bool conv_extents(const KirCallSpec *sp, const KCall *c, const int64_t *v, int64_t *lo, int64_t *hi) {
  const int64_t *g = v + sp->param[0].slot;
  for (int i = 0; i < KIR_CONV_GEOM; i++)
    if (g[i] < 0 || (i >= 5 && g[i] == 0 && i != 9 && i != 10)) return false; // kernel, stride, dilation, groups >= 1
  int64_t n = g[0], ch = g[1], h = g[2], w = g[3], o = g[4], kh = g[5], kw = g[6], gr = g[13];
  if (ch % gr || o % gr) return false;
  int64_t nh = h + 2 * g[9] - g[11] * (kh - 1) - 1, nw = w + 2 * g[10] - g[12] * (kw - 1) - 1;
  if (nh < 0 || nw < 0) return false;
  int64_t ho = nh / g[7] + 1, wo = nw / g[8] + 1;
  for (int i = 0; i < sp->nparams; i++) {
    const KirCallParam *pa = &sp->param[i];
    if (pa->kind < KCA_READ || pa->kind > KCA_OPTW) continue;
    int64_t size = !strcmp(pa->name, "w") || !strcmp(pa->name, "dw") ? o * (ch / gr) * kh * kw
                   : !strcmp(pa->name, "bias") || !strcmp(pa->name, "db") ? o
                   : !strcmp(pa->name, "y") || !strcmp(pa->name, "dy") || !strcmp(pa->name, "px") ||
                           !strcmp(pa->name, "aux")                    ? n * o * ho * wo
                   : !strcmp(pa->name, "dyp")                      ? n * o * (ho / 2) * (wo / 2)
                   : !strcmp(pa->name, "yp") || !strcmp(pa->name, "pick") ? n * o * (ho / 2) * (wo / 2)
                                                                      : n * ch * h * w;
    lo[pa->slot] = v[pa->slot];
    hi[pa->slot] = v[pa->slot] + max0(size);
  }
  (void)c;
  return true;
}

// A max pool's operands: x, aux and dx [N, C, H, W], y and dy [N, C, HO, WO]
// (unpadded windows; the gradient's disjoint).
static bool pool_extents(const KirCallSpec *sp, const KCall *c, const int64_t *v, int64_t *lo, int64_t *hi) {
#define V(name) v[kir_call_param(sp, name)->slot]
  int64_t n = V("n"), ch = V("c"), h = V("h"), w = V("w"), kh = V("kh"), kw = V("kw"), sh = V("sh"), sw = V("sw");
#undef V
  if (n < 0 || ch < 0 || h < 0 || w < 0 || kh < 1 || kw < 1 || sh < 1 || sw < 1) return false;
  if (c->fn == KCALL_MAX_POOL2D_GRAD && (sh < kh || sw < kw)) return false;
  int64_t planes = n * ch, ho = h >= kh ? (h - kh) / sh + 1 : 0, wo = w >= kw ? (w - kw) / sw + 1 : 0;
  for (int i = 0; i < sp->nparams; i++) {
    const KirCallParam *pa = &sp->param[i];
    if (pa->kind < KCA_READ || pa->kind > KCA_OPTW) continue;
    int64_t size = !strcmp(pa->name, "y") || !strcmp(pa->name, "dy") ? planes * ho * wo : planes * h * w;
    lo[pa->slot] = v[pa->slot];
    hi[pa->slot] = v[pa->slot] + max0(size);
  }
  return true;
}

// max_pool2d_grad_pick's: dy and pick [N, C, H/2, W/2], dx [N, C, H, W].
static bool pick_extents(const KirCallSpec *sp, const int64_t *v, int64_t *lo, int64_t *hi) {
#define V(name) v[kir_call_param(sp, name)->slot]
  int64_t n = V("n"), ch = V("c"), h = V("h"), w = V("w");
#undef V
  if (n < 0 || ch < 0 || h < 0 || w < 0) return false;
  for (int i = 0; i < sp->nparams; i++) {
    const KirCallParam *pa = &sp->param[i];
    if (pa->kind < KCA_READ || pa->kind > KCA_OPTW) continue;
    int64_t size = !strcmp(pa->name, "dx") ? n * ch * h * w : n * ch * (h / 2) * (w / 2);
    lo[pa->slot] = v[pa->slot];
    hi[pa->slot] = v[pa->slot] + max0(size);
  }
  return true;
}

bool kir_call_extents(const KCall *c, const int64_t *vals, int64_t *lo, int64_t *hi) {
  KirCallSpec sp;
  kir_call_spec(c->fn, &sp);
  int64_t v[KIR_CALL_MAX_SLOTS];
  for (int i = 0; i < sp.nslots; i++) v[i] = vals[i], lo[i] = hi[i] = 0;
  bool ok = c->fn == KCALL_SGEMM || c->fn == KCALL_SGEMM_BATCHED         ? gemm_extents(&sp, c, v, lo, hi)
            : c->fn == KCALL_MAX_POOL2D || c->fn == KCALL_MAX_POOL2D_GRAD ? pool_extents(&sp, c, v, lo, hi)
            : c->fn == KCALL_MAX_POOL2D_GRAD_PICK                         ? pick_extents(&sp, v, lo, hi)
                                                                          : conv_extents(&sp, c, v, lo, hi);
  for (int i = 0; i < sp.nslots; i++)
    if (c->buf[i] < 0) lo[i] = hi[i] = 0;
  return ok;
}

// ---- program, syms, buffers, kernels, vars ------------------------------------------------------
KirProgram *kir_program_new(Arena *a, const char *name) {
  KirProgram *p = arena_alloc(a, sizeof *p);
  p->arena = a;
  p->name = arena_strdup(a, name);
  return p;
}

int kir_sym_add(KirProgram *p, const char *name, int arg, int dim, KExpr *def) {
  KirSym *s = arena_alloc(p->arena, sizeof *s);
  s->name = arena_strdup(p->arena, name);
  s->arg = arg;
  s->dim = dim;
  s->def = def;
  vec_push(p->arena, &p->syms, s);
  return p->syms.len - 1;
}

int kir_buf_add(KirProgram *p, KirBufKind kind, const char *name, DType dt, int rank, KExpr *const *dims) {
  KirBuf *b = arena_alloc(p->arena, sizeof *b);
  b->name = arena_strdup(p->arena, name);
  b->kind = kind;
  b->dtype = dt;
  b->rank = rank;
  b->dims = arena_alloc(p->arena, sizeof(KExpr *) * (size_t)(rank + 1));
  b->numel = kir_idx(p, 1);
  for (int i = 0; i < rank; i++) {
    b->dims[i] = dims[i];
    b->numel = kir_bin(p, KB_MUL, b->numel, dims[i]);
  }
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

KirOp *kir_kernel_op(KirProgram *p, KirKernel *k, KirOpKind kind, const int *bufs, const int *rank,
                     KExpr *const (*dims)[KIR_OP_MAX_RANK], const int64_t *attrs) {
  KirOpSpec sp;
  kir_op_spec(kind, &sp);
  KirOp *op = arena_alloc(p->arena, sizeof *op);
  op->kind = kind;
  for (int i = 0; i < sp.nbufs; i++) {
    op->buf[i] = bufs[i];
    op->rank[i] = rank[i];
    for (int d = 0; d < rank[i]; d++) op->dims[i][d] = dims[i][d];
    if (bufs[i] >= 0) kir_kernel_use(p, k, bufs[i]); // -1: a value the kernel does not store
  }
  int na = 0;
  for (int g = 0; g < sp.ngroups; g++) na += sp.count[g];
  for (int i = 0; i < na; i++) op->attr[i] = attrs[i];
  k->op = op;
  return op;
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

// i64 arithmetic as the semantics defines it (wrapping, floor div/mod);
// false for other ops and for a division by zero.
static bool i64_op(KBinOp op, int64_t a, int64_t b, int64_t *out) {
  uint64_t x = (uint64_t)a, y = (uint64_t)b;
  switch (op) {
  case KB_ADD: *out = (int64_t)(x + y); return true;
  case KB_SUB: *out = (int64_t)(x - y); return true;
  case KB_MUL: *out = (int64_t)(x * y); return true;
  case KB_DIV: if (!b) return false; *out = floor_div(a, b); return true;
  case KB_MOD: if (!b) return false; *out = a - floor_div(a, b) * b; return true;
  case KB_MAX: *out = a > b ? a : b; return true;
  case KB_MIN: *out = a < b ? a : b; return true;
  default: return false;
  }
}

// Folds i64 constant arithmetic and the neutral elements of index math.
static KExpr *fold_i64(KirProgram *p, KBinOp op, KExpr *a, KExpr *b) {
  if (a->dtype != DT_I64 || b->dtype != DT_I64) return NULL;
  int64_t v;
  if (a->kind == KE_CONST && b->kind == KE_CONST && i64_op(op, a->i, b->i, &v)) return kir_idx(p, v);
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

KExpr *kir_fma(KirProgram *p, KExpr *a, KExpr *b, KExpr *c) {
  KExpr *e = expr(p, KE_FMA, a->dtype);
  e->a = a;
  e->b = b;
  e->c = c;
  return e;
}

KExpr *kir_op_stride(KirProgram *p, const KirOp *op, int role, int d) {
  if (op->strides[role][0]) return op->strides[role][d];
  KExpr *st = kir_idx(p, 1);
  for (int i = op->rank[role] - 1; i > d; i--) st = kir_bin(p, KB_MUL, st, op->dims[role][i]);
  return st;
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
  s->map = KMAP_SERIAL;
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

KStmt *kir_barrier(KirProgram *p, Vec *block) { return stmt(p, block, KS_BARRIER); }

KStmt *kir_call(KirProgram *p, Vec *block, KirCallFn fn) {
  KStmt *s = stmt(p, block, KS_CALL);
  KCall *c = arena_alloc(p->arena, sizeof *c);
  c->fn = fn;
  c->slot = arena_alloc(p->arena, sizeof(KExpr *) * KIR_CALL_MAX_SLOTS);
  c->buf = arena_alloc(p->arena, sizeof(int) * KIR_CALL_MAX_SLOTS);
  for (int i = 0; i < KIR_CALL_MAX_SLOTS; i++) c->buf[i] = -1;
  s->call = c;
  return s;
}

KStmt *kir_mma(KirProgram *p, Vec *block, int d, int64_t d0, const KMma *m) {
  KStmt *s = stmt(p, block, KS_MMA);
  s->buf = d;
  s->index = kir_idx(p, d0);
  s->mma = arena_alloc(p->arena, sizeof *s->mma);
  *s->mma = *m;
  return s;
}

// ---- analysis helpers ---------------------------------------------------------------------------------
bool kir_expr_equal(const KExpr *a, const KExpr *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
  case KE_CONST: return dtype_is_float(a->dtype) ? a->f == b->f || (isnan(a->f) && isnan(b->f)) : a->i == b->i;
  case KE_VAR: return a->var == b->var;
  case KE_SYM: return a->sym == b->sym;
  case KE_RNGSEED: return true;
  case KE_LOAD: return a->buf == b->buf && kir_expr_equal(a->a, b->a);
  case KE_UNARY: return a->un == b->un && kir_expr_equal(a->a, b->a);
  case KE_BINARY: return a->bin == b->bin && kir_expr_equal(a->a, b->a) && kir_expr_equal(a->b, b->b);
  case KE_CAST: return kir_expr_equal(a->a, b->a);
  case KE_SELECT: case KE_RAND: case KE_FMA:
    return kir_expr_equal(a->a, b->a) && kir_expr_equal(a->b, b->b) && kir_expr_equal(a->c, b->c);
  }
  return false;
}

static void uses_expr(const KExpr *x, bool *used) {
  if (!x) return;
  if (x->kind == KE_VAR) used[x->var] = true;
  uses_expr(x->a, used), uses_expr(x->b, used), uses_expr(x->c, used);
}

static void uses_block(const Vec *blk, bool *used, bool *defd) {
  for (int i = 0; i < blk->len; i++) {
    const KStmt *s = VEC_AT(*blk, KStmt, i);
    if (s->kind == KS_FOR || s->kind == KS_LET) defd[s->var] = true;
    if (s->kind == KS_ASSIGN) used[s->var] = true;
    uses_expr(s->n, used), uses_expr(s->grain, used), uses_expr(s->index, used);
    uses_expr(s->value, used), uses_expr(s->cond, used);
    for (int j = 0; s->kind == KS_CALL && j < KIR_CALL_MAX_SLOTS; j++) uses_expr(s->call->slot[j], used);
    if (s->kind == KS_MMA) uses_expr(s->mma->oa, used), uses_expr(s->mma->ob, used);
    uses_block(&s->body, used, defd);
    uses_block(&s->els, used, defd);
  }
}

// The trip count and grain are evaluated outside the loop, so they are not
// the body's captures.
void kir_loop_captures(const KirProgram *p, const KirKernel *k, const KStmt *s, Vec *out) {
  int n = k->vars.len;
  bool *used = arena_alloc(p->arena, (size_t)n + 1), *defd = arena_alloc(p->arena, (size_t)n + 1);
  defd[s->var] = true;
  uses_block(&s->body, used, defd);
  out->len = 0;
  for (int v = 0; v < n; v++)
    if (used[v] && !defd[v]) vec_push(p->arena, out, (void *)(intptr_t)v);
}

static void access_expr(const KExpr *x, bool *reads) {
  if (!x) return;
  if (x->kind == KE_LOAD) reads[x->buf] = true;
  access_expr(x->a, reads), access_expr(x->b, reads), access_expr(x->c, reads);
}

// A call reads its r/o/m operands, writes its w/m ones (and the offsets'
// expressions read nothing: they are i64 over syms and variables).
static void call_access(const KCall *c, bool *reads, bool *writes) {
  KirCallSpec sp;
  kir_call_spec(c->fn, &sp);
  for (int i = 0; i < sp.nparams; i++) {
    const KirCallParam *pa = &sp.param[i];
    int b = c->buf[pa->slot];
    if (pa->kind < KCA_READ || pa->kind > KCA_OPTW || b < 0) continue;
    if (pa->kind != KCA_WRITE && pa->kind != KCA_OPTW) reads[b] = true;
    if (pa->kind == KCA_WRITE || pa->kind == KCA_UPDATE || pa->kind == KCA_OPTW) writes[b] = true;
  }
  for (int j = 0; j < sp.nslots; j++) access_expr(c->slot[j], reads);
}

void kir_stmt_access(const KStmt *s, bool *reads, bool *writes) {
  if (s->kind == KS_STORE) writes[s->buf] = true;
  if (s->kind == KS_CALL) call_access(s->call, reads, writes);
  if (s->kind == KS_MMA) { // D is read and written, A and B read
    reads[s->buf] = writes[s->buf] = reads[s->mma->a] = reads[s->mma->b] = true;
    access_expr(s->mma->oa, reads), access_expr(s->mma->ob, reads);
  }
  access_expr(s->n, reads), access_expr(s->index, reads), access_expr(s->value, reads);
  access_expr(s->cond, reads);
  for (int i = 0; i < s->body.len; i++) kir_stmt_access(VEC_AT(s->body, KStmt, i), reads, writes);
  for (int i = 0; i < s->els.len; i++) kir_stmt_access(VEC_AT(s->els, KStmt, i), reads, writes);
}

static bool concurrent(const KStmt *s) {
  if (s->kind == KS_FOR && s->map != KMAP_SERIAL && s->map != KMAP_VECTOR) return true;
  if (s->kind == KS_CALL) return true; // the library runs it on the pool
  for (int i = 0; i < s->body.len; i++)
    if (concurrent(VEC_AT(s->body, KStmt, i))) return true;
  for (int i = 0; i < s->els.len; i++)
    if (concurrent(VEC_AT(s->els, KStmt, i))) return true;
  return false;
}

int kir_barrier_conflict(const KirProgram *p, const KStmt *a, const KStmt *b) {
  if (!concurrent(a) && !concurrent(b)) return -1;
  int nb = p->bufs.len;
  bool *ra = arena_alloc(p->arena, (size_t)(4 * nb + 1)), *wa = ra + nb, *rb = wa + nb, *wb = rb + nb;
  kir_stmt_access(a, ra, wa);
  kir_stmt_access(b, rb, wb);
  for (int i = 0; i < nb; i++)
    if ((wa[i] && (rb[i] || wb[i])) || (ra[i] && wb[i])) return i;
  return -1;
}

bool kir_eval_i64(const KExpr *e, const int64_t *syms, int64_t *out) {
  int64_t a, b;
  switch (e->kind) {
  case KE_CONST: *out = e->i; return e->dtype == DT_I64;
  case KE_SYM: if (!syms) return false; *out = syms[e->sym]; return true;
  case KE_BINARY:
    return e->dtype == DT_I64 && kir_eval_i64(e->a, syms, &a) && kir_eval_i64(e->b, syms, &b) &&
           i64_op(e->bin, a, b, out);
  default: return false;
  }
}

bool kir_bind_syms(const KirProgram *p, const int64_t *arg_values, int64_t *syms) {
  for (int i = 0; i < p->syms.len; i++) {
    const KirSym *s = VEC_AT(p->syms, KirSym, i);
    if (s->arg >= 0) syms[i] = arg_values[i];
    else if (!kir_eval_i64(s->def, syms, &syms[i])) return false;
  }
  return true;
}

// ---- printer -------------------------------------------------------------------------------------------
// Expressions print in prefix form with explicit dtypes where they are not
// implied: constants as 3 / 1.5:f32, loads as buf[index], casts as
// cast<i32>(..), binary ops infix for + - * and compares, calls otherwise.
// A printer names buffers, syms and vars as the program does, or (for a
// kernel key) by position: b<param>, s<first use>, v<index>.
typedef struct Printer {
  StrBuf *b;
  const KirProgram *p;
  const KirKernel *k;
  bool canon;
  int *symmap;  // canon: program sym -> canonical position, -1 before its first use
  int *symlist; // canon: canonical position -> program sym
  int nsyms;
  int nchecks;  // canon: checks printed so far (their messages print as m<i>)
} Printer;

const char *kir_infix(KBinOp op) {
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

static int param_pos(const KirKernel *k, int buf) {
  for (int i = 0; i < k->params.len; i++)
    if (kir_param(k, i) == buf) return i;
  return -1;
}

static void put_buf(Printer *pr, int buf) {
  if (pr->canon) sb_printf(pr->b, "b%d", param_pos(pr->k, buf));
  else sb_puts(pr->b, kir_buf(pr->p, buf)->name);
}

static void put_var(Printer *pr, int var) {
  if (pr->canon) sb_printf(pr->b, "v%d", var);
  else sb_puts(pr->b, VEC_AT(pr->k->vars, KirVar, var)->name);
}

static void put_sym(Printer *pr, int sym) {
  if (!pr->canon) {
    sb_puts(pr->b, VEC_AT(pr->p->syms, KirSym, sym)->name);
    return;
  }
  if (pr->symmap[sym] < 0) {
    pr->symmap[sym] = pr->nsyms;
    pr->symlist[pr->nsyms++] = sym;
  }
  sb_printf(pr->b, "s%d", pr->symmap[sym]);
}

static void put_expr(Printer *pr, const KExpr *e);

static void put_args(Printer *pr, const char *open, const KExpr *a, const KExpr *b, const KExpr *c) {
  sb_puts(pr->b, open);
  put_expr(pr, a);
  if (b) sb_puts(pr->b, ", "), put_expr(pr, b);
  if (c) sb_puts(pr->b, ", "), put_expr(pr, c);
  sb_putc(pr->b, ')');
}

static void put_expr(Printer *pr, const KExpr *e) {
  StrBuf *b = pr->b;
  switch (e->kind) {
  case KE_CONST: put_const(b, e); return;
  case KE_VAR: put_var(pr, e->var); return;
  case KE_SYM: put_sym(pr, e->sym); return;
  case KE_RNGSEED: sb_puts(b, "rngseed"); return;
  case KE_LOAD:
    put_buf(pr, e->buf);
    sb_putc(b, '[');
    put_expr(pr, e->a);
    sb_putc(b, ']');
    return;
  case KE_UNARY: put_args(pr, arena_printf(pr->p->arena, "%s(", unop_names[e->un]), e->a, NULL, NULL); return;
  case KE_BINARY: {
    const char *op = kir_infix(e->bin);
    if (!op) {
      put_args(pr, arena_printf(pr->p->arena, "%s(", binop_names[e->bin]), e->a, e->b, NULL);
      return;
    }
    sb_putc(b, '(');
    put_expr(pr, e->a);
    sb_printf(b, " %s ", op);
    put_expr(pr, e->b);
    sb_putc(b, ')');
    return;
  }
  case KE_SELECT: put_args(pr, "select(", e->a, e->b, e->c); return;
  case KE_RAND: put_args(pr, "rand(", e->a, e->b, e->c); return;
  case KE_FMA: put_args(pr, "fma(", e->a, e->b, e->c); return;
  case KE_CAST: put_args(pr, arena_printf(pr->p->arena, "cast<%s>(", dtype_name(e->dtype)), e->a, NULL, NULL); return;
  }
}

static void put_block(Printer *pr, const Vec *blk, int ind);

// for's header: [parallel ]for VAR < N[ @MAP[(GRAIN)][ capture(VARS)]]
static void put_for(Printer *pr, const KStmt *s) {
  StrBuf *b = pr->b;
  sb_puts(b, s->parallel ? "parallel for " : "for ");
  put_var(pr, s->var);
  sb_puts(b, " < ");
  put_expr(pr, s->n);
  if (s->map != KMAP_SERIAL) sb_printf(b, " @%s", map_names[s->map]);
  if (s->grain) put_args(pr, "(", s->grain, NULL, NULL);
  for (int i = 0; i < s->captures.len; i++) {
    sb_puts(b, i ? ", " : " capture(");
    put_var(pr, kir_capture(s, i));
  }
  if (s->captures.len) sb_putc(b, ')');
}

static void put_check_msg(StrBuf *b, const char *msg) {
  sb_puts(b, " \"");
  for (const char *c = msg; *c; c++) {
    if (*c == '"' || *c == '\\') sb_putc(b, '\\');
    sb_putc(b, *c);
  }
  sb_puts(b, "\"\n");
}

static void put_dims(Printer *pr, int rank, KExpr *const *dims) {
  sb_putc(pr->b, '[');
  for (int d = 0; d < rank; d++) {
    if (d) sb_puts(pr->b, ", ");
    put_expr(pr, dims[d]);
  }
  sb_putc(pr->b, ']');
}

// call NAME(PARAM = VALUE, ...): expressions; flags as [name, ...]; buffer
// operands as BUF[offset] (the address of that element) or none; a
// geometry as [e, ...].
static void put_call(Printer *pr, const KCall *c) {
  StrBuf *b = pr->b;
  KirCallSpec sp;
  kir_call_spec(c->fn, &sp);
  sb_printf(b, "call %s(", sp.name);
  for (int i = 0; i < sp.nparams; i++) {
    const KirCallParam *pa = &sp.param[i];
    sb_printf(b, "%s%s = ", i ? ", " : "", pa->name);
    if (pa->kind == KCA_GFLAGS || pa->kind == KCA_CFLAGS) {
      int n;
      const char *const *names = kir_call_flag_names(pa->kind, &n);
      sb_putc(b, '[');
      for (int f = 0, first = 1; f < n; f++)
        if (c->flags >> f & 1) sb_printf(b, "%s%s", first ? "" : ", ", names[f]), first = 0;
      sb_putc(b, ']');
    } else if (pa->kind == KCA_GEOM) {
      put_dims(pr, KIR_CONV_GEOM, c->slot + pa->slot);
    } else if (pa->kind >= KCA_READ && pa->kind <= KCA_OPTW) {
      if (c->buf[pa->slot] < 0) {
        sb_puts(b, "none");
        continue;
      }
      put_buf(pr, c->buf[pa->slot]);
      sb_putc(b, '[');
      put_expr(pr, c->slot[pa->slot]);
      sb_putc(b, ']');
    } else {
      put_expr(pr, c->slot[pa->slot]);
    }
  }
  sb_puts(b, ")\n");
}

// mma PREC D[d0] += A[oa] strides [ars, aks] * B[ob] strides [bks, bcs]
static void put_mma(Printer *pr, const KStmt *s) {
  StrBuf *b = pr->b;
  const KMma *m = s->mma;
  sb_printf(b, "mma %s ", dtype_name(m->prec));
  put_buf(pr, s->buf);
  sb_putc(b, '[');
  put_expr(pr, s->index);
  sb_puts(b, "] += ");
  put_buf(pr, m->a);
  sb_putc(b, '[');
  put_expr(pr, m->oa);
  sb_printf(b, "] strides [%lld, %lld] * ", (long long)m->ars, (long long)m->aks);
  put_buf(pr, m->b);
  sb_putc(b, '[');
  put_expr(pr, m->ob);
  sb_printf(b, "] strides [%lld, %lld]\n", (long long)m->bks, (long long)m->bcs);
}

static void put_stmt(Printer *pr, const KStmt *s, int ind) {
  StrBuf *b = pr->b;
  sb_printf(b, "%*s", ind, "");
  switch (s->kind) {
  case KS_FOR:
    put_for(pr, s);
    sb_puts(b, " {\n");
    put_block(pr, &s->body, ind + 2);
    sb_printf(b, "%*s}\n", ind, "");
    return;
  case KS_LET:
  case KS_ASSIGN:
    if (s->kind == KS_LET) sb_puts(b, "let ");
    put_var(pr, s->var);
    if (s->kind == KS_LET) sb_printf(b, ": %s", dtype_name(VEC_AT(pr->k->vars, KirVar, s->var)->dtype));
    sb_puts(b, " = ");
    put_expr(pr, s->value);
    sb_putc(b, '\n');
    return;
  case KS_STORE:
    put_buf(pr, s->buf);
    sb_putc(b, '[');
    put_expr(pr, s->index);
    sb_puts(b, "] = ");
    put_expr(pr, s->value);
    sb_putc(b, '\n');
    return;
  case KS_IF:
    sb_puts(b, "if ");
    put_expr(pr, s->cond);
    sb_puts(b, " {\n");
    put_block(pr, &s->body, ind + 2);
    if (s->els.len) {
      sb_printf(b, "%*s} else {\n", ind, "");
      put_block(pr, &s->els, ind + 2);
    }
    sb_printf(b, "%*s}\n", ind, "");
    return;
  case KS_CHECK:
    sb_puts(b, "check ");
    put_expr(pr, s->cond);
    if (pr->canon) sb_printf(b, " m%d\n", pr->nchecks++);
    else put_check_msg(b, s->msg);
    return;
  case KS_BARRIER: sb_puts(b, "barrier\n"); return;
  case KS_CALL: put_call(pr, s->call); return;
  case KS_MMA: put_mma(pr, s); return;
  }
}

static void put_block(Printer *pr, const Vec *blk, int ind) {
  for (int i = 0; i < blk->len; i++) put_stmt(pr, VEC_AT(*blk, KStmt, i), ind);
}


// op NAME(ROLE = BUF[DIMS], ...) {GROUP = V | [V, V], ...}
static void put_op(Printer *pr, const KirOp *op) {
  StrBuf *b = pr->b;
  KirOpSpec sp;
  kir_op_spec(op->kind, &sp);
  sb_printf(b, "  op %s(", op_table[op->kind].name);
  for (int i = 0; i < sp.nbufs; i++) {
    sb_printf(b, "%s%s = ", i ? ", " : "", sp.roles[i]);
    if (op->buf[i] < 0) sb_puts(b, "none");
    else put_buf(pr, op->buf[i]);
    put_dims(pr, op->rank[i], op->dims[i]);
    if (op->strides[i][0]) sb_puts(b, " strides "), put_dims(pr, op->rank[i], op->strides[i]);
  }
  sb_putc(b, ')');
  for (int g = 0, a = 0; g < sp.ngroups; g++) {
    sb_printf(b, "%s%s = %s", g ? ", " : " {", sp.group[g], sp.count[g] > 1 ? "[" : "");
    for (int j = 0; j < sp.count[g]; j++) sb_printf(b, "%s%lld", j ? ", " : "", (long long)op->attr[a++]);
    sb_puts(b, sp.count[g] > 1 ? "]" : "");
  }
  sb_puts(b, sp.ngroups ? "}" : "");
  if (op->precision != DT_F32) sb_printf(b, " precision %s", dtype_name(op->precision));
  sb_putc(b, '\n');
}

static void put_kernel(Printer *pr, const KirKernel *k) {
  StrBuf *b = pr->b;
  pr->k = k;
  sb_printf(b, "\nkernel %s(", k->name);
  for (int j = 0; j < k->params.len; j++) sb_printf(b, "%s%s", j ? ", " : "", kir_buf(pr->p, kir_param(k, j))->name);
  sb_puts(b, ") {\n");
  if (k->op) put_op(pr, k->op);
  for (int i = 0; i < k->covers.len; i++) {
    const KirCover *cv = VEC_AT(k->covers, KirCover, i);
    sb_printf(b, "%s%s %%%d line %d", i ? ", " : "  covers ", cv->op, cv->node, cv->line);
  }
  if (k->covers.len) sb_putc(b, '\n');
  put_block(pr, &k->body, 2);
  sb_puts(b, "}\n");
}

static void put_buffer(Printer *pr, const KirBuf *bf) {
  StrBuf *b = pr->b;
  sb_printf(b, "buf %s : %s", bf->name, dtype_name(bf->dtype));
  put_dims(pr, bf->rank, bf->dims);
  sb_printf(b, " %s", kir_buf_kind_names[bf->kind]);
  if (bf->kind == KBUF_INPUT || bf->kind == KBUF_OUTPUT) sb_printf(b, " %d", bf->index);
  if (bf->kind == KBUF_STATE) sb_printf(b, " %s", bf->path);
  if (bf->offset) sb_puts(b, " at "), put_expr(pr, bf->offset);
  sb_putc(b, '\n');
}

void kir_print(StrBuf *b, const KirProgram *p) {
  Printer pr = {.b = b, .p = p};
  sb_printf(b, "program %s\n", p->name);
  if (p->target) sb_printf(b, "target %s\n", p->target);
  for (int i = 0; i < p->syms.len; i++) {
    KirSym *s = VEC_AT(p->syms, KirSym, i);
    sb_printf(b, "sym %s = ", s->name);
    if (s->arg >= 0) sb_printf(b, "arg %d dim %d\n", s->arg, s->dim);
    else {
      put_expr(&pr, s->def);
      sb_putc(b, '\n');
    }
  }
  for (int i = 0; i < p->bufs.len; i++) put_buffer(&pr, kir_buf(p, i));
  if (p->scratch) sb_puts(b, "scratch "), put_expr(&pr, p->scratch), sb_putc(b, '\n');
  for (int i = 0; i < p->kernels.len; i++) put_kernel(&pr, VEC_AT(p->kernels, KirKernel, i));
}

void kir_dump(const KirProgram *p, FILE *out) {
  StrBuf b = {0};
  kir_print(&b, p);
  if (b.data) fputs(b.data, out);
  sb_free(&b);
}

static void checks_of(const Vec *blk, Vec *out, Arena *a) {
  for (int i = 0; i < blk->len; i++) {
    KStmt *s = VEC_AT(*blk, KStmt, i);
    if (s->kind == KS_CHECK) vec_push(a, out, s);
    checks_of(&s->body, out, a);
    checks_of(&s->els, out, a);
  }
}

void kir_kernel_checks(const KirProgram *p, const KirKernel *k, Vec *out) {
  out->len = 0;
  checks_of(&k->body, out, p->arena);
}

void kir_kernel_key(StrBuf *b, const KirProgram *p, const KirKernel *k, int *syms_used, int *nsyms) {
  int n = p->syms.len;
  Printer pr = {.b = b, .p = p, .k = k, .canon = true};
  pr.symmap = arena_alloc(p->arena, sizeof(int) * (size_t)(n + 1));
  pr.symlist = syms_used ? syms_used : arena_alloc(p->arena, sizeof(int) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) pr.symmap[i] = -1;
  sb_puts(b, "kernel(");
  for (int j = 0; j < k->params.len; j++)
    sb_printf(b, "%s%s", j ? ", " : "", dtype_name(kir_buf(p, kir_param(k, j))->dtype));
  sb_puts(b, ") {\n");
  put_block(&pr, &k->body, 2);
  sb_puts(b, "}\n");
  if (nsyms) *nsyms = pr.nsyms;
}
