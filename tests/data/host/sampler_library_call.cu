// One loop whose time is spent in a math library call (expf is a call into libm on the CPU):
// the sampler must count that time for the line and the loop that made the call.
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdio>

__global__ void soft_sum(const float* in, float* out, int n, int steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < steps; ++k) {
        acc += expf(-in[i] * static_cast<float>(k) * 0.001f);
    }
    out[i] = acc;
}

int main() {
    const int n = 1 << 14;
    float *in, *out;
    hipMalloc(&in, n * sizeof(float));
    hipMalloc(&out, n * sizeof(float));
    static float host[1 << 14];
    for (int i = 0; i < n; ++i) host[i] = 0.001f * (i % 991);
    hipMemcpy(in, host, n * sizeof(float), hipMemcpyHostToDevice);
    for (int rep = 0; rep < 3; ++rep) soft_sum<<<n / 128, 128>>>(in, out, n, 400);
    hipMemcpy(host, out, n * sizeof(float), hipMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i)
        if (!std::isfinite(host[i])) {
            std::printf("FAILED at %d\n", i);
            return 1;
        }
    std::printf("PASSED\n");
    return 0;
}
