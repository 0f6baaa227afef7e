// Loops in __device__ helpers reached from the kernel, transitively; a helper with a barrier.
#include <hip/hip_runtime.h>

__device__ float dot4(const float* a, const float* b) {
    float s = 0.0f;
    for (int i = 0; i < 4; ++i) s += a[i] * b[i];
    return s;
}

__device__ float window(const float* a, int at) {
    float s = 0.0f;
    for (int k = -2; k <= 2; ++k) s += dot4(a + at + k, a);
    return s;
}

__device__ void sync_helper() { __syncthreads(); }

__device__ float unused_helper(const float* a) {
    float s = 0.0f;
    for (int i = 0; i < 3; ++i) s += a[i];
    return s;
}

__global__ void helpers_kernel(float* __restrict__ out, int n) {
    for (int t = 0; t < n; ++t) {
        out[threadIdx.x] = window(out, 8);
        sync_helper();
    }
    for (int r = threadIdx.x; r < n; r += 64) {
        sync_helper();
    }
}
