// Barriers in loops with uniform and per-thread trip counts.
#include <hip/hip_runtime.h>

__global__ void barrier_loops(float* __restrict__ data, int n) {
    __shared__ float tile[64];
    const int steps = (n + 63) / 64;
    for (int s = 0; s < steps; ++s) {
        tile[threadIdx.x] = data[s * 64 + threadIdx.x];
        __syncthreads();
        data[s] += tile[63 - threadIdx.x];
        __syncthreads();
    }
    for (int t = threadIdx.x; t < n; t += 64) {
        __syncthreads();
        data[t] += 1.0f;
    }
}
