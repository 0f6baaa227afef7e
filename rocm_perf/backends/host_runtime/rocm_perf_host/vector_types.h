// HIP's vector types (float4, int2, uchar4, ... 1 to 4 components) on the CPU: `.x`..`.w`,
// make_*, constructors from components or one scalar (broadcast, explicit), and element-wise
// arithmetic with vectors and scalars as HIP_vector_type has it; bit operations for the
// integer ones. Operators are templates, so a program's own `float4 operator+(float4, float4)`
// (CUDA's helper_math.h style) is preferred to them rather than redefining them.
#pragma once

#include <type_traits>

namespace rocm_perf_host {
template <class V>
struct vector_traits {
    static constexpr bool is_vector = false;
};
}  // namespace rocm_perf_host

#define ROCM_PERF_VEC_TRAITS(NAME, T, N)                  \
    namespace rocm_perf_host {                            \
    template <>                                           \
    struct vector_traits<NAME> {                          \
        static constexpr bool is_vector = true;           \
        static constexpr int size = N;                    \
        using scalar = T;                                 \
    };                                                    \
    }

#define ROCM_PERF_VEC1(NAME, T)                                                 \
    struct NAME {                                                               \
        T x;                                                                    \
        NAME() = default;                                                       \
        constexpr NAME(T x_) : x(x_) {}                                         \
    };                                                                          \
    inline NAME make_##NAME(T x) { return NAME(x); }                            \
    ROCM_PERF_VEC_TRAITS(NAME, T, 1)
#define ROCM_PERF_VEC2(NAME, T)                                                 \
    struct alignas(2 * sizeof(T)) NAME {                                        \
        T x, y;                                                                 \
        NAME() = default;                                                       \
        constexpr NAME(T x_, T y_) : x(x_), y(y_) {}                            \
        constexpr explicit NAME(T s) : x(s), y(s) {}                            \
    };                                                                          \
    inline NAME make_##NAME(T x, T y) { return NAME(x, y); }                    \
    ROCM_PERF_VEC_TRAITS(NAME, T, 2)
#define ROCM_PERF_VEC3(NAME, T)                                                 \
    struct NAME {                                                               \
        T x, y, z;                                                              \
        NAME() = default;                                                       \
        constexpr NAME(T x_, T y_, T z_) : x(x_), y(y_), z(z_) {}               \
        constexpr explicit NAME(T s) : x(s), y(s), z(s) {}                      \
    };                                                                          \
    inline NAME make_##NAME(T x, T y, T z) { return NAME(x, y, z); }            \
    ROCM_PERF_VEC_TRAITS(NAME, T, 3)
#define ROCM_PERF_VEC4(NAME, T)                                                 \
    struct alignas(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)) NAME {              \
        T x, y, z, w;                                                           \
        NAME() = default;                                                       \
        constexpr NAME(T x_, T y_, T z_, T w_) : x(x_), y(y_), z(z_), w(w_) {}  \
        constexpr explicit NAME(T s) : x(s), y(s), z(s), w(s) {}                \
    };                                                                          \
    inline NAME make_##NAME(T x, T y, T z, T w) { return NAME(x, y, z, w); }    \
    ROCM_PERF_VEC_TRAITS(NAME, T, 4)
#define ROCM_PERF_VECS(BASE, T) \
    ROCM_PERF_VEC1(BASE##1, T) ROCM_PERF_VEC2(BASE##2, T) ROCM_PERF_VEC3(BASE##3, T) ROCM_PERF_VEC4(BASE##4, T)
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
#undef ROCM_PERF_VEC1
#undef ROCM_PERF_VEC2
#undef ROCM_PERF_VEC3
#undef ROCM_PERF_VEC4
#undef ROCM_PERF_VEC_TRAITS

namespace rocm_perf_host {
template <class V>
using if_vector = std::enable_if_t<vector_traits<V>::is_vector, V>;
template <class V>
using if_int_vector = std::enable_if_t<vector_traits<V>::is_vector && std::is_integral<typename vector_traits<V>::scalar>::value, V>;
template <class V, class S>
using if_vector_scalar = std::enable_if_t<vector_traits<V>::is_vector && std::is_arithmetic<S>::value, V>;

template <class V>
inline auto* lanes(V& v) { return &v.x; }  // the components are consecutive members of one type
template <class V>
inline const auto* lanes(const V& v) { return &v.x; }

template <class V, class Op>
inline V elementwise(V a, const V& b, Op op) {
    for (int i = 0; i < vector_traits<V>::size; ++i) lanes(a)[i] = op(lanes(a)[i], lanes(b)[i]);
    return a;
}
template <class V, class S, class Op>
inline V with_scalar(V a, S s, Op op) {
    using T = typename vector_traits<V>::scalar;
    for (int i = 0; i < vector_traits<V>::size; ++i) lanes(a)[i] = op(lanes(a)[i], static_cast<T>(s));
    return a;
}
template <class V, class S, class Op>
inline V scalar_with(S s, V a, Op op) {
    using T = typename vector_traits<V>::scalar;
    for (int i = 0; i < vector_traits<V>::size; ++i) lanes(a)[i] = op(static_cast<T>(s), lanes(a)[i]);
    return a;
}
}  // namespace rocm_perf_host

#define ROCM_PERF_VEC_OPERATOR(OP, CHECK)                                                                        \
    template <class V>                                                                                           \
    inline rocm_perf_host::CHECK<V> operator OP(V a, const V& b) {                                               \
        return rocm_perf_host::elementwise(a, b, [](auto p, auto q) { return static_cast<decltype(p)>(p OP q); }); \
    }                                                                                                            \
    template <class V, class S>                                                                                  \
    inline std::enable_if_t<std::is_same<rocm_perf_host::CHECK<V>, V>::value && std::is_arithmetic<S>::value, V> \
    operator OP(V a, S s) {                                                                                      \
        return rocm_perf_host::with_scalar(a, s, [](auto p, auto q) { return static_cast<decltype(p)>(p OP q); }); \
    }                                                                                                            \
    template <class S, class V>                                                                                  \
    inline std::enable_if_t<std::is_same<rocm_perf_host::CHECK<V>, V>::value && std::is_arithmetic<S>::value, V> \
    operator OP(S s, V a) {                                                                                      \
        return rocm_perf_host::scalar_with(s, a, [](auto p, auto q) { return static_cast<decltype(q)>(p OP q); }); \
    }                                                                                                            \
    template <class V>                                                                                           \
    inline rocm_perf_host::CHECK<V>& operator OP##=(V& a, const V& b) {                                          \
        return a = a OP b;                                                                                       \
    }                                                                                                            \
    template <class V, class S>                                                                                  \
    inline std::enable_if_t<std::is_same<rocm_perf_host::CHECK<V>, V>::value && std::is_arithmetic<S>::value, V&> \
    operator OP##=(V& a, S s) {                                                                                  \
        return a = a OP s;                                                                                       \
    }
ROCM_PERF_VEC_OPERATOR(+, if_vector)
ROCM_PERF_VEC_OPERATOR(-, if_vector)
ROCM_PERF_VEC_OPERATOR(*, if_vector)
ROCM_PERF_VEC_OPERATOR(/, if_vector)
ROCM_PERF_VEC_OPERATOR(%, if_int_vector)
ROCM_PERF_VEC_OPERATOR(&, if_int_vector)
ROCM_PERF_VEC_OPERATOR(|, if_int_vector)
ROCM_PERF_VEC_OPERATOR(^, if_int_vector)
ROCM_PERF_VEC_OPERATOR(<<, if_int_vector)
ROCM_PERF_VEC_OPERATOR(>>, if_int_vector)
#undef ROCM_PERF_VEC_OPERATOR

template <class V>
inline rocm_perf_host::if_vector<V> operator-(V a) {
    for (int i = 0; i < rocm_perf_host::vector_traits<V>::size; ++i)
        rocm_perf_host::lanes(a)[i] = static_cast<typename rocm_perf_host::vector_traits<V>::scalar>(-rocm_perf_host::lanes(a)[i]);
    return a;
}
template <class V>
inline rocm_perf_host::if_vector<V> operator+(V a) {
    return a;
}
template <class V>
inline rocm_perf_host::if_int_vector<V> operator~(V a) {
    for (int i = 0; i < rocm_perf_host::vector_traits<V>::size; ++i)
        rocm_perf_host::lanes(a)[i] = static_cast<typename rocm_perf_host::vector_traits<V>::scalar>(~rocm_perf_host::lanes(a)[i]);
    return a;
}
template <class V>
inline std::enable_if_t<rocm_perf_host::vector_traits<V>::is_vector, bool> operator==(const V& a, const V& b) {
    for (int i = 0; i < rocm_perf_host::vector_traits<V>::size; ++i)
        if (!(rocm_perf_host::lanes(a)[i] == rocm_perf_host::lanes(b)[i])) return false;
    return true;
}
template <class V>
inline std::enable_if_t<rocm_perf_host::vector_traits<V>::is_vector, bool> operator!=(const V& a, const V& b) {
    return !(a == b);
}
