// __half, __half2 and __hip_bfloat16 in kernels: conversions (every rounding), arithmetic,
// comparisons, math, shuffles and atomics, checked against plain C++: g++'s _Float16 for the
// half conversions (all 65536 halves and a sweep of floats), and float arithmetic rounded once
// for the rest.
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

static int failures = 0;
#define EXPECT(cond, ...)                                  \
    do {                                                   \
        if (!(cond)) {                                     \
            if (failures++ < 10) std::printf(__VA_ARGS__); \
        }                                                  \
    } while (0)

__global__ void convert(const float* in, unsigned short* halves, unsigned short* bf16s, float* back, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half h = __float2half(in[i]);
    halves[i] = __half_as_ushort(h);
    bf16s[i] = __bfloat16_as_ushort(__float2bfloat16(in[i]));
    back[i] = __half2float(h);
}

__global__ void arithmetic(const __half2* a, const __half2* b, __half2* sums, __half* fmas, int* flags, __half* total,
                           __hip_bfloat16* bsum, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    sums[i] = __hadd2(a[i], b[i]) * __float2half2_rn(2.0f);
    fmas[i] = __hfma(a[i].x, b[i].y, __low2half(a[i]));
    flags[i] = __hlt(a[i].x, b[i].x) + 2 * __hbeq2(a[i], a[i]) + 4 * __hisnan(a[i].y / __float2half(0.0f) - a[i].y / __float2half(0.0f));
    if (i < 1024) atomicAdd(total, __float2half(1.0f));  // exact in half up to 2048
    __hip_bfloat16 x = __float2bfloat16(__low2float(a[i]));
    __hip_bfloat16 y = __float2bfloat16(__high2float(b[i]));
    bsum[i] = __hadd(x, y) * __float2bfloat16(0.5f);
}

__global__ void shuffle_halves(__half* out) {
    __half v = __int2half_rn(threadIdx.x);
    out[threadIdx.x] = __shfl_xor(v, 1) + hsqrt(__float2half(4.0f));
}

float round_half(float f) { return static_cast<float>(static_cast<_Float16>(f)); }
unsigned short half_bits(float f) {
    _Float16 h = static_cast<_Float16>(f);
    unsigned short u;
    std::memcpy(&u, &h, 2);
    return u;
}
float bf16_round(float f) {  // nearest even on the top 16 bits, plain C++
    unsigned u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    float r;
    std::memcpy(&r, &u, 4);
    return r;
}

int main() {
    // Conversions: every half's float value, plus a sweep over the float range.
    std::vector<float> in;
    for (unsigned b = 0; b < 65536; ++b) {
        _Float16 h;
        unsigned short s = static_cast<unsigned short>(b);
        std::memcpy(&h, &s, 2);
        if (!std::isnan(static_cast<float>(h))) in.push_back(static_cast<float>(h));
    }
    unsigned seed = 12345;
    for (int i = 0; i < 200000; ++i) {
        seed = seed * 1664525u + 1013904223u;
        in.push_back(std::ldexp(static_cast<float>(seed >> 8) / 16777216.0f, static_cast<int>(seed % 60) - 30) *
                     (seed & 1 ? -1.0f : 1.0f));
    }
    in.push_back(65520.0f);      // rounds to infinity
    in.push_back(65519.99f);     // rounds to the largest half
    in.push_back(2.9802322e-8f); // half the smallest subnormal: ties to zero
    const int n = static_cast<int>(in.size());
    float *din, *dback;
    unsigned short *dh, *db;
    hipMalloc(&din, n * 4);
    hipMalloc(&dback, n * 4);
    hipMalloc(&dh, n * 2);
    hipMalloc(&db, n * 2);
    hipMemcpy(din, in.data(), n * 4, hipMemcpyHostToDevice);
    convert<<<(n + 255) / 256, 256>>>(din, dh, db, dback, n);
    std::vector<unsigned short> hh(n), hb(n);
    std::vector<float> back(n);
    hipMemcpy(hh.data(), dh, n * 2, hipMemcpyDeviceToHost);
    hipMemcpy(hb.data(), db, n * 2, hipMemcpyDeviceToHost);
    hipMemcpy(back.data(), dback, n * 4, hipMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) {
        EXPECT(hh[i] == half_bits(in[i]), "half of %a: %04x vs %04x\n", in[i], hh[i], half_bits(in[i]));
        EXPECT(back[i] == round_half(in[i]), "half back of %a\n", in[i]);
        unsigned short want_b;
        float r = bf16_round(in[i]);
        unsigned ru;
        std::memcpy(&ru, &r, 4);
        want_b = static_cast<unsigned short>(ru >> 16);
        EXPECT(hb[i] == want_b, "bfloat16 of %a: %04x vs %04x\n", in[i], hb[i], want_b);
    }

    // Arithmetic on pairs.
    const int m = 4096;
    std::vector<__half2> a(m), b(m);
    std::vector<float> af(2 * m), bf(2 * m);
    for (int i = 0; i < m; ++i) {
        af[2 * i] = round_half((i % 97) * 0.37f - 11.0f);
        af[2 * i + 1] = round_half((i % 89) * -0.21f + 3.0f);
        bf[2 * i] = round_half((i % 83) * 0.11f + 0.5f);
        bf[2 * i + 1] = round_half((i % 79) * 0.29f - 6.0f);
        a[i] = __floats2half2_rn(af[2 * i], af[2 * i + 1]);
        b[i] = __floats2half2_rn(bf[2 * i], bf[2 * i + 1]);
    }
    __half2 *da, *dbb, *dsum;
    __half *dfma, *dtotal;
    __hip_bfloat16* dbs;
    int* dflags;
    hipMalloc(&da, m * 4);
    hipMalloc(&dbb, m * 4);
    hipMalloc(&dsum, m * 4);
    hipMalloc(&dfma, m * 2);
    hipMalloc(&dtotal, 2);
    hipMalloc(&dbs, m * 2);
    hipMalloc(&dflags, m * 4);
    hipMemcpy(da, a.data(), m * 4, hipMemcpyHostToDevice);
    hipMemcpy(dbb, b.data(), m * 4, hipMemcpyHostToDevice);
    hipMemset(dtotal, 0, 2);
    arithmetic<<<m / 256, 256>>>(da, dbb, dsum, dfma, dflags, dtotal, dbs, m);
    std::vector<__half2> sums(m);
    std::vector<__half> fmas(m);
    std::vector<int> flags(m);
    std::vector<__hip_bfloat16> bs(m);
    __half total;
    hipMemcpy(sums.data(), dsum, m * 4, hipMemcpyDeviceToHost);
    hipMemcpy(fmas.data(), dfma, m * 2, hipMemcpyDeviceToHost);
    hipMemcpy(flags.data(), dflags, m * 4, hipMemcpyDeviceToHost);
    hipMemcpy(bs.data(), dbs, m * 2, hipMemcpyDeviceToHost);
    hipMemcpy(&total, dtotal, 2, hipMemcpyDeviceToHost);
    for (int i = 0; i < m; ++i) {
        const float sx = round_half(round_half(af[2 * i] + bf[2 * i]) * 2.0f);
        const float sy = round_half(round_half(af[2 * i + 1] + bf[2 * i + 1]) * 2.0f);
        EXPECT(__low2float(sums[i]) == sx && __high2float(sums[i]) == sy, "half2 sum %d\n", i);
        const float f = round_half(std::fma(af[2 * i], bf[2 * i + 1], af[2 * i]));
        EXPECT(__half2float(fmas[i]) == f, "hfma %d: %g vs %g\n", i, __half2float(fmas[i]), f);
        const int want = (af[2 * i] < bf[2 * i]) + 2 + 4;
        EXPECT(flags[i] == want, "half comparisons %d: %d vs %d\n", i, flags[i], want);
        const float bsum = bf16_round(bf16_round(bf16_round(af[2 * i]) + bf16_round(bf[2 * i + 1])) * 0.5f);
        EXPECT(__bfloat162float(bs[i]) == bsum, "bfloat16 arithmetic %d: %g vs %g\n", i, __bfloat162float(bs[i]), bsum);
    }
    EXPECT(__half2float(total) == 1024.0f, "atomicAdd on __half: %g\n", __half2float(total));

    __half* dsh;
    hipMalloc(&dsh, 64 * 2);
    shuffle_halves<<<1, 64>>>(dsh);
    std::vector<__half> sh(64);
    hipMemcpy(sh.data(), dsh, 64 * 2, hipMemcpyDeviceToHost);
    for (int t = 0; t < 64; ++t) EXPECT(__half2float(sh[t]) == float((t ^ 1) + 2), "half shuffle %d\n", t);

    // Directed roundings, on the host side of the same functions.
    EXPECT(__half_as_ushort(__float2half_rz(1.0009f)) == 0x3c00, "rz\n");
    EXPECT(__half_as_ushort(__float2half_ru(1.0001f)) == 0x3c01, "ru\n");
    EXPECT(__half_as_ushort(__float2half_rd(-1.0001f)) == 0xbc01, "rd\n");
    EXPECT(__half_as_ushort(__float2half_rz(1e6f)) == 0x7bff, "rz overflow\n");

    if (failures) {
        std::printf("half types: %d mismatches\n", failures);
        return 1;
    }
    std::printf("half types: all match (%d conversions)\n", n);
    return 0;
}
