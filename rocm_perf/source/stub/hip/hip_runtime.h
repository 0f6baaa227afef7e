// rocm-perf's stub HIP header, for parsing only (libclang, -nogpuinc) where the machine has no
// HIP headers: declarations of what kernels and their host code use, no definitions.
#pragma once

#include <stddef.h>
#include <stdint.h>

// clang's own __clang_hip_runtime_wrapper.h (resource dir, -include'd by rocm-perf in stub mode)
// defines __global__, __device__, __host__, __shared__, __constant__ and the device math library.
#ifndef __global__
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#endif
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define __HIP_PLATFORM_AMD__ 1

#include <cstdio>
#include <cstdlib>
#include <cstring>
extern "C" __device__ int printf(const char* format, ...);

#define ROCM_PERF_STUB_VECTORS(T, N)                                                         \
    struct N##1 { T x; };                                                                    \
    struct N##2 { T x, y; };                                                                 \
    struct N##3 { T x, y, z; };                                                              \
    struct N##4 { T x, y, z, w; };                                                           \
    __host__ __device__ inline N##1 make_##N##1(T x) { return {x}; }                         \
    __host__ __device__ inline N##2 make_##N##2(T x, T y) { return {x, y}; }                 \
    __host__ __device__ inline N##3 make_##N##3(T x, T y, T z) { return {x, y, z}; }         \
    __host__ __device__ inline N##4 make_##N##4(T x, T y, T z, T w) { return {x, y, z, w}; }
ROCM_PERF_STUB_VECTORS(float, float)
ROCM_PERF_STUB_VECTORS(double, double)
ROCM_PERF_STUB_VECTORS(int, int)
ROCM_PERF_STUB_VECTORS(unsigned int, uint)
ROCM_PERF_STUB_VECTORS(char, char)
ROCM_PERF_STUB_VECTORS(unsigned char, uchar)
ROCM_PERF_STUB_VECTORS(short, short)
ROCM_PERF_STUB_VECTORS(unsigned short, ushort)
ROCM_PERF_STUB_VECTORS(long long, longlong)
#undef ROCM_PERF_STUB_VECTORS
struct dim3 {
    unsigned int x, y, z;
    __host__ __device__ constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z
static constexpr int warpSize = 64;

// ---- device functions ----
__device__ void __syncthreads();
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __threadfence();
__device__ void __threadfence_block();
__device__ void __threadfence_system();
__device__ int __float2int_rn(float);
__device__ int __float_as_int(float);
__device__ float __int_as_float(int);
__device__ unsigned int __float_as_uint(float);
__device__ float __uint_as_float(unsigned int);
__device__ int __popc(unsigned int);
__device__ int __popcll(unsigned long long);
__device__ int __clz(int);
__device__ int __ffs(int);
__device__ unsigned long long __ballot(int);
__device__ int __any(int);
__device__ int __all(int);
__device__ uint64_t __activemask();
__device__ unsigned long long clock64();
__device__ long long wall_clock64();
template <typename T> __device__ T __ldg(const T*);
template <typename T> __device__ T __shfl(T, int, int = warpSize);
template <typename T> __device__ T __shfl_up(T, unsigned int, int = warpSize);
template <typename T> __device__ T __shfl_down(T, unsigned int, int = warpSize);
template <typename T> __device__ T __shfl_xor(T, int, int = warpSize);
template <typename T> __device__ T __shfl_sync(unsigned long long, T, int, int = warpSize);
template <typename T> __device__ T __shfl_down_sync(unsigned long long, T, unsigned int, int = warpSize);
template <typename T> __device__ T __shfl_xor_sync(unsigned long long, T, int, int = warpSize);
template <typename T> __device__ T atomicAdd(T*, T);
template <typename T> __device__ T atomicSub(T*, T);
template <typename T> __device__ T atomicMax(T*, T);
template <typename T> __device__ T atomicMin(T*, T);
template <typename T> __device__ T atomicExch(T*, T);
template <typename T> __device__ T atomicCAS(T*, T, T);
template <typename T> __device__ T atomicAnd(T*, T);
template <typename T> __device__ T atomicOr(T*, T);
template <typename T> __device__ T atomicXor(T*, T);
template <typename T> __device__ T atomicInc(T*, T);

#include <hip/hip_runtime_api.h>
