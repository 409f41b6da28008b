// report.c — `mlc build --report` (report.h): per-kernel cost and the peak
// memory of training, read off the planned kernel IR (the CPU programs, or
// the gpu ones when only --target cuda is built).
//
// Sizes are expressions over the programs' syms. The batch sym (bound from
// argument 0's dim 0, B) takes the batch size; any other sym (T, bound from
// the data) takes 64, which the header says.
//
// FLOPs: for a kernel with an op record, the op's multiply-adds times two
// (matmul: 2*M*N*K; conv2d and its grads: 2 * numel(output or dy) * C/g*KH*KW).
// Otherwise the float operations of its statements (every unary or binary
// op on floats, max/min and compares included; casts, selects and index
// arithmetic not) times the trip counts of the loops around them. A loop's
// trip count that depends on an outer loop's variable is taken at that
// variable's midpoint; an `if` whose condition depends on loop variables is
// counted as taken.
// Bytes moved: per buffer the kernel touches, the bytes it loads (element
// loads times trip counts, at most the buffer's size) plus the bytes it
// stores (the same): what a kernel must move at least once, repeated reads
// of one element not counted again.
//
// Peak memory of training at batch b (every part at b, disjoint, summed):
//   parameters       state of kind param (trainable or not)
//   optimizer state  state of kind optstate (moments, step counters)
//   other state      buffers (running statistics)
//   gradients        the temporaries of train_step with a parameter's shape
//                    live at the kernel where the plan's live bytes peak
//   activations      the rest of train_step's scratch (the plan's size; the
//                    checked variant's when larger)
//   workspace        what the runtime's scratch block holds beyond that
//                    (eval's or predict's larger plan, the forward output
//                    train_step writes there, the alignment pad)
//   data batch       train_step's inputs at b
#include "report.h"
#include "report_internal.h"

#include "kernel/kir.h"
#include "kernel/schedule.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

// ---- evaluation ------------------------------------------------------------------------------------

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// An integer or bool expression's value; false when it reads memory or an
// unbound variable.
bool report_ev(const Eval *e, const KExpr *x, int64_t *out) {
  int64_t a, b, c;
  switch (x->kind) {
  case KE_CONST:
    if (dtype_is_float(x->dtype)) return false;
    *out = x->i;
    return true;
  case KE_SYM: *out = e->syms[x->sym]; return true;
  case KE_VAR:
    if (!e->vars || !e->bound[x->var]) return false;
    *out = e->vars[x->var];
    return true;
  case KE_UNARY:
    if (!report_ev(e, x->a, &a)) return false;
    if (x->un == KU_NOT) *out = !a;
    else if (x->un == KU_NEG) *out = -a;
    else if (x->un == KU_ABS) *out = a < 0 ? -a : a;
    else return false;
    return true;
  case KE_SELECT:
    if (!report_ev(e, x->a, &a) || !report_ev(e, x->b, &b) || !report_ev(e, x->c, &c)) return false;
    *out = a ? b : c;
    return true;
  case KE_BINARY:
    if (dtype_is_float(x->a->dtype) || !report_ev(e, x->a, &a) || !report_ev(e, x->b, &b)) return false;
    switch (x->bin) {
    case KB_ADD: *out = a + b; return true;
    case KB_SUB: *out = a - b; return true;
    case KB_MUL: *out = a * b; return true;
    case KB_DIV: if (!b) return false; *out = floordiv(a, b); return true;
    case KB_MOD: if (!b) return false; *out = a - floordiv(a, b) * b; return true;
    case KB_MAX: *out = a > b ? a : b; return true;
    case KB_MIN: *out = a < b ? a : b; return true;
    case KB_LT: *out = a < b; return true;
    case KB_LE: *out = a <= b; return true;
    case KB_GT: *out = a > b; return true;
    case KB_GE: *out = a >= b; return true;
    case KB_EQ: *out = a == b; return true;
    case KB_NE: *out = a != b; return true;
    case KB_AND: *out = a && b; return true;
    case KB_OR: *out = a || b; return true;
    default: return false;
    }
  default: return false;
  }
}

static int64_t ev0(const Eval *e, const KExpr *x) {
  int64_t v;
  return x && report_ev(e, x, &v) ? v : 0;
}

// The syms of p with the batch sym at b and any other argument-bound sym at 64.
int64_t *report_bind(const KirProgram *p, int64_t b) {
  int64_t *args = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->syms.len + 1));
  int64_t *syms = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->syms.len + 1));
  for (int i = 0; i < p->syms.len; i++) {
    const KirSym *s = VEC_AT(p->syms, KirSym, i);
    args[i] = s->arg == 0 && s->dim == 0 ? b : 64;
  }
  if (!kir_bind_syms(p, args, syms)) memset(syms, 0, sizeof(int64_t) * (size_t)(p->syms.len + 1));
  return syms;
}

static int64_t buf_bytes(const Eval *e, int b) {
  const KirBuf *kb = kir_buf(e->p, b);
  return ev0(e, kb->numel) * dtype_size(kb->dtype);
}

// ---- one kernel --------------------------------------------------------------------------------------
typedef struct Cost {
  Eval e;
  int64_t flops;
  int64_t *loads, *stores; // per buffer: element accesses
} Cost;

static int64_t expr_cost(Cost *c, const KExpr *x, int64_t mult) {
  if (!x) return 0;
  int64_t f = 0;
  switch (x->kind) {
  case KE_LOAD:
    c->loads[x->buf] += mult;
    return expr_cost(c, x->a, mult);
  case KE_UNARY: f = dtype_is_float(x->a->dtype) && x->un != KU_NOT; break;
  case KE_BINARY: f = dtype_is_float(x->a->dtype); break;
  default: break;
  }
  return f * mult + expr_cost(c, x->a, mult) + expr_cost(c, x->b, mult) + expr_cost(c, x->c, mult);
}

static void block_cost(Cost *c, const Vec *blk, int64_t mult) {
  for (int i = 0; i < blk->len; i++) {
    const KStmt *s = VEC_AT(*blk, KStmt, i);
    switch (s->kind) {
    case KS_FOR: {
      int64_t n = ev0(&c->e, s->n);
      if (n <= 0) break;
      c->e.vars[s->var] = (n - 1) / 2, c->e.bound[s->var] = true;
      block_cost(c, &s->body, mult * n);
      c->e.bound[s->var] = false;
      break;
    }
    case KS_LET: case KS_ASSIGN: c->flops += expr_cost(c, s->value, mult); break;
    case KS_STORE:
      c->stores[s->buf] += mult;
      c->flops += expr_cost(c, s->value, mult) + expr_cost(c, s->index, mult);
      break;
    case KS_IF: {
      c->flops += expr_cost(c, s->cond, mult);
      int64_t v;
      bool known = report_ev(&c->e, s->cond, &v);
      if (!known || v) block_cost(c, &s->body, mult);
      if (known && !v) block_cost(c, &s->els, mult);
      break;
    }
    case KS_CHECK: expr_cost(c, s->cond, mult); break;
    case KS_BARRIER: break;
    case KS_MMA: c->flops += 2 * 16 * 8 * 16 / 32 * mult; break; // a lane's share of the warp's product
    case KS_CALL: { // the kernel library: its op record gives the FLOPs;
                    // every buffer it passes counts once, whole (capped below)
      KirCallSpec spec;
      kir_call_spec(s->call->fn, &spec);
      for (int j = 0; j < spec.nslots; j++)
        if (s->call->buf[j] >= 0) c->loads[s->call->buf[j]] = INT64_MAX / 4;
      break;
    }
    }
  }
}

static int64_t numel_of(const Eval *e, const KirOp *op, int role) {
  int64_t n = 1;
  for (int d = 0; d < op->rank[role]; d++) n *= ev0(e, op->dims[role][d]);
  return n;
}

// 2 * multiply-adds of an op record; -1 for ops counted from the loops.
static int64_t op_flops(const Eval *e, const KirOp *op) {
  switch (op->kind) {
  case KOP_MATMUL: case KOP_MATMUL_RELU: case KOP_MATMUL_RELU_MASK:
  case KOP_MATMUL_BIAS: case KOP_MATMUL_RESIDUAL: {
    // a [.., M, K] @ b [.., K, N] -> y [.., M, N]; + bias or + aux: one add per y
    int64_t y = numel_of(e, op, 2);
    bool add = op->kind == KOP_MATMUL_BIAS || op->kind == KOP_MATMUL_RESIDUAL;
    return 2 * y * ev0(e, op->dims[0][op->rank[0] - 1]) + (add ? y : 0);
  }
  case KOP_CONV2D: case KOP_CONV2D_BIAS: case KOP_CONV2D_GRAD_INPUT: case KOP_CONV2D_GRAD_WEIGHT: {
    // roles: conv2d (x, w, y [, bias]), grad_input (dy, w, dx), grad_weight (dy, x, dw);
    // w/dw [O, C/g, KH, KW]; conv2d_bias adds one per y
    bool fwd = op->kind == KOP_CONV2D || op->kind == KOP_CONV2D_BIAS;
    int w = op->kind == KOP_CONV2D_GRAD_WEIGHT ? 2 : 1, out = fwd ? 2 : 0;
    int64_t o = ev0(e, op->dims[w][0]), y = numel_of(e, op, out);
    return o > 0 ? 2 * y * (numel_of(e, op, w) / o) + (op->kind == KOP_CONV2D_BIAS ? y : 0) : 0;
  }
  default: return -1;
  }
}

typedef struct KCost {
  int64_t flops, bytes;
} KCost;

static KCost kernel_cost(const KirProgram *p, const KirKernel *k, int64_t *syms) {
  Cost c = {.e = {.p = p, .syms = syms}};
  c.e.vars = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(k->vars.len + 1));
  c.e.bound = arena_alloc(p->arena, sizeof(bool) * (size_t)(k->vars.len + 1));
  c.loads = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->bufs.len + 1));
  c.stores = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->bufs.len + 1));
  block_cost(&c, &k->body, 1);
  KCost r = {c.flops, 0};
  int64_t f = k->op ? op_flops(&c.e, k->op) : -1;
  if (f >= 0) r.flops = f;
  for (int i = 0; i < k->params.len; i++) {
    int b = kir_param(k, i);
    const KirBuf *kb = kir_buf(p, b);
    int64_t n = ev0(&c.e, kb->numel), l = c.loads[b] < n ? c.loads[b] : n, s = c.stores[b] < n ? c.stores[b] : n;
    r.bytes += (l + s) * dtype_size(kb->dtype);
  }
  return r;
}

// ---- printing -------------------------------------------------------------------------------------------
// 1234567 -> "1,234,567"
static const char *grouped(Arena *a, int64_t v) {
  char d[32], out[48];
  snprintf(d, sizeof d, "%lld", (long long)(v < 0 ? -v : v));
  int n = (int)strlen(d), j = 0;
  if (v < 0) out[j++] = '-';
  for (int i = 0; i < n; i++) {
    if (i && (n - i) % 3 == 0) out[j++] = ',';
    out[j++] = d[i];
  }
  out[j] = 0;
  return arena_strdup(a, out);
}

static const char *mib(Arena *a, int64_t v) { return arena_printf(a, "%.1f MiB", (double)v / (1024.0 * 1024.0)); }

// "14" or "14-16" and the first line's text (trimmed, cut at 40 characters).
static void lines_of(Arena *a, Span sp, const char **lines, const char **text) {
  *lines = "-", *text = "";
  if (!sp.file) return;
  int l0, l1, col;
  span_linecol(sp, &l0, &col);
  Span end = sp;
  end.off = sp.len ? sp.off + sp.len - 1 : sp.off;
  span_linecol(end, &l1, &col);
  *lines = l1 > l0 ? arena_printf(a, "%d-%d", l0, l1) : arena_printf(a, "%d", l0);
  const char *t = sp.file->text, *e = t + sp.file->len;
  uint32_t bol = sp.off <= sp.file->len ? sp.off : (uint32_t)sp.file->len;
  while (bol > 0 && t[bol - 1] != '\n') bol--;
  const char *s = t + bol;
  while (s < e && (*s == ' ' || *s == '\t')) s++;
  const char *q = s;
  while (q < e && *q != '\n') q++;
  while (q > s && isspace((unsigned char)q[-1])) q--;
  int n = (int)(q - s);
  *text = n > 40 ? arena_printf(a, "%.37s...", s) : arena_printf(a, "%.*s", n, s);
}

static void program_table(FILE *f, Arena *a, const KirProgram *p, int64_t b) {
  if (!p) return;
  int64_t *syms = report_bind(p, b), tf = 0, tb = 0;
  fprintf(f, "%s: %d kernels\n", p->name, p->kernels.len);
  fprintf(f, "  %-4s %-28s %-8s %16s %16s  %s\n", "#", "kernel", "lines", "FLOPs", "bytes", "source");
  for (int i = 0; i < p->kernels.len; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    KCost c = kernel_cost(p, k, syms);
    const char *lines, *text;
    lines_of(a, k->span, &lines, &text);
    fprintf(f, "  %-4d %-28s %-8s %16s %16s  %s%s\n", i, k->name, lines, grouped(a, c.flops), grouped(a, c.bytes), text,
            kir_kernel_winograd(k) ? "  [winograd]" : "");
    tf += c.flops, tb += c.bytes;
  }
  fprintf(f, "  %-4s %-28s %-8s %16s %16s\n\n", "", "total", "", grouped(a, tf), grouped(a, tb));
}

// ---- memory ---------------------------------------------------------------------------------------------
typedef struct Memory {
  int64_t params, grads, optstate, other, acts, workspace, data, total;
  const char *peak_kernel; // where the plan's live bytes peak
} Memory;

static const IrParam *param_of(const BuildUnit *u, const char *path) {
  const IrModule *m = u->lr.module;
  for (int i = 0; m && path && i < m->params.len; i++) {
    const IrParam *q = VEC_AT(m->params, IrParam, i);
    if (!strcmp(q->name, path)) return q;
  }
  return NULL;
}

static int64_t plan_bytes(const KirProgram *p, int64_t b) {
  if (!p || !p->scratch) return 0;
  Eval e = {.p = p, .syms = report_bind(p, b)};
  return ev0(&e, p->scratch);
}

static const KirProgram *prog(const BuildUnit *u, int which) {
  const KirProgram *c[] = {u->k_train, u->k_train_checked, u->k_eval, u->k_predict};
  const KirProgram *g[] = {u->g_train, u->g_train_checked, u->g_eval, u->g_predict};
  return u->cpu || !u->cuda ? c[which] : g[which]; // the CPU programs are planned only for the cpu target
}

static bool same_dims(const Eval *e, const KirBuf *a, const KirBuf *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (ev0(e, a->dims[d]) != ev0(e, b->dims[d])) return false;
  return true;
}

static int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

// The temporaries live at the kernel where their bytes peak: those with a
// trainable parameter's shape (gradients).
static int64_t peak_grads(const BuildUnit *u, const KirProgram *p, const Eval *e, const char **where) {
  int nk = p->kernels.len, nb = p->bufs.len;
  int *first = arena_alloc(p->arena, sizeof(int) * (size_t)(nb + 1)), *last = arena_alloc(p->arena, sizeof(int) * (size_t)(nb + 1));
  for (int b = 0; b < nb; b++) first[b] = -1;
  for (int k = 0; k < nk; k++) {
    const KirKernel *kn = VEC_AT(p->kernels, KirKernel, k);
    for (int j = 0; j < kn->params.len; j++) {
      int b = kir_param(kn, j);
      if (first[b] < 0) first[b] = k;
      last[b] = k;
    }
  }
  bool *grad = arena_alloc(p->arena, (size_t)nb + 1);
  for (int b = 0; b < nb; b++) {
    const KirBuf *t = kir_buf(p, b);
    if (t->kind != KBUF_TEMP) continue;
    for (int s = 0; s < nb && !grad[b]; s++) {
      const KirBuf *st = kir_buf(p, s);
      const IrParam *q = st->kind == KBUF_STATE ? param_of(u, st->path) : NULL;
      grad[b] = q && q->kind == IRP_PARAM && q->trainable && t->dtype == st->dtype && same_dims(e, t, st);
    }
  }
  int64_t best = -1, best_g = 0;
  for (int k = 0; k < nk; k++) {
    int64_t live = 0, g = 0;
    for (int b = 0; b < nb; b++)
      if (kir_buf(p, b)->kind == KBUF_TEMP && first[b] >= 0 && first[b] <= k && k <= last[b]) {
        int64_t x = align64(buf_bytes(e, b));
        live += x;
        if (grad[b]) g += x;
      }
    if (live > best) best = live, best_g = g, *where = VEC_AT(p->kernels, KirKernel, k)->name;
  }
  return best_g;
}

static Memory memory_at(const BuildUnit *u, int64_t b, bool want_grads) {
  Memory m = {.peak_kernel = "-"};
  const KirProgram *t = prog(u, 0);
  if (!t) return m;
  Eval e = {.p = t, .syms = report_bind(t, b)};
  for (int i = 0; i < t->bufs.len; i++) {
    const KirBuf *kb = kir_buf(t, i);
    int64_t n = buf_bytes(&e, i);
    if (kb->kind == KBUF_INPUT) m.data += n;
    if (kb->kind != KBUF_STATE) continue;
    const IrParam *q = param_of(u, kb->path);
    if (q && q->kind == IRP_PARAM) m.params += n;
    else if (q && q->kind == IRP_BUFFER) m.other += n;
    else if (q || (kb->path && !strncmp(kb->path, "opt.", 4))) m.optstate += n;
    else m.other += n;
  }
  int acc = u->recipe.opt.accumulate > 1 ? u->recipe.opt.accumulate : 1;
  int64_t tn = plan_bytes(t, b), tc = plan_bytes(prog(u, 1), b), train = tn > tc ? tn : tc;
  // the runtime's block (build_glue.c, scratch_bytes): train_step's plans and
  // its forward output, eval's and predict's plans over the whole batch, 64 more
  int64_t out = 0;
  for (int i = 0; u->step_has_out && i < t->bufs.len; i++) {
    const KirBuf *kb = kir_buf(t, i);
    if (kb->kind == KBUF_OUTPUT && kb->index == 3) out = buf_bytes(&e, i) * acc;
  }
  int64_t blk = align64(train) + out, ev_ = plan_bytes(prog(u, 2), b * acc), pr = plan_bytes(prog(u, 3), b * acc);
  if (ev_ > blk) blk = ev_;
  if (pr > blk) blk = pr;
  blk += 64;
  if (want_grads) m.grads = peak_grads(u, t, &e, &m.peak_kernel);
  if (m.grads > train) m.grads = train;
  m.acts = train - m.grads;
  m.workspace = blk - train;
  m.total = m.params + m.grads + m.optstate + m.other + m.acts + m.workspace + m.data;
  return m;
}

int64_t report_peak(const BuildUnit *u, int64_t b) { return memory_at(u, b, false).total; }

static void memory_table(FILE *f, Arena *a, const BuildUnit *u, int64_t b) {
  Memory m = memory_at(u, b, true);
  const struct { const char *what; int64_t v; const char *note; } rows[] = {
      {"parameters", m.params, ""},
      {"gradients", m.grads, arena_printf(a, "in the scratch: parameter-shaped temporaries (gradients, update terms) live at %s", m.peak_kernel)},
      {"optimizer state", m.optstate, ""},
      {"other state", m.other, "buffers"},
      {"activations, temporaries", m.acts, "the rest of train_step's scratch (memory plan)"},
      {"workspace", m.workspace, "the rest of the runtime's scratch block"},
      {"data batch", m.data, "train_step's inputs"},
  };
  fprintf(f, "peak memory of training at batch %lld\n", (long long)b);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    fprintf(f, "  %-26s %16s  %12s  %s\n", rows[i].what, grouped(a, rows[i].v), mib(a, rows[i].v), rows[i].note);
  fprintf(f, "  %-26s %16s  %12s\n", "total", grouped(a, m.total), mib(a, m.total));
}

// The largest b with peak(b) <= limit (peaks grow with b), 0 when none.
static int64_t fit(const BuildUnit *u, int64_t limit) {
  if (report_peak(u, 1) > limit) return 0;
  int64_t lo = 1, hi = 2;
  while (hi < ((int64_t)1 << 40) && report_peak(u, hi) <= limit) lo = hi, hi *= 2;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (report_peak(u, mid) <= limit) lo = mid;
    else hi = mid;
  }
  return lo;
}

void report_write(FILE *f, const BuildUnit *u, const ReportOptions *o) {
  Arena *a = u->arena;
  int64_t b = o->batch > 0 ? o->batch : u->recipe.batch > 0 ? u->recipe.batch : 1;
  const KirProgram *t = prog(u, 0);
  bool other = false;
  for (int i = 0; t && i < t->syms.len; i++) {
    const KirSym *s = VEC_AT(t->syms, KirSym, i);
    other |= s->arg >= 0 && !(s->arg == 0 && s->dim == 0);
  }
  fprintf(f, "mlc report: %s (%s), batch %lld, precision %s%s%s\n\n", u->model, u->path, (long long)b,
          dtype_name((DType)u->recipe.precision), u->cpu || !u->cuda ? "" : ", gpu programs",
          other ? ", other sizes from the data at 64" : "");
  program_table(f, a, prog(u, 0), b);
  program_table(f, a, prog(u, 2), b);
  program_table(f, a, prog(u, 3), b);
  if (u->cuda) {
    const KirProgram *g[] = {u->g_train, u->g_eval, u->g_predict};
    report_launches(f, g, 3, b);
  }
  memory_table(f, a, u, b);
  if (o->max_memory > 0) {
    int64_t n = fit(u, o->max_memory);
    fprintf(f, "\nlargest batch within %s bytes: ", grouped(a, o->max_memory));
    if (!n) fprintf(f, "none (batch 1 needs %s)\n", grouped(a, report_peak(u, 1)));
    else
      fprintf(f, "%lld (peak %s; batch %lld needs %s)\n", (long long)n, grouped(a, report_peak(u, n)),
              (long long)(n + 1), grouped(a, report_peak(u, n + 1)));
  }
}

bool report_parse_size(const char *s, int64_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return false;
  double scale = 1;
  switch (toupper((unsigned char)*end)) {
  case 'K': scale = 1024.0, end++; break;
  case 'M': scale = 1024.0 * 1024, end++; break;
  case 'G': scale = 1024.0 * 1024 * 1024, end++; break;
  case 'T': scale = 1024.0 * 1024 * 1024 * 1024, end++; break;
  default: break;
  }
  if (scale > 1 && (*end == 'i' || *end == 'I')) end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end || v * scale > 9e18) return false;
  *out = (int64_t)(v * scale);
  return *out > 0;
}
