// The runtime API around kernels, each result checked against plain C++: managed and pinned
// host memory used directly by kernels and the host, asynchronous copies and fills on a
// stream, pitched 2-D allocations, copies and fills, typed fills, events that time a kernel,
// hipGetDeviceProperties against what the host really has, and hipGetLastError after launches
// that cannot run.
#include <hip/hip_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>

static int failures = 0;
#define EXPECT(cond, ...)                                  \
    do {                                                   \
        if (!(cond)) {                                     \
            if (failures++ < 10) std::printf(__VA_ARGS__); \
        }                                                  \
    } while (0)

__global__ void scale(float* data, int n, float factor) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= factor;
}

__global__ void fill_rows(float* grid, size_t pitch, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < width && y < height) reinterpret_cast<float*>(reinterpret_cast<char*>(grid) + y * pitch)[x] = y * 1000.0f + x;
}

__global__ void busy(unsigned long long* out, int rounds) {
    unsigned long long h = threadIdx.x;
    for (int r = 0; r < rounds; ++r) h = h * 6364136223846793005ull + 1442695040888963407ull;
    out[threadIdx.x] = h;
}

int main() {
    const int n = 10000;
    // Managed memory: the host writes, a kernel scales, the host reads after synchronizing.
    float* managed;
    EXPECT(hipMallocManaged(&managed, n * sizeof(float)) == hipSuccess, "hipMallocManaged\n");
    for (int i = 0; i < n; ++i) managed[i] = i;
    scale<<<(n + 255) / 256, 256>>>(managed, n, 2.0f);
    hipDeviceSynchronize();
    for (int i = 0; i < n; ++i) EXPECT(managed[i] == 2.0f * i, "managed %d\n", i);

    // Pinned host memory and a stream: async copy in, kernel, async fill, async copy out.
    float *pinned, *device;
    EXPECT(hipHostMalloc(&pinned, n * sizeof(float), hipHostMallocDefault) == hipSuccess, "hipHostMalloc\n");
    hipMalloc(&device, n * sizeof(float));
    hipStream_t stream;
    hipStreamCreate(&stream);
    for (int i = 0; i < n; ++i) pinned[i] = i + 0.5f;
    hipMemcpyAsync(device, pinned, n * sizeof(float), hipMemcpyHostToDevice, stream);
    scale<<<(n + 255) / 256, 256, 0, stream>>>(device, n, 4.0f);
    hipMemsetAsync(device, 0, 16 * sizeof(float), stream);
    hipMemcpyAsync(pinned, device, n * sizeof(float), hipMemcpyDeviceToHost, stream);
    hipStreamSynchronize(stream);
    for (int i = 0; i < n; ++i) EXPECT(pinned[i] == (i < 16 ? 0.0f : 4.0f * (i + 0.5f)), "stream order %d\n", i);

    // Pitched 2-D: a kernel fills rows, hipMemcpy2D brings them back packed, hipMemset2D clears
    // a sub-rectangle first.
    const int width = 37, height = 11;
    float* grid;
    size_t pitch = 0;
    EXPECT(hipMallocPitch(reinterpret_cast<void**>(&grid), &pitch, width * sizeof(float), height) == hipSuccess, "pitch\n");
    EXPECT(pitch >= width * sizeof(float) && pitch % 256 == 0, "pitch %zu\n", pitch);
    fill_rows<<<dim3(1, height), 64>>>(grid, pitch, width, height);
    hipMemset2D(grid, pitch, 0, 4 * sizeof(float), 3);  // the first 4 columns of the first 3 rows
    std::vector<float> packed(width * height);
    hipMemcpy2D(packed.data(), width * sizeof(float), grid, pitch, width * sizeof(float), height, hipMemcpyDeviceToHost);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const float want = (y < 3 && x < 4) ? 0.0f : y * 1000.0f + x;
            EXPECT(packed[y * width + x] == want, "2-D copy at %d,%d: %g\n", x, y, packed[y * width + x]);
        }
    EXPECT(hipMemcpy2D(packed.data(), 4, grid, pitch, 8, 1, hipMemcpyDeviceToHost) == hipErrorInvalidPitchValue,
           "a width wider than the pitch must be refused\n");
    int* words;
    hipMalloc(&words, 100 * sizeof(int));
    hipMemsetD32(words, 0x01020304, 100);
    std::vector<int> hw(100);
    hipMemcpy(hw.data(), words, 100 * sizeof(int), hipMemcpyDeviceToHost);
    for (int i = 0; i < 100; ++i) EXPECT(hw[i] == 0x01020304, "hipMemsetD32 %d\n", i);

    // Events time a kernel: the elapsed time is positive and no longer than the host saw.
    hipEvent_t start, stop;
    hipEventCreate(&start);
    hipEventCreate(&stop);
    unsigned long long* busy_out;
    hipMalloc(&busy_out, 256 * sizeof(unsigned long long));
    auto t0 = std::chrono::steady_clock::now();
    hipEventRecord(start, stream);
    busy<<<16, 256, 0, stream>>>(busy_out, 5000);
    hipEventRecord(stop, stream);
    hipEventSynchronize(stop);
    const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    float ms = -1;
    EXPECT(hipEventElapsedTime(&ms, start, stop) == hipSuccess, "hipEventElapsedTime\n");
    EXPECT(ms > 0 && ms <= host_ms + 0.01, "event time %g ms, host saw %g ms\n", ms, host_ms);

    // Properties: honest host values.
    hipDeviceProp_t props;
    EXPECT(hipGetDeviceProperties(&props, 0) == hipSuccess, "properties\n");
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    EXPECT(props.totalGlobalMem == size_t(pages) * size_t(page), "totalGlobalMem %zu\n", props.totalGlobalMem);
    EXPECT(props.warpSize == warpSize && props.maxThreadsPerBlock == 1024, "warpSize/maxThreadsPerBlock\n");
    EXPECT(std::strncmp(props.name, "rocm-perf host", 14) == 0, "device name %s\n", props.name);
    EXPECT(props.multiProcessorCount >= 1 && props.clockRate > 0 && props.managedMemory == 1, "units/clock/managed\n");
    EXPECT(hipGetDeviceProperties(&props, 1) == hipErrorInvalidDevice, "a second device must not exist\n");
    int count = 0;
    hipGetDeviceCount(&count);
    EXPECT(count == 1, "device count %d\n", count);

    // A launch that cannot run leaves an error for hipGetLastError, which then clears it.
    EXPECT(hipGetLastError() == hipSuccess, "no error before\n");
    scale<<<1, 2048>>>(device, n, 1.0f);
    EXPECT(hipPeekAtLastError() == hipErrorInvalidConfiguration, "peek after a 2048-thread block\n");
    EXPECT(hipGetLastError() == hipErrorInvalidConfiguration, "get after a 2048-thread block\n");
    EXPECT(hipGetLastError() == hipSuccess, "cleared after reading\n");
    scale<<<dim3(1, 70000), 64>>>(device, n, 1.0f);
    EXPECT(hipGetLastError() == hipErrorInvalidConfiguration, "a grid too tall\n");
    EXPECT(std::strcmp(hipGetErrorName(hipErrorInvalidConfiguration), "hipErrorInvalidConfiguration") == 0, "name\n");

    hipStreamDestroy(stream);
    hipHostFree(pinned);
    hipFree(managed);
    hipFree(device);
    if (failures) {
        std::printf("runtime api: %d mismatches\n", failures);
        return 1;
    }
    std::printf("runtime api: all match (kernel timed at %.3f ms)\n", ms);
    return 0;
}
