// Each thread sums the bytes of one row weighted by their column, in a runtime-trip loop.
#include "rows.hpp"

__global__ void row_weighted_sum(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += values[c] * static_cast<unsigned>(c & 7);
    }
    sums[row] = acc;
}

void launch_weighted_rows(const unsigned char* data, unsigned* sums, int launches) {
    hipLaunchKernelGGL(row_weighted_sum, dim3((kRows + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, data, sums, kRows, kCols);
    for (int i = 1; i < launches; ++i)
        row_weighted_sum<<<(kRows + kBlock - 1) / kBlock, kBlock>>>(data, sums, kRows, kCols);
}
