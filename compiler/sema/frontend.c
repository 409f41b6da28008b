// frontend.c — runs the parser (front/front.h) and sema over one file, with the prelude.
//
// The prelude (compiler/sema/prelude.model, embedded at build time) defines the
// standard blocks (Linear, Conv2d, ...). Its items come first and are marked
// `from_prelude`; a user item of the same name shadows them.
#include "frontend.h"

#include <string.h>

extern const char mlc_prelude_src[];
extern const unsigned long mlc_prelude_len;

static Program *with_prelude(Arena *a, DiagSink *d, Program *user) {
  const SrcFile *pf =
      src_from_string(a, SEMA_PRELUDE_PATH, mlc_prelude_src, mlc_prelude_len);
  Program *pre = frontend_parse(a, d, pf);
  Program *all = arena_alloc(a, sizeof *all);
  all->file = user->file;
  for (int i = 0; i < pre->items.len; i++) {
    Item *it = VEC_AT(pre->items, Item, i);
    it->from_prelude = true;
    vec_push(a, &all->items, it);
  }
  for (int i = 0; i < user->items.len; i++)
    vec_push(a, &all->items, user->items.data[i]);
  return all;
}

static int run_front(Arena *a, DiagSink *d, const SrcFile *f,
                     const SemaOptions *opt, Program **prog, Sema **sema) {
  Program *p = frontend_parse(a, d, f);
  if (prog) *prog = p;
  if (sema) *sema = NULL;
  if (d->nerrors) return d->nerrors;
  p = with_prelude(a, d, p);
  if (prog) *prog = p;
  if (d->nerrors) return d->nerrors; // a broken prelude is a compiler bug
  Sema *S = sema_analyze(a, d, p, opt);
  if (sema) *sema = S;
  return d->nerrors;
}

int frontend_check(Arena *a, DiagSink *d, const SrcFile *f,
                   const SemaOptions *opt, Program **out) {
  return run_front(a, d, f, opt, out, NULL);
}

int frontend_analyze(Arena *a, DiagSink *d, const SrcFile *f,
                     const SemaOptions *opt, Sema **out) {
  return run_front(a, d, f, opt, NULL, out);
}

Sema *frontend_load_model(Arena *a, DiagSink *d, const char *path, const char **model) {
  const char *err = NULL;
  SrcFile *f = src_read(a, path, &err);
  if (!f) {
    diag_error(d, (Span){0}, "cannot read '%s': %s", path, err);
    return NULL;
  }
  Sema *S = NULL;
  if (frontend_analyze(a, d, f, &(SemaOptions){0}, &S) || !S) return NULL;
  if (!*model) {
    const Program *p = sema_program(S);
    for (int i = 0; i < p->items.len && !*model; i++) {
      const Item *it = VEC_AT(p->items, Item, i);
      if (it->kind == IT_MODEL && !it->from_prelude) *model = it->name;
    }
    if (!*model) {
      diag_error(d, (Span){0}, "%s declares no model", path);
      return NULL;
    }
  }
  return S;
}

int frontend_check_buffer(const char *path, const char *data, size_t len,
                          FILE *diag_out, bool explain, FILE *explain_out) {
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  const SrcFile *f = src_from_string(a, path, data, len);
  SemaOptions opt = {.explain = explain, .explain_out = explain_out};
  int n = frontend_check(a, &d, f, &opt, NULL);
  if (diag_out) diag_print(&d, diag_out);
  arena_free(a);
  return n;
}
