// Register-blocked matrix multiply: each thread computes a 4 x 4 block of C in registers.
// Exercises: a runtime-trip loop over k, `#pragma unroll` loads into register arrays, and the
// constant-trip 4 x 4 micro-kernel (nested loops without a pragma: the compiler decides),
// `fmaf`, `__launch_bounds__`, 2-D blocks, `<<<>>>`.
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

constexpr int kMicro = 4;  // each thread owns a kMicro x kMicro block of C
constexpr int kM = 384;
constexpr int kN = 320;
constexpr int kK = 300;
constexpr int kLaunches = 6;

__global__ void __launch_bounds__(256) matmul_micro4x4(const float* __restrict__ a, const float* __restrict__ b,
                                                       float* __restrict__ c, int m, int n, int k) {
    const int row0 = (blockIdx.y * blockDim.y + threadIdx.y) * kMicro;
    const int col0 = (blockIdx.x * blockDim.x + threadIdx.x) * kMicro;
    if (row0 >= m || col0 >= n) return;  // m and n are multiples of kMicro (checked by the host)

    float acc[kMicro][kMicro] = {};
    for (int p = 0; p < k; ++p) {
        float a_column[kMicro];
        float b_row[kMicro];
#pragma unroll
        for (int i = 0; i < kMicro; ++i) a_column[i] = a[(row0 + i) * k + p];
#pragma unroll
        for (int j = 0; j < kMicro; ++j) b_row[j] = b[p * n + col0 + j];
        for (int i = 0; i < kMicro; ++i) {
            for (int j = 0; j < kMicro; ++j) {
                acc[i][j] = fmaf(a_column[i], b_row[j], acc[i][j]);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < kMicro; ++i) {
#pragma unroll
        for (int j = 0; j < kMicro; ++j) c[(row0 + i) * n + col0 + j] = acc[i][j];
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
    static_assert(kM % kMicro == 0 && kN % kMicro == 0, "the micro-kernel needs m, n multiples of kMicro");
    std::vector<float> a(static_cast<size_t>(kM) * kK), b(static_cast<size_t>(kK) * kN);
    for (size_t i = 0; i < a.size(); ++i) a[i] = input_value(static_cast<unsigned int>(i), 51u);
    for (size_t i = 0; i < b.size(); ++i) b[i] = input_value(static_cast<unsigned int>(i), 53u);

    float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
    HIP_CHECK(hipMalloc(&d_a, a.size() * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_b, b.size() * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_c, static_cast<size_t>(kM) * kN * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_a, a.data(), a.size() * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_b, b.data(), b.size() * sizeof(float), hipMemcpyHostToDevice));

    const dim3 block(16, 16);
    const int threads_x = kN / kMicro;
    const int threads_y = kM / kMicro;
    const dim3 grid((threads_x + block.x - 1) / block.x, (threads_y + block.y - 1) / block.y);
    for (int launch = 0; launch < kLaunches; ++launch) {
        matmul_micro4x4<<<grid, block, 0, 0>>>(d_a, d_b, d_c, kM, kN, kK);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> c(static_cast<size_t>(kM) * kN);
    HIP_CHECK(hipMemcpy(c.data(), d_c, c.size() * sizeof(float), hipMemcpyDeviceToHost));

    // Reference in double, row by row (i-p-j order keeps the CPU reference cache-friendly).
    double checksum = 0.0;
    std::vector<double> expected_row(kN);
    for (int i = 0; i < kM; ++i) {
        for (int j = 0; j < kN; ++j) expected_row[j] = 0.0;
        for (int p = 0; p < kK; ++p) {
            const double a_ip = a[static_cast<size_t>(i) * kK + p];
            const float* b_row = &b[static_cast<size_t>(p) * kN];
            for (int j = 0; j < kN; ++j) expected_row[j] += a_ip * b_row[j];
        }
        for (int j = 0; j < kN; ++j) {
            const float got = c[static_cast<size_t>(i) * kN + j];
            if (std::fabs(got - expected_row[j]) > 1e-3) {
                std::fprintf(stderr, "matmul_regblock: MISMATCH at (%d, %d): got %.7g, expected %.7g\n", i, j, got,
                             expected_row[j]);
                return 1;
            }
            checksum += got * ((i + j) % 7 + 1);
        }
    }

    HIP_CHECK(hipFree(d_a));
    HIP_CHECK(hipFree(d_b));
    HIP_CHECK(hipFree(d_c));
    std::printf("matmul_regblock: %d x %d x %d, %dx%d per thread, %d launches: PASS\n", kM, kN, kK, kMicro, kMicro,
                kLaunches);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
