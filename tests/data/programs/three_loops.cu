// Three kernels, each with one runtime-trip loop whose body is cheap integer work: after the best
// loop's rewrite is accepted, the other two loops' screened rewrites are carried onto it together
// (a combination), and alone when the combination does not pay.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <vector>

constexpr int kRows = 128;
constexpr int kCols = 32768 + 5;
constexpr int kBlock = 64;

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

__global__ void row_weighted_sum(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += values[c] * (static_cast<unsigned>(c) | 1u);
    }
    sums[row] = acc;
}

__global__ void row_shift_sum(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += static_cast<unsigned>(values[c]) << (c & 3);
    }
    sums[row] = acc;
}

int main() {
    const size_t n = static_cast<size_t>(kRows) * kCols;
    std::vector<unsigned char> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    unsigned char* d_data = nullptr;
    unsigned* d_sums = nullptr;
    if (hipMalloc(&d_data, n) != hipSuccess || hipMalloc(&d_sums, 3 * kRows * sizeof(unsigned)) != hipSuccess) return 2;
    hipMemcpy(d_data, data.data(), n, hipMemcpyHostToDevice);
    const dim3 grid((kRows + kBlock - 1) / kBlock);
    hipLaunchKernelGGL(row_xor_sum, grid, dim3(kBlock), 0, 0, d_data, d_sums, kRows, kCols);
    hipLaunchKernelGGL(row_weighted_sum, grid, dim3(kBlock), 0, 0, d_data, d_sums + kRows, kRows, kCols);
    hipLaunchKernelGGL(row_shift_sum, grid, dim3(kBlock), 0, 0, d_data, d_sums + 2 * kRows, kRows, kCols);
    hipDeviceSynchronize();
    std::vector<unsigned> sums(3 * kRows);
    hipMemcpy(sums.data(), d_sums, sums.size() * sizeof(unsigned), hipMemcpyDeviceToHost);
    unsigned long long checksum = 0;
    for (unsigned s : sums) checksum = checksum * 31 + s;
    std::printf("checksum %llu\n", checksum);
    hipFree(d_data);
    hipFree(d_sums);
    return 0;
}
