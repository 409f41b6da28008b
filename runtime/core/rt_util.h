// rt_internal.h — helpers shared by the runtime's files (not installed).
#ifndef MLC_RT_INTERNAL_H
#define MLC_RT_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>

// Writes a formatted message to err (when errlen > 0); returns -1 so callers
// can `return rt_err(...)`.
__attribute__((format(printf, 3, 4))) static inline int
rt_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!errlen) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

#endif
