// Integer and math intrinsics in a kernel, each against a plain C++ computation of its
// definition: bit counts and scans, bit reversal, high halves of products, byte permutes,
// funnel shifts, AMD bit-field extract/insert, fast and correctly rounded float operations,
// rounding conversions and the extra math functions (sinpi, rnorm, erfinv, normcdfinv).
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

static int failures = 0;
#define EXPECT(cond, ...)                                  \
    do {                                                   \
        if (!(cond)) {                                     \
            if (failures++ < 10) std::printf(__VA_ARGS__); \
        }                                                  \
    } while (0)

constexpr int kInts = 16;
constexpr int kFloats = 12;

__global__ void intrinsics(const unsigned* a, const unsigned* b, unsigned long long* ints, float* floats, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned x = a[i], y = b[i];
    const unsigned long long wide = (static_cast<unsigned long long>(x) << 32) | y;
    unsigned long long* o = ints + i * kInts;
    o[0] = __popc(x);
    o[1] = __popcll(wide);
    o[2] = __clz(static_cast<int>(x));
    o[3] = __clzll(static_cast<long long>(wide));
    o[4] = __ffs(static_cast<int>(x));
    o[5] = __ffsll(static_cast<long long>(wide));
    o[6] = __brev(x);
    o[7] = __brevll(wide);
    o[8] = __umulhi(x, y);
    o[9] = __umul64hi(wide, wide ^ 0x9e3779b97f4a7c15ull);
    o[10] = static_cast<unsigned>(__mulhi(static_cast<int>(x), static_cast<int>(y)));
    o[11] = __byte_perm(x, y, 0x5140u + (i % 8));
    o[12] = __funnelshift_l(x, y, i % 40);
    o[13] = __funnelshift_r(x, y, i % 40);
    o[14] = __bitextract_u32(x, i % 32, (i * 7) % 32);
    o[15] = __bitinsert_u32(x, y, i % 32, (i * 5) % 32);
    float* f = floats + i * kFloats;
    const float p = static_cast<float>(x % 10000) / 100.0f + 0.01f, q = static_cast<float>(y % 977) / 50.0f + 1.0f;
    f[0] = __fdividef(p, q);
    f[1] = rsqrtf(q);
    f[2] = __fmaf_rn(p, q, -p);
    f[3] = __expf(-p / 20.0f);
    f[4] = __saturatef(p / 50.0f - 0.5f);
    f[5] = static_cast<float>(__float2int_rn(p * 1.5f));
    f[6] = static_cast<float>(__float2int_rd(-p));
    f[7] = sinpif(p);
    f[8] = rnorm3df(p, q, 1.0f);
    f[9] = erfinvf(p / 101.0f - 0.5f);
    f[10] = normcdfinvf(q / 22.0f);
    f[11] = __fadd_rz(p, q);
}

unsigned brev32(unsigned v) {
    unsigned r = 0;
    for (int k = 0; k < 32; ++k) r |= ((v >> k) & 1u) << (31 - k);
    return r;
}

int main() {
    const int n = 4000;
    std::vector<unsigned> a(n), b(n);
    unsigned s = 2463534242u;
    for (int i = 0; i < n; ++i) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        a[i] = i % 50 == 0 ? 0u : s;
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        b[i] = i % 77 == 0 ? 0u : s;
    }
    unsigned *da, *db;
    unsigned long long* dints;
    float* dfloats;
    hipMalloc(&da, n * 4);
    hipMalloc(&db, n * 4);
    hipMalloc(&dints, n * kInts * 8);
    hipMalloc(&dfloats, n * kFloats * 4);
    hipMemcpy(da, a.data(), n * 4, hipMemcpyHostToDevice);
    hipMemcpy(db, b.data(), n * 4, hipMemcpyHostToDevice);
    intrinsics<<<(n + 255) / 256, 256>>>(da, db, dints, dfloats, n);
    std::vector<unsigned long long> ints(n * kInts);
    std::vector<float> floats(n * kFloats);
    hipMemcpy(ints.data(), dints, ints.size() * 8, hipMemcpyDeviceToHost);
    hipMemcpy(floats.data(), dfloats, floats.size() * 4, hipMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) {
        const unsigned x = a[i], y = b[i];
        const unsigned long long wide = (static_cast<unsigned long long>(x) << 32) | y;
        unsigned long long want[kInts];
        int pop = 0, popw = 0, clz = 32, clzw = 64, ffs = 0, ffsw = 0;
        for (int k = 0; k < 32; ++k) pop += (x >> k) & 1;
        for (int k = 0; k < 64; ++k) popw += (wide >> k) & 1;
        for (int k = 31; k >= 0; --k)
            if ((x >> k) & 1) { clz = 31 - k; break; }
        for (int k = 63; k >= 0; --k)
            if ((wide >> k) & 1) { clzw = 63 - k; break; }
        for (int k = 0; k < 32; ++k)
            if ((x >> k) & 1) { ffs = k + 1; break; }
        for (int k = 0; k < 64; ++k)
            if ((wide >> k) & 1) { ffsw = k + 1; break; }
        const unsigned long long other = wide ^ 0x9e3779b97f4a7c15ull;
        // 64x64 high half from 32-bit pieces
        const unsigned long long al = wide & 0xffffffffull, ah = wide >> 32, bl = other & 0xffffffffull, bh = other >> 32;
        const unsigned long long mid = (al * bl >> 32) + (ah * bl & 0xffffffffull) + (al * bh & 0xffffffffull);
        const unsigned long long hi = ah * bh + (ah * bl >> 32) + (al * bh >> 32) + (mid >> 32);
        const unsigned selector = 0x5140u + (i % 8);
        unsigned perm = 0;
        for (int k = 0; k < 4; ++k) {
            const unsigned sel = (selector >> (4 * k)) & 7u;
            const unsigned byte = sel < 4 ? (x >> (8 * sel)) & 0xffu : (y >> (8 * (sel - 4))) & 0xffu;
            perm |= byte << (8 * k);
        }
        const unsigned shift = (i % 40) & 31u;
        const unsigned long long joined = (static_cast<unsigned long long>(y) << 32) | x;
        const unsigned off = i % 32, width = (i * 7) % 32, iwidth = (i * 5) % 32;
        unsigned extract = 0;
        for (unsigned k = 0; k < width && off + k < 32; ++k) extract |= ((x >> (off + k)) & 1u) << k;
        unsigned insert = x;
        for (unsigned k = 0; k < iwidth && off + k < 32; ++k) {
            insert &= ~(1u << (off + k));
            insert |= ((y >> k) & 1u) << (off + k);
        }
        want[0] = pop, want[1] = popw, want[2] = clz, want[3] = clzw, want[4] = ffs, want[5] = ffsw;
        want[6] = brev32(x);
        want[7] = (static_cast<unsigned long long>(brev32(y)) << 32) | brev32(x);
        want[8] = (static_cast<unsigned long long>(x) * y) >> 32;
        want[9] = hi;
        want[10] = static_cast<unsigned>(static_cast<long long>(static_cast<int>(x)) * static_cast<int>(y) >> 32);
        want[11] = perm;
        want[12] = static_cast<unsigned>((joined << shift) >> 32);
        want[13] = static_cast<unsigned>(joined >> shift);
        want[14] = extract;
        want[15] = insert;
        for (int k = 0; k < kInts; ++k)
            EXPECT(ints[i * kInts + k] == want[k], "int intrinsic %d at %d: %llx vs %llx\n", k, i, ints[i * kInts + k], want[k]);

        const float p = static_cast<float>(x % 10000) / 100.0f + 0.01f, q = static_cast<float>(y % 977) / 50.0f + 1.0f;
        const float* f = &floats[i * kFloats];
        EXPECT(std::fabs(f[0] - p / q) <= 2e-6f * std::fabs(p / q), "fdividef at %d\n", i);
        EXPECT(std::fabs(f[1] - 1.0f / std::sqrt(q)) <= 1e-6f, "rsqrtf at %d\n", i);
        EXPECT(f[2] == std::fma(p, q, -p), "fmaf_rn at %d\n", i);
        EXPECT(std::fabs(f[3] - std::exp(-p / 20.0f)) <= 1e-6f, "expf at %d\n", i);
        EXPECT(f[4] == std::fmin(std::fmax(p / 50.0f - 0.5f, 0.0f), 1.0f), "saturatef at %d\n", i);
        EXPECT(f[5] == std::nearbyint(p * 1.5f), "float2int_rn at %d\n", i);
        EXPECT(f[6] == std::floor(-p), "float2int_rd at %d\n", i);
        const double pd = p;
        EXPECT(std::fabs(f[7] - std::sin(3.14159265358979323846 * (pd - 2.0 * std::round(pd / 2.0)))) <= 2e-6, "sinpif at %d\n", i);
        EXPECT(std::fabs(f[8] - 1.0 / std::sqrt(pd * pd + double(q) * q + 1.0)) <= 1e-6, "rnorm3df at %d\n", i);
        const double e = p / 101.0f - 0.5f;
        EXPECT(std::fabs(std::erf(double(f[9])) - e) <= 1e-6, "erfinvf at %d: erf(%g) vs %g\n", i, f[9], e);
        const double c = q / 22.0f;
        EXPECT(std::fabs(0.5 * std::erfc(-double(f[10]) / std::sqrt(2.0)) - c) <= 1e-6, "normcdfinvf at %d\n", i);
        const float rz = f[11], rn = p + q;
        EXPECT(rz == rn || (rz < rn && std::nextafter(rz, 1e30f) == rn), "fadd_rz at %d\n", i);
        EXPECT(std::fabs(double(rz)) <= std::fabs(double(p) + double(q)), "fadd_rz rounds toward zero at %d\n", i);
    }
    if (failures) {
        std::printf("math intrinsics: %d mismatches\n", failures);
        return 1;
    }
    std::printf("math intrinsics: all match\n");
    return 0;
}
