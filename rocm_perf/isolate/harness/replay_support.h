// What a rocm-perf replay harness needs (copied into every reproducer by `rocm-perf isolate`):
// the captured memory put back at its original addresses, the kernel's arguments rebuilt from
// their captured bytes, the dispatch run several times with the memory it changed restored
// between passes, and after every pass each allocation and variable compared with the captured
// after-state: bit for bit, or element by element within a tolerance.
//
//   harness [--dir DIR] [--passes N] [--rtol R] [--atol A] [--element TYPE]
//
// DIR: the reproducer (default: the current directory). --rtol/--atol: a memory that differs in its
// bits passes where each TYPE element (float32 by default; float64, float16, bfloat16) is within
// |got - captured| <= A + R * |captured| (NaN matches NaN, an infinity only itself; bytes past the
// last whole element, and all of a memory under an integer TYPE, still compared bit for bit), as
// `rocm-perf try --tolerance` compares a program's outputs (optimize/output_tolerance.py).
//
// Exit status: 0 when every pass matched; 1 at the first pass that did not (stderr names the
// allocation and the offset or element); 2 when the reproducer cannot be replayed here.
//
// Two ways to put memory back, one per backend:
//   - the rocm-perf host runtime (ROCM_PERF_HOST_RUNTIME): its reserved region at the capture's
//     base (rocm_perf_host/device_memory.h), allocations placed at their recorded addresses;
//   - HIP on an AMD GPU: hipMemAddressReserve at each recorded address, hipMemCreate, hipMemMap,
//     hipMemSetAccess. THIS PATH HAS NEVER RUN ON A GPU (rocm-perf's development machines have
//     none); it compiles with hipcc. A driver that will not give the recorded address stops the
//     harness with one line naming the allocation.
// Snapshots are gzip files read through zlib, loaded at run time (dlopen "libz.so.1"), so that
// building a harness needs no flag beyond the reproducer's own; an uncompressed copy next to a
// .gz file (the same name without .gz) is read instead where present.
#pragma once

#include <dlfcn.h>
#include <hip/hip_runtime.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace rocm_perf_replay {

struct Allocation {
    unsigned long long address;
    std::size_t size;
    int host;  // 1: hipHostMalloc'ed memory the kernel reaches, 0: device memory
    const char* before;
    const char* after;  // null where the dispatch left it as it was
};

struct Variable {
    const char* name;
    std::size_t size;
    const char* before;
    const char* after;
    hipError_t (*write)(const void* from, std::size_t bytes);
    hipError_t (*read)(void* to, std::size_t bytes);
};

struct Argument {
    std::size_t offset, size;
};

struct Capture {
    const char* kernel;
    const char* program;
    long dispatch;
    unsigned long long region_base;
    const Allocation* allocations;
    std::size_t allocation_count;
    const Variable* variables;
    std::size_t variable_count;
    const Argument* arguments;
    std::size_t argument_count;
    const char* arguments_file;
    std::size_t arguments_bytes;
};

[[noreturn]] inline void stop(int status, const char* format, ...) {
    std::va_list args;
    va_start(args, format);
    std::fputs("replay: ", stderr);
    std::vfprintf(stderr, format, args);
    std::fputc('\n', stderr);
    va_end(args);
    std::exit(status);
}

inline void check(hipError_t e, const char* what) {
    if (e != hipSuccess) stop(2, "%s failed: %s", what, hipGetErrorString(e));
}

// ---- snapshots: gzip through a zlib found at run time -----------------------------------------
struct Zlib {
    void* (*open)(const char*, const char*) = nullptr;
    int (*read)(void*, void*, unsigned) = nullptr;
    int (*close)(void*) = nullptr;
    Zlib() {
        void* lib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) lib = dlopen("libz.so", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return;
        open = reinterpret_cast<void* (*)(const char*, const char*)>(dlsym(lib, "gzopen"));
        read = reinterpret_cast<int (*)(void*, void*, unsigned)>(dlsym(lib, "gzread"));
        close = reinterpret_cast<int (*)(void*)>(dlsym(lib, "gzclose"));
    }
};

inline std::vector<unsigned char> read_snapshot(const std::string& dir, const char* name, std::size_t expected) {
    std::vector<unsigned char> data(expected);
    std::string path = dir + "/" + name;
    std::string raw = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0 ? path.substr(0, path.size() - 3) : path;
    if (FILE* f = std::fopen(raw.c_str(), "rb")) {
        const std::size_t got = expected ? std::fread(data.data(), 1, expected, f) : 0;
        const bool longer = std::fgetc(f) != EOF;
        std::fclose(f);
        if (got != expected || longer) stop(2, "%s: %zu bytes, the manifest says %zu", raw.c_str(), got, expected);
        return data;
    }
    static Zlib zlib;
    if (!zlib.open || !zlib.read || !zlib.close)
        stop(2, "%s: cannot read it: no zlib (libz.so.1) to decompress with; gunzip the snapshots", path.c_str());
    void* gz = zlib.open(path.c_str(), "rb");
    if (!gz) stop(2, "%s: cannot open it", path.c_str());
    std::size_t got = 0;
    while (got < expected) {
        const unsigned chunk = unsigned(std::min<std::size_t>(expected - got, std::size_t(1) << 30));
        const int n = zlib.read(gz, data.data() + got, chunk);
        if (n <= 0) break;
        got += std::size_t(n);
    }
    unsigned char extra;
    const bool longer = zlib.read(gz, &extra, 1) > 0;
    zlib.close(gz);
    if (got != expected || longer) stop(2, "%s: %s than the %zu bytes the manifest says", path.c_str(), longer ? "longer" : "shorter", expected);
    return data;
}

// ---- the kernel's arguments from their bytes ------------------------------------------------
template <class T>
inline T argument_value(const Capture& c, const std::vector<unsigned char>& bytes, std::size_t i) {
    static_assert(std::is_trivially_copyable<T>::value, "a replayed kernel's parameters must be trivially copyable");
    if (sizeof(T) != c.arguments[i].size)
        stop(2, "argument %zu of %s: the kernel's parameter is %zu bytes, the captured argument %zu", i + 1, c.kernel,
             sizeof(T), c.arguments[i].size);
    alignas(T) unsigned char storage[sizeof(T)];
    std::memcpy(storage, bytes.data() + c.arguments[i].offset, sizeof(T));
    return *std::launder(reinterpret_cast<T*>(storage));
}

template <class... T, std::size_t... I>
inline std::tuple<T...> argument_values(const Capture& c, const std::vector<unsigned char>& bytes, std::index_sequence<I...>) {
    return std::tuple<T...>(argument_value<T>(c, bytes, I)...);
}

// The arguments as the kernel's own parameter types (the kernel named as a function).
template <class... P>
inline std::tuple<std::decay_t<P>...> parameters_of(void (*)(P...), const Capture& c, const std::vector<unsigned char>& bytes) {
    if (sizeof...(P) != c.argument_count)
        stop(2, "%s takes %zu parameters, the capture has %zu arguments", c.kernel, sizeof...(P), c.argument_count);
    return argument_values<std::decay_t<P>...>(c, bytes, std::index_sequence_for<P...>{});
}

// The arguments as the types the launch passed (a template kernel whose arguments were deduced).
template <class... T>
inline std::tuple<T...> values_of(const Capture& c, const std::vector<unsigned char>& bytes) {
    if (sizeof...(T) != c.argument_count) stop(2, "the harness names %zu argument types, the capture has %zu", sizeof...(T), c.argument_count);
    return argument_values<T...>(c, bytes, std::index_sequence_for<T...>{});
}

// ---- memory at its captured addresses --------------------------------------------------------
inline void* place(const Capture& c, std::size_t i) {
    const Allocation& a = c.allocations[i];
#ifdef ROCM_PERF_HOST_RUNTIME
    auto& region = rocm_perf_host::device_region();
    if (region.base != c.region_base)
        stop(2, "the capture's device memory was at 0x%llx, this process's reserved region is at 0x%llx (%s)",
             c.region_base, (unsigned long long)region.base, region.base ? "ROCM_PERF_HOST_DEVICE_BASE differs" : region.refusal.c_str());
    const std::string why = region.place(a.address, a.size, a.host ? rocm_perf_host::MemoryKind::Host : rocm_perf_host::MemoryKind::Device);
    if (!why.empty()) stop(2, "allocation %zu at 0x%llx (%zu bytes): %s", i + 1, a.address, a.size, why.c_str());
    if (!a.host) {
        auto& r = rocm_perf_host::runtime();
        std::lock_guard<std::mutex> lock(r.m);
        r.device_allocations[std::uintptr_t(a.address)] = region.pages_for(a.size);
    }
    return reinterpret_cast<void*>(a.address);
#else
    // Never run on a GPU (see the top of this file).
    hipMemAllocationProp prop{};
    prop.type = hipMemAllocationTypePinned;
    prop.location.type = hipMemLocationTypeDevice;
    prop.location.id = 0;
    std::size_t granularity = 0;
    check(hipMemGetAllocationGranularity(&granularity, &prop, hipMemAllocationGranularityMinimum), "hipMemGetAllocationGranularity");
    if (!granularity) granularity = 4096;
    const std::size_t bytes = (std::max<std::size_t>(a.size, 1) + granularity - 1) / granularity * granularity;
    void* at = nullptr;
    check(hipMemAddressReserve(&at, bytes, 0, reinterpret_cast<void*>(a.address), 0), "hipMemAddressReserve");
    if (reinterpret_cast<unsigned long long>(at) != a.address)
        stop(2, "allocation %zu: the device reserved 0x%llx, not the captured 0x%llx: its address cannot be reproduced here",
             i + 1, (unsigned long long)at, a.address);
    hipMemGenericAllocationHandle_t handle;
    check(hipMemCreate(&handle, bytes, &prop, 0), "hipMemCreate");
    check(hipMemMap(at, bytes, 0, handle, 0), "hipMemMap");
    hipMemAccessDesc access{};
    access.location = prop.location;
    access.flags = hipMemAccessFlagsProtReadWrite;
    check(hipMemSetAccess(at, bytes, &access, 1), "hipMemSetAccess");
    return at;
#endif
}

inline void write_memory(void* to, const std::vector<unsigned char>& from) {
#ifdef ROCM_PERF_HOST_RUNTIME
    std::memcpy(to, from.data(), from.size());  // one address space: no copy through the API
#else
    check(hipMemcpy(to, from.data(), from.size(), hipMemcpyHostToDevice), "hipMemcpy (restore)");
#endif
}

// The bytes of the memory at `at` as the host sees them (on a GPU: copied into `scratch`).
inline const unsigned char* host_bytes(const void* at, std::size_t n, std::vector<unsigned char>& scratch) {
#ifdef ROCM_PERF_HOST_RUNTIME
    (void)n;
    (void)scratch;
    return static_cast<const unsigned char*>(at);
#else
    scratch.resize(n);
    check(hipMemcpy(scratch.data(), at, n, hipMemcpyDeviceToHost), "hipMemcpy (compare)");
    return scratch.data();
#endif
}

// The first byte at which `got` differs from `want`, or -1.
inline long long first_difference(const unsigned char* got, const std::vector<unsigned char>& want, std::size_t from = 0) {
    if (want.size() <= from || std::memcmp(got + from, want.data() + from, want.size() - from) == 0) return -1;
    for (std::size_t k = from; k < want.size(); ++k)
        if (got[k] != want[k]) return (long long)k;
    return -1;
}

// ---- a tolerance: elements that may differ in their last bits ----------------------------------
struct Tolerance {
    double rtol = 0, atol = 0;
    std::string element = "float32";
    std::size_t size = 4;  // bytes per element; 0: an integer type, compared bit for bit
    bool on() const { return (rtol > 0 || atol > 0) && size > 0; }
    double worst_rel = 0, worst_abs = 0;

    void set_element(const std::string& name) {
        element = name;
        if (name == "float32") size = 4;
        else if (name == "float64") size = 8;
        else if (name == "float16" || name == "bfloat16") size = 2;
        else if (name == "int8" || name == "uint8" || name == "int16" || name == "uint16" || name == "int32" ||
                 name == "uint32" || name == "int64" || name == "uint64") size = 0;
        else stop(2, "--element %s: choose float32, float64, float16, bfloat16 or an integer type", name.c_str());
    }

    double value(const unsigned char* p) const {
        if (size == 8) { double d; std::memcpy(&d, p, 8); return d; }
        if (size == 4) { float f; std::memcpy(&f, p, 4); return f; }
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        if (element == "bfloat16") {  // the upper half of a float32
            std::uint32_t bits = std::uint32_t(h) << 16;
            float f;
            std::memcpy(&f, &bits, 4);
            return f;
        }
        const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;  // IEEE binary16
        const double sign = (h & 0x8000) ? -1.0 : 1.0;
        if (exponent == 0x1f) return mantissa ? NAN : sign * INFINITY;
        if (exponent == 0) return sign * std::ldexp(double(mantissa), -24);
        return sign * std::ldexp(double(mantissa | 0x400), exponent - 25);
    }

    // The first element of `got` outside the tolerance of `want` (-1: none), the worst errors kept;
    // bytes past the last whole element compared bit for bit (their first difference as -2 - byte).
    long long first_outside(const unsigned char* got, const std::vector<unsigned char>& want) {
        const std::size_t whole = want.size() / size;
        for (std::size_t k = 0; k < whole; ++k) {
            if (std::memcmp(got + k * size, want.data() + k * size, size) == 0) continue;
            const double g = value(got + k * size), w = value(want.data() + k * size);
            if (std::isnan(g) || std::isnan(w)) {
                if (std::isnan(g) && std::isnan(w)) continue;
                return (long long)k;
            }
            if (std::isinf(g) || std::isinf(w)) {
                if (g == w) continue;
                return (long long)k;
            }
            const double diff = std::fabs(g - w);
            if (diff > worst_abs) worst_abs = diff;
            if (w != 0 && diff / std::fabs(w) > worst_rel) worst_rel = diff / std::fabs(w);
            if (!(diff <= atol + rtol * std::fabs(w))) return (long long)k;
        }
        const long long tail = first_difference(got, want, whole * size);
        return tail < 0 ? -1 : -2 - tail;
    }
};

// ---- the replay ------------------------------------------------------------------------------
class Replay {
  public:
    Replay(const Capture& c, int argc, char** argv) : c_(c) {
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            if (a == "--dir" && i + 1 < argc)
                dir_ = argv[++i];
            else if (a == "--passes" && i + 1 < argc)
                passes_ = std::atoi(argv[++i]);
            else if ((a == "--rtol" || a == "--atol") && i + 1 < argc)
                (a == "--rtol" ? tolerance_.rtol : tolerance_.atol) = number(a, argv[++i]);
            else if (a == "--element" && i + 1 < argc)
                tolerance_.set_element(argv[++i]);
            else
                stop(2, "unknown argument %s (usage: %s [--dir REPRODUCER] [--passes N] [--rtol R] [--atol A] "
                     "[--element TYPE])", a.c_str(), argv[0]);
        }
        if (passes_ < 1) stop(2, "--passes must be at least 1");
        at_.resize(c.allocation_count);
        // Placed first: nothing else may take the captured addresses.
        for (std::size_t i = 0; i < c.allocation_count; ++i) at_[i] = place(c, i);
        for (std::size_t i = 0; i < c.allocation_count; ++i) {
            const Allocation& a = c.allocations[i];
            before_.push_back(read_snapshot(dir_, a.before, a.size));
            after_.push_back(a.after ? read_snapshot(dir_, a.after, a.size) : std::vector<unsigned char>());
            write_memory(at_[i], before_[i]);
        }
        for (std::size_t i = 0; i < c.variable_count; ++i) {
            const Variable& v = c.variables[i];
            variable_before_.push_back(read_snapshot(dir_, v.before, v.size));
            variable_after_.push_back(v.after ? read_snapshot(dir_, v.after, v.size) : std::vector<unsigned char>());
            check(v.write(variable_before_[i].data(), v.size), "hipMemcpyToSymbol (restore)");
        }
        arguments_ = read_snapshot(dir_, c.arguments_file, c.arguments_bytes);
    }

    const std::vector<unsigned char>& argument_bytes() const { return arguments_; }

    // Runs `launch` --passes times, restoring what the dispatch changed before each pass after the first.
    template <class Launch>
    int run(Launch launch) {
        std::size_t compared_bytes = 0;
        for (int pass = 1; pass <= passes_; ++pass) {
            if (pass > 1) restore();
            launch();
            check(hipGetLastError(), "the kernel's launch");
            check(hipDeviceSynchronize(), "hipDeviceSynchronize");
            compared_bytes = compare(pass);
        }
        std::string how = "bit-exact";
        if (tolerance_.on()) {  // the same line every run (a run's standard output is compared with the next's)
            char text[160];
            std::snprintf(text, sizeof text, "within rtol=%g,atol=%g as %s", tolerance_.rtol, tolerance_.atol,
                          tolerance_.element.c_str());
            how = text;
        }
        std::printf("replay: %s, dispatch %ld of %s: %d pass%s, %zu allocation%s and %zu variable%s (%zu bytes) "
                    "%s: PASS\n", c_.kernel, c_.dispatch, c_.program, passes_, passes_ == 1 ? "" : "es",
                    c_.allocation_count, c_.allocation_count == 1 ? "" : "s", c_.variable_count,
                    c_.variable_count == 1 ? "" : "s", compared_bytes, how.c_str());
        // What the tolerance let through, for the run's evidence (runners/replay.py reads this line).
        if (tolerance_.on())
            std::fprintf(stderr, "replay: worst relative error %.9g, worst absolute error %.9g\n", tolerance_.worst_rel,
                         tolerance_.worst_abs);
        return 0;
    }

  private:
    void restore() {
        for (std::size_t i = 0; i < c_.allocation_count; ++i)
            if (c_.allocations[i].after) write_memory(at_[i], before_[i]);
        for (std::size_t i = 0; i < c_.variable_count; ++i)
            if (c_.variables[i].after) check(c_.variables[i].write(variable_before_[i].data(), c_.variables[i].size), "hipMemcpyToSymbol (restore)");
    }

    std::size_t compare(int pass) {
        std::size_t bytes = 0;
        for (std::size_t i = 0; i < c_.allocation_count; ++i) {
            const Allocation& a = c_.allocations[i];
            const std::vector<unsigned char>& want = a.after ? after_[i] : before_[i];
            char what[96];
            std::snprintf(what, sizeof what, "allocation %zu at 0x%llx (%zu bytes)", i + 1, a.address, a.size);
            expect(pass, what, host_bytes(at_[i], want.size(), scratch_), want);
            bytes += a.size;
        }
        for (std::size_t i = 0; i < c_.variable_count; ++i) {
            const Variable& v = c_.variables[i];
            const std::vector<unsigned char>& want = v.after ? variable_after_[i] : variable_before_[i];
            scratch_.resize(v.size);
            check(v.read(scratch_.data(), v.size), "hipMemcpyFromSymbol (compare)");
            std::string what = std::string("variable ") + v.name + " (" + std::to_string(v.size) + " bytes)";
            expect(pass, what.c_str(), scratch_.data(), want);
            bytes += v.size;
        }
        return bytes;
    }

    // Stops the replay (exit 1) where `got` is not the captured `want`: bit for bit, or within the tolerance.
    void expect(int pass, const char* what, const unsigned char* got, const std::vector<unsigned char>& want) {
        const long long k = first_difference(got, want);
        if (k < 0) return;
        if (!tolerance_.on())
            stop(1, "pass %d: %s differs from the captured after-state at byte %lld (0x%02x, captured 0x%02x)", pass, what,
                 k, got[k], want[std::size_t(k)]);
        const long long e = tolerance_.first_outside(got, want);
        if (e == -1) return;
        if (e <= -2) {
            const std::size_t b = std::size_t(-2 - e);
            stop(1, "pass %d: %s differs from the captured after-state at byte %zu past its last whole %s (0x%02x, "
                 "captured 0x%02x)", pass, what, b, tolerance_.element.c_str(), got[b], want[b]);
        }
        const std::size_t at = std::size_t(e) * tolerance_.size;
        stop(1, "pass %d: %s differs from the captured after-state at %s element %lld (%.9g, captured %.9g; beyond "
             "rtol=%g,atol=%g)", pass, what, tolerance_.element.c_str(), e, tolerance_.value(got + at),
             tolerance_.value(want.data() + at), tolerance_.rtol, tolerance_.atol);
    }

    static double number(const std::string& flag, const char* text) {
        char* end = nullptr;
        const double v = std::strtod(text, &end);
        if (end == text || *end || !(v >= 0) || std::isinf(v)) stop(2, "%s %s: expected a finite number >= 0", flag.c_str(), text);
        return v;
    }

    const Capture& c_;
    std::string dir_ = ".";
    int passes_ = 10;
    Tolerance tolerance_;
    std::vector<void*> at_;
    std::vector<std::vector<unsigned char>> before_, after_, variable_before_, variable_after_;
    std::vector<unsigned char> arguments_, scratch_;
};

}  // namespace rocm_perf_replay
