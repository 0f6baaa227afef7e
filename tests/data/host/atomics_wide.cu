// Atomics of every type HIP's headers offer, from many blocks at once (two block-pool threads
// in the test), checked against exact plain C++ results: 64-bit compare-and-swap loops (the
// classic atomic multiply on double), atomicAdd on double and unsigned long, atomicMax/Min on
// float and double, 64-bit bit operations, atomicInc/Dec wrap-around, the _system and _block
// scopes, and clang's __hip_atomic builtins.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <vector>

static int failures = 0;
#define EXPECT(cond, ...)                                  \
    do {                                                   \
        if (!(cond)) {                                     \
            if (failures++ < 10) std::printf(__VA_ARGS__); \
        }                                                  \
    } while (0)

struct Totals {
    double product;
    double dsum;
    unsigned long usum;
    float fmax;
    float fmin;
    double dmax;
    unsigned long long bits_or;
    unsigned long long bits_and;
    unsigned long long bits_xor;
    unsigned inc;
    unsigned dec;
    int scoped;
    unsigned long long builtin;
    float fexch_seen;
};

__device__ double atomic_multiply(double* address, double factor) {
    auto* bits = reinterpret_cast<unsigned long long*>(address);
    unsigned long long seen = *bits, assumed;
    do {
        assumed = seen;
        seen = atomicCAS(bits, assumed, __double_as_longlong(__longlong_as_double(assumed) * factor));
    } while (assumed != seen);
    return __longlong_as_double(seen);
}

__global__ void hammer(const float* values, int n, Totals* t) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = values[i];
    if (i % 64 == 0) atomic_multiply(&t->product, 1.5);  // exact: powers of 1.5 stay exact for few factors
    atomicAdd(&t->dsum, static_cast<double>(v));
    atomicAdd(&t->usum, static_cast<unsigned long>(i));
    atomicMax(&t->fmax, v);
    atomicMin(&t->fmin, v);
    atomicMax(&t->dmax, static_cast<double>(v) * 2.0);
    atomicOr(&t->bits_or, 1ull << (i % 64));
    atomicAnd(&t->bits_and, ~(1ull << (i % 61)));
    atomicXor(&t->bits_xor, static_cast<unsigned long long>(i) * 0x9e3779b97f4a7c15ull);
    atomicInc(&t->inc, 99u);   // counts 0..99 and wraps
    atomicDec(&t->dec, 99u);
    atomicAdd_system(&t->scoped, 1);
    atomicSub_block(&t->scoped, 2);
    __hip_atomic_fetch_add(&t->builtin, 3ull, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
    atomicExch(&t->fexch_seen, v);
}

int main() {
    const int n = 20000;
    std::vector<float> values(n);
    for (int i = 0; i < n; ++i) values[i] = static_cast<float>((i * 7919) % 10007) * 0.25f - 1000.0f;
    float* dv;
    Totals* dt;
    hipMalloc(&dv, n * sizeof(float));
    hipMalloc(&dt, sizeof(Totals));
    hipMemcpy(dv, values.data(), n * sizeof(float), hipMemcpyHostToDevice);
    Totals init{};
    init.product = 1.0;
    init.fmax = -1e30f;
    init.fmin = 1e30f;
    init.dmax = -1e300;
    init.bits_and = ~0ull;
    init.dec = 0;
    hipMemcpy(dt, &init, sizeof init, hipMemcpyHostToDevice);
    hammer<<<(n + 127) / 128, 128>>>(dv, n, dt);
    Totals t;
    hipMemcpy(&t, dt, sizeof t, hipMemcpyDeviceToHost);

    double product = 1.0, dsum = 0;
    unsigned long usum = 0;
    float fmax = -1e30f, fmin = 1e30f;
    unsigned long long bits_or = 0, bits_and = ~0ull, bits_xor = 0;
    unsigned inc = 0, dec = 0;
    for (int i = 0; i < n; ++i) {
        if (i % 64 == 0) product *= 1.5;
        dsum += values[i];  // exact: quarter-integers far below 2^53
        usum += static_cast<unsigned long>(i);
        fmax = std::max(fmax, values[i]);
        fmin = std::min(fmin, values[i]);
        bits_or |= 1ull << (i % 64);
        bits_and &= ~(1ull << (i % 61));
        bits_xor ^= static_cast<unsigned long long>(i) * 0x9e3779b97f4a7c15ull;
        inc = inc >= 99u ? 0u : inc + 1;
        dec = (dec == 0 || dec > 99u) ? 99u : dec - 1;
    }
    EXPECT(t.product == product, "CAS multiply: %.17g vs %.17g\n", t.product, product);
    EXPECT(t.dsum == dsum, "atomicAdd double: %.17g vs %.17g\n", t.dsum, dsum);
    EXPECT(t.usum == usum, "atomicAdd unsigned long: %lu vs %lu\n", t.usum, usum);
    EXPECT(t.fmax == fmax && t.fmin == fmin, "atomicMax/Min float: %g %g vs %g %g\n", t.fmax, t.fmin, fmax, fmin);
    EXPECT(t.dmax == 2.0 * fmax, "atomicMax double: %g\n", t.dmax);
    EXPECT(t.bits_or == bits_or && t.bits_and == bits_and && t.bits_xor == bits_xor, "64-bit and/or/xor\n");
    // Inc/Dec wrap after every 100 steps whatever the order, so the final value is the count mod 100.
    EXPECT(t.inc == inc && t.dec == dec, "atomicInc/Dec: %u %u vs %u %u\n", t.inc, t.dec, inc, dec);
    EXPECT(t.scoped == -n, "scoped atomics: %d\n", t.scoped);
    EXPECT(t.builtin == 3ull * n, "__hip_atomic_fetch_add: %llu\n", t.builtin);
    bool seen = false;
    for (float v : values) seen |= v == t.fexch_seen;
    EXPECT(seen, "atomicExch float left %g, which no thread wrote\n", t.fexch_seen);
    if (failures) {
        std::printf("wide atomics: %d mismatches\n", failures);
        return 1;
    }
    std::printf("wide atomics: all match\n");
    return 0;
}
