// recipe.h — a model's checked `train` block as plain data: the optimizer
// recipe for optim_build_step, and the run settings and data bindings the
// generated program starts from (its command line may override them).
//
// Sema has already checked the block (names, ranges, units, data mapping),
// so reading it cannot fail on user input; defaults are those of
// docs/language.md, "The train block".
#ifndef MLC_RECIPE_H
#define MLC_RECIPE_H

#include "ast.h"
#include "optim.h"

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
  int precision;                    // DType
  int64_t ckpt_every, ckpt_keep;    // 0: none / keep all
  const char *ckpt_path;            // NULL: the program's name
  Vec train_data, test_data;        // RecipeSource*
  Vec freeze;                       // const char*: paths
} Recipe;

// Reads the train block for `model` in prog (the defaults when there is
// none: r->present is false then).
void recipe_read(Arena *a, const Program *prog, const char *model, Recipe *r);

#endif
