// Two streams that really overlap, ordered by events: stream A produces, stream B waits for
// A's event before consuming (unless built with -DMISSING_WAIT, which drops that wait: the
// program's own check then catches the race in asynchronous mode). A template kernel checks
// that launches of template instantiations are named as the device compiler mangles them.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <vector>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        hipError_t err = (call);                                                         \
        if (err != hipSuccess) {                                                         \
            std::printf("%s failed: %s\n", #call, hipGetErrorString(err));               \
            return 2;                                                                    \
        }                                                                                \
    } while (0)

// Slow on purpose: a long dependent chain per element, so the consumer would overtake it.
__global__ void produce(float* data, int n, int rounds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = 0.0f;
    for (int r = 0; r < rounds; ++r) v = v * 0.5f + 1.0f;  // converges to 2
    data[i] = v + float(i % 3);
}

template <typename T, int Scale>
__global__ void consume(const T* in, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * T(Scale);
}

__global__ void side_work(int* counter) {
    if (threadIdx.x == 0) atomicAdd(counter, 1);
}

int main() {
    const int n = 1 << 14;
    float *data, *out;
    int* counter;
    CHECK(hipMalloc(&data, n * sizeof(float)));
    CHECK(hipMalloc(&out, n * sizeof(float)));
    CHECK(hipMalloc(&counter, sizeof(int)));
    hipStream_t a, b, c;
    CHECK(hipStreamCreate(&a));
    CHECK(hipStreamCreate(&b));
    CHECK(hipStreamCreateWithFlags(&c, hipStreamNonBlocking));
    hipEvent_t produced, start, stop;
    CHECK(hipEventCreate(&produced));
    CHECK(hipEventCreate(&start));
    CHECK(hipEventCreate(&stop));

    CHECK(hipEventRecord(start, a));
    produce<<<n / 256, 256, 0, a>>>(data, n, 6000);
    CHECK(hipEventRecord(produced, a));
#ifndef MISSING_WAIT
    CHECK(hipStreamWaitEvent(b, produced, 0));
#endif
    consume<float, 3><<<n / 256, 256, 0, b>>>(data, out, n);
    hipLaunchKernelGGL(side_work, dim3(4), dim3(64), 0, c, counter);
    CHECK(hipEventRecord(stop, b));
    CHECK(hipStreamSynchronize(b));
    CHECK(hipEventSynchronize(stop));
    CHECK(hipStreamSynchronize(c));
    if (hipEventQuery(stop) != hipSuccess) {
        std::printf("event query after synchronize is not ready\n");
        return 1;
    }
    float ms = -1.0f;
    CHECK(hipEventSynchronize(produced));
    CHECK(hipEventElapsedTime(&ms, start, produced));  // both on stream a: ordered
    if (!(ms >= 0.0f)) {
        std::printf("elapsed time %f ms is negative\n", ms);
        return 1;
    }

    std::vector<float> host(n);
    CHECK(hipMemcpyAsync(host.data(), out, n * sizeof(float), hipMemcpyDeviceToHost, b));
    CHECK(hipStreamSynchronize(b));
    for (int i = 0; i < n; ++i) {
        float expect = (2.0f + float(i % 3)) * 3.0f;
        if (host[i] != expect) {
            std::printf("consumer read stale data at %d: %f vs %f (missing hipStreamWaitEvent?)\n", i, host[i], expect);
            return 1;
        }
    }
    int count = 0;
    CHECK(hipMemcpy(&count, counter, sizeof(int), hipMemcpyDeviceToHost));
    if (count != 4) {
        std::printf("side_work counted %d blocks, expected 4\n", count);
        return 1;
    }
    CHECK(hipGetLastError());
    std::printf("checksum %.1f\n", double(host[0] + host[n - 1]));
    CHECK(hipStreamDestroy(a));
    CHECK(hipStreamDestroy(b));
    CHECK(hipStreamDestroy(c));
    return 0;
}
