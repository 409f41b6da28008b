// ir_verify.c — the graph IR verifier, run after IR construction, after
// parsing IR text, and after every pass in tests.
//
// Checks, per module: function and parameter names unique. Per function:
// argument names unique; every operand defined earlier in the same function
// (which also rules out cycles); arity and attributes as the op table and
// schema say; every node's type equal to what its shape rule computes;
// param/buffer reads naming a module entry of that kind and type; seeds of
// impure nodes unique; outputs defined and matching the declared result
// types. Every problem is reported (collect, then stop) as
//   ir: %5 = matmul(%3, %4): inner dims 784 and 256 differ
// at the node's span.
#include "ir.h"

#include <string.h>

typedef struct V {
  IrFunc *f;
  DiagSink *diags;
  Arena *a;
  bool ok;
} V;

// "%5 = matmul(%3, %4)" — the node as the printer would head it.
static const char *node_head(V *v, const IrNode *n) {
  StrBuf b = {0};
  sb_printf(&b, "%s = %s", ir_value_name(v->a, n), ir_op_name(n->op));
  if (n->name && n->op != IR_INPUT) sb_printf(&b, " %s", n->name);
  if (n->nin) {
    sb_putc(&b, '(');
    for (int i = 0; i < n->nin; i++)
      sb_printf(&b, "%s%s", i ? ", " : "", n->in[i] ? ir_value_name(v->a, n->in[i]) : "?");
    sb_putc(&b, ')');
  }
  char *s = arena_strdup(v->a, b.data);
  sb_free(&b);
  return s;
}

static void report(V *v, const IrNode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(V *v, const IrNode *n, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  diag_error(v->diags, n->span, "ir: %s: %s", node_head(v, n), msg);
  v->ok = false;
}

// ---- operands -----------------------------------------------------------------------------
// Defined before use: an argument of f, or a body node of f at an earlier
// position (ir_number set positions).
static bool defined_before(const IrFunc *f, const IrNode *in, int order) {
  if (!in || in->func != f) return false;
  if (in->op == IR_INPUT) {
    int i = in->order + f->params.len;
    return i >= 0 && i < f->params.len && VEC_AT(f->params, IrNode, i) == in;
  }
  return in->order >= 0 && in->order < order && VEC_AT(f->nodes, IrNode, in->order) == in;
}

static bool check_operands(V *v, const IrNode *n) {
  for (int i = 0; i < n->nin; i++)
    if (!defined_before(v->f, n->in[i], n->order)) {
      report(v, n, "operand %d is not defined before its use", i);
      return false;
    }
  return true;
}

// ---- model state -----------------------------------------------------------------------------
static void check_state(V *v, const IrNode *n) {
  IrParam *p = ir_module_find_param(v->f->module, n->name ? n->name : "");
  IrParamKind want = n->op == IR_BUFFER ? IRP_BUFFER : n->op == IR_OPTSTATE ? IRP_OPTSTATE : IRP_PARAM;
  static const char *const kinds[] = {"param", "buffer", "optstate"};
  if (!p) {
    report(v, n, "no %s named %s in the module", kinds[want], n->name ? n->name : "?");
  } else if (p->kind != want) {
    report(v, n, "%s is a %s", p->name, kinds[p->kind]);
  } else if (!type_eq(p->type, n->type)) {
    report(v, n, "type %s differs from the module's %s", type_str(v->a, n->type),
           type_str(v->a, p->type));
  }
}

// store PATH(v): the slot exists, v has its type, and no earlier store in
// the function writes it (one write per slot and step).
static void check_store(V *v, const IrNode *n, int idx) {
  IrParam *p = ir_module_find_param(v->f->module, n->name ? n->name : "");
  if (!p) {
    report(v, n, "no state named %s in the module", n->name ? n->name : "?");
    return;
  }
  if (!type_eq(p->type, n->in[0]->type)) {
    report(v, n, "stores a %s into %s of type %s", type_str(v->a, n->in[0]->type), p->name,
           type_str(v->a, p->type));
    return;
  }
  for (int i = 0; i < idx; i++) {
    IrNode *m = VEC_AT(v->f->nodes, IrNode, i);
    if (m->op == IR_STORE && m->name && strcmp(m->name, p->name) == 0) {
      report(v, n, "%s is already stored by %%%d", p->name, m->id);
      return;
    }
  }
}

// ---- one node ----------------------------------------------------------------------------------
static void check_seed(V *v, const IrNode *n, int idx) {
  int64_t seed, other;
  if (!ir_attr_int(&n->attrs, IRA_SEED, &seed)) return;
  for (int i = 0; i < idx; i++) {
    IrNode *m = VEC_AT(v->f->nodes, IrNode, i);
    if ((ir_op_flags(m->op) & IRF_IMPURE) && ir_attr_int(&m->attrs, IRA_SEED, &other) &&
        other == seed) {
      report(v, n, "seed %lld is already used by %%%d", (long long)seed, m->id);
      return;
    }
  }
}

// custom_grad(y, x1..xn) {func}: func is a module function taking
// (x1..xn, dy) and returning one gradient per x, typed like it.
static void check_custom_grad(V *v, const IrNode *n) {
  int64_t k = -1;
  ir_attr_int(&n->attrs, IRA_FUNC, &k);
  IrModule *m = v->f->module;
  if (!m || k < 0 || k >= m->funcs.len) {
    report(v, n, "func %lld is not a function of the module", (long long)k);
    return;
  }
  IrFunc *g = VEC_AT(m->funcs, IrFunc, k);
  if (g->params.len != n->nin || g->outputs.len != n->nin - 1) {
    report(v, n, "gradient function %s must take %d arguments and return %d", g->name,
           n->nin, n->nin - 1);
    return;
  }
  for (int i = 1; i < n->nin; i++)
    if (VEC_AT(g->results, Type, i - 1)->dtype != n->in[i]->type->dtype ||
        VEC_AT(g->results, Type, i - 1)->rank != n->in[i]->type->rank)
      report(v, n, "gradient %d of %s does not match operand %d", i - 1, g->name, i);
}

static void check_node(V *v, IrNode *n, int idx) {
  if (n->func != v->f) report(v, n, "node belongs to another function");
  if (n->op == IR_INPUT) {
    report(v, n, "inputs belong in the signature, not the body");
    return;
  }
  if (!n->type) {
    report(v, n, "node has no type");
    return;
  }
  if (!check_operands(v, n)) return;
  char err[512];
  Type *t = ir_shape_infer(v->a, n->op, n->in, n->nin, &n->attrs, n->type, err, sizeof err);
  if (!t) {
    report(v, n, "%s", err);
    return;
  }
  if (!type_eq(t, n->type)) {
    report(v, n, "type %s differs from the computed %s", type_str(v->a, n->type),
           type_str(v->a, t));
    return;
  }
  if (n->op == IR_PARAM || n->op == IR_BUFFER || n->op == IR_OPTSTATE) check_state(v, n);
  if (n->op == IR_STORE) check_store(v, n, idx);
  if (ir_op_flags(n->op) & IRF_IMPURE) check_seed(v, n, idx);
  if (n->op == IR_CUSTOM_GRAD) check_custom_grad(v, n);
}

// ---- signature and outputs --------------------------------------------------------------------
static void check_args(V *v) {
  IrFunc *f = v->f;
  for (int i = 0; i < f->params.len; i++) {
    IrNode *p = VEC_AT(f->params, IrNode, i);
    if (p->op != IR_INPUT || !p->type) report(v, p, "argument %d is not a typed input", i);
    for (int j = 0; j < i; j++)
      if (strcmp(VEC_AT(f->params, IrNode, j)->name, p->name) == 0)
        report(v, p, "duplicate argument name");
  }
}

static void func_error(V *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void func_error(V *v, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  diag_error(v->diags, v->f->span, "ir: func %s: %s", v->f->name, msg);
  v->ok = false;
}

static void check_outputs(V *v) {
  IrFunc *f = v->f;
  if (f->outputs.len != f->results.len) {
    func_error(v, "returns %d value%s but declares %d", f->outputs.len,
               f->outputs.len == 1 ? "" : "s", f->results.len);
    return;
  }
  int order = f->nodes.len;
  for (int i = 0; i < f->outputs.len; i++) {
    IrNode *o = VEC_AT(f->outputs, IrNode, i);
    Type *want = VEC_AT(f->results, Type, i);
    if (!defined_before(f, o, order))
      func_error(v, "returned value %d is not defined in the function", i);
    else if (!type_eq(o->type, want))
      func_error(v, "return %s has type %s, declared %s", ir_value_name(v->a, o),
                 type_str(v->a, o->type), type_str(v->a, want));
  }
}

bool ir_verify_func(IrFunc *f, DiagSink *diags) {
  V v = {f, diags, f->module->arena, true};
  ir_number(f);
  check_args(&v);
  for (int i = 0; i < f->nodes.len; i++) check_node(&v, VEC_AT(f->nodes, IrNode, i), i);
  check_outputs(&v);
  return v.ok;
}

// ---- module ---------------------------------------------------------------------------------------
static bool check_module_names(IrModule *m, DiagSink *diags) {
  bool ok = true;
  for (int i = 0; i < m->params.len; i++) {
    IrParam *p = VEC_AT(m->params, IrParam, i);
    for (int j = 0; j < i; j++)
      if (strcmp(VEC_AT(m->params, IrParam, j)->name, p->name) == 0) {
        diag_error(diags, p->span, "ir: duplicate parameter %s", p->name);
        ok = false;
      }
  }
  for (int i = 0; i < m->funcs.len; i++) {
    IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    for (int j = 0; j < i; j++)
      if (strcmp(VEC_AT(m->funcs, IrFunc, j)->name, f->name) == 0) {
        diag_error(diags, f->span, "ir: duplicate function %s", f->name);
        ok = false;
      }
  }
  return ok;
}

bool ir_verify(IrModule *m, DiagSink *diags) {
  bool ok = check_module_names(m, diags);
  for (int i = 0; i < m->funcs.len; i++) ok &= ir_verify_func(VEC_AT(m->funcs, IrFunc, i), diags);
  return ok;
}
