// Compile-check fixture: kernels with known resource traits (LDS, scratch, templates, extern "C").
#include <hip/hip_runtime.h>

template <typename T>
__global__ void scale(T* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

// 256 floats of static shared memory: LDS Size must read 1024 bytes.
__global__ void saxpy_tiled(float* y, const float* x, float a, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) y[i] = a * tile[threadIdx.x] + y[i];
}

// A private array indexed by a runtime value lives in scratch.
__global__ void indexed_local(float* out, int k) {
  float local[64];
  for (int j = 0; j < 64; ++j) local[j] = j * out[j];
  out[threadIdx.x] = local[k & 63];
}

extern "C" __global__ void fill_ones(int* p) { p[threadIdx.x] = 1; }

int main() {
  float* d = nullptr;
  hipMalloc(&d, 256 * sizeof(float));
  hipLaunchKernelGGL(scale<float>, dim3(1), dim3(256), 0, 0, d, 2.f, 256);
  hipLaunchKernelGGL(scale<double>, dim3(1), dim3(128), 0, 0, reinterpret_cast<double*>(d), 2.0, 128);
  hipFree(d);
  return 0;
}
