// The speed probe beside another launch (dispatch_clocks.h): `hold` on one stream spins until the
// host releases it; meanwhile `short_work` launches on a second stream, so the probe its stream
// worker takes runs beside `hold` and must be dropped. `hold` itself started with nothing else
// running: its probe is kept. Host backend only (the host reads and writes device memory directly).
#include <hip/hip_runtime.h>

#include <cstdio>

__global__ void hold(volatile int* flags) {
    flags[0] = 1;  // started
    while (flags[1] == 0) {
    }
}

__global__ void short_work(unsigned* out) {
    unsigned h = threadIdx.x;
    for (int i = 0; i < 1000; ++i) h = h * 16777619u + i;
    out[threadIdx.x] = h;
}

int main() {
    int* flags = nullptr;
    unsigned* out = nullptr;
    hipStream_t first, second;
    if (hipMalloc(&flags, 2 * sizeof(int)) != hipSuccess || hipMalloc(&out, 64 * sizeof(unsigned)) != hipSuccess) return 2;
    hipMemset(flags, 0, 2 * sizeof(int));
    hipStreamCreate(&first);
    hipStreamCreate(&second);
    hipLaunchKernelGGL(hold, dim3(1), dim3(1), 0, first, flags);
    volatile int* shared = flags;
    while (shared[0] == 0) {
    }
    hipLaunchKernelGGL(short_work, dim3(1), dim3(64), 0, second, out);
    hipStreamSynchronize(second);
    shared[1] = 1;
    hipDeviceSynchronize();
    std::printf("released\n");
    return 0;
}
