// fuzz_frontend.c — libFuzzer entry for the whole front end.
//
// Each input is one .model file's bytes. It goes through the same path as
// `mlc check --explain`: lexer, parser, prelude, sema and the explain
// printer, with diagnostics and the report written to /dev/null (opened
// once). A crash, a sanitizer report, a leak (the arena must be freed
// whole) or an input that takes longer than -timeout fails the run.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sema/frontend.h"

static FILE *devnull(void) {
  static FILE *f;
  if (!f) {
    f = fopen("/dev/null", "w");
    if (!f) abort();
  }
  return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
  FILE *out = devnull();
  frontend_check_buffer("fuzz.model", (const char *)data, len, out, true, out);
  return 0;
}
