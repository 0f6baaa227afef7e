// Matrix transpose, naive and through a padded shared-memory tile (32 x 32, 32 x 8 threads).
// Exercises: `__shared__` tile with padding against bank conflicts, one `__syncthreads()`,
// constant-trip loops (TILE / ROWS = 4 iterations) with `#pragma unroll` in the shared version
// and without it in the naive one, both `<<<>>>` and hipLaunchKernelGGL, two kernels per step.
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

constexpr int TILE = 32;
constexpr int ROWS = 8;  // threads per block in y; each thread moves TILE / ROWS elements
constexpr int kRows = 1000;  // not tile multiples: partial edge tiles
constexpr int kCols = 1500;
constexpr int kLaunches = 14;

__global__ void transpose_naive(const float* __restrict__ input, float* __restrict__ output, int rows, int cols) {
    const int x = blockIdx.x * TILE + threadIdx.x;
    const int y0 = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        const int y = y0 + j;
        if (x < cols && y < rows) output[x * rows + y] = input[y * cols + x];
    }
}

__global__ void transpose_shared(const float* __restrict__ input, float* __restrict__ output, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = input[(y + j) * cols + x];
    }
    __syncthreads();
    // swap the block's roles: read a column of the tile, write a row of the output
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < rows && y + j < cols) output[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

int main() {
    const size_t elements = static_cast<size_t>(kRows) * kCols;
    std::vector<float> input(elements);
    for (size_t i = 0; i < elements; ++i) input[i] = static_cast<float>(i % 9973) * 0.5f - 1000.0f;

    float *d_input = nullptr, *d_naive = nullptr, *d_shared = nullptr;
    HIP_CHECK(hipMalloc(&d_input, elements * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_naive, elements * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_shared, elements * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_input, input.data(), elements * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemset(d_naive, 0, elements * sizeof(float)));
    HIP_CHECK(hipMemset(d_shared, 0, elements * sizeof(float)));

    const dim3 block(TILE, ROWS);
    const dim3 grid((kCols + TILE - 1) / TILE, (kRows + TILE - 1) / TILE);
    for (int launch = 0; launch < kLaunches; ++launch) {
        transpose_naive<<<grid, block>>>(d_input, d_naive, kRows, kCols);
        HIP_CHECK(hipGetLastError());
        hipLaunchKernelGGL(transpose_shared, grid, block, 0, 0, d_input, d_shared, kRows, kCols);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> naive(elements), shared(elements);
    HIP_CHECK(hipMemcpy(naive.data(), d_naive, elements * sizeof(float), hipMemcpyDeviceToHost));
    HIP_CHECK(hipMemcpy(shared.data(), d_shared, elements * sizeof(float), hipMemcpyDeviceToHost));

    // A transpose moves values without arithmetic: the results must be exact.
    double checksum = 0.0;
    for (int r = 0; r < kRows; ++r) {
        for (int c = 0; c < kCols; ++c) {
            const float expected = input[static_cast<size_t>(r) * kCols + c];
            const size_t at = static_cast<size_t>(c) * kRows + r;
            if (naive[at] != expected || shared[at] != expected) {
                std::fprintf(stderr, "transpose: MISMATCH at output (%d, %d): naive %.7g, shared %.7g, expected %.7g\n",
                             c, r, naive[at], shared[at], expected);
                return 1;
            }
            checksum += shared[at] * static_cast<double>(at % 11 + 1);
        }
    }

    HIP_CHECK(hipFree(d_input));
    HIP_CHECK(hipFree(d_naive));
    HIP_CHECK(hipFree(d_shared));
    std::printf("transpose: %d x %d, tile %d, %d launches of each kernel: PASS\n", kRows, kCols, TILE, kLaunches);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
