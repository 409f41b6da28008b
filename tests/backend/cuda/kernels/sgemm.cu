// sgemm.cu — 16x16 tiled single-precision matmul: each block computes a
// 16x16 tile of c, staging 16x16 tiles of a and b through shared memory with
// two barriers per step of k.
#include "mlc_cuda.h"

#define TILE 16

// c = a @ b; a: (m, k), b: (k, n), c: (m, n); block (16, 16),
// grid (ceil(n / 16), ceil(m / 16)). Accumulates over k in order.
MLC_KERNEL MLC_LAUNCH_BOUNDS(256)
sgemm16(const float *MLC_RESTRICT a, const float *MLC_RESTRICT b, float *MLC_RESTRICT c,
        int64_t m, int64_t n, int64_t k) {
  MLC_SHARED float ta[TILE][TILE];
  MLC_SHARED float tb[TILE][TILE];
  int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
  int64_t row = (int64_t)blockIdx.y * TILE + ty, col = (int64_t)blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += TILE) {
    ta[ty][tx] = row < m && k0 + tx < k ? a[row * k + k0 + tx] : 0.0f;
    tb[ty][tx] = k0 + ty < k && col < n ? b[(k0 + ty) * n + col] : 0.0f;
    MLC_BARRIER();
    for (int j = 0; j < TILE; j++) acc += ta[ty][j] * tb[j][tx];
    MLC_BARRIER();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}
MLC_ENTRY6(sgemm16, const float *, const float *, float *, int64_t, int64_t, int64_t)
