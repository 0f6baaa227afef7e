// Row softmax: one block per row; block-wide max and sum through shared memory.
// Exercises: a template kernel (block size as template argument), runtime-trip strided loops,
// constant-trip tree reductions under `#pragma unroll` with `__syncthreads()` inside,
// `__expf`, hipLaunchKernelGGL.
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
constexpr int kCols = 1000;  // not a multiple of the block: the strided loops have a ragged end
constexpr int kBlock = 64;
constexpr int kLaunches = 24;

template <int BLOCK>
__global__ void softmax_rows(const float* __restrict__ input, float* __restrict__ output, int cols) {
    __shared__ float scratch[BLOCK];
    const int tid = threadIdx.x;
    const float* x = input + static_cast<size_t>(blockIdx.x) * cols;
    float* y = output + static_cast<size_t>(blockIdx.x) * cols;

    float local_max = -INFINITY;
    for (int c = tid; c < cols; c += BLOCK) local_max = fmaxf(local_max, x[c]);
    scratch[tid] = local_max;
    __syncthreads();
#pragma unroll
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) scratch[tid] = fmaxf(scratch[tid], scratch[tid + stride]);
        __syncthreads();
    }
    const float row_max = scratch[0];
    __syncthreads();  // everyone has read the max before scratch is reused

    float local_sum = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        const float e = __expf(x[c] - row_max);
        y[c] = e;
        local_sum += e;
    }
    scratch[tid] = local_sum;
    __syncthreads();
#pragma unroll
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) scratch[tid] += scratch[tid + stride];
        __syncthreads();
    }
    const float inverse = 1.0f / scratch[0];
    for (int c = tid; c < cols; c += BLOCK) y[c] *= inverse;
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
    std::vector<float> input(elements);
    for (size_t i = 0; i < elements; ++i) input[i] = 4.0f * input_value(static_cast<unsigned int>(i), 5u);

    float* d_input = nullptr;
    float* d_output = nullptr;
    HIP_CHECK(hipMalloc(&d_input, elements * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_output, elements * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_input, input.data(), elements * sizeof(float), hipMemcpyHostToDevice));

    for (int launch = 0; launch < kLaunches; ++launch) {
        hipLaunchKernelGGL(softmax_rows<kBlock>, dim3(kRows), dim3(kBlock), 0, 0, d_input, d_output, kCols);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> output(elements);
    HIP_CHECK(hipMemcpy(output.data(), d_output, elements * sizeof(float), hipMemcpyDeviceToHost));

    double checksum = 0.0;
    for (int r = 0; r < kRows; ++r) {
        const float* x = &input[static_cast<size_t>(r) * kCols];
        const float* y = &output[static_cast<size_t>(r) * kCols];
        double row_max = x[0];
        for (int c = 1; c < kCols; ++c) row_max = std::fmax(row_max, static_cast<double>(x[c]));
        double denominator = 0.0;
        for (int c = 0; c < kCols; ++c) denominator += std::exp(x[c] - row_max);
        for (int c = 0; c < kCols; ++c) {
            const double expected = std::exp(x[c] - row_max) / denominator;
            // __expf is an approximation on AMD GPUs: relative tolerance, not bit equality
            if (std::fabs(y[c] - expected) > 1e-3 * expected + 1e-7) {
                std::fprintf(stderr, "softmax: MISMATCH at row %d col %d: got %.7g, expected %.7g\n", r, c, y[c],
                             expected);
                return 1;
            }
            checksum += y[c] * (c % 7 + 1);
        }
    }

    HIP_CHECK(hipFree(d_input));
    HIP_CHECK(hipFree(d_output));
    std::printf("softmax: %d x %d, block %d, %d launches: PASS\n", kRows, kCols, kBlock, kLaunches);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
