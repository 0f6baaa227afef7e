// A kernel whose argument is a struct of device pointers, with a table of device pointers in
// device memory too, a __device__ counter it increments and a __constant__ it reads: a replay
// must restore every allocation at its original address for these to stay valid
// (tests/test_host_capture.py, tests/test_isolate.py).
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        hipError_t e_ = (call);                                                                  \
        if (e_ != hipSuccess) {                                                                  \
            std::fprintf(stderr, "%s failed: %s\n", #call, hipGetErrorString(e_));               \
            std::exit(2);                                                                        \
        }                                                                                        \
    } while (0)

struct Views {
    const float* in;
    float* out;
    float** table;  // device memory holding more device pointers
    int n;
};

__device__ unsigned int launches_seen;
__constant__ float gain[2];

__device__ float weight(int i) { return gain[i & 1]; }

__global__ void scale_views(Views v, size_t count) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i == 0) atomicAdd(&launches_seen, 1u);
    if (i >= count) return;
    v.out[i] = v.in[i] * weight(int(i)) + v.table[i % 2][i];
}

static void reference(const std::vector<float>& in, const std::vector<float>& extra0, const std::vector<float>& extra1,
                      std::vector<float>& out, const float g[2]) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] * g[i & 1] + (i % 2 ? extra1[i] : extra0[i]);
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 3000;
    const int rounds = 3;
    std::vector<float> in(n), extra0(n), extra1(n);
    for (int i = 0; i < n; ++i) {
        in[i] = float(i % 97) * 0.5f;
        extra0[i] = float(i % 13);
        extra1[i] = -float(i % 7);
    }
    const float g[2] = {2.0f, 0.25f};
    float *d_in, *d_out, *d_e0, *d_e1;
    float** d_table;
    CHECK(hipMalloc(&d_in, n * sizeof(float)));
    CHECK(hipMalloc(&d_out, n * sizeof(float)));
    CHECK(hipMalloc(&d_e0, n * sizeof(float)));
    CHECK(hipMalloc(&d_e1, n * sizeof(float)));
    CHECK(hipMalloc(&d_table, 2 * sizeof(float*)));
    float* table[2] = {d_e0, d_e1};
    CHECK(hipMemcpy(d_table, table, sizeof table, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_in, in.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_e0, extra0.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpy(d_e1, extra1.data(), n * sizeof(float), hipMemcpyHostToDevice));
    CHECK(hipMemcpyToSymbol(gain, g, sizeof g));
    std::printf("addresses %p %p %p %p %p\n", (void*)d_in, (void*)d_out, (void*)d_e0, (void*)d_e1, (void*)d_table);
    float *src = d_in, *dst = d_out;
    for (int r = 0; r < rounds; ++r) {
        Views v{src, dst, d_table, n};
        // `n` is an int: the kernel's parameter is a size_t, which is what the launch passes
        hipLaunchKernelGGL(scale_views, dim3((n + 255) / 256), dim3(256), 0, 0, v, n);
        CHECK(hipGetLastError());
        std::swap(src, dst);  // each round feeds the next: the output becomes the input
    }
    CHECK(hipDeviceSynchronize());
    std::vector<float> got(n), want(n), scratch(in);
    for (int r = 0; r < rounds; ++r) {
        reference(scratch, extra0, extra1, want, g);
        scratch = want;
    }
    CHECK(hipMemcpy(got.data(), src, n * sizeof(float), hipMemcpyDeviceToHost));
    unsigned int seen = 0;
    CHECK(hipMemcpyFromSymbol(&seen, launches_seen, sizeof seen));
    for (int i = 0; i < n; ++i)
        if (got[i] != want[i]) {
            std::fprintf(stderr, "pointer_struct: MISMATCH at %d: %g vs %g\n", i, got[i], want[i]);
            return 1;
        }
    std::printf("pointer_struct: %d launches seen, PASS\n", seen);
    return seen == unsigned(rounds) ? 0 : 1;
}
