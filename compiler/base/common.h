// common.h — what every compiler stage shares: arenas, growable vectors,
// interned strings, source files and spans, and the diagnostic sink.
//
// Ownership: one Arena per compilation owns source text, AST, types and
// (later) IR. Nothing allocated from an arena is freed on its own; the arena
// is freed whole. Diagnostics are collected in a DiagSink and printed (or
// captured by tests) in the one format
//   path:line:col: error: message
//     <quoted source line>
//     ^~~~
//   path:line:col: note: ...
#ifndef MLC_COMMON_H
#define MLC_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MLC_VERSION "0.1.0"

// ---- compiler bugs vs user errors ------------------------------------------
// MLC_ASSERT is for invariants the compiler itself guarantees; user errors go
// through diag_error. A failed assert prints "internal compiler error at
// file:line" and aborts.
void mlc_ice(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
#define MLC_ASSERT(c)                                                          \
  do {                                                                         \
    if (!(c)) mlc_ice(__FILE__, __LINE__, "assertion failed: %s", #c);         \
  } while (0)
#define MLC_UNREACHABLE() mlc_ice(__FILE__, __LINE__, "unreachable")

// ---- arena ------------------------------------------------------------------
typedef struct Arena Arena;
Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n); // zeroed, 16-byte aligned
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);
size_t arena_bytes(const Arena *a); // total bytes handed out (for tests/bench)
// One pointer-sized slot per arena for a per-compilation table whose
// entries live in the arena (dims.c interns floor-division symbols there).
void **arena_user(Arena *a);

// ---- growable vector of pointers (arena-backed) ------------------------------
// Typed by convention: each Vec field says in a comment what it holds.
typedef struct Vec {
  void **data;
  int len, cap;
} Vec;
void vec_push(Arena *a, Vec *v, void *item);
#define VEC_AT(v, T, i) ((T *)(v).data[i])

// ---- string builder (heap, for printers) -------------------------------------
typedef struct StrBuf {
  char *data;
  size_t len, cap;
} StrBuf;
void sb_putc(StrBuf *b, char c);
void sb_puts(StrBuf *b, const char *s);
void sb_printf(StrBuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sb_free(StrBuf *b);

// ---- source files and spans ---------------------------------------------------
// The text is NUL-terminated (the lexer relies on the sentinel); len excludes it.
typedef struct SrcFile {
  const char *path; // as given by the user, printed in diagnostics
  const char *text;
  size_t len;
} SrcFile;

// A span is a byte range in one file. Every token, AST node and type/IR value
// carries one; nodes synthesised later inherit the span of what caused them.
typedef struct Span {
  const SrcFile *file; // NULL: no location (builtins)
  uint32_t off, len;
} Span;

static inline Span span_join(Span a, Span b) {
  if (!a.file) return b;
  if (!b.file || a.file != b.file) return a;
  uint32_t lo = a.off < b.off ? a.off : b.off;
  uint32_t ea = a.off + a.len, eb = b.off + b.len;
  uint32_t hi = ea > eb ? ea : eb;
  return (Span){a.file, lo, hi - lo};
}
// 1-based line and column (column counts bytes) of a span's start.
void span_linecol(Span s, int *line, int *col);

// Reads a whole file into arena memory with a NUL sentinel. On failure
// returns NULL and sets *err to a readable reason (strerror-style, or "is a
// directory", "contains NUL bytes" is not an error: the lexer reports them).
SrcFile *src_read(Arena *a, const char *path, const char **err);
SrcFile *src_from_string(Arena *a, const char *path, const char *text,
                         size_t len);

// ---- diagnostics ---------------------------------------------------------------
typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct Diag {
  DiagLevel level;
  Span span;
  char *msg;
} Diag;

typedef struct DiagSink {
  Arena *arena;
  Vec diags; // Diag*, in report order; notes follow their error
  int nerrors, nwarnings;
  int max_errors; // 0 = unlimited; after that many, further errors dropped
  bool color;     // ANSI colours when printing to a terminal
} DiagSink;

void diag_init(DiagSink *s, Arena *a);
void diag_error(DiagSink *s, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_warning(DiagSink *s, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// A note attaches to the last error/warning. With sp.file == NULL it prints
// without location: "note: ...".
void diag_note(DiagSink *s, Span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_vreport(DiagSink *s, DiagLevel lv, Span sp, const char *fmt,
                  va_list ap);
// Prints every collected diagnostic in order in the format above.
void diag_print(const DiagSink *s, FILE *out);
void diag_print_one(const Diag *d, FILE *out, bool color);

// ---- error buffers ----------------------------------------------------------
// The err/errlen convention of the backends' entry points: formats the
// message into err (nothing when errlen is 0) and returns -1.
int err_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// ---- names ------------------------------------------------------------------
// Damerau-free Levenshtein distance, used for "did you mean" suggestions.
int edit_distance(const char *a, const char *b);
// Picks the closest of n candidates within a distance threshold scaled by
// length; NULL when nothing is close enough.
const char *closest_name(const char *name, const char *const *cands, int n);

#endif
