// rocThrust on the host backend: Debian's Thrust headers (libthrust-dev) with the OpenMP device
// system, so that device_vector, device_ptr and every algorithm on device iterators run on the
// CPU while host_vector stays on the CPP system (two systems, as on a GPU). The build includes
// this header first in every unit that includes <thrust/...> (host_sources.py), with
// -DTHRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP and -fopenmp.
//
// Tracing: every algorithm dispatched on the device system - through device iterators
// (thrust::system::omp::tag), `thrust::device` (the OpenMP system's par_t), or rocThrust's
// `thrust::hip::par` / `par.on(stream)` - is one dispatch named `thrust::<algorithm>` on its
// stream (library_dispatch.h). The overloads below match those policies exactly and so win over
// Thrust's own (which take the policy's base class); they run the algorithm under an inner
// policy of the same system that they do not match, so nested calls are not traced twice.
// OpenMP runs the algorithms with as many threads as the block pool has (ROCM_PERF_HOST_THREADS).
#pragma once

#include "hip/hip_runtime.h"

#include <omp.h>

#include <thrust/execution_policy.h>
#include <thrust/system/omp/execution_policy.h>
// Every algorithm the overloads below forward to (they name it qualified).
#include <thrust/adjacent_difference.h>
#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/equal.h>
#include <thrust/extrema.h>
#include <thrust/fill.h>
#include <thrust/find.h>
#include <thrust/for_each.h>
#include <thrust/gather.h>
#include <thrust/generate.h>
#include <thrust/inner_product.h>
#include <thrust/logical.h>
#include <thrust/merge.h>
#include <thrust/mismatch.h>
#include <thrust/partition.h>
#include <thrust/reduce.h>
#include <thrust/remove.h>
#include <thrust/replace.h>
#include <thrust/reverse.h>
#include <thrust/scan.h>
#include <thrust/scatter.h>
#include <thrust/sequence.h>
#include <thrust/set_operations.h>
#include <thrust/shuffle.h>
#include <thrust/sort.h>
#include <thrust/swap.h>
#include <thrust/tabulate.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/transform_scan.h>
#include <thrust/uninitialized_copy.h>
#include <thrust/uninitialized_fill.h>
#include <thrust/unique.h>

#include "rocm_perf_host/library_dispatch.h"

namespace rocm_perf_host {
namespace thrust_trace {
// The policy a traced algorithm runs under: the OpenMP system's, but a type of its own.
struct inner_t : thrust::system::omp::detail::execution_policy<inner_t> {};

// A program whose only device work is Thrust's may never call the HIP API itself (device_vector
// assignments, host <-> device copies run on the CPU's systems): its trace is written all the same.
inline const bool runtime_started = (runtime(), true);

template <class F>
inline auto run(const char* name, hipStream_t stream, F&& f) -> decltype(f()) {
    return library_result(name, stream, [&f]() -> decltype(auto) {
        omp_set_num_threads(static_cast<int>(runtime().threads));
        return f();
    });
}
}  // namespace thrust_trace
}  // namespace rocm_perf_host

// rocThrust's HIP system: thrust::hip::par, par.on(stream), and its tag.
THRUST_NAMESPACE_BEGIN
namespace system {
namespace hip {
namespace detail {
struct par_t : thrust::system::omp::detail::execution_policy<par_t> {
    hipStream_t stream = nullptr;
    par_t() = default;
    par_t on(hipStream_t s) const {
        par_t p;
        p.stream = s;
        return p;
    }
};
using tag = par_t;
}  // namespace detail
static const detail::par_t par;
using detail::tag;
}  // namespace hip
}  // namespace system
namespace hip {
using thrust::system::hip::par;
using thrust::system::hip::tag;
}  // namespace hip
THRUST_NAMESPACE_END

#define ROCM_PERF_THRUST_TRACED(POLICY, STREAM, NAME)                                                          \
    template <class... Args>                                                                                   \
    inline decltype(auto) NAME(POLICY& policy, Args&&... args) {                                               \
        (void)policy;                                                                                          \
        return ::rocm_perf_host::thrust_trace::run("thrust::" #NAME, STREAM, [&]() -> decltype(auto) {         \
            ::rocm_perf_host::thrust_trace::inner_t inner;                                                     \
            return ::thrust::NAME(inner, std::forward<Args>(args)...);                                         \
        });                                                                                                    \
    }

// The algorithms of Thrust's public API (thrust/*.h) that take an execution policy.
#define ROCM_PERF_THRUST_ALGORITHMS(X)                                                                          \
    X(adjacent_difference) X(all_of) X(any_of) X(none_of) X(binary_search) X(lower_bound) X(upper_bound)       \
    X(equal_range) X(copy) X(copy_if) X(copy_n) X(count) X(count_if) X(equal) X(exclusive_scan)                \
    X(exclusive_scan_by_key) X(fill) X(fill_n) X(find) X(find_if) X(find_if_not) X(for_each) X(for_each_n)     \
    X(gather) X(gather_if) X(generate) X(generate_n) X(inclusive_scan) X(inclusive_scan_by_key)                \
    X(inner_product) X(is_partitioned) X(is_sorted) X(is_sorted_until) X(max_element) X(min_element)           \
    X(minmax_element) X(merge) X(merge_by_key) X(mismatch) X(partition) X(partition_copy) X(partition_point)   \
    X(stable_partition) X(stable_partition_copy) X(reduce) X(reduce_by_key) X(remove) X(remove_copy)          \
    X(remove_if) X(remove_copy_if) X(replace) X(replace_if) X(replace_copy) X(replace_copy_if) X(reverse)     \
    X(reverse_copy) X(scatter) X(scatter_if) X(sequence) X(set_difference) X(set_intersection)                 \
    X(set_symmetric_difference) X(set_union) X(set_difference_by_key) X(set_intersection_by_key)              \
    X(set_symmetric_difference_by_key) X(set_union_by_key) X(shuffle) X(shuffle_copy) X(sort) X(sort_by_key)  \
    X(stable_sort) X(stable_sort_by_key) X(swap_ranges) X(tabulate) X(transform) X(transform_if)              \
    X(transform_reduce) X(transform_inclusive_scan) X(transform_exclusive_scan) X(uninitialized_copy)         \
    X(uninitialized_copy_n) X(uninitialized_fill) X(uninitialized_fill_n) X(unique) X(unique_by_key)          \
    X(unique_copy) X(unique_by_key_copy) X(unique_count)

THRUST_NAMESPACE_BEGIN
namespace system {
namespace omp {
namespace detail {
#define ROCM_PERF_TRACE_TAG(NAME) ROCM_PERF_THRUST_TRACED(tag, nullptr, NAME)
#define ROCM_PERF_TRACE_PAR(NAME) ROCM_PERF_THRUST_TRACED(par_t, nullptr, NAME)
ROCM_PERF_THRUST_ALGORITHMS(ROCM_PERF_TRACE_TAG)
ROCM_PERF_THRUST_ALGORITHMS(ROCM_PERF_TRACE_PAR)
#undef ROCM_PERF_TRACE_TAG
#undef ROCM_PERF_TRACE_PAR
}  // namespace detail
}  // namespace omp
namespace hip {
namespace detail {
#define ROCM_PERF_TRACE_HIP(NAME) ROCM_PERF_THRUST_TRACED(par_t, policy.stream, NAME)
ROCM_PERF_THRUST_ALGORITHMS(ROCM_PERF_TRACE_HIP)
#undef ROCM_PERF_TRACE_HIP
}  // namespace detail
}  // namespace hip
}  // namespace system
THRUST_NAMESPACE_END
#undef ROCM_PERF_THRUST_ALGORITHMS
#undef ROCM_PERF_THRUST_TRACED
