// link.c — the link stage: from the LLVM module and the glue source to a
// finished program, object or library in the pipeline's temporary
// directory ($TMPDIR or /tmp, mlc-build-XXXXXX), which build.c installs.
//
//   kernels.o   the module as an object (llvm.h)
//   kernels1.o  .. kernels3.o: the other parts of the module, each compiled
//               on a thread of its own (llvm_gen_split: the other hot half,
//               train_step_checked's own kernels, the entry points)
//   glue.o      glue.c (with the runtime headers it includes, embedded in
//               mlc at build time: host_write_runtime_headers) compiled by `cc`,
//               started by the glue stage (link_start_glue) and waited for here
//   cuda.o      --target cuda: the host launchers (cuda.c) by `cc`
//   cuda_bundle.o  --target cuda: NVRTC's images (cuda_bundle.bin, included
//               by cuda_bundle.s) assembled by `cc -c`
//   out         exe: cc glue.o kernels*.o [cuda*.o] libmlc_rt.a -lz -lcjson -lm -lpthread -ldl
//   out.o       obj: cc -r -nostdlib glue.o kernels*.o [cuda*.o]
//   out.a       lib: a copy of libmlc_rt.a, then `ar rs out.a glue.o kernels*.o [cuda*.o]`
// (kernels.o only with the cpu target)
//               (no ar script: no user string is ever parsed by ar), and
//               the header NAME.h in P->header
//
// External tools run without a shell (posix_spawnp); a tool that cannot be
// started or that fails is one error naming the tool and its command line.
#include "pipeline_internal.h"

#include <dirent.h>
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/cuda/cuda_gen.h"
#include "backend/llvm/llvm.h"
#include "output.h"

extern char **environ;

static const char *tmp_path(Pipeline *P, const char *name) { return arena_printf(P->arena, "%s/%s", P->tmp, name); }

static const char *command_line(Pipeline *P, char *const *argv) {
  StrBuf b = {0};
  for (int i = 0; argv[i]; i++) sb_printf(&b, "%s%s", i ? " " : "", argv[i]);
  const char *s = arena_strdup(P->arena, b.data ? b.data : "");
  sb_free(&b);
  return s;
}

// Starts argv[0] from PATH with no shell; false after reporting.
static bool spawn_tool(Pipeline *P, char *const *argv, pid_t *pid) {
  fflush(NULL);
  int rc = posix_spawnp(pid, argv[0], NULL, NULL, argv, environ);
  if (!rc) return true;
  diag_error(P->diags, (Span){0}, "cannot run '%s': %s", argv[0], strerror(rc));
  return false;
}

// Waits for a tool started by spawn_tool; true when it exited 0 (cmd: its
// command line, for the message).
static bool wait_tool(Pipeline *P, const char *tool, const char *cmd, pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return true;
  if (WIFEXITED(st))
    diag_error(P->diags, (Span){0}, "%s failed (exit %d): %s", tool, WEXITSTATUS(st), cmd);
  else
    diag_error(P->diags, (Span){0}, "%s was killed by signal %d: %s", tool, WTERMSIG(st), cmd);
  return false;
}

// Runs argv[0] from PATH with no shell; true when it exits 0.
static bool run_tool(Pipeline *P, char *const *argv) {
  pid_t pid;
  return spawn_tool(P, argv, &pid) && wait_tool(P, argv[0], command_line(P, argv), pid);
}

bool link_make_tmp(Pipeline *P) {
  if (P->tmp[0]) return true;
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  snprintf(P->tmp, sizeof P->tmp, "%s/mlc-build-XXXXXX", base);
  if (mkdtemp(P->tmp)) return true;
  diag_error(P->diags, (Span){0}, "cannot create a temporary directory in '%s': %s", base, strerror(errno));
  P->tmp[0] = 0;
  return false;
}

// ---- the steps ----------------------------------------------------------------------------------
// kernels.o, and kernels1.o .. for the other parts of a split module.
static const char *kernels_obj(Pipeline *P, int part) {
  return part ? tmp_path(P, arena_printf(P->arena, "kernels%d.o", part)) : tmp_path(P, "kernels.o");
}

static bool write_kernels(Pipeline *P) {
  MLC_ASSERT(P->opt.backend.emit == BE_EMIT_OBJ);
  char err[1024] = "";
  bool ok = llvm_gen_write(P->gen, kernels_obj(P, 0), err, sizeof err) == 0;
  for (int i = 1; ok && i < llvm_gen_parts(P->gen); i++)
    ok = llvm_gen_write_part(P->gen, i, kernels_obj(P, i), err, sizeof err) == 0;
  if (!ok) diag_error(P->diags, (Span){0}, "code generation for %s: %s", P->u.model, err);
  return ok;
}

// glue.c compiled by cc in the background, from the glue stage on: the
// link waits for it (wait_glue), so it runs while the kernels are compiled.
bool link_start_glue(Pipeline *P) {
  if (!link_make_tmp(P)) return false;
  const char *src = tmp_path(P, "glue.c"), *obj = tmp_path(P, "glue.o");
  char err[512];
  if (!out_file_write(P->diags, src, P->glue.data, P->glue.len)) return false;
  if (!host_write_runtime_headers(P->tmp, err, sizeof err)) {
    diag_error(P->diags, (Span){0}, "%s", err);
    return false;
  }
  // -O1: the glue is tables and per-call wrappers (no loop over samples),
  // and -O2 was a third more of cc's time
  char *inc = arena_printf(P->arena, "-I%s", P->tmp);
  char *argv[] = {"cc", "-std=gnu17", "-O1", "-fPIC", "-w", inc, "-c", (char *)src, "-o", (char *)obj, NULL};
  P->glue_cmd = command_line(P, argv);
  if (!spawn_tool(P, argv, &P->glue_pid)) return false;
  P->glue_running = true;
  return true;
}

static bool wait_glue(Pipeline *P) {
  if (!P->glue_running) return link_start_glue(P) && wait_glue(P);
  P->glue_running = false;
  return wait_tool(P, "cc", P->glue_cmd, P->glue_pid);
}

// The bundle of NVRTC's images (mlc_<cname>_cuda_bundle): its bytes in
// cuda_bundle.bin, included by cuda_bundle.s (cuda_bundle_write_asm), so
// the assembler copies them and no compiler parses them.
static bool write_bundle(Pipeline *P, const char *src) {
  const char *bin = tmp_path(P, "cuda_bundle.bin");
  if (!out_file_write(P->diags, bin, (const char *)P->bundle, P->bundle_len)) return false;
  FILE *f = fopen(src, "w");
  bool ok = f && cuda_bundle_write_asm(f, arena_printf(P->arena, "mlc_%s_cuda_bundle", P->u.cname), bin,
                                       P->bundle_len) == 0;
  if (f && fclose(f)) ok = false;
  if (!ok) diag_error(P->diags, (Span){0}, "cannot write '%s': %s", src, strerror(errno));
  return ok;
}

// cuda.o: the host launchers and tables of the cuda stage (cuda.c) by `cc`,
// while cuda_bundle.o is assembled beside it. -O0: cuda.c is launch glue
// (size arithmetic once per call, then a loop over a static launch table
// into the driver), whose run time a launch's microseconds in the driver
// hide; char_transformer's took cc 0.35 s at -O0, 2.3 s at -O1, 5.6 s at -O2.
static bool compile_cuda(Pipeline *P, const char *obj, const char *bobj) {
  const char *src = tmp_path(P, "cuda.c"), *bsrc = tmp_path(P, "cuda_bundle.s");
  const char *host = cuda_gen_host(P->cuda);
  if (!out_file_write(P->diags, src, host, strlen(host)) || !write_bundle(P, bsrc)) return false;
  char *inc = arena_printf(P->arena, "-I%s", P->tmp);
  char *argv[] = {"cc", "-std=gnu17", "-O0", "-fPIC", "-w", inc, "-c", (char *)src, "-o", (char *)obj, NULL};
  char *bargv[] = {"cc", "-c", (char *)bsrc, "-o", (char *)bobj, NULL};
  pid_t pid, bpid;
  if (!spawn_tool(P, argv, &pid)) return false;
  bool bok = spawn_tool(P, bargv, &bpid) && wait_tool(P, "cc", command_line(P, bargv), bpid);
  return wait_tool(P, "cc", command_line(P, argv), pid) && bok;
}

// The objects the link takes: the glue, then the CPU kernels (every part)
// and the CUDA host side where those targets are built.
static int objects(Pipeline *P, const char *gobj, const char *kobj, const char *cobj, char **argv) {
  // cobj's bundle object beside it
  const char *bobj = tmp_path(P, "cuda_bundle.o");
  int n = 0;
  argv[n++] = (char *)gobj;
  if (P->u.cpu) {
    argv[n++] = (char *)kobj;
    for (int i = 1; i < llvm_gen_parts(P->gen); i++) argv[n++] = (char *)kernels_obj(P, i);
  }
  if (P->u.cuda) argv[n++] = (char *)cobj, argv[n++] = (char *)bobj;
  return n;
}

static bool link_exe(Pipeline *P, const char *gobj, const char *kobj, const char *cobj, const char *out) {
  char *argv[32] = {"cc"};
  int n = 1 + objects(P, gobj, kobj, cobj, argv + 1);
  const char *tail[] = {P->opt.runtime, "-lz", "-lcjson", "-lm", "-lpthread", "-ldl", "-o", out, NULL};
  for (int i = 0; tail[i]; i++) argv[n++] = (char *)tail[i];
  argv[n] = NULL;
  return run_tool(P, argv);
}

static bool link_obj(Pipeline *P, const char *gobj, const char *kobj, const char *cobj, const char *out) {
  char *argv[32] = {"cc", "-r", "-nostdlib"};
  int n = 3 + objects(P, gobj, kobj, cobj, argv + 3);
  argv[n++] = "-o", argv[n++] = (char *)out, argv[n] = NULL;
  return run_tool(P, argv);
}

// libNAME.a = libmlc_rt.a's objects + glue (with the API) + kernels.
static bool link_lib(Pipeline *P, const char *gobj, const char *kobj, const char *cobj, const char *out) {
  if (!out_file_copy(P->diags, P->opt.runtime, out)) return false;
  char *argv[32] = {"ar", "rs", (char *)out};
  int n = 3 + objects(P, gobj, kobj, cobj, argv + 3);
  argv[n] = NULL;
  if (!run_tool(P, argv)) return false;
  build_glue_header(&P->header, &P->u);
  return true;
}

bool link_run(Pipeline *P) {
  MLC_ASSERT(P->glue_done);
  if (!link_make_tmp(P)) return false;
  const char *kobj = tmp_path(P, "kernels.o"), *gobj = tmp_path(P, "glue.o"), *cobj = tmp_path(P, "cuda.o");
  static const char *const outs[] = {[LINK_EXE] = "out", [LINK_OBJ] = "out.o", [LINK_LIB] = "out.a"};
  const char *out = tmp_path(P, outs[P->opt.link]);
  double t0 = pipeline_now();
  if (P->u.cpu && !write_kernels(P)) return false;
  double t1 = pipeline_now();
  if (!wait_glue(P)) return false;
  double t2 = pipeline_now();
  if (P->u.cuda && !compile_cuda(P, cobj, tmp_path(P, "cuda_bundle.o"))) return false;
  double t3 = pipeline_now();
  bool ok = P->opt.link == LINK_EXE   ? link_exe(P, gobj, kobj, cobj, out)
            : P->opt.link == LINK_OBJ ? link_obj(P, gobj, kobj, cobj, out)
                                      : link_lib(P, gobj, kobj, cobj, out);
  char cuda[64] = "";
  if (P->u.cuda) snprintf(cuda, sizeof cuda, ", cuda.o %.1f ms", (t3 - t2) * 1e3);
  // kernels.o: part 0 written and the other parts' threads joined; then
  // what each of those threads took, in parallel with the rest
  char parts[256] = "";
  for (int i = 1; P->u.cpu && i < llvm_gen_parts(P->gen); i++) {
    char t[160];
    llvm_gen_times(P->gen, i, t, sizeof t);
    size_t n = strlen(parts);
    snprintf(parts + n, sizeof parts - n, "; kernels%d.o: %s", i, t);
  }
  snprintf(P->link_times, sizeof P->link_times, "kernels.o %.1f ms, glue.o %.1f ms%s, %s %.1f ms%s", (t1 - t0) * 1e3,
           (t2 - t1) * 1e3, cuda, P->opt.link == LINK_LIB ? "ar" : "cc", (pipeline_now() - t3) * 1e3, parts);
  if (ok) P->linked = out;
  return ok;
}

void link_cleanup(Pipeline *P) {
  if (P->glue_running) { // a build that stopped before the link
    int st;
    while (waitpid(P->glue_pid, &st, 0) < 0 && errno == EINTR) {
    }
    P->glue_running = false;
  }
  if (!P->tmp[0]) return;
  if (P->opt.keep_temps) {
    fprintf(stderr, "mlc build: temporaries kept in %s\n", P->tmp);
    P->tmp[0] = 0;
    return;
  }
  host_remove_runtime_headers(P->tmp); // kernels/abi.h is in a subfolder
  DIR *dir = opendir(P->tmp);
  for (struct dirent *e; dir && (e = readdir(dir));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(tmp_path(P, e->d_name));
  if (dir) closedir(dir);
  rmdir(P->tmp);
  P->tmp[0] = 0;
}
