// Single-statement bodies, nested loops, loops that do not start a line, do/while loops, and
// UTF-8 text before the loops: "π ≈ 3.14159", résumé, 漢字.
#include <hip/hip_runtime.h>

__global__ void bodies(float* __restrict__ out, int n, int m) {
    float acc = 0.0f;  // naïve accumulator — UTF-8 in a comment
    const char* label = "größe";
    for (int i = 0; i < n; ++i) acc += out[i];
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < m; ++j)
            acc += out[i * m + j];
    if (n > 3) for (int k = n - 1; k >= 0; k -= 2) acc -= out[k];
    for (unsigned int u = 10u; u > 2u; --u) { acc += out[u]; }
    int w = n;
    while (w > 0) w -= 3;
    do { acc *= 0.5f; } while (acc > 1.0f);
    for (int s = 1; s <= 64; s <<= 1) acc += s;
    out[0] = acc + label[0] + w;
}
