// main.c — the `mlc` driver: parses the command line and runs the pipeline.
//
//   mlc check [--explain] [--color=WHEN] FILE...   check models (exit 0/1/2)
//   mlc dump-tokens FILE                           the lexer's view
//   mlc dump-ast [--spans] FILE                    the parser's view
//   mlc build FILE [-o OUT] [--emit exe|obj|lib|llvm|asm]  native code (build.c)
//   mlc build FILE --emit ir|dot ...               lowering to graph IR (driver_ir.c)
//   mlc run --interp FILE ...                      the reference interpreter
//
// Exit codes: 0 clean, 1 errors in the input, 2 usage errors. Nothing below
// main() exits; stages report to a DiagSink and return.
#include "build.h"
#include "driver_ir.h"
#include "sema/frontend.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { EXIT_OK = 0, EXIT_ERRORS = 1, EXIT_USAGE = 2 };

static void usage(FILE *out) {
  fputs("usage: mlc <command> [options] FILE...\n"
        "\n"
        "commands:\n"
        "  check FILE...        check models: syntax, names, dtypes, shapes\n"
        "    --explain          also print every inferred type, parameter\n"
        "                       counts and forward FLOPs per sample\n"
        "    --color=WHEN       colour diagnostics: auto (default), always, never\n"
        "  dump-tokens FILE     print the tokens of FILE\n"
        "  dump-ast FILE        print the syntax tree of FILE (--spans adds\n"
        "                       line:col to every node)\n"
        "  build FILE [-o OUT] [--emit exe|obj|lib|llvm|asm] [--cpu=CPU] [-O2|-O3]\n"
        "                       compile a model: a program that trains, evaluates\n"
        "                       and predicts (default), or a library + header\n"
        "  build FILE --emit ir|dot [--model NAME] [--dump-after=PASS] [-o OUT]\n"
        "                       lower a model to graph IR (with its gradient)\n"
        "  run --interp FILE --model NAME --entry ENTRY --input NAME=X.npy ...\n"
        "                       run an entry point in the reference interpreter\n"
        "                       ('mlc build --help', 'mlc run --help' for details)\n"
        "\n"
        "options:\n"
        "  -h, --help           show this help\n"
        "  --version            show the version\n"
        "\n"
        "exit status: 0 clean, 1 errors in the input, 2 usage errors\n",
        out);
}

static int usage_error(const char *fmt, const char *arg) {
  fputs("mlc: error: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\nTry 'mlc --help' for more information.\n", stderr);
  return EXIT_USAGE;
}

typedef struct Options {
  bool explain, spans, help;
  int color; // -1 auto, 0 never, 1 always
} Options;

// Parses the options after the command; returns the index of the first
// file argument, or -1 after reporting a usage error.
static int parse_options(int argc, char **argv, Options *o) {
  static const struct option longopts[] = {
      {"explain", no_argument, NULL, 'e'},
      {"spans", no_argument, NULL, 's'},
      {"color", required_argument, NULL, 'c'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
    case 'e': o->explain = true; break;
    case 's': o->spans = true; break;
    case 'c':
      if (!strcmp(optarg, "auto")) o->color = -1;
      else if (!strcmp(optarg, "always")) o->color = 1;
      else if (!strcmp(optarg, "never")) o->color = 0;
      else return usage_error("--color must be auto, always or never, not '%s'", optarg), -1;
      break;
    case 'h': o->help = true; break;
    default:
      usage_error("unknown option '%s'", argv[optind - 1]);
      return -1;
    }
  }
  return optind;
}

static SrcFile *read_source(Arena *a, const char *path) {
  const char *err = NULL;
  SrcFile *f = src_read(a, path, &err);
  if (!f) fprintf(stderr, "mlc: error: cannot read '%s': %s\n", path, err);
  return f;
}

static int cmd_check(int nfiles, char **files, const Options *o) {
  int status = EXIT_OK;
  for (int i = 0; i < nfiles; i++) {
    Arena *a = arena_new();
    DiagSink d;
    diag_init(&d, a);
    d.color = o->color == 1 || (o->color == -1 && isatty(2));
    SrcFile *f = read_source(a, files[i]);
    if (!f) {
      status = EXIT_ERRORS;
      arena_free(a);
      continue;
    }
    SemaOptions so = {.explain = o->explain, .explain_out = stdout};
    if (frontend_check(a, &d, f, &so, NULL)) status = EXIT_ERRORS;
    diag_print(&d, stderr);
    arena_free(a);
  }
  return status;
}

static int cmd_dump(bool tokens, const char *path, const Options *o) {
  Arena *a = arena_new();
  DiagSink d;
  diag_init(&d, a);
  d.color = o->color == 1 || (o->color == -1 && isatty(2));
  SrcFile *f = read_source(a, path);
  int status = EXIT_ERRORS;
  if (f) {
    if (tokens) frontend_dump_tokens(a, &d, f, stdout);
    else ast_print(frontend_parse(a, &d, f), stdout, o->spans);
    diag_print(&d, stderr);
    status = d.nerrors ? EXIT_ERRORS : EXIT_OK;
  }
  arena_free(a);
  return status;
}

// `mlc build --emit ir|dot` prints graph IR (driver_ir.c); every other
// emission goes through code generation (build.c).
static bool emits_graph(int argc, char **argv) {
  for (int i = 2; i < argc; i++) {
    const char *k = NULL;
    if (!strcmp(argv[i], "--emit") && i + 1 < argc) k = argv[i + 1];
    else if (!strncmp(argv[i], "--emit=", 7)) k = argv[i] + 7;
    if (k && (!strcmp(k, "ir") || !strcmp(k, "dot"))) return true;
    if (!strcmp(argv[i], "--dump-after") || !strncmp(argv[i], "--dump-after=", 13)) return true;
  }
  return false;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage(stdout);
    return EXIT_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("mlc %s\n", MLC_VERSION);
    return EXIT_OK;
  }
  // build and run parse their own options (driver_ir.c).
  if (!strcmp(cmd, "build")) return emits_graph(argc, argv) ? driver_build(argc - 1, argv + 1)
                                                             : build_main(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return driver_run(argc - 1, argv + 1);
  Options o = {.color = -1};
  // getopt_long sees the command's arguments with the command as argv[0].
  int first = parse_options(argc - 1, argv + 1, &o);
  if (first < 0) return EXIT_USAGE;
  if (o.help) {
    usage(stdout);
    return EXIT_OK;
  }
  int nfiles = argc - 1 - first;
  char **files = argv + 1 + first;
  if (!strcmp(cmd, "check")) {
    if (nfiles < 1) return usage_error("%s: no input files", "check");
    return cmd_check(nfiles, files, &o);
  }
  if (!strcmp(cmd, "dump-tokens") || !strcmp(cmd, "dump-ast")) {
    if (nfiles != 1) return usage_error("%s takes exactly one file", cmd);
    return cmd_dump(cmd[5] == 't', files[0], &o);
  }
  const char *cmds[] = {"check", "dump-tokens", "dump-ast", "build",
                        "run",   "help",        "version"};
  const char *near = closest_name(cmd, cmds, 7);
  if (near) {
    fprintf(stderr, "mlc: error: unknown command '%s'; did you mean '%s'?\n",
            cmd, near);
    return EXIT_USAGE;
  }
  return usage_error("unknown command '%s'", cmd);
}
