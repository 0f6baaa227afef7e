// Atomics on int, unsigned, float and double from many blocks at once: a histogram, min/max,
// exchange and compare-and-swap, checked against exact CPU results.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <vector>

#define BINS 16

__global__ void histogram(const int* data, unsigned* bins, int n) {
    __shared__ unsigned local[BINS];
    if (threadIdx.x < BINS) local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i] % BINS], 1u);
    __syncthreads();
    if (threadIdx.x < BINS) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

__global__ void reductions(const int* data, int n, int* imin, int* imax, float* fsum, double* dsum, int* sub,
                           unsigned* claimed, int* exch) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicMin(imin, data[i]);
    atomicMax(imax, data[i]);
    atomicAdd(fsum, 0.5f);  // exact in float for these counts
    atomicAdd(dsum, double(data[i]));
    atomicSub(sub, 1);
    if (atomicCAS(claimed, 0u, unsigned(i + 1)) == 0u) atomicExch(exch, i + 1);
}

int main() {
    const int n = 1 << 16;
    std::vector<int> data(n);
    for (int i = 0; i < n; ++i) data[i] = (i * 2654435761u) % 100003;
    int* ddata;
    unsigned* dbins;
    hipMalloc(&ddata, n * sizeof(int));
    hipMalloc(&dbins, BINS * sizeof(unsigned));
    hipMemcpy(ddata, data.data(), n * sizeof(int), hipMemcpyHostToDevice);
    hipMemset(dbins, 0, BINS * sizeof(unsigned));
    histogram<<<32, 256>>>(ddata, dbins, n);
    std::vector<unsigned> bins(BINS), ref(BINS, 0);
    hipMemcpy(bins.data(), dbins, BINS * sizeof(unsigned), hipMemcpyDeviceToHost);
    for (int v : data) ref[v % BINS]++;
    for (int b = 0; b < BINS; ++b)
        if (bins[b] != ref[b]) {
            std::printf("histogram mismatch at bin %d: %u vs %u\n", b, bins[b], ref[b]);
            return 1;
        }

    int *imin, *imax, *sub, *exch;
    float* fsum;
    double* dsum;
    unsigned* claimed;
    hipMalloc(&imin, sizeof(int));
    hipMalloc(&imax, sizeof(int));
    hipMalloc(&sub, sizeof(int));
    hipMalloc(&exch, sizeof(int));
    hipMalloc(&fsum, sizeof(float));
    hipMalloc(&dsum, sizeof(double));
    hipMalloc(&claimed, sizeof(unsigned));
    int big = 1 << 30, zero = 0;
    hipMemcpy(imin, &big, sizeof(int), hipMemcpyHostToDevice);
    hipMemcpy(imax, &zero, sizeof(int), hipMemcpyHostToDevice);
    hipLaunchKernelGGL(reductions, dim3((n + 255) / 256), dim3(256), 0, 0, ddata, n, imin, imax, fsum, dsum, sub,
                       claimed, exch);
    int hmin, hmax, hsub, hexch;
    float hfsum;
    double hdsum;
    unsigned hclaimed;
    hipMemcpy(&hmin, imin, sizeof(int), hipMemcpyDeviceToHost);
    hipMemcpy(&hmax, imax, sizeof(int), hipMemcpyDeviceToHost);
    hipMemcpy(&hsub, sub, sizeof(int), hipMemcpyDeviceToHost);
    hipMemcpy(&hexch, exch, sizeof(int), hipMemcpyDeviceToHost);
    hipMemcpy(&hfsum, fsum, sizeof(float), hipMemcpyDeviceToHost);
    hipMemcpy(&hdsum, dsum, sizeof(double), hipMemcpyDeviceToHost);
    hipMemcpy(&hclaimed, claimed, sizeof(unsigned), hipMemcpyDeviceToHost);
    int rmin = big, rmax = 0;
    double rsum = 0;
    for (int v : data) {
        rmin = v < rmin ? v : rmin;
        rmax = v > rmax ? v : rmax;
        rsum += v;
    }
    if (hmin != rmin || hmax != rmax || hsub != -n || hfsum != 0.5f * n || hdsum != rsum || hclaimed == 0 ||
        int(hclaimed) != hexch) {
        std::printf("atomics mismatch: min %d/%d max %d/%d sub %d fsum %f dsum %f/%f cas %u exch %d\n", hmin, rmin,
                    hmax, rmax, hsub, hfsum, hdsum, rsum, hclaimed, hexch);
        return 1;
    }
    std::printf("checksum %u %d %d\n", bins[3], hmin, hmax);
    return 0;
}
