// Loops at the edges of their types, for the manual unroll's "N iterations remain" test: every
// loop folds its induction values in order (acc * 31 + i), so a skipped, repeated or reordered
// iteration changes the printed result. None of the original loops overflows.
#include <hip/hip_runtime.h>

#include <climits>
#include <cstdio>

__global__ void edge_loops(long long* out, int lo, int hi, int step, unsigned ulo, unsigned uhi,
                           long long llo, long long lhi, unsigned ubound, int n) {
    long long acc = 0;
    for (int i = hi - 37; i < hi; ++i) acc = acc * 31 + i;
    out[0] = acc;
    acc = 0;
    for (int i = lo; i <= lo + 20; i += 3) acc = acc * 31 + i;
    out[1] = acc;
    acc = 0;
    for (int i = hi; i > hi - 50; i -= 7) acc = acc * 31 + i;
    out[2] = acc;
    acc = 0;
    for (int i = lo + 142; i >= lo + 100; i -= 3) acc = acc * 31 + i;
    out[3] = acc;
    acc = 0;
    for (unsigned u = uhi - 100u; u < uhi; u += 7u) acc = acc * 31 + u;
    out[4] = acc;
    acc = 0;
    for (unsigned u = ulo + 150u; u > ulo; u -= 3u) acc = acc * 31 + u;
    out[5] = acc;
    acc = 0;
    for (int i = -5; i < lhi; ++i) acc = acc * 31 + i;
    out[6] = acc;
    acc = 0;
    for (int i = 0; i < n; i += step) acc = acc * 31 + i;
    out[7] = acc;
    acc = 0;
    for (long long j = llo; j < lhi * 1000000000LL + llo; j += 1000000007LL) acc = acc * 31 + (j & 0xffff);
    out[8] = acc;
    acc = 0;
    for (size_t s = 0; s <= 40; s += 4) acc = acc * 31 + static_cast<long long>(s);
    out[9] = acc;
    acc = 0;
    for (int i = 0; i < ubound; ++i) acc = acc * 31 + i;
    out[10] = acc;
    acc = 0;
    for (int i = n; 0 < i; --i) acc = acc * 31 + i;
    out[11] = acc;
    acc = 0;
    for (int i = 3; i < 3; ++i) acc = acc * 31 + i;  // never runs
    out[12] = acc + 1;
    acc = 0;
    for (int i = 0; i < 1; ++i) acc = acc * 31 + 7;  // runs once
    out[13] = acc;
}

int main() {
    const int kOut = 14;
    long long* d_out = nullptr;
    if (hipMalloc(&d_out, kOut * sizeof(long long)) != hipSuccess) return 2;
    long long host[kOut];
    for (int n = 0; n < 40; n += 13) {
        edge_loops<<<1, 1>>>(d_out, INT_MIN, INT_MAX, 3, 2u, UINT_MAX - 10u, LLONG_MIN + 5, 30LL + n, 17u + n, n);
        if (hipMemcpy(host, d_out, sizeof(host), hipMemcpyDeviceToHost) != hipSuccess) return 2;
        for (int k = 0; k < kOut; ++k) std::printf("n=%d out[%d]=%lld\n", n, k, host[k]);
    }
    hipFree(d_out);
    std::printf("checksum done\n");
    return 0;
}
