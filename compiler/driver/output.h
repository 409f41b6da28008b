// output.h — the files `mlc build` writes (output.c): each one checked when
// it is opened, before any slow work, and put in place only whole.
//
// A regular file is written to a temporary next to it and renamed over it
// by out_commit, so a failed build never leaves a truncated or empty output
// (and never writes through a hard link); SIGINT, SIGTERM and SIGHUP
// remove the temporaries before the signal ends mlc. Standard output ("-") and
// existing devices or FIFOs (/dev/null, /dev/full) are written directly.
// Every write is checked; a failure is one error naming the path.
#ifndef MLC_OUTPUT_H
#define MLC_OUTPUT_H

#include "base/common.h"

#include <sys/stat.h>

typedef struct OutFile {
  const char *path; // as the user named it; "-": standard output
  FILE *f;          // where the bytes go (NULL when not open)
  char *tmp;        // the temporary renamed over path by out_commit; NULL: f is path itself
  bool exec;        // a program: mode 0777 & ~umask, else 0666 & ~umask
} OutFile;

// Opens path for one output. Refuses it (false, after an error naming it)
// when it is the input file (same device and inode as *input, through any
// name or link), a directory, not a regular file for a binary output
// (text: devices and FIFOs are fine, "-" is standard output), or when its
// directory is missing or no file can be created there.
bool out_open(OutFile *o, DiagSink *d, const char *path, const struct stat *input, bool text,
              bool exec);
// Flushes and checks every write, then renames the temporary into place.
// False after an error naming the path (the temporary is removed).
bool out_commit(OutFile *o, DiagSink *d);
// Closes without committing: the temporary is removed, path is untouched.
void out_discard(OutFile *o);
// Appends the bytes of file src to o. False after an error naming src.
bool out_copy(OutFile *o, DiagSink *d, const char *src);
// Copies file src to a new file dst (both paths of the build's own files).
bool out_file_copy(DiagSink *d, const char *src, const char *dst);
// Writes a whole new file (the build's temporaries). False after an error.
bool out_file_write(DiagSink *d, const char *path, const char *data, size_t len);

#endif
