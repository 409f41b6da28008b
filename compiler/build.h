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

#include "backend.h"
#include "lower.h"
#include "recipe.h"

// What the pipeline made of one model.
typedef struct BuildUnit {
  Arena *arena;
  const char *path;      // the .model file
  const char *model;     // the model's name (FashionMLP)
  const char *cname;     // C identifier for symbols: fashion_mlp
  LowerResult lr;
  Recipe recipe;
  IrFunc *train_step, *eval, *predict; // NULL where the model lacks them
  IrFunc *plateau;       // plateau_update (optim.h); NULL unless schedule plateau
  bool step_has_out;     // train_step's result 3 is the forward output
  KirProgram *k_train, *k_eval, *k_predict; // after build_lower_kir
  char hash[17];         // FNV-1a 64 of the module's text, hex
  // train_step again with finite checks (symbols ..._k_train_step_checked),
  // which the glue runs under --check-finite; its sites are the model's.
  KirProgram *k_train_checked;
  KirLowerOptions checked;
  KirProgram *k_plateau; // of plateau (symbol ..._k_plateau_update); NULL without
} BuildUnit;

// Front end to graph IR with train_step. Returns false after printing
// diagnostics / a message to stderr.
bool build_compile(Arena *a, DiagSink *d, const char *path, const char *model,
                   const char *cname, BuildUnit *u);
// Kernel IR of the three entry points (and plateau_update). 0, or -1 with a message in err.
int build_lower_kir(BuildUnit *u, char *err, size_t errlen);

// The glue C source (build_glue.c). with_main: define main() calling
// mlc_main; with_api: define the embedding API of build_glue_header.
// Returns false with a message in err when the model does not fit the
// runtime ABI (a per-sample dim that is neither a constant nor a symbol,
// an unsupported dtype, a symbolic dim with the library API, ...).
bool build_glue_source(StrBuf *b, const BuildUnit *u, bool with_main,
                       bool with_api, char *err, size_t errlen);
// The public header NAME.h of a library (the embedding API).
void build_glue_header(StrBuf *b, const BuildUnit *u);

//   mlc build FILE.model [--model NAME] [-o OUT] [--emit exe|obj|lib|llvm|asm]
//             [--cpu=native|NAME] [-O2|-O3] [--keep-temps]
// Returns the exit status: 0 success, 1 errors, 2 usage errors.
int build_main(int argc, char **argv);

#endif
