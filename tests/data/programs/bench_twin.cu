// A kernel and its deliberately slower twins, for the acceptance benchmark: the loop runs
// (1000 + EXTRA_PERMILLE) / 1000 times the base trip count, so a build with EXTRA_PERMILLE=53 does
// 5.3 % more work and the plain build is about 5 % faster than it (1 - 1000/1053).
#include <hip/hip_runtime.h>

#include <cstdio>
#include <vector>

#ifndef EXTRA_PERMILLE
#define EXTRA_PERMILLE 0
#endif

constexpr int kThreads = 256;
constexpr int kBaseTrip = 15000;
constexpr int kBlock = 64;

__global__ void hash_chain(unsigned* out, int trip) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned h = 2166136261u ^ static_cast<unsigned>(t);
    for (int i = 0; i < trip; ++i) {
        h = (h ^ static_cast<unsigned>(i)) * 16777619u;
    }
    out[t] = h;
}

int main() {
    const int trip = static_cast<int>((static_cast<long long>(kBaseTrip) * (1000 + EXTRA_PERMILLE)) / 1000);
    unsigned* d_out = nullptr;
    if (hipMalloc(&d_out, kThreads * sizeof(unsigned)) != hipSuccess) return 2;
    for (int launch = 0; launch < 4; ++launch) {
        hipLaunchKernelGGL(hash_chain, dim3(kThreads / kBlock), dim3(kBlock), 0, 0, d_out, trip);
    }
    hipDeviceSynchronize();
    std::vector<unsigned> out(kThreads);
    hipMemcpy(out.data(), d_out, kThreads * sizeof(unsigned), hipMemcpyDeviceToHost);
    unsigned long long checksum = 0;
    for (unsigned v : out) checksum = checksum * 31 + v;
    std::printf("checksum %llu\n", checksum);
    hipFree(d_out);
    return 0;
}
