// build.h — `mlc build` to native code (build.c) and the C glue that turns
// compiled kernel programs into a model object for the runtime (build_glue.c).
//
// The pipeline, one flat list of calls (build_compile):
//   frontend_analyze -> recipe_read -> lower_model -> ad_grad(loss)
//   -> optim_build_step (+ plateau_update) -> [train_step gains the forward
//   output as a 4th result, for training accuracy] -> kir_lower_func of
//   train_step, eval, predict (and train_step with finite checks, kir.h;
//   and plateau_update, the runtime's per-epoch MlcModel.epoch_end)
//   -> the LLVM backend (one object, symbols
//   mlc_<cname>_k_<program>).
// Then the glue (a C file holding `const MlcModel mlc_model_<cname>`, the
// MlcEntry wrappers and, for libraries, the embedding API of the generated
// header NAME.h; docs/embedding.md) is compiled with the system C compiler
// and linked with libmlc_rt.
#ifndef MLC_BUILD_H
#define MLC_BUILD_H

#include "backend/host/host.h"

// Front end to graph IR with train_step. Returns false after printing
// diagnostics / a message to stderr.
bool build_compile(Arena *a, DiagSink *d, const char *path, const char *model,
                   const char *cname, BuildUnit *u);
// Kernel IR of the three entry points (and plateau_update). 0, or -1 with a message in err.
int build_lower_kir(BuildUnit *u, char *err, size_t errlen);

//   mlc build FILE.model [--model NAME] [-o OUT] [--emit exe|obj|lib|llvm|asm]
//             [--cpu=native|NAME] [-O2|-O3] [--keep-temps]
// Returns the exit status: 0 success, 1 errors, 2 usage errors.
int build_main(int argc, char **argv);

#endif
