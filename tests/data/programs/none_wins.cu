// No rewrite should be accepted here: each thread runs a chain of dependent float divisions over
// its row. The division's latency bounds the loop; unrolling (by pragma or by hand) keeps the same
// chain in the same order, so it cannot be faster by any real margin. Four divisions per element,
// not one: with one, the loop's own overhead was a few percent of an iteration, and on an AMD EPYC
// (Zen 3) VM `#pragma unroll 4` measured 3 % faster (0.967 [0.950, 0.979], 15 pairs), a real gain
// the loop rightly accepted; with four, both unrolls measure within 1 % of the original there.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <vector>

constexpr int kRows = 256;
constexpr int kCols = 2048;
constexpr int kBlock = 64;

__global__ void row_div_chain(const float* data, float* out, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* values = data + static_cast<size_t>(row) * cols;
    float acc = 1.0f;
    for (int c = 0; c < cols; ++c) {
        const float d = 1.0f + values[c];
        acc = acc / d + 1.0f;
        acc = acc / d + 1.0f;
        acc = acc / d + 1.0f;
        acc = acc / d + 1.0f;
    }
    out[row] = acc;
}

int main() {
    const size_t n = static_cast<size_t>(kRows) * kCols;
    std::vector<float> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>((i * 2654435761u) >> 20) / 4096.0f;
    float* d_data = nullptr;
    float* d_out = nullptr;
    if (hipMalloc(&d_data, n * sizeof(float)) != hipSuccess || hipMalloc(&d_out, kRows * sizeof(float)) != hipSuccess) return 2;
    hipMemcpy(d_data, data.data(), n * sizeof(float), hipMemcpyHostToDevice);
    hipLaunchKernelGGL(row_div_chain, dim3((kRows + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, d_data, d_out, kRows, kCols);
    hipDeviceSynchronize();
    std::vector<float> out(kRows);
    hipMemcpy(out.data(), d_out, kRows * sizeof(float), hipMemcpyDeviceToHost);
    double checksum = 0.0;
    for (int r = 0; r < kRows; ++r) checksum += out[r] * (r + 1);
    std::printf("checksum %.6f\n", checksum);
    hipFree(d_data);
    hipFree(d_out);
    return 0;
}
