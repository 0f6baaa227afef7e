// A vector copy with the signature of rocprofiler-compute's vcopy sample kernel, so that the
// compile check's resources join the real MI200/MI300X vcopy workloads in tests/data/rocprof-compute/.
#include <hip/hip_runtime.h>

__global__ void vecCopy(double* a, double* b, double* c, int n, int stride) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    b[i] = a[i];
  }
  (void)c;
  (void)stride;
}

int main() { return 0; }
