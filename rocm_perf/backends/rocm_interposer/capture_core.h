// The parts of the rocm backend's capture interposer (interposer.cpp) that need no GPU: what the
// environment asks for, which launch is the one, how the argument bytes are laid out, and the
// capture.json / run.json it writes (the format the host runtime's capture.h writes, read by
// rocm_perf/isolate/capture.py). Plain C++17: tests/test_rocm_capture.py builds and runs these
// with g++ on a machine without a GPU.
//
// Environment (set by `rocm-perf isolate --backend rocm`):
//   ROCM_PERF_CAPTURE_KERNEL, _DISPATCH, _DIR, _MAX_BYTES, _SYMBOLS, _PARENT   as capture.h's
//   ROCM_PERF_CAPTURE_ARG_SIZES   the kernel's parameters as size:align,size:align,... (from its
//                                 declaration, through libclang): a void** launch carries no sizes
#pragma once

#include "../host_runtime/rocm_perf_host/json_string.h"
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

namespace rocm_perf_capture {

struct Parameter {
    std::size_t size = 0, align = 1, offset = 0;
};

// "8:8,4:4,8:8" -> parameters at kernarg offsets (each aligned to its own alignment, in order).
inline std::vector<Parameter> parameter_layout(const std::string& spec, std::string* error) {
    std::vector<Parameter> out;
    std::size_t at = 0, offset = 0;
    while (at < spec.size()) {
        std::size_t comma = spec.find(',', at);
        if (comma == std::string::npos) comma = spec.size();
        const std::string item = spec.substr(at, comma - at);
        const std::size_t colon = item.find(':');
        char* end = nullptr;
        Parameter p;
        p.size = std::strtoull(item.c_str(), &end, 10);
        p.align = colon == std::string::npos ? 1 : std::strtoull(item.c_str() + colon + 1, nullptr, 10);
        if (p.size == 0 || p.align == 0 || (p.align & (p.align - 1)) != 0) {
            if (error) *error = "ROCM_PERF_CAPTURE_ARG_SIZES: bad item '" + item + "' (want size:align, align a power of two)";
            return {};
        }
        offset = (offset + p.align - 1) / p.align * p.align;
        p.offset = offset;
        offset += p.size;
        out.push_back(p);
        at = comma + 1;
    }
    return out;
}

inline std::size_t layout_bytes(const std::vector<Parameter>& ps) {
    return ps.empty() ? 0 : ps.back().offset + ps.back().size;
}

using rocm_perf_json::json_string;

inline std::string hex_address(std::uintptr_t a) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
    return buf;
}

// A 64-bit mix of bytes: equal bytes, equal digests (whether the dispatch changed an allocation).
inline std::uint64_t digest(const void* data, std::size_t n) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    std::uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h ^ (h >> 31);
}

// What the environment asks for, and which launch of which kernel it is, counted in host order.
struct Request {
    bool usable = false;
    std::string pattern_text, dir = ".", error;
    std::regex pattern;
    long dispatch = 1;
    std::uint64_t max_bytes = std::uint64_t(2) << 30;
    std::vector<std::string> symbols;
    std::vector<Parameter> parameters;

    std::mutex m;
    std::string chosen;
    long seen = 0;
    bool captured = false;
    std::map<std::string, bool> matches;
    std::vector<std::string> launch_order;
    std::map<std::string, long> launches;

    Request() {
        Request& r = *this;
        const char* k = std::getenv("ROCM_PERF_CAPTURE_KERNEL");
        r.pattern_text = k ? k : "";
        if (const char* d = std::getenv("ROCM_PERF_CAPTURE_DIR"); d && *d) r.dir = d;
        if (const char* n = std::getenv("ROCM_PERF_CAPTURE_DISPATCH"); n && *n) r.dispatch = std::atol(n);
        if (const char* n = std::getenv("ROCM_PERF_CAPTURE_MAX_BYTES"); n && *n) r.max_bytes = std::strtoull(n, nullptr, 10);
        if (const char* list = std::getenv("ROCM_PERF_CAPTURE_SYMBOLS"); list && *list) {
            std::string all = list;
            for (std::size_t at = 0; at <= all.size();) {
                std::size_t comma = all.find(',', at);
                if (comma == std::string::npos) comma = all.size();
                if (comma > at) r.symbols.push_back(all.substr(at, comma - at));
                at = comma + 1;
            }
        }
        const char* sizes = std::getenv("ROCM_PERF_CAPTURE_ARG_SIZES");
        r.parameters = parameter_layout(sizes ? sizes : "", &r.error);
        try {
            r.pattern = std::regex(r.pattern_text, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
            r.error = std::string("not a regular expression (ECMAScript): ") + e.what();
        }
        if (r.error.empty() && r.dispatch < 1) r.error = "ROCM_PERF_CAPTURE_DISPATCH must be at least 1";
        r.usable = r.error.empty() && !r.pattern_text.empty();
    }

    // Whether the launch of `name` (as the runtime names the kernel) is the one to capture.
    bool chosen_launch(const std::string& name, const std::string& demangled) {
        std::lock_guard<std::mutex> lock(m);
        auto [known, fresh] = matches.emplace(name, false);
        if (fresh) {
            known->second = usable && (std::regex_search(demangled, pattern) || std::regex_search(name, pattern));
            launch_order.push_back(name);
        }
        ++launches[name];
        if (!known->second || captured) return false;
        if (chosen.empty()) chosen = name;
        if (name != chosen || ++seen != dispatch) return false;
        captured = true;
        return true;
    }

    std::string run_record(const std::map<std::string, std::string>& demangled) {
        std::lock_guard<std::mutex> lock(m);
        std::string out = "{\"format\":1,\"pattern\":" + json_string(pattern_text) + ",\"dispatch\":" + std::to_string(dispatch) +
                          ",\"error\":" + json_string(error) + ",\"captured\":" + (captured ? "true" : "false") +
                          ",\"chosen\":" + json_string(chosen) + ",\"chosen_launches\":" + std::to_string(seen) + ",\"launched\":[";
        for (std::size_t i = 0; i < launch_order.size(); ++i) {
            const std::string& k = launch_order[i];
            auto d = demangled.find(k);
            out += (i ? "," : "") + std::string("{\"mangled\":") + json_string(k) + ",\"demangled\":" +
                   json_string(d == demangled.end() ? k : d->second) + ",\"launches\":" + std::to_string(launches[k]) +
                   ",\"matches\":" + (matches[k] ? "true" : "false") + "}";
        }
        return out + "]}\n";
    }
};

struct Allocation {
    std::uintptr_t address;
    std::size_t size;
    bool host;
    bool changed = false;
};

struct Launch {
    std::string mangled, demangled;
    long dispatch = 0;
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    std::size_t shmem = 0;
    int stream = 0;
    std::vector<Parameter> parameters;
    std::vector<Allocation> allocations;
    std::uint64_t snapshot_bytes = 0, max_bytes = 0;
    std::string refused, error;
    std::int64_t kernel_ns = 0;
};

// capture.json as rocm_perf/isolate/capture.py reads it (the GPU's own addresses: no region).
inline std::string capture_record(const Launch& c) {
    std::string out = "{\"format\":1,\"kernel\":{\"mangled\":" + json_string(c.mangled) + ",\"demangled\":" +
                      json_string(c.demangled) + ",\"naming\":\"symbol\"},\"dispatch\":" + std::to_string(c.dispatch);
    char dims[160];
    std::snprintf(dims, sizeof dims, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shmem\":%zu,\"stream\":%d", c.grid[0],
                  c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.shmem, c.stream);
    out += dims;
    out += ",\"cooperative\":false,\"kernel_ns\":" + std::to_string(c.kernel_ns);
    out += ",\"region\":{\"base\":\"0x0\",\"size\":0,\"page\":0,\"kind\":\"gpu\"}";
    out += ",\"refused\":" + json_string(c.refused) + ",\"error\":" + json_string(c.error);
    out += ",\"snapshot_bytes\":" + std::to_string(c.snapshot_bytes) + ",\"max_bytes\":" + std::to_string(c.max_bytes);
    out += ",\"arguments\":[";
    for (std::size_t i = 0; i < c.parameters.size(); ++i) {
        const Parameter& p = c.parameters[i];
        // The interposer knows sizes, not types: the harness rebuilds the arguments as the kernel's parameters.
        out += (i ? "," : "") + std::string("{\"offset\":") + std::to_string(p.offset) + ",\"size\":" + std::to_string(p.size) +
               ",\"align\":" + std::to_string(p.align) + ",\"type\":\"\",\"pointer\":false,\"trivially_copyable\":true}";
    }
    out += "],\"allocations\":[";
    for (std::size_t i = 0; i < c.allocations.size(); ++i) {
        const Allocation& a = c.allocations[i];
        out += (i ? "," : "") + std::string("{\"address\":\"") + hex_address(a.address) + "\",\"size\":" + std::to_string(a.size) +
               ",\"reserved\":" + std::to_string(a.size) + ",\"kind\":\"" + (a.host ? "host" : "device") + "\",\"changed\":" +
               (a.changed ? "true" : "false") + "}";
    }
    return out + "],\"symbols\":[]}\n";
}

}  // namespace rocm_perf_capture
