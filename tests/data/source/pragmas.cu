// Every spelling of an unroll pragma rocm-perf recognizes.
#include <hip/hip_runtime.h>

#define UNROLL_TWO _Pragma("unroll 2")

__global__ void pragma_spellings(float* out, int n) {
    float acc = 0.0f;
#pragma unroll
    for (int a = 0; a < 8; ++a) acc += out[a];
    #pragma unroll 2
    for (int b = 0; b < n; ++b) acc += out[b];
    #pragma unroll(4)
    for (int c = 0; c < n; ++c) acc += out[c];
    #pragma clang loop unroll_count(2)
    for (int d = 0; d < n; ++d) acc += out[d];
    #pragma nounroll
    for (int e = 0; e < n; ++e) acc += out[e];
    #pragma clang loop unroll(disable)
    for (int f = 0; f < n; ++f) acc += out[f];
    _Pragma("unroll 8") for (int g = 0; g < n; ++g) acc += out[g];
    UNROLL_TWO
    for (int h = 0; h < n; ++h) acc += out[h];
    #pragma unroll 2
    while (n > 4) { n -= 4; acc += 1.0f; }
    for (int z = 0; z < n; ++z) acc += out[z];
    out[0] = acc;
}
