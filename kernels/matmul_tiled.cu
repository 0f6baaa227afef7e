// Tiled matrix multiply C = A * B through shared memory (16 x 16 tiles).
// Exercises: two `__shared__` tiles, two `__syncthreads()` per tile, a runtime-trip loop over
// tiles (with barriers inside: uniform trip count), a constant-trip inner product loop (TILE),
// boundary handling for sizes that are not tile multiples, hipLaunchKernelGGL.
#include <hip/hip_runtime.h>

#include <cmath>
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

#ifndef TILE
#define TILE 16
#endif

constexpr int kM = 256;
constexpr int kN = 240;
constexpr int kK = 250;
constexpr int kLaunches = 8;

__global__ void matmul_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                             int m, int n, int k) {
    __shared__ float tile_a[TILE][TILE];
    __shared__ float tile_b[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;

    float acc = 0.0f;
    const int tiles = (k + TILE - 1) / TILE;
    for (int t = 0; t < tiles; ++t) {
        const int a_col = t * TILE + threadIdx.x;
        const int b_row = t * TILE + threadIdx.y;
        tile_a[threadIdx.y][threadIdx.x] = row < m && a_col < k ? a[row * k + a_col] : 0.0f;
        tile_b[threadIdx.y][threadIdx.x] = b_row < k && col < n ? b[b_row * n + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; ++i) {
            acc += tile_a[threadIdx.y][i] * tile_b[i][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}

static float input_value(unsigned int index, unsigned int seed) {
    unsigned int h = index * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return static_cast<float>(h & 0xFFFFFFu) / 16777216.0f * 2.0f - 1.0f;
}

int main() {
    std::vector<float> a(static_cast<size_t>(kM) * kK), b(static_cast<size_t>(kK) * kN);
    for (size_t i = 0; i < a.size(); ++i) a[i] = input_value(static_cast<unsigned int>(i), 41u);
    for (size_t i = 0; i < b.size(); ++i) b[i] = input_value(static_cast<unsigned int>(i), 43u);

    float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
    HIP_CHECK(hipMalloc(&d_a, a.size() * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_b, b.size() * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_c, static_cast<size_t>(kM) * kN * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_a, a.data(), a.size() * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_b, b.data(), b.size() * sizeof(float), hipMemcpyHostToDevice));

    const dim3 block(TILE, TILE);
    const dim3 grid((kN + TILE - 1) / TILE, (kM + TILE - 1) / TILE);
    for (int launch = 0; launch < kLaunches; ++launch) {
        hipLaunchKernelGGL(matmul_tiled, grid, block, 0, 0, d_a, d_b, d_c, kM, kN, kK);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> c(static_cast<size_t>(kM) * kN);
    HIP_CHECK(hipMemcpy(c.data(), d_c, c.size() * sizeof(float), hipMemcpyDeviceToHost));

    double checksum = 0.0;
    for (int i = 0; i < kM; ++i) {
        for (int j = 0; j < kN; ++j) {
            double expected = 0.0;
            for (int p = 0; p < kK; ++p) expected += static_cast<double>(a[i * kK + p]) * b[p * kN + j];
            const float got = c[i * kN + j];
            if (std::fabs(got - expected) > 1e-3) {
                std::fprintf(stderr, "matmul_tiled: MISMATCH at (%d, %d): got %.7g, expected %.7g\n", i, j, got,
                             expected);
                return 1;
            }
            checksum += got * ((i + j) % 7 + 1);
        }
    }

    HIP_CHECK(hipFree(d_a));
    HIP_CHECK(hipFree(d_b));
    HIP_CHECK(hipFree(d_c));
    std::printf("matmul_tiled: %d x %d x %d, tile %d, %d launches: PASS\n", kM, kN, kK, TILE, kLaunches);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
