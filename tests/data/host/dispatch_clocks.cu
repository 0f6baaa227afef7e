// Per-dispatch clocks of the host runtime (dispatch_clocks.h): the same kernel at a trip count
// and at twice it (twice the instructions), then a kernel whose blocks record the CPU they ran
// on (sched_getcpu: host backend only), to see pinning. Usage: dispatch_clocks [trip]
#include <hip/hip_runtime.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

constexpr int kBlocks = 16;
constexpr int kBlock = 64;

__global__ void hash_chain(unsigned* out, int trip) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned h = 2166136261u ^ static_cast<unsigned>(t);
    for (int i = 0; i < trip; ++i) h = (h ^ static_cast<unsigned>(i)) * 16777619u;
    out[t] = h;
}

__global__ void where_blocks_ran(int* cpu) {
    unsigned h = threadIdx.x;
    for (int i = 0; i < 20000; ++i) h = h * 16777619u + i;  // long enough for helpers to join in
    if (threadIdx.x == 0) cpu[blockIdx.x] = sched_getcpu() + static_cast<int>(h & 0);
}

int main(int argc, char** argv) {
    const int trip = argc > 1 ? std::atoi(argv[1]) : 20000;
    unsigned* d_out = nullptr;
    int* d_cpu = nullptr;
    if (hipMalloc(&d_out, kBlocks * kBlock * sizeof(unsigned)) != hipSuccess) return 2;
    if (hipMalloc(&d_cpu, kBlocks * sizeof(int)) != hipSuccess) return 2;
    hipLaunchKernelGGL(hash_chain, dim3(kBlocks), dim3(kBlock), 0, 0, d_out, trip);
    hipLaunchKernelGGL(hash_chain, dim3(kBlocks), dim3(kBlock), 0, 0, d_out, 2 * trip);
    hipLaunchKernelGGL(where_blocks_ran, dim3(kBlocks), dim3(kBlock), 0, 0, d_cpu);
    hipDeviceSynchronize();
    std::vector<int> cpu(kBlocks);
    hipMemcpy(cpu.data(), d_cpu, kBlocks * sizeof(int), hipMemcpyDeviceToHost);
    std::set<int> seen(cpu.begin(), cpu.end());
    std::printf("cpus:");
    for (int c : seen) std::printf(" %d", c);
    std::printf("\n");
    hipFree(d_out);
    hipFree(d_cpu);
    return 0;
}
