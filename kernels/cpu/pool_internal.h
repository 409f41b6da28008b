// pool_internal.h — what pool.c and pool_pick.c share with their AVX-512
// and AVX2 rows (pool_avx512.c, pool_avx2.c).
#ifndef MLC_POOL_INTERNAL_H
#define MLC_POOL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

// One plane of a 2 x 2, stride-2 max pool: x [h, w] -> y [h/2, w/2], and
// its gradient (dx [h, w] written whole; aux NULL or the relu mask's
// plane). The same picks and values as pool.c's scalar loops.
void pool_max2x2_avx512(int64_t h, int64_t w, const float *x, float *y);
void pool_max2x2_grad_avx512(int64_t h, int64_t w, const float *dy, const float *x, const float *aux,
                             float *dx);
// The same rows with AVX2 (the CPUs without AVX-512), and in scalar code
// (pool.c's loops for the 2 x 2 window; the tests compare all three).
void pool_max2x2_avx2(int64_t h, int64_t w, const float *x, float *y);
void pool_max2x2_grad_avx2(int64_t h, int64_t w, const float *dy, const float *x, const float *aux, float *dx);
void pool_max2x2_scalar(int64_t h, int64_t w, const float *x, float *y);
void pool_max2x2_grad_scalar(int64_t h, int64_t w, const float *dy, const float *x, const float *aux, float *dx);

// The rows the planes below run on this CPU: POOL_ROWS_AVX512 where it has
// AVX-512, else POOL_ROWS_AVX2 where it has AVX2 and FMA, else the scalar
// ones (every row gives the same bits; asked once).
typedef enum { POOL_ROWS_SCALAR, POOL_ROWS_AVX2, POOL_ROWS_AVX512 } PoolRows;
PoolRows pool_rows(void);

// 2 x 2, stride-2 max pools of `planes` planes x [h, w] -> y [h/2, w/2]
// (h, w >= 2) on the calling thread: mlc_max_pool2d's values. The
// convolution's fused pool (mlc_conv2d_pool) runs it on each image's
// output while that is in cache.
void pool_max2x2_planes(int64_t planes, int64_t h, int64_t w, const float *x, float *y);
// Its gradient over `planes` planes on the calling thread (aux NULL or the
// relu mask): mlc_max_pool2d_grad's values. conv2d_grad_weight_pool builds
// each image's dy with it.
void pool_max2x2_grad_planes(int64_t planes, int64_t h, int64_t w, const float *dy, const float *x,
                             const float *aux, float *dx);

// The same with the windows' picks (mlc_kernels.h, MLC_PICK_*):
// pool_max2x2_avx512 that also writes pick [h/2, w/2], and the gradient
// from the picks alone (mask: the MLC_PICK_POS bit masks the value).
void pool_max2x2_pick_avx512(int64_t h, int64_t w, const float *x, float *y, uint8_t *pick);
void pool_max2x2_grad_pick_avx512(int64_t h, int64_t w, bool mask, const float *dy, const uint8_t *pick,
                                  float *dx);
void pool_max2x2_pick_avx2(int64_t h, int64_t w, const float *x, float *y, uint8_t *pick);
void pool_max2x2_grad_pick_avx2(int64_t h, int64_t w, bool mask, const float *dy, const uint8_t *pick,
                                float *dx);
// One plane of each in scalar code (where the CPU has neither; the tests
// compare all three).
void pool_max2x2_pick_scalar(int64_t h, int64_t w, const float *x, float *y, uint8_t *pick);
void pool_max2x2_grad_pick_scalar(int64_t h, int64_t w, bool mask, const float *dy, const uint8_t *pick,
                                  float *dx);
// Their planes on the calling thread (pool_pick.c; the rows pool_rows()
// names): the fused forward writes each image's picks,
// conv2d_grad_weight_pick builds each image's dy from them.
void pool_max2x2_pick_planes(int64_t planes, int64_t h, int64_t w, const float *x, float *y, uint8_t *pick);
void pool_max2x2_grad_pick_planes(int64_t planes, int64_t h, int64_t w, bool mask, const float *dy,
                                  const uint8_t *pick, float *dx);

#endif
