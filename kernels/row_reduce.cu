// Row reduction: one thread sums one row of a row-major matrix.
// Exercises: a runtime-trip loop (the column count is a kernel argument), no barriers,
// `<<<>>>` launches, repeated launches of one kernel.
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

constexpr int kRows = 4096;
constexpr int kCols = 4096;
constexpr int kBlock = 256;
constexpr int kLaunches = 32;

__global__ void row_sum(const float* __restrict__ matrix, float* __restrict__ sums, int rows, int cols) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* values = matrix + static_cast<size_t>(row) * cols;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
        acc += values[c];
    }
    sums[row] = acc;
}

// Deterministic pseudo-random value in [-1, 1) from an index (integer hash, no global state).
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
    std::vector<float> matrix(elements);
    for (size_t i = 0; i < elements; ++i) matrix[i] = input_value(static_cast<unsigned int>(i), 17u);

    float* d_matrix = nullptr;
    float* d_sums = nullptr;
    HIP_CHECK(hipMalloc(&d_matrix, elements * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_sums, kRows * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_matrix, matrix.data(), elements * sizeof(float), hipMemcpyHostToDevice));

    const dim3 grid((kRows + kBlock - 1) / kBlock);
    for (int launch = 0; launch < kLaunches; ++launch) {
        row_sum<<<grid, kBlock>>>(d_matrix, d_sums, kRows, kCols);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> sums(kRows);
    HIP_CHECK(hipMemcpy(sums.data(), d_sums, kRows * sizeof(float), hipMemcpyDeviceToHost));

    double checksum = 0.0;
    for (int r = 0; r < kRows; ++r) {
        double expected = 0.0;
        double magnitude = 0.0;
        for (int c = 0; c < kCols; ++c) {
            const double v = matrix[static_cast<size_t>(r) * kCols + c];
            expected += v;
            magnitude += std::fabs(v);
        }
        // float accumulation of kCols terms: allow a few ulps of the running magnitude
        const double tolerance = 1e-6 * magnitude + 1e-4;
        if (std::fabs(sums[r] - expected) > tolerance) {
            std::fprintf(stderr, "row_reduce: MISMATCH at row %d: got %.7g, expected %.7g\n", r, sums[r], expected);
            return 1;
        }
        checksum += sums[r];
    }

    HIP_CHECK(hipFree(d_matrix));
    HIP_CHECK(hipFree(d_sums));
    std::printf("row_reduce: %d x %d, %d launches: PASS\n", kRows, kCols, kLaunches);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
