// Runs both kernels (defined in two other files) and checks their sums against plain C++.
#include <cstdio>
#include <vector>

#include "rows.hpp"

int main() {
    const size_t n = static_cast<size_t>(kRows) * kCols;
    std::vector<unsigned char> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    unsigned char* d_data = nullptr;
    unsigned *d_xor = nullptr, *d_weighted = nullptr;
    if (hipMalloc(&d_data, n) != hipSuccess || hipMalloc(&d_xor, kRows * sizeof(unsigned)) != hipSuccess ||
        hipMalloc(&d_weighted, kRows * sizeof(unsigned)) != hipSuccess)
        return 2;
    hipMemcpy(d_data, data.data(), n, hipMemcpyHostToDevice);
    launch_xor_rows(d_data, d_xor, 4);
    launch_weighted_rows(d_data, d_weighted, 2);
    std::vector<unsigned> xor_sums(kRows), weighted(kRows);
    hipMemcpy(xor_sums.data(), d_xor, kRows * sizeof(unsigned), hipMemcpyDeviceToHost);
    hipMemcpy(weighted.data(), d_weighted, kRows * sizeof(unsigned), hipMemcpyDeviceToHost);
    unsigned long long checksum = 0;
    for (int r = 0; r < kRows; ++r) {
        unsigned want_xor = 0, want_weighted = 0;
        for (int c = 0; c < kCols; ++c) {
            const unsigned v = data[static_cast<size_t>(r) * kCols + c];
            want_xor += v ^ (static_cast<unsigned>(c) * 0x9e3779b9u);
            want_weighted += v * static_cast<unsigned>(c & 7);
        }
        if (xor_sums[r] != want_xor || weighted[r] != want_weighted) {
            std::printf("row %d: %u %u vs %u %u\n", r, xor_sums[r], weighted[r], want_xor, want_weighted);
            return 1;
        }
        checksum = checksum * 31 + xor_sums[r] + weighted[r];
    }
    std::printf("checksum %llu\n", checksum);
    return 0;
}
