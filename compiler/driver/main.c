// main.c — the `mlc` command: picks the subcommand and runs it.
//
//   mlc check [--explain] [--color=WHEN] FILE...   check models
//   mlc dump-tokens FILE                           the lexer's view
//   mlc dump-ast [--spans] FILE                    the parser's view
//   mlc build FILE [options]                       any stage of the pipeline (build.c)
//   mlc run --interp FILE ...                      the reference interpreter (run.c)
//   mlc help [COMMAND], mlc version
//
// Every subcommand parses its options with the one front end (options.c)
// and reports through a DiagSink printed by driver_report. Exit codes:
// DriverExit (driver.h).
#include "driver.h"
#include "sema/frontend.h"

#include <string.h>

// ---- check, dump-tokens, dump-ast --------------------------------------------------------------
static int check_file(const DriverOpts *o, const char *path) {
  Arena *a = arena_new();
  DiagSink d;
  driver_diag_init(&d, a, o);
  const char *err = NULL;
  SrcFile *f = src_read(a, path, &err);
  if (!f) diag_error(&d, (Span){0}, "cannot read '%s': %s", path, err);
  SemaOptions so = {.explain = o->explain, .explain_out = stdout};
  int status = !f || frontend_check(a, &d, f, &so, NULL) ? EXIT_ERRORS : EXIT_OK;
  driver_report(&d, "check", status);
  arena_free(a);
  return status;
}

int driver_check(int argc, char **argv) {
  DriverOpts o;
  if (driver_parse(CMD_CHECK, argc, argv, &o)) return EXIT_USAGE;
  if (o.help) return driver_help(CMD_CHECK, stdout), EXIT_OK;
  int status = EXIT_OK;
  for (int i = 0; i < o.nfiles; i++)
    if (check_file(&o, o.files[i])) status = EXIT_ERRORS;
  return status;
}

int driver_dump(int argc, char **argv) {
  CmdId cmd = strcmp(argv[0], "dump-tokens") ? CMD_DUMP_AST : CMD_DUMP_TOKENS;
  DriverOpts o;
  if (driver_parse(cmd, argc, argv, &o)) return EXIT_USAGE;
  if (o.help) return driver_help(cmd, stdout), EXIT_OK;
  Arena *a = arena_new();
  DiagSink d;
  driver_diag_init(&d, a, &o);
  const char *err = NULL;
  SrcFile *f = src_read(a, o.files[0], &err);
  if (!f) diag_error(&d, (Span){0}, "cannot read '%s': %s", o.files[0], err);
  else if (cmd == CMD_DUMP_TOKENS) frontend_dump_tokens(a, &d, f, stdout);
  else ast_print(frontend_parse(a, &d, f), stdout, o.spans);
  int status = driver_report(&d, argv[0], !f || d.nerrors ? EXIT_ERRORS : EXIT_OK);
  arena_free(a);
  return status;
}

// ---- help, version ---------------------------------------------------------------------------
static int cmd_help(int argc, char **argv) {
  DriverOpts o;
  if (driver_parse(CMD_HELP, argc, argv, &o)) return EXIT_USAGE;
  int cmd = o.nfiles ? driver_cmd_lookup(o.files[0]) : CMD_HELP;
  if (cmd < 0) return driver_usage_error("help", "unknown command '%s'", o.files[0]);
  driver_help((CmdId)cmd, stdout);
  return EXIT_OK;
}

static int cmd_version(int argc, char **argv) {
  DriverOpts o;
  if (driver_parse(CMD_VERSION, argc, argv, &o)) return EXIT_USAGE;
  if (o.help) return driver_help(CMD_VERSION, stdout), EXIT_OK;
  printf("mlc %s\n", MLC_VERSION);
  return EXIT_OK;
}

// ---- dispatch --------------------------------------------------------------------------------
typedef int (*CmdMain)(int argc, char **argv);

static const CmdMain mains[CMD_COUNT] = {
    [CMD_CHECK] = driver_check, [CMD_DUMP_TOKENS] = driver_dump, [CMD_DUMP_AST] = driver_dump,
    [CMD_BUILD] = driver_build, [CMD_RUN] = driver_run,          [CMD_HELP] = cmd_help,
    [CMD_VERSION] = cmd_version,
};

static int unknown_command(const char *cmd) {
  const char *names[CMD_COUNT];
  for (int i = 0; i < CMD_COUNT; i++) names[i] = driver_cmd_name((CmdId)i);
  const char *near = closest_name(cmd, names, CMD_COUNT);
  if (near) return driver_usage_error(NULL, "unknown command '%s'; did you mean '%s'?", cmd, near);
  return driver_usage_error(NULL, "unknown command '%s'", cmd);
}

int main(int argc, char **argv) {
  if (argc < 2) return driver_usage_error(NULL, "no command given (check, build, run, ...)");
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) return cmd_help(1, argv + 1);
  if (!strcmp(cmd, "--version")) return cmd_version(1, argv + 1);
  if (cmd[0] == '-') return driver_usage_error(NULL, "unknown option '%s' (options follow the command)", cmd);
  int id = driver_cmd_lookup(cmd);
  if (id < 0) return unknown_command(cmd);
  // The subcommand sees its own name as argv[0], as getopt_long expects.
  return mains[id](argc - 1, argv + 1);
}
