// The device as HIP programs query it: hipDeviceProp_t, hipDeviceGetAttribute and friends,
// filled with honest host values (the CPU's name, memory, cache and clock; one "compute unit"
// per block-pool thread; the emulated wavefront size; no image support).
#pragma once

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "rocm_perf_host/runtime.h"

struct hipUUID {
    char bytes[16];
};

// The architecture feature bits of HIP 5/6 (all clear: the host has none of them).
struct hipDeviceArch_t {
    unsigned hasGlobalInt32Atomics : 1, hasGlobalFloatAtomicExch : 1, hasSharedInt32Atomics : 1,
        hasSharedFloatAtomicExch : 1, hasFloatAtomicAdd : 1, hasGlobalInt64Atomics : 1, hasSharedInt64Atomics : 1,
        hasDoubles : 1, hasWarpVote : 1, hasWarpBallot : 1, hasWarpShuffle : 1, hasFunnelShift : 1,
        hasThreadFenceSystem : 1, hasSyncThreadsExt : 1, hasSurfaceFuncs : 1, has3dGrid : 1, hasDynamicParallelism : 1;
};

struct hipDeviceProp_t {
    char name[256];
    hipUUID uuid;
    char luid[8];
    unsigned luidDeviceNodeMask;
    std::size_t totalGlobalMem;
    std::size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    std::size_t memPitch;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;  // kHz
    std::size_t totalConstMem;
    int major;
    int minor;
    std::size_t textureAlignment;
    std::size_t texturePitchAlignment;
    int deviceOverlap;
    int multiProcessorCount;
    int kernelExecTimeoutEnabled;
    int integrated;
    int canMapHostMemory;
    int computeMode;
    int maxTexture1D;
    int maxTexture1DLinear;
    int maxTexture2D[2];
    int maxTexture3D[3];
    int concurrentKernels;
    int ECCEnabled;
    int pciBusID;
    int pciDeviceID;
    int pciDomainID;
    int tccDriver;
    int asyncEngineCount;
    int unifiedAddressing;
    int memoryClockRate;  // kHz
    int memoryBusWidth;
    int l2CacheSize;
    int persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor;
    int streamPrioritiesSupported;
    int globalL1CacheSupported;
    int localL1CacheSupported;
    std::size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor;
    int managedMemory;
    int isMultiGpuBoard;
    int multiGpuBoardGroupID;
    int hostNativeAtomicSupported;
    int pageableMemoryAccess;
    int concurrentManagedAccess;
    int computePreemptionSupported;
    int canUseHostPointerForRegisteredMem;
    int cooperativeLaunch;
    int cooperativeMultiDeviceLaunch;
    std::size_t sharedMemPerBlockOptin;
    int pageableMemoryAccessUsesHostPageTables;
    int directManagedMemAccessFromHost;
    int maxBlocksPerMultiProcessor;
    int accessPolicyMaxWindowSize;
    std::size_t reservedSharedMemPerBlock;
    int clockInstructionRate;
    hipDeviceArch_t arch;
    std::size_t maxSharedMemoryPerMultiProcessor;
    int gcnArch;
    char gcnArchName[256];
    int cooperativeMultiDeviceUnmatchedFunc;
    int cooperativeMultiDeviceUnmatchedGridDim;
    int cooperativeMultiDeviceUnmatchedBlockDim;
    int cooperativeMultiDeviceUnmatchedSharedMem;
    int isLargeBar;
    int asicRevision;
};

enum hipDeviceAttribute_t {
    hipDeviceAttributeEccEnabled,
    hipDeviceAttributeAsyncEngineCount,
    hipDeviceAttributeCanMapHostMemory,
    hipDeviceAttributeCanUseHostPointerForRegisteredMem,
    hipDeviceAttributeClockRate,
    hipDeviceAttributeComputeMode,
    hipDeviceAttributeComputePreemptionSupported,
    hipDeviceAttributeConcurrentKernels,
    hipDeviceAttributeConcurrentManagedAccess,
    hipDeviceAttributeCooperativeLaunch,
    hipDeviceAttributeCooperativeMultiDeviceLaunch,
    hipDeviceAttributeDeviceOverlap,
    hipDeviceAttributeDirectManagedMemAccessFromHost,
    hipDeviceAttributeGlobalL1CacheSupported,
    hipDeviceAttributeHostNativeAtomicSupported,
    hipDeviceAttributeIntegrated,
    hipDeviceAttributeIsMultiGpuBoard,
    hipDeviceAttributeKernelExecTimeout,
    hipDeviceAttributeL2CacheSize,
    hipDeviceAttributeLocalL1CacheSupported,
    hipDeviceAttributeComputeCapabilityMajor,
    hipDeviceAttributeManagedMemory,
    hipDeviceAttributeMaxBlocksPerMultiProcessor,
    hipDeviceAttributeMaxBlockDimX,
    hipDeviceAttributeMaxBlockDimY,
    hipDeviceAttributeMaxBlockDimZ,
    hipDeviceAttributeMaxGridDimX,
    hipDeviceAttributeMaxGridDimY,
    hipDeviceAttributeMaxGridDimZ,
    hipDeviceAttributeMaxTexture1DWidth,
    hipDeviceAttributeMaxTexture2DWidth,
    hipDeviceAttributeMaxTexture2DHeight,
    hipDeviceAttributeMaxTexture3DWidth,
    hipDeviceAttributeMaxTexture3DHeight,
    hipDeviceAttributeMaxTexture3DDepth,
    hipDeviceAttributeMaxThreadsPerBlock,
    hipDeviceAttributeMaxThreadsPerMultiProcessor,
    hipDeviceAttributeMaxPitch,
    hipDeviceAttributeMemoryBusWidth,
    hipDeviceAttributeMemoryClockRate,
    hipDeviceAttributeComputeCapabilityMinor,
    hipDeviceAttributeMultiGpuBoardGroupID,
    hipDeviceAttributeMultiprocessorCount,
    hipDeviceAttributePageableMemoryAccess,
    hipDeviceAttributePageableMemoryAccessUsesHostPageTables,
    hipDeviceAttributePciBusId,
    hipDeviceAttributePciDeviceId,
    hipDeviceAttributePciDomainID,
    hipDeviceAttributePersistingL2CacheMaxSize,
    hipDeviceAttributeMaxRegistersPerBlock,
    hipDeviceAttributeMaxRegistersPerMultiprocessor,
    hipDeviceAttributeReservedSharedMemPerBlock,
    hipDeviceAttributeMaxSharedMemoryPerBlock,
    hipDeviceAttributeSharedMemPerBlockOptin,
    hipDeviceAttributeSharedMemPerMultiprocessor,
    hipDeviceAttributeStreamPrioritiesSupported,
    hipDeviceAttributeTextureAlignment,
    hipDeviceAttributeTexturePitchAlignment,
    hipDeviceAttributeTotalConstantMemory,
    hipDeviceAttributeTotalGlobalMem,
    hipDeviceAttributeUnifiedAddressing,
    hipDeviceAttributeWarpSize,
    hipDeviceAttributeMemoryPoolsSupported,
    hipDeviceAttributeClockInstructionRate,
    hipDeviceAttributeMaxSharedMemoryPerMultiprocessor,
    hipDeviceAttributeGcnArch,
    hipDeviceAttributeIsLargeBar,
    hipDeviceAttributeAsicRevision,
    hipDeviceAttributeCanUseStreamWaitValue,
    hipDeviceAttributeImageSupport,
    hipDeviceAttributePhysicalMultiProcessorCount,
    hipDeviceAttributeFineGrainSupport,
    hipDeviceAttributeWallClockRate,
};

typedef int hipDevice_t;
enum hipComputeMode { hipComputeModeDefault = 0, hipComputeModeExclusive, hipComputeModeProhibited, hipComputeModeExclusiveProcess };

namespace rocm_perf_host {

// The first `key : value` line of /proc/cpuinfo whose key is `key`.
inline std::string cpuinfo_value(const char* key) {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    const std::size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0) {
            auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            auto value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(" \t"));
            return value;
        }
    return "";
}

}  // namespace rocm_perf_host

inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int device) {
    if (!p) return hipErrorInvalidValue;
    if (device != 0) return hipErrorInvalidDevice;
    std::memset(p, 0, sizeof *p);
    auto& r = rocm_perf_host::runtime();
    std::string cpu = rocm_perf_host::cpuinfo_value("model name");
    std::snprintf(p->name, sizeof p->name, "rocm-perf host: %s", cpu.empty() ? "CPU" : cpu.c_str());
    std::snprintf(p->gcnArchName, sizeof p->gcnArchName, "host");
    std::memcpy(p->uuid.bytes, "rocm-perf-host-0", 16);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    p->totalGlobalMem = pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) : (std::size_t(1) << 34);
    p->sharedMemPerBlock = 64 * 1024;
    p->sharedMemPerBlockOptin = 64 * 1024;
    p->sharedMemPerMultiprocessor = 64 * 1024;
    p->maxSharedMemoryPerMultiProcessor = 64 * 1024;
    p->regsPerBlock = 65536;
    p->regsPerMultiprocessor = 65536;
    p->warpSize = warpSize;
    p->memPitch = std::size_t(1) << 31;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = p->maxThreadsDim[2] = 1024;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65536;
    const double mhz = std::atof(rocm_perf_host::cpuinfo_value("cpu MHz").c_str());
    p->clockRate = mhz > 0 ? static_cast<int>(mhz * 1000) : 1000000;
    p->clockInstructionRate = p->clockRate;
    p->memoryClockRate = p->clockRate;
    p->memoryBusWidth = 64;
    p->totalConstMem = 64 * 1024;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = static_cast<int>(r.threads);
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    p->l2CacheSize = l2 > 0 ? static_cast<int>(l2) : 4 * 1024 * 1024;
    p->maxThreadsPerMultiProcessor = 2048;
    p->maxBlocksPerMultiProcessor = 32;
    p->concurrentKernels = 1;
    p->asyncEngineCount = 1;
    p->canMapHostMemory = 1;
    p->integrated = 1;
    p->unifiedAddressing = 1;
    p->managedMemory = 1;
    p->concurrentManagedAccess = 1;
    p->directManagedMemAccessFromHost = 1;
    p->pageableMemoryAccess = 1;
    p->hostNativeAtomicSupported = 1;
    p->cooperativeLaunch = 1;
    p->textureAlignment = 256;
    p->texturePitchAlignment = 256;
    return hipSuccess;
}

inline hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attr, int device) {
    if (!value) return hipErrorInvalidValue;
    hipDeviceProp_t p;
    if (hipError_t e = hipGetDeviceProperties(&p, device)) return e;
    switch (attr) {
        case hipDeviceAttributeEccEnabled: *value = p.ECCEnabled; break;
        case hipDeviceAttributeAsyncEngineCount: *value = p.asyncEngineCount; break;
        case hipDeviceAttributeCanMapHostMemory: *value = p.canMapHostMemory; break;
        case hipDeviceAttributeCanUseHostPointerForRegisteredMem: *value = 1; break;
        case hipDeviceAttributeClockRate: *value = p.clockRate; break;
        case hipDeviceAttributeComputeMode: *value = p.computeMode; break;
        case hipDeviceAttributeConcurrentKernels: *value = p.concurrentKernels; break;
        case hipDeviceAttributeConcurrentManagedAccess: *value = p.concurrentManagedAccess; break;
        case hipDeviceAttributeCooperativeLaunch: *value = p.cooperativeLaunch; break;
        case hipDeviceAttributeCooperativeMultiDeviceLaunch: *value = 0; break;
        case hipDeviceAttributeDirectManagedMemAccessFromHost: *value = 1; break;
        case hipDeviceAttributeHostNativeAtomicSupported: *value = 1; break;
        case hipDeviceAttributeIntegrated: *value = p.integrated; break;
        case hipDeviceAttributeL2CacheSize: *value = p.l2CacheSize; break;
        case hipDeviceAttributeComputeCapabilityMajor: *value = p.major; break;
        case hipDeviceAttributeComputeCapabilityMinor: *value = p.minor; break;
        case hipDeviceAttributeManagedMemory: *value = p.managedMemory; break;
        case hipDeviceAttributeMaxBlocksPerMultiProcessor: *value = p.maxBlocksPerMultiProcessor; break;
        case hipDeviceAttributeMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
        case hipDeviceAttributeMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
        case hipDeviceAttributeMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
        case hipDeviceAttributeMaxGridDimX: *value = p.maxGridSize[0]; break;
        case hipDeviceAttributeMaxGridDimY: *value = p.maxGridSize[1]; break;
        case hipDeviceAttributeMaxGridDimZ: *value = p.maxGridSize[2]; break;
        case hipDeviceAttributeMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
        case hipDeviceAttributeMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
        case hipDeviceAttributeMaxPitch: *value = 2147483647; break;
        case hipDeviceAttributeMemoryBusWidth: *value = p.memoryBusWidth; break;
        case hipDeviceAttributeMemoryClockRate: *value = p.memoryClockRate; break;
        case hipDeviceAttributeMultiprocessorCount: *value = p.multiProcessorCount; break;
        case hipDeviceAttributePhysicalMultiProcessorCount: *value = p.multiProcessorCount; break;
        case hipDeviceAttributePageableMemoryAccess: *value = 1; break;
        case hipDeviceAttributePciBusId: *value = p.pciBusID; break;
        case hipDeviceAttributePciDeviceId: *value = p.pciDeviceID; break;
        case hipDeviceAttributePciDomainID: *value = p.pciDomainID; break;
        case hipDeviceAttributeMaxRegistersPerBlock: *value = p.regsPerBlock; break;
        case hipDeviceAttributeMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
        case hipDeviceAttributeMaxSharedMemoryPerBlock: *value = int(p.sharedMemPerBlock); break;
        case hipDeviceAttributeSharedMemPerBlockOptin: *value = int(p.sharedMemPerBlockOptin); break;
        case hipDeviceAttributeSharedMemPerMultiprocessor: *value = int(p.sharedMemPerMultiprocessor); break;
        case hipDeviceAttributeMaxSharedMemoryPerMultiprocessor: *value = int(p.maxSharedMemoryPerMultiProcessor); break;
        case hipDeviceAttributeTextureAlignment: *value = int(p.textureAlignment); break;
        case hipDeviceAttributeTexturePitchAlignment: *value = int(p.texturePitchAlignment); break;
        case hipDeviceAttributeTotalConstantMemory: *value = int(p.totalConstMem); break;
        case hipDeviceAttributeUnifiedAddressing: *value = 1; break;
        case hipDeviceAttributeWarpSize: *value = p.warpSize; break;
        case hipDeviceAttributeClockInstructionRate: *value = p.clockInstructionRate; break;
        case hipDeviceAttributeWallClockRate: *value = 1000000; break;  // kHz: wall_clock64() counts ns
        case hipDeviceAttributeImageSupport: *value = 0; break;  // textures do not run here
        case hipDeviceAttributeFineGrainSupport: *value = 1; break;
        default: *value = 0; break;
    }
    return hipSuccess;
}

inline hipError_t hipDeviceGet(hipDevice_t* device, int ordinal) {
    if (!device) return hipErrorInvalidValue;
    if (ordinal != 0) return hipErrorInvalidDevice;
    *device = 0;
    return hipSuccess;
}
inline hipError_t hipDeviceGetName(char* name, int length, hipDevice_t device) {
    if (!name || length <= 0) return hipErrorInvalidValue;
    hipDeviceProp_t p;
    if (hipError_t e = hipGetDeviceProperties(&p, device)) return e;
    std::snprintf(name, std::size_t(length), "%s", p.name);
    return hipSuccess;
}
inline hipError_t hipDeviceGetUuid(hipUUID* uuid, hipDevice_t device) {
    if (!uuid) return hipErrorInvalidValue;
    hipDeviceProp_t p;
    if (hipError_t e = hipGetDeviceProperties(&p, device)) return e;
    *uuid = p.uuid;
    return hipSuccess;
}
inline hipError_t hipDeviceTotalMem(std::size_t* bytes, hipDevice_t device) {
    if (!bytes) return hipErrorInvalidValue;
    hipDeviceProp_t p;
    if (hipError_t e = hipGetDeviceProperties(&p, device)) return e;
    *bytes = p.totalGlobalMem;
    return hipSuccess;
}
inline hipError_t hipDeviceComputeCapability(int* major, int* minor, hipDevice_t device) {
    if (!major || !minor) return hipErrorInvalidValue;
    if (device != 0) return hipErrorInvalidDevice;
    *major = 9;
    *minor = 0;
    return hipSuccess;
}
inline hipError_t hipDeviceGetPCIBusId(char* id, int length, int device) {
    if (!id || length <= 0) return hipErrorInvalidValue;
    if (device != 0) return hipErrorInvalidDevice;
    std::snprintf(id, std::size_t(length), "0000:00:00.0");
    return hipSuccess;
}
// One device: no peers.
inline hipError_t hipDeviceCanAccessPeer(int* can, int device, int peer) {
    if (!can) return hipErrorInvalidValue;
    if (device != 0 || peer != 0) return hipErrorInvalidDevice;
    *can = 0;
    return hipSuccess;
}
inline hipError_t hipDeviceEnablePeerAccess(int, unsigned) { return hipErrorInvalidDevice; }
inline hipError_t hipDeviceDisablePeerAccess(int) { return hipErrorInvalidDevice; }
inline hipError_t hipSetDeviceFlags(unsigned) { return hipSuccess; }
inline hipError_t hipGetDeviceFlags(unsigned* flags) { return flags ? (*flags = 0, hipSuccess) : hipErrorInvalidValue; }
inline hipError_t hipChooseDevice(int* device, const hipDeviceProp_t*) {
    return device ? (*device = 0, hipSuccess) : hipErrorInvalidValue;
}
inline hipError_t hipDeviceGetStreamPriorityRange(int* least, int* greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = 0;
    return hipSuccess;
}

enum hipLimit_t { hipLimitStackSize = 0x0, hipLimitPrintfFifoSize = 0x01, hipLimitMallocHeapSize = 0x02 };
inline hipError_t hipDeviceGetLimit(std::size_t* value, hipLimit_t limit) {
    if (!value) return hipErrorInvalidValue;
    switch (limit) {
        case hipLimitStackSize: *value = 128 * 1024 - 4096; break;  // a fiber's stack less its guard page
        case hipLimitPrintfFifoSize: *value = 1 << 20; break;
        default: *value = std::size_t(1) << 30; break;
    }
    return hipSuccess;
}
inline hipError_t hipDeviceSetLimit(hipLimit_t, std::size_t) { return hipSuccess; }

inline hipError_t hipMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
    if (!free_bytes || !total_bytes) return hipErrorInvalidValue;
    hipDeviceProp_t p;
    hipGetDeviceProperties(&p, 0);
    long available = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *total_bytes = p.totalGlobalMem;
    *free_bytes = available > 0 && page > 0 ? std::size_t(available) * std::size_t(page) : p.totalGlobalMem / 2;
    return hipSuccess;
}
