// bfloat16 on the CPU: __hip_bfloat16 / __hip_bfloat162 (hip_bf16.h) and the older
// hip_bfloat16 (hip_bfloat16.h). The top 16 bits of a float, rounded to nearest even; arithmetic
// in float and rounded back (correctly rounded for + - * / sqrt: 24 >= 2 x 8 + 2, see half.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "rocm_perf_host/half.h"

namespace rocm_perf_host {

inline std::uint16_t float_to_bfloat16_bits(float f, Rounding mode = Rounding::Nearest) {
    const std::uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
    const std::uint32_t rest = x & 0xffffu;
    std::uint32_t kept = x >> 16;
    const bool negative = (x >> 31) != 0;
    bool up = false;
    switch (mode) {
        case Rounding::Nearest: up = rest > 0x8000u || (rest == 0x8000u && (kept & 1u)); break;
        case Rounding::Zero: break;
        case Rounding::Up: up = rest != 0 && !negative; break;
        case Rounding::Down: up = rest != 0 && negative; break;
    }
    // Adding one to the magnitude bits carries into the exponent (and to infinity) by itself.
    return static_cast<std::uint16_t>(kept + (up ? 1u : 0u));
}
inline float bfloat16_bits_to_float(std::uint16_t b) { return bits_float(std::uint32_t(b) << 16); }

struct Bfloat16Bits {};

}  // namespace rocm_perf_host

struct __hip_bfloat16 {
    unsigned short data = 0;

    __hip_bfloat16() = default;
    constexpr __hip_bfloat16(unsigned short bits, rocm_perf_host::Bfloat16Bits) : data(bits) {}
    __hip_bfloat16(float f) : data(rocm_perf_host::float_to_bfloat16_bits(f)) {}
    __hip_bfloat16(double d) : __hip_bfloat16(static_cast<float>(d)) {}
    __hip_bfloat16(int v) : __hip_bfloat16(static_cast<float>(v)) {}
    __hip_bfloat16(unsigned v) : __hip_bfloat16(static_cast<float>(v)) {}
    __hip_bfloat16(long long v) : __hip_bfloat16(static_cast<float>(v)) {}
    __hip_bfloat16(unsigned long long v) : __hip_bfloat16(static_cast<float>(v)) {}
    operator float() const { return rocm_perf_host::bfloat16_bits_to_float(data); }

    __hip_bfloat16& operator+=(const __hip_bfloat16& o) { return *this = __hip_bfloat16(float(*this) + float(o)); }
    __hip_bfloat16& operator-=(const __hip_bfloat16& o) { return *this = __hip_bfloat16(float(*this) - float(o)); }
    __hip_bfloat16& operator*=(const __hip_bfloat16& o) { return *this = __hip_bfloat16(float(*this) * float(o)); }
    __hip_bfloat16& operator/=(const __hip_bfloat16& o) { return *this = __hip_bfloat16(float(*this) / float(o)); }
};
typedef __hip_bfloat16 hip_bf16;

#define ROCM_PERF_BF16_BINARY(OP)                                                                  \
    inline __hip_bfloat16 operator OP(const __hip_bfloat16& a, const __hip_bfloat16& b) {          \
        return __hip_bfloat16(float(a) OP float(b));                                               \
    }
ROCM_PERF_BF16_BINARY(+)
ROCM_PERF_BF16_BINARY(-)
ROCM_PERF_BF16_BINARY(*)
ROCM_PERF_BF16_BINARY(/)
#undef ROCM_PERF_BF16_BINARY
#define ROCM_PERF_BF16_COMPARE(OP) \
    inline bool operator OP(const __hip_bfloat16& a, const __hip_bfloat16& b) { return float(a) OP float(b); }
ROCM_PERF_BF16_COMPARE(==)
ROCM_PERF_BF16_COMPARE(!=)
ROCM_PERF_BF16_COMPARE(<)
ROCM_PERF_BF16_COMPARE(<=)
ROCM_PERF_BF16_COMPARE(>)
ROCM_PERF_BF16_COMPARE(>=)
#undef ROCM_PERF_BF16_COMPARE
inline __hip_bfloat16 operator-(const __hip_bfloat16& a) {
    return __hip_bfloat16(static_cast<unsigned short>(a.data ^ 0x8000u), rocm_perf_host::Bfloat16Bits{});
}

struct alignas(4) __hip_bfloat162 {
    __hip_bfloat16 x, y;
    __hip_bfloat162() = default;
    __hip_bfloat162(const __hip_bfloat16& a, const __hip_bfloat16& b) : x(a), y(b) {}
};
inline __hip_bfloat162 operator+(const __hip_bfloat162& a, const __hip_bfloat162& b) { return {a.x + b.x, a.y + b.y}; }
inline __hip_bfloat162 operator-(const __hip_bfloat162& a, const __hip_bfloat162& b) { return {a.x - b.x, a.y - b.y}; }
inline __hip_bfloat162 operator*(const __hip_bfloat162& a, const __hip_bfloat162& b) { return {a.x * b.x, a.y * b.y}; }
inline __hip_bfloat162 operator/(const __hip_bfloat162& a, const __hip_bfloat162& b) { return {a.x / b.x, a.y / b.y}; }
inline __hip_bfloat162 operator-(const __hip_bfloat162& a) { return {-a.x, -a.y}; }

// ---- conversions ---------------------------------------------------------------------------
#define ROCM_PERF_BF16_FROM(SUFFIX, MODE)                                                            \
    inline __hip_bfloat16 __float2bfloat16##SUFFIX(float f) {                                        \
        return __hip_bfloat16(rocm_perf_host::float_to_bfloat16_bits(f, rocm_perf_host::Rounding::MODE), \
                              rocm_perf_host::Bfloat16Bits{});                                       \
    }
ROCM_PERF_BF16_FROM(, Nearest)
ROCM_PERF_BF16_FROM(_rn, Nearest)
ROCM_PERF_BF16_FROM(_rz, Zero)
ROCM_PERF_BF16_FROM(_rd, Down)
ROCM_PERF_BF16_FROM(_ru, Up)
#undef ROCM_PERF_BF16_FROM
inline float __bfloat162float(__hip_bfloat16 b) { return float(b); }
inline __hip_bfloat16 __double2bfloat16(double d) { return __float2bfloat16(static_cast<float>(d)); }
inline __hip_bfloat162 __float2bfloat162_rn(float f) { return {__float2bfloat16(f), __float2bfloat16(f)}; }
inline __hip_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16(a), __float2bfloat16(b)}; }
inline __hip_bfloat162 __float22bfloat162_rn(float2 v) { return __floats2bfloat162_rn(v.x, v.y); }
inline float2 __bfloat1622float2(__hip_bfloat162 v) { return make_float2(float(v.x), float(v.y)); }
inline __hip_bfloat162 __bfloat162bfloat162(__hip_bfloat16 b) { return {b, b}; }
inline __hip_bfloat162 __halves2bfloat162(__hip_bfloat16 a, __hip_bfloat16 b) { return {a, b}; }
inline __hip_bfloat16 __low2bfloat16(__hip_bfloat162 v) { return v.x; }
inline __hip_bfloat16 __high2bfloat16(__hip_bfloat162 v) { return v.y; }
inline float __low2float(__hip_bfloat162 v) { return float(v.x); }
inline float __high2float(__hip_bfloat162 v) { return float(v.y); }
inline __hip_bfloat162 __lowhigh2highlow(__hip_bfloat162 v) { return {v.y, v.x}; }
inline __hip_bfloat162 make_bfloat162(__hip_bfloat16 a, __hip_bfloat16 b) { return {a, b}; }
inline short __bfloat16_as_short(__hip_bfloat16 b) { return static_cast<short>(b.data); }
inline unsigned short __bfloat16_as_ushort(__hip_bfloat16 b) { return b.data; }
inline __hip_bfloat16 __short_as_bfloat16(short v) {
    return __hip_bfloat16(static_cast<unsigned short>(v), rocm_perf_host::Bfloat16Bits{});
}
inline __hip_bfloat16 __ushort_as_bfloat16(unsigned short v) { return __hip_bfloat16(v, rocm_perf_host::Bfloat16Bits{}); }
inline int __bfloat162int_rn(__hip_bfloat16 b) { return static_cast<int>(std::nearbyint(float(b))); }
inline int __bfloat162int_rz(__hip_bfloat16 b) { return static_cast<int>(std::trunc(float(b))); }
inline __hip_bfloat16 __int2bfloat16_rn(int v) { return __float2bfloat16_rn(static_cast<float>(v)); }

// ---- arithmetic, comparison and math (overloads of the half functions) ---------------------
inline __hip_bfloat16 __hadd(__hip_bfloat16 a, __hip_bfloat16 b) { return a + b; }
inline __hip_bfloat16 __hsub(__hip_bfloat16 a, __hip_bfloat16 b) { return a - b; }
inline __hip_bfloat16 __hmul(__hip_bfloat16 a, __hip_bfloat16 b) { return a * b; }
inline __hip_bfloat16 __hdiv(__hip_bfloat16 a, __hip_bfloat16 b) { return a / b; }
inline __hip_bfloat16 __hfma(__hip_bfloat16 a, __hip_bfloat16 b, __hip_bfloat16 c) {
    return __hip_bfloat16(std::fma(float(a), float(b), float(c)));
}
inline __hip_bfloat16 __hneg(__hip_bfloat16 a) { return -a; }
inline __hip_bfloat16 __habs(__hip_bfloat16 a) {
    return __hip_bfloat16(static_cast<unsigned short>(a.data & 0x7fffu), rocm_perf_host::Bfloat16Bits{});
}
inline __hip_bfloat16 __hmax(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16(std::fmax(float(a), float(b))); }
inline __hip_bfloat16 __hmin(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16(std::fmin(float(a), float(b))); }
inline bool __heq(__hip_bfloat16 a, __hip_bfloat16 b) { return a == b; }
inline bool __hne(__hip_bfloat16 a, __hip_bfloat16 b) { return a != b; }
inline bool __hlt(__hip_bfloat16 a, __hip_bfloat16 b) { return a < b; }
inline bool __hle(__hip_bfloat16 a, __hip_bfloat16 b) { return a <= b; }
inline bool __hgt(__hip_bfloat16 a, __hip_bfloat16 b) { return a > b; }
inline bool __hge(__hip_bfloat16 a, __hip_bfloat16 b) { return a >= b; }
inline bool __hisnan(__hip_bfloat16 a) { return std::isnan(float(a)); }
inline int __hisinf(__hip_bfloat16 a) { return std::isinf(float(a)) ? (float(a) < 0 ? -1 : 1) : 0; }
inline __hip_bfloat162 __hadd2(__hip_bfloat162 a, __hip_bfloat162 b) { return a + b; }
inline __hip_bfloat162 __hsub2(__hip_bfloat162 a, __hip_bfloat162 b) { return a - b; }
inline __hip_bfloat162 __hmul2(__hip_bfloat162 a, __hip_bfloat162 b) { return a * b; }
inline __hip_bfloat162 __h2div(__hip_bfloat162 a, __hip_bfloat162 b) { return a / b; }
inline __hip_bfloat162 __hfma2(__hip_bfloat162 a, __hip_bfloat162 b, __hip_bfloat162 c) {
    return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
#define ROCM_PERF_BF16_MATH(NAME, EXPR)                                                            \
    inline __hip_bfloat16 h##NAME(__hip_bfloat16 b) {                                              \
        const float x = float(b);                                                                  \
        return __hip_bfloat16(EXPR);                                                               \
    }                                                                                              \
    inline __hip_bfloat162 h2##NAME(__hip_bfloat162 v) { return {h##NAME(v.x), h##NAME(v.y)}; }
ROCM_PERF_BF16_MATH(sqrt, std::sqrt(x))
ROCM_PERF_BF16_MATH(rsqrt, 1.0f / std::sqrt(x))
ROCM_PERF_BF16_MATH(rcp, 1.0f / x)
ROCM_PERF_BF16_MATH(exp, std::exp(x))
ROCM_PERF_BF16_MATH(exp2, std::exp2(x))
ROCM_PERF_BF16_MATH(log, std::log(x))
ROCM_PERF_BF16_MATH(log2, std::log2(x))
ROCM_PERF_BF16_MATH(sin, std::sin(x))
ROCM_PERF_BF16_MATH(cos, std::cos(x))
ROCM_PERF_BF16_MATH(ceil, std::ceil(x))
ROCM_PERF_BF16_MATH(floor, std::floor(x))
ROCM_PERF_BF16_MATH(trunc, std::trunc(x))
ROCM_PERF_BF16_MATH(rint, std::nearbyint(x))
#undef ROCM_PERF_BF16_MATH

inline __hip_bfloat16 atomicAdd(__hip_bfloat16* p, __hip_bfloat16 v) {
    return rocm_perf_host::atomic_update(p, [v](__hip_bfloat16 o) { return o + v; });
}

// The older rocBLAS-style type of hip/hip_bfloat16.h: explicit from float (rounding to nearest
// even, or truncating), implicit to float, arithmetic through float.
struct hip_bfloat16 {
    std::uint16_t data = 0;
    enum truncate_t { truncate };

    hip_bfloat16() = default;
    explicit hip_bfloat16(float f) : data(rocm_perf_host::float_to_bfloat16_bits(f)) {}
    explicit hip_bfloat16(float f, truncate_t)
        : data(rocm_perf_host::float_to_bfloat16_bits(f, rocm_perf_host::Rounding::Zero)) {}
    operator float() const { return rocm_perf_host::bfloat16_bits_to_float(data); }
    hip_bfloat16& operator+=(hip_bfloat16 o) { return *this = hip_bfloat16(float(*this) + float(o)); }
    hip_bfloat16& operator-=(hip_bfloat16 o) { return *this = hip_bfloat16(float(*this) - float(o)); }
    hip_bfloat16& operator*=(hip_bfloat16 o) { return *this = hip_bfloat16(float(*this) * float(o)); }
    hip_bfloat16& operator/=(hip_bfloat16 o) { return *this = hip_bfloat16(float(*this) / float(o)); }
};
inline hip_bfloat16 operator+(hip_bfloat16 a, hip_bfloat16 b) { return hip_bfloat16(float(a) + float(b)); }
inline hip_bfloat16 operator-(hip_bfloat16 a, hip_bfloat16 b) { return hip_bfloat16(float(a) - float(b)); }
inline hip_bfloat16 operator*(hip_bfloat16 a, hip_bfloat16 b) { return hip_bfloat16(float(a) * float(b)); }
inline hip_bfloat16 operator/(hip_bfloat16 a, hip_bfloat16 b) { return hip_bfloat16(float(a) / float(b)); }
inline hip_bfloat16 operator-(hip_bfloat16 a) {
    a.data ^= 0x8000u;
    return a;
}
inline bool operator==(hip_bfloat16 a, hip_bfloat16 b) { return float(a) == float(b); }
inline bool operator!=(hip_bfloat16 a, hip_bfloat16 b) { return float(a) != float(b); }
inline bool operator<(hip_bfloat16 a, hip_bfloat16 b) { return float(a) < float(b); }
inline bool operator<=(hip_bfloat16 a, hip_bfloat16 b) { return float(a) <= float(b); }
inline bool operator>(hip_bfloat16 a, hip_bfloat16 b) { return float(a) > float(b); }
inline bool operator>=(hip_bfloat16 a, hip_bfloat16 b) { return float(a) >= float(b); }
