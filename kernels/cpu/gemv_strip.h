// gemv_strip.h — the dispatch every small-M strip kernel file
// (gemv_avx512.c, gemv_avx2.c) instantiates alike: one function per form
// of B (gemv.h's GemvB), each a switch over rows (mr) and vectors (nv) so
// that strip's R, NV and FORM are constants and its accumulators stay in
// registers, and strip_any, the GemvKernel entry. Included once, after
// the file defines:
//   GEMV_LANES      columns per vector (16, 8)
//   GEMV_LAST       the type of a strip's tail mask (__mmask16, __m256i)
//   gemv_last(t)    the tail mask of t columns, 1 <= t <= GEMV_LANES
//   strip(FORM, R, NV, kc, a, rsa, csa, b, rsb, last, c, ldc, e)
//   NV_CASES(F, R)  strip(F, R, nv, ARGS); return; for each nv the file's
//                   register budget allows with R rows
#ifndef MLC_GEMV_STRIP_H
#define MLC_GEMV_STRIP_H

#define ARGS kc, a, rsa, csa, b, rsb, last, c, ldc, e
#define MR_CASES(F)                                                                              \
  switch (mr) {                                                                                  \
  case 1: NV_CASES(F, 1) return;                                                                 \
  case 2: NV_CASES(F, 2) return;                                                                 \
  case 3: NV_CASES(F, 3) return;                                                                 \
  case 4: NV_CASES(F, 4) return;                                                                 \
  }                                                                                              \
  return;

// One function per form keeps each switch small.
#define FORM_FN(name, F)                                                                         \
  static void name(int64_t kc, const float *a, int64_t rsa, int64_t csa, const char *b,          \
                   int64_t rsb, int mr, int nv, GEMV_LAST last, float *c, int64_t ldc,           \
                   const GemmEpi *e) {                                                           \
    MR_CASES(F)                                                                                  \
  }
FORM_FN(strip_f32, GEMV_B_F32)
FORM_FN(strip_round_bf16, GEMV_B_ROUND_BF16)
FORM_FN(strip_round_f16, GEMV_B_ROUND_F16)
FORM_FN(strip_bf16, GEMV_B_BF16)
FORM_FN(strip_f16, GEMV_B_F16)

// rsb counts elements of B's form; strip takes it in bytes.
static void strip_any(int form, int64_t kc, const float *a, int64_t rsa, int64_t csa, const void *b,
                      int64_t rsb, int mr, int nr, float *c, int64_t ldc, const GemmEpi *e) {
  int nv = (nr + GEMV_LANES - 1) / GEMV_LANES;
  GEMV_LAST last = gemv_last(nr % GEMV_LANES ? nr % GEMV_LANES : GEMV_LANES);
  const char *bb = b;
  switch (form) {
  case GEMV_B_F32: strip_f32(kc, a, rsa, csa, bb, rsb * 4, mr, nv, last, c, ldc, e); return;
  case GEMV_B_ROUND_BF16: strip_round_bf16(kc, a, rsa, csa, bb, rsb * 4, mr, nv, last, c, ldc, e); return;
  case GEMV_B_ROUND_F16: strip_round_f16(kc, a, rsa, csa, bb, rsb * 4, mr, nv, last, c, ldc, e); return;
  case GEMV_B_BF16: strip_bf16(kc, a, rsa, csa, bb, rsb * 2, mr, nv, last, c, ldc, e); return;
  case GEMV_B_F16: strip_f16(kc, a, rsa, csa, bb, rsb * 2, mr, nv, last, c, ldc, e); return;
  }
}

#endif
