#pragma once
#include <vector>
#include <cmath>
struct __hip_fp8_e4m3_fnuz {
  unsigned char __x;
  __host__ __device__ __hip_fp8_e4m3_fnuz() = default;
  __host__ __device__ __hip_fp8_e4m3_fnuz(float) : __x(0) {}
  __host__ __device__ operator float() const { return 0.0f; }
};
