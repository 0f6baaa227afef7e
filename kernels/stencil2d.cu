// 2-D 9-point stencil on a grid with clamped edges, iterated as time steps (ping-pong buffers).
// Exercises: 2-D grids and blocks, two nested constant-trip loops (3 x 3) without pragmas,
// a small `__device__` helper, no shared memory, no barriers, `<<<>>>`.
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

constexpr int kWidth = 1000;  // not a multiple of the block: edge blocks are partial
constexpr int kHeight = 1024;
constexpr int kSteps = 20;

__device__ __forceinline__ int clamp_index(int value, int upper) {
    return value < 0 ? 0 : (value > upper ? upper : value);
}

__global__ void stencil_2d(const float* __restrict__ input, float* __restrict__ output,
                           const float* __restrict__ weights, int width, int height) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;

    float acc = 0.0f;
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            const int xx = clamp_index(x + dx, width - 1);
            const int yy = clamp_index(y + dy, height - 1);
            acc += weights[(dy + 1) * 3 + (dx + 1)] * input[yy * width + xx];
        }
    }
    output[y * width + x] = acc;
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

static int clamp_host(int value, int upper) { return value < 0 ? 0 : (value > upper ? upper : value); }

int main() {
    const size_t cells = static_cast<size_t>(kWidth) * kHeight;
    std::vector<float> field(cells);
    for (size_t i = 0; i < cells; ++i) field[i] = input_value(static_cast<unsigned int>(i), 7u);
    const std::vector<float> weights = {0.05f, 0.1f, 0.05f, 0.1f, 0.4f, 0.1f, 0.05f, 0.1f, 0.05f};

    float *d_a = nullptr, *d_b = nullptr, *d_weights = nullptr;
    HIP_CHECK(hipMalloc(&d_a, cells * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_b, cells * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_weights, weights.size() * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_a, field.data(), cells * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_weights, weights.data(), weights.size() * sizeof(float), hipMemcpyHostToDevice));

    const dim3 block(32, 8);
    const dim3 grid((kWidth + block.x - 1) / block.x, (kHeight + block.y - 1) / block.y);
    for (int step = 0; step < kSteps; ++step) {
        stencil_2d<<<grid, block>>>(d_a, d_b, d_weights, kWidth, kHeight);
        HIP_CHECK(hipGetLastError());
        std::swap(d_a, d_b);
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> result(cells);
    HIP_CHECK(hipMemcpy(result.data(), d_a, cells * sizeof(float), hipMemcpyDeviceToHost));

    std::vector<float> next(cells);
    for (int step = 0; step < kSteps; ++step) {
        for (int y = 0; y < kHeight; ++y) {
            for (int x = 0; x < kWidth; ++x) {
                float acc = 0.0f;
                for (int dy = -1; dy <= 1; ++dy) {
                    for (int dx = -1; dx <= 1; ++dx) {
                        const int xx = clamp_host(x + dx, kWidth - 1);
                        const int yy = clamp_host(y + dy, kHeight - 1);
                        acc += weights[(dy + 1) * 3 + (dx + 1)] * field[static_cast<size_t>(yy) * kWidth + xx];
                    }
                }
                next[static_cast<size_t>(y) * kWidth + x] = acc;
            }
        }
        field.swap(next);
    }

    double checksum = 0.0;
    for (size_t i = 0; i < cells; ++i) {
        if (std::fabs(result[i] - field[i]) > 1e-5f) {
            std::fprintf(stderr, "stencil2d: MISMATCH at (%zu, %zu): got %.7g, expected %.7g\n", i % kWidth,
                         i / kWidth, result[i], field[i]);
            return 1;
        }
        checksum += result[i] * (i % 5 + 1);
    }

    HIP_CHECK(hipFree(d_a));
    HIP_CHECK(hipFree(d_b));
    HIP_CHECK(hipFree(d_weights));
    std::printf("stencil2d: %d x %d, 9 points, %d steps: PASS\n", kWidth, kHeight, kSteps);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
