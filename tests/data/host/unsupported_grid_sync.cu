// A grid-wide barrier through cooperative groups: every block must be resident at once, which
// the host backend cannot promise, so this must fail to compile naming the feature and line.
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>

namespace cg = cooperative_groups;

__global__ void two_phase(float* data) {
    cg::grid_group grid = cg::this_grid();
    data[blockIdx.x] += 1.0f;
    grid.sync();
    data[0] += data[gridDim.x - 1];
}

int main() {
    float* d;
    hipMalloc(&d, 64 * sizeof(float));
    two_phase<<<64, 1>>>(d);
    hipDeviceSynchronize();
    return 0;
}
