// emit.c — the CUDA C printer's device side (cuda_gen.h): scheduled,
// planned kernel IR in, mlc's C subset of CUDA out.
//
// Each kernel's top-level gpu-block loops are its launches (the barriers
// between them are met by the stream's order: a launch starts after the one
// before it ends). A launch prints as
//
//   MLC_KERNEL MLC_LAUNCH_BOUNDS(T) NAME(<buffers b0..>, <syms s0..>, uint64_t seed, uint32_t *flag) {
//     const int mlc_dead = *flag != 0;        // an earlier check failed: do nothing
//     MLC_SHARED float b3[256];               // the shared buffers it uses
//     float b4[16];                           // the local buffers: per thread, constant
//                                             // indices only (kir_verify), so registers
//     <every variable it uses, declared once>
//     v_gb = blockIdx.x;                      // the gpu-block loop's index
//     <block-level lets>                      // on every thread
//     if (!mlc_dead && threadIdx.x < n) {     // a gpu-thread loop
//       v_gt = threadIdx.x; <body> mlc_end3:;
//     }
//     MLC_BARRIER();                          // a barrier in the block
//     { for (v_kt = 0; v_kt < n; v_kt++) {   // a serial loop at block level
//         <block-level statements> } }        // (uniform trip count: every
//   }                                         // thread meets its barriers)
//   MLC_ENTRY<n>(NAME, <parameter types>)
//
// T is the largest gpu-thread trip count of the launch. Buffers are named
// by parameter position, syms by first use (kir_kernel_key's canonical
// order), so two kernels with the same key print the same text and share it.
// Variables are declared (zeroed) at the top and lets are assignments, so a failed
// check can `goto` the end of its thread's loop body past nothing that C++
// (NVRTC) forbids jumping over: it stores its message's number in *flag and
// the thread skips the rest of its iteration, meeting the barriers after it.
//
// Scalars follow kir.h: float products through __fmul_rn/__dmul_rn (never
// contracted into an FMA with a following add), IEEE division and square
// root (no fast math), NaN-propagating max/min, floor division and modulo
// for signed integers, i32 and u8 arithmetic wrapping, float -> int casts
// truncating (0 for non-finite), Philox-4x32-10 as kernels/philox.h draws
// it. bool is an int of 0/1 in registers and a byte in memory.
#include "cuda_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>


// ---- the generator -------------------------------------------------------------------------------
static void dev_puts(CudaGen *g, const char *s) {
  sb_puts(&g->dev, s);
  for (; *s; s++) g->dev_line += *s == '\n';
}

CudaGen *cuda_gen_new(const CudaGenOptions *o) {
  CudaGen *g = calloc(1, sizeof *g);
  MLC_ASSERT(g);
  g->opt = *o;
  if (!g->opt.prefix) g->opt.prefix = "mlc_cu_";
  if (!g->opt.name) g->opt.name = "kernels.cu";
  g->a = arena_new();
  g->opt.prefix = arena_strdup(g->a, g->opt.prefix);
  g->opt.name = arena_strdup(g->a, g->opt.name);
  char head[512];
  snprintf(head, sizeof head,
           "// %s: CUDA C printed by mlc from scheduled kernel IR (do not edit).\n"
           "// mlc's C subset of CUDA (kernels/cuda/mlc_cuda.h): NVRTC compiles it for the GPU,\n"
           "// a C compiler (-ffp-contract=off) for the CPU emulation.\n"
           "#include \"mlc_cuda.h\"\n\n",
           g->opt.name);
  dev_puts(g, head);
  return g;
}

void cuda_gen_free(CudaGen *g) {
  if (!g) return;
  for (int i = 0; i < g->capfns; i++) free(g->fns[i].key);
  free(g->fns);
  free(g->lines);
  sb_free(&g->dev), sb_free(&g->host), sb_free(&g->host_all);
  arena_free(g->a);
  free(g);
}

const char *cuda_gen_device(CudaGen *g) { return g->dev.data; }

const CudaKernelLines *cuda_gen_lines(const CudaGen *g, int *n) {
  *n = g->nlines;
  return g->lines;
}

int cuda_gen_kernels(const CudaGen *g) { return g->names.len; }
int cuda_gen_shared(const CudaGen *g) { return g->reused; }

int cuda_message(CudaGen *g, const char *msg) {
  for (int i = 0; i < g->msgs.len; i++)
    if (!strcmp(VEC_AT(g->msgs, char, i), msg)) return i;
  vec_push(g->a, &g->msgs, arena_strdup(g->a, msg));
  return g->msgs.len - 1;
}

const char *cuda_ident(Arena *a, const char *prefix, const char *name) {
  char *s = arena_printf(a, "%s%s", prefix, name);
  for (char *c = s + strlen(prefix); *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
  return s;
}

// The largest gpu-thread trip count in a block-level statement list (serial
// loops at block level included).
static int64_t block_threads(const Vec *blk) {
  int64_t t = 1, n;
  for (int i = 0; i < blk->len; i++) {
    const KStmt *s = VEC_AT(*blk, KStmt, i);
    if (s->kind == KS_FOR && s->map == KMAP_GPU_THREAD && kir_eval_i64(s->n, NULL, &n) && n > t) t = n;
    if (s->kind == KS_FOR && s->map == KMAP_SERIAL && (n = block_threads(&s->body)) > t) t = n;
  }
  return t;
}

int64_t cuda_block_threads(const KStmt *launch) { return block_threads(&launch->body); }

int cuda_gen_add(CudaGen *g, const KirProgram *p, char *err, size_t errlen) {
  if (!p->target || strcmp(p->target, "gpu"))
    return err_fail(err, errlen, "program %s is scheduled for %s, not the gpu target", p->name,
                p->target ? p->target : "no target");
  if (!p->scratch) return err_fail(err, errlen, "program %s has no memory plan", p->name);
  for (int i = 0; i < p->bufs.len; i++) {
    DType dt = kir_buf(p, i)->dtype;
    if ((dt == DT_F16 || dt == DT_BF16) && kir_buf(p, i)->kind != KBUF_SHARED)
      return err_fail(err, errlen, "program %s: buffer %s is %s, which the CUDA printer does not handle "
                  "(`precision bf16 | f16` keeps tensors f32 and rounds inside the products)", p->name,
                  kir_buf(p, i)->name, dtype_name(dt));
  }
  return cuda_host_program(g, p, err, errlen);
}

// ---- one kernel ------------------------------------------------------------------------------------
typedef struct Em {
  CudaGen *g;
  const KirProgram *p;
  const KirKernel *k;
  StrBuf *o;
  int *symmap;       // program sym -> canonical position
  int label;         // the enclosing thread loop's end label (-1: none)
  bool label_used;
  int nlabels;
  char *err;
  size_t errlen;
  bool failed;
} Em;

static void efail(Em *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void efail(Em *e, const char *fmt, ...) {
  if (e->failed) return;
  e->failed = true;
  int n = snprintf(e->err, e->errlen, "kernel %s of %s: ", e->k->name, e->p->name);
  if (n < 0 || (size_t)n >= e->errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->err + n, e->errlen - (size_t)n, fmt, ap);
  va_end(ap);
}

static int param_pos(const KirKernel *k, int buf) {
  for (int i = 0; i < k->params.len; i++)
    if (kir_param(k, i) == buf) return i;
  return -1;
}

// C types of a dtype: in registers (bool: int) and in memory (bool: a byte).
static const char *reg_type(DType dt) {
  switch (dt) {
  case DT_F32: return "float";
  case DT_F64: return "double";
  case DT_I32: return "int32_t";
  case DT_I64: return "int64_t";
  case DT_U8: return "uint8_t";
  case DT_BOOL: return "int";
  default: return NULL;
  }
}

// A 16-bit float is storage only (a tensor-core GEMM's shared tiles): its
// values are floats in registers (mlc_cuda.h's mlc_bf16_value / _bits).
static const char *mem_type(DType dt) {
  return dt == DT_BOOL ? "uint8_t" : dt == DT_BF16 || dt == DT_F16 ? "uint16_t" : reg_type(dt);
}

static bool is16(DType dt) { return dt == DT_BF16 || dt == DT_F16; }

static void put_float(StrBuf *b, double v, bool f32) {
  if (isnan(v)) {
    sb_puts(b, f32 ? "NAN" : "(double)NAN");
    return;
  }
  if (isinf(v)) {
    sb_puts(b, v > 0 ? (f32 ? "INFINITY" : "(double)INFINITY") : (f32 ? "(-INFINITY)" : "(-(double)INFINITY)"));
    return;
  }
  char buf[64];
  for (int prec = f32 ? 6 : 15; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (f32 ? (float)strtod(buf, NULL) == (float)v : strtod(buf, NULL) == v) break;
  }
  bool neg = buf[0] == '-';
  sb_puts(b, neg ? "(" : "");
  sb_puts(b, buf);
  if (!strpbrk(buf, ".e")) sb_puts(b, ".0");
  sb_puts(b, f32 ? "f" : "");
  sb_puts(b, neg ? ")" : "");
}

static void put_const(StrBuf *b, const KExpr *x) {
  switch (x->dtype) {
  case DT_F32: put_float(b, (double)(float)x->f, true); return;
  case DT_F64: put_float(b, x->f, false); return;
  case DT_I64:
    if (x->i == INT64_MIN) sb_puts(b, "(-9223372036854775807LL - 1)");
    else sb_printf(b, x->i < 0 ? "(%lldLL)" : "%lldLL", (long long)x->i);
    return;
  case DT_I32: sb_printf(b, "((int32_t)%lld)", (long long)x->i); return;
  case DT_U8: sb_printf(b, "((uint8_t)%lld)", (long long)x->i); return;
  case DT_BOOL: sb_puts(b, x->i ? "1" : "0"); return;
  default: MLC_UNREACHABLE();
  }
}

static void ex(Em *e, const KExpr *x);

static void call1(Em *e, const char *fn, const KExpr *a) {
  sb_printf(e->o, "%s(", fn);
  ex(e, a);
  sb_putc(e->o, ')');
}

static void call2(Em *e, const char *fn, const KExpr *a, const KExpr *b) {
  sb_printf(e->o, "%s(", fn);
  ex(e, a);
  sb_puts(e->o, ", ");
  ex(e, b);
  sb_putc(e->o, ')');
}

static void infix(Em *e, const char *open, const KExpr *a, const char *op, const KExpr *b, const char *close) {
  sb_puts(e->o, open);
  ex(e, a);
  sb_puts(e->o, op);
  ex(e, b);
  sb_puts(e->o, close);
}

static void unary(Em *e, const KExpr *x) {
  DType dt = x->a->dtype;
  bool f32 = dt == DT_F32, fl = dtype_is_float(dt);
  static const char *const fnames[KU_COUNT] = {
      [KU_ABS] = "fabs", [KU_EXP] = "exp", [KU_LOG] = "log", [KU_LOG1P] = "log1p", [KU_SQRT] = "sqrt",
      [KU_TANH] = "tanh", [KU_ERF] = "erf", [KU_COS] = "cos", [KU_FLOOR] = "floor"};
  switch (x->un) {
  case KU_NOT: call1(e, "!", x->a); return;
  case KU_NEG:
    if (fl) {
      call1(e, "-", x->a);
      return;
    }
    sb_printf(e->o, "((%s)(0%s - (%s)(", reg_type(dt), dt == DT_I64 ? "ull" : "u",
              dt == DT_I64 ? "uint64_t" : dt == DT_I32 ? "uint32_t" : "unsigned");
    ex(e, x->a);
    sb_puts(e->o, ")))");
    return;
  case KU_ABS:
    if (!fl) {
      sb_printf(e->o, "((%s)mlc_iabs(", reg_type(dt));
      ex(e, x->a);
      sb_puts(e->o, "))");
      return;
    }
    break;
  case KU_ROUND_BF16: call1(e, "mlc_round_bf16f", x->a); return; // mlc_cuda.h
  case KU_ROUND_F16: call1(e, "mlc_round_f16f", x->a); return;
  default:
    if (!fl) {
      efail(e, "%s of %s", kir_unop_name(x->un), dtype_name(dt));
      return;
    }
  }
  call1(e, arena_printf(e->p->arena, "%s%s", fnames[x->un], f32 ? "f" : ""), x->a);
}

static void fbinary(Em *e, const KExpr *x) {
  bool f32 = x->a->dtype == DT_F32;
  const KExpr *a = x->a, *b = x->b;
  static const char *const cmp[KB_COUNT] = {[KB_LT] = " < ", [KB_LE] = " <= ", [KB_GT] = " > ",
                                            [KB_GE] = " >= ", [KB_EQ] = " == ", [KB_NE] = " != "};
  switch (x->bin) {
  case KB_ADD: infix(e, "(", a, " + ", b, ")"); return;
  case KB_SUB: infix(e, "(", a, " - ", b, ")"); return;
  case KB_MUL: call2(e, f32 ? "__fmul_rn" : "__dmul_rn", a, b); return;
  case KB_DIV: infix(e, "(", a, " / ", b, ")"); return;
  case KB_MOD: call2(e, f32 ? "mlc_fmodf" : "mlc_fmodd", a, b); return;
  case KB_POW: call2(e, f32 ? "powf" : "pow", a, b); return;
  case KB_MAX: call2(e, f32 ? "mlc_maxf" : "mlc_maxd", a, b); return;
  case KB_MIN: call2(e, f32 ? "mlc_minf" : "mlc_mind", a, b); return;
  case KB_LT: case KB_LE: case KB_GT: case KB_GE: case KB_EQ: case KB_NE:
    infix(e, "(", a, cmp[x->bin], b, ")");
    return;
  default: efail(e, "%s of %s", kir_binop_name(x->bin), dtype_name(x->a->dtype));
  }
}

// Wrapping add/sub/mul through the unsigned type of the dtype's width.
static void wrapped(Em *e, const KExpr *x, const char *op) {
  DType dt = x->a->dtype;
  if (dt == DT_I64) {
    infix(e, "(", x->a, op, x->b, ")");
    return;
  }
  const char *t = reg_type(dt), *u = dt == DT_I32 ? "uint32_t" : "unsigned";
  sb_printf(e->o, "((%s)((%s)(", t, u);
  ex(e, x->a);
  sb_printf(e->o, ")%s(%s)(", op, u);
  ex(e, x->b);
  sb_puts(e->o, ")))");
}

static void ibinary(Em *e, const KExpr *x) {
  DType dt = x->a->dtype;
  const KExpr *a = x->a, *b = x->b;
  static const char *const ops[KB_COUNT] = {[KB_LT] = " < ", [KB_LE] = " <= ", [KB_GT] = " > ",
                                            [KB_GE] = " >= ", [KB_EQ] = " == ", [KB_NE] = " != ",
                                            [KB_AND] = " && ", [KB_OR] = " || "};
  switch (x->bin) {
  case KB_ADD: wrapped(e, x, " + "); return;
  case KB_SUB: wrapped(e, x, " - "); return;
  case KB_MUL: wrapped(e, x, " * "); return;
  case KB_DIV: case KB_MOD:
    if (dt == DT_I64 || dt == DT_I32) {
      call2(e, arena_printf(e->p->arena, "mlc_%s_%s", x->bin == KB_DIV ? "div" : "mod", dtype_name(dt)), a, b);
    } else {
      sb_printf(e->o, "((%s)", reg_type(dt));
      infix(e, "(", a, x->bin == KB_DIV ? " / " : " % ", b, ")");
      sb_putc(e->o, ')');
    }
    return;
  case KB_MAX: case KB_MIN:
    sb_printf(e->o, "((%s)", reg_type(dt));
    call2(e, x->bin == KB_MAX ? "mlc_imax" : "mlc_imin", a, b);
    sb_putc(e->o, ')');
    return;
  case KB_LT: case KB_LE: case KB_GT: case KB_GE: case KB_EQ: case KB_NE: case KB_AND: case KB_OR:
    infix(e, "(", a, ops[x->bin], b, ")");
    return;
  default: efail(e, "%s of %s", kir_binop_name(x->bin), dtype_name(dt));
  }
}

static void cast(Em *e, const KExpr *x) {
  DType to = x->dtype, from = x->a->dtype;
  if (to == from) {
    ex(e, x->a);
    return;
  }
  if (is16(to) && from == DT_F32) { // a float holding the 16-bit value
    call1(e, to == DT_BF16 ? "mlc_round_bf16f" : "mlc_round_f16f", x->a);
    return;
  }
  if (is16(to) || is16(from)) {
    efail(e, "a cast from %s to %s", dtype_name(from), dtype_name(to));
    return;
  }
  if (to == DT_BOOL) {
    sb_putc(e->o, '(');
    ex(e, x->a);
    sb_puts(e->o, dtype_is_float(from) ? " != 0.0)" : " != 0)");
    return;
  }
  sb_printf(e->o, "((%s)", reg_type(to));
  if (dtype_is_float(from) && !dtype_is_float(to)) call1(e, "mlc_ftoi", x->a);
  else call1(e, "", x->a);
  sb_putc(e->o, ')');
}

static void ex(Em *e, const KExpr *x) {
  StrBuf *o = e->o;
  switch (x->kind) {
  case KE_CONST: put_const(o, x); return;
  case KE_VAR: sb_printf(o, "v_%s", VEC_AT(e->k->vars, KirVar, x->var)->name); return;
  case KE_SYM: sb_printf(o, "s%d", e->symmap[x->sym]); return;
  case KE_RNGSEED: sb_puts(o, "((int64_t)seed)"); return;
  case KE_LOAD: {
    int b = param_pos(e->k, x->buf);
    bool bl = x->dtype == DT_BOOL;
    const char *open = bl ? "(" : x->dtype == DT_BF16 ? "mlc_bf16_value(" : x->dtype == DT_F16 ? "mlc_f16_value(" : "";
    sb_printf(o, "%sb%d[", open, b);
    ex(e, x->a);
    sb_puts(o, bl ? "] != 0)" : is16(x->dtype) ? "])" : "]");
    return;
  }
  case KE_UNARY: unary(e, x); return;
  case KE_BINARY:
    if (dtype_is_float(x->a->dtype)) fbinary(e, x);
    else ibinary(e, x);
    return;
  case KE_SELECT:
    sb_puts(o, "(");
    ex(e, x->a);
    infix(e, " ? ", x->b, " : ", x->c, ")");
    return;
  case KE_CAST: cast(e, x); return;
  case KE_FMA: // a * b + c rounded once, as CUDA's (and C's) fmaf / fma compute it
    sb_puts(o, x->dtype == DT_F32 ? "fmaf(" : "fma(");
    ex(e, x->a);
    infix(e, ", ", x->b, ", ", x->c, ")");
    return;
  case KE_RAND:
    sb_puts(o, "mlc_philox(");
    ex(e, x->a);
    infix(e, ", ", x->b, ", ", x->c, ")");
    return;
  }
  efail(e, "expression kind %d has no CUDA form", (int)x->kind);
}

// ---- statements -----------------------------------------------------------------------------------
static void indent(Em *e, int ind) { sb_printf(e->o, "%*s", ind, ""); }

static void stmts(Em *e, const Vec *blk, int ind);

static void var(Em *e, int v) { sb_printf(e->o, "v_%s", VEC_AT(e->k->vars, KirVar, v)->name); }

static void stmt(Em *e, const KStmt *s, int ind) {
  StrBuf *o = e->o;
  indent(e, ind);
  switch (s->kind) {
  case KS_FOR:
    if (s->map != KMAP_SERIAL) {
      efail(e, "a %s loop inside a thread (the gpu schedule maps only the top two levels)", kir_map_name(s->map));
      return;
    }
    sb_puts(o, "{\n");
    indent(e, ind + 2);
    sb_printf(o, "const int64_t n_%s = ", VEC_AT(e->k->vars, KirVar, s->var)->name);
    ex(e, s->n);
    sb_puts(o, ";\n");
    indent(e, ind + 2);
    sb_puts(o, "for ("), var(e, s->var), sb_puts(o, " = 0; "), var(e, s->var);
    sb_printf(o, " < n_%s; ", VEC_AT(e->k->vars, KirVar, s->var)->name), var(e, s->var), sb_puts(o, "++) {\n");
    stmts(e, &s->body, ind + 4);
    indent(e, ind + 2);
    sb_puts(o, "}\n");
    indent(e, ind);
    sb_puts(o, "}\n");
    return;
  case KS_LET:
  case KS_ASSIGN:
    var(e, s->var);
    sb_puts(o, " = ");
    ex(e, s->value);
    sb_puts(o, ";\n");
    return;
  case KS_STORE: {
    DType dt = kir_buf(e->p, s->buf)->dtype;
    sb_printf(o, "b%d[", param_pos(e->k, s->buf));
    ex(e, s->index);
    sb_puts(o, dt == DT_BOOL ? "] = (uint8_t)(" : dt == DT_BF16 ? "] = mlc_bf16_bits(" : dt == DT_F16 ? "] = mlc_f16_bits(" : "] = ");
    ex(e, s->value);
    sb_puts(o, dt == DT_BOOL || is16(dt) ? ");\n" : ";\n");
    return;
  }
  case KS_MMA: { // kir.h's KMma: mlc_cuda.h's fragments and mma.sync
    const KMma *m = s->mma;
    int64_t d0 = s->index->i;
    sb_printf(o, "%s(&b%d[%lld], b%d + ", m->prec == DT_BF16 ? "mlc_mma_bf16" : "mlc_mma_f16", param_pos(e->k, s->buf),
              (long long)d0, param_pos(e->k, m->a));
    ex(e, m->oa);
    sb_printf(o, ", %lldLL, %lldLL, b%d + ", (long long)m->ars, (long long)m->aks, param_pos(e->k, m->b));
    ex(e, m->ob);
    sb_printf(o, ", %lldLL, %lldLL);\n", (long long)m->bks, (long long)m->bcs);
    return;
  }
  case KS_IF:
    sb_puts(o, "if (");
    ex(e, s->cond);
    sb_puts(o, ") {\n");
    stmts(e, &s->body, ind + 2);
    indent(e, ind);
    if (s->els.len) {
      sb_puts(o, "} else {\n");
      stmts(e, &s->els, ind + 2);
      indent(e, ind);
    }
    sb_puts(o, "}\n");
    return;
  case KS_CHECK:
    if (e->label < 0) {
      efail(e, "a check outside a gpu-thread loop");
      return;
    }
    sb_puts(o, "if (!");
    ex(e, s->cond);
    sb_printf(o, ") {\n");
    indent(e, ind + 2);
    sb_printf(o, "mlc_fail(flag, %du); // ", cuda_message(e->g, s->msg) + 1);
    for (const char *c = s->msg; *c; c++) sb_putc(o, *c == '\n' ? ' ' : *c);
    sb_putc(o, '\n');
    indent(e, ind + 2);
    sb_printf(o, "goto mlc_end%d;\n", e->label);
    indent(e, ind);
    sb_puts(o, "}\n");
    e->label_used = true;
    return;
  case KS_BARRIER: efail(e, "a barrier inside a thread"); return;
  default: efail(e, "statement kind %d has no CUDA form", (int)s->kind); return;
  }
}

static void stmts(Em *e, const Vec *blk, int ind) {
  for (int i = 0; i < blk->len && !e->failed; i++) stmt(e, VEC_AT(*blk, KStmt, i), ind);
}

// A gpu-thread loop: its iterations on threads 0..n-1 of the block.
static void thread_loop(Em *e, const KStmt *s, int64_t block, int ind) {
  StrBuf *o = e->o;
  int64_t n;
  if (!kir_eval_i64(s->n, NULL, &n)) {
    efail(e, "a gpu-thread loop without a constant trip count");
    return;
  }
  indent(e, ind);
  if (n < block) sb_printf(o, "if (!mlc_dead && threadIdx.x < %lldu) {\n", (long long)n);
  else sb_puts(o, "if (!mlc_dead) {\n");
  indent(e, ind + 2), var(e, s->var), sb_puts(o, " = (int64_t)threadIdx.x;\n");
  int saved = e->label;
  e->label = e->nlabels++;
  e->label_used = false;
  stmts(e, &s->body, ind + 2);
  if (e->label_used) indent(e, ind), sb_printf(o, "mlc_end%d:;\n", e->label);
  e->label = saved;
  indent(e, ind), sb_puts(o, "}\n");
}

// The statements of a block (every thread runs them): lets of uniform
// values, barriers, gpu-thread loops, and serial loops of a uniform trip
// count around them (a tiled GEMM's K steps), so every thread meets every
// barrier.
static void block_stmts(Em *e, const Vec *blk, int64_t block, int ind) {
  StrBuf *o = e->o;
  for (int i = 0; i < blk->len && !e->failed; i++) {
    const KStmt *s = VEC_AT(*blk, KStmt, i);
    if (s->kind == KS_FOR && s->map == KMAP_GPU_THREAD) thread_loop(e, s, block, ind);
    else if (s->kind == KS_BARRIER) indent(e, ind), sb_puts(o, "MLC_BARRIER();\n");
    else if (s->kind == KS_LET) stmt(e, s, ind);
    else if (s->kind == KS_FOR && s->map == KMAP_SERIAL) {
      const char *v = VEC_AT(e->k->vars, KirVar, s->var)->name;
      indent(e, ind), sb_printf(o, "{\n"), indent(e, ind + 2), sb_printf(o, "const int64_t n_%s = ", v);
      ex(e, s->n);
      sb_puts(o, ";\n"), indent(e, ind + 2);
      sb_puts(o, "for ("), var(e, s->var), sb_puts(o, " = 0; "), var(e, s->var);
      sb_printf(o, " < n_%s; ", v), var(e, s->var), sb_puts(o, "++) {\n");
      block_stmts(e, &s->body, block, ind + 4);
      indent(e, ind + 2), sb_puts(o, "}\n"), indent(e, ind), sb_puts(o, "}\n");
    } else efail(e, "a block-level statement other than a let, a barrier, a serial loop or a gpu-thread loop");
  }
}

// ---- launches -------------------------------------------------------------------------------------
static void mark_vars_expr(const KExpr *x, bool *used) {
  if (!x) return;
  if (x->kind == KE_VAR) used[x->var] = true;
  mark_vars_expr(x->a, used), mark_vars_expr(x->b, used), mark_vars_expr(x->c, used);
}

static void mark_vars(const KStmt *s, bool *used) {
  if (s->kind == KS_FOR || s->kind == KS_LET || s->kind == KS_ASSIGN) used[s->var] = true;
  mark_vars_expr(s->n, used), mark_vars_expr(s->index, used);
  mark_vars_expr(s->value, used), mark_vars_expr(s->cond, used);
  if (s->kind == KS_MMA) mark_vars_expr(s->mma->oa, used), mark_vars_expr(s->mma->ob, used);
  for (int i = 0; i < s->body.len; i++) mark_vars(VEC_AT(s->body, KStmt, i), used);
  for (int i = 0; i < s->els.len; i++) mark_vars(VEC_AT(s->els, KStmt, i), used);
}

// The parameter list (and, into types, the emulation entry's types).
static void signature(Em *e, const bool *writes, int nsyms, StrBuf *types, int *nparams) {
  StrBuf *o = e->o;
  int n = 0;
  for (int i = 0; i < e->k->params.len; i++) {
    const KirBuf *b = kir_buf(e->p, kir_param(e->k, i));
    if (b->kind == KBUF_SHARED || b->kind == KBUF_LOCAL) continue;
    const char *c = writes[kir_param(e->k, i)] ? "" : "const ";
    sb_printf(o, "%s%s%s *MLC_RESTRICT b%d", n ? ", " : "", c, mem_type(b->dtype), i);
    sb_printf(types, "%s%s%s *", n++ ? ", " : "", c, mem_type(b->dtype));
  }
  for (int i = 0; i < nsyms; i++) {
    sb_printf(o, "%sint64_t s%d", n ? ", " : "", i);
    sb_printf(types, "%sint64_t", n++ ? ", " : "");
  }
  sb_printf(o, "%suint64_t seed, uint32_t *flag", n ? ", " : "");
  sb_printf(types, "%suint64_t, uint32_t *", n ? ", " : "");
  *nparams = n + 2;
}

enum { CUDA_MAX_PARAMS = 16 }; // MLC_ENTRY0..16 (mlc_cuda.h)

static void launch(Em *e, const KStmt *l, const char *name, int r, int nl, int nsyms) {
  const KirProgram *p = e->p;
  StrBuf *o = e->o;
  int64_t block = cuda_block_threads(l);
  int nb = p->bufs.len;
  bool *reads = arena_alloc(p->arena, (size_t)(2 * nb + 1)), *writes = reads + nb;
  kir_stmt_access(l, reads, writes);
  int line = 0, col = 0;
  if (e->k->span.file) span_linecol(e->k->span, &line, &col);
  sb_printf(o, "// %s %s", p->name, e->k->name);
  if (line) sb_printf(o, " (%s:%d)", e->k->span.file->path, line);
  if (nl > 1) sb_printf(o, ", launch %d of %d", r + 1, nl);
  sb_printf(o, ": block %lld, buffers", (long long)block);
  for (int i = 0; i < e->k->params.len; i++)
    sb_printf(o, " b%d = %s", i, kir_buf(p, kir_param(e->k, i))->name);
  sb_puts(o, "\n");
  sb_printf(o, "MLC_KERNEL MLC_LAUNCH_BOUNDS(%lld) %s(", (long long)block, name);
  StrBuf types = {0};
  int nparams;
  signature(e, writes, nsyms, &types, &nparams);
  sb_puts(o, ") {\n  const int mlc_dead = *flag != 0;\n  (void)mlc_dead;\n");
  for (int i = 0; i < e->k->params.len; i++) {
    const KirBuf *b = kir_buf(p, kir_param(e->k, i));
    int64_t n = 0;
    if (b->kind != KBUF_SHARED || (!reads[kir_param(e->k, i)] && !writes[kir_param(e->k, i)])) continue;
    kir_eval_i64(b->numel, NULL, &n);
    sb_printf(o, "  MLC_SHARED %s b%d[%lld];\n", mem_type(b->dtype), i, (long long)(n > 0 ? n : 1));
  }
  // A local buffer is a plain array of the kernel function: each thread has
  // its own (each fiber's stack under the emulation), alive across every
  // barrier of the launch.
  for (int i = 0; i < e->k->params.len; i++) {
    const KirBuf *b = kir_buf(p, kir_param(e->k, i));
    int64_t n = 0;
    if (b->kind != KBUF_LOCAL || (!reads[kir_param(e->k, i)] && !writes[kir_param(e->k, i)])) continue;
    kir_eval_i64(b->numel, NULL, &n);
    sb_printf(o, "  %s b%d[%lld];\n", mem_type(b->dtype), i, (long long)(n > 0 ? n : 1));
  }
  bool *used = arena_alloc(p->arena, (size_t)e->k->vars.len + 1);
  mark_vars(l, used);
  for (int v = 0; v < e->k->vars.len; v++) {
    if (!used[v]) continue;
    const KirVar *kv = VEC_AT(e->k->vars, KirVar, v);
    sb_printf(o, "  %s v_%s = 0;\n  (void)v_%s;\n", reg_type(kv->dtype), kv->name, kv->name);
  }
  sb_puts(o, "  "), var(e, l->var), sb_puts(o, " = (int64_t)blockIdx.x;\n");
  block_stmts(e, &l->body, block, 2);
  sb_printf(o, "}\nMLC_ENTRY%d(%s, %s)\n\n", nparams, name, types.data);
  if (nparams > CUDA_MAX_PARAMS)
    efail(e, "%d kernel parameters, more than the %d the emulation's entries take", nparams, CUDA_MAX_PARAMS);
  sb_free(&types);
}

// ---- the kernel table --------------------------------------------------------------------------------
static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static CudaFn *fn_slot(CudaGen *g, const char *key, uint64_t h) {
  for (uint64_t i = h & (uint64_t)(g->capfns - 1);; i = (i + 1) & (uint64_t)(g->capfns - 1)) {
    CudaFn *f = &g->fns[i];
    if (!f->key || (f->hash == h && !strcmp(f->key, key))) return f;
  }
}

static void fns_grow(CudaGen *g) {
  CudaFn *old = g->fns;
  int n = g->capfns;
  g->capfns = n ? 2 * n : 256;
  g->fns = calloc((size_t)g->capfns, sizeof *g->fns);
  MLC_ASSERT(g->fns);
  for (int i = 0; i < n; i++)
    if (old[i].key) *fn_slot(g, old[i].key, old[i].hash) = old[i];
  free(old);
}

// kir_kernel_key and the kinds of the buffers (a shared or local buffer is no parameter).
static char *kernel_key(const KirProgram *p, const KirKernel *k, int *syms, int *nsyms) {
  StrBuf key = {0};
  kir_kernel_key(&key, p, k, syms, nsyms);
  for (int i = 0; i < k->params.len; i++) {
    const KirBuf *b = kir_buf(p, kir_param(k, i));
    if (b->kind == KBUF_SHARED || b->kind == KBUF_LOCAL) sb_printf(&key, "%s b%d\n", b->kind == KBUF_SHARED ? "shared" : "local", i);
  }
  return key.data;
}

static void add_lines(CudaGen *g, int first, int last, const char *name, Span span) {
  if (g->nlines == g->caplines) {
    g->caplines = g->caplines ? 2 * g->caplines : 64;
    g->lines = realloc(g->lines, sizeof *g->lines * (size_t)g->caplines);
    MLC_ASSERT(g->lines);
  }
  g->lines[g->nlines++] = (CudaKernelLines){first, last, name, span};
}

static int print_kernel(CudaGen *g, const KirProgram *p, const KirKernel *k, const int *syms, int nsyms,
                        char *err, size_t errlen) {
  int *symmap = arena_alloc(p->arena, sizeof(int) * (size_t)(p->syms.len + 1));
  for (int i = 0; i < p->syms.len; i++) symmap[i] = -1;
  for (int i = 0; i < nsyms; i++) symmap[syms[i]] = i;
  Em e = {.g = g, .p = p, .k = k, .symmap = symmap, .label = -1, .err = err, .errlen = errlen};
  int nl = 0;
  for (int i = 0; i < k->body.len; i++) {
    const KStmt *s = VEC_AT(k->body, KStmt, i);
    if (s->kind == KS_FOR && s->map == KMAP_GPU_BLOCK) nl++;
    else if (s->kind != KS_BARRIER)
      return err_fail(err, errlen, "kernel %s of %s: a top-level statement that is not a gpu-block loop "
                  "(the program is not scheduled for the gpu)", k->name, p->name);
    if (s->kind == KS_FOR && s->captures.len)
      return err_fail(err, errlen, "kernel %s of %s: a launch captures kernel variables", k->name, p->name);
  }
  int first = g->names.len;
  for (int i = 0, r = 0; i < k->body.len; i++) {
    const KStmt *s = VEC_AT(k->body, KStmt, i);
    if (s->kind != KS_FOR) continue;
    const char *name = cuda_ident(g->a, "", nl > 1 ? arena_printf(g->a, "%s_%s_%d", p->name, k->name, r + 1)
                                                    : arena_printf(g->a, "%s_%s", p->name, k->name));
    StrBuf text = {0};
    e.o = &text;
    launch(&e, s, name, r, nl, nsyms);
    if (e.failed) {
      sb_free(&text);
      return -1;
    }
    int line0 = g->dev_line + 1;
    dev_puts(g, text.data);
    add_lines(g, line0, g->dev_line, name, k->span);
    vec_push(g->a, &g->names, (void *)name);
    sb_free(&text);
    r++;
  }
  return first;
}

int cuda_kernel(CudaGen *g, const KirProgram *p, const KirKernel *k, int *n, char *err, size_t errlen) {
  int *syms = arena_alloc(p->arena, sizeof(int) * (size_t)(p->syms.len + 1)), nsyms = 0;
  char *key = kernel_key(p, k, syms, &nsyms);
  if (2 * (g->nfns + 1) > g->capfns) fns_grow(g);
  uint64_t h = fnv1a(key);
  CudaFn *f = fn_slot(g, key, h);
  if (f->key) {
    free(key);
    g->reused++;
    *n = f->nlaunch;
    return f->first;
  }
  int names0 = g->names.len, first = print_kernel(g, p, k, syms, nsyms, err, errlen);
  if (first < 0) {
    free(key);
    return -1;
  }
  *f = (CudaFn){.key = key, .hash = h, .first = first, .nlaunch = g->names.len - names0};
  g->nfns++;
  *n = f->nlaunch;
  return first;
}
