// llvm_kernel.c — prints one kernel-IR kernel as LLVM IR.
//
// Input: a kernel of the scheduled, planned program being compiled (g->p,
// g->k). Output: one function (hidden, named PREFIX<program>.<kernel>)
//   i32 kN(ptr noalias nocapture <param buffers>..., i64 <the syms it uses>...,
//          i64 rng_seed, ptr pool, ptr errslot)
// returning 0, or 1 after a failed check (the message pointer is in
// *errslot). A kernel whose canonical text (kir_kernel_key: buffers by
// parameter position, syms by first use) was printed before in this module
// — by this program or another — is not printed again: its callers share
// the function. Every kernel variable is an alloca in the entry block,
// which mem2reg/SROA turn into SSA values; loops are bottom-tested with an
// i64 induction variable.
//
// Loop maps are the schedule's (kir.h): a chunk loop (threads on) becomes
//   i32 kN.loopM(<param buffers>, <syms>, seed, errslot, <its captures>, i64 begin, i64 end)
// (alwaysinline, so the noalias of its pointer parameters survives as
// scoped alias metadata), inlined into its one caller, a trampoline
//   void kN.parM(ptr ctx, i64 begin, i64 end)
// that mlc_parallel_for(pool, n, grain, kN.parM, ctx) calls per chunk, or
// the kernel over [0, n) when the pool is NULL; ctx is a stack struct of
// the same values, grain the loop's, and a failure is in the error slot. mlc_parallel_for returns when every
// chunk has run, so every barrier is met already and prints as nothing. A
// vector loop carries llvm.loop metadata asking for its lanes. The
// captures, the grain and which loops are chunked come from the kernel IR;
// nothing here analyses or chooses.
//
// Semantics follow kir.h exactly (kir_interp.c is the reference): floats
// round to their dtype after each op (no fast-math, no contraction), integer
// div/mod are floor division/modulo, float max/min propagate NaN
// (llvm.maximum/minimum), rand is Philox-4x32-10. i64 add/sub/mul carry nsw:
// the reference holds integers below 2^53, so an i64 overflow has no
// reference meaning, and nsw lets index arithmetic vectorise.
#include "llvm_internal.h"

#include <llvm-c/DebugInfo.h>

#include <stdlib.h>
#include <string.h>

// ---- types and function plumbing ------------------------------------------------------------
LLVMTypeRef llvm_regtype(LlvmGen *g, DType dt) {
  switch (dt) {
  case DT_F32: case DT_F16: case DT_BF16: return g->tf32;
  case DT_F64: return g->tf64;
  case DT_I32: return g->ti32;
  case DT_I64: return g->ti64;
  case DT_BOOL: return g->ti1;
  case DT_U8: return g->ti8;
  default: MLC_UNREACHABLE();
  }
}

LLVMTypeRef llvm_memtype(LlvmGen *g, DType dt) {
  switch (dt) {
  case DT_F16: return g->tf16;
  case DT_BF16: return g->tbf16;
  case DT_BOOL: return g->ti8;
  default: return llvm_regtype(g, dt);
  }
}

void llvm_fn_attr(LlvmGen *g, LLVMValueRef fn, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, kind, 0));
}

void llvm_param_attr(LlvmGen *g, LLVMValueRef fn, unsigned idx, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx + 1, LLVMCreateEnumAttribute(g->ctx, kind, 0));
}

static void str_attr(LlvmGen *g, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(g->ctx, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}

void llvm_fn_attrs(LlvmGen *g, LLVMValueRef fn) {
  llvm_fn_attr(g, fn, "nounwind");
  str_attr(g, fn, "target-cpu", g->cpu);
  if (g->features[0]) str_attr(g, fn, "target-features", g->features);
}

void llvm_fn_unoptimized(LlvmGen *g, LLVMValueRef fn) {
  llvm_fn_attr(g, fn, "noinline");
  llvm_fn_attr(g, fn, "optnone");
}

void llvm_fn_begin(LlvmGen *g, LLVMValueRef fn) {
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, fn, "entry");
  LLVMPositionBuilderAtEnd(g->b, entry);
  LLVMPositionBuilderAtEnd(g->ab, entry);
}

// Allocas go before the first instruction of the current function's entry
// block so mem2reg promotes them.
LLVMValueRef llvm_alloca(LlvmGen *g, LLVMTypeRef t, const char *name) {
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(LLVMGetBasicBlockParent(LLVMGetInsertBlock(g->b)));
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first) LLVMPositionBuilderBefore(g->ab, first);
  else LLVMPositionBuilderAtEnd(g->ab, entry);
  return LLVMBuildAlloca(g->ab, t, name);
}

static LLVMValueRef call(LlvmGen *g, LLVMValueRef fn, LLVMValueRef *args, unsigned n) {
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(fn), fn, args, n, "");
}

// An overloaded intrinsic on one type (llvm.exp.f32, llvm.smax.i64, ...).
static LLVMValueRef intrinsic(LlvmGen *g, const char *name, LLVMTypeRef t) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  MLC_ASSERT(id != 0);
  return LLVMGetIntrinsicDeclaration(g->mod, id, &t, 1);
}

LLVMValueRef llvm_call_intr(LlvmGen *g, const char *name, LLVMValueRef *args, unsigned n) {
  return call(g, intrinsic(g, name, LLVMTypeOf(args[0])), args, n);
}

// A libm function over float or double: tanhf / tanh.
static LLVMValueRef call_libm(LlvmGen *g, const char *base, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  char name[32];
  snprintf(name, sizeof name, "%s%s", base, t == g->tf32 ? "f" : "");
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
  if (!fn) {
    fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(t, &t, 1, 0));
    llvm_fn_attr(g, fn, "nounwind");
  }
  return call(g, fn, &x, 1);
}

// ---- Philox -------------------------------------------------------------------------------------
// double mlc.philox(i64 key, i64 counter, i64 stream): Philox-4x32-10 with
// key (lo, hi), counter (counter lo, hi, stream lo, hi); the first output
// word w gives (w >> 8) * 2^-24 (kernels/philox.h, kir.h).
static LLVMValueRef mulhi_lo(LlvmGen *g, uint32_t m, LLVMValueRef c, LLVMValueRef *lo) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef p = LLVMBuildMul(b, LLVMConstInt(g->ti64, m, 0), LLVMBuildZExt(b, c, g->ti64, ""), "");
  *lo = LLVMBuildTrunc(b, p, g->ti32, "");
  return LLVMBuildTrunc(b, LLVMBuildLShr(b, p, LLVMConstInt(g->ti64, 32, 0), ""), g->ti32, "");
}

static LLVMValueRef philox_fn(LlvmGen *g) {
  if (g->philox) return g->philox;
  LLVMTypeRef ps[3] = {g->ti64, g->ti64, g->ti64};
  LLVMValueRef fn = LLVMAddFunction(g->mod, "mlc.philox", LLVMFunctionType(g->tf64, ps, 3, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  llvm_fn_attrs(g, fn);
  LLVMBasicBlockRef saved = LLVMGetInsertBlock(g->b);
  llvm_fn_begin(g, fn);
  LLVMBuilderRef b = g->b;
  LLVMValueRef k64 = LLVMGetParam(fn, 0), c64 = LLVMGetParam(fn, 1), s64 = LLVMGetParam(fn, 2);
  LLVMValueRef sh = LLVMConstInt(g->ti64, 32, 0);
  LLVMValueRef k0 = LLVMBuildTrunc(b, k64, g->ti32, ""), k1 = LLVMBuildTrunc(b, LLVMBuildLShr(b, k64, sh, ""), g->ti32, "");
  LLVMValueRef c[4] = {LLVMBuildTrunc(b, c64, g->ti32, ""), LLVMBuildTrunc(b, LLVMBuildLShr(b, c64, sh, ""), g->ti32, ""),
                       LLVMBuildTrunc(b, s64, g->ti32, ""), LLVMBuildTrunc(b, LLVMBuildLShr(b, s64, sh, ""), g->ti32, "")};
  for (int r = 0; r < 10; r++) {
    LLVMValueRef lo0, lo1;
    LLVMValueRef hi0 = mulhi_lo(g, 0xD2511F53u, c[0], &lo0), hi1 = mulhi_lo(g, 0xCD9E8D57u, c[2], &lo1);
    LLVMValueRef n0 = LLVMBuildXor(b, LLVMBuildXor(b, hi1, c[1], ""), k0, "");
    LLVMValueRef n2 = LLVMBuildXor(b, LLVMBuildXor(b, hi0, c[3], ""), k1, "");
    c[0] = n0, c[1] = lo1, c[2] = n2, c[3] = lo0;
    k0 = LLVMBuildAdd(b, k0, LLVMConstInt(g->ti32, 0x9E3779B9u, 0), "");
    k1 = LLVMBuildAdd(b, k1, LLVMConstInt(g->ti32, 0xBB67AE85u, 0), "");
  }
  LLVMValueRef w = LLVMBuildLShr(b, c[0], LLVMConstInt(g->ti32, 8, 0), "");
  LLVMValueRef u = LLVMBuildFMul(b, LLVMBuildUIToFP(b, w, g->tf64, ""), LLVMConstReal(g->tf64, 0x1p-24), "");
  LLVMBuildRet(b, u);
  LLVMPositionBuilderAtEnd(g->b, saved);
  return g->philox = fn;
}

// ---- expressions ------------------------------------------------------------------------------------
static bool is_unsigned(DType dt) { return dt == DT_BOOL || dt == DT_U8; }

static LLVMValueRef cast(LlvmGen *g, LLVMValueRef v, DType from, DType to) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef t = llvm_regtype(g, to), f = llvm_regtype(g, from);
  if (t == f) return v;
  if (dtype_is_float(from)) {
    if (to == DT_BOOL) return LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstReal(f, 0), "");
    if (dtype_is_float(to)) return t == g->tf64 ? LLVMBuildFPExt(b, v, t, "") : LLVMBuildFPTrunc(b, v, t, "");
    // float -> int truncates toward zero, then wraps to the dtype.
    return LLVMBuildTrunc(b, LLVMBuildFPToSI(b, v, g->ti64, ""), t, "");
  }
  if (dtype_is_float(to))
    return is_unsigned(from) ? LLVMBuildUIToFP(b, v, t, "") : LLVMBuildSIToFP(b, v, t, "");
  if (to == DT_BOOL) return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstInt(f, 0, 0), "");
  if (LLVMGetIntTypeWidth(t) < LLVMGetIntTypeWidth(f)) return LLVMBuildTrunc(b, v, t, "");
  return is_unsigned(from) ? LLVMBuildZExt(b, v, t, "") : LLVMBuildSExt(b, v, t, "");
}

// round_bf16 as kernels/round16.h computes it, on the bits: u + 0x7fff +
// (bit 16 of u), the low half cleared; a NaN keeps its top half, made quiet.
static LLVMValueRef round_bf16(LlvmGen *g, LLVMValueRef a) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef u = LLVMBuildBitCast(b, a, g->ti32, ""), hi = LLVMConstInt(g->ti32, 0xffff0000u, 0);
  LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, u, LLVMConstInt(g->ti32, 16, 0), ""), LLVMConstInt(g->ti32, 1, 0), "");
  LLVMValueRef r = LLVMBuildAdd(b, LLVMBuildAdd(b, u, LLVMConstInt(g->ti32, 0x7fff, 0), ""), odd, "");
  LLVMValueRef q = LLVMBuildOr(b, u, LLVMConstInt(g->ti32, 0x00400000u, 0), "");
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, a, a, "");
  LLVMValueRef v = LLVMBuildAnd(b, LLVMBuildSelect(b, nan, q, r, ""), hi, "");
  return LLVMBuildBitCast(b, v, g->tf32, "");
}

static LLVMValueRef unary(LlvmGen *g, KUnOp op, LLVMValueRef a, DType dt) {
  LLVMBuilderRef b = g->b;
  bool fl = dtype_is_float(dt);
  switch (op) {
  case KU_NEG: return fl ? LLVMBuildFNeg(b, a, "") : LLVMBuildSub(b, LLVMConstInt(LLVMTypeOf(a), 0, 0), a, "");
  case KU_NOT: return LLVMBuildXor(b, a, LLVMConstInt(LLVMTypeOf(a), 1, 0), "");
  case KU_ABS:
    if (fl) return llvm_call_intr(g, "llvm.fabs", &a, 1);
    return llvm_call_intr(g, "llvm.abs", (LLVMValueRef[]){a, LLVMConstInt(g->ti1, 0, 0)}, 2);
  case KU_EXP: return LLVMTypeOf(a) == g->tf32 ? llvm_math_f32(g, op, a) : llvm_call_intr(g, "llvm.exp", &a, 1);
  case KU_LOG: return LLVMTypeOf(a) == g->tf32 ? llvm_math_f32(g, op, a) : llvm_call_intr(g, "llvm.log", &a, 1);
  case KU_SQRT: return llvm_call_intr(g, "llvm.sqrt", &a, 1);
  case KU_COS: return llvm_call_intr(g, "llvm.cos", &a, 1);
  case KU_FLOOR: return llvm_call_intr(g, "llvm.floor", &a, 1);
  case KU_LOG1P: return LLVMTypeOf(a) == g->tf32 ? llvm_math_f32(g, op, a) : call_libm(g, "log1p", a);
  case KU_TANH:
  case KU_ERF: return LLVMTypeOf(a) == g->tf32 ? llvm_math_f32(g, op, a) : call_libm(g, op == KU_TANH ? "tanh" : "erf", a);
  case KU_ROUND_BF16: return round_bf16(g, a);
  // fptrunc rounds to nearest even and overflows to inf, as round16.h does
  case KU_ROUND_F16: return LLVMBuildFPExt(b, LLVMBuildFPTrunc(b, a, g->tf16, ""), g->tf32, "");
  case KU_COUNT: break;
  }
  MLC_UNREACHABLE();
}

// Floor division and modulo (Python's // and %) from sdiv/srem: when the
// remainder is non-zero and its sign differs from the divisor's, the
// quotient steps down by one and the remainder moves by the divisor.
static LLVMValueRef floor_divmod(LlvmGen *g, LLVMValueRef a, LLVMValueRef d, bool mod) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef zero = LLVMConstInt(t, 0, 0);
  LLVMValueRef q = LLVMBuildSDiv(b, a, d, ""), r = LLVMBuildSRem(b, a, d, "");
  LLVMValueRef adj = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntNE, r, zero, ""),
                                  LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildXor(b, r, d, ""), zero, ""), "");
  if (mod) return LLVMBuildSelect(b, adj, LLVMBuildAdd(b, r, d, ""), r, "");
  return LLVMBuildSub(b, q, LLVMBuildZExt(b, adj, t, ""), "");
}

static LLVMValueRef nsw(LLVMValueRef v, DType dt) {
  if (dt == DT_I64 && LLVMIsAInstruction(v)) LLVMSetNSW(v, 1);
  return v;
}

static LLVMValueRef fbinary(LlvmGen *g, KBinOp op, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef xy[2] = {x, y};
  switch (op) {
  case KB_ADD: return LLVMBuildFAdd(b, x, y, "");
  case KB_SUB: return LLVMBuildFSub(b, x, y, "");
  case KB_MUL: return LLVMBuildFMul(b, x, y, "");
  case KB_DIV: return LLVMBuildFDiv(b, x, y, "");
  case KB_MOD: { // x - floor(x / y) * y (Python's float %)
    LLVMValueRef q = LLVMBuildFDiv(b, x, y, "");
    q = llvm_call_intr(g, "llvm.floor", &q, 1);
    return LLVMBuildFSub(b, x, LLVMBuildFMul(b, q, y, ""), "");
  }
  case KB_POW: return llvm_call_intr(g, "llvm.pow", xy, 2);
  case KB_MAX: return llvm_call_intr(g, "llvm.maximum", xy, 2);
  case KB_MIN: return llvm_call_intr(g, "llvm.minimum", xy, 2);
  case KB_LT: return LLVMBuildFCmp(b, LLVMRealOLT, x, y, "");
  case KB_LE: return LLVMBuildFCmp(b, LLVMRealOLE, x, y, "");
  case KB_GT: return LLVMBuildFCmp(b, LLVMRealOGT, x, y, "");
  case KB_GE: return LLVMBuildFCmp(b, LLVMRealOGE, x, y, "");
  case KB_EQ: return LLVMBuildFCmp(b, LLVMRealOEQ, x, y, "");
  case KB_NE: return LLVMBuildFCmp(b, LLVMRealUNE, x, y, "");
  default: MLC_UNREACHABLE();
  }
}

static LLVMValueRef ibinary(LlvmGen *g, KBinOp op, LLVMValueRef x, LLVMValueRef y, DType dt) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef xy[2] = {x, y};
  bool u = is_unsigned(dt);
  switch (op) {
  case KB_ADD: return nsw(LLVMBuildAdd(b, x, y, ""), dt);
  case KB_SUB: return nsw(LLVMBuildSub(b, x, y, ""), dt);
  case KB_MUL: return nsw(LLVMBuildMul(b, x, y, ""), dt);
  case KB_DIV: return floor_divmod(g, x, y, false);
  case KB_MOD: return floor_divmod(g, x, y, true);
  case KB_MAX: return llvm_call_intr(g, u ? "llvm.umax" : "llvm.smax", xy, 2);
  case KB_MIN: return llvm_call_intr(g, u ? "llvm.umin" : "llvm.smin", xy, 2);
  case KB_LT: return LLVMBuildICmp(b, u ? LLVMIntULT : LLVMIntSLT, x, y, "");
  case KB_LE: return LLVMBuildICmp(b, u ? LLVMIntULE : LLVMIntSLE, x, y, "");
  case KB_GT: return LLVMBuildICmp(b, u ? LLVMIntUGT : LLVMIntSGT, x, y, "");
  case KB_GE: return LLVMBuildICmp(b, u ? LLVMIntUGE : LLVMIntSGE, x, y, "");
  case KB_EQ: return LLVMBuildICmp(b, LLVMIntEQ, x, y, "");
  case KB_NE: return LLVMBuildICmp(b, LLVMIntNE, x, y, "");
  case KB_AND: return LLVMBuildAnd(b, x, y, "");
  case KB_OR: return LLVMBuildOr(b, x, y, "");
  default: MLC_UNREACHABLE();
  }
}

static LLVMValueRef elem_ptr(LlvmGen *g, LlvmEnv *e, int buf, LLVMValueRef idx) {
  MLC_ASSERT(e->bufs[buf]);
  LLVMTypeRef t = llvm_memtype(g, kir_buf(g->p, buf)->dtype);
  return LLVMBuildInBoundsGEP2(g->b, t, e->bufs[buf], &idx, 1, "");
}

static LLVMValueRef load(LlvmGen *g, LlvmEnv *e, const KExpr *x) {
  DType dt = kir_buf(g->p, x->buf)->dtype;
  LLVMValueRef v = LLVMBuildLoad2(g->b, llvm_memtype(g, dt), elem_ptr(g, e, x->buf, llvm_expr(g, e, x->a)), "");
  if (dt == DT_BOOL) return LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(g->ti8, 0, 0), "");
  if (dt == DT_F16 || dt == DT_BF16) return LLVMBuildFPExt(g->b, v, g->tf32, "");
  return v;
}

static LLVMValueRef constant(LlvmGen *g, const KExpr *x) {
  LLVMTypeRef t = llvm_regtype(g, x->dtype);
  if (dtype_is_float(x->dtype)) return LLVMConstReal(t, t == g->tf32 ? (double)(float)x->f : x->f);
  return LLVMConstInt(t, (unsigned long long)x->i, !is_unsigned(x->dtype));
}

// ---- sizes printed once ---------------------------------------------------------------------------
// The entry function prints every size, sym definition and planned offset
// (memplan.h: polynomials whose terms recur from one temporary to the
// next) in its entry block; equal i64 subexpressions over syms are printed
// once (a memo keyed by kir_expr_equal), which keeps that block linear in
// the number of distinct terms rather than in their occurrences.
struct LlvmMemo {
  uint64_t *hash;
  const KExpr **key;
  LLVMValueRef *val;
  int cap, n;
};

static uint64_t expr_hash(const KExpr *x) {
  if (!x) return 0x9e37;
  uint64_t h = (uint64_t)x->kind * 0x100000001b3ull ^ (uint64_t)x->dtype;
  h = h * 31 + (uint64_t)x->i + (uint64_t)x->sym * 7 + (uint64_t)x->bin * 13;
  return ((h * 0x9e3779b97f4a7c15ull) ^ expr_hash(x->a)) * 31 + expr_hash(x->b);
}

static bool memo_grow(LlvmMemo *m) {
  LlvmMemo old = *m;
  m->cap = m->cap ? 2 * m->cap : 1024, m->n = 0;
  m->hash = calloc((size_t)m->cap, sizeof *m->hash), m->key = calloc((size_t)m->cap, sizeof *m->key);
  m->val = calloc((size_t)m->cap, sizeof *m->val);
  MLC_ASSERT(m->hash && m->key && m->val);
  for (int i = 0; i < old.cap; i++)
    if (old.key[i]) {
      int j = (int)(old.hash[i] & (uint64_t)(m->cap - 1));
      while (m->key[j]) j = (j + 1) & (m->cap - 1);
      m->hash[j] = old.hash[i], m->key[j] = old.key[i], m->val[j] = old.val[i], m->n++;
    }
  free(old.hash), free(old.key), free(old.val);
  return true;
}

LlvmMemo *llvm_memo_new(void) { return calloc(1, sizeof(LlvmMemo)); }

void llvm_memo_free(LlvmMemo *m) {
  if (!m) return;
  free(m->hash), free(m->key), free(m->val), free(m);
}

// The slot of x: its entry, or the empty slot where it goes.
static int memo_slot(LlvmMemo *m, const KExpr *x, uint64_t h) {
  if (2 * (m->n + 1) > m->cap) memo_grow(m);
  int j = (int)(h & (uint64_t)(m->cap - 1));
  while (m->key[j] && !(m->hash[j] == h && kir_expr_equal(m->key[j], x))) j = (j + 1) & (m->cap - 1);
  return j;
}

static LLVMValueRef expr(LlvmGen *g, LlvmEnv *e, const KExpr *x);

LLVMValueRef llvm_expr(LlvmGen *g, LlvmEnv *e, const KExpr *x) {
  if (!e->memo || x->kind != KE_BINARY || x->dtype != DT_I64) return expr(g, e, x);
  uint64_t h = expr_hash(x);
  int j = memo_slot(e->memo, x, h);
  if (e->memo->key[j]) return e->memo->val[j];
  LLVMValueRef v = expr(g, e, x);
  j = memo_slot(e->memo, x, h); // the table may have grown
  e->memo->hash[j] = h, e->memo->key[j] = x, e->memo->val[j] = v, e->memo->n++;
  return v;
}

static LLVMValueRef expr(LlvmGen *g, LlvmEnv *e, const KExpr *x) {
  switch (x->kind) {
  case KE_CONST: return constant(g, x);
  case KE_VAR:
    return LLVMBuildLoad2(g->b, llvm_regtype(g, VEC_AT(g->k->vars, KirVar, x->var)->dtype), e->vars[x->var], "");
  case KE_SYM: return e->syms[x->sym];
  case KE_RNGSEED: return e->seed;
  case KE_LOAD: return load(g, e, x);
  case KE_UNARY: return unary(g, x->un, llvm_expr(g, e, x->a), x->a->dtype);
  case KE_BINARY: {
    LLVMValueRef a = llvm_expr(g, e, x->a), b = llvm_expr(g, e, x->b);
    return dtype_is_float(x->a->dtype) ? fbinary(g, x->bin, a, b) : ibinary(g, x->bin, a, b, x->a->dtype);
  }
  case KE_SELECT: {
    LLVMValueRef c = llvm_expr(g, e, x->a), a = llvm_expr(g, e, x->b), b = llvm_expr(g, e, x->c);
    return LLVMBuildSelect(g->b, c, a, b, "");
  }
  case KE_CAST: return cast(g, llvm_expr(g, e, x->a), x->a->dtype, x->dtype);
  case KE_RAND: {
    LLVMValueRef args[3] = {llvm_expr(g, e, x->a), llvm_expr(g, e, x->b), llvm_expr(g, e, x->c)};
    return call(g, philox_fn(g), args, 3);
  }
  case KE_FMA: {
    LLVMValueRef args[3] = {llvm_expr(g, e, x->a), llvm_expr(g, e, x->b), llvm_expr(g, e, x->c)};
    return llvm_call_intr(g, "llvm.fma", args, 3);
  }
  }
  MLC_UNREACHABLE();
}

// ---- statements ---------------------------------------------------------------------------------------
static void block(LlvmGen *g, LlvmEnv *e, const Vec *stmts);

static LLVMBasicBlockRef new_bb(LlvmGen *g, LlvmEnv *e, const char *name) {
  return LLVMAppendBasicBlockInContext(g->ctx, e->fn, name);
}

// !{!"llvm.loop.vectorize.enable", i1 true} and the width, in a loop ID
// node whose first operand is itself.
static LLVMValueRef vector_md(LlvmGen *g, int64_t lanes) {
  LLVMContextRef c = g->ctx;
  LLVMMetadataRef on[2] = {LLVMMDStringInContext2(c, "llvm.loop.vectorize.enable", 26),
                           LLVMValueAsMetadata(LLVMConstInt(g->ti1, 1, 0))};
  LLVMMetadataRef width[2] = {LLVMMDStringInContext2(c, "llvm.loop.vectorize.width", 25),
                              LLVMValueAsMetadata(LLVMConstInt(g->ti32, (unsigned long long)lanes, 0))};
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(c, NULL, 0);
  LLVMMetadataRef ops[3] = {tmp, LLVMMDNodeInContext2(c, on, 2), LLVMMDNodeInContext2(c, width, 2)};
  LLVMMetadataRef id = LLVMMDNodeInContext2(c, ops, 3);
  LLVMMetadataReplaceAllUsesWith(tmp, id);
  return LLVMMetadataAsValue(c, id);
}

// for var in [lo, hi): stmts — bottom-tested, guarded by lo < hi; lanes > 0
// marks the back edge for vectorisation.
static void loop(LlvmGen *g, LlvmEnv *e, int var, LLVMValueRef lo, LLVMValueRef hi, const Vec *stmts, int64_t lanes) {
  LLVMBuilderRef b = g->b;
  LLVMBasicBlockRef body = new_bb(g, e, "loop"), done = new_bb(g, e, "done");
  LLVMBuildStore(b, lo, e->vars[var]);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, lo, hi, ""), body, done);
  LLVMPositionBuilderAtEnd(b, body);
  block(g, e, stmts);
  LLVMValueRef i = LLVMBuildLoad2(b, g->ti64, e->vars[var], "");
  LLVMValueRef next = LLVMBuildNSWAdd(b, i, LLVMConstInt(g->ti64, 1, 0), "");
  LLVMBuildStore(b, next, e->vars[var]);
  LLVMValueRef br = LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, hi, ""), body, done);
  if (lanes > 0) LLVMSetMetadata(br, LLVMGetMDKindIDInContext(g->ctx, "llvm.loop", 9), vector_md(g, lanes));
  LLVMPositionBuilderAtEnd(b, done);
}

static void store_stmt(LlvmGen *g, LlvmEnv *e, const KStmt *s) {
  DType dt = kir_buf(g->p, s->buf)->dtype;
  LLVMValueRef v = llvm_expr(g, e, s->value);
  LLVMValueRef ptr = elem_ptr(g, e, s->buf, llvm_expr(g, e, s->index));
  if (dt == DT_BOOL) v = LLVMBuildZExt(g->b, v, g->ti8, "");
  if (dt == DT_F16 || dt == DT_BF16) v = LLVMBuildFPTrunc(g->b, v, llvm_memtype(g, dt), "");
  LLVMBuildStore(g->b, v, ptr);
}

static void if_stmt(LlvmGen *g, LlvmEnv *e, const KStmt *s) {
  LLVMBasicBlockRef then = new_bb(g, e, "then"), els = new_bb(g, e, "else"), join = new_bb(g, e, "join");
  LLVMBuildCondBr(g->b, llvm_expr(g, e, s->cond), then, els);
  LLVMPositionBuilderAtEnd(g->b, then);
  block(g, e, &s->body);
  LLVMBuildBr(g->b, join);
  LLVMPositionBuilderAtEnd(g->b, els);
  block(g, e, &s->els);
  LLVMBuildBr(g->b, join);
  LLVMPositionBuilderAtEnd(g->b, join);
}

// A failed check records its message (atomically: parallel chunks may fail
// together; any one message will do) and returns 1.
static void check_stmt(LlvmGen *g, LlvmEnv *e, const KStmt *s) {
  LLVMBasicBlockRef fail = new_bb(g, e, "check.fail"), ok = new_bb(g, e, "check.ok");
  LLVMBuildCondBr(g->b, llvm_expr(g, e, s->cond), ok, fail);
  LLVMPositionBuilderAtEnd(g->b, fail);
  MLC_ASSERT(e->next_msg < e->nmsgs);
  LLVMValueRef msg = e->msgs[e->next_msg++]; // the caller's (kir_kernel_key numbers them)
  LLVMValueRef st = LLVMBuildStore(g->b, msg, e->errslot);
  LLVMSetOrdering(st, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(st, 8);
  LLVMBuildRet(g->b, LLVMConstInt(g->ti32, 1, 0));
  LLVMPositionBuilderAtEnd(g->b, ok);
}

// ---- library calls -----------------------------------------------------------------------------------
// i32 <cfn>(ptr pool, <parameters>): the C signature kir.h's table gives
// (i: i64, f: float, flags: i32, buffers and the geometry: ptr), declared on
// first use.
static LLVMValueRef call_decl(LlvmGen *g, const KirCallSpec *sp) {
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, sp->cfn);
  if (fn) return fn;
  LLVMTypeRef ps[KIR_CALL_MAX_PARAMS + 1] = {g->tptr};
  for (int i = 0; i < sp->nparams; i++) {
    KCallArgKind k = sp->param[i].kind;
    ps[i + 1] = k == KCA_I64 ? g->ti64 : k == KCA_F32 ? g->tf32 : k == KCA_GFLAGS || k == KCA_CFLAGS ? g->ti32 : g->tptr;
  }
  fn = LLVMAddFunction(g->mod, sp->cfn, LLVMFunctionType(g->ti32, ps, (unsigned)sp->nparams + 1, 0));
  llvm_fn_attr(g, fn, "nounwind");
  return fn;
}

// The call with its operands; the pool is the kernel's, or NULL inside a
// chunk loop (the call then runs on that chunk's thread) and with threads
// off. A non-zero status (a work buffer the library could not allocate)
// stops the program as a failed check does.
static void call_stmt(LlvmGen *g, LlvmEnv *e, const KCall *c) {
  KirCallSpec sp;
  kir_call_spec(c->fn, &sp);
  LLVMValueRef args[KIR_CALL_MAX_PARAMS + 1];
  LLVMValueRef null = LLVMConstPointerNull(g->tptr);
  args[0] = g->opt.threads && !e->in_par ? e->pool : null;
  for (int i = 0; i < sp.nparams; i++) {
    const KirCallParam *pa = &sp.param[i];
    LLVMValueRef *a = &args[i + 1];
    switch (pa->kind) {
    case KCA_I64: case KCA_F32: *a = llvm_expr(g, e, c->slot[pa->slot]); break;
    case KCA_GFLAGS: case KCA_CFLAGS: *a = LLVMConstInt(g->ti32, c->flags, 0); break;
    case KCA_GEOM: {
      LLVMTypeRef at = LLVMArrayType2(g->ti64, KIR_CONV_GEOM);
      *a = llvm_alloca(g, at, "geom");
      for (int j = 0; j < KIR_CONV_GEOM; j++) {
        LLVMValueRef ix[2] = {LLVMConstInt(g->ti64, 0, 0), LLVMConstInt(g->ti64, (unsigned long long)j, 0)};
        LLVMBuildStore(g->b, llvm_expr(g, e, c->slot[pa->slot + j]), LLVMBuildInBoundsGEP2(g->b, at, *a, ix, 2, ""));
      }
      break;
    }
    default:
      *a = c->buf[pa->slot] < 0 ? null : elem_ptr(g, e, c->buf[pa->slot], llvm_expr(g, e, c->slot[pa->slot]));
    }
  }
  LLVMValueRef fn = call_decl(g, &sp);
  LLVMValueRef st = call(g, fn, args, (unsigned)sp.nparams + 1);
  LLVMBasicBlockRef fail = new_bb(g, e, "call.fail"), ok = new_bb(g, e, "call.ok");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, st, LLVMConstInt(g->ti32, 0, 0), ""), ok, fail);
  LLVMPositionBuilderAtEnd(g->b, fail);
  char msg[96];
  snprintf(msg, sizeof msg, "%s: out of memory for its work buffers", sp.cfn);
  LLVMValueRef store = LLVMBuildStore(g->b, LLVMBuildGlobalStringPtr(g->b, msg, "mlc.msg"), e->errslot);
  LLVMSetOrdering(store, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(store, 8);
  LLVMBuildRet(g->b, LLVMConstInt(g->ti32, 1, 0));
  LLVMPositionBuilderAtEnd(g->b, ok);
}

static void par_for(LlvmGen *g, LlvmEnv *e, const KStmt *s, LLVMValueRef n);

static void stmt(LlvmGen *g, LlvmEnv *e, const KStmt *s) {
  switch (s->kind) {
  case KS_FOR: {
    LLVMValueRef n = llvm_expr(g, e, s->n);
    if (s->map == KMAP_CHUNK && g->opt.threads) par_for(g, e, s, n);
    else loop(g, e, s->var, LLVMConstInt(g->ti64, 0, 0), n, &s->body, s->map == KMAP_VECTOR ? s->grain->i : 0);
    return;
  }
  case KS_LET:
  case KS_ASSIGN: LLVMBuildStore(g->b, llvm_expr(g, e, s->value), e->vars[s->var]); return;
  case KS_STORE: store_stmt(g, e, s); return;
  case KS_IF: if_stmt(g, e, s); return;
  case KS_CHECK: check_stmt(g, e, s); return;
  case KS_BARRIER: return; // every chunk loop has joined its threads already
  case KS_CALL: call_stmt(g, e, s->call); return;
  case KS_MMA: break; // gpu programs only (kir_verify)
  }
  MLC_UNREACHABLE();
}

static void block(LlvmGen *g, LlvmEnv *e, const Vec *stmts) {
  for (int i = 0; i < stmts->len; i++) stmt(g, e, VEC_AT(*stmts, KStmt, i));
}

// ---- outlined chunk loops -------------------------------------------------------------------------
// The loop's values, in order: param buffers, the kernel's syms, seed,
// errslot, the loop's captures (kir.h). types[] gets their types; vals[]
// (when not NULL) the current values.
static int loop_values(LlvmGen *g, LlvmEnv *e, const KStmt *s, LLVMTypeRef *types, LLVMValueRef *vals) {
  const KirKernel *k = g->k;
  int n = 0;
  for (int i = 0; i < k->params.len; i++, n++) {
    types[n] = g->tptr;
    if (vals) vals[n] = e->bufs[kir_param(k, i)];
  }
  for (int i = 0; i < e->nused; i++, n++) {
    types[n] = g->ti64;
    if (vals) vals[n] = e->syms[e->used[i]];
  }
  types[n] = g->ti64, vals ? vals[n] = e->seed : 0, n++;
  types[n] = g->tptr, vals ? vals[n] = e->errslot : 0, n++;
  for (int i = 0; i < e->nmsgs; i++, n++) {
    types[n] = g->tptr;
    if (vals) vals[n] = e->msgs[i];
  }
  for (int i = 0; i < s->captures.len; i++, n++) {
    int v = kir_capture(s, i);
    types[n] = llvm_regtype(g, VEC_AT(k->vars, KirVar, v)->dtype);
    if (vals) vals[n] = LLVMBuildLoad2(g->b, types[n], e->vars[v], "");
  }
  return n;
}

// Allocas for every kernel var of the function being started.
static LLVMValueRef *var_allocas(LlvmGen *g) {
  const KirKernel *k = g->k;
  LLVMValueRef *vars = arena_alloc(g->p->arena, sizeof(LLVMValueRef) * (size_t)(k->vars.len + 1));
  for (int v = 0; v < k->vars.len; v++) {
    const KirVar *kv = VEC_AT(k->vars, KirVar, v);
    vars[v] = llvm_alloca(g, llvm_regtype(g, kv->dtype), kv->name);
  }
  return vars;
}

// i32 kN.loopM(values..., i64 begin, i64 end): the loop over [begin, end).
static LLVMValueRef loop_fn(LlvmGen *g, const LlvmEnv *outer, const KStmt *s, LLVMTypeRef *types, int nv,
                            int *next_msg) {
  const KirKernel *k = g->k;
  types[nv] = g->ti64, types[nv + 1] = g->ti64;
  char name[256];
  snprintf(name, sizeof name, "%s.%s.loop%d", g->p->name, k->name, g->nouter);
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->ti32, types, (unsigned)nv + 2, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  llvm_fn_attrs(g, fn);
  llvm_fn_attr(g, fn, "alwaysinline");
  for (int i = 0; i < k->params.len; i++) llvm_param_attr(g, fn, (unsigned)i, "noalias");
  LLVMBasicBlockRef saved = LLVMGetInsertBlock(g->b);
  llvm_fn_begin(g, fn);
  LlvmEnv e = {.fn = fn, .in_par = true, .used = outer->used, .nused = outer->nused};
  e.bufs = arena_alloc(g->p->arena, sizeof(LLVMValueRef) * (size_t)(g->p->bufs.len + 1));
  e.syms = arena_alloc(g->p->arena, sizeof(LLVMValueRef) * (size_t)(g->p->syms.len + 1));
  e.vars = var_allocas(g);
  int n = 0;
  for (int i = 0; i < k->params.len; i++) e.bufs[kir_param(k, i)] = LLVMGetParam(fn, (unsigned)n++);
  for (int i = 0; i < e.nused; i++) e.syms[e.used[i]] = LLVMGetParam(fn, (unsigned)n++);
  e.seed = LLVMGetParam(fn, (unsigned)n++);
  e.errslot = LLVMGetParam(fn, (unsigned)n++);
  e.nmsgs = outer->nmsgs, e.next_msg = outer->next_msg;
  e.msgs = arena_alloc(g->p->arena, sizeof(LLVMValueRef) * (size_t)(e.nmsgs + 1));
  for (int i = 0; i < e.nmsgs; i++) e.msgs[i] = LLVMGetParam(fn, (unsigned)n++);
  for (int i = 0; i < s->captures.len; i++) LLVMBuildStore(g->b, LLVMGetParam(fn, (unsigned)n++), e.vars[kir_capture(s, i)]);
  loop(g, &e, s->var, LLVMGetParam(fn, (unsigned)nv), LLVMGetParam(fn, (unsigned)nv + 1), &s->body, 0);
  *next_msg = e.next_msg;
  LLVMBuildRet(g->b, LLVMConstInt(g->ti32, 0, 0));
  LLVMPositionBuilderAtEnd(g->b, saved);
  return fn;
}

// void kN.parM(ptr ctx, i64 begin, i64 end): unpacks ctx, runs the loop.
static LLVMValueRef trampoline(LlvmGen *g, LLVMValueRef lfn, LLVMTypeRef st, LLVMTypeRef *types, int nv) {
  char name[256];
  snprintf(name, sizeof name, "%s.%s.par%d", g->p->name, g->k->name, g->nouter);
  LLVMTypeRef ps[3] = {g->tptr, g->ti64, g->ti64};
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->tvoid, ps, 3, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  llvm_fn_attrs(g, fn);
  LLVMBasicBlockRef saved = LLVMGetInsertBlock(g->b);
  llvm_fn_begin(g, fn);
  LLVMValueRef *args = arena_alloc(g->p->arena, sizeof(LLVMValueRef) * (size_t)(nv + 2));
  for (int i = 0; i < nv; i++) {
    LLVMValueRef f = LLVMBuildStructGEP2(g->b, st, LLVMGetParam(fn, 0), (unsigned)i, "");
    args[i] = LLVMBuildLoad2(g->b, types[i], f, "");
  }
  args[nv] = LLVMGetParam(fn, 1), args[nv + 1] = LLVMGetParam(fn, 2);
  call(g, lfn, args, (unsigned)nv + 2);
  LLVMBuildRetVoid(g->b);
  LLVMPositionBuilderAtEnd(g->b, saved);
  return fn;
}

static LLVMValueRef parfor_decl(LlvmGen *g) {
  if (g->parfor) return g->parfor;
  // void mlc_parallel_for(MlcPool *pool, int64_t n, int64_t grain, MlcRangeFn fn, void *arg)
  LLVMTypeRef ps[5] = {g->tptr, g->ti64, g->ti64, g->tptr, g->tptr};
  g->parfor = LLVMAddFunction(g->mod, "mlc_parallel_for", LLVMFunctionType(g->tvoid, ps, 5, 0));
  llvm_fn_attr(g, g->parfor, "nounwind");
  return g->parfor;
}

static void ret_if_nonzero(LlvmGen *g, LlvmEnv *e, LLVMValueRef st) {
  LLVMBasicBlockRef fail = new_bb(g, e, "failed"), ok = new_bb(g, e, "ok");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, st, LLVMConstInt(g->ti32, 0, 0), ""), fail, ok);
  LLVMPositionBuilderAtEnd(g->b, fail);
  LLVMBuildRet(g->b, st);
  LLVMPositionBuilderAtEnd(g->b, ok);
}

static void par_for(LlvmGen *g, LlvmEnv *e, const KStmt *s, LLVMValueRef n) {
  MLC_ASSERT(!e->in_par); // kir_verify: no chunk loop inside another
  const KirKernel *k = g->k;
  Arena *A = g->p->arena;
  int cap = k->params.len + e->nused + 2 + e->nmsgs + s->captures.len + 2;
  LLVMTypeRef *types = arena_alloc(A, sizeof(LLVMTypeRef) * (size_t)cap);
  LLVMValueRef *vals = arena_alloc(A, sizeof(LLVMValueRef) * (size_t)cap);
  int nv = loop_values(g, e, s, types, vals);
  g->nouter++;
  LLVMValueRef lfn = loop_fn(g, e, s, types, nv, &e->next_msg);
  LLVMTypeRef st = LLVMStructTypeInContext(g->ctx, types, (unsigned)nv, 0);
  LLVMValueRef tfn = trampoline(g, lfn, st, types, nv);

  // Pack the values; with a pool, hand the trampoline to
  // mlc_parallel_for, without one call it over [0, n) on this thread. The
  // loop body is compiled once, in the trampoline: calling the loop
  // function directly inlined a second copy of every chunk loop (a third
  // of a module's code) for no speed.
  LLVMBuilderRef b = g->b;
  LLVMValueRef ctx = llvm_alloca(g, st, "par.ctx");
  for (int i = 0; i < nv; i++) LLVMBuildStore(b, vals[i], LLVMBuildStructGEP2(b, st, ctx, (unsigned)i, ""));
  LLVMBasicBlockRef serial = new_bb(g, e, "serial"), threaded = new_bb(g, e, "threaded"), join = new_bb(g, e, "pjoin");
  LLVMBuildCondBr(b, LLVMBuildIsNull(b, e->pool, ""), serial, threaded);
  LLVMPositionBuilderAtEnd(b, serial);
  LLVMValueRef targs[3] = {ctx, LLVMConstInt(g->ti64, 0, 0), n};
  call(g, tfn, targs, 3);
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, threaded);
  LLVMValueRef pargs[5] = {e->pool, n, llvm_expr(g, e, s->grain), tfn, ctx};
  call(g, parfor_decl(g), pargs, 5);
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, join);
  LLVMValueRef msg = LLVMBuildLoad2(b, g->tptr, e->errslot, "");
  LLVMSetOrdering(msg, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(msg, 8);
  LLVMValueRef failed = LLVMBuildZExt(b, LLVMBuildIsNotNull(b, msg, ""), g->ti32, "");
  ret_if_nonzero(g, e, failed);
}

// ---- kernels ------------------------------------------------------------------------------------------
static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

// The table slot of key: its entry, or the empty slot where it goes.
static LlvmKernelFn *kernel_slot(LlvmGen *g, const char *key, uint64_t h) {
  for (uint64_t i = h & (uint64_t)(g->capkfns - 1);; i = (i + 1) & (uint64_t)(g->capkfns - 1)) {
    LlvmKernelFn *f = &g->kfns[i];
    if (!f->key || (f->hash == h && !strcmp(f->key, key))) return f;
  }
}

static void kernels_grow(LlvmGen *g) {
  LlvmKernelFn *old = g->kfns;
  int n = g->capkfns;
  g->capkfns = n ? 2 * n : 256;
  g->kfns = calloc((size_t)g->capkfns, sizeof *g->kfns);
  MLC_ASSERT(g->kfns);
  for (int i = 0; i < n; i++)
    if (old[i].key) *kernel_slot(g, old[i].key, old[i].hash) = old[i];
  free(old);
}

void llvm_kernels_free(LlvmGen *g) {
  for (int i = 0; i < g->capkfns; i++) free(g->kfns[i].key);
  free(g->kfns);
  g->kfns = NULL, g->capkfns = g->nkfns = 0;
  free(g->korder);
  g->korder = NULL, g->nkord = g->capkord = 0;
}

static LLVMValueRef print_kernel(LlvmGen *g, const KirKernel *k, const int *used, int nused, int nmsgs) {
  const KirProgram *p = g->p;
  int np = k->params.len, n = np + nused + 3 + nmsgs;
  LLVMTypeRef *ps = arena_alloc(p->arena, sizeof(LLVMTypeRef) * (size_t)n);
  for (int i = 0; i < n; i++) ps[i] = i < np || i >= np + nused + 1 ? g->tptr : g->ti64;
  // A hidden, external symbol under the entry points' prefix: the parts of
  // a split module (llvm_split.c) call each other's kernels.
  char name[256];
  snprintf(name, sizeof name, "%s%s.%s", g->opt.prefix, p->name, k->name);
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->ti32, ps, (unsigned)n, 0));
  LLVMSetVisibility(fn, LLVMHiddenVisibility);
  llvm_fn_attrs(g, fn);
  llvm_fn_attr(g, fn, "noinline");
  for (int i = 0; i < np; i++) {
    llvm_param_attr(g, fn, (unsigned)i, "noalias");
    llvm_param_attr(g, fn, (unsigned)i, "nocapture");
  }
  g->k = k;
  g->nouter = 0;
  llvm_fn_begin(g, fn);
  LlvmEnv e = {.fn = fn, .used = used, .nused = nused};
  e.bufs = arena_alloc(p->arena, sizeof(LLVMValueRef) * (size_t)(p->bufs.len + 1));
  e.syms = arena_alloc(p->arena, sizeof(LLVMValueRef) * (size_t)(p->syms.len + 1));
  for (int i = 0; i < np; i++) e.bufs[kir_param(k, i)] = LLVMGetParam(fn, (unsigned)i);
  for (int i = 0; i < nused; i++) e.syms[used[i]] = LLVMGetParam(fn, (unsigned)(np + i));
  e.seed = LLVMGetParam(fn, (unsigned)(np + nused));
  e.pool = LLVMGetParam(fn, (unsigned)(np + nused + 1));
  e.errslot = LLVMGetParam(fn, (unsigned)(np + nused + 2));
  e.nmsgs = nmsgs;
  e.msgs = arena_alloc(p->arena, sizeof(LLVMValueRef) * (size_t)(nmsgs + 1));
  for (int i = 0; i < nmsgs; i++) e.msgs[i] = LLVMGetParam(fn, (unsigned)(np + nused + 3 + i));
  e.vars = var_allocas(g);
  block(g, &e, &k->body);
  LLVMBuildRet(g->b, LLVMConstInt(g->ti32, 0, 0));
  g->k = NULL;
  return fn;
}

// The kernel's cost (llvm_split.c): its function and those printed after
// it, which are its loop functions and trampolines (and the Philox helper,
// on first use).
static void record_cost(LlvmGen *g, LLVMValueRef fn) {
  long cost = 0;
  for (LLVMValueRef f = fn; f; f = LLVMGetNextFunction(f)) cost += llvm_fn_size(f);
  if (g->nkord == g->capkord) {
    g->capkord = g->capkord ? 2 * g->capkord : 256;
    g->korder = realloc(g->korder, sizeof *g->korder * (size_t)g->capkord);
    MLC_ASSERT(g->korder);
  }
  g->korder[g->nkord++] = (LlvmKernelCost){fn, cost, !g->rare};
}

LLVMValueRef llvm_kernel(LlvmGen *g, const KirKernel *k, int *used, int *nused) {
  StrBuf key = {0};
  kir_kernel_key(&key, g->p, k, used, nused);
  if (2 * (g->nkfns + 1) > g->capkfns) kernels_grow(g);
  uint64_t h = fnv1a(key.data);
  LlvmKernelFn *f = kernel_slot(g, key.data, h);
  if (f->key) {
    sb_free(&key);
    g->kernels_shared++;
    if (!g->rare) g->korder[f->ord].hot = true;
    return f->fn;
  }
  f->key = key.data, f->hash = h;
  g->nkfns++;
  g->kernels_printed++;
  Vec checks = {0};
  kir_kernel_checks(g->p, k, &checks);
  f->fn = print_kernel(g, k, used, *nused, checks.len);
  f->ord = g->nkord;
  record_cost(g, f->fn);
  return f->fn;
}
