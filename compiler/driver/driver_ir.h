// driver_ir.h — the `mlc build` and `mlc run` commands (driver_ir.c):
// lowering a checked model to graph IR, printing it, and running an entry
// point in the reference interpreter.
//
// Both take the arguments after `mlc` (argv[0] is the command name) and
// return the exit status: 0 success, 1 errors in the input, 2 usage errors.
#ifndef MLC_DRIVER_IR_H
#define MLC_DRIVER_IR_H

//   mlc build FILE.model [--model NAME] --emit ir|dot [--dump-after=PASS] [-o OUT]
int driver_build(int argc, char **argv);

//   mlc run --interp FILE.model --model NAME --entry forward|loss|eval|predict
//           --input name=path.npy ... [--f32|--f64] [--seed N]
int driver_run(int argc, char **argv);

#endif
