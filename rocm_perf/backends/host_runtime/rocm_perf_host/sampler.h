// A sampling profiler for kernels run by the host runtime: while a worker thread runs blocks of
// a launch, a per-thread timer interrupts it a few thousand times a second and the signal
// handler records the interrupted program counter with the running kernel's index.
//
// Why a per-thread CLOCK_MONOTONIC timer (timer_create + SIGEV_THREAD_ID) and not setitimer:
// - ITIMER_PROF and CPU-time clocks (CLOCK_THREAD_CPUTIME_ID) expire on the scheduler tick: on
//   a HZ=250 kernel they deliver at most 250 signals per second per thread whatever rate is asked
//   (measured here: 254/s for 1000/s and for 4000/s requested), and ITIMER_PROF's signal goes to
//   whichever thread Linux picks. A high-resolution timer aimed at one thread gives the rate.
// - The timer runs only while its thread is inside a launch (armed at the start of the thread's
//   share of a launch, disarmed at its end, the time left carried over so short launches are
//   sampled fairly): idle threads get no signals, and host code outside kernels is not sampled.
// - Wall time inside kernels, not CPU time: a thread preempted by another process is sampled
//   where it was preempted, a uniformly random point of the kernel, so shares stay unbiased.
//
// The handler is async-signal-safe: it reads the interrupted PC from the signal's ucontext (no
// unwinding, so the fiber stacks of __syncthreads() need no special care: a fiber's PC is as
// good as any), reads a thread_local kernel index, and counts (kernel, pc) in a fixed open-
// addressed table with atomic compare-and-swap; a full table counts the sample as dropped.
// A PC outside the program (in libm's fmaf, say: a kernel's math calls are library calls on the
// CPU) is replaced by its caller when that is one step away: the return address in the link
// register (aarch64) or on top of the stack (x86-64: a leaf library function has pushed nothing
// else) when it lies in the program's code. Such samples are flagged "via call".
// At exit the table, the kernels' names and the executable mappings (for PIE load addresses)
// are written to ROCM_PERF_HOST_SAMPLES; backends/host_sampler.py turns PCs into source lines.
//
// Environment: ROCM_PERF_HOST_SAMPLES (output path, "%pid%" replaced; sampling is off without
// it), ROCM_PERF_HOST_SAMPLE_HZ (samples per second per busy thread, default 1000).
#pragma once

#include "json_string.h"
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__aarch64__)
#define ROCM_PERF_SAMPLER_SUPPORTED 1
#endif

namespace rocm_perf_host {

struct SampleSlot {
    std::atomic<std::uint64_t> key{0};  // (kernel + 2) << 48 | pc; 0 = empty
    std::atomic<std::uint64_t> count{0};
};

constexpr unsigned kSampleSlotBits = 16;  // 65536 distinct (kernel, pc) pairs: far more than a program has
constexpr std::uint64_t kPcMask = (std::uint64_t(1) << 48) - 1;
constexpr std::uint64_t kViaCall = std::uint64_t(1) << 63;  // key flag: the PC is the caller of a library function

inline SampleSlot sample_slots[std::size_t(1) << kSampleSlotBits];  // zero-initialized, committed on use
inline std::atomic<std::uint64_t> samples_taken{0};
inline std::atomic<std::uint64_t> samples_dropped{0};
inline std::atomic<bool> sampler_on{false};
inline long sampler_interval_ns = 0;
inline std::uintptr_t program_text_begin = 0;  // the executable's code, for telling library PCs apart
inline std::uintptr_t program_text_end = 0;

inline thread_local int sampler_kernel = -2;  // -2: not in a launch; -1: a kernel the tracer did not name
inline thread_local bool sampler_timer_made = false;
inline thread_local timer_t sampler_timer{};
inline thread_local long sampler_left_ns = 0;  // time to the next sample, carried across launches

inline std::uintptr_t interrupted_pc(void* context) {
    auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
    return static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
    return static_cast<std::uintptr_t>(uc->uc_mcontext.pc);
#else
    (void)uc;
    return 0;
#endif
}

inline bool in_program(std::uintptr_t pc) { return pc >= program_text_begin && pc < program_text_end; }

// The caller of a library function one call deep, or 0 (see the top of this file).
inline std::uintptr_t library_caller(void* context) {
    auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
    const auto* sp = reinterpret_cast<const std::uintptr_t*>(uc->uc_mcontext.gregs[REG_RSP]);
    const std::uintptr_t ret = sp ? *sp : 0;
#elif defined(__aarch64__)
    const std::uintptr_t ret = static_cast<std::uintptr_t>(uc->uc_mcontext.regs[30]);
#else
    const std::uintptr_t ret = 0;
    (void)uc;
#endif
    return in_program(ret) ? ret : 0;
}

inline void record_sample(int kernel, std::uintptr_t pc, bool via_call = false) {
    if (pc == 0 || (pc & ~kPcMask) != 0 || kernel < -1 || kernel > 0x7ffd) {
        samples_dropped.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const std::uint64_t key = (std::uint64_t(kernel + 2) << 48) | pc | (via_call ? kViaCall : 0);
    std::uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> (64 - kSampleSlotBits);
    for (unsigned probe = 0; probe < 128; ++probe) {
        SampleSlot& slot = sample_slots[(h + probe) & ((std::uint64_t(1) << kSampleSlotBits) - 1)];
        std::uint64_t seen = slot.key.load(std::memory_order_acquire);
        if (seen == 0) {
            std::uint64_t expected = 0;
            if (slot.key.compare_exchange_strong(expected, key, std::memory_order_acq_rel)) seen = key;
            else seen = expected;
        }
        if (seen == key) {
            slot.count.fetch_add(1, std::memory_order_relaxed);
            samples_taken.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    samples_dropped.fetch_add(1, std::memory_order_relaxed);
}

extern "C" inline void rocm_perf_sample_signal(int, siginfo_t*, void* context) {
    const int saved_errno = errno;
    const int kernel = sampler_kernel;
    if (kernel != -2) {
        const std::uintptr_t pc = interrupted_pc(context);
        const std::uintptr_t caller = in_program(pc) ? 0 : library_caller(context);
        if (caller) record_sample(kernel, caller, true);
        else record_sample(kernel, pc);
    }
    errno = saved_errno;
}

// The executable's first object (dl_iterate_phdr lists it first): its executable segments.
inline int find_program_text(dl_phdr_info* info, std::size_t, void*) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const auto& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr, end = begin + ph.p_memsz;
        if (program_text_begin == 0 || begin < program_text_begin) program_text_begin = begin;
        if (end > program_text_end) program_text_end = end;
    }
    return 1;  // stop after the executable
}

// Reads the environment and installs the handler, once (from a normal context).
inline bool sampler_enabled() {
    static const bool on = [] {
#ifndef ROCM_PERF_SAMPLER_SUPPORTED
        return false;
#else
        const char* path = std::getenv("ROCM_PERF_HOST_SAMPLES");
        if (!path || !*path) return false;
        long hz = 1000;
        if (const char* v = std::getenv("ROCM_PERF_HOST_SAMPLE_HZ"); v && *v) hz = std::strtol(v, nullptr, 10);
        if (hz < 1 || hz > 100000) {
            std::fprintf(stderr, "rocm-perf host runtime: ROCM_PERF_HOST_SAMPLE_HZ=%ld out of range (1-100000); "
                                 "sampling off\n", hz);
            return false;
        }
        sampler_interval_ns = 1000000000L / hz;
        dl_iterate_phdr(&find_program_text, nullptr);
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = &rocm_perf_sample_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGPROF, &sa, nullptr) != 0) {
            std::fprintf(stderr, "rocm-perf host runtime: cannot install the SIGPROF handler; sampling off\n");
            return false;
        }
        sampler_on.store(true, std::memory_order_release);
        return true;
#endif
    }();
    return on;
}

inline void arm_thread_timer(long first_ns) {
    itimerspec spec{};
    spec.it_interval.tv_sec = sampler_interval_ns / 1000000000L;
    spec.it_interval.tv_nsec = sampler_interval_ns % 1000000000L;
    spec.it_value.tv_sec = first_ns / 1000000000L;
    spec.it_value.tv_nsec = first_ns % 1000000000L;
    timer_settime(sampler_timer, 0, &spec, nullptr);
}

// The hook around a worker thread's share of a launch: sampled from construction to destruction.
struct SamplingScope {
    bool active = false;
    explicit SamplingScope(int kernel) {
        if (!sampler_enabled()) return;
        if (!sampler_timer_made) {
            sigevent ev;
            std::memset(&ev, 0, sizeof ev);
            ev.sigev_notify = SIGEV_THREAD_ID;
            ev.sigev_signo = SIGPROF;
#ifdef sigev_notify_thread_id
            ev.sigev_notify_thread_id = static_cast<pid_t>(syscall(SYS_gettid));
#else
            ev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
#endif
            if (timer_create(CLOCK_MONOTONIC, &ev, &sampler_timer) != 0) return;
            sampler_timer_made = true;
            // Start each thread at a different phase so that threads do not sample in lock-step.
            sampler_left_ns = 1 + static_cast<long>((reinterpret_cast<std::uintptr_t>(&sampler_kernel) >> 6) %
                                                    static_cast<std::uintptr_t>(sampler_interval_ns));
        }
        // Arm first, then name the kernel (and unname it before disarming): a tick that lands in
        // timer_settime itself is the sampler's own cost, not the kernel's, and is not recorded.
        arm_thread_timer(sampler_left_ns > 0 ? sampler_left_ns : sampler_interval_ns);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        sampler_kernel = kernel;
        active = true;
    }
    ~SamplingScope() {
        if (!active) return;
        sampler_kernel = -2;
        std::atomic_signal_fence(std::memory_order_seq_cst);
        itimerspec off{}, old{};
        timer_settime(sampler_timer, 0, &off, &old);
        sampler_left_ns = old.it_value.tv_sec * 1000000000L + old.it_value.tv_nsec;
    }
    SamplingScope(const SamplingScope&) = delete;
    SamplingScope& operator=(const SamplingScope&) = delete;
};


inline int write_object_mapping(dl_phdr_info* info, std::size_t, void* out) {
    auto* f = static_cast<FILE*>(out);
    std::string name = info->dlpi_name ? info->dlpi_name : "";
    if (name.empty()) {  // the executable itself
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        name = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "";
    }
    std::string segments;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const auto& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        char buf[80];
        std::snprintf(buf, sizeof buf, "%s[%llu,%llu]", segments.empty() ? "" : ",",
                      static_cast<unsigned long long>(info->dlpi_addr + ph.p_vaddr),
                      static_cast<unsigned long long>(info->dlpi_addr + ph.p_vaddr + ph.p_memsz));
        segments += buf;
    }
    if (!segments.empty())
        std::fprintf(f, "{\"type\":\"object\",\"path\":%s,\"base\":%llu,\"segments\":[%s]}\n",
                     rocm_perf_json::json_string(name).c_str(), static_cast<unsigned long long>(info->dlpi_addr),
                     segments.c_str());
    return 0;
}

// Stops sampling and writes the samples (JSON lines: meta, kernel, object, pc). `kernels` are
// the tracer's kernels as (mangled, demangled), indexed as the samples index them.
inline void write_samples(const std::vector<std::pair<std::string, std::string>>& kernels) {
    if (!sampler_on.load(std::memory_order_acquire)) return;
    const char* path_template = std::getenv("ROCM_PERF_HOST_SAMPLES");
    if (!path_template || !*path_template) return;
    sampler_on.store(false, std::memory_order_release);
    std::string path = path_template;
    if (auto at = path.find("%pid%"); at != std::string::npos) path.replace(at, 5, std::to_string(getpid()));
    std::string tmp = path + ".tmp" + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) {
        std::fprintf(stderr, "rocm-perf host runtime: cannot write the samples %s\n", path.c_str());
        return;
    }
    std::fprintf(f,
                 "{\"type\":\"meta\",\"version\":1,\"pid\":%d,\"hz\":%ld,\"clock\":\"CLOCK_MONOTONIC per worker thread, "
                 "inside launches\",\"samples\":%llu,\"dropped\":%llu}\n",
                 static_cast<int>(getpid()), sampler_interval_ns ? 1000000000L / sampler_interval_ns : 0L,
                 static_cast<unsigned long long>(samples_taken.load()),
                 static_cast<unsigned long long>(samples_dropped.load()));
    for (std::size_t i = 0; i < kernels.size(); ++i)
        std::fprintf(f, "{\"type\":\"kernel\",\"id\":%zu,\"mangled\":%s,\"demangled\":%s}\n", i,
                     rocm_perf_json::json_string(kernels[i].first).c_str(), rocm_perf_json::json_string(kernels[i].second).c_str());
    dl_iterate_phdr(&write_object_mapping, f);
    for (auto& slot : sample_slots) {
        const std::uint64_t key = slot.key.load(std::memory_order_acquire);
        const std::uint64_t count = slot.count.load(std::memory_order_relaxed);
        if (key == 0 || count == 0) continue;
        std::fprintf(f, "{\"type\":\"pc\",\"kernel\":%d,\"pc\":%llu,\"count\":%llu,\"via_call\":%s}\n",
                     int((key & ~kViaCall) >> 48) - 2, static_cast<unsigned long long>(key & kPcMask),
                     static_cast<unsigned long long>(count), (key & kViaCall) ? "true" : "false");
    }
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
}

}  // namespace rocm_perf_host
