// __half / __half2 (hip_fp16.h) on the CPU: IEEE binary16 stored as bits, arithmetic done in
// float and rounded back to half. For +, -, *, / and sqrt of halves this gives the correctly
// rounded half result, because float's 24-bit significand is at least 2 x 11 + 2 bits (double
// rounding is innocuous then: Figueroa, "When is double rounding innocuous?", 1995).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "rocm_perf_host/device.h"

namespace rocm_perf_host {

enum class Rounding { Nearest, Zero, Down, Up };

inline std::uint32_t float_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float bits_float(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// binary32 -> binary16 with the given rounding, subnormals and overflow included.
inline std::uint16_t float_to_half_bits(float f, Rounding mode = Rounding::Nearest) {
    const std::uint32_t x = float_bits(f);
    const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {  // infinity or NaN (NaNs stay quiet NaNs, top payload bits kept)
        return ax > 0x7f800000u ? static_cast<std::uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)) : sign | 0x7c00u;
    }
    const bool negative = sign != 0;
    auto rounds_away = [&](std::uint32_t kept, std::uint32_t rest, std::uint32_t halfway) {
        switch (mode) {
            case Rounding::Nearest: return rest > halfway || (rest == halfway && (kept & 1u));
            case Rounding::Zero: return false;
            case Rounding::Up: return rest != 0 && !negative;
            case Rounding::Down: return rest != 0 && negative;
        }
        return false;
    };
    auto overflow = [&]() -> std::uint16_t {
        const bool to_infinity = mode == Rounding::Nearest || (mode == Rounding::Up && !negative) ||
                                 (mode == Rounding::Down && negative);
        return sign | (to_infinity ? 0x7c00u : 0x7bffu);
    };
    if (ax == 0) return sign;
    int exponent = static_cast<int>(ax >> 23) - 127;
    std::uint32_t significand = ax & 0x7fffffu;
    if (ax < 0x00800000u)
        exponent = -126;  // a float subnormal: far below half's range
    else
        significand |= 0x800000u;
    if (exponent > 15) return overflow();
    // Bits of the 24-bit significand dropped: 13 for a normal half, more for a subnormal one.
    const int shift = exponent >= -14 ? 13 : 13 + (-14 - exponent);
    if (shift > 24) {  // below half the smallest subnormal
        const bool up = (mode == Rounding::Up && !negative) || (mode == Rounding::Down && negative);
        return sign | (up ? 1u : 0u);
    }
    const std::uint32_t kept = significand >> shift;
    const std::uint32_t rest = significand & ((1u << shift) - 1);
    const std::uint32_t q = kept + (rounds_away(kept, rest, 1u << (shift - 1)) ? 1u : 0u);
    // For a normal half `q` carries the implicit bit at bit 10, which adds one to the exponent
    // field; a rounding carry moves into the exponent by itself.
    std::uint32_t bits = exponent >= -14 ? (std::uint32_t(exponent + 14) << 10) + q : q;
    if (bits >= 0x7c00u) return overflow();
    return static_cast<std::uint16_t>(sign | bits);
}

inline float half_bits_to_float(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    std::uint32_t significand = h & 0x3ffu;
    if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (significand << 13));
    if (exponent == 0) {
        if (significand == 0) return bits_float(sign);
        int e = -14;  // normalize the subnormal
        while (!(significand & 0x400u)) {
            significand <<= 1;
            --e;
        }
        return bits_float(sign | (std::uint32_t(e + 127) << 23) | ((significand & 0x3ffu) << 13));
    }
    return bits_float(sign | ((exponent + 112) << 23) | (significand << 13));
}

struct HalfBits {};

}  // namespace rocm_perf_host

struct __half {
    unsigned short __x = 0;

    __half() = default;
    constexpr __half(unsigned short bits, rocm_perf_host::HalfBits) : __x(bits) {}
    __half(float f) : __x(rocm_perf_host::float_to_half_bits(f)) {}
    __half(double d) : __half(static_cast<float>(d)) {}
    __half(int v) : __half(static_cast<float>(v)) {}
    __half(unsigned v) : __half(static_cast<float>(v)) {}
    __half(long v) : __half(static_cast<float>(v)) {}
    __half(unsigned long v) : __half(static_cast<float>(v)) {}
    __half(long long v) : __half(static_cast<float>(v)) {}
    __half(unsigned long long v) : __half(static_cast<float>(v)) {}
    __half(short v) : __half(static_cast<float>(v)) {}
    __half(unsigned short v) : __half(static_cast<float>(v)) {}
    operator float() const { return rocm_perf_host::half_bits_to_float(__x); }

    __half& operator+=(const __half& o) { return *this = __half(float(*this) + float(o)); }
    __half& operator-=(const __half& o) { return *this = __half(float(*this) - float(o)); }
    __half& operator*=(const __half& o) { return *this = __half(float(*this) * float(o)); }
    __half& operator/=(const __half& o) { return *this = __half(float(*this) / float(o)); }
    __half& operator++() { return *this += __half(1.0f); }
    __half& operator--() { return *this -= __half(1.0f); }
    __half operator++(int) {
        __half old = *this;
        ++*this;
        return old;
    }
    __half operator--(int) {
        __half old = *this;
        --*this;
        return old;
    }
};
typedef __half half;
typedef __half __hip_fp16;  // what some HIP code spells it

inline __half operator+(const __half& a, const __half& b) { return __half(float(a) + float(b)); }
inline __half operator-(const __half& a, const __half& b) { return __half(float(a) - float(b)); }
inline __half operator*(const __half& a, const __half& b) { return __half(float(a) * float(b)); }
inline __half operator/(const __half& a, const __half& b) { return __half(float(a) / float(b)); }
inline __half operator-(const __half& a) { return __half(static_cast<unsigned short>(a.__x ^ 0x8000u), rocm_perf_host::HalfBits{}); }
inline __half operator+(const __half& a) { return a; }
inline bool operator==(const __half& a, const __half& b) { return float(a) == float(b); }
inline bool operator!=(const __half& a, const __half& b) { return float(a) != float(b); }
inline bool operator<(const __half& a, const __half& b) { return float(a) < float(b); }
inline bool operator<=(const __half& a, const __half& b) { return float(a) <= float(b); }
inline bool operator>(const __half& a, const __half& b) { return float(a) > float(b); }
inline bool operator>=(const __half& a, const __half& b) { return float(a) >= float(b); }

struct alignas(4) __half2 {
    __half x, y;
    __half2() = default;
    __half2(const __half& a, const __half& b) : x(a), y(b) {}
    __half2& operator+=(const __half2& o) { return x += o.x, y += o.y, *this; }
    __half2& operator-=(const __half2& o) { return x -= o.x, y -= o.y, *this; }
    __half2& operator*=(const __half2& o) { return x *= o.x, y *= o.y, *this; }
    __half2& operator/=(const __half2& o) { return x /= o.x, y /= o.y, *this; }
};
typedef __half2 half2;

inline __half2 operator+(const __half2& a, const __half2& b) { return __half2(a.x + b.x, a.y + b.y); }
inline __half2 operator-(const __half2& a, const __half2& b) { return __half2(a.x - b.x, a.y - b.y); }
inline __half2 operator*(const __half2& a, const __half2& b) { return __half2(a.x * b.x, a.y * b.y); }
inline __half2 operator/(const __half2& a, const __half2& b) { return __half2(a.x / b.x, a.y / b.y); }
inline __half2 operator-(const __half2& a) { return __half2(-a.x, -a.y); }
inline bool operator==(const __half2& a, const __half2& b) { return a.x == b.x && a.y == b.y; }
inline bool operator!=(const __half2& a, const __half2& b) { return !(a == b); }

// ---- conversions ---------------------------------------------------------------------------
#define ROCM_PERF_HALF_FROM(SUFFIX, MODE)                                                                 \
    inline __half __float2half##SUFFIX(float f) {                                                        \
        return __half(rocm_perf_host::float_to_half_bits(f, rocm_perf_host::Rounding::MODE), rocm_perf_host::HalfBits{}); \
    }
ROCM_PERF_HALF_FROM(, Nearest)
ROCM_PERF_HALF_FROM(_rn, Nearest)
ROCM_PERF_HALF_FROM(_rz, Zero)
ROCM_PERF_HALF_FROM(_rd, Down)
ROCM_PERF_HALF_FROM(_ru, Up)
#undef ROCM_PERF_HALF_FROM
inline float __half2float(__half h) { return float(h); }
inline __half __double2half(double d) { return __float2half(static_cast<float>(d)); }
inline __half2 __float2half2_rn(float f) { return __half2(__float2half(f), __float2half(f)); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half(a), __float2half(b)); }
inline __half2 __float22half2_rn(float2 v) { return __floats2half2_rn(v.x, v.y); }
inline float2 __half22float2(__half2 h) { return make_float2(float(h.x), float(h.y)); }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __half2half2(__half h) { return __half2(h, h); }
inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __low2half2(__half2 h) { return __half2(h.x, h.x); }
inline __half2 __high2half2(__half2 h) { return __half2(h.y, h.y); }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
inline __half2 __lowhigh2highlow(__half2 h) { return __half2(h.y, h.x); }
inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }
inline short __half_as_short(__half h) { return static_cast<short>(h.__x); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half __short_as_half(short v) { return __half(static_cast<unsigned short>(v), rocm_perf_host::HalfBits{}); }
inline __half __ushort_as_half(unsigned short v) { return __half(v, rocm_perf_host::HalfBits{}); }

// half -> integer with a rounding mode; integer -> half with a rounding mode (through float,
// exact for the 16-bit types; for wider ones the float step rounds to nearest first).
#define ROCM_PERF_HALF_INT(NAME, T)                                                                     \
    inline T __half2##NAME##_rn(__half h) { return static_cast<T>(std::nearbyint(float(h))); }          \
    inline T __half2##NAME##_rz(__half h) { return static_cast<T>(std::trunc(float(h))); }              \
    inline T __half2##NAME##_rd(__half h) { return static_cast<T>(std::floor(float(h))); }              \
    inline T __half2##NAME##_ru(__half h) { return static_cast<T>(std::ceil(float(h))); }               \
    inline __half __##NAME##2half_rn(T v) { return __float2half_rn(static_cast<float>(v)); }            \
    inline __half __##NAME##2half_rz(T v) { return __float2half_rz(static_cast<float>(v)); }            \
    inline __half __##NAME##2half_rd(T v) { return __float2half_rd(static_cast<float>(v)); }            \
    inline __half __##NAME##2half_ru(T v) { return __float2half_ru(static_cast<float>(v)); }
ROCM_PERF_HALF_INT(int, int)
ROCM_PERF_HALF_INT(uint, unsigned int)
ROCM_PERF_HALF_INT(short, short)
ROCM_PERF_HALF_INT(ushort, unsigned short)
ROCM_PERF_HALF_INT(ll, long long)
ROCM_PERF_HALF_INT(ull, unsigned long long)
#undef ROCM_PERF_HALF_INT

// ---- arithmetic, comparison and math -------------------------------------------------------
inline __half rocm_perf_saturate(__half h) {
    float f = float(h);
    return __half(f < 0.0f ? 0.0f : (f > 1.0f ? 1.0f : f));
}
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hdiv(__half a, __half b) { return a / b; }
inline __half __hadd_sat(__half a, __half b) { return rocm_perf_saturate(a + b); }
inline __half __hsub_sat(__half a, __half b) { return rocm_perf_saturate(a - b); }
inline __half __hmul_sat(__half a, __half b) { return rocm_perf_saturate(a * b); }
inline __half __hfma(__half a, __half b, __half c) { return __half(std::fma(float(a), float(b), float(c))); }
inline __half __hfma_sat(__half a, __half b, __half c) { return rocm_perf_saturate(__hfma(a, b, c)); }
inline __half __hneg(__half a) { return -a; }
inline __half __habs(__half a) { return __half(static_cast<unsigned short>(a.__x & 0x7fffu), rocm_perf_host::HalfBits{}); }
inline bool __heq(__half a, __half b) { return a == b; }
inline bool __hne(__half a, __half b) { return a != b; }
inline bool __hlt(__half a, __half b) { return a < b; }
inline bool __hle(__half a, __half b) { return a <= b; }
inline bool __hgt(__half a, __half b) { return a > b; }
inline bool __hge(__half a, __half b) { return a >= b; }
inline bool __hequ(__half a, __half b) { return !(a < b) && !(a > b); }
inline bool __hneu(__half a, __half b) { return !(a == b); }
inline bool __hltu(__half a, __half b) { return !(a >= b); }
inline bool __hleu(__half a, __half b) { return !(a > b); }
inline bool __hgtu(__half a, __half b) { return !(a <= b); }
inline bool __hgeu(__half a, __half b) { return !(a < b); }
inline bool __hisnan(__half a) { return std::isnan(float(a)); }
inline int __hisinf(__half a) { return std::isinf(float(a)) ? (float(a) < 0 ? -1 : 1) : 0; }
inline __half __hmax(__half a, __half b) { return __half(std::fmax(float(a), float(b))); }
inline __half __hmin(__half a, __half b) { return __half(std::fmin(float(a), float(b))); }

// One-argument math: hNAME on a half, h2NAME lane-wise on a half2.
#define ROCM_PERF_HALF_MATH(NAME, EXPR)                                 \
    inline __half h##NAME(__half h) {                                   \
        const float x = float(h);                                       \
        return __half(EXPR);                                            \
    }                                                                   \
    inline __half2 h2##NAME(__half2 h) { return __half2(h##NAME(h.x), h##NAME(h.y)); }
ROCM_PERF_HALF_MATH(sqrt, std::sqrt(x))
ROCM_PERF_HALF_MATH(rsqrt, 1.0f / std::sqrt(x))
ROCM_PERF_HALF_MATH(rcp, 1.0f / x)
ROCM_PERF_HALF_MATH(exp, std::exp(x))
ROCM_PERF_HALF_MATH(exp2, std::exp2(x))
ROCM_PERF_HALF_MATH(exp10, std::pow(10.0f, x))
ROCM_PERF_HALF_MATH(log, std::log(x))
ROCM_PERF_HALF_MATH(log2, std::log2(x))
ROCM_PERF_HALF_MATH(log10, std::log10(x))
ROCM_PERF_HALF_MATH(sin, std::sin(x))
ROCM_PERF_HALF_MATH(cos, std::cos(x))
ROCM_PERF_HALF_MATH(ceil, std::ceil(x))
ROCM_PERF_HALF_MATH(floor, std::floor(x))
ROCM_PERF_HALF_MATH(trunc, std::trunc(x))
ROCM_PERF_HALF_MATH(rint, std::nearbyint(x))
#undef ROCM_PERF_HALF_MATH

inline __half2 __hadd2(__half2 a, __half2 b) { return a + b; }
inline __half2 __hsub2(__half2 a, __half2 b) { return a - b; }
inline __half2 __hmul2(__half2 a, __half2 b) { return a * b; }
inline __half2 __h2div(__half2 a, __half2 b) { return a / b; }
inline __half2 __hadd2_sat(__half2 a, __half2 b) { return __half2(__hadd_sat(a.x, b.x), __hadd_sat(a.y, b.y)); }
inline __half2 __hsub2_sat(__half2 a, __half2 b) { return __half2(__hsub_sat(a.x, b.x), __hsub_sat(a.y, b.y)); }
inline __half2 __hmul2_sat(__half2 a, __half2 b) { return __half2(__hmul_sat(a.x, b.x), __hmul_sat(a.y, b.y)); }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }
inline __half2 __hfma2_sat(__half2 a, __half2 b, __half2 c) {
    return __half2(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y));
}
inline __half2 __hneg2(__half2 a) { return -a; }
inline __half2 __habs2(__half2 a) { return __half2(__habs(a.x), __habs(a.y)); }
inline __half2 __hmax2(__half2 a, __half2 b) { return __half2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }
inline __half2 __hmin2(__half2 a, __half2 b) { return __half2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }
// Lane-wise comparisons give 1.0 or 0.0 per lane; the __hb forms are true when both lanes are.
#define ROCM_PERF_HALF2_COMPARE(NAME, ONE)                                                         \
    inline __half2 NAME##2(__half2 a, __half2 b) {                                                 \
        return __half2(__half(ONE(a.x, b.x) ? 1.0f : 0.0f), __half(ONE(a.y, b.y) ? 1.0f : 0.0f)); \
    }                                                                                              \
    inline bool __hb##NAME##2_impl(__half2 a, __half2 b) { return ONE(a.x, b.x) && ONE(a.y, b.y); }
ROCM_PERF_HALF2_COMPARE(__heq, __heq)
ROCM_PERF_HALF2_COMPARE(__hne, __hne)
ROCM_PERF_HALF2_COMPARE(__hlt, __hlt)
ROCM_PERF_HALF2_COMPARE(__hle, __hle)
ROCM_PERF_HALF2_COMPARE(__hgt, __hgt)
ROCM_PERF_HALF2_COMPARE(__hge, __hge)
#undef ROCM_PERF_HALF2_COMPARE
inline bool __hbeq2(__half2 a, __half2 b) { return __hb__heq2_impl(a, b); }
inline bool __hbne2(__half2 a, __half2 b) { return __hb__hne2_impl(a, b); }
inline bool __hblt2(__half2 a, __half2 b) { return __hb__hlt2_impl(a, b); }
inline bool __hble2(__half2 a, __half2 b) { return __hb__hle2_impl(a, b); }
inline bool __hbgt2(__half2 a, __half2 b) { return __hb__hgt2_impl(a, b); }
inline bool __hbge2(__half2 a, __half2 b) { return __hb__hge2_impl(a, b); }
inline __half2 __hisnan2(__half2 a) {
    return __half2(__half(__hisnan(a.x) ? 1.0f : 0.0f), __half(__hisnan(a.y) ? 1.0f : 0.0f));
}

// Atomics on halves: compare-and-swap on their bits.
inline __half atomicAdd(__half* p, __half v) {
    return rocm_perf_host::atomic_update(p, [v](__half o) { return o + v; });
}
inline __half2 atomicAdd(__half2* p, __half2 v) {
    return rocm_perf_host::atomic_update(p, [v](__half2 o) { return o + v; });
}
inline __half unsafeAtomicAdd(__half* p, __half v) { return atomicAdd(p, v); }
inline __half2 unsafeAtomicAdd(__half2* p, __half2 v) { return atomicAdd(p, v); }
