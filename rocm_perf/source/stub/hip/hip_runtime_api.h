// rocm-perf's stub HIP runtime API (parsing only; see hip_runtime.h).
#pragma once

#include <stddef.h>

struct dim3;
typedef enum hipError_t {
    hipSuccess = 0,
    hipErrorInvalidValue = 1,
    hipErrorOutOfMemory = 2,
    hipErrorNotReady = 600,
    hipErrorUnknown = 999,
} hipError_t;
typedef enum hipMemcpyKind {
    hipMemcpyHostToHost = 0,
    hipMemcpyHostToDevice = 1,
    hipMemcpyDeviceToHost = 2,
    hipMemcpyDeviceToDevice = 3,
    hipMemcpyDefault = 4,
} hipMemcpyKind;
typedef struct ihipStream_t* hipStream_t;
typedef struct ihipEvent_t* hipEvent_t;
#define hipStreamDefault 0x0
#define hipStreamNonBlocking 0x1
#define hipEventDefault 0x0
#define hipEventBlockingSync 0x1
#define hipEventDisableTiming 0x2
#define hipHostMallocDefault 0x0

typedef struct hipDeviceProp_t {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;
    int multiProcessorCount;
    int major;
    int minor;
    char gcnArchName[256];
} hipDeviceProp_t;

hipError_t hipMalloc(void** ptr, size_t size);
template <typename T> hipError_t hipMalloc(T** ptr, size_t size) { return hipMalloc((void**)ptr, size); }
hipError_t hipMallocManaged(void** ptr, size_t size, unsigned int flags = 1);
hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags = 0);
template <typename T> hipError_t hipHostMalloc(T** ptr, size_t size, unsigned int flags = 0) { return hipHostMalloc((void**)ptr, size, flags); }
hipError_t hipFree(void* ptr);
hipError_t hipHostFree(void* ptr);
hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind);
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind, hipStream_t stream = 0);
hipError_t hipMemset(void* dst, int value, size_t bytes);
hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t stream = 0);
hipError_t hipMemcpyToSymbol(const void* symbol, const void* src, size_t bytes, size_t offset = 0, hipMemcpyKind kind = hipMemcpyHostToDevice);
template <typename T> hipError_t hipMemcpyToSymbol(const T& symbol, const void* src, size_t bytes, size_t offset = 0, hipMemcpyKind kind = hipMemcpyHostToDevice) { return hipMemcpyToSymbol((const void*)&symbol, src, bytes, offset, kind); }
hipError_t hipDeviceSynchronize();
hipError_t hipDeviceReset();
hipError_t hipGetLastError();
hipError_t hipPeekAtLastError();
const char* hipGetErrorString(hipError_t error);
const char* hipGetErrorName(hipError_t error);
hipError_t hipGetDeviceCount(int* count);
hipError_t hipGetDevice(int* device);
hipError_t hipSetDevice(int device);
hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int device);
hipError_t hipStreamCreate(hipStream_t* stream);
hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int flags);
hipError_t hipStreamDestroy(hipStream_t stream);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags);
hipError_t hipEventCreate(hipEvent_t* event);
hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned int flags);
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream = 0);
hipError_t hipEventSynchronize(hipEvent_t event);
hipError_t hipEventQuery(hipEvent_t event);
hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop);
hipError_t hipEventDestroy(hipEvent_t event);

// `<<<grid, block, shared, stream>>>` needs these; hipLaunchKernelGGL is a macro over it.
extern "C" int __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shared = 0, hipStream_t stream = 0);
extern "C" hipError_t __hipPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, hipStream_t* stream);
#define hipLaunchKernelGGL(kernel, grid, block, shared, stream, ...) \
    kernel<<<(grid), (block), (shared), (stream)>>>(__VA_ARGS__)
