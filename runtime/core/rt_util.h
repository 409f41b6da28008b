// rt_util.h — helpers shared by the runtime's files (private to runtime/):
// error messages, checked size arithmetic, bounded string building, and
// the file helpers of files.c (atomic replacement, temporary files, output
// paths checked before a run starts).
#ifndef MLC_RT_UTIL_H
#define MLC_RT_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Writes a formatted message to err (when errlen > 0); returns -1 so callers
// can `return rt_err(...)`.
__attribute__((format(printf, 3, 4))) static inline int
rt_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

// ---- checked sizes -----------------------------------------------------------------
// Every size computed from a file, an option or an API argument goes through
// rt_mul: *acc *= x, false when x or *acc is negative or the product does not
// fit in int64 (*acc is then left as it was). Byte counts are further held
// to RT_MAX_BYTES, far below the point where int64 index arithmetic in
// kernels could wrap, and above any memory this runtime will see.
#define RT_MAX_BYTES ((int64_t)1 << 46)

static inline bool rt_mul(int64_t *acc, int64_t x) {
  int64_t r;
  if (*acc < 0 || x < 0 || __builtin_mul_overflow(*acc, x, &r)) return false;
  *acc = r;
  return true;
}

// n elements of `size` bytes: the byte count, or -1 past RT_MAX_BYTES.
static inline int64_t rt_bytes(int64_t n, size_t size) {
  int64_t b = n;
  return rt_mul(&b, (int64_t)size) && b <= RT_MAX_BYTES ? b : -1;
}

// ---- bounded strings -------------------------------------------------------------------
// Appends to buf[0..len) and never writes past it: text that does not fit
// is cut (a shape of eight 20-digit dims in a 128-byte buffer stays 127
// characters and a NUL).
typedef struct RtBuf {
  char *p;
  size_t len, at;
} RtBuf;

__attribute__((format(printf, 2, 3))) void rt_bprintf(RtBuf *b, const char *fmt, ...);
// "F32[3, 784]": dtype name, then the dims; returns buf.
const char *rt_shape_str(char *buf, size_t len, const char *dtype, int rank,
                         const int64_t *shape);

// ---- files (files.c) ---------------------------------------------------------------------
// Replaces `path` atomically: body(fd, arg) writes the new content into
// PATH.tmp.PID, which is fsync'd, renamed over path, and the directory
// fsync'd, so a crash leaves the old file or the new one. On failure the
// temporary file is removed, path is untouched, and err says which step
// failed and why ("ck.st: write failed: No space left on device").
int rt_write_atomic(const char *path, int (*body)(int fd, void *arg), void *arg,
                    char *err, size_t errlen);
// Removes the temporary files of rt_write_atomic for `path` that a killed
// run left: exactly PATH.tmp.N for a number N that is not a live process
// (names are compared as strings, never as patterns).
void rt_remove_stale_temps(const char *path);
// write(2) of all n bytes (retried on EINTR); -1 with errno set.
int rt_write_all(int fd, const void *p, size_t n);
// Checks an output file before the slow work starts: it is not a directory,
// its directory exists and takes a new file (probed with PATH.tmp.PID), and
// it is not one of the n input files (the same inode). `what` names the
// option for messages ("--checkpoint").
int rt_check_output(const char *path, const char *what, const char *const *inputs,
                    int ninputs, char *err, size_t errlen);
// 0 when path names something that is not a directory; -1 with
// "PATH: is a directory" (or why it cannot be opened) otherwise.
int rt_check_input(const char *path, char *err, size_t errlen);

#endif
