// Tiled matrix multiply through static shared memory and __syncthreads(); a barrier-free
// vector add; the result is checked against a CPU reference (exit 1 on mismatch).
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdio>
#include <vector>

#define TILE 16

__global__ void tiled_matmul(const float* __restrict__ a, const float* __restrict__ b, float* c, int n) {
    __shared__ float ta[TILE][TILE];
    __shared__ float tb[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n / TILE; ++t) {
        ta[threadIdx.y][threadIdx.x] = a[row * n + t * TILE + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
}

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main() {
    const int n = 64;
    std::vector<float> a(n * n), b(n * n), c(n * n), ref(n * n);
    for (int i = 0; i < n * n; ++i) {
        a[i] = float(i % 7) - 3.0f;
        b[i] = float(i % 5) * 0.5f;
    }
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0;
            for (int k = 0; k < n; ++k) s += a[i * n + k] * b[k * n + j];
            ref[i * n + j] = s;
        }
    float *da, *db, *dc;
    hipMalloc(&da, n * n * sizeof(float));
    hipMalloc(&db, n * n * sizeof(float));
    hipMalloc(&dc, n * n * sizeof(float));
    hipMemcpy(da, a.data(), n * n * sizeof(float), hipMemcpyHostToDevice);
    hipMemcpy(db, b.data(), n * n * sizeof(float), hipMemcpyHostToDevice);
    for (int rep = 0; rep < 3; ++rep)
        tiled_matmul<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(da, db, dc, n);
    hipMemcpy(c.data(), dc, n * n * sizeof(float), hipMemcpyDeviceToHost);
    for (int i = 0; i < n * n; ++i)
        if (std::fabs(c[i] - ref[i]) > 1e-3f) {
            std::printf("matmul mismatch at %d: %f vs %f\n", i, c[i], ref[i]);
            return 1;
        }
    hipLaunchKernelGGL(vector_add, dim3((n * n + 255) / 256), dim3(256), 0, 0, da, db, dc, n * n);
    hipMemcpy(c.data(), dc, n * n * sizeof(float), hipMemcpyDeviceToHost);
    for (int i = 0; i < n * n; ++i)
        if (c[i] != a[i] + b[i]) {
            std::printf("vector_add mismatch at %d\n", i);
            return 1;
        }
    double sum = 0;
    for (float v : c) sum += v;
    std::printf("checksum %.3f\n", sum);
    hipFree(da);
    hipFree(db);
    hipFree(dc);
    return 0;
}
