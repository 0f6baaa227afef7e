// Warp-level operations with AMD semantics, each checked against a plain C++ model of the
// wavefront: shuffles of every kind, width and type (64-bit included), votes, masks, the _sync
// forms, matches and reductions, lanes that are inactive (returned early or on the other side
// of a branch), and blocks that meet a warp op only after a barrier or only past thread 0.
// Works for either wavefront size (warpSize 64 by default, 32 with -DROCM_PERF_WARP_SIZE=32).
#include <hip/hip_runtime.h>

#include <cstdint>
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

// ---- the model: what lane `self` of a full wavefront reads (HIP's amd_warp_functions.h) ----
int model_shfl(int self, int src, int width) { return (src + (self & ~(width - 1))) & (warpSize - 1); }
int model_up(int self, int delta, int width) {
    int i = self - delta;
    return i < (self & ~(width - 1)) ? self : i;
}
int model_down(int self, int delta, int width) { return (self & (width - 1)) + delta >= width ? self : self + delta; }
int model_xor(int self, int mask, int width) {
    int i = self ^ mask;
    return i >= ((self + width) & ~(width - 1)) ? self : i;
}

// out[t * 4 + k]: the four shuffle kinds of value `t * 3 + 1` (as T) at one width and offset.
template <class T>
__global__ void shuffles(T* out, int width, int offset) {
    const int t = threadIdx.x;
    const T v = static_cast<T>(t * 3 + 1) * static_cast<T>(1ll << (sizeof(T) == 8 ? 33 : 0)) + static_cast<T>(t);
    out[t * 4 + 0] = __shfl(v, offset, width);
    out[t * 4 + 1] = __shfl_up(v, offset, width);
    out[t * 4 + 2] = __shfl_down(v, offset, width);
    out[t * 4 + 3] = __shfl_xor(v, offset, width);
}

template <class T>
void check_shuffles(const char* type) {
    const int n = warpSize * 2;  // two wavefronts
    T* d;
    hipMalloc(&d, n * 4 * sizeof(T));
    std::vector<T> h(n * 4);
    auto value = [](int t) {
        return static_cast<T>(t * 3 + 1) * static_cast<T>(1ll << (sizeof(T) == 8 ? 33 : 0)) + static_cast<T>(t);
    };
    for (int width = 2; width <= warpSize; width *= 2)
        for (int offset : {1, 2, 3, width / 2, width - 1}) {
            shuffles<T><<<1, n>>>(d, width, offset);
            hipMemcpy(h.data(), d, h.size() * sizeof(T), hipMemcpyDeviceToHost);
            for (int t = 0; t < n; ++t) {
                const int base = t / warpSize * warpSize, self = t % warpSize;
                const int from[4] = {model_shfl(self, offset, width), model_up(self, offset, width),
                                     model_down(self, offset, width), model_xor(self, offset, width)};
                for (int k = 0; k < 4; ++k)
                    EXPECT(h[t * 4 + k] == value(base + from[k]), "%s shuffle kind %d width %d offset %d lane %d\n", type,
                           k, width, offset, t);
            }
        }
    hipFree(d);
}

// Votes over a predicate; out[t] = ballot, plus any/all/activemask/popcount packed in `info`.
__global__ void votes(unsigned long long* ballots, int* info, int modulus) {
    const int t = threadIdx.x;
    const bool p = t % modulus == 0;
    ballots[t] = __ballot(p);
    info[t * 4 + 0] = __any(p);
    info[t * 4 + 1] = __all(p);
    info[t * 4 + 2] = __popcll(__activemask());
    info[t * 4 + 3] = static_cast<int>(__lane_id());
    __syncwarp();
}

void check_votes() {
    const int n = warpSize + warpSize / 2;  // a full wavefront and a partial one
    unsigned long long* db;
    int* di;
    hipMalloc(&db, n * sizeof(unsigned long long));
    hipMalloc(&di, n * 4 * sizeof(int));
    std::vector<unsigned long long> b(n);
    std::vector<int> info(n * 4);
    for (int modulus : {1, 3, 64, 1000}) {
        votes<<<1, n>>>(db, di, modulus);
        hipMemcpy(b.data(), db, n * sizeof(b[0]), hipMemcpyDeviceToHost);
        hipMemcpy(info.data(), di, info.size() * sizeof(int), hipMemcpyDeviceToHost);
        for (int t = 0; t < n; ++t) {
            const int base = t / warpSize * warpSize, lanes = std::min(warpSize, n - base);
            unsigned long long want = 0;
            for (int l = 0; l < lanes; ++l)
                if ((base + l) % modulus == 0) want |= 1ull << l;
            const unsigned long long active = lanes == 64 ? ~0ull : (1ull << lanes) - 1;
            EXPECT(b[t] == want, "ballot modulus %d lane %d: %llx vs %llx\n", modulus, t, b[t], want);
            EXPECT(info[t * 4 + 0] == (want != 0), "any modulus %d lane %d\n", modulus, t);
            EXPECT(info[t * 4 + 1] == (want == active), "all modulus %d lane %d\n", modulus, t);
            EXPECT(info[t * 4 + 2] == lanes, "activemask lane %d: %d lanes\n", t, info[t * 4 + 2]);
            EXPECT(info[t * 4 + 3] == t % warpSize, "lane id %d\n", t);
        }
    }
}

// Lanes past `active` return before the shuffle: reading them gives 0 (ds_bpermute's rule), and
// the active mask and ballot count only the lanes that are left.
__global__ void early_exit(int* out, int active) {
    const int t = threadIdx.x;
    out[t] = -1;
    if (t % warpSize >= active) return;
    const int v = __shfl_down(t + 100, 1);
    out[t] = v * 1000 + __popcll(__activemask());
}

// A divergent branch: the two halves shuffle separately, each reads zeros from the other.
__global__ void divergent(int* out) {
    const int t = threadIdx.x, half = warpSize / 2;
    int v = t + 1;
    if (t % warpSize < half)
        v = __shfl_xor(v, half);  // partner in the other half: inactive here
    else
        v = __shfl_xor(v, 1) + 10000;
    out[t] = v;
}

// Loops whose trip count differs per lane: lanes that leave early wait for the others, as
// reconvergence on the hardware has it, before the ballot after the loop.
__global__ void uneven_loops(int* out) {
    const int t = threadIdx.x;
    int v = 1;
    const int rounds = t % warpSize < warpSize / 4 ? 2 : 4;
    for (int r = 0; r < rounds; ++r) v += __shfl_xor(v, warpSize / 4);
    out[t] = v * 1000 + __popcll(__ballot(1));
}

// Thread 0 returns at once (the block starts as a plain loop), the others shuffle.
__global__ void late_start(int* out) {
    const int t = threadIdx.x;
    if (t == 0) return;
    out[t] = __shfl_up(t, 1);
}

// A barrier first, then warp ops, then a barrier again, with shared memory between.
__global__ void after_barrier(int* out) {
    __shared__ int s[256];
    const int t = threadIdx.x;
    s[t] = t * 2;
    __syncthreads();
    int v = s[(t + 1) % blockDim.x];
    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_xor(v, o);
    __syncthreads();
    s[t] = v;
    __syncthreads();
    out[t] = s[blockDim.x - 1 - t];
}

__global__ void sync_forms(int* out, unsigned* red) {
    const int t = threadIdx.x;
    const unsigned long long all = ~0ull;
    int v = __shfl_sync(all, t, 0);
    v += __shfl_down_sync(all, t, 1);
    out[t * 3 + 0] = v;
    out[t * 3 + 1] = static_cast<int>(__match_any_sync(all, t / 4) >> (t % warpSize / 4 * 4));
    int pred = 0;
    out[t * 3 + 2] = __match_all_sync(all, 7, &pred) != 0 && pred;
    red[t * 3 + 0] = __reduce_add_sync(all, static_cast<unsigned>(t));
    red[t * 3 + 1] = __reduce_max_sync(all, static_cast<unsigned>(t));
    red[t * 3 + 2] = __reduce_or_sync(all, 1u << (t % 32));
}

int main() {
    check_shuffles<int>("int");
    check_shuffles<unsigned>("unsigned");
    check_shuffles<float>("float");
    check_shuffles<double>("double");
    check_shuffles<long long>("long long");
    check_shuffles<unsigned long long>("unsigned long long");
    check_votes();

    const int n = 2 * warpSize;
    int* d;
    hipMalloc(&d, 4 * n * sizeof(int));
    std::vector<int> h(4 * n);
    for (int active : {1, 5, warpSize / 2, warpSize}) {
        early_exit<<<1, n>>>(d, active);
        hipMemcpy(h.data(), d, n * sizeof(int), hipMemcpyDeviceToHost);
        for (int t = 0; t < n; ++t) {
            const int lane = t % warpSize;
            int want = -1;
            if (lane < active) {
                const int src = lane + 1 >= warpSize ? lane : lane + 1;
                want = (src < active ? t - lane + src + 100 : 0) * 1000 + active;
            }
            EXPECT(h[t] == want, "early exit active %d lane %d: %d vs %d\n", active, t, h[t], want);
        }
    }

    divergent<<<1, n>>>(d);
    hipMemcpy(h.data(), d, n * sizeof(int), hipMemcpyDeviceToHost);
    for (int t = 0; t < n; ++t) {
        const int lane = t % warpSize, half = warpSize / 2;
        const int want = lane < half ? 0 : (t ^ 1) + 1 + 10000;
        EXPECT(h[t] == want, "divergent lane %d: %d vs %d\n", t, h[t], want);
    }

    uneven_loops<<<1, n>>>(d);
    hipMemcpy(h.data(), d, n * sizeof(int), hipMemcpyDeviceToHost);
    for (int t = 0; t < n; ++t) {
        // model: four groups of warpSize/4 lanes, g0 leaves after 2 rounds; partner = lane ^ q
        const int q = warpSize / 4;
        int v[64];
        for (int l = 0; l < warpSize; ++l) v[l] = 1;
        for (int r = 0; r < 4; ++r) {
            int next[64];
            for (int l = 0; l < warpSize; ++l) {
                const bool in = r < (l < q ? 2 : 4);
                const int p = l ^ q;
                const bool partner_in = r < (p < q ? 2 : 4);
                next[l] = in ? v[l] + (partner_in ? v[p] : 0) : v[l];
            }
            std::memcpy(v, next, sizeof v);
        }
        const int want = v[t % warpSize] * 1000 + warpSize;
        EXPECT(h[t] == want, "uneven loops lane %d: %d vs %d\n", t, h[t], want);
    }

    late_start<<<1, n>>>(d);
    hipMemcpy(h.data(), d, n * sizeof(int), hipMemcpyDeviceToHost);
    for (int t = 1; t < n; ++t) {
        const int lane = t % warpSize;
        const int want = lane == 0 ? t : (t - 1 == 0 ? 0 : t - 1);
        EXPECT(h[t] == want, "late start lane %d: %d vs %d\n", t, h[t], want);
    }

    after_barrier<<<1, 256>>>(d);
    hipMemcpy(h.data(), d, 256 * sizeof(int), hipMemcpyDeviceToHost);
    for (int t = 0; t < 256; ++t) {
        const int u = 255 - t, base = u / warpSize * warpSize;
        int want = 0;
        for (int l = 0; l < warpSize; ++l) want += ((base + l + 1) % 256) * 2;
        EXPECT(h[t] == want, "after barrier thread %d: %d vs %d\n", t, h[t], want);
    }

    unsigned* r;
    hipMalloc(&r, 3 * n * sizeof(unsigned));
    std::vector<unsigned> hr(3 * n);
    sync_forms<<<1, n>>>(d, r);
    hipMemcpy(h.data(), d, 3 * n * sizeof(int), hipMemcpyDeviceToHost);
    hipMemcpy(hr.data(), r, 3 * n * sizeof(unsigned), hipMemcpyDeviceToHost);
    for (int t = 0; t < n; ++t) {
        const int lane = t % warpSize, base = t - lane;
        const int want = base + (lane + 1 < warpSize ? t + 1 : t);
        EXPECT(h[t * 3] == want, "shfl_sync lane %d\n", t);
        EXPECT(h[t * 3 + 1] == 0xf, "match_any lane %d: %x\n", t, h[t * 3 + 1]);
        EXPECT(h[t * 3 + 2] == 1, "match_all lane %d\n", t);
        unsigned sum = 0, bits = 0;
        for (int l = 0; l < warpSize; ++l) sum += base + l, bits |= 1u << ((base + l) % 32);
        EXPECT(hr[t * 3] == sum && hr[t * 3 + 1] == unsigned(base + warpSize - 1) && hr[t * 3 + 2] == bits,
               "reduce_*_sync lane %d\n", t);
    }

    if (failures) {
        std::printf("warp ops: %d mismatches (warpSize %d)\n", failures, warpSize);
        return 1;
    }
    std::printf("warp ops: all match (warpSize %d)\n", warpSize);
    return 0;
}
