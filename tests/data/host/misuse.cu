// Launches a correct program never makes: `big-block` asks for 2048 threads per block (an
// invalid configuration HIP reports through hipGetLastError); `non-uniform` reaches a barrier
// from one thread only (the runtime stops with a message rather than computing garbage).
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstring>

__global__ void touch(int* x) { x[threadIdx.x] = 1; }

__global__ void non_uniform_barrier(int* x) {
    if (threadIdx.x == 5) __syncthreads();
    x[threadIdx.x] = 1;
}

int main(int argc, char** argv) {
    int* d;
    hipMalloc(&d, 4096 * sizeof(int));
    if (argc > 1 && std::strcmp(argv[1], "big-block") == 0) {
        touch<<<1, 2048>>>(d);
        hipError_t e = hipGetLastError();
        std::printf("%s\n", hipGetErrorName(e));
        return e == hipErrorInvalidConfiguration ? 0 : 1;
    }
    if (argc > 1 && std::strcmp(argv[1], "non-uniform") == 0) {
        non_uniform_barrier<<<1, 64>>>(d);
        hipDeviceSynchronize();
        return 0;
    }
    std::printf("usage: misuse big-block|non-uniform\n");
    return 2;
}
