// Items per thread as a kernel's template argument, written at its launch: the comment before the
// launch declares the values `rocm-perf optimize` and `try` may give it. Integer work over a
// grid-stride loop: every value computes the same outputs, bit for bit.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <vector>

constexpr int kN = (1 << 20) + 7;
constexpr int kBlocks = 32;
constexpr int kBlock = 64;
constexpr int kLaunches = 6;

template <int ITEMS>
__global__ void scale_add(const int* in, int* out, int n) {
    const int stride = gridDim.x * blockDim.x * ITEMS;
    for (int base = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS; base < n; base += stride) {
        for (int k = 0; k < ITEMS; ++k) {
            if (base + k < n) out[base + k] = in[base + k] * 3 + (base + k) % 7;
        }
    }
}

int main() {
    std::vector<int> in(kN);
    for (int i = 0; i < kN; ++i) in[i] = (i * 2654435761u) >> 11;
    int *d_in = nullptr, *d_out = nullptr;
    if (hipMalloc(&d_in, kN * sizeof(int)) != hipSuccess || hipMalloc(&d_out, kN * sizeof(int)) != hipSuccess) return 2;
    hipMemcpy(d_in, in.data(), kN * sizeof(int), hipMemcpyHostToDevice);
    for (int launch = 0; launch < kLaunches; ++launch) {
        // rocm-perf: tune ITEMS 1 2 8
        scale_add<4><<<kBlocks, kBlock>>>(d_in, d_out, kN);
    }
    hipDeviceSynchronize();
    std::vector<int> out(kN);
    hipMemcpy(out.data(), d_out, kN * sizeof(int), hipMemcpyDeviceToHost);
    unsigned long long checksum = 0;
    for (int i = 0; i < kN; ++i) {
        if (out[i] != in[i] * 3 + i % 7) {
            std::fprintf(stderr, "element %d: %d, expected %d\n", i, out[i], in[i] * 3 + i % 7);
            return 1;
        }
        checksum = checksum * 31 + static_cast<unsigned>(out[i]);
    }
    std::printf("checksum %llu\n", checksum);
    hipFree(d_in);
    hipFree(d_out);
    return 0;
}
