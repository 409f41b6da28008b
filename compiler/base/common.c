// common.c — arenas, vectors, string builders, source files, spans and the
// diagnostic sink shared by every stage (see common.h for the contracts).
#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// ---- internal compiler errors ---------------------------------------------------
void mlc_ice(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "internal compiler error at %s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) mlc_ice(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
  return p;
}

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) mlc_ice(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
  return q;
}

// ---- arena ------------------------------------------------------------------------
// A list of chunks; big requests get a chunk of their own so that a 10 MB
// source file does not waste a whole default chunk.
typedef struct Chunk {
  struct Chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char mem[];
} Chunk;

struct Arena {
  Chunk *head;
  size_t bytes;
  void *user; // one slot for a stage's per-compilation table (arena_user)
};

enum { CHUNK_SIZE = 64 * 1024 };

Arena *arena_new(void) {
  Arena *a = xmalloc(sizeof *a);
  a->head = NULL;
  a->bytes = 0;
  a->user = NULL;
  return a;
}

void arena_free(Arena *a) {
  if (!a) return;
  for (Chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void *arena_alloc(Arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  Chunk *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
    c = xmalloc(sizeof(Chunk) + cap);
    c->used = 0;
    c->cap = cap;
    if (cap == n && a->head) { // oversized: keep the current chunk on top
      c->next = a->head->next;
      a->head->next = c;
    } else {
      c->next = a->head;
      a->head = c;
    }
  }
  void *p = c->mem + c->used;
  c->used += n;
  a->bytes += n;
  memset(p, 0, n);
  return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *arena_strdup(Arena *a, const char *s) {
  return arena_strndup(a, s, strlen(s));
}

char *arena_vprintf(Arena *a, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  char *p = arena_alloc(a, (size_t)n + 1);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  return p;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *p = arena_vprintf(a, fmt, ap);
  va_end(ap);
  return p;
}

size_t arena_bytes(const Arena *a) { return a->bytes; }

void **arena_user(Arena *a) { return &a->user; }

// ---- vectors -----------------------------------------------------------------------
void vec_push(Arena *a, Vec *v, void *item) {
  if (v->len == v->cap) {
    int cap = v->cap ? v->cap * 2 : 4;
    void **d = arena_alloc(a, sizeof(void *) * (size_t)cap);
    if (v->len) memcpy(d, v->data, sizeof(void *) * (size_t)v->len);
    v->data = d;
    v->cap = cap;
  }
  v->data[v->len++] = item;
}

// ---- string builder --------------------------------------------------------------------
static void sb_reserve(StrBuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra + 1) cap *= 2;
  b->data = xrealloc(b->data, cap);
  b->cap = cap;
}

void sb_putc(StrBuf *b, char c) {
  sb_reserve(b, 1);
  b->data[b->len++] = c;
  b->data[b->len] = 0;
}

void sb_puts(StrBuf *b, const char *s) {
  size_t n = strlen(s);
  sb_reserve(b, n);
  memcpy(b->data + b->len, s, n + 1);
  b->len += n;
}

void sb_printf(StrBuf *b, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  sb_reserve(b, (size_t)n);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  va_end(ap);
}

void sb_free(StrBuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

// ---- source files -------------------------------------------------------------------------
SrcFile *src_from_string(Arena *a, const char *path, const char *text,
                         size_t len) {
  SrcFile *f = arena_alloc(a, sizeof *f);
  f->path = arena_strdup(a, path);
  f->text = arena_strndup(a, text, len);
  f->len = len;
  return f;
}

SrcFile *src_read(Arena *a, const char *path, const char **err) {
  struct stat st;
  if (stat(path, &st) != 0) {
    *err = strerror(errno);
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    *err = "is a directory";
    return NULL;
  }
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    *err = strerror(errno);
    return NULL;
  }
  // Read in blocks rather than trusting st_size (pipes, /proc files).
  StrBuf b = {0};
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, fp)) > 0) {
    sb_reserve(&b, n);
    memcpy(b.data + b.len, buf, n);
    b.len += n;
  }
  bool bad = ferror(fp);
  fclose(fp);
  if (bad) {
    sb_free(&b);
    *err = "read error";
    return NULL;
  }
  SrcFile *f = src_from_string(a, path, b.data ? b.data : "", b.len);
  sb_free(&b);
  return f;
}

void span_linecol(Span s, int *line, int *col) {
  *line = 1;
  *col = 1;
  if (!s.file) return;
  const char *t = s.file->text;
  uint32_t off = s.off <= s.file->len ? s.off : (uint32_t)s.file->len;
  int ln = 1;
  uint32_t bol = 0;
  for (uint32_t i = 0; i < off; i++)
    if (t[i] == '\n') {
      ln++;
      bol = i + 1;
    }
  *line = ln;
  *col = (int)(off - bol) + 1;
}

// ---- diagnostics -----------------------------------------------------------------------------
void diag_init(DiagSink *s, Arena *a) {
  memset(s, 0, sizeof *s);
  s->arena = a;
  s->max_errors = 100;
}

void diag_vreport(DiagSink *s, DiagLevel lv, Span sp, const char *fmt,
                  va_list ap) {
  // Past max_errors, errors (and the notes that follow them) are dropped;
  // the count still grows so callers know the input was bad.
  if (lv == DIAG_ERROR) s->nerrors++;
  if (lv == DIAG_WARNING) s->nwarnings++;
  if (s->max_errors && s->nerrors > s->max_errors) return;
  Diag *d = arena_alloc(s->arena, sizeof *d);
  d->level = lv;
  d->span = sp;
  d->msg = arena_vprintf(s->arena, fmt, ap);
  vec_push(s->arena, &s->diags, d);
}

void diag_error(DiagSink *s, Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_vreport(s, DIAG_ERROR, sp, fmt, ap);
  va_end(ap);
}

void diag_warning(DiagSink *s, Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_vreport(s, DIAG_WARNING, sp, fmt, ap);
  va_end(ap);
}

void diag_note(DiagSink *s, Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_vreport(s, DIAG_NOTE, sp, fmt, ap);
  va_end(ap);
}

static const char *level_name(DiagLevel lv) {
  return lv == DIAG_ERROR ? "error" : lv == DIAG_WARNING ? "warning" : "note";
}

static const char *level_color(DiagLevel lv) {
  return lv == DIAG_ERROR ? "\033[1;31m" : lv == DIAG_WARNING ? "\033[1;35m"
                                                              : "\033[1;36m";
}

// Prints the source line of `sp` with a gutter and a ^~~~ underline. Tabs are
// kept in the underline's indentation so the caret lines up; control and
// non-ASCII bytes are shown as '?' so a binary file cannot garble a terminal.
// Spans that run past the end of the line are underlined to the line's end.
static void print_excerpt(Span sp, FILE *out) {
  const SrcFile *f = sp.file;
  uint32_t off = sp.off <= f->len ? sp.off : (uint32_t)f->len;
  uint32_t bol = off, eol = off;
  while (bol > 0 && f->text[bol - 1] != '\n') bol--;
  while (eol < f->len && f->text[eol] != '\n') eol++;
  int line, col;
  span_linecol(sp, &line, &col);
  enum { MAXW = 200 }; // very long lines are cut around the caret
  uint32_t from = bol;
  if (off - bol > MAXW / 2) from = off - MAXW / 2;
  uint32_t to = eol;
  if (to - from > MAXW) to = from + MAXW;
  fprintf(out, "%5d | ", line);
  if (from > bol) fputs("...", out);
  for (uint32_t i = from; i < to; i++) {
    unsigned char c = (unsigned char)f->text[i];
    fputc(c == '\t' || (c >= 32 && c < 127) ? c : '?', out);
  }
  if (to < eol) fputs("...", out);
  fputs("\n      | ", out);
  if (from > bol) fputs("   ", out);
  for (uint32_t i = from; i < off; i++)
    fputc(f->text[i] == '\t' ? '\t' : ' ', out);
  fputc('^', out);
  uint32_t end = off + (sp.len ? sp.len : 1);
  if (end > to) end = to;
  for (uint32_t i = off + 1; i < end; i++) fputc('~', out);
  fputc('\n', out);
}

void diag_print_one(const Diag *d, FILE *out, bool color) {
  if (d->span.file) {
    int line, col;
    span_linecol(d->span, &line, &col);
    fprintf(out, "%s:%d:%d: ", d->span.file->path, line, col);
  }
  if (color)
    fprintf(out, "%s%s:\033[0m \033[1m%s\033[0m\n", level_color(d->level),
            level_name(d->level), d->msg);
  else
    fprintf(out, "%s: %s\n", level_name(d->level), d->msg);
  if (d->span.file) print_excerpt(d->span, out);
}

void diag_print(const DiagSink *s, FILE *out) {
  for (int i = 0; i < s->diags.len; i++)
    diag_print_one(VEC_AT(s->diags, Diag, i), out, s->color);
  if (s->max_errors && s->nerrors > s->max_errors)
    fprintf(out, "note: %d more errors not shown\n",
            s->nerrors - s->max_errors);
}

// ---- names ---------------------------------------------------------------------------
int edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 64 || m > 64) return 1 << 20; // suggestions only for short names
  int row[65];
  for (size_t j = 0; j <= m; j++) row[j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= m; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[m];
}

const char *closest_name(const char *name, const char *const *cands, int n) {
  const char *best = NULL;
  int bestd = 1 << 20;
  int limit = (int)strlen(name) / 3 + 1; // 1 edit for short names, more for long
  if (limit > 3) limit = 3;
  for (int i = 0; i < n; i++) {
    if (!cands[i] || strcmp(cands[i], name) == 0) continue;
    int d = edit_distance(name, cands[i]);
    if (d < bestd) {
      bestd = d;
      best = cands[i];
    }
  }
  return bestd <= limit ? best : NULL;
}

int err_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}
