// Histogram of 32-bit keys into 256 bins: with global atomics, and privatized per block in
// dynamic shared memory then merged with global atomics.
// Exercises: `atomicAdd` on global and shared unsigned ints, `extern __shared__` (size from the
// launch), grid-stride loops (runtime trip), `__syncthreads()`, `hipMemset`, `<<<>>>` with a
// dynamic shared-memory size.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define HIP_CHECK(call)                                                                 \
    do {                                                                                \
        hipError_t status_ = (call);                                                    \
        if (status_ != hipSuccess) {                                                    \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,   \
                         hipGetErrorString(status_));                                   \
            std::exit(2);                                                               \
        }                                                                               \
    } while (0)

constexpr int kKeys = 4 * (1 << 20) + 5;
constexpr int kBins = 256;
constexpr int kBlocks = 48;
constexpr int kBlock = 256;
constexpr int kLaunches = 10;

__global__ void histogram_global(const unsigned int* __restrict__ keys, int n, unsigned int* __restrict__ bins,
                                 int num_bins) {
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&bins[keys[i] % num_bins], 1u);
    }
}

__global__ void histogram_shared(const unsigned int* __restrict__ keys, int n, unsigned int* __restrict__ bins,
                                 int num_bins) {
    extern __shared__ unsigned int block_bins[];
    for (int b = threadIdx.x; b < num_bins; b += blockDim.x) block_bins[b] = 0;
    __syncthreads();
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&block_bins[keys[i] % num_bins], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < num_bins; b += blockDim.x) {
        if (block_bins[b] != 0) atomicAdd(&bins[b], block_bins[b]);
    }
}

// Skewed keys: a hash folded so that low bins are more frequent (contention on some bins).
static unsigned int key_value(unsigned int index) {
    unsigned int h = index * 2654435761u ^ 97u;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return (h & 1u) ? h : (h & 0x0F0F0F0Fu);
}

int main() {
    std::vector<unsigned int> keys(kKeys);
    for (int i = 0; i < kKeys; ++i) keys[i] = key_value(static_cast<unsigned int>(i));

    unsigned int *d_keys = nullptr, *d_global_bins = nullptr, *d_shared_bins = nullptr;
    HIP_CHECK(hipMalloc(&d_keys, kKeys * sizeof(unsigned int)));
    HIP_CHECK(hipMalloc(&d_global_bins, kBins * sizeof(unsigned int)));
    HIP_CHECK(hipMalloc(&d_shared_bins, kBins * sizeof(unsigned int)));
    HIP_CHECK(hipMemcpy(d_keys, keys.data(), kKeys * sizeof(unsigned int), hipMemcpyHostToDevice));

    const size_t shared_bytes = kBins * sizeof(unsigned int);
    for (int launch = 0; launch < kLaunches; ++launch) {
        // counts accumulate: clear before every launch so each launch recomputes the histogram
        HIP_CHECK(hipMemset(d_global_bins, 0, kBins * sizeof(unsigned int)));
        HIP_CHECK(hipMemset(d_shared_bins, 0, kBins * sizeof(unsigned int)));
        histogram_global<<<kBlocks, kBlock>>>(d_keys, kKeys, d_global_bins, kBins);
        HIP_CHECK(hipGetLastError());
        histogram_shared<<<kBlocks, kBlock, shared_bytes>>>(d_keys, kKeys, d_shared_bins, kBins);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<unsigned int> global_bins(kBins), shared_bins(kBins), expected(kBins, 0);
    HIP_CHECK(hipMemcpy(global_bins.data(), d_global_bins, kBins * sizeof(unsigned int), hipMemcpyDeviceToHost));
    HIP_CHECK(hipMemcpy(shared_bins.data(), d_shared_bins, kBins * sizeof(unsigned int), hipMemcpyDeviceToHost));

    for (int i = 0; i < kKeys; ++i) ++expected[keys[i] % kBins];
    unsigned long long checksum = 0;
    for (int b = 0; b < kBins; ++b) {
        // integer counts: exact
        if (global_bins[b] != expected[b] || shared_bins[b] != expected[b]) {
            std::fprintf(stderr, "histogram: MISMATCH in bin %d: global %u, shared %u, expected %u\n", b,
                         global_bins[b], shared_bins[b], expected[b]);
            return 1;
        }
        checksum += static_cast<unsigned long long>(shared_bins[b]) * (b + 1);
    }

    HIP_CHECK(hipFree(d_keys));
    HIP_CHECK(hipFree(d_global_bins));
    HIP_CHECK(hipFree(d_shared_bins));
    std::printf("histogram: %d keys, %d bins, %d launches of each kernel: PASS\n", kKeys, kBins, kLaunches);
    std::printf("checksum %llu\n", checksum);
    return 0;
}
