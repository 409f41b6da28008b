// checkpoint.h — training checkpoints and weight files (checkpoint.c),
// private to runtime/: the program's --checkpoint / --resume / --weights and
// the instance API's load and save go through these three functions.
#ifndef MLC_RT_CHECKPOINT_H
#define MLC_RT_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlc_model.h"

// A run's position besides the tensors. batch and the data identity are
// what --resume compares with the new run (0 / "" when the writer had none:
// a checkpoint saved through the instance API).
typedef struct MlcRunState {
  int64_t epoch; // loader epoch (0-based)
  int64_t pos;   // samples consumed in that epoch
  int64_t step;  // train_step calls completed
  MlcRng rng;
  uint64_t seed;
  double lr;
  int64_t batch;       // samples per train_step call; 0: unknown
  uint32_t data_crc;   // mlc_dataset_crc of the training data (when data[0])
  char data[512];      // the training files, for messages; "": unknown
} MlcRunState;

// Limits a checkpoint's run state must keep (checked on load, each field
// named in the message): epoch and step leave room to count on.
#define MLC_CKPT_MAX_EPOCH ((int64_t)1 << 40)
#define MLC_CKPT_MAX_STEP ((int64_t)1 << 52)

// Writes every state tensor and rs (may be NULL: weights only) to path,
// atomically; the checksum covers the whole content, metadata included.
int mlc_ckpt_save(const char *path, const MlcModel *m, void *const *state,
                  const MlcRunState *rs, char *err, size_t errlen);
// Loads a training checkpoint of this model into state and rs: every tensor
// and a run state whose fields are range-checked. Refuses another model's
// file (hash), a corrupted one (checksum), a file without run state, a field
// out of range, and leaves state untouched when it refuses.
int mlc_ckpt_load(const char *path, const MlcModel *m, void *const *state,
                  MlcRunState *rs, char *err, size_t errlen);
// Loads parameters and buffers (optimizer state keeps its values) from an
// mlc checkpoint or weights file, or a file without mlc metadata (PyTorch's
// safetensors) whose names, dtypes and shapes match; a tensor that is not a
// state of the model is refused. The one weights loader of the program's
// eval / predict / train --weights and of the instance API.
int mlc_load_weights(const char *path, const MlcModel *m, void *const *state,
                     char *err, size_t errlen);

#endif
