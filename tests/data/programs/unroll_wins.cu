// A rewrite must be accepted here: each thread XOR-sums the bytes of one row in a runtime-trip
// loop. The body is so cheap that loop control dominates; unrolled by hand (4 copies per test of
// the bound) it runs faster on a CPU at -O2 (1.3-3x, depending on the machine), with bit-identical integer results.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int kRows = 256;
constexpr int kCols = 65536 + 3;  // not a multiple of 2, 4 or 8: the remainder loop matters
constexpr int kBlock = 64;
constexpr int kLaunches = 8;  // several dispatches per run: a steadier round on a busy host

__global__ void row_xor_sum(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += values[c] ^ static_cast<unsigned>(c);
    }
    sums[row] = acc;
}

int main() {
    const size_t n = static_cast<size_t>(kRows) * kCols;
    std::vector<unsigned char> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    unsigned char* d_data = nullptr;
    unsigned* d_sums = nullptr;
    if (hipMalloc(&d_data, n) != hipSuccess || hipMalloc(&d_sums, kRows * sizeof(unsigned)) != hipSuccess) return 2;
    hipMemcpy(d_data, data.data(), n, hipMemcpyHostToDevice);
    for (int launch = 0; launch < kLaunches; ++launch) {
        hipLaunchKernelGGL(row_xor_sum, dim3((kRows + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, d_data, d_sums, kRows, kCols);
    }
    hipDeviceSynchronize();
    std::vector<unsigned> sums(kRows);
    hipMemcpy(sums.data(), d_sums, kRows * sizeof(unsigned), hipMemcpyDeviceToHost);
    unsigned long long checksum = 0;
    for (int r = 0; r < kRows; ++r) checksum = checksum * 31 + sums[r];
    std::printf("checksum %llu\n", checksum);
    hipFree(d_data);
    hipFree(d_sums);
    return 0;
}
