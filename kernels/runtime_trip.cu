// Midpoint-rule integrals of a polynomial over many intervals: each thread integrates one
// interval with a runtime number of steps, evaluating the polynomial through a `__device__`
// helper whose own loop runs over the (runtime) degree, counting down.
// Exercises: a runtime-trip loop in the kernel, a `__device__` helper with its own runtime-trip
// loop (decrementing induction variable), `fmaf`, no barriers, hipLaunchKernelGGL.
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

constexpr int kIntervals = 6000;
constexpr int kSteps = 200;
constexpr int kDegree = 10;
constexpr int kBlock = 128;
constexpr int kLaunches = 16;

__device__ float horner(const float* __restrict__ coefficients, int degree, float x) {
    float acc = coefficients[degree];
    for (int d = degree - 1; d >= 0; --d) {
        acc = fmaf(acc, x, coefficients[d]);
    }
    return acc;
}

__global__ void integrate_intervals(const float* __restrict__ coefficients, int degree,
                                    const float* __restrict__ lower, const float* __restrict__ upper, int steps,
                                    float* __restrict__ integrals, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float a = lower[i];
    const float h = (upper[i] - a) / steps;
    float acc = 0.0f;
    for (int s = 0; s < steps; ++s) {
        acc += horner(coefficients, degree, a + (s + 0.5f) * h);
    }
    integrals[i] = acc * h;
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
    std::vector<float> coefficients(kDegree + 1), lower(kIntervals), upper(kIntervals);
    for (int d = 0; d <= kDegree; ++d) coefficients[d] = input_value(d, 71u) / (1.0f + d);
    for (int i = 0; i < kIntervals; ++i) {
        // intervals inside [-1, 1] of length 0.05 to 0.5: the polynomial stays tame there
        lower[i] = 0.75f * input_value(i, 73u) - 0.25f;
        upper[i] = lower[i] + 0.05f + 0.225f * (input_value(i, 79u) + 1.0f);
    }

    float *d_coefficients = nullptr, *d_lower = nullptr, *d_upper = nullptr, *d_integrals = nullptr;
    HIP_CHECK(hipMalloc(&d_coefficients, coefficients.size() * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_lower, kIntervals * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_upper, kIntervals * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_integrals, kIntervals * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_coefficients, coefficients.data(), coefficients.size() * sizeof(float),
                        hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_lower, lower.data(), kIntervals * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_upper, upper.data(), kIntervals * sizeof(float), hipMemcpyHostToDevice));

    const dim3 grid((kIntervals + kBlock - 1) / kBlock);
    for (int launch = 0; launch < kLaunches; ++launch) {
        hipLaunchKernelGGL(integrate_intervals, grid, dim3(kBlock), 0, 0, d_coefficients, kDegree, d_lower, d_upper,
                           kSteps, d_integrals, kIntervals);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipDeviceSynchronize());

    std::vector<float> integrals(kIntervals);
    HIP_CHECK(hipMemcpy(integrals.data(), d_integrals, kIntervals * sizeof(float), hipMemcpyDeviceToHost));

    // Reference: the exact integral of the polynomial. The midpoint rule's error with 200 steps
    // on intervals of length <= 0.5 within [-1, 1] is far below the tolerance for this smooth polynomial.
    double checksum = 0.0;
    for (int i = 0; i < kIntervals; ++i) {
        double antiderivative_upper = 0.0, antiderivative_lower = 0.0;
        for (int d = kDegree; d >= 0; --d) {
            antiderivative_upper = (antiderivative_upper + coefficients[d] / (d + 1.0)) * upper[i];
            antiderivative_lower = (antiderivative_lower + coefficients[d] / (d + 1.0)) * lower[i];
        }
        const double expected = antiderivative_upper - antiderivative_lower;
        if (std::fabs(integrals[i] - expected) > 1e-4 * std::fabs(expected) + 2e-5) {
            std::fprintf(stderr, "runtime_trip: MISMATCH at interval %d: got %.7g, expected %.7g\n", i,
                         integrals[i], expected);
            return 1;
        }
        checksum += integrals[i];
    }

    HIP_CHECK(hipFree(d_coefficients));
    HIP_CHECK(hipFree(d_lower));
    HIP_CHECK(hipFree(d_upper));
    HIP_CHECK(hipFree(d_integrals));
    std::printf("runtime_trip: %d intervals, %d steps, degree %d, %d launches: PASS\n", kIntervals, kSteps, kDegree,
                kLaunches);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
