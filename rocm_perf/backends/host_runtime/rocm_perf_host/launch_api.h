// Launching through the HIP API rather than <<<>>>: hipLaunchKernel and
// hipLaunchCooperativeKernel with a `void**` argument array, host functions in stream order,
// the occupancy calculator and function attributes.
//
// A `void**` array carries no types: the runtime reads the arguments through the kernel's own
// parameter types, so the kernel must be passed as itself (a function or an explicit template
// instance), not cast to `const void*`.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "rocm_perf_host/runtime.h"

namespace rocm_perf_host {

template <class... P, std::size_t... I>
inline hipError_t launch_from_array(LaunchKind kind, void (*kernel)(P...), dim3 grid, dim3 block, void** args,
                                    std::size_t shmem, hipStream_t stream, std::index_sequence<I...>) {
    return launch_kernel_as(kind, KernelIdentity{reinterpret_cast<const void*>(kernel), typeid(void(P...)).name()},
                            nullptr, grid, block, shmem, stream, [kernel](auto&&... a) { kernel(a...); },
                            *static_cast<std::decay_t<P>*>(args[I])...);
}

template <class... P>
inline hipError_t launch_from_array(LaunchKind kind, void (*kernel)(P...), dim3 grid, dim3 block, void** args,
                                    std::size_t shmem, hipStream_t stream) {
    if (!kernel) return hipErrorInvalidDeviceFunction;
    if (sizeof...(P) > 0 && !args) return hipErrorInvalidValue;
    return launch_from_array(kind, kernel, grid, block, args, shmem, stream, std::index_sequence_for<P...>{});
}

// `kern<<<g, b>>>(x, {w, h})`: a braced argument cannot pass through a macro or a deduced
// parameter pack, so the launch pre-pass writes such launches as
// `TypedLaunch<&kern>{"kern", g, b, shmem, stream}(x, {w, h})`, whose call operator takes the
// kernel's own parameter types. The kernel is a template argument: its body still inlines into
// the per-thread loop.
template <auto Kernel>
struct TypedLaunch;
template <class... P, void (*Kernel)(P...)>
struct TypedLaunch<Kernel> {
    const char* source_name;
    dim3 grid, block;
    std::size_t shmem;
    hipStream_t stream;
    void operator()(P... args) const {
        launch_kernel(KernelIdentity{reinterpret_cast<const void*>(Kernel), typeid(void(P...)).name()}, source_name,
                      grid, block, shmem, stream, [](auto&&... a) { Kernel(a...); }, args...);
    }
};

template <class T>
struct is_kernel_pointer : std::false_type {};
template <class... P>
struct is_kernel_pointer<void (*)(P...)> : std::true_type {};

}  // namespace rocm_perf_host

template <class Kernel>
inline hipError_t hipLaunchKernel(Kernel kernel, dim3 grid, dim3 block, void** args, std::size_t shmem = 0,
                                  hipStream_t stream = nullptr) {
    static_assert(rocm_perf_host::is_kernel_pointer<Kernel>::value,
                  "rocm-perf host backend: hipLaunchKernel through a `void*` kernel address is not supported: pass "
                  "the kernel itself (its arguments are read through its parameter types)");
    return rocm_perf_host::launch_from_array(rocm_perf_host::LaunchKind::Pool, kernel, grid, block, args, shmem, stream);
}

template <class Kernel>
inline hipError_t hipLaunchCooperativeKernel(Kernel kernel, dim3 grid, dim3 block, void** args, unsigned shmem = 0,
                                             hipStream_t stream = nullptr) {
    static_assert(rocm_perf_host::is_kernel_pointer<Kernel>::value,
                  "rocm-perf host backend: hipLaunchCooperativeKernel through a `void*` kernel address is not "
                  "supported: pass the kernel itself (its arguments are read through its parameter types)");
    return rocm_perf_host::launch_from_array(rocm_perf_host::LaunchKind::Cooperative, kernel, grid, block, args, shmem,
                                             stream);
}

// ---- host work in stream order -------------------------------------------------------------
typedef void (*hipHostFn_t)(void* user_data);
typedef void (*hipStreamCallback_t)(hipStream_t stream, hipError_t status, void* user_data);

inline hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void* user_data) {
    if (!fn) return hipErrorInvalidValue;
    auto& r = rocm_perf_host::runtime();
    r.enqueue(r.resolve(stream), [fn, user_data] { fn(user_data); });
    return hipSuccess;
}
inline hipError_t hipStreamAddCallback(hipStream_t stream, hipStreamCallback_t callback, void* user_data, unsigned) {
    if (!callback) return hipErrorInvalidValue;
    auto& r = rocm_perf_host::runtime();
    r.enqueue(r.resolve(stream), [stream, callback, user_data] { callback(stream, hipSuccess, user_data); });
    return hipSuccess;
}

// ---- occupancy and function attributes -------------------------------------------------------
template <class Kernel>
inline hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel, int block_size,
                                                               std::size_t dynamic_shared = 0) {
    if (!blocks || block_size <= 0) return hipErrorInvalidValue;
    *blocks = rocm_perf_host::resident_blocks_per_unit(unsigned(block_size), dynamic_shared);
    return hipSuccess;
}
template <class Kernel>
inline hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, Kernel kernel, int block_size,
                                                                        std::size_t dynamic_shared, unsigned) {
    return hipOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, block_size, dynamic_shared);
}
// The largest block (no register pressure on a CPU) and the grid that fills every unit with it.
template <class Kernel>
inline hipError_t hipOccupancyMaxPotentialBlockSize(int* grid_size, int* block_size, Kernel, std::size_t dynamic_shared = 0,
                                                    int block_size_limit = 0) {
    if (!grid_size || !block_size) return hipErrorInvalidValue;
    int size = block_size_limit > 0 && block_size_limit < 1024 ? block_size_limit : 1024;
    *block_size = size;
    *grid_size = rocm_perf_host::resident_blocks_per_unit(unsigned(size), dynamic_shared) *
                 static_cast<int>(rocm_perf_host::runtime().threads);
    return hipSuccess;
}

struct hipFuncAttributes {
    int binaryVersion;
    int cacheModeCA;
    std::size_t constSizeBytes;
    std::size_t localSizeBytes;
    int maxDynamicSharedSizeBytes;
    int maxThreadsPerBlock;
    int numRegs;
    int preferredShmemCarveout;
    int ptxVersion;
    std::size_t sharedSizeBytes;
};
enum hipFuncAttribute {
    hipFuncAttributeMaxDynamicSharedMemorySize = 8,
    hipFuncAttributePreferredSharedMemoryCarveout = 9,
    hipFuncAttributeMax
};
enum hipFuncCache_t { hipFuncCachePreferNone, hipFuncCachePreferShared, hipFuncCachePreferL1, hipFuncCachePreferEqual };
enum hipSharedMemConfig {
    hipSharedMemBankSizeDefault,
    hipSharedMemBankSizeFourByte,
    hipSharedMemBankSizeEightByte
};

template <class Kernel>
inline hipError_t hipFuncGetAttributes(hipFuncAttributes* attr, Kernel kernel) {
    if (!attr || !kernel) return hipErrorInvalidValue;
    *attr = hipFuncAttributes{};
    attr->maxThreadsPerBlock = 1024;
    attr->maxDynamicSharedSizeBytes = 64 * 1024;
    return hipSuccess;
}
template <class Kernel>
inline hipError_t hipFuncSetAttribute(Kernel kernel, hipFuncAttribute, int) {
    return kernel ? hipSuccess : hipErrorInvalidDeviceFunction;
}
template <class Kernel>
inline hipError_t hipFuncSetCacheConfig(Kernel kernel, hipFuncCache_t) {
    return kernel ? hipSuccess : hipErrorInvalidDeviceFunction;
}
template <class Kernel>
inline hipError_t hipFuncSetSharedMemConfig(Kernel kernel, hipSharedMemConfig) {
    return kernel ? hipSuccess : hipErrorInvalidDeviceFunction;
}
