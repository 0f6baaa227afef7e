// Shared by both kernel files and main: sizes, a device helper, and the launchers' declarations.
#pragma once
#include <hip/hip_runtime.h>

constexpr int kRows = 256;
constexpr int kCols = 16384 + 3;  // not a multiple of 2, 4 or 8: remainder loops matter
constexpr int kBlock = 64;

__device__ inline unsigned mix(unsigned v, unsigned c) { return v ^ (c * 0x9e3779b9u); }

void launch_xor_rows(const unsigned char* data, unsigned* sums, int launches);
void launch_weighted_rows(const unsigned char* data, unsigned* sums, int launches);
