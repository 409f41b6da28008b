// cuda_tool.c — the CUDA printer from kernel-IR text, for the golden tests
// in tests/backend/cuda/golden (run_cuda_golden.py).
//
// Usage: cuda_tool [--schedule] [--memplan] [--host] FILE.kir
//
// Parses every program of FILE (kir_parse) and verifies it; --schedule
// schedules each for the gpu target and --memplan plans its memory (each
// verified again); then prints them all with one CudaGen (cuda_gen.h) and
// writes the device source to stdout (with --host, the host source after
// it). Diagnostics of the first stage that fails, or the printer's refusal,
// go to stdout. Exit status: 0, 1 an error in the input or a refusal, 2 usage.
#include "backend/cuda/cuda_gen.h"
#include "kernel/memplan.h"
#include "kernel/schedule.h"

#include <stdio.h>
#include <string.h>

static int usage(const char *why) {
  fprintf(stderr, "cuda_tool: %s\nusage: cuda_tool [--schedule] [--memplan] [--host] FILE.kir\n", why);
  return 2;
}

int main(int argc, char **argv) {
  const char *file = NULL;
  bool sched = false, plan = false, host = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--schedule")) sched = true;
    else if (!strcmp(argv[i], "--memplan")) plan = true;
    else if (!strcmp(argv[i], "--host")) host = true;
    else if (argv[i][0] == '-' || file) return usage("unknown or extra argument");
    else file = argv[i];
  }
  if (!file) return usage("no FILE.kir");
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  const char *why = NULL;
  SrcFile *src = src_read(a, file, &why);
  if (!src) {
    printf("cuda_tool: cannot read %s: %s\n", file, why);
    arena_free(a);
    return 1;
  }
  Vec progs = {0};
  bool ok = kir_parse(a, src, &progs, &d);
  for (int i = 0; ok && i < progs.len; i++) {
    KirProgram *p = VEC_AT(progs, KirProgram, i);
    ok = kir_verify(p, &d) && (!sched || (kir_schedule(p, &kir_target_gpu, &d) && kir_verify(p, &d))) &&
         (!plan || (kir_plan_memory(p, &d) && kir_verify(p, &d)));
  }
  const char *base = strrchr(file, '/');
  char name[256];
  snprintf(name, sizeof name, "%s", base ? base + 1 : file);
  char *dot = strrchr(name, '.');
  if (dot) snprintf(dot, sizeof name - (size_t)(dot - name), ".cu");
  CudaGen *g = cuda_gen_new(&(CudaGenOptions){.prefix = "mlc_cu_", .name = name});
  char err[1024] = "";
  for (int i = 0; ok && i < progs.len; i++)
    if (cuda_gen_add(g, VEC_AT(progs, KirProgram, i), err, sizeof err)) {
      printf("cuda_tool: %s\n", err);
      ok = false;
    }
  if (ok) {
    fputs(cuda_gen_device(g), stdout);
    if (host) fputs(cuda_gen_host(g), stdout);
  }
  diag_print(&d, stdout);
  cuda_gen_free(g);
  arena_free(a);
  return ok ? 0 : 1;
}
