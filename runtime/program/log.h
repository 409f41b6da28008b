// log.h — what a training run tells its user (log.c), private to runtime/:
// progress lines, the metrics file (JSON lines) and the run record.
#ifndef MLC_RT_LOG_H
#define MLC_RT_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mlc_model.h"

typedef struct MlcEpochStats {
  int64_t epoch; // 1-based
  double train_loss, train_accuracy;
  double train_aux[MLC_MAX_AUX]; // the loss's auxiliary values, means over the epoch
  double test_loss, test_accuracy; // NAN when no test data
  double seconds, images_per_second;
  bool scaled;                     // the loss is scaled: the two below are set
  double loss_scale;               // the scale the epoch's last step ran with
  int64_t skipped;                 // steps skipped (overflowed) so far in the run
} MlcEpochStats;

typedef struct MlcLog MlcLog;
// Progress goes to `out` (a bar when it is a terminal, lines otherwise);
// metrics_path (JSON lines) may be NULL. accuracy: the model has a class
// dim; without one no accuracy is printed or recorded.
MlcLog *mlc_log_new(FILE *out, const char *metrics_path, int64_t log_every, bool accuracy,
                    char *err, size_t errlen);
// Closes the metrics file; -1 with a message when any write to it failed.
int mlc_log_free(MlcLog *lg, char *err, size_t errlen);
// The loss's auxiliary values the step and epoch lines show after the loss,
// under their names (MlcModel.naux, aux_names); none until this is called.
void mlc_log_aux(MlcLog *lg, int naux, const char *const *names);
// aux: the step's auxiliary values (naux of them; may be NULL without any).
// scaler: with loss scaling, the step's scale, overflow (1: skipped) and
// skipped steps so far (MLC_SCALER_OUTPUTS values); NULL without.
void mlc_log_step(MlcLog *lg, int64_t epoch, int64_t epochs, int64_t step_in_epoch,
                  int64_t steps_per_epoch, int64_t global_step, double loss,
                  double acc, double lr, double gnorm, double images_per_second,
                  const float *aux, const float *scaler);
void mlc_log_epoch(MlcLog *lg, const MlcEpochStats *s);
// -1 with "PATH: write failed: REASON" once a write to the metrics file has
// failed (a full disk), so the run stops at the step that lost a line.
int mlc_log_check(const MlcLog *lg, char *err, size_t errlen);

// Writes the run record JSON (atomically) to path.
typedef struct MlcRunInfo {
  const MlcModel *model;
  uint64_t seed;
  int64_t batch, epochs, threads;
  double lr;
  bool accuracy;
  const char *train_data, *test_data;
  const char *device; // where it ran: "cpu", "cuda: NVIDIA H200 (...)"; NULL: not said
  int nepochs;
  const MlcEpochStats *epochs_stats;
  double final_train_loss, final_test_loss, final_test_accuracy;
  double images_per_second, seconds;
} MlcRunInfo;
int mlc_log_run_record(const char *path, const MlcRunInfo *ri, char *err,
                       size_t errlen);

#endif
