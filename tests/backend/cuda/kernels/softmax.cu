// softmax.cu — row softmax in two passes: softmax_stats reduces each row to
// its max and the sum of exp(x - max) (one block per row), softmax_apply
// writes exp(x - max) / sum (one thread per element).
#include "mlc_cuda.h"
#include "block_reduce.h"

// stats[2r] = max_c x[r, c], stats[2r + 1] = sum_c exp(x[r, c] - stats[2r]);
// x: (rows, cols), stats: (rows, 2); dynamic shared: blockDim.x / 32 floats
MLC_KERNEL softmax_stats(const float *MLC_RESTRICT x, float *MLC_RESTRICT stats, int64_t cols) {
  MLC_DYN_SHARED(float, part);
  const float *row = x + (int64_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  m = block_max(m, part);
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
  s = block_sum(s, part);
  if (threadIdx.x == 0) {
    stats[2 * (int64_t)blockIdx.x] = m;
    stats[2 * (int64_t)blockIdx.x + 1] = s;
  }
}
MLC_ENTRY3(softmax_stats, const float *, float *, int64_t)

// y[r, c] = exp(x[r, c] - stats[2r]) / stats[2r + 1]; x, y: (rows, cols)
MLC_KERNEL MLC_LAUNCH_BOUNDS(256)
softmax_apply(const float *MLC_RESTRICT x, const float *MLC_RESTRICT stats, float *MLC_RESTRICT y,
              int64_t rows, int64_t cols) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows * cols; i += stride) {
    int64_t r = i / cols;
    y[i] = expf(x[i] - stats[2 * r]) / stats[2 * r + 1];
  }
}
MLC_ENTRY5(softmax_apply, const float *, const float *, float *, int64_t, int64_t)
