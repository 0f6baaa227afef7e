// Math overloads HIP's device headers declare in the global namespace that <cmath> alone does
// not give a HIP program, found by declaring every function name of HIP's
// amd_detail/amd_math_functions.h and amd_device_functions.h (Debian's hipcc, ROCm 5.2) against
// this runtime, and by the mixed-signedness set of HIP's own device-library test
// (tests/catch/unit/deviceLib/IntegerMathFunctions/minInt.cc: min(ull, ll) is unsigned long long,
// min(int, unsigned) unsigned, ...), which is CUDA's as well:
//
// - min/max of mixed signedness: the unsigned type of the two (the comparison is unsigned, as
//   the usual arithmetic conversions have it); float with double: double; any other mix of
//   arithmetic types: their common type. Without these, `min(int, unsigned)` is ambiguous here.
// - llmin/llmax/ullmin/ullmax (umin/umax are in device.h);
// - the classification functions (isnan, isinf, isfinite, signbit, isnormal, fpclassify, the
//   comparison macros) and the <cmath> functions HIP overloads for float, as unqualified
//   names: `isnan(x)` in a kernel does not compile against <cmath> alone;
// - powi/powif (HIP's integer powers), cyl_bessel_i0/i1 (and their f forms), amd_mixed_dot,
//   __mbcnt_lo/__mbcnt_hi, __ballot64, __clock.
//
// Left as they are: pow(float, int), which HIP's device headers make a float power (powif) but
// which host code of the same file sees as std::pow (double) - one file here serves both, and
// host references must keep their meaning; __fns32/__fns64 and __smid.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// ---- min / max ------------------------------------------------------------------------------
#define ROCM_PERF_MIN_MAX(R, A, B)                                                       \
    inline R min(A a, B b) { return static_cast<R>(a) < static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); } \
    inline R max(A a, B b) { return static_cast<R>(a) > static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); }
ROCM_PERF_MIN_MAX(unsigned, int, unsigned)
ROCM_PERF_MIN_MAX(unsigned, unsigned, int)
ROCM_PERF_MIN_MAX(long, long, long)
ROCM_PERF_MIN_MAX(unsigned long, unsigned long, unsigned long)
ROCM_PERF_MIN_MAX(unsigned long, long, unsigned long)
ROCM_PERF_MIN_MAX(unsigned long, unsigned long, long)
ROCM_PERF_MIN_MAX(unsigned long long, long long, unsigned long long)
ROCM_PERF_MIN_MAX(unsigned long long, unsigned long long, long long)
#undef ROCM_PERF_MIN_MAX
inline double min(float a, double b) { return std::fmin(static_cast<double>(a), b); }
inline double min(double a, float b) { return std::fmin(a, static_cast<double>(b)); }
inline double max(float a, double b) { return std::fmax(static_cast<double>(a), b); }
inline double max(double a, float b) { return std::fmax(a, static_cast<double>(b)); }

namespace rocm_perf_host {
template <class A, class B>
using mixed_arithmetic = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value &&
                                              !std::is_same<A, B>::value,
                                          std::common_type_t<A, B>>;
}  // namespace rocm_perf_host
// Every other mix (int with size_t, long with unsigned, short with float, ...): the common type.
// A template, so that an exact overload above always wins over it.
template <class A, class B>
inline rocm_perf_host::mixed_arithmetic<A, B> min(A a, B b) {
    using R = std::common_type_t<A, B>;
    return static_cast<R>(a) < static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b);
}
template <class A, class B>
inline rocm_perf_host::mixed_arithmetic<A, B> max(A a, B b) {
    using R = std::common_type_t<A, B>;
    return static_cast<R>(a) > static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b);
}

inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// ---- <cmath> as HIP's device headers overload it, unqualified --------------------------------
using std::acos;
using std::acosh;
using std::asin;
using std::asinh;
using std::atan;
using std::atan2;
using std::atanh;
using std::cbrt;
using std::copysign;
using std::cosh;
using std::erf;
using std::erfc;
using std::exp2;
using std::expm1;
using std::fdim;
using std::fmax;
using std::fmin;
using std::fmod;
using std::fpclassify;
using std::frexp;
using std::hypot;
using std::ilogb;
using std::isfinite;
using std::isgreater;
using std::isgreaterequal;
using std::isinf;
using std::isless;
using std::islessequal;
using std::islessgreater;
using std::isnan;
using std::isnormal;
using std::isunordered;
using std::ldexp;
using std::lgamma;
using std::llrint;
using std::llround;
using std::log10;
using std::log1p;
using std::log2;
using std::logb;
using std::lrint;
using std::lround;
using std::modf;
using std::nearbyint;
using std::nextafter;
using std::remainder;
using std::remquo;
using std::rint;
using std::round;
using std::scalbln;
using std::scalbn;
using std::signbit;
using std::sinh;
using std::tan;
using std::tgamma;
using std::trunc;

namespace rocm_perf_host {
template <class F>
inline F integer_power(F base, int e) {
    // HIP's powi/powif (OCML's pown): base to an integer power, by squaring.
    F result = 1;
    unsigned n = e < 0 ? 0u - static_cast<unsigned>(e) : static_cast<unsigned>(e);
    for (F b = base; n; n >>= 1, b *= b)
        if (n & 1u) result *= b;
    return e < 0 ? F(1) / result : result;
}
}  // namespace rocm_perf_host
inline float powif(float base, int e) { return rocm_perf_host::integer_power(base, e); }
inline double powi(double base, int e) { return rocm_perf_host::integer_power(base, e); }
inline double cyl_bessel_i0(double x) { return std::cyl_bessel_i(0.0, std::fabs(x)); }
inline double cyl_bessel_i1(double x) { return x < 0 ? -std::cyl_bessel_i(1.0, -x) : std::cyl_bessel_i(1.0, x); }
inline float cyl_bessel_i0f(float x) { return static_cast<float>(cyl_bessel_i0(x)); }
inline float cyl_bessel_i1f(float x) { return static_cast<float>(cyl_bessel_i1(x)); }

// ---- mixed-precision dot products (AMD's sdot/udot instructions) -----------------------------
namespace rocm_perf_host {
template <class T>
inline T saturated(long long v, bool saturate) {
    if (!saturate) return static_cast<T>(v);
    const long long lo = static_cast<long long>(std::numeric_limits<T>::min());
    const long long hi = static_cast<long long>(std::numeric_limits<T>::max());
    return static_cast<T>(v < lo ? lo : (v > hi ? hi : v));
}
}  // namespace rocm_perf_host
inline int amd_mixed_dot(short2 a, short2 b, int c, bool saturate) {
    return rocm_perf_host::saturated<int>(static_cast<long long>(c) + a.x * b.x + a.y * b.y, saturate);
}
inline unsigned amd_mixed_dot(ushort2 a, ushort2 b, unsigned c, bool saturate) {
    return rocm_perf_host::saturated<unsigned>(static_cast<long long>(c) + static_cast<long long>(a.x) * b.x +
                                                   static_cast<long long>(a.y) * b.y, saturate);
}
inline int amd_mixed_dot(char4 a, char4 b, int c, bool saturate) {
    return rocm_perf_host::saturated<int>(static_cast<long long>(c) + a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w,
                                          saturate);
}
inline unsigned amd_mixed_dot(uchar4 a, uchar4 b, unsigned c, bool saturate) {
    return rocm_perf_host::saturated<unsigned>(static_cast<long long>(c) + a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w,
                                               saturate);
}
// Eight 4-bit lanes of each int (sdot8/udot8).
inline int amd_mixed_dot(int a, int b, int c, bool saturate) {
    long long sum = c;
    for (int i = 0; i < 8; ++i) {
        const int x = static_cast<int>(static_cast<unsigned>(a) << (28 - 4 * i)) >> 28;
        const int y = static_cast<int>(static_cast<unsigned>(b) << (28 - 4 * i)) >> 28;
        sum += x * y;
    }
    return rocm_perf_host::saturated<int>(sum, saturate);
}
inline unsigned amd_mixed_dot(unsigned a, unsigned b, unsigned c, bool saturate) {
    long long sum = c;
    for (int i = 0; i < 8; ++i) sum += static_cast<long long>((a >> (4 * i)) & 15u) * ((b >> (4 * i)) & 15u);
    return rocm_perf_host::saturated<unsigned>(sum, saturate);
}

// ---- lanes and clocks -----------------------------------------------------------------------------
inline unsigned long long __ballot64(int predicate, ROCM_PERF_CALL_SITE) { return __ballot(predicate, ROCM_PERF_FORWARD_SITE); }
inline long long __clock() { return __clock64(); }
// The set bits of `mask` below this lane, within the low (lo) or high (hi) 32 lanes, plus `add`:
// __mbcnt_hi(~0u, __mbcnt_lo(~0u, 0)) is the lane id.
inline unsigned __mbcnt_lo(unsigned mask, unsigned add) {
    const unsigned lane = rocm_perf_host::lane_of_thread();
    const unsigned below = lane >= 32 ? ~0u : ((1u << lane) - 1u);
    return add + static_cast<unsigned>(__builtin_popcount(mask & below));
}
inline unsigned __mbcnt_hi(unsigned mask, unsigned add) {
    const unsigned lane = rocm_perf_host::lane_of_thread();
    const unsigned below = lane < 32 ? 0u : ((lane - 32 >= 32) ? ~0u : ((1u << (lane - 32)) - 1u));
    return add + static_cast<unsigned>(__builtin_popcount(mask & below));
}
