// The math overloads HIP's device headers declare beyond <cmath> (math_overloads.h), in kernels,
// each checked against plain C++: mixed-signedness min/max (types and values), classification
// functions called unqualified, integer powers, Bessel functions, dot products, lane counts.
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdio>
#include <type_traits>

// The return types HIP's device headers give (and CUDA's): the unsigned type of a mixed pair.
static_assert(std::is_same<decltype(min(1, 2u)), unsigned>::value, "min(int, unsigned)");
static_assert(std::is_same<decltype(max(2u, 1)), unsigned>::value, "max(unsigned, int)");
static_assert(std::is_same<decltype(min(1LL, 2ULL)), unsigned long long>::value, "min(ll, ull)");
static_assert(std::is_same<decltype(min(1L, 2UL)), unsigned long>::value, "min(long, unsigned long)");
static_assert(std::is_same<decltype(min(1L, 2L)), long>::value, "min(long, long)");
static_assert(std::is_same<decltype(min(1.0f, 2.0)), double>::value, "min(float, double)");
static_assert(std::is_same<decltype(min(1, size_t(2))), size_t>::value, "min(int, size_t): the common type");
static_assert(std::is_same<decltype(min(1, 2)), int>::value, "min(int, int)");
static_assert(std::is_same<decltype(min(1.0f, 2.0f)), float>::value, "min(float, float)");
static_assert(std::is_same<decltype(sinh(1.0f)), float>::value, "sinh(float)");

__global__ void overloads(const int* in, unsigned n, unsigned long long* out, float* fout) {
    const int i = threadIdx.x;
    const int v = in[i];  // -3 .. 4
    out[i] = min(v, n);   // unsigned comparison: a negative v is huge
    out[64 + i] = max(n, v);
    out[128 + i] = min(static_cast<long long>(v), 3ULL);
    out[192 + i] = min(v, static_cast<size_t>(2));
    out[256 + i] = __mbcnt_hi(~0u, __mbcnt_lo(~0u, 0));  // the lane id
    out[320 + i] = llmin(v, -1) + ullmax(static_cast<unsigned>(i), 7u);
    const float x = v * 0.5f;
    fout[i] = (isnan(x) ? 1 : 0) + (isinf(x / 0.0f) ? 2 : 0) + (isfinite(x) ? 4 : 0) + (signbit(x) ? 8 : 0);
    fout[64 + i] = powif(1.5f, v) + static_cast<float>(powi(2.0, v));
    fout[128 + i] = cyl_bessel_i0f(x) + cyl_bessel_i1f(x);
    fout[192 + i] = static_cast<float>(amd_mixed_dot(make_char4(v, 2, -1, 3), make_char4(1, v, 4, -2), 10, false));
    fout[256 + i] = min(x, 1.0) + max(0.25, x);
}

int main() {
    const int lanes = 64;
    int host_in[lanes];
    for (int i = 0; i < lanes; ++i) host_in[i] = i % 8 - 3;
    int* in;
    unsigned long long* out;
    float* fout;
    hipMalloc(&in, sizeof host_in);
    hipMalloc(&out, 384 * sizeof(unsigned long long));
    hipMalloc(&fout, 320 * sizeof(float));
    hipMemcpy(in, host_in, sizeof host_in, hipMemcpyHostToDevice);
    overloads<<<1, lanes>>>(in, 2u, out, fout);
    unsigned long long got[384];
    float fgot[320];
    hipMemcpy(got, out, sizeof got, hipMemcpyDeviceToHost);
    hipMemcpy(fgot, fout, sizeof fgot, hipMemcpyDeviceToHost);
    int bad = 0;
    auto check = [&](bool ok, const char* what, int i) {
        if (!ok && bad++ < 10) std::printf("mismatch: %s at lane %d\n", what, i);
    };
    for (int i = 0; i < lanes; ++i) {
        const int v = host_in[i];
        const unsigned uv = static_cast<unsigned>(v);
        check(got[i] == (uv < 2u ? uv : 2u), "min(int, unsigned)", i);
        check(got[64 + i] == (uv > 2u ? uv : 2u), "max(unsigned, int)", i);
        const unsigned long long lv = static_cast<unsigned long long>(static_cast<long long>(v));
        check(got[128 + i] == (lv < 3ULL ? lv : 3ULL), "min(ll, ull)", i);
        const size_t sv = static_cast<size_t>(v);
        check(got[192 + i] == (sv < 2 ? sv : 2), "min(int, size_t)", i);
        check(got[256 + i] == static_cast<unsigned long long>(i), "__mbcnt lane id", i);
        check(got[320 + i] == static_cast<unsigned long long>((v < -1 ? v : -1) + (i > 7 ? i : 7)), "llmin + ullmax", i);
        const float x = v * 0.5f;
        check(fgot[i] == static_cast<float>(4 + (std::signbit(x) ? 8 : 0) + (x != 0 ? 2 : 0)), "classification", i);  // 0/0 is NaN
        check(std::fabs(fgot[64 + i] - static_cast<float>(std::pow(1.5, v) + std::pow(2.0, v))) < 1e-5f, "powif/powi", i);
        const double bessel = std::cyl_bessel_i(0.0, std::fabs(double(x))) +
                              (x < 0 ? -std::cyl_bessel_i(1.0, -double(x)) : std::cyl_bessel_i(1.0, double(x)));
        check(std::fabs(fgot[128 + i] - bessel) < 1e-5, "cyl_bessel_i0f + i1f", i);
        check(fgot[192 + i] == static_cast<float>(10 + v * 1 + 2 * v + (-1) * 4 + 3 * (-2)), "amd_mixed_dot(char4)", i);
        check(fgot[256 + i] == static_cast<float>(std::fmin(double(x), 1.0) + std::fmax(0.25, double(x))), "min/max(float, double)", i);
    }
    if (bad) {
        std::printf("math overloads: %d mismatches\n", bad);
        return 1;
    }
    std::printf("math overloads: all match\n");
    return 0;
}
