// scalar.c — the table of elementwise formulas (scalar.h): for every
// elementwise IrOp its forward formula and, for differentiable ones, its
// gradient, each written once against the ScBuilder primitives; plus the
// double builder behind sc_eval.
//
// Input: an op, operand values of some builder, the node's scalar params.
// Output: the builder's value for the result (or the operands' gradients).
//
// Formulas are C functions over a builder `b`; the capital macros below are
// its primitives (ADD(x, y) is b->prim(b, SCP_ADD, {x, y})). Gradient
// formulas bind each new value to a local before the next is made, so the
// graph builder creates nodes in the same order on every compiler (C leaves
// the order of argument evaluation open). A gradient names another table op
// through sc_apply (relu's is relu_grad(dy, x)), which the graph builder
// emits as that op's node.
#include "scalar.h"

#include <math.h>

// ---- primitives --------------------------------------------------------------------------
static const struct {
  const char *name;
  int arity;
} prims[] = {
#define X(id, name, arity) {name, arity},
    SC_PRIMS(X)
#undef X
};
_Static_assert(sizeof prims / sizeof prims[0] == SCP_COUNT, "prims out of step with SC_PRIMS");

const char *sc_prim_name(ScPrim p) { return prims[p].name; }
int sc_prim_arity(ScPrim p) { return prims[p].arity; }

static ScVal pr(ScBuilder *b, ScPrim p, ScVal x, ScVal y, ScVal z) {
  ScVal a[3] = {x, y, z};
  return b->prim(b, p, a);
}

static const ScVal NONE = {0};
#define K(v) b->konst(b, (v))
#define U(p, x) pr(b, SCP_##p, (x), NONE, NONE)
#define B2(p, x, y) pr(b, SCP_##p, (x), (y), NONE)
#define NEG(x) U(NEG, x)
#define ABS(x) U(ABS, x)
#define EXP(x) U(EXP, x)
#define LOG(x) U(LOG, x)
#define ADD(x, y) B2(ADD, x, y)
#define SUB(x, y) B2(SUB, x, y)
#define MUL(x, y) B2(MUL, x, y)
#define DIV(x, y) B2(DIV, x, y)
#define MAX(x, y) B2(MAX, x, y)
#define MIN(x, y) B2(MIN, x, y)
#define SEL(c, x, y) pr(b, SCP_SELECT, (c), (x), (y))

static ScVal apply1(ScBuilder *b, IrOp op, ScVal x) { return sc_apply(b, op, &x, NULL); }
static ScVal apply2(ScBuilder *b, IrOp op, ScVal x, ScVal y) {
  ScVal a[2] = {x, y};
  return sc_apply(b, op, a, NULL);
}

// ---- unary --------------------------------------------------------------------------------
// Every formula has the same signature; not every one uses each parameter.
#define UNUSED __attribute__((unused))
#define FWD(name) static ScVal name(UNUSED ScBuilder *b, const ScVal *x, UNUSED const double *p)
#define GRAD(name) static void name(UNUSED ScBuilder *b, const ScGrad *g)

FWD(f_exp) { return EXP(x[0]); }
FWD(f_log) { return LOG(x[0]); }
FWD(f_sqrt) { return U(SQRT, x[0]); }
FWD(f_rsqrt) { return DIV(K(1), U(SQRT, x[0])); }
FWD(f_abs) { return ABS(x[0]); }
FWD(f_neg) { return NEG(x[0]); }
FWD(f_relu) { return MAX(x[0], K(0)); } // NaN stays NaN, -0 gives 0
FWD(f_tanh) { return U(TANH, x[0]); }
FWD(f_cos) { return U(COS, x[0]); }
FWD(f_not) { return U(NOT, x[0]); }

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2))   (the exact form, not tanh's)
FWD(f_gelu) {
  return MUL(MUL(K(0.5), x[0]), ADD(K(1), U(ERF, DIV(x[0], K(sqrt(2.0))))));
}

// sigmoid(x) = x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)): neither
// branch overflows where it is taken.
static ScVal sigmoid(ScBuilder *b, ScVal x) {
  ScVal e = EXP(x);
  return SEL(B2(GE, x, K(0)), DIV(K(1), ADD(K(1), EXP(NEG(x)))), DIV(e, ADD(K(1), e)));
}
FWD(f_sigmoid) { return sigmoid(b, x[0]); }
FWD(f_silu) { return MUL(x[0], sigmoid(b, x[0])); }

// sign(x): -1, 0 or 1; 0, -0 and NaN give themselves (abs's gradient)
FWD(f_sign) {
  ScVal neg = SEL(B2(LT, x[0], K(0)), K(-1), x[0]);
  return SEL(B2(GT, x[0], K(0)), K(1), neg);
}

// d exp = dy * y; d log = dy / x; d sqrt = dy * 0.5 / y;
// d rsqrt = dy * (-0.5 * y^3)  (x^-1/2 -> -1/2 x^-3/2)
GRAD(g_exp) { g->dx[0] = MUL(g->dy, g->y); }
GRAD(g_log) { g->dx[0] = DIV(g->dy, g->x[0]); }
GRAD(g_sqrt) {
  ScVal half = MUL(g->dy, K(0.5));
  g->dx[0] = DIV(half, g->y);
}
GRAD(g_rsqrt) {
  ScVal k = K(-0.5), y = g->y, y2 = MUL(y, y), y3 = MUL(y, y2), d = MUL(k, y3);
  g->dx[0] = MUL(g->dy, d);
}
GRAD(g_abs) { // 0 at 0
  ScVal s = apply1(b, IR_SIGN, g->x[0]);
  g->dx[0] = MUL(g->dy, s);
}
GRAD(g_neg) { g->dx[0] = NEG(g->dy); }
// relu's mask reads its output: y > 0 exactly where x > 0 (NaN and -0 give
// y <= 0 as x <= 0 does), and y is what the forward pass keeps anyway, so
// the pre-activation need not be stored (a matmul or conv epilogue then
// takes the relu too)
GRAD(g_relu) { g->dx[0] = apply2(b, IR_RELU_GRAD, g->dy, g->y); }
GRAD(g_gelu) { g->dx[0] = apply2(b, IR_GELU_GRAD, g->dy, g->x[0]); }
GRAD(g_silu) { g->dx[0] = apply2(b, IR_SILU_GRAD, g->dy, g->x[0]); }
GRAD(g_sigmoid) { g->dx[0] = apply2(b, IR_SIGMOID_GRAD, g->dy, g->y); }
GRAD(g_tanh) { g->dx[0] = apply2(b, IR_TANH_GRAD, g->dy, g->y); }

// softplus(x; beta, threshold) = x * beta > threshold ? x : log1p(exp(x * beta)) / beta
// (torch.nn.functional.softplus); d = sigmoid(x * beta) below the threshold, 1 above
FWD(f_softplus) {
  ScVal z = MUL(x[0], K(p[0]));
  return SEL(B2(GT, z, K(p[1])), x[0], DIV(U(LOG1P, EXP(z)), K(p[0])));
}
GRAD(g_softplus) {
  ScVal z = MUL(g->x[0], K(g->p[0])), above = B2(GT, z, K(g->p[1]));
  ScVal s = apply1(b, IR_SIGMOID, z), below = MUL(g->dy, s);
  g->dx[0] = SEL(above, g->dy, below);
}

// leaky_relu(x; slope) = x > 0 ? x : x * slope
FWD(f_leaky_relu) { return SEL(B2(GT, x[0], K(0)), x[0], MUL(x[0], K(p[0]))); }
GRAD(g_leaky_relu) {
  ScVal pos = B2(GT, g->x[0], K(0)), neg = MUL(g->dy, K(g->p[0]));
  g->dx[0] = SEL(pos, g->dy, neg);
}

// elu(x; alpha) = x > 0 ? x : (exp(x) - 1) * alpha;  d = alpha * exp(x) at x <= 0
FWD(f_elu) { return SEL(B2(GT, x[0], K(0)), x[0], MUL(SUB(EXP(x[0]), K(1)), K(p[0]))); }
GRAD(g_elu) {
  ScVal pos = B2(GT, g->x[0], K(0)), e = EXP(g->x[0]), d = MUL(e, K(g->p[0])), neg = MUL(g->dy, d);
  g->dx[0] = SEL(pos, g->dy, neg);
}

// hardtanh(x; lo, hi) and clamp(x; lo, hi) = min(max(x, lo), hi) (NaN stays
// NaN). Their gradients differ where x is on a bound, as PyTorch's do:
// hardtanh passes dy only strictly inside (lo, hi), clamp on [lo, hi].
FWD(f_clamp) { return MIN(MAX(x[0], K(p[0])), K(p[1])); }
static void g_bounded(ScBuilder *b, const ScGrad *g, ScPrim above, ScPrim below) {
  ScVal lo = pr(b, above, g->x[0], K(g->p[0]), NONE), hi = pr(b, below, g->x[0], K(g->p[1]), NONE);
  ScVal in = B2(AND, lo, hi), zero = K(0);
  g->dx[0] = SEL(in, g->dy, zero);
}
GRAD(g_hardtanh) { g_bounded(b, g, SCP_GT, SCP_LT); }
GRAD(g_clamp) { g_bounded(b, g, SCP_GE, SCP_LE); }

// log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|))   (PyTorch's stable form);
// d = sigmoid(-x)
FWD(f_log_sigmoid) { return SUB(MIN(x[0], K(0)), U(LOG1P, EXP(NEG(ABS(x[0]))))); }
GRAD(g_log_sigmoid) {
  ScVal s = apply1(b, IR_SIGMOID, NEG(g->x[0]));
  g->dx[0] = MUL(g->dy, s);
}

// ---- fused gradients: (dy, saved) ------------------------------------------------------------
// relu_grad(dy, x) = x > 0 ? dy : 0
FWD(f_relu_grad) { return SEL(B2(GT, x[1], K(0)), x[0], K(0)); }

// gelu_grad(dy, x) = dy * (Phi(x) + x phi(x)), Phi = 0.5 (1 + erf(x / sqrt 2)),
// phi = exp(-x^2 / 2) / sqrt(2 pi)
FWD(f_gelu_grad) {
  ScVal s = x[1];
  ScVal cdf = MUL(K(0.5), ADD(K(1), U(ERF, DIV(s, K(sqrt(2.0))))));
  ScVal pdf = MUL(MUL(s, K(0.39894228040143267794)), EXP(MUL(MUL(K(-0.5), s), s)));
  return MUL(x[0], ADD(cdf, pdf));
}

// silu_grad(dy, x) = dy * s * (1 + x (1 - s)), s = sigmoid(x)
FWD(f_silu_grad) {
  ScVal s = sigmoid(b, x[1]);
  return MUL(MUL(x[0], s), ADD(K(1), MUL(x[1], SUB(K(1), s))));
}

// sigmoid_grad(dy, y) = dy * y * (1 - y); tanh_grad(dy, y) = dy * (1 - y^2)
FWD(f_sigmoid_grad) { return MUL(MUL(x[0], x[1]), SUB(K(1), x[1])); }
FWD(f_tanh_grad) { return MUL(x[0], SUB(K(1), MUL(x[1], x[1]))); }

// ---- binary, compare, logical, where ------------------------------------------------------------
FWD(f_add) { return ADD(x[0], x[1]); }
FWD(f_sub) { return SUB(x[0], x[1]); }
FWD(f_mul) { return MUL(x[0], x[1]); }
FWD(f_div) { return DIV(x[0], x[1]); }
FWD(f_pow) { return B2(POW, x[0], x[1]); }
FWD(f_maximum) { return MAX(x[0], x[1]); }
FWD(f_minimum) { return MIN(x[0], x[1]); }
FWD(f_lt) { return B2(LT, x[0], x[1]); }
FWD(f_le) { return B2(LE, x[0], x[1]); }
FWD(f_gt) { return B2(GT, x[0], x[1]); }
FWD(f_ge) { return B2(GE, x[0], x[1]); }
FWD(f_eq) { return B2(EQ, x[0], x[1]); }
FWD(f_ne) { return B2(NE, x[0], x[1]); }
FWD(f_and) { return B2(AND, x[0], x[1]); }
FWD(f_or) { return B2(OR, x[0], x[1]); }
FWD(f_where) { return SEL(x[0], x[1], x[2]); }

GRAD(g_add) {
  if (g->need[0]) g->dx[0] = g->dy;
  if (g->need[1]) g->dx[1] = g->dy;
}
GRAD(g_sub) {
  if (g->need[0]) g->dx[0] = g->dy;
  if (g->need[1]) g->dx[1] = NEG(g->dy);
}
GRAD(g_mul) {
  if (g->need[0]) g->dx[0] = MUL(g->dy, g->x[1]);
  if (g->need[1]) g->dx[1] = MUL(g->dy, g->x[0]);
}
// y = a / b: da = dy / b, db = -(dy * y) / b
GRAD(g_div) {
  if (g->need[0]) g->dx[0] = DIV(g->dy, g->x[1]);
  if (g->need[1]) {
    ScVal t = MUL(g->dy, g->y), q = DIV(t, g->x[1]);
    g->dx[1] = NEG(q);
  }
}
// y = a^b: da = dy * b * a^(b - 1), db = dy * y * log(a)
GRAD(g_pow) {
  ScVal a = g->x[0], e = g->x[1];
  if (g->need[0]) {
    ScVal one = K(1), em1 = SUB(e, one), pw = B2(POW, a, em1), t = MUL(e, pw);
    g->dx[0] = MUL(g->dy, t);
  }
  if (g->need[1]) {
    ScVal la = LOG(a), t = MUL(g->y, la);
    g->dx[1] = MUL(g->dy, t);
  }
}

// Weight of a in maximum(a, b) (minimum: win = lt): 1 where a wins, 1/2 on a
// tie (split evenly, as PyTorch does), 0 elsewhere.
static ScVal extremum_weight(ScBuilder *b, ScPrim win, ScVal a, ScVal c) {
  ScVal half = K(0.5), zero = K(0), one = K(1);
  ScVal eq = B2(EQ, a, c), tie = SEL(eq, half, zero);
  ScVal w = pr(b, win, a, c, NONE);
  return SEL(w, one, tie);
}
static void g_extremum(ScBuilder *b, const ScGrad *g, ScPrim win, ScPrim lose) {
  if (g->need[0]) {
    ScVal w = extremum_weight(b, win, g->x[0], g->x[1]);
    g->dx[0] = MUL(g->dy, w);
  }
  if (g->need[1]) {
    ScVal w = extremum_weight(b, lose, g->x[0], g->x[1]);
    g->dx[1] = MUL(g->dy, w);
  }
}
GRAD(g_maximum) { g_extremum(b, g, SCP_GT, SCP_LT); }
GRAD(g_minimum) { g_extremum(b, g, SCP_LT, SCP_GT); }

// where(c, a, b): a's share where c holds, b's elsewhere; none to c
GRAD(g_where) {
  ScVal zero = K(0);
  if (g->need[1]) g->dx[1] = SEL(g->x[0], g->dy, zero);
  if (g->need[2]) g->dx[2] = SEL(g->x[0], zero, g->dy);
}

// ---- the table ------------------------------------------------------------------------------------
static const ScOp table[IR_OP_COUNT] = {
    [IR_EXP] = {1, 0, false, f_exp, g_exp},
    [IR_LOG] = {1, 0, false, f_log, g_log},
    [IR_SQRT] = {1, 0, false, f_sqrt, g_sqrt},
    [IR_RSQRT] = {1, 0, false, f_rsqrt, g_rsqrt},
    [IR_ABS] = {1, 0, true, f_abs, g_abs},
    [IR_NEG] = {1, 0, true, f_neg, g_neg},
    [IR_RELU] = {1, 0, true, f_relu, g_relu},
    [IR_GELU] = {1, 0, false, f_gelu, g_gelu},
    [IR_SIGMOID] = {1, 0, false, f_sigmoid, g_sigmoid},
    [IR_TANH] = {1, 0, false, f_tanh, g_tanh},
    [IR_SILU] = {1, 0, false, f_silu, g_silu},
    [IR_SIGN] = {1, 0, true, f_sign, NULL},
    [IR_COS] = {1, 0, false, f_cos, NULL},
    [IR_SOFTPLUS] = {1, 2, false, f_softplus, g_softplus},
    [IR_LEAKY_RELU] = {1, 1, false, f_leaky_relu, g_leaky_relu},
    [IR_ELU] = {1, 1, false, f_elu, g_elu},
    [IR_HARDTANH] = {1, 2, false, f_clamp, g_hardtanh},
    [IR_CLAMP] = {1, 2, false, f_clamp, g_clamp},
    [IR_LOG_SIGMOID] = {1, 0, false, f_log_sigmoid, g_log_sigmoid},
    [IR_ADD] = {2, 0, true, f_add, g_add},
    [IR_SUB] = {2, 0, true, f_sub, g_sub},
    [IR_MUL] = {2, 0, true, f_mul, g_mul},
    [IR_DIV] = {2, 0, true, f_div, g_div},
    [IR_POW] = {2, 0, false, f_pow, g_pow},
    [IR_MAXIMUM] = {2, 0, true, f_maximum, g_maximum},
    [IR_MINIMUM] = {2, 0, true, f_minimum, g_minimum},
    [IR_LT] = {2, 0, true, f_lt, NULL},
    [IR_LE] = {2, 0, true, f_le, NULL},
    [IR_GT] = {2, 0, true, f_gt, NULL},
    [IR_GE] = {2, 0, true, f_ge, NULL},
    [IR_EQ] = {2, 0, true, f_eq, NULL},
    [IR_NE] = {2, 0, true, f_ne, NULL},
    [IR_AND] = {2, 0, true, f_and, NULL},
    [IR_OR] = {2, 0, true, f_or, NULL},
    [IR_NOT] = {1, 0, true, f_not, NULL},
    [IR_WHERE] = {3, 0, true, f_where, g_where},
    [IR_RELU_GRAD] = {2, 0, false, f_relu_grad, NULL},
    [IR_GELU_GRAD] = {2, 0, false, f_gelu_grad, NULL},
    [IR_SILU_GRAD] = {2, 0, false, f_silu_grad, NULL},
    [IR_SIGMOID_GRAD] = {2, 0, false, f_sigmoid_grad, NULL},
    [IR_TANH_GRAD] = {2, 0, false, f_tanh_grad, NULL},
};

const ScOp *sc_op(IrOp op) {
  return (unsigned)op < IR_OP_COUNT && table[op].fwd ? &table[op] : NULL;
}

ScVal sc_apply(ScBuilder *b, IrOp op, const ScVal *x, const double *params) {
  const ScOp *o = sc_op(op);
  MLC_ASSERT(o);
  static const double none[SC_MAX_PARAMS];
  if (!params) params = none;
  return b->op ? b->op(b, op, x, params) : o->fwd(b, x, params);
}

// ---- the double builder --------------------------------------------------------------------------
double sc_prim_eval(ScPrim p, const double *a) {
  double x = a[0], y = a[1];
  switch (p) {
  case SCP_NEG: return -x;
  case SCP_NOT: return x == 0;
  case SCP_ABS: return fabs(x);
  case SCP_EXP: return exp(x);
  case SCP_LOG: return log(x);
  case SCP_LOG1P: return log1p(x);
  case SCP_SQRT: return sqrt(x);
  case SCP_TANH: return tanh(x);
  case SCP_ERF: return erf(x);
  case SCP_COS: return cos(x);
  case SCP_ADD: return x + y;
  case SCP_SUB: return x - y;
  case SCP_MUL: return x * y;
  case SCP_DIV: return x / y;
  case SCP_POW: return pow(x, y);
  case SCP_MAX: return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
  case SCP_MIN: return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
  case SCP_LT: return x < y;
  case SCP_LE: return x <= y;
  case SCP_GT: return x > y;
  case SCP_GE: return x >= y;
  case SCP_EQ: return x == y;
  case SCP_NE: return x != y;
  case SCP_AND: return x != 0 && y != 0;
  case SCP_OR: return x != 0 || y != 0;
  case SCP_SELECT: return x != 0 ? y : a[2];
  case SCP_COUNT: break;
  }
  MLC_UNREACHABLE();
}

static ScVal f64_konst(ScBuilder *b, double v) {
  (void)b;
  return (ScVal){.f = v};
}

static ScVal f64_prim(ScBuilder *b, ScPrim p, const ScVal *args) {
  (void)b;
  double a[3] = {args[0].f, sc_prim_arity(p) > 1 ? args[1].f : 0, sc_prim_arity(p) > 2 ? args[2].f : 0};
  return (ScVal){.f = sc_prim_eval(p, a)};
}

double sc_eval(IrOp op, const double *x, const double *params) {
  static ScBuilder f64 = {f64_konst, f64_prim, NULL};
  const ScOp *o = sc_op(op);
  MLC_ASSERT(o && o->nin <= SC_MAX_IN);
  ScVal v[SC_MAX_IN];
  for (int i = 0; i < o->nin; i++) v[i].f = x[i];
  static const double none[SC_MAX_PARAMS];
  return o->fwd(&f64, v, params ? params : none).f;
}

// ---- parameters as attributes ---------------------------------------------------------------------
int sc_params(const IrNode *n, double *p) {
  const ScOp *o = sc_op(n->op);
  int k = o ? o->nparams : 0;
  static const IrAttrKey keys[SC_MAX_PARAMS] = {IRA_A, IRA_B};
  for (int i = 0; i < k; i++) p[i] = ir_node_float(n, keys[i]);
  return k;
}

void sc_set_params(Arena *a, IrAttrs *as, IrOp op, const double *p) {
  const ScOp *o = sc_op(op);
  MLC_ASSERT(o && o->nparams <= SC_MAX_PARAMS);
  static const IrAttrKey keys[SC_MAX_PARAMS] = {IRA_A, IRA_B};
  for (int i = 0; i < o->nparams; i++) ir_attr_set_float(a, as, keys[i], p[i]);
}
