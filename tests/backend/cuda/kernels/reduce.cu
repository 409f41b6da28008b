// reduce.cu — row reduction with warp shuffles, dynamic shared memory and
// barriers, and a whole-array sum that combines blocks with atomicAdd.
#include "mlc_cuda.h"
#include "block_reduce.h"

// out[r] = sum over c of x[r, c]; x: (rows, cols), out: (rows). One block
// per row; dynamic shared memory: blockDim.x / 32 floats.
MLC_KERNEL row_sum(const float *MLC_RESTRICT x, float *MLC_RESTRICT out, int64_t cols) {
  MLC_DYN_SHARED(float, part);
  const float *row = x + (int64_t)blockIdx.x * cols;
  float acc = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) acc += row[c];
  acc = block_sum(acc, part);
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}
MLC_ENTRY3(row_sum, const float *, float *, int64_t)

// *total += sum of x; x: (n). Each block reduces its grid-stride share;
// thread 0 adds it with atomicAdd (total starts at 0).
MLC_KERNEL MLC_LAUNCH_BOUNDS(256) sum_atomic(const float *MLC_RESTRICT x, float *total, int64_t n) {
  MLC_SHARED float part[8];
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  float acc = 0.0f;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc += x[i];
  acc = block_sum(acc, part);
  if (threadIdx.x == 0) atomicAdd(total, acc);
}
MLC_ENTRY3(sum_atomic, const float *, float *, int64_t)
