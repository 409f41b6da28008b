// block_reduce.h — block-wide reductions for the test kernels (reduce.cu,
// softmax.cu): a warp reduces with shuffles, lane 0 of each warp leaves its
// partial in shared memory, and after a barrier every warp reduces the
// partials with a butterfly (__shfl_xor_sync), so every thread of the block
// gets the result. blockDim.x must be a multiple of 32 (at most 1024) and
// blockDim.y = blockDim.z = 1; part: blockDim.x / 32 floats of shared memory.
// Handed to NVRTC as an in-memory header.
#ifndef BLOCK_REDUCE_H
#define BLOCK_REDUCE_H

// lane 0 gets the sum of v over the warp's 32 lanes
MLC_DEVICE float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

MLC_DEVICE float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, off));
  return v;
}

// every thread gets the sum (max) of v over the block
MLC_DEVICE float block_sum(float v, float *part) {
  unsigned lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  v = warp_sum(v);
  if (lane == 0) part[warp] = v;
  MLC_BARRIER();
  v = lane < blockDim.x / warpSize ? part[lane] : 0.0f;
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  MLC_BARRIER(); // part is free for the next reduction
  return v;
}

MLC_DEVICE float block_max(float v, float *part) {
  unsigned lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  v = warp_max(v);
  if (lane == 0) part[warp] = v;
  MLC_BARRIER();
  v = lane < blockDim.x / warpSize ? part[lane] : -INFINITY;
  for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
  MLC_BARRIER();
  return v;
}

#endif
