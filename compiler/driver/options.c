// options.c — the command line of every `mlc` subcommand: one table of
// options (which subcommands take each, its spelling in the help, its
// help), one getopt_long loop over it, the usage-error path and the help
// texts, all generated from the same rows so the help cannot drift from
// what is parsed.
//
// Input: argv of one subcommand. Output: a DriverOpts (driver.h), or exit
// status 2 with one message in the format
//   mlc build: error: unknown option '--frob'
//   Try 'mlc build --help' for more information.
#include "driver.h"
#include "report.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define B(c) (1u << CMD_##c)
#define DIAG_CMDS (B(CHECK) | B(DUMP_TOKENS) | B(DUMP_AST) | B(BUILD) | B(RUN))
#define ALL_CMDS (DIAG_CMDS | B(HELP) | B(VERSION))

// X(id, long name or NULL, short letter or 0, has_arg, commands, spelling, help)
// A help text's '\n' continues it on the next line, in the help column.
#define DRIVER_OPTIONS(X)                                                                          \
  X(HELP, "help", 'h', no_argument, ALL_CMDS, "-h, --help", "show this help")                    \
  X(EXPLAIN, "explain", 0, no_argument, B(CHECK), "--explain",                                   \
    "also print every inferred type, parameter\ncounts and forward FLOPs per sample")             \
  X(SPANS, "spans", 0, no_argument, B(DUMP_AST), "--spans", "add line:col to every node")        \
  X(COLOR, "color", 0, required_argument, DIAG_CMDS, "--color=WHEN",                             \
    "colour diagnostics: auto (default), always, never")                                         \
  X(MODEL, "model", 0, required_argument, B(BUILD) | B(RUN), "--model NAME",                     \
    "the model to compile (default: the file's first)")                                          \
  X(OUT, NULL, 'o', required_argument, B(BUILD), "-o OUT",                                       \
    "output path; - is standard output (text only)\n(default: from FILE, below)")               \
  X(EMIT, "emit", 0, required_argument, B(BUILD), "--emit KIND", "what to make (below; default exe)") \
  X(DUMP_AFTER, "dump-after", 0, required_argument, B(BUILD), "--dump-after=STAGE,...",          \
    "print each STAGE's text form to standard error\nafter it runs (stages below)")              \
  X(VERIFY_EACH, "verify-each", 0, no_argument, B(BUILD) | B(RUN), "--verify-each",              \
    "run each stage's verifier after it (always on\nin debug builds); a failure is an internal\n" \
    "compiler error naming the stage")                                                           \
  X(TARGET, "target", 0, required_argument, B(BUILD), "--target=LIST",                           \
    "cpu (default), cuda, or cpu,cuda: the kernels built\n(cuda: CUDA C through NVRTC; a program built\n" \
    "with both takes --device cpu|cuda)")                                                        \
  X(CUDA_ARCH, "cuda-arch", 0, required_argument, B(BUILD), "--cuda-arch=LIST",                  \
    "GPU architectures for --target cuda: sm_90\n(default) or several, sm_80,sm_90; a cubin each\n" \
    "and PTX of the lowest")                                                                     \
  X(CPU, "cpu", 0, required_argument, B(BUILD), "--cpu=CPU",                                     \
    "native (default: this machine's CPU and features)\nor an LLVM CPU name (x86-64-v3, znver4, ...)") \
  X(OPT, NULL, 'O', required_argument, B(BUILD), "-O0 .. -O3", "optimisation level (default -O3)") \
  X(KEEP_TEMPS, "keep-temps", 0, no_argument, B(BUILD), "--keep-temps",                          \
    "keep the temporary directory (glue source, objects)")                                       \
  X(PRECISION, "precision", 0, required_argument, B(BUILD) | B(RUN), "--precision P",           \
    "f32, bf16 or f16: the compute dtype of every matmul\nand convolution, forward and backward (default\n" \
    "the recipe's `precision`, else f32)")                                                       \
  X(CONV, "conv", 0, required_argument, B(BUILD), "--conv ALGO",                                 \
    "direct (default) or winograd: winograd computes every\n3x3 stride-1 one-group f32 convolution of 32 or\n" \
    "more input channels (forward; input gradient: output\nchannels) as F(2x2,3x3): fewer multiplies, another\n" \
    "rounding (docs/design/kernels.md, \"Winograd\")")                \
  X(NO_FUSE, "no-fuse", 0, no_argument, B(BUILD), "--no-fuse",                                 \
    "one kernel per graph op: no fusion of elementwise\nops (the results are the same)")       \
  X(VERBOSE, "verbose", 'v', no_argument, B(BUILD), "-v, --verbose",                             \
    "print the time of every stage (and of its verifier)")                                       \
  X(REPORT, "report", 0, optional_argument, B(BUILD), "--report[=FILE]",                         \
    "every kernel's lines, FLOPs and bytes moved, and the\npeak memory of training; bare: print it and\n" \
    "build nothing, =FILE: write it there and build")                                            \
  X(BATCH, "batch", 0, required_argument, B(BUILD), "--batch N",                                 \
    "--report: the batch size (default the recipe's)")                                          \
  X(MAX_MEMORY, "max-memory", 0, required_argument, B(BUILD), "--max-memory SIZE",               \
    "--report: also the largest batch whose peak fits\nin SIZE (512M, 2G; K M G T are powers of 1024)") \
  X(INTERP, "interp", 0, no_argument, B(RUN), "--interp",                                        \
    "run in the reference interpreter (required)")                                               \
  X(ENTRY, "entry", 0, required_argument, B(RUN), "--entry ENTRY",                              \
    "forward, loss, eval, predict, loss_grad,\ntrain_step or init (below)")                      \
  X(INPUT, "input", 0, required_argument, B(RUN), "--input NAME=X.npy",                          \
    "the entry's argument NAME, from an .npy file\n(once per argument)")                         \
  X(WEIGHTS, "weights", 0, required_argument, B(RUN), "--weights FILE",                          \
    "parameters and buffers from a safetensors file:\nan mlc checkpoint or a PyTorch state_dict") \
  X(SAVE, "save", 0, required_argument, B(RUN), "--save OUT",                                    \
    "also write the results: OUT.safetensors, OUT.npy\n(one result) or a directory of NAME.npy") \
  X(F32, "f32", 0, no_argument, B(RUN), "--f32", "round every float op to f32 (default)")        \
  X(F64, "f64", 0, no_argument, B(RUN), "--f64", "compute in f64")                               \
  X(SEED, "seed", 0, required_argument, B(RUN), "--seed N",                                      \
    "seed of the initial state (default: the train\nrecipe's, else 0)")

typedef enum {
#define X(id, ...) OPT_##id,
  DRIVER_OPTIONS(X)
#undef X
  OPT_COUNT
} OptId;

typedef struct OptDesc {
  const char *name; // long name, or NULL
  char letter;      // short name, or 0
  int has_arg;
  uint32_t cmds;    // bit CMD_x: the subcommand takes it
  const char *spelling, *help;
} OptDesc;

static const OptDesc options[OPT_COUNT] = {
#define X(id, name, letter, arg, cmds, spelling, help) [OPT_##id] = {name, letter, arg, cmds, spelling, help},
    DRIVER_OPTIONS(X)
#undef X
};

// ---- subcommands ---------------------------------------------------------------------------
typedef struct CmdDesc {
  const char *name;
  const char *operands; // after the name in the usage line
  const char *operand;  // one operand, for messages ("FILE.model")
  int min_files, max_files; // -1: no limit
  const char *summary;  // for `mlc --help`, '\n' continues in the help column
} CmdDesc;

static const CmdDesc commands[CMD_COUNT] = {
    [CMD_CHECK] = {"check", "FILE...", "FILE", 1, -1, "check models: syntax, names, dtypes, shapes"},
    [CMD_DUMP_TOKENS] = {"dump-tokens", "FILE", "FILE", 1, 1, "print the tokens of FILE"},
    [CMD_DUMP_AST] = {"dump-ast", "FILE", "FILE", 1, 1, "print the syntax tree of FILE"},
    [CMD_BUILD] = {"build", "FILE.model", "FILE.model", 1, 1,
                   "compile a model: a program that trains, evaluates\nand predicts (default), a "
                   "library + header, or the\ntext form of any stage of the pipeline"},
    [CMD_RUN] = {"run", "--interp FILE.model", "FILE.model", 1, 1,
                 "run an entry point in the reference interpreter"},
    [CMD_HELP] = {"help", "[COMMAND]", "COMMAND", 0, 1, "show this help, or a command's"},
    [CMD_VERSION] = {"version", "", NULL, 0, 0, "show the version"},
};

const char *driver_cmd_name(CmdId cmd) { return commands[cmd].name; }

int driver_cmd_lookup(const char *name) {
  for (int i = 0; i < CMD_COUNT; i++)
    if (!strcmp(commands[i].name, name)) return i;
  return -1;
}

// ---- usage errors ---------------------------------------------------------------------------
int driver_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, cmd ? "mlc %s: error: " : "mlc: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, cmd ? "\nTry 'mlc %s --help' for more information.\n"
                      : "\nTry 'mlc --help' for more information.\n",
          cmd);
  return EXIT_USAGE;
}

// ---- help -----------------------------------------------------------------------------------
enum { HELP_COLUMN = 25 };

// "  SPELLING     HELP", continuation lines of HELP in the same column.
void driver_help_row(FILE *out, const char *spelling, const char *help) {
  int n = fprintf(out, "  %s", spelling);
  if (n >= HELP_COLUMN - 1) fputc('\n', out), n = 0;
  for (const char *p = help; *p;) {
    const char *nl = strchr(p, '\n');
    int len = nl ? (int)(nl - p) : (int)strlen(p);
    fprintf(out, "%*s%.*s\n", HELP_COLUMN - n, "", len, p);
    n = 0;
    p += len + (nl != NULL);
  }
}

static void help_options(FILE *out, CmdId cmd) {
  for (int i = 0; i < OPT_COUNT; i++)
    if (options[i].cmds & (1u << cmd)) driver_help_row(out, options[i].spelling, options[i].help);
}

// Texts after a subcommand's options: what the values mean (build.c, run.c).
void build_help_tail(FILE *out);
void run_help_tail(FILE *out);

static void help_all(FILE *out) {
  fputs("usage: mlc <command> [options] FILE...\n\ncommands:\n", out);
  for (int i = 0; i < CMD_COUNT; i++) {
    char head[64];
    snprintf(head, sizeof head, "%s %s", commands[i].name, commands[i].operands);
    driver_help_row(out, head, commands[i].summary);
  }
  fputs("\noptions:\n", out);
  driver_help_row(out, "-h, --help", "show this help");
  driver_help_row(out, "--version", "show the version");
  fputs("\n'mlc COMMAND --help' shows the options of a command.\n"
        "exit status: 0 clean, 1 errors in the input, 2 usage errors\n",
        out);
}

void driver_help(CmdId cmd, FILE *out) {
  if (cmd == CMD_HELP) {
    help_all(out);
    return;
  }
  const CmdDesc *c = &commands[cmd];
  fprintf(out, "usage: mlc %s %s%s\n\n", c->name, cmd == CMD_CHECK || cmd == CMD_VERSION ? "" : "[options] ",
          c->operands);
  fprintf(out, "%s\n\noptions:\n", c->summary);
  help_options(out, cmd);
  if (cmd == CMD_BUILD) build_help_tail(out);
  if (cmd == CMD_RUN) run_help_tail(out);
  fputs("\nexit status: 0 clean, 1 errors in the input, 2 usage errors\n", out);
}

// ---- parsing --------------------------------------------------------------------------------
// getopt_long returns OPT_BASE + id for every option (short letters map to
// their row too), so one switch handles both spellings.
enum { OPT_BASE = 256 };

static int parse_uint(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (!*s || *s == '-' || *s == '+') return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

static int set_option(DriverOpts *o, const char *cmd, OptId id, const char *arg) {
  switch (id) {
  case OPT_HELP: o->help = true; break;
  case OPT_EXPLAIN: o->explain = true; break;
  case OPT_SPANS: o->spans = true; break;
  case OPT_COLOR:
    if (!strcmp(arg, "auto")) o->color = -1;
    else if (!strcmp(arg, "always")) o->color = 1;
    else if (!strcmp(arg, "never")) o->color = 0;
    else return driver_usage_error(cmd, "--color must be auto, always or never, not '%s'", arg);
    break;
  case OPT_MODEL: o->model = arg; break;
  case OPT_OUT: o->out = arg; break;
  case OPT_EMIT: o->emit = arg; break;
  case OPT_DUMP_AFTER: o->dump_after = arg; break;
  case OPT_VERIFY_EACH: o->verify_each = true; break;
  case OPT_TARGET:
    o->targets = 0;
    for (const char *p = arg; *p;) {
      size_t n = strcspn(p, ",");
      if (n == 3 && !strncmp(p, "cpu", 3)) o->targets |= 1;
      else if (n == 4 && !strncmp(p, "cuda", 4)) o->targets |= 2;
      else return driver_usage_error(cmd, "--target takes cpu, cuda or cpu,cuda, not '%s'", arg);
      p += n + (p[n] == ',');
    }
    if (!o->targets) return driver_usage_error(cmd, "--target takes cpu, cuda or cpu,cuda, not '%s'", arg);
    break;
  case OPT_CUDA_ARCH: o->cuda_arch = arg; break;
  case OPT_CPU: o->cpu = arg; break;
  case OPT_OPT:
    if (strlen(arg) != 1 || arg[0] < '0' || arg[0] > '3')
      return driver_usage_error(cmd, "-O takes 0, 1, 2 or 3, not '%s'", arg);
    o->opt_level = arg[0] - '0';
    break;
  case OPT_KEEP_TEMPS: o->keep_temps = true; break;
  case OPT_NO_FUSE: o->no_fuse = true; break;
  case OPT_CONV:
    if (strcmp(arg, "direct") && strcmp(arg, "winograd"))
      return driver_usage_error(cmd, "--conv takes direct or winograd, not '%s'", arg);
    o->conv_winograd = !strcmp(arg, "winograd");
    break;
  case OPT_PRECISION: {
    int d = dtype_from_name(arg);
    if (d != DT_F32 && d != DT_BF16 && d != DT_F16)
      return driver_usage_error(cmd, "--precision takes f32, bf16 or f16, not '%s'", arg);
    o->precision = d, o->have_precision = true;
    break;
  }
  case OPT_VERBOSE: o->verbose = true; break;
  case OPT_REPORT: o->report = true, o->report_file = arg; break;
  case OPT_BATCH: {
    uint64_t n;
    if (parse_uint(arg, &n) || !n || n > (1ull << 40)) return driver_usage_error(cmd, "--batch takes a positive number, not '%s'", arg);
    o->batch = (int64_t)n;
    break;
  }
  case OPT_MAX_MEMORY:
    if (!report_parse_size(arg, &o->max_memory))
      return driver_usage_error(cmd, "--max-memory takes a size such as 512M or 2G, not '%s'", arg);
    break;
  case OPT_INTERP: o->interp = true; break;
  case OPT_ENTRY: o->entry = arg; break;
  case OPT_WEIGHTS: o->weights = arg; break;
  case OPT_SAVE: o->save = arg; break;
  case OPT_INPUT:
    if (o->ninputs == DRIVER_MAX_INPUTS) return driver_usage_error(cmd, "more than %d --input options", DRIVER_MAX_INPUTS);
    if (!strchr(arg, '=') || arg[0] == '=')
      return driver_usage_error(cmd, "--input wants NAME=PATH.npy, not '%s'", arg);
    o->inputs[o->ninputs++] = arg;
    break;
  case OPT_F32: o->f64 = false; break;
  case OPT_F64: o->f64 = true; break;
  case OPT_SEED:
    if (parse_uint(arg, &o->seed)) return driver_usage_error(cmd, "--seed takes a number, not '%s'", arg);
    o->have_seed = true;
    break;
  case OPT_COUNT: MLC_UNREACHABLE();
  }
  return EXIT_OK;
}

// The getopt tables of one subcommand: its long options and the short
// letters (":" first, so a missing argument is told apart).
static void getopt_tables(CmdId cmd, struct option *longs, char *shorts) {
  int nl = 0, ns = 0;
  shorts[ns++] = ':';
  for (int i = 0; i < OPT_COUNT; i++) {
    const OptDesc *d = &options[i];
    if (!(d->cmds & (1u << cmd))) continue;
    if (d->name) longs[nl++] = (struct option){d->name, d->has_arg, NULL, OPT_BASE + i};
    if (d->letter) {
      shorts[ns++] = d->letter;
      if (d->has_arg == required_argument) shorts[ns++] = ':';
    }
  }
  longs[nl] = (struct option){0};
  shorts[ns] = 0;
}

static int letter_option(char c) {
  for (int i = 0; i < OPT_COUNT; i++)
    if (options[i].letter == c) return i;
  return -1;
}

// The option getopt stopped at, as the user typed it.
static const char *bad_arg(int argc, char **argv, int c) {
  static char buf[3];
  const char *a = optind - 1 < argc ? argv[optind - 1] : "";
  if (c && c != '?' && c != ':' && a[0] == '-' && a[1] != '-') {
    snprintf(buf, sizeof buf, "-%c", c);
    return buf;
  }
  return a;
}

int driver_parse(CmdId cmd, int argc, char **argv, DriverOpts *o) {
  const char *name = commands[cmd].name;
  *o = (DriverOpts){.cmd = cmd, .color = -1, .opt_level = 3};
  struct option longs[OPT_COUNT + 1];
  char shorts[2 * OPT_COUNT + 2];
  getopt_tables(cmd, longs, shorts);
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
    int id = c >= OPT_BASE ? c - OPT_BASE : c == '?' || c == ':' ? -1 : letter_option((char)c);
    if (c == ':') return driver_usage_error(name, "option '%s' needs a value", bad_arg(argc, argv, optopt));
    if (id < 0) return driver_usage_error(name, "unknown option '%s'", bad_arg(argc, argv, optopt));
    if (set_option(o, name, (OptId)id, optarg)) return EXIT_USAGE;
  }
  o->files = argv + optind;
  o->nfiles = argc - optind;
  if (o->help) return EXIT_OK;
  const CmdDesc *d = &commands[cmd];
  if (o->nfiles < d->min_files) return driver_usage_error(name, "no input file (expected %s)", d->operand);
  if (d->max_files == 0 && o->nfiles)
    return driver_usage_error(name, "takes no operands, got %d ('%s')", o->nfiles, o->files[0]);
  if (d->max_files > 0 && o->nfiles > d->max_files)
    return driver_usage_error(name, "expected one %s, got %d operands", d->operand, o->nfiles);
  return EXIT_OK;
}

// ---- the error channel ---------------------------------------------------------------------
void driver_diag_init(DiagSink *d, Arena *a, const DriverOpts *o) {
  diag_init(d, a);
  d->color = o->color == 1 || (o->color == -1 && isatty(2));
}

int driver_report(const DiagSink *d, const char *cmd, int status) {
  for (int i = 0; i < d->diags.len; i++) {
    const Diag *x = VEC_AT(d->diags, Diag, i);
    if (!x->span.file && x->level != DIAG_NOTE) fprintf(stderr, "mlc %s: ", cmd);
    diag_print_one(x, stderr, d->color);
  }
  if (d->max_errors && d->nerrors > d->max_errors)
    fprintf(stderr, "note: %d more errors not shown\n", d->nerrors - d->max_errors);
  return status;
}

bool driver_check_input(DiagSink *d, const char *path, struct stat *st) {
  if (stat(path, st) || access(path, R_OK)) {
    diag_error(d, (Span){0}, "cannot read '%s': %s", path, strerror(errno));
    return false;
  }
  if (S_ISDIR(st->st_mode)) {
    diag_error(d, (Span){0}, "cannot read '%s': is a directory", path);
    return false;
  }
  return true;
}
