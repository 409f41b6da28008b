// data_csv.c — text tables: CSV files, predict's one-sample-per-line input,
// and CSV column selection (mlc_data.h).
//
// Both readers give an f64 array [records, fields]. A record is a non-blank
// line; fields are numbers separated by commas (CSV) or by commas and/or
// blanks (lines). Every record must have as many fields as the first, and
// every value must be a finite number: a NaN or an infinity in data is an
// error naming the record, never a silent NaN loss later.
//
// Column selection is the one implementation of a csv(...) source's `cols`:
// the generated program applies it to the file it reads, and `mlc check`
// resolves the same selection against the file's header at compile time.
// Header names are the first non-blank line's fields split at commas outside
// double quotes, with blanks and quotes around each removed.
#include <errno.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlc_data.h"
#include "core/rt_util.h"

typedef struct Table {
  double *v;
  int64_t n, cap, rows, cols;
} Table;

static int push(Table *t, double x) {
  if (t->n == t->cap) {
    int64_t cap = t->cap ? t->cap : 2048;
    if (!rt_mul(&cap, 2) || rt_bytes(cap, sizeof(double)) < 0) return -1;
    double *v = realloc(t->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    t->v = v, t->cap = cap;
  }
  t->v[t->n++] = x;
  return 0;
}

static bool blank(const char *s, const char *e) {
  for (; s < e; s++)
    if (!isspace((unsigned char)*s)) return false;
  return true;
}

// One field [s, e) of record rec (line `line`), trimmed, appended to t.
static int parse_field(Table *t, const char *label, const char *s, const char *e, int64_t rec,
                       int64_t line, int64_t f, char *err, size_t errlen) {
  while (s < e && isspace((unsigned char)*s)) s++;
  while (e > s && isspace((unsigned char)e[-1])) e--;
  char buf[64];
  int len = (int)(e - s < 63 ? e - s : 63);
  memcpy(buf, s, (size_t)len);
  buf[len] = 0;
  char *end;
  double x = len ? strtod(buf, &end) : 0;
  if (!len || *end || e - s > 63)
    return rt_err(err, errlen, "%s: record %lld (line %lld): field %lld '%s' is not a number",
                  label, (long long)rec, (long long)line, (long long)f, buf);
  if (!isfinite(x))
    return rt_err(err, errlen, "%s: record %lld (line %lld): field %lld is %s", label,
                  (long long)rec, (long long)line, (long long)f, isnan(x) ? "NaN" : "infinite");
  if (push(t, x)) return rt_err(err, errlen, "%s: out of memory", label);
  return 0;
}

static bool is_sep(char c, bool blanks) {
  return c == ',' || (blanks && (c == ' ' || c == '\t' || c == '\r'));
}

// Parses one line [s, e) into t. CSV: fields are separated by single commas
// (an empty field is an error). `blanks`: runs of commas and blanks separate.
static int parse_line(Table *t, const char *label, const char *s, const char *e, bool blanks,
                      int64_t line, char *err, size_t errlen) {
  int64_t rec = t->rows + 1, f = 0;
  for (;;) {
    if (blanks) {
      while (s < e && is_sep(*s, true)) s++;
      if (s == e) break;
    }
    const char *q = s;
    while (q < e && !is_sep(*q, blanks)) q++;
    if (parse_field(t, label, s, q, rec, line, ++f, err, errlen)) return -1;
    if (q == e) break;
    s = q + 1;
  }
  if (!f)
    return rt_err(err, errlen, "%s: record %lld (line %lld): no numbers", label, (long long)rec,
                  (long long)line);
  if (t->rows == 0) t->cols = f;
  else if (f != t->cols)
    return rt_err(err, errlen, "%s: record %lld (line %lld): %lld fields, but the first record has %lld",
                  label, (long long)rec, (long long)line, (long long)f, (long long)t->cols);
  t->rows++;
  return 0;
}

static int parse_text(const char *label, const char *buf, size_t len, int header, bool blanks,
                      MlcArray *out, char *err, size_t errlen) {
  Table t = {0};
  const char *p = buf, *end = buf + len;
  int64_t line = 0;
  bool skip = header;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end;
    line++;
    if (!blank(p, e)) {
      if (skip) skip = false;
      else if (parse_line(&t, label, p, e, blanks, line, err, errlen)) {
        free(t.v);
        return -1;
      }
    }
    p = e + 1;
  }
  if (!t.rows) {
    free(t.v);
    return rt_err(err, errlen, "%s: no records", label);
  }
  memset(out, 0, sizeof *out);
  out->path = strdup(label);
  out->kind = blanks ? MLC_DATA_NONE : MLC_DATA_CSV;
  out->dtype = MLC_F64;
  out->rank = 2;
  out->dims[0] = t.rows;
  out->dims[1] = t.cols;
  out->data = t.v;
  return 0;
}

// Reads all of f into a malloc'd buffer; NULL when out of memory or a read
// fails (*why says which).
static char *slurp(FILE *f, size_t *len, const char **why) {
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  *why = "out of memory";
  while (b) {
    n += fread(b + n, 1, cap - n, f);
    if (n < cap) break;
    char *nb = cap <= SIZE_MAX / 2 ? realloc(b, cap *= 2) : NULL;
    if (!nb) free(b);
    b = nb;
  }
  if (b && ferror(f)) {
    *why = strerror(errno ? errno : EIO);
    free(b);
    b = NULL;
  }
  *len = n;
  return b;
}

int mlc_read_csv(const char *path, int header, MlcArray *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (rt_check_input(path, err, errlen)) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return rt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  size_t len;
  const char *why;
  char *b = slurp(f, &len, &why);
  fclose(f);
  if (!b) return rt_err(err, errlen, "%s: cannot read: %s", path, why);
  int rc = parse_text(path, b, len, header, false, out, err, errlen);
  free(b);
  return rc;
}

int mlc_read_lines(FILE *f, const char *label, MlcArray *out, char *err, size_t errlen) {
  size_t len;
  const char *why;
  memset(out, 0, sizeof *out);
  char *b = slurp(f, &len, &why);
  if (!b) return rt_err(err, errlen, "%s: cannot read: %s", label, why);
  int rc = parse_text(label, b, len, 0, true, out, err, errlen);
  free(b);
  return rc;
}

// ---- CSV columns ----------------------------------------------------------------------------

void mlc_csv_header_free(MlcCsvHeader *h) {
  for (int i = 0; i < h->n; i++) free(h->names[i]);
  free(h->names);
  h->n = 0, h->names = NULL;
}

// Appends field [s, e) with blanks and quotes around it removed.
static int add_name(MlcCsvHeader *h, const char *s, const char *e) {
  while (s < e && (isspace((unsigned char)*s) || *s == '"')) s++;
  while (e > s && (isspace((unsigned char)e[-1]) || e[-1] == '"')) e--;
  char **nn = realloc(h->names, (size_t)(h->n + 1) * sizeof *nn);
  if (!nn) return -1;
  h->names = nn;
  if (!(h->names[h->n] = strndup(s, (size_t)(e - s)))) return -1;
  h->n++;
  return 0;
}

// Splits line [p, end) at commas outside double quotes.
static int split_header(MlcCsvHeader *h, const char *p, const char *end) {
  for (;;) {
    const char *e = p;
    bool q = false;
    while (e < end && (q || *e != ',')) q ^= *e++ == '"';
    if (add_name(h, p, e)) return -1;
    if (e == end) return 0;
    p = e + 1;
  }
}

int mlc_csv_header(const char *path, MlcCsvHeader *h, char *err, size_t errlen) {
  *h = (MlcCsvHeader){0};
  if (rt_check_input(path, err, errlen)) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return rt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, f)) >= 0 && blank(line, line + n)) {}
  bool bad = ferror(f) != 0;
  fclose(f);
  int rc = 0;
  if (bad) rc = rt_err(err, errlen, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
  else if (n < 0) rc = rt_err(err, errlen, "%s: no records", path);
  else {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
    if (split_header(h, line, line + n)) {
      mlc_csv_header_free(h);
      rc = rt_err(err, errlen, "%s: out of memory", path);
    }
  }
  free(line);
  return rc;
}

int mlc_csv_resolve(const char *path, const MlcCsvHeader *h, int64_t nfields, int n,
                    const int64_t *cols, const char *const *colnames, int64_t *out, int *bad,
                    char *err, size_t errlen) {
  for (int k = 0; k < n; k++) {
    if (bad) *bad = k;
    if (cols[k] >= 0) {
      if (cols[k] >= nfields)
        return rt_err(err, errlen, "%s: column %lld is out of range: the file has %lld column%s "
                      "(0..%lld)", path, (long long)cols[k], (long long)nfields,
                      nfields == 1 ? "" : "s", (long long)nfields - 1);
      out[k] = cols[k];
      continue;
    }
    const char *name = colnames ? colnames[k] : NULL;
    if (!name || !h)
      return rt_err(err, errlen, "%s: column %d of the selection names a header column, but "
                    "the file is read without a header", path, k + 1);
    out[k] = -1;
    for (int j = 0; j < h->n && out[k] < 0; j++)
      if (!strcmp(h->names[j], name)) out[k] = j;
    if (out[k] < 0)
      return rt_err(err, errlen, "%s: column \"%s\" is not in the header", path, name);
  }
  return 0;
}

int mlc_array_select(const MlcArray *a, int n, const int64_t *idx, MlcArray *out, char *err,
                     size_t errlen) {
  int64_t rows = mlc_array_records(a), rs = mlc_array_record_size(a), cells = rows;
  memset(out, 0, sizeof *out);
  if (a->dtype != MLC_F64 || a->rank != 2 || !rt_mul(&cells, n) || rt_bytes(cells, 8) < 0)
    return rt_err(err, errlen, "%s: cannot select columns of this array", a->path);
  double *v = malloc((size_t)(cells ? cells : 1) * sizeof *v);
  out->path = strdup(a->path);
  if (!v || !out->path) {
    free(v), free(out->path), out->path = NULL;
    return rt_err(err, errlen, "%s: out of memory", a->path);
  }
  const double *src = a->data;
  for (int64_t r = 0; r < rows; r++)
    for (int k = 0; k < n; k++) v[r * n + k] = src[r * rs + idx[k]];
  out->kind = MLC_DATA_CSV, out->dtype = MLC_F64, out->rank = 2;
  out->dims[0] = rows, out->dims[1] = n, out->data = v;
  return 0;
}
