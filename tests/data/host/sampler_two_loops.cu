// One kernel with a cheap loop (8 steps) and an expensive one (600 steps with a division, in a
// helper the compiler inlines): a sampling profiler must put most samples on the expensive loop.
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdio>

__device__ float step(float b) {
    return b * 0.9999f + 0.5f / (1.0f + b * b);
}

__global__ void two_loops(const float* in, float* out, int n, int cheap, int expensive) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = in[i];
    for (int k = 0; k < cheap; ++k) {
        a = a * 0.999f + 0.001f;
    }
    float b = a;
    for (int k = 0; k < expensive; ++k) {
        b = step(b);
    }
    out[i] = a + b;
}

int main() {
    const int n = 1 << 15;
    float *in, *out;
    hipMalloc(&in, n * sizeof(float));
    hipMalloc(&out, n * sizeof(float));
    static float host[1 << 15];
    for (int i = 0; i < n; ++i) host[i] = 0.001f * (i % 997);
    hipMemcpy(in, host, n * sizeof(float), hipMemcpyHostToDevice);
    for (int rep = 0; rep < 4; ++rep) two_loops<<<n / 256, 256>>>(in, out, n, 8, 600);
    hipMemcpy(host, out, n * sizeof(float), hipMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i)
        if (!std::isfinite(host[i])) {
            std::printf("FAILED at %d\n", i);
            return 1;
        }
    std::printf("PASSED\n");
    return 0;
}
