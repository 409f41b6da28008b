// ir_dot.c — Graphviz dump of one IR function: one box per value labelled
// with its name, op (and path, for param/buffer reads) and type; edges run
// from operand to user, labelled with the operand index when a node has
// several. Arguments are ellipses (a0, a1, ..), body nodes n0, n1, .. in
// printed numbering, returned values have a double border.
//
//   ir_dot(f, stdout)  |  dot -Tsvg > forward.svg
#include "ir.h"

#include <string.h>

// Writes s with the characters DOT's quoted strings need escaped.
static void put_escaped(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', out);
    fputc(*s, out);
  }
}

static bool is_output(const IrFunc *f, const IrNode *n) {
  for (int i = 0; i < f->outputs.len; i++)
    if (VEC_AT(f->outputs, IrNode, i) == n) return true;
  return false;
}

// Stable vertex ids: a<i> for arguments, n<id> for body nodes.
static void put_id(FILE *out, const IrNode *n) {
  if (n->op == IR_INPUT)
    fprintf(out, "a%d", n->order + n->func->params.len);
  else
    fprintf(out, "n%d", n->id);
}

static void put_vertex(FILE *out, Arena *a, const IrFunc *f, const IrNode *n) {
  const char *name = ir_value_name(a, n);
  fputs("  ", out);
  put_id(out, n);
  fprintf(out, " [shape=%s%s, label=\"", n->op == IR_INPUT ? "ellipse" : "box", is_output(f, n) ? ", peripheries=2" : "");
  put_escaped(out, name);
  fputs(" = ", out);
  put_escaped(out, n->op == IR_INPUT ? "input" : ir_op_name(n->op));
  if (n->name && n->op != IR_INPUT) {
    fputc(' ', out);
    put_escaped(out, n->name);
  }
  fputs("\\n", out);
  put_escaped(out, type_str(a, n->type));
  fputs("\"];\n", out);
}

static void put_edges(FILE *out, const IrNode *n) {
  for (int i = 0; i < n->nin; i++) {
    fputs("  ", out);
    put_id(out, n->in[i]);
    fputs(" -> ", out);
    put_id(out, n);
    if (n->nin > 1) fprintf(out, " [label=\"%d\"]", i);
    fputs(";\n", out);
  }
}

void ir_dot(IrFunc *f, FILE *out) {
  Arena *a = f->module->arena;
  ir_number(f);
  fputs("digraph \"", out);
  put_escaped(out, f->name);
  fputs("\" {\n  node [fontname=\"monospace\"];\n", out);
  for (int i = 0; i < f->params.len; i++) put_vertex(out, a, f, VEC_AT(f->params, IrNode, i));
  for (int i = 0; i < f->nodes.len; i++) put_vertex(out, a, f, VEC_AT(f->nodes, IrNode, i));
  for (int i = 0; i < f->nodes.len; i++) put_edges(out, VEC_AT(f->nodes, IrNode, i));
  fputs("}\n", out);
}
