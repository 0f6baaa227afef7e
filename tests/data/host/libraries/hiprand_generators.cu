// hipRAND's host and device APIs, checked against plain C++: Philox4x32-10 against Random123's
// known answer (counter 0, key 0) and a plain implementation; XORWOW and MRG32k3a engine 0
// against their recurrences with rocRAND's seeding; the host layout (output e from engine e, on
// subsequence e) against the device API's states; skipahead against stepping; distributions.
#include <hip/hip_runtime.h>
#include <hiprand/hiprand.h>
#include <hiprand/hiprand_kernel.h>

#include <cmath>
#include <cstdio>
#include <vector>

static int failures = 0;
#define CHECK(cond, what)                                            \
    do {                                                             \
        if (!(cond)) {                                               \
            std::printf("mismatch: %s (line %d)\n", what, __LINE__); \
            ++failures;                                              \
        }                                                            \
    } while (0)

// ---- plain references -------------------------------------------------------------------------
static void philox_block(unsigned c[4], unsigned k0, unsigned k1) {  // Random123's Philox4x32-10
    for (int r = 0; r < 10; ++r) {
        const unsigned long long p0 = 0xD2511F53ull * c[0], p1 = 0xCD9E8D57ull * c[2];
        const unsigned n0 = unsigned(p1 >> 32) ^ c[1] ^ k0, n1 = unsigned(p1), n2 = unsigned(p0 >> 32) ^ c[3] ^ k1,
                       n3 = unsigned(p0);
        c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
}
struct PlainXorwow {  // Marsaglia's xorwow, seeded as rocRAND seeds it
    unsigned x[5] = {123456789u, 362436069u, 521288629u, 88675123u, 5783321u}, d = 6615241u;
    explicit PlainXorwow(unsigned long long seed) {
        const unsigned t0 = 1228688033u * (unsigned(seed) ^ 0x2c7f967fu), t1 = 2073658381u * (unsigned(seed >> 32) ^ 0xa03697cbu);
        x[0] += t0, x[1] ^= t0, x[2] += t1, x[3] ^= t1, x[4] += t0, d += t1 + t0;
    }
    unsigned next() {
        const unsigned t = x[0] ^ (x[0] >> 2);
        x[0] = x[1], x[1] = x[2], x[2] = x[3], x[3] = x[4];
        x[4] = (x[4] ^ (x[4] << 4)) ^ (t ^ (t << 1));
        return (d += 362437u) + x[4];
    }
};
struct PlainMrg {  // L'Ecuyer's MRG32k3a
    long long s1[3], s2[3];
    explicit PlainMrg(unsigned long long seed) {
        const unsigned long long m1 = 4294967087ull, m2 = 4294944443ull;
        const unsigned x = unsigned(seed) ^ 0x55555555u, y = unsigned((seed >> 32) ^ 0xAAAAAAAAull);
        s1[0] = (unsigned __int128)x * seed % m1, s1[1] = (unsigned __int128)y * seed % m1, s1[2] = s1[0];
        s2[0] = (unsigned __int128)y * seed % m2, s2[1] = (unsigned __int128)x * seed % m2, s2[2] = s2[0];
    }
    unsigned next() {
        const long long m1 = 4294967087ll, m2 = 4294944443ll;
        long long p1 = (1403580ll * s1[1] - 810728ll * s1[0]) % m1;
        if (p1 < 0) p1 += m1;
        s1[0] = s1[1], s1[1] = s1[2], s1[2] = p1;
        long long p2 = (527612ll * s2[2] - 1370589ll * s2[0]) % m2;
        if (p2 < 0) p2 += m2;
        s2[0] = s2[1], s2[1] = s2[2], s2[2] = p2;
        return unsigned(p1 > p2 ? p1 - p2 : p1 - p2 + m1);
    }
};

__global__ void device_draws(unsigned long long seed, float* out, unsigned* skipped, unsigned* stepped) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    hiprandState_t state;
    hiprand_init(seed, t, 0, &state);
    out[t] = hiprand_uniform(&state);
    if (t == 0) {
        hiprandState_t a = state, b = state;
        skipahead(5000ull, &a);
        for (int i = 0; i < 5000; ++i) hiprand(&b);
        *skipped = hiprand(&a);
        *stepped = hiprand(&b);
    }
}

template <class T>
std::vector<T> generated(hiprandGenerator_t g, size_t n, hiprandStatus_t (*f)(hiprandGenerator_t, T*, size_t)) {
    T* d;
    hipMalloc(&d, n * sizeof(T));
    f(g, d, n);
    std::vector<T> h(n);
    hipMemcpy(h.data(), d, n * sizeof(T), hipMemcpyDeviceToHost);
    hipFree(d);
    return h;
}

int main() {
    // Philox: seed 0 is key 0, the stream starts at counter 0: Random123's known answer
    hiprandGenerator_t philox;
    hiprandCreateGenerator(&philox, HIPRAND_RNG_PSEUDO_PHILOX4_32_10);
    const auto first = generated<unsigned>(philox, 10, hiprandGenerate);
    CHECK(first[0] == 0x6627e8d5u && first[1] == 0xe169c58du && first[2] == 0xbc57ac4cu && first[3] == 0x9b00dbd8u,
          "Philox4x32-10 known answer (counter 0, key 0)");
    const auto second = generated<unsigned>(philox, 10, hiprandGenerate);  // continues at number 10
    unsigned c[4] = {2, 0, 0, 0};
    philox_block(c, 0, 0);
    CHECK(second[0] == c[2] && second[1] == c[3], "Philox stream continues across calls");
    hiprandSetPseudoRandomGeneratorSeed(philox, 0x123456789abcdefull);
    const auto uniforms = generated<float>(philox, 8, hiprandGenerateUniform);
    unsigned u[4] = {1, 0, 0, 0};
    philox_block(u, 0x89abcdefu, 0x1234567u);
    CHECK(uniforms[4] == 2.3283064e-10f + float(u[0]) * 2.3283064e-10f, "Philox uniform: rocRAND's (0, 1] mapping");
    hiprandDestroyGenerator(philox);

    // XORWOW (the default): output e is engine e's first number; engine 0 is the plain recurrence
    hiprandGenerator_t xorwow;
    hiprandCreateGenerator(&xorwow, HIPRAND_RNG_PSEUDO_DEFAULT);
    hiprandSetPseudoRandomGeneratorSeed(xorwow, 1234);
    const size_t engines = 512 * 256;
    const auto xs = generated<unsigned>(xorwow, engines + 3, hiprandGenerate);
    PlainXorwow plain(1234);
    const unsigned p0 = plain.next(), p1 = plain.next();
    CHECK(xs[0] == p0 && xs[engines] == p1, "XORWOW engine 0 = the plain recurrence; output 131072 is its second number");
    hiprandDestroyGenerator(xorwow);
    // the device API's state of thread t (subsequence t) gives the host API's output t
    hiprandCreateGenerator(&xorwow, HIPRAND_RNG_PSEUDO_XORWOW);
    hiprandSetPseudoRandomGeneratorSeed(xorwow, 99);
    const auto hu = generated<float>(xorwow, 256, hiprandGenerateUniform);
    float* du;
    unsigned *skipped, *stepped;
    hipMalloc(&du, 256 * sizeof(float));
    hipMalloc(&skipped, sizeof(unsigned));
    hipMalloc(&stepped, sizeof(unsigned));
    device_draws<<<2, 128>>>(99, du, skipped, stepped);
    std::vector<float> dv(256);
    hipMemcpy(dv.data(), du, dv.size() * sizeof(float), hipMemcpyDeviceToHost);
    CHECK(dv == hu, "host layout (engine t on subsequence t) = device states hiprand_init(seed, t, 0)");
    unsigned sk = 0, st = 1;
    hipMemcpy(&sk, skipped, sizeof sk, hipMemcpyDeviceToHost);
    hipMemcpy(&st, stepped, sizeof st, hipMemcpyDeviceToHost);
    CHECK(sk == st, "skipahead(5000) = 5000 steps");
    // distributions over a million numbers
    const auto normals = generated<float>(xorwow, 1 << 20, [](hiprandGenerator_t g, float* d, size_t n) {
        return hiprandGenerateNormal(g, d, n, 2.0f, 3.0f);
    });
    double mean = 0, var = 0;
    for (float v : normals) mean += v;
    mean /= normals.size();
    for (float v : normals) var += (v - mean) * (v - mean);
    var /= normals.size();
    CHECK(std::fabs(mean - 2.0) < 0.02 && std::fabs(std::sqrt(var) - 3.0) < 0.02, "normal(2, 3): mean and stddev");
    const auto dbl = generated<double>(xorwow, 1 << 20, hiprandGenerateUniformDouble);
    double dmean = 0, dmin = 1, dmax = 0;
    for (double v : dbl) dmean += v, dmin = std::fmin(dmin, v), dmax = std::fmax(dmax, v);
    dmean /= dbl.size();
    CHECK(std::fabs(dmean - 0.5) < 0.002 && dmin > 0.0 && dmax <= 1.0, "uniform double in (0, 1]");
    hiprandDestroyGenerator(xorwow);

    // MRG32k3a: engine 0 is L'Ecuyer's recurrence with rocRAND's seeding
    hiprandGenerator_t mrg;
    hiprandCreateGenerator(&mrg, HIPRAND_RNG_PSEUDO_MRG32K3A);
    hiprandSetPseudoRandomGeneratorSeed(mrg, 5);
    const auto ms = generated<float>(mrg, engines + 1, hiprandGenerateUniform);
    PlainMrg pm(5);
    const unsigned m0 = pm.next(), m1 = pm.next();
    CHECK(ms[0] == float(m0 / 4294967088.0) && ms[engines] == float(m1 / 4294967088.0), "MRG32k3a engine 0");
    hiprandDestroyGenerator(mrg);

    // SOBOL32 in two dimensions: dimension by dimension, Gray-code order
    hiprandGenerator_t sobol;
    hiprandCreateGenerator(&sobol, HIPRAND_RNG_QUASI_DEFAULT);
    hiprandSetQuasiRandomGeneratorDimensions(sobol, 2);
    const auto q = generated<unsigned>(sobol, 8, hiprandGenerate);
    // dimension 1: 0, 1/2, 3/4, 1/4 (Gray code of 0..3); dimension 2: 0, 1/2, 1/4, 3/4
    CHECK(q[0] == 0u && q[1] == 0x80000000u && q[2] == 0xC0000000u && q[3] == 0x40000000u, "Sobol dimension 1");
    CHECK(q[4] == 0u && q[5] == 0x80000000u && q[6] == 0x40000000u && q[7] == 0xC0000000u, "Sobol dimension 2");
    hiprandDestroyGenerator(sobol);

    if (failures) {
        std::printf("hiprand: %d mismatches\n", failures);
        return 1;
    }
    std::printf("hiprand: all match\n");
    return 0;
}
