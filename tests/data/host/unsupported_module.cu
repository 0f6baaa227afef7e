// Loading a GPU code object at run time cannot serve a CPU build: the build must fail naming
// hipModuleLoad and this file's line.
#include <hip/hip_runtime.h>

int main() {
    hipModule_t module;
    hipError_t e = hipModuleLoad(&module, "kernels.co");
    return e == hipSuccess ? 0 : 1;
}
