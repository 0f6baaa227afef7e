// Two device-to-host copies (one synchronous, one asynchronous) whose digests the trace keeps.
// -DPERTURB changes one element of the second buffer only.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <vector>

__global__ void fill(int* out, int n, int salt) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i * 31 + salt;
}

int main() {
    const int n = 4096;
    int *a, *b;
    hipMalloc(&a, n * sizeof(int));
    hipMalloc(&b, n * sizeof(int));
    std::vector<int> host(n, 7);
    hipMemcpy(a, host.data(), n * sizeof(int), hipMemcpyHostToDevice);  // host to device: no digest
    fill<<<n / 128, 128>>>(a, n, 1);
    hipMemcpy(host.data(), a, n * sizeof(int), hipMemcpyDeviceToHost);
    hipStream_t s;
    hipStreamCreate(&s);
    fill<<<n / 128, 128, 0, s>>>(b, n, 2);
#ifdef PERTURB
    int one = 12345;
    hipMemcpyAsync(b + 100, &one, sizeof(int), hipMemcpyHostToDevice, s);
#endif
    hipMemcpyAsync(host.data(), b, n * sizeof(int), hipMemcpyDeviceToHost, s);
    hipStreamSynchronize(s);
    long long sum = 0;
    for (int v : host) sum += v;
    std::printf("checksum %lld\n", sum);
    return 0;
}
