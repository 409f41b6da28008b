// pipeline.h — one ordered table of stages (stages.def, pipeline.c) that
// `mlc build` and `mlc run` call, in the spirit of QBE's func(): the whole
// compilation is the rows of that table, each with a run function, a
// printer (its text form) and a verifier.
//
//   front -> lower -> autodiff -> optim -> [graph passes] -> kir
//     -> [schedule, memplan] -> [schedule-gpu, memplan-gpu] -> glue
//     -> cuda -> codegen -> link
//
// Input: a .model file and PipelineOptions. Output, stage by stage, in the
// Pipeline: the BuildUnit (graph IR module with train_step, kernel IR
// programs, glue source; backend/host/host.h), the LLVM module, and after
// link the finished file in the pipeline's temporary directory (build.c
// installs it). pipeline_run reports user errors to the DiagSink and returns
// false; a failing verifier is an internal compiler error naming the stage.
#ifndef MLC_PIPELINE_H
#define MLC_PIPELINE_H

#include "backend/cuda/nvrtc.h"
#include "backend/host/host.h"
#include "backend/backend.h"

#include <sys/types.h>

typedef enum {
  FORM_NONE,  // no text form
  FORM_GRAPH, // graph IR text (graph/ir.h), parsed back by ir_parse
  FORM_KIR,   // kernel IR text (kernel/kir.h)
  FORM_C,     // the glue's C source
  FORM_CUDA,  // CUDA C (mlc's subset, kernels/cuda/mlc_cuda.h)
  FORM_LLVM,  // LLVM IR text
} StageForm;

typedef enum {
#define STAGE(id, ...) STAGE_##id,
#include "stages.def"
#undef STAGE
  STAGE_COUNT
} StageId;

typedef enum {
  LINK_EXE, // a program: glue with main, kernels, libmlc_rt
  LINK_OBJ, // one relocatable object defining mlc_model_<cname>
  LINK_LIB, // lib<cname>.a: glue with the embedding API, kernels, libmlc_rt's objects
} LinkKind;

// What --target builds (PipelineOptions.targets; 0 means cpu).
enum { PIPE_CPU = 1, PIPE_CUDA = 2 };

typedef struct PipelineOptions {
  const char *path;       // the .model file
  const char *model;      // NULL: the file's first model
  const char *cname;      // C identifier of the model's symbols (fashion_mlp)
  BackendOptions backend; // codegen: cpu, opt level, emit (obj, or asm for --emit asm)
  LinkKind link;          // what glue and link make
  const char *runtime;    // link: libmlc_rt.a
  bool keep_temps;        // link: keep the temporary directory (its path on stderr)
  bool no_fuse;           // kir: one kernel per graph op (KirLowerOptions.fuse off)
  bool conv_winograd;     // schedule: the cpu target's conv_winograd (--conv winograd)
  bool have_precision;    // front: --precision replaces the recipe's `precision`
  int precision;          // with it (a DType: f32, bf16, f16)
  bool verify_each;       // verifiers after every stage (pipeline_default_verify)
  bool verbose;           // each stage's wall time (and its verifier's) on stderr
  const char *verbose_cmd; // "build": the prefix of those lines
  uint32_t dump;          // bit s: stage s's text form on stderr after it runs
  unsigned targets;       // PIPE_CPU | PIPE_CUDA; 0: PIPE_CPU
  int cuda_archs[CUDA_MAX_ARCHS]; // --cuda-arch, sm numbers ascending; none: sm_90
  int ncuda_archs;
} PipelineOptions;

typedef struct Pipeline {
  Arena *arena;
  DiagSink *diags;
  PipelineOptions opt;
  StageId next;           // the first stage not run yet
  StageId goal;           // the last stage asked for (glue runs only on the way to link)
  BuildUnit u;            // front .. glue: the model, its graph IR and kernel IR
  Sema *sema;             // front: the checked program
  IrFunc *grad;           // autodiff: loss_grad
  IrFunc *grad_scaled;    // autodiff, with loss scaling: loss_grad_scaled (seed argument %dy = S)
  StrBuf glue;            // glue: the C source
  bool glue_done;
  struct LlvmGen *gen;    // codegen: the module (llvm.h)
  struct CudaGen *cuda;   // cuda: the CUDA C and host launchers (cuda_gen.h)
  unsigned char *bundle;  // cuda, on the way to link: NVRTC's images (malloc'd)
  size_t bundle_len;
  char tmp[4096];         // link: the temporary directory ("" until made)
  const char *linked;     // link: the finished file in tmp
  StrBuf header;          // link (lib): the library's header NAME.h
  double seconds[STAGE_COUNT], verify_seconds[STAGE_COUNT];
  pid_t glue_pid;         // glue, on the way to link: cc compiling glue.c in the background
  bool glue_running;      // until link (or pipeline_free) waits for it
  const char *glue_cmd;   // its command line, for a failure's message
  char codegen_times[160]; // codegen: the time of each of its steps, for -v
  char link_times[512];   // link: the time of each of its steps, for -v
} Pipeline;

typedef struct Stage {
  const char *name; // "lower"
  StageForm form;
  bool (*run)(Pipeline *P);
  void (*print)(Pipeline *P, FILE *out);
  bool (*verify)(Pipeline *P, DiagSink *d);
  const char *what; // one line for --help and the docs ('\n' continues it)
} Stage;

const Stage *pipeline_stage(StageId s);
int pipeline_stage_lookup(const char *name); // -1 when unknown
// The last stage whose form is graph IR: what `--emit ir` and `--emit dot` show.
StageId pipeline_last_graph_stage(void);
// Verifiers on by default: in builds without NDEBUG (CMAKE_BUILD_TYPE=Debug).
bool pipeline_default_verify(void);

void pipeline_init(Pipeline *P, Arena *a, DiagSink *d, const PipelineOptions *o);
// Runs the stages from P->next through `last`, each followed by its verifier
// (when on) and its dump (when asked). False after a user error was reported.
bool pipeline_run(Pipeline *P, StageId last);
// Stage s's text form (s must have run).
void pipeline_print(Pipeline *P, StageId s, FILE *out);
// The graph IR as Graphviz, one digraph per function.
void pipeline_print_dot(Pipeline *P, FILE *out);
// After codegen: the module as assembly (backend.emit was BE_EMIT_ASM), in
// a file of the temporary directory; its path, or NULL after reporting.
const char *pipeline_write_asm(Pipeline *P);
// FNV-1a 64 of the graph module's text, hex: the structural hash that
// checkpoints carry (kir records it in BuildUnit.hash; `mlc run` checks
// mlc checkpoints against it).
void pipeline_module_hash(IrModule *m, char out[17]);
double pipeline_now(void); // CLOCK_MONOTONIC, seconds (for -v)
// Frees the LLVM module and removes the temporary directory (unless kept).
void pipeline_free(Pipeline *P);

#endif
