// sema_explain.c — the `mlc check --explain` report.
//
// Input: the checked Insts and Bodies of the user's models. Output: for each
// model, in source order,
//   1. a member table in the spirit of torchinfo's summary: the instance
//      tree with each instance's block and parameter counts (trainable /
//      frozen / buffer elements), every param and buffer with its type and
//      resolved init, instances used more than once marked as shared, and a
//      total row; then, when the train recipe has parameter groups, each
//      group's hyper-parameters and params (the default group first);
//   2. each of the model's methods: signature, forward FLOPs per sample
//      (the batch symbol, the first dim of the first parameter, set to 1)
//      and the inferred type of every binding;
//   3. the same for every block method and fn the model reaches through
//      calls, each once.
// Columns are aligned per table; the text is stable (no addresses, no
// hash order), so the output is pinned by tests/sema/explain goldens.
#include <string.h>

#include "sema_internal.h"

// ---- a column-aligned table ------------------------------------------------------------
enum { TBL_MAXCOL = 8 };

typedef struct Table {
  int ncol;
  bool right[TBL_MAXCOL]; // right-aligned (numbers)
  Vec rows;               // const char ** (ncol cells each; NULL = empty)
} Table;

static void tbl_row(Sema *S, Table *t, const char **cells) {
  const char **r = arena_alloc(S->arena, sizeof(char *) * t->ncol);
  memcpy(r, cells, sizeof(char *) * t->ncol);
  vec_push(S->arena, &t->rows, r);
}

static void tbl_print(Table *t, FILE *out, const char *indent) {
  int w[TBL_MAXCOL] = {0};
  for (int i = 0; i < t->rows.len; i++) {
    const char **r = VEC_AT(t->rows, const char *, i);
    for (int c = 0; c < t->ncol; c++) {
      int n = r[c] ? (int)strlen(r[c]) : 0;
      if (n > w[c]) w[c] = n;
    }
  }
  for (int i = 0; i < t->rows.len; i++) {
    const char **r = VEC_AT(t->rows, const char *, i);
    StrBuf b = {0};
    sb_puts(&b, indent);
    for (int c = 0; c < t->ncol; c++) {
      const char *s = r[c] ? r[c] : "";
      if (c) sb_puts(&b, "  ");
      if (t->right[c]) sb_printf(&b, "%*s", w[c], s);
      else sb_printf(&b, "%-*s", w[c], s);
    }
    while (b.len && b.data[b.len - 1] == ' ') b.data[--b.len] = '\0';
    fprintf(out, "%s\n", b.data);
    sb_free(&b);
  }
}

// ---- numbers -------------------------------------------------------------------------------
// 1234567 -> "1,234,567"
static const char *grouped(Sema *S, int64_t v) {
  char raw[32], out[48];
  snprintf(raw, sizeof raw, "%lld", (long long)(v < 0 ? -v : v));
  int n = (int)strlen(raw), k = 0;
  if (v < 0) out[k++] = '-';
  for (int i = 0; i < n; i++) {
    if (i && (n - i) % 3 == 0) out[k++] = ',';
    out[k++] = raw[i];
  }
  out[k] = '\0';
  return arena_strdup(S->arena, out);
}

static int64_t type_count(Sema *S, const Type *t) {
  int64_t k;
  if (!t) return 0;
  return dim_is_const(type_numel(S->arena, t), &k) ? k : 0;
}

// ---- parameter counts --------------------------------------------------------------------
bool sema_path_frozen(const Vec *frozen, const char *path) {
  for (int i = 0; i < frozen->len; i++) {
    const char *f = VEC_AT(*frozen, const char, i);
    size_t n = strlen(f);
    if (!strncmp(path, f, n) && (path[n] == '\0' || path[n] == '.')) return true;
  }
  return false;
}

static const char *join_path(Sema *S, const char *path, const char *name) {
  return *path ? arena_printf(S->arena, "%s.%s", path, name) : name;
}

ParamCount sema_count_params(Sema *S, Inst *I, const char *path,
                             const Vec *frozen) {
  ParamCount pc = {0, 0, 0};
  if (!I || !I->members) return pc;
  for (int i = 0; i < I->item->members.len; i++) {
    MInfo *mi = I->members[i];
    Member *m = mi->m;
    const char *p = join_path(S, path, m->name);
    if (m->kind == MB_PARAM) {
      int64_t n = type_count(S, mi->type);
      if (m->frozen || sema_path_frozen(frozen, p)) pc.frozen += n;
      else pc.trainable += n;
    } else if (m->kind == MB_BUFFER) {
      pc.buffers += type_count(S, mi->type);
    } else if ((m->kind == MB_INSTANCE || m->kind == MB_INSTANCE_LIST) && mi->child) {
      ParamCount c = sema_count_params(S, mi->child, p, frozen);
      pc.trainable += c.trainable;
      pc.frozen += c.frozen;
      pc.buffers += c.buffers;
    }
  }
  return pc;
}

// How often an instance member is used by its Inst's bodies: each call,
// plus the reads of the one of its params read most (reading w and b once
// each, to inline the layer by hand, is one use; reading w again elsewhere,
// to tie weights, is a second).
static int instance_uses(const MInfo *mi) {
  int most = 0;
  for (int i = 0; i < mi->reads.cap; i++)
    if (mi->reads.keys[i] && *(int *)mi->reads.vals[i] > most) most = *(int *)mi->reads.vals[i];
  return mi->calls + most;
}

// "shares tok": the instances an instantiation was given as arguments,
// whose params it uses without holding them (weight tying across blocks).
static const char *shared_args(Sema *S, const Inst *I) {
  StrBuf b = {0};
  for (int i = 0; i < I->nargs; i++)
    if (I->args[i] && I->args[i]->kind == V_INST)
      sb_printf(&b, "%s%s", b.len ? ", " : "shares ", I->args[i]->path);
  const char *r = b.len ? arena_strdup(S->arena, b.data) : NULL;
  sb_free(&b);
  return r;
}

static const char *add_note(Sema *S, const char *a, const char *b) {
  return !a ? b : !b ? a : arena_printf(S->arena, "%s; %s", a, b);
}

// ---- the member table ----------------------------------------------------------------------
enum { C_NAME, C_KIND, C_SHAPE, C_TRAIN, C_FROZEN, C_BUF, C_NOTE, C_N };

static const char *indent_name(Sema *S, int depth, const char *name) {
  return arena_printf(S->arena, "%*s%s", depth * 2, "", name);
}

static void member_rows(Sema *S, Table *t, Inst *I, const char *path,
                        const Vec *frozen, int depth) {
  if (!I || !I->members || depth > SEMA_MAX_INST_DEPTH) return;
  for (int i = 0; i < I->item->members.len; i++) {
    MInfo *mi = I->members[i];
    Member *m = mi->m;
    const char *p = join_path(S, path, m->name);
    const char *r[C_N] = {0};
    r[C_NAME] = indent_name(S, depth, m->name);
    if (m->kind == MB_INSTANCE_LIST) { // the list's row, then its elements 0, 1, ..
      if (!mi->child) continue;
      ParamCount c = sema_count_params(S, mi->child, p, frozen);
      r[C_KIND] = mi->child->label;
      r[C_TRAIN] = grouped(S, c.trainable);
      r[C_FROZEN] = grouped(S, c.frozen);
      r[C_BUF] = grouped(S, c.buffers);
      if (sema_path_frozen(frozen, p) && !sema_path_frozen(frozen, path)) r[C_NOTE] = "frozen by train";
      tbl_row(S, t, r);
      member_rows(S, t, mi->child, p, frozen, depth + 1);
      continue;
    }
    if (m->kind == MB_INSTANCE) {
      if (!mi->child) continue;
      ParamCount c = sema_count_params(S, mi->child, p, frozen);
      r[C_KIND] = mi->child->label;
      r[C_TRAIN] = grouped(S, c.trainable);
      r[C_FROZEN] = grouped(S, c.frozen);
      r[C_BUF] = grouped(S, c.buffers);
      int uses = instance_uses(mi);
      if (uses > 1)
        r[C_NOTE] = arena_printf(S->arena, "shared: used %d times", uses);
      else if (uses == 0)
        r[C_NOTE] = "unused";
      if (sema_path_frozen(frozen, p) && !sema_path_frozen(frozen, path))
        r[C_NOTE] = add_note(S, r[C_NOTE], "frozen by train");
      r[C_NOTE] = add_note(S, r[C_NOTE], shared_args(S, mi->child));
      tbl_row(S, t, r);
      member_rows(S, t, mi->child, p, frozen, depth + 1);
      continue;
    }
    if (m->kind == MB_METHOD) continue;
    int64_t n = type_count(S, mi->type);
    r[C_SHAPE] = mi->type ? type_str(S->arena, mi->type) : "?";
    bool fz = m->kind == MB_PARAM && (m->frozen || sema_path_frozen(frozen, p));
    r[C_KIND] = m->kind == MB_BUFFER ? "buffer" : fz ? "frozen param" : "param";
    r[m->kind == MB_BUFFER ? C_BUF : fz ? C_FROZEN : C_TRAIN] = grouped(S, n);
    r[C_NOTE] = mi->init ? arena_printf(S->arena, "%sinit %s",
                                        mi->init_default ? "default " : "",
                                        mi->init)
                         : NULL;
    tbl_row(S, t, r);
  }
}

static void member_table(Sema *S, Inst *M, FILE *out) {
  Table t = {0};
  t.ncol = C_N;
  t.right[C_TRAIN] = t.right[C_FROZEN] = t.right[C_BUF] = true;
  const char *head[C_N] = {"name", "kind", "shape", "trainable", "frozen",
                           "buffers", "notes"};
  tbl_row(S, &t, head);
  member_rows(S, &t, M, "", &M->frozen, 0);
  ParamCount c = sema_count_params(S, M, "", &M->frozen);
  const char *tot[C_N] = {"total", NULL, NULL, grouped(S, c.trainable),
                          grouped(S, c.frozen), grouped(S, c.buffers), NULL};
  tot[C_NOTE] = arena_printf(S->arena, "%s parameters",
                             grouped(S, c.trainable + c.frozen));
  tbl_row(S, &t, tot);
  tbl_print(&t, out, "  ");
}

// ---- parameter groups ------------------------------------------------------------------------
// The trainable params of I below path, with their element counts, in order.
static void trained(Sema *S, Inst *I, const char *path, const Vec *frozen, Vec *paths,
                    Vec *counts, int depth) {
  if (!I || !I->members || depth > SEMA_MAX_INST_DEPTH) return;
  for (int i = 0; i < I->item->members.len; i++) {
    MInfo *mi = I->members[i];
    const char *p = join_path(S, path, mi->m->name);
    if (mi->m->kind == MB_INSTANCE || mi->m->kind == MB_INSTANCE_LIST) {
      trained(S, mi->child, p, frozen, paths, counts, depth + 1);
    } else if (mi->m->kind == MB_PARAM && !mi->m->frozen && !sema_path_frozen(frozen, p)) {
      int64_t *n = arena_alloc(S->arena, sizeof *n);
      *n = type_count(S, mi->type);
      vec_push(S->arena, paths, (void *)p);
      vec_push(S->arena, counts, n);
    }
  }
}

static bool in_group(const OptimGroup *G, const char *path) {
  for (int i = 0; i < G->npaths; i++)
    if (!strcmp(G->paths[i], path)) return true;
  return false;
}

static const char *num_str(Sema *S, double v) { return arena_printf(S->arena, "%g", v); }

// One row of the groups table: its hyper-parameters, its params' count.
static void group_row(Sema *S, Table *t, const OptimRecipe *o, const char *name,
                      const OptimGroup *G, int nparams, int64_t elems) {
  double lr = o->lr * (G ? G->lr_scale : 1);
  const char *r[9] = {name, arena_printf(S->arena, "%d", nparams), grouped(S, elems), num_str(S, lr)};
  if (o->opt == OPT_SGD) {
    r[4] = num_str(S, G ? G->momentum : o->momentum);
    r[5] = num_str(S, G ? G->dampening : o->dampening);
    r[6] = (G ? G->nesterov : o->nesterov) ? "true" : "false";
    r[7] = num_str(S, G ? G->weight_decay : o->weight_decay);
  } else {
    r[4] = num_str(S, G ? G->beta1 : o->beta1);
    r[5] = num_str(S, G ? G->beta2 : o->beta2);
    r[6] = num_str(S, G ? G->eps : o->eps);
    r[7] = num_str(S, G ? G->weight_decay : o->weight_decay);
  }
  tbl_row(S, t, r);
}

// The recipe's parameter groups (torch.optim's param_groups): each group's
// hyper-parameters and params, the default group (the optimizer's own) first.
static void groups_report(Sema *S, Inst *M, FILE *out) {
  ItemInfo *ii = sema_find_item(S, M->item->name);
  const Recipe *rc = ii ? &ii->recipe : NULL;
  if (!rc || !rc->opt.ngroups) return;
  const OptimRecipe *o = &rc->opt;
  Vec paths = {0}, counts = {0};
  trained(S, M, "", &M->frozen, &paths, &counts, 0);
  fprintf(out, "\n  optimizer %s, %d parameter groups\n", rc->optimizer, o->ngroups + 1);
  Table t = {0};
  t.ncol = 8;
  t.right[1] = t.right[2] = true;
  const char *sgd[8] = {"group", "params", "elements", "lr", "momentum", "dampening", "nesterov",
                        "weight_decay"};
  const char *adam[8] = {"group", "params", "elements", "lr", "beta1", "beta2", "eps",
                         "weight_decay"};
  tbl_row(S, &t, o->opt == OPT_SGD ? sgd : adam);
  StrBuf lists = {0};
  for (int g = -1; g < o->ngroups; g++) {
    const OptimGroup *G = g < 0 ? NULL : &o->groups[g];
    int n = 0;
    int64_t elems = 0;
    sb_printf(&lists, "    %s:", G ? G->name : "default");
    for (int i = 0; i < paths.len; i++) {
      const char *p = VEC_AT(paths, const char, i);
      bool mine = G ? in_group(G, p) : true;
      for (int k = 0; !G && k < o->ngroups; k++) mine = mine && !in_group(&o->groups[k], p);
      if (!mine) continue;
      sb_printf(&lists, "%s %s", n ? "," : "", p);
      n++;
      elems += *VEC_AT(counts, int64_t, i);
    }
    sb_putc(&lists, '\n');
    group_row(S, &t, o, G ? G->name : "default", G, n, elems);
  }
  tbl_print(&t, out, "    ");
  fputs(lists.data, out);
  sb_free(&lists);
}

// ---- bodies ----------------------------------------------------------------------------------
static const char *sig_str(Sema *S, Body *b) {
  StrBuf sb = {0};
  sb_printf(&sb, "%s(", b->fn->name);
  for (int i = 0; i < b->fn->params.len; i++) {
    Param *p = VEC_AT(b->fn->params, Param, i);
    Type *t = b->sig ? b->sig->params[i] : NULL;
    sb_printf(&sb, "%s%s: %s", i ? ", " : "", p->name,
              t ? type_str(S->arena, t) : "?");
  }
  int nr = b->sig ? b->sig->nrets : 1;
  sb_puts(&sb, nr > 1 ? ") -> (" : ") -> ");
  for (int i = 0; i < nr; i++) {
    Type *r = b->sig ? b->sig->rets[i] : NULL;
    const char *name = b->sig && nr > 1 ? b->sig->ret_names[i] : NULL;
    sb_printf(&sb, "%s%s%s%s", i ? ", " : "", name ? name : "", name ? ": " : "",
              r ? type_str(S->arena, r) : "?");
  }
  if (nr > 1) sb_putc(&sb, ')');
  char *s = arena_strdup(S->arena, sb.data);
  sb_free(&sb);
  return s;
}

// "FLOPs per sample (B = 1): 470,016", or the polynomial when other
// symbols remain ("FLOPs per sample (B = 1): 8448*T + 512*T^2"); "per row
// (... = 1)" for a generic body whose leading dims are one `...`.
static const char *flops_str(Sema *S, Body *b) {
  Dim *f = b->flops ? b->flops : dim_const(S->arena, 0);
  Type *p0 = b->sig && b->sig->nparams ? b->sig->params[0] : NULL;
  Sym *batch = p0 && p0->rank ? dim_as_sym(p0->dims[0]) : NULL;
  const char *what = "FLOPs";
  if (batch) {
    f = dim_set(S->arena, f, batch, 1);
    what = arena_printf(S->arena, "FLOPs per %s (%s = 1)",
                        strcmp(batch->name, "...") ? "sample" : "row", batch->name);
  }
  int64_t k;
  const char *v = dim_is_const(f, &k) ? grouped(S, k) : dim_str(S->arena, f);
  return arena_printf(S->arena, "%s: %s", what, v);
}

static void body_report(Sema *S, Body *b, const char *title, FILE *out) {
  fprintf(out, "\n  %s\n", title);
  fprintf(out, "    %s\n", flops_str(S, b));
  if (!b->bindings.len) return;
  Table t = {0};
  t.ncol = 3;
  t.right[0] = true;
  const char *head[3] = {"line", "binding", "type"};
  tbl_row(S, &t, head);
  for (int i = 0; i < b->bindings.len; i++) {
    Binding *bd = VEC_AT(b->bindings, Binding, i);
    int line, col;
    span_linecol(bd->span, &line, &col);
    const char *r[3] = {arena_printf(S->arena, "%d", line), bd->name,
                        bd->value ? value_str(S->arena, bd->value) : "?"};
    tbl_row(S, &t, r);
  }
  tbl_print(&t, out, "    ");
}

static const char *where(Sema *S, Span sp) {
  int line, col;
  span_linecol(sp, &line, &col);
  return arena_printf(S->arena, "%s:%d", sp.file ? sp.file->path : "?", line);
}

// Bodies reached from `b` through calls, each once, depth-first in call
// order (an explicit stack: call chains can be long).
static void reached(Sema *S, Body *root, SMap *seen, Vec *out) {
  Vec stack = {0};
  for (int i = root->calls.len - 1; i >= 0; i--)
    vec_push(S->arena, &stack, VEC_AT(root->calls, CallEdge, i)->callee);
  while (stack.len) {
    Body *b = VEC_AT(stack, Body, --stack.len);
    const char *key = arena_printf(S->arena, "%p", (void *)b);
    if (sema_map_get(seen, key)) continue;
    sema_map_put(S->arena, seen, key, b);
    vec_push(S->arena, out, b);
    for (int i = b->calls.len - 1; i >= 0; i--)
      vec_push(S->arena, &stack, VEC_AT(b->calls, CallEdge, i)->callee);
  }
}

static void model_report(Sema *S, Inst *M, FILE *out) {
  fprintf(out, "model %s (%s)\n\n", M->label, where(S, M->item->name_span));
  member_table(S, M, out);
  groups_report(S, M, out);
  SMap seen = {0};
  Vec callees = {0};
  for (int i = 0; i < M->item->members.len; i++) {
    MInfo *mi = M->members[i];
    if (mi->m->kind != MB_METHOD || !mi->body) continue;
    sema_map_put(S->arena, &seen, arena_printf(S->arena, "%p", (void *)mi->body),
             mi->body);
  }
  for (int i = 0; i < M->item->members.len; i++) {
    MInfo *mi = M->members[i];
    if (mi->m->kind != MB_METHOD || !mi->body) continue;
    body_report(S, mi->body, sig_str(S, mi->body), out);
    reached(S, mi->body, &seen, &callees);
  }
  if (!callees.len) return;
  fprintf(out, "\n  called from %s:\n", M->label);
  for (int i = 0; i < callees.len; i++) {
    Body *b = VEC_AT(callees, Body, i);
    const char *title =
        b->inst ? arena_printf(S->arena, "%s.%s  (%s)", b->inst->label,
                               sig_str(S, b), where(S, b->fn->name_span))
                : arena_printf(S->arena, "fn %s  (%s)", sig_str(S, b),
                               where(S, b->fn->name_span));
    body_report(S, b, title, out);
  }
}

void sema_explain(Sema *S, FILE *out) {
  for (int i = 0; i < S->models.len; i++) {
    if (i) fputc('\n', out);
    model_report(S, VEC_AT(S->models, Inst, i), out);
  }
}
