// Nested roctx ranges with a per-phase kernel table known exactly (tests/test_phases.py):
//   prefill            fill x2, then (after the nested range) fill x1
//   prefill/attention  scale x3
//   decode             scale x1, entered 4 times
//   io                 (a start/stop range) copy_back x1
//   (no range)         fill x1 at the end
// plus a mark, which is not a range and holds nothing.
#include <hip/hip_runtime.h>
#include <roctracer/roctx.h>
#include <rocprofiler-sdk-roctx/roctx.h>  // both include paths in one program

#include <cstdio>
#include <vector>

__global__ void fill(float* x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}

__global__ void scale(float* x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

__global__ void copy_back(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

int main() {
    const int n = 1 << 12;
    float *x, *y;
    hipMalloc(&x, n * sizeof(float));
    hipMalloc(&y, n * sizeof(float));
    dim3 grid(n / 256), block(256);

    int outer = roctxRangePushA("prefill");
    fill<<<grid, block>>>(x, 1.0f, n);
    fill<<<grid, block>>>(x, 2.0f, n);
    int inner = roctxRangePush("attention");
    for (int i = 0; i < 3; ++i) scale<<<grid, block>>>(x, 2.0f, n);
    int left = roctxRangePop();
    fill<<<grid, block>>>(y, 0.0f, n);
    roctxRangePop();
    roctxMarkA("prefill done");

    for (int step = 0; step < 4; ++step) {
        roctxRangePushA("decode");
        scale<<<grid, block>>>(x, 0.5f, n);
        roctxRangePop();
    }

    roctx_range_id_t io = roctxRangeStartA("io");
    copy_back<<<grid, block>>>(x, y, n);
    roctxRangeStop(io);

    fill<<<grid, block>>>(x, 3.0f, n);
    hipDeviceSynchronize();

    std::vector<float> host(n);
    hipMemcpy(host.data(), y, n * sizeof(float), hipMemcpyDeviceToHost);
    // 2 * 2^3 * 0.5^4 = 1
    // levels as the ROCm libraries return them: pushes the level they open, pops the level left
    const bool ok = host[0] == 1.0f && host[n - 1] == 1.0f && outer == 0 && inner == 1 && left == 1;
    std::printf("%s\n", ok ? "PASSED" : "FAILED");
    hipFree(x);
    hipFree(y);
    return ok ? 0 : 1;
}
