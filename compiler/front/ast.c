// ast.c — AST construction helpers and the S-expression printer used by
// `mlc dump-ast` and the parse golden tests (tests/front/parse/*.ast).
//
// The printed form is one top-level form per item, members and statements
// indented by two spaces per level; expressions are prefix forms:
//   (+ a b)  (call f a (= k v))  (member x T)  (index x 0 (slice a b _))
#include "ast.h"

#include "types/types.h"

Expr *ast_expr(Arena *a, ExprKind k, Span sp) {
  Expr *e = arena_alloc(a, sizeof *e);
  e->kind = k;
  e->span = sp;
  return e;
}

Arg *ast_arg(Arena *a, Span sp, const char *name, Expr *value) {
  Arg *g = arena_alloc(a, sizeof *g);
  g->span = sp;
  g->name = name;
  g->value = value;
  return g;
}

const char *binop_name(int op) {
  switch (op) {
  case OP_ADD: return "+";
  case OP_SUB: return "-";
  case OP_MUL: return "*";
  case OP_DIV: return "/";
  case OP_FLOORDIV: return "//";
  case OP_MATMUL: return "@";
  case OP_LT: return "<";
  case OP_GT: return ">";
  case OP_LE: return "<=";
  case OP_GE: return ">=";
  case OP_EQ: return "==";
  case OP_NE: return "!=";
  case OP_POW: return "**";
  case OP_AND: return "and";
  case OP_OR: return "or";
  case OP_NEG: return "neg";
  case OP_NOT: return "not";
  }
  return "?";
}

bool binop_is_compare(int op) {
  return op == OP_LT || op == OP_GT || op == OP_LE || op == OP_GE ||
         op == OP_EQ || op == OP_NE;
}

bool binop_compare(int op, double x, double y) {
  switch (op) {
  case OP_LT: return x < y;
  case OP_GT: return x > y;
  case OP_LE: return x <= y;
  case OP_GE: return x >= y;
  case OP_EQ: return x == y;
  default: return x != y;
  }
}

typedef struct Printer {
  FILE *out;
  bool spans;
  int depth; // expression nesting, bounded so a pathological tree still prints
} Printer;

static void print_span(Printer *p, Span sp) {
  if (!p->spans || !sp.file) return;
  int line, col;
  span_linecol(sp, &line, &col);
  fprintf(p->out, "@%d:%d", line, col);
}

static void print_expr(Printer *p, const Expr *e);

static void print_args(Printer *p, const Vec *args) {
  for (int i = 0; i < args->len; i++) {
    const Arg *g = VEC_AT(*args, Arg, i);
    fputc(' ', p->out);
    if (!g->name) {
      print_expr(p, g->value);
      continue;
    }
    fprintf(p->out, "(= %s ", g->name);
    print_expr(p, g->value);
    if (g->unit) fprintf(p->out, " %s", g->unit);
    fputc(')', p->out);
  }
}

static void print_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c == '\n') fputs("\\n", out);
    else if (c == '\t') fputs("\\t", out);
    else if (c < 32 || c >= 127) fprintf(out, "\\x%02x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

static void print_opt(Printer *p, const Expr *e) {
  if (e) print_expr(p, e);
  else fputc('_', p->out);
}

static void print_expr(Printer *p, const Expr *e) {
  if (!e) {
    fputs("<error>", p->out);
    return;
  }
  if (++p->depth > 1000) {
    fputs("...", p->out);
    p->depth--;
    return;
  }
  FILE *o = p->out;
  switch (e->kind) {
  case EX_INT: fprintf(o, "%lld", (long long)e->ival); break;
  case EX_FLOAT: fputs(e->name, o); break;
  case EX_BOOL: fputs(e->ival ? "true" : "false", o); break;
  case EX_STR: print_string(o, e->name); break;
  case EX_NAME: fputs(e->name, o); break;
  case EX_DTYPE: fputs(dtype_name((DType)e->dtype), o); break;
  case EX_UNARY:
    fprintf(o, "(%s ", binop_name(e->op));
    print_expr(p, e->lhs);
    fputc(')', o);
    break;
  case EX_BINARY:
    fprintf(o, "(%s ", binop_name(e->op));
    print_expr(p, e->lhs);
    fputc(' ', o);
    print_expr(p, e->rhs);
    fputc(')', o);
    break;
  case EX_CALL:
    fputs("(call ", o);
    print_expr(p, e->lhs);
    print_args(p, &e->args);
    fputc(')', o);
    break;
  case EX_MEMBER:
    fputs("(member ", o);
    print_expr(p, e->lhs);
    fprintf(o, " %s)", e->name);
    break;
  case EX_INDEX:
    fputs("(index ", o);
    print_expr(p, e->lhs);
    print_args(p, &e->args);
    fputc(')', o);
    break;
  case EX_SLICE:
    fputs("(slice ", o);
    print_opt(p, e->lhs);
    fputc(' ', o);
    print_opt(p, e->rhs);
    fputc(' ', o);
    print_opt(p, e->step);
    fputc(')', o);
    break;
  case EX_LIST:
    fputs("(list", o);
    print_args(p, &e->args);
    fputc(')', o);
    break;
  case EX_ELLIPSIS: fputs("...", o); break;
  }
  print_span(p, e->span);
  p->depth--;
}

static void print_type(Printer *p, const TypeExpr *t) {
  if (!t) {
    fputs("<error>", p->out);
    return;
  }
  fputs(dtype_name((DType)t->dtype), p->out);
  if (t->has_dims) {
    fputc('[', p->out);
    for (int i = 0; i < t->dims.len; i++) {
      if (i) fputs(", ", p->out);
      print_expr(p, VEC_AT(t->dims, Expr, i));
    }
    fputc(']', p->out);
  }
}

static void indent(Printer *p, int n) {
  for (int i = 0; i < n; i++) fputs("  ", p->out);
}

static void print_stmts(Printer *p, const Vec *body, int ind) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = VEC_AT(*body, Stmt, i);
    indent(p, ind);
    if (s->kind == ST_FOR) {
      fprintf(p->out, "(for %s ", s->name);
      print_expr(p, s->value);
      print_span(p, s->span);
      fputc('\n', p->out);
      print_stmts(p, &s->body, ind + 1);
      indent(p, ind);
      fputs(")\n", p->out);
      continue;
    }
    if (s->kind == ST_RETURN) {
      fputs("(return ", p->out);
    } else if (s->names.len) {
      fputs("(let (", p->out);
      for (int k = 0; k < s->names.len; k++)
        fprintf(p->out, "%s%s", k ? " " : "", VEC_AT(s->names, Param, k)->name);
      fputs(") ", p->out);
    } else {
      fprintf(p->out, "(let %s ", s->name);
      if (s->type) {
        print_type(p, s->type);
        fputc(' ', p->out);
      }
    }
    print_expr(p, s->value);
    fputc(')', p->out);
    print_span(p, s->span);
    fputc('\n', p->out);
  }
}

static void print_func(Printer *p, const Func *f, const char *kw, int ind) {
  indent(p, ind);
  fprintf(p->out, "(%s %s (", kw, f->name);
  for (int i = 0; i < f->params.len; i++) {
    const Param *pm = VEC_AT(f->params, Param, i);
    fprintf(p->out, "%s%s: ", i ? " " : "", pm->name);
    print_type(p, pm->type);
  }
  fputs(") -> ", p->out);
  if (f->results.len) {
    fputc('(', p->out);
    for (int i = 0; i < f->results.len; i++) {
      const Param *r = VEC_AT(f->results, Param, i);
      if (i) fputs(", ", p->out);
      if (r->name) fprintf(p->out, "%s: ", r->name);
      print_type(p, r->type);
    }
    fputc(')', p->out);
  } else {
    print_type(p, f->ret);
  }
  print_span(p, f->span);
  fputc('\n', p->out);
  print_stmts(p, &f->body, ind + 1);
  if (f->has_grad) {
    indent(p, ind + 1);
    fprintf(p->out, "(grad %s\n", f->grad_name);
    print_stmts(p, &f->grad_body, ind + 2);
    indent(p, ind + 1);
    fputs(")\n", p->out);
  }
  indent(p, ind);
  fputs(")\n", p->out);
}

static void print_member(Printer *p, const Member *m, int ind);

// (instances blocks (for i (call range 6)) (instance 0 Block d))
static void print_list(Printer *p, const Member *m, int ind) {
  FILE *o = p->out;
  indent(p, ind);
  fprintf(o, "(instances %s", m->name);
  if (m->loop_iter) {
    fprintf(o, " (for %s ", m->loop_var);
    print_expr(p, m->loop_iter);
    fputc(')', o);
  }
  print_span(p, m->span);
  fputc('\n', o);
  for (int i = 0; i < m->elems.len; i++) print_member(p, VEC_AT(m->elems, Member, i), ind + 1);
  indent(p, ind);
  fputs(")\n", o);
}

static void print_member(Printer *p, const Member *m, int ind) {
  FILE *o = p->out;
  switch (m->kind) {
  case MB_INSTANCE_LIST:
    print_list(p, m, ind);
    break;
  case MB_PARAM:
  case MB_BUFFER:
    indent(p, ind);
    fprintf(o, "(%s%s %s ", m->frozen ? "frozen " : "",
            m->kind == MB_PARAM ? "param" : "buffer", m->name);
    print_type(p, m->type);
    if (m->init) {
      fputs(" (init ", o);
      print_expr(p, m->init);
      fputc(')', o);
    }
    fputc(')', o);
    print_span(p, m->span);
    fputc('\n', o);
    break;
  case MB_INSTANCE:
    indent(p, ind);
    fprintf(o, "(instance %s %s", m->name, m->block_name);
    print_args(p, &m->args);
    fputc(')', o);
    print_span(p, m->span);
    fputc('\n', o);
    break;
  case MB_METHOD:
    print_func(p, m->method, "method", 1);
    break;
  }
}

static void print_setting(Printer *p, const Setting *s) {
  FILE *o = p->out;
  indent(p, 1);
  fprintf(o, "(%s", s->key);
  if (s->sub_key) fprintf(o, " (= %s", s->sub_key);
  if (s->value) {
    fputc(' ', o);
    print_expr(p, s->value);
  }
  if (s->sub_key) fputc(')', o);
  if (s->has_bindings) {
    fputc('\n', o);
    print_stmts(p, &s->bindings, 2);
    indent(p, 1);
  }
  fputc(')', o);
  print_span(p, s->span);
  fputc('\n', o);
}

static void print_item(Printer *p, const Item *it) {
  FILE *o = p->out;
  switch (it->kind) {
  case IT_BLOCK:
  case IT_MODEL:
    fprintf(o, "(%s %s", it->kind == IT_BLOCK ? "block" : "model", it->name);
    if (it->kind == IT_BLOCK) {
      fputs(" (", o);
      for (int i = 0; i < it->bparams.len; i++) {
        const BlockParam *bp = VEC_AT(it->bparams, BlockParam, i);
        fprintf(o, "%s%s", i ? " " : "", bp->name);
        if (bp->deflt) {
          fputs(" = ", o);
          print_expr(p, bp->deflt);
        }
      }
      fputc(')', o);
    }
    print_span(p, it->span);
    fputc('\n', o);
    for (int i = 0; i < it->members.len; i++)
      print_member(p, VEC_AT(it->members, Member, i), 1);
    fputs(")\n", o);
    break;
  case IT_FN:
    print_func(p, it->fn, "fn", 0);
    break;
  case IT_TRAIN:
    fprintf(o, "(train %s", it->name);
    print_span(p, it->span);
    fputc('\n', o);
    for (int i = 0; i < it->settings.len; i++)
      print_setting(p, VEC_AT(it->settings, Setting, i));
    fputs(")\n", o);
    break;
  }
}

void ast_print(const Program *prog, FILE *out, bool with_spans) {
  Printer p = {out, with_spans, 0};
  for (int i = 0; i < prog->items.len; i++) {
    const Item *it = VEC_AT(prog->items, Item, i);
    if (!it->from_prelude) print_item(&p, it);
  }
}
