// RCCL in one process, checked against plain C++: ncclCommInitAll over four ranks (one stream
// each, the calls grouped), then ranks on threads with ncclCommInitRank sharing a unique id; every
// collective, and ranks that share one stream.
#include <hip/hip_runtime.h>
#include <rccl/rccl.h>

#include <cstdio>
#include <thread>
#include <vector>

static int failures = 0;
#define CHECK(cond, what)                                            \
    do {                                                             \
        if (!(cond)) {                                               \
            std::printf("mismatch: %s (line %d)\n", what, __LINE__); \
            ++failures;                                              \
        }                                                            \
    } while (0)

__global__ void fill(float* v, int n, int rank) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = float(rank + 1) * float(i % 7);
}

int main() {
    const int ranks = 4, n = 1000;
    ncclComm_t comms[ranks];
    CHECK(ncclCommInitAll(comms, ranks, nullptr) == ncclSuccess, "ncclCommInitAll");
    int count = 0, me = -1;
    ncclCommCount(comms[2], &count);
    ncclCommUserRank(comms[2], &me);
    CHECK(count == ranks && me == 2, "ncclCommCount / UserRank");
    hipStream_t streams[ranks];
    float *send[ranks], *recv[ranks], *gathered[ranks], *scattered[ranks];
    for (int r = 0; r < ranks; ++r) {
        hipStreamCreate(&streams[r]);
        hipMalloc(&send[r], n * sizeof(float));
        hipMalloc(&recv[r], n * sizeof(float));
        hipMalloc(&gathered[r], ranks * n * sizeof(float));
        hipMalloc(&scattered[r], (n / ranks) * sizeof(float));
        fill<<<(n + 255) / 256, 256, 0, streams[r]>>>(send[r], n, r);  // the input is made on the rank's stream
    }
    ncclGroupStart();
    for (int r = 0; r < ranks; ++r) ncclAllReduce(send[r], recv[r], n, ncclFloat, ncclSum, comms[r], streams[r]);
    ncclGroupEnd();
    ncclGroupStart();
    for (int r = 0; r < ranks; ++r) ncclAllGather(send[r], gathered[r], n, ncclFloat, comms[r], streams[r]);
    ncclGroupEnd();
    ncclGroupStart();
    for (int r = 0; r < ranks; ++r) ncclReduceScatter(send[r], scattered[r], n / ranks, ncclFloat, ncclMax, comms[r], streams[r]);
    ncclGroupEnd();
    for (int r = 0; r < ranks; ++r) hipStreamSynchronize(streams[r]);
    bool all_reduce = true, all_gather = true, reduce_scatter = true;
    for (int r = 0; r < ranks; ++r) {
        std::vector<float> out(n), g(ranks * n), sc(n / ranks);
        hipMemcpy(out.data(), recv[r], n * sizeof(float), hipMemcpyDeviceToHost);
        hipMemcpy(g.data(), gathered[r], g.size() * sizeof(float), hipMemcpyDeviceToHost);
        hipMemcpy(sc.data(), scattered[r], sc.size() * sizeof(float), hipMemcpyDeviceToHost);
        for (int i = 0; i < n; ++i) all_reduce &= out[i] == float(1 + 2 + 3 + 4) * float(i % 7);
        for (int q = 0; q < ranks; ++q)
            for (int i = 0; i < n; ++i) all_gather &= g[q * n + i] == float(q + 1) * float(i % 7);
        for (int i = 0; i < n / ranks; ++i) reduce_scatter &= sc[i] == 4.0f * float((r * (n / ranks) + i) % 7);
    }
    CHECK(all_reduce, "ncclAllReduce(sum)");
    CHECK(all_gather, "ncclAllGather");
    CHECK(reduce_scatter, "ncclReduceScatter(max)");

    // ranks on one stream (the single device's): broadcast from rank 1, then reduce to rank 3
    ncclGroupStart();
    for (int r = 0; r < ranks; ++r) ncclBroadcast(send[r], recv[r], n, ncclFloat, 1, comms[r], nullptr);
    ncclGroupEnd();
    ncclGroupStart();  // (one thread drives every rank: grouped, as RCCL requires)
    for (int r = 0; r < ranks; ++r) ncclReduce(send[r], gathered[r], n, ncclFloat, ncclProd, 3, comms[r], nullptr);
    ncclGroupEnd();
    hipDeviceSynchronize();
    bool broadcast = true, reduce = true;
    for (int r = 0; r < ranks; ++r) {
        std::vector<float> out(n);
        hipMemcpy(out.data(), recv[r], n * sizeof(float), hipMemcpyDeviceToHost);
        for (int i = 0; i < n; ++i) broadcast &= out[i] == 2.0f * float(i % 7);
    }
    std::vector<float> prod(n);
    hipMemcpy(prod.data(), gathered[3], n * sizeof(float), hipMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) {
        const float v = float(i % 7);
        reduce &= prod[i] == (1 * v) * (2 * v) * (3 * v) * (4 * v);
    }
    CHECK(broadcast, "ncclBroadcast on a shared stream");
    CHECK(reduce, "ncclReduce(prod) to rank 3 on a shared stream");
    for (int r = 0; r < ranks; ++r) ncclCommDestroy(comms[r]);

    // a thread per rank, joined through a unique id
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    std::vector<double> results(3);
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r)
        threads.emplace_back([&, r] {
            ncclComm_t comm;
            ncclCommInitRank(&comm, 3, id, r);
            // Non-blocking: on the one device every thread shares the null stream, which a blocking
            // stream waiting in the collective would hold up (a GPU per thread has one each).
            hipStream_t s;
            hipStreamCreateWithFlags(&s, hipStreamNonBlocking);
            double *v;
            hipMalloc(&v, sizeof(double));
            const double mine = 10.0 * (r + 1);
            hipMemcpyAsync(v, &mine, sizeof mine, hipMemcpyHostToDevice, s);
            ncclAllReduce(v, v, 1, ncclDouble, ncclAvg, comm, s);  // in place
            hipMemcpyAsync(&results[r], v, sizeof(double), hipMemcpyDeviceToHost, s);
            hipStreamSynchronize(s);
            ncclCommDestroy(comm);
        });
    for (auto& t : threads) t.join();
    CHECK(results[0] == 20.0 && results[1] == 20.0 && results[2] == 20.0, "ncclCommInitRank threads: AllReduce(avg) in place");

    if (failures) {
        std::printf("rccl: %d mismatches\n", failures);
        return 1;
    }
    std::printf("rccl: all match\n");
    return 0;
}
