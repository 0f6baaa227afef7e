// hipRAND's host API on the host backend (generators XORWOW = the default, MRG32K3A,
// PHILOX4_32_10; uniform, normal and log-normal in float and double; 32-bit integers), with the
// engines of rand_engines.h laid out as rocRAND's host generators lay theirs out:
//
// - PHILOX4_32_10: one stream, in order (rocRAND's generate_philox writes element i from
//   counter i / 4 whatever the grid), continued by the next call.
// - XORWOW, MRG32K3A: 131072 engines (rocRAND's default and legacy layout: 512 blocks x 256
//   threads), engine e on subsequence e; output vector v (1 value, or 2 for a normal float pair)
//   comes from engine v mod 131072, each engine continuing from call to call.
//
// So, for data from hipMalloc (aligned), a program that checks its output against rocRAND's
// sequence sees it (see docs/real-programs.md for what was and was not verified). Each generate
// call is one dispatch on the generator's stream, named as rocRAND names its kernel
// ("rocrand_generate_xorwow", ...); creating a generator initializes its engines on the CPU.
// SOBOL32 (= QUASI_DEFAULT) in 1 or 2 dimensions: dimension by dimension, Gray-code order, 32-bit
// values and uniform floats (not checked against rocRAND's direction tables beyond dimension 2).
// Other generator types (MTGP32, MT19937, other quasi generators) are refused at
// hiprandCreateGenerator with HIPRAND_STATUS_NOT_IMPLEMENTED and a line on stderr naming them.
#pragma once

#include <cstdio>
#include <memory>
#include <vector>

#include "hip/hip_runtime.h"
#include "rocm_perf_host/library_dispatch.h"
#include "rocm_perf_host/rand_engines.h"

enum hiprandStatus_t {
    HIPRAND_STATUS_SUCCESS = 0,
    HIPRAND_STATUS_VERSION_MISMATCH = 100,
    HIPRAND_STATUS_NOT_INITIALIZED = 101,
    HIPRAND_STATUS_ALLOCATION_FAILED = 102,
    HIPRAND_STATUS_TYPE_ERROR = 103,
    HIPRAND_STATUS_OUT_OF_RANGE = 104,
    HIPRAND_STATUS_LENGTH_NOT_MULTIPLE = 105,
    HIPRAND_STATUS_DOUBLE_PRECISION_REQUIRED = 106,
    HIPRAND_STATUS_LAUNCH_FAILURE = 201,
    HIPRAND_STATUS_PREEXISTING_FAILURE = 202,
    HIPRAND_STATUS_INITIALIZATION_FAILED = 203,
    HIPRAND_STATUS_ARCH_MISMATCH = 204,
    HIPRAND_STATUS_INTERNAL_ERROR = 999,
    HIPRAND_STATUS_NOT_IMPLEMENTED = 1000,
};
typedef hiprandStatus_t hiprandStatus;
enum hiprandRngType_t {
    HIPRAND_RNG_TEST = 0,
    HIPRAND_RNG_PSEUDO_DEFAULT = 400,
    HIPRAND_RNG_PSEUDO_XORWOW = 401,
    HIPRAND_RNG_PSEUDO_MRG32K3A = 402,
    HIPRAND_RNG_PSEUDO_MTGP32 = 403,
    HIPRAND_RNG_PSEUDO_MT19937 = 404,
    HIPRAND_RNG_PSEUDO_PHILOX4_32_10 = 405,
    HIPRAND_RNG_QUASI_DEFAULT = 500,
    HIPRAND_RNG_QUASI_SOBOL32 = 501,
    HIPRAND_RNG_QUASI_SCRAMBLED_SOBOL32 = 502,
    HIPRAND_RNG_QUASI_SOBOL64 = 503,
    HIPRAND_RNG_QUASI_SCRAMBLED_SOBOL64 = 504,
};
typedef hiprandRngType_t hiprandRngType;

namespace rocm_perf_host {
namespace rand {

constexpr unsigned kEngines = 512 * 256;

struct Generator {
    hiprandRngType_t type = HIPRAND_RNG_PSEUDO_XORWOW;
    unsigned long long seed = 0;
    unsigned long long offset = 0;
    hipStream_t stream = nullptr;
    bool ready = false;
    Philox philox;
    std::vector<Xorwow> xorwow;
    std::vector<Mrg32k3a> mrg;
    unsigned dimensions = 1;              // SOBOL32
    unsigned long long sobol_index = 0;  // the next point of each dimension

    // The engines as rocRAND's init kernel sets them: engine e on subsequence e, skipped by offset.
    void init() {
        if (ready) return;
        if (type == HIPRAND_RNG_QUASI_SOBOL32) {
            sobol_index = offset;
        } else if (type == HIPRAND_RNG_PSEUDO_PHILOX4_32_10) {
            philox = Philox(seed, 0, offset);
        } else if (type == HIPRAND_RNG_PSEUDO_XORWOW) {
            xorwow.assign(kEngines, Xorwow());
            Xorwow e(seed, 0, offset);
            const Gf2Matrix& next = XorwowJumps::get().sequence[0];
            for (unsigned i = 0; i < kEngines; ++i) {
                xorwow[i] = e;
                next.apply(e.x);  // the next subsequence (d is the same on every one)
            }
        } else {
            mrg.assign(kEngines, Mrg32k3a());
            for (unsigned i = 0; i < kEngines; ++i) mrg[i] = Mrg32k3a(seed, i, offset);
        }
        ready = true;
    }
    // Sobol points, dimension by dimension (n / dimensions of each): Gray-code order, the
    // direction numbers of dimensions 1 (v_j = 2^(31-j)) and 2 (v_j = v_(j-1) ^ v_(j-1) >> 1).
    template <class T, class Make>
    void sobol(T* data, std::size_t n, Make make) {
        const std::size_t per = n / dimensions;
        for (unsigned d = 0; d < dimensions; ++d) {
            unsigned v[32];
            for (int j = 0; j < 32; ++j) v[j] = d == 0 ? (1u << (31 - j)) : (j == 0 ? 1u << 31 : v[j - 1] ^ (v[j - 1] >> 1));
            for (std::size_t i = 0; i < per; ++i) {
                const unsigned long long k = sobol_index + i, gray = k ^ (k >> 1);
                unsigned x = 0;
                for (int j = 0; j < 32; ++j)
                    if ((gray >> j) & 1ull) x ^= v[j];
                data[d * per + i] = make(x);
            }
        }
        sobol_index += per;
    }
    const char* kernel() const {
        if (type == HIPRAND_RNG_QUASI_SOBOL32) return "rocrand_generate_sobol32";
        return type == HIPRAND_RNG_PSEUDO_PHILOX4_32_10 ? "rocrand_generate_philox4x32_10"
               : type == HIPRAND_RNG_PSEUDO_XORWOW    ? "rocrand_generate_xorwow"
                                                      : "rocrand_generate_mrg32k3a";
    }
    // `width` 32-bit inputs per output vector, `per` outputs per vector: `make(inputs, out)`.
    template <class T, int Width, int Per, class Make>
    void generate(T* data, std::size_t n, Make make) {
        unsigned in[4];
        T out[2];
        const std::size_t vectors = (n + Per - 1) / Per;
        if (type == HIPRAND_RNG_PSEUDO_PHILOX4_32_10) {
            for (std::size_t v = 0; v < vectors; ++v) {
                for (int i = 0; i < Width; ++i) in[i] = philox();
                make(in, out);
                for (int o = 0; o < Per && v * Per + o < n; ++o) data[v * Per + o] = out[o];
            }
            return;
        }
        for (std::size_t v = 0; v < vectors; ++v) {
            const std::size_t e = v % kEngines;
            for (int i = 0; i < Width; ++i) in[i] = type == HIPRAND_RNG_PSEUDO_XORWOW ? xorwow[e]() : mrg[e]();
            make(in, out);
            for (int o = 0; o < Per && v * Per + o < n; ++o) data[v * Per + o] = out[o];
        }
    }
};

inline bool is_mrg(const Generator* g) { return g->type == HIPRAND_RNG_PSEUDO_MRG32K3A; }

template <class Work>
inline hiprandStatus_t queue(Generator* g, Work work) {
    if (!g) return HIPRAND_STATUS_NOT_INITIALIZED;
    library_dispatch(g->kernel(), g->stream, [g, work]() mutable {
        g->init();
        work();
    }, false);
    return HIPRAND_STATUS_SUCCESS;
}

}  // namespace rand
}  // namespace rocm_perf_host

typedef rocm_perf_host::rand::Generator* hiprandGenerator_t;

inline hiprandStatus_t hiprandCreateGenerator(hiprandGenerator_t* generator, hiprandRngType_t type) {
    if (type == HIPRAND_RNG_PSEUDO_DEFAULT) type = HIPRAND_RNG_PSEUDO_XORWOW;
    if (type == HIPRAND_RNG_QUASI_DEFAULT) type = HIPRAND_RNG_QUASI_SOBOL32;
    if (type != HIPRAND_RNG_PSEUDO_XORWOW && type != HIPRAND_RNG_PSEUDO_MRG32K3A &&
        type != HIPRAND_RNG_PSEUDO_PHILOX4_32_10 && type != HIPRAND_RNG_QUASI_SOBOL32) {
        std::fprintf(stderr, "rocm-perf host backend: hipRAND generator type %d is not supported (the host runtime "
                             "provides XORWOW, MRG32K3A, PHILOX4_32_10 and SOBOL32 in 1 or 2 dimensions); profile this "
                             "program with the rocm backend\n",
                     static_cast<int>(type));
        return HIPRAND_STATUS_NOT_IMPLEMENTED;
    }
    auto* g = new rocm_perf_host::rand::Generator();
    g->type = type;
    g->seed = type == HIPRAND_RNG_PSEUDO_MRG32K3A ? 0x12345ull : 0ull;
    *generator = g;
    return HIPRAND_STATUS_SUCCESS;
}
inline hiprandStatus_t hiprandCreateGeneratorHost(hiprandGenerator_t* generator, hiprandRngType_t type) {
    return hiprandCreateGenerator(generator, type);
}
inline hiprandStatus_t hiprandDestroyGenerator(hiprandGenerator_t g) {
    if (!g) return HIPRAND_STATUS_NOT_INITIALIZED;
    rocm_perf_host::Runtime& r = rocm_perf_host::runtime();
    r.synchronize_stream(r.resolve(g->stream));  // its queued generations first
    delete g;
    return HIPRAND_STATUS_SUCCESS;
}
inline hiprandStatus_t hiprandSetPseudoRandomGeneratorSeed(hiprandGenerator_t g, unsigned long long seed) {
    if (!g) return HIPRAND_STATUS_NOT_INITIALIZED;
    g->seed = (seed == 0 && rocm_perf_host::rand::is_mrg(g)) ? 0x12345ull : seed;
    g->ready = false;
    return HIPRAND_STATUS_SUCCESS;
}
inline hiprandStatus_t hiprandSetGeneratorOffset(hiprandGenerator_t g, unsigned long long offset) {
    if (!g) return HIPRAND_STATUS_NOT_INITIALIZED;
    g->offset = offset;
    g->ready = false;
    return HIPRAND_STATUS_SUCCESS;
}
inline hiprandStatus_t hiprandSetQuasiRandomGeneratorDimensions(hiprandGenerator_t g, unsigned int dimensions) {
    if (!g) return HIPRAND_STATUS_NOT_INITIALIZED;
    if (g->type != HIPRAND_RNG_QUASI_SOBOL32) return HIPRAND_STATUS_TYPE_ERROR;
    if (dimensions < 1 || dimensions > 2) {
        std::fprintf(stderr, "rocm-perf host backend: SOBOL32 in %u dimensions is not supported (the host runtime has "
                             "the direction numbers of dimensions 1 and 2)\n", dimensions);
        return HIPRAND_STATUS_OUT_OF_RANGE;
    }
    g->dimensions = dimensions;
    g->ready = false;
    return HIPRAND_STATUS_SUCCESS;
}
inline hiprandStatus_t hiprandSetStream(hiprandGenerator_t g, hipStream_t stream) {
    if (!g) return HIPRAND_STATUS_NOT_INITIALIZED;
    g->stream = stream;
    return HIPRAND_STATUS_SUCCESS;
}
inline hiprandStatus_t hiprandGenerateSeeds(hiprandGenerator_t g) {
    if (!g) return HIPRAND_STATUS_NOT_INITIALIZED;
    return rocm_perf_host::rand::queue(g, []() {});
}
inline hiprandStatus_t hiprandGetVersion(int* version) {
    *version = 200000;  // hipRAND 2.x
    return HIPRAND_STATUS_SUCCESS;
}

inline hiprandStatus_t hiprandGenerate(hiprandGenerator_t g, unsigned int* out, std::size_t n) {
    if (g && g->type == HIPRAND_RNG_QUASI_SOBOL32) {
        if (n % g->dimensions) return HIPRAND_STATUS_LENGTH_NOT_MULTIPLE;
        return rocm_perf_host::rand::queue(g, [g, out, n]() { g->sobol(out, n, [](unsigned x) { return x; }); });
    }
    return rocm_perf_host::rand::queue(g, [g, out, n]() {
        const bool mrg = rocm_perf_host::rand::is_mrg(g);
        // MRG values lie in (0, m1]; rocRAND scales them to 32 bits
        g->generate<unsigned, 1, 1>(out, n, [mrg](const unsigned* in, unsigned* o) {
            o[0] = mrg ? static_cast<unsigned>((in[0] - 1) * (4294967295.0 / 4294967086.0)) : in[0];
        });
    });
}
inline hiprandStatus_t hiprandGenerateUniform(hiprandGenerator_t g, float* out, std::size_t n) {
    if (g && g->type == HIPRAND_RNG_QUASI_SOBOL32) {
        if (n % g->dimensions) return HIPRAND_STATUS_LENGTH_NOT_MULTIPLE;
        return rocm_perf_host::rand::queue(g, [g, out, n]() { g->sobol(out, n, rocm_perf_host::rand::uniform_float); });
    }
    return rocm_perf_host::rand::queue(g, [g, out, n]() {
        const bool mrg = rocm_perf_host::rand::is_mrg(g);
        g->generate<float, 1, 1>(out, n, [mrg](const unsigned* in, float* o) {
            o[0] = mrg ? static_cast<float>(in[0] * rocm_perf_host::rand::kMrgNorm)
                       : rocm_perf_host::rand::uniform_float(in[0]);
        });
    });
}
inline hiprandStatus_t hiprandGenerateUniformDouble(hiprandGenerator_t g, double* out, std::size_t n) {
    return rocm_perf_host::rand::queue(g, [g, out, n]() {
        if (rocm_perf_host::rand::is_mrg(g)) {
            g->generate<double, 1, 1>(out, n, [](const unsigned* in, double* o) { o[0] = in[0] * rocm_perf_host::rand::kMrgNorm; });
            return;
        }
        g->generate<double, 2, 1>(out, n, [](const unsigned* in, double* o) {
            o[0] = rocm_perf_host::rand::uniform_double(in[0], in[1]);
        });
    });
}
inline hiprandStatus_t hiprandGenerateNormal(hiprandGenerator_t g, float* out, std::size_t n, float mean, float stddev) {
    return rocm_perf_host::rand::queue(g, [=]() {
        const bool mrg = rocm_perf_host::rand::is_mrg(g);
        g->generate<float, 2, 2>(out, n, [=](const unsigned* in, float* o) {
            float a, b;
            if (mrg) {
                const float u = static_cast<float>(in[0] * rocm_perf_host::rand::kMrgNorm);
                const float v = static_cast<float>(in[1] * rocm_perf_host::rand::kMrgNorm) * 6.2831855f;
                const float s = std::sqrt(-2.0f * std::log(u));
                a = std::sin(v) * s, b = std::cos(v) * s;
            } else {
                rocm_perf_host::rand::box_muller(in[0], in[1], a, b);
            }
            o[0] = mean + a * stddev;
            o[1] = mean + b * stddev;
        });
    });
}
inline hiprandStatus_t hiprandGenerateNormalDouble(hiprandGenerator_t g, double* out, std::size_t n, double mean,
                                                   double stddev) {
    return rocm_perf_host::rand::queue(g, [=]() {
        g->generate<double, 4, 2>(out, n, [=](const unsigned* in, double* o) {
            double a, b;
            rocm_perf_host::rand::box_muller_double(in[0], in[1], in[2], in[3], a, b);
            o[0] = mean + a * stddev;
            o[1] = mean + b * stddev;
        });
    });
}
inline hiprandStatus_t hiprandGenerateLogNormal(hiprandGenerator_t g, float* out, std::size_t n, float mean,
                                                float stddev) {
    return rocm_perf_host::rand::queue(g, [=]() {
        g->generate<float, 2, 2>(out, n, [=](const unsigned* in, float* o) {
            float a, b;
            rocm_perf_host::rand::box_muller(in[0], in[1], a, b);
            o[0] = std::exp(mean + a * stddev);
            o[1] = std::exp(mean + b * stddev);
        });
    });
}
inline hiprandStatus_t hiprandGenerateLogNormalDouble(hiprandGenerator_t g, double* out, std::size_t n, double mean,
                                                      double stddev) {
    return rocm_perf_host::rand::queue(g, [=]() {
        g->generate<double, 4, 2>(out, n, [=](const unsigned* in, double* o) {
            double a, b;
            rocm_perf_host::rand::box_muller_double(in[0], in[1], in[2], in[3], a, b);
            o[0] = std::exp(mean + a * stddev);
            o[1] = std::exp(mean + b * stddev);
        });
    });
}
template <class... Args>
inline hiprandStatus_t hiprandGeneratePoisson(Args...) {
    static_assert(rocm_perf_host::unsupported_on_host<Args...>::value,
                  "rocm-perf host backend: hiprandGeneratePoisson is not supported (the host runtime's hipRAND "
                  "generates 32-bit integers, uniform, normal and log-normal values); profile with the rocm backend");
    return HIPRAND_STATUS_NOT_IMPLEMENTED;
}
