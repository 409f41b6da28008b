// gemm_case.h — one GEMM test case for the kernel tests (test_gemm.c,
// test_gemv.c): its shape, flags and scalars, random operands with padded
// rows, mlc_sgemm on them, and kernels/gemm_ref.h's order on the same
// operands.
#ifndef MLC_TEST_GEMM_CASE_H
#define MLC_TEST_GEMM_CASE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm_ref.h"
#include "mlc_kernels.h"
#include "rand_data.h"

typedef struct Case {
  uint32_t flags;
  int64_t m, n, k, pad; // pad: extra elements per row of every operand
  float alpha, beta;
} Case;

typedef struct Operands {
  int64_t lda, ldb, ldc, ldaux;
  float *a, *b, *c0, *bias, *aux;
} Operands;

static void operands_new(const Case *t, Operands *o) {
  int ta = t->flags & MLC_GEMM_TRANS_A, tb = t->flags & MLC_GEMM_TRANS_B;
  o->lda = (ta ? t->m : t->k) + t->pad;
  o->ldb = (tb ? t->k : t->n) + t->pad;
  o->ldc = o->ldaux = t->n + t->pad;
  o->a = rand_buf((ta ? t->k : t->m) * o->lda);
  o->b = rand_buf((tb ? t->n : t->k) * o->ldb);
  o->c0 = rand_buf(t->m * o->ldc);
  o->bias = rand_buf(t->m > t->n ? t->m : t->n);
  o->aux = rand_buf(t->m * o->ldaux);
  for (int64_t i = 0; i < t->m * o->ldaux; i += 7) o->aux[i] = i % 2 ? -0.0f : 0.0f; // mask edges
  if (t->beta == 0) // beta == 0 must not read C
    for (int64_t i = 0; i < t->m * o->ldc; i++) o->c0[i] = NAN;
}

static void operands_free(Operands *o) {
  free(o->a), free(o->b), free(o->c0), free(o->bias), free(o->aux);
}

static float *run(MlcPool *pool, const Case *t, const Operands *o) {
  float *c = malloc((size_t)(t->m * o->ldc) * sizeof *c);
  memcpy(c, o->c0, (size_t)(t->m * o->ldc) * sizeof *c);
  if (mlc_sgemm(pool, t->flags, t->m, t->n, t->k, t->alpha, o->a, o->lda, o->b, o->ldb, t->beta,
                c, o->ldc, o->bias, o->aux, o->ldaux)) {
    free(c);
    return NULL;
  }
  return c;
}

// kernels/gemm_ref.h's mlc_ref_gemm in f32 over the same operands (as doubles).
static double *run_ref(const Case *t, const Operands *o) {
  int ta = t->flags & MLC_GEMM_TRANS_A, tb = t->flags & MLC_GEMM_TRANS_B;
  int64_t na = (ta ? t->k : t->m) * o->lda, nb = (tb ? t->n : t->k) * o->ldb, nc = t->m * o->ldc;
  int64_t nbias = t->m > t->n ? t->m : t->n;
  double *a = malloc(sizeof(double) * (size_t)(na + 1)), *b = malloc(sizeof(double) * (size_t)(nb + 1));
  double *c = malloc(sizeof(double) * (size_t)(nc + 1)), *bias = malloc(sizeof(double) * (size_t)(nbias + 1));
  double *aux = malloc(sizeof(double) * (size_t)(nc + 1));
  for (int64_t i = 0; i < na; i++) a[i] = o->a[i];
  for (int64_t i = 0; i < nb; i++) b[i] = o->b[i];
  for (int64_t i = 0; i < nc; i++) c[i] = o->c0[i], aux[i] = o->aux[i];
  for (int64_t i = 0; i < nbias; i++) bias[i] = o->bias[i];
  mlc_ref_gemm(true, t->flags, t->m, t->n, t->k, t->alpha, a, ta ? 1 : o->lda, ta ? o->lda : 1, b,
               tb ? 1 : o->ldb, tb ? o->ldb : 1, t->beta, c, o->ldc, bias, aux, o->ldaux);
  free(a), free(b), free(bias), free(aux);
  return c;
}

#endif
