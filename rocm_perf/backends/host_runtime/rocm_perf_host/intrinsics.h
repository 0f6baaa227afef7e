// The device intrinsics HIP programs call beyond <cmath>: integer and bit operations (AMD's
// bit-field extract/insert included), conversions with an explicit rounding, float and double
// arithmetic with a directed rounding, and the extra math functions of HIP's math API
// (sinpi, norm, rnorm, erfinv, normcdfinv, ...).
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>

// ---- integer and bit operations ---------------------------------------------------------------
inline unsigned long long __brevll(unsigned long long v) {
    return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(v))) << 32) | __brev(static_cast<unsigned>(v >> 32));
}
inline int __ffs(unsigned v) { return __builtin_ffs(static_cast<int>(v)); }
inline int __ffsll(unsigned long long v) { return __builtin_ffsll(static_cast<long long>(v)); }
inline int __popc(int v) { return __builtin_popcount(static_cast<unsigned>(v)); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline long long __mul64hi(long long a, long long b) { return static_cast<long long>((static_cast<__int128>(a) * b) >> 64); }
inline unsigned __sad(int a, int b, unsigned c) { return c + static_cast<unsigned>(a > b ? a - b : b - a); }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return c + (a > b ? a - b : b - a); }
inline int __hadd(int a, int b) { return static_cast<int>((static_cast<long long>(a) + b) >> 1); }
inline int __rhadd(int a, int b) { return static_cast<int>((static_cast<long long>(a) + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) {
    return static_cast<unsigned>((static_cast<unsigned long long>(a) + b + 1) >> 1);
}
// Byte `s` of each result byte selects from the 8 bytes of (y:x), as CUDA/HIP define it.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long both = (static_cast<unsigned long long>(y) << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((both >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
    return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>((both << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>((both << (shift > 32 ? 32 : shift)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>(both >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
    return static_cast<unsigned>(both >> (shift > 32 ? 32 : shift));
}
// AMD bit-field extract/insert (v_bfe_u32, v_bfi): offset and width taken modulo the word size.
inline unsigned __bitextract_u32(unsigned src, unsigned offset, unsigned width) {
    offset &= 31u;
    width &= 31u;
    return width == 0 ? 0u : (src >> offset) & ((1u << width) - 1u);
}
inline unsigned long long __bitextract_u64(unsigned long long src, unsigned offset, unsigned width) {
    offset &= 63u;
    width &= 63u;
    return width == 0 ? 0ull : (src >> offset) & ((1ull << width) - 1ull);
}
inline unsigned __bitinsert_u32(unsigned src, unsigned insert, unsigned offset, unsigned width) {
    offset &= 31u;
    width &= 31u;
    const unsigned mask = width == 0 ? 0u : ((1u << width) - 1u) << offset;
    return (src & ~mask) | ((insert << offset) & mask);
}
inline unsigned long long __bitinsert_u64(unsigned long long src, unsigned long long insert, unsigned offset,
                                          unsigned width) {
    offset &= 63u;
    width &= 63u;
    const unsigned long long mask = width == 0 ? 0ull : ((1ull << width) - 1ull) << offset;
    return (src & ~mask) | ((insert << offset) & mask);
}

// ---- directed rounding ----------------------------------------------------------------------
namespace rocm_perf_host {
// Runs `op` under a rounding mode; the operands go through volatile so that the compiler can
// neither fold the operation nor move it out of the mode's scope.
template <class T, class Op>
inline T with_rounding(int mode, T a, T b, T c, Op op) {
    const int saved = std::fegetround();
    std::fesetround(mode);
    volatile T va = a, vb = b, vc = c;
    volatile T r = op(T(va), T(vb), T(vc));
    std::fesetround(saved);
    return r;
}
}  // namespace rocm_perf_host

#define ROCM_PERF_ROUNDED(T, PREFIX, SUFFIX, MODE)                                                               \
    inline T PREFIX##add##SUFFIX(T a, T b) {                                                                     \
        return rocm_perf_host::with_rounding<T>(MODE, a, b, T(0), [](T x, T y, T) { return x + y; });           \
    }                                                                                                            \
    inline T PREFIX##sub##SUFFIX(T a, T b) {                                                                     \
        return rocm_perf_host::with_rounding<T>(MODE, a, b, T(0), [](T x, T y, T) { return x - y; });           \
    }                                                                                                            \
    inline T PREFIX##mul##SUFFIX(T a, T b) {                                                                     \
        return rocm_perf_host::with_rounding<T>(MODE, a, b, T(0), [](T x, T y, T) { return x * y; });           \
    }                                                                                                            \
    inline T PREFIX##div##SUFFIX(T a, T b) {                                                                     \
        return rocm_perf_host::with_rounding<T>(MODE, a, b, T(0), [](T x, T y, T) { return x / y; });           \
    }                                                                                                            \
    inline T PREFIX##rcp##SUFFIX(T a) {                                                                          \
        return rocm_perf_host::with_rounding<T>(MODE, a, T(0), T(0), [](T x, T, T) { return T(1) / x; });       \
    }                                                                                                            \
    inline T PREFIX##sqrt##SUFFIX(T a) {                                                                         \
        return rocm_perf_host::with_rounding<T>(MODE, a, T(0), T(0), [](T x, T, T) { return std::sqrt(x); });   \
    }
ROCM_PERF_ROUNDED(float, __f, _rz, FE_TOWARDZERO)
ROCM_PERF_ROUNDED(float, __f, _ru, FE_UPWARD)
ROCM_PERF_ROUNDED(float, __f, _rd, FE_DOWNWARD)
ROCM_PERF_ROUNDED(double, __d, _rz, FE_TOWARDZERO)
ROCM_PERF_ROUNDED(double, __d, _ru, FE_UPWARD)
ROCM_PERF_ROUNDED(double, __d, _rd, FE_DOWNWARD)
#undef ROCM_PERF_ROUNDED
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline float __fmaf_ieee_rn(float a, float b, float c) { return std::fma(a, b, c); }
#define ROCM_PERF_FMA_ROUNDED(T, NAME, MODE)                                                                  \
    inline T NAME(T a, T b, T c) {                                                                            \
        return rocm_perf_host::with_rounding<T>(MODE, a, b, c, [](T x, T y, T z) { return std::fma(x, y, z); }); \
    }
ROCM_PERF_FMA_ROUNDED(float, __fmaf_rz, FE_TOWARDZERO)
ROCM_PERF_FMA_ROUNDED(float, __fmaf_ru, FE_UPWARD)
ROCM_PERF_FMA_ROUNDED(float, __fmaf_rd, FE_DOWNWARD)
ROCM_PERF_FMA_ROUNDED(double, __fma_rz, FE_TOWARDZERO)
ROCM_PERF_FMA_ROUNDED(double, __fma_ru, FE_UPWARD)
ROCM_PERF_FMA_ROUNDED(double, __fma_rd, FE_DOWNWARD)
#undef ROCM_PERF_FMA_ROUNDED

// ---- conversions with a rounding --------------------------------------------------------------
namespace rocm_perf_host {
// Round `x` to an integer value: nearest-even, toward zero, down or up.
template <class F>
inline F round_as(F x, char mode) {
    switch (mode) {
        case 'n': return std::nearbyint(x);
        case 'z': return std::trunc(x);
        case 'd': return std::floor(x);
        default: return std::ceil(x);
    }
}
// A float or double to an integer type, saturating as AMD's conversions do (NaN gives 0).
template <class I, class F>
inline I to_integer(F x, char mode) {
    if (std::isnan(x)) return 0;
    const F r = round_as(x, mode);
    if (r <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (r >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return static_cast<I>(r);
}
// An integer or double to float (or an integer to double) under a rounding mode.
template <class F, class I>
inline F to_floating(I v, int mode) {
    const int saved = std::fegetround();
    std::fesetround(mode);
    volatile I in = v;
    volatile F out = static_cast<F>(in);
    std::fesetround(saved);
    return out;
}
}  // namespace rocm_perf_host

#define ROCM_PERF_TO_INT(F, FNAME, I, INAME)                                                               \
    inline I __##FNAME##2##INAME##_rn(F x) { return rocm_perf_host::to_integer<I>(x, 'n'); }               \
    inline I __##FNAME##2##INAME##_rz(F x) { return rocm_perf_host::to_integer<I>(x, 'z'); }               \
    inline I __##FNAME##2##INAME##_rd(F x) { return rocm_perf_host::to_integer<I>(x, 'd'); }               \
    inline I __##FNAME##2##INAME##_ru(F x) { return rocm_perf_host::to_integer<I>(x, 'u'); }
ROCM_PERF_TO_INT(float, float, unsigned, uint)
ROCM_PERF_TO_INT(float, float, long long, ll)
ROCM_PERF_TO_INT(float, float, unsigned long long, ull)
ROCM_PERF_TO_INT(double, double, int, int)
ROCM_PERF_TO_INT(double, double, unsigned, uint)
ROCM_PERF_TO_INT(double, double, long long, ll)
ROCM_PERF_TO_INT(double, double, unsigned long long, ull)
#undef ROCM_PERF_TO_INT

#define ROCM_PERF_TO_FLOAT(I, INAME, F, FNAME)                                                                  \
    inline F __##INAME##2##FNAME##_rn(I v) { return rocm_perf_host::to_floating<F>(v, FE_TONEAREST); }          \
    inline F __##INAME##2##FNAME##_rz(I v) { return rocm_perf_host::to_floating<F>(v, FE_TOWARDZERO); }         \
    inline F __##INAME##2##FNAME##_rd(I v) { return rocm_perf_host::to_floating<F>(v, FE_DOWNWARD); }           \
    inline F __##INAME##2##FNAME##_ru(I v) { return rocm_perf_host::to_floating<F>(v, FE_UPWARD); }
ROCM_PERF_TO_FLOAT(unsigned, uint, float, float)
ROCM_PERF_TO_FLOAT(long long, ll, float, float)
ROCM_PERF_TO_FLOAT(unsigned long long, ull, float, float)
ROCM_PERF_TO_FLOAT(long long, ll, double, double)
ROCM_PERF_TO_FLOAT(unsigned long long, ull, double, double)
ROCM_PERF_TO_FLOAT(double, double, float, float)
#undef ROCM_PERF_TO_FLOAT
inline float __int2float_rz(int v) { return rocm_perf_host::to_floating<float>(v, FE_TOWARDZERO); }
inline float __int2float_rd(int v) { return rocm_perf_host::to_floating<float>(v, FE_DOWNWARD); }
inline float __int2float_ru(int v) { return rocm_perf_host::to_floating<float>(v, FE_UPWARD); }
inline double __int2double_rn(int v) { return static_cast<double>(v); }
inline double __uint2double_rn(unsigned v) { return static_cast<double>(v); }
inline int __double2hiint(double d) { return static_cast<int>(__double_as_longlong(d) >> 32); }
inline int __double2loint(double d) { return static_cast<int>(static_cast<unsigned>(__double_as_longlong(d))); }
inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double(static_cast<long long>((static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) |
                                                       static_cast<unsigned>(lo)));
}

// ---- HIP's extra math functions ---------------------------------------------------------------
namespace rocm_perf_host {
constexpr double kPi = 3.14159265358979323846;

// sin(pi x) and cos(pi x) reduced exactly first, so that integers and halves come out exact.
inline double sin_pi(double x) {
    double r = std::remainder(x, 2.0);  // in [-1, 1]
    if (r == 0.0 || std::fabs(r) == 1.0) return std::copysign(0.0, x);  // IEEE 754 sinPi(n) = +-0
    return std::sin(kPi * r);
}
inline double cos_pi(double x) {
    double r = std::fabs(std::remainder(x, 2.0));  // in [0, 1]
    if (r == 0.5) return 0.0;
    return std::cos(kPi * r);
}

// erf^-1 by Newton's method on erf (or on erfc near +-1, where erf loses the digits).
inline double erf_inverse(double y) {
    if (std::isnan(y) || y < -1.0 || y > 1.0) return std::numeric_limits<double>::quiet_NaN();
    if (y == 1.0) return std::numeric_limits<double>::infinity();
    if (y == -1.0) return -std::numeric_limits<double>::infinity();
    if (y == 0.0) return y;
    const double a = std::fabs(y);
    double x = std::sqrt(-std::log((1.0 - a) * (1.0 + a)) * 0.5);  // a start within a few percent
    if (a < 0.5) x = a * std::sqrt(kPi) / 2.0;
    const double tail = 1.0 - a;
    for (int i = 0; i < 60; ++i) {
        const double slope = 2.0 / std::sqrt(kPi) * std::exp(-x * x);
        const double step = a > 0.5 ? -(std::erfc(x) - tail) / slope : (std::erf(x) - a) / slope;
        x -= step;
        if (std::fabs(step) <= 1e-16 * std::fabs(x)) break;
    }
    return std::copysign(x, y);
}
// erfc^-1 by Newton's method on erfc, accurate for tiny arguments too.
inline double erfc_inverse(double y) {
    if (std::isnan(y) || y < 0.0 || y > 2.0) return std::numeric_limits<double>::quiet_NaN();
    if (y == 0.0) return std::numeric_limits<double>::infinity();
    if (y == 2.0) return -std::numeric_limits<double>::infinity();
    if (y > 0.5) return erf_inverse(1.0 - y);
    double x = std::sqrt(-std::log(y));
    for (int i = 0; i < 60; ++i) {
        const double slope = -2.0 / std::sqrt(kPi) * std::exp(-x * x);
        const double step = (std::erfc(x) - y) / slope;
        x -= step;
        if (std::fabs(step) <= 1e-16 * std::fabs(x)) break;
    }
    return x;
}
}  // namespace rocm_perf_host

inline double sinpi(double x) { return rocm_perf_host::sin_pi(x); }
inline double cospi(double x) { return rocm_perf_host::cos_pi(x); }
inline float sinpif(float x) { return static_cast<float>(rocm_perf_host::sin_pi(x)); }
inline float cospif(float x) { return static_cast<float>(rocm_perf_host::cos_pi(x)); }
inline void sincospi(double x, double* s, double* c) { *s = sinpi(x), *c = cospi(x); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x), *c = cospif(x); }
inline float __sinpif(float x) { return sinpif(x); }
inline float rhypotf(float x, float y) { return 1.0f / std::hypot(x, y); }
inline double rhypot(double x, double y) { return 1.0 / std::hypot(x, y); }
inline float norm3df(float a, float b, float c) { return static_cast<float>(std::sqrt(double(a) * a + double(b) * b + double(c) * c)); }
inline float norm4df(float a, float b, float c, float d) {
    return static_cast<float>(std::sqrt(double(a) * a + double(b) * b + double(c) * c + double(d) * d));
}
inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
inline float rnorm4df(float a, float b, float c, float d) { return 1.0f / norm4df(a, b, c, d); }
inline double norm3d(double a, double b, double c) { return std::sqrt(a * a + b * b + c * c); }
inline double norm4d(double a, double b, double c, double d) { return std::sqrt(a * a + b * b + c * c + d * d); }
inline double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
inline double rnorm4d(double a, double b, double c, double d) { return 1.0 / norm4d(a, b, c, d); }
inline double norm(int n, const double* v) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += v[i] * v[i];
    return std::sqrt(s);
}
inline float normf(int n, const float* v) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += double(v[i]) * v[i];
    return static_cast<float>(std::sqrt(s));
}
inline double rnorm(int n, const double* v) { return 1.0 / norm(n, v); }
inline float rnormf(int n, const float* v) { return 1.0f / normf(n, v); }
inline double rcbrt(double x) { return 1.0 / std::cbrt(x); }
inline double erfinv(double y) { return rocm_perf_host::erf_inverse(y); }
inline float erfinvf(float y) { return static_cast<float>(rocm_perf_host::erf_inverse(y)); }
inline double erfcinv(double y) { return rocm_perf_host::erfc_inverse(y); }
inline float erfcinvf(float y) { return static_cast<float>(rocm_perf_host::erfc_inverse(y)); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
inline float normcdff(float x) { return static_cast<float>(normcdf(x)); }
inline double normcdfinv(double p) { return -std::sqrt(2.0) * rocm_perf_host::erfc_inverse(2.0 * p); }
inline float normcdfinvf(float p) { return static_cast<float>(normcdfinv(p)); }
inline double erfcx(double x) {
    // exp(x^2) erfc(x), without the overflow of the product for large x (asymptotic series).
    if (x < 25.0) return std::exp(x * x) * std::erfc(x);
    const double t = 1.0 / (2.0 * x * x);
    return (1.0 - t * (1.0 - 3.0 * t * (1.0 - 5.0 * t))) / (x * std::sqrt(rocm_perf_host::kPi));
}
inline float erfcxf(float x) { return static_cast<float>(erfcx(x)); }
inline float fdividef(float a, float b) { return a / b; }
inline float __exp2f(float x) { return std::exp2(x); }
inline double exp10(double x) { return std::pow(10.0, x); }
