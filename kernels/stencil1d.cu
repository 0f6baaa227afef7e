// 1-D stencil of radius 4 through a shared-memory tile with halos, iterated as time steps
// (ping-pong buffers, so every launch depends on the previous one).
// Exercises: `__shared__` tile, one `__syncthreads()`, a constant-trip loop (-RADIUS..RADIUS,
// 9 iterations) without a pragma, hipLaunchKernelGGL.
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
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

#define RADIUS 4
#define BLOCK 256

constexpr int kPoints = (1 << 19) + 77;  // ragged last block
constexpr int kSteps = 10;

__global__ void stencil_1d(const float* __restrict__ input, float* __restrict__ output,
                           const float* __restrict__ weights, int n) {
    __shared__ float tile[BLOCK + 2 * RADIUS];
    const int global = blockIdx.x * BLOCK + threadIdx.x;
    const int local = threadIdx.x + RADIUS;

    tile[local] = global < n ? input[global] : 0.0f;
    if (threadIdx.x < RADIUS) {
        const int left = global - RADIUS;
        const int right = global + BLOCK;
        tile[local - RADIUS] = left >= 0 && left < n ? input[left] : 0.0f;
        tile[local + BLOCK] = right < n ? input[right] : 0.0f;
    }
    __syncthreads();

    if (global < n) {
        float acc = 0.0f;
        for (int k = -RADIUS; k <= RADIUS; ++k) {
            acc += weights[k + RADIUS] * tile[local + k];
        }
        output[global] = acc;
    }
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
    std::vector<float> field(kPoints);
    for (int i = 0; i < kPoints; ++i) field[i] = input_value(i, 3u);
    // A smoothing kernel whose weights sum to 1, so values stay bounded over the steps.
    std::vector<float> weights(2 * RADIUS + 1);
    float weight_total = 0.0f;
    for (int k = -RADIUS; k <= RADIUS; ++k) {
        weights[k + RADIUS] = 1.0f / (1.0f + std::abs(k));
        weight_total += weights[k + RADIUS];
    }
    for (float& w : weights) w /= weight_total;

    float *d_a = nullptr, *d_b = nullptr, *d_weights = nullptr;
    HIP_CHECK(hipMalloc(&d_a, kPoints * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_b, kPoints * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_weights, weights.size() * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_a, field.data(), kPoints * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_weights, weights.data(), weights.size() * sizeof(float), hipMemcpyHostToDevice));

    const dim3 grid((kPoints + BLOCK - 1) / BLOCK);
    for (int step = 0; step < kSteps; ++step) {
        hipLaunchKernelGGL(stencil_1d, grid, dim3(BLOCK), 0, 0, d_a, d_b, d_weights, kPoints);
        HIP_CHECK(hipGetLastError());
        std::swap(d_a, d_b);
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> result(kPoints);
    HIP_CHECK(hipMemcpy(result.data(), d_a, kPoints * sizeof(float), hipMemcpyDeviceToHost));

    // Reference: the same steps in float, same summation order, so the tolerance can be tight.
    std::vector<float> next(kPoints);
    for (int step = 0; step < kSteps; ++step) {
        for (int i = 0; i < kPoints; ++i) {
            float acc = 0.0f;
            for (int k = -RADIUS; k <= RADIUS; ++k) {
                const int j = i + k;
                acc += weights[k + RADIUS] * (j >= 0 && j < kPoints ? field[j] : 0.0f);
            }
            next[i] = acc;
        }
        field.swap(next);
    }

    double checksum = 0.0;
    for (int i = 0; i < kPoints; ++i) {
        if (std::fabs(result[i] - field[i]) > 1e-5f) {
            std::fprintf(stderr, "stencil1d: MISMATCH at %d: got %.7g, expected %.7g\n", i, result[i], field[i]);
            return 1;
        }
        checksum += result[i] * (i % 3 + 1);
    }

    HIP_CHECK(hipFree(d_a));
    HIP_CHECK(hipFree(d_b));
    HIP_CHECK(hipFree(d_weights));
    std::printf("stencil1d: %d points, radius %d, %d steps: PASS\n", kPoints, RADIUS, kSteps);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
