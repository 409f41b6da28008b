// ir_check.c — reads graph IR text the way a pass test would: parses it
// (ir_parse), verifies it (ir_verify) and prints it again, which must give
// back the same text. For tests/driver/run.py, which checks that every
// graph stage `mlc build` prints or dumps is IR the parser accepts.
//
// Usage: ir_check FILE      (FILE: a module's text; - reads standard input)
// Prints one line per function, "func NAME ARGS RESULTS" (counts), then
// "round trip: same text" or "round trip: different text"; exits 0 when the
// text parses, verifies and round-trips, 1 otherwise (diagnostics on
// stderr), 2 on a usage error.
#include "graph/ir.h"

#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) return NULL;
  StrBuf b = {0};
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_printf(&b, "%.*s", (int)n, buf);
  if (f != stdin) fclose(f);
  *len = b.len;
  return b.data ? b.data : calloc(1, 1);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fputs("usage: ir_check FILE\n", stderr);
    return 2;
  }
  size_t len = 0;
  char *text = slurp(argv[1], &len);
  if (!text) {
    fprintf(stderr, "ir_check: cannot read %s\n", argv[1]);
    return 1;
  }
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  IrModule *m = ir_parse(a, src_from_string(a, argv[1], text, len), &d);
  bool ok = m && ir_verify(m, &d);
  diag_print(&d, stderr);
  if (ok) {
    for (int i = 0; i < m->funcs.len; i++) {
      IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
      printf("func %s %d %d\n", f->name, f->params.len, f->outputs.len);
    }
    StrBuf again = {0};
    ir_print_module(&again, m, 0);
    bool same = again.len == len && !memcmp(again.data, text, len);
    printf("round trip: %s text\n", same ? "same" : "different");
    ok = same;
    sb_free(&again);
  }
  arena_free(a);
  free(text);
  return ok ? 0 : 1;
}
