// dataset.h — a model's inputs bound to data files, and the shuffling
// loader over them (data.c, loader.c); private to runtime/.
//
// Binding validates everything once, before training starts (data.c says
// what); batches are then converted to the model's dtypes as they are
// formed, so a 60,000-image u8 set stays 47 MB.
#ifndef MLC_RT_DATASET_H
#define MLC_RT_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "mlc_data.h"
#include "mlc_rt.h"

// The model's first `ninputs` inputs bound to arrays: input i reads
// elements [col[i], col[i] + numel_i) of each record of its array — the
// file it was given, or, for a CSV column selection, the selected columns
// (picked[i]). scale[i] is 1 unless integer data feeds a float input.
typedef struct MlcDataset {
  const MlcModel *model;
  int ninputs;                       // model->ninputs, or n_forward_inputs for predict
  MlcArray arrays[MLC_MAX_INPUTS];   // as read, one per file
  int narrays;
  int src[MLC_MAX_INPUTS];           // input -> array
  MlcArray picked[MLC_MAX_INPUTS];   // input i's selected CSV columns (data NULL: none)
  int64_t col[MLC_MAX_INPUTS];       // input -> first element within a record
  double scale[MLC_MAX_INPUTS];
  int64_t n;                         // records
  int64_t syms[MLC_MAX_SYMS];        // model->syms as bound from the record shapes
} MlcDataset;

// Binds `npaths` files to the model's first `ninputs` inputs: one path per
// input, or one path for all (its columns or record elements in input
// order, or each input's CSV column selection). `test` selects the test data
// sources' defaults (scale, columns, header). A symbolic per-sample dim is
// bound from the record shape of the first file that has it (NPY/IDX: the
// dims after the first; a flat record with one symbol: what the constant
// dims leave); another input giving the symbol another value, or a value
// above the model's limit for it, is an error naming the file. Symbols need
// one file per input.
int mlc_dataset_open(MlcDataset *ds, const MlcModel *m, int ninputs,
                     const char *const *paths, int npaths, bool test,
                     char *err, size_t errlen);
// Binds already-read arrays (predict's stdin) the same way; takes ownership
// (the caller's structs are emptied, bound or not).
int mlc_dataset_bind(MlcDataset *ds, const MlcModel *m, int ninputs,
                     MlcArray *arrays, int narrays, bool test, char *err,
                     size_t errlen);
void mlc_dataset_free(MlcDataset *ds);
// Bytes of one sample of input i in the model's dtype.
size_t mlc_dataset_sample_bytes(const MlcDataset *ds, int i);
// Writes samples idx[0..b) of input i, converted, to dst.
void mlc_dataset_gather(const MlcDataset *ds, int i, const int64_t *idx,
                        int64_t b, void *dst);
// A CRC-32 of the data as read (every array's dtype, dims and bytes, in
// file order): what a checkpoint records to recognise its training data.
uint32_t mlc_dataset_crc(const MlcDataset *ds);
// "a.idx (60000 records),b.idx": the files, for messages and run records.
void mlc_dataset_describe(const MlcDataset *ds, char *buf, size_t len);

// One u8 record of w values to f32, q[j] = (float)((double)p[j] * sc)
// (gather_u8.c; lut[v] holds that value for each v, the portable path).
void mlc_gather_u8_f32(const uint8_t *p, float *q, int64_t w, double sc, const float *lut);

// ---- loader (loader.c) --------------------------------------------------------------
// Batches of a dataset in a per-epoch order: a permutation from (seed, epoch)
// when shuffling, identity otherwise. The final batch of an epoch is smaller
// when the batch does not divide n (unless drop_last). A prefetch thread forms
// the next batch while the caller uses the current one. The cursor (epoch,
// samples consumed) is what checkpoints save.
typedef struct MlcLoader MlcLoader;
typedef struct MlcBatch {
  int64_t size;                        // B of this batch (0: epoch over)
  const void *inputs[MLC_MAX_INPUTS];  // per input, [B, dims...] in the model's dtype
  const int64_t *indices;              // dataset record of each sample
} MlcBatch;

// NULL when out of memory. Buffers are sized for min(batch, records).
MlcLoader *mlc_loader_new(const MlcDataset *ds, int64_t batch, bool shuffle,
                          uint64_t seed, bool drop_last, bool prefetch);
void mlc_loader_free(MlcLoader *l);
// The thread pool of the steps that use the batches. When it has a thread
// per CPU (none left over for the prefetch thread, which would take one
// from the step), the loader stops prefetching and forms each batch when
// asked, gathering its samples on the pool; otherwise nothing changes.
// The batches are the same either way.
void mlc_loader_set_pool(MlcLoader *l, MlcPool *pool);
// Positions the loader at `pos` samples into epoch `epoch` (pos <= records).
void mlc_loader_seek(MlcLoader *l, int64_t epoch, int64_t pos);
// The next batch of the current epoch; size 0 at its end (then the loader
// moves to epoch + 1 at position 0). The batch stays valid until the next call.
int64_t mlc_loader_next(MlcLoader *l, MlcBatch *b);
// The batch the next mlc_loader_next will hand out, in the buffers it will
// hand it out in (formed now unless the prefetch thread has), without
// moving the cursor: a device uploads it while the current step computes.
// Its size; 0 at the end of the epoch (nothing is peeked across it). The
// current batch stays valid.
int64_t mlc_loader_peek(MlcLoader *l, MlcBatch *b);
int64_t mlc_loader_epoch(const MlcLoader *l);
int64_t mlc_loader_pos(const MlcLoader *l);
int64_t mlc_loader_batches(const MlcLoader *l); // per epoch

#endif
