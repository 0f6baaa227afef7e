// A program for the isolate command's edge cases (tests/test_isolate.py): `step` runs `launches`
// times over one buffer; `exit-after K` makes the program exit with status 3 after K launches,
// `sleep S` makes it sleep S seconds on the host after its launches (a capture to interrupt).
#include <hip/hip_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

__global__ void step(int* values, int n, int add) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) values[i] = values[i] * 3 + add;
}

int main(int argc, char** argv) {
    int exit_after = -1, sleep_s = 0, launches = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "exit-after")) exit_after = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "sleep")) sleep_s = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "launches")) launches = std::atoi(argv[i + 1]);
    }
    const int n = 1000;
    int* d = nullptr;
    if (hipMalloc(&d, n * sizeof(int)) != hipSuccess) return 2;
    for (int k = 0; k < launches; ++k) {
        if (k == exit_after) {
            std::fprintf(stderr, "two_phase: stopping early after %d launches\n", k);
            return 3;
        }
        hipLaunchKernelGGL(step, dim3((n + 127) / 128), dim3(128), 0, 0, d, n, k + 1);
        if (hipDeviceSynchronize() != hipSuccess) return 2;
    }
    if (sleep_s) std::this_thread::sleep_for(std::chrono::seconds(sleep_s));
    int first = 0;
    hipMemcpy(&first, d, sizeof first, hipMemcpyDeviceToHost);
    std::printf("two_phase: first value %d: PASS\n", first);
    return 0;
}
