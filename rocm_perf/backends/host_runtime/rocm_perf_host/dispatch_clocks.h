// Steady clocks per dispatch: what the threads that ran a launch's blocks spent on it, beside
// the wall-clock start/end the tracer keeps.
//
// - CPU time: CLOCK_THREAD_CPUTIME_ID of every block worker (the stream's worker and the pool
//   helpers), read at the start and end of its share of the launch and summed. Time a thread
//   spends descheduled (another process on its core) is not counted, so a loaded machine
//   stretches the wall clock but not this clock (user + system time of the thread).
// - Retired instructions and cycles (user space only, so that it needs no privilege beyond
//   perf_event_paranoid <= 2): a perf_event_open counter group per block worker thread, counting
//   only while that thread runs. Where the kernel refuses (paranoid 3, a container's seccomp
//   filter, a VM without a virtual PMU) the dispatches simply carry no counts, and the log says
//   why. Counts of a group the kernel multiplexed are scaled by enabled/running time, as perf
//   stat does, and the log counts how many dispatches were scaled.
// - Pinning (ROCM_PERF_HOST_PIN=1): each block worker thread binds itself to one CPU of the
//   process's allowed set (sched_setaffinity), highest CPU first, in the order the threads first
//   run blocks, so the baseline and the candidate of a pair run on the same core and a thread
//   never migrates mid-launch. Where that is refused the thread runs unpinned and the log says so.
// - Speed probe: before a launch, the stream's worker times a fixed load-heavy loop (a 9-point
//   stencil over 32 KiB, in L1) in its own CPU time, at most once per 50 ms, and the
//   launch carries the latest reading. Some virtual machines run load-heavy code at two speeds
//   about 2x apart for stretches of a second or more (the host core's other hardware thread
//   taking the load ports, most likely), which CPU time cannot see; a kernel's CPU time divided
//   by the probe's cancels most of it (--metric probed-path). The probe runs outside the
//   launch's start/end and outside its CPU time. A reading taken while another launch of the
//   process ran (streams overlapping) is dropped, and the launches it would have served carry
//   none: the other launch's work slowed the probe by as much as 2x, by an amount that depends
//   on what that launch runs, so a candidate would have changed its own yardstick (pipeline.cu).
//
// The runtime calls three hooks: a DispatchClockScope around each thread's share of a launch
// (BlockPool::work_on), record_dispatch_cost() when a launch completes, and the log writer this
// header registers for the `dispatch_cost` and `clocks` records (backends/host_trace.py).
//
// Environment: ROCM_PERF_HOST_PIN (1 = pin block workers; default 0), ROCM_PERF_HOST_PERF
// (0 = no perf counters; default 1), ROCM_PERF_HOST_PROBE (0 = no speed probe; default 1).
// Clocks are read only when the trace log is written (ROCM_PERF_HOST_LOG) and not at all in a
// -DROCM_PERF_NO_TRACE build.
#pragma once

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#if defined(__linux__) && __has_include(<linux/perf_event.h>)
#include <linux/perf_event.h>
#define ROCM_PERF_HAVE_PERF_EVENTS 1
#endif

namespace rocm_perf_host {

// runtime.h defines these: the writers of extra record types in the trace log.
using LogWriter = void (*)(std::FILE*);
inline std::vector<LogWriter>& log_writers();

// What one launch cost, summed over the threads that ran its blocks.
struct DispatchCost {
    std::atomic<std::int64_t> cpu_ns{0};
    std::atomic<std::uint64_t> instructions{0};
    std::atomic<std::uint64_t> cycles{0};
    std::atomic<unsigned> threads{0};         // threads that ran some of it
    std::atomic<unsigned> counted_threads{0};  // ... of which with perf counts
    std::atomic<bool> scaled{false};           // some count was multiplexed and scaled
};

struct DispatchCostRecord {
    std::int64_t corr;
    std::int64_t cpu_ns;
    std::uint64_t instructions, cycles;
    bool counted;  // every thread had perf counts
    bool scaled;
    std::int64_t probe_ns;  // the speed probe's CPU time before the launch; 0 = none
};

struct ClockState {
    std::mutex m;
    std::deque<DispatchCostRecord> records;
    bool enabled = false;
    bool pin = false;
    bool perf_wanted = true;
    bool probe_wanted = true;
    std::vector<int> allowed_cpus;  // the process's affinity at start, for pinning
    unsigned next_cpu = 0;
    std::string pin_status = "off";
    std::string perf_status = "off";
    std::uint64_t scaled_dispatches = 0;
    std::atomic<bool> perf_refused{false};
};

inline void write_clock_records(std::FILE* f);

inline int clock_env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    return (v && *v) ? std::atoi(v) : fallback;
}

inline ClockState& clock_state() {
    static ClockState* s = [] {
        auto* state = new ClockState;  // never destroyed: the log is written at exit
#ifndef ROCM_PERF_NO_TRACE
        const char* log = std::getenv("ROCM_PERF_HOST_LOG");
        state->enabled = log && *log;
#endif
        state->pin = clock_env_int("ROCM_PERF_HOST_PIN", 0) != 0;
        state->perf_wanted = clock_env_int("ROCM_PERF_HOST_PERF", 1) != 0;
        state->probe_wanted = clock_env_int("ROCM_PERF_HOST_PROBE", 1) != 0;
#ifdef ROCM_PERF_HAVE_PERF_EVENTS
        state->perf_status = !state->enabled ? "off" : state->perf_wanted ? "not yet opened" : "off (ROCM_PERF_HOST_PERF=0)";
#else
        state->perf_status = "unavailable (built without linux/perf_event.h)";
#endif
        if (state->pin) {
            cpu_set_t set;
            CPU_ZERO(&set);
            if (sched_getaffinity(0, sizeof set, &set) == 0) {
                for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu)
                    if (CPU_ISSET(cpu, &set)) state->allowed_cpus.push_back(cpu);
                state->pin_status = "";
            } else {
                state->pin_status = std::string("refused: sched_getaffinity: ") + std::strerror(errno);
                state->pin = false;
            }
        }
        if (state->enabled) log_writers().push_back(&write_clock_records);
        return state;
    }();
    return *s;
}

inline std::int64_t thread_cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The perf counter group of this thread: cycles (leader) and instructions.
struct ThreadCounters {
    int leader = -1, member = -1;
    bool tried = false;
    ThreadCounters() = default;
    ThreadCounters(const ThreadCounters&) = delete;
    ThreadCounters& operator=(const ThreadCounters&) = delete;
    // A cooperative launch runs each block on a thread of its own: its counters go with it.
    ~ThreadCounters() {
        if (member >= 0) close(member);
        if (leader >= 0) close(leader);
    }
    struct Reading {
        std::uint64_t cycles = 0, instructions = 0, enabled = 0, running = 0;
    };
    bool read(Reading& out) const {
#ifdef ROCM_PERF_HAVE_PERF_EVENTS
        std::uint64_t buf[5];  // nr, time_enabled, time_running, cycles, instructions
        if (leader < 0 || ::read(leader, buf, sizeof buf) != static_cast<ssize_t>(sizeof buf) || buf[0] != 2) return false;
        out.enabled = buf[1];
        out.running = buf[2];
        out.cycles = buf[3];
        out.instructions = buf[4];
        return true;
#else
        (void)out;
        return false;
#endif
    }
};

inline std::string perf_refusal(int err) {
    std::string why = std::strerror(err);
    if (FILE* f = std::fopen("/proc/sys/kernel/perf_event_paranoid", "r")) {
        int level = 0;
        if (std::fscanf(f, "%d", &level) == 1) why += " (perf_event_paranoid " + std::to_string(level) + ")";
        std::fclose(f);
    }
    return "refused: " + why;
}

inline void open_thread_counters(ThreadCounters& c) {
    c.tried = true;
#ifdef ROCM_PERF_HAVE_PERF_EVENTS
    ClockState& s = clock_state();
    if (!s.perf_wanted || s.perf_refused.load(std::memory_order_relaxed)) return;
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_CPU_CYCLES;
    attr.exclude_kernel = 1;  // user space only: allowed up to perf_event_paranoid 2
    attr.exclude_hv = 1;
    attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    const int leader = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
    const int leader_errno = errno;
    int member = -1;
    if (leader >= 0) {
        attr.config = PERF_COUNT_HW_INSTRUCTIONS;
        member = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, leader, PERF_FLAG_FD_CLOEXEC));
    }
    std::lock_guard<std::mutex> lock(s.m);
    if (leader < 0 || member < 0) {
        const int err = leader < 0 ? leader_errno : errno;
        if (leader >= 0) close(leader);
        s.perf_refused.store(true, std::memory_order_relaxed);
        s.perf_status = perf_refusal(err);
        return;
    }
    c.leader = leader;
    c.member = member;
    s.perf_status = "instructions, cycles (user space, per block worker thread)";
#endif
}

inline void pin_this_thread() {
    ClockState& s = clock_state();
    std::lock_guard<std::mutex> lock(s.m);
    if (!s.pin || s.allowed_cpus.empty()) return;
    const int cpu = s.allowed_cpus[s.next_cpu++ % s.allowed_cpus.size()];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    std::string entry;
    if (sched_setaffinity(0, sizeof set, &set) == 0) {
        entry = "cpu " + std::to_string(cpu);
    } else {
        entry = "refused: sched_setaffinity cpu " + std::to_string(cpu) + ": " + std::strerror(errno);
    }
    if (s.pin_status.find(entry) == std::string::npos) s.pin_status += (s.pin_status.empty() ? "" : "; ") + entry;
}

inline thread_local ThreadCounters thread_counters;
inline thread_local bool thread_clock_ready = false;

// The hook around one thread's share of a launch: adds that thread's CPU time (and counts) to `cost`.
struct DispatchClockScope {
    DispatchCost* cost = nullptr;
    std::int64_t cpu0 = 0;
    ThreadCounters::Reading r0;
    bool counted = false;

    explicit DispatchClockScope(DispatchCost& c) {
        if (!clock_state().enabled) return;
        if (!thread_clock_ready) {
            thread_clock_ready = true;
            pin_this_thread();
            open_thread_counters(thread_counters);
        }
        cost = &c;
        counted = thread_counters.read(r0);
        cpu0 = thread_cpu_ns();
    }
    ~DispatchClockScope() {
        if (!cost) return;
        const std::int64_t cpu1 = thread_cpu_ns();
        ThreadCounters::Reading r1;
        const bool counted_end = counted && thread_counters.read(r1);
        cost->cpu_ns.fetch_add(cpu1 - cpu0, std::memory_order_relaxed);
        cost->threads.fetch_add(1, std::memory_order_relaxed);
        if (!counted_end) return;
        const std::uint64_t enabled = r1.enabled - r0.enabled, running = r1.running - r0.running;
        if (running == 0 && enabled != 0) return;  // the group never got a counter: no count
        double scale = 1.0;
        if (running < enabled) {
            scale = double(enabled) / double(running);
            cost->scaled.store(true, std::memory_order_relaxed);
        }
        cost->instructions.fetch_add(std::uint64_t(std::llround(double(r1.instructions - r0.instructions) * scale)),
                                     std::memory_order_relaxed);
        cost->cycles.fetch_add(std::uint64_t(std::llround(double(r1.cycles - r0.cycles) * scale)),
                               std::memory_order_relaxed);
        cost->counted_threads.fetch_add(1, std::memory_order_relaxed);
    }
    DispatchClockScope(const DispatchClockScope&) = delete;
    DispatchClockScope& operator=(const DispatchClockScope&) = delete;
};

// The speed probe: a fixed amount of load-heavy work, timed in this thread's CPU time.
// The same machine code at the same alignments in every build of every program: one copy, never
// inlined, on a 64-byte boundary, over one page-aligned block per thread. Inlined, it was a copy in
// each kernel's launcher, placed where the kernels' code left room, over thread-local arrays placed
// among the program's own: in builds of transpose.cu's original and an unrolled candidate it ran
// 35-56 % slower in the candidate's, and probed-path read a gain of 7-13 % (CPU time) as 32-40 %.
struct alignas(4096) SpeedProbeArrays {
    static constexpr int kPoints = 4096;  // 2 x 16 KiB: in L1
    float out[kPoints];
    float in[kPoints];
};

__attribute__((noinline, aligned(64))) inline std::int64_t time_speed_probe() {
    constexpr int kPoints = SpeedProbeArrays::kPoints, kRepeats = 144;  // about 1.5 ms on a 2020s server core
    alignas(64) static const float weights[9] = {0.05f, 0.1f, 0.1f, 0.15f, 0.2f, 0.15f, 0.1f, 0.1f, 0.05f};
    static thread_local SpeedProbeArrays* arrays = nullptr;
    if (!arrays) {
        void* p = std::aligned_alloc(alignof(SpeedProbeArrays), sizeof(SpeedProbeArrays));
        if (!p) return 0;  // no memory for it: no reading, as with the probe off
        arrays = static_cast<SpeedProbeArrays*>(std::memset(p, 0, sizeof(SpeedProbeArrays)));
    }
    SpeedProbeArrays& a = *arrays;  // two arrays of one object: the compiler vectorizes across i
    const std::int64_t t0 = thread_cpu_ns();
    for (int r = 0; r < kRepeats; ++r) {
        for (int i = 4; i < kPoints - 4; ++i) {
            float acc = 0.0f;
            for (int k = -4; k <= 4; ++k) acc += weights[k + 4] * a.in[i + k];
            a.out[i] = acc;
        }
        __asm__ volatile("" : : "r"(a.out) : "memory");  // keep every repeat
    }
    return thread_cpu_ns() - t0;
}

// Launches running now and launches begun so far (launch_begins/launch_ends around each): a
// probe is clean when none ran at its start and none began before its end.
inline std::atomic<int> launches_running{0};
inline std::atomic<std::uint64_t> launches_begun{0};

inline void launch_begins() {
    launches_begun.fetch_add(1, std::memory_order_seq_cst);
    launches_running.fetch_add(1, std::memory_order_seq_cst);
}
inline void launch_ends() { launches_running.fetch_sub(1, std::memory_order_seq_cst); }

// The probe reading a launch about to start carries: a fresh one when the last is 50 ms old
// (so that a stream of short launches costs at most a few percent), else the last; 0 = none
// (probe off, or the last reading was taken beside another launch).
inline std::int64_t probe_before_launch(std::int64_t now) {
    constexpr std::int64_t kSpacingNs = 50000000;
    static thread_local std::int64_t last_ns = 0, taken_at = 0;
    static thread_local bool taken = false;
    ClockState& s = clock_state();
    if (!s.enabled || !s.probe_wanted) return 0;
    if (!taken || now - taken_at >= kSpacingNs) {
        const std::uint64_t begun = launches_begun.load(std::memory_order_seq_cst);
        const bool alone = launches_running.load(std::memory_order_seq_cst) == 0;
        const std::int64_t reading = time_speed_probe();
        const bool clean = alone && launches_begun.load(std::memory_order_seq_cst) == begun;
        last_ns = clean ? reading : 0;
        taken_at = now;
        taken = true;
    }
    return last_ns;
}

// Called once a launch has completed (every block worker has left it).
inline void record_dispatch_cost(std::int64_t corr, const DispatchCost& cost, std::int64_t probe_ns) {
    ClockState& s = clock_state();
    if (!s.enabled) return;
    const unsigned threads = cost.threads.load(std::memory_order_relaxed);
    DispatchCostRecord r{corr, cost.cpu_ns.load(std::memory_order_relaxed), cost.instructions.load(std::memory_order_relaxed),
                         cost.cycles.load(std::memory_order_relaxed),
                         threads > 0 && cost.counted_threads.load(std::memory_order_relaxed) == threads,
                         cost.scaled.load(std::memory_order_relaxed), probe_ns};
    std::lock_guard<std::mutex> lock(s.m);
    if (r.scaled) ++s.scaled_dispatches;
    s.records.push_back(r);
}

inline std::string clock_json_string(const std::string& text) {
    std::string out = "\"";
    for (char ch : text) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
    }
    return out + "\"";
}

// One `clocks` record (what was measured and how) and a `dispatch_cost` record per launch.
inline void write_clock_records(std::FILE* f) {
    ClockState& s = clock_state();
    std::lock_guard<std::mutex> lock(s.m);
    std::fprintf(f, "{\"type\":\"clocks\",\"cpu_time\":\"CLOCK_THREAD_CPUTIME_ID, summed over block workers\","
                    "\"probe\":%s,\"perf\":%s,\"pinning\":%s,\"perf_scaled_dispatches\":%llu}\n",
                 clock_json_string(!s.probe_wanted ? "off (ROCM_PERF_HOST_PROBE=0)"
                                                     : "9-point stencil over 32 KiB, stream worker, at most every 50 ms, "
                                                       "none beside another launch").c_str(),
                 clock_json_string(s.perf_status).c_str(),
                 clock_json_string(s.pin ? (s.pin_status.empty() ? "no block ran" : s.pin_status) : s.pin_status).c_str(),
                 static_cast<unsigned long long>(s.scaled_dispatches));
    for (const auto& r : s.records) {
        std::fprintf(f, "{\"type\":\"dispatch_cost\",\"corr\":%lld,\"cpu_ns\":%lld", static_cast<long long>(r.corr),
                     static_cast<long long>(r.cpu_ns));
        if (r.counted)
            std::fprintf(f, ",\"instructions\":%llu,\"cycles\":%llu", static_cast<unsigned long long>(r.instructions),
                         static_cast<unsigned long long>(r.cycles));
        if (r.probe_ns > 0) std::fprintf(f, ",\"probe_ns\":%lld", static_cast<long long>(r.probe_ns));
        std::fputs("}\n", f);
    }
}

}  // namespace rocm_perf_host
