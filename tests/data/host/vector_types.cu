// HIP vector types in kernels: make_*, components, element-wise and scalar arithmetic, integer
// bit operations, float3's packed layout, vector loads through float4/int4, checked against
// plain C++ arithmetic on the same numbers.
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

__global__ void float_math(const float4* a, const float4* b, float4* out, float3* out3, float2* out2, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 v = a[i] * b[i] + 2.0f;
    v -= make_float4(1.0f, 2.0f, 3.0f, 4.0f);
    v = 0.5f * v / b[i];
    out[i] = -v;
    float3 p = make_float3(a[i].x, a[i].y, a[i].z);
    p += float3(1.0f);
    out3[i] = p * p;
    out2[i] = make_float2(a[i].w, b[i].w) - float2(3.0f, 4.0f);
}

__global__ void int_math(const int4* a, int4* out, uint2* bits, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int4 v = a[i];
    v = (v * 3 + make_int4(1, 2, 3, 4)) % 1000;
    v = (v << 2) ^ (v >> 1);
    out[i] = v & ~make_int4(0xF, 0xF0, 0xF00, 0xF000);
    uint2 u = make_uint2(static_cast<unsigned>(a[i].x), static_cast<unsigned>(a[i].y));
    u |= uint2(0x80000000u);
    bits[i] = u;
}

int main() {
    static_assert(sizeof(float3) == 12 && sizeof(float4) == 16 && alignof(float4) == 16, "HIP vector layout");
    static_assert(sizeof(int4) == 16 && sizeof(uchar4) == 4 && sizeof(double2) == 16, "HIP vector layout");
    const int n = 1000;
    std::vector<float4> a(n), b(n);
    std::vector<int4> ia(n);
    for (int i = 0; i < n; ++i) {
        a[i] = make_float4(i * 0.5f, i * -0.25f, i + 1.0f, i * 2.0f);
        b[i] = make_float4(1.0f + i % 7, 2.0f + i % 5, 0.5f + i % 3, 4.0f);
        ia[i] = make_int4(i, -i, i * 7, i * 13 + 5);
    }
    float4 *da, *db, *dout;
    float3* d3;
    float2* d2;
    int4 *dia, *dio;
    uint2* dbits;
    hipMalloc(&da, n * sizeof(float4));
    hipMalloc(&db, n * sizeof(float4));
    hipMalloc(&dout, n * sizeof(float4));
    hipMalloc(&d3, n * sizeof(float3));
    hipMalloc(&d2, n * sizeof(float2));
    hipMalloc(&dia, n * sizeof(int4));
    hipMalloc(&dio, n * sizeof(int4));
    hipMalloc(&dbits, n * sizeof(uint2));
    hipMemcpy(da, a.data(), n * sizeof(float4), hipMemcpyHostToDevice);
    hipMemcpy(db, b.data(), n * sizeof(float4), hipMemcpyHostToDevice);
    hipMemcpy(dia, ia.data(), n * sizeof(int4), hipMemcpyHostToDevice);
    float_math<<<(n + 127) / 128, 128>>>(da, db, dout, d3, d2, n);
    int_math<<<(n + 127) / 128, 128>>>(dia, dio, dbits, n);
    std::vector<float4> out(n);
    std::vector<float3> out3(n);
    std::vector<float2> out2(n);
    std::vector<int4> iout(n);
    std::vector<uint2> bits(n);
    hipMemcpy(out.data(), dout, n * sizeof(float4), hipMemcpyDeviceToHost);
    hipMemcpy(out3.data(), d3, n * sizeof(float3), hipMemcpyDeviceToHost);
    hipMemcpy(out2.data(), d2, n * sizeof(float2), hipMemcpyDeviceToHost);
    hipMemcpy(iout.data(), dio, n * sizeof(int4), hipMemcpyDeviceToHost);
    hipMemcpy(bits.data(), dbits, n * sizeof(uint2), hipMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) {
        const float av[4] = {a[i].x, a[i].y, a[i].z, a[i].w}, bv[4] = {b[i].x, b[i].y, b[i].z, b[i].w};
        const float ov[4] = {out[i].x, out[i].y, out[i].z, out[i].w};
        for (int k = 0; k < 4; ++k) {
            const float want = -(0.5f * (av[k] * bv[k] + 2.0f - float(k + 1)) / bv[k]);
            EXPECT(ov[k] == want, "float4 %d.%d: %g vs %g\n", i, k, ov[k], want);
        }
        const float p[3] = {av[0] + 1.0f, av[1] + 1.0f, av[2] + 1.0f};
        EXPECT(out3[i].x == p[0] * p[0] && out3[i].y == p[1] * p[1] && out3[i].z == p[2] * p[2], "float3 %d\n", i);
        EXPECT(out2[i].x == av[3] - 3.0f && out2[i].y == bv[3] - 4.0f, "float2 %d\n", i);
        const int iv[4] = {ia[i].x, ia[i].y, ia[i].z, ia[i].w}, add[4] = {1, 2, 3, 4};
        const int masks[4] = {0xF, 0xF0, 0xF00, 0xF000};
        const int io[4] = {iout[i].x, iout[i].y, iout[i].z, iout[i].w};
        for (int k = 0; k < 4; ++k) {
            int v = (iv[k] * 3 + add[k]) % 1000;
            v = (v << 2) ^ (v >> 1);
            EXPECT(io[k] == (v & ~masks[k]), "int4 %d.%d: %d vs %d\n", i, k, io[k], v & ~masks[k]);
        }
        EXPECT(bits[i].x == (unsigned(ia[i].x) | 0x80000000u) && bits[i].y == (unsigned(ia[i].y) | 0x80000000u),
               "uint2 %d\n", i);
    }
    if (failures) {
        std::printf("vector types: %d mismatches\n", failures);
        return 1;
    }
    std::printf("vector types: all match\n");
    return 0;
}
