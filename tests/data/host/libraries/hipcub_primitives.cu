// hipCUB as programs use it, checked against plain C++: the device-wide primitives with the
// two-call temporary-storage protocol, and the block and warp primitives inside kernels.
#include <hip/hip_runtime.h>
#include <hipcub/hipcub.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

static int failures = 0;
#define CHECK(cond, what)                                            \
    do {                                                             \
        if (!(cond)) {                                               \
            std::printf("mismatch: %s (line %d)\n", what, __LINE__); \
            ++failures;                                              \
        }                                                            \
    } while (0)

constexpr int kBlock = 128;

__global__ void block_and_warp(const int* in, int* block_sums, int* exclusive, int* inclusive, int* aggregates,
                               int* warp_sums, int* warp_scans, int* items_scan) {
    using BlockReduce = hipcub::BlockReduce<int, kBlock>;
    using BlockScan = hipcub::BlockScan<int, kBlock>;
    using WarpReduce = hipcub::WarpReduce<int, 32>;
    using WarpScan = hipcub::WarpScan<int, 32>;
    __shared__ typename BlockReduce::TempStorage reduce_storage;
    __shared__ typename BlockScan::TempStorage scan_storage;
    __shared__ typename WarpReduce::TempStorage warp_storage[kBlock / 32];
    __shared__ typename WarpScan::TempStorage warp_scan_storage[kBlock / 32];
    const int tid = threadIdx.x;
    const int gid = blockIdx.x * kBlock + tid;
    const int v = in[gid];
    const int sum = BlockReduce(reduce_storage).Sum(v);
    if (tid == 0) block_sums[blockIdx.x] = sum;
    int ex, inc, agg;
    BlockScan(scan_storage).ExclusiveSum(v, ex, agg);
    BlockScan(scan_storage).InclusiveSum(v, inc);
    exclusive[gid] = ex;
    inclusive[gid] = inc;
    if (tid == 0) aggregates[blockIdx.x] = agg;
    const int w = WarpReduce(warp_storage[tid / 32]).Sum(v);
    if (tid % 32 == 0) warp_sums[gid / 32] = w;
    int ws;
    WarpScan(warp_scan_storage[tid / 32]).InclusiveSum(v, ws);
    warp_scans[gid] = ws;
    int items[2] = {v, 2 * v}, scanned[2];
    BlockScan(scan_storage).ExclusiveSum(items, scanned);
    items_scan[2 * gid] = scanned[0];
    items_scan[2 * gid + 1] = scanned[1];
}

template <class T>
T* to_device(const std::vector<T>& h) {
    T* d = nullptr;
    hipMalloc(&d, h.size() * sizeof(T) + 1);
    hipMemcpy(d, h.data(), h.size() * sizeof(T), hipMemcpyHostToDevice);
    return d;
}
template <class T>
std::vector<T> to_host(const T* d, size_t n) {
    std::vector<T> h(n);
    hipMemcpy(h.data(), d, n * sizeof(T), hipMemcpyDeviceToHost);
    return h;
}

int main() {
    const int n = 4 * kBlock;
    std::vector<int> h(n);
    for (int i = 0; i < n; ++i) h[i] = static_cast<int>((i * 2654435761u) >> 24) - 128;
    int* d_in = to_device(h);
    int* d_out = to_device(std::vector<int>(n));
    void* temp = nullptr;
    size_t temp_bytes = 0;

    // DeviceReduce: the first call sizes, the second runs
    CHECK(hipcub::DeviceReduce::Sum(temp, temp_bytes, d_in, d_out, n) == hipSuccess && temp_bytes > 0, "size query");
    hipMalloc(&temp, temp_bytes);
    hipcub::DeviceReduce::Sum(temp, temp_bytes, d_in, d_out, n);
    CHECK(to_host(d_out, 1)[0] == std::accumulate(h.begin(), h.end(), 0), "DeviceReduce::Sum");
    hipcub::DeviceReduce::Min(temp, temp_bytes, d_in, d_out, n);
    CHECK(to_host(d_out, 1)[0] == *std::min_element(h.begin(), h.end()), "DeviceReduce::Min");
    hipcub::DeviceReduce::Max(temp, temp_bytes, d_in, d_out, n);
    CHECK(to_host(d_out, 1)[0] == *std::max_element(h.begin(), h.end()), "DeviceReduce::Max");
    hipcub::DeviceReduce::Reduce(temp, temp_bytes, d_in, d_out, n, hipcub::Max(), -1000);
    CHECK(to_host(d_out, 1)[0] == *std::max_element(h.begin(), h.end()), "DeviceReduce::Reduce");
    hipcub::KeyValuePair<int, int>* d_arg;
    hipMalloc(&d_arg, sizeof *d_arg);
    hipcub::DeviceReduce::ArgMin(temp, temp_bytes, d_in, d_arg, n);
    const auto arg = to_host(d_arg, 1)[0];
    CHECK(arg.key == std::min_element(h.begin(), h.end()) - h.begin() && arg.value == h[arg.key], "DeviceReduce::ArgMin");

    // a sum of bools (through iterators) into an int counts them: the output's type accumulates
    struct positive_op {
        const int* v;
        __host__ __device__ bool operator()(int i) const { return v[i] > 0; }
    };
    hipcub::CountingInputIterator<int> index(0);
    hipcub::TransformInputIterator<bool, positive_op, hipcub::CountingInputIterator<int>> is_positive(index, positive_op{d_in});
    hipcub::DeviceReduce::Sum(temp, temp_bytes, is_positive, d_out, n);
    CHECK(to_host(d_out, 1)[0] == std::count_if(h.begin(), h.end(), [](int x) { return x > 0; }),
          "DeviceReduce::Sum of bools into int (TransformInputIterator)");

    // DeviceScan, on a stream
    hipStream_t stream;
    hipStreamCreate(&stream);
    hipcub::DeviceScan::ExclusiveSum(temp, temp_bytes, d_in, d_out, n, stream);
    hipStreamSynchronize(stream);
    std::vector<int> want(n);
    std::exclusive_scan(h.begin(), h.end(), want.begin(), 0);
    CHECK(to_host(d_out, n) == want, "DeviceScan::ExclusiveSum");
    hipcub::DeviceScan::InclusiveScan(temp, temp_bytes, d_in, d_out, hipcub::Max(), n, stream);
    hipStreamSynchronize(stream);
    std::inclusive_scan(h.begin(), h.end(), want.begin(), [](int a, int b) { return std::max(a, b); });
    CHECK(to_host(d_out, n) == want, "DeviceScan::InclusiveScan(Max)");

    // DeviceRadixSort: pairs (stable), keys descending, a bit range, floats with -0.0, a DoubleBuffer
    std::vector<int> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    int* d_vals = to_device(idx);
    int* d_keys_out = to_device(std::vector<int>(n));
    int* d_vals_out = to_device(std::vector<int>(n));
    hipcub::DeviceRadixSort::SortPairs(temp, temp_bytes, d_in, d_keys_out, d_vals, d_vals_out, n);
    std::vector<int> order = idx;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return h[a] < h[b]; });
    const auto keys = to_host(d_keys_out, n), vals = to_host(d_vals_out, n);
    bool pairs_ok = true;
    for (int i = 0; i < n; ++i) pairs_ok &= keys[i] == h[order[i]] && vals[i] == order[i];
    CHECK(pairs_ok, "DeviceRadixSort::SortPairs (stable)");
    hipcub::DeviceRadixSort::SortKeysDescending(temp, temp_bytes, d_in, d_keys_out, n);
    std::vector<int> desc = h;
    std::sort(desc.begin(), desc.end(), std::greater<int>());
    CHECK(to_host(d_keys_out, n) == desc, "DeviceRadixSort::SortKeysDescending");
    std::vector<unsigned> u(n);
    for (int i = 0; i < n; ++i) u[i] = static_cast<unsigned>(h[i]) * 2654435761u;
    unsigned* d_u = to_device(u);
    unsigned* d_u_out = to_device(std::vector<unsigned>(n));
    hipcub::DeviceRadixSort::SortKeys(temp, temp_bytes, d_u, d_u_out, n, 4, 12);  // bits [4, 12) only
    std::vector<unsigned> by_bits = u;
    std::stable_sort(by_bits.begin(), by_bits.end(), [](unsigned a, unsigned b) { return ((a >> 4) & 255u) < ((b >> 4) & 255u); });
    CHECK(to_host(d_u_out, n) == by_bits, "DeviceRadixSort::SortKeys bits [4, 12)");
    std::vector<float> f = {3.5f, -0.0f, 0.0f, -2.0f, 1e-30f, -1e30f, 7.0f, -0.5f};
    hipcub::DoubleBuffer<float> fb(to_device(f), to_device(std::vector<float>(f.size())));
    hipcub::DeviceRadixSort::SortKeys(temp, temp_bytes, fb, static_cast<int>(f.size()));
    const auto fs = to_host(fb.Current(), f.size());
    const float want_f[] = {-1e30f, -2.0f, -0.5f, -0.0f, 0.0f, 1e-30f, 3.5f, 7.0f};
    bool floats_ok = true;
    for (size_t i = 0; i < f.size(); ++i) floats_ok &= std::memcmp(&fs[i], &want_f[i], sizeof(float)) == 0;
    CHECK(floats_ok, "DeviceRadixSort::SortKeys(DoubleBuffer<float>): -0.0 before +0.0");

    // DeviceSelect
    std::vector<char> flags(n);
    for (int i = 0; i < n; ++i) flags[i] = h[i] > 0;
    char* d_flags = to_device(flags);
    int* d_count = to_device(std::vector<int>(1));
    hipcub::DeviceSelect::Flagged(temp, temp_bytes, d_in, d_flags, d_out, d_count, n);
    std::vector<int> positive;
    std::copy_if(h.begin(), h.end(), std::back_inserter(positive), [](int x) { return x > 0; });
    const int kept = to_host(d_count, 1)[0];
    CHECK(kept == static_cast<int>(positive.size()) && to_host(d_out, kept) == positive, "DeviceSelect::Flagged");
    hipcub::DeviceSelect::If(temp, temp_bytes, d_in, d_out, d_count, n, [] __host__ __device__(int x) { return x % 3 == 0; });
    CHECK(to_host(d_count, 1)[0] == std::count_if(h.begin(), h.end(), [](int x) { return x % 3 == 0; }), "DeviceSelect::If");
    hipcub::DeviceSelect::Unique(temp, temp_bytes, d_keys_out, d_out, d_count, n);
    std::vector<int> uniq = desc;
    uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
    CHECK(to_host(d_count, 1)[0] == static_cast<int>(uniq.size()), "DeviceSelect::Unique");

    // block and warp primitives
    const int blocks = n / kBlock;
    int *d_bsum = to_device(std::vector<int>(blocks)), *d_ex = to_device(std::vector<int>(n)),
        *d_inc = to_device(std::vector<int>(n)), *d_agg = to_device(std::vector<int>(blocks)),
        *d_wsum = to_device(std::vector<int>(n / 32)), *d_wscan = to_device(std::vector<int>(n)),
        *d_items = to_device(std::vector<int>(2 * n));
    block_and_warp<<<blocks, kBlock>>>(d_in, d_bsum, d_ex, d_inc, d_agg, d_wsum, d_wscan, d_items);
    const auto bsum = to_host(d_bsum, blocks), ex = to_host(d_ex, n), inc = to_host(d_inc, n), agg = to_host(d_agg, blocks),
               wsum = to_host(d_wsum, n / 32), wscan = to_host(d_wscan, n), items = to_host(d_items, 2 * n);
    bool block_ok = true, warp_ok = true, items_ok = true;
    for (int b = 0; b < blocks; ++b) {
        int acc = 0, item_acc = 0;
        for (int t = 0; t < kBlock; ++t) {
            const int v = h[b * kBlock + t];
            block_ok &= ex[b * kBlock + t] == acc;
            acc += v;
            block_ok &= inc[b * kBlock + t] == acc;
            items_ok &= items[2 * (b * kBlock + t)] == item_acc && items[2 * (b * kBlock + t) + 1] == item_acc + v;
            item_acc += 3 * v;
        }
        block_ok &= bsum[b] == acc && agg[b] == acc;
    }
    for (int w = 0; w < n / 32; ++w) {
        int acc = 0;
        for (int l = 0; l < 32; ++l) {
            acc += h[w * 32 + l];
            warp_ok &= wscan[w * 32 + l] == acc;
        }
        warp_ok &= wsum[w] == acc;
    }
    CHECK(block_ok, "BlockReduce::Sum and BlockScan sums with aggregate");
    CHECK(items_ok, "BlockScan::ExclusiveSum over two items per thread");
    CHECK(warp_ok, "WarpReduce::Sum and WarpScan::InclusiveSum (32-lane logical warps)");

    hipStreamDestroy(stream);
    if (failures) {
        std::printf("hipcub: %d mismatches\n", failures);
        return 1;
    }
    std::printf("hipcub: all match\n");
    return 0;
}
