// An unroll pragma with a comment after it, and one after another loop pragma: replacing the
// unroll pragma keeps its neighbours.
#include <hip/hip_runtime.h>

__global__ void neighbours(float* out, int n) {
    float acc = 0.0f;
    #pragma unroll 2
    // the hot loop
    for (int a = 0; a < n; ++a) acc += out[a];
    #pragma clang loop vectorize(enable)
    #pragma unroll 4
    for (int b = 0; b < n; ++b) acc += out[b];
    out[0] = acc;
}
