// The other translation unit: launches the header's kernels, the other unit's kernel directly,
// and the other unit's launcher; every result checked against plain C++.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "kernels.hpp"

int main() {
    const int n = 1000;
    std::vector<float> h(n);
    for (int i = 0; i < n; ++i) h[i] = i * 0.5f;
    float *d, *sums;
    hipMalloc(&d, n * sizeof(float));
    hipMalloc(&sums, 8 * sizeof(float));
    hipMemcpy(d, h.data(), n * sizeof(float), hipMemcpyHostToDevice);
    scale_add<<<(n + 255) / 256, 256>>>(d, 2.0f, 1.0f, n);  // x -> 2x + 1
    run_square(d, n);                                        // -> (2x + 1)^2
    square<<<(n + 255) / 256, 256>>>(d, n);                  // -> (2x + 1)^4
    sum_blocks(d, sums, n, 128);
    float* maxima;
    hipMalloc(&maxima, 8 * sizeof(float));
    block_max<<<8, 128, 128 * sizeof(float)>>>(d, maxima, n);
    std::vector<float> out(n), block(8), best(8);
    hipMemcpy(best.data(), maxima, 8 * sizeof(float), hipMemcpyDeviceToHost);
    hipMemcpy(out.data(), d, n * sizeof(float), hipMemcpyDeviceToHost);
    hipMemcpy(block.data(), sums, 8 * sizeof(float), hipMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) {
        const float v = 2.0f * h[i] + 1.0f, want = (v * v) * (v * v);
        if (out[i] != want) {
            std::printf("element %d: %g vs %g\n", i, out[i], want);
            return 1;
        }
    }
    for (int b = 0; b < 8; ++b) {
        float want = 0;
        std::vector<float> part(out.begin() + b * 128, out.begin() + std::min(n, (b + 1) * 128));
        part.resize(128, 0.0f);
        for (unsigned s = 64; s > 0; s /= 2)  // the kernel's order of additions
            for (unsigned t = 0; t < s; ++t) part[t] += part[t + s];
        want = part[0];
        if (block[b] != want) {
            std::printf("block sum %d: %g vs %g\n", b, block[b], want);
            return 1;
        }
    }
    for (int b = 0; b < 8; ++b) {
        float want = -1e30f;
        for (int i = b * 128; i < std::min(n, (b + 1) * 128); ++i) want = std::max(want, out[i]);
        if (best[b] != want) {
            std::printf("block max %d: %g vs %g\n", b, best[b], want);
            return 1;
        }
    }
    std::printf("multi-unit program: all match\n");
    return 0;
}
