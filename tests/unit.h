// unit.h — the shared harness of the C unit tests: one "[PASS] name" or
// "[FAIL] name" line per check, and counters for the closing line
// "N passed, N failed" each test's main prints (ctest shows the log).
#ifndef MLC_TEST_UNIT_H
#define MLC_TEST_UNIT_H

#include <stdbool.h>
#include <stdio.h>

static int npass, nfail;

static inline void check(const char *name, bool ok) {
  printf("[%s] %s\n", ok ? "PASS" : "FAIL", name);
  if (ok)
    npass++;
  else
    nfail++;
}

#endif
