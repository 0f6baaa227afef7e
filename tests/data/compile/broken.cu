// Compile-check fixture: does not compile (an undeclared identifier, then a type error).
#include <hip/hip_runtime.h>

__global__ void uses_undeclared(float* x) { x[threadIdx.x] = undeclared_value; }

__global__ void bad_init(float* x) { int y = "text"; x[0] = y; }
