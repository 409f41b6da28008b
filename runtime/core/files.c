// files.c — how the runtime writes files it owns and checks the paths it
// is given (rt_util.h): atomic replacement through one temporary file per
// process, removal of the temporaries a killed run left, and output paths
// validated before a run starts; plus the bounded string helpers.
//
// Temporary files are named PATH.tmp.PID: two processes never share one,
// and cleaning up after a killed run compares directory entries with that
// exact name (a user path with '*' or '?' in it is never a pattern), and
// only removes one whose process no longer exists.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_util.h"

void rt_bprintf(RtBuf *b, const char *fmt, ...) {
  if (!b->len || b->at >= b->len - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->p + b->at, b->len - b->at, fmt, ap);
  va_end(ap);
  if (n > 0) b->at = (size_t)n >= b->len - b->at ? b->len - 1 : b->at + (size_t)n;
}

const char *rt_shape_str(char *buf, size_t len, const char *dtype, int rank,
                         const int64_t *shape) {
  RtBuf b = {buf, len, 0};
  if (len) buf[0] = 0;
  rt_bprintf(&b, "%s[", dtype);
  for (int k = 0; k < rank; k++) rt_bprintf(&b, "%s%lld", k ? ", " : "", (long long)shape[k]);
  rt_bprintf(&b, "]");
  return buf;
}

int rt_write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    if (w == 0) {
      errno = ENOSPC;
      return -1;
    }
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

// PATH.tmp.PID, malloc'd.
static char *temp_name(const char *path, long pid) {
  size_t n = strlen(path) + 32;
  char *t = malloc(n);
  if (t) snprintf(t, n, "%s.tmp.%ld", path, pid);
  return t;
}

// The directory part of path ("." for a bare name), malloc'd.
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

// fsyncs the directory holding `path`, so a rename into it is durable.
static int sync_dir(const char *path) {
  char *dir = dir_of(path);
  int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY) : -1;
  free(dir);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

int rt_write_atomic(const char *path, int (*body)(int fd, void *arg), void *arg, char *err,
                    size_t errlen) {
  char *tmp = temp_name(path, (long)getpid());
  if (!tmp) return rt_err(err, errlen, "%s: out of memory", path);
  const char *what = "cannot create a temporary file";
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644), e = 0, rc;
  if (fd < 0) goto fail;
  what = "write failed";
  if (body(fd, arg)) goto fail;
  what = "fsync failed";
  if (fsync(fd)) goto fail;
  what = "close failed";
  rc = close(fd);
  fd = -1;
  if (rc) goto fail;
  what = "rename failed";
  if (rename(tmp, path)) goto fail;
  free(tmp);
  if (sync_dir(path))
    return rt_err(err, errlen, "%s: fsync of its directory failed: %s", path, strerror(errno));
  return 0;
fail:
  e = errno;
  if (fd >= 0) close(fd);
  unlink(tmp);
  free(tmp);
  return rt_err(err, errlen, "%s: %s: %s", path, what, strerror(e ? e : EIO));
}

// N when name is exactly BASE.tmp.N (N decimal), else -1.
static long temp_pid(const char *name, const char *base, size_t nb) {
  if (strncmp(name, base, nb) || strncmp(name + nb, ".tmp.", 5)) return -1;
  const char *d = name + nb + 5;
  if (!*d || strlen(d) > 18) return -1;
  for (const char *p = d; *p; p++)
    if (*p < '0' || *p > '9') return -1;
  return strtol(d, NULL, 10);
}

void rt_remove_stale_temps(const char *path) {
  char *dir = dir_of(path);
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  DIR *d = dir ? opendir(dir) : NULL;
  size_t nb = strlen(base);
  for (struct dirent *e; d && (e = readdir(d));) {
    long pid = temp_pid(e->d_name, base, nb);
    if (pid <= 0 || pid == (long)getpid() || pid > INT32_MAX) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; // its process still runs
    size_t n = strlen(dir) + strlen(e->d_name) + 2;
    char *full = malloc(n);
    if (full) snprintf(full, n, "%s/%s", dir, e->d_name), unlink(full);
    free(full);
  }
  if (d) closedir(d);
  free(dir);
}

int rt_check_input(const char *path, char *err, size_t errlen) {
  struct stat sb;
  if (stat(path, &sb)) return rt_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode)) return rt_err(err, errlen, "%s: is a directory, not a data file", path);
  return 0;
}

static bool same_file(const struct stat *a, const char *path) {
  struct stat b;
  return !stat(path, &b) && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

int rt_check_output(const char *path, const char *what, const char *const *inputs, int ninputs,
                    char *err, size_t errlen) {
  struct stat sb;
  if (!*path) return rt_err(err, errlen, "%s: the path is empty", what);
  bool exists = !stat(path, &sb);
  if (exists && S_ISDIR(sb.st_mode))
    return rt_err(err, errlen, "%s %s: is a directory (name a file)", what, path);
  for (int i = 0; exists && i < ninputs; i++)
    if (inputs[i] && same_file(&sb, inputs[i]))
      return rt_err(err, errlen, "%s %s: is the input file %s; it would be overwritten", what,
                    path, inputs[i]);
  char *dir = dir_of(path);
  struct stat ds;
  int rc = 0;
  if (!dir) rc = rt_err(err, errlen, "%s: out of memory", path);
  else if (stat(dir, &ds) || !S_ISDIR(ds.st_mode))
    rc = rt_err(err, errlen, "%s %s: directory %s does not exist", what, path, dir);
  free(dir);
  if (rc) return rc;
  // probe: the directory takes a new file (permissions, read-only mount)
  char *tmp = temp_name(path, (long)getpid());
  int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
  if (fd < 0 && tmp && errno != EEXIST)
    rc = rt_err(err, errlen, "%s %s: cannot create a file there: %s", what, path, strerror(errno));
  if (fd >= 0) close(fd), unlink(tmp);
  free(tmp);
  return rc;
}
