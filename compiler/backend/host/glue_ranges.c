// glue_ranges.c — what the loss's graph says about the data it may be fed,
// recorded in the model descriptor so the runtime checks the data when it
// loads it rather than a kernel failing at some training step.
//
// Input: a collected Glue (host_internal.h) and the loss function of its
// unit. Output, in the Glue:
//   * the label: the input cross_entropy(logits [N, C], target [N]) reads as
//     its target, followed back through views; its num_classes is C, and the
//     forward output's class dim (out_classes) is C when its last dim is C,
//     so accuracy and predict take the argmax over the dim the loss uses,
//     per row, whatever the output's rank (a cross_entropy the lowering
//     computed per row names its target in LowerResult.label_target); with
//     ignore_index = K the label also holds K (has_ignore, ignore_value),
//     which counts for nothing in accuracy;
//   * value limits of integer inputs: an input used (through views) as the
//     indices of embedding(table [V, D], idx) must hold 0..V-1;
//   * limits of symbols: embedding(table [V, D], arange(T)) needs T <= V,
//     and a slice of a constant dim D with a symbolic length T, from start
//     s in steps of k, needs T <= ceil((D - s) / k);
//   * lower limits of symbols: a value whose size is one symbol's function
//     (a 3x3 conv2d without padding of an [.., H, W] image gives H - 2, a
//     2x2 max_pool2d of that (H - 2) // 2) must be at least 1, so H >= 4:
//     a smaller image is refused when the data is loaded, naming the op and
//     its line, instead of a kernel meeting an empty plane.
// The tightest limit wins; its description names where it comes from.
#include "host_internal.h"

#include <string.h>

// A value's source through the views that keep its values.
static IrNode *origin(IrNode *n) {
  while (n->nin >= 1 && (n->op == IR_RESHAPE || n->op == IR_TRANSPOSE || n->op == IR_SLICE ||
                         n->op == IR_BROADCAST_TO || n->op == IR_STOP_GRADIENT))
    n = n->in[0];
  return n;
}

// The glue input n comes from, or -1.
static int input_of(const Glue *g, IrNode *n) {
  n = origin(n);
  if (n->op != IR_INPUT || !n->name) return -1;
  for (int i = 0; i < g->nin; i++)
    if (!strcmp(g->in[i].name, n->name)) return i;
  return -1;
}

// "pos.w" for a table read from a parameter, else "an embedding table".
static const char *table_name(IrNode *t) {
  t = origin(t);
  return (t->op == IR_PARAM || t->op == IR_BUFFER) && t->name ? t->name : "an embedding table";
}

static void limit_input(Glue *g, int i, int64_t lim, const char *what) {
  if (i < 0 || lim <= 0) return;
  GlueInput *in = &g->in[i];
  if (in->dt != DT_I32 && in->dt != DT_I64 && in->dt != DT_U8) return;
  if (!in->value_limit || lim < in->value_limit) in->value_limit = lim, in->limit_what = what;
}

static void limit_sym(Glue *g, const Dim *d, int64_t lim, const char *what) {
  Sym *s = dim_as_sym(d);
  for (int k = 0; s && lim > 0 && k < g->nsyms; k++)
    if (!strcmp(g->syms[k], s->name) && (!g->sym_max[k] || lim < g->sym_max[k]))
      g->sym_max[k] = lim, g->sym_max_what[k] = what;
}

// embedding(table [V, D], idx): idx holds 0..V-1.
static void embedding_range(Glue *g, IrNode *n) {
  int64_t rows;
  if (n->in[0]->type->rank < 1 || !dim_is_const(n->in[0]->type->dims[0], &rows)) return;
  const char *what = arena_printf(g->u->arena, "the %lld rows of %s", (long long)rows,
                                  table_name(n->in[0]));
  IrNode *idx = origin(n->in[1]);
  if (idx->op == IR_ARANGE && idx->type->rank == 1) limit_sym(g, idx->type->dims[0], rows, what);
  else limit_input(g, input_of(g, n->in[1]), rows, what);
}

// slice(x) {dim, start, step} whose length is a symbol over a constant dim.
static void slice_range(Glue *g, IrNode *n) {
  int64_t dim = ir_node_int(n, IRA_DIM), start = ir_node_int(n, IRA_START);
  int64_t step = ir_node_int(n, IRA_STEP), len;
  const Type *x = n->in[0]->type;
  if (dim < 0 || dim >= x->rank || dim >= n->type->rank || step < 1 ||
      !dim_is_const(x->dims[dim], &len) || len <= start)
    return;
  const char *what = arena_printf(g->u->arena, "a slice of dim %lld, %lld long, of %s",
                                  (long long)dim, (long long)len, table_name(n->in[0]));
  limit_sym(g, n->type->dims[dim], (len - start + step - 1) / step, what);
}

// The loss function's symbol named name (the glue matches symbols by name).
static Sym *loss_sym(const IrFunc *loss, const char *name) {
  for (int i = 0; i < loss->params.len; i++) {
    const Type *t = VEC_AT(loss->params, IrNode, i)->type;
    for (int d = 0; d < t->rank; d++) {
      Sym *s = dim_as_sym(t->dims[d]);
      if (s && !strcmp(s->name, name)) return s;
    }
  }
  return NULL;
}

enum { SYM_MIN_SCAN = 1 << 12 }; // the largest lower limit looked for

// The smallest v >= 1 with d(s = v) >= 1, when d is a function of s alone
// that is below 1 at s = 1 (sizes grow with the sizes they come from); 0
// when there is no such limit or none up to SYM_MIN_SCAN.
static int64_t dim_lower_limit(const Dim *d, const Sym *s) {
  int64_t v;
  if (!dim_eval1(d, s, 1, &v) || v >= 1) return 0;
  for (int64_t k = 2; k <= SYM_MIN_SCAN; k++)
    if (dim_eval1(d, s, k, &v) && v >= 1) return k;
  return 0;
}

// Every value of the loss whose dims depend on glue symbol k alone: the
// symbol's lower limit, the first op that needs the largest one.
static void lower_limits(Glue *g, const IrFunc *loss, int k) {
  Sym *s = loss_sym(loss, g->syms[k]);
  for (int i = 0; s && i < loss->nodes.len; i++) {
    IrNode *n = VEC_AT(loss->nodes, IrNode, i);
    for (int d = 0; n->type && d < n->type->rank; d++) {
      int64_t lim = dim_lower_limit(n->type->dims[d], s);
      if (lim <= g->sym_min[k]) continue;
      int line = 0, col = 0;
      if (n->span.file) span_linecol(n->span, &line, &col);
      g->sym_min[k] = lim;
      const char *at = line ? arena_printf(g->u->arena, " at line %d", line) : "";
      g->sym_min_what[k] = arena_printf(g->u->arena, "%s%s gives dim %d = %s", ir_op_name(n->op), at, d,
                                        dim_str(g->u->arena, n->type->dims[d]));
    }
  }
}

// cross_entropy(logits [N, C], target [N]): the target input is the label;
// with ignore_index = K (ignore) it may hold K too, so a K outside the
// classes sets no value limit.
static void label_range(Glue *g, IrNode *logits, IrNode *target, const Type *out, bool ignore,
                        int64_t k) {
  const Type *lt = logits->type;
  int64_t c, last;
  int i = input_of(g, target);
  if (i < 0 || g->in[i].num_classes || lt->rank < 1 || !dim_is_const(lt->dims[lt->rank - 1], &c))
    return;
  g->in[i].num_classes = c;
  g->in[i].has_ignore = ignore, g->in[i].ignore_value = ignore ? k : 0;
  if (!ignore || (k >= 0 && k < c)) limit_input(g, i, c, "the classes of the loss");
  if (out->rank >= 2 && dim_is_const(out->dims[out->rank - 1], &last) && last == c)
    g->out_classes = c;
}

void glue_ranges(Glue *g) {
  const IrFunc *loss = g->u->lr.loss;
  const Type *out = VEC_AT(g->u->predict->outputs, IrNode, 0)->type;
  for (int k = 0; k < loss->nodes.len; k++) {
    IrNode *n = VEC_AT(loss->nodes, IrNode, k);
    if (n->op == IR_EMBEDDING) embedding_range(g, n);
    else if (n->op == IR_SLICE) slice_range(g, n);
    else if (n->op == IR_CROSS_ENTROPY) label_range(g, n->in[0], n->in[1], out, false, 0);
  }
  for (int k = 0; k < g->nsyms; k++) lower_limits(g, loss, k);
  // a cross_entropy lowered per row (ignore_index, or a reduction other
  // than the mean) names its labels in the LowerResult, and the value it
  // ignores: the runtime accepts it besides the classes and leaves its
  // positions out of accuracy
  const LowerResult *lr = &g->u->lr;
  if (lr->label_target)
    label_range(g, lr->label_logits, lr->label_target, out, lr->label_ignore, lr->label_ignore_value);
}
