// build.c — `mlc build`: runs the pipeline (pipeline.h) up to the stage the
// emission needs and writes its result.
//
//   mlc build FILE.model [--model NAME] [-o OUT] [--emit KIND]
//             [--dump-after=STAGE,...] [--verify-each] [-v]
//             [--target=cpu|cuda|cpu,cuda] [--cuda-arch=sm_90,...]
//             [--cpu=native|NAME] [-O0..-O3] [--keep-temps]
//             [--report[=FILE] [--batch N] [--max-memory SIZE]]
//
// Input: the model file. Output, by --emit (build_help_tail lists them):
//   exe   OUT (default: the file's stem): a program, `OUT train|eval|predict ...`
//   obj   OUT.o: kernels + glue defining `const MlcModel mlc_model_<cname>`
//   lib   libCNAME.a and CNAME.h next to it (docs/embedding.md)
//   llvm, asm     the optimised kernel module as text (default NAME.ll, NAME.s)
//   ir, dot       the graph IR after the last graph stage (text, Graphviz)
//   STAGE         any stage with a text form: stop after it and print it
// --report (report.h) prints the cost report on standard output and builds
// nothing (the pipeline stops after the memory plan); --report=FILE writes
// it to FILE next to the emission.
// Text goes to standard output unless -o names a file; `-o -` is standard
// output for every text emission. cname, the C name of symbols, comes from
// OUT (libfoo.a -> foo) or the file's stem, made an identifier.
//
// Every output path is checked (output.h) before the first stage runs: it
// must not be the input, a directory, or in a missing or unwritable
// directory. libmlc_rt.a is found from MLC_RT_LIB, else the path CMake
// compiled in (MLC_RT_LIBRARY), else next to the mlc executable.
#include "driver.h"
#include "output.h"
#include "pipeline.h"
#include "report.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ---- emissions -----------------------------------------------------------------------------------
typedef enum {
  OUT_TEXT,   // the stage's printer
  OUT_DOT,    // the graph IR as Graphviz
  OUT_ASM,    // the codegen module as assembly
  OUT_BINARY, // the link stage's file
} OutHow;

typedef struct Emission {
  const char *name;
  int stage;              // StageId; -1: the last graph stage
  OutHow how;
  LinkKind link;
  const char *default_out; // printf format over cname; NULL: standard output
  const char *help;
} Emission;

static const Emission emissions[] = {
    {"exe", STAGE_LINK, OUT_BINARY, LINK_EXE, "%s", "(default) a program with train/eval/predict commands\n(OUT: the file's stem)"},
    {"obj", STAGE_LINK, OUT_BINARY, LINK_OBJ, "%s.o", "one object defining mlc_model_NAME (NAME.o; link it\nwith libmlc_rt)"},
    {"lib", STAGE_LINK, OUT_BINARY, LINK_LIB, "lib%s.a", "libNAME.a + NAME.h, an embeddable C API\n(docs/embedding.md)"},
    {"llvm", STAGE_CODEGEN, OUT_TEXT, LINK_EXE, "%s.ll", "the optimised kernels as LLVM IR (NAME.ll)"},
    {"asm", STAGE_CODEGEN, OUT_ASM, LINK_EXE, "%s.s", "the optimised kernels as assembly (NAME.s)"},
    {"ir", -1, OUT_TEXT, LINK_EXE, NULL, "the graph IR after the last graph stage"},
    {"dot", -1, OUT_DOT, LINK_EXE, NULL, "the same as Graphviz, one digraph per function"},
};
enum { NEMISSIONS = sizeof emissions / sizeof emissions[0] };

// A kind above, or a stage's name: that stage's text form on standard
// output (codegen's is the llvm kind).
static bool find_emission(const char *kind, Emission *e) {
  for (int i = 0; i < NEMISSIONS; i++)
    if (!strcmp(emissions[i].name, kind)) {
      *e = emissions[i];
      if (e->stage < 0) e->stage = pipeline_last_graph_stage();
      return true;
    }
  int s = pipeline_stage_lookup(kind);
  if (s < 0 || !pipeline_stage(s)->print) return false;
  if (s == STAGE_CODEGEN) return find_emission("llvm", e);
  *e = (Emission){kind, s, OUT_TEXT, LINK_EXE, NULL, NULL};
  return true;
}

static void stage_names(StrBuf *b) {
  for (int i = 0; i < STAGE_COUNT; i++)
    if (pipeline_stage(i)->print) sb_printf(b, "%s%s", b->len ? ", " : "", pipeline_stage(i)->name);
}

void build_help_tail(FILE *out) {
  fputs("\nemissions (--emit KIND); text goes to standard output unless -o names a file:\n", out);
  for (int i = 0; i < NEMISSIONS; i++) driver_help_row(out, emissions[i].name, emissions[i].help);
  fputs("  STAGE                  stop after STAGE and print its text form\n"
        "\nstages, in order (--emit STAGE, --dump-after=STAGE for those with a text form):\n",
        out);
  for (int i = 0; i < STAGE_COUNT; i++) {
    const Stage *s = pipeline_stage(i);
    char what[256];
    snprintf(what, sizeof what, "%s%s", s->what, s->print ? "" : "\n(no text form)");
    driver_help_row(out, s->name, what);
  }
}

// --dump-after=a,b: one bit per stage.
static int parse_dumps(const char *list, uint32_t *mask) {
  *mask = 0;
  for (const char *p = list; p && *p;) {
    size_t n = strcspn(p, ",");
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), p);
    int s = pipeline_stage_lookup(name);
    if (s < 0 || !pipeline_stage(s)->print) {
      StrBuf b = {0};
      stage_names(&b);
      driver_usage_error("build", "--dump-after: '%s' is not a stage with a text form (%s)", name, b.data);
      sb_free(&b);
      return EXIT_USAGE;
    }
    *mask |= 1u << s;
    p += n + (p[n] == ',');
  }
  return EXIT_OK;
}

// ---- names and paths -----------------------------------------------------------------------------
// The C name of the model's symbols: OUT's base name without lib/.a/.o/...,
// or the source's stem; anything not [A-Za-z0-9_] becomes '_'.
static const char *c_name(Arena *a, const char *out, const char *src) {
  const char *p = out && strcmp(out, "-") ? out : src;
  const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
  if (p == out && !strncmp(base, "lib", 3) && strlen(base) > 3) base += 3;
  char *s = arena_strdup(a, base);
  char *dot = strchr(s, '.');
  if (dot && dot != s) *dot = 0;
  for (char *c = s; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
  if (!*s || (*s >= '0' && *s <= '9')) s = arena_printf(a, "m_%s", s);
  return s;
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

// libmlc_rt.a: $MLC_RT_LIB, the build tree's, or next to the mlc executable.
static const char *runtime_lib(Arena *a, DiagSink *d) {
  const char *env = getenv("MLC_RT_LIB");
  if (env && *env) {
    if (is_file(env)) return env;
    diag_error(d, (Span){0}, "MLC_RT_LIB names '%s', which is not a file", env);
    return NULL;
  }
#ifdef MLC_RT_LIBRARY
  if (is_file(MLC_RT_LIBRARY)) return MLC_RT_LIBRARY;
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
      if (is_file(p)) return p;
    }
  }
  diag_error(d, (Span){0}, "cannot find libmlc_rt.a (set MLC_RT_LIB to its path)");
  return NULL;
}

// NAME.h in the library's directory.
static const char *header_path(Arena *a, const char *lib, const char *cname) {
  const char *slash = strrchr(lib, '/');
  return slash ? arena_printf(a, "%.*s/%s.h", (int)(slash - lib), lib, cname) : arena_printf(a, "%s.h", cname);
}

// ---- one build -----------------------------------------------------------------------------------
typedef struct Build {
  const DriverOpts *o;
  Emission e;
  uint32_t dump; // --dump-after
  Arena *a;
  DiagSink d;
  struct stat input;
  PipelineOptions po;
  OutFile out, header; // header: --emit lib only
  Pipeline P;
} Build;

// Everything that can be refused before the first stage: the input, the
// runtime library, every output path.
static bool prepare(Build *b) {
  const DriverOpts *o = b->o;
  PipelineOptions *po = &b->po;
  if (!driver_check_input(&b->d, o->files[0], &b->input)) return false;
  const char *cname = c_name(b->a, o->out, o->files[0]);
  *po = (PipelineOptions){.path = o->files[0], .model = o->model, .cname = cname, .link = b->e.link,
                          .keep_temps = o->keep_temps, .verbose = o->verbose, .verbose_cmd = "build",
                          .dump = b->dump, .no_fuse = o->no_fuse, .have_precision = o->have_precision,
                          .precision = o->precision, .conv_winograd = o->conv_winograd,
                          .verify_each = o->verify_each || pipeline_default_verify()};
  po->targets = o->targets ? o->targets : PIPE_CPU;
  po->backend = backend_default_options();
  po->backend.cpu = o->cpu, po->backend.opt_level = o->opt_level;
  po->backend.emit = b->e.how == OUT_ASM ? BE_EMIT_ASM : BE_EMIT_OBJ;
  if (b->e.how == OUT_BINARY && b->e.link != LINK_OBJ && !(po->runtime = runtime_lib(b->a, &b->d))) return false;
  const char *path = o->out ? o->out : b->e.default_out ? arena_printf(b->a, b->e.default_out, cname) : "-";
  bool text = b->e.how != OUT_BINARY;
  if (!out_open(&b->out, &b->d, path, &b->input, text, b->e.link == LINK_EXE && !text)) return false;
  if (b->e.how == OUT_BINARY && b->e.link == LINK_LIB &&
      !out_open(&b->header, &b->d, header_path(b->a, path, cname), &b->input, true, false))
    return false;
  return true;
}

static bool write_result(Build *b) {
  Pipeline *P = &b->P;
  switch (b->e.how) {
  case OUT_TEXT: pipeline_print(P, (StageId)b->e.stage, b->out.f); break;
  case OUT_DOT: pipeline_print_dot(P, b->out.f); break;
  case OUT_ASM: {
    const char *s = pipeline_write_asm(P);
    if (!s || !out_copy(&b->out, &b->d, s)) return false;
    break;
  }
  case OUT_BINARY:
    if (!out_copy(&b->out, &b->d, P->linked)) return false;
    if (b->e.link == LINK_LIB) fwrite(P->header.data, 1, P->header.len, b->header.f); // checked by out_commit
    break;
  }
  bool ok = out_commit(&b->out, &b->d);
  return (!b->header.f || out_commit(&b->header, &b->d)) && ok;
}

// --report=FILE, once the memory plan has run.
static bool write_report(Build *b, StageId plan) {
  if (!pipeline_run(&b->P, plan)) return false;
  FILE *f = fopen(b->o->report_file, "w");
  if (!f) {
    diag_error(&b->d, (Span){0}, "cannot write the report to '%s': %s", b->o->report_file, strerror(errno));
    return false;
  }
  report_write(f, &b->P.u, &(ReportOptions){b->o->batch, b->o->max_memory});
  if (fclose(f)) {
    diag_error(&b->d, (Span){0}, "cannot write the report to '%s': %s", b->o->report_file, strerror(errno));
    return false;
  }
  return true;
}

static int build(const DriverOpts *o, const Emission *e, uint32_t dump, const PipelineOptions *targets) {
  Build b = {.o = o, .e = *e, .dump = dump, .a = arena_new()};
  driver_diag_init(&b.d, b.a, o);
  double t0 = pipeline_now();
  bool ok = prepare(&b);
  memcpy(b.po.cuda_archs, targets->cuda_archs, sizeof b.po.cuda_archs);
  b.po.ncuda_archs = targets->ncuda_archs;
  if (ok) {
    pipeline_init(&b.P, b.a, &b.d, &b.po);
    // The emission is written when its stage has run; stages after it run
    // only for their dumps (the graph IR grows as graph stages run).
    int last = e->stage;
    for (int s = last + 1; s < STAGE_COUNT; s++)
      if (dump >> s & 1) last = s;
    StageId plan = (b.po.targets & PIPE_CPU) ? STAGE_MEMPLAN : STAGE_MEMPLAN_GPU;
    if (o->report && !o->report_file) {
      ok = pipeline_run(&b.P, plan);
      if (ok) report_write(stdout, &b.P.u, &(ReportOptions){o->batch, o->max_memory});
    } else {
      if (o->report && last < (int)plan) last = plan;
      ok = pipeline_run(&b.P, (StageId)e->stage) && write_result(&b) && pipeline_run(&b.P, (StageId)last) &&
           (!o->report || write_report(&b, plan));
    }
    pipeline_free(&b.P);
  }
  out_discard(&b.out);
  out_discard(&b.header);
  if (o->verbose) fprintf(stderr, "mlc build: %-9s %9.1f ms\n", "total", (pipeline_now() - t0) * 1e3);
  int status = driver_report(&b.d, "build", ok ? EXIT_OK : EXIT_ERRORS);
  arena_free(b.a);
  return status;
}

// --target and --cuda-arch against the emission: the CPU module needs the
// cpu target, --cuda-arch the cuda one; a CUDA program or object needs a
// runtime built with its CUDA layer.
static int check_targets(const DriverOpts *o, const Emission *e, PipelineOptions *po) {
  unsigned t = o->targets ? o->targets : PIPE_CPU;
  if (!(t & PIPE_CPU) && e->stage == STAGE_CODEGEN)
    return driver_usage_error("build", "--emit %s prints the CPU kernels; --target %s has none", e->name,
                              t & PIPE_CUDA ? "cuda" : "?");
  if (o->cuda_arch && !(t & PIPE_CUDA))
    return driver_usage_error("build", "--cuda-arch is for --target cuda (or cpu,cuda)");
  char err[512];
  if (o->cuda_arch && (po->ncuda_archs = cuda_arch_parse(o->cuda_arch, po->cuda_archs, CUDA_MAX_ARCHS, err,
                                                         sizeof err)) < 0)
    return driver_usage_error("build", "--cuda-arch: %s", err);
#ifndef MLC_RT_HAS_CUDA
  if ((t & PIPE_CUDA) && e->how == OUT_BINARY)
    return driver_usage_error("build", "--target cuda: this mlc's runtime was built without its CUDA layer "
                              "(cuda.h was not found when mlc was built)");
#endif
  return EXIT_OK;
}

int driver_build(int argc, char **argv) {
  DriverOpts o;
  if (driver_parse(CMD_BUILD, argc, argv, &o)) return EXIT_USAGE;
  if (o.help) return driver_help(CMD_BUILD, stdout), EXIT_OK;
  Emission e;
  // bare --report: the pipeline stops after the memory plan, nothing is written but the report
  const char *kind = o.report && !o.report_file && !o.emit && !o.out
                         ? (o.targets && !(o.targets & PIPE_CPU) ? "memplan-gpu" : "memplan")
                         : o.emit ? o.emit : "exe";
  if (!find_emission(kind, &e)) {
    StrBuf b = {0};
    stage_names(&b);
    driver_usage_error("build", "--emit must be exe, obj, lib, llvm, asm, ir, dot or a stage (%s), not '%s'",
                       b.data, o.emit);
    sb_free(&b);
    return EXIT_USAGE;
  }
  if ((o.batch || o.max_memory) && !o.report)
    return driver_usage_error("build", "--batch and --max-memory are options of --report");
  if (o.report && !o.report_file && (o.emit || o.out))
    return driver_usage_error("build", "--report prints the report and builds nothing; "
                              "--report=FILE writes it next to --emit or -o");
  if (o.report && o.report_file && !*o.report_file)
    return driver_usage_error("build", "--report= needs a file name");
  if (e.how == OUT_BINARY && o.out && !strcmp(o.out, "-"))
    return driver_usage_error("build", "-o - (standard output) is for text emissions, not --emit %s", e.name);
  uint32_t dump;
  if (parse_dumps(o.dump_after, &dump)) return EXIT_USAGE;
  PipelineOptions targets = {0};
  if (check_targets(&o, &e, &targets)) return EXIT_USAGE;
  return build(&o, &e, dump, &targets);
}
