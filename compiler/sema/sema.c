// sema.c — semantic analysis: the entry point, the global item table, block
// instantiation and members, signatures, and the call-graph pass.
//
// Input: a parsed Program whose items may include the prelude's. Output:
// diagnostics, Expr.type on every tensor-valued expression, and the Inst /
// Body tree (sema_internal.h) that --explain prints.
//
// Order of work: items are visited in program order. A model is
// instantiated where it is defined; each instance member instantiates its
// block with the argument values (one Inst per distinct (block, values)
// pair, checked once), then the Inst's method bodies are checked. A call of
// user code only needs the callee's signature, so bodies never check other
// bodies; the call edges they record are walked at the end to find recursion
// and to add callee FLOPs into callers. Blocks nobody instantiates are
// checked once with their defaults, or, lacking defaults, signatures only.
//
// Diagnostics go through sema_error/sema_note: an error seen again at the
// same span with the same text (a block body checked for several
// instantiations) is dropped with its notes, and an error inside a block
// with parameters ends with "in Linear(784, 256), instantiated here".
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sema_internal.h"

// ---- string map ------------------------------------------------------------------
static uint32_t str_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

void *sema_map_get(const SMap *m, const char *key) {
  if (!m->cap) return NULL;
  for (uint32_t i = str_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return NULL;
    if (strcmp(m->keys[i], key) == 0) return m->vals[i];
  }
}

static void map_grow(Arena *a, SMap *m) {
  SMap n = {0};
  n.cap = m->cap ? m->cap * 2 : 16;
  n.keys = arena_alloc(a, sizeof(char *) * n.cap);
  n.vals = arena_alloc(a, sizeof(void *) * n.cap);
  for (int i = 0; i < m->cap; i++)
    if (m->keys[i]) sema_map_put(a, &n, m->keys[i], m->vals[i]);
  *m = n;
}

void *sema_map_put(Arena *a, SMap *m, const char *key, void *val) {
  if ((m->len + 1) * 2 > m->cap) map_grow(a, m);
  for (uint32_t i = str_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) {
      m->keys[i] = key;
      m->vals[i] = val;
      m->len++;
      return NULL;
    }
    if (strcmp(m->keys[i], key) == 0) {
      void *old = m->vals[i];
      m->vals[i] = val;
      return old;
    }
  }
}

// ---- diagnostics -----------------------------------------------------------------
// The context notes of the last error: the chain of parametric blocks being
// instantiated when it was found, innermost first.
static Vec pending_chain(Sema *S) {
  Vec chain = {0};
  for (int i = S->inst_stack.len - 1; i >= 0; i--) {
    Inst *I = VEC_AT(S->inst_stack, Inst, i);
    if (I->item->kind != IT_BLOCK || I->nargs == 0 || I->sig_only) break;
    vec_push(S->arena, &chain, I);
  }
  return chain;
}

void sema_flush_context(Sema *S) {
  if (S->pending_loops) {
    Vec *loops = S->pending_loops;
    for (int i = loops->len - 1; i >= 0; i--) { // innermost first
      LoopFrame *f = VEC_AT(*loops, LoopFrame, i);
      diag_note(S->diags, f->at, "in the iteration with %s", f->what);
    }
    S->pending_loops = NULL;
  }
  if (!S->pending_ctx) return;
  Vec *chain = S->pending_ctx;
  for (int i = 0; i < chain->len; i++) {
    Inst *I = VEC_AT(*chain, Inst, i);
    diag_note(S->diags, I->site, "in %s, instantiated here", I->label);
  }
  S->pending_ctx = NULL;
}

// An error inside a prelude block comes from the arguments a user gave it
// (Conv2d(3, 8, 3, groups = 2)): it is reported at the innermost
// instantiation in the user's own file, the index of that entry of the
// chain (innermost first), or -1 when there is none.
static bool in_prelude(Span sp) { return sp.file && strcmp(sp.file->path, SEMA_PRELUDE_PATH) == 0; }

static int user_site(const Vec *chain) {
  for (int i = 0; i < chain->len; i++)
    if (!in_prelude(VEC_AT(*chain, Inst, i)->site)) return i;
  return -1;
}

bool sema_error(Sema *S, Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = arena_vprintf(S->arena, fmt, ap);
  va_end(ap);
  if (S->quiet) {
    S->quiet_errors++;
    S->dropping = true;
    return false;
  }
  sema_flush_context(S);
  char *key = arena_printf(S->arena, "%p:%u:%u:%s", (const void *)sp.file,
                           sp.off, sp.len, msg);
  if (sema_map_get(&S->seen, key)) {
    S->dropping = true;
    return false;
  }
  sema_map_put(S->arena, &S->seen, key, key);
  S->dropping = false;
  Vec chain = pending_chain(S);
  int user = in_prelude(sp) ? user_site(&chain) : -1;
  if (user >= 0) { // the caret on the user's line, the prelude's line a note
    Inst *I = VEC_AT(chain, Inst, user);
    diag_error(S->diags, I->site, "%s, in %s", msg, I->label);
    diag_note(S->diags, sp, "found here, in the prelude's %s", I->item->name);
    Vec rest = {0}; // the instantiations around the user's own
    for (int i = user + 1; i < chain.len; i++) vec_push(S->arena, &rest, VEC_AT(chain, Inst, i));
    chain = rest;
  } else {
    diag_error(S->diags, sp, "%s", msg);
  }
  S->nerrors++;
  if (S->loops.len) {
    Vec *keep = arena_alloc(S->arena, sizeof(Vec));
    for (int i = 0; i < S->loops.len; i++) vec_push(S->arena, keep, VEC_AT(S->loops, LoopFrame, i));
    S->pending_loops = keep;
  }
  if (chain.len) {
    Vec *keep = arena_alloc(S->arena, sizeof(Vec));
    *keep = chain;
    S->pending_ctx = keep;
  }
  return true;
}

void sema_note(Sema *S, Span sp, const char *fmt, ...) {
  if (S->dropping) return;
  va_list ap;
  va_start(ap, fmt);
  char *msg = arena_vprintf(S->arena, fmt, ap);
  va_end(ap);
  diag_note(S->diags, sp, "%s", msg);
}

bool sema_quiet(const Sema *S) {
  const DiagSink *d = S->diags;
  return d->max_errors && d->nerrors >= d->max_errors;
}

const char *sema_suggest(Sema *S, const char *name, Vec *cands) {
  if (sema_quiet(S)) return "";
  const char *best =
      closest_name(name, (const char *const *)cands->data, cands->len);
  return best ? arena_printf(S->arena, "; did you mean '%s'?", best) : "";
}

// ---- items -------------------------------------------------------------------------
ItemInfo *sema_find_item(Sema *S, const char *name) {
  return sema_map_get(&S->items, name);
}

static const char *item_kind_name(ItemKind k) {
  switch (k) {
  case IT_BLOCK: return "block";
  case IT_MODEL: return "model";
  case IT_FN: return "function";
  case IT_TRAIN: return "train recipe";
  }
  return "item";
}

static const char *ptr_key(Sema *S, const void *p) {
  return arena_printf(S->arena, "%p", p);
}

// Block parameters must have distinct names.
static void check_bparams(Sema *S, Item *it) {
  SMap seen = {0};
  for (int i = 0; i < it->bparams.len; i++) {
    BlockParam *bp = VEC_AT(it->bparams, BlockParam, i);
    BlockParam *prev = sema_map_put(S->arena, &seen, bp->name, bp);
    if (prev) {
      sema_error(S, bp->span, "duplicate block parameter '%s'", bp->name);
      sema_note(S, prev->span, "the first '%s' is here", bp->name);
    }
  }
}

// Builds the global namespace. A user item shadows a prelude item of the
// same name silently; two user items of the same name are an error at the
// second. Train recipes are not names; two recipes for one model are an error.
static void collect_items(Sema *S) {
  SMap trains = {0};
  for (int i = 0; i < S->prog->items.len; i++) {
    Item *it = VEC_AT(S->prog->items, Item, i);
    ItemInfo *ii = arena_alloc(S->arena, sizeof(ItemInfo));
    ii->item = it;
    vec_push(S->arena, &S->item_infos, ii);
    sema_map_put(S->arena, &S->by_item, ptr_key(S, it), ii);
    SMap *ns = it->kind == IT_TRAIN ? &trains : &S->items;
    if (it->kind == IT_BLOCK && !it->from_prelude) check_bparams(S, it);
    ItemInfo *prev = sema_map_get(ns, it->name);
    if (!prev || (prev->item->from_prelude && !it->from_prelude)) {
      sema_map_put(S->arena, ns, it->name, ii);
      continue;
    }
    if (it->from_prelude) continue; // the user's item already shadows it
    if (it->kind == IT_TRAIN) {
      sema_error(S, it->name_span, "duplicate train recipe for '%s'", it->name);
      sema_note(S, prev->item->name_span, "the first one is here");
      continue;
    }
    sema_error(S, it->name_span, "duplicate definition of '%s'", it->name);
    sema_note(S, prev->item->name_span, "previous definition of '%s' is here",
              it->name);
  }
}

static ItemInfo *info_of(Sema *S, Item *it) {
  ItemInfo *ii = sema_map_get(&S->by_item, ptr_key(S, it));
  MLC_ASSERT(ii);
  return ii;
}

// ---- constant values ------------------------------------------------------------------
const char *sema_const_str(Sema *S, const Value *v) {
  switch (v->kind) {
  case V_DIM: return dim_str(S->arena, v->dim);
  case V_FLOAT: {
    char buf[64];
    snprintf(buf, sizeof buf, "%.6g", v->f);
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0"); // 1.0 stays a float
    char *e = strstr(buf, "e-0");                   // 1e-05 -> 1e-5
    if (!e) e = strstr(buf, "e+0");
    if (e) memmove(e + 2, e + 3, strlen(e + 3) + 1);
    return arena_strdup(S->arena, buf);
  }
  case V_BOOL: return v->b ? "true" : "false";
  case V_STR: return arena_printf(S->arena, "\"%s\"", v->str);
  case V_DTYPE: return dtype_name((DType)v->dtype);
  case V_LIST: {
    StrBuf b = {0};
    sb_putc(&b, '[');
    for (int i = 0; i < v->items.len; i++) {
      if (i) sb_puts(&b, ", ");
      sb_puts(&b, sema_const_str(S, VEC_AT(v->items, Value, i)));
    }
    sb_putc(&b, ']');
    char *s = arena_strdup(S->arena, b.data);
    sb_free(&b);
    return s;
  }
  case V_TENSOR: return type_str(S->arena, v->type);
  case V_INST: return v->path; // as the block's argument was written: Head(tok)
  case V_TUPLE: return value_str(S->arena, v);
  }
  return "?";
}

// The identity of an argument list: values printed exactly (floats with
// every digit), so two keys are equal exactly when the arguments are.
static void put_key(Sema *S, StrBuf *b, const Value *v) {
  if (v->kind == V_FLOAT) sb_printf(b, "f%.17g", v->f);
  else if (v->kind == V_INST) // which instance, and where from the instantiation
    sb_printf(b, "i%p^%d:%s", (const void *)v->inst, v->up, v->path);
  else if (v->kind == V_LIST) {
    sb_putc(b, '[');
    for (int i = 0; i < v->items.len; i++) {
      put_key(S, b, VEC_AT(v->items, Value, i));
      sb_putc(b, ',');
    }
    sb_putc(b, ']');
  } else sb_printf(b, "%d:%s", (int)v->kind, sema_const_str(S, v));
}

static const char *inst_key(Sema *S, Value **args, int n) {
  StrBuf b = {0};
  sb_putc(&b, '(');
  for (int i = 0; i < n; i++) {
    put_key(S, &b, args[i]);
    sb_putc(&b, '\x1f');
  }
  char *k = arena_strdup(S->arena, b.data);
  sb_free(&b);
  return k;
}

// A block argument must be known at compile time: an integer constant, a
// float, a bool, a string, or a list of those.
static bool const_arg_ok(const Value *v, bool lenient) {
  switch (v->kind) {
  case V_DIM: {
    int64_t c;
    return lenient || dim_is_const(v->dim, &c);
  }
  case V_FLOAT:
  case V_BOOL:
  case V_STR:
  case V_DTYPE: return true;
  case V_LIST:
    for (int i = 0; i < v->items.len; i++)
      if (!const_arg_ok(VEC_AT(v->items, Value, i), lenient)) return false;
    return true;
  case V_INST: return true; // an instance passed to a block (Head(tok))
  case V_TENSOR:
  case V_TUPLE: return false;
  }
  return false;
}

// ---- argument binding ------------------------------------------------------------------------
static int param_index(const ArgBind *b, const char *name) {
  for (int k = 0; k < b->n; k++)
    if (!strcmp(b->names[k], name)) return k;
  return -1;
}

bool sema_bind_args(Sema *S, Vec *args, ArgBind *b) {
  b->arg = arena_alloc(S->arena, sizeof(Arg *) * (size_t)(b->n ? b->n : 1));
  b->npos = 0;
  b->extra = NULL;
  bool ok = true, named = false;
  for (int i = 0; i < args->len; i++) {
    Arg *a = VEC_AT(*args, Arg, i);
    int idx;
    if (!a->name) {
      if (named) {
        sema_error(S, a->span, "positional argument after a named argument");
        ok = false;
        continue;
      }
      if ((idx = b->npos++) >= b->n) {
        if (!b->extra) b->extra = a;
        continue;
      }
    } else {
      named = true;
      if ((idx = param_index(b, a->name)) < 0) {
        Vec c = {0};
        for (int k = 0; k < b->n; k++) vec_push(S->arena, &c, (void *)b->names[k]);
        sema_error(S, a->name_span, "%s has no parameter '%s'%s", b->owner, a->name,
                   sema_suggest(S, a->name, &c));
        ok = false;
        continue;
      }
    }
    if (b->arg[idx]) {
      sema_error(S, a->name ? a->name_span : a->span, "parameter '%s' of %s is given twice",
                 b->names[idx], b->owner);
      ok = false;
      continue;
    }
    b->arg[idx] = a;
  }
  if (b->extra && b->report_extra) {
    sema_error(S, b->extra->span, "too many arguments: %s takes %d", b->owner, b->n);
    ok = false;
  }
  return ok;
}

// ---- block arguments ---------------------------------------------------------------------
// "(in, out)" or "(cin, cout, k, stride = 1, padding = 0)".
static const char *bparam_list(Sema *S, Item *blk) {
  StrBuf b = {0};
  sb_putc(&b, '(');
  for (int i = 0; i < blk->bparams.len; i++) {
    BlockParam *bp = VEC_AT(blk->bparams, BlockParam, i);
    if (i) sb_puts(&b, ", ");
    sb_puts(&b, bp->name);
    if (bp->deflt && bp->deflt->span.file) {
      const char *t = bp->deflt->span.file->text + bp->deflt->span.off;
      sb_printf(&b, " = %.*s", (int)bp->deflt->span.len, t);
    }
  }
  sb_putc(&b, ')');
  char *s = arena_strdup(S->arena, b.data);
  sb_free(&b);
  return s;
}

static int bparam_index(Item *blk, const char *name) {
  for (int i = 0; i < blk->bparams.len; i++)
    if (strcmp(VEC_AT(blk->bparams, BlockParam, i)->name, name) == 0) return i;
  return -1;
}

static const char *plural(int n) { return n == 1 ? "" : "s"; }

// An instance given as a block argument (head = Head(tok)): seen from the
// new instantiation, it is sc->arg_depth segments further up.
static Value *instance_arg(Sema *S, Scope *sc, Expr *e, InstRef *r) {
  Value *v = sema_new_value(S, V_INST, e->span);
  v->inst = r->inst;
  v->top = r->top;
  v->path = r->path;
  v->up = r->up + sc->arg_depth;
  v->str = r->inst->label;
  return v;
}

// Evaluates the argument of block parameter idx; false after an error.
static bool block_arg(Sema *S, Scope *sc, Arg *a, int idx, Value **vals) {
  InstRef r = sc->inst ? sema_resolve_instance(sc, a->value) : (InstRef){0};
  if (r.err) return false;
  if (r.inst) {
    vals[idx] = instance_arg(S, sc, a->value, &r);
    return true;
  }
  InstRef owner = sc->inst && a->value->kind == EX_MEMBER ? sema_resolve_instance(sc, a->value->lhs)
                                                         : (InstRef){0};
  MInfo *pm = owner.inst && !owner.inst->is_list ? sema_member(owner.inst, a->value->name) : NULL;
  if (pm && (pm->m->kind == MB_PARAM || pm->m->kind == MB_BUFFER)) {
    sema_error(S, a->value->span, "a block argument is a compile-time constant or an instance; "
               "%s.%s is a %s: pass the instance itself, %s, and read its %s in the block",
               owner.path, a->value->name, pm->m->kind == MB_PARAM ? "param" : "buffer",
               owner.path, a->value->name);
    return false;
  }
  Value *v = sema_eval(sc, a->value);
  if (!v) return false;
  if (!const_arg_ok(v, sc->lenient)) {
    sema_error(S, a->value->span,
               "block arguments must be compile-time constants, got %s",
               value_str(S->arena, v));
    return false;
  }
  vals[idx] = v;
  return true;
}

// Fills in defaults in parameter order: a default sees the parameters
// before it (block Attn(d, heads = 8, hd = d / heads)).
// `given` marks parameters an argument named (even one that failed).
static bool apply_defaults(Sema *S, Item *blk, Value **vals, const bool *given,
                           Span call) {
  bool ok = true;
  Scope dsc;
  sema_scope_init(&dsc, S, NULL, 0);
  dsc.bitem = blk;
  dsc.bargs = vals;
  dsc.const_only = true;
  for (int i = 0; i < blk->bparams.len; i++) {
    BlockParam *bp = VEC_AT(blk->bparams, BlockParam, i);
    if (vals[i]) continue;
    if (given && given[i]) {
      ok = false;
      continue;
    }
    if (!bp->deflt) {
      sema_error(S, call, "missing argument '%s': block '%s' takes %s",
                 bp->name, blk->name, bparam_list(S, blk));
      sema_note(S, blk->name_span, "'%s' is defined here", blk->name);
      ok = false;
      continue;
    }
    dsc.nbargs = i;
    Value *v = sema_eval(&dsc, bp->deflt);
    if (v && !const_arg_ok(v, false)) {
      sema_error(S, bp->deflt->span,
                 "a default must be a compile-time constant, got %s",
                 value_str(S->arena, v));
      v = NULL;
    }
    if (!v) ok = false;
    vals[i] = v;
  }
  return ok;
}

Value **sema_bind_block_args(Sema *S, Scope *sc, Item *blk, Vec *args,
                             Span call) {
  int n = blk->bparams.len;
  Value **vals = arena_alloc(S->arena, sizeof(Value *) * (n ? n : 1));
  bool *given = arena_alloc(S->arena, sizeof(bool) * (n ? n : 1));
  const char **names = arena_alloc(S->arena, sizeof(char *) * (n ? n : 1));
  for (int k = 0; k < n; k++) names[k] = VEC_AT(blk->bparams, BlockParam, k)->name;
  ArgBind b = {.owner = arena_printf(S->arena, "block '%s'", blk->name), .n = n, .names = names};
  bool ok = true;
  for (int i = 0; i < args->len; i++) {
    Arg *a = VEC_AT(*args, Arg, i);
    if (!a->unit) continue;
    sema_error(S, a->unit_span, "unexpected unit '%s' in a block argument", a->unit);
    ok = false;
  }
  if (!sema_bind_args(S, args, &b)) ok = false;
  if (b.extra) {
    sema_error(S, b.extra->span,
               "too many arguments: block '%s' takes %d parameter%s %s, got %d",
               blk->name, n, plural(n), bparam_list(S, blk), b.npos);
    sema_note(S, blk->name_span, "'%s' is defined here", blk->name);
    ok = false;
  }
  for (int k = 0; k < n; k++) {
    if (!b.arg[k]) continue;
    given[k] = true;
    if (!block_arg(S, sc, b.arg[k], k, vals)) ok = false;
  }
  if (!apply_defaults(S, blk, vals, given, call)) ok = false;
  return ok ? vals : NULL;
}

// "Linear(784, 256)": every argument, defaults included, so two labels are
// equal exactly when the instantiations are.
static const char *inst_label(Sema *S, Item *blk, Value **args) {
  if (blk->kind == IT_MODEL) return blk->name;
  StrBuf b = {0};
  sb_printf(&b, "%s(", blk->name);
  for (int i = 0; i < blk->bparams.len; i++) {
    if (i) sb_puts(&b, ", ");
    sb_puts(&b, sema_const_str(S, args[i]));
  }
  sb_putc(&b, ')');
  char *s = arena_strdup(S->arena, b.data);
  sb_free(&b);
  return s;
}

// ---- members: params and buffers --------------------------------------------------------
typedef enum { IA_NUM, IA_MODE, IA_NONLIN } InitArgKind;

typedef struct InitParam {
  const char *name;
  InitArgKind kind;
  double deflt;
  bool required;
} InitParam;

typedef struct InitSpec {
  const char *name;
  int nparams;
  InitParam params[4];
  bool needs_fan; // kaiming/xavier: rank >= 2
} InitSpec;

static const InitSpec init_specs[] = {
    {"zeros", 0, {{0}}, false},
    {"ones", 0, {{0}}, false},
    {"normal", 2, {{"mean", IA_NUM, 0, false}, {"std", IA_NUM, 1, false}}, false},
    {"uniform", 2, {{"low", IA_NUM, 0, false}, {"high", IA_NUM, 1, false}}, false},
    {"constant", 1, {{"value", IA_NUM, 0, true}}, false},
    {"kaiming_uniform", 3,
     {{"a", IA_NUM, 0, false}, {"mode", IA_MODE, 0, false},
      {"nonlinearity", IA_NONLIN, 0, false}},
     true},
    {"kaiming_normal", 3,
     {{"a", IA_NUM, 0, false}, {"mode", IA_MODE, 0, false},
      {"nonlinearity", IA_NONLIN, 0, false}},
     true},
    {"xavier_uniform", 1, {{"gain", IA_NUM, 1, false}}, true},
    {"xavier_normal", 1, {{"gain", IA_NUM, 1, false}}, true},
    {"trunc_normal", 4,
     {{"std", IA_NUM, 1, false}, {"mean", IA_NUM, 0, false},
      {"a", IA_NUM, -2, false}, {"b", IA_NUM, 2, false}},
     false},
};
#define N_INITS ((int)(sizeof init_specs / sizeof init_specs[0]))

static const char *const init_modes[] = {"fan_in", "fan_out", NULL};
static const char *const init_nonlins[] = {
    "linear", "conv1d", "conv2d", "conv3d", "sigmoid",
    "tanh",   "relu",   "leaky_relu", "selu", NULL};

// An enum-like init argument: a bare word (mode = fan_out) or a string.
static const char *init_enum(Sema *S, Expr *e, const char *const *allowed,
                             const char *what) {
  const char *w = e->kind == EX_NAME || e->kind == EX_STR ? e->name : NULL;
  if (w)
    for (int i = 0; allowed[i]; i++)
      if (strcmp(allowed[i], w) == 0) return w;
  Vec c = {0};
  StrBuf b = {0};
  for (int i = 0; allowed[i]; i++) {
    vec_push(S->arena, &c, (void *)allowed[i]);
    sb_printf(&b, "%s%s", i ? ", " : "", allowed[i]);
  }
  if (w)
    sema_error(S, e->span, "unknown %s '%s'%s (one of %s)", what, w,
               sema_suggest(S, w, &c), b.data);
  else
    sema_error(S, e->span, "%s must be one of %s", what, b.data);
  sb_free(&b);
  return NULL;
}

// The numeric checks torch would make at run time, made here.
static bool init_values_ok(Sema *S, const InitSpec *sp, double *v, Expr **src,
                           Span at) {
  const char *n = sp->name;
  Span s1 = src[1] ? src[1]->span : at;
  if ((!strcmp(n, "normal") || !strcmp(n, "trunc_normal"))) {
    int si = !strcmp(n, "normal") ? 1 : 0;
    if (!(v[si] > 0)) {
      sema_error(S, src[si] ? src[si]->span : at,
                 "std must be positive, got %g", v[si]);
      return false;
    }
  }
  if (!strcmp(n, "uniform") && !(v[0] < v[1])) {
    sema_error(S, s1, "uniform needs low < high, got low = %g, high = %g",
               v[0], v[1]);
    return false;
  }
  if (!strcmp(n, "trunc_normal") && !(v[2] < v[3])) {
    sema_error(S, src[3] ? src[3]->span : at,
               "trunc_normal needs a < b, got a = %g, b = %g", v[2], v[3]);
    return false;
  }
  if (!strncmp(n, "xavier", 6) && !(v[0] > 0)) {
    sema_error(S, src[0] ? src[0]->span : at, "gain must be positive, got %g",
               v[0]);
    return false;
  }
  return true;
}

static const InitSpec *find_init(Sema *S, const char *name, Span sp) {
  if (!name) return NULL;
  for (int i = 0; i < N_INITS; i++)
    if (!strcmp(init_specs[i].name, name)) return &init_specs[i];
  Vec c = {0};
  for (int i = 0; i < N_INITS; i++)
    vec_push(S->arena, &c, (void *)init_specs[i].name);
  sema_error(S, sp, "unknown initializer '%s'%s", name,
             sema_suggest(S, name, &c));
  return NULL;
}

// Binds init arguments to the spec's parameters; src[i] is the argument
// expression of parameter i (NULL: default).
static bool bind_init_args(Sema *S, const InitSpec *sp, Vec *args, Expr **src,
                           bool *named_arg) {
  const char *names[4];
  for (int k = 0; k < sp->nparams; k++) names[k] = sp->params[k].name;
  ArgBind b = {.owner = sp->name, .n = sp->nparams, .names = names, .report_extra = true};
  bool ok = sema_bind_args(S, args, &b);
  for (int k = 0; k < sp->nparams; k++) {
    src[k] = b.arg[k] ? b.arg[k]->value : NULL;
    named_arg[k] = b.arg[k] && b.arg[k]->name;
  }
  return ok;
}

// Checks `init` of a param/buffer of type t and returns the resolved form
// for --explain, or NULL after an error.
// fan_in = shape[1] * prod(shape[2:]), fan_out = shape[0] * prod(shape[2:]),
// as torch.nn.init computes them: ", fan_in = 784" (xavier: both).
static const char *fan_text(Sema *S, const Type *t, bool both, bool out) {
  int64_t d0, d1, rest = 1, k;
  if (!t || t->rank < 2 || !dim_is_const(t->dims[0], &d0) ||
      !dim_is_const(t->dims[1], &d1))
    return "";
  for (int i = 2; i < t->rank; i++) {
    if (!dim_is_const(t->dims[i], &k)) return "";
    rest *= k;
  }
  if (both)
    return arena_printf(S->arena, ", fan_in = %lld, fan_out = %lld",
                        (long long)(d1 * rest), (long long)(d0 * rest));
  return arena_printf(S->arena, ", %s = %lld", out ? "fan_out" : "fan_in",
                      (long long)((out ? d0 : d1) * rest));
}

// `zeros` or `normal(0, 0.02)`: the initializer's spec and its arguments.
static const InitSpec *init_call(Sema *S, Expr *e, Vec **args) {
  static Vec none;
  *args = &none;
  if (e->kind == EX_NAME) return find_init(S, e->name, e->span);
  if (e->kind == EX_CALL && e->lhs->kind == EX_NAME) {
    *args = &e->args;
    return find_init(S, e->lhs->name, e->lhs->span);
  }
  sema_error(S, e->span, "an init must be an initializer name or call, like "
             "zeros or normal(0, 0.02)");
  return NULL;
}

// The resolved arguments of one init call, and their display for --explain.
typedef struct InitArgs {
  double v[4];   // numbers (defaults where absent)
  bool known;    // every number is known (false in signature-only checks)
  bool fan_out;  // kaiming mode = fan_out
  const char *mode, *nonlin; // kaiming's words, NULL where absent
  StrBuf text;   // "normal(0, 0.02)"
  int shown;
} InitArgs;

static void init_show(InitArgs *ia, bool named, const char *name,
                      const char *val) {
  sb_puts(&ia->text, ia->shown++ ? ", " : "(");
  if (named) sb_printf(&ia->text, "%s = ", name);
  sb_puts(&ia->text, val);
}

// Evaluates argument i of an init: a word for mode/nonlinearity, else a
// compile-time number.
static bool init_arg(Sema *S, Scope *sc, const InitParam *p, Expr *src,
                     bool named, InitArgs *ia, int i) {
  if (p->kind != IA_NUM) {
    const char *w = p->kind == IA_MODE
                        ? init_enum(S, src, init_modes, "mode")
                        : init_enum(S, src, init_nonlins, "nonlinearity");
    if (!w) return false;
    if (p->kind == IA_MODE) ia->fan_out = !strcmp(w, "fan_out");
    if (p->kind == IA_MODE) ia->mode = w;
    else ia->nonlin = w;
    init_show(ia, named, p->name, w);
    return true;
  }
  // A block checked without arguments has symbolic parameters: an argument
  // such as 1/sqrt(in) cannot be folded there, which is not an error.
  int qerr = S->quiet_errors;
  if (sc->lenient) S->quiet++;
  Value *val = sema_eval(sc, src);
  if (sc->lenient) S->quiet--;
  if (sc->lenient && (!val || S->quiet_errors != qerr)) {
    ia->known = false;
    return true;
  }
  if (!val) return false;
  if (sema_const_num(val, &ia->v[i])) {
    init_show(ia, named, p->name, arena_printf(S->arena, "%.6g", ia->v[i]));
    return true;
  }
  if (sc->lenient && val->kind == V_DIM) {
    ia->known = false;
    return true;
  }
  sema_error(S, src->span, "init arguments must be compile-time numbers, got %s",
             value_str(S->arena, val));
  return false;
}

// fan_in = shape[1] * prod(shape[2:]), fan_out = shape[0] * prod(shape[2:]),
// as torch.nn.init computes them (0 below rank 2 or for symbolic shapes).
static void fans(const Type *t, IrInit *in) {
  int64_t d0, d1, rest = 1, k;
  if (!t || t->rank < 2 || !dim_is_const(t->dims[0], &d0) || !dim_is_const(t->dims[1], &d1)) return;
  for (int i = 2; i < t->rank; i++) {
    if (!dim_is_const(t->dims[i], &k)) return;
    rest *= k;
  }
  in->fan_in = d1 * rest;
  in->fan_out = d0 * rest;
}

static_assert(N_INITS == IRI_TRUNC_NORMAL + 1, "init_specs out of step with IrInitKind");

// The initialiser lowering hands the runtime (graph/ir.h IrInit), from the
// spec (its index is the IrInitKind) and its arguments' values.
static IrInit resolve_init(const InitSpec *sp, const InitArgs *ia, const Type *t) {
  IrInit in = {.kind = (IrInitKind)(sp - init_specs), .std = 1, .high = 1, .gain = 1,
               .mode = ia->mode ? ia->mode : "fan_in",
               .nonlinearity = ia->nonlin ? ia->nonlin : "leaky_relu"};
  const double *v = ia->v;
  switch (in.kind) {
  case IRI_NORMAL: in.mean = v[0], in.std = v[1]; break;
  case IRI_UNIFORM: in.low = v[0], in.high = v[1]; break;
  case IRI_CONSTANT: in.value = v[0]; break;
  case IRI_KAIMING_UNIFORM: case IRI_KAIMING_NORMAL: in.a = v[0]; break;
  case IRI_XAVIER_UNIFORM: case IRI_XAVIER_NORMAL: in.gain = v[0]; break;
  case IRI_TRUNC_NORMAL: in.std = v[0], in.mean = v[1], in.low = v[2], in.high = v[3]; break;
  default: break;
  }
  fans(t, &in);
  return in;
}

// The default initialiser: zeros, and for params of rank >= 2
// kaiming_uniform(a = sqrt(5)), as torch.nn.Linear does.
static IrInit default_init(const Member *m, const Type *t) {
  IrInit in = {.kind = IRI_ZEROS, .std = 1, .high = 1, .gain = 1, .mode = "fan_in",
               .nonlinearity = "leaky_relu"};
  if (m->kind == MB_PARAM && t && t->rank >= 2) {
    in.kind = IRI_KAIMING_UNIFORM;
    in.a = sqrt(5.0);
  }
  fans(t, &in);
  return in;
}

// Checks `init` of a param/buffer of type t and returns the resolved form
// for --explain, or NULL after an error; *out gets the initialiser itself.
// Without an init: zeros, and for params of rank >= 2
// kaiming_uniform(a = sqrt(5)) as torch.nn.Linear does.
static const char *check_init(Sema *S, Scope *sc, Member *m, Type *t, IrInit *out) {
  Expr *e = m->init;
  *out = default_init(m, t);
  if (!e) {
    if (m->kind == MB_PARAM && t && t->rank >= 2)
      return arena_printf(S->arena, "kaiming_uniform(a = 2.23607)%s",
                          fan_text(S, t, false, false));
    return "zeros";
  }
  Vec *args;
  const InitSpec *sp = init_call(S, e, &args);
  Expr *src[4] = {0};
  bool named[4] = {0};
  if (!sp || !bind_init_args(S, sp, args, src, named)) return NULL;
  InitArgs ia = {.known = true};
  bool ok = true;
  sb_puts(&ia.text, sp->name);
  for (int i = 0; i < sp->nparams; i++) {
    const InitParam *p = &sp->params[i];
    ia.v[i] = p->deflt;
    if (src[i]) ok &= init_arg(S, sc, p, src[i], named[i], &ia, i);
    else if (p->required) {
      sema_error(S, e->span, "%s needs its '%s' argument", sp->name, p->name);
      ok = false;
    }
  }
  if (ia.shown) sb_putc(&ia.text, ')');
  if (ok && sp->needs_fan && t && t->rank < 2) {
    sema_error(S, e->span, "%s needs a tensor of rank >= 2 to compute fan-in "
               "and fan-out, but '%s' is %s", sp->name, m->name,
               type_str(S->arena, t));
    ok = false;
  }
  if (ok && ia.known && !init_values_ok(S, sp, ia.v, src, e->span)) ok = false;
  if (sp->needs_fan)
    sb_puts(&ia.text, fan_text(S, t, !strncmp(sp->name, "xavier", 6), ia.fan_out));
  char *res = ok ? arena_strdup(S->arena, ia.text.data) : NULL;
  sb_free(&ia.text);
  *out = resolve_init(sp, &ia, t);
  return res;
}

static void check_tensor_member(Sema *S, Inst *I, MInfo *mi) {
  Member *m = mi->m;
  Scope sc;
  sema_scope_init(&sc, S, I, mi->idx);
  sc.const_only = true;
  sc.lenient = I->sig_only;
  Type *t = sema_eval_type(&sc, m->type, TM_MEMBER);
  if (t && m->kind == MB_PARAM && !dtype_is_float(t->dtype)) {
    sema_error(S, m->type->dtype_span,
               "a param must have a float dtype (f32, f16, bf16, f64), got %s; "
               "declare integer state as a buffer",
               dtype_name(t->dtype));
    t = NULL;
  }
  mi->type = t;
  mi->init = check_init(S, &sc, m, t, &mi->init_ir);
  mi->init_default = m->init == NULL;
  if (!t) mi->failed = true;
}

// ---- members: instances --------------------------------------------------------------
// The block an instance member names; NULL after reporting an unknown name
// or one that is not a block.
static Item *instance_block(Sema *S, Member *m) {
  ItemInfo *ii = sema_find_item(S, m->block_name);
  if (!ii) {
    Vec c = {0};
    for (int i = 0; i < S->item_infos.len; i++) {
      Item *it = VEC_AT(S->item_infos, ItemInfo, i)->item;
      if (it->kind == IT_BLOCK) vec_push(S->arena, &c, (void *)it->name);
    }
    if (builtin_exists(m->block_name))
      sema_error(S, m->block_span,
                 "'%s' is a builtin function, not a block: call it inside a "
                 "method",
                 m->block_name);
    else
      sema_error(S, m->block_span, "unknown block '%s'%s", m->block_name,
                 sema_suggest(S, m->block_name, &c));
    return NULL;
  }
  Item *blk = ii->item;
  if (blk->kind != IT_BLOCK) {
    sema_error(S, m->block_span, "'%s' is a %s, not a block; only blocks can be "
               "instantiated", blk->name, item_kind_name(blk->kind));
    sema_note(S, blk->name_span, "'%s' is defined here", blk->name);
    return NULL;
  }
  return blk;
}

Inst *sema_member_inst(Sema *S, Scope *sc, Member *m) {
  Item *blk = instance_block(S, m);
  if (!blk) return NULL;
  Value **args = sema_bind_block_args(S, sc, blk, &m->args, m->span);
  if (!args || sc->inst->sig_only) return NULL;
  return sema_instantiate(S, blk, args, m->span, m->name_span);
}

void sema_member_scope(Scope *sc, Sema *S, Inst *I, int visible) {
  sema_scope_init(sc, S, I, visible);
  sc->const_only = true;
  sc->lenient = I && I->sig_only;
  sc->arg_depth = 1;
}

static void check_instance_member(Sema *S, Inst *I, MInfo *mi) {
  Scope sc;
  sema_member_scope(&sc, S, I, mi->idx);
  mi->child = sema_member_inst(S, &sc, mi->m);
  mi->failed = mi->child == NULL;
}

// ---- signatures and bodies ---------------------------------------------------------------
static bool starts_with_ellipsis(const TypeExpr *te) {
  return te && te->has_dims && te->dims.len && VEC_AT(te->dims, Expr, 0)->kind == EX_ELLIPSIS;
}

// Which parameters start with `...`, and what a generic signature may not
// do: `...` in the result with no parameter to bind it, a user-declared
// gradient (its function in the graph has fixed ranks), a model's methods
// (the program feeds them [B, ...] batches).
static void mark_lead(Sema *S, Scope *sc, Func *fn, Sig *g) {
  g->lead = arena_alloc(S->arena, sizeof(bool) * (size_t)(g->nparams + 1));
  Span at = {0};
  for (int i = 0; i < g->nparams; i++) {
    TypeExpr *te = VEC_AT(fn->params, Param, i)->type;
    if (!(g->lead[i] = starts_with_ellipsis(te))) continue;
    if (!g->ellipsis) at = te->span;
    g->ellipsis = true;
  }
  const char *why = NULL;
  if (!g->ellipsis && starts_with_ellipsis(fn->ret)) {
    at = fn->ret->span;
    why = "the result's '...' needs a parameter whose type starts with '...' (it stands for "
          "the dims that parameter has)";
  } else if (g->ellipsis && fn->has_grad) {
    why = "a function with a user-declared gradient takes fixed ranks: write its dims instead "
          "of '...'";
  } else if (g->ellipsis && sc->inst && sc->inst->item->kind == IT_MODEL) {
    why = "a model's methods take fixed ranks (a compiled program feeds them [B, ...] "
          "batches): '...' is for blocks and fn items";
  }
  if (!why) return;
  sema_error(S, at, "%s", why);
  g->ok = false;
}

// Does the signature of fn name `name` in a dim of one of its parameters?
static bool sig_names(Func *fn, const char *name) {
  for (int i = 0; i < fn->params.len; i++) {
    TypeExpr *te = VEC_AT(fn->params, Param, i)->type;
    for (int d = 0; te && te->has_dims && d < te->dims.len; d++) {
      Expr *x = VEC_AT(te->dims, Expr, d);
      if (x->kind == EX_NAME && !strcmp(x->name, name)) return true;
    }
  }
  return false;
}

// The name leading symbol j of k is shown with (display only: the symbols
// are objects): the dim the first call gives it when that is a plain
// symbol (B, T: the body then reads as it would if written for them), else
// D1, D2, ..; `...` when it is the only one; `...1`, `...2` where those
// names are taken.
static const char *lead_name(Sema *S, Func *fn, int k, int j, Dim *const *dims) {
  Sym *s = dims ? dim_as_sym(dims[j]) : NULL;
  const char *name = s && !s->opaque ? s->name : k == 1 ? "..." : arena_printf(S->arena, "D%d", j + 1);
  bool taken = sig_names(fn, name);
  for (int i = 0; dims && i < j && !taken; i++) { // two leading dims, one name
    Sym *o = dim_as_sym(dims[i]);
    taken = o && !strcmp(o->name, name);
  }
  return taken ? arena_printf(S->arena, "...%d", j + 1) : name;
}

// The result types: one, or a tuple (-> (f32[B, 2], aux: f32)) whose names
// are distinct; a function with a grad block has one result.
static void eval_results(Sema *S, Scope *sc, Func *fn, Sig *g) {
  g->nrets = fn->results.len ? fn->results.len : 1;
  g->rets = arena_alloc(S->arena, sizeof(Type *) * (size_t)g->nrets);
  g->ret_names = arena_alloc(S->arena, sizeof(char *) * (size_t)g->nrets);
  SMap names = {0};
  for (int i = 0; i < g->nrets; i++) {
    Param *r = fn->results.len ? VEC_AT(fn->results, Param, i) : NULL;
    TypeExpr *te = r ? r->type : fn->ret;
    g->rets[i] = sema_eval_type(sc, te, TM_SIG_RET);
    if (!g->ellipsis && starts_with_ellipsis(te)) g->rets[i] = NULL; // reported by mark_lead
    if (!g->rets[i]) g->ok = false;
    g->ret_names[i] = r ? r->name : NULL;
    Param *prev = r && r->name ? sema_map_put(S->arena, &names, r->name, r) : NULL;
    if (prev) {
      sema_error(S, r->name_span, "two results named '%s'", r->name);
      g->ok = false;
    }
  }
  g->ret = g->rets[0];
  if (g->nrets > 1 && fn->has_grad) {
    Span at = span_join(VEC_AT(fn->results, Param, 0)->span,
                        VEC_AT(fn->results, Param, g->nrets - 1)->span);
    sema_error(S, at, "a function with a grad block returns one value, '%s' returns %d",
               fn->name, g->nrets);
    g->ok = false;
  }
}

// The signature of fn; with `...` in its types, the form where `...` is k
// dims (k fresh symbols, first in g->syms, named after `lead` when given).
static Sig *compute_sig(Sema *S, Scope *sc, Func *fn, int k, Dim *const *lead) {
  Sig *g = arena_alloc(S->arena, sizeof(Sig));
  g->fn = fn;
  g->nparams = fn->params.len;
  g->params = arena_alloc(S->arena, sizeof(Type *) * (g->nparams + 1));
  sc->sig = g;
  g->ok = true;
  g->nlead = k;
  for (int j = 0; j < k; j++)
    vec_push(S->arena, &g->syms, sym_new(S->arena, lead_name(S, fn, k, j, lead), fn->name_span, false));
  mark_lead(S, sc, fn, g);
  SMap names = {0};
  for (int i = 0; i < g->nparams; i++) {
    Param *p = VEC_AT(fn->params, Param, i);
    Param *prev = sema_map_put(S->arena, &names, p->name, p);
    if (prev) {
      sema_error(S, p->name_span, "duplicate parameter '%s'", p->name);
      sema_note(S, prev->name_span, "the first '%s' is here", p->name);
      g->ok = false;
    }
    g->params[i] = sema_eval_type(sc, p->type, TM_SIG_PARAM);
    if (!g->params[i]) g->ok = false;
  }
  eval_results(S, sc, fn, g);
  if (fn->has_grad && fn->grad_name && sema_map_get(&names, fn->grad_name)) {
    sema_error(S, fn->grad_name_span,
               "the gradient '%s' has the same name as a parameter",
               fn->grad_name);
    g->ok = false;
  }
  return g;
}

Sig *sema_method_sig(Sema *S, Inst *I, MInfo *mi) {
  if (mi->sig) return mi->sig;
  Scope sc;
  sema_scope_init(&sc, S, I, mi->idx);
  sc.const_only = true;
  sc.lenient = I->sig_only;
  Inst *saved = S->ctx;
  mi->sig = compute_sig(S, &sc, mi->m->method, 0, NULL);
  S->ctx = saved;
  return mi->sig;
}

Sig *sema_fn_sig(Sema *S, ItemInfo *ii) {
  if (ii->fn_sig) return ii->fn_sig;
  Scope sc;
  sema_scope_init(&sc, S, NULL, 0);
  sc.const_only = true;
  ii->fn_sig = compute_sig(S, &sc, ii->item->fn, 0, NULL);
  return ii->fn_sig;
}

static Body *body_new(Sema *S, Func *fn, Sig *sig) {
  Body *b = arena_alloc(S->arena, sizeof(Body));
  b->fn = fn;
  b->sig = sig;
  b->ck = arena_alloc(S->arena, sizeof(CkFunc));
  b->ck->fn = fn;
  b->ck->sig = sig;
  vec_push(S->arena, &S->bodies, b);
  return b;
}

Body *sema_fn_body(Sema *S, ItemInfo *ii) {
  if (ii->fn_body || sema_fn_sig(S, ii)->ellipsis) return ii->fn_body;
  Body *b = body_new(S, ii->item->fn, sema_fn_sig(S, ii));
  b->item = ii;
  b->label = b->short_label = ii->item->name;
  b->ck->label = b->label;
  ii->fn_body = b;
  return b;
}

static void method_labels(Sema *S, Body *b, Inst *I, MInfo *mi) {
  b->inst = I;
  b->member = mi;
  b->label = arena_printf(S->arena, "%s.%s", I->label, mi->m->name);
  b->short_label = arena_printf(S->arena, "%s.%s", I->item->name, mi->m->name);
  b->ck->label = b->label;
}

static Body *method_body(Sema *S, Inst *I, MInfo *mi) {
  if (mi->body || sema_method_sig(S, I, mi)->ellipsis) return mi->body;
  Body *b = body_new(S, mi->m->method, sema_method_sig(S, I, mi));
  method_labels(S, b, I, mi);
  mi->body = b;
  return b;
}

Body *sema_generic_body(Sema *S, Inst *I, MInfo *mi, ItemInfo *ii, int k, Dim *const *lead) {
  Vec *specs = mi ? &mi->specs : &ii->specs;
  while (specs->len <= k) vec_push(S->arena, specs, NULL);
  if (specs->data[k]) return specs->data[k];
  Scope sc;
  if (mi) sema_member_scope(&sc, S, I, mi->idx);
  else sema_member_scope(&sc, S, NULL, 0);
  Func *fn = mi ? mi->m->method : ii->item->fn;
  Body *b = body_new(S, fn, compute_sig(S, &sc, fn, k, lead));
  if (mi) method_labels(S, b, I, mi);
  else {
    b->item = ii;
    b->label = b->short_label = b->ck->label = ii->item->name;
  }
  specs->data[k] = b;
  return b;
}

MInfo *sema_member(Inst *I, const char *name) {
  return sema_map_get(&I->by_name, name);
}

// ---- instantiation -----------------------------------------------------------------------
// Names every member once; a member may not reuse a name or a block
// parameter's name.
static void index_members(Sema *S, Inst *I) {
  Item *it = I->item;
  int n = it->members.len;
  I->members = arena_alloc(S->arena, sizeof(MInfo *) * (n ? n : 1));
  for (int i = 0; i < n; i++) {
    MInfo *mi = arena_alloc(S->arena, sizeof(MInfo));
    mi->m = VEC_AT(it->members, Member, i);
    mi->idx = i;
    I->members[i] = mi;
    MInfo *prev = sema_map_get(&I->by_name, mi->m->name);
    if (prev) {
      sema_error(S, mi->m->name_span, "duplicate member '%s' in %s '%s'",
                 mi->m->name, item_kind_name(it->kind), it->name);
      sema_note(S, prev->m->name_span, "previous definition of '%s' is here",
                mi->m->name);
      continue;
    }
    int bp = bparam_index(it, mi->m->name);
    if (bp >= 0) {
      sema_error(S, mi->m->name_span,
                 "'%s' is already a parameter of block '%s'", mi->m->name,
                 it->name);
      sema_note(S, VEC_AT(it->bparams, BlockParam, bp)->span,
                "block parameter '%s' is here", mi->m->name);
      continue;
    }
    sema_map_put(S->arena, &I->by_name, mi->m->name, mi);
  }
}

static void check_members(Sema *S, Inst *I) {
  index_members(S, I);
  for (int i = 0; i < I->item->members.len; i++) {
    MInfo *mi = I->members[i];
    switch (mi->m->kind) {
    case MB_PARAM:
    case MB_BUFFER: check_tensor_member(S, I, mi); break;
    case MB_INSTANCE: check_instance_member(S, I, mi); break;
    case MB_INSTANCE_LIST: sema_check_list_member(S, I, mi); break;
    case MB_METHOD:
      if (I->sig_only) sema_method_sig(S, I, mi);
      else method_body(S, I, mi);
      break;
    }
  }
  if (I->sig_only) return;
  for (int i = 0; i < I->item->members.len; i++)
    if (I->members[i]->m->kind == MB_METHOD && I->members[i]->body) // generic ones: per call
      sema_check_body(S, I->members[i]->body);
}

static void push_inst(Sema *S, Inst *I) {
  vec_push(S->arena, &S->inst_stack, I);
  S->ctx = I;
}

static void pop_inst(Sema *S) {
  sema_flush_context(S);
  S->inst_stack.len--;
  S->ctx = S->inst_stack.len
               ? VEC_AT(S->inst_stack, Inst, S->inst_stack.len - 1)
               : NULL;
}

// A block reaching itself through its instances is an error at the
// instance that closes the cycle, with a note for each step.
static bool check_inst_cycle(Sema *S, Item *blk, Span site) {
  int k = -1;
  for (int i = 0; i < S->inst_stack.len; i++)
    if (VEC_AT(S->inst_stack, Inst, i)->item == blk) k = i;
  if (k < 0) {
    if (S->inst_stack.len < SEMA_MAX_INST_DEPTH) return true;
    sema_error(S, site, "blocks nested too deeply (more than %d levels)",
               SEMA_MAX_INST_DEPTH);
    return false;
  }
  if (k == S->inst_stack.len - 1)
    sema_error(S, site, "recursive block: '%s' contains itself", blk->name);
  else
    sema_error(S, site, "recursive block: '%s' contains itself through '%s'",
               blk->name,
               VEC_AT(S->inst_stack, Inst, k + 1)->item->name);
  for (int i = k + 1; i < S->inst_stack.len; i++) {
    Inst *in = VEC_AT(S->inst_stack, Inst, i);
    Inst *outer = VEC_AT(S->inst_stack, Inst, i - 1);
    sema_note(S, in->site, "'%s' contains '%s' here", outer->item->name,
              in->item->name);
  }
  return false;
}

Inst *sema_instantiate(Sema *S, Item *blk, Value **args, Span site,
                       Span site_name) {
  ItemInfo *ii = info_of(S, blk);
  int n = blk->bparams.len;
  const char *key = inst_key(S, args, n);
  Inst *seen = sema_map_get(&ii->by_args, key);
  if (seen && seen->state == INST_DONE) return seen;
  if (!check_inst_cycle(S, blk, site)) return NULL;
  Inst *I = arena_alloc(S->arena, sizeof(Inst));
  I->item = blk;
  I->nargs = n;
  I->args = args;
  I->label = inst_label(S, blk, args);
  I->site = site;
  I->site_name = site_name;
  I->state = INST_BUSY;
  vec_push(S->arena, &ii->insts, I);
  sema_map_put(S->arena, &ii->by_args, key, I);
  push_inst(S, I);
  check_members(S, I);
  pop_inst(S);
  I->state = INST_DONE;
  return I;
}

static Inst *instantiate_model(Sema *S, ItemInfo *ii) {
  if (ii->model) return ii->model;
  Item *it = ii->item;
  sema_recipe_defaults(&ii->recipe, it->name); // a train block, checked later, fills it
  Inst *I = sema_instantiate(S, it, NULL, it->name_span, it->name_span);
  ii->model = I;
  if (I && !it->from_prelude) vec_push(S->arena, &S->models, I);
  return I;
}

Inst *sema_model_inst(Sema *S, ItemInfo *ii) { return instantiate_model(S, ii); }

// A block nobody instantiates: with defaults for every parameter it is
// checked once with them; otherwise its members and signatures are
// name-checked with the parameters as symbols, and bodies are skipped.
static void check_unused_block(Sema *S, ItemInfo *ii) {
  Item *blk = ii->item;
  bool all_defaults = true;
  for (int i = 0; i < blk->bparams.len; i++)
    if (!VEC_AT(blk->bparams, BlockParam, i)->deflt) all_defaults = false;
  if (all_defaults) {
    Value **vals =
        arena_alloc(S->arena, sizeof(Value *) * (blk->bparams.len + 1));
    if (apply_defaults(S, blk, vals, NULL, blk->name_span))
      sema_instantiate(S, blk, vals, blk->name_span, blk->name_span);
    return;
  }
  Inst *I = arena_alloc(S->arena, sizeof(Inst));
  I->item = blk;
  I->nargs = blk->bparams.len;
  I->args = arena_alloc(S->arena, sizeof(Value *) * (I->nargs + 1));
  for (int i = 0; i < I->nargs; i++) {
    BlockParam *bp = VEC_AT(blk->bparams, BlockParam, i);
    I->args[i] = value_dim(S->arena, bp->span,
                           dim_sym(S->arena, sym_new(S->arena, bp->name,
                                                     bp->span, false)));
  }
  I->label = blk->name;
  I->site = I->site_name = blk->name_span;
  I->sig_only = true;
  I->state = INST_BUSY;
  push_inst(S, I);
  check_members(S, I);
  pop_inst(S);
  I->state = INST_DONE;
}

// ---- the call graph ------------------------------------------------------------------------
typedef struct Frame {
  Body *b;
  int next;
} Frame;

static Dim *add_flops(Arena *a, Dim *x, Dim *y) {
  if (!y) return x;
  return x ? dim_add(a, x, y) : y;
}

// The cycle st[from] -> ... -> st[top] -> st[from] is reported at the call
// that enters it (the first one on the stack), with a note for each later
// call, the closing one (`back`) last.
static void report_cycle(Sema *S, Frame *st, int top, int from,
                         CallEdge *back) {
  Body *first = st[from].b;
  CallEdge *enter =
      from == top ? back : VEC_AT(first->calls, CallEdge, st[from].next - 1);
  if (from == top) {
    sema_error(S, back->span, "recursive call: '%s' calls itself (mlc "
               "functions cannot recurse)", first->short_label);
    return;
  }
  StrBuf b = {0};
  for (int i = from; i <= top; i++) sb_printf(&b, "%s -> ", st[i].b->short_label);
  sb_puts(&b, first->short_label);
  bool shown = sema_error(S, enter->span,
                          "recursive call: %s (mlc functions cannot recurse)",
                          b.data);
  sb_free(&b);
  if (!shown) return;
  for (int i = from + 1; i <= top; i++) {
    CallEdge *ce =
        i == top ? back : VEC_AT(st[i].b->calls, CallEdge, st[i].next - 1);
    Body *to = i == top ? first : st[i + 1].b;
    sema_note(S, ce->span, "'%s' calls '%s' here", st[i].b->short_label,
              to->short_label);
  }
}

// A call edge from a body whose chain of calls below is now `h` long: user
// code is inlined where it is called, so a chain longer than
// SEMA_MAX_CALL_DEPTH is refused at the call that makes it so.
static void note_height(Sema *S, Body *caller, const CallEdge *e, int h) {
  if (h + 1 > caller->height) caller->height = h + 1;
  if (h == SEMA_MAX_CALL_DEPTH)
    sema_error(S, e->span, "calls nested more than %d deep (user code is inlined where it is "
               "called)", SEMA_MAX_CALL_DEPTH);
}

// Depth-first over call edges with an explicit stack (call chains can be
// long). A back edge is recursion; finishing a body adds its total FLOPs,
// with the call's symbol substitution, into its caller, and its height.
static void walk_calls(Sema *S, Body *root) {
  int cap = 16, top = 0;
  Frame *st = malloc(sizeof(Frame) * cap);
  MLC_ASSERT(st);
  st[0] = (Frame){root, 0};
  root->color = 1;
  root->flops = root->own_flops;
  root->height = 1;
  while (top >= 0) {
    Frame *f = &st[top];
    if (f->next < f->b->calls.len) {
      CallEdge *e = VEC_AT(f->b->calls, CallEdge, f->next++);
      Body *c = e->callee;
      if (c->color == 1) {
        int from = top;
        while (st[from].b != c) from--;
        report_cycle(S, st, top, from, e);
      } else if (c->color == 2) {
        if (c->flops)
          f->b->flops = add_flops(S->arena, f->b->flops,
                                  dim_subst(S->arena, c->flops, &e->subst));
        note_height(S, f->b, e, c->height);
      } else {
        if (top + 1 == cap) {
          cap *= 2;
          st = realloc(st, sizeof(Frame) * cap);
          MLC_ASSERT(st);
        }
        c->color = 1;
        c->flops = c->own_flops;
        c->height = 1;
        st[++top] = (Frame){c, 0};
      }
      continue;
    }
    Body *done = f->b;
    done->color = 2;
    top--;
    if (top >= 0) {
      Frame *p = &st[top];
      CallEdge *e = VEC_AT(p->b->calls, CallEdge, p->next - 1);
      if (done->flops)
        p->b->flops = add_flops(S->arena, p->b->flops,
                                dim_subst(S->arena, done->flops, &e->subst));
      note_height(S, p->b, e, done->height);
    }
  }
  free(st);
}

static void finish_calls(Sema *S) {
  for (int i = 0; i < S->bodies.len; i++) {
    Body *b = VEC_AT(S->bodies, Body, i);
    if (b->color == 0) walk_calls(S, b);
  }
}

// ---- entry point ----------------------------------------------------------------------------
static void check_items(Sema *S) {
  for (int i = 0; i < S->item_infos.len; i++) {
    ItemInfo *ii = VEC_AT(S->item_infos, ItemInfo, i);
    Item *it = ii->item;
    if (it->from_prelude) continue;
    switch (it->kind) {
    case IT_MODEL:
      if (sema_find_item(S, it->name) == ii) instantiate_model(S, ii);
      else sema_instantiate(S, it, NULL, it->name_span, it->name_span);
      break;
    case IT_FN: {
      Body *b = sema_find_item(S, it->name) == ii ? sema_fn_body(S, ii) : NULL;
      if (!b) {
        b = body_new(S, it->fn, NULL);
        b->item = ii;
        b->label = b->short_label = it->name;
        Scope sc;
        sema_scope_init(&sc, S, NULL, 0);
        sc.const_only = true;
        b->sig = b->ck->sig = compute_sig(S, &sc, it->fn, 0, NULL);
      }
      sema_check_body(S, b);
      break;
    }
    case IT_TRAIN: sema_check_train(S, it); break;
    case IT_BLOCK: break;
    }
  }
}

// A generic method or fn nobody called is checked with `...` standing for
// one dim, the common case (as a block nobody instantiates is checked with
// its defaults).
static void check_uncalled_generic(Sema *S, ItemInfo *ii) {
  if (ii->item->kind == IT_FN && !ii->item->from_prelude && sema_find_item(S, ii->item->name) == ii &&
      sema_fn_sig(S, ii)->ellipsis && !ii->specs.len)
    sema_generic_body(S, NULL, NULL, ii, 1, NULL);
  if (ii->item->kind != IT_BLOCK) return;
  for (int i = 0; i < ii->insts.len; i++) {
    Inst *I = VEC_AT(ii->insts, Inst, i);
    for (int k = 0; !I->sig_only && k < ii->item->members.len; k++) {
      MInfo *mi = I->members[k];
      if (mi->m->kind == MB_METHOD && sema_method_sig(S, I, mi)->ellipsis && !mi->specs.len)
        sema_generic_body(S, I, mi, NULL, 1, NULL);
    }
  }
}

// Blocks checked only through instantiation get their turn at the end;
// prelude fns are checked when something called them, and the bodies of
// generic methods and fns for each number of leading dims they were called
// with (in their instantiation's context, for its notes).
static void check_leftovers(Sema *S) {
  for (int i = 0; i < S->item_infos.len; i++) {
    ItemInfo *ii = VEC_AT(S->item_infos, ItemInfo, i);
    if (ii->item->kind == IT_BLOCK && !ii->item->from_prelude &&
        ii->insts.len == 0)
      check_unused_block(S, ii);
  }
  for (int i = 0; i < S->item_infos.len; i++) check_uncalled_generic(S, VEC_AT(S->item_infos, ItemInfo, i));
  for (int i = 0; i < S->bodies.len; i++) {
    Body *b = VEC_AT(S->bodies, Body, i);
    if (b->state != BODY_NEW) continue;
    if (b->inst) push_inst(S, b->inst);
    sema_check_body(S, b);
    if (b->inst) pop_inst(S);
  }
}

Sema *sema_analyze(Arena *a, DiagSink *diags, Program *prog,
                   const SemaOptions *opt) {
  if (!prog) return NULL;
  Sema *S = arena_alloc(a, sizeof *S);
  S->arena = a;
  S->diags = diags;
  S->prog = prog;
  S->opt = opt;
  collect_items(S);
  check_items(S);
  check_leftovers(S);
  finish_calls(S);
  for (int i = 0; i < S->models.len; i++) {
    sema_check_entries(S, VEC_AT(S->models, Inst, i));
    if (!S->nerrors) sema_check_inlined(S, VEC_AT(S->models, Inst, i)); // needs checked bodies
  }
  sema_flush_context(S);
  sema_product(S);
  if (opt && opt->explain && opt->explain_out) sema_explain(S, opt->explain_out);
  return S;
}

const Program *sema_program(const Sema *S) { return S->prog; }

int sema_check(Arena *a, DiagSink *diags, Program *prog,
               const SemaOptions *opt) {
  int before = diags->nerrors;
  sema_analyze(a, diags, prog, opt);
  return diags->nerrors - before;
}
