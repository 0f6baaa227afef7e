// Template kernels: a type parameter, a non-type parameter, and a namespaced kernel.
#include <hip/hip_runtime.h>

template <typename T, int TILE>
__global__ void scale_tiles(T* __restrict__ data, T factor, int n) {
    const int base = blockIdx.x * TILE;
    for (int i = 0; i < TILE; ++i) {
        if (base + i < n) data[base + i] *= factor;
    }
}

namespace ops {
__global__ void add_rows(const float* __restrict__ a, float* b, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) b[i] += a[i];
}
}  // namespace ops

void launch(float* f, double* d, int n) {
    scale_tiles<float, 16><<<n / 16 + 1, 1>>>(f, 2.0f, n);
    scale_tiles<double, 8><<<n / 8 + 1, 1>>>(d, 2.0, n);
    ops::add_rows<<<1, 64>>>(f, f, n);
}
