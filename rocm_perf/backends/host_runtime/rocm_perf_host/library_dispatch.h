// How the HIP libraries of the host runtime (rocThrust through Thrust's OpenMP system, hipCUB,
// hipBLAS over OpenBLAS, hipRAND, RCCL) run their device routines: each call is one dispatch on
// its stream, named as the library names the routine, so that the trace (and rocm-perf's critical
// path) shows library time as rocprofv3 shows the library's kernels. The CPU runs the routine's
// body once, as the single GPU thread of a 1x1 launch: stream order, events and the per-dispatch
// CPU clocks work as for any kernel. The body must not call the HIP API (it runs on the stream's
// worker: a synchronizing call there would wait for itself).
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace rocm_perf_host {

// Queue `work` on `stream` as the dispatch `name`; with `wait`, return once it has run.
template <class Work>
inline void library_dispatch(const char* name, hipStream_t stream, Work work, bool wait) {
    auto shared = std::make_shared<Work>(std::move(work));
    launch_kernel(KernelIdentity{nullptr, nullptr}, name, dim3(1), dim3(1), 0, stream, [shared]() { (*shared)(); });
    if (wait) {
        Runtime& r = runtime();
        r.synchronize_stream(r.resolve(stream));
    }
}

// A routine whose result the caller reads at once: run as a dispatch, waited for, its value returned.
template <class F>
inline auto library_result(const char* name, hipStream_t stream, F&& f) -> decltype(f()) {
    using R = decltype(f());
    if constexpr (std::is_void<R>::value) {
        library_dispatch(name, stream, [&f]() { f(); }, true);
    } else {
        std::optional<std::decay_t<R>> result;
        library_dispatch(name, stream, [&f, &result]() { result.emplace(f()); }, true);
        return std::move(*result);
    }
}

}  // namespace rocm_perf_host
