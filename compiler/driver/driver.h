// driver.h — what the `mlc` subcommands share: the exit codes, the parsed
// command line (one getopt front end for every subcommand, options.c), the
// one usage-error path, the one path that prints diagnostics, and the
// subcommands' entry points.
//
// Every subcommand takes the arguments after `mlc` (argv[0] is the command's
// name) and returns a DriverExit. User-facing errors go to a DiagSink and are
// printed once, at the end, by driver_report; nothing below main() exits.
#ifndef MLC_DRIVER_H
#define MLC_DRIVER_H

#include "base/common.h"

#include <sys/stat.h>

typedef enum {
  EXIT_OK = 0,     // clean
  EXIT_ERRORS = 1, // errors in the input, or a file or tool failed
  EXIT_USAGE = 2,  // a bad command line
} DriverExit;

// The subcommands, in the order `mlc --help` lists them.
#define DRIVER_COMMANDS(X)                                                     \
  X(CHECK, "check")                                                            \
  X(DUMP_TOKENS, "dump-tokens")                                                \
  X(DUMP_AST, "dump-ast")                                                      \
  X(BUILD, "build")                                                            \
  X(RUN, "run")                                                                \
  X(HELP, "help")                                                              \
  X(VERSION, "version")

typedef enum {
#define X(id, name) CMD_##id,
  DRIVER_COMMANDS(X)
#undef X
  CMD_COUNT
} CmdId;

enum { DRIVER_MAX_INPUTS = 32 }; // mlc run --input, at most

// The command line of one subcommand. Values are checked where the option
// alone decides (--color, -O, --seed, --input); --emit and --dump-after are
// checked against the stage table by build.c.
typedef struct DriverOpts {
  CmdId cmd;
  char **files; // operands, in order
  int nfiles;
  bool help;    // -h, --help: the subcommand prints its help instead
  int color;    // --color: -1 auto (a terminal), 0 never, 1 always
  bool explain; // check --explain
  bool spans;   // dump-ast --spans
  // build and run
  const char *model;      // --model NAME; NULL: the file's first model
  bool verify_each;       // --verify-each
  int precision;          // --precision P (a DType: f32, bf16, f16) ...
  bool have_precision;    // ... when given; else the recipe's
  // build
  const char *out;        // -o OUT; "-" is standard output
  const char *emit;       // --emit KIND; NULL: exe
  const char *dump_after; // --dump-after=STAGE[,STAGE...]
  unsigned targets;       // --target: bit 0 cpu, bit 1 cuda; 0: cpu
  const char *cuda_arch;  // --cuda-arch=LIST; NULL: sm_90
  const char *cpu;        // --cpu=CPU; NULL: native
  int opt_level;          // -O0..-O3; 3 unless given
  bool keep_temps;        // --keep-temps
  bool no_fuse;           // --no-fuse
  bool conv_winograd;     // --conv winograd
  bool verbose;           // -v, --verbose
  bool report;            // --report[=FILE] (report.h)
  const char *report_file; // its FILE; NULL: standard output, and nothing is built
  int64_t batch;          // --batch N; 0: the recipe's
  int64_t max_memory;     // --max-memory SIZE in bytes; 0: none
  // run
  bool interp;            // --interp
  const char *entry;      // --entry
  const char *inputs[DRIVER_MAX_INPUTS]; // --input NAME=PATH, in order
  int ninputs;
  const char *weights;    // --weights FILE
  const char *save;       // --save OUT
  bool f64;               // --f64 (default --f32)
  uint64_t seed;          // --seed N
  bool have_seed;         // --seed was given
} DriverOpts;

// ---- the command line (options.c) ---------------------------------------------------------
// Parses the arguments of subcommand `cmd` (argv[0] is its name) with
// getopt_long, accepting only the options that subcommand takes. Returns
// EXIT_OK, or EXIT_USAGE after driver_usage_error.
int driver_parse(CmdId cmd, int argc, char **argv, DriverOpts *o);
// "mlc CMD: error: MESSAGE" and "Try 'mlc CMD --help' ...", on stderr; cmd
// NULL: the message is about `mlc` itself. Returns EXIT_USAGE.
int driver_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
// The help of one subcommand (CMD_HELP: `mlc --help`, every subcommand).
void driver_help(CmdId cmd, FILE *out);
// One row of a help text: "  SPELLING   HELP", HELP's '\n' continuing in
// the help column.
void driver_help_row(FILE *out, const char *spelling, const char *help);
const char *driver_cmd_name(CmdId cmd);
int driver_cmd_lookup(const char *name); // -1 when unknown

// ---- diagnostics: the one error channel ----------------------------------------------------
// A sink coloured as --color says (auto: when stderr is a terminal).
void driver_diag_init(DiagSink *d, Arena *a, const DriverOpts *o);
// Prints every collected diagnostic to stderr, errors without a source
// location prefixed "mlc CMD: ", and returns status.
int driver_report(const DiagSink *d, const char *cmd, int status);
// The input file: readable and not a directory, else an error naming it.
// Fills st for the checks of output paths against it.
bool driver_check_input(DiagSink *d, const char *path, struct stat *st);

// ---- the subcommands -----------------------------------------------------------------------
int driver_check(int argc, char **argv);
int driver_dump(int argc, char **argv); // dump-tokens, dump-ast
int driver_build(int argc, char **argv); // build.c
int driver_run(int argc, char **argv);   // run.c

#endif
