// Kernels and a launch in a header, included by both translation units: a template kernel
// launched with deduced arguments, dynamic shared memory declared in the header, and an inline
// host function that launches with <<<>>>.
#pragma once
#include <hip/hip_runtime.h>

template <class T>
__global__ void scale_add(T* data, T factor, T offset, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = data[i] * factor + offset;
}

// Block sums through dynamic shared memory (sized by the launch).
template <class T>
__global__ void block_sums(const T* in, T* out, int n) {
    extern __shared__ unsigned char raw[];
    T* partial = reinterpret_cast<T*>(raw);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    partial[threadIdx.x] = i < n ? in[i] : T(0);
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

// Block maxima through HIP's macro for dynamic shared memory.
static __global__ void block_max(const float* in, float* out, int n) {
    HIP_DYNAMIC_SHARED(float, best)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    best[threadIdx.x] = i < n ? in[i] : -1e30f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s && best[threadIdx.x + s] > best[threadIdx.x]) best[threadIdx.x] = best[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = best[0];
}

template <class T>
inline void sum_blocks(const T* in, T* out, int n, int block) {
    block_sums<<<(n + block - 1) / block, block, block * sizeof(T)>>>(in, out, n);
}

// Defined in square.cu, launched from main.cu.
__global__ void square(float* data, int n);
void run_square(float* data, int n);
