// Layer normalization over the rows of a matrix, with per-column gain and bias.
// Exercises: a `__device__` block-sum helper whose tree loop is a `while` with a runtime trip
// count (blockDim.x) and a barrier in its body, runtime-trip strided loops (one already under
// `#pragma unroll 4`), `rsqrtf`, `<<<>>>`.
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

constexpr int kRows = 1024;
constexpr int kCols = 768;
constexpr int kBlock = 64;  // a power of two: block_sum halves it
constexpr int kLaunches = 28;
constexpr float kEpsilon = 1e-5f;

// Sum of `value` over the block; every thread gets the result. Uniform: all threads must call it.
__device__ float block_sum(float value, float* scratch) {
    const int tid = threadIdx.x;
    scratch[tid] = value;
    __syncthreads();
    int stride = blockDim.x / 2;
    while (stride > 0) {
        if (tid < stride) scratch[tid] += scratch[tid + stride];
        __syncthreads();
        stride >>= 1;
    }
    const float total = scratch[0];
    __syncthreads();  // scratch may be reused right after
    return total;
}

__global__ void layernorm_rows(const float* __restrict__ input, const float* __restrict__ gain,
                               const float* __restrict__ bias, float* __restrict__ output, int cols, float epsilon) {
    __shared__ float scratch[kBlock];
    const float* x = input + static_cast<size_t>(blockIdx.x) * cols;
    float* y = output + static_cast<size_t>(blockIdx.x) * cols;

    float partial = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) partial += x[c];
    const float mean = block_sum(partial, scratch) / cols;

    float squares = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float d = x[c] - mean;
        squares += d * d;
    }
    const float inv_std = rsqrtf(block_sum(squares, scratch) / cols + epsilon);

#pragma unroll 4
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        y[c] = (x[c] - mean) * inv_std * gain[c] + bias[c];
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
    const size_t elements = static_cast<size_t>(kRows) * kCols;
    std::vector<float> input(elements), gain(kCols), bias(kCols);
    for (size_t i = 0; i < elements; ++i) {
        // rows with different offsets and scales, so mean and variance matter
        const int row = static_cast<int>(i / kCols);
        input[i] = (1.0f + row % 5) * input_value(static_cast<unsigned int>(i), 11u) + 0.25f * (row % 9);
    }
    for (int c = 0; c < kCols; ++c) {
        gain[c] = 1.0f + 0.5f * input_value(c, 23u);
        bias[c] = 0.1f * input_value(c, 29u);
    }

    float *d_input = nullptr, *d_gain = nullptr, *d_bias = nullptr, *d_output = nullptr;
    HIP_CHECK(hipMalloc(&d_input, elements * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_output, elements * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_gain, kCols * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_bias, kCols * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_input, input.data(), elements * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_gain, gain.data(), kCols * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_bias, bias.data(), kCols * sizeof(float), hipMemcpyHostToDevice));

    for (int launch = 0; launch < kLaunches; ++launch) {
        layernorm_rows<<<dim3(kRows), dim3(kBlock)>>>(d_input, d_gain, d_bias, d_output, kCols, kEpsilon);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> output(elements);
    HIP_CHECK(hipMemcpy(output.data(), d_output, elements * sizeof(float), hipMemcpyDeviceToHost));

    double checksum = 0.0;
    for (int r = 0; r < kRows; ++r) {
        const float* x = &input[static_cast<size_t>(r) * kCols];
        const float* y = &output[static_cast<size_t>(r) * kCols];
        double mean = 0.0;
        for (int c = 0; c < kCols; ++c) mean += x[c];
        mean /= kCols;
        double variance = 0.0;
        for (int c = 0; c < kCols; ++c) variance += (x[c] - mean) * (x[c] - mean);
        variance /= kCols;
        const double inv_std = 1.0 / std::sqrt(variance + kEpsilon);
        for (int c = 0; c < kCols; ++c) {
            const double expected = (x[c] - mean) * inv_std * gain[c] + bias[c];
            if (std::fabs(y[c] - expected) > 1e-4 * std::fabs(expected) + 1e-4) {
                std::fprintf(stderr, "layernorm: MISMATCH at row %d col %d: got %.7g, expected %.7g\n", r, c, y[c],
                             expected);
                return 1;
            }
            checksum += y[c] * (c % 5 + 1);
        }
    }

    HIP_CHECK(hipFree(d_input));
    HIP_CHECK(hipFree(d_gain));
    HIP_CHECK(hipFree(d_bias));
    HIP_CHECK(hipFree(d_output));
    std::printf("layernorm: %d x %d, block %d, %d launches: PASS\n", kRows, kCols, kBlock, kLaunches);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
