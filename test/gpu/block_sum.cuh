// The probes' CTA-wide sum: warp shuffles, then every thread adds the warps' partial sums
// (partial: THREADS / 32 floats of shared memory). Returns the same total in every thread.
#pragma once

template <int THREADS>
__device__ __forceinline__ float block_sum(float v, float* partial) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(~0u, v, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int w = 0; w < THREADS / 32; ++w) total += partial[w];
  return total;
}
