// hipRAND's device API on the host backend (hiprand_kernel.h): per-thread states of XORWOW (the
// default, hiprandState_t), Philox4x32-10 and MRG32k3a, initialized with (seed, subsequence,
// offset) and drawn from in kernels, as rocRAND defines them (rand_engines.h): hiprand,
// hiprand_uniform(_double), hiprand_normal(_double) (Box-Muller, the second value kept for the
// next call), hiprand_log_normal(_double), skipahead(_sequence).
#pragma once

#include "hip/hip_runtime.h"
#include "rocm_perf_host/rand_engines.h"

namespace rocm_perf_host {
namespace rand {
template <class Engine>
struct DeviceState {
    Engine engine;
    bool has_float = false, has_double = false;
    float saved_float = 0;
    double saved_double = 0;
};
}  // namespace rand
}  // namespace rocm_perf_host

typedef rocm_perf_host::rand::DeviceState<rocm_perf_host::rand::Xorwow> hiprandStateXORWOW_t;
typedef rocm_perf_host::rand::DeviceState<rocm_perf_host::rand::Philox> hiprandStatePhilox4_32_10_t;
typedef rocm_perf_host::rand::DeviceState<rocm_perf_host::rand::Mrg32k3a> hiprandStateMRG32k3a_t;
typedef hiprandStateXORWOW_t hiprandState_t;
typedef hiprandStateXORWOW_t hiprandStateXORWOW;
typedef hiprandStatePhilox4_32_10_t hiprandStatePhilox4_32_10;
typedef hiprandStateMRG32k3a_t hiprandStateMRG32k3a;

template <class Engine>
inline void hiprand_init(unsigned long long seed, unsigned long long subsequence, unsigned long long offset,
                         rocm_perf_host::rand::DeviceState<Engine>* state) {
    *state = rocm_perf_host::rand::DeviceState<Engine>{Engine(seed, subsequence, offset)};
}
template <class Engine>
inline unsigned hiprand(rocm_perf_host::rand::DeviceState<Engine>* state) {
    return state->engine();
}
inline float hiprand_uniform(hiprandStateXORWOW_t* s) { return rocm_perf_host::rand::uniform_float(s->engine()); }
inline float hiprand_uniform(hiprandStatePhilox4_32_10_t* s) { return rocm_perf_host::rand::uniform_float(s->engine()); }
inline float hiprand_uniform(hiprandStateMRG32k3a_t* s) {
    return static_cast<float>(s->engine() * rocm_perf_host::rand::kMrgNorm);
}
template <class Engine>
inline double hiprand_uniform_double(rocm_perf_host::rand::DeviceState<Engine>* s) {
    if constexpr (std::is_same<Engine, rocm_perf_host::rand::Mrg32k3a>::value) {
        return s->engine() * rocm_perf_host::rand::kMrgNorm;
    } else {
        const unsigned a = s->engine(), b = s->engine();
        return rocm_perf_host::rand::uniform_double(a, b);
    }
}
template <class Engine>
inline float hiprand_normal(rocm_perf_host::rand::DeviceState<Engine>* s) {
    if (s->has_float) {
        s->has_float = false;
        return s->saved_float;
    }
    const unsigned x = s->engine(), y = s->engine();
    float a, b;
    rocm_perf_host::rand::box_muller(x, y, a, b);
    s->has_float = true;
    s->saved_float = b;
    return a;
}
template <class Engine>
inline double hiprand_normal_double(rocm_perf_host::rand::DeviceState<Engine>* s) {
    if (s->has_double) {
        s->has_double = false;
        return s->saved_double;
    }
    const unsigned x = s->engine(), y = s->engine(), z = s->engine(), w = s->engine();
    double a, b;
    rocm_perf_host::rand::box_muller_double(x, y, z, w, a, b);
    s->has_double = true;
    s->saved_double = b;
    return a;
}
template <class Engine>
inline float hiprand_log_normal(rocm_perf_host::rand::DeviceState<Engine>* s, float mean, float stddev) {
    return std::exp(mean + stddev * hiprand_normal(s));
}
template <class Engine>
inline double hiprand_log_normal_double(rocm_perf_host::rand::DeviceState<Engine>* s, double mean, double stddev) {
    return std::exp(mean + stddev * hiprand_normal_double(s));
}
inline uint4 hiprand4(hiprandStatePhilox4_32_10_t* s) {
    const unsigned a = s->engine(), b = s->engine(), c = s->engine(), d = s->engine();
    return uint4(a, b, c, d);
}
inline float4 hiprand_uniform4(hiprandStatePhilox4_32_10_t* s) {
    const uint4 v = hiprand4(s);
    using rocm_perf_host::rand::uniform_float;
    return float4(uniform_float(v.x), uniform_float(v.y), uniform_float(v.z), uniform_float(v.w));
}
inline float2 hiprand_normal2(hiprandStatePhilox4_32_10_t* s) {
    const unsigned x = s->engine(), y = s->engine();
    float a, b;
    rocm_perf_host::rand::box_muller(x, y, a, b);
    return float2(a, b);
}
template <class Engine>
inline void skipahead(unsigned long long n, rocm_perf_host::rand::DeviceState<Engine>* s) {
    s->engine.discard(n);
}
template <class Engine>
inline void skipahead_sequence(unsigned long long n, rocm_perf_host::rand::DeviceState<Engine>* s) {
    if constexpr (std::is_same<Engine, rocm_perf_host::rand::Philox>::value) {
        s->engine.add_to_upper(n);
        s->engine.refill();
    } else {
        s->engine.discard_subsequence(n);
    }
}
template <class Engine>
inline void skipahead_subsequence(unsigned long long n, rocm_perf_host::rand::DeviceState<Engine>* s) {
    skipahead_sequence(n, s);
}
