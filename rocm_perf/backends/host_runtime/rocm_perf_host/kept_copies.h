// The bytes of device-to-host copies, kept for rocm-perf's output comparison within a tolerance
// (`--tolerance rtol=R,atol=A`: a rewrite may change a float's last bits, so digests cannot judge it).
//
// Environment:
//   ROCM_PERF_HOST_COPIES        where to write the copies' bytes, one file per process ("%pid%" is
//                                replaced); unset or empty: nothing is kept (the default)
//   ROCM_PERF_HOST_COPIES_LIMIT  at most this many bytes per process (default 256 MiB); a copy past
//                                it is cut (or not kept at all), and the log says how much was cut
//
// Each copy's bytes are appended as the copy runs (in stream order, on the stream's worker). At
// exit the trace log gets a `copy` record per copy {corr, bytes, offset, kept, element} (`kept` <
// `bytes` when the limit cut it) and one `copies` record {path, limit, kept, cut}. `element` names
// the element type where the destination pointer's type says it (hipMemcpy(float*, ...) ->
// "float32"; HIP's vector types by their component, __half "float16", bfloat16 "bfloat16"); ""
// where it does not (a void* destination, a 2-D copy): rocm-perf then reads the declared type.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "rocm_perf_host/runtime.h"

struct __half;
struct __hip_bfloat16;
struct hip_bfloat16;

namespace rocm_perf_host {

// The element type of a copy's destination, as rocm-perf names it ("" where unknown).
template <class T>
constexpr const char* element_name() {
    using U = std::remove_cv_t<T>;
    if constexpr (vector_traits<U>::is_vector) {
        return element_name<typename vector_traits<U>::scalar>();
    } else if constexpr (std::is_same_v<U, float>) {
        return "float32";
    } else if constexpr (std::is_same_v<U, double>) {
        return "float64";
    } else if constexpr (std::is_same_v<U, ::__half>) {
        return "float16";
    } else if constexpr (std::is_same_v<U, ::__hip_bfloat16> || std::is_same_v<U, ::hip_bfloat16>) {
        return "bfloat16";
    } else if constexpr (std::is_same_v<U, bool>) {
        return "uint8";
    } else if constexpr (std::is_integral_v<U>) {
        constexpr bool s = std::is_signed_v<U>;
        switch (sizeof(U)) {
            case 1: return s ? "int8" : "uint8";
            case 2: return s ? "int16" : "uint16";
            case 4: return s ? "int32" : "uint32";
            case 8: return s ? "int64" : "uint64";
            default: return "";
        }
    } else {
        return "";
    }
}

struct KeptCopy {
    std::int64_t corr;
    std::size_t bytes, offset, kept;
    const char* element;
};

class CopyKeeper {
public:
    static CopyKeeper& get() {
        static CopyKeeper* keeper = new CopyKeeper;  // never destroyed: the log is written at exit
        return *keeper;
    }
    bool enabled() const { return enabled_; }

    // Appends up to the limit's worth of `n` bytes at `data`, the copy of call `corr`.
    void keep(std::int64_t corr, const void* data, std::size_t n, const char* element) {
        std::lock_guard<std::mutex> lock(m_);
        const std::size_t room = written_ < limit_ ? limit_ - written_ : 0;
        const std::size_t kept = n < room ? n : room;
        if (kept && file_) std::fwrite(data, 1, kept, file_);
        copies_.push_back(KeptCopy{corr, n, written_, kept, element ? element : ""});
        written_ += kept;
        cut_ += n - kept;
    }

private:
    CopyKeeper() {
        const char* where = std::getenv("ROCM_PERF_HOST_COPIES");
        if (!Tracer::enabled || !where || !*where) return;
        path_ = where;
        if (auto at = path_.find("%pid%"); at != std::string::npos) path_.replace(at, 5, std::to_string(getpid()));
        if (const char* limit = std::getenv("ROCM_PERF_HOST_COPIES_LIMIT"); limit && *limit)
            limit_ = static_cast<std::size_t>(std::strtoull(limit, nullptr, 10));
        file_ = std::fopen(path_.c_str(), "wb");
        if (!file_) {
            std::fprintf(stderr, "rocm-perf host runtime: cannot write the kept copies to %s\n", path_.c_str());
            return;
        }
        enabled_ = true;
        log_writers().push_back(&CopyKeeper::write_records);
    }

    static void write_records(std::FILE* f) {
        CopyKeeper& k = get();
        std::lock_guard<std::mutex> lock(k.m_);
        if (k.file_) std::fflush(k.file_);
        for (const KeptCopy& c : k.copies_)
            std::fprintf(f, "{\"type\":\"copy\",\"corr\":%lld,\"bytes\":%zu,\"offset\":%zu,\"kept\":%zu,\"element\":\"%s\"}\n",
                         static_cast<long long>(c.corr), c.bytes, c.offset, c.kept, c.element);
        std::fprintf(f, "{\"type\":\"copies\",\"path\":%s,\"limit\":%zu,\"kept\":%zu,\"cut\":%zu}\n",
                     json_string(k.path_).c_str(), k.limit_, k.written_, k.cut_);
    }

    std::mutex m_;
    std::FILE* file_ = nullptr;
    std::string path_;
    std::size_t limit_ = std::size_t(256) << 20;
    std::size_t written_ = 0, cut_ = 0;
    bool enabled_ = false;
    std::vector<KeptCopy> copies_;
};

inline bool copies_kept() { return CopyKeeper::get().enabled(); }
inline void keep_copy(std::int64_t corr, const void* data, std::size_t n, const char* element) {
    CopyKeeper::get().keep(corr, data, n, element);
}

}  // namespace rocm_perf_host
