// llvm_math.c — exp, erf, tanh, log and log1p of an f32 as plain LLVM IR:
// no libm call, so the loops that use them vectorise (softmax, GELU and its
// gradient, sigmoid, SiLU, softplus, log_sigmoid, ...).
//
// Each is an internal, always-inlined function `float mlc.expf(float)`
// (mlc.erff, mlc.tanhf, mlc.logf, mlc.log1pf), made on first use, computing in f64 from the f32
// argument and rounding once at the end (fptrunc): range reduction and
// piecewise polynomials whose f64 error (1e-16 .. 1e-13, fit_math.py) is far
// below an f32 ulp, so the result is the correctly rounded f32 of the true
// value except within ~1e-6 relative of a rounding boundary, and never more
// than an ulp from it (tests/backend/llvm/test_math.c sweeps every function
// against libm's f64 functions). Only fadd/fsub/fmul/fdiv, compares, selects,
// integer bit operations and, in the polynomials, llvm.fmuladd: one fused
// multiply-add where the target has FMA (1.13x on char_transformer's step:
// its GELU loops were bound by the multiplies and adds), a multiply and an
// add where it has not (x86-64 v1/v2, where a fused one would be a libm
// call). So every FMA target (AVX2, AVX-512) and the scalar and vector forms
// of a loop give the same bits; a target without FMA rounds the polynomial
// differently in the f64 digits, which changes the f32 result only within
// ~1e-14 relative of a rounding boundary. No fast-math flags. f64 operands
// keep libm.
//
//   expf(x)  = 2^k * P(r), k = round(x / ln2), r = x - k ln2 (ln2 as a
//              32-bit head that k multiplies exactly plus a tail); x is
//              clamped to [-150, 100] first, whose exp is finite in f64 and
//              rounds to 0 / inf in f32 as exp of anything beyond does; 2^k
//              comes from k's bits, read off the rounding sum x/ln2 + 1.5*2^52.
//   erff(x)  = sign(x) * (|x| P0(x^2) below 1.5, P1((|x| - 2.75) / 1.25)
//              below 4, else 1).
//   tanhf(x) = sign(x) * (|x| P(x^2) below 1/4, else 1 - 2 / (e^(2|x|) + 1)),
//              |x| clamped to 20 (tanh rounds to 1 from 9.1 on).
//   logf(x)  = k ln2 + 2 atanh(s), x = 2^k m with m in [sqrt(1/2), sqrt(2))
//              (k and m from x's f64 bits), s = (m - 1) / (m + 1), atanh(s) =
//              s P(s^2); 0 -> -inf, +inf -> +inf, below 0 or NaN -> NaN.
//   log1pf(x) = logf's recipe on 1 + x (exact in f64 for |x| >= 2^-29),
//              x - x^2 / 2 below that.
// NaN propagates through every path (an unordered compare selects the
// polynomial, which gives NaN).
#include "llvm_internal.h"

#include <math.h>

// ---- coefficients: compiler/backend/llvm/fit_math.py prints them --------------------------------
// EXP_R: x in [-0.35, 0.35], a polynomial in x, degree 11, relative error 1.47e-16
static const double EXP_R[12] = {
    0x1.0000000000000p+0, 0x1.0000000000000p+0, 0x1.0000000000012p-1,
    0x1.555555555555bp-3, 0x1.555555554e892p-5, 0x1.111111110ef9cp-7,
    0x1.6c16c189ae5d5p-10, 0x1.a01a01b24ec34p-13, 0x1.a0198d2d43afbp-16,
    0x1.71ddf2b060bb0p-19, 0x1.28b82404fa64fp-22, 0x1.af682e715258ap-26,
};
// ERF_SMALL: x in [0.0, 2.25], a polynomial in x, degree 11, relative error 9.79e-14
static const double ERF_SMALL[12] = {
    0x1.20dd750429a20p+0, -0x1.812746b00df27p-2, 0x1.ce2f21926ce3cp-4,
    -0x1.b82ce144d91e6p-6, 0x1.565baddfc864cp-8, -0x1.c02b3570d2a0bp-11,
    0x1.f9829b5b61371p-14, -0x1.f3b8c2a570d36p-17, 0x1.b37a54d5d23dcp-20,
    -0x1.462bfa424106dp-23, 0x1.797a4822b28f1p-27, -0x1.ebba0926faf0ep-32,
};
// ERF_TAIL: x in [1.5, 4.0], a polynomial in s = (x - 2.75) / 1.25, degree 19, absolute error 6.63e-14
static const double ERF_TAIL[20] = {
    0x1.fff2cfb045598p-1, 0x1.8039000713cd0p-11, -0x1.4a30fc1bb6912p-9,
    0x1.61546abf5aac1p-8, -0x1.04a62a3b9d335p-7, 0x1.1394b2777b6c2p-7,
    -0x1.9e5506aec4715p-8, 0x1.93c676e34269ap-9, -0x1.162566bd3b84dp-11,
    -0x1.1634d14bf234ep-11, 0x1.0c7b4a4ad5477p-11, -0x1.82f1e424dd794p-13,
    -0x1.01045d4c83b57p-16, 0x1.9b49d721446e3p-15, -0x1.63c06e297277ap-16,
    -0x1.0a597c0a49afep-23, 0x1.16f7f989834abp-18, -0x1.6fd80d5aeafc3p-20,
    -0x1.1e584dd560a2dp-22, 0x1.7fa2df4feb352p-23,
};
// TANH_SMALL: x in [0.0, 0.0625], a polynomial in x, degree 6, relative error 7.13e-16
static const double TANH_SMALL[7] = {
    0x1.ffffffffffffbp-1, -0x1.5555555551269p-2, 0x1.11111108b0ae3p-3,
    -0x1.ba1b952108dd5p-5, 0x1.664ac35650ce0p-6, -0x1.219844a5484c1p-7,
    0x1.af3d94468be9fp-9,
};
// LOG_S: x in [0.0, 0.0295], a polynomial in x, degree 7, relative error 1.13e-16
static const double LOG_S[8] = {
    0x1.0000000000000p+0, 0x1.55555555555afp-2, 0x1.999999997a83dp-3,
    0x1.249249456ee89p-3, 0x1.c71c4fb4795dep-4, 0x1.7466a967b0fc3p-4,
    0x1.399810c7069eap-4, 0x1.2f5f1b288e713p-4,
};

// ---- building blocks ------------------------------------------------------------------------------
static LLVMValueRef dconst(LlvmGen *g, double v) { return LLVMConstReal(g->tf64, v); }
static LLVMValueRef dadd(LlvmGen *g, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(g->b, a, b, ""); }
static LLVMValueRef dsub(LlvmGen *g, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(g->b, a, b, ""); }
static LLVMValueRef dmul(LlvmGen *g, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(g->b, a, b, ""); }
static LLVMValueRef flt(LlvmGen *g, LLVMValueRef a, double c) {
  return LLVMBuildFCmp(g->b, LLVMRealOLT, a, dconst(g, c), "");
}
static LLVMValueRef sel(LlvmGen *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(g->b, c, a, b, "");
}

// c[0] + s (c[1] + s (c[2] + ...)), n coefficients; each step one
// llvm.fmuladd (fused where the target has FMA).
static LLVMValueRef horner(LlvmGen *g, LLVMValueRef s, const double *c, int n) {
  LLVMValueRef p = dconst(g, c[n - 1]);
  for (int i = n - 2; i >= 0; i--) p = llvm_call_intr(g, "llvm.fmuladd", (LLVMValueRef[]){p, s, dconst(g, c[i])}, 3);
  return p;
}

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

// e^d for an f64 d in [-150, 150] (or NaN), relative error ~2e-16.
static LLVMValueRef exp_core(LlvmGen *g, LLVMValueRef d) {
  LLVMBuilderRef b = g->b;
  const double LOG2E = 0x1.71547652b82fep+0, LN2_HI = 0x1.62e42fee00000p-1, LN2_LO = 0x1.a39ef35793c76p-33;
  const double ROUND = 0x1.8p52; // t + ROUND rounds t to an integer, held in the low bits
  LLVMValueRef big = dadd(g, dmul(g, d, dconst(g, LOG2E)), dconst(g, ROUND));
  LLVMValueRef k = dsub(g, big, dconst(g, ROUND));
  LLVMValueRef r = dsub(g, dsub(g, d, dmul(g, k, dconst(g, LN2_HI))), dmul(g, k, dconst(g, LN2_LO)));
  // 2^k: the low bits of big are k + 2^51; adding the exponent bias and
  // shifting by 52 drops ROUND's own bits.
  LLVMValueRef kb = LLVMBuildBitCast(b, big, g->ti64, "");
  LLVMValueRef e = LLVMBuildShl(b, LLVMBuildAdd(b, kb, LLVMConstInt(g->ti64, 1023, 0), ""), LLVMConstInt(g->ti64, 52, 0), "");
  return dmul(g, horner(g, r, EXP_R, COUNT(EXP_R)), LLVMBuildBitCast(b, e, g->tf64, ""));
}

// f(x) as `float NAME(float)`, internal and always inlined; body builds
// the f64 result from the argument in f64.
static LLVMValueRef math_fn(LlvmGen *g, int which, const char *name, LLVMValueRef (*body)(LlvmGen *, LLVMValueRef)) {
  if (g->mathfn[which]) return g->mathfn[which];
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->tf32, &g->tf32, 1, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  llvm_fn_attrs(g, fn);
  llvm_fn_attr(g, fn, "alwaysinline");
  LLVMBasicBlockRef saved = LLVMGetInsertBlock(g->b);
  llvm_fn_begin(g, fn);
  LLVMValueRef d = LLVMBuildFPExt(g->b, LLVMGetParam(fn, 0), g->tf64, "");
  LLVMBuildRet(g->b, LLVMBuildFPTrunc(g->b, body(g, d), g->tf32, ""));
  LLVMPositionBuilderAtEnd(g->b, saved);
  return g->mathfn[which] = fn;
}

static LLVMValueRef expf_body(LlvmGen *g, LLVMValueRef d) {
  d = sel(g, flt(g, d, -150), dconst(g, -150), d);
  d = sel(g, LLVMBuildFCmp(g->b, LLVMRealOGT, d, dconst(g, 100), ""), dconst(g, 100), d);
  return exp_core(g, d);
}

static LLVMValueRef erff_body(LlvmGen *g, LLVMValueRef d) {
  LLVMValueRef a = llvm_call_intr(g, "llvm.fabs", &d, 1);
  LLVMValueRef small = dmul(g, a, horner(g, dmul(g, a, a), ERF_SMALL, COUNT(ERF_SMALL)));
  LLVMValueRef s = dmul(g, dsub(g, a, dconst(g, 2.75)), dconst(g, 0.8));
  LLVMValueRef tail = horner(g, s, ERF_TAIL, COUNT(ERF_TAIL));
  LLVMValueRef one = LLVMBuildFCmp(g->b, LLVMRealOGE, a, dconst(g, 4), "");
  LLVMValueRef r = sel(g, flt(g, a, 1.5), small, sel(g, one, dconst(g, 1), tail));
  return llvm_call_intr(g, "llvm.copysign", (LLVMValueRef[]){r, d}, 2);
}

static LLVMValueRef tanhf_body(LlvmGen *g, LLVMValueRef d) {
  LLVMValueRef a = llvm_call_intr(g, "llvm.fabs", &d, 1);
  LLVMValueRef small = dmul(g, a, horner(g, dmul(g, a, a), TANH_SMALL, COUNT(TANH_SMALL)));
  LLVMValueRef c = sel(g, LLVMBuildFCmp(g->b, LLVMRealOGT, a, dconst(g, 20), ""), dconst(g, 20), a);
  LLVMValueRef e = exp_core(g, dmul(g, c, dconst(g, 2)));
  LLVMValueRef big = dsub(g, dconst(g, 1), LLVMBuildFDiv(g->b, dconst(g, 2), dadd(g, e, dconst(g, 1)), ""));
  LLVMValueRef r = sel(g, flt(g, a, 0.25), small, big);
  return llvm_call_intr(g, "llvm.copysign", (LLVMValueRef[]){r, d}, 2);
}

// log(u) for an f64 u > 0 (finite, normal: u comes from an f32), relative
// error ~2e-16. k and m from the bits: u's bits minus sqrt(1/2)'s give k in
// the exponent field (arithmetic shift) and, added back to the mantissa,
// m in [sqrt(1/2), sqrt(2)).
static LLVMValueRef log_core(LlvmGen *g, LLVMValueRef u) {
  LLVMBuilderRef b = g->b;
  const uint64_t HALF_SQRT2 = 0x3fe6a09e667f3bcdull, MANT = 0x000fffffffffffffull;
  const double LN2 = 0x1.62e42fefa39efp-1;
  LLVMValueRef bits = LLVMBuildBitCast(b, u, g->ti64, "");
  LLVMValueRef ix = LLVMBuildSub(b, bits, LLVMConstInt(g->ti64, HALF_SQRT2, 0), "");
  LLVMValueRef k = LLVMBuildSIToFP(b, LLVMBuildAShr(b, ix, LLVMConstInt(g->ti64, 52, 0), ""), g->tf64, "");
  LLVMValueRef mb = LLVMBuildAdd(b, LLVMBuildAnd(b, ix, LLVMConstInt(g->ti64, MANT, 0), ""),
                                 LLVMConstInt(g->ti64, HALF_SQRT2, 0), "");
  LLVMValueRef m = LLVMBuildBitCast(b, mb, g->tf64, "");
  LLVMValueRef f = dsub(g, m, dconst(g, 1));
  LLVMValueRef s = LLVMBuildFDiv(b, f, dadd(g, f, dconst(g, 2)), "");
  LLVMValueRef r = dmul(g, dmul(g, s, dconst(g, 2)), horner(g, dmul(g, s, s), LOG_S, COUNT(LOG_S)));
  return dadd(g, dmul(g, k, dconst(g, LN2)), r);
}

// The special values of log(u): u == 0 -> -inf, +inf -> +inf, below 0 or
// NaN -> NaN; otherwise r.
static LLVMValueRef log_special(LlvmGen *g, LLVMValueRef u, LLVMValueRef r) {
  LLVMValueRef inf = dconst(g, INFINITY);
  r = sel(g, LLVMBuildFCmp(g->b, LLVMRealOEQ, u, inf, ""), inf, r);
  r = sel(g, LLVMBuildFCmp(g->b, LLVMRealOEQ, u, dconst(g, 0), ""), dconst(g, -INFINITY), r);
  return sel(g, LLVMBuildFCmp(g->b, LLVMRealOGE, u, dconst(g, 0), ""), r, dconst(g, NAN));
}

static LLVMValueRef logf_body(LlvmGen *g, LLVMValueRef d) { return log_special(g, d, log_core(g, d)); }

static LLVMValueRef log1pf_body(LlvmGen *g, LLVMValueRef d) {
  LLVMValueRef u = dadd(g, d, dconst(g, 1));
  LLVMValueRef tiny = flt(g, llvm_call_intr(g, "llvm.fabs", &d, 1), 0x1p-29);
  LLVMValueRef r = sel(g, tiny, dsub(g, d, dmul(g, dmul(g, d, d), dconst(g, 0.5))), log_core(g, u));
  return log_special(g, u, r);
}

LLVMValueRef llvm_math_f32(LlvmGen *g, KUnOp op, LLVMValueRef x) {
  LLVMValueRef fn;
  switch (op) {
  case KU_EXP: fn = math_fn(g, 0, "mlc.expf", expf_body); break;
  case KU_ERF: fn = math_fn(g, 1, "mlc.erff", erff_body); break;
  case KU_TANH: fn = math_fn(g, 2, "mlc.tanhf", tanhf_body); break;
  case KU_LOG: fn = math_fn(g, 3, "mlc.logf", logf_body); break;
  case KU_LOG1P: fn = math_fn(g, 4, "mlc.log1pf", log1pf_body); break;
  default: MLC_UNREACHABLE();
  }
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(fn), fn, &x, 1, "");
}
