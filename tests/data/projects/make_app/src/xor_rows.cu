// Each thread XOR-mixes the bytes of one row in a runtime-trip loop: loop control dominates.
#include "rows.hpp"

__global__ void row_xor_sum(const unsigned char* data, unsigned* sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {
        acc += mix(values[c], static_cast<unsigned>(c));
    }
    sums[row] = acc;
}

void launch_xor_rows(const unsigned char* data, unsigned* sums, int launches) {
    for (int i = 0; i < launches; ++i)
        row_xor_sum<<<(kRows + kBlock - 1) / kBlock, kBlock>>>(data, sums, kRows, kCols);
}
