// ir.c — construction of the graph IR: the op and attribute tables expanded
// from ir_ops.def / IR_ATTR_KEYS, modules, functions, nodes, and the
// per-function hash-consing table that makes CSE free.
//
// Input: calls from the IR builder (lowering from sema), autodiff, passes and
// the text parser. Output: IrModule graphs owned by one arena. Nothing here
// checks types; ir_build asks the shape rules (ir_shape.c) and the verifier
// checks everything after the fact.
#include "ir.h"

#include <assert.h>
#include <string.h>

// ---- op table ------------------------------------------------------------------------
typedef struct OpInfo {
  const char *name;
  int nin;
  IrClass cls;
  unsigned flags;
} OpInfo;

static const OpInfo op_info[] = {
#define IROP(id, name, nin, cls, flags) {name, nin, IRC_##cls, flags},
#include "ir_ops.def"
};
static_assert(sizeof op_info / sizeof op_info[0] == IR_OP_COUNT,
              "op_info must cover ir_ops.def");

const char *ir_op_name(IrOp op) {
  return (unsigned)op < IR_OP_COUNT ? op_info[op].name : "?";
}
int ir_op_nin(IrOp op) { return op_info[op].nin; }
IrClass ir_op_class(IrOp op) { return op_info[op].cls; }
unsigned ir_op_flags(IrOp op) { return op_info[op].flags; }

int ir_op_lookup(const char *name) {
  for (int i = 0; i < IR_OP_COUNT; i++)
    if (strcmp(op_info[i].name, name) == 0) return i;
  return -1;
}

// ---- attribute keys ---------------------------------------------------------------------
static const struct {
  const char *name;
  IrAttrKind kind;
} attr_info[] = {
#define X(id, name, kind) {name, kind},
    IR_ATTR_KEYS(X)
#undef X
};
static_assert(sizeof attr_info / sizeof attr_info[0] == IRA_COUNT,
              "attr_info must cover IR_ATTR_KEYS");
static_assert(IRA_COUNT <= 32, "ir_op_attrs uses a 32-bit set");

const char *ir_attr_name(IrAttrKey k) { return attr_info[k].name; }
IrAttrKind ir_attr_kind(IrAttrKey k) { return attr_info[k].kind; }

int ir_attr_lookup(const char *name) {
  for (int i = 0; i < IRA_COUNT; i++)
    if (strcmp(attr_info[i].name, name) == 0) return i;
  return -1;
}

// ---- attribute lists (sorted by key) ---------------------------------------------------------
// Returns the slot for k, inserting an empty one in key order if absent.
static IrAttr *attr_slot(Arena *a, IrAttrs *as, IrAttrKey k) {
  int i = 0;
  while (i < as->n && as->a[i].key < k) i++;
  if (i < as->n && as->a[i].key == k) return &as->a[i];
  IrAttr *na = arena_alloc(a, sizeof(IrAttr) * (size_t)(as->n + 1));
  if (i) memcpy(na, as->a, sizeof(IrAttr) * (size_t)i);
  if (as->n > i) memcpy(na + i + 1, as->a + i, sizeof(IrAttr) * (size_t)(as->n - i));
  as->a = na;
  as->n++;
  na[i].key = k;
  return &na[i];
}

void ir_attr_set_ints(Arena *a, IrAttrs *as, IrAttrKey k, const int64_t *v,
                      int n) {
  IrAttr *s = attr_slot(a, as, k);
  s->n = n;
  s->ints = arena_alloc(a, sizeof(int64_t) * (size_t)(n ? n : 1));
  if (n) memcpy(s->ints, v, sizeof(int64_t) * (size_t)n);
  s->f = 0;
}

void ir_attr_set_int(Arena *a, IrAttrs *as, IrAttrKey k, int64_t v) {
  ir_attr_set_ints(a, as, k, &v, 1);
}

void ir_attr_set_float(Arena *a, IrAttrs *as, IrAttrKey k, double v) {
  IrAttr *s = attr_slot(a, as, k);
  s->n = 0;
  s->ints = NULL;
  s->f = v;
}

const IrAttr *ir_attr_get(const IrAttrs *as, IrAttrKey k) {
  for (int i = 0; i < as->n; i++)
    if (as->a[i].key == k) return &as->a[i];
  return NULL;
}

bool ir_attr_int(const IrAttrs *as, IrAttrKey k, int64_t *out) {
  const IrAttr *x = ir_attr_get(as, k);
  if (!x || (attr_info[k].kind != IRK_INT && attr_info[k].kind != IRK_DTYPE) || x->n != 1) return false;
  *out = x->ints[0];
  return true;
}

const int64_t *ir_attr_ints(const IrAttrs *as, IrAttrKey k, int *n) {
  const IrAttr *x = ir_attr_get(as, k);
  if (!x || attr_info[k].kind != IRK_INTS) return NULL;
  *n = x->n;
  return x->ints;
}

bool ir_attr_float(const IrAttrs *as, IrAttrKey k, double *out) {
  const IrAttr *x = ir_attr_get(as, k);
  if (!x || attr_info[k].kind != IRK_FLOAT) return false;
  *out = x->f;
  return true;
}

int64_t ir_node_int(const IrNode *n, IrAttrKey k) {
  int64_t v = 0;
  ir_attr_int(&n->attrs, k, &v);
  return v;
}

const int64_t *ir_node_ints(const IrNode *n, IrAttrKey k) {
  static const int64_t zeros[64];
  int len = 0;
  const int64_t *v = ir_attr_ints(&n->attrs, k, &len);
  return v ? v : zeros;
}

double ir_node_float(const IrNode *n, IrAttrKey k) {
  double v = 0;
  ir_attr_float(&n->attrs, k, &v);
  return v;
}

// Floats compare bitwise so that 0.0 and -0.0 stay apart and NaN == NaN.
bool ir_attrs_eq(const IrAttrs *x, const IrAttrs *y) {
  if (x->n != y->n) return false;
  for (int i = 0; i < x->n; i++) {
    const IrAttr *p = &x->a[i], *q = &y->a[i];
    if (p->key != q->key || p->n != q->n) return false;
    if (p->n && memcmp(p->ints, q->ints, sizeof(int64_t) * (size_t)p->n)) return false;
    if (memcmp(&p->f, &q->f, sizeof p->f)) return false;
  }
  return true;
}

static IrAttrs attrs_copy(Arena *a, const IrAttrs *as) {
  IrAttrs c = {0};
  if (!as) return c;
  for (int i = 0; i < as->n; i++) {
    const IrAttr *x = &as->a[i];
    if (attr_info[x->key].kind == IRK_FLOAT)
      ir_attr_set_float(a, &c, x->key, x->f);
    else
      ir_attr_set_ints(a, &c, x->key, x->ints, x->n);
  }
  return c;
}

// ---- modules and functions -----------------------------------------------------------------
IrModule *ir_module_new(Arena *a, const char *name) {
  IrModule *m = arena_alloc(a, sizeof *m);
  m->arena = a;
  m->name = arena_strdup(a, name);
  m->next_seed = 1;
  return m;
}

IrParam *ir_module_add_param(IrModule *m, const char *name, Type *t,
                             IrParamKind kind, bool trainable, Span sp) {
  IrParam *p = arena_alloc(m->arena, sizeof *p);
  p->name = arena_strdup(m->arena, name);
  p->type = t;
  p->kind = kind;
  p->trainable = kind == IRP_PARAM && trainable;
  p->span = sp;
  vec_push(m->arena, &m->params, p);
  return p;
}

IrParam *ir_module_find_param(const IrModule *m, const char *name) {
  for (int i = 0; i < m->params.len; i++) {
    IrParam *p = VEC_AT(m->params, IrParam, i);
    if (strcmp(p->name, name) == 0) return p;
  }
  return NULL;
}

IrFunc *ir_func_new(IrModule *m, const char *name) {
  IrFunc *f = arena_alloc(m->arena, sizeof *f);
  f->name = arena_strdup(m->arena, name);
  f->module = m;
  vec_push(m->arena, &m->funcs, f);
  return f;
}

IrFunc *ir_module_find_func(const IrModule *m, const char *name) {
  for (int i = 0; i < m->funcs.len; i++) {
    IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    if (strcmp(f->name, name) == 0) return f;
  }
  return NULL;
}

// ---- symbols ---------------------------------------------------------------------------------
static Sym *sym_find(const Vec *v, const char *name) {
  for (int i = 0; i < v->len; i++) {
    Sym *s = VEC_AT(*v, Sym, i);
    if (s->name && strcmp(s->name, name) == 0) return s;
  }
  return NULL;
}

Sym *ir_sym(IrModule *m, IrFunc *f, const char *name) {
  Vec *v = f ? &f->syms : &m->syms;
  Sym *s = sym_find(v, name);
  if (!s && f) s = sym_find(&m->syms, name);
  if (!s) {
    s = sym_new(m->arena, arena_strdup(m->arena, name), (Span){0}, false);
    vec_push(m->arena, v, s);
  }
  return s;
}

void ir_sym_add(IrModule *m, IrFunc *f, Sym *s) {
  Vec *v = f ? &f->syms : &m->syms;
  for (int i = 0; i < v->len; i++)
    if (VEC_AT(*v, Sym, i) == s) return;
  vec_push(m->arena, v, s);
}

// ---- hash-consing ----------------------------------------------------------------------------
// Key: op, operand pointers, attributes, type (dtype, rank, dims) and name.
// The hash covers op, operands, attribute values and dtype/rank; equality
// does the full comparison (dims via dim_eq).
static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t node_hash(IrOp op, IrNode **in, int nin, const IrAttrs *as,
                          const Type *t, const char *name) {
  uint64_t h = mix(0, (uint64_t)op);
  for (int i = 0; i < nin; i++) h = mix(h, (uint64_t)(uintptr_t)in[i]);
  for (int i = 0; as && i < as->n; i++) {
    h = mix(h, (uint64_t)as->a[i].key);
    for (int j = 0; j < as->a[i].n; j++) h = mix(h, (uint64_t)as->a[i].ints[j]);
    uint64_t bits;
    memcpy(&bits, &as->a[i].f, sizeof bits);
    h = mix(h, bits);
  }
  if (t) h = mix(mix(h, (uint64_t)t->dtype), (uint64_t)t->rank);
  for (const char *p = name; p && *p; p++) h = mix(h, (uint64_t)(unsigned char)*p);
  return h;
}

static bool node_matches(const IrNode *n, IrOp op, IrNode **in, int nin,
                         const IrAttrs *as, const Type *t, const char *name) {
  static const IrAttrs none = {0};
  if (n->op != op || n->nin != nin) return false;
  for (int i = 0; i < nin; i++)
    if (n->in[i] != in[i]) return false;
  if (!ir_attrs_eq(&n->attrs, as ? as : &none)) return false;
  if ((n->type == NULL) != (t == NULL) || (t && !type_eq(n->type, t))) return false;
  if ((n->name == NULL) != (name == NULL)) return false;
  return !name || strcmp(n->name, name) == 0;
}

static void htab_insert(IrFunc *f, IrNode *n);

static void htab_grow(IrFunc *f) {
  IrNode **old = f->htab;
  int oldcap = f->hcap;
  f->hcap = oldcap ? oldcap * 2 : 64;
  f->htab = arena_alloc(f->module->arena, sizeof(IrNode *) * (size_t)f->hcap);
  f->hlen = 0;
  for (int i = 0; i < oldcap; i++)
    if (old[i]) htab_insert(f, old[i]);
}

static void htab_insert(IrFunc *f, IrNode *n) {
  if ((f->hlen + 1) * 2 > f->hcap) htab_grow(f);
  uint64_t h = node_hash(n->op, n->in, n->nin, &n->attrs, n->type, n->name);
  int i = (int)(h & (uint64_t)(f->hcap - 1));
  while (f->htab[i]) i = (i + 1) & (f->hcap - 1);
  f->htab[i] = n;
  f->hlen++;
}

static IrNode *htab_find(IrFunc *f, IrOp op, IrNode **in, int nin,
                         const IrAttrs *as, const Type *t, const char *name) {
  if (!f->hcap) return NULL;
  uint64_t h = node_hash(op, in, nin, as, t, name);
  int i = (int)(h & (uint64_t)(f->hcap - 1));
  for (; f->htab[i]; i = (i + 1) & (f->hcap - 1))
    if (node_matches(f->htab[i], op, in, nin, as, t, name)) return f->htab[i];
  return NULL;
}

// ---- nodes -------------------------------------------------------------------------------------
static IrNode *node_alloc(IrFunc *f, IrOp op, IrNode **in, int nin,
                          const IrAttrs *attrs, Type *type, Span sp) {
  Arena *a = f->module->arena;
  IrNode *n = arena_alloc(a, sizeof *n);
  n->op = op;
  n->type = type;
  n->nin = nin;
  n->in = arena_alloc(a, sizeof(IrNode *) * (size_t)(nin ? nin : 1));
  if (nin) memcpy(n->in, in, sizeof(IrNode *) * (size_t)nin);
  n->attrs = attrs_copy(a, attrs);
  n->span = sp;
  n->func = f;
  n->id = -1;
  return n;
}

static bool is_product(IrOp op) {
  return op == IR_MATMUL || op == IR_CONV2D || op == IR_CONV2D_GRAD_INPUT || op == IR_CONV2D_GRAD_WEIGHT;
}

void ir_module_set_precision(IrModule *m, DType dt) {
  if (dt == DT_F32) return;
  MLC_ASSERT(dt == DT_BF16 || dt == DT_F16);
  for (int i = 0; i < m->funcs.len; i++) {
    IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    f->htab = NULL, f->hcap = f->hlen = 0;
    for (int j = 0; j < f->nodes.len; j++) {
      IrNode *n = VEC_AT(f->nodes, IrNode, j);
      if (is_product(n->op) && n->type->dtype == DT_F32) ir_attr_set_int(m->arena, &n->attrs, IRA_PRECISION, dt);
      if (!(ir_op_flags(n->op) & (IRF_IMPURE | IRF_EFFECT))) htab_insert(f, n);
    }
  }
}

IrNode *ir_input(IrFunc *f, const char *name, Type *t, Span sp) {
  IrNode *n = node_alloc(f, IR_INPUT, NULL, 0, NULL, t, sp);
  n->name = arena_strdup(f->module->arena, name);
  vec_push(f->module->arena, &f->params, n);
  return n;
}

// Impure ops get a fresh seed unless the caller (or the parser) set one.
static IrNode *node_impure(IrFunc *f, IrOp op, IrNode **in, int nin,
                           const IrAttrs *attrs, Type *type, Span sp) {
  IrNode *n = node_alloc(f, op, in, nin, attrs, type, sp);
  int64_t seed;
  if (ir_attr_int(&n->attrs, IRA_SEED, &seed)) {
    if (seed >= f->module->next_seed) f->module->next_seed = seed + 1;
  } else {
    ir_attr_set_int(f->module->arena, &n->attrs, IRA_SEED, f->module->next_seed++);
  }
  vec_push(f->module->arena, &f->nodes, n);
  return n;
}

static IrNode *node_named(IrFunc *f, IrOp op, IrNode **in, int nin,
                          const IrAttrs *attrs, Type *type, Span sp,
                          const char *name) {
  if (ir_op_flags(op) & IRF_IMPURE) return node_impure(f, op, in, nin, attrs, type, sp);
  if (ir_op_flags(op) & IRF_EFFECT) { // a write: never merged with an equal one
    IrNode *n = node_alloc(f, op, in, nin, attrs, type, sp);
    if (name) n->name = arena_strdup(f->module->arena, name);
    vec_push(f->module->arena, &f->nodes, n);
    return n;
  }
  IrNode *old = htab_find(f, op, in, nin, attrs, type, name);
  if (old) return old;
  IrNode *n = node_alloc(f, op, in, nin, attrs, type, sp);
  if (name) n->name = arena_strdup(f->module->arena, name);
  vec_push(f->module->arena, &f->nodes, n);
  htab_insert(f, n);
  return n;
}

IrNode *ir_node(IrFunc *f, IrOp op, IrNode **in, int nin, const IrAttrs *attrs,
                Type *type, Span sp) {
  MLC_ASSERT(op != IR_INPUT && op != IR_PARAM && op != IR_BUFFER);
  return node_named(f, op, in, nin, attrs, type, sp, NULL);
}

IrNode *ir_build(IrFunc *f, IrOp op, IrNode **in, int nin,
                 const IrAttrs *attrs, Type *given, Span sp, char *err,
                 size_t errlen) {
  Arena *a = f->module->arena;
  IrAttrs as = attrs_copy(a, attrs);
  int64_t seed;
  if ((ir_op_flags(op) & IRF_IMPURE) && !ir_attr_int(&as, IRA_SEED, &seed))
    ir_attr_set_int(a, &as, IRA_SEED, f->module->next_seed++);
  Type *t = ir_shape_infer(a, op, in, nin, &as, given, err, errlen);
  if (!t) return NULL;
  return ir_node(f, op, in, nin, &as, t, sp);
}

IrNode *ir_state_ref(IrFunc *f, IrOp op, const char *path, Type *t, Span sp) {
  return node_named(f, op, NULL, 0, NULL, t, sp, path);
}

IrNode *ir_param_ref(IrFunc *f, const char *path, Span sp) {
  IrParam *p = ir_module_find_param(f->module, path);
  MLC_ASSERT(p != NULL);
  return ir_state_ref(f, p->kind == IRP_BUFFER ? IR_BUFFER : p->kind == IRP_OPTSTATE ? IR_OPTSTATE : IR_PARAM, path,
                      p->type, sp);
}

IrNode *ir_store(IrFunc *f, const char *path, IrNode *v, Span sp) {
  return node_named(f, IR_STORE, &v, 1, NULL, v->type, sp, path);
}

void ir_return(IrFunc *f, IrNode *v, Type *declared) {
  vec_push(f->module->arena, &f->outputs, v);
  vec_push(f->module->arena, &f->results, declared ? declared : v->type);
}

void ir_number(IrFunc *f) {
  for (int i = 0; i < f->params.len; i++) {
    IrNode *n = VEC_AT(f->params, IrNode, i);
    n->order = i - f->params.len;
    n->id = -1;
  }
  for (int i = 0; i < f->nodes.len; i++) {
    IrNode *n = VEC_AT(f->nodes, IrNode, i);
    n->order = i;
    n->id = i;
  }
}

const char *ir_value_name(Arena *a, const IrNode *n) {
  if (n->op == IR_INPUT) return arena_printf(a, "%%%s", n->name);
  return arena_printf(a, "%%%d", n->id);
}
