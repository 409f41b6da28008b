// mlc_data.h — the runtime's data-file readers: IDX, NPY, CSV, and the CSV
// column selection of a model's data sources.
//
// The auxiliary layer of libmlc_rt (mlc_rt.h says how the headers divide):
// the generated program reads its data through it, and the compiler may
// include it ("runtime/include/mlc_data.h") and link libmlc_rt for the same
// semantics at compile time: `mlc check` resolves a csv(...) source's
// columns with mlc_csv_header + mlc_csv_resolve, and `mlc run --interp` can
// read its NPY inputs with mlc_read_npy.
//
// Every reader validates what it reads (magic, header, sizes computed with
// overflow checks, truncation, trailing bytes, finite values in text) and
// reports a problem as one line naming the file and, where there is one, the
// record (1-based) or field. A directory given as a file is refused as such.
#ifndef MLC_DATA_H
#define MLC_DATA_H

#include <stdint.h>
#include <stdio.h>

#include "mlc_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

// A dense array as read from a file: dims[0] records of dims[1..rank) each,
// kept in the file's own element type (u8 images stay u8).
typedef struct MlcArray {
  char *path; // the file, for messages
  MlcDataKind kind; // the format it was read from (MLC_DATA_NONE: predict's lines)
  MlcDType dtype;
  int rank;   // including the record dim, 1..MLC_MAX_RANK
  int64_t dims[MLC_MAX_RANK];
  void *data;
} MlcArray;

int64_t mlc_array_records(const MlcArray *a);
int64_t mlc_array_record_size(const MlcArray *a); // elements per record
double mlc_array_get(const MlcArray *a, int64_t flat_index);
void mlc_array_free(MlcArray *a);

// IDX: magic 00 00 TT RR, RR big-endian u32 dims, big-endian data; gzip'd or
// plain (detected; corrupt gzip data is reported as such). Types u8 (08),
// i8 (09), i16 (0B), i32 (0C), f32 (0D), f64 (0E); i8/i16 widen to i32.
int mlc_read_idx(const char *path, MlcArray *out, char *err, size_t errlen);
// NPY v1/v2/v3, C order, little-endian or byte-sized <f4 <f8 <i4 <i8 |u1 |b1.
int mlc_read_npy(const char *path, MlcArray *out, char *err, size_t errlen);
// CSV: comma-separated numbers, one record a line (blank lines skipped), an
// optional header line (the first non-blank one); every record must have
// the same number of fields. The result is f64 [records, fields].
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

// ---- CSV columns -------------------------------------------------------------------------
// The first non-blank line of a CSV file split at commas, each field with
// surrounding blanks and double quotes removed: the header's names, or
// (for a file without a header) just the field count.
typedef struct MlcCsvHeader {
  int n;
  char **names;
} MlcCsvHeader;

int mlc_csv_header(const char *path, MlcCsvHeader *h, char *err, size_t errlen);
void mlc_csv_header_free(MlcCsvHeader *h);

// Resolves a selection of n columns (cols[k] >= 0: an index; cols[k] == -1:
// the header name colnames[k]) against a file of nfields columns with header
// h (NULL: the file has none) into out[k]. -1 with a message naming the file
// and the column that is out of range or not in the header; *bad (may be
// NULL) is then the index of that column in the selection.
int mlc_csv_resolve(const char *path, const MlcCsvHeader *h, int64_t nfields, int n,
                    const int64_t *cols, const char *const *colnames, int64_t *out,
                    int *bad, char *err, size_t errlen);

// out = the columns idx[0..n) of every record of a, in that order (a is a
// [records, fields] array as mlc_read_csv gives; out keeps its path).
int mlc_array_select(const MlcArray *a, int n, const int64_t *idx, MlcArray *out,
                     char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
