// hipCUB on the host backend: the device-wide primitives (DeviceReduce, DeviceScan,
// DeviceRadixSort, DeviceSelect) with their two-call temporary-storage protocol, and the block
// and warp primitives (BlockReduce, BlockScan, WarpReduce, WarpScan, BlockLoad/BlockStore direct).
//
// - A device-wide call with d_temp_storage == nullptr only writes temp_storage_bytes (a small,
//   non-zero size: the CPU needs no scratch from the caller); the second call queues the work on
//   its stream as one dispatch named "hipcub::DeviceReduce::Sum" etc. (library_dispatch.h) and
//   returns at once, as hipCUB does. Radix sorts order keys as a radix sort does (floats by their
//   bits: -0.0 before +0.0, NaNs by sign at either end), on bits [begin_bit, end_bit), stably.
// - Block primitives share their TempStorage (declare it __shared__, as with hipCUB) and meet at
//   __syncthreads(); results are valid where hipCUB says (a block reduction in thread 0, a scan in
//   every thread). Warp primitives use the runtime's lock-step warps (__shfl_down, __shfl_up).
// Not provided: the segmented, histogram, run-length, partition, merge-sort and SpMV device
// primitives (a compile error names them at the caller's line), and BlockRadixSort,
// BlockExchange, BlockHistogram, BlockDiscontinuity (not declared: the compiler names them).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <type_traits>
#include <vector>

#include "hip/hip_runtime.h"
#include "rocm_perf_host/library_dispatch.h"

namespace hipcub {

// ---- operators and small types --------------------------------------------------------------
struct Sum {
    template <class T, class U>
    __host__ __device__ auto operator()(const T& a, const U& b) const { return a + b; }
};
struct Min {
    template <class T>
    __host__ __device__ T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
struct Max {
    template <class T>
    __host__ __device__ T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
struct Equality {
    template <class T>
    __host__ __device__ bool operator()(const T& a, const T& b) const { return a == b; }
};
struct Inequality {
    template <class T>
    __host__ __device__ bool operator()(const T& a, const T& b) const { return !(a == b); }
};

template <class Key, class Value>
struct KeyValuePair {
    using key_type = Key;
    using value_type = Value;
    Key key;
    Value value;
    __host__ __device__ KeyValuePair() : key(), value() {}
    __host__ __device__ KeyValuePair(const Key& k, const Value& v) : key(k), value(v) {}
    __host__ __device__ bool operator==(const KeyValuePair& o) const { return key == o.key && value == o.value; }
    __host__ __device__ bool operator!=(const KeyValuePair& o) const { return !(*this == o); }
};

template <class T>
struct DoubleBuffer {
    T* d_buffers[2];
    int selector;
    __host__ __device__ DoubleBuffer() : d_buffers{nullptr, nullptr}, selector(0) {}
    __host__ __device__ DoubleBuffer(T* current, T* alternate) : d_buffers{current, alternate}, selector(0) {}
    __host__ __device__ T* Current() { return d_buffers[selector]; }
    __host__ __device__ T* Alternate() { return d_buffers[selector ^ 1]; }
};

// Input iterators hipCUB programs pass to device-wide calls.
template <class T, class Offset = std::ptrdiff_t>
struct CountingInputIterator {
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = Offset;
    using pointer = const T*;
    using reference = T;
    T v;
    __host__ __device__ explicit CountingInputIterator(const T& start) : v(start) {}
    __host__ __device__ T operator*() const { return v; }
    __host__ __device__ T operator[](Offset n) const { return static_cast<T>(v + n); }
    __host__ __device__ CountingInputIterator operator+(Offset n) const { return CountingInputIterator(static_cast<T>(v + n)); }
    __host__ __device__ CountingInputIterator& operator++() { ++v; return *this; }
    __host__ __device__ Offset operator-(const CountingInputIterator& o) const { return static_cast<Offset>(v - o.v); }
};
template <class T, class Offset = std::ptrdiff_t>
struct ConstantInputIterator {
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = Offset;
    using pointer = const T*;
    using reference = T;
    T v;
    __host__ __device__ explicit ConstantInputIterator(const T& value) : v(value) {}
    __host__ __device__ T operator*() const { return v; }
    __host__ __device__ T operator[](Offset) const { return v; }
    __host__ __device__ ConstantInputIterator operator+(Offset) const { return *this; }
    __host__ __device__ ConstantInputIterator& operator++() { return *this; }
};
// Writes that go nowhere (a primitive's output a program does not need).
template <class Offset = std::ptrdiff_t>
struct DiscardOutputIterator {
    using iterator_category = std::random_access_iterator_tag;
    using value_type = void;
    using difference_type = Offset;
    using pointer = void;
    struct reference {
        template <class T>
        __host__ __device__ reference& operator=(const T&) { return *this; }
    };
    __host__ __device__ reference operator*() const { return reference(); }
    __host__ __device__ reference operator[](Offset) const { return reference(); }
    __host__ __device__ DiscardOutputIterator operator+(Offset) const { return *this; }
    __host__ __device__ DiscardOutputIterator& operator++() { return *this; }
};

template <class T, class Op, class It, class Offset = std::ptrdiff_t>
struct TransformInputIterator {
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = Offset;
    using pointer = const T*;
    using reference = T;
    It it;
    Op op;
    __host__ __device__ TransformInputIterator(It i, Op o) : it(i), op(o) {}
    __host__ __device__ T operator*() const { return op(*it); }
    __host__ __device__ T operator[](Offset n) const { return op(it[n]); }
    __host__ __device__ TransformInputIterator operator+(Offset n) const { return TransformInputIterator(it + n, op); }
    __host__ __device__ TransformInputIterator& operator++() { ++it; return *this; }
};

}  // namespace hipcub

namespace rocm_perf_host {
namespace hipcub_detail {

constexpr std::size_t kTempBytes = 256;  // what the first call of the two asks for

// First call of the two: the size only.
inline bool size_query(void* d_temp_storage, std::size_t& temp_storage_bytes) {
    if (d_temp_storage != nullptr) return false;
    temp_storage_bytes = kTempBytes;
    return true;
}

template <class It>
using value_of = typename std::iterator_traits<It>::value_type;

// What a reduction accumulates in: the output's type where the output is a pointer (a sum of
// bools into an int counts them), else the input's.
template <class In, class Out>
using accumulator_of = std::conditional_t<std::is_pointer<Out>::value && !std::is_void<value_of<Out>>::value,
                                          std::remove_cv_t<value_of<Out>>, value_of<In>>;

// The unsigned key a radix sort orders by (floats: the sign flips the rest, as radix sorts do).
template <class K>
inline auto radix_bits(K key) {
    if constexpr (std::is_floating_point<K>::value) {
        using U = std::conditional_t<sizeof(K) == 4, std::uint32_t, std::uint64_t>;
        U u;
        std::memcpy(&u, &key, sizeof u);
        const U sign = U(1) << (8 * sizeof(U) - 1);
        return (u & sign) ? U(~u) : U(u | sign);
    } else if constexpr (std::is_signed<K>::value) {
        using U = std::make_unsigned_t<K>;
        return static_cast<U>(static_cast<U>(key) ^ (U(1) << (8 * sizeof(U) - 1)));
    } else if constexpr (std::is_same<K, bool>::value) {
        return static_cast<std::uint8_t>(key);
    } else {
        return key;
    }
}

template <class K>
inline auto radix_window(K key, int begin_bit, int end_bit) {
    auto u = radix_bits(key);
    using U = decltype(u);
    const int bits = 8 * static_cast<int>(sizeof(U));
    end_bit = std::min(end_bit, bits);
    if (begin_bit >= end_bit) return U(0);
    const U shifted = static_cast<U>(u >> begin_bit);
    const int width = end_bit - begin_bit;
    return width >= bits ? shifted : static_cast<U>(shifted & ((U(1) << width) - 1));
}

// A stable radix-order sort of keys[0, n) (and values), descending when asked.
template <class K, class V>
inline void radix_sort(K* keys, V* values, std::size_t n, int begin_bit, int end_bit, bool descending) {
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const auto ka = radix_window(keys[a], begin_bit, end_bit), kb = radix_window(keys[b], begin_bit, end_bit);
        return descending ? kb < ka : ka < kb;
    });
    std::vector<K> sorted_keys(n);
    for (std::size_t i = 0; i < n; ++i) sorted_keys[i] = keys[order[i]];
    std::copy(sorted_keys.begin(), sorted_keys.end(), keys);
    if constexpr (!std::is_same<V, std::nullptr_t>::value) {
        std::vector<V> sorted_values(n);
        for (std::size_t i = 0; i < n; ++i) sorted_values[i] = values[order[i]];
        std::copy(sorted_values.begin(), sorted_values.end(), values);
    }
}

template <class Work>
inline hipError_t queue(const char* name, hipStream_t stream, Work work) {
    library_dispatch(name, stream, std::move(work), false);
    return hipSuccess;
}

}  // namespace hipcub_detail
}  // namespace rocm_perf_host

namespace hipcub {

// ---- device-wide ----------------------------------------------------------------------------
struct DeviceReduce {
    template <class In, class Out, class Op, class T>
    static hipError_t Reduce(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out, int num_items,
                             Op op, T init, hipStream_t stream = nullptr, bool = false) {
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue("hipcub::DeviceReduce::Reduce", stream, [=]() {
            T acc = init;
            for (int i = 0; i < num_items; ++i) acc = op(acc, d_in[i]);
            *d_out = acc;
        });
    }
    template <class In, class Out>
    static hipError_t Sum(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out, int num_items,
                          hipStream_t stream = nullptr, bool = false) {
        using T = rocm_perf_host::hipcub_detail::accumulator_of<In, Out>;
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue("hipcub::DeviceReduce::Sum", stream, [=]() {
            T acc = T();
            for (int i = 0; i < num_items; ++i) acc = acc + d_in[i];
            *d_out = acc;
        });
    }
    template <class In, class Out>
    static hipError_t Min(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out, int num_items,
                          hipStream_t stream = nullptr, bool = false) {
        using T = rocm_perf_host::hipcub_detail::value_of<In>;
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue("hipcub::DeviceReduce::Min", stream, [=]() {
            T acc = std::numeric_limits<T>::max();
            for (int i = 0; i < num_items; ++i) acc = d_in[i] < acc ? T(d_in[i]) : acc;
            *d_out = acc;
        });
    }
    template <class In, class Out>
    static hipError_t Max(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out, int num_items,
                          hipStream_t stream = nullptr, bool = false) {
        using T = rocm_perf_host::hipcub_detail::value_of<In>;
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue("hipcub::DeviceReduce::Max", stream, [=]() {
            T acc = std::numeric_limits<T>::lowest();
            for (int i = 0; i < num_items; ++i) acc = acc < d_in[i] ? T(d_in[i]) : acc;
            *d_out = acc;
        });
    }
    // The first position of the least (greatest) item: {index, value}; {1, max()} (lowest()) when empty.
    template <class In, class Out>
    static hipError_t ArgMin(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out, int num_items,
                             hipStream_t stream = nullptr, bool = false) {
        using T = rocm_perf_host::hipcub_detail::value_of<In>;
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue("hipcub::DeviceReduce::ArgMin", stream, [=]() {
            int best = num_items > 0 ? 0 : 1;
            T value = num_items > 0 ? T(d_in[0]) : std::numeric_limits<T>::max();
            for (int i = 1; i < num_items; ++i)
                if (d_in[i] < value) value = d_in[i], best = i;
            *d_out = {best, value};
        });
    }
    template <class In, class Out>
    static hipError_t ArgMax(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out, int num_items,
                             hipStream_t stream = nullptr, bool = false) {
        using T = rocm_perf_host::hipcub_detail::value_of<In>;
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue("hipcub::DeviceReduce::ArgMax", stream, [=]() {
            int best = num_items > 0 ? 0 : 1;
            T value = num_items > 0 ? T(d_in[0]) : std::numeric_limits<T>::lowest();
            for (int i = 1; i < num_items; ++i)
                if (value < d_in[i]) value = d_in[i], best = i;
            *d_out = {best, value};
        });
    }
};

struct DeviceScan {
    template <class In, class Out, class Op>
    static hipError_t InclusiveScan(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out, Op op,
                                    int num_items, hipStream_t stream = nullptr, bool = false) {
        return inclusive("hipcub::DeviceScan::InclusiveScan", d_temp_storage, temp_storage_bytes, d_in, d_out, op,
                         num_items, stream);
    }
    template <class In, class Out, class Op, class T>
    static hipError_t ExclusiveScan(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out, Op op,
                                    T init, int num_items, hipStream_t stream = nullptr, bool = false) {
        return exclusive("hipcub::DeviceScan::ExclusiveScan", d_temp_storage, temp_storage_bytes, d_in, d_out, op, init,
                         num_items, stream);
    }
    template <class In, class Out>
    static hipError_t InclusiveSum(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out,
                                   int num_items, hipStream_t stream = nullptr, bool = false) {
        return inclusive("hipcub::DeviceScan::InclusiveSum", d_temp_storage, temp_storage_bytes, d_in, d_out, Sum(),
                         num_items, stream);
    }
    template <class In, class Out>
    static hipError_t ExclusiveSum(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out,
                                   int num_items, hipStream_t stream = nullptr, bool = false) {
        using T = rocm_perf_host::hipcub_detail::value_of<In>;
        return exclusive("hipcub::DeviceScan::ExclusiveSum", d_temp_storage, temp_storage_bytes, d_in, d_out, Sum(), T(),
                         num_items, stream);
    }

   private:
    template <class In, class Out, class Op>
    static hipError_t inclusive(const char* name, void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in,
                                Out d_out, Op op, int num_items, hipStream_t stream) {
        using T = rocm_perf_host::hipcub_detail::value_of<In>;
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue(name, stream, [=]() {
            if (num_items <= 0) return;
            T acc = d_in[0];
            d_out[0] = acc;
            for (int i = 1; i < num_items; ++i) d_out[i] = acc = op(acc, T(d_in[i]));
        });
    }
    template <class In, class Out, class Op, class T>
    static hipError_t exclusive(const char* name, void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in,
                                Out d_out, Op op, T init, int num_items, hipStream_t stream) {
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue(name, stream, [=]() {
            T acc = init;
            for (int i = 0; i < num_items; ++i) {
                const T item = d_in[i];  // (in place: read before the write)
                d_out[i] = acc;
                acc = op(acc, item);
            }
        });
    }
};

struct DeviceRadixSort {
    template <class K, class V>
    static hipError_t SortPairs(void* d_temp_storage, std::size_t& temp_storage_bytes, const K* d_keys_in, K* d_keys_out,
                                const V* d_values_in, V* d_values_out, int num_items, int begin_bit = 0,
                                int end_bit = 8 * sizeof(K), hipStream_t stream = nullptr, bool = false) {
        return pairs("hipcub::DeviceRadixSort::SortPairs", d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out,
                     d_values_in, d_values_out, num_items, begin_bit, end_bit, stream, false);
    }
    template <class K, class V>
    static hipError_t SortPairsDescending(void* d_temp_storage, std::size_t& temp_storage_bytes, const K* d_keys_in,
                                          K* d_keys_out, const V* d_values_in, V* d_values_out, int num_items,
                                          int begin_bit = 0, int end_bit = 8 * sizeof(K), hipStream_t stream = nullptr,
                                          bool = false) {
        return pairs("hipcub::DeviceRadixSort::SortPairsDescending", d_temp_storage, temp_storage_bytes, d_keys_in,
                     d_keys_out, d_values_in, d_values_out, num_items, begin_bit, end_bit, stream, true);
    }
    template <class K, class V>
    static hipError_t SortPairs(void* d_temp_storage, std::size_t& temp_storage_bytes, DoubleBuffer<K>& d_keys,
                                DoubleBuffer<V>& d_values, int num_items, int begin_bit = 0, int end_bit = 8 * sizeof(K),
                                hipStream_t stream = nullptr, bool = false) {
        return pairs("hipcub::DeviceRadixSort::SortPairs", d_temp_storage, temp_storage_bytes, d_keys.Current(),
                     d_keys.Current(), d_values.Current(), d_values.Current(), num_items, begin_bit, end_bit, stream, false);
    }
    template <class K, class V>
    static hipError_t SortPairsDescending(void* d_temp_storage, std::size_t& temp_storage_bytes, DoubleBuffer<K>& d_keys,
                                          DoubleBuffer<V>& d_values, int num_items, int begin_bit = 0,
                                          int end_bit = 8 * sizeof(K), hipStream_t stream = nullptr, bool = false) {
        return pairs("hipcub::DeviceRadixSort::SortPairsDescending", d_temp_storage, temp_storage_bytes, d_keys.Current(),
                     d_keys.Current(), d_values.Current(), d_values.Current(), num_items, begin_bit, end_bit, stream, true);
    }
    template <class K>
    static hipError_t SortKeys(void* d_temp_storage, std::size_t& temp_storage_bytes, const K* d_keys_in, K* d_keys_out,
                               int num_items, int begin_bit = 0, int end_bit = 8 * sizeof(K), hipStream_t stream = nullptr,
                               bool = false) {
        return keys("hipcub::DeviceRadixSort::SortKeys", d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out,
                    num_items, begin_bit, end_bit, stream, false);
    }
    template <class K>
    static hipError_t SortKeysDescending(void* d_temp_storage, std::size_t& temp_storage_bytes, const K* d_keys_in,
                                         K* d_keys_out, int num_items, int begin_bit = 0, int end_bit = 8 * sizeof(K),
                                         hipStream_t stream = nullptr, bool = false) {
        return keys("hipcub::DeviceRadixSort::SortKeysDescending", d_temp_storage, temp_storage_bytes, d_keys_in,
                    d_keys_out, num_items, begin_bit, end_bit, stream, true);
    }
    template <class K>
    static hipError_t SortKeys(void* d_temp_storage, std::size_t& temp_storage_bytes, DoubleBuffer<K>& d_keys,
                               int num_items, int begin_bit = 0, int end_bit = 8 * sizeof(K), hipStream_t stream = nullptr,
                               bool = false) {
        return keys("hipcub::DeviceRadixSort::SortKeys", d_temp_storage, temp_storage_bytes, d_keys.Current(),
                    d_keys.Current(), num_items, begin_bit, end_bit, stream, false);
    }

   private:
    template <class K, class V>
    static hipError_t pairs(const char* name, void* d_temp_storage, std::size_t& temp_storage_bytes, const K* keys_in,
                            K* keys_out, const V* values_in, V* values_out, int n, int begin_bit, int end_bit,
                            hipStream_t stream, bool descending) {
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue(name, stream, [=]() {
            if (keys_out != keys_in) std::copy(keys_in, keys_in + n, keys_out);
            if (values_out != values_in) std::copy(values_in, values_in + n, values_out);
            rocm_perf_host::hipcub_detail::radix_sort(keys_out, values_out, static_cast<std::size_t>(n), begin_bit, end_bit,
                                                      descending);
        });
    }
    template <class K>
    static hipError_t keys(const char* name, void* d_temp_storage, std::size_t& temp_storage_bytes, const K* keys_in,
                           K* keys_out, int n, int begin_bit, int end_bit, hipStream_t stream, bool descending) {
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue(name, stream, [=]() {
            if (keys_out != keys_in) std::copy(keys_in, keys_in + n, keys_out);
            rocm_perf_host::hipcub_detail::radix_sort(keys_out, static_cast<std::nullptr_t*>(nullptr),
                                                      static_cast<std::size_t>(n), begin_bit, end_bit, descending);
        });
    }
};

struct DeviceSelect {
    // Items whose flag is set, in order; their count to *d_num_selected_out.
    template <class In, class Flags, class Out, class Count>
    static hipError_t Flagged(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Flags d_flags, Out d_out,
                              Count d_num_selected_out, int num_items, hipStream_t stream = nullptr, bool = false) {
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue("hipcub::DeviceSelect::Flagged", stream, [=]() {
            int kept = 0;
            for (int i = 0; i < num_items; ++i)
                if (d_flags[i]) d_out[kept++] = d_in[i];
            *d_num_selected_out = kept;
        });
    }
    template <class In, class Out, class Count, class Pred>
    static hipError_t If(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out,
                         Count d_num_selected_out, int num_items, Pred select_op, hipStream_t stream = nullptr,
                         bool = false) {
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue("hipcub::DeviceSelect::If", stream, [=]() {
            int kept = 0;
            for (int i = 0; i < num_items; ++i)
                if (select_op(d_in[i])) d_out[kept++] = d_in[i];
            *d_num_selected_out = kept;
        });
    }
    // The first of each run of equal items.
    template <class In, class Out, class Count>
    static hipError_t Unique(void* d_temp_storage, std::size_t& temp_storage_bytes, In d_in, Out d_out,
                             Count d_num_selected_out, int num_items, hipStream_t stream = nullptr, bool = false) {
        if (rocm_perf_host::hipcub_detail::size_query(d_temp_storage, temp_storage_bytes)) return hipSuccess;
        return rocm_perf_host::hipcub_detail::queue("hipcub::DeviceSelect::Unique", stream, [=]() {
            int kept = 0;
            for (int i = 0; i < num_items; ++i)
                if (i == 0 || !(d_in[i] == d_in[i - 1])) d_out[kept++] = d_in[i];
            *d_num_selected_out = kept;
        });
    }
};

// ---- what is not provided: a compile error naming it at the caller's line -------------------
#define ROCM_PERF_HIPCUB_REFUSED(METHOD)                                                                    \
    template <class... Args>                                                                                \
    static hipError_t METHOD(Args&&...) {                                                                   \
        static_assert(rocm_perf_host::unsupported_on_host<Args...>::value,                                  \
                      "rocm-perf host backend: hipcub::" ROCM_PERF_HIPCUB_STRUCT "::" #METHOD " is not supported "  \
                      "(the host runtime provides DeviceReduce, DeviceScan, DeviceRadixSort, DeviceSelect, BlockReduce, "   \
                      "BlockScan, BlockLoad, BlockStore, WarpReduce, WarpScan); profile with the rocm backend"); \
        return hipErrorNotSupported;                                                                        \
    }
#define ROCM_PERF_HIPCUB_STRUCT "DeviceSegmentedReduce"
struct DeviceSegmentedReduce {
    ROCM_PERF_HIPCUB_REFUSED(Reduce) ROCM_PERF_HIPCUB_REFUSED(Sum) ROCM_PERF_HIPCUB_REFUSED(Min)
    ROCM_PERF_HIPCUB_REFUSED(Max) ROCM_PERF_HIPCUB_REFUSED(ArgMin) ROCM_PERF_HIPCUB_REFUSED(ArgMax)
};
#undef ROCM_PERF_HIPCUB_STRUCT
#define ROCM_PERF_HIPCUB_STRUCT "DeviceSegmentedRadixSort"
struct DeviceSegmentedRadixSort {
    ROCM_PERF_HIPCUB_REFUSED(SortPairs) ROCM_PERF_HIPCUB_REFUSED(SortPairsDescending)
    ROCM_PERF_HIPCUB_REFUSED(SortKeys) ROCM_PERF_HIPCUB_REFUSED(SortKeysDescending)
};
#undef ROCM_PERF_HIPCUB_STRUCT
#define ROCM_PERF_HIPCUB_STRUCT "DeviceSegmentedSort"
struct DeviceSegmentedSort {
    ROCM_PERF_HIPCUB_REFUSED(SortPairs) ROCM_PERF_HIPCUB_REFUSED(SortKeys) ROCM_PERF_HIPCUB_REFUSED(StableSortPairs)
    ROCM_PERF_HIPCUB_REFUSED(StableSortKeys)
};
#undef ROCM_PERF_HIPCUB_STRUCT
#define ROCM_PERF_HIPCUB_STRUCT "DeviceMergeSort"
struct DeviceMergeSort {
    ROCM_PERF_HIPCUB_REFUSED(SortPairs) ROCM_PERF_HIPCUB_REFUSED(SortKeys) ROCM_PERF_HIPCUB_REFUSED(StableSortPairs)
    ROCM_PERF_HIPCUB_REFUSED(StableSortKeys)
};
#undef ROCM_PERF_HIPCUB_STRUCT
#define ROCM_PERF_HIPCUB_STRUCT "DeviceHistogram"
struct DeviceHistogram {
    ROCM_PERF_HIPCUB_REFUSED(HistogramEven) ROCM_PERF_HIPCUB_REFUSED(HistogramRange)
    ROCM_PERF_HIPCUB_REFUSED(MultiHistogramEven) ROCM_PERF_HIPCUB_REFUSED(MultiHistogramRange)
};
#undef ROCM_PERF_HIPCUB_STRUCT
#define ROCM_PERF_HIPCUB_STRUCT "DeviceRunLengthEncode"
struct DeviceRunLengthEncode {
    ROCM_PERF_HIPCUB_REFUSED(Encode) ROCM_PERF_HIPCUB_REFUSED(NonTrivialRuns)
};
#undef ROCM_PERF_HIPCUB_STRUCT
#define ROCM_PERF_HIPCUB_STRUCT "DevicePartition"
struct DevicePartition {
    ROCM_PERF_HIPCUB_REFUSED(Flagged) ROCM_PERF_HIPCUB_REFUSED(If)
};
#undef ROCM_PERF_HIPCUB_STRUCT
#define ROCM_PERF_HIPCUB_STRUCT "DeviceSpmv"
struct DeviceSpmv {
    ROCM_PERF_HIPCUB_REFUSED(CsrMV)
};
#undef ROCM_PERF_HIPCUB_STRUCT
#undef ROCM_PERF_HIPCUB_REFUSED

}  // namespace hipcub

#include "rocm_perf_host/hipcub_block.h"
