// A warp reduction with __shfl_down: the host backend cannot run lanes in lock-step, so this
// must fail to compile with a message that names the feature and this file's line.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void warp_sum(const float* in, float* out) {
    float v = in[threadIdx.x];
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down(v, offset);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}

int main() {
    float *in, *out;
    hipMalloc(&in, 64 * sizeof(float));
    hipMalloc(&out, sizeof(float));
    warp_sum<<<1, 64>>>(in, out);
    hipDeviceSynchronize();
    std::printf("done\n");
    return 0;
}
