// Compile-check fixture: an MFMA accumulator. gfx908 keeps MFMA accumulators in AGPRs.
#include <hip/hip_runtime.h>

typedef float float16v __attribute__((ext_vector_type(16)));

__global__ void mfma_tile(const float* a, const float* b, float* c) {
  float16v acc = {};
  for (int k = 0; k < 64; ++k)
    acc = __builtin_amdgcn_mfma_f32_32x32x2f32(a[threadIdx.x + k], b[threadIdx.x + k], acc, 0, 0, 0);
  for (int j = 0; j < 16; ++j) c[threadIdx.x * 16 + j] = acc[j];
}
