// rocThrust as programs use it, checked against plain C++ (<algorithm>, <numeric>): containers on
// both sides, device pointers from hipMalloc, the thrust::device and thrust::hip::par policies
// (and par.on(stream)), fancy iterators, and the algorithms real programs call.
#include <hip/hip_runtime.h>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/device_ptr.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/extrema.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/unique.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

struct square {
    __host__ __device__ long operator()(int x) const { return static_cast<long>(x) * x; }
};
struct is_odd {
    __host__ __device__ bool operator()(int x) const { return x % 2 != 0; }
};

__global__ void add_index(int* v, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += i;
}

static int failures = 0;
#define CHECK(cond, what)                                            \
    do {                                                             \
        if (!(cond)) {                                               \
            std::printf("mismatch: %s (line %d)\n", what, __LINE__); \
            ++failures;                                              \
        }                                                            \
    } while (0)

int main() {
    const int n = 1000;
    std::vector<int> h(n);
    for (int i = 0; i < n; ++i) h[i] = static_cast<int>((i * 7919u) % 211u) - 100;

    thrust::host_vector<int> hv(h.begin(), h.end());
    thrust::device_vector<int> d = hv;

    // transform + reduce with the default (device iterator) dispatch
    thrust::device_vector<long> sq(n);
    thrust::transform(d.begin(), d.end(), sq.begin(), square());
    long want_sq = 0;
    for (int x : h) want_sq += static_cast<long>(x) * x;
    CHECK(thrust::reduce(sq.begin(), sq.end(), 0L) == want_sq, "transform + reduce");
    CHECK(thrust::transform_reduce(d.begin(), d.end(), square(), 0L, thrust::plus<long>()) == want_sq, "transform_reduce");

    // scans with the thrust::device policy
    thrust::device_vector<int> inc(n), exc(n);
    thrust::inclusive_scan(thrust::device, d.begin(), d.end(), inc.begin());
    thrust::exclusive_scan(thrust::device, d.begin(), d.end(), exc.begin(), 5);
    std::vector<int> want_inc(n), want_exc(n);
    std::partial_sum(h.begin(), h.end(), want_inc.begin());
    want_exc[0] = 5;
    for (int i = 1; i < n; ++i) want_exc[i] = want_exc[i - 1] + h[i - 1];
    thrust::host_vector<int> got_inc = inc, got_exc = exc;
    CHECK(std::equal(want_inc.begin(), want_inc.end(), got_inc.begin()), "inclusive_scan");
    CHECK(std::equal(want_exc.begin(), want_exc.end(), got_exc.begin()), "exclusive_scan");

    // sort_by_key and reduce_by_key with rocThrust's thrust::hip::par, on a stream
    hipStream_t stream;
    hipStreamCreate(&stream);
    thrust::device_vector<int> keys = d, values(n);
    thrust::sequence(thrust::hip::par.on(stream), values.begin(), values.end());
    thrust::sort_by_key(thrust::hip::par.on(stream), keys.begin(), keys.end(), values.begin());
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return h[a] < h[b]; });
    thrust::host_vector<int> got_keys = keys, got_values = values;
    bool sorted_ok = true;
    for (int i = 0; i < n; ++i) sorted_ok &= got_keys[i] == h[order[i]] && h[got_values[i]] == got_keys[i];
    CHECK(sorted_ok, "sort_by_key");
    thrust::device_vector<int> ukeys(n), sums(n);
    auto ends = thrust::reduce_by_key(thrust::hip::par, keys.begin(), keys.end(), thrust::make_constant_iterator(1),
                                      ukeys.begin(), sums.begin());
    std::vector<int> sorted_h = h;
    std::sort(sorted_h.begin(), sorted_h.end());
    const long distinct = std::unique(sorted_h.begin(), sorted_h.end()) - sorted_h.begin();
    CHECK(ends.first - ukeys.begin() == distinct, "reduce_by_key: distinct keys");
    CHECK(thrust::reduce(sums.begin(), sums.begin() + distinct) == n, "reduce_by_key: counts add up");
    hipStreamDestroy(stream);

    // copy_if, count_if, unique, extrema
    thrust::device_vector<int> odd(n);
    auto odd_end = thrust::copy_if(d.begin(), d.end(), odd.begin(), is_odd());
    CHECK(odd_end - odd.begin() == std::count_if(h.begin(), h.end(), [](int x) { return x % 2 != 0; }), "copy_if");
    CHECK(thrust::count_if(d.begin(), d.end(), is_odd()) == odd_end - odd.begin(), "count_if");
    CHECK(*thrust::min_element(d.begin(), d.end()) == *std::min_element(h.begin(), h.end()), "min_element");
    CHECK(*thrust::max_element(d.begin(), d.end()) == *std::max_element(h.begin(), h.end()), "max_element");
    thrust::device_vector<int> u = keys;
    CHECK(thrust::unique(u.begin(), u.end()) - u.begin() == distinct, "unique");

    // zip and counting iterators
    thrust::device_vector<int> a(n), b(n);
    thrust::transform(thrust::make_counting_iterator(0), thrust::make_counting_iterator(n), a.begin(), thrust::negate<int>());
    thrust::sequence(b.begin(), b.end(), 3, 2);
    auto zipped = thrust::make_zip_iterator(thrust::make_tuple(a.begin(), b.begin()));
    thrust::host_vector<int> ha = a, hb = b;
    CHECK(ha[10] == -10 && hb[10] == 23 && thrust::get<1>(zipped[4]) == 11, "counting and zip iterators");

    // raw device memory from hipMalloc, wrapped, used by a kernel and by thrust
    int* raw = nullptr;
    hipMalloc(&raw, n * sizeof(int));
    thrust::device_ptr<int> wrapped = thrust::device_pointer_cast(raw);
    thrust::fill(wrapped, wrapped + n, 2);
    add_index<<<(n + 255) / 256, 256>>>(raw, n);
    hipDeviceSynchronize();
    CHECK(thrust::reduce(wrapped, wrapped + n) == 2L * n + static_cast<long>(n) * (n - 1) / 2, "device_ptr over hipMalloc");
    thrust::device_vector<int> back(wrapped, wrapped + n);
    add_index<<<(n + 255) / 256, 256>>>(thrust::raw_pointer_cast(back.data()), n);
    std::vector<int> out(n);
    hipMemcpy(out.data(), thrust::raw_pointer_cast(back.data()), n * sizeof(int), hipMemcpyDeviceToHost);
    CHECK(out[7] == 2 + 14, "raw_pointer_cast of a device_vector in a kernel");
    hipFree(raw);

    if (failures) {
        std::printf("thrust: %d mismatches\n", failures);
        return 1;
    }
    std::printf("thrust: all match\n");
    return 0;
}
