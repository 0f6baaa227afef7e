// One roctxRangePop more than pushes: the library returns -1; rocprofv3 stops such a program, and
// rocm-perf reports it as an error of the profile (tests/test_phases.py).
#include <hip/hip_runtime.h>
#include <rocprofiler-sdk-roctx/roctx.h>

#include <cstdio>

__global__ void touch(int* x) { x[threadIdx.x] = 1; }

int main() {
    int* x;
    hipMalloc(&x, 64 * sizeof(int));
    roctxRangePushA("work");
    touch<<<1, 64>>>(x);
    roctxRangePop();
    const int extra = roctxRangePop();  // nothing is open any more
    hipDeviceSynchronize();
    std::printf("extra pop returned %d\n", extra);
    hipFree(x);
    return extra == -1 ? 0 : 1;
}
