// mlc_rt.h — the public interface of libmlc_rt, the runtime every compiled
// model links against.
//
// Pieces, one file each:
//   pool.c        mlc_pool_*, mlc_parallel_for     thread pool
//   rng.c         mlc_philox, mlc_rng_*, mlc_dropout_scale, mlc_init_state
//   data*.c       mlc_array_*, mlc_read_*, mlc_dataset_*  readers + validation
//   loader.c      mlc_loader_*                     shuffled batches, prefetch
//   checkpoint.c  mlc_ckpt_*                       safetensors checkpoints
//   log.c         mlc_log_*                        progress, metrics, run record
//   driver.c      mlc_main                         the generated program's main
//
// Errors never exit: functions return -1 (or NULL) and write a one-line
// message naming the file (and record) to a caller buffer (err, errlen).
#ifndef MLC_RT_H
#define MLC_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mlc_model.h"

// ---- thread pool (pool.c) --------------------------------------------------------
// mlc_parallel_for(pool, n, grain, fn, arg) calls fn(arg, begin, end) over
// [0, n) in chunks of `grain` items (the last may be shorter); chunks run on
// the pool's threads and the caller's, and the call returns when all are done.
// Chunk boundaries depend only on n and grain, so a per-chunk reduction is the
// same with 1 thread or 16. A pool of 1 thread runs everything inline.
MlcPool *mlc_pool_new(int nthreads); // nthreads <= 0: the number of CPUs
void mlc_pool_free(MlcPool *pool);
int mlc_pool_threads(const MlcPool *pool);
typedef void (*MlcRangeFn)(void *arg, int64_t begin, int64_t end);
void mlc_parallel_for(MlcPool *pool, int64_t n, int64_t grain, MlcRangeFn fn,
                      void *arg);

// ---- random numbers (rng.c) -------------------------------------------------------
// Philox-4x32-10: out = the four words for counter ctr and key key. The same
// generator as the interpreter's dropout (compiler/graph/interp.c).
void mlc_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
// Keep/scale factor of element `index` of a dropout mask: 0 or 1/(1-p).
// Identical to interp_dropout_scale(seed, rng_seed, index, p): key = seed,
// counter = (index, rng_seed); u = (word0 >> 8) * 2^-24; kept iff u >= p.
double mlc_dropout_scale(uint64_t seed, uint64_t rng_seed, uint64_t index,
                         double p);
MlcRng mlc_rng_new(uint64_t seed);
uint64_t mlc_rng_next(MlcRng *r);  // one 64-bit draw; counter += 1
double mlc_rng_uniform(MlcRng *r); // [0, 1), 53 bits
// The per-step seed passed to dropout (ctx->step_seed): one draw.
uint64_t mlc_rng_step_seed(MlcRng *r);
// A random permutation of 0..n-1 for (seed, epoch): Fisher-Yates over a
// Philox stream keyed by seed with the epoch in the counter's high words.
void mlc_permutation(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm);
// Fills every state tensor from its MlcInit (f32/f64 draws; integer and
// bool tensors get zeros/ones/value). Tensor i draws from its own stream, so
// adding a tensor does not change the others.
void mlc_init_state(const MlcModel *m, uint64_t seed, void *const *state);

// ---- data (data.c, data_idx.c, data_csv.c, data_npy.c) -----------------------------
size_t mlc_dtype_size(MlcDType dt);
const char *mlc_dtype_name(MlcDType dt); // "f32", ...

// A dense array as read from a file: n records of rank-1 dims each, kept in
// the file's own element type (u8 images stay u8).
typedef struct MlcArray {
  char *path;          // the file, for messages
  MlcDType dtype;
  int rank;            // including the record dim
  int64_t dims[MLC_MAX_RANK];
  void *data;
} MlcArray;

int64_t mlc_array_records(const MlcArray *a);
int64_t mlc_array_record_size(const MlcArray *a); // elements per record
double mlc_array_get(const MlcArray *a, int64_t flat_index);
void mlc_array_free(MlcArray *a);

// IDX: magic 00 00 TT RR, RR big-endian u32 dims, big-endian data; gzip'd or
// plain (detected). Types u8 (08), i8 (09), i16 (0B), i32 (0C), f32 (0D),
// f64 (0E); i8/i16 widen to i32.
int mlc_read_idx(const char *path, MlcArray *out, char *err, size_t errlen);
// NPY v1/v2/v3, C order, little-endian or byte-sized <f4 <f8 <i4 <i8 |u1 |b1.
int mlc_read_npy(const char *path, MlcArray *out, char *err, size_t errlen);
// CSV: comma-separated numbers, one record a line (blank lines skipped), an
// optional header line; every record must have the same number of fields.
// The result is f64 [records, fields].
int mlc_read_csv(const char *path, int header, MlcArray *out, char *err,
                 size_t errlen);
// The kind of a file, from its first bytes (IDX, gzip'd IDX, NPY) or its
// name (.csv, .txt); MLC_DATA_NONE when unknown.
MlcDataKind mlc_data_kind(const char *path);
int mlc_read_any(const char *path, MlcDataKind kind, int csv_header,
                 MlcArray *out, char *err, size_t errlen);
// Reads whitespace/comma-separated numbers, one sample per line, from an open
// stream (predict's stdin); f64 [lines, fields].
int mlc_read_lines(FILE *f, const char *label, MlcArray *out, char *err,
                   size_t errlen);

// The model's inputs (at most 8) bound to arrays: input i reads elements
// [col[i], col[i] + numel_i) of each record of arrays[src[i]], checked once
// at bind time (record counts agree, widths match, labels in range, floats
// finite). Batches are converted to the model's dtypes and scaled.
typedef struct MlcDataset {
  const MlcModel *model;
  int ninputs;                    // model->ninputs, or n_forward_inputs for predict
  MlcArray arrays[8];
  int narrays;
  int src[8];                     // input -> array
  int64_t col[8];                 // input -> first element within a record
  double scale[8];
  int64_t n;                      // records
  int64_t syms[MLC_MAX_RANK];     // model->syms as bound from the record shapes
} MlcDataset;

// Elements per sample of an input / of the forward output, given the values
// of the model's symbols.
int64_t mlc_input_numel(const MlcInputDesc *in, const int64_t *syms);
int64_t mlc_output_numel(const MlcModel *m, const int64_t *syms);

// Binds `npaths` files to the model's first `ninputs` inputs: one path per
// input, or one path for all (CSV/NPY columns). `test` selects the test
// data sources' defaults (scale, columns, header). A symbolic per-sample dim
// is bound from the record shape of the first file that has it (NPY/IDX: the
// dims after the first; a flat record with one symbol: what the constant
// dims leave); another input giving the symbol another value is an error
// naming its file. Symbols need one file per input.
int mlc_dataset_open(MlcDataset *ds, const MlcModel *m, int ninputs,
                     const char *const *paths, int npaths, bool test,
                     char *err, size_t errlen);
// Binds already-read arrays (predict's stdin) the same way; takes ownership.
int mlc_dataset_bind(MlcDataset *ds, const MlcModel *m, int ninputs,
                     MlcArray *arrays, int narrays, bool test, char *err,
                     size_t errlen);
void mlc_dataset_free(MlcDataset *ds);
// Bytes of one sample of input i in the model's dtype.
size_t mlc_dataset_sample_bytes(const MlcDataset *ds, int i);
// Writes samples idx[0..b) of input i, converted, to dst.
void mlc_dataset_gather(const MlcDataset *ds, int i, const int64_t *idx,
                        int64_t b, void *dst);

// ---- loader (loader.c) --------------------------------------------------------------
// Batches of a dataset in a per-epoch order: a permutation from (seed, epoch)
// when shuffling, identity otherwise. The final batch of an epoch is smaller
// when the batch does not divide n (unless drop_last). A prefetch thread forms
// the next batch while the caller uses the current one. The cursor (epoch,
// samples consumed) is what checkpoints save.
typedef struct MlcLoader MlcLoader;
typedef struct MlcBatch {
  int64_t size;            // B of this batch (0: epoch over)
  const void *inputs[8];   // per input, [B, dims...] in the model's dtype
  const int64_t *indices;  // dataset record of each sample
} MlcBatch;

MlcLoader *mlc_loader_new(const MlcDataset *ds, int64_t batch, bool shuffle,
                          uint64_t seed, bool drop_last, bool prefetch);
void mlc_loader_free(MlcLoader *l);
// Positions the loader at `pos` samples into epoch `epoch`.
void mlc_loader_seek(MlcLoader *l, int64_t epoch, int64_t pos);
// The next batch of the current epoch; size 0 at its end (then the loader
// moves to epoch + 1 at position 0). The batch stays valid until the next call.
int64_t mlc_loader_next(MlcLoader *l, MlcBatch *b);
int64_t mlc_loader_epoch(const MlcLoader *l);
int64_t mlc_loader_pos(const MlcLoader *l);
int64_t mlc_loader_batches(const MlcLoader *l); // per epoch

// ---- checkpoints (checkpoint.c) -------------------------------------------------
// A checkpoint is a safetensors file: every state tensor under its path; run
// state in __metadata__ under "mlc.*" keys (model, hash, compiler, epoch,
// step, rng key/counter, loader epoch/pos, seed, lr) and "mlc.checksum", the
// CRC-32 of every tensor's name and bytes in name order.
typedef struct MlcRunState {
  int64_t epoch;      // loader epoch (0-based)
  int64_t pos;        // samples consumed in that epoch
  int64_t step;       // train_step calls completed
  MlcRng rng;
  uint64_t seed;
  double lr;
} MlcRunState;

int mlc_ckpt_save(const char *path, const MlcModel *m, void *const *state,
                  const MlcRunState *rs, char *err, size_t errlen);
// Loads a checkpoint into state. weights_only: PARAM and BUFFER tensors
// only, and a file without mlc metadata (e.g. from PyTorch) is accepted when
// names, dtypes and shapes match. Refuses another model's file (hash) and a
// corrupted one (checksum), saying why. rs may be NULL.
int mlc_ckpt_load(const char *path, const MlcModel *m, void *const *state,
                  bool weights_only, MlcRunState *rs, char *err, size_t errlen);

// ---- logging (log.c) ----------------------------------------------------------
typedef struct MlcEpochStats {
  int64_t epoch; // 1-based
  double train_loss, train_accuracy;
  double test_loss, test_accuracy; // NAN when no test data
  double seconds, images_per_second;
} MlcEpochStats;

typedef struct MlcLog MlcLog;
// Progress goes to `out` (a bar when it is a terminal, lines otherwise);
// metrics_path (JSON lines) may be NULL.
MlcLog *mlc_log_new(FILE *out, const char *metrics_path, int64_t log_every,
                    char *err, size_t errlen);
void mlc_log_free(MlcLog *lg);
void mlc_log_step(MlcLog *lg, int64_t epoch, int64_t epochs, int64_t step_in_epoch,
                  int64_t steps_per_epoch, int64_t global_step, double loss,
                  double acc, double lr, double gnorm, double images_per_second);
void mlc_log_epoch(MlcLog *lg, const MlcEpochStats *s);
// Writes the run record JSON (atomically) to path.
typedef struct MlcRunInfo {
  const MlcModel *model;
  uint64_t seed;
  int64_t batch, epochs, threads;
  double lr;
  const char *train_data, *test_data;
  int nepochs;
  const MlcEpochStats *epochs_stats;
  double final_train_loss, final_test_loss, final_test_accuracy;
  double images_per_second, seconds;
} MlcRunInfo;
int mlc_log_run_record(const char *path, const MlcRunInfo *ri, char *err,
                       size_t errlen);

// ---- the generated program's main (driver.c) ---------------------------------------
// Subcommands train / eval / predict; exit codes 0 ok, 1 runtime error,
// 2 usage. Messages on stderr.
int mlc_main(int argc, char **argv, const MlcModel *m);

#endif
