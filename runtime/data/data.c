// data.c — arrays read from data files, and the model's inputs bound to them.
//
// Readers (data_idx.c, data_npy.c, data_csv.c) give an MlcArray in the file's
// own element type. mlc_dataset_bind binds arrays to the model's inputs and
// validates everything once, before training starts:
//   * which elements each input reads: a CSV column selection of the
//     input's source picks exactly those columns (by index or header name,
//     from whatever CSV file feeds the input); otherwise an input reads its
//     own file's whole record, or, when one file feeds several inputs, the
//     next elements in input order;
//   * record counts agree, record widths match each input's per-sample
//     shape, symbols agree between inputs and stay within the model's limits
//     (a position table's rows);
//   * every value an input reads is valid after conversion to the input's
//     dtype: finite for float inputs (1e39 is finite in f64, not in f32),
//     integral and representable for integer inputs, and within the ranges
//     the model implies (class labels, or the value the loss's ignore_index
//     names; embedding rows).
// Every message names the file and, where there is one, the record (1-based).
// Conversion to the model's dtype (and scaling: integer data into a float
// input is multiplied by the source's scale, u8 pixels to [0, 1]) happens per
// batch in mlc_dataset_gather, so a 60,000-image u8 set stays 47 MB.
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/rt_util.h"
#include "dataset.h"
#include "mlc_rt.h"

size_t mlc_dtype_size(MlcDType dt) {
  static const size_t sz[] = {[MLC_F32] = 4, [MLC_F64] = 8, [MLC_I32] = 4,
                              [MLC_I64] = 8, [MLC_U8] = 1,  [MLC_BOOL] = 1};
  return (unsigned)dt < sizeof sz / sizeof sz[0] ? sz[dt] : 0;
}

const char *mlc_dtype_name(MlcDType dt) {
  static const char *nm[] = {[MLC_F32] = "f32", [MLC_F64] = "f64", [MLC_I32] = "i32",
                             [MLC_I64] = "i64", [MLC_U8] = "u8",   [MLC_BOOL] = "bool"};
  return (unsigned)dt < sizeof nm / sizeof nm[0] ? nm[dt] : "?";
}

int64_t mlc_array_records(const MlcArray *a) { return a->dims[0]; }

int64_t mlc_array_record_size(const MlcArray *a) {
  int64_t n = 1;
  for (int k = 1; k < a->rank; k++)
    if (!rt_mul(&n, a->dims[k])) return -1;
  return n;
}

double mlc_array_get(const MlcArray *a, int64_t i) {
  switch (a->dtype) {
  case MLC_F32: return ((const float *)a->data)[i];
  case MLC_F64: return ((const double *)a->data)[i];
  case MLC_I32: return ((const int32_t *)a->data)[i];
  case MLC_I64: return (double)((const int64_t *)a->data)[i];
  case MLC_U8:
  case MLC_BOOL: return ((const uint8_t *)a->data)[i];
  }
  return 0;
}

void mlc_array_free(MlcArray *a) {
  free(a->path);
  free(a->data);
  memset(a, 0, sizeof *a);
}

MlcDataKind mlc_data_kind(const char *path) {
  unsigned char h[6] = {0};
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(h, 1, 6, f) : 0;
  if (f) fclose(f);
  if (n >= 2 && h[0] == 0x1f && h[1] == 0x8b) return MLC_DATA_IDX; // gzip'd IDX
  if (n >= 6 && !memcmp(h, "\x93NUMPY", 6)) return MLC_DATA_NPY;
  if (n >= 4 && !h[0] && !h[1]) return MLC_DATA_IDX;
  const char *dot = strrchr(path, '.');
  if (dot && (!strcmp(dot, ".csv") || !strcmp(dot, ".txt"))) return MLC_DATA_CSV;
  return MLC_DATA_NONE;
}

int mlc_read_any(const char *path, MlcDataKind kind, int csv_header, MlcArray *out, char *err,
                 size_t errlen) {
  memset(out, 0, sizeof *out);
  if (rt_check_input(path, err, errlen)) return -1;
  MlcDataKind k = mlc_data_kind(path);
  if (k == MLC_DATA_NONE) k = kind;
  switch (k) {
  case MLC_DATA_IDX: return mlc_read_idx(path, out, err, errlen);
  case MLC_DATA_NPY: return mlc_read_npy(path, out, err, errlen);
  case MLC_DATA_CSV: return mlc_read_csv(path, csv_header, out, err, errlen);
  case MLC_DATA_NONE: break;
  }
  return rt_err(err, errlen, "%s: unknown data format (not IDX, NPY or .csv)", path);
}

// ---- per-sample sizes ---------------------------------------------------------------------

int64_t mlc_input_numel(const MlcInputDesc *in, const int64_t *syms) {
  int64_t n = 1;
  for (int k = 0; k < in->rank; k++)
    if (!rt_mul(&n, in->dims[k] < 0 ? syms[in->sym[k]] : in->dims[k])) return -1;
  return n;
}

int64_t mlc_output_numel(const MlcModel *m, const int64_t *syms) {
  int64_t n = m->num_out;
  for (int k = 0; k < m->nout_syms; k++)
    if (!rt_mul(&n, syms[m->out_syms[k]])) return -1;
  return n;
}

static int64_t in_numel(const MlcDataset *ds, const MlcInputDesc *in) {
  return mlc_input_numel(in, ds->syms);
}

// The array input i reads: its CSV columns, or its file.
static const MlcArray *in_array(const MlcDataset *ds, int i) {
  return ds->picked[i].data ? &ds->picked[i] : &ds->arrays[ds->src[i]];
}

static const MlcDataSource *in_source(const MlcModel *m, int i, bool test) {
  return test ? &m->inputs[i].test : &m->inputs[i].train;
}

// "f32[28, 28]", "i64[T = 8]" for messages.
static const char *in_type(const MlcDataset *ds, const MlcInputDesc *in, char *buf, size_t len) {
  RtBuf b = {buf, len, 0};
  buf[0] = 0;
  rt_bprintf(&b, "%s[", mlc_dtype_name(in->dtype));
  for (int k = 0; k < in->rank; k++) {
    if (in->dims[k] < 0)
      rt_bprintf(&b, "%s%s = %lld", k ? ", " : "", ds->model->syms[in->sym[k]],
                 (long long)ds->syms[in->sym[k]]);
    else
      rt_bprintf(&b, "%s%lld", k ? ", " : "", (long long)in->dims[k]);
  }
  rt_bprintf(&b, "]");
  return buf;
}

// ---- CSV column selection -------------------------------------------------------------------

// Picks input i's selected columns from its CSV array into ds->picked[i].
static int pick_columns(MlcDataset *ds, int i, const MlcDataSource *s, char *err, size_t errlen) {
  const MlcArray *a = &ds->arrays[ds->src[i]];
  if (a->kind != MLC_DATA_CSV || s->ncols <= 0 || !s->cols) return 0;
  bool names = false;
  for (int k = 0; k < s->ncols; k++) names |= s->cols[k] < 0;
  MlcCsvHeader h = {0};
  if (names && !s->header)
    return rt_err(err, errlen, "%s: input %s selects columns by name, but its source has no "
                  "header", a->path, ds->model->inputs[i].name);
  if (names && mlc_csv_header(a->path, &h, err, errlen)) return -1;
  int64_t *idx = malloc((size_t)s->ncols * sizeof *idx);
  int rc = idx ? 0 : rt_err(err, errlen, "%s: out of memory", a->path);
  if (!rc)
    rc = mlc_csv_resolve(a->path, names ? &h : NULL, mlc_array_record_size(a), s->ncols, s->cols,
                         s->colnames, idx, NULL, err, errlen);
  if (!rc) rc = mlc_array_select(a, s->ncols, idx, &ds->picked[i], err, errlen);
  free(idx);
  mlc_csv_header_free(&h);
  return rc;
}

// ---- symbols ----------------------------------------------------------------------------------

// The value input `in` gives the symbol at its dim k, from the record shape
// of a; -1 with a message when the shape cannot give it.
static int sym_value(const MlcDataset *ds, const MlcInputDesc *in, const MlcArray *a, int k,
                     int64_t *v, char *err, size_t errlen) {
  int nsym = 0;
  int64_t known = 1;
  for (int d = 0; d < in->rank; d++) {
    if (in->dims[d] < 0) nsym++;
    else if (!rt_mul(&known, in->dims[d])) known = 0;
  }
  int64_t rs = mlc_array_record_size(a);
  if (a->rank - 1 == in->rank) *v = a->dims[k + 1];
  else if (nsym == 1 && known > 0 && rs >= 0 && rs % known == 0) *v = rs / known;
  else
    return rt_err(err, errlen, "%s: records of %d dims cannot give input %s's %s", a->path,
                  a->rank - 1, in->name, ds->model->syms[in->sym[k]]);
  return 0;
}

// Binds the model's symbolic per-sample dims from the record shapes: an
// input's record of the same rank gives each symbol its dim; a flat record
// (CSV, or a rank that differs) with one symbol gives what the constant dims
// leave. The first input to bind a symbol sets it; a later one that differs
// is an error naming both files, and so is a value above the model's limit.
static int bind_syms(MlcDataset *ds, bool shared, char *err, size_t errlen) {
  const MlcModel *m = ds->model;
  int from[MLC_MAX_SYMS];
  for (int k = 0; k < MLC_MAX_SYMS; k++) ds->syms[k] = -1, from[k] = -1;
  for (int i = 0; i < ds->ninputs; i++) {
    const MlcInputDesc *in = &m->inputs[i];
    const MlcArray *a = in_array(ds, i);
    for (int k = 0; k < in->rank; k++) {
      if (in->dims[k] >= 0) continue;
      if (shared)
        return rt_err(err, errlen, "%s: input %s has a symbolic dim: give one file per input",
                      a->path, in->name);
      int64_t v = 0;
      int s = in->sym[k];
      if (sym_value(ds, in, a, k, &v, err, errlen)) return -1;
      if (from[s] >= 0 && ds->syms[s] != v)
        return rt_err(err, errlen, "%s: input %s has %s = %lld, but %s gave %s = %lld", a->path,
                      in->name, m->syms[s], (long long)v, in_array(ds, from[s])->path, m->syms[s],
                      (long long)ds->syms[s]);
      if (v < 1)
        return rt_err(err, errlen, "%s: input %s has %s = %lld", a->path, in->name, m->syms[s],
                      (long long)v);
      if (m->sym_min && v < m->sym_min[s])
        return rt_err(err, errlen, "%s: input %s has %s = %lld, but the model needs %s >= %lld "
                      "(%s)", a->path, in->name, m->syms[s], (long long)v, m->syms[s],
                      (long long)m->sym_min[s], m->sym_min_what ? m->sym_min_what[s] : "");
      if (m->sym_max && m->sym_max[s] > 0 && v > m->sym_max[s])
        return rt_err(err, errlen, "%s: input %s has %s = %lld, but the model takes %s <= %lld "
                      "(%s)", a->path, in->name, m->syms[s], (long long)v, m->syms[s],
                      (long long)m->sym_max[s], m->sym_max_what ? m->sym_max_what[s] : "");
      ds->syms[s] = v, from[s] = i;
    }
  }
  return 0;
}

// ---- shapes ----------------------------------------------------------------------------------

// Record counts agree between every array an input reads.
static int check_records(MlcDataset *ds, char *err, size_t errlen) {
  const MlcArray *a0 = in_array(ds, 0);
  ds->n = mlc_array_records(a0);
  for (int i = 1; i < ds->ninputs; i++) {
    const MlcArray *a = in_array(ds, i);
    if (mlc_array_records(a) != ds->n)
      return rt_err(err, errlen, "%s: %lld records, but %s has %lld", a->path,
                    (long long)mlc_array_records(a), a0->path, (long long)ds->n);
  }
  if (ds->n == 0) return rt_err(err, errlen, "%s: no records", a0->path);
  return 0;
}

// Sets each input's first element and checks record widths: a picked or
// own array must hold exactly the input's sample; inputs sharing one file
// without a selection take its elements in input order, exactly filling the
// record when no input selects columns of it.
static int check_widths(MlcDataset *ds, bool shared, char *err, size_t errlen) {
  const MlcModel *m = ds->model;
  char tb[160];
  int64_t off = 0, rs0 = mlc_array_record_size(&ds->arrays[0]);
  bool any_pick = false;
  for (int i = 0; i < ds->ninputs; i++) {
    const MlcInputDesc *in = &m->inputs[i];
    const MlcArray *a = in_array(ds, i);
    int64_t rs = mlc_array_record_size(a), w = in_numel(ds, in);
    if (rs < 0 || w < 0) return rt_err(err, errlen, "%s: records are too large", a->path);
    bool own = !shared || ds->picked[i].data;
    any_pick |= ds->picked[i].data != NULL;
    ds->col[i] = own ? 0 : off;
    if (!own) off += w;
    else if (rs != w)
      return rt_err(err, errlen, "%s: record 1: %lld values, but input %s: %s needs %lld%s", a->path,
                    (long long)rs, in->name, in_type(ds, in, tb, sizeof tb), (long long)w,
                    ds->picked[i].data ? " (its selected columns)" : "");
  }
  if (shared && (any_pick ? off > rs0 : off != rs0))
    return rt_err(err, errlen, "%s: record 1: %lld values, but the model's %d inputs need %lld%s",
                  ds->arrays[0].path, (long long)rs0, ds->ninputs, (long long)off,
                  any_pick ? " besides the selected columns" : "");
  return 0;
}

// ---- values ----------------------------------------------------------------------------------

static bool is_float(MlcDType dt) { return dt == MLC_F32 || dt == MLC_F64; }

// The largest magnitude an element of dt can hold (for the no-scan test).
static double dtype_max(MlcDType dt) {
  switch (dt) {
  case MLC_U8: return 255;
  case MLC_BOOL: return 1;
  case MLC_I32: return 2147483648.0;
  default: return INFINITY;
  }
}

// Why value v (already scaled) is not valid for input `in`, or NULL.
static const char *bad_value(const MlcInputDesc *in, double v, char *buf, size_t len) {
  if (isnan(v)) return "NaN";
  if (is_float(in->dtype)) {
    if (in->dtype == MLC_F32 ? !isfinite((float)v) : !isfinite(v))
      return snprintf(buf, len, "%g, which is not finite in %s", v, mlc_dtype_name(in->dtype)), buf;
    return NULL;
  }
  static const double lo[] = {[MLC_I32] = -2147483648.0, [MLC_I64] = -9223372036854775808.0,
                              [MLC_U8] = 0, [MLC_BOOL] = 0};
  static const double hi[] = {[MLC_I32] = 2147483647.0, [MLC_I64] = 9223372036854775807.0,
                              [MLC_U8] = 255, [MLC_BOOL] = 1};
  if (v != floor(v)) return snprintf(buf, len, "%g, not an integer", v), buf;
  if (v < lo[in->dtype] || v >= hi[in->dtype] + 1)
    return snprintf(buf, len, "%g, outside %s", v, mlc_dtype_name(in->dtype)), buf;
  return NULL;
}

// Checks value v of element j of record r of input i: valid for the dtype,
// a label within 0..num_classes-1 (or its ignore_value), an index within
// 0..value_limit-1.
static int check_value(const MlcDataset *ds, int i, int64_t r, int64_t j, double v, char *err,
                       size_t errlen) {
  const MlcInputDesc *in = &ds->model->inputs[i];
  const char *path = in_array(ds, i)->path;
  char why[96];
  const char *bad = bad_value(in, v, why, sizeof why);
  if (bad)
    return rt_err(err, errlen, "%s: record %lld: value %lld of input %s is %s", path,
                  (long long)r + 1, (long long)j + 1, in->name, bad);
  bool ignored = in->has_ignore && v == (double)in->ignore_value;
  if (in->num_classes && !ignored && (v < 0 || v >= (double)in->num_classes)) {
    if (in->has_ignore)
      return rt_err(err, errlen, "%s: record %lld: label %g is out of range 0..%lld and not the "
                    "ignore_index %lld", path, (long long)r + 1, v,
                    (long long)in->num_classes - 1, (long long)in->ignore_value);
    return rt_err(err, errlen, "%s: record %lld: label %g is out of range 0..%lld", path,
                  (long long)r + 1, v, (long long)in->num_classes - 1);
  }
  if (in->value_limit && (v < 0 || v >= (double)in->value_limit))
    return rt_err(err, errlen, "%s: record %lld: value %lld of input %s is %g, out of range "
                  "0..%lld (%s)", path, (long long)r + 1, (long long)j + 1, in->name, v,
                  (long long)in->value_limit - 1, in->limit_what ? in->limit_what : "");
  return 0;
}

// Checks every value input i reads, unless its source dtype cannot hold a
// bad one (u8 pixels scaled into f32).
static int check_values(const MlcDataset *ds, int i, char *err, size_t errlen) {
  const MlcInputDesc *in = &ds->model->inputs[i];
  const MlcArray *a = in_array(ds, i);
  int64_t rs = mlc_array_record_size(a), w = in_numel(ds, in);
  double sc = ds->scale[i];
  if (is_float(in->dtype) && !is_float(a->dtype) && isfinite((float)(dtype_max(a->dtype) * sc)))
    return 0;
  for (int64_t r = 0; r < ds->n; r++)
    for (int64_t j = 0; j < w; j++)
      if (check_value(ds, i, r, j, mlc_array_get(a, r * rs + ds->col[i] + j) * sc, err, errlen))
        return -1;
  return 0;
}

// ---- binding ----------------------------------------------------------------------------------

static int bind_inputs(MlcDataset *ds, bool test, char *err, size_t errlen) {
  const MlcModel *m = ds->model;
  bool shared = ds->narrays == 1 && ds->ninputs > 1;
  for (int i = 0; i < ds->ninputs; i++) {
    const MlcDataSource *s = in_source(m, i, test);
    ds->src[i] = ds->narrays == 1 ? 0 : i;
    if (pick_columns(ds, i, s, err, errlen)) return -1;
    bool int_src = !is_float(in_array(ds, i)->dtype);
    ds->scale[i] = is_float(m->inputs[i].dtype) && int_src && s->scale ? s->scale : 1;
  }
  if (bind_syms(ds, shared, err, errlen) || check_records(ds, err, errlen) ||
      check_widths(ds, shared, err, errlen))
    return -1;
  for (int i = 0; i < ds->ninputs; i++)
    if (check_values(ds, i, err, errlen)) return -1;
  return 0;
}

int mlc_dataset_bind(MlcDataset *ds, const MlcModel *m, int ninputs, MlcArray *arrays,
                     int narrays, bool test, char *err, size_t errlen) {
  memset(ds, 0, sizeof *ds);
  ds->model = m;
  ds->ninputs = ninputs;
  ds->narrays = narrays;
  // ownership moves: the caller's arrays are emptied (freeing them again is harmless)
  for (int a = 0; a < narrays && a < MLC_MAX_INPUTS; a++) ds->arrays[a] = arrays[a];
  for (int a = 0; a < narrays && a < MLC_MAX_INPUTS; a++) memset(&arrays[a], 0, sizeof arrays[a]);
  if (ninputs < 1 || ninputs > MLC_MAX_INPUTS || narrays < 1 || narrays > MLC_MAX_INPUTS ||
      (narrays != 1 && narrays != ninputs)) {
    for (int a = MLC_MAX_INPUTS; a < narrays; a++) mlc_array_free(&arrays[a]);
    mlc_dataset_free(ds);
    return rt_err(err, errlen, "%d data files given, but the model reads %d inputs (give one file "
                  "per input, comma-separated, or one file holding all)", narrays, ninputs);
  }
  if (bind_inputs(ds, test, err, errlen)) {
    mlc_dataset_free(ds);
    return -1;
  }
  return 0;
}

int mlc_dataset_open(MlcDataset *ds, const MlcModel *m, int ninputs, const char *const *paths,
                     int npaths, bool test, char *err, size_t errlen) {
  memset(ds, 0, sizeof *ds);
  if (npaths < 1 || npaths > MLC_MAX_INPUTS || ninputs < 1 || ninputs > MLC_MAX_INPUTS)
    return rt_err(err, errlen, "%d data files given, but the model reads %d inputs", npaths, ninputs);
  MlcArray arrays[MLC_MAX_INPUTS] = {{0}};
  for (int a = 0; a < npaths; a++) {
    const MlcDataSource *s = in_source(m, a < ninputs ? a : 0, test);
    if (mlc_read_any(paths[a], s->kind, s->header, &arrays[a], err, errlen)) {
      for (int b = 0; b < a; b++) mlc_array_free(&arrays[b]);
      return -1;
    }
  }
  return mlc_dataset_bind(ds, m, ninputs, arrays, npaths, test, err, errlen);
}

void mlc_dataset_free(MlcDataset *ds) {
  for (int a = 0; a < ds->narrays && a < MLC_MAX_INPUTS; a++) mlc_array_free(&ds->arrays[a]);
  for (int i = 0; i < MLC_MAX_INPUTS; i++) mlc_array_free(&ds->picked[i]);
  ds->narrays = 0;
}

// ---- batches ----------------------------------------------------------------------------------

size_t mlc_dataset_sample_bytes(const MlcDataset *ds, int i) {
  const MlcInputDesc *in = &ds->model->inputs[i];
  return (size_t)in_numel(ds, in) * mlc_dtype_size(in->dtype);
}

static void put(MlcDType dt, void *dst, int64_t j, double v) {
  switch (dt) {
  case MLC_F32: ((float *)dst)[j] = (float)v; break;
  case MLC_F64: ((double *)dst)[j] = v; break;
  case MLC_I32: ((int32_t *)dst)[j] = (int32_t)v; break;
  case MLC_I64: ((int64_t *)dst)[j] = (int64_t)v; break;
  case MLC_U8:
  case MLC_BOOL: ((uint8_t *)dst)[j] = (uint8_t)v; break;
  }
}

void mlc_dataset_gather(const MlcDataset *ds, int i, const int64_t *idx, int64_t b, void *dst) {
  const MlcInputDesc *in = &ds->model->inputs[i];
  const MlcArray *a = in_array(ds, i);
  int64_t rs = mlc_array_record_size(a), w = in_numel(ds, in), col = ds->col[i];
  double sc = ds->scale[i];
  // images, the hot path: each of the 256 byte values converted once, the
  // same (float)(v * scale) the general path computes
  float lut[256];
  if (a->dtype == MLC_U8 && in->dtype == MLC_F32) {
    for (int v = 0; v < 256; v++) lut[v] = (float)((double)v * sc);
    for (int64_t s = 0; s < b && s < 2; s++) // the first two records' lines (the loop prefetches 2 ahead)
      for (int64_t j = 0; j < w; j += 64) __builtin_prefetch((const uint8_t *)a->data + idx[s] * rs + col + j);
  }
  for (int64_t s = 0; s < b; s++) {
    int64_t base = idx[s] * rs + col;
    if (a->dtype == MLC_U8 && in->dtype == MLC_F32) {
      const uint8_t *p = (const uint8_t *)a->data + base;
      float *q = (float *)dst + s * w;
      if (s + 2 < b) // a later (shuffled, so far away) record's lines, while this one converts
        for (int64_t j = 0; j < w; j += 64) __builtin_prefetch((const uint8_t *)a->data + idx[s + 2] * rs + col + j);
      mlc_gather_u8_f32(p, q, w, sc, lut);
      continue;
    }
    if (a->dtype == MLC_I64 && in->dtype == MLC_I64) { // token ids: exact beyond 2^53
      memcpy((int64_t *)dst + s * w, (const int64_t *)a->data + base, (size_t)w * 8);
      continue;
    }
    for (int64_t j = 0; j < w; j++) put(in->dtype, dst, s * w + j, mlc_array_get(a, base + j) * sc);
  }
}

uint32_t mlc_dataset_crc(const MlcDataset *ds) {
  uLong c = crc32(0L, Z_NULL, 0);
  for (int k = 0; k < ds->narrays; k++) {
    const MlcArray *a = &ds->arrays[k];
    int64_t head[1 + MLC_MAX_RANK] = {a->dtype};
    for (int d = 0; d < a->rank; d++) head[1 + d] = a->dims[d];
    c = crc32(c, (const Bytef *)head, (uInt)(sizeof(int64_t) * (size_t)(1 + a->rank)));
    size_t n = (size_t)mlc_array_records(a) * (size_t)mlc_array_record_size(a) * mlc_dtype_size(a->dtype);
    const Bytef *p = a->data;
    for (size_t off = 0; off < n; off += 1u << 30)
      c = crc32(c, p + off, (uInt)(n - off < (1u << 30) ? n - off : 1u << 30));
  }
  return (uint32_t)c;
}

void mlc_dataset_describe(const MlcDataset *ds, char *buf, size_t len) {
  RtBuf b = {buf, len, 0};
  if (len) buf[0] = 0;
  for (int i = 0; i < ds->narrays; i++)
    rt_bprintf(&b, "%s%s (%lld records)", i ? "," : "", ds->arrays[i].path,
               (long long)mlc_array_records(&ds->arrays[i]));
}
