// fuzz_readers.c — libFuzzer entry for the runtime's readers: IDX (plain or
// gzip'd), NPY, CSV with its header and column selection, predict's lines,
// safetensors, and checkpoint / weights metadata, each followed by the
// validation that comes after it (binding the array to a model's inputs,
// loading a checkpoint's tensors and run state).
//
// The first byte of an input picks the reader (low three bits) and the CSV
// header flag (bit 3); the rest is the file, written to a memfd and read by
// path (/proc/self/fd/N), as the program reads files. The model is a small
// descriptor of its own (no kernels: nothing is trained): x f32[4] scaled
// u8-style, y i32 labels 0..2 selected by header name from a CSV, three
// state tensors. A crash, a sanitizer report, a leak or an input that takes
// longer than -timeout fails the run (tests/runtime/fuzz/run.sh).
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/checkpoint.h"
#include "core/safetensors.h"
#include "data/dataset.h"

static const MlcStateDesc states[] = {
    {.path = "w", .dtype = MLC_F32, .rank = 2, .shape = {3, 4}, .kind = MLC_STATE_PARAM, .trainable = 1},
    {.path = "b", .dtype = MLC_F32, .rank = 1, .shape = {3}, .kind = MLC_STATE_PARAM, .trainable = 1},
    {.path = "opt.step", .dtype = MLC_I64, .rank = 0, .kind = MLC_STATE_OPTIM},
};
static const int64_t ycols[] = {-1};
static const char *const ynames[] = {"y"};
static const MlcInputDesc inputs[] = {
    {.name = "x", .dtype = MLC_F32, .rank = 1, .dims = {4},
     .train = {.kind = MLC_DATA_CSV, .scale = 0.5, .header = 1}},
    {.name = "y", .dtype = MLC_I32, .rank = 0, .num_classes = 3, .value_limit = 3,
     .limit_what = "the classes of the loss",
     .train = {.kind = MLC_DATA_CSV, .scale = 1, .header = 1, .ncols = 1, .cols = ycols,
               .colnames = ynames}},
};
static const MlcModel model = {
    .abi = MLC_ABI_VERSION, .name = "Fuzz", .hash = "f0220000", .compiler = "fuzz",
    .nstates = 3, .states = states, .ninputs = 2, .inputs = inputs, .n_forward_inputs = 1,
    .num_out = 3, .out_classes = 3, .recipe = {.batch = 4, .epochs = 1, .lr = 0.1},
};

// The file every input is written to, reopened by path.
static const char *file_of(const uint8_t *d, size_t n) {
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("fuzz", 0);
    if (fd < 0) abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) || (n && pwrite(fd, d, n, 0) != (ssize_t)n)) abort();
  return path;
}

// An array read: bound as the model's forward input, then as both inputs.
static void bind(MlcArray *a) {
  MlcDataset ds;
  char err[512];
  MlcArray copy = *a;
  copy.path = a->path ? strdup(a->path) : NULL;
  size_t bytes = (size_t)mlc_array_records(a) * (size_t)mlc_array_record_size(a) * mlc_dtype_size(a->dtype);
  copy.data = malloc(bytes + 1);
  if (copy.data) memcpy(copy.data, a->data, bytes);
  if (!copy.data || !copy.path) {
    mlc_array_free(&copy);
  } else if (!mlc_dataset_bind(&ds, &model, 1, &copy, 1, false, err, sizeof err)) {
    mlc_dataset_free(&ds);
  }
  if (!mlc_dataset_bind(&ds, &model, 2, a, 1, false, err, sizeof err)) mlc_dataset_free(&ds);
}

static void checkpoint(const char *path, const uint8_t *d, size_t n) {
  char err[512];
  MlcSt *st = mlc_st_parse("fuzz.st", d, n, err, sizeof err);
  mlc_st_close(st);
  float w[12], b[3];
  int64_t step;
  void *state[3] = {w, b, &step};
  MlcRunState rs;
  mlc_ckpt_load(path, &model, state, &rs, err, sizeof err);
  mlc_load_weights(path, &model, state, err, sizeof err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len) {
  if (len < 1) return 0;
  int which = data[0] & 7, header = data[0] >> 3 & 1;
  const char *path = file_of(data + 1, len - 1);
  char err[512];
  MlcArray a;
  int rc = -1;
  switch (which) {
  case 0: rc = mlc_read_idx(path, &a, err, sizeof err); break;
  case 1: rc = mlc_read_npy(path, &a, err, sizeof err); break;
  case 2: rc = mlc_read_csv(path, header, &a, err, sizeof err); break;
  case 3: {
    FILE *f = fmemopen((void *)(data + 1), len - 1 ? len - 1 : 1, "r");
    if (f) rc = mlc_read_lines(f, "stdin", &a, err, sizeof err), fclose(f);
    break;
  }
  default: checkpoint(path, data + 1, len - 1); return 0;
  }
  if (rc == 0) {
    bind(&a);
    mlc_array_free(&a);
  }
  return 0;
}
