// kir_tool.c — the kernel IR's passes from text to text, for the golden
// tests in tests/kernel/golden (run by tests/kernel/run_kir_golden.py).
//
// Usage: kir_tool [--target NAME] [--schedule] [--memplan] [--conv-winograd] FILE.kir
//
// Parses every program of FILE (kir_parse) and verifies it; with
// --schedule schedules each for the target (kir_schedule; default cpu) and
// verifies again; with --memplan plans its memory (kir_plan_memory) and
// verifies again; --conv-winograd schedules with the target's conv_winograd
// (`mlc build --conv winograd`). Prints the programs (kir_print) to stdout, or, at the
// first stage that fails, the diagnostics (file:line:col for parse errors,
// "kir: ..." for the verifier) to stdout. Exit status: 0 success, 1 an
// error in the input, 2 a usage error.
#include "kernel/memplan.h"
#include "kernel/schedule.h"

#include <stdio.h>
#include <string.h>

static int usage(const char *why) {
  fprintf(stderr, "kir_tool: %s\nusage: kir_tool [--target cpu|gpu] [--schedule] [--memplan] [--conv-winograd] FILE.kir\n",
          why);
  return 2;
}

// One stage over every program; false (diagnostics in d) at the first failure.
static bool stage(Vec *progs, const KirTarget *t, int which, DiagSink *d) {
  for (int i = 0; i < progs->len; i++) {
    KirProgram *p = VEC_AT(*progs, KirProgram, i);
    bool ok = which == 0 ? true : which == 1 ? kir_schedule(p, t, d) : kir_plan_memory(p, d);
    if (!ok || !kir_verify(p, d)) return false;
  }
  return true;
}

int main(int argc, char **argv) {
  const char *file = NULL, *target = "cpu";
  bool sched = false, plan = false, winograd = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--schedule")) sched = true;
    else if (!strcmp(argv[i], "--conv-winograd")) winograd = true;
    else if (!strcmp(argv[i], "--memplan")) plan = true;
    else if (!strcmp(argv[i], "--target") && i + 1 < argc) target = argv[++i];
    else if (argv[i][0] == '-' || file) return usage("unknown or extra argument");
    else file = argv[i];
  }
  const KirTarget *found = kir_target_find(target);
  if (!file || !found) return usage(file ? "unknown target" : "no FILE.kir");
  KirTarget tw = *found;
  tw.conv_winograd = winograd;
  const KirTarget *t = &tw;
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  const char *why = NULL;
  SrcFile *src = src_read(a, file, &why);
  if (!src) {
    printf("kir_tool: cannot read %s: %s\n", file, why);
    arena_free(a);
    return 1;
  }
  Vec progs = {0};
  bool ok = kir_parse(a, src, &progs, &d) && stage(&progs, t, 0, &d);
  if (ok && sched) ok = stage(&progs, t, 1, &d);
  if (ok && plan) ok = stage(&progs, t, 2, &d);
  if (ok)
    for (int i = 0; i < progs.len; i++) kir_dump(VEC_AT(progs, KirProgram, i), stdout);
  diag_print(&d, stdout);
  arena_free(a);
  return ok ? 0 : 1;
}
