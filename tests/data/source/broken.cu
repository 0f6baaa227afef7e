// Does not compile: the analysis must fail with the compiler's message.
#include <hip/hip_runtime.h>

__global__ void broken(float* out) {
    out[0] = undeclared_name + 1;
}
