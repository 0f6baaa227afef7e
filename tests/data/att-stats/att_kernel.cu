#include <hip/hip_runtime.h>

__global__ void att_kernel(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
        acc += in[i + k * 256];
    }
    for (int k = 0; k < 4; ++k) {
        acc = acc * 1.5f + 1.0f;
    }
    out[i] = acc;
}
