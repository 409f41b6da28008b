// recipe.h — a model's checked `train` block as plain data: the optimizer
// recipe for optim_build_step, and the run settings and data bindings the
// generated program starts from (its command line may override them).
//
// Sema produces it while it checks the block (sema_train.c; checked.h's
// sema_recipe), so every number in it is in range; defaults are those of
// docs/language.md, "The train block".
#ifndef MLC_RECIPE_H
#define MLC_RECIPE_H

#include "types/types.h"

typedef enum { OPT_SGD, OPT_ADAM, OPT_ADAMW } OptimKind;

typedef enum {
  SCHED_CONSTANT,
  SCHED_STEP,        // lr * gamma^floor(epoch / step_size)
  SCHED_MULTISTEP,   // lr * gamma^(number of milestones <= epoch)
  SCHED_EXPONENTIAL, // lr * gamma^epoch
  SCHED_COSINE,      // linear warmup from 0, then cosine down to min_lr
  SCHED_LINEAR,      // linear warmup from 0, then linearly down to end_lr
  SCHED_PLATEAU,     // lr * scale, scale updated by plateau_update(metric)
} SchedKind;

// Loss scaling (torch.cuda.amp.GradScaler): the backward pass starts from
// loss * S; the step unscales the gradients, skips the update when one of
// them is not finite, and (dynamic) adjusts S. docs/design/optim.md.
typedef enum {
  LSCALE_NONE,    // no scaling (S = 1, nothing checked)
  LSCALE_STATIC,  // S fixed at scale_init; a step with a non-finite gradient is skipped
  LSCALE_DYNAMIC, // S starts at scale_init, backs off on overflow, grows after good steps
} LossScaleKind;

// Limits sema enforces with a located error (sema_train.c): milestones of a
// multistep schedule, and micro-batches per step (each is a copy of the
// gradient graph in train_step).
enum { OPTIM_MAX_MILESTONES = 16, OPTIM_MAX_ACCUMULATE = 64, OPTIM_MAX_GROUPS = 16 };

// A parameter group (torch.optim's param_groups): the trainable params a
// `group` setting's patterns match, and the hyper-parameters they take
// instead of the optimizer's (those not written are the optimizer's). A
// param is in at most one group; the others are the default group, with
// the optimizer's own.
typedef struct OptimGroup {
  const char *name;
  double lr_scale;            // the group's lr: the scheduled lr times this
  double momentum, dampening, weight_decay; // sgd (weight_decay: all)
  bool nesterov;
  double beta1, beta2, eps;   // adam, adamw
  int npaths;
  const char *const *paths;   // its params, in the model's order
} OptimGroup;

// A checked training recipe (docs/language.md, "The train block"); the
// defaults there are the caller's to fill in.
typedef struct OptimRecipe {
  OptimKind opt;
  double lr;
  double momentum, dampening; // sgd
  bool nesterov;              // sgd
  double weight_decay;        // sgd/adam: L2 added to the gradient; adamw: decoupled
  double beta1, beta2, eps;   // adam, adamw

  SchedKind sched;
  int64_t step_size;          // step: epochs
  int64_t milestones[OPTIM_MAX_MILESTONES]; // multistep: epochs, ascending
  int nmilestones;
  double gamma;               // step, multistep, exponential
  int64_t warmup;             // cosine, linear: steps (epochs if warmup_epochs)
  bool warmup_epochs;         // warmup counts epochs: 1 epoch = steps_per_epoch steps
  double min_lr;              // cosine: final lr; linear: end_lr
  double factor;              // plateau, in (0, 1)
  int64_t patience;           // plateau: epochs
  bool plateau_max;           // plateau: the metric improves upwards (accuracy)

  int64_t epochs, steps_per_epoch; // total optimizer steps = epochs * steps_per_epoch
  double clip;                // max global grad norm; 0 = no clipping
  int accumulate;             // K micro-batches per step (>= 1)
  LossScaleKind loss_scale;
  double scale_init;          // S's first value: > 0, finite in the loss's dtype
  double scale_growth;        // dynamic: S *= growth after growth_interval good steps (> 1)
  double scale_backoff;       // dynamic: S *= backoff after an overflow, in (0, 1)
  int64_t scale_interval;     // dynamic: growth_interval, >= 1
  int ngroups;                // parameter groups besides the default one
  OptimGroup groups[OPTIM_MAX_GROUPS];
} OptimRecipe;

enum { RECIPE_MAX_COLS = 256 };

// One `input = source(...)` of train_data / test_data.
typedef struct RecipeSource {
  const char *input;  // the loss parameter it feeds
  const char *kind;   // "idx", "csv", "npy"
  const char *path;
  double scale;       // idx: values are multiplied by it (default 1)
  bool header;        // csv (default true)
  int dtype;          // csv: DType the values are read as (default f32)
  int ncols;          // csv: selected columns (0: all)
  int64_t cols[RECIPE_MAX_COLS];
  const char *colnames[RECIPE_MAX_COLS]; // csv: by header name, when given as strings
} RecipeSource;

typedef struct Recipe {
  const char *model;
  bool present;       // the file has a train block for the model
  int64_t batch, epochs, seed;
  OptimRecipe opt;    // epochs/accumulate filled; steps_per_epoch = 1 until the
                      // runtime knows the data size (it sets the state slots)
  const char *optimizer, *schedule; // names, for the run record
  const char *metric;               // "loss" or "accuracy"
  int precision;                    // DType; change it with recipe_set_precision
  bool loss_scale_written;          // the recipe has a loss_scale setting
  int64_t ckpt_every, ckpt_keep;    // 0: none / keep all
  const char *ckpt_path;            // NULL: the program's name
  Vec train_data, test_data;        // RecipeSource*
  Vec freeze;                       // const char*: paths
} Recipe;

#endif
