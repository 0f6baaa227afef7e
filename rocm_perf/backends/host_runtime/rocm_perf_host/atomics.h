// Atomics as HIP's headers offer them, on the CPU: relaxed read-modify-writes (as on the GPU) on
// 2-, 4- and 8-byte types; the _system and _block scopes are the same thing on one CPU; the
// clang __hip_atomic_* builtins take their memory order and ignore the scope.
#pragma once

#include <cstdint>
#include <type_traits>

namespace rocm_perf_host {
template <class T, class Op>
inline T atomic_update(T* address, Op op) {
    using Bits = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                    std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
    static_assert(sizeof(T) == sizeof(Bits), "atomics work on 2-, 4- and 8-byte types");
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
ROCM_PERF_INT_ATOMICS(long)
ROCM_PERF_INT_ATOMICS(unsigned long)
ROCM_PERF_INT_ATOMICS(long long)
ROCM_PERF_INT_ATOMICS(unsigned long long)
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
    inline T safeAtomicAdd(T* p, T v) { return atomicAdd(p, v); }                                        \
    inline T unsafeAtomicMax(T* p, T v) { return atomicMax(p, v); }                                      \
    inline T safeAtomicMax(T* p, T v) { return atomicMax(p, v); }                                        \
    inline T unsafeAtomicMin(T* p, T v) { return atomicMin(p, v); }                                      \
    inline T safeAtomicMin(T* p, T v) { return atomicMin(p, v); }
ROCM_PERF_FLOAT_ATOMICS(float)
ROCM_PERF_FLOAT_ATOMICS(double)
#undef ROCM_PERF_FLOAT_ATOMICS

inline unsigned atomicInc(unsigned* p, unsigned limit) {
    return rocm_perf_host::atomic_update(p, [limit](unsigned o) { return o >= limit ? 0u : o + 1; });
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
    return rocm_perf_host::atomic_update(p, [limit](unsigned o) { return (o == 0 || o > limit) ? limit : o - 1; });
}

inline unsigned short atomicCAS(unsigned short* p, unsigned short expected, unsigned short desired) {
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return expected;
}

// The scoped forms: one CPU is one scope.
#define ROCM_PERF_SCOPED_ATOMIC(NAME)                                                  \
    template <class T, class... A>                                                     \
    inline auto NAME##_system(T* p, A... a) -> decltype(NAME(p, a...)) {               \
        return NAME(p, a...);                                                          \
    }                                                                                  \
    template <class T, class... A>                                                     \
    inline auto NAME##_block(T* p, A... a) -> decltype(NAME(p, a...)) {                \
        return NAME(p, a...);                                                          \
    }
ROCM_PERF_SCOPED_ATOMIC(atomicAdd)
ROCM_PERF_SCOPED_ATOMIC(atomicSub)
ROCM_PERF_SCOPED_ATOMIC(atomicAnd)
ROCM_PERF_SCOPED_ATOMIC(atomicOr)
ROCM_PERF_SCOPED_ATOMIC(atomicXor)
ROCM_PERF_SCOPED_ATOMIC(atomicExch)
ROCM_PERF_SCOPED_ATOMIC(atomicMin)
ROCM_PERF_SCOPED_ATOMIC(atomicMax)
ROCM_PERF_SCOPED_ATOMIC(atomicCAS)
ROCM_PERF_SCOPED_ATOMIC(atomicInc)
ROCM_PERF_SCOPED_ATOMIC(atomicDec)
#undef ROCM_PERF_SCOPED_ATOMIC

// clang's HIP atomic builtins (used by rocPRIM-style code): the order is honoured, the scope is
// the one CPU.
#ifndef __HIP_MEMORY_SCOPE_SINGLETHREAD
#define __HIP_MEMORY_SCOPE_SINGLETHREAD 1
#define __HIP_MEMORY_SCOPE_WAVEFRONT 2
#define __HIP_MEMORY_SCOPE_WORKGROUP 3
#define __HIP_MEMORY_SCOPE_AGENT 4
#define __HIP_MEMORY_SCOPE_SYSTEM 5
#endif
template <class T>
inline T __hip_atomic_load(T* p, int order, int) {
    return __atomic_load_n(p, order);
}
template <class T, class U>
inline void __hip_atomic_store(T* p, U v, int order, int) {
    __atomic_store_n(p, static_cast<T>(v), order);
}
template <class T, class U>
inline T __hip_atomic_exchange(T* p, U v, int order, int) {
    return __atomic_exchange_n(p, static_cast<T>(v), order);
}
template <class T, class U>
inline bool __hip_atomic_compare_exchange_strong(T* p, T* expected, U desired, int success, int failure, int) {
    return __atomic_compare_exchange_n(p, expected, static_cast<T>(desired), false, success, failure);
}
template <class T, class U>
inline bool __hip_atomic_compare_exchange_weak(T* p, T* expected, U desired, int success, int failure, int) {
    return __atomic_compare_exchange_n(p, expected, static_cast<T>(desired), true, success, failure);
}
template <class T, class U>
inline T __hip_atomic_fetch_add(T* p, U v, int order, int) {
    if constexpr (std::is_integral<T>::value)
        return __atomic_fetch_add(p, static_cast<T>(v), order);
    else
        return rocm_perf_host::atomic_update(p, [v](T o) { return static_cast<T>(o + v); });
}
template <class T, class U>
inline T __hip_atomic_fetch_sub(T* p, U v, int order, int) {
    if constexpr (std::is_integral<T>::value)
        return __atomic_fetch_sub(p, static_cast<T>(v), order);
    else
        return rocm_perf_host::atomic_update(p, [v](T o) { return static_cast<T>(o - v); });
}
template <class T, class U>
inline T __hip_atomic_fetch_and(T* p, U v, int order, int) {
    return __atomic_fetch_and(p, static_cast<T>(v), order);
}
template <class T, class U>
inline T __hip_atomic_fetch_or(T* p, U v, int order, int) {
    return __atomic_fetch_or(p, static_cast<T>(v), order);
}
template <class T, class U>
inline T __hip_atomic_fetch_xor(T* p, U v, int order, int) {
    return __atomic_fetch_xor(p, static_cast<T>(v), order);
}
template <class T, class U>
inline T __hip_atomic_fetch_min(T* p, U v, int, int) {
    const T w = static_cast<T>(v);
    return rocm_perf_host::atomic_update(p, [w](T o) { return w < o ? w : o; });
}
template <class T, class U>
inline T __hip_atomic_fetch_max(T* p, U v, int, int) {
    const T w = static_cast<T>(v);
    return rocm_perf_host::atomic_update(p, [w](T o) { return o < w ? w : o; });
}
