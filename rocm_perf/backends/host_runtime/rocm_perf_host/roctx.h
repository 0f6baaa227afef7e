// roctx on the host runtime: ranges and marks recorded with the same clock and thread ids as
// launches, written into the trace log as `marker` records (backends/host_trace.py pairs them
// into ranges as rocprofv3 --marker-trace does). Programs reach it through either include path
// they use on ROCm: <rocprofiler-sdk-roctx/roctx.h> (ROCm 6.2+) or <roctracer/roctx.h>.
//
// Return values follow the ROCm libraries: roctxRangePushA returns the nesting level it opened
// (0 for the outermost), roctxRangePop the level left open, or -1 when nothing was open;
// roctxRangeStartA returns a process-wide id for roctxRangeStop.
#pragma once

#include <hip/hip_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>

typedef std::uint64_t roctx_range_id_t;
typedef std::uint64_t roctx_thread_id_t;
struct hsa_agent_s;

namespace rocm_perf_host {

struct MarkerRecord {
    const char* op;  // "push", "pop", "start", "stop", "mark"
    std::string message;
    std::int64_t time;
    long tid;
    std::uint64_t id;  // start/stop: the range id
};

struct MarkerLog {
    std::mutex m;
    std::deque<MarkerRecord> records;
    std::atomic<roctx_range_id_t> next_range{1};

    void add(const char* op, const char* message, std::uint64_t id = 0) {
        if (!Tracer::enabled) return;
        MarkerRecord r{op, message ? message : "", now_ns(), os_thread_id(), id};
        std::lock_guard<std::mutex> lock(m);
        records.push_back(std::move(r));
    }

    static void write(std::FILE* f);
};

inline MarkerLog& marker_log() {
    // never destroyed (the log is written by an atexit handler); registers its writer once
    static MarkerLog* log = [] {
        auto* created = new MarkerLog;
        log_writers().push_back(&MarkerLog::write);
        return created;
    }();
    return *log;
}

inline void MarkerLog::write(std::FILE* f) {
    MarkerLog& log = marker_log();
    std::lock_guard<std::mutex> lock(log.m);
    for (const auto& r : log.records)
        std::fprintf(f, "{\"type\":\"marker\",\"op\":\"%s\",\"message\":%s,\"time\":%lld,\"tid\":%ld,\"id\":%llu}\n",
                     r.op, json_string(r.message).c_str(), static_cast<long long>(r.time), r.tid,
                     static_cast<unsigned long long>(r.id));
}

inline thread_local int roctx_depth = 0;

}  // namespace rocm_perf_host

inline void roctxMarkA(const char* message) { rocm_perf_host::marker_log().add("mark", message); }

inline int roctxRangePushA(const char* message) {
    rocm_perf_host::marker_log().add("push", message);
    return rocm_perf_host::roctx_depth++;
}

inline int roctxRangePop() {
    rocm_perf_host::marker_log().add("pop", nullptr);  // an unmatched pop is recorded too: the trace reports it
    if (rocm_perf_host::roctx_depth == 0) return -1;
    return --rocm_perf_host::roctx_depth;
}

inline roctx_range_id_t roctxRangeStartA(const char* message) {
    auto& log = rocm_perf_host::marker_log();
    const roctx_range_id_t id = log.next_range.fetch_add(1, std::memory_order_relaxed);
    log.add("start", message, id);
    return id;
}

inline void roctxRangeStop(roctx_range_id_t id) { rocm_perf_host::marker_log().add("stop", nullptr, id); }

// Tool control and naming: accepted and ignored (the host tracer always records, names nothing).
inline int roctxProfilerPause(roctx_thread_id_t) { return 0; }
inline int roctxProfilerResume(roctx_thread_id_t) { return 0; }
inline int roctxGetThreadId(roctx_thread_id_t* tid) {
    if (tid) *tid = static_cast<roctx_thread_id_t>(rocm_perf_host::os_thread_id());
    return 0;
}
inline int roctxNameOsThread(const char*) { return 0; }
inline int roctxNameHsaAgent(const char*, const hsa_agent_s*) { return 0; }
inline int roctxNameHipDevice(const char*, int) { return 0; }
inline int roctxNameHipStream(const char*, const ihipStream_t*) { return 0; }

#define roctxMark(message) roctxMarkA(message)
#define roctxRangePush(message) roctxRangePushA(message)
#define roctxRangeStart(message) roctxRangeStartA(message)
