// Device-side language of HIP, mapped onto ordinary C++17 for the CPU: qualifiers, the thread
// and block builtins, vector types, math functions, atomics, and the features that cannot run
// here, which fail at compile time naming themselves.
#pragma once

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
static constexpr int warpSize = 64;  // CDNA wavefront size

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

// ---- vector types -------------------------------------------------------------------------
#define ROCM_PERF_VEC2(NAME, T)                                                             \
    struct alignas(2 * sizeof(T)) NAME {                                                    \
        T x, y;                                                                             \
    };                                                                                      \
    inline NAME make_##NAME(T x, T y) { return NAME{x, y}; }
#define ROCM_PERF_VEC3(NAME, T)                                                             \
    struct NAME {                                                                           \
        T x, y, z;                                                                          \
    };                                                                                      \
    inline NAME make_##NAME(T x, T y, T z) { return NAME{x, y, z}; }
#define ROCM_PERF_VEC4(NAME, T)                                                             \
    struct alignas(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)) NAME {                          \
        T x, y, z, w;                                                                       \
    };                                                                                      \
    inline NAME make_##NAME(T x, T y, T z, T w) { return NAME{x, y, z, w}; }
#define ROCM_PERF_VECS(BASE, T) ROCM_PERF_VEC2(BASE##2, T) ROCM_PERF_VEC3(BASE##3, T) ROCM_PERF_VEC4(BASE##4, T)
ROCM_PERF_VECS(float, float)
ROCM_PERF_VECS(double, double)
ROCM_PERF_VECS(int, int)
ROCM_PERF_VECS(uint, unsigned int)
ROCM_PERF_VECS(char, signed char)
ROCM_PERF_VECS(uchar, unsigned char)
ROCM_PERF_VECS(short, short)
ROCM_PERF_VECS(ushort, unsigned short)
ROCM_PERF_VECS(long, long)
ROCM_PERF_VECS(ulong, unsigned long)
ROCM_PERF_VECS(longlong, long long)
ROCM_PERF_VECS(ulonglong, unsigned long long)
#undef ROCM_PERF_VECS
#undef ROCM_PERF_VEC2
#undef ROCM_PERF_VEC3
#undef ROCM_PERF_VEC4

// Element-wise arithmetic as HIP's vector types have it (float and int vectors).
#define ROCM_PERF_VEC_OPS(V, OP)                                                                 \
    inline V operator OP(V a, V b) { V r = a; auto* p = &r.x; const auto* q = &b.x;              \
        for (unsigned i = 0; i < sizeof(V) / sizeof(r.x); ++i) { p[i] = p[i] OP q[i]; }         \
        return r;                                                                                \
    }                                                                                            \
    inline V& operator OP##=(V& a, V b) { a = a OP b; return a; }
#define ROCM_PERF_VEC_ALL_OPS(V) ROCM_PERF_VEC_OPS(V, +) ROCM_PERF_VEC_OPS(V, -) ROCM_PERF_VEC_OPS(V, *) ROCM_PERF_VEC_OPS(V, /)
ROCM_PERF_VEC_ALL_OPS(float2)
ROCM_PERF_VEC_ALL_OPS(float4)
ROCM_PERF_VEC_ALL_OPS(double2)
ROCM_PERF_VEC_ALL_OPS(int2)
ROCM_PERF_VEC_ALL_OPS(int4)
#undef ROCM_PERF_VEC_ALL_OPS
#undef ROCM_PERF_VEC_OPS

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

// ---- atomics (relaxed, as on the GPU) -----------------------------------------------------
namespace rocm_perf_host {
template <class T, class Op>
inline T atomic_update(T* address, Op op) {
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    static_assert(sizeof(T) == sizeof(Bits), "atomics work on 4- and 8-byte types");
    auto* bits = reinterpret_cast<Bits*>(address);
    Bits seen = __atomic_load_n(bits, __ATOMIC_RELAXED);
    for (;;) {
        T old = rocm_perf_bit_cast<T>(seen);
        Bits next = rocm_perf_bit_cast<Bits>(static_cast<T>(op(old)));
        if (__atomic_compare_exchange_n(bits, &seen, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return old;
    }
}
}  // namespace rocm_perf_host

#define ROCM_PERF_INT_ATOMICS(T)                                                                         \
    inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }                 \
    inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }                 \
    inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }                 \
    inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }                   \
    inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }                 \
    inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }               \
    inline T atomicMin(T* p, T v) { return rocm_perf_host::atomic_update(p, [v](T o) { return o < v ? o : v; }); } \
    inline T atomicMax(T* p, T v) { return rocm_perf_host::atomic_update(p, [v](T o) { return o > v ? o : v; }); } \
    inline T atomicCAS(T* p, T expected, T desired) {                                                    \
        __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);   \
        return expected;                                                                                 \
    }
ROCM_PERF_INT_ATOMICS(int)
ROCM_PERF_INT_ATOMICS(unsigned int)
ROCM_PERF_INT_ATOMICS(unsigned long long)
ROCM_PERF_INT_ATOMICS(long long)
#undef ROCM_PERF_INT_ATOMICS

#define ROCM_PERF_FLOAT_ATOMICS(T)                                                                       \
    inline T atomicAdd(T* p, T v) { return rocm_perf_host::atomic_update(p, [v](T o) { return o + v; }); } \
    inline T atomicSub(T* p, T v) { return rocm_perf_host::atomic_update(p, [v](T o) { return o - v; }); } \
    inline T atomicMin(T* p, T v) { return rocm_perf_host::atomic_update(p, [v](T o) { return std::fmin(o, v); }); } \
    inline T atomicMax(T* p, T v) { return rocm_perf_host::atomic_update(p, [v](T o) { return std::fmax(o, v); }); } \
    inline T atomicExch(T* p, T v) { return rocm_perf_host::atomic_update(p, [v](T) { return v; }); }    \
    inline T atomicCAS(T* p, T expected, T desired) {                                                    \
        return rocm_perf_host::atomic_update(p, [expected, desired](T o) {                               \
            return rocm_perf_bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(o) ==   \
                           rocm_perf_bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(expected) \
                       ? desired : o;                                                                    \
        });                                                                                              \
    }                                                                                                    \
    inline T unsafeAtomicAdd(T* p, T v) { return atomicAdd(p, v); }                                      \
    inline T atomicAdd_system(T* p, T v) { return atomicAdd(p, v); }
ROCM_PERF_FLOAT_ATOMICS(float)
ROCM_PERF_FLOAT_ATOMICS(double)
#undef ROCM_PERF_FLOAT_ATOMICS

inline unsigned atomicInc(unsigned* p, unsigned limit) {
    return rocm_perf_host::atomic_update(p, [limit](unsigned o) { return o >= limit ? 0u : o + 1; });
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
    return rocm_perf_host::atomic_update(p, [limit](unsigned o) { return (o == 0 || o > limit) ? limit : o - 1; });
}

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
                      "rocm-perf host backend: " #NAME " (" WHAT ") is not supported: the lanes of a "      \
                      "wavefront do not run in lock-step on the CPU; profile this program with the rocm backend"); \
        return 0;                                                                                          \
    }
ROCM_PERF_UNSUPPORTED(__shfl, "warp shuffle")
ROCM_PERF_UNSUPPORTED(__shfl_up, "warp shuffle")
ROCM_PERF_UNSUPPORTED(__shfl_down, "warp shuffle")
ROCM_PERF_UNSUPPORTED(__shfl_xor, "warp shuffle")
ROCM_PERF_UNSUPPORTED(__shfl_sync, "warp shuffle")
ROCM_PERF_UNSUPPORTED(__shfl_up_sync, "warp shuffle")
ROCM_PERF_UNSUPPORTED(__shfl_down_sync, "warp shuffle")
ROCM_PERF_UNSUPPORTED(__shfl_xor_sync, "warp shuffle")
ROCM_PERF_UNSUPPORTED(__ballot, "warp vote")
ROCM_PERF_UNSUPPORTED(__ballot_sync, "warp vote")
ROCM_PERF_UNSUPPORTED(__any, "warp vote")
ROCM_PERF_UNSUPPORTED(__all, "warp vote")
ROCM_PERF_UNSUPPORTED(__any_sync, "warp vote")
ROCM_PERF_UNSUPPORTED(__all_sync, "warp vote")
ROCM_PERF_UNSUPPORTED(__activemask, "lock-step warp mask")
ROCM_PERF_UNSUPPORTED(__syncwarp, "lock-step warp synchronization")
ROCM_PERF_UNSUPPORTED(__lanemask_lt, "lock-step warp mask")
ROCM_PERF_UNSUPPORTED(__builtin_amdgcn_ds_bpermute, "cross-lane permute")
ROCM_PERF_UNSUPPORTED(__builtin_amdgcn_ds_swizzle, "cross-lane swizzle")
ROCM_PERF_UNSUPPORTED(__builtin_amdgcn_readfirstlane, "cross-lane read")
#undef ROCM_PERF_UNSUPPORTED
