// Inclusive prefix sum of integers in three kernels (the classic scan-then-propagate):
//   scan_tiles        each block scans a tile of kBlock * kItems elements, writes the tile's total
//   scan_tile_totals  one block scans the tile totals in place
//   add_tile_offsets  every element adds the total of all tiles before its own
// Exercises: a chain of dependent kernels on one stream, thread coarsening (constant-trip loops
// over kItems, with and without `#pragma unroll`), a `__device__` block-scan helper whose
// constant-trip loop holds two barriers, register arrays, exact integer results, both launch styles.
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

constexpr int kBlock = 64;
constexpr int kItems = 8;  // elements per thread
constexpr int kTile = kBlock * kItems;
constexpr int kElements = (1 << 20) + 123;  // ragged last tile
constexpr int kRepeats = 12;

// Inclusive scan of one value per thread across the block (Hillis-Steele); all threads must call it.
__device__ int block_inclusive_scan(int value, int* scratch) {
    const int tid = threadIdx.x;
    scratch[tid] = value;
    __syncthreads();
#pragma unroll
    for (int offset = 1; offset < kBlock; offset <<= 1) {
        const int addend = tid >= offset ? scratch[tid - offset] : 0;
        __syncthreads();  // every read of this step before any write
        scratch[tid] += addend;
        __syncthreads();
    }
    return scratch[tid];
}

__global__ void scan_tiles(const int* __restrict__ input, int* __restrict__ output, int* __restrict__ tile_totals,
                           int n) {
    __shared__ int scratch[kBlock];
    const int base = blockIdx.x * kTile + threadIdx.x * kItems;
    int running[kItems];
    int sum = 0;
    for (int i = 0; i < kItems; ++i) {
        const int index = base + i;
        sum += index < n ? input[index] : 0;
        running[i] = sum;
    }
    const int inclusive = block_inclusive_scan(sum, scratch);
    const int before = inclusive - sum;  // total of the threads before this one in the tile
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
        const int index = base + i;
        if (index < n) output[index] = running[i] + before;
    }
    if (threadIdx.x == kBlock - 1) tile_totals[blockIdx.x] = inclusive;
}

// One block: each thread scans a contiguous run of tile totals, then the runs are offset.
__global__ void scan_tile_totals(int* __restrict__ tile_totals, int tiles) {
    __shared__ int scratch[kBlock];
    const int per_thread = (tiles + kBlock - 1) / kBlock;
    const int begin = threadIdx.x * per_thread;
    const int end = begin + per_thread < tiles ? begin + per_thread : tiles;
    int sum = 0;
    for (int t = begin; t < end; ++t) {
        sum += tile_totals[t];
        tile_totals[t] = sum;
    }
    const int before = block_inclusive_scan(sum, scratch) - sum;
    for (int t = begin; t < end; ++t) tile_totals[t] += before;
}

__global__ void add_tile_offsets(int* __restrict__ output, const int* __restrict__ scanned_totals, int n) {
    const int tile = blockIdx.x;
    if (tile == 0) return;  // the first tile has nothing before it
    const int offset = scanned_totals[tile - 1];
    const int base = tile * kTile + threadIdx.x * kItems;
    for (int i = 0; i < kItems; ++i) {
        const int index = base + i;
        if (index < n) output[index] += offset;
    }
}

int main() {
    std::vector<int> input(kElements);
    for (int i = 0; i < kElements; ++i) {
        unsigned int h = static_cast<unsigned int>(i) * 2654435761u ^ 89u;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        input[i] = static_cast<int>(h % 16u);
    }
    const int tiles = (kElements + kTile - 1) / kTile;

    int *d_input = nullptr, *d_output = nullptr, *d_totals = nullptr;
    HIP_CHECK(hipMalloc(&d_input, kElements * sizeof(int)));
    HIP_CHECK(hipMalloc(&d_output, kElements * sizeof(int)));
    HIP_CHECK(hipMalloc(&d_totals, tiles * sizeof(int)));
    HIP_CHECK(hipMemcpy(d_input, input.data(), kElements * sizeof(int), hipMemcpyHostToDevice));

    for (int repeat = 0; repeat < kRepeats; ++repeat) {
        scan_tiles<<<tiles, kBlock>>>(d_input, d_output, d_totals, kElements);
        HIP_CHECK(hipGetLastError());
        hipLaunchKernelGGL(scan_tile_totals, dim3(1), dim3(kBlock), 0, 0, d_totals, tiles);
        HIP_CHECK(hipGetLastError());
        add_tile_offsets<<<tiles, kBlock>>>(d_output, d_totals, kElements);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<int> output(kElements);
    HIP_CHECK(hipMemcpy(output.data(), d_output, kElements * sizeof(int), hipMemcpyDeviceToHost));

    // Integer sums: the scan must be exact.
    long long expected = 0;
    unsigned long long checksum = 0;
    for (int i = 0; i < kElements; ++i) {
        expected += input[i];
        if (output[i] != expected) {
            std::fprintf(stderr, "scan: MISMATCH at %d: got %d, expected %lld\n", i, output[i], expected);
            return 1;
        }
        checksum = checksum * 31u + static_cast<unsigned int>(output[i]);
    }

    HIP_CHECK(hipFree(d_input));
    HIP_CHECK(hipFree(d_output));
    HIP_CHECK(hipFree(d_totals));
    std::printf("scan: %d elements, tiles of %d, %d repeats: PASS\n", kElements, kTile, kRepeats);
    std::printf("checksum %llu\n", checksum);
    return 0;
}
