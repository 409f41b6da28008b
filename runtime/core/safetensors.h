// safetensors.h — reading and writing safetensors files, the checkpoint and
// test-data format of the runtime (libmlc_rt).
//
// A file is: an 8-byte little-endian header length N; N bytes of JSON
//   {"__metadata__": {"key": "value", ...},
//    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
// padded with spaces; then the data region, each tensor's bytes row-major,
// little-endian, at [begin, end) relative to the start of the region.
//
// One opaque handle (MlcSt) holds a set of named tensors and the string
// metadata. mlc_st_open reads and validates a whole file (every problem is
// an error naming the file and, where there is one, the tensor); mlc_st_new
// starts an empty set; mlc_st_add / mlc_st_set_metadata add to either; and
// mlc_st_save writes the set atomically (temporary file in the same
// directory, fsync, rename, fsync of the directory), names sorted, header
// padded to a multiple of 8 bytes. Errors go to a caller buffer (err,
// errlen); functions return NULL or -1 on failure, never exit.
#ifndef MLC_SAFETENSORS_H
#define MLC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/abi.h"

// The format allows any rank; mlc's tensors have at most MLC_MAX_RANK dims.
enum { MLC_ST_MAX_RANK = MLC_MAX_RANK };

typedef enum {
  MLC_ST_F32,  // "F32"
  MLC_ST_F64,  // "F64"
  MLC_ST_I32,  // "I32"
  MLC_ST_I64,  // "I64"
  MLC_ST_U8,   // "U8"
  MLC_ST_BOOL, // "BOOL", one byte, 0 or 1
  MLC_ST_F16,  // "F16", IEEE binary16
  MLC_ST_BF16, // "BF16", the top half of a binary32
} MlcStDType;

// One tensor of a set. `data` points at nbytes = numel * itemsize bytes,
// owned by the set; valid until mlc_st_close.
typedef struct MlcStTensor {
  const char *name;
  MlcStDType dtype;
  int rank; // 0: scalar, numel 1
  int64_t shape[MLC_ST_MAX_RANK];
  int64_t numel;
  const void *data;
  size_t nbytes;
} MlcStTensor;

typedef struct MlcSt MlcSt;

const char *mlc_st_dtype_name(MlcStDType dt); // "F32", ...
size_t mlc_st_dtype_size(MlcStDType dt);      // bytes per element

// Reads and validates `path`. NULL on failure, with a message such as
//   data/x.safetensors: tensor 'fc1.w': data_offsets [0, 12] hold 12 bytes,
//   but F32 [2, 3] needs 24
MlcSt *mlc_st_open(const char *path, char *err, size_t errlen);
// The same over a buffer (copied); `label` stands for the file in messages.
MlcSt *mlc_st_parse(const char *label, const void *buf, size_t len, char *err,
                    size_t errlen);
// An empty set to fill and save.
MlcSt *mlc_st_new(void);
void mlc_st_close(MlcSt *st);

// Tensors in name order (bytewise).
int mlc_st_count(const MlcSt *st);
const MlcStTensor *mlc_st_at(const MlcSt *st, int i);
const MlcStTensor *mlc_st_find(const MlcSt *st, const char *name);

// Metadata, in key order; mlc_st_metadata returns NULL for a missing key.
int mlc_st_metadata_count(const MlcSt *st);
void mlc_st_metadata_at(const MlcSt *st, int i, const char **key,
                        const char **value);
const char *mlc_st_metadata(const MlcSt *st, const char *key);

// Converts every element of t to double (f16/bf16 exactly; i64 beyond 2^53
// rounds). `out` holds t->numel values.
void mlc_st_to_f64(const MlcStTensor *t, double *out);

// Adds a tensor (the data, nbytes = numel * itemsize, is copied); a tensor
// of the same name is replaced. -1 with a message for a bad name, rank or
// shape.
int mlc_st_add(MlcSt *st, const char *name, MlcStDType dt, int rank,
               const int64_t *shape, const void *data, char *err,
               size_t errlen);
// Sets (or replaces) one metadata entry.
int mlc_st_set_metadata(MlcSt *st, const char *key, const char *value,
                        char *err, size_t errlen);
// Writes the set to `path` atomically; -1 with a message naming the path.
int mlc_st_save(const MlcSt *st, const char *path, char *err, size_t errlen);

#endif
