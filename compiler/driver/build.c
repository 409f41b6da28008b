// build.c — `mlc build` to native code: the pipeline from a .model file to
// an executable, a relocatable object, a static library + header, or the
// backend's LLVM IR / assembly text.
//
//   mlc build FILE.model [--model NAME] [-o OUT] [--emit exe|obj|lib|llvm|asm]
//             [--cpu=native|NAME] [-O2|-O3] [--keep-temps]
//   (--emit ir|dot stay with driver_ir.c)
//
// Input: the model file. Output, by --emit:
//   exe   OUT (default: the file's stem): kernels + glue + main, linked with
//         libmlc_rt: `OUT train|eval|predict ...` (runtime/program/driver.c)
//   obj   OUT.o: kernels + glue in one relocatable object defining
//         `const MlcModel mlc_model_<cname>` (link it with libmlc_rt)
//   lib   libCNAME.a (kernels, glue with the embedding API, the runtime's
//         objects) and CNAME.h next to it (docs/embedding.md)
//   llvm, asm   the optimised kernel module as text
// cname, the C name of symbols, comes from OUT (libfoo.a -> foo) or the
// file's stem, made an identifier.
//
// External tools: the system C compiler `cc` compiles the glue (in a temp
// dir) and links; `ar` builds libraries. libmlc_rt.a is found from the
// MLC_RT_LIB environment variable, else the path CMake compiled in
// (MLC_RT_LIBRARY), else next to the mlc executable; the runtime headers
// the glue includes are compiled into mlc (MLC_RT_HEADERS) and written to
// the temp dir.
#include "build.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/llvm/llvm.h"
#include "passes/autodiff.h"
#include "passes/optim.h"
#include "sema/frontend.h"
#include "sema/sema.h"

enum { EXIT_OK = 0, EXIT_ERRORS = 1, EXIT_USAGE = 2 };

// The runtime headers, embedded at build time (scripts/embed.cmake).
extern const char mlc_model_h_src[];
extern const unsigned long mlc_model_h_len;
extern const char mlc_rt_h_src[];
extern const unsigned long mlc_rt_h_len;

static int usage_error(const char *fmt, const char *arg) {
  fputs("mlc build: error: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\nTry 'mlc --help' for more information.\n", stderr);
  return EXIT_USAGE;
}

// ---- the pipeline -------------------------------------------------------------------------------
// FNV-1a 64 of the module's text: the structural hash checkpoints carry.
static void module_hash(IrModule *m, char out[17]) {
  StrBuf b = {0};
  ir_print_module(&b, m, 0);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < b.len; i++) h = (h ^ (unsigned char)b.data[i]) * 0x100000001b3ull;
  sb_free(&b);
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

// The forward output inside train_step: the logits operand of the first
// cross_entropy (the loss's `cross_entropy(forward(x), y)`). Returned as a
// 4th result so training accuracy costs no second forward pass; NULL when
// the loss has another shape (the runtime then counts no accuracy).
static IrNode *step_forward_output(IrFunc *step, IrFunc *predict) {
  if (!predict || !predict->outputs.len) return NULL;
  Type *want = VEC_AT(predict->outputs, IrNode, 0)->type;
  for (int i = 0; i < step->nodes.len; i++) {
    IrNode *n = VEC_AT(step->nodes, IrNode, i);
    if (n->op != IR_CROSS_ENTROPY) continue;
    IrNode *x = n->in[0];
    return x->type->rank == want->rank && x->type->dtype == want->dtype ? x : NULL;
  }
  return NULL;
}

static bool build_step(BuildUnit *u, DiagSink *d) {
  IrModule *m = u->lr.module;
  IrFunc *grad = ad_grad(m, u->lr.loss, &(AdOptions){.name = "loss_grad", .diags = d});
  if (!grad) return false;
  u->train_step = optim_build_step(m, u->lr.loss, grad, &u->recipe.opt);
  if (u->recipe.opt.sched == SCHED_PLATEAU)
    u->plateau = optim_build_plateau(m, &u->recipe.opt, VEC_AT(u->lr.loss->outputs, IrNode, 0)->type->dtype);
  IrNode *out = u->recipe.opt.accumulate == 1 ? step_forward_output(u->train_step, u->lr.predict) : NULL;
  if (out) {
    ir_return(u->train_step, out, NULL);
    ir_number(u->train_step);
    u->step_has_out = true;
  }
  return true;
}

bool build_compile(Arena *a, DiagSink *d, const char *path, const char *model, const char *cname,
                   BuildUnit *u) {
  memset(u, 0, sizeof *u);
  u->arena = a, u->path = path, u->cname = cname;
  Sema *S = frontend_load_model(a, d, path, &model);
  if (!S) return false;
  u->model = model;
  sema_recipe(S, model, &u->recipe);
  if (!lower_model(a, d, S, model, &u->lr) || !ir_verify(u->lr.module, d)) return false;
  if (!u->lr.loss || !u->lr.eval || !u->lr.predict) {
    fprintf(stderr, "mlc: error: model %s needs forward and loss to be built into a program\n", model);
    return false;
  }
  if (!build_step(u, d) || !ir_verify(u->lr.module, d)) return false;
  u->eval = u->lr.eval, u->predict = u->lr.predict;
  module_hash(u->lr.module, u->hash);
  return true;
}

int build_lower_kir(BuildUnit *u, char *err, size_t errlen) {
  IrModule *m = u->lr.module;
  if (!(u->k_train = kir_lower_func(u->arena, m, u->train_step, err, errlen))) return -1;
  if (!(u->k_eval = kir_lower_func(u->arena, m, u->eval, err, errlen))) return -1;
  if (!(u->k_predict = kir_lower_func(u->arena, m, u->predict, err, errlen))) return -1;
  u->checked = (KirLowerOptions){.check_finite = true};
  if (!(u->k_train_checked = kir_lower_func_opts(u->arena, m, u->train_step, &u->checked, err, errlen)))
    return -1;
  u->k_train_checked->name = arena_printf(u->arena, "%s_checked", u->train_step->name);
  if (u->plateau && !(u->k_plateau = kir_lower_func(u->arena, m, u->plateau, err, errlen))) return -1;
  return 0;
}

// ---- files and tools ---------------------------------------------------------------------------
static bool write_file(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "mlc: error: cannot write '%s'\n", path);
    return false;
  }
  bool ok = fwrite(data, 1, len, f) == len;
  ok = fclose(f) == 0 && ok;
  if (!ok) fprintf(stderr, "mlc: error: cannot write '%s'\n", path);
  return ok;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

// Runs argv (no shell); true when it exits 0. The command is echoed to
// stderr on failure so the user can run it again by hand.
static bool run_tool(char *const *argv) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    execvp(argv[0], argv);
    fprintf(stderr, "mlc: error: cannot run '%s'\n", argv[0]);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return true;
  fputs("mlc: error: this command failed:", stderr);
  for (int i = 0; argv[i]; i++) fprintf(stderr, " %s", argv[i]);
  fputc('\n', stderr);
  return false;
}

// libmlc_rt.a: $MLC_RT_LIB, the build tree's, or next to the mlc executable.
static const char *runtime_lib(Arena *a) {
  const char *env = getenv("MLC_RT_LIB");
  if (env && *env) return env;
#ifdef MLC_RT_LIBRARY
  if (exists(MLC_RT_LIBRARY)) return MLC_RT_LIBRARY;
#endif
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    const char *cands[] = {"%s/libmlc_rt.a", "%s/../lib/libmlc_rt.a", "%s/../lib/mlc/libmlc_rt.a"};
    for (int i = 0; i < 3; i++) {
      char *p = arena_printf(a, cands[i], self);
      if (exists(p)) return p;
    }
  }
  fputs("mlc: error: cannot find libmlc_rt.a (set MLC_RT_LIB to its path)\n", stderr);
  return NULL;
}

// The C name of the model's symbols: OUT's base name without lib/.a/.o/...,
// or the source's stem; anything not [A-Za-z0-9_] becomes '_'.
static const char *c_name(Arena *a, const char *out, const char *src) {
  const char *p = out ? out : src;
  const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
  if (out && !strncmp(base, "lib", 3) && strlen(base) > 3) base += 3;
  char *s = arena_strdup(a, base);
  char *dot = strchr(s, '.');
  if (dot && dot != s) *dot = 0;
  for (char *c = s; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
  if (!*s || (*s >= '0' && *s <= '9')) s = arena_printf(a, "m_%s", s);
  return s;
}

// ---- options ------------------------------------------------------------------------------------
typedef enum { EMIT_EXE, EMIT_OBJ, EMIT_LIB, EMIT_LLVM, EMIT_ASM } Emit;

typedef struct BuildOpts {
  const char *file, *model, *out, *cpu;
  Emit emit;
  int opt_level;
  bool keep, verbose;
} BuildOpts;

static void help(void) {
  puts("usage: mlc build FILE.model [options]\n"
       "\n"
       "  -o OUT               output path (default from FILE: fashion_mlp, libfashion_mlp.a, ...)\n"
       "  --model NAME         the model to build (default: the file's first)\n"
       "  --emit KIND          exe (default): a program with train/eval/predict commands\n"
       "                       obj: one object defining mlc_model_NAME (link with libmlc_rt)\n"
       "                       lib: libNAME.a + NAME.h, an embeddable C API (docs/embedding.md)\n"
       "                       llvm, asm: the optimised kernels as LLVM IR / assembly\n"
       "                       ir, dot: the graph IR (see mlc build --emit ir)\n"
       "  --cpu=CPU            native (default: this machine's CPU and features) or an\n"
       "                       LLVM CPU name (x86-64-v3, znver4, ...)\n"
       "  -O2, -O3             optimisation level (default -O3)\n"
       "  --keep-temps         keep the temporary directory (glue source, objects)\n"
       "  -v, --verbose        print the time of each stage");
}

static int parse_opts(int argc, char **argv, BuildOpts *o) {
  static const struct option longopts[] = {
      {"model", required_argument, NULL, 'm'}, {"emit", required_argument, NULL, 'e'},
      {"cpu", required_argument, NULL, 'c'},   {"keep-temps", no_argument, NULL, 'k'},
      {"verbose", no_argument, NULL, 'v'},     {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  *o = (BuildOpts){.emit = EMIT_EXE, .opt_level = 3};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "o:O:vh", longopts, NULL)) != -1) {
    switch (c) {
    case 'm': o->model = optarg; break;
    case 'o': o->out = optarg; break;
    case 'c': o->cpu = optarg; break;
    case 'k': o->keep = true; break;
    case 'v': o->verbose = true; break;
    case 'h': help(); return -2;
    case 'O':
      if (strcmp(optarg, "0") && strcmp(optarg, "1") && strcmp(optarg, "2") && strcmp(optarg, "3"))
        return usage_error("-O takes 0, 1, 2 or 3, not '%s'", optarg), -1;
      o->opt_level = optarg[0] - '0';
      break;
    case 'e': {
      static const char *kinds[] = {"exe", "obj", "lib", "llvm", "asm"};
      int k = 0;
      while (k < 5 && strcmp(kinds[k], optarg)) k++;
      if (k == 5) return usage_error("--emit must be exe, obj, lib, llvm, asm, ir or dot, not '%s'", optarg), -1;
      o->emit = (Emit)k;
      break;
    }
    default: return usage_error("unknown or incomplete option '%s'", argv[optind - 1]), -1;
    }
  }
  if (optind != argc - 1) return usage_error("expected one FILE.model%s", ""), -1;
  o->file = argv[optind];
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// ---- emission ------------------------------------------------------------------------------------
typedef struct Job {
  const BuildOpts *o;
  BuildUnit *u;
  Arena *a;
  char tmp[64];
  const char *out;
} Job;

static const char *tmp_path(Job *j, const char *name) { return arena_printf(j->a, "%s/%s", j->tmp, name); }

static int compile_kernels(Job *j, BackendEmit emit, const char *path) {
  BackendOptions bo = backend_default_options();
  bo.cpu = j->o->cpu, bo.opt_level = j->o->opt_level, bo.emit = emit;
  bo.prefix = arena_printf(j->a, "mlc_%s_k_", j->u->cname);
  char err[1024];
  BackendSession *s = llvm_backend.open(&bo, err, sizeof err);
  int rc = s ? 0 : -1;
  const KirProgram *ps[5] = {j->u->k_train, j->u->k_eval, j->u->k_predict, j->u->k_train_checked,
                             j->u->k_plateau};
  for (int i = 0; rc == 0 && i < 5; i++)
    if (ps[i]) rc = llvm_backend.add(s, ps[i], err, sizeof err);
  if (rc == 0) rc = llvm_backend.finish(s, path, err, sizeof err);
  if (s) llvm_backend.close(s);
  if (rc) fprintf(stderr, "mlc: error: code generation for %s failed: %s\n", j->u->model, err);
  return rc;
}

static bool compile_glue(Job *j, bool with_main, bool with_api, const char *obj) {
  StrBuf b = {0};
  char err[512];
  if (!build_glue_source(&b, j->u, with_main, with_api, err, sizeof err)) {
    fprintf(stderr, "mlc: error: %s: %s\n", j->u->model, err);
    sb_free(&b);
    return false;
  }
  const char *src = tmp_path(j, "glue.c");
  bool ok = write_file(src, b.data, b.len) &&
            write_file(tmp_path(j, "mlc_model.h"), mlc_model_h_src, mlc_model_h_len) &&
            write_file(tmp_path(j, "mlc_rt.h"), mlc_rt_h_src, mlc_rt_h_len);
  sb_free(&b);
  char *inc = arena_printf(j->a, "-I%s", j->tmp);
  char *argv[] = {"cc", "-std=gnu17", "-O2", "-fPIC", "-w", inc, "-c", (char *)src, "-o", (char *)obj, NULL};
  return ok && run_tool(argv);
}

static bool emit_exe(Job *j, const char *kobj, const char *rt) {
  const char *gobj = tmp_path(j, "glue.o");
  if (!compile_glue(j, true, false, gobj)) return false;
  char *argv[] = {"cc", (char *)gobj, (char *)kobj, (char *)rt, "-lz", "-lcjson", "-lm", "-lpthread",
                  "-o", (char *)j->out, NULL};
  return run_tool(argv);
}

static bool emit_obj(Job *j, const char *kobj) {
  const char *gobj = tmp_path(j, "glue.o");
  if (!compile_glue(j, false, false, gobj)) return false;
  char *argv[] = {"cc", "-r", "-nostdlib", (char *)gobj, (char *)kobj, "-o", (char *)j->out, NULL};
  return run_tool(argv);
}

// libNAME.a = glue (with the API) + kernels + every object of libmlc_rt.a,
// merged by an ar MRI script; NAME.h next to it.
static bool emit_lib(Job *j, const char *kobj, const char *rt) {
  const char *gobj = tmp_path(j, "glue.o");
  if (!compile_glue(j, false, true, gobj)) return false;
  unlink(j->out);
  StrBuf mri = {0};
  sb_printf(&mri, "CREATE %s\nADDLIB %s\nADDMOD %s\nADDMOD %s\nSAVE\nEND\n", j->out, rt, gobj, kobj);
  const char *script = tmp_path(j, "lib.mri");
  bool ok = write_file(script, mri.data, mri.len);
  sb_free(&mri);
  if (!ok) return false;
  char *argv[] = {"sh", "-c", arena_printf(j->a, "ar -M < '%s'", script), NULL};
  if (!run_tool(argv)) return false;
  // NAME.h in the library's directory
  const char *slash = strrchr(j->out, '/');
  char *hdr = slash ? arena_printf(j->a, "%.*s/%s.h", (int)(slash - j->out), j->out, j->u->cname)
                    : arena_printf(j->a, "%s.h", j->u->cname);
  StrBuf h = {0};
  build_glue_header(&h, j->u);
  ok = write_file(hdr, h.data, h.len);
  sb_free(&h);
  return ok;
}

static void remove_tmp(Job *j) {
  const char *names[] = {"glue.c", "glue.o", "kernels.o", "mlc_model.h", "mlc_rt.h", "lib.mri"};
  for (int i = 0; i < 6; i++) unlink(tmp_path(j, names[i]));
  rmdir(j->tmp);
}

static const char *default_out(Arena *a, const BuildOpts *o, const char *cname) {
  switch (o->emit) {
  case EMIT_EXE: return cname;
  case EMIT_OBJ: return arena_printf(a, "%s.o", cname);
  case EMIT_LIB: return arena_printf(a, "lib%s.a", cname);
  case EMIT_LLVM: return arena_printf(a, "%s.ll", cname);
  case EMIT_ASM: return arena_printf(a, "%s.s", cname);
  }
  return cname;
}

static int emit(Job *j) {
  if (j->o->emit == EMIT_LLVM || j->o->emit == EMIT_ASM)
    return compile_kernels(j, j->o->emit == EMIT_LLVM ? BE_EMIT_LLVM : BE_EMIT_ASM, j->out) ? EXIT_ERRORS
                                                                                             : EXIT_OK;
  const char *rt = j->o->emit == EMIT_OBJ ? "" : runtime_lib(j->a);
  if (!rt) return EXIT_ERRORS;
  snprintf(j->tmp, sizeof j->tmp, "/tmp/mlc-build-XXXXXX");
  if (!mkdtemp(j->tmp)) {
    fputs("mlc: error: cannot create a temporary directory\n", stderr);
    return EXIT_ERRORS;
  }
  const char *kobj = tmp_path(j, "kernels.o");
  bool ok = compile_kernels(j, BE_EMIT_OBJ, kobj) == 0;
  if (ok && j->o->emit == EMIT_EXE) ok = emit_exe(j, kobj, rt);
  if (ok && j->o->emit == EMIT_OBJ) ok = emit_obj(j, kobj);
  if (ok && j->o->emit == EMIT_LIB) ok = emit_lib(j, kobj, rt);
  if (j->o->keep) fprintf(stderr, "mlc: temporaries kept in %s\n", j->tmp);
  else remove_tmp(j);
  return ok ? EXIT_OK : EXIT_ERRORS;
}

int build_main(int argc, char **argv) {
  BuildOpts o;
  int prc = parse_opts(argc, argv, &o);
  if (prc == -2) return EXIT_OK;
  if (prc) return EXIT_USAGE;
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  BuildUnit u;
  Job j = {.o = &o, .u = &u, .a = a};
  int status = EXIT_ERRORS;
  double t0 = now();
  const char *cname = c_name(a, o.out, o.file);
  if (!build_compile(a, &d, o.file, o.model, cname, &u)) goto done;
  double t1 = now();
  char err[512];
  if (build_lower_kir(&u, err, sizeof err)) {
    fprintf(stderr, "mlc: error: %s: %s\n", u.model, err);
    goto done;
  }
  // the glue's checks (per-sample shapes, dtypes) before the slow code generation
  StrBuf glue = {0};
  bool fits = o.emit == EMIT_LLVM || o.emit == EMIT_ASM || build_glue_source(&glue, &u, false, o.emit == EMIT_LIB, err, sizeof err);
  sb_free(&glue);
  if (!fits) {
    fprintf(stderr, "mlc: error: %s: %s\n", u.model, err);
    goto done;
  }
  double t2 = now();
  j.out = o.out ? o.out : default_out(a, &o, cname);
  status = emit(&j);
  if (o.verbose)
    fprintf(stderr, "mlc build: front end + graph IR %.3f s, kernel IR %.3f s, code + link %.3f s\n", t1 - t0,
            t2 - t1, now() - t2);
done:
  diag_print(&d, stderr);
  arena_free(a);
  return status;
}
