// Inline GCN assembly in a kernel cannot run on a CPU: the build must stop before the compiler
// with a message that names the instruction and this file's line.
#include <hip/hip_runtime.h>

__global__ void copy(const float* in, float* out) {
    int x = threadIdx.x;
    asm volatile("v_mov_b32_e32 %0, %1" : "=v"(out[x]) : "v"(in[x]));
}

int main() {
    float *in, *out;
    hipMalloc(&in, 64 * sizeof(float));
    hipMalloc(&out, 64 * sizeof(float));
    copy<<<1, 64>>>(in, out);
    hipDeviceSynchronize();
    return 0;
}
