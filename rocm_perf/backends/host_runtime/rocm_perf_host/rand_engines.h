// The pseudo-random engines of hipRAND/rocRAND on the host backend (hiprand.h uses them for the
// host API, hiprand_kernel.h for the device API), written from rocRAND's published definitions
// (facts, not code: rocrand_philox4x32_10.h, rocrand_xorwow.h, rocrand_mrg32k3a.h, rocrand_common.h):
//
// - Philox4x32-10 (Random123): key = the seed's two halves, 128-bit counter; a subsequence is
//   2^64 counters (the counter's upper half); ten rounds with Random123's constants.
// - XORWOW (Marsaglia): rocRAND's initial state and seed mixing; a subsequence is 2^67 numbers,
//   reached with powers of the 160x160 GF(2) transition matrix computed here by squaring.
// - MRG32k3a (L'Ecuyer): rocRAND's seeding; subsequences of 2^76, the transition matrices
//   squared 76 times here (they equal rocRAND's published tables); values in (0, m1].
// - Distributions: rocRAND's uniform (2^-32 + v 2^-32, in (0, 1]), uniform double from two
//   words, Box-Muller normal (float from two words, double from four), log-normal as exp(normal).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace rocm_perf_host {
namespace rand {

constexpr float k2pow32Inv = 2.3283064e-10f;
constexpr double k2pow32InvDouble = 2.3283064365386963e-10;
constexpr double k2pow53InvDouble = 1.1102230246251565e-16;
constexpr float k2pow32Inv2Pi = 1.46291807e-09f;
constexpr double kPiDouble = 3.1415926535897932;

inline float uniform_float(unsigned v) { return k2pow32Inv + (static_cast<float>(v) * k2pow32Inv); }
inline double uniform_double(unsigned v1, unsigned v2) {
    const unsigned long long v = static_cast<unsigned long long>(v1) | (static_cast<unsigned long long>(v2 >> 11) << 32);
    return k2pow53InvDouble + (static_cast<double>(v) * k2pow53InvDouble);
}
inline void box_muller(unsigned x, unsigned y, float& a, float& b) {
    const float u = k2pow32Inv + (static_cast<float>(x) * k2pow32Inv);
    const float v = k2pow32Inv2Pi + (static_cast<float>(y) * k2pow32Inv2Pi);
    const float s = std::sqrt(-2.0f * std::log(u));
    a = std::sin(v) * s;
    b = std::cos(v) * s;
}
inline void box_muller_double(unsigned x, unsigned y, unsigned z, unsigned w, double& a, double& b) {
    const unsigned long long v1 = static_cast<unsigned long long>(x) ^ (static_cast<unsigned long long>(y) << 21);
    const double u = k2pow53InvDouble + (static_cast<double>(v1) * k2pow53InvDouble);
    const unsigned long long v2 = static_cast<unsigned long long>(z) ^ (static_cast<unsigned long long>(w) << 21);
    const double t = (k2pow53InvDouble * 2.0) + (static_cast<double>(v2) * (k2pow53InvDouble * 2.0));
    const double s = std::sqrt(-2.0 * std::log(u));
    a = std::sin(t * kPiDouble) * s;
    b = std::cos(t * kPiDouble) * s;
}

// ---- Philox4x32-10 ----------------------------------------------------------------------------
struct Philox {
    unsigned counter[4] = {0, 0, 0, 0};
    unsigned key[2] = {0, 0};
    unsigned result[4] = {0, 0, 0, 0};
    unsigned substate = 0;

    Philox() = default;
    Philox(unsigned long long seed, unsigned long long subsequence, unsigned long long offset) {
        key[0] = static_cast<unsigned>(seed);
        key[1] = static_cast<unsigned>(seed >> 32);
        add_to_upper(subsequence);
        skip(offset);
        refill();
    }
    static void round(unsigned (&c)[4], const unsigned (&k)[2]) {
        const unsigned long long m0 = 0xD2511F53ull * c[0];
        const unsigned long long m1 = 0xCD9E8D57ull * c[2];
        const unsigned hi0 = static_cast<unsigned>(m0 >> 32), lo0 = static_cast<unsigned>(m0);
        const unsigned hi1 = static_cast<unsigned>(m1 >> 32), lo1 = static_cast<unsigned>(m1);
        const unsigned next[4] = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
        for (int i = 0; i < 4; ++i) c[i] = next[i];
    }
    void refill() {
        unsigned c[4] = {counter[0], counter[1], counter[2], counter[3]};
        unsigned k[2] = {key[0], key[1]};
        for (int r = 0; r < 10; ++r) {
            round(c, k);
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        for (int i = 0; i < 4; ++i) result[i] = c[i];
    }
    void add_counter(unsigned long long n) {  // + n to the 128-bit counter
        unsigned long long carry = n;
        for (int i = 0; i < 4 && carry; ++i) {
            const unsigned long long sum = static_cast<unsigned long long>(counter[i]) + (carry & 0xffffffffull);
            counter[i] = static_cast<unsigned>(sum);
            carry = (carry >> 32) + (sum >> 32);
        }
    }
    void add_to_upper(unsigned long long n) {  // a subsequence: + n to counter words 2 and 3
        const unsigned long long z = static_cast<unsigned long long>(counter[2]) + static_cast<unsigned>(n);
        counter[2] = static_cast<unsigned>(z);
        counter[3] += static_cast<unsigned>(n >> 32) + static_cast<unsigned>(z >> 32);
    }
    void skip(unsigned long long n) {  // n numbers ahead (without refilling)
        substate += static_cast<unsigned>(n & 3);
        unsigned long long counters = n / 4;
        if (substate >= 4) substate -= 4, ++counters;
        add_counter(counters);
    }
    void discard(unsigned long long n) { skip(n); refill(); }
    unsigned operator()() {
        const unsigned v = result[substate];
        if (++substate == 4) {
            substate = 0;
            add_counter(1);
            refill();
        }
        return v;
    }
};

// ---- XORWOW -------------------------------------------------------------------------------------
// A linear map of the 160-bit xorshift state: column j is the image of bit j.
struct Gf2Matrix {
    std::vector<unsigned> col;  // 160 columns of 5 words
    Gf2Matrix() : col(160 * 5, 0u) {}
    void apply(unsigned (&x)[5]) const {
        unsigned r[5] = {0, 0, 0, 0, 0};
        for (int j = 0; j < 160; ++j)
            if ((x[j / 32] >> (j % 32)) & 1u)
                for (int w = 0; w < 5; ++w) r[w] ^= col[j * 5 + w];
        for (int w = 0; w < 5; ++w) x[w] = r[w];
    }
    Gf2Matrix times(const Gf2Matrix& b) const {  // this * b
        Gf2Matrix out;
        for (int j = 0; j < 160; ++j) {
            unsigned v[5];
            for (int w = 0; w < 5; ++w) v[w] = b.col[j * 5 + w];
            apply(v);
            for (int w = 0; w < 5; ++w) out.col[j * 5 + w] = v[w];
        }
        return out;
    }
};

inline void xorwow_shift(unsigned (&x)[5]) {
    const unsigned t = x[0] ^ (x[0] >> 2);
    x[0] = x[1];
    x[1] = x[2];
    x[2] = x[3];
    x[3] = x[4];
    x[4] = (x[4] ^ (x[4] << 4)) ^ (t ^ (t << 1));
}

// Powers A^(2^k) (k < 64) and A^(2^67 * 2^k) (k < 64) of the transition, computed once.
struct XorwowJumps {
    std::vector<Gf2Matrix> step;      // A^(2^k)
    std::vector<Gf2Matrix> sequence;  // A^(2^(67+k))
    XorwowJumps() {
        Gf2Matrix a;
        for (int j = 0; j < 160; ++j) {
            unsigned x[5] = {0, 0, 0, 0, 0};
            x[j / 32] = 1u << (j % 32);
            xorwow_shift(x);
            for (int w = 0; w < 5; ++w) a.col[j * 5 + w] = x[w];
        }
        for (int k = 0; k < 64 + 67; ++k) {
            if (k < 64) step.push_back(a);
            if (k >= 67) sequence.push_back(a);
            a = a.times(a);
        }
    }
    static const XorwowJumps& get() {
        static const XorwowJumps jumps;
        return jumps;
    }
};

struct Xorwow {
    unsigned d = 6615241u;
    unsigned x[5] = {123456789u, 362436069u, 521288629u, 88675123u, 5783321u};

    Xorwow() = default;
    Xorwow(unsigned long long seed, unsigned long long subsequence, unsigned long long offset) {
        const unsigned s0 = static_cast<unsigned>(seed) ^ 0x2c7f967fu;
        const unsigned s1 = static_cast<unsigned>(seed >> 32) ^ 0xa03697cbu;
        const unsigned t0 = 1228688033u * s0;
        const unsigned t1 = 2073658381u * s1;
        x[0] += t0;
        x[1] ^= t0;
        x[2] += t1;
        x[3] ^= t1;
        x[4] += t0;
        d += t1 + t0;
        discard_subsequence(subsequence);
        discard(offset);
    }
    void discard(unsigned long long n) {
        const auto& jumps = XorwowJumps::get();
        for (int k = 0; n >> k; ++k)
            if ((n >> k) & 1ull) jumps.step[k].apply(x);
        d += static_cast<unsigned>(n) * 362437u;
    }
    void discard_subsequence(unsigned long long n) {  // 2^67 numbers each; d is unchanged (2^67 = 0 mod 2^32)
        const auto& jumps = XorwowJumps::get();
        for (int k = 0; n >> k; ++k)
            if ((n >> k) & 1ull) jumps.sequence[k].apply(x);
    }
    unsigned operator()() {
        xorwow_shift(x);
        d += 362437u;
        return d + x[4];
    }
};

// ---- MRG32k3a -----------------------------------------------------------------------------------
constexpr unsigned long long kM1 = 4294967087ull, kM2 = 4294944443ull;
constexpr unsigned long long kA12 = 1403580ull, kA13n = 810728ull, kA21 = 527612ull, kA23n = 1370589ull;

struct Mrg32k3a {
    unsigned long long g1[3] = {0, 0, 0}, g2[3] = {0, 0, 0};

    static unsigned long long mul_mod(unsigned long long a, unsigned long long b, unsigned long long m) {
        return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) % m);
    }
    using Mat = unsigned long long[9];  // column-major 3x3: A[i + 3 j]
    static void mat_vec(const Mat& a, unsigned long long (&s)[3], unsigned long long m) {
        unsigned long long r[3];
        for (int i = 0; i < 3; ++i) {
            r[i] = 0;
            for (int j = 0; j < 3; ++j) r[i] = (r[i] + mul_mod(a[i + 3 * j], s[j], m)) % m;
        }
        for (int i = 0; i < 3; ++i) s[i] = r[i];
    }
    static void mat_square(Mat& a, unsigned long long m) {
        unsigned long long r[9];
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                unsigned long long acc = 0;
                for (int k = 0; k < 3; ++k) acc = (acc + mul_mod(a[i + 3 * k], a[k + 3 * j], m)) % m;
                r[i + 3 * j] = acc;
            }
        for (int i = 0; i < 9; ++i) a[i] = r[i];
    }
    Mrg32k3a() = default;
    Mrg32k3a(unsigned long long seed, unsigned long long subsequence, unsigned long long offset) {
        if (seed == 0) seed = 0x12345ull;
        const unsigned x = static_cast<unsigned>(seed) ^ 0x55555555u;
        const unsigned y = static_cast<unsigned>((seed >> 32) ^ 0xAAAAAAAAull);
        g1[0] = mul_mod(x, seed % kM1, kM1);
        g1[1] = mul_mod(y, seed % kM1, kM1);
        g1[2] = mul_mod(x, seed % kM1, kM1);
        g2[0] = mul_mod(y, seed % kM2, kM2);
        g2[1] = mul_mod(x, seed % kM2, kM2);
        g2[2] = mul_mod(y, seed % kM2, kM2);
        discard_subsequence(subsequence);
        discard(offset);
    }
    // A^(2^76) by squaring the transitions (the values of rocRAND's published tables, which list
    // these matrices row by row).
    void discard_subsequence(unsigned long long n) {
        Mat a1 = {0, 0, kM1 - kA13n, 1, 0, kA12, 0, 1, 0};
        Mat a2 = {0, 0, kM2 - kA23n, 1, 0, 0, 0, 1, kA21};
        for (int k = 0; k < 76; ++k) mat_square(a1, kM1), mat_square(a2, kM2);
        for (; n; n >>= 1) {
            if (n & 1) mat_vec(a1, g1, kM1), mat_vec(a2, g2, kM2);
            mat_square(a1, kM1);
            mat_square(a2, kM2);
        }
    }
    void discard(unsigned long long n) {
        Mat a1 = {0, 0, kM1 - kA13n, 1, 0, kA12, 0, 1, 0};
        Mat a2 = {0, 0, kM2 - kA23n, 1, 0, 0, 0, 1, kA21};
        for (; n; n >>= 1) {
            if (n & 1) mat_vec(a1, g1, kM1), mat_vec(a2, g2, kM2);
            mat_square(a1, kM1);
            mat_square(a2, kM2);
        }
    }
    unsigned operator()() {  // in (0, m1]
        unsigned long long p = (kA12 * g1[1] + kA13n * (kM1 - g1[0])) % kM1;
        g1[0] = g1[1], g1[1] = g1[2], g1[2] = p;
        p = (kA21 * g2[2] + kA23n * (kM2 - g2[0])) % kM2;
        g2[0] = g2[1], g2[1] = g2[2], g2[2] = p;
        p = g1[2] > g2[2] ? g1[2] - g2[2] : g1[2] + kM1 - g2[2];
        return static_cast<unsigned>(p);
    }
};
constexpr double kMrgNorm = 1.0 / 4294967088.0;  // 1 / (m1 + 1): an MRG value in (0, 1]

}  // namespace rand
}  // namespace rocm_perf_host
