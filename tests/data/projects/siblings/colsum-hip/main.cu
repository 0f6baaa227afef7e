// Weighted column sums: one thread per column walks every row (a runtime-trip loop).
#include <hip/hip_runtime.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "reference.h"
#include "timer.h"

__global__ void weighted_column_sum(const unsigned* m, unsigned* sums, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    unsigned acc = 0;
    for (int r = 0; r < rows; ++r) {
        acc += m[static_cast<size_t>(r) * cols + c] * static_cast<unsigned>(r + 1);
    }
    sums[c] = acc;
}

int main() {
    std::vector<unsigned> m(static_cast<size_t>(kRows) * kCols);
    for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<unsigned>((i * 2654435761u) >> 20);
    unsigned *d_m = nullptr, *d_sums = nullptr;
    hipMalloc(&d_m, m.size() * sizeof(unsigned));
    hipMalloc(&d_sums, kCols * sizeof(unsigned));
    hipMemcpy(d_m, m.data(), m.size() * sizeof(unsigned), hipMemcpyHostToDevice);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 4; ++i) weighted_column_sum<<<(kCols + 63) / 64, 64>>>(d_m, d_sums, kRows, kCols);
    hipDeviceSynchronize();
    std::printf("kernel time %.3f ms\n", 1e3 * seconds_since(start));
    std::vector<unsigned> sums(kCols);
    hipMemcpy(sums.data(), d_sums, kCols * sizeof(unsigned), hipMemcpyDeviceToHost);
    hipFree(d_m);
    hipFree(d_sums);
    return verify(sums, reference_column_sums(m));
}
