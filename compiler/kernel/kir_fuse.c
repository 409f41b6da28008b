// kir_fuse.c — the fusion plan kernel lowering follows with
// KirLowerOptions.fuse (docs/design/fusion.md): which graph ops share one
// loop nest, which values never reach memory, the order the kernels run in,
// and which updated state values are written straight into their slot.
//
// Groups. Elementwise ops (unary, binary, compare, logical, where, the
// elementwise `*_grad` rules, dtype-changing casts, const/arange/causal_mask,
// dropout) whose result shapes are equal are grouped along producer ->
// consumer edges, greedily in topological order: a consumer joins the group
// of each elementwise operand of its own shape unless that would make the
// group graph cyclic (a path from one group to the other through an op of
// neither). A group is one loop nest over the shape: every member is a
// local computed once per element, in topological order; a member is stored
// only when something outside the group (another kernel, an alias, a
// result, a state store) reads it. Nothing is recomputed: a value read by
// two groups is materialised by its own.
//
// Prologues. A float sum, mean or reduce_to whose operand is computed by a
// group computes it (and the register-only members it depends on) inside
// its terms: the operand is never stored (sum(x * y), the mean of a squared
// difference, a gradient's squared norm). Members the group stores for
// other readers stay in the group's kernel, and the terms load them (batch
// norm's gradient: the relu mask's output g is stored, sum(g * xhat) reads
// it and computes xhat). A sum's or mean's group may also read values broadcast
// along the reduced dims (batch norm's mean(square(mean - x)) and its
// gradient's sum(g * (x - mean) * rstd): per-channel values in a sum over
// the batch and the plane).
//
// Scalars. Groups of one element and one shape merge even when no edge
// joins them (the optimizer's step counter, learning rate and flags).
//
// Size. A group takes at most KL_FUSE_MAX_BUFS buffers, so that a launch's
// parameters (buffers, sizes, captures) fit the CUDA printer's entries (16).
//
// Constants. A `const` whose every user is elementwise is not a kernel at
// all: its users take the literal (the value the buffer would hold).
//
// State. A stored value computed by an elementwise group is written into
// the state slot itself (no temporary, no copy kernel) when every other
// reader of the slot's old value runs earlier: in an earlier kernel, or in
// the same group, whose loads of an element come before its stores.
//
// Order. Groups run in a topological order of the group graph (depth-first
// from each op in the function's order), which keeps the function's order
// where no group pulls an operand forward.
#include "kir_lower_internal.h"
#include "graph/scalar.h"

#include <string.h>

bool kl_fusable(const IrNode *n) {
  switch (ir_op_class(n->op)) {
  case IRC_CONST: return true;
  case IRC_RNG: return n->nin > 0; // dropout; rand/randn keep their own kernel
  case IRC_UNARY: case IRC_BINARY: case IRC_COMPARE: case IRC_LOGICAL: case IRC_SELECT:
    return sc_op(n->op) != NULL;
  case IRC_GRAD:
    return n->op != IR_SOFTMAX_GRAD && n->op != IR_LOG_SOFTMAX_GRAD && sc_op(n->op) != NULL;
  case IRC_CAST: return n->op == IR_CAST && n->type->dtype != n->in[0]->type->dtype;
  default: return false;
  }
}

bool kl_fuse_const(const IrNode *n) { return n->op == IR_CONST; }

static bool same_dims(const Type *a, const Type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (!dim_eq(a->dims[i], b->dims[i])) return false;
  return true;
}

// e, an operand a prologue reads, broadcast (right-aligned) to the shape of
// x, the operand of a sum or mean over dims red[]: constant along every
// reduced dim (of size 1 there, or absent) and x's size elsewhere (a
// channel mean or scale [1, C, 1, 1] in a reduction over dims 0, 2, 3).
// float_sum then knows its index: the kept dims' loop indices.
static bool kept_broadcast(const Type *e, const Type *x, const bool *red) {
  if (e->rank > x->rank) return false;
  for (int j = 0, i = x->rank - e->rank; j < e->rank; j++, i++) {
    int64_t one;
    if (dim_is_const(e->dims[j], &one) && one == 1) continue;
    if (red[i] || !dim_eq(e->dims[j], x->dims[i])) return false;
  }
  return true;
}

static bool one_element(const Type *t) {
  for (int d = 0; d < t->rank; d++) {
    int64_t v;
    if (!dim_is_const(t->dims[d], &v) || v != 1) return false;
  }
  return true;
}

typedef struct Fz {
  KLower *c;
  KlFuse *z;
  int n;
  IrNode **node;   // by order
  int *parent;     // union-find
  int *head, *next, *tail; // member lists per root, in merge order
  int *mark, stamp;
  int *stack;
  int **users, *nusers;
  bool *output;
} Fz;

static int find(Fz *f, int i) {
  while (f->parent[i] != i) i = f->parent[i] = f->parent[f->parent[i]];
  return i;
}

// A path from group b to group a through at least one op of neither
// (a member of a reads, transitively, something computed from b). Every
// group on the way counts as a whole: it runs as one kernel, so each of
// its members waits for all of its operands (no pruning by node order: a
// group holding an early op may hold a late one too).
static bool path_into(Fz *f, int a, int b) {
  int sp = 0;
  f->stamp++;
  for (int m = f->head[a]; m >= 0; m = f->next[m])
    for (int i = 0; i < f->node[m]->nin; i++) {
      int o = f->node[m]->in[i]->order;
      if (o < 0 || f->mark[o] == f->stamp) continue;
      int g = find(f, o);
      if (g == a || g == b) continue;
      f->mark[o] = f->stamp;
      f->stack[sp++] = o;
    }
  while (sp) {
    int y = f->stack[--sp], g = find(f, y);
    if (g == b) return true;
    for (int m = f->head[g]; m >= 0; m = f->next[m])
      for (int i = 0; i < f->node[m]->nin; i++) {
        int o = f->node[m]->in[i]->order;
        if (o < 0 || f->mark[o] == f->stamp) continue;
        f->mark[o] = f->stamp;
        f->stack[sp++] = o;
      }
  }
  return false;
}

// The buffers a kernel of groups a and b together would take: operands
// from outside (literal consts aside) and members read outside, counted
// once each (an alias counts apart from its source: an upper bound).
static int merged_bufs(Fz *f, int a, int b) {
  int cnt = 0;
  f->stamp++;
  for (int pass = 0; pass < 2; pass++)
    for (int m = f->head[pass ? b : a]; m >= 0; m = f->next[m]) {
      IrNode *x = f->node[m];
      for (int i = 0; i < x->nin; i++) {
        IrNode *e = x->in[i];
        int o = e->order;
        if (kl_fuse_const(e)) continue;
        if (o >= 0 && (find(f, o) == a || find(f, o) == b)) continue;
        if (o >= 0 && f->mark[o] == f->stamp) continue;
        if (o >= 0) f->mark[o] = f->stamp;
        cnt++; // an argument may be counted twice: an upper bound too
      }
      bool out = f->output[m];
      for (int u = 0; !out && u < f->nusers[m]; u++) {
        int g = find(f, f->users[m][u]);
        out = g != a && g != b;
      }
      cnt += out;
    }
  return cnt;
}

static void merge(Fz *f, int a, int b) {
  f->parent[b] = a;
  f->next[f->tail[a]] = f->head[b];
  f->tail[a] = f->tail[b];
}

static void emit(Fz *f, int g, int *pos) {
  KlFuse *z = f->z;
  if (z->at[g] >= 0) return;
  z->at[g] = -2; // in progress
  for (int j = 0; j < z->nmembers[g]; j++) {
    IrNode *m = f->node[z->members[g][j]];
    for (int i = 0; i < m->nin; i++)
      if (m->in[i]->order >= 0) {
        int h = z->group[m->in[i]->order];
        MLC_ASSERT(h == g || z->at[h] != -2); // the group graph is acyclic
        if (h != g && z->at[h] == -1) emit(f, h, pos);
      }
  }
  z->at[g] = *pos;
  z->seq[(*pos)++] = g;
}

static bool is_alias_op(const IrNode *n) {
  switch (n->op) {
  case IR_RESHAPE: case IR_STOP_GRADIENT: case IR_CUSTOM_GRAD: case IR_STORE: return true;
  case IR_CAST: return n->type->dtype == n->in[0]->type->dtype;
  default: return false;
  }
}

// Whether the value v, whose only write is the store s into slot path,
// may be written into the slot directly: every reader of the slot's old
// value runs before v's group (or in it, reading the element it writes),
// and nothing reads the old value after the kernels (a result, a store).
static bool store_in_place(Fz *f, const IrNode *v, const char *path) {
  KlFuse *z = f->z;
  int gv = z->group[v->order];
  for (int i = 0; i < f->n; i++) {
    IrNode *r = f->node[i];
    if (r->op == IR_STORE && !strcmp(r->name, path) && r->in[0] != v) return false; // another store
    if ((r->op != IR_PARAM && r->op != IR_BUFFER && r->op != IR_OPTSTATE) || strcmp(r->name, path)) continue;
    // r and its aliases: every user must run before v's group, or be in it
    // reading r at v's shape.
    int sp = 0;
    f->stack[sp++] = i;
    while (sp) {
      int y = f->stack[--sp];
      if (f->output[y]) return false;
      for (int u = 0; u < f->nusers[y]; u++) {
        IrNode *un = f->node[f->users[y][u]];
        if (is_alias_op(un)) {
          if (un->op == IR_STORE) return false;
          f->stack[sp++] = un->order;
          continue;
        }
        int gu = z->group[un->order];
        if (gu == gv && z->nmembers[gv] > 0 && same_dims(f->node[y]->type, v->type)) continue;
        if (z->at[gu] >= z->at[gv]) return false;
      }
    }
  }
  return true;
}

KlFuse *kl_fuse_plan(KLower *c) {
  Arena *a = c->p->arena;
  IrFunc *fn = c->f;
  int n = fn->nodes.len;
  Fz f = {.c = c, .n = n};
  KlFuse *z = f.z = arena_alloc(a, sizeof *z);
  z->n = n;
#define ALLOC(p, cnt) ((p) = arena_alloc(a, sizeof *(p) * (size_t)((cnt) + 1)))
  ALLOC(f.node, n), ALLOC(f.parent, n), ALLOC(f.head, n), ALLOC(f.next, n), ALLOC(f.tail, n);
  ALLOC(f.mark, n), ALLOC(f.stack, n), ALLOC(f.users, n), ALLOC(f.nusers, n);
  ALLOC(f.output, n);
  ALLOC(z->group, n), ALLOC(z->reg, n), ALLOC(z->state, n), ALLOC(z->members, n), ALLOC(z->nmembers, n);
  ALLOC(z->seq, n), ALLOC(z->at, n);
  for (int i = 0; i < n; i++) {
    IrNode *x = VEC_AT(fn->nodes, IrNode, i);
    MLC_ASSERT(x->order == i);
    f.node[i] = x;
    f.parent[i] = f.head[i] = f.tail[i] = i;
    f.next[i] = -1;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < f.node[i]->nin; j++)
      if (f.node[i]->in[j]->order >= 0) f.nusers[f.node[i]->in[j]->order]++;
  for (int i = 0; i < n; i++) ALLOC(f.users[i], f.nusers[i]), f.nusers[i] = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < f.node[i]->nin; j++) {
      int o = f.node[i]->in[j]->order;
      if (o >= 0) f.users[o][f.nusers[o]++] = i;
    }
  for (int i = 0; i < fn->outputs.len; i++) {
    int o = VEC_AT(fn->outputs, IrNode, i)->order;
    if (o >= 0) f.output[o] = true;
  }
  // Constants folded into their users.
  for (int i = 0; i < n; i++) {
    IrNode *x = f.node[i];
    bool lit = kl_fuse_const(x) && !f.output[i];
    for (int u = 0; lit && u < f.nusers[i]; u++) lit = kl_fuses(c, f.node[f.users[i][u]]);
    z->reg[i] = lit;
  }
  // Groups, greedily in topological order.
  for (int i = 0; i < n; i++) {
    IrNode *x = f.node[i];
    if (!kl_fuses(c, x) || z->reg[i]) continue;
    for (int j = 0; j < x->nin; j++) {
      IrNode *p = x->in[j];
      if (p->order < 0 || z->reg[p->order] || !kl_fuses(c, p) || !same_dims(p->type, x->type)) continue;
      int ga = find(&f, i), gb = find(&f, p->order);
      if (ga == gb || merged_bufs(&f, ga, gb) > KL_FUSE_MAX_BUFS || path_into(&f, ga, gb) || path_into(&f, gb, ga))
        continue;
      merge(&f, ga, gb);
    }
  }
  // Scalar groups of one shape merge even without an edge between them
  // (a step counter, a learning rate, a norm: one small kernel, not many).
  for (int i = 0, first = -1; i < n; i++) {
    IrNode *x = f.node[i];
    if (!kl_fuses(c, x) || z->reg[i] || !one_element(x->type)) continue;
    if (first < 0 || !same_dims(f.node[first]->type, x->type)) {
      if (first < 0) first = i;
      continue;
    }
    int ga = find(&f, first), gb = find(&f, i);
    if (ga == gb || merged_bufs(&f, ga, gb) > KL_FUSE_MAX_BUFS || path_into(&f, ga, gb) || path_into(&f, gb, ga))
      continue;
    merge(&f, ga, gb);
  }
  // Groups numbered by their first member; members ascending.
  for (int i = 0; i < n; i++) z->group[i] = -1;
  z->ngroups = 0;
  for (int i = 0; i < n; i++) {
    int r = find(&f, i);
    if (z->group[r] < 0) {
      int cnt = 0;
      for (int m = f.head[r]; m >= 0; m = f.next[m]) cnt++;
      int g = z->ngroups++;
      ALLOC(z->members[g], cnt);
      z->nmembers[g] = 0;
      z->group[r] = g;
    }
    int g = z->group[r];
    z->group[i] = g;
    z->members[g][z->nmembers[g]++] = i;
  }
  // A member is register-only when only its group reads it.
  for (int i = 0; i < n; i++) {
    int g = z->group[i];
    if (z->reg[i] || z->nmembers[g] < 2 || f.output[i]) continue;
    bool inner = true;
    for (int u = 0; inner && u < f.nusers[i]; u++) inner = z->group[f.users[i][u]] == g;
    z->reg[i] = inner;
  }
  // Prologues: a float sum, mean or reduce_to whose operand x is computed
  // by a group takes x's cone into its kernel, each term computing it at
  // the term's offset: x and the register-only members x depends on,
  // stopping at members the group stores (which the terms then load, as
  // operands from outside; the rest of the group stays a kernel of its own
  // and still stores them). Every operand from outside must be of x's
  // shape, or one element, or, for a sum or mean, constant along the
  // reduced dims (kept_broadcast); a cone member's users must all be in
  // the cone.
  bool *in_cone;
  ALLOC(in_cone, n);
  for (int i = 0; i < n; i++) in_cone[i] = false;
  for (int i = 0; i < n; i++) {
    IrNode *r = f.node[i], *x = r->nin ? r->in[0] : NULL;
    bool red = r->op == IR_SUM || r->op == IR_MEAN || r->op == IR_REDUCE_TO;
    if (!red || x->order < 0 || !dtype_is_float(x->type->dtype) || !dtype_is_float(r->type->dtype)) continue;
    int o = x->order, g = z->group[o], gr = z->group[i];
    if (!kl_fuses(c, x) || z->reg[o] || f.output[o] || f.nusers[o] != 1 || z->nmembers[gr] != 1) continue;
    bool rdims[KL_MAX_RANK] = {0}, bc = r->op != IR_REDUCE_TO && x->type->rank <= KL_MAX_RANK;
    int nd = 0;
    const int64_t *dims = bc ? ir_attr_ints(&r->attrs, IRA_DIMS, &nd) : NULL;
    for (int j = 0; j < nd; j++) rdims[dims[j]] = true;
    // the cone: members are in ascending order and operands come first, so
    // one pass from the top (x) down marks it
    int ncone = 0;
    in_cone[o] = true;
    for (int j = z->nmembers[g] - 1; j >= 0; j--) {
      IrNode *m = f.node[z->members[g][j]];
      if (!in_cone[m->order]) continue;
      ncone++;
      for (int k = 0; k < m->nin; k++) {
        IrNode *e = m->in[k];
        if (e->order >= 0 && z->group[e->order] == g && z->reg[e->order]) in_cone[e->order] = true;
      }
    }
    bool ok = true;
    for (int j = 0; ok && j < z->nmembers[g]; j++) {
      IrNode *m = f.node[z->members[g][j]];
      if (!in_cone[m->order]) continue;
      ok = m->op != IR_CAUSAL_MASK;
      for (int u = 0; ok && m != x && u < f.nusers[m->order]; u++) ok = in_cone[f.users[m->order][u]];
      for (int k = 0; ok && k < m->nin; k++) {
        IrNode *e = m->in[k];
        if (e->order >= 0 && (in_cone[e->order] || kl_fuse_const(e))) continue;
        ok = one_element(e->type) || same_dims(e->type, x->type) || (bc && kept_broadcast(e->type, x->type, rdims));
      }
    }
    if (ok) {
      z->reg[o] = true;
      int nm = z->nmembers[g], *mem, rest = 0;
      ALLOC(mem, ncone + 1);
      for (int j = 0, at = 0; j < nm; j++) {
        int m = z->members[g][j];
        if (in_cone[m]) mem[at++] = m, z->group[m] = gr;
        else z->members[g][rest++] = m; // the rest of the group keeps its order
      }
      mem[ncone] = i;
      z->members[gr] = mem, z->nmembers[gr] = ncone + 1, z->nmembers[g] = rest;
    }
    for (int j = 0; j < z->nmembers[g]; j++) in_cone[z->members[g][j]] = false;
    for (int j = 0; j < z->nmembers[gr]; j++) in_cone[z->members[gr][j]] = false;
  }
  // Order.
  for (int g = 0; g < z->ngroups; g++) z->at[g] = -1;
  int pos = 0;
  for (int i = 0; i < n; i++) emit(&f, z->group[i], &pos);
  z->nseq = pos; // groups a reduction took in are not run
  // State written in place.
  for (int i = 0; i < n; i++) {
    IrNode *s = f.node[i];
    if (s->op != IR_STORE) continue;
    IrNode *v = s->in[0];
    if (v->order < 0 || !kl_fuses(c, v) || z->reg[v->order] || z->state[v->order] || !type_eq(v->type, s->type))
      continue;
    if (store_in_place(&f, v, s->name)) z->state[v->order] = s->name;
  }
#undef ALLOC
  return z;
}
