// A template kernel launched with deduced template arguments (`axpy<<<g, b>>>(...)`): the runtime
// names it as the source spells it, and the replay harness rebuilds its arguments as the types the
// launch passed (tests/test_isolate.py).
#include <hip/hip_runtime.h>

#include <cstdio>

template <class T>
__global__ void axpy(T a, const T* x, T* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
    const int n = 5000;
    double *x, *y;
    if (hipMalloc(&x, n * sizeof(double)) != hipSuccess || hipMalloc(&y, n * sizeof(double)) != hipSuccess) return 2;
    double host[n];
    for (int i = 0; i < n; ++i) host[i] = i * 0.5;
    hipMemcpy(x, host, sizeof host, hipMemcpyHostToDevice);
    for (int k = 0; k < 3; ++k) axpy<<<(n + 255) / 256, 256>>>(2.0, (const double*)x, y, n);
    hipMemcpy(host, y, sizeof host, hipMemcpyDeviceToHost);
    std::printf("deduced: y[%d] = %g: %s\n", n - 1, host[n - 1], host[n - 1] == 3 * 2.0 * (n - 1) * 0.5 ? "PASS" : "FAIL");
    return 0;
}
