// emit_host.c — the CUDA C printer's host side (cuda_gen.h): per program a
// C launcher that binds the syms from the argument dims, places every
// buffer (the caller's device addresses for inputs, outputs and state,
// scratch + the plan's offset for temporaries) and launches every kernel's
// launches in order through the caller's MlcLauncher, with the grid the
// gpu-block loop's trip count and the block cuda_block_threads; then the
// table of kernel names (launch index -> __global__ name) and of check
// messages. Sizes are the kernel IR's i64 expressions, printed as C.
#include "cuda_internal.h"

#include <stdarg.h>
#include <string.h>


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

static void syms(StrBuf *o, const KirProgram *p, Arena *a) {
  for (int i = 0; i < p->syms.len; i++) {
    const KirSym *s = VEC_AT(p->syms, KirSym, i);
    sb_printf(o, "  int64_t %s = ", cuda_ident(a, "sym_", s->name));
    if (s->arg >= 0) sb_printf(o, "dims[%d];\n", s->arg * MLC_MAX_RANK + s->dim);
    else hexpr(o, p, a, s->def), sb_puts(o, ";\n");
    sb_printf(o, "  (void)%s;\n", cuda_ident(a, "sym_", s->name));
  }
}

// Every buffer's device address (shared and local buffers have none).
static void buffers(StrBuf *o, const KirProgram *p, Arena *a) {
  int nstate = 0;
  for (int i = 0; i < p->bufs.len; i++) {
    const KirBuf *b = kir_buf(p, i);
    switch (b->kind) {
    case KBUF_INPUT: sb_printf(o, "  uint64_t buf%d = inputs[%d];", i, b->index); break;
    case KBUF_OUTPUT: sb_printf(o, "  uint64_t buf%d = outputs[%d];", i, b->index); break;
    case KBUF_STATE: sb_printf(o, "  uint64_t buf%d = state[%d];", i, nstate++); break;
    case KBUF_TEMP:
      sb_printf(o, "  uint64_t buf%d = scratch + (uint64_t)", i);
      hexpr(o, p, a, b->offset); // the plan's offsets are i64 over syms (kir_verify)
      sb_putc(o, ';');
      break;
    default: continue;
    }
    sb_printf(o, " // %s\n  (void)buf%d;\n", b->name, i);
  }
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
  buffers(&body, p, a);
  int rc = 0;
  for (int i = 0; i < p->kernels.len && !rc; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    int n, first = cuda_kernel(g, p, k, &n, err, errlen);
    if (first < 0) {
      rc = -1;
      break;
    }
    int *cs = arena_alloc(p->arena, sizeof(int) * (size_t)(p->syms.len + 1)), ncs = 0;
    StrBuf key = {0};
    kir_kernel_key(&key, p, k, cs, &ncs);
    sb_free(&key);
    sb_printf(&body, "  { // %s\n    void *args[] = {", k->name);
    int na = 0;
    for (int j = 0; j < k->params.len; j++)
      if (kir_buf(p, kir_param(k, j))->kind != KBUF_SHARED && kir_buf(p, kir_param(k, j))->kind != KBUF_LOCAL)
        sb_printf(&body, "%s&buf%d", na++ ? ", " : "", kir_param(k, j));
    for (int j = 0; j < ncs; j++)
      sb_printf(&body, "%s&%s", na++ ? ", " : "", cuda_ident(a, "sym_", VEC_AT(p->syms, KirSym, cs[j])->name));
    sb_printf(&body, "%s&seed, &flag};\n", na ? ", " : "");
    for (int j = 0, r = 0; j < k->body.len; j++) {
      const KStmt *s = VEC_AT(k->body, KStmt, j);
      if (s->kind != KS_FOR) continue;
      sb_puts(&body, "    int64_t grid");
      sb_printf(&body, "%d = ", r);
      if (!hexpr(&body, p, a, s->n)) {
        rc = err_fail(err, errlen, "kernel %s of %s: a grid size that is not an expression over sizes", k->name, p->name);
        break;
      }
      sb_printf(&body, ";\n    if (grid%d > 0 && l->launch(l, %d, grid%d, %lld, args)) return -1;\n", r, first + r, r,
                (long long)cuda_block_threads(s));
      r++;
    }
    sb_puts(&body, "  }\n");
  }
  sb_puts(&body, "  return 0;\n}\n\n");
  if (!rc) {
    sb_printf(&body, "int64_t %s_scratch_bytes(const int64_t *dims) {\n  (void)dims;\n", fn);
    syms(&body, p, a);
    sb_puts(&body, "  return ");
    hexpr(&body, p, a, p->scratch);
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
  if (g->host.data) sb_puts(o, g->host.data);
  sb_printf(o, "const char *const %skernels[] = {\n", g->opt.prefix);
  for (int i = 0; i < g->names.len; i++) sb_puts(o, "    "), c_string(o, VEC_AT(g->names, char, i)), sb_puts(o, ",\n");
  sb_printf(o, "    NULL};\nconst int %snkernels = %d;\n", g->opt.prefix, g->names.len);
  sb_printf(o, "const char *const %smessages[] = {\n", g->opt.prefix);
  for (int i = 0; i < g->msgs.len; i++) sb_puts(o, "    "), c_string(o, VEC_AT(g->msgs, char, i)), sb_puts(o, ",\n");
  sb_printf(o, "    NULL};\nconst int %snmessages = %d;\n", g->opt.prefix, g->msgs.len);
  return o->data;
}
