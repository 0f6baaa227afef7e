#pragma once
struct __hip_bfloat16 {
  unsigned short data;
  __host__ __device__ __hip_bfloat16() = default;
  __host__ __device__ __hip_bfloat16(float) : data(0) {}
  __host__ __device__ operator float() const { return 0.0f; }
};
