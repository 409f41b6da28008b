// kir_verify.c — the kernel IR's verifier (kir_verify, kir.h): every
// producer (lowering, the schedule, the memory plan, the parser, later
// fusion) is checked by it before a backend prints the program, and the
// tests run it after every pass.
//
// Three layers, each only where the program has reached its stage:
//   every program  scopes, buffer parameters, dtypes (per kernel)
//   scheduled      maps the target prints and may nest that way, grains,
//                  captures equal to what the bodies read, no outer
//                  variable assigned in a parallel loop, a barrier wherever
//                  kir.h's rule asks for one, and one between a gpu-block's
//                  thread loops that share a shared buffer (one writing)
//   planned        every temporary at an aligned offset inside scratch and
//                  apart from the temporaries live with it (a kernel range:
//                  the memory plan reuses the bytes of dead ones), evaluated
//                  at sample sizes (sizes are polynomials over syms); the
//                  first kernel that takes a temporary writes it
// Input: a KirProgram. Output: true, or false with "kir: ..." errors in d.
#include "kir_internal.h"
#include "target.h"

#include <string.h>

// ---- scopes, parameters, dtypes --------------------------------------------------------------------
// Walks each kernel with the set of variables in scope; the first problem in
// a kernel is reported (later ones are usually its echoes).
typedef struct Verify {
  const KirProgram *p;
  const KirTarget *t; // the program's target (NULL: not scheduled)
  const KirKernel *k; // NULL for program-level expressions (sym defs, sizes)
  bool *live;         // per kernel var: in scope
  bool *outer;        // inside a parallel loop: the vars in scope at its start
  KLoopMap in_map;    // innermost enclosing non-serial map (KMAP_SERIAL: none)
  bool in_chunk, in_block, in_thread; // some enclosing loop is chunk / gpu-block / gpu-thread
  int depth;          // enclosing loops and ifs (0: a top-level statement)
  const KStmt *thread; // the innermost enclosing gpu-thread loop (NULL: none) ...
  int thread_depth;   // ... and the depth of its body's statements
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

static bool is_compare(KBinOp op) { return op >= KB_LT && op <= KB_NE; }

static bool has_param(const KirKernel *k, int b) {
  for (int i = 0; i < k->params.len; i++)
    if (kir_param(k, i) == b) return true;
  return false;
}

static bool v_expr(Verify *v, const KExpr *e);

// A shared buffer is per block: used only inside a gpu-block loop.
static bool v_shared_use(Verify *v, int b) {
  if (kir_buf(v->p, b)->kind != KBUF_SHARED || v->in_block) return true;
  return vfail(v, "shared buffer %s used outside a gpu-block loop", kir_buf(v->p, b)->name);
}

// A local buffer is per thread, in registers: used only inside a gpu-thread
// loop, at a constant index inside it.
static bool v_local_use(Verify *v, int b, const KExpr *index) {
  const KirBuf *kb = kir_buf(v->p, b);
  int64_t i, n;
  if (kb->kind != KBUF_LOCAL) return true;
  if (!v->in_thread) return vfail(v, "local buffer %s used outside a gpu-thread loop", kb->name);
  if (!index || !kir_eval_i64(index, NULL, &i)) return vfail(v, "local buffer %s indexed by a non-constant", kb->name);
  if (!kir_eval_i64(kb->numel, NULL, &n) || i < 0 || i >= n)
    return vfail(v, "local buffer %s: index %lld outside its %lld elements", kb->name, (long long)i, (long long)n);
  return true;
}

static bool v_idx(Verify *v, const KExpr *e, const char *what) {
  if (!v_expr(v, e)) return false;
  return e->dtype == DT_I64 || vfail(v, "%s has dtype %s, not i64", what, dtype_name(e->dtype));
}

static bool v_unary(Verify *v, const KExpr *e) {
  DType t = e->a->dtype;
  if (e->un == KU_NOT) return t == DT_BOOL || vfail(v, "not of %s", dtype_name(t));
  if (e->dtype != t)
    return vfail(v, "%s: result %s, operand %s", kir_unop_name(e->un), dtype_name(e->dtype), dtype_name(t));
  if (e->un != KU_NEG && e->un != KU_ABS && !dtype_is_float(t))
    return vfail(v, "%s of non-float %s", kir_unop_name(e->un), dtype_name(t));
  if ((e->un == KU_ROUND_BF16 || e->un == KU_ROUND_F16) && t != DT_F32)
    return vfail(v, "%s of %s, not f32", kir_unop_name(e->un), dtype_name(t));
  return true;
}

static bool v_binary(Verify *v, const KExpr *e) {
  DType t = e->a->dtype;
  const char *n = kir_binop_name(e->bin);
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
    if (!v_shared_use(v, e->buf) || !v_local_use(v, e->buf, e->a)) return false;
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
  case KE_FMA:
    if (!v_expr(v, e->a) || !v_expr(v, e->b) || !v_expr(v, e->c)) return false;
    if (!dtype_is_float(e->dtype)) return vfail(v, "fma of %s", dtype_name(e->dtype));
    return (e->a->dtype == e->dtype && e->b->dtype == e->dtype && e->c->dtype == e->dtype) ||
           vfail(v, "fma operands differ in dtype");
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

// ---- maps ----------------------------------------------------------------------------------------------
static bool has_loop(const Vec *blk) {
  for (int i = 0; i < blk->len; i++) {
    const KStmt *s = VEC_AT(*blk, KStmt, i);
    if (s->kind == KS_FOR || has_loop(&s->body) || has_loop(&s->els)) return true;
  }
  return false;
}

static bool v_captures(Verify *v, const KStmt *s, const char *var) {
  bool wants = s->map == KMAP_CHUNK || s->map == KMAP_GPU_BLOCK;
  if (!wants) return s->captures.len == 0 || vfail(v, "loop %s (%s) lists captures", var, kir_map_name(s->map));
  Vec need = {0};
  kir_loop_captures(v->p, v->k, s, &need);
  bool same = need.len == s->captures.len;
  for (int i = 0; same && i < need.len; i++) same = need.data[i] == s->captures.data[i];
  if (same) return true;
  StrBuf b = {0};
  for (int i = 0; i < need.len; i++)
    sb_printf(&b, "%s%s", i ? ", " : "", VEC_AT(v->k->vars, KirVar, (int)(intptr_t)need.data[i])->name);
  vfail(v, "loop %s captures %d variable(s), its body reads (%s)", var, s->captures.len, b.data ? b.data : "");
  sb_free(&b);
  return false;
}

// The loop's map: one the target prints, on an independent loop, nested as
// the map allows, with a grain where the map needs one.
static bool v_map(Verify *v, const KStmt *s) {
  const char *var = VEC_AT(v->k->vars, KirVar, s->var)->name, *m = kir_map_name(s->map);
  int64_t c;
  if (s->map == KMAP_SERIAL) return (!s->grain && !s->captures.len) || vfail(v, "serial loop %s has a grain", var);
  if (!v->t) return vfail(v, "loop %s is mapped %s in a program with no target", var, m);
  if (!kir_target_has(v->t, s->map)) return vfail(v, "loop %s: target %s has no %s loops", var, v->t->name, m);
  if (!s->parallel) return vfail(v, "loop %s is mapped %s but its iterations are not independent", var, m);
  if (v->in_map == KMAP_VECTOR) return vfail(v, "loop %s (%s) inside a vector loop", var, m);
  switch (s->map) {
  case KMAP_CHUNK:
    if (v->in_chunk || v->in_block) return vfail(v, "chunk loop %s inside another mapped loop", var);
    if (!s->grain || !v_idx(v, s->grain, "grain")) return vfail(v, "chunk loop %s has no grain", var);
    break;
  case KMAP_VECTOR:
    if (!s->grain || !kir_eval_i64(s->grain, NULL, &c) || c < 1)
      return vfail(v, "vector loop %s needs a constant lane count", var);
    if (has_loop(&s->body)) return vfail(v, "vector loop %s has a loop inside", var);
    break;
  case KMAP_GPU_BLOCK:
    if (v->in_map != KMAP_SERIAL || v->in_block) return vfail(v, "gpu-block loop %s inside a mapped loop", var);
    break;
  case KMAP_GPU_THREAD:
    if (!v->in_block || v->in_map != KMAP_GPU_BLOCK) return vfail(v, "gpu-thread loop %s not directly in a gpu-block loop", var);
    if (!kir_eval_i64(s->n, NULL, &c) || c > v->t->max_threads)
      return vfail(v, "gpu-thread loop %s: trip count not a constant up to %d", var, v->t->max_threads);
    break;
  default: break;
  }
  if (s->map != KMAP_CHUNK && s->map != KMAP_VECTOR && s->grain) return vfail(v, "%s loop %s has a grain", m, var);
  return v_captures(v, s, var);
}

// ---- library calls ---------------------------------------------------------------------------------
// Whether every size of the program that depends on syms is at least 1 at
// these syms' values. A symbolic plane that a convolution shrinks, [B, C, H,
// W] -> [B, K, H - 4, W - 4], has no tensor at a sample H = 1: the calls'
// geometries and the memory plan are checked at the samples where all
// sizes exist.
static bool sizes_exist(const KirProgram *p, const int64_t *syms) {
  for (int b = 0; b < p->bufs.len; b++) {
    const KirBuf *kb = kir_buf(p, b);
    for (int d = 0; d < kb->rank; d++) {
      int64_t n;
      if (kb->dims[d]->kind != KE_CONST && kir_eval_i64(kb->dims[d], syms, &n) && n < 1) return false;
    }
  }
  return true;
}

// The operands' element ranges at the sample sizes, when the call's
// expressions depend on syms only (inside a loop they may not: kir_run
// checks those at run time).
static bool v_call_bounds(Verify *v, const KCall *c, const KirCallSpec *sp) {
  const KirProgram *p = v->p;
  int64_t *args = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->syms.len + 1));
  int64_t *syms = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->syms.len + 1));
  static const int64_t samples[] = {1, 7, 64};
  for (size_t k = 0; k < sizeof samples / sizeof *samples; k++) {
    for (int i = 0; i < p->syms.len; i++) args[i] = samples[k];
    if (!kir_bind_syms(p, args, syms)) return true;
    if (!sizes_exist(p, syms)) continue;
    int64_t vals[KIR_CALL_MAX_SLOTS] = {0}, lo[KIR_CALL_MAX_SLOTS], hi[KIR_CALL_MAX_SLOTS];
    for (int i = 0; i < sp->nslots; i++)
      if (c->slot[i] && dtype_is_int(c->slot[i]->dtype) && !kir_eval_i64(c->slot[i], syms, &vals[i])) return true;
    if (!kir_call_extents(c, vals, lo, hi)) return vfail(v, "call %s: bad sizes at sample %lld", sp->name, (long long)samples[k]);
    for (int i = 0; i < sp->nslots; i++) {
      int64_t n;
      if (c->buf[i] < 0 || lo[i] == hi[i] || !kir_eval_i64(kir_buf(p, c->buf[i])->numel, syms, &n)) continue;
      if (lo[i] < 0 || hi[i] > n)
        return vfail(v, "call %s: elements [%lld, %lld) of %s (%lld elements) at sample %lld", sp->name,
                     (long long)lo[i], (long long)hi[i], kir_buf(p, c->buf[i])->name, (long long)n,
                     (long long)samples[k]);
    }
  }
  return true;
}

static bool v_call_operand(Verify *v, const KCall *c, const KirCallParam *pa, const char *fn) {
  int b = c->buf[pa->slot];
  if (b < 0) return pa->kind == KCA_OPT || pa->kind == KCA_OPTW || vfail(v, "call %s: %s needs a buffer", fn, pa->name);
  if (b >= v->p->bufs.len || !has_param(v->k, b)) return vfail(v, "call %s: %s is not a parameter", fn, pa->name);
  const KirBuf *kb = kir_buf(v->p, b);
  DType want = strcmp(pa->name, "pick") ? DT_F32 : DT_U8; // kir.h: the picks are bytes
  if (kb->dtype != want)
    return vfail(v, "call %s: %s is %s, not %s", fn, pa->name, dtype_name(kb->dtype), dtype_name(want));
  if ((pa->kind == KCA_WRITE || pa->kind == KCA_UPDATE || pa->kind == KCA_OPTW) && kb->kind == KBUF_INPUT)
    return vfail(v, "call %s: writes input %s", fn, kb->name);
  return v_idx(v, c->slot[pa->slot], "call operand offset");
}

static bool v_call(Verify *v, const KCall *c) {
  if ((int)c->fn < 0 || c->fn >= KCALL_COUNT) return vfail(v, "bad library function %d", (int)c->fn);
  KirCallSpec sp;
  kir_call_spec(c->fn, &sp);
  if (v->t && !v->t->library) return vfail(v, "call %s: target %s has no kernel library", sp.name, v->t->name);
  int nflags = 0;
  const char *const *names = NULL;
  for (int i = 0; i < sp.nparams; i++) {
    const KirCallParam *pa = &sp.param[i];
    switch (pa->kind) {
    case KCA_I64: case KCA_GEOM:
      for (int j = 0; j < pa->nslots; j++)
        if (!v_idx(v, c->slot[pa->slot + j], pa->name)) return false;
      break;
    case KCA_F32:
      if (!v_expr(v, c->slot[pa->slot])) return false;
      if (c->slot[pa->slot]->dtype != DT_F32) return vfail(v, "call %s: %s is not f32", sp.name, pa->name);
      break;
    case KCA_GFLAGS: case KCA_CFLAGS: names = kir_call_flag_names(pa->kind, &nflags); break;
    default:
      if (!v_call_operand(v, c, pa, sp.name)) return false;
    }
  }
  bool unknown = c->flags >> nflags;
  for (int f = 0; f < nflags; f++) unknown |= (c->flags >> f & 1) && !names[f][0]; // a gap in the names
  if (unknown) return vfail(v, "call %s: unknown flag bits 0x%x", sp.name, c->flags);
  if ((c->flags & KIR_GEMM_BF16) && (c->flags & KIR_GEMM_F16))
    return vfail(v, "call %s: bf16 and f16 exclude each other", sp.name);
  if (c->fn == KCALL_SGEMM || c->fn == KCALL_SGEMM_BATCHED) {
    bool bias = c->flags & (KIR_GEMM_BIAS_COL | KIR_GEMM_BIAS_ROW), aux = c->flags & (KIR_GEMM_RESIDUAL | KIR_GEMM_RELU_MASK);
    if ((c->flags & KIR_GEMM_RESIDUAL) && (c->flags & KIR_GEMM_RELU_MASK))
      return vfail(v, "call %s: residual and relu_mask share aux", sp.name);
    if (bias != (c->buf[kir_call_param(&sp, "bias")->slot] >= 0) || aux != (c->buf[kir_call_param(&sp, "aux")->slot] >= 0))
      return vfail(v, "call %s: bias/aux operands do not match the flags", sp.name);
  }
  return v_call_bounds(v, c, &sp);
}

// An mma operand: a shared buffer of the product's dtype, an i64 offset,
// strides >= 0; the elements it reads inside the buffer where the offset
// is a constant (else kir_run checks each use).
static bool v_mma_operand(Verify *v, int b, const KExpr *off, int64_t s1, int64_t n1, int64_t s2, int64_t n2,
                          DType prec, const char *what) {
  if (b < 0 || b >= v->p->bufs.len || !has_param(v->k, b)) return vfail(v, "mma: %s is not a parameter", what);
  const KirBuf *kb = kir_buf(v->p, b);
  if (kb->kind != KBUF_SHARED || kb->dtype != prec)
    return vfail(v, "mma: %s (%s) is not a shared %s buffer", what, kb->name, dtype_name(prec));
  if (!v_idx(v, off, what)) return false;
  if (s1 < 0 || s2 < 0) return vfail(v, "mma: %s has a negative stride", what);
  int64_t o, n;
  if (kir_eval_i64(off, NULL, &o) && kir_eval_i64(kb->numel, NULL, &n) && (o < 0 || o + s1 * (n1 - 1) + s2 * (n2 - 1) >= n))
    return vfail(v, "mma: %s reads past %s's %lld elements", what, kb->name, (long long)n);
  return true;
}

// kir.h's KMma: every lane of a warp runs it (directly in a gpu-thread loop
// of a multiple of 32 iterations, under no branch or inner loop), D is 4
// f32 elements of a local buffer at a constant index.
static bool v_mma(Verify *v, const KStmt *s) {
  const KMma *m = s->mma;
  int64_t c, d0, n;
  if (!v->t || v->t->kind != KT_GPU) return vfail(v, "mma in a program not scheduled for a gpu target");
  if (m->prec != DT_BF16 && m->prec != DT_F16) return vfail(v, "mma of %s (bf16 or f16)", dtype_name(m->prec));
  if (!v->thread || v->thread_depth != v->depth)
    return vfail(v, "mma not directly in a gpu-thread loop (every lane of a warp runs it)");
  if (!kir_eval_i64(v->thread->n, NULL, &c) || c % 32)
    return vfail(v, "mma in a gpu-thread loop whose trip count is not a multiple of 32");
  if (s->buf < 0 || s->buf >= v->p->bufs.len || !has_param(v->k, s->buf) || kir_buf(v->p, s->buf)->kind != KBUF_LOCAL ||
      kir_buf(v->p, s->buf)->dtype != DT_F32)
    return vfail(v, "mma: D is not an f32 local buffer");
  if (!kir_eval_i64(s->index, NULL, &d0) || !kir_eval_i64(kir_buf(v->p, s->buf)->numel, NULL, &n) || d0 < 0 || d0 + 4 > n)
    return vfail(v, "mma: D's 4 elements are not inside %s", kir_buf(v->p, s->buf)->name);
  return v_mma_operand(v, m->a, m->oa, m->ars, 16, m->aks, 16, m->prec, "A") &&
         v_mma_operand(v, m->b, m->ob, m->bks, 16, m->bcs, 8, m->prec, "B");
}

static bool v_stmt(Verify *v, const KStmt *s) {
  switch (s->kind) {
  case KS_FOR: {
    if (!v_var(v, s->var, true, false) || !v_idx(v, s->n, "trip count")) return false;
    if (VEC_AT(v->k->vars, KirVar, s->var)->dtype != DT_I64) return vfail(v, "loop variable not i64");
    if (!v_map(v, s)) return false;
    Verify saved = *v;
    if (s->parallel) {
      v->outer = arena_alloc(v->p->arena, sizeof(bool) * (size_t)(v->k->vars.len + 1));
      memcpy(v->outer, v->live, sizeof(bool) * (size_t)v->k->vars.len);
    }
    if (s->map != KMAP_SERIAL) v->in_map = s->map;
    v->in_chunk |= s->map == KMAP_CHUNK, v->in_block |= s->map == KMAP_GPU_BLOCK;
    v->in_thread |= s->map == KMAP_GPU_THREAD;
    v->live[s->var] = true;
    v->depth++;
    if (s->map == KMAP_GPU_THREAD) v->thread = s, v->thread_depth = v->depth;
    bool ok = v_block(v, &s->body);
    v->live[s->var] = false;
    v->outer = saved.outer, v->in_map = saved.in_map, v->in_chunk = saved.in_chunk;
    v->in_block = saved.in_block, v->in_thread = saved.in_thread, v->depth = saved.depth;
    v->thread = saved.thread, v->thread_depth = saved.thread_depth;
    return ok;
  }
  case KS_CALL: return v_call(v, s->call);
  case KS_MMA: return v_mma(v, s);
  case KS_BARRIER:
    if (v->depth == 0 || v->in_map == KMAP_GPU_BLOCK) return true;
    return vfail(v, "barrier inside a loop or branch (only between top-level statements or in a gpu-block)");
  case KS_LET: case KS_ASSIGN:
    if (!v_var(v, s->var, false, s->kind == KS_ASSIGN) || !v_expr(v, s->value)) return false;
    if (s->kind == KS_ASSIGN && v->outer && v->outer[s->var])
      return vfail(v, "%s, declared outside a parallel loop, is assigned inside it",
                   VEC_AT(v->k->vars, KirVar, s->var)->name);
    if (s->value->dtype != VEC_AT(v->k->vars, KirVar, s->var)->dtype)
      return vfail(v, "%s: value is %s", VEC_AT(v->k->vars, KirVar, s->var)->name, dtype_name(s->value->dtype));
    v->live[s->var] = true;
    return true;
  case KS_STORE:
    if (s->buf < 0 || s->buf >= v->p->bufs.len || !has_param(v->k, s->buf))
      return vfail(v, "store to buffer #%d, not a parameter", s->buf);
    if (kir_buf(v->p, s->buf)->kind == KBUF_INPUT) return vfail(v, "store to input %s", kir_buf(v->p, s->buf)->name);
    if (!v_shared_use(v, s->buf) || !v_local_use(v, s->buf, s->index)) return false;
    if (!v_idx(v, s->index, "store index") || !v_expr(v, s->value)) return false;
    return s->value->dtype == kir_buf(v->p, s->buf)->dtype ||
           vfail(v, "store of %s into %s buffer %s", dtype_name(s->value->dtype),
                 dtype_name(kir_buf(v->p, s->buf)->dtype), kir_buf(v->p, s->buf)->name);
  case KS_IF: case KS_CHECK:
    if (!v_expr(v, s->cond)) return false;
    if (s->cond->dtype != DT_BOOL) return vfail(v, "condition is %s", dtype_name(s->cond->dtype));
    if (s->kind == KS_CHECK) return true;
    v->depth++;
    bool ok = v_block(v, &s->body) && v_block(v, &s->els);
    v->depth--;
    return ok;
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
  for (int i = 0; i < p->bufs.len; i++) {
    const KirBuf *b = kir_buf(p, i);
    bool ok = v_idx(v, b->numel, "size");
    for (int d = 0; ok && d < b->rank; d++) ok = v_idx(v, b->dims[d], "dim");
    int64_t n;
    if (ok && b->kind == KBUF_SHARED && !kir_eval_i64(b->numel, NULL, &n))
      ok = vfail(v, "a shared buffer has a constant size");
    if (ok && b->kind == KBUF_SHARED && (!v->t || v->t->kind != KT_GPU))
      ok = vfail(v, "a shared buffer in a program not scheduled for a gpu target");
    if (ok && b->kind == KBUF_LOCAL && (!kir_eval_i64(b->numel, NULL, &n) || n < 1 || n > KIR_LOCAL_MAX))
      ok = vfail(v, "a local buffer has a constant size of 1 to %d elements", KIR_LOCAL_MAX);
    if (ok && b->kind == KBUF_LOCAL && (!v->t || v->t->kind != KT_GPU))
      ok = vfail(v, "a local buffer in a program not scheduled for a gpu target");
    if (!ok) {
      diag_error(d, (Span){0}, "kir: program %s: buf %s: %s", p->name, b->name, v->msg);
      return false;
    }
  }
  return true;
}

// ---- barriers ------------------------------------------------------------------------------------------
// kir.h's rule over a kernel's top-level statements, segment by segment
// (the statements between two barriers).
static bool v_barriers(Verify *v) {
  const Vec *top = &v->k->body;
  for (int j = 0, first = 0; j < top->len; j++) {
    const KStmt *s = VEC_AT(*top, KStmt, j);
    if (s->kind == KS_BARRIER) {
      first = j + 1;
      continue;
    }
    for (int i = first; i < j; i++) {
      int b = kir_barrier_conflict(v->p, VEC_AT(*top, KStmt, i), s);
      if (b >= 0)
        return vfail(v, "top-level statements %d and %d both touch %s (one writes it) with no barrier between", i, j,
                     kir_buf(v->p, b)->name);
    }
  }
  return true;
}

// ---- memory plan --------------------------------------------------------------------------------------
// Lifetimes are kernel ranges [first, last] of the kernels that take the
// buffer; sizes and offsets are evaluated with every argument-bound sym at
// each sample value (and once with distinct values).
typedef struct Placed {
  int64_t off, bytes;
  int first, last;
} Placed;

static void lifetimes(const KirProgram *p, Placed *pl) {
  for (int b = 0; b < p->bufs.len; b++) pl[b].first = pl[b].last = -1;
  for (int i = 0; i < p->kernels.len; i++) {
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    for (int j = 0; j < k->params.len; j++) {
      Placed *x = &pl[kir_param(k, j)];
      if (x->first < 0) x->first = i;
      x->last = i;
    }
  }
}

// A temporary's bytes hold its value only from the first kernel that takes
// it (others live before may have used them): that kernel writes it.
static bool v_first_writes(Verify *v, const Placed *pl) {
  const KirProgram *p = v->p;
  bool *reads = arena_alloc(p->arena, (size_t)p->bufs.len + 1), *writes = arena_alloc(p->arena, (size_t)p->bufs.len + 1);
  for (int b = 0; b < p->bufs.len; b++) {
    if (kir_buf(p, b)->kind != KBUF_TEMP || pl[b].first < 0) continue;
    const KirKernel *k = VEC_AT(p->kernels, KirKernel, pl[b].first);
    memset(writes, 0, (size_t)p->bufs.len);
    for (int i = 0; i < k->body.len; i++) kir_stmt_access(VEC_AT(k->body, KStmt, i), reads, writes);
    if (!writes[b]) return vfail(v, "%s is first taken by kernel %s, which does not write it", kir_buf(p, b)->name, k->name);
  }
  return true;
}

// "B = 7, T = 7": the argument-bound syms of a sample.
static const char *sample_text(const KirProgram *p, const int64_t *args) {
  StrBuf b = {0};
  for (int i = 0; i < p->syms.len; i++)
    if (VEC_AT(p->syms, KirSym, i)->arg >= 0)
      sb_printf(&b, "%s%s = %lld", b.len ? ", " : "", VEC_AT(p->syms, KirSym, i)->name, (long long)args[i]);
  const char *s = arena_strdup(p->arena, b.data ? b.data : "no syms");
  sb_free(&b);
  return s;
}

static bool v_sample(Verify *v, Placed *pl, const int64_t *args) {
  const KirProgram *p = v->p;
  int64_t *syms = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->syms.len + 1)), scratch, n;
  if (!kir_bind_syms(p, args, syms) || !kir_eval_i64(p->scratch, syms, &scratch) || !sizes_exist(p, syms))
    return true; // no such sizes (two negative dims make a positive numel)
  for (int b = 0; b < p->bufs.len; b++) {
    const KirBuf *kb = kir_buf(p, b);
    if (kb->kind != KBUF_TEMP) continue;
    if (!kir_eval_i64(kb->numel, syms, &n) || n < 0) return true;
    if (!kir_eval_i64(kb->offset, syms, &pl[b].off)) return vfail(v, "offset of %s does not evaluate", kb->name);
    pl[b].bytes = pl[b].first < 0 ? 0 : n * dtype_size(kb->dtype); // no kernel takes it: no bytes (memplan.c)
    if (pl[b].off < 0 || pl[b].off % 64 || pl[b].off + pl[b].bytes > scratch)
      return vfail(v, "%s at %lld (%lld bytes) is not a 64-byte aligned place inside %lld bytes of scratch (%s)",
                   kb->name, (long long)pl[b].off, (long long)pl[b].bytes, (long long)scratch, sample_text(p, args));
  }
  for (int a = 0; a < p->bufs.len; a++)
    for (int b = a + 1; b < p->bufs.len; b++) {
      const Placed *x = &pl[a], *y = &pl[b];
      if (kir_buf(p, a)->kind != KBUF_TEMP || kir_buf(p, b)->kind != KBUF_TEMP || x->first < 0 || y->first < 0) continue;
      bool live = x->first <= y->last && y->first <= x->last;
      bool apart = x->off + x->bytes <= y->off || y->off + y->bytes <= x->off || !x->bytes || !y->bytes;
      if (live && !apart)
        return vfail(v, "%s [%lld, %lld) and %s [%lld, %lld) are live together but overlap (%s)", kir_buf(p, a)->name,
                     (long long)x->off, (long long)(x->off + x->bytes), kir_buf(p, b)->name, (long long)y->off,
                     (long long)(y->off + y->bytes), sample_text(p, args));
    }
  return true;
}

static bool v_plan(Verify *v) {
  const KirProgram *p = v->p;
  if (!v_idx(v, p->scratch, "scratch size")) return false;
  for (int b = 0; b < p->bufs.len; b++) {
    const KirBuf *kb = kir_buf(p, b);
    if ((kb->kind == KBUF_TEMP) != (kb->offset != NULL))
      return vfail(v, "%s %s an offset", kb->name, kb->offset ? "is not a temporary but has" : "is a temporary without");
    if (kb->offset && !v_idx(v, kb->offset, "offset")) return false;
  }
  Placed *pl = arena_alloc(p->arena, sizeof(Placed) * (size_t)(p->bufs.len + 1));
  lifetimes(p, pl);
  if (!v_first_writes(v, pl)) return false;
  int64_t *args = arena_alloc(p->arena, sizeof(int64_t) * (size_t)(p->syms.len + 1));
  static const int64_t samples[] = {1, 7, 64, 1000, 0};
  for (size_t k = 0; k < sizeof samples / sizeof *samples; k++) {
    for (int i = 0; i < p->syms.len; i++) args[i] = samples[k] ? samples[k] : 2 + 3 * i;
    if (!v_sample(v, pl, args)) return false;
  }
  return true;
}

// ---- programs and kernels -----------------------------------------------------------------------------
static bool v_op(Verify *v) {
  const KirOp *op = v->k->op;
  if (!op) return true;
  KirOpSpec sp;
  kir_op_spec(op->kind, &sp);
  for (int i = 0; i < sp.nbufs; i++) {
    if (op->buf[i] < -1 || op->buf[i] >= v->p->bufs.len || (op->buf[i] >= 0 && !has_param(v->k, op->buf[i])))
      return vfail(v, "op %s: %s is not a parameter", kir_op_name(op->kind), sp.roles[i]);
    if (op->rank[i] < 0 || op->rank[i] > KIR_OP_MAX_RANK) return vfail(v, "op %s: %s has rank %d", kir_op_name(op->kind), sp.roles[i], op->rank[i]);
    for (int d = 0; d < op->rank[i]; d++)
      if (!v_idx(v, op->dims[i][d], "op dim") || (op->strides[i][0] && !v_idx(v, op->strides[i][d], "op stride")))
        return false;
  }
  // A matmul (or pool gradient) epilogue reads its fourth operand while it
  // writes y (kir.h).
  bool epi = op->kind == KOP_MATMUL_BIAS || op->kind == KOP_MATMUL_RESIDUAL || op->kind == KOP_MATMUL_RELU_MASK ||
             op->kind == KOP_MAX_POOL2D_GRAD_RELU_MASK;
  if (epi && op->buf[3] == op->buf[2])
    return vfail(v, "op %s: %s is y's buffer", kir_op_name(op->kind), sp.roles[3]);
  return true;
}

// ---- shared memory inside a block ----------------------------------------------------------------
// A gpu-block's threads run its thread loops in parallel: a shared buffer
// written by one thread loop and touched by a later one (or the reverse)
// is a race on a GPU unless a barrier stands between them at block level,
// whatever order the emulation's fibers happen to run them in. The same
// holds across iterations of a serial block-level loop: what follows its
// body's last barrier against what precedes its first (a body without a
// barrier against itself). A statement holding barriers is checked inside
// and ends the run of statements before it.
static bool holds_barrier(const KStmt *s) {
  if (s->kind == KS_BARRIER) return true;
  for (int i = 0; i < s->body.len; i++)
    if (holds_barrier(VEC_AT(s->body, KStmt, i))) return true;
  for (int i = 0; i < s->els.len; i++)
    if (holds_barrier(VEC_AT(s->els, KStmt, i))) return true;
  return false;
}

static bool holds_threads(const KStmt *s) {
  if (s->kind == KS_FOR && s->map == KMAP_GPU_THREAD) return true;
  for (int i = 0; i < s->body.len; i++)
    if (holds_threads(VEC_AT(s->body, KStmt, i))) return true;
  for (int i = 0; i < s->els.len; i++)
    if (holds_threads(VEC_AT(s->els, KStmt, i))) return true;
  return false;
}

// The shared buffer a and b both touch, one writing, when either runs on
// threads (-1: none).
static int shared_conflict(Verify *v, const KStmt *a, const KStmt *b) {
  if (!holds_threads(a) && !holds_threads(b)) return -1;
  int nb = v->p->bufs.len;
  bool *ra = arena_alloc(v->p->arena, (size_t)(4 * nb + 1)), *wa = ra + nb, *rb = wa + nb, *wb = rb + nb;
  kir_stmt_access(a, ra, wa);
  kir_stmt_access(b, rb, wb);
  for (int i = 0; i < nb; i++)
    if (kir_buf(v->p, i)->kind == KBUF_SHARED && ((wa[i] && (rb[i] || wb[i])) || (ra[i] && wb[i]))) return i;
  return -1;
}

static bool v_block_seq(Verify *v, const Vec *blk);

static bool v_block_stmt(Verify *v, const KStmt *s) {
  if (s->kind == KS_FOR && s->map != KMAP_SERIAL) return true; // a thread loop: its body is one thread's
  if (!v_block_seq(v, &s->body) || !v_block_seq(v, &s->els)) return false;
  if (s->kind != KS_FOR) return true;
  const Vec *b = &s->body;
  int first = -1, last = -1;
  for (int i = 0; i < b->len; i++)
    if (holds_barrier(VEC_AT(*b, KStmt, i))) last = i, first = first < 0 ? i : first;
  if (first < 0) {
    int c = shared_conflict(v, s, s);
    return c < 0 || vfail(v, "shared buffer %s: a serial block-level loop's threads touch it in one iteration "
                          "and the next with no barrier between", kir_buf(v->p, c)->name);
  }
  for (int i = last + 1; i < b->len; i++)
    for (int j = 0; j < first; j++) {
      int c = shared_conflict(v, VEC_AT(*b, KStmt, i), VEC_AT(*b, KStmt, j));
      if (c >= 0)
        return vfail(v, "shared buffer %s: touched after a serial block-level loop's last barrier and before "
                     "its first (the next iteration) with no barrier between", kir_buf(v->p, c)->name);
    }
  return true;
}

// blk: statements at block level (a gpu-block's body, or a serial loop's
// or an if's inside it).
static bool v_block_seq(Verify *v, const Vec *blk) {
  for (int j = 0, first = 0; j < blk->len; j++) {
    const KStmt *s = VEC_AT(*blk, KStmt, j);
    if (!v_block_stmt(v, s)) return false;
    if (holds_barrier(s)) {
      first = j + 1;
      continue;
    }
    for (int i = first; i < j; i++) {
      int c = shared_conflict(v, VEC_AT(*blk, KStmt, i), s);
      if (c >= 0)
        return vfail(v, "shared buffer %s: block-level statements %d and %d touch it (one writes it) with no "
                     "barrier between", kir_buf(v->p, c)->name, i, j);
    }
  }
  return true;
}

// A launch's shared buffers fit the Target's shared memory per block (the
// 48 KiB a kernel gets without opting in to more).
static bool v_shared_bytes(Verify *v, const KStmt *L) {
  int nb = v->p->bufs.len;
  bool *r = arena_alloc(v->p->arena, (size_t)(2 * nb + 1)), *w = r + nb;
  kir_stmt_access(L, r, w);
  int64_t bytes = 0, n;
  for (int i = 0; i < nb; i++) {
    const KirBuf *b = kir_buf(v->p, i);
    if ((r[i] || w[i]) && b->kind == KBUF_SHARED && kir_eval_i64(b->numel, NULL, &n)) bytes += n * (int64_t)dtype_size(b->dtype);
  }
  return !v->t->shared_bytes || bytes <= v->t->shared_bytes ||
         vfail(v, "a launch's shared buffers take %lld bytes, more than the target's %lld per block", (long long)bytes,
               (long long)v->t->shared_bytes);
}

static bool v_shared_races(Verify *v) {
  for (int i = 0; i < v->k->body.len; i++) {
    const KStmt *s = VEC_AT(v->k->body, KStmt, i);
    if (s->kind == KS_FOR && s->map == KMAP_GPU_BLOCK && (!v_block_seq(v, &s->body) || !v_shared_bytes(v, s))) return false;
  }
  return true;
}

static bool v_kernel(Verify *v, KirKernel *k) {
  v->k = k;
  v->msg[0] = 0;
  v->live = arena_alloc(v->p->arena, sizeof(bool) * (size_t)(k->vars.len ? k->vars.len : 1));
  return v_op(v) && v_block(v, &k->body) && (!v->t || (v_barriers(v) && v_shared_races(v)));
}

bool kir_verify(const KirProgram *p, DiagSink *d) {
  Verify v = {.p = p};
  if (p->target && !(v.t = kir_target_find(p->target))) {
    diag_error(d, (Span){0}, "kir: program %s: unknown target %s", p->name, p->target);
    return false;
  }
  if (!v_program_level(&v, d)) return false;
  bool ok = true;
  for (int i = 0; i < p->kernels.len; i++) {
    KirKernel *k = VEC_AT(p->kernels, KirKernel, i);
    if (!v_kernel(&v, k)) {
      diag_error(d, k->span, "kir: kernel %s: %s", k->name, v.msg);
      ok = false;
    }
  }
  v.k = NULL;
  v.msg[0] = 0;
  if (ok && p->scratch && !v_plan(&v)) {
    diag_error(d, (Span){0}, "kir: program %s: memory plan: %s", p->name, v.msg);
    ok = false;
  }
  return ok;
}
