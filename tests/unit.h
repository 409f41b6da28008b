// unit.h — the shared harness of the C unit tests: one "[PASS] name" or
// "[FAIL] name" line per check ("[FAIL] name: why" with check_why, "[SKIP]
// name: why" for what cannot run here), and counters for the closing line
// "N passed, N failed[, N skipped]" each test's main prints (ctest shows
// the log).
#ifndef MLC_TEST_UNIT_H
#define MLC_TEST_UNIT_H

#include <stdbool.h>
#include <stdio.h>

static int npass, nfail, nskip;

static inline void check(const char *name, bool ok) {
  printf("[%s] %s\n", ok ? "PASS" : "FAIL", name);
  if (ok)
    npass++;
  else
    nfail++;
}

static inline void check_why(const char *name, bool ok, const char *why) {
  if (ok) printf("[PASS] %s\n", name);
  else printf("[FAIL] %s: %s\n", name, why);
  ok ? npass++ : nfail++;
}

static inline void skip(const char *name, const char *why) {
  printf("[SKIP] %s: %s\n", name, why);
  nskip++;
}

#endif
