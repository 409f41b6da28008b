// run_save.c — `mlc run --interp --save OUT`: the results of a run as files
// NumPy and PyTorch read directly, each tensor under the name it is printed
// with (loss_grad.fc1.w).
//
//   OUT.safetensors   one file, written by the runtime's safetensors writer
//                     (runtime/core/safetensors.h: atomic, names sorted);
//                     no metadata, so it also loads as a weights file
//   OUT.npy           the one result, NPY v1.0, C order, little-endian
//   OUT (other)       a directory (made when missing), OUT/NAME.npy each
//
// NPY files go through output.h (the input file and unusable folders are
// refused, a file appears only whole). Dtypes: in f64 mode every float
// result is F64 ('<f8'); otherwise each result keeps its dtype, f16 and
// bf16 (computed as f32) written as f32.
#include "run_internal.h"
#include "output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/core/safetensors.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "NPY and safetensors data are little-endian, written as host bytes");

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && !strcmp(s + n - k, suffix);
}

SaveForm run_save_form(const char *out) {
  if (ends_with(out, ".safetensors")) return SAVE_SAFETENSORS;
  return ends_with(out, ".npy") ? SAVE_NPY : SAVE_DIR;
}

// ---- checks before the run ---------------------------------------------------------------------
static bool check_dir(DiagSink *d, const char *out) {
  struct stat st;
  if (stat(out, &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      diag_error(d, (Span){0}, "--save %s: not a directory (a file is OUT.safetensors or OUT.npy)", out);
    else if (access(out, W_OK | X_OK))
      diag_error(d, (Span){0}, "--save %s: cannot write into the directory: %s", out, strerror(errno));
    return S_ISDIR(st.st_mode) && !access(out, W_OK | X_OK);
  }
  // a new directory: its parent must take it
  char *parent = strdup(out), *slash = strrchr(parent, '/');
  const char *dir = !slash ? "." : slash == parent ? "/" : (*slash = 0, parent);
  bool ok = stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && !access(dir, W_OK | X_OK);
  if (!ok) diag_error(d, (Span){0}, "--save %s: cannot make the directory in '%s'", out, dir);
  free(parent);
  return ok;
}

bool run_save_check(DiagSink *d, const char *out, const struct stat *input) {
  if (!*out || !strcmp(out, "-")) {
    diag_error(d, (Span){0}, "--save needs a file or directory name, not '%s'", out);
    return false;
  }
  if (run_save_form(out) == SAVE_DIR) return check_dir(d, out);
  OutFile o;
  if (!out_open(&o, d, out, input, false, false)) return false;
  out_discard(&o);
  return true;
}

// ---- bytes ---------------------------------------------------------------------------------------
static MlcStDType save_dtype(const Tensor *t, bool f64) {
  switch (t->dtype) {
  case DT_I32: return MLC_ST_I32;
  case DT_I64: return MLC_ST_I64;
  case DT_U8: return MLC_ST_U8;
  case DT_BOOL: return MLC_ST_BOOL;
  case DT_F64: return MLC_ST_F64;
  default: return f64 ? MLC_ST_F64 : MLC_ST_F32;
  }
}

// t's values as dt's bytes (malloc'd), or NULL when memory runs out.
static void *to_bytes(const Tensor *t, MlcStDType dt) {
  size_t size = mlc_st_dtype_size(dt);
  unsigned char *b = malloc((size_t)t->numel * size + 1);
  for (int64_t j = 0; b && j < t->numel; j++) {
    double v = t->data[j];
    union { float f; double d; int32_t i; int64_t l; uint8_t u; } x;
    switch (dt) {
    case MLC_ST_F32: x.f = (float)v; break;
    case MLC_ST_F64: x.d = v; break;
    case MLC_ST_I32: x.i = (int32_t)v; break;
    case MLC_ST_I64: x.l = (int64_t)v; break;
    case MLC_ST_BOOL: x.u = v != 0; break;
    default: x.u = (uint8_t)v; break;
    }
    memcpy(b + (size_t)j * size, &x, size);
  }
  return b;
}

// ---- NPY -----------------------------------------------------------------------------------------
static const char *npy_descr(MlcStDType dt) {
  switch (dt) {
  case MLC_ST_F64: return "<f8";
  case MLC_ST_I32: return "<i4";
  case MLC_ST_I64: return "<i8";
  case MLC_ST_U8: return "|u1";
  case MLC_ST_BOOL: return "|b1";
  default: return "<f4";
  }
}

// The NPY v1.0 header of t, padded so the data starts at a multiple of 64.
static void npy_header(StrBuf *b, const Tensor *t, MlcStDType dt) {
  StrBuf h = {0};
  sb_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", npy_descr(dt));
  for (int k = 0; k < t->rank; k++) sb_printf(&h, "%s%lld", k ? ", " : "", (long long)t->dims[k]);
  sb_puts(&h, t->rank == 1 ? ",), }" : "), }");
  while ((10 + h.len + 1) % 64) sb_putc(&h, ' ');
  sb_putc(&h, '\n');
  sb_puts(b, "\x93NUMPY\x01");
  sb_putc(b, 0);
  sb_putc(b, (char)(h.len & 0xff));
  sb_putc(b, (char)(h.len >> 8));
  sb_printf(b, "%.*s", (int)h.len, h.data);
  sb_free(&h);
}

static bool write_npy(DiagSink *d, const char *path, const Tensor *t, bool f64) {
  MlcStDType dt = save_dtype(t, f64);
  void *bytes = to_bytes(t, dt);
  OutFile o;
  if (!bytes) {
    diag_error(d, (Span){0}, "%s: out of memory", path);
    return false;
  }
  bool ok = out_open(&o, d, path, NULL, false, false);
  if (ok) {
    StrBuf h = {0};
    npy_header(&h, t, dt);
    fwrite(h.data, 1, h.len, o.f);
    fwrite(bytes, mlc_st_dtype_size(dt), (size_t)t->numel, o.f);
    sb_free(&h);
    ok = out_commit(&o, d);
  }
  free(bytes);
  return ok;
}

static bool save_dir(DiagSink *d, const char *out, const RunResult *r, int n, bool f64) {
  if (mkdir(out, 0777) && errno != EEXIST) {
    diag_error(d, (Span){0}, "--save %s: cannot make the directory: %s", out, strerror(errno));
    return false;
  }
  bool ok = true;
  for (int i = 0; ok && i < n; i++) {
    size_t len = strlen(out) + strlen(r[i].name) + 6;
    char *path = malloc(len);
    snprintf(path, len, "%s/%s.npy", out, r[i].name);
    ok = write_npy(d, path, r[i].t, f64);
    free(path);
  }
  return ok;
}

// ---- safetensors ------------------------------------------------------------------------------------
static bool save_safetensors(DiagSink *d, const char *out, const RunResult *r, int n, bool f64) {
  char err[1024] = "out of memory";
  MlcSt *st = mlc_st_new();
  bool ok = st != NULL;
  for (int i = 0; ok && i < n; i++) {
    MlcStDType dt = save_dtype(r[i].t, f64);
    void *bytes = to_bytes(r[i].t, dt);
    ok = bytes && !mlc_st_add(st, r[i].name, dt, r[i].t->rank, r[i].t->dims, bytes, err, sizeof err);
    free(bytes);
  }
  ok = ok && !mlc_st_save(st, out, err, sizeof err);
  if (!ok) diag_error(d, (Span){0}, "--save %s: %s", out, err);
  if (st) mlc_st_close(st);
  return ok;
}

bool run_save(DiagSink *d, const char *out, const RunResult *r, int n, bool f64) {
  switch (run_save_form(out)) {
  case SAVE_SAFETENSORS: return save_safetensors(d, out, r, n, f64);
  case SAVE_NPY:
    if (n == 1) return write_npy(d, out, r[0].t, f64);
    diag_error(d, (Span){0}, "--save %s: %d results for one .npy file; name a directory (one NAME.npy each) "
               "or a .safetensors file", out, n);
    return false;
  case SAVE_DIR: return save_dir(d, out, r, n, f64);
  }
  MLC_UNREACHABLE();
}
