// Compile-check fixture: 160 live accumulators under __launch_bounds__(1024) cannot fit the
// 128 VGPRs a 1024-thread block leaves each lane on gfx90a, so the compiler spills VGPRs.
#include <hip/hip_runtime.h>

__global__ void __launch_bounds__(1024) register_pressure(const float* in, float* out, int n) {
  float acc[160];
#pragma unroll
  for (int j = 0; j < 160; ++j) acc[j] = in[threadIdx.x + j * n];
  for (int it = 0; it < n; ++it) {
#pragma unroll
    for (int j = 0; j < 160; ++j) acc[j] = acc[j] * acc[(j + 1) % 160] + in[it + j];
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 160; ++j) s += acc[j];
  out[threadIdx.x] = s;
}
