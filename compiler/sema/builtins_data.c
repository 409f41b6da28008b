// builtins_data.c — the data sources of train blocks: idx(...), csv(...),
// npy(...) (the DataSource contract is in builtins.h).
//
// Checking a source means checking its arguments and, when the file can be
// read at compile time, reading only its header to learn the element dtype,
// the record count and the per-record dims, so that sema can compare them
// with the model's inputs before anything runs. A missing file is not an
// error (the record shape stays unknown); a file that exists but is not what
// the call says it is (bad magic, unsupported dtype, truncated header) is.
//
// Paths are tried as written (relative to the working directory), then, if
// relative, relative to the folder of the .model file that names them.
#include "builtins_internal.h"

#include "runtime/include/mlc_data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

// ---- paths -------------------------------------------------------------------------
static bool is_file(const char *p, bool *isdir) {
  struct stat st;
  if (stat(p, &st) != 0) return false;
  *isdir = S_ISDIR(st.st_mode);
  return true;
}

// The readable file for `path`, or NULL. Reports an error (and sets *bad)
// only for a directory.
static const char *resolve(Args *g, const char *path, Span sp, bool *bad) {
  bool isdir = false;
  const char *cand = NULL, *slash;
  if (is_file(path, &isdir)) {
    cand = path;
  } else if (path[0] != '/' && sp.file && sp.file->path &&
             (slash = strrchr(sp.file->path, '/'))) {
    const char *alt = arena_printf(g->a, "%.*s/%s", (int)(slash - sp.file->path),
                                   sp.file->path, path);
    if (is_file(alt, &isdir)) cand = alt;
  }
  if (cand && isdir) {
    diag_error(g->c->diags, sp, "data file %s is a directory", cand);
    *bad = true;
    return NULL;
  }
  return cand;
}

static void set_record(DataSource *ds, int rank, const int64_t *dims) {
  ds->known = true;
  ds->rank = rank;
  ds->record_elems = 1;
  for (int k = 0; k < rank; k++) {
    ds->dims[k] = dims[k];
    if (__builtin_mul_overflow(ds->record_elems, dims[k], &ds->record_elems))
      ds->record_elems = -1;
  }
}

// ---- IDX ---------------------------------------------------------------------------------
// Header: 0x00 0x00 <type> <ndims>, then ndims big-endian u32 sizes; the
// first size is the record count. Types: 0x08 u8, 0x0C i32, 0x0D f32,
// 0x0E f64 (0x09 i8 and 0x0B i16 have no mlc dtype).
static bool read_idx(Args *g, const char *file, Span sp, DataSource *ds) {
  gzFile f = gzopen(file, "rb");
  if (!f) return true; // unreadable now: unknown, checked again on load
  unsigned char h[4], szb[4 * (DS_MAX_RANK + 1)];
  int n = gzread(f, h, 4);
  bool ok = n == 4 && h[0] == 0 && h[1] == 0;
  int nd = ok ? h[3] : 0;
  if (!ok) {
    diag_error(g->c->diags, sp, "%s is not an IDX file (it does not start with 00 00)", file);
  } else if (nd < 1 || nd > DS_MAX_RANK + 1) {
    diag_error(g->c->diags, sp, "%s: an IDX file with %d dims is not supported (1 to %d)",
               file, nd, DS_MAX_RANK + 1);
    ok = false;
  } else if (h[2] != 0x08 && h[2] != 0x0C && h[2] != 0x0D && h[2] != 0x0E) {
    diag_error(g->c->diags, sp, "%s: IDX element type 0x%02X is not supported "
               "(u8 0x08, i32 0x0C, f32 0x0D, f64 0x0E)", file, h[2]);
    ok = false;
  } else if (gzread(f, szb, (unsigned)(4 * nd)) != 4 * nd) {
    diag_error(g->c->diags, sp, "%s: the IDX header is truncated", file);
    ok = false;
  }
  gzclose(f);
  if (!ok) return false;
  int64_t dims[DS_MAX_RANK + 1];
  for (int k = 0; k < nd; k++)
    dims[k] = (int64_t)szb[4 * k] << 24 | (int64_t)szb[4 * k + 1] << 16 |
              (int64_t)szb[4 * k + 2] << 8 | (int64_t)szb[4 * k + 3];
  ds->dtype = h[2] == 0x08 ? DT_U8 : h[2] == 0x0C ? DT_I32 : h[2] == 0x0D ? DT_F32 : DT_F64;
  ds->nrecords = dims[0];
  set_record(ds, nd - 1, dims + 1);
  return true;
}

// ---- NPY ---------------------------------------------------------------------------------
// "\x93NUMPY" major minor, header length (u16 LE for v1, u32 LE for v2/3),
// then a Python dict literal: {'descr': '<f4', 'fortran_order': False,
// 'shape': (60000, 28, 28), }
static const struct {
  const char *descr;
  DType dt;
} npy_types[] = {
    {"<f4", DT_F32}, {"<f8", DT_F64}, {"<f2", DT_F16}, {"<i4", DT_I32},
    {"<i8", DT_I64}, {"|u1", DT_U8},  {"|b1", DT_BOOL},
};

static bool npy_descr(Args *g, const char *hdr, const char *file, Span sp, DType *out) {
  const char *p = strstr(hdr, "'descr'");
  p = p ? strchr(p + 7, '\'') : NULL;
  const char *e = p ? strchr(p + 1, '\'') : NULL;
  if (!e) {
    diag_error(g->c->diags, sp, "%s: the .npy header has no 'descr'", file);
    return false;
  }
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if ((size_t)(e - p - 1) == strlen(npy_types[i].descr) &&
        strncmp(p + 1, npy_types[i].descr, (size_t)(e - p - 1)) == 0) {
      *out = npy_types[i].dt;
      return true;
    }
  diag_error(g->c->diags, sp,
             "%s: .npy dtype '%.*s' is not supported (little-endian f4 f8 f2 i4 i8, u1, b1)",
             file, (int)(e - p - 1), p + 1);
  return false;
}

static bool npy_shape(Args *g, const char *hdr, const char *file, Span sp, int64_t *dims,
                      int *nd) {
  const char *p = strstr(hdr, "'shape'");
  p = p ? strchr(p, '(') : NULL;
  if (!p) {
    diag_error(g->c->diags, sp, "%s: the .npy header has no 'shape'", file);
    return false;
  }
  *nd = 0;
  for (p++; *p && *p != ')';) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    long long v = 0;
    int used = 0;
    if (sscanf(p, "%lld%n", &v, &used) != 1 || *nd > DS_MAX_RANK) {
      diag_error(g->c->diags, sp, "%s: cannot read the .npy shape (at most %d dims)", file,
                 DS_MAX_RANK + 1);
      return false;
    }
    dims[(*nd)++] = v;
    p += used;
  }
  if (*nd == 0) {
    diag_error(g->c->diags, sp, "%s holds a single scalar; records must lie along the first axis",
               file);
    return false;
  }
  return true;
}

static bool read_npy(Args *g, const char *file, Span sp, DataSource *ds) {
  FILE *f = fopen(file, "rb");
  if (!f) return true;
  unsigned char m[12];
  char hdr[4096];
  size_t n = fread(m, 1, 10, f), hl = 0;
  bool ok = n == 10 && memcmp(m, "\x93NUMPY", 6) == 0 && m[6] >= 1 && m[6] <= 3;
  if (ok && m[6] == 1) {
    hl = (size_t)m[8] | (size_t)m[9] << 8;
  } else if (ok && fread(m + 10, 1, 2, f) == 2) {
    hl = (size_t)m[8] | (size_t)m[9] << 8 | (size_t)m[10] << 16 | (size_t)m[11] << 24;
  } else {
    ok = false;
  }
  if (ok && hl >= sizeof hdr) hl = sizeof hdr - 1; // the dict comes first
  if (ok) hdr[fread(hdr, 1, hl, f)] = 0;
  fclose(f);
  if (!ok) {
    diag_error(g->c->diags, sp, "%s is not a .npy file (bad magic or version)", file);
    return false;
  }
  if (strstr(hdr, "'fortran_order': True")) {
    diag_error(g->c->diags, sp, "%s is stored in Fortran order, which is not supported", file);
    return false;
  }
  int64_t dims[DS_MAX_RANK + 1];
  int nd;
  if (!npy_descr(g, hdr, file, sp, &ds->dtype) || !npy_shape(g, hdr, file, sp, dims, &nd))
    return false;
  ds->nrecords = dims[0];
  set_record(ds, nd - 1, dims + 1);
  return true;
}

// ---- CSV ---------------------------------------------------------------------------------
// The header row and the column selection are the runtime's own
// (runtime/include/mlc_data.h: mlc_csv_header, mlc_csv_resolve), so `mlc
// check` reads exactly the columns the generated program will: by index or
// by header name, in the order given, whatever else the file holds.

// The first row of `file` (its field count, and its names when it is a
// header); false with an error at sp when the file cannot be read.
static bool csv_first_row(Args *g, const char *file, Span sp, MlcCsvHeader *h) {
  char err[512];
  if (!mlc_csv_header(file, h, err, sizeof err)) return true;
  diag_error(g->c->diags, sp, "%s", err);
  return false;
}

// Reports the selection's column k that does not resolve, with a hint for
// a misspelt name.
static void csv_bad_column(Args *g, Span sp, const char *msg, const char *name,
                           const MlcCsvHeader *h) {
  const char *best = name ? closest_name(name, (const char *const *)h->names, h->n) : NULL;
  diag_error(g->c->diags, sp, "%s%s%s%s", msg, best ? "; did you mean \"" : "", best ? best : "",
             best ? "\"?" : "");
}

// cols: a list of column indices, or names when the file has a header;
// resolved against the file when it exists (col_index: the file's columns;
// -1 for a name while the file is unknown).
static bool csv_cols(Args *g, const char *file, bool header, DataSource *ds) {
  Value *l = g->v[1];
  if (!l) return true;
  if (l->kind != V_LIST) {
    diag_error(g->c->diags, bi_span(g, 1),
               "argument `cols` of csv must be a list of column indices or names, got %s",
               value_str(g->a, l));
    return false;
  }
  int n = l->items.len;
  int64_t *sel = arena_alloc(g->a, sizeof(int64_t) * (size_t)(n + 1));
  int64_t *idx = arena_alloc(g->a, sizeof(int64_t) * (size_t)(n + 1));
  const char **names = arena_alloc(g->a, sizeof(char *) * (size_t)(n + 1));
  Span *spans = arena_alloc(g->a, sizeof(Span) * (size_t)(n + 1));
  for (int k = 0; k < n; k++) {
    Value *it = VEC_AT(l->items, Value, k);
    spans[k] = it->span.file ? it->span : bi_span(g, 1);
    names[k] = NULL;
    if (it->kind == V_DIM && dim_is_const(it->dim, &sel[k]) && sel[k] >= 0) continue;
    if (it->kind != V_STR) {
      diag_error(g->c->diags, spans[k], "csv columns are indices (0, 1, ..) or names, got %s",
                 value_str(g->a, it));
      return false;
    }
    if (!header) {
      diag_error(g->c->diags, spans[k], "csv column names need a header row (header = true)");
      return false;
    }
    sel[k] = -1;
    names[k] = it->str;
  }
  memcpy(idx, sel, sizeof(int64_t) * (size_t)n);
  MlcCsvHeader h = {0};
  if (file && !csv_first_row(g, file, bi_span(g, 0), &h)) return false;
  char err[512];
  int bad = 0;
  bool ok = !file || !mlc_csv_resolve(file, header ? &h : NULL, h.n, n, sel, names, idx, &bad,
                                      err, sizeof err);
  if (!ok) csv_bad_column(g, spans[bad], err, names[bad], &h);
  mlc_csv_header_free(&h);
  ds->ncols = n;
  ds->col_index = idx;
  ds->col_name = names;
  return ok;
}

// True when every field of the header row reads as a number and they are
// not 0, 1, .. n-1 (the names pandas writes for unnamed columns): the row
// is then more likely a record than a header.
static bool csv_header_looks_like_data(const MlcCsvHeader *h) {
  bool counting = true;
  for (int j = 0; j < h->n; j++) {
    const char *s = h->names[j];
    char *end;
    while (*s == ' ' || *s == '\t' || *s == '"') s++;
    double v = strtod(s, &end);
    if (end == s) return false;
    while (*end == ' ' || *end == '\t' || *end == '"' || *end == '\r') end++;
    if (*end) return false;
    counting = counting && v == (double)j;
  }
  return h->n > 0 && !counting;
}

// `header` defaults to true, so a file without a header row would lose its
// first record without a word: say so when that row looks like data.
static void csv_warn_numeric_header(Args *g, const char *file, const DataSource *ds) {
  MlcCsvHeader h = {0};
  char err[512];
  if (!file || !ds->header || g->given[2] || mlc_csv_header(file, &h, err, sizeof err)) return;
  if (csv_header_looks_like_data(&h))
    diag_warning(g->c->diags, bi_span(g, 0),
                 "the first row of %s is read as its header (header = true is the default), "
                 "but every field in it is a number; if that row is a record, say "
                 "`header = false` (as written, it is skipped)", file);
  mlc_csv_header_free(&h);
}

static bool check_csv(Args *g, const char *file, DataSource *ds) {
  DType dt;
  if (!bi_bool(g, 2, &ds->header) || !bi_dtype(g, 3, &dt)) return false;
  if (dt == DT_BOOL) {
    diag_error(g->c->diags, bi_span(g, 3), "csv reads numbers; dtype bool is not supported");
    return false;
  }
  ds->dtype = dt;
  if (!csv_cols(g, file, ds->header, ds)) return false;
  csv_warn_numeric_header(g, file, ds);
  int64_t w = ds->ncols;
  MlcCsvHeader h = {0};
  if (w == 0 && file) {
    if (!csv_first_row(g, file, bi_span(g, 0), &h)) return false;
    w = h.n;
    mlc_csv_header_free(&h);
  }
  if (w > 0) set_record(ds, w == 1 ? 0 : 1, &w); // one column: scalar records
  return true;
}

// ---- entry points ------------------------------------------------------------------------------
bool bi_data_source(Args *g, DataSource *out) {
  memset(out, 0, sizeof *out);
  out->kind = g->op == BI_IDX ? DS_IDX : g->op == BI_CSV ? DS_CSV : DS_NPY;
  out->span = g->c->span;
  out->rank = -1;
  out->record_elems = out->nrecords = -1;
  out->scale = 1.0;
  Value *p = g->v[0];
  if (p->kind != V_STR || !p->str || !p->str[0]) {
    diag_error(g->c->diags, bi_span(g, 0),
               "argument `path` of %s must be a non-empty string, got %s", g->opname,
               value_str(g->a, p));
    return false;
  }
  out->path = p->str;
  bool bad = false;
  Span sp = bi_span(g, 0);
  out->resolved = resolve(g, p->str, sp, &bad);
  if (bad) return false;
  switch (out->kind) {
  case DS_IDX:
    if (!bi_float(g, 1, &out->scale)) return false;
    if (!isfinite(out->scale) || out->scale == 0) {
      diag_error(g->c->diags, bi_span(g, 1), "idx scale must be finite and non-zero, got %g",
                 out->scale);
      return false;
    }
    return !out->resolved || read_idx(g, out->resolved, sp, out);
  case DS_NPY: return !out->resolved || read_npy(g, out->resolved, sp, out);
  case DS_CSV: return check_csv(g, out->resolved, out);
  }
  return false;
}

Value *bi_rule_data(Args *g) {
  DataSource ds;
  if (!bi_data_source(g, &ds)) return NULL;
  Value *v = arena_alloc(g->a, sizeof *v);
  v->kind = V_STR;
  v->span = g->c->span;
  v->str = ds.path;
  return v;
}

bool builtin_data_source(BuiltinCall *c, DataSource *out) {
  int op = builtin_lookup(c->name);
  MLC_ASSERT(op >= 0 && builtin_class(op) == OC_DATA);
  for (int k = 0; k < c->nargs; k++)
    if (!c->args[k]) return false;
  Args g;
  c->flops = NULL;
  return bi_bind(c, op, &g) && bi_data_source(&g, out);
}
