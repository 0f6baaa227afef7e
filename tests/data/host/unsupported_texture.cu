// A texture fetch in a kernel: the CPU has no texture units, so this must fail to compile
// with a message that names the feature and this file's line.
#include <hip/hip_runtime.h>

__global__ void sample(hipTextureObject_t tex, float* out) {
    int x = threadIdx.x;
    out[x] = tex2D<float>(tex, x + 0.5f, 0.5f);
}

int main() {
    float* out;
    hipMalloc(&out, 64 * sizeof(float));
    sample<<<1, 64>>>(0, out);
    hipDeviceSynchronize();
    return 0;
}
