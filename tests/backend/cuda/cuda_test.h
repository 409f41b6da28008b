// cuda_test.h — what the CUDA tests share: the hand-written kernels' plain C
// references, deterministic inputs, comparisons, and reading a kernel
// source. The kernels live in tests/backend/cuda/kernels/; the tests run
// from the repository root (ctest's working directory).
//
// References (shapes as in the kernels' comments):
//   ref_ew        y[i] = a * x[i] + max(b[i], 0)              x, b, y: (n)
//   ref_row_sum   out[r] = sum_c x[r, c], in order            x: (rows, cols)
//   ref_softmax   y[r, :] = softmax(x[r, :])                  x, y: (rows, cols)
//   ref_sgemm     c = a @ b, accumulating over k in order     a: (m, k), b: (k, n)
#ifndef MLC_TEST_CUDA_H
#define MLC_TEST_CUDA_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#define KDIR "tests/backend/cuda/kernels/"

// The whole file, NUL-terminated (malloc'd); NULL with a message on stderr.
static inline char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  fclose(f);
  if (s) s[n] = 0;
  return s;
}

// Deterministic inputs: integers in [-range, range] (sums and products of
// them are exact in f32 while they stay below 2^24), or uniform in [-1, 1).
static inline uint64_t test_rng(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}
static inline void fill_int(float *v, int64_t n, int range, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) v[i] = (float)((int)(test_rng(&seed) % (2 * range + 1)) - range);
}
static inline void fill_unit(float *v, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) v[i] = (float)test_rng(&seed) / 1073741824.0f - 1.0f;
}

// The two operands of a matmul test: integers in [-4, 4] (every product and
// sum exact) or uniform values, from fixed seeds.
static inline void fill_operands(float *a, int64_t na, float *b, int64_t nb, bool ints) {
  if (ints) {
    fill_int(a, na, 4, 6);
    fill_int(b, nb, 4, 7);
  } else {
    fill_unit(a, na, 6);
    fill_unit(b, nb, 7);
  }
}

static inline void ref_ew(const float *x, const float *b, float *y, float a, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + fmaxf(b[i], 0.0f);
}

static inline void ref_row_sum(const float *x, float *out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; r++) {
    float s = 0.0f;
    for (int64_t c = 0; c < cols; c++) s += x[r * cols + c];
    out[r] = s;
  }
}

static inline void ref_softmax(const float *x, float *y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; r++) {
    const float *row = x + r * cols;
    float m = -INFINITY, s = 0.0f;
    for (int64_t c = 0; c < cols; c++) m = fmaxf(m, row[c]);
    for (int64_t c = 0; c < cols; c++) s += expf(row[c] - m);
    for (int64_t c = 0; c < cols; c++) y[r * cols + c] = expf(row[c] - m) / s;
  }
}

static inline void ref_sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n,
                             int64_t k) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; p++) acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
}

// The largest |got - want| / max(1, |want|) over n values (NaN if any is NaN).
static inline double max_rel_err(const float *got, const float *want, int64_t n) {
  double e = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]) / fmax(1.0, fabs((double)want[i]));
    if (isnan(d)) return NAN;
    if (d > e) e = d;
  }
  return e;
}

// A PASS/FAIL line with the error and the bound: "name (max rel err 1e-7 <= 1e-6)".
static inline void check_close(const char *name, const float *got, const float *want, int64_t n,
                               double tol) {
  double e = max_rel_err(got, want, n);
  char line[256];
  snprintf(line, sizeof line, "%s (max rel err %.3g %s %.3g)", name, e, e <= tol ? "<=" : ">", tol);
  check(line, e <= tol);
}

static inline void check_exact(const char *name, const float *got, const float *want, int64_t n) {
  int64_t bad = -1;
  for (int64_t i = 0; i < n && bad < 0; i++)
    if (memcmp(&got[i], &want[i], sizeof(float)) != 0) bad = i;
  char line[256];
  if (bad < 0) snprintf(line, sizeof line, "%s (exact, %lld values)", name, (long long)n);
  else
    snprintf(line, sizeof line, "%s (element %lld: %.9g, want %.9g)", name, (long long)bad,
             got[bad], want[bad]);
  check(line, bad < 0);
}

#endif
