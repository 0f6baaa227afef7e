// Fiber stacks of the host runtime (fiber.h): one block of 1024 threads that meet at a barrier,
// launched 6 times (the first launch makes the 1023 fiber stacks); then, with an argument, either
// a kernel whose threads other than thread 0 overflow their stacks (writing 160 KiB of locals
// downwards from the top), which must crash on a guard page, or 60 cooperative launches of 4
// blocks of 256 threads that meet at barriers (an OS thread per block, whose stacks go when it
// ends), printing how much the resident memory grew, or 8 launches of a block of 64 threads that
// note where a local of theirs sits on their fiber stacks, printing for the thread whose local
// sat at the fewest distinct offsets within a page how many it had (every start of a fiber draws
// a fresh stack top, so that a run averages over stack layouts).
// Usage: fiber_stacks [overflow | cooperative | tops]
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstring>

__global__ void meet(int* out) {
    __shared__ int seen[1024];
    seen[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = seen[1023 - threadIdx.x];
}

__global__ void overflow(int* out) {
    __syncthreads();  // thread 0 stays on the OS stack; the others are fibers from here on
    if (threadIdx.x == 0) return;
    volatile char big[160 * 1024];
    for (int i = static_cast<int>(sizeof big) - 1; i >= 0; --i) big[i] = static_cast<char>(i);
    out[threadIdx.x] = big[threadIdx.x];
}

__global__ void meet_in_blocks(int* out) {
    __shared__ int seen[256];
    seen[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[blockIdx.x * 256 + threadIdx.x] = seen[255 - threadIdx.x];
}

__global__ void note_where(unsigned long long* where) {
    __syncthreads();  // from here on threads other than 0 run on fiber stacks
    volatile int local = static_cast<int>(threadIdx.x);
    where[threadIdx.x] = reinterpret_cast<unsigned long long>(&local);
}

long resident_kib() {
    std::FILE* f = std::fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
    if (f) std::fclose(f);
    return kib;
}

int main(int argc, char** argv) {
    int* d_out = nullptr;
    hipMalloc(&d_out, 1024 * sizeof(int));
    for (int rep = 0; rep < 6; ++rep) meet<<<1, 1024>>>(d_out);
    int out[1024];
    hipMemcpy(out, d_out, sizeof out, hipMemcpyDeviceToHost);
    for (int t = 0; t < 1024; ++t)
        if (out[t] != 1023 - t) {
            std::printf("meet: thread %d read %d\n", t, out[t]);
            return 1;
        }
    if (argc > 1 && std::strcmp(argv[1], "cooperative") == 0) {
        void* args[] = {&d_out};
        long after_first = 0;
        for (int rep = 0; rep < 60; ++rep) {
            if (hipLaunchCooperativeKernel(meet_in_blocks, dim3(4), dim3(256), args, 0, nullptr) != hipSuccess) return 3;
            hipDeviceSynchronize();
            if (rep == 0) after_first = resident_kib();
        }
        std::printf("resident memory grew by %ld KiB after the first cooperative launch\n", resident_kib() - after_first);
        return 0;
    }
    if (argc > 1 && std::strcmp(argv[1], "tops") == 0) {
        constexpr int kLaunches = 8, kThreads = 64;
        unsigned long long* d_where = nullptr;
        hipMalloc(&d_where, kThreads * sizeof(unsigned long long));
        unsigned long long where[kLaunches][kThreads];
        for (int rep = 0; rep < kLaunches; ++rep) {
            note_where<<<1, kThreads>>>(d_where);
            hipMemcpy(where[rep], d_where, sizeof where[rep], hipMemcpyDeviceToHost);
        }
        int fewest = kLaunches;
        for (int t = 1; t < kThreads; ++t) {
            int distinct = 0;
            for (int rep = 0; rep < kLaunches; ++rep) {
                bool seen = false;
                for (int earlier = 0; earlier < rep; ++earlier) seen |= where[earlier][t] % 4096 == where[rep][t] % 4096;
                distinct += !seen;
            }
            if (distinct < fewest) fewest = distinct;
        }
        std::printf("fewest distinct in-page offsets of a fiber's local over %d launches: %d\n", kLaunches, fewest);
        return 0;
    }
    if (argc > 1) {
        overflow<<<1, 64>>>(d_out);
        hipDeviceSynchronize();
        std::printf("overflow: no crash\n");
        return 2;
    }
    std::printf("fiber_stacks: PASS\n");
    return 0;
}
