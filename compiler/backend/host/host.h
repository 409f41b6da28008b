// host.h — the host glue (build_glue.c, glue_ranges.c, glue_api.c,
// glue_headers.c): the C source that turns a model's compiled kernel
// programs into the runtime's MlcModel descriptor, the program's main or the
// embedding API, the library's public header, and the runtime headers the
// glue is compiled against.
#ifndef MLC_HOST_H
#define MLC_HOST_H

#include "kernel/kir_lower.h"
#include "lower/lower.h"
#include "sema/recipe.h"

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
  // The targets built (--target): CPU kernels (the k_ programs, LLVM) and
  // CUDA kernels: the same functions lowered again, scheduled for the gpu
  // target and planned (host launchers mlc_<cname>_cu_<program>, the
  // kernels in the CUDA bundle); NULL without cuda.
  bool cpu, cuda;
  KirProgram *g_train, *g_train_checked, *g_eval, *g_predict, *g_plateau;
} BuildUnit;

// The glue C source (build_glue.c). with_main: define main() calling
// mlc_main; with_api: define the embedding API of build_glue_header.
// Returns false with a message in err when the model does not fit the
// runtime ABI (a per-sample dim that is neither a constant nor a symbol,
// an unsupported dtype, a symbolic dim with the library API, ...).
bool build_glue_source(StrBuf *b, const BuildUnit *u, bool with_main,
                       bool with_api, char *err, size_t errlen);
// The public header NAME.h of a library (the embedding API, glue_api.c).
void build_glue_header(StrBuf *b, const BuildUnit *u);

// Writes the runtime headers the glue includes (mlc_rt.h, mlc_model.h,
// kernels/abi.h) into dir, where the glue is compiled with -I dir; false
// with a message naming the file (glue_headers.c).
bool host_write_runtime_headers(const char *dir, char *err, size_t errlen);
// Removes what host_write_runtime_headers wrote.
void host_remove_runtime_headers(const char *dir);

// How the runtime initialises state p (runtime/include/mlc_model.h): p's
// IrInit (kaiming's gain computed, trunc_normal as normal), or for optimizer
// state optim_state_init's constant. The one mapping from IrInit to the
// runtime's spec: the glue prints it into the model descriptor, and
// `mlc run --interp` has the runtime draw from it (mlc_instance_new).
struct MlcInit;
void host_init_spec(const IrParam *p, const OptimRecipe *r, struct MlcInit *out);

#endif
