// data_csv.c — text tables: CSV files and predict's one-sample-per-line input.
//
// Both give an f64 array [records, fields]. A record is a non-blank line;
// fields are numbers separated by commas (CSV) or by commas and/or blanks
// (lines). Every record must have as many fields as the first, and every
// value must be a finite number: a NaN or an infinity in data is an error
// naming the record, never a silent NaN loss later.
#include <errno.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlc_rt.h"
#include "core/rt_util.h"

typedef struct Table {
  double *v;
  int64_t n, cap, rows, cols;
} Table;

static int push(Table *t, double x) {
  if (t->n == t->cap) {
    int64_t cap = t->cap ? t->cap * 2 : 4096;
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
  out->dtype = MLC_F64;
  out->rank = 2;
  out->dims[0] = t.rows;
  out->dims[1] = t.cols;
  out->data = t.v;
  return 0;
}

// Reads all of f into a malloc'd buffer.
static char *slurp(FILE *f, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  while (b) {
    n += fread(b + n, 1, cap - n, f);
    if (n < cap) break;
    char *nb = realloc(b, cap *= 2);
    if (!nb) free(b);
    b = nb;
  }
  *len = n;
  return b;
}

int mlc_read_csv(const char *path, int header, MlcArray *out, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) return rt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  size_t len;
  char *b = slurp(f, &len);
  fclose(f);
  if (!b) return rt_err(err, errlen, "%s: out of memory", path);
  int rc = parse_text(path, b, len, header, false, out, err, errlen);
  free(b);
  return rc;
}

int mlc_read_lines(FILE *f, const char *label, MlcArray *out, char *err, size_t errlen) {
  size_t len;
  char *b = slurp(f, &len);
  if (!b) return rt_err(err, errlen, "%s: out of memory", label);
  int rc = parse_text(label, b, len, 0, true, out, err, errlen);
  free(b);
  return rc;
}
