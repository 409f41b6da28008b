// glue_headers.c — the runtime headers the generated glue includes, as
// `mlc build` writes them next to the glue it compiles.
//
// The headers are embedded into mlc at build time (CMakeLists.txt,
// MLC_RT_HEADER_SOURCES, scripts/embed.cmake), so an installed mlc needs no
// include directory: mlc_rt.h (what the glue calls), mlc_model.h (the model
// ABI) and kernels/abi.h (the constants both include), at the relative
// paths the headers name each other by.
#include "host.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const char mlc_rt_h_src[], mlc_model_h_src[], abi_h_src[];
extern const unsigned long mlc_rt_h_len, mlc_model_h_len, abi_h_len;

static const struct {
  const char *path; // under the glue's directory
  const char *src;
  const unsigned long *len;
} headers[] = {
    {"mlc_rt.h", mlc_rt_h_src, &mlc_rt_h_len},
    {"mlc_model.h", mlc_model_h_src, &mlc_model_h_len},
    {"kernels/abi.h", abi_h_src, &abi_h_len},
};
enum { NHEADERS = sizeof headers / sizeof headers[0] };

bool host_write_runtime_headers(const char *dir, char *err, size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/kernels", dir);
  if (mkdir(path, 0755) && errno != EEXIST) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return false;
  }
  for (int i = 0; i < NHEADERS; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, headers[i].path);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(headers[i].src, 1, *headers[i].len, f) == *headers[i].len;
    if (f && fclose(f)) ok = false;
    if (!ok) {
      snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
      return false;
    }
  }
  return true;
}

void host_remove_runtime_headers(const char *dir) {
  char path[4096];
  for (int i = 0; i < NHEADERS; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, headers[i].path);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/kernels", dir);
  rmdir(path);
}
