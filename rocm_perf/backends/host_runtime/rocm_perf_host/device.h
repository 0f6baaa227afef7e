// Device-side language of HIP, mapped onto ordinary C++17 for the CPU: qualifiers, the thread
// and block builtins, vector types, math functions, atomics, and the features that cannot run
// here, which fail at compile time naming themselves.
#pragma once

#include "rocm_perf_host/platform.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

// ---- qualifiers -----------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __constant__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) alignas(n)
// A `__shared__` variable is one per block. One OS thread runs one block at a time (all of the
// block's fibers live on that thread), so a thread_local variable is exactly one per block;
// at block scope thread_local implies static.
#define __shared__ thread_local

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace rocm_perf_host {
struct Index3 {
    unsigned x = 0, y = 0, z = 0;
    operator dim3() const { return dim3(x, y, z); }
};
}  // namespace rocm_perf_host

// One OS thread runs one GPU thread at a time, so these are per OS thread.
inline thread_local rocm_perf_host::Index3 threadIdx;
inline thread_local rocm_perf_host::Index3 blockIdx;
inline thread_local rocm_perf_host::Index3 blockDim;
inline thread_local rocm_perf_host::Index3 gridDim;
// CDNA's wavefront is 64 lanes; -DROCM_PERF_WARP_SIZE=32 (the host backend's --warp-size 32)
// for code written for 32-lane waves (RDNA's wave32, or CUDA warps).
static_assert(ROCM_PERF_WARP_SIZE == 32 || ROCM_PERF_WARP_SIZE == 64, "ROCM_PERF_WARP_SIZE must be 32 or 64");
static constexpr int warpSize = ROCM_PERF_WARP_SIZE;

#define hipThreadIdx_x (threadIdx.x)
#define hipThreadIdx_y (threadIdx.y)
#define hipThreadIdx_z (threadIdx.z)
#define hipBlockIdx_x (blockIdx.x)
#define hipBlockIdx_y (blockIdx.y)
#define hipBlockIdx_z (blockIdx.z)
#define hipBlockDim_x (blockDim.x)
#define hipBlockDim_y (blockDim.y)
#define hipBlockDim_z (blockDim.z)
#define hipGridDim_x (gridDim.x)
#define hipGridDim_y (gridDim.y)
#define hipGridDim_z (gridDim.z)

#include "rocm_perf_host/vector_types.h"

// ---- math ---------------------------------------------------------------------------------
using std::abs;
using std::ceil;
using std::cos;
using std::exp;
using std::fabs;
using std::floor;
using std::fma;
using std::log;
using std::pow;
using std::sin;
using std::sqrt;
using std::tanh;

inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline void sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline void sincos(double x, double* s, double* c) { *s = std::sin(x); *c = std::cos(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.0f / std::sqrt(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / std::cbrt(x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float exp10f(float x) { return std::pow(10.0f, x); }

// HIP's device min/max: overloads per type, so that mixed calls behave as in HIP headers.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }

template <class To, class From>
inline To rocm_perf_bit_cast(From v) {
    static_assert(sizeof(To) == sizeof(From), "bit cast between types of different sizes");
    To r;
    std::memcpy(&r, &v, sizeof r);
    return r;
}
inline float __int_as_float(int v) { return rocm_perf_bit_cast<float>(v); }
inline float __uint_as_float(unsigned v) { return rocm_perf_bit_cast<float>(v); }
inline int __float_as_int(float v) { return rocm_perf_bit_cast<int>(v); }
inline unsigned __float_as_uint(float v) { return rocm_perf_bit_cast<unsigned>(v); }
inline double __longlong_as_double(long long v) { return rocm_perf_bit_cast<double>(v); }
inline long long __double_as_longlong(double v) { return rocm_perf_bit_cast<long long>(v); }
inline int __float2int_rn(float x) { return static_cast<int>(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rd(float x) { return static_cast<int>(std::floor(x)); }
inline int __float2int_ru(float x) { return static_cast<int>(std::ceil(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v)); }
inline int __clzll(long long v) { return v == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(v)); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
inline unsigned __brev(unsigned v) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
    return r;
}
inline int __mul24(int a, int b) { return a * b; }
inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32); }
template <class T>
inline T __ldg(const T* p) { return *p; }

inline long long clock64() { return static_cast<long long>(__builtin_ia32_rdtsc()); }
inline long long wall_clock64() { return clock64(); }
inline long long __clock64() { return clock64(); }

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

#include "rocm_perf_host/intrinsics.h"
#include "rocm_perf_host/atomics.h"

// ---- what the CPU cannot run: a compile-time error that names the feature ----------------
// Each is a template so that the error fires only where a kernel uses it; the compiler's
// "required from here" note gives the file and line of that use.
namespace rocm_perf_host {
template <class... T>
struct unsupported_on_host : std::false_type {};
}  // namespace rocm_perf_host

#define ROCM_PERF_UNSUPPORTED(NAME, WHAT)                                                                  \
    template <class... Args>                                                                               \
    inline int NAME(Args...) {                                                                             \
        static_assert(rocm_perf_host::unsupported_on_host<Args...>::value,                                 \
                      "rocm-perf host backend: " #NAME " (" WHAT ") is not supported on the CPU; "         \
                      "profile this program with the rocm backend");                                       \
        return 0;                                                                                          \
    }
ROCM_PERF_UNSUPPORTED(__builtin_amdgcn_ds_swizzle, "cross-lane swizzle")
ROCM_PERF_UNSUPPORTED(__builtin_amdgcn_mov_dpp, "DPP cross-lane move")
ROCM_PERF_UNSUPPORTED(__builtin_amdgcn_update_dpp, "DPP cross-lane move")
#undef ROCM_PERF_UNSUPPORTED
