// emit_host.c — the CUDA C printer's host side (cuda_gen.h): per program a
// C launcher that binds the syms from the argument dims, fills one array v
// with what launches take (buffer i's device address in v[i]: the caller's
// for inputs, outputs and state, scratch + the plan's offset for
// temporaries; then the syms, seed and flag) and g with the distinct grid
// sizes (the gpu-block loops' trip counts), then walks a static table, a
// row per launch in order (launch index, grid slot, block
// cuda_block_threads, argument slots), through the caller's MlcLauncher;
// then the table of kernel names (launch index -> __global__ name) and of
// check messages. Sizes are the kernel IR's i64 expressions, printed as C,
// a subexpression used more than once as one `const int64_t eN` (HDag).
// The form keeps cc's time linear and small (docs/design/cuda.md, "NVRTC at
// build time").
#include "cuda_internal.h"

#include <stdarg.h>
#include <string.h>

// The most arguments a kernel takes (buffers, syms, seed and flag): the
// size of mlc_h_launch's array.
enum { MLC_H_MAX_ARGS = 256 };


static const char host_prologue[] =
    "#include <stdint.h>\n"
    "\n"
    "#include \"mlc_model.h\"\n"
    "\n"
    "static inline int64_t mlc_h_div(int64_t a, int64_t b) {\n"
    "  int64_t q = a / b, r = a % b;\n"
    "  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;\n"
    "}\n"
    "static inline int64_t mlc_h_mod(int64_t a, int64_t b) {\n"
    "  int64_t r = a % b;\n"
    "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
    "}\n"
    "static inline int64_t mlc_h_max(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "static inline int64_t mlc_h_min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "\n";

// %d: MLC_H_MAX_ARGS
static const char host_launch[] =
    "// One launch, a row of a launcher's table: launch index, grid (a slot of\n"
    "// g; none when it is empty), block threads, n, then the n slots of v that\n"
    "// are its arguments.\n"
    "static int mlc_h_launch(MlcLauncher *l, const int64_t *g, uint64_t *v, const uint32_t *x) {\n"
    "  void *args[%d];\n"
    "  for (uint32_t i = 0; i < x[3]; i++) args[i] = &v[x[4 + i]];\n"
    "  return g[x[1]] > 0 && l->launch(l, (int)x[0], g[x[1]], x[2], args);\n"
    "}\n"
    "\n";

// An i64 expression over the program's syms (false: something else in it).
static bool hexpr(StrBuf *o, const KirProgram *p, Arena *a, const KExpr *x) {
  switch (x->kind) {
  case KE_CONST:
    if (x->dtype != DT_I64) return false;
    sb_printf(o, x->i < 0 ? "(%lldLL)" : "%lldLL", (long long)x->i);
    return true;
  case KE_SYM: sb_puts(o, cuda_ident(a, "sym_", VEC_AT(p->syms, KirSym, x->sym)->name)); return true;
  case KE_BINARY: {
    if (x->dtype != DT_I64) return false;
    static const char *const infix[KB_COUNT] = {[KB_ADD] = " + ", [KB_SUB] = " - ", [KB_MUL] = " * "};
    static const char *const call[KB_COUNT] = {[KB_DIV] = "mlc_h_div", [KB_MOD] = "mlc_h_mod",
                                               [KB_MAX] = "mlc_h_max", [KB_MIN] = "mlc_h_min"};
    if (!infix[x->bin] && !call[x->bin]) return false;
    sb_printf(o, "%s(", infix[x->bin] ? "" : call[x->bin]);
    if (!hexpr(o, p, a, x->a)) return false;
    sb_puts(o, infix[x->bin] ? infix[x->bin] : ", ");
    if (!hexpr(o, p, a, x->b)) return false;
    sb_putc(o, ')');
    return true;
  }
  default: return false;
  }
}

// ---- shared subexpressions -------------------------------------------------------------------------
// The memory plan's offsets are maxes of polynomials over the syms, and of
// align64 atoms that hold polynomials themselves, all rebuilt per
// temporary (memplan.c): printed as trees, char_transformer's train_step
// had offsets of 4 KB each, 1.3 MB in all, and most of cc's time. They go
// through an HDag instead: every distinct subexpression a node (hash-consed
// by value), and one used more than once printed once as `int64_t eN = ..;`
// before the buffers, so the text grows with the distinct subexpressions.
typedef struct HNode {
  KBinOp bin;       // a binary node: bin over nodes a and b
  int a, b;         // -1: a leaf
  const char *leaf; // a leaf's text: a constant or a sym's name
  int uses;         // parents and roots that take it
  int name;         // its eN, -1 while inline
} HNode;

typedef struct HDag {
  const KirProgram *p;
  Arena *a;
  HNode *n;
  int len, cap;
  int *slot; // open addressing: node index + 1, 0 empty
  int nslot; // a power of two, more than twice len
  int named;
} HDag;

static uint64_t hnode_hash(const HNode *x) {
  uint64_t h = 1469598103934665603ull;
  if (x->a < 0)
    for (const char *c = x->leaf; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  else
    h = ((((h ^ (uint64_t)x->bin) * 1099511628211ull) ^ (uint64_t)x->a) * 1099511628211ull ^ (uint64_t)x->b) *
        1099511628211ull;
  return h;
}

static bool hnode_same(const HNode *x, const HNode *y) {
  if (x->a != y->a || x->b != y->b) return false;
  return x->a < 0 ? !strcmp(x->leaf, y->leaf) : x->bin == y->bin;
}

static void hdag_grow(HDag *d) {
  int n = d->nslot ? d->nslot * 2 : 256;
  int *slot = arena_alloc(d->a, sizeof(int) * (size_t)n);
  for (int i = 0; i < d->nslot; i++)
    if (d->slot[i]) {
      uint64_t h = hnode_hash(&d->n[d->slot[i] - 1]) & (uint64_t)(n - 1);
      while (slot[h]) h = (h + 1) & (uint64_t)(n - 1);
      slot[h] = d->slot[i];
    }
  d->slot = slot, d->nslot = n;
}

// The node equal to x (added when new; a new binary node is a use of each
// operand).
static int hdag_intern(HDag *d, HNode x) {
  if (2 * (d->len + 1) > d->nslot) hdag_grow(d);
  uint64_t h = hnode_hash(&x) & (uint64_t)(d->nslot - 1);
  for (; d->slot[h]; h = (h + 1) & (uint64_t)(d->nslot - 1))
    if (hnode_same(&d->n[d->slot[h] - 1], &x)) return d->slot[h] - 1;
  if (d->len == d->cap) {
    d->cap = d->cap ? 2 * d->cap : 256;
    HNode *n = arena_alloc(d->a, sizeof(HNode) * (size_t)d->cap);
    if (d->len) memcpy(n, d->n, sizeof(HNode) * (size_t)d->len);
    d->n = n;
  }
  x.uses = 0, x.name = -1;
  d->n[d->len] = x;
  d->slot[h] = d->len + 1;
  if (x.a >= 0) d->n[x.a].uses++, d->n[x.b].uses++;
  return d->len++;
}

static const KBinOp h_ops[] = {KB_ADD, KB_SUB, KB_MUL, KB_DIV, KB_MOD, KB_MAX, KB_MIN};

// x's node, or -1 where x is not an i64 expression over syms (as hexpr).
static int hdag_add(HDag *d, const KExpr *x) {
  switch (x->kind) {
  case KE_CONST:
    if (x->dtype != DT_I64) return -1;
    return hdag_intern(d, (HNode){.a = -1, .b = -1,
                                  .leaf = arena_printf(d->a, x->i < 0 ? "(%lldLL)" : "%lldLL", (long long)x->i)});
  case KE_SYM:
    return hdag_intern(d, (HNode){.a = -1, .b = -1, .leaf = cuda_ident(d->a, "sym_", VEC_AT(d->p->syms, KirSym, x->sym)->name)});
  case KE_BINARY: {
    bool known = false;
    for (size_t i = 0; i < sizeof h_ops / sizeof h_ops[0]; i++) known |= x->bin == h_ops[i];
    if (x->dtype != DT_I64 || !known) return -1;
    int ia = hdag_add(d, x->a), ib = ia < 0 ? -1 : hdag_add(d, x->b);
    return ib < 0 ? -1 : hdag_intern(d, (HNode){.bin = x->bin, .a = ia, .b = ib});
  }
  default: return -1;
  }
}

// A root: x's node, taken once more (by a buffer or a return).
static int hdag_root(HDag *d, const KExpr *x) {
  int i = hdag_add(d, x);
  if (i >= 0) d->n[i].uses++;
  return i;
}

// Node i as C: its name, a leaf's text, or its operands inline (as hexpr).
static void hdag_print(StrBuf *o, const HDag *d, int i) {
  const HNode *x = &d->n[i];
  static const char *const infix[KB_COUNT] = {[KB_ADD] = " + ", [KB_SUB] = " - ", [KB_MUL] = " * "};
  static const char *const call[KB_COUNT] = {[KB_DIV] = "mlc_h_div", [KB_MOD] = "mlc_h_mod", [KB_MAX] = "mlc_h_max",
                                             [KB_MIN] = "mlc_h_min"};
  if (x->name >= 0) sb_printf(o, "e%d", x->name);
  else if (x->a < 0) sb_puts(o, x->leaf);
  else {
    sb_printf(o, "%s(", infix[x->bin] ? "" : call[x->bin]);
    hdag_print(o, d, x->a);
    sb_puts(o, infix[x->bin] ? infix[x->bin] : ", ");
    hdag_print(o, d, x->b);
    sb_putc(o, ')');
  }
}

// `int64_t eN = ..;` for every binary node used more than once, operands
// first (a node's operands come before it in d->n).
static void hdag_defs(StrBuf *o, HDag *d) {
  for (int i = 0; i < d->len; i++) {
    HNode *x = &d->n[i];
    if (x->a < 0 || x->uses < 2) continue;
    sb_puts(o, "  const int64_t "), sb_printf(o, "e%d = ", d->named);
    hdag_print(o, d, i);
    sb_puts(o, ";\n");
    x->name = d->named++;
  }
}

static void syms(StrBuf *o, const KirProgram *p, Arena *a) {
  for (int i = 0; i < p->syms.len; i++) {
    const KirSym *s = VEC_AT(p->syms, KirSym, i);
    sb_printf(o, "  int64_t %s = ", cuda_ident(a, "sym_", s->name));
    if (s->arg >= 0) sb_printf(o, "dims[%d];\n", s->arg * MLC_MAX_RANK + s->dim);
    else hexpr(o, p, a, s->def), sb_puts(o, ";\n");
    sb_printf(o, "  (void)%s;\n", cuda_ident(a, "sym_", s->name));
  }
}

// The value slots of a program's launches: buffer i's device address in
// slot i (where some launch takes it; shared and local buffers have none),
// then the syms, then seed and flag. A launch's arguments are slots of one
// array v, not addresses of locals of their own: with a local per buffer,
// whose address every launch call could change, cc's time grew with
// launches x buffers (12 s at -O1 for char_transformer's 2,931 launches).
typedef struct HSlots {
  bool *taken; // buffer -> whether a launch takes it
  int sym0;    // the first sym's slot
  int seed;    // seed's slot, flag's the next
  int n;
} HSlots;

static HSlots slots(const KirProgram *p, Arena *a) {
  HSlots s = {.taken = arena_alloc(a, (size_t)p->bufs.len + 1)};
  for (int i = 0; i < p->kernels.len; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    for (int j = 0; j < k->params.len; j++) {
      KirBufKind kind = kir_buf(p, kir_param(k, j))->kind;
      if (kind != KBUF_SHARED && kind != KBUF_LOCAL) s.taken[kir_param(k, j)] = true;
    }
  }
  s.sym0 = p->bufs.len;
  s.seed = s.sym0 + p->syms.len;
  s.n = s.seed + 2;
  return s;
}

// A program's launches, gathered before anything is printed: each
// kernel's device code is printed (cuda_kernel) and its grid sizes join the
// DAG beside the offsets, so a grid many launches share is computed once.
typedef struct HLaunches {
  HDag d;
  int *off;     // buffer -> its offset's node (temporaries a launch takes)
  int *first;   // kernel -> its first launch index
  int *grid;    // gpu-block loop, in order over the kernels -> its grid's node
  int *g;       // node -> its slot of g, -1: none
  int *gnode;   // slot of g -> its node
  int nloops, ng;
} HLaunches;

static int gather(CudaGen *gen, const KirProgram *p, const HSlots *s, HLaunches *h, char *err, size_t errlen) {
  Arena *a = gen->a;
  h->d = (HDag){.p = p, .a = a};
  h->off = arena_alloc(a, sizeof(int) * (size_t)(p->bufs.len + 1));
  h->first = arena_alloc(a, sizeof(int) * (size_t)(p->kernels.len + 1));
  int nloops = 0;
  for (int i = 0; i < p->kernels.len; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    for (int j = 0; j < k->body.len; j++) nloops += VEC_AT(k->body, KStmt, j)->kind == KS_FOR;
  }
  h->grid = arena_alloc(a, sizeof(int) * (size_t)(nloops + 1));
  for (int i = 0; i < p->bufs.len; i++)
    if (s->taken[i] && kir_buf(p, i)->kind == KBUF_TEMP) {
      h->off[i] = hdag_root(&h->d, kir_buf(p, i)->offset);
      MLC_ASSERT(h->off[i] >= 0); // the plan's offsets are i64 over syms (kir_verify)
    }
  for (int i = 0; i < p->kernels.len; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    int n;
    if ((h->first[i] = cuda_kernel(gen, p, k, &n, err, errlen)) < 0) return -1;
    for (int j = 0; j < k->body.len; j++) {
      const KStmt *st = VEC_AT(k->body, KStmt, j);
      if (st->kind != KS_FOR) continue;
      if ((h->grid[h->nloops++] = hdag_add(&h->d, st->n)) < 0)
        return err_fail(err, errlen, "kernel %s of %s: a grid size that is not an expression over sizes", k->name,
                        p->name);
    }
  }
  // a slot of g per distinct grid, in order of first use; each a root once
  h->g = arena_alloc(a, sizeof(int) * (size_t)(h->d.len + 1));
  h->gnode = arena_alloc(a, sizeof(int) * (size_t)(h->nloops + 1));
  for (int i = 0; i < h->d.len; i++) h->g[i] = -1;
  for (int i = 0; i < h->nloops; i++)
    if (h->g[h->grid[i]] < 0) h->gnode[h->ng] = h->grid[i], h->g[h->grid[i]] = h->ng++, h->d.n[h->grid[i]].uses++;
  return 0;
}

// v and g filled: the shared subexpressions, then a line a slot.
static void values(StrBuf *o, const KirProgram *p, Arena *a, const HSlots *s, HLaunches *h) {
  hdag_defs(o, &h->d);
  sb_printf(o, "  uint64_t v[%d]; // what the launches take: buffer i's device address in v[i], syms, seed, flag\n",
            s->n);
  int nstate = 0;
  for (int i = 0; i < p->bufs.len; i++) {
    const KirBuf *b = kir_buf(p, i);
    if (b->kind == KBUF_STATE) nstate++;
    if (!s->taken[i]) continue;
    sb_printf(o, "  v[%d] = ", i);
    switch (b->kind) {
    case KBUF_INPUT: sb_printf(o, "inputs[%d];", b->index); break;
    case KBUF_OUTPUT: sb_printf(o, "outputs[%d];", b->index); break;
    case KBUF_STATE: sb_printf(o, "state[%d];", nstate - 1); break;
    case KBUF_TEMP:
      sb_puts(o, "scratch + (uint64_t)");
      hdag_print(o, &h->d, h->off[i]);
      sb_putc(o, ';');
      break;
    default: MLC_UNREACHABLE();
    }
    sb_printf(o, " // %s\n", b->name);
  }
  for (int i = 0; i < p->syms.len; i++)
    sb_printf(o, "  v[%d] = (uint64_t)%s;\n", s->sym0 + i, cuda_ident(a, "sym_", VEC_AT(p->syms, KirSym, i)->name));
  sb_printf(o, "  v[%d] = seed;\n  v[%d] = flag;\n", s->seed, s->seed + 1);
  if (!h->ng) return;
  sb_printf(o, "  int64_t g[%d]; // the grid sizes\n", h->ng);
  for (int i = 0; i < h->ng; i++) sb_printf(o, "  g[%d] = ", i), hdag_print(o, &h->d, h->gnode[i]), sb_puts(o, ";\n");
}

// The launch table, a row per launch in order (one per gpu-block loop of
// each kernel): launch index, grid (a slot of g), block threads, the
// argument count n, then the n slots of v its arguments are; and the loop
// that makes the launches.
static int table(StrBuf *o, const KirProgram *p, const HSlots *s, const HLaunches *h, char *err, size_t errlen) {
  if (!h->nloops) return 0;
  sb_puts(o, "  static const uint32_t launches[] = {\n");
  int *cs = arena_alloc(p->arena, sizeof(int) * (size_t)(p->syms.len + 1));
  for (int i = 0, loop = 0; i < p->kernels.len; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    int ncs = 0, na = 2;
    StrBuf key = {0}, args = {0};
    kir_kernel_key(&key, p, k, cs, &ncs);
    sb_free(&key);
    for (int j = 0; j < k->params.len; j++)
      if (s->taken[kir_param(k, j)]) sb_printf(&args, "%d, ", kir_param(k, j)), na++;
    for (int j = 0; j < ncs; j++) sb_printf(&args, "%d, ", s->sym0 + cs[j]), na++;
    sb_printf(&args, "%d, %d,", s->seed, s->seed + 1);
    for (int j = 0, r = 0; j < k->body.len; j++) {
      const KStmt *st = VEC_AT(k->body, KStmt, j);
      if (st->kind != KS_FOR) continue;
      sb_printf(o, "      %d, %d, %lld, %d, %s // %s\n", h->first[i] + r++, h->g[h->grid[loop++]],
                (long long)cuda_block_threads(st), na, args.data, k->name);
    }
    sb_free(&args);
    if (na > MLC_H_MAX_ARGS)
      return err_fail(err, errlen, "kernel %s of %s: %d arguments (at most %d)", k->name, p->name, na,
                      MLC_H_MAX_ARGS);
  }
  sb_puts(o, "  };\n"
             "  for (const uint32_t *x = launches; x < launches + sizeof launches / sizeof launches[0]; x += 4 + x[3])\n"
             "    if (mlc_h_launch(l, g, v, x)) return -1;\n");
  return 0;
}

int cuda_host_program(CudaGen *g, const KirProgram *p, char *err, size_t errlen) {
  Arena *a = g->a;
  StrBuf body = {0};
  const char *fn = cuda_ident(a, g->opt.prefix, p->name);
  sb_printf(&body,
            "int32_t %s(MlcLauncher *l, const int64_t *dims, const uint64_t *inputs, const uint64_t *outputs,\n"
            "    const uint64_t *state, uint64_t scratch, uint64_t seed, uint64_t flag) {\n"
            "  (void)dims, (void)inputs, (void)outputs, (void)state, (void)scratch;\n",
            fn);
  syms(&body, p, a);
  HSlots s = slots(p, a);
  HLaunches h = {0};
  int rc = gather(g, p, &s, &h, err, errlen);
  if (!rc) values(&body, p, a, &s, &h), rc = table(&body, p, &s, &h, err, errlen);
  sb_puts(&body, "  return 0;\n}\n\n");
  if (!rc) {
    sb_printf(&body, "int64_t %s_scratch_bytes(const int64_t *dims) {\n  (void)dims;\n", fn);
    syms(&body, p, a);
    HDag d = {.p = p, .a = a};
    int top = hdag_root(&d, p->scratch);
    MLC_ASSERT(top >= 0);
    hdag_defs(&body, &d);
    sb_puts(&body, "  return ");
    hdag_print(&body, &d, top);
    sb_puts(&body, ";\n}\n\n");
    sb_puts(&g->host, body.data);
  }
  sb_free(&body);
  return rc;
}

static void c_string(StrBuf *b, const char *s) {
  sb_putc(b, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') sb_printf(b, "\\%c", c);
    else if (c < 32 || c >= 127) sb_printf(b, "\\%03o", c);
    else sb_putc(b, (char)c);
  }
  sb_putc(b, '"');
}

const char *cuda_gen_host(CudaGen *g) {
  StrBuf *o = &g->host_all;
  o->len = 0;
  if (o->data) o->data[0] = 0;
  sb_printf(o, "// Host launchers for %s, printed by mlc (do not edit).\n", g->opt.name);
  sb_puts(o, host_prologue);
  sb_printf(o, host_launch, MLC_H_MAX_ARGS);
  if (g->host.data) sb_puts(o, g->host.data);
  sb_printf(o, "const char *const %skernels[] = {\n", g->opt.prefix);
  for (int i = 0; i < g->names.len; i++) sb_puts(o, "    "), c_string(o, VEC_AT(g->names, char, i)), sb_puts(o, ",\n");
  sb_printf(o, "    NULL};\nconst int %snkernels = %d;\n", g->opt.prefix, g->names.len);
  sb_printf(o, "const char *const %smessages[] = {\n", g->opt.prefix);
  for (int i = 0; i < g->msgs.len; i++) sb_puts(o, "    "), c_string(o, VEC_AT(g->msgs, char, i)), sb_puts(o, ",\n");
  sb_printf(o, "    NULL};\nconst int %snmessages = %d;\n", g->opt.prefix, g->msgs.len);
  return o->data;
}
