// conv_winograd.h — what conv.c's entry points call for MLC_CONV_WINOGRAD
// (conv_winograd.c; the order is kernels/winograd_ref.h's).
#ifndef MLC_CONV_WINOGRAD_H
#define MLC_CONV_WINOGRAD_H

#include <stdbool.h>
#include <stdint.h>

#include "conv_internal.h"
#include "mlc_kernels.h"

// Whether flags ask for Winograd and the geometry takes it (3x3, strides
// and dilations 1, one group, C > 0, no bf16/f16): winograd_ref.h's
// mlc_winograd_applies, less C == 0 (whose direct result is the same zeros).
bool conv_winograd_applies(const Conv *k, uint32_t flags);

// y = conv2d(x, w) (+ bias, relu) by F(2x2, 3x3), and with yp != NULL its
// 2 x 2 stride-2 max pool yp [N, O, HO/2, WO/2] (mlc_max_pool2d's values);
// y == NULL (with yp): y is not written (a temporary where needed).
// 0, or -1 when a buffer could not be allocated.
int conv_winograd(MlcPool *pool, const Conv *k, uint32_t flags, const float *x, const float *w, const float *bias,
                  float *y, float *yp);

// mlc_conv2d_grad_input with MLC_CONV_WINOGRAD: where conv_winograd_applies,
// O > 0 and both paddings are at most 2, dx as the Winograd convolution of
// dy with the flipped, transposed filter (winograd_ref.h's grad order).
bool conv_winograd_grad_applies(const Conv *k, uint32_t flags);
int conv_winograd_grad_input(MlcPool *pool, const Conv *k, uint32_t flags, const float *dy, const float *w,
                             float *dx);

#endif
