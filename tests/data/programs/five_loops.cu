// Five kernels, one runtime-trip loop each (cheap integer work per element): enough loops for 30
// candidates (5 loops x 7 rule/factor pairs), so that a report test has a run with many candidates.
// Each kernel writes its own row sums; main checks them against a CPU reference.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <vector>

constexpr int kRows = 64;
constexpr int kCols = 4096 + 3;
constexpr int kBlock = 64;

__global__ void rows_xor(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += values[c] ^ static_cast<unsigned>(c);
    }
    sums[row] = acc;
}

__global__ void rows_mul(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += values[c] * (static_cast<unsigned>(c) | 1u);
    }
    sums[row] = acc;
}

__global__ void rows_add(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += values[c] + static_cast<unsigned>(c);
    }
    sums[row] = acc;
}

__global__ void rows_sub(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += values[c] - static_cast<unsigned>(c);
    }
    sums[row] = acc;
}

__global__ void rows_or(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += values[c] | static_cast<unsigned>(c);
    }
    sums[row] = acc;
}

int main() {
    const size_t n = static_cast<size_t>(kRows) * kCols;
    std::vector<unsigned char> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    unsigned char* d_data = nullptr;
    unsigned* d_sums = nullptr;
    if (hipMalloc(&d_data, n) != hipSuccess || hipMalloc(&d_sums, 5 * kRows * sizeof(unsigned)) != hipSuccess) return 2;
    hipMemcpy(d_data, data.data(), n, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(rows_xor, dim3((kRows + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, d_data, d_sums + 0 * kRows, kRows, kCols);
    hipLaunchKernelGGL(rows_mul, dim3((kRows + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, d_data, d_sums + 1 * kRows, kRows, kCols);
    hipLaunchKernelGGL(rows_add, dim3((kRows + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, d_data, d_sums + 2 * kRows, kRows, kCols);
    hipLaunchKernelGGL(rows_sub, dim3((kRows + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, d_data, d_sums + 3 * kRows, kRows, kCols);
    hipLaunchKernelGGL(rows_or, dim3((kRows + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, d_data, d_sums + 4 * kRows, kRows, kCols);
    hipDeviceSynchronize();
    std::vector<unsigned> sums(5 * kRows), expect(5 * kRows, 0u);
    hipMemcpy(sums.data(), d_sums, sums.size() * sizeof(unsigned), hipMemcpyDeviceToHost);
    for (int r = 0; r < kRows; ++r) {
        for (int c = 0; c < kCols; ++c) {
            expect[0 * kRows + r] += static_cast<unsigned>(data[r * kCols + c]) ^ static_cast<unsigned>(c);
            expect[1 * kRows + r] += static_cast<unsigned>(data[r * kCols + c]) * (static_cast<unsigned>(c) | 1u);
            expect[2 * kRows + r] += static_cast<unsigned>(data[r * kCols + c]) + static_cast<unsigned>(c);
            expect[3 * kRows + r] += static_cast<unsigned>(data[r * kCols + c]) - static_cast<unsigned>(c);
            expect[4 * kRows + r] += static_cast<unsigned>(data[r * kCols + c]) | static_cast<unsigned>(c);
        }
    }
    for (size_t i = 0; i < sums.size(); ++i) {
        if (sums[i] != expect[i]) {
            std::fprintf(stderr, "MISMATCH at %zu\n", i);
            return 1;
        }
    }
    std::printf("five_loops PASS\n");
    hipFree(d_data);
    hipFree(d_sums);
    return 0;
}
