// The rest of HIP's memory API on the host: pitched and 2-D copies and fills, typed fills,
// peer copies (one device), registered and mapped host memory, stream-ordered allocation,
// prefetch and advice (no-ops: host and device memory are one), pointer attributes, symbols.
// Copies and fills run in stream order and are traced like hipMemcpy (api.h).
#pragma once

#include <vector>

#include "rocm_perf_host/runtime.h"

namespace rocm_perf_host {

// A `height` x `width`-byte copy between pitched rows, in stream order.
inline hipError_t copy_2d(const char* name, void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                          std::size_t width, std::size_t height, hipMemcpyKind kind, hipStream_t stream, bool async) {
    Runtime& r = runtime();
    ApiScope api(name);
    api.pointer("dst", dst);
    api.number("dpitch", dpitch);
    api.pointer("src", src);
    api.number("spitch", spitch);
    api.number("width", width);
    api.number("height", height);
    api.text("kind", memcpy_kind_name(kind));
    if (async) api.pointer("stream", stream);
    if (width > dpitch || width > spitch) return finish_call(api, hipErrorInvalidPitchValue);
    if (width && height && (!dst || !src)) return finish_call(api, hipErrorInvalidValue);
    const bool to_host = kind == hipMemcpyDeviceToHost ||
                         (kind == hipMemcpyDefault && r.is_device_pointer(src) && !r.is_device_pointer(dst));
    std::shared_ptr<std::string> digest;
    if (to_host && Tracer::enabled) {
        digest = std::make_shared<std::string>();
        api.record.digest_slot = digest;
    }
    const bool keep = to_host && copies_kept();  // kept_copies.h
    const std::int64_t corr = api.record.corr;
    auto ticket = r.enqueue(r.resolve(async ? stream : nullptr), [=] {
        auto* d = static_cast<unsigned char*>(dst);
        auto* s = static_cast<const unsigned char*>(src);
        for (std::size_t row = 0; row < height; ++row) std::memmove(d + row * dpitch, s + row * spitch, width);
        if (digest || keep) {  // the digest (and kept bytes) of the bytes that arrived, rows joined
            std::vector<unsigned char> arrived(width * height);
            for (std::size_t row = 0; row < height; ++row) std::memcpy(arrived.data() + row * width, d + row * dpitch, width);
            if (digest) *digest = digest_bytes(arrived.data(), arrived.size());
            if (keep) keep_copy(corr, arrived.data(), arrived.size(), nullptr);
        }
    });
    if (!async) r.wait_stream(r.null_stream, ticket);
    return finish_call(api, hipSuccess);
}

// Fills `count` elements of `sizeof(T)` bytes with `value`, in stream order.
template <class T>
inline hipError_t fill_elements(const char* name, void* dst, T value, std::size_t count, hipStream_t stream, bool async) {
    Runtime& r = runtime();
    ApiScope api(name);
    api.pointer("dst", dst);
    api.number("value", static_cast<std::uint64_t>(value));
    api.number("count", count);
    if (async) api.pointer("stream", stream);
    if (count && !dst) return finish_call(api, hipErrorInvalidValue);
    auto ticket = r.enqueue(r.resolve(async ? stream : nullptr), [dst, value, count] {
        T* d = static_cast<T*>(dst);
        for (std::size_t i = 0; i < count; ++i) d[i] = value;
    });
    if (!async) r.wait_stream(r.null_stream, ticket);
    return finish_call(api, hipSuccess);
}

inline hipError_t fill_2d(const char* name, void* dst, std::size_t pitch, int value, std::size_t width,
                          std::size_t height, hipStream_t stream, bool async) {
    Runtime& r = runtime();
    ApiScope api(name);
    api.pointer("dst", dst);
    api.number("pitch", pitch);
    api.signed_number("value", value);
    api.number("width", width);
    api.number("height", height);
    if (async) api.pointer("stream", stream);
    if (width > pitch) return finish_call(api, hipErrorInvalidPitchValue);
    if (width && height && !dst) return finish_call(api, hipErrorInvalidValue);
    auto ticket = r.enqueue(r.resolve(async ? stream : nullptr), [=] {
        for (std::size_t row = 0; row < height; ++row) std::memset(static_cast<unsigned char*>(dst) + row * pitch, value, width);
    });
    if (!async) r.wait_stream(r.null_stream, ticket);
    return finish_call(api, hipSuccess);
}

}  // namespace rocm_perf_host

// ---- pitched and 2-D -------------------------------------------------------------------------
inline hipError_t hipMallocPitch(void** ptr, std::size_t* pitch, std::size_t width, std::size_t height) {
    if (!ptr || !pitch) return hipErrorInvalidValue;
    *pitch = (std::max<std::size_t>(width, 1) + 255) & ~std::size_t(255);  // rows 256-byte aligned, as on AMD
    return hipMalloc(ptr, *pitch * height);
}
template <class T>
inline hipError_t hipMallocPitch(T** ptr, std::size_t* pitch, std::size_t width, std::size_t height) {
    return hipMallocPitch(reinterpret_cast<void**>(ptr), pitch, width, height);
}
inline hipError_t hipMemcpy2D(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                              std::size_t height, hipMemcpyKind kind) {
    return rocm_perf_host::copy_2d("hipMemcpy2D", dst, dpitch, src, spitch, width, height, kind, nullptr, false);
}
inline hipError_t hipMemcpy2DAsync(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                                   std::size_t height, hipMemcpyKind kind, hipStream_t stream = nullptr) {
    return rocm_perf_host::copy_2d("hipMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, stream, true);
}
inline hipError_t hipMemset2D(void* dst, std::size_t pitch, int value, std::size_t width, std::size_t height) {
    return rocm_perf_host::fill_2d("hipMemset2D", dst, pitch, value, width, height, nullptr, false);
}
inline hipError_t hipMemset2DAsync(void* dst, std::size_t pitch, int value, std::size_t width, std::size_t height,
                                   hipStream_t stream = nullptr) {
    return rocm_perf_host::fill_2d("hipMemset2DAsync", dst, pitch, value, width, height, stream, true);
}

// ---- typed fills -----------------------------------------------------------------------------
typedef void* hipDeviceptr_t;
inline hipError_t hipMemsetD8(hipDeviceptr_t dst, unsigned char value, std::size_t count) {
    return rocm_perf_host::fill_elements("hipMemsetD8", dst, value, count, nullptr, false);
}
inline hipError_t hipMemsetD16(hipDeviceptr_t dst, unsigned short value, std::size_t count) {
    return rocm_perf_host::fill_elements("hipMemsetD16", dst, value, count, nullptr, false);
}
inline hipError_t hipMemsetD32(hipDeviceptr_t dst, int value, std::size_t count) {
    return rocm_perf_host::fill_elements("hipMemsetD32", dst, value, count, nullptr, false);
}
inline hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value, std::size_t count, hipStream_t stream = nullptr) {
    return rocm_perf_host::fill_elements("hipMemsetD8Async", dst, value, count, stream, true);
}
inline hipError_t hipMemsetD16Async(hipDeviceptr_t dst, unsigned short value, std::size_t count,
                                    hipStream_t stream = nullptr) {
    return rocm_perf_host::fill_elements("hipMemsetD16Async", dst, value, count, stream, true);
}
inline hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, std::size_t count, hipStream_t stream = nullptr) {
    return rocm_perf_host::fill_elements("hipMemsetD32Async", dst, value, count, stream, true);
}

// ---- more copies -----------------------------------------------------------------------------
inline hipError_t hipMemcpyWithStream(void* dst, const void* src, std::size_t bytes, hipMemcpyKind kind, hipStream_t stream) {
    hipError_t e = rocm_perf_host::copy("hipMemcpyWithStream", dst, src, bytes, kind, stream, true);
    if (e == hipSuccess) rocm_perf_host::runtime().synchronize_stream(rocm_perf_host::runtime().resolve(stream));
    return e;
}
inline hipError_t hipMemcpyHtoDAsync(void* dst, const void* src, std::size_t bytes, hipStream_t stream) {
    return rocm_perf_host::copy("hipMemcpyHtoDAsync", dst, src, bytes, hipMemcpyHostToDevice, stream, true);
}
inline hipError_t hipMemcpyDtoHAsync(void* dst, const void* src, std::size_t bytes, hipStream_t stream) {
    return rocm_perf_host::copy("hipMemcpyDtoHAsync", dst, src, bytes, hipMemcpyDeviceToHost, stream, true);
}
inline hipError_t hipMemcpyDtoDAsync(void* dst, const void* src, std::size_t bytes, hipStream_t stream) {
    return rocm_perf_host::copy("hipMemcpyDtoDAsync", dst, src, bytes, hipMemcpyDeviceToDevice, stream, true);
}
// One device: a "peer" copy is a device-to-device copy on device 0.
inline hipError_t hipMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes) {
    if (dst_device != 0 || src_device != 0) return hipErrorInvalidDevice;
    return rocm_perf_host::copy("hipMemcpyPeer", dst, src, bytes, hipMemcpyDeviceToDevice, nullptr, false);
}
inline hipError_t hipMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes,
                                     hipStream_t stream = nullptr) {
    if (dst_device != 0 || src_device != 0) return hipErrorInvalidDevice;
    return rocm_perf_host::copy("hipMemcpyPeerAsync", dst, src, bytes, hipMemcpyDeviceToDevice, stream, true);
}
template <class T>
inline hipError_t hipMemcpyFromSymbolAsync(void* dst, const T& symbol, std::size_t bytes, std::size_t offset,
                                           hipMemcpyKind kind, hipStream_t stream = nullptr) {
    if (offset + bytes > sizeof(T)) return hipErrorInvalidValue;
    return hipMemcpyAsync(dst, reinterpret_cast<const char*>(&symbol) + offset, bytes, kind, stream);
}
// `__device__` variables are ordinary globals here: their address is the device address.
template <class T>
inline hipError_t hipGetSymbolAddress(void** address, const T& symbol) {
    if (!address) return hipErrorInvalidValue;
    *address = const_cast<void*>(static_cast<const void*>(&symbol));
    return hipSuccess;
}
template <class T>
inline hipError_t hipGetSymbolSize(std::size_t* size, const T&) {
    if (!size) return hipErrorInvalidValue;
    *size = sizeof(T);
    return hipSuccess;
}

// ---- host memory, managed memory, stream-ordered allocation ------------------------------
#define hipHostRegisterDefault 0x0
#define hipHostRegisterPortable 0x1
#define hipHostRegisterMapped 0x2
#define hipHostRegisterIoMemory 0x4
#define hipHostMallocNumaUser 0x20000000
#define hipHostMallocCoherent 0x40000000
#define hipHostMallocNonCoherent 0x80000000
#define hipMemAttachHost 0x2
#define hipMemAttachSingle 0x4
#define hipDeviceMallocDefault 0x0
#define hipDeviceMallocFinegrained 0x1
#define hipMallocSignalMemory 0x2

inline hipError_t hipHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned) {
    if (!device_ptr || !host_ptr) return hipErrorInvalidValue;
    *device_ptr = host_ptr;  // one address space
    return hipSuccess;
}
template <class T>
inline hipError_t hipHostGetDevicePointer(T** device_ptr, void* host_ptr, unsigned flags) {
    return hipHostGetDevicePointer(reinterpret_cast<void**>(device_ptr), host_ptr, flags);
}
inline hipError_t hipHostGetFlags(unsigned* flags, void* host_ptr) {
    if (!flags || !host_ptr) return hipErrorInvalidValue;
    *flags = 0;
    return hipSuccess;
}
inline hipError_t hipHostRegister(void* ptr, std::size_t, unsigned) { return ptr ? hipSuccess : hipErrorInvalidValue; }
inline hipError_t hipHostUnregister(void* ptr) { return ptr ? hipSuccess : hipErrorInvalidValue; }
inline hipError_t hipExtMallocWithFlags(void** ptr, std::size_t bytes, unsigned) { return hipMalloc(ptr, bytes); }
template <class T>
inline hipError_t hipMallocAsync(T** ptr, std::size_t bytes, hipStream_t) {
    return hipMalloc(reinterpret_cast<void**>(ptr), bytes);
}
inline hipError_t hipFreeAsync(void* p, hipStream_t stream) {
    // In stream order: the memory is freed once the work queued before it has run.
    auto& r = rocm_perf_host::runtime();
    r.enqueue(r.resolve(stream), [p] {
        auto& rt = rocm_perf_host::runtime();
        {
            std::lock_guard<std::mutex> lock(rt.m);
            rt.device_allocations.erase(reinterpret_cast<std::uintptr_t>(p));
        }
        rocm_perf_host::release_memory(p);
    });
    return hipSuccess;
}
enum hipMemoryAdvise {
    hipMemAdviseSetReadMostly = 1,
    hipMemAdviseUnsetReadMostly = 2,
    hipMemAdviseSetPreferredLocation = 3,
    hipMemAdviseUnsetPreferredLocation = 4,
    hipMemAdviseSetAccessedBy = 5,
    hipMemAdviseUnsetAccessedBy = 6,
    hipMemAdviseSetCoarseGrain = 100,
    hipMemAdviseUnsetCoarseGrain = 101,
};
#define hipCpuDeviceId (-1)
#define hipInvalidDeviceId (-2)
inline hipError_t hipMemPrefetchAsync(const void* ptr, std::size_t, int, hipStream_t = nullptr) {
    return ptr ? hipSuccess : hipErrorInvalidValue;
}
inline hipError_t hipMemAdvise(const void* ptr, std::size_t, hipMemoryAdvise, int) {
    return ptr ? hipSuccess : hipErrorInvalidValue;
}
inline hipError_t hipMemPtrGetInfo(void* ptr, std::size_t* size) {
    if (!ptr || !size) return hipErrorInvalidValue;
    auto& r = rocm_perf_host::runtime();
    std::lock_guard<std::mutex> lock(r.m);
    auto it = r.device_allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == r.device_allocations.end()) return hipErrorInvalidValue;
    *size = it->second;
    return hipSuccess;
}

enum hipMemoryType { hipMemoryTypeUnregistered = 0, hipMemoryTypeHost = 1, hipMemoryTypeDevice = 2, hipMemoryTypeManaged = 3,
                     hipMemoryTypeArray = 10, hipMemoryTypeUnified = 11 };
struct hipPointerAttribute_t {
    hipMemoryType type;
    int device;
    void* devicePointer;
    void* hostPointer;
    int isManaged;
    unsigned allocationFlags;
};
inline hipError_t hipPointerGetAttributes(hipPointerAttribute_t* attr, const void* ptr) {
    if (!attr || !ptr) return hipErrorInvalidValue;
    auto& r = rocm_perf_host::runtime();
    const bool device = r.is_device_pointer(ptr);
    *attr = hipPointerAttribute_t{};
    attr->type = device ? hipMemoryTypeDevice : hipMemoryTypeHost;
    attr->device = 0;
    attr->devicePointer = const_cast<void*>(ptr);
    attr->hostPointer = const_cast<void*>(ptr);
    return hipSuccess;
}
