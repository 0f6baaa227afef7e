// HIP's complex numbers on the host backend: hipFloatComplex is float2 and hipDoubleComplex is
// double2, as on AMD (hip/amd_detail/amd_hip_complex.h), with HIP's functions on them:
// make_*, real and imaginary parts, conjugate, + - * /, magnitude, fma, conversions.
#pragma once

#include <cmath>

typedef float2 hipFloatComplex;
typedef double2 hipDoubleComplex;
typedef hipFloatComplex hipComplex;

inline hipFloatComplex make_hipFloatComplex(float re, float im) { return hipFloatComplex(re, im); }
inline hipDoubleComplex make_hipDoubleComplex(double re, double im) { return hipDoubleComplex(re, im); }
inline hipComplex make_hipComplex(float re, float im) { return hipComplex(re, im); }
inline float hipCrealf(hipFloatComplex z) { return z.x; }
inline float hipCimagf(hipFloatComplex z) { return z.y; }
inline double hipCreal(hipDoubleComplex z) { return z.x; }
inline double hipCimag(hipDoubleComplex z) { return z.y; }
inline hipFloatComplex hipConjf(hipFloatComplex z) { return hipFloatComplex(z.x, -z.y); }
inline hipDoubleComplex hipConj(hipDoubleComplex z) { return hipDoubleComplex(z.x, -z.y); }
inline hipFloatComplex hipCaddf(hipFloatComplex a, hipFloatComplex b) { return hipFloatComplex(a.x + b.x, a.y + b.y); }
inline hipDoubleComplex hipCadd(hipDoubleComplex a, hipDoubleComplex b) { return hipDoubleComplex(a.x + b.x, a.y + b.y); }
inline hipFloatComplex hipCsubf(hipFloatComplex a, hipFloatComplex b) { return hipFloatComplex(a.x - b.x, a.y - b.y); }
inline hipDoubleComplex hipCsub(hipDoubleComplex a, hipDoubleComplex b) { return hipDoubleComplex(a.x - b.x, a.y - b.y); }
inline hipFloatComplex hipCmulf(hipFloatComplex a, hipFloatComplex b) {
    return hipFloatComplex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
inline hipDoubleComplex hipCmul(hipDoubleComplex a, hipDoubleComplex b) {
    return hipDoubleComplex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
inline hipFloatComplex hipCdivf(hipFloatComplex a, hipFloatComplex b) {
    const float d = b.x * b.x + b.y * b.y;
    return hipFloatComplex((a.x * b.x + a.y * b.y) / d, (a.y * b.x - a.x * b.y) / d);
}
inline hipDoubleComplex hipCdiv(hipDoubleComplex a, hipDoubleComplex b) {
    const double d = b.x * b.x + b.y * b.y;
    return hipDoubleComplex((a.x * b.x + a.y * b.y) / d, (a.y * b.x - a.x * b.y) / d);
}
inline float hipCabsf(hipFloatComplex z) { return std::hypot(z.x, z.y); }
inline double hipCabs(hipDoubleComplex z) { return std::hypot(z.x, z.y); }
inline float hipCsqabsf(hipFloatComplex z) { return z.x * z.x + z.y * z.y; }
inline double hipCsqabs(hipDoubleComplex z) { return z.x * z.x + z.y * z.y; }
inline hipFloatComplex hipCfmaf(hipFloatComplex p, hipFloatComplex q, hipFloatComplex r) {
    return hipCaddf(hipCmulf(p, q), r);
}
inline hipDoubleComplex hipCfma(hipDoubleComplex p, hipDoubleComplex q, hipDoubleComplex r) {
    return hipCadd(hipCmul(p, q), r);
}
inline hipDoubleComplex hipComplexFloatToDouble(hipFloatComplex z) { return hipDoubleComplex(z.x, z.y); }
inline hipFloatComplex hipComplexDoubleToFloat(hipDoubleComplex z) {
    return hipFloatComplex(static_cast<float>(z.x), static_cast<float>(z.y));
}
