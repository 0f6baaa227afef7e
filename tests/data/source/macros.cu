// Loops written by macros (skipped), a macro bound (-DTILE changes the trip count), and a
// macro around _Pragma.
#include <hip/hip_runtime.h>

#ifndef TILE
#define TILE 16
#endif
#define SUM_LOOP(n) for (int q = 0; q < (n); ++q) acc += q;
#define UNROLL_FOUR _Pragma("unroll 4")

__global__ void macro_loops(float* out) {
    float acc = 0.0f;
    SUM_LOOP(8)
    for (int i = 0; i < TILE; ++i) acc += out[i];
    UNROLL_FOUR
    for (int j = 0; j < TILE; j += 2) acc += out[j];
    out[0] = acc;
}
