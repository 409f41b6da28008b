// program.h — what the generated program's files share (driver.c: options,
// main, eval and predict; train.c: training), private to runtime/program.
#ifndef MLC_RT_PROGRAM_H
#define MLC_RT_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/instance.h"
#include "data/dataset.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

typedef struct Opts {
  const char *train_data, *test_data, *data, *weights, *checkpoint, *run_record, *metrics;
  int64_t epochs, batch, threads, ckpt_every, log_every, max_steps;
  double lr;
  uint64_t seed;
  bool resume, check_finite, have_lr, have_seed, no_shuffle, force;
  int device;       // MLC_DEVICE_CPU, _CUDA, or _AUTO (no --device)
  const char *prog; // for the one line saying where the instance runs
} Opts;

// The data files of one split: the comma-separated list given, or the
// recipe's defaults (one per input, or one when all inputs name one file).
typedef struct Paths {
  const char *p[MLC_MAX_INPUTS];
  int n;
  char *copy; // owns the strings of a split list
} Paths;

int data_paths(const MlcModel *m, int ninputs, const char *arg, bool test, Paths *out);
void paths_free(Paths *p);
// Reads and binds one split; prints the message and returns -1 on failure.
int open_data(const char *prog, const MlcModel *m, int ninputs, const Paths *p, bool test,
              MlcDataset *ds);

// Accuracy: the label input and the rows of out_classes scores a sample
// has, when the model has a class dim and the label matches its rows.
typedef struct Accuracy {
  int label;     // input index, -1: no accuracy
  int64_t rows, classes;
} Accuracy;

Accuracy accuracy_of(const MlcInstance *in);
// Correct predictions in a batch of logits: the rows whose argmax is the
// label; adds the rows scored to *scored (every row but those whose label
// is the ignore_value). Accuracy is the correct rows over the rows scored.
double count_correct(const MlcInstance *in, const Accuracy *a, const MlcBatch *b, double *scored);
// Mean loss and accuracy of the eval entry point over a dataset.
int evaluate(MlcInstance *in, const Accuracy *a, const MlcDataset *ds, int64_t batch,
             double *loss, double *acc, char *err, size_t errlen);
// An instance for batches up to min(batch, the largest dataset), with the
// symbols the data bound; NULL with a message.
MlcInstance *program_instance(const MlcModel *m, const Opts *o, int64_t most, const int64_t *syms,
                              char *err, size_t errlen);

// Loads a weights file into the instance's state, wherever it lives.
int program_load_weights(MlcInstance *in, const char *path, char *err, size_t errlen);

int cmd_train(const char *prog, const Opts *o, const MlcModel *m);

#endif
