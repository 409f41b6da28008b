// data.c — arrays read from data files, and the model's inputs bound to them.
//
// Readers (data_idx.c, data_npy.c, data_csv.c) give an MlcArray in the file's
// own element type. mlc_dataset_open binds files to the model's inputs and
// validates everything once, before training starts: record counts agree,
// record widths match each input's per-sample shape, labels lie in
// 0..num_classes-1, integer inputs get integral values, float values are
// finite. Every message names the file and, where there is one, the record
// (1-based). Conversion to the model's dtype (and scaling, e.g. u8 pixels to
// [0, 1]) happens per batch in mlc_dataset_gather, so a 60,000-image u8 set
// stays 47 MB.
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlc_rt.h"
#include "core/rt_util.h"

size_t mlc_dtype_size(MlcDType dt) {
  static const size_t sz[] = {[MLC_F32] = 4, [MLC_F64] = 8, [MLC_I32] = 4,
                              [MLC_I64] = 8, [MLC_U8] = 1,  [MLC_BOOL] = 1};
  return sz[dt];
}

const char *mlc_dtype_name(MlcDType dt) {
  static const char *nm[] = {[MLC_F32] = "f32", [MLC_F64] = "f64", [MLC_I32] = "i32",
                             [MLC_I64] = "i64", [MLC_U8] = "u8",   [MLC_BOOL] = "bool"};
  return nm[dt];
}

int64_t mlc_array_records(const MlcArray *a) { return a->dims[0]; }

int64_t mlc_array_record_size(const MlcArray *a) {
  int64_t n = 1;
  for (int k = 1; k < a->rank; k++) n *= a->dims[k];
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
  MlcDataKind k = mlc_data_kind(path);
  if (k == MLC_DATA_NONE) k = kind;
  switch (k) {
  case MLC_DATA_IDX: return mlc_read_idx(path, out, err, errlen);
  case MLC_DATA_NPY: return mlc_read_npy(path, out, err, errlen);
  case MLC_DATA_CSV: return mlc_read_csv(path, csv_header, out, err, errlen);
  case MLC_DATA_NONE: break;
  }
  FILE *f = fopen(path, "rb");
  if (!f) return rt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  fclose(f);
  return rt_err(err, errlen, "%s: unknown data format (not IDX, NPY or .csv)", path);
}

// ---- binding and validation -------------------------------------------------------

int64_t mlc_input_numel(const MlcInputDesc *in, const int64_t *syms) {
  int64_t n = 1;
  for (int k = 0; k < in->rank; k++) n *= in->dims[k] < 0 ? syms[in->sym[k]] : in->dims[k];
  return n;
}

int64_t mlc_output_numel(const MlcModel *m, const int64_t *syms) {
  int64_t n = m->num_out;
  for (int k = 0; k < m->nout_syms; k++) n *= syms[m->out_syms[k]];
  return n;
}

static int64_t in_numel(const MlcDataset *ds, const MlcInputDesc *in) {
  return mlc_input_numel(in, ds->syms);
}

// "f32[28, 28]", "i64[T = 8]" for messages.
static const char *in_type(const MlcDataset *ds, const MlcInputDesc *in, char *buf, size_t len) {
  int o = snprintf(buf, len, "%s[", mlc_dtype_name(in->dtype));
  for (int k = 0; k < in->rank && o < (int)len; k++) {
    if (in->dims[k] < 0)
      o += snprintf(buf + o, len - (size_t)o, "%s%s = %lld", k ? ", " : "",
                    ds->model->syms[in->sym[k]], (long long)ds->syms[in->sym[k]]);
    else
      o += snprintf(buf + o, len - (size_t)o, "%s%lld", k ? ", " : "", (long long)in->dims[k]);
  }
  if (o < (int)len) snprintf(buf + o, len - (size_t)o, "]");
  return buf;
}

// Binds the model's symbolic per-sample dims from the record shapes: an
// input's record of the same rank gives each symbol its dim; a flat record
// (CSV, or a rank that differs) with one symbol gives what the constant dims
// leave. The first input to bind a symbol sets it; a later one that differs
// is an error naming both files.
static int bind_syms(MlcDataset *ds, bool shared, char *err, size_t errlen) {
  const MlcModel *m = ds->model;
  int from[MLC_MAX_RANK];
  for (int k = 0; k < MLC_MAX_RANK; k++) ds->syms[k] = -1, from[k] = -1;
  for (int i = 0; i < ds->ninputs; i++) {
    const MlcInputDesc *in = &m->inputs[i];
    const MlcArray *a = &ds->arrays[ds->src[i]];
    int nsym = 0;
    int64_t known = 1;
    for (int k = 0; k < in->rank; k++) {
      if (in->dims[k] < 0) nsym++;
      else known *= in->dims[k];
    }
    if (!nsym) continue;
    if (shared)
      return rt_err(err, errlen, "%s: input %s has a symbolic dim: give one file per input", a->path,
                    in->name);
    for (int k = 0; k < in->rank; k++) {
      if (in->dims[k] >= 0) continue;
      int64_t v;
      if (a->rank - 1 == in->rank) v = a->dims[k + 1];
      else if (nsym == 1 && known > 0 && mlc_array_record_size(a) % known == 0)
        v = mlc_array_record_size(a) / known;
      else
        return rt_err(err, errlen, "%s: records of %d dims cannot give input %s's %s", a->path,
                      a->rank - 1, in->name, m->syms[in->sym[k]]);
      int s = in->sym[k];
      if (from[s] >= 0 && ds->syms[s] != v)
        return rt_err(err, errlen, "%s: input %s has %s = %lld, but %s gave %s = %lld", a->path,
                      in->name, m->syms[s], (long long)v, ds->arrays[ds->src[from[s]]].path,
                      m->syms[s], (long long)ds->syms[s]);
      if (v < 1)
        return rt_err(err, errlen, "%s: input %s has %s = %lld", a->path, in->name, m->syms[s],
                      (long long)v);
      ds->syms[s] = v, from[s] = i;
    }
  }
  return 0;
}

static bool is_float(MlcDType dt) { return dt == MLC_F32 || dt == MLC_F64; }

// Checks the values input i reads: finite, integral for integer inputs,
// within 0..num_classes-1 for labels.
static int check_values(const MlcDataset *ds, int i, char *err, size_t errlen) {
  const MlcInputDesc *in = &ds->model->inputs[i];
  const MlcArray *a = &ds->arrays[ds->src[i]];
  int64_t rs = mlc_array_record_size(a), w = in_numel(ds, in);
  bool fsrc = is_float(a->dtype), integral = !is_float(in->dtype);
  if (!fsrc && !in->num_classes) return 0;
  for (int64_t r = 0; r < ds->n; r++)
    for (int64_t j = 0; j < w; j++) {
      double v = mlc_array_get(a, r * rs + ds->col[i] + j);
      if (!isfinite(v))
        return rt_err(err, errlen, "%s: record %lld: value %lld of input %s is %s", a->path,
                      (long long)r + 1, (long long)j + 1, in->name, isnan(v) ? "NaN" : "infinite");
      if (integral && v != floor(v))
        return rt_err(err, errlen, "%s: record %lld: %g is not an integer (input %s is %s)",
                      a->path, (long long)r + 1, v, in->name, mlc_dtype_name(in->dtype));
      if (in->num_classes && (v < 0 || v >= (double)in->num_classes))
        return rt_err(err, errlen, "%s: record %lld: label %g is out of range 0..%lld", a->path,
                      (long long)r + 1, v, (long long)in->num_classes - 1);
    }
  return 0;
}

// Checks record counts and widths once the arrays and columns are set.
static int check_shapes(MlcDataset *ds, bool shared, char *err, size_t errlen) {
  const MlcModel *m = ds->model;
  char tb[96];
  ds->n = mlc_array_records(&ds->arrays[0]);
  for (int a = 1; a < ds->narrays; a++)
    if (mlc_array_records(&ds->arrays[a]) != ds->n)
      return rt_err(err, errlen, "%s: %lld records, but %s has %lld", ds->arrays[a].path,
                    (long long)mlc_array_records(&ds->arrays[a]), ds->arrays[0].path,
                    (long long)ds->n);
  int64_t need = 0;
  for (int i = 0; i < ds->ninputs; i++) need += in_numel(ds, &m->inputs[i]);
  for (int i = 0; i < ds->ninputs; i++) {
    const MlcInputDesc *in = &m->inputs[i];
    const MlcArray *a = &ds->arrays[ds->src[i]];
    int64_t rs = mlc_array_record_size(a), w = in_numel(ds, in);
    if (shared && rs != need)
      return rt_err(err, errlen,
                    "%s: record 1: %lld values, but the model's %d inputs need %lld (%s: %s from "
                    "column %lld, ...)",
                    a->path, (long long)rs, ds->ninputs, (long long)need, in->name,
                    in_type(ds, in, tb, sizeof tb), (long long)ds->col[i]);
    if (!shared && rs != w)
      return rt_err(err, errlen, "%s: record 1: %lld values, but input %s: %s needs %lld", a->path,
                    (long long)rs, in->name, in_type(ds, in, tb, sizeof tb), (long long)w);
    if (ds->col[i] < 0 || ds->col[i] + w > rs)
      return rt_err(err, errlen, "%s: input %s reads columns %lld..%lld, but records have %lld",
                    a->path, in->name, (long long)ds->col[i], (long long)(ds->col[i] + w - 1),
                    (long long)rs);
  }
  if (ds->n == 0) return rt_err(err, errlen, "%s: no records", ds->arrays[0].path);
  return 0;
}

int mlc_dataset_bind(MlcDataset *ds, const MlcModel *m, int ninputs, MlcArray *arrays,
                     int narrays, bool test, char *err, size_t errlen) {
  memset(ds, 0, sizeof *ds);
  ds->model = m;
  ds->ninputs = ninputs;
  ds->narrays = narrays;
  for (int a = 0; a < narrays; a++) ds->arrays[a] = arrays[a];
  bool shared = narrays == 1 && ninputs > 1;
  if (narrays != 1 && narrays != ninputs) {
    mlc_dataset_free(ds);
    return rt_err(err, errlen, "%d data files given, but the model reads %d inputs (give one file "
                  "per input, comma-separated, or one file holding all)", narrays, ninputs);
  }
  for (int i = 0; i < ninputs; i++) {
    const MlcDataSource *s = test ? &m->inputs[i].test : &m->inputs[i].train;
    ds->src[i] = narrays == 1 ? 0 : i;
    ds->col[i] = shared ? s->column : 0;
    ds->scale[i] = s->scale ? s->scale : 1;
  }
  if (bind_syms(ds, shared, err, errlen) || check_shapes(ds, shared, err, errlen)) {
    mlc_dataset_free(ds);
    return -1;
  }
  for (int i = 0; i < ninputs; i++)
    if (check_values(ds, i, err, errlen)) {
      mlc_dataset_free(ds);
      return -1;
    }
  return 0;
}

int mlc_dataset_open(MlcDataset *ds, const MlcModel *m, int ninputs, const char *const *paths,
                     int npaths, bool test, char *err, size_t errlen) {
  memset(ds, 0, sizeof *ds);
  if (npaths < 1 || npaths > 8 || ninputs > 8)
    return rt_err(err, errlen, "%d data files given, but the model reads %d inputs", npaths, ninputs);
  MlcArray arrays[8] = {{0}};
  for (int a = 0; a < npaths; a++) {
    const MlcDataSource *s = test ? &m->inputs[a < ninputs ? a : 0].test
                                  : &m->inputs[a < ninputs ? a : 0].train;
    if (mlc_read_any(paths[a], s->kind, s->header, &arrays[a], err, errlen)) {
      for (int b = 0; b < a; b++) mlc_array_free(&arrays[b]);
      return -1;
    }
  }
  return mlc_dataset_bind(ds, m, ninputs, arrays, npaths, test, err, errlen);
}

void mlc_dataset_free(MlcDataset *ds) {
  for (int a = 0; a < ds->narrays; a++) mlc_array_free(&ds->arrays[a]);
  ds->narrays = 0;
}

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
  const MlcArray *a = &ds->arrays[ds->src[i]];
  int64_t rs = mlc_array_record_size(a), w = in_numel(ds, in), col = ds->col[i];
  bool scaled = is_float(in->dtype) && ds->scale[i] != 1;
  double sc = ds->scale[i];
  for (int64_t s = 0; s < b; s++) {
    int64_t base = idx[s] * rs + col;
    if (a->dtype == MLC_U8 && in->dtype == MLC_F32) { // images: the hot path
      const uint8_t *p = (const uint8_t *)a->data + base;
      float *q = (float *)dst + s * w;
      for (int64_t j = 0; j < w; j++) q[j] = (float)((double)p[j] * sc);
      continue;
    }
    for (int64_t j = 0; j < w; j++) {
      double v = mlc_array_get(a, base + j);
      put(in->dtype, dst, s * w + j, scaled ? v * sc : v);
    }
  }
}
