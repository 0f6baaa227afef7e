// Capturing one dispatch for `rocm-perf isolate`: at the chosen launch of the chosen kernel the
// runtime waits for all queued work, records every live allocation of the reserved region
// (device_memory.h; address, size, bytes) and the launch (kernel, grid, block, dynamic shared
// bytes, stream, the argument bytes in the kernel's parameter types), runs the kernel, and records
// the allocations it changed. The program then runs on to its end.
//
// Environment (set by `rocm-perf isolate`; nothing is captured without ROCM_PERF_CAPTURE_KERNEL):
//   ROCM_PERF_CAPTURE_KERNEL     a POSIX extended regular expression (glibc's regcomp: std::regex
//                                cost every program's build about 4 s) searched in each launched
//                                kernel's demangled and mangled names; the first kernel it matches
//                                is the one whose launches are counted (`isolate --kernel` rewrites
//                                its Python expression into one: isolate/kernel_pattern.py)
//   ROCM_PERF_CAPTURE_DISPATCH   which of that kernel's launches, from 1 (default 1)
//   ROCM_PERF_CAPTURE_DIR        the directory the capture is written to (it must exist)
//   ROCM_PERF_CAPTURE_MAX_BYTES  refuse to write more snapshot bytes than this (default 2 GiB)
//   ROCM_PERF_CAPTURE_SYMBOLS    comma-separated (mangled) names of __device__/__constant__
//                                variables to record beside the allocations
//   ROCM_PERF_CAPTURE_PARENT     the pid of the `rocm-perf isolate` that started the program: when
//                                it is gone (killed), the program stops too (checked every 100 ms)
//
// What it writes: memory/<i>.before (and memory/<i>.after where the kernel changed allocation i),
// symbols/<i>.before/.after, arguments.bin, then capture.json last (renamed into place: a capture
// without it is incomplete). At exit run.json says which kernels were launched how often, so that
// a kernel never launched, or launched fewer times than asked, is reported as such.
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <regex.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <type_traits>

#include "rocm_perf_host/device_memory.h"
#include "rocm_perf_host/outline.h"

namespace rocm_perf_host {

// A capture's program does not outlive the command that asked for it (a kill -9 of `isolate`
// cannot stop a program started through a project's shell): started before main where asked.
inline bool watch_capture_parent() {
    const char* v = std::getenv("ROCM_PERF_CAPTURE_PARENT");
    if (!v || !*v) return false;
    const pid_t parent = pid_t(std::atol(v));
    std::thread([parent] {
        for (;;) {
            if (kill(parent, 0) != 0 && errno == ESRCH) _exit(137);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }).detach();
    return true;
}
inline const bool capture_parent_watched = watch_capture_parent();

inline std::string demangle_type(const char* mangled) {
    int status = 0;
    char* text = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    if (status != 0 || !text) return mangled;
    std::string out(text);
    std::free(text);
    return out;
}

struct CapturedArgument {
    std::size_t offset = 0, size = 0, align = 1;
    std::string type;  // as the compiler spells it (demangled typeid)
    bool pointer = false;
    bool trivially_copyable = true;
};

// A launch's arguments laid out like a kernarg segment: each at an offset aligned to its type.
struct CapturedArguments {
    std::vector<CapturedArgument> list;
    std::vector<unsigned char> bytes;
};

template <class... Args>
inline CapturedArguments pack_arguments(const Args&... args) {
    CapturedArguments out;
    auto add = [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        CapturedArgument c;
        c.size = sizeof(T);
        c.align = alignof(T);
        c.offset = (out.bytes.size() + c.align - 1) / c.align * c.align;
        c.type = demangle_type(typeid(T).name());
        c.pointer = std::is_pointer_v<T>;
        c.trivially_copyable = std::is_trivially_copyable_v<T>;
        out.bytes.resize(c.offset + c.size, 0);
        if constexpr (std::is_trivially_copyable_v<T>) std::memcpy(out.bytes.data() + c.offset, &a, sizeof(T));
        out.list.push_back(c);
    };
    (add(args), ...);
    return out;
}

struct CapturedSymbol {
    std::string name;
    const void* address = nullptr;
    std::size_t size = 0;
    std::string before_digest;
    bool changed = false;
};

struct CaptureLaunch {
    KernelRecord kernel;
    long dispatch = 0;
    dim3 grid, block;
    std::size_t shmem = 0;
    int stream_id = 0;
    bool cooperative = false;
    CapturedArguments arguments;
    std::vector<RegionAllocation> allocations;
    std::vector<std::string> before_digest;
    std::vector<bool> changed;
    std::vector<CapturedSymbol> symbols;
    std::uint64_t before_bytes = 0, after_bytes = 0;
    std::string refused;  // why nothing was written ("" when the capture was written)
    std::string error;    // a file that could not be written
    std::int64_t start_ns = 0, end_ns = 0;
};

struct CaptureState {
    std::mutex m;
    bool usable = false;
    regex_t pattern{};
    std::string pattern_text, dir, error;
    long dispatch = 1;
    std::uint64_t max_bytes = std::uint64_t(2) << 30;
    std::vector<std::string> symbols;
    std::string chosen;  // the mangled name of the first matching kernel
    long seen = 0;       // its launches so far
    bool captured = false;
    std::map<std::string, bool> matches;        // mangled -> whether the pattern matches it
    std::map<std::string, std::string> demangled;
    std::vector<std::string> launch_order;      // mangled names, first launch order
    std::map<std::string, long> launches;

    CaptureState();
    void write_run_record();
};

inline CaptureState& capture_state();

inline void write_capture_run_record() { capture_state().write_run_record(); }

inline CaptureState::CaptureState() {
    const char* kernel = std::getenv("ROCM_PERF_CAPTURE_KERNEL");
    const char* where = std::getenv("ROCM_PERF_CAPTURE_DIR");
    pattern_text = kernel ? kernel : "";
    dir = where ? where : ".";
    if (const char* n = std::getenv("ROCM_PERF_CAPTURE_DISPATCH"); n && *n) dispatch = std::atol(n);
    if (const char* n = std::getenv("ROCM_PERF_CAPTURE_MAX_BYTES"); n && *n) max_bytes = std::strtoull(n, nullptr, 10);
    if (const char* list = std::getenv("ROCM_PERF_CAPTURE_SYMBOLS"); list && *list) {
        std::string all = list;
        for (std::size_t at = 0; at <= all.size();) {
            std::size_t comma = all.find(',', at);
            if (comma == std::string::npos) comma = all.size();
            if (comma > at) symbols.push_back(all.substr(at, comma - at));
            at = comma + 1;
        }
    }
    if (const int failed = regcomp(&pattern, pattern_text.c_str(), REG_EXTENDED | REG_NOSUB)) {
        char why[256];
        regerror(failed, &pattern, why, sizeof why);
        error = std::string("not a regular expression (POSIX extended): ") + why;
    } else {
        usable = dispatch >= 1;
        if (!usable) error = "ROCM_PERF_CAPTURE_DISPATCH must be at least 1";
    }
    std::atexit(&write_capture_run_record);
}

inline CaptureState& capture_state() {
    static CaptureState* state = new CaptureState;  // never destroyed: read by the exit record
    return *state;
}

inline bool capture_armed() {
    static const bool armed = std::getenv("ROCM_PERF_CAPTURE_KERNEL") != nullptr;
    return armed;
}

// Writes `path` whole (a temporary file renamed into place); false on failure.
inline bool write_whole_file(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) return false;
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) return false;
    return std::rename(tmp.c_str(), path.c_str()) == 0;
}

inline bool write_bytes(const std::string& path, const void* data, std::size_t n) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    const bool ok = n == 0 || std::fwrite(data, 1, n, f) == n;
    return std::fclose(f) == 0 && ok;
}

inline std::string hex_address(std::uintptr_t a) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
    return buf;
}

inline void CaptureState::write_run_record() {
    std::lock_guard<std::mutex> lock(m);
    std::string out = "{\"format\":1,\"pid\":" + std::to_string(getpid()) + ",\"pattern\":" + json_string(pattern_text) +
                      ",\"dispatch\":" + std::to_string(dispatch) + ",\"error\":" + json_string(error) +
                      ",\"captured\":" + (captured ? "true" : "false") + ",\"chosen\":" + json_string(chosen) +
                      ",\"chosen_launches\":" + std::to_string(seen) + ",\"launched\":[";
    for (std::size_t i = 0; i < launch_order.size(); ++i) {
        const std::string& k = launch_order[i];
        out += (i ? "," : "") + std::string("{\"mangled\":") + json_string(k) + ",\"demangled\":" +
               json_string(demangled[k]) + ",\"launches\":" + std::to_string(launches[k]) + ",\"matches\":" +
               (matches[k] ? "true" : "false") + "}";
    }
    out += "]}\n";
    write_whole_file(dir + "/run.json", out);
}

// Whether this launch is the one to capture (counting the chosen kernel's launches in host order).
inline bool capture_chosen(const KernelRecord& k) {
    CaptureState& c = capture_state();
    std::lock_guard<std::mutex> lock(c.m);
    if (!c.usable) return false;
    auto [known, fresh] = c.matches.emplace(k.mangled, false);
    if (fresh) {
        known->second = regexec(&c.pattern, k.demangled.c_str(), 0, nullptr, 0) == 0 ||
                        regexec(&c.pattern, k.mangled.c_str(), 0, nullptr, 0) == 0;
        c.demangled[k.mangled] = k.demangled;
        c.launch_order.push_back(k.mangled);
    }
    ++c.launches[k.mangled];
    if (!known->second || c.captured) return false;
    if (c.chosen.empty()) c.chosen = k.mangled;
    if (k.mangled != c.chosen) return false;
    if (++c.seen != c.dispatch) return false;
    c.captured = true;
    return true;
}

// The capture of this launch when it is the chosen one, else null; its arguments still to add.
ROCM_PERF_OUTLINED std::shared_ptr<CaptureLaunch> chosen_capture(int kernel, KernelIdentity id, const char* source_name,
                                                                dim3 grid, dim3 block, std::size_t shmem, int stream_id,
                                                                bool cooperative);
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED std::shared_ptr<CaptureLaunch> chosen_capture(int kernel, KernelIdentity id, const char* source_name,
                                                                dim3 grid, dim3 block, std::size_t shmem, int stream_id,
                                                                bool cooperative) {
    KernelRecord record;
    if (kernel >= 0) {
        std::lock_guard<std::mutex> lock(tracer().m);
        record = tracer().kernels[std::size_t(kernel)];
    } else {
        record = name_kernel(id, source_name);
    }
    if (!capture_chosen(record)) return nullptr;
    auto c = std::make_shared<CaptureLaunch>();
    c->kernel = record;
    c->dispatch = capture_state().dispatch;
    c->grid = grid;
    c->block = block;
    c->shmem = shmem;
    c->stream_id = stream_id;
    c->cooperative = cooperative;
    return c;
}
#endif

// The capture of this launch when it is the chosen one, else null.
template <class... Args>
inline std::shared_ptr<CaptureLaunch> capture_if_chosen(int kernel, KernelIdentity id, const char* source_name, dim3 grid,
                                                        dim3 block, std::size_t shmem, int stream_id, bool cooperative,
                                                        const Args&... args) {
    auto c = chosen_capture(kernel, id, source_name, grid, block, shmem, stream_id, cooperative);
    if (c) c->arguments = pack_arguments(args...);
    return c;
}

// Every live allocation and requested variable, before the kernel runs (on the stream's worker,
// with nothing else in flight).
inline void capture_before(CaptureLaunch& c) {
    CaptureState& state = capture_state();
    DeviceRegion& region = device_region();
    if (!region.base) {
        c.refused = "addresses: device memory is not at reproducible addresses here (" + region.refusal + ")";
        return;
    }
    c.allocations = region.allocations();
    for (const auto& a : c.allocations) c.before_bytes += a.requested;
    for (const std::string& name : state.symbols) {
        CapturedSymbol s;
        s.name = name;
        void* address = dlsym(RTLD_DEFAULT, name.c_str());
        Dl_info info;
        void* entry_slot = nullptr;
        if (address && dladdr1(address, &info, &entry_slot, RTLD_DL_SYMENT) && entry_slot) {
            const auto* entry = static_cast<const ElfW(Sym)*>(entry_slot);
            s.address = address;
            s.size = entry->st_size;
            c.before_bytes += s.size;
        }
        c.symbols.push_back(s);
    }
    if (c.before_bytes > state.max_bytes) {
        c.refused = "snapshot";
        return;
    }
    mkdir((state.dir + "/memory").c_str(), 0755);
    mkdir((state.dir + "/symbols").c_str(), 0755);
    for (std::size_t i = 0; i < c.allocations.size(); ++i) {
        const auto& a = c.allocations[i];
        const void* p = reinterpret_cast<const void*>(a.address);
        c.before_digest.push_back(digest_bytes(p, a.requested));
        if (!write_bytes(state.dir + "/memory/" + std::to_string(i) + ".before", p, a.requested)) c.error = "memory/" + std::to_string(i) + ".before";
    }
    for (std::size_t i = 0; i < c.symbols.size(); ++i) {
        CapturedSymbol& s = c.symbols[i];
        if (!s.address) continue;
        s.before_digest = digest_bytes(s.address, s.size);
        if (!write_bytes(state.dir + "/symbols/" + std::to_string(i) + ".before", s.address, s.size)) c.error = "symbols/" + std::to_string(i) + ".before";
    }
    if (!write_bytes(state.dir + "/arguments.bin", c.arguments.bytes.data(), c.arguments.bytes.size())) c.error = "arguments.bin";
}

// What the kernel changed, then capture.json.
inline void capture_after(CaptureLaunch& c) {
    CaptureState& state = capture_state();
    if (c.refused.empty()) {
        for (std::size_t i = 0; i < c.allocations.size(); ++i) {
            const auto& a = c.allocations[i];
            const void* p = reinterpret_cast<const void*>(a.address);
            const bool changed = digest_bytes(p, a.requested) != c.before_digest[i];
            c.changed.push_back(changed);
            if (!changed) continue;
            c.after_bytes += a.requested;
            if (!write_bytes(state.dir + "/memory/" + std::to_string(i) + ".after", p, a.requested)) c.error = "memory/" + std::to_string(i) + ".after";
        }
        for (std::size_t i = 0; i < c.symbols.size(); ++i) {
            CapturedSymbol& s = c.symbols[i];
            if (!s.address) continue;
            s.changed = digest_bytes(s.address, s.size) != s.before_digest;
            if (!s.changed) continue;
            c.after_bytes += s.size;
            if (!write_bytes(state.dir + "/symbols/" + std::to_string(i) + ".after", s.address, s.size)) c.error = "symbols/" + std::to_string(i) + ".after";
        }
        if (c.before_bytes + c.after_bytes > state.max_bytes) c.refused = "snapshot";
    }
    DeviceRegion& region = device_region();
    std::string out = "{\"format\":1,\"pid\":" + std::to_string(getpid());
    out += ",\"kernel\":{\"mangled\":" + json_string(c.kernel.mangled) + ",\"demangled\":" + json_string(c.kernel.demangled) +
           ",\"naming\":" + json_string(c.kernel.naming) + "}";
    out += ",\"dispatch\":" + std::to_string(c.dispatch);
    char dims[160];
    std::snprintf(dims, sizeof dims, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shmem\":%zu,\"stream\":%d", c.grid.x, c.grid.y,
                  c.grid.z, c.block.x, c.block.y, c.block.z, c.shmem, c.stream_id);
    out += dims;
    out += std::string(",\"cooperative\":") + (c.cooperative ? "true" : "false");
    out += ",\"kernel_ns\":" + std::to_string(c.end_ns - c.start_ns);
    out += ",\"region\":" + (region.base ? "{\"base\":\"" + hex_address(region.base) + "\",\"size\":" + std::to_string(region.size) +
                                               ",\"page\":" + std::to_string(region.page) + "}"
                                         : std::string("null"));
    out += ",\"refused\":" + json_string(c.refused) + ",\"error\":" + json_string(c.error);
    out += ",\"snapshot_bytes\":" + std::to_string(c.before_bytes + c.after_bytes) + ",\"max_bytes\":" + std::to_string(state.max_bytes);
    out += ",\"arguments\":[";
    for (std::size_t i = 0; i < c.arguments.list.size(); ++i) {
        const auto& a = c.arguments.list[i];
        out += (i ? "," : "") + std::string("{\"offset\":") + std::to_string(a.offset) + ",\"size\":" + std::to_string(a.size) +
               ",\"align\":" + std::to_string(a.align) + ",\"type\":" + json_string(a.type) + ",\"pointer\":" +
               (a.pointer ? "true" : "false") + ",\"trivially_copyable\":" + (a.trivially_copyable ? "true" : "false") + "}";
    }
    out += "],\"allocations\":[";
    for (std::size_t i = 0; i < c.allocations.size(); ++i) {
        const auto& a = c.allocations[i];
        const bool changed = i < c.changed.size() && c.changed[i];
        out += (i ? "," : "") + std::string("{\"address\":\"") + hex_address(a.address) + "\",\"size\":" + std::to_string(a.requested) +
               ",\"reserved\":" + std::to_string(a.reserved) + ",\"kind\":\"" + memory_kind_name(a.kind) + "\",\"changed\":" +
               (changed ? "true" : "false") + "}";
    }
    out += "],\"symbols\":[";
    for (std::size_t i = 0; i < c.symbols.size(); ++i) {
        const auto& s = c.symbols[i];
        out += (i ? "," : "") + std::string("{\"name\":") + json_string(s.name) + ",\"found\":" + (s.address ? "true" : "false") +
               ",\"size\":" + std::to_string(s.size) + ",\"changed\":" + (s.changed ? "true" : "false") + "}";
    }
    out += "]}\n";
    if (!write_whole_file(state.dir + "/capture.json", out))
        std::fprintf(stderr, "rocm-perf host runtime: cannot write the capture to %s\n", state.dir.c_str());
}

}  // namespace rocm_perf_host
