// value.c — constructors and printing for sema's Values (value.h).
//
// Printing is for diagnostics: a value reads the way the user would write it,
// prefixed by its kind where the kind is the point ("integer 784",
// "float 0.5", "list [0, 2, 1]"); a tensor prints as its type alone.
#include "value.h"

static const char *const kind_names[] = {
    [V_TENSOR] = "tensor", [V_DIM] = "integer", [V_FLOAT] = "float",
    [V_BOOL] = "bool",     [V_DTYPE] = "dtype", [V_LIST] = "list",
    [V_STR] = "string", [V_INST] = "block instance", [V_TUPLE] = "results",
};

const char *valkind_name(ValKind k) {
  return (unsigned)k < sizeof kind_names / sizeof kind_names[0] ? kind_names[k]
                                                                : "?";
}

// The bare form, without the kind prefix: B*7, 0.5, [0, 2, 1], "path".
static void put_bare(Arena *a, StrBuf *b, const Value *v) {
  switch (v->kind) {
  case V_TENSOR: sb_puts(b, type_str(a, v->type)); break;
  case V_DIM: sb_puts(b, dim_str(a, v->dim)); break;
  case V_FLOAT: sb_printf(b, "%g", v->f); break;
  case V_BOOL: sb_puts(b, v->b ? "true" : "false"); break;
  case V_DTYPE: sb_puts(b, dtype_name((DType)v->dtype)); break;
  case V_STR: sb_printf(b, "\"%s\"", v->str ? v->str : ""); break;
  case V_INST: sb_printf(b, "%s (%s)", v->path ? v->path : "?", v->str ? v->str : "?"); break;
  case V_TUPLE:
    sb_putc(b, '(');
    for (int i = 0; i < v->items.len; i++) {
      if (i) sb_puts(b, ", ");
      put_bare(a, b, VEC_AT(v->items, Value, i));
    }
    sb_putc(b, ')');
    break;
  case V_LIST:
    sb_putc(b, '[');
    for (int i = 0; i < v->items.len; i++) {
      if (i) sb_puts(b, ", ");
      put_bare(a, b, VEC_AT(v->items, Value, i));
    }
    sb_putc(b, ']');
    break;
  }
}

char *value_str(Arena *a, const Value *v) {
  if (!v) return arena_strdup(a, "?");
  StrBuf b = {0};
  if (v->kind != V_TENSOR && v->kind != V_TUPLE) sb_printf(&b, "%s ", valkind_name(v->kind));
  put_bare(a, &b, v);
  char *s = arena_strdup(a, b.data);
  sb_free(&b);
  return s;
}

Value *value_tensor(Arena *a, Span sp, Type *t) {
  Value *v = arena_alloc(a, sizeof *v);
  v->kind = V_TENSOR;
  v->span = sp;
  v->type = t;
  return v;
}

Value *value_dim(Arena *a, Span sp, Dim *d) {
  Value *v = arena_alloc(a, sizeof *v);
  v->kind = V_DIM;
  v->span = sp;
  v->dim = d;
  return v;
}

Value *value_float(Arena *a, Span sp, double f) {
  Value *v = arena_alloc(a, sizeof *v);
  v->kind = V_FLOAT;
  v->span = sp;
  v->f = f;
  return v;
}
