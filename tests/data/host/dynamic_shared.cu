// Dynamic shared memory in both forms (inside a kernel and at file scope) sized by the launch,
// a 2-D block, and threads that leave before a barrier the others still use.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <vector>

extern __shared__ double file_scope_shared[];

// Sum of each row of `in` (rows x cols) with a tree reduction in dynamic shared memory.
__global__ void row_sum(const float* in, float* out, int cols) {
    extern __shared__ float partial[];
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += in[blockIdx.x * cols + c];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

// 2-D block: every thread writes its linear id into shared memory, the block reverses it.
// Threads beyond `valid` return early; the barrier still releases the rest.
__global__ void reverse_2d(int* out, int valid) {
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    int n = blockDim.x * blockDim.y;
    if (t >= valid) return;
    file_scope_shared[t] = double(t + blockIdx.x * n);
    __syncthreads();
    out[blockIdx.x * n + t] = int(file_scope_shared[valid - 1 - t]);
}

int main() {
    const int rows = 96, cols = 1000, threads = 128;
    std::vector<float> in(rows * cols), out(rows);
    for (int i = 0; i < rows * cols; ++i) in[i] = float((i * 7) % 13) - 6.0f;
    float *din, *dout;
    hipMalloc(&din, in.size() * sizeof(float));
    hipMalloc(&dout, rows * sizeof(float));
    hipMemcpy(din, in.data(), in.size() * sizeof(float), hipMemcpyHostToDevice);
    hipLaunchKernelGGL(row_sum, dim3(rows), dim3(threads), threads * sizeof(float), 0, din, dout, cols);
    hipMemcpy(out.data(), dout, rows * sizeof(float), hipMemcpyDeviceToHost);
    for (int r = 0; r < rows; ++r) {
        float ref = 0;
        for (int c = 0; c < cols; ++c) ref += in[r * cols + c];
        if (out[r] != ref) {
            std::printf("row_sum mismatch at row %d: %f vs %f\n", r, out[r], ref);
            return 1;
        }
    }
    const int blocks = 4, bx = 8, by = 4, n = bx * by, valid = 29;
    int* dints;
    hipMalloc(&dints, blocks * n * sizeof(int));
    hipMemset(dints, 0xff, blocks * n * sizeof(int));
    reverse_2d<<<blocks, dim3(bx, by), n * sizeof(double)>>>(dints, valid);
    std::vector<int> ints(blocks * n);
    hipMemcpy(ints.data(), dints, ints.size() * sizeof(int), hipMemcpyDeviceToHost);
    for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < n; ++t) {
            int expect = t < valid ? valid - 1 - t + b * n : -1;
            if (ints[b * n + t] != expect) {
                std::printf("reverse_2d mismatch at block %d thread %d: %d vs %d\n", b, t, ints[b * n + t], expect);
                return 1;
            }
        }
    std::printf("checksum %.1f\n", double(out[0]) + ints[5]);
    return 0;
}
