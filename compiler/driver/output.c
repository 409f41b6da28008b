// output.c — checked outputs (output.h): the checks of an output path, the
// temporary-and-rename of regular files, and checked copies and writes.
//
// Input: a path from the command line (or derived from it) and the input
// file's stat. Output: an open OutFile, or one error naming the path in
// the DiagSink. Messages name the path as the user wrote it.
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The directory of path, as written ("." for a bare name).
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

static mode_t file_mode(bool exec) {
  mode_t mask = umask(0);
  umask(mask);
  return (exec ? 0777 : 0666) & ~mask;
}

// ---- temporaries removed on a signal ----------------------------------------------------------
// An interrupted build (^C, kill) removes the temporaries it made next to
// the user's outputs; the pipeline's own folder under $TMPDIR is left.
enum { MAX_PENDING = 4 };
static char *volatile pending[MAX_PENDING];

static void on_signal(int sig) {
  for (int i = 0; i < MAX_PENDING; i++)
    if (pending[i]) unlink(pending[i]);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void track(char *tmp) {
  static bool installed;
  if (!installed) {
    int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) signal(sigs[i], on_signal);
    installed = true;
  }
  for (int i = 0; i < MAX_PENDING; i++)
    if (!pending[i]) {
      pending[i] = tmp;
      return;
    }
}

static void untrack(char *tmp) {
  for (int i = 0; i < MAX_PENDING; i++)
    if (pending[i] == tmp) pending[i] = NULL;
}

// The temporary next to path: DIR/.BASE.mlc-XXXXXX, created (so the
// directory is known to take new files).
static bool open_tmp(OutFile *o, DiagSink *d) {
  char *dir = dir_of(o->path);
  const char *base = strrchr(o->path, '/') ? strrchr(o->path, '/') + 1 : o->path;
  struct stat st;
  bool ok = false;
  if (stat(dir, &st)) {
    diag_error(d, (Span){0}, "cannot write '%s': directory '%s': %s", o->path, dir, strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    diag_error(d, (Span){0}, "cannot write '%s': '%s' is not a directory", o->path, dir);
  } else {
    size_t n = strlen(dir) + strlen(base) + 16;
    o->tmp = malloc(n);
    snprintf(o->tmp, n, "%s/.%s.mlc-XXXXXX", dir, base);
    int fd = mkstemp(o->tmp);
    if (fd < 0 || !(o->f = fdopen(fd, "wb"))) {
      diag_error(d, (Span){0}, "cannot write '%s': cannot create a file in directory '%s': %s", o->path, dir,
                 strerror(errno));
      if (fd >= 0) close(fd), unlink(o->tmp);
      free(o->tmp), o->tmp = NULL;
    } else {
      track(o->tmp);
      ok = true;
    }
  }
  free(dir);
  return ok;
}

bool out_open(OutFile *o, DiagSink *d, const char *path, const struct stat *input, bool text, bool exec) {
  *o = (OutFile){.path = path, .exec = exec};
  if (!strcmp(path, "-")) {
    if (text) return (o->f = stdout), true;
    diag_error(d, (Span){0}, "-o - (standard output) is for text emissions; name a file");
    return false;
  }
  struct stat st;
  if (stat(path, &st) == 0) {
    if (input && st.st_dev == input->st_dev && st.st_ino == input->st_ino) {
      diag_error(d, (Span){0}, "refusing to overwrite the input file: '%s' is the .model being compiled", path);
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      diag_error(d, (Span){0}, "cannot write '%s': it is a directory", path);
      return false;
    }
    if (!S_ISREG(st.st_mode)) {
      if (!text) {
        diag_error(d, (Span){0}, "cannot write '%s': not a regular file", path);
        return false;
      }
      if (!(o->f = fopen(path, "wb"))) diag_error(d, (Span){0}, "cannot write '%s': %s", path, strerror(errno));
      return o->f != NULL;
    }
  }
  return open_tmp(o, d);
}

static void close_quietly(OutFile *o) {
  if (o->f && o->f != stdout) fclose(o->f);
  o->f = NULL;
  if (o->tmp) untrack(o->tmp), unlink(o->tmp), free(o->tmp), o->tmp = NULL;
}

void out_discard(OutFile *o) { close_quietly(o); }

bool out_commit(OutFile *o, DiagSink *d) {
  if (!o->f) return false;
  // A write that failed while the stage printed left the stream's error
  // flag, and its reason in errno (nothing ran since).
  int err = ferror(o->f) ? (errno ? errno : EIO) : 0;
  if (!err && fflush(o->f)) err = errno ? errno : EIO;
  if (!err && o->tmp && fchmod(fileno(o->f), file_mode(o->exec))) err = errno;
  if (o->f != stdout && fclose(o->f) && !err) err = errno ? errno : EIO;
  o->f = NULL;
  if (!err && o->tmp && rename(o->tmp, o->path)) err = errno;
  if (!err) {
    if (o->tmp) untrack(o->tmp);
    free(o->tmp), o->tmp = NULL;
    return true;
  }
  diag_error(d, (Span){0}, "cannot write '%s': %s", strcmp(o->path, "-") ? o->path : "standard output",
             strerror(err));
  close_quietly(o);
  return false;
}

// ---- copies and whole files ---------------------------------------------------------------------
static bool copy_stream(FILE *in, FILE *out) {
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) return false;
  return !ferror(in);
}

bool out_copy(OutFile *o, DiagSink *d, const char *src) {
  FILE *in = fopen(src, "rb");
  bool ok = in && copy_stream(in, o->f);
  if (!ok) diag_error(d, (Span){0}, "cannot copy '%s' to '%s': %s", src, o->path, strerror(errno));
  if (in) fclose(in);
  return ok;
}

bool out_file_copy(DiagSink *d, const char *src, const char *dst) {
  FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
  bool ok = out && copy_stream(in, out);
  ok = (out ? fclose(out) == 0 : false) && ok;
  if (!ok) diag_error(d, (Span){0}, "cannot copy '%s' to '%s': %s", src, dst, strerror(errno));
  if (in) fclose(in);
  return ok;
}

bool out_file_write(DiagSink *d, const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(data, 1, len, f) == len;
  ok = (f ? fclose(f) == 0 : false) && ok;
  if (!ok) diag_error(d, (Span){0}, "cannot write '%s': %s", path, strerror(errno));
  return ok;
}
