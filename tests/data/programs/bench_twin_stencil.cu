// A memory-bound kernel and its deliberately slower twins, for the acceptance benchmark on a
// program whose time follows the host's speed probe (bench_twin.cu's integer chain does not):
// a 3-point stencil swept over a 1 MiB array, (1000 + EXTRA_PERMILLE) / 1000 times the base number
// of sweeps, so a build with EXTRA_PERMILLE=53 does 5.3 % more sweeps and the plain build is about
// 5 % faster than it. Each sweep is a launch (the next reads what the last wrote).
#include <hip/hip_runtime.h>

#include <cstdio>
#include <vector>

#ifndef EXTRA_PERMILLE
#define EXTRA_PERMILLE 0
#endif

constexpr int kCells = 1 << 18;  // 1 MiB of floats: the L2 and L3 of the benches' cores
constexpr int kBlock = 256;
constexpr int kBaseSweeps = 600;

__global__ void smooth(const float* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float left = in[i > 0 ? i - 1 : n - 1];
    const float right = in[i + 1 < n ? i + 1 : 0];
    out[i] = 0.25f * left + 0.5f * in[i] + 0.25f * right;
}

int main() {
    const int sweeps = static_cast<int>((static_cast<long long>(kBaseSweeps) * (1000 + EXTRA_PERMILLE)) / 1000);
    std::vector<float> host(kCells);
    for (int i = 0; i < kCells; ++i) host[i] = static_cast<float>((i * 7919) % 1000) * 0.001f;
    float *a = nullptr, *b = nullptr;
    if (hipMalloc(&a, kCells * sizeof(float)) != hipSuccess || hipMalloc(&b, kCells * sizeof(float)) != hipSuccess) return 2;
    hipMemcpy(a, host.data(), kCells * sizeof(float), hipMemcpyHostToDevice);
    for (int s = 0; s < sweeps; ++s) {
        hipLaunchKernelGGL(smooth, dim3(kCells / kBlock), dim3(kBlock), 0, 0, a, b, kCells);
        float* t = a;
        a = b;
        b = t;
    }
    hipDeviceSynchronize();
    hipMemcpy(host.data(), a, kCells * sizeof(float), hipMemcpyDeviceToHost);
    double checksum = 0;
    for (int i = 0; i < kCells; i += 64) checksum += host[i];
    std::printf("checksum %.6e\n", checksum);
    hipFree(a);
    hipFree(b);
    return 0;
}
