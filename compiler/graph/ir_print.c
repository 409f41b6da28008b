// ir_print.c — the graph IR's text form, printing side (ir_parse.c reads it
// back; docs/design/ir.md has the grammar). The output is canonical: values
// are renumbered %0, %1, .. in body order, attributes come sorted by key,
// floats in their shortest exact form, dims through dim_str. So print ->
// parse -> print is byte-identical, with or without locations.
//
//   module FashionMLP
//   param fc1.w : f32[256, 784] trainable
//
//   func forward(%x: f32[B, 784]) -> (f32[B, 256]) {
//     %0 = param fc1.w : f32[256, 784]
//     %1 = transpose(%0) {perm = [1, 0]} : f32[784, 256]
//     %2 = matmul(%x, %1) : f32[B, 256]  loc(fashion.model:7:12)
//     return %2
//   }
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Shortest %g form that reads back to the same double, always with a '.',
// an exponent, inf or nan so the parser can tell it from an integer.
static void put_float(StrBuf *b, double v) {
  char buf[64];
  if (isnan(v)) {
    sb_puts(b, "nan");
    return;
  }
  if (isinf(v)) {
    sb_puts(b, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  sb_puts(b, buf);
  if (!strpbrk(buf, ".e")) sb_puts(b, ".0");
}

static void put_attr(StrBuf *b, const IrAttr *x) {
  sb_printf(b, "%s = ", ir_attr_name(x->key));
  switch (ir_attr_kind(x->key)) {
  case IRK_INT: sb_printf(b, "%lld", (long long)x->ints[0]); break;
  case IRK_DTYPE: sb_puts(b, dtype_name((DType)x->ints[0])); break;
  case IRK_FLOAT: put_float(b, x->f); break;
  case IRK_INTS:
    sb_putc(b, '[');
    for (int i = 0; i < x->n; i++)
      sb_printf(b, "%s%lld", i ? ", " : "", (long long)x->ints[i]);
    sb_putc(b, ']');
    break;
  }
}

static void put_attrs(StrBuf *b, const IrAttrs *as, unsigned flags) {
  int n = 0;
  for (int i = 0; i < as->n; i++) {
    if ((flags & IR_PRINT_NO_PRECISION) && as->a[i].key == IRA_PRECISION) continue;
    sb_puts(b, n++ ? ", " : " {");
    put_attr(b, &as->a[i]);
  }
  if (n) sb_putc(b, '}');
}

static void put_type(StrBuf *b, Arena *a, const Type *t) {
  sb_puts(b, type_str(a, t));
}

static void put_value(StrBuf *b, const IrNode *n) {
  if (n->op == IR_INPUT)
    sb_printf(b, "%%%s", n->name);
  else
    sb_printf(b, "%%%d", n->id);
}

// loc(...) from a parsed location string, else from the span; nothing when
// neither says where.
static void put_loc(StrBuf *b, const IrNode *n) {
  if (n->loc) {
    if (n->loc[0]) sb_printf(b, "  loc(%s)", n->loc);
    return;
  }
  if (!n->span.file) return;
  int line, col;
  span_linecol(n->span, &line, &col);
  sb_printf(b, "  loc(%s:%d:%d)", n->span.file->path, line, col);
}

static void put_node(StrBuf *b, Arena *a, const IrNode *n, unsigned flags) {
  sb_printf(b, "  %%%d = %s", n->id, ir_op_name(n->op));
  if (n->name) sb_printf(b, " %s", n->name);
  if (n->nin) {
    sb_putc(b, '(');
    for (int i = 0; i < n->nin; i++) {
      if (i) sb_puts(b, ", ");
      put_value(b, n->in[i]);
    }
    sb_putc(b, ')');
  }
  put_attrs(b, &n->attrs, flags);
  sb_puts(b, " : ");
  put_type(b, a, n->type);
  if (flags & IR_PRINT_LOCS) put_loc(b, n);
  sb_putc(b, '\n');
}

static void put_signature(StrBuf *b, Arena *a, IrFunc *f) {
  sb_printf(b, "func %s(", f->name);
  for (int i = 0; i < f->params.len; i++) {
    IrNode *p = VEC_AT(f->params, IrNode, i);
    sb_printf(b, "%s%%%s: ", i ? ", " : "", p->name);
    put_type(b, a, p->type);
  }
  sb_puts(b, ") -> (");
  for (int i = 0; i < f->results.len; i++) {
    if (i) sb_puts(b, ", ");
    put_type(b, a, VEC_AT(f->results, Type, i));
  }
  sb_puts(b, ") {\n");
}

void ir_print_func(StrBuf *b, IrFunc *f, unsigned flags) {
  Arena *a = f->module->arena;
  ir_number(f);
  put_signature(b, a, f);
  for (int i = 0; i < f->nodes.len; i++) put_node(b, a, VEC_AT(f->nodes, IrNode, i), flags);
  sb_puts(b, "  return");
  for (int i = 0; i < f->outputs.len; i++) {
    sb_puts(b, i ? ", " : " ");
    put_value(b, VEC_AT(f->outputs, IrNode, i));
  }
  sb_puts(b, "\n}\n");
}

static void put_param(StrBuf *b, Arena *a, const IrParam *p) {
  static const char *const kinds[] = {"param", "buffer", "optstate"};
  sb_printf(b, "%s %s : ", kinds[p->kind], p->name);
  put_type(b, a, p->type);
  if (p->kind == IRP_PARAM) sb_puts(b, p->trainable ? " trainable" : " frozen");
  sb_putc(b, '\n');
}

void ir_print_module(StrBuf *b, IrModule *m, unsigned flags) {
  sb_printf(b, "module %s\n", m->name);
  for (int i = 0; i < m->params.len; i++) put_param(b, m->arena, VEC_AT(m->params, IrParam, i));
  for (int i = 0; i < m->funcs.len; i++) {
    sb_putc(b, '\n');
    ir_print_func(b, VEC_AT(m->funcs, IrFunc, i), flags);
  }
}

void ir_dump(IrModule *m, FILE *out, unsigned flags) {
  StrBuf b = {0};
  ir_print_module(&b, m, flags);
  if (b.data) fputs(b.data, out);
  sb_free(&b);
}
