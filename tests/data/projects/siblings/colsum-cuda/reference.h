// The plain C++ reference both versions of the benchmark check against.
#pragma once
#include <cstddef>
#include <vector>

constexpr int kRows = 2048;
constexpr int kCols = 256;

inline std::vector<unsigned> reference_column_sums(const std::vector<unsigned>& m) {
    std::vector<unsigned> sums(kCols, 0u);
    for (int r = 0; r < kRows; ++r)
        for (int c = 0; c < kCols; ++c) sums[c] += m[static_cast<size_t>(r) * kCols + c] * static_cast<unsigned>(r + 1);
    return sums;
}

int verify(const std::vector<unsigned>& got, const std::vector<unsigned>& want);
