// Float rows summed in order: a rewrite that keeps four partial sums (four independent chains of
// adds instead of one, several times faster on a CPU at -O2, which keeps a float sum's order)
// changes the sums' last bits. Bit-identical outputs must reject it; a tolerance must accept it.
// The harness checks each row against a double-precision sum and prints the total.
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

constexpr int kRows = 256;
constexpr int kCols = 16384 + 3;
constexpr int kBlock = 64;
constexpr int kLaunches = 4;

__global__ void row_sum(const float* data, float* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* values = data + static_cast<size_t>(row) * cols;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
        acc += values[c];
    }
    sums[row] = acc;
}

int main() {
    const size_t n = static_cast<size_t>(kRows) * kCols;
    std::vector<float> data(n);
    // not dyadic: partial sums round, so their order shows in the last bits
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>((i * 2654435761u >> 13) % 10007) / 10007.0f - 0.5f;
    float* d_data = nullptr;
    float* d_sums = nullptr;
    if (hipMalloc(&d_data, n * sizeof(float)) != hipSuccess || hipMalloc(&d_sums, kRows * sizeof(float)) != hipSuccess)
        return 2;
    hipMemcpy(d_data, data.data(), n * sizeof(float), hipMemcpyHostToDevice);
    for (int launch = 0; launch < kLaunches; ++launch) {
        hipLaunchKernelGGL(row_sum, dim3((kRows + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, d_data, d_sums, kRows, kCols);
    }
    hipDeviceSynchronize();
    std::vector<float> sums(kRows);
    hipMemcpy(sums.data(), d_sums, kRows * sizeof(float), hipMemcpyDeviceToHost);
    double total = 0.0;
    for (int r = 0; r < kRows; ++r) {
        double expected = 0.0;
        for (int c = 0; c < kCols; ++c) expected += data[static_cast<size_t>(r) * kCols + c];
        if (std::fabs(sums[r] - expected) > 1e-2) {
            std::fprintf(stderr, "row %d: %f, expected %f\n", r, sums[r], expected);
            return 1;
        }
        total += sums[r];
    }
    std::printf("total %.6f\n", total);
    hipFree(d_data);
    hipFree(d_sums);
    return 0;
}
