// The HIP runtime API over the host runtime: device, memory, streams, events, errors.
// Calls that order work (copies, event record/wait/synchronize, stream/device synchronize)
// are traced with their arguments, named as rocprofv3 names them.
#pragma once

#include "rocm_perf_host/outline.h"
#include "rocm_perf_host/runtime.h"
#include "rocm_perf_host/device_properties.h"
#include "rocm_perf_host/device_memory.h"
#include "rocm_perf_host/kept_copies.h"

namespace rocm_perf_host {

inline hipError_t finish_call(ApiScope& api, hipError_t result) {
    api.finish();
    return result;
}

inline const char* memcpy_kind_name(hipMemcpyKind kind) {
    switch (kind) {
        case hipMemcpyHostToHost: return "hipMemcpyHostToHost";
        case hipMemcpyHostToDevice: return "hipMemcpyHostToDevice";
        case hipMemcpyDeviceToHost: return "hipMemcpyDeviceToHost";
        case hipMemcpyDeviceToDevice: return "hipMemcpyDeviceToDevice";
        default: return "hipMemcpyDefault";
    }
}

// A copy in stream order; device-to-host copies leave a digest of the bytes that arrived, and
// their bytes where they are kept (kept_copies.h; `element`: the destination's element type).
ROCM_PERF_OUTLINED hipError_t copy(const char* name, void* dst, const void* src, std::size_t bytes, hipMemcpyKind kind,
                       hipStream_t stream, bool async, const char* element = nullptr);
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED hipError_t copy(const char* name, void* dst, const void* src, std::size_t bytes, hipMemcpyKind kind,
                       hipStream_t stream, bool async, const char* element) {
    Runtime& r = runtime();
    ApiScope api(name);
    api.pointer("dst", dst);
    api.pointer("src", src);
    api.number("sizeBytes", bytes);
    api.text("kind", memcpy_kind_name(kind));
    if (async) api.pointer("stream", stream);
    if (bytes && (!dst || !src)) return finish_call(api, hipErrorInvalidValue);
    bool to_host = kind == hipMemcpyDeviceToHost ||
                   (kind == hipMemcpyDefault && r.is_device_pointer(src) && !r.is_device_pointer(dst));
    std::shared_ptr<std::string> digest;
    if (to_host && Tracer::enabled) {
        digest = std::make_shared<std::string>();
        api.record.digest_slot = digest;
    }
    const bool keep = to_host && copies_kept();
    const std::int64_t corr = api.record.corr;
    auto ticket = r.enqueue(r.resolve(async ? stream : nullptr), [dst, src, bytes, digest, keep, corr, element] {
        if (bytes) std::memmove(dst, src, bytes);
        if (digest) *digest = digest_bytes(dst, bytes);
        if (keep) keep_copy(corr, dst, bytes, element);
    });
    if (!async) r.wait_stream(r.null_stream, ticket);
    return finish_call(api, hipSuccess);
}
#endif

ROCM_PERF_OUTLINED hipError_t fill(const char* name, void* dst, int value, std::size_t bytes, hipStream_t stream, bool async);
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED hipError_t fill(const char* name, void* dst, int value, std::size_t bytes, hipStream_t stream, bool async) {
    Runtime& r = runtime();
    ApiScope api(name);
    api.pointer("dst", dst);
    api.signed_number("value", value);
    api.number("sizeBytes", bytes);
    if (async) api.pointer("stream", stream);
    if (bytes && !dst) return finish_call(api, hipErrorInvalidValue);
    auto ticket = r.enqueue(r.resolve(async ? stream : nullptr), [dst, value, bytes] {
        if (bytes) std::memset(dst, value, bytes);
    });
    if (!async) r.wait_stream(r.null_stream, ticket);
    return finish_call(api, hipSuccess);
}
#endif

// Device and host allocations come from device_memory.h's region (reproducible addresses).
ROCM_PERF_OUTLINED void* allocate(std::size_t bytes, bool device);
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED void* allocate(std::size_t bytes, bool device) {
    void* p = allocate_memory(bytes, device ? MemoryKind::Device : MemoryKind::Host);
    if (!p) return nullptr;
    if (device) {
        Runtime& r = runtime();
        std::lock_guard<std::mutex> lock(r.m);
        r.device_allocations[reinterpret_cast<std::uintptr_t>(p)] = allocation_span(p, bytes);
    }
    return p;
}
#endif

ROCM_PERF_OUTLINED void release(void* p);
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED void release(void* p) {
    if (!p) return;
    Runtime& r = runtime();
    r.synchronize_device();  // as in HIP: freeing waits for the work that may still use it
    {
        std::lock_guard<std::mutex> lock(r.m);
        r.device_allocations.erase(reinterpret_cast<std::uintptr_t>(p));
    }
    release_memory(p);
}
#endif

}  // namespace rocm_perf_host

// ---- errors --------------------------------------------------------------------------------
inline const char* hipGetErrorName(hipError_t e) {
    switch (e) {
        case hipSuccess: return "hipSuccess";
        case hipErrorInvalidValue: return "hipErrorInvalidValue";
        case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
        case hipErrorNotInitialized: return "hipErrorNotInitialized";
        case hipErrorInvalidConfiguration: return "hipErrorInvalidConfiguration";
        case hipErrorInvalidPitchValue: return "hipErrorInvalidPitchValue";
        case hipErrorInvalidSymbol: return "hipErrorInvalidSymbol";
        case hipErrorInvalidMemcpyDirection: return "hipErrorInvalidMemcpyDirection";
        case hipErrorInvalidDeviceFunction: return "hipErrorInvalidDeviceFunction";
        case hipErrorNoDevice: return "hipErrorNoDevice";
        case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
        case hipErrorInvalidResourceHandle: return "hipErrorInvalidResourceHandle";
        case hipErrorNotFound: return "hipErrorNotFound";
        case hipErrorNotReady: return "hipErrorNotReady";
        case hipErrorIllegalAddress: return "hipErrorIllegalAddress";
        case hipErrorLaunchOutOfResources: return "hipErrorLaunchOutOfResources";
        case hipErrorLaunchFailure: return "hipErrorLaunchFailure";
        case hipErrorCooperativeLaunchTooLarge: return "hipErrorCooperativeLaunchTooLarge";
        case hipErrorNotSupported: return "hipErrorNotSupported";
        default: return "hipErrorUnknown";
    }
}
inline const char* hipGetErrorString(hipError_t e) {
    switch (e) {
        case hipSuccess: return "no error";
        case hipErrorInvalidValue: return "invalid argument";
        case hipErrorOutOfMemory: return "out of memory";
        case hipErrorInvalidConfiguration: return "invalid configuration argument";
        case hipErrorInvalidPitchValue: return "invalid pitch argument";
        case hipErrorInvalidDeviceFunction: return "invalid device function";
        case hipErrorInvalidDevice: return "invalid device ordinal";
        case hipErrorNotReady: return "device not ready";
        case hipErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
        case hipErrorNotSupported: return "operation not supported";
        default: return hipGetErrorName(e);
    }
}
inline hipError_t hipGetLastError() {
    auto& r = rocm_perf_host::runtime();
    std::lock_guard<std::mutex> lock(r.m);
    hipError_t e = r.last_error;
    r.last_error = hipSuccess;
    return e;
}
inline hipError_t hipPeekAtLastError() {
    auto& r = rocm_perf_host::runtime();
    std::lock_guard<std::mutex> lock(r.m);
    return r.last_error;
}

// ---- device --------------------------------------------------------------------------------
inline hipError_t hipInit(unsigned) { return rocm_perf_host::runtime(), hipSuccess; }
inline hipError_t hipGetDeviceCount(int* count) { return *count = 1, hipSuccess; }
inline hipError_t hipGetDevice(int* device) { return *device = 0, hipSuccess; }
inline hipError_t hipSetDevice(int device) { return device == 0 ? hipSuccess : hipErrorInvalidDevice; }
inline hipError_t hipRuntimeGetVersion(int* v) { return *v = HIP_VERSION, hipSuccess; }
inline hipError_t hipDriverGetVersion(int* v) { return *v = HIP_VERSION, hipSuccess; }
inline hipError_t hipDeviceSetCacheConfig(int) { return hipSuccess; }
inline hipError_t hipDeviceSetSharedMemConfig(int) { return hipSuccess; }

inline hipError_t hipDeviceSynchronize() {
    rocm_perf_host::ApiScope api("hipDeviceSynchronize");
    rocm_perf_host::runtime().synchronize_device();
    return rocm_perf_host::finish_call(api, hipSuccess);
}
inline hipError_t hipDeviceReset() { return hipDeviceSynchronize(); }

// ---- memory --------------------------------------------------------------------------------
inline hipError_t hipMalloc(void** ptr, std::size_t bytes) {
    if (!ptr) return hipErrorInvalidValue;
    *ptr = rocm_perf_host::allocate(bytes, true);
    return *ptr ? hipSuccess : hipErrorOutOfMemory;
}
template <class T>
inline hipError_t hipMalloc(T** ptr, std::size_t bytes) {
    return hipMalloc(reinterpret_cast<void**>(ptr), bytes);
}
inline hipError_t hipMallocManaged(void** ptr, std::size_t bytes, unsigned = hipMemAttachGlobal) {
    return hipMalloc(ptr, bytes);
}
template <class T>
inline hipError_t hipMallocManaged(T** ptr, std::size_t bytes, unsigned flags = hipMemAttachGlobal) {
    return hipMallocManaged(reinterpret_cast<void**>(ptr), bytes, flags);
}
inline hipError_t hipHostMalloc(void** ptr, std::size_t bytes, unsigned = 0) {
    if (!ptr) return hipErrorInvalidValue;
    *ptr = rocm_perf_host::allocate(bytes, false);
    return *ptr ? hipSuccess : hipErrorOutOfMemory;
}
template <class T>
inline hipError_t hipHostMalloc(T** ptr, std::size_t bytes, unsigned flags = 0) {
    return hipHostMalloc(reinterpret_cast<void**>(ptr), bytes, flags);
}
template <class T>
inline hipError_t hipMallocHost(T** ptr, std::size_t bytes) {
    return hipHostMalloc(reinterpret_cast<void**>(ptr), bytes, 0);
}
inline hipError_t hipFree(void* p) { return rocm_perf_host::release(p), hipSuccess; }
inline hipError_t hipHostFree(void* p) { return rocm_perf_host::release(p), hipSuccess; }
inline hipError_t hipFreeHost(void* p) { return rocm_perf_host::release(p), hipSuccess; }

inline hipError_t hipMemcpy(void* dst, const void* src, std::size_t bytes, hipMemcpyKind kind) {
    return rocm_perf_host::copy("hipMemcpy", dst, src, bytes, kind, nullptr, false);
}
inline hipError_t hipMemcpyAsync(void* dst, const void* src, std::size_t bytes, hipMemcpyKind kind,
                                 hipStream_t stream = nullptr) {
    return rocm_perf_host::copy("hipMemcpyAsync", dst, src, bytes, kind, stream, true);
}
// Typed destinations name the element type of the bytes kept for --tolerance (kept_copies.h); a
// void* destination takes the untyped forms above.
template <class T, std::enable_if_t<!std::is_void_v<T>, int> = 0>
inline hipError_t hipMemcpy(T* dst, const void* src, std::size_t bytes, hipMemcpyKind kind) {
    return rocm_perf_host::copy("hipMemcpy", dst, src, bytes, kind, nullptr, false, rocm_perf_host::element_name<T>());
}
template <class T, std::enable_if_t<!std::is_void_v<T>, int> = 0>
inline hipError_t hipMemcpyAsync(T* dst, const void* src, std::size_t bytes, hipMemcpyKind kind,
                                 hipStream_t stream = nullptr) {
    return rocm_perf_host::copy("hipMemcpyAsync", dst, src, bytes, kind, stream, true, rocm_perf_host::element_name<T>());
}
inline hipError_t hipMemcpyHtoD(void* dst, const void* src, std::size_t bytes) {
    return rocm_perf_host::copy("hipMemcpyHtoD", dst, src, bytes, hipMemcpyHostToDevice, nullptr, false);
}
inline hipError_t hipMemcpyDtoH(void* dst, const void* src, std::size_t bytes) {
    return rocm_perf_host::copy("hipMemcpyDtoH", dst, src, bytes, hipMemcpyDeviceToHost, nullptr, false);
}
inline hipError_t hipMemcpyDtoD(void* dst, const void* src, std::size_t bytes) {
    return rocm_perf_host::copy("hipMemcpyDtoD", dst, src, bytes, hipMemcpyDeviceToDevice, nullptr, false);
}
inline hipError_t hipMemset(void* dst, int value, std::size_t bytes) {
    return rocm_perf_host::fill("hipMemset", dst, value, bytes, nullptr, false);
}
inline hipError_t hipMemsetAsync(void* dst, int value, std::size_t bytes, hipStream_t stream = nullptr) {
    return rocm_perf_host::fill("hipMemsetAsync", dst, value, bytes, stream, true);
}
// `__constant__` and `__device__` variables are ordinary globals here: pass the variable itself.
template <class T>
inline hipError_t hipMemcpyToSymbol(T& symbol, const void* src, std::size_t bytes, std::size_t offset = 0,
                                    hipMemcpyKind kind = hipMemcpyHostToDevice) {
    if (offset + bytes > sizeof(T)) return hipErrorInvalidValue;
    return hipMemcpy(reinterpret_cast<char*>(&symbol) + offset, src, bytes, kind);
}
template <class T>
inline hipError_t hipMemcpyFromSymbol(void* dst, const T& symbol, std::size_t bytes, std::size_t offset = 0,
                                      hipMemcpyKind kind = hipMemcpyDeviceToHost) {
    if (offset + bytes > sizeof(T)) return hipErrorInvalidValue;
    return hipMemcpy(dst, reinterpret_cast<const char*>(&symbol) + offset, bytes, kind);
}
template <class T>
inline hipError_t hipMemcpyToSymbolAsync(T& symbol, const void* src, std::size_t bytes, std::size_t offset,
                                         hipMemcpyKind kind, hipStream_t stream = nullptr) {
    if (offset + bytes > sizeof(T)) return hipErrorInvalidValue;
    return hipMemcpyAsync(reinterpret_cast<char*>(&symbol) + offset, src, bytes, kind, stream);
}

// ---- streams -------------------------------------------------------------------------------
inline hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned flags) {
    if (!stream) return hipErrorInvalidValue;
    *stream = rocm_perf_host::runtime().create_stream((flags & hipStreamNonBlocking) == 0);
    return hipSuccess;
}
inline hipError_t hipStreamCreate(hipStream_t* stream) { return hipStreamCreateWithFlags(stream, hipStreamDefault); }
inline hipError_t hipStreamCreateWithPriority(hipStream_t* stream, unsigned flags, int) {
    return hipStreamCreateWithFlags(stream, flags);
}
inline hipError_t hipStreamSynchronize(hipStream_t stream) {
    rocm_perf_host::ApiScope api("hipStreamSynchronize");
    api.pointer("stream", stream);
    auto& r = rocm_perf_host::runtime();
    r.synchronize_stream(r.resolve(stream));
    return rocm_perf_host::finish_call(api, hipSuccess);
}
inline hipError_t hipStreamQuery(hipStream_t stream) {
    auto& r = rocm_perf_host::runtime();
    ihipStream_t* s = r.resolve(stream);
    std::lock_guard<std::mutex> lock(r.m);
    return s->completed >= s->submitted ? hipSuccess : hipErrorNotReady;
}
inline hipError_t hipStreamDestroy(hipStream_t stream) {
    if (!stream) return hipErrorInvalidResourceHandle;
    auto& r = rocm_perf_host::runtime();
    r.synchronize_stream(stream);
    std::lock_guard<std::mutex> lock(r.m);
    stream->destroyed = true;  // its worker exits; the record stays for the null-stream rules
    stream->has_work.notify_one();
    return hipSuccess;
}

// ---- events --------------------------------------------------------------------------------
inline hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags) {
    if (!event) return hipErrorInvalidValue;
    *event = new ihipEvent_t;
    (*event)->flags = flags;
    return hipSuccess;
}
inline hipError_t hipEventCreate(hipEvent_t* event) { return hipEventCreateWithFlags(event, hipEventDefault); }
inline hipError_t hipEventDestroy(hipEvent_t event) {
    if (!event) return hipErrorInvalidResourceHandle;
    // Commands already queued may still point at it: it is retired, not freed.
    return hipSuccess;
}
inline hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream = nullptr) {
    if (!event) return hipErrorInvalidResourceHandle;
    rocm_perf_host::ApiScope api("hipEventRecord");
    api.pointer("event", event);
    api.pointer("stream", stream);
    auto& r = rocm_perf_host::runtime();
    std::uint64_t generation;
    {
        std::lock_guard<std::mutex> lock(r.m);
        generation = ++event->recorded;
    }
    r.enqueue(r.resolve(stream), [event, generation, &r] { r.reach_event(event, generation); });
    return rocm_perf_host::finish_call(api, hipSuccess);
}
inline hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned flags = 0) {
    if (!event) return hipErrorInvalidResourceHandle;
    rocm_perf_host::ApiScope api("hipStreamWaitEvent");
    api.pointer("stream", stream);
    api.pointer("event", event);
    api.number("flags", flags);
    auto& r = rocm_perf_host::runtime();
    std::uint64_t generation;
    {
        std::lock_guard<std::mutex> lock(r.m);
        generation = event->recorded;
    }
    if (generation)  // waiting for an event never recorded is a no-op
        r.enqueue(r.resolve(stream), [event, generation, &r] { r.wait_event(event, generation); });
    return rocm_perf_host::finish_call(api, hipSuccess);
}
inline hipError_t hipEventSynchronize(hipEvent_t event) {
    if (!event) return hipErrorInvalidResourceHandle;
    rocm_perf_host::ApiScope api("hipEventSynchronize");
    api.pointer("event", event);
    auto& r = rocm_perf_host::runtime();
    std::uint64_t generation;
    {
        std::lock_guard<std::mutex> lock(r.m);
        generation = event->recorded;
    }
    r.wait_event(event, generation);
    return rocm_perf_host::finish_call(api, hipSuccess);
}
inline hipError_t hipEventQuery(hipEvent_t event) {
    if (!event) return hipErrorInvalidResourceHandle;
    auto& r = rocm_perf_host::runtime();
    std::lock_guard<std::mutex> lock(r.m);
    return event->reached >= event->recorded ? hipSuccess : hipErrorNotReady;
}
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
    if (!ms || !start || !stop) return hipErrorInvalidValue;
    auto& r = rocm_perf_host::runtime();
    std::lock_guard<std::mutex> lock(r.m);
    if (!start->recorded || !stop->recorded) return hipErrorInvalidResourceHandle;
    if (start->reached < start->recorded || stop->reached < stop->recorded) return hipErrorNotReady;
    *ms = static_cast<float>(double(stop->time_ns - start->time_ns) / 1e6);
    return hipSuccess;
}
