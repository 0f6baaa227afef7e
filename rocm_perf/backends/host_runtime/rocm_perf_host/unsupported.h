// What cannot run on the CPU, refused by name:
// - in device code, texture and surface fetches: a compile-time error naming the feature at the
//   line that uses it (programs guard them with __HIP_NO_IMAGE_SUPPORT, which is 1 here);
// - on the host, the texture and array API compiles and returns hipErrorNotSupported, because
//   programs ask hipDeviceAttributeImageSupport first and take another path when it is 0;
// - loading GPU code objects (hipModule*) and compiling device code at run time (hiprtc): their
//   whole purpose is GPU code, so their use is a compile-time error naming them.
// Inline GCN assembly is refused earlier, by the source pre-pass (launch_prepass.py).
#pragma once

#include <cstddef>

#include "rocm_perf_host/runtime.h"

namespace rocm_perf_host {
// What a refused call returns: anything the program assigns it to, so that the static_assert
// naming the feature is the compiler's only complaint.
struct Refused {
    template <class T>
    operator T() const {
        return T();
    }
};
}  // namespace rocm_perf_host

#define ROCM_PERF_REFUSE(NAME, WHAT, WHY)                                                                    \
    template <class... Args>                                                                                 \
    inline ::rocm_perf_host::Refused NAME(Args...) {                                                         \
        static_assert(rocm_perf_host::unsupported_on_host<Args...>::value,                                   \
                      "rocm-perf host backend: " #NAME " (" WHAT ") is not supported: " WHY);               \
        return {};                                                                                           \
    }
#define ROCM_PERF_REFUSE_TEXTURE(NAME) \
    ROCM_PERF_REFUSE(NAME, "texture fetch", "the CPU has no texture units; profile this program with the rocm backend")
#define ROCM_PERF_REFUSE_SURFACE(NAME) \
    ROCM_PERF_REFUSE(NAME, "surface access", "the CPU has no image units; profile this program with the rocm backend")

// Device side: templates so that the error fires where a kernel uses one.
namespace rocm_perf_host {
template <class T, class... Args>
inline T refuse_texture(Args...) {
    static_assert(unsupported_on_host<T, Args...>::value,
                  "rocm-perf host backend: texture fetch (tex1D/tex2D/tex3D/tex1Dfetch...) is not supported: the CPU has "
                  "no texture units; profile this program with the rocm backend");
    return T();
}
}  // namespace rocm_perf_host
template <class T, class... Args>
inline T tex1Dfetch(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T tex1D(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T tex2D(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T tex3D(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T tex1DLod(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T tex2DLod(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T tex3DLod(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T tex1DLayered(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T tex2DLayered(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T texCubemap(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
template <class T, class... Args>
inline T tex2Dgather(Args... a) { return rocm_perf_host::refuse_texture<T>(a...); }
ROCM_PERF_REFUSE_SURFACE(surf1Dread)
ROCM_PERF_REFUSE_SURFACE(surf1Dwrite)
ROCM_PERF_REFUSE_SURFACE(surf2Dread)
ROCM_PERF_REFUSE_SURFACE(surf2Dwrite)
ROCM_PERF_REFUSE_SURFACE(surf3Dread)
ROCM_PERF_REFUSE_SURFACE(surf3Dwrite)

// Host side of textures: the types, and calls that say hipErrorNotSupported.
typedef unsigned long long hipTextureObject_t;
typedef unsigned long long hipSurfaceObject_t;
enum hipChannelFormatKind { hipChannelFormatKindSigned = 0, hipChannelFormatKindUnsigned = 1, hipChannelFormatKindFloat = 2, hipChannelFormatKindNone = 3 };
struct hipChannelFormatDesc {
    int x, y, z, w;
    hipChannelFormatKind f;
};
enum hipTextureAddressMode { hipAddressModeWrap = 0, hipAddressModeClamp = 1, hipAddressModeMirror = 2, hipAddressModeBorder = 3 };
enum hipTextureFilterMode { hipFilterModePoint = 0, hipFilterModeLinear = 1 };
enum hipTextureReadMode { hipReadModeElementType = 0, hipReadModeNormalizedFloat = 1 };
enum hipResourceType { hipResourceTypeArray = 0, hipResourceTypeMipmappedArray = 1, hipResourceTypeLinear = 2, hipResourceTypePitch2D = 3 };
struct hipArray;
typedef hipArray* hipArray_t;
typedef const hipArray* hipArray_const_t;
struct hipResourceDesc {
    hipResourceType resType;
    union {
        struct {
            hipArray_t array;
        } array;
        struct {
            void* devPtr;
            hipChannelFormatDesc desc;
            std::size_t sizeInBytes;
        } linear;
        struct {
            void* devPtr;
            hipChannelFormatDesc desc;
            std::size_t width, height, pitchInBytes;
        } pitch2D;
    } res;
};
struct hipTextureDesc {
    hipTextureAddressMode addressMode[3];
    hipTextureFilterMode filterMode;
    hipTextureReadMode readMode;
    int sRGB;
    float borderColor[4];
    int normalizedCoords;
    unsigned maxAnisotropy;
    hipTextureFilterMode mipmapFilterMode;
    float mipmapLevelBias, minMipmapLevelClamp, maxMipmapLevelClamp;
};
struct hipResourceViewDesc;
inline hipChannelFormatDesc hipCreateChannelDesc(int x, int y, int z, int w, hipChannelFormatKind f) {
    return hipChannelFormatDesc{x, y, z, w, f};
}
template <class T>
inline hipChannelFormatDesc hipCreateChannelDesc() {
    return hipChannelFormatDesc{int(8 * sizeof(T)), 0, 0, 0, hipChannelFormatKindNone};
}
inline hipError_t hipCreateTextureObject(hipTextureObject_t*, const hipResourceDesc*, const hipTextureDesc*,
                                         const hipResourceViewDesc*) {
    return hipErrorNotSupported;
}
inline hipError_t hipDestroyTextureObject(hipTextureObject_t) { return hipErrorNotSupported; }
inline hipError_t hipCreateSurfaceObject(hipSurfaceObject_t*, const hipResourceDesc*) { return hipErrorNotSupported; }
inline hipError_t hipDestroySurfaceObject(hipSurfaceObject_t) { return hipErrorNotSupported; }
inline hipError_t hipMallocArray(hipArray_t*, const hipChannelFormatDesc*, std::size_t, std::size_t = 0, unsigned = 0) {
    return hipErrorNotSupported;
}
inline hipError_t hipFreeArray(hipArray_t) { return hipErrorNotSupported; }
inline hipError_t hipMemcpy2DToArray(hipArray_t, std::size_t, std::size_t, const void*, std::size_t, std::size_t, std::size_t,
                                     hipMemcpyKind) {
    return hipErrorNotSupported;
}
inline hipError_t hipMemcpyToArray(hipArray_t, std::size_t, std::size_t, const void*, std::size_t, hipMemcpyKind) {
    return hipErrorNotSupported;
}

// Code objects and run-time compilation.
#define ROCM_PERF_REFUSE_MODULE(NAME) \
    ROCM_PERF_REFUSE(NAME, "GPU code objects", "the host backend builds device code with the program; profile this program with the rocm backend")
typedef struct ihipModule_t* hipModule_t;
#define HIP_LAUNCH_PARAM_BUFFER_POINTER (reinterpret_cast<void*>(0x01))
#define HIP_LAUNCH_PARAM_BUFFER_SIZE (reinterpret_cast<void*>(0x02))
#define HIP_LAUNCH_PARAM_END (reinterpret_cast<void*>(0x03))
typedef struct ihipModuleSymbol_t* hipFunction_t;
ROCM_PERF_REFUSE_MODULE(hipModuleLoad)
ROCM_PERF_REFUSE_MODULE(hipModuleLoadData)
ROCM_PERF_REFUSE_MODULE(hipModuleLoadDataEx)
ROCM_PERF_REFUSE_MODULE(hipModuleGetFunction)
ROCM_PERF_REFUSE_MODULE(hipModuleGetGlobal)
ROCM_PERF_REFUSE_MODULE(hipModuleLaunchKernel)
ROCM_PERF_REFUSE_MODULE(hipModuleUnload)
ROCM_PERF_REFUSE_MODULE(hipExtModuleLaunchKernel)

#undef ROCM_PERF_REFUSE_MODULE
#undef ROCM_PERF_REFUSE_SURFACE
#undef ROCM_PERF_REFUSE_TEXTURE
