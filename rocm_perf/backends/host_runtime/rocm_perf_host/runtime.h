// The host side of HIP on the CPU: kernel launches over a block worker pool, barriers through
// fibers, streams that really run concurrently (a worker thread per stream), events, memory,
// and the tracer that writes a raw log at exit (ROCM_PERF_HOST_LOG) for rocm-perf to turn
// into a rocpd database.
//
// Environment:
//   ROCM_PERF_HOST_THREADS  OS threads that run the blocks of one launch (default: all cores)
//   ROCM_PERF_HOST_SERIAL   1: every launch and async call completes before it returns
//   ROCM_PERF_HOST_LOG      where to write the raw trace log at exit ("%pid%" is replaced)
//   ROCM_PERF_HOST_PIN, ROCM_PERF_HOST_PERF, ROCM_PERF_HOST_PROBE   per-dispatch clocks: see dispatch_clocks.h
// Compile with -DROCM_PERF_NO_TRACE for an untraced build (tracer overhead measurements).
#pragma once

#include "json_string.h"
#include "rocm_perf_host/outline.h"
#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

#include "rocm_perf_host/device.h"
#include "rocm_perf_host/dispatch_clocks.h"
#include "rocm_perf_host/fiber.h"
#include "rocm_perf_host/sampler.h"

// ---- API types ------------------------------------------------------------------------------
enum hipError_t {
    hipSuccess = 0,
    hipErrorInvalidValue = 1,
    hipErrorOutOfMemory = 2,
    hipErrorMemoryAllocation = 2,
    hipErrorNotInitialized = 3,
    hipErrorInvalidConfiguration = 9,
    hipErrorInvalidPitchValue = 12,
    hipErrorInvalidSymbol = 13,
    hipErrorInvalidMemcpyDirection = 21,
    hipErrorInvalidDeviceFunction = 98,
    hipErrorNoDevice = 100,
    hipErrorInvalidDevice = 101,
    hipErrorInvalidResourceHandle = 400,
    hipErrorInvalidHandle = 400,
    hipErrorNotFound = 500,
    hipErrorNotReady = 600,
    hipErrorIllegalAddress = 700,
    hipErrorLaunchOutOfResources = 701,
    hipErrorLaunchFailure = 719,
    hipErrorCooperativeLaunchTooLarge = 720,
    hipErrorNotSupported = 801,
    hipErrorUnknown = 999,
};
typedef hipError_t cudaError_t;

enum hipMemcpyKind {
    hipMemcpyHostToHost = 0,
    hipMemcpyHostToDevice = 1,
    hipMemcpyDeviceToHost = 2,
    hipMemcpyDeviceToDevice = 3,
    hipMemcpyDefault = 4,
};

#define hipStreamDefault 0x0
#define hipStreamNonBlocking 0x1
#define hipEventDefault 0x0
#define hipEventBlockingSync 0x1
#define hipEventDisableTiming 0x2
#define hipHostMallocDefault 0x0
#define hipHostMallocPortable 0x1
#define hipHostMallocMapped 0x2
#define hipHostMallocWriteCombined 0x4
#define hipMemAttachGlobal 0x1

struct ihipStream_t;
struct ihipEvent_t;
typedef ihipStream_t* hipStream_t;
typedef ihipEvent_t* hipEvent_t;

#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(X) X
#define HIP_DYNAMIC_SHARED(type, var) type* var = reinterpret_cast<type*>(::rocm_perf_host::dynamic_shared());
#define HIP_DYNAMIC_SHARED_ATTRIBUTE

namespace rocm_perf_host {

inline std::int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline thread_local long cached_os_thread_id = 0;
inline long os_thread_id() {
    if (!cached_os_thread_id) cached_os_thread_id = static_cast<long>(syscall(SYS_gettid));
    return cached_os_thread_id;
}

inline int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    return std::atoi(v);
}

[[noreturn]] inline void fatal(const char* what) {
    std::fprintf(stderr, "rocm-perf host runtime: %s\n", what);
    std::fflush(stderr);
    std::abort();
}

// ---- digests of device-to-host copies -----------------------------------------------------
// A fast 64-bit mix over 8-byte words in four lanes; equal bytes give equal digests, and a
// changed byte changes the digest with overwhelming probability. Not cryptographic.
inline std::string digest_bytes(const void* data, std::size_t n) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    const std::uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xC2B2AE3D27D4EB4Full;
    std::uint64_t lane[4] = {k1, k2, k1 ^ n, k2 + n};
    auto rotl = [](std::uint64_t v, int r) { return (v << r) | (v >> (64 - r)); };
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int j = 0; j < 4; ++j) {
            std::uint64_t w;
            std::memcpy(&w, p + i + 8 * j, 8);
            lane[j] = rotl((lane[j] ^ w) * k1, 29) * k2;
        }
    }
    std::uint64_t tail[4] = {0, 0, 0, 0};
    std::memcpy(tail, p + i, n - i);
    for (int j = 0; j < 4; ++j) lane[j] = rotl((lane[j] ^ tail[j]) * k1, 29) * k2;
    std::uint64_t h = n;
    for (int j = 0; j < 4; ++j) h = rotl(h ^ lane[j], 27) * k1 + k2;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    char out[48];
    std::snprintf(out, sizeof out, "%016llx:%zu", static_cast<unsigned long long>(h), n);
    return out;
}

// ---- the tracer -----------------------------------------------------------------------------
struct KernelRecord {
    std::string mangled;
    std::string demangled;
    std::string naming;  // how the mangled name was found: "symbol", "signature" or "source"
};

struct DispatchRecord {
    std::int64_t corr;
    int kernel;
    int stream_id;
    dim3 grid, block;
    std::size_t shmem;
    std::int64_t start, end;
    long tid;
};

// An API argument kept raw and formatted only when the log is written: the tracer must cost
// little per call (no strings, no allocation).
struct ApiArg {
    enum Kind : unsigned char { Pointer, Unsigned, Signed, Dims, Text, Kernel };
    const char* name;
    Kind kind;
    std::uint64_t value;  // pointer, number, kernel index, or the `const char*` of Text
    dim3 dims;
};

struct ApiRecord {
    std::int64_t corr;
    const char* name;
    std::int64_t start, end;
    long tid;
    unsigned nargs = 0;
    ApiArg args[8];
    std::shared_ptr<std::string> digest_slot;  // device-to-host copies: filled when the copy runs
};

struct Tracer {
#ifdef ROCM_PERF_NO_TRACE
    static constexpr bool enabled = false;
#else
    static constexpr bool enabled = true;
#endif
    std::mutex m;
    std::atomic<std::int64_t> next_corr{1};
    std::vector<KernelRecord> kernels;
    std::map<const void*, int> kernel_by_address;
    std::map<std::string, int> kernel_by_source_name;  // template kernels launched with deduced arguments
    std::deque<DispatchRecord> dispatches;  // deques: growing never copies the records
    std::deque<ApiRecord> api;

    std::int64_t new_corr() { return next_corr.fetch_add(1, std::memory_order_relaxed); }

    void add_api(ApiRecord&& r) {
        std::lock_guard<std::mutex> lock(m);
        api.push_back(std::move(r));
    }

    void add_dispatch(const DispatchRecord& r) {
        std::lock_guard<std::mutex> lock(m);
        dispatches.push_back(r);
    }

    void write_log(const char* path_template, int threads, bool serial);
};

// Other parts of the runtime add record types to the log through these (roctx.h: markers).
using LogWriter = void (*)(std::FILE*);
inline std::vector<LogWriter>& log_writers() {
    static auto* writers = new std::vector<LogWriter>;  // never destroyed: the log is written at exit
    return *writers;
}

ROCM_PERF_OUTLINED Tracer& tracer();
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED Tracer& tracer() {
    static Tracer* t = new Tracer;  // never destroyed: worker threads may outlive static destructors
    return *t;
}
#endif

// Records one API call: its start at construction, its end at finish().
struct ApiScope {
    ApiRecord record;
    explicit ApiScope(const char* name) {
        record.corr = Tracer::enabled ? tracer().new_corr() : 0;
        record.name = name;
        record.start = Tracer::enabled ? now_ns() : 0;
        record.tid = 0;
        record.end = 0;
    }
    void add(const char* name, ApiArg::Kind kind, std::uint64_t value, dim3 dims = dim3()) {
        if (Tracer::enabled && record.nargs < 8) record.args[record.nargs++] = ApiArg{name, kind, value, dims};
    }
    void pointer(const char* name, const void* p) { add(name, ApiArg::Pointer, reinterpret_cast<std::uintptr_t>(p)); }
    void number(const char* name, std::uint64_t v) { add(name, ApiArg::Unsigned, v); }
    void signed_number(const char* name, std::int64_t v) { add(name, ApiArg::Signed, static_cast<std::uint64_t>(v)); }
    void dims(const char* name, dim3 d) { add(name, ApiArg::Dims, 0, d); }
    void text(const char* name, const char* static_text) { add(name, ApiArg::Text, reinterpret_cast<std::uintptr_t>(static_text)); }
    void kernel(const char* name, int index) { add(name, ApiArg::Kernel, static_cast<std::uint64_t>(index)); }
    void finish();
};

#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED void ApiScope::finish() {
    if (!Tracer::enabled) return;
    record.end = now_ns();
    record.tid = os_thread_id();
    tracer().add_api(std::move(record));
}
#endif

// ---- kernel identity: the name the compiler mangles ---------------------------------------
struct KernelIdentity {
    const void* address;
    const char* signature;  // typeid of the function type, e.g. "FvPfPKfiE"
};

// The kernel named in a launch must be one function: a plain kernel or a template kernel with
// its template arguments written out (`kern<float, 4>`), as with HIP_KERNEL_NAME.
// The identity carries the parameter types, so that launch_kernel converts the arguments to them
// once (a capture records the bytes the kernel receives, not the caller's: `1024` for a size_t).
template <class... P>
struct TypedKernelIdentity : KernelIdentity {};
template <class... P>
inline TypedKernelIdentity<P...> launched_kernel_must_name_one_function_with_explicit_template_arguments(void (*f)(P...)) {
    return TypedKernelIdentity<P...>{{reinterpret_cast<const void*>(f), typeid(void(P...)).name()}};
}

inline bool is_identifier(const char* s) {
    if (!s || !*s || !(std::isalpha(static_cast<unsigned char>(*s)) || *s == '_')) return false;
    for (; *s; ++s)
        if (!(std::isalnum(static_cast<unsigned char>(*s)) || *s == '_')) return false;
    return true;
}

inline std::string demangle(const std::string& mangled) {
    int status = 0;
    char* text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !text) return mangled;
    std::string out(text);
    std::free(text);
    return out;
}

// The device compiler names a kernel with the Itanium mangling of its declaration, which the
// host compiler shares. Prefer the symbol itself (dladdr; needs -rdynamic and external
// linkage); else for a plain global function build `_Z<len><name><params>` from the function
// type's own mangling; else keep the name as the source wrote it.
inline KernelRecord name_kernel(KernelIdentity id, const char* source_name) {
    KernelRecord r;
    Dl_info info;
    std::string last_component = source_name ? source_name : "";
    if (auto angle = last_component.find('<'); angle != std::string::npos) last_component.resize(angle);
    if (auto colon = last_component.rfind("::"); colon != std::string::npos) last_component.erase(0, colon + 2);
    if (id.address && dladdr(id.address, &info) && info.dli_sname && info.dli_saddr == id.address &&
        std::strncmp(info.dli_sname, "_Z", 2) == 0) {
        std::string demangled = demangle(info.dli_sname);
        // Identical kernels may be folded into one symbol: keep it only if it is this kernel.
        if (demangled.find(last_component) != std::string::npos) {
            r.mangled = info.dli_sname;
            r.demangled = demangled;
            r.naming = "symbol";
            return r;
        }
    }
    std::string sig = id.signature ? id.signature : "";
    if (is_identifier(source_name) && sig.size() >= 3 && sig.compare(0, 2, "Fv") == 0 && sig.back() == 'E') {
        r.mangled = "_Z" + std::to_string(std::strlen(source_name)) + source_name + sig.substr(2, sig.size() - 3);
        r.demangled = demangle(r.mangled);
        r.naming = "signature";
        return r;
    }
    r.mangled = source_name ? source_name : "<kernel>";
    r.demangled = r.mangled;
    r.naming = "source";
    return r;
}

// ---- launches and blocks ------------------------------------------------------------------
// Whether the block running on this OS thread stopped being a plain loop (a GPU thread other
// than 0 reached a warp op), and what the loop does then; defined with BlockState below.
inline bool block_left_plain_loop();
inline void finish_block_as_owner();

struct Launch {
    dim3 grid, block;
    std::size_t shmem = 0;
    unsigned threads_per_block = 1;
    std::uint64_t total_blocks = 0;
    std::uint64_t chunk = 1;
    std::atomic<std::uint64_t> next_block{0};
    std::atomic<std::uint64_t> done_blocks{0};
    unsigned helpers_inside = 0;  // helpers working on it (pool mutex): it lives until they leave
    void (*run_thread)(Launch*) = nullptr;                // one GPU thread; threadIdx already set
    void (*run_threads_from)(Launch*, unsigned) = nullptr;  // threads first..n-1 of the block
    void (*destroy)(Launch*) = nullptr;
    int kernel = -1;  // the tracer's kernel index, for the sampler
    bool cooperative = false;  // hipLaunchCooperativeKernel: every block resident (grid.h)
    struct GridBarrier* grid_barrier = nullptr;
    DispatchCost cost;  // dispatch_clocks.h: CPU time and counts of the threads that ran its blocks
};

template <class Body, class... Args>
struct LaunchOf final : Launch {
    Body body;
    std::tuple<Args...> args;

    template <class... A>
    LaunchOf(Body b, A&&... a) : body(b), args(std::forward<A>(a)...) {
        run_thread = &LaunchOf::one;
        run_threads_from = &LaunchOf::from;
        destroy = &LaunchOf::free;
    }
    static void one(Launch* self) {
        auto* l = static_cast<LaunchOf*>(self);
        std::apply(l->body, l->args);
    }
    // The barrier-free path: a plain loop the compiler can inline the kernel into. Rows of x
    // innermost, so that only threadIdx.x changes per GPU thread.
    static void from(Launch* self, unsigned first) {
        auto* l = static_cast<LaunchOf*>(self);
        const unsigned bx = l->block.x, by = l->block.y, bz = l->block.z;
        unsigned x = first % bx, y = (first / bx) % by, z = first / (bx * by);
        for (; z < bz; ++z, y = 0) {
            threadIdx.z = z;
            for (; y < by; ++y, x = 0) {
                threadIdx.y = y;
                for (; x < bx; ++x) {
                    threadIdx.x = x;
                    std::apply(l->body, l->args);
#ifndef ROCM_PERF_HOST_NO_WARP_OPS
                    // A warp op moved the block to lock step (lockstep.h). This check after every GPU
                    // thread cost light kernels 17-26 % (pipeline.cu): a unit whose build found no warp
                    // op is compiled with the define and skips it.
                    if (__builtin_expect(block_left_plain_loop(), 0)) return finish_block_as_owner();
#endif
                }
            }
        }
    }
    static void free(Launch* self) { delete static_cast<LaunchOf*>(self); }
};

// What the OS thread that runs a block knows about it. All fibers of a block live on one OS
// thread, so this is thread_local.
// Plain: a loop over the threads; Probe: thread 0 runs alone first; Fibers: round-robin
// barriers; Lockstep: warps in lock step at warp ops (lockstep.h).
enum class BlockMode { Plain, Probe, Fibers, Lockstep };
struct Lockstep;

struct BlockState {
    BlockMode mode = BlockMode::Plain;
    Launch* launch = nullptr;
    unsigned current = 0;  // the GPU thread running now (fiber mode)
    std::vector<Context> contexts;  // one per GPU thread; thread 0's is the OS stack
    std::vector<unsigned char> finished;
    std::vector<Index3> index;  // threadIdx of each GPU thread, computed once per block
    std::vector<std::unique_ptr<FiberStack>> stacks;  // stacks[t] for thread t >= 1
    std::vector<unsigned char> shared_storage;
    unsigned char* dynamic_shared = nullptr;
    Lockstep* lockstep = nullptr;  // made on the first warp op, kept for later blocks
};

// A pointer (constant-initialized) rather than the object: a thread_local with a constructor
// would be reached through a TLS init wrapper on every barrier.
inline thread_local BlockState* block_state_of_thread = nullptr;

inline BlockState& block_state() {
    if (!block_state_of_thread) block_state_of_thread = new BlockState;  // one per OS thread, kept
    return *block_state_of_thread;
}

inline void* dynamic_shared() { return block_state_of_thread->dynamic_shared; }

// The GPU thread to run after `from`: the next unfinished one in round-robin order, wrapping
// into the next barrier phase; thread 0 (parked in run_block) once every thread has finished.
// Every unfinished thread thus reaches barrier k before any leaves it, and a thread that
// returned early no longer holds the others back.
inline unsigned next_thread(BlockState& s, unsigned from) {
    const unsigned n = s.launch->threads_per_block;
    unsigned t = from;
    for (unsigned k = 0; k < n; ++k) {
        if (++t == n) t = 0;
        if (!s.finished[t]) return t;
    }
    return 0;
}

// Threads switch straight to one another (one switch per thread per barrier, no scheduler).
inline void switch_thread(BlockState& s, unsigned from, unsigned to) {
    if (to == from) return;
    s.current = to;
    threadIdx = s.index[to];
    switch_context(s.contexts[from], s.contexts[to]);
}

// Stacks, contexts and thread indices for the `n` threads of the running block.
inline void prepare_fibers(BlockState& s, unsigned n) {
    if (s.contexts.size() < n) s.contexts.resize(n);
    s.finished.assign(n, 0);
    if (s.index.size() != n || s.index.back().x + 1 != blockDim.x || s.index.back().y + 1 != blockDim.y) {
        s.index.resize(n);
        for (unsigned t = 0; t < n; ++t) {
            s.index[t].x = t % blockDim.x;
            s.index[t].y = (t / blockDim.x) % blockDim.y;
            s.index[t].z = t / (blockDim.x * blockDim.y);
        }
    }
    while (s.stacks.size() < n) s.stacks.push_back(std::make_unique<FiberStack>());
}

}  // namespace rocm_perf_host
#include "rocm_perf_host/lockstep.h"
namespace rocm_perf_host {

inline bool block_left_plain_loop() { return block_state_of_thread->mode != BlockMode::Plain; }
inline void finish_block_as_owner() { lockstep_finish(*block_state_of_thread); }

inline void fiber_thread_entry(void* arg) {
    auto& s = block_state();
    unsigned me = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(arg));
    s.launch->run_thread(s.launch);
    if (s.mode == BlockMode::Lockstep) {
        lockstep_finish(s);
        fatal("a finished GPU thread was resumed");
    }
    s.finished[me] = 1;
    switch_thread(s, me, next_thread(s, me));
    fatal("a finished GPU thread was resumed");
}

inline void barrier() {
    auto& s = block_state();
    if (s.mode == BlockMode::Fibers) {
        switch_thread(s, s.current, next_thread(s, s.current));
        return;
    }
    if (s.mode == BlockMode::Lockstep) return lockstep_wait(s, LaneState::AtBarrier);
    if (s.mode == BlockMode::Plain)
        fatal("__syncthreads() reached by some threads of a block but not by its thread 0 "
              "(a barrier must be reached by all threads of a block or none)");
    // Probe: thread 0 reached a barrier; every other thread of this block becomes a fiber.
    const unsigned n = s.launch->threads_per_block;
    s.mode = BlockMode::Fibers;
    s.current = 0;
    prepare_fibers(s, n);
    for (unsigned t = 1; t < n; ++t)
        s.stacks[t]->start(s.contexts[t], &fiber_thread_entry, reinterpret_cast<void*>(std::uintptr_t(t)));
    switch_thread(s, 0, next_thread(s, 0));
}

inline void run_block(Launch& l, std::uint64_t linear_block) {
    auto& s = block_state();
    blockIdx.x = static_cast<unsigned>(linear_block % l.grid.x);
    blockIdx.y = static_cast<unsigned>((linear_block / l.grid.x) % l.grid.y);
    blockIdx.z = static_cast<unsigned>(linear_block / (std::uint64_t(l.grid.x) * l.grid.y));
    s.launch = &l;
    // Thread 0 runs first, on this OS stack. A kernel that never reaches a barrier costs no
    // fiber at all; one that does turns its block into fibers at that first barrier.
    s.mode = BlockMode::Probe;
    threadIdx.x = threadIdx.y = threadIdx.z = 0;
    s.current = 0;
    l.run_thread(&l);
    if (s.mode == BlockMode::Fibers) {
        s.finished[0] = 1;
        switch_thread(s, 0, next_thread(s, 0));  // returns when every thread has finished
    } else if (s.mode == BlockMode::Lockstep) {
        lockstep_finish(s);  // returns when every thread has finished
    } else {
        s.mode = BlockMode::Plain;
        l.run_threads_from(&l, 1);
    }
    s.mode = BlockMode::Plain;
}

}  // namespace rocm_perf_host
#include "rocm_perf_host/grid.h"
namespace rocm_perf_host {

// Blocks of active launches, taken in chunks by the launching stream's worker and by helpers.
struct BlockPool {
    std::mutex m;
    std::condition_variable work;
    std::condition_variable finished;
    std::deque<Launch*> active;
    unsigned helpers = 0;

    void start(unsigned helper_count) {
        helpers = helper_count;
        for (unsigned i = 0; i < helper_count; ++i) std::thread([this] { helper_loop(); }).detach();
    }

    // Runs chunks of `l` until none is left.
    void work_on(Launch& l) {
        SamplingScope sampling(l.kernel);  // sampler.h: samples this thread while it runs the launch
        DispatchClockScope clock(l.cost);  // dispatch_clocks.h: this thread's CPU time and counts
        enter_launch(l);
        for (;;) {
            std::uint64_t first = l.next_block.fetch_add(l.chunk, std::memory_order_relaxed);
            if (first >= l.total_blocks) break;
            std::uint64_t end = std::min(first + l.chunk, l.total_blocks);
            for (std::uint64_t b = first; b < end; ++b) run_block(l, b);
            l.done_blocks.fetch_add(end - first, std::memory_order_acq_rel);
        }
    }

    // The launching stream's worker runs blocks too; it returns when every block is done and
    // no helper still holds the launch (the caller frees it then).
    void run(Launch& l);

    void helper_loop();
};

#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED void BlockPool::run(Launch& l) {
    if (l.cooperative) return run_all_resident(l);
    if (helpers > 0) {
        std::lock_guard<std::mutex> lock(m);
        active.push_back(&l);
        work.notify_all();
    }
    work_on(l);
    if (helpers == 0) return;
    std::unique_lock<std::mutex> lock(m);
    for (auto it = active.begin(); it != active.end(); ++it)
        if (*it == &l) {
            active.erase(it);
            break;
        }
    finished.wait(lock, [&] {
        return l.helpers_inside == 0 && l.done_blocks.load(std::memory_order_acquire) == l.total_blocks;
    });
}

ROCM_PERF_OUTLINED void BlockPool::helper_loop() {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
        Launch* l = nullptr;
        work.wait(lock, [&] {
            for (Launch* a : active)
                if (a->next_block.load(std::memory_order_relaxed) < a->total_blocks) {
                    l = a;
                    return true;
                }
            return false;
        });
        ++l->helpers_inside;
        lock.unlock();
        work_on(*l);
        lock.lock();
        --l->helpers_inside;
        finished.notify_all();
    }
}
#endif

// ---- streams and events ------------------------------------------------------------------
struct Runtime;
Runtime& runtime();

}  // namespace rocm_perf_host

struct ihipStream_t {
    int id = 0;           // 0 = the null stream; then 1, 2, ... in creation order
    bool blocking = true;  // synchronizes with the null stream (legacy semantics)
    std::deque<std::function<void()>> queue;
    std::uint64_t submitted = 0;  // guarded by the runtime's mutex
    std::uint64_t completed = 0;
    std::condition_variable has_work;
    bool destroyed = false;
};

struct ihipEvent_t {
    std::uint64_t recorded = 0;  // generation of the last hipEventRecord (runtime mutex)
    std::uint64_t reached = 0;   // generation the stream has executed
    std::int64_t time_ns = 0;
    unsigned flags = 0;
};

namespace rocm_perf_host {

struct Runtime {
    std::mutex m;
    std::condition_variable progress;  // any stream completed a command or an event was reached
    std::vector<ihipStream_t*> streams;  // [0] is the null stream
    ihipStream_t* null_stream = nullptr;    BlockPool pool;
    unsigned threads = 1;
    bool serial = false;
    hipError_t last_error = hipSuccess;
    std::map<std::uintptr_t, std::size_t> device_allocations;

    Runtime();

    ihipStream_t* create_stream(bool blocking);

    ihipStream_t* resolve(hipStream_t s) { return s ? s : null_stream; }

    void worker(ihipStream_t* s) {
        std::unique_lock<std::mutex> lock(m);
        for (;;) {
            s->has_work.wait(lock, [&] { return !s->queue.empty() || s->destroyed; });
            if (s->queue.empty()) return;
            auto command = std::move(s->queue.front());
            s->queue.pop_front();
            lock.unlock();
            command();
            lock.lock();
            ++s->completed;
            progress.notify_all();
        }
    }

    // Queue `command` on `s` behind what the null-stream rules order it after; returns its
    // ticket (the stream's `completed` count once it has run).
    std::uint64_t enqueue(ihipStream_t* s, std::function<void()> command);

    void wait_stream(ihipStream_t* s, std::uint64_t ticket) {
        std::unique_lock<std::mutex> lock(m);
        progress.wait(lock, [&] { return s->completed >= ticket; });
    }

    void synchronize_stream(ihipStream_t* s) {
        std::uint64_t ticket;
        {
            std::lock_guard<std::mutex> lock(m);
            ticket = s->submitted;
        }
        wait_stream(s, ticket);
        // A legacy null stream also waits for the blocking streams.
        if (s->id == 0) synchronize_device();
    }

    void synchronize_device();

    void wait_event(ihipEvent_t* e, std::uint64_t generation) {
        std::unique_lock<std::mutex> lock(m);
        progress.wait(lock, [&] { return e->reached >= generation; });
    }

    void reach_event(ihipEvent_t* e, std::uint64_t generation) {
        std::lock_guard<std::mutex> lock(m);
        e->time_ns = now_ns();
        if (e->reached < generation) e->reached = generation;
        progress.notify_all();
    }

    bool is_device_pointer(const void* p) {
        std::lock_guard<std::mutex> lock(m);
        auto a = reinterpret_cast<std::uintptr_t>(p);
        auto it = device_allocations.upper_bound(a);
        if (it == device_allocations.begin()) return false;
        --it;
        return a < it->first + it->second;
    }

    void set_error(hipError_t e) {
        std::lock_guard<std::mutex> lock(m);
        last_error = e;
    }
};

#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED Runtime::Runtime() {
    unsigned cores = std::thread::hardware_concurrency();
    int requested = env_int("ROCM_PERF_HOST_THREADS", 0);
    threads = requested > 0 ? unsigned(requested) : (cores ? cores : 1);
    serial = env_int("ROCM_PERF_HOST_SERIAL", 0) != 0;
    clock_state();  // dispatch_clocks.h: reads the process's CPUs before any worker pins itself
    pool.start(threads - 1);
    null_stream = create_stream(true);
}

ROCM_PERF_OUTLINED ihipStream_t* Runtime::create_stream(bool blocking) {
    auto* s = new ihipStream_t;
    {
        std::lock_guard<std::mutex> lock(m);
        s->id = static_cast<int>(streams.size());
        s->blocking = blocking;
        streams.push_back(s);
    }
    std::thread([this, s] { worker(s); }).detach();
    return s;
}

ROCM_PERF_OUTLINED std::uint64_t Runtime::enqueue(ihipStream_t* s, std::function<void()> command) {
    std::vector<std::pair<ihipStream_t*, std::uint64_t>> waits;
    std::uint64_t ticket;
    {
        std::lock_guard<std::mutex> lock(m);
        if (s->id == 0) {
            for (auto* other : streams)
                if (other != s && other->blocking && other->submitted > other->completed)
                    waits.emplace_back(other, other->submitted);
        } else if (s->blocking) {
            if (null_stream->submitted > null_stream->completed)
                waits.emplace_back(null_stream, null_stream->submitted);
        }
        if (!waits.empty()) {
            s->queue.emplace_back([this, waits] {
                std::unique_lock<std::mutex> inner(m);
                progress.wait(inner, [&] {
                    for (auto& w : waits)
                        if (w.first->completed < w.second) return false;
                    return true;
                });
            });
            ++s->submitted;
        }
        s->queue.push_back(std::move(command));
        ticket = ++s->submitted;
        s->has_work.notify_one();
    }
    if (serial) wait_stream(s, ticket);
    return ticket;
}

ROCM_PERF_OUTLINED void Runtime::synchronize_device() {
    std::unique_lock<std::mutex> lock(m);
    std::vector<std::pair<ihipStream_t*, std::uint64_t>> tickets;
    for (auto* s : streams) tickets.emplace_back(s, s->submitted);
    progress.wait(lock, [&] {
        for (auto& t : tickets)
            if (t.first->completed < t.second) return false;
        return true;
    });
}
#endif

ROCM_PERF_OUTLINED void write_trace_at_exit();
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED void write_trace_at_exit() {
    Runtime& r = runtime();
    r.synchronize_device();
    const char* path = std::getenv("ROCM_PERF_HOST_LOG");
    if (path && *path && Tracer::enabled) tracer().write_log(path, static_cast<int>(r.threads), r.serial);
    if (sampler_on.load(std::memory_order_acquire)) {
        std::vector<std::pair<std::string, std::string>> names;
        {
            std::lock_guard<std::mutex> lock(tracer().m);
            for (const auto& k : tracer().kernels) names.emplace_back(k.mangled, k.demangled);
        }
        write_samples(names);
    }
}
#endif

inline Runtime& runtime() {
    static Runtime* r = [] {
        auto* created = new Runtime;  // never destroyed: detached workers use it until exit
        std::atexit(&write_trace_at_exit);
        return created;
    }();
    return *r;
}

using rocm_perf_json::json_string;

// One JSON object per line: meta, kernel, dispatch, api, then the hooks' records (see backends/host_trace.py).
#if ROCM_PERF_HOST_BODIES
inline void Tracer::write_log(const char* path_template, int threads, bool serial) {
    std::string path = path_template;
    if (auto at = path.find("%pid%"); at != std::string::npos) path.replace(at, 5, std::to_string(getpid()));
    std::string tmp = path + ".tmp" + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) {
        std::fprintf(stderr, "rocm-perf host runtime: cannot write the trace log %s\n", path.c_str());
        return;
    }
    std::lock_guard<std::mutex> lock(m);
    std::fprintf(f, "{\"type\":\"meta\",\"version\":1,\"pid\":%d,\"threads\":%d,\"serial\":%s,\"warp_size\":%d}\n",
                 static_cast<int>(getpid()), threads, serial ? "true" : "false", warpSize);
    for (std::size_t i = 0; i < kernels.size(); ++i)
        std::fprintf(f, "{\"type\":\"kernel\",\"id\":%zu,\"mangled\":%s,\"demangled\":%s,\"naming\":\"%s\"}\n", i,
                     json_string(kernels[i].mangled).c_str(), json_string(kernels[i].demangled).c_str(),
                     kernels[i].naming.c_str());
    for (const auto& d : dispatches)
        std::fprintf(f,
                     "{\"type\":\"dispatch\",\"corr\":%lld,\"kernel\":%d,\"stream\":%d,\"grid\":[%u,%u,%u],"
                     "\"block\":[%u,%u,%u],\"shmem\":%zu,\"start\":%lld,\"end\":%lld,\"tid\":%ld}\n",
                     static_cast<long long>(d.corr), d.kernel, d.stream_id, d.grid.x, d.grid.y, d.grid.z, d.block.x,
                     d.block.y, d.block.z, d.shmem, static_cast<long long>(d.start), static_cast<long long>(d.end),
                     d.tid);
    for (const auto& a : api) {
        std::string args = "{";
        char buf[96];
        for (unsigned i = 0; i < a.nargs; ++i) {
            const ApiArg& g = a.args[i];
            if (i) args += ",";
            args += json_string(g.name) + ":";
            switch (g.kind) {
                case ApiArg::Pointer: std::snprintf(buf, sizeof buf, "\"0x%llx\"", (unsigned long long)g.value); break;
                case ApiArg::Unsigned: std::snprintf(buf, sizeof buf, "\"%llu\"", (unsigned long long)g.value); break;
                case ApiArg::Signed: std::snprintf(buf, sizeof buf, "\"%lld\"", (long long)g.value); break;
                case ApiArg::Dims: std::snprintf(buf, sizeof buf, "\"{%u,%u,%u}\"", g.dims.x, g.dims.y, g.dims.z); break;
                case ApiArg::Text: args += json_string(reinterpret_cast<const char*>(g.value)); buf[0] = 0; break;
                case ApiArg::Kernel: args += json_string(kernels[std::size_t(g.value)].demangled); buf[0] = 0; break;
            }
            args += buf;
        }
        args += "}";
        std::fprintf(f, "{\"type\":\"api\",\"corr\":%lld,\"name\":\"%s\",\"start\":%lld,\"end\":%lld,\"tid\":%ld,\"args\":%s",
                     static_cast<long long>(a.corr), a.name, static_cast<long long>(a.start),
                     static_cast<long long>(a.end), a.tid, args.c_str());
        if (a.digest_slot && !a.digest_slot->empty()) std::fprintf(f, ",\"digest\":\"%s\"", a.digest_slot->c_str());
        std::fprintf(f, "}\n");
    }
    for (LogWriter write_records : log_writers()) write_records(f);
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
}
#endif

// The kernel's index in the trace. A kernel without an address (a
// template launched with deduced arguments) is known by its source spelling.
ROCM_PERF_OUTLINED int kernel_index(KernelIdentity id, const char* source_name);
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED int kernel_index(KernelIdentity id, const char* source_name) {
    Tracer& t = tracer();
    const std::string key = source_name ? source_name : "";
    auto find = [&]() -> int {
        if (id.address) {
            auto it = t.kernel_by_address.find(id.address);
            return it == t.kernel_by_address.end() ? -1 : it->second;
        }
        auto it = t.kernel_by_source_name.find(key);
        return it == t.kernel_by_source_name.end() ? -1 : it->second;
    };
    {
        std::lock_guard<std::mutex> lock(t.m);
        if (int found = find(); found >= 0) return found;
    }
    KernelRecord record = name_kernel(id, source_name);
    std::lock_guard<std::mutex> lock(t.m);
    int index = find();
    if (index < 0) {
        index = static_cast<int>(t.kernels.size());
        t.kernels.push_back(std::move(record));
        if (id.address)
            t.kernel_by_address.emplace(id.address, index);
        else
            t.kernel_by_source_name.emplace(key, index);
    }
    return index;
}
#endif

}  // namespace rocm_perf_host
#include "rocm_perf_host/capture.h"
namespace rocm_perf_host {

// What a stream's worker does with a queued launch: its blocks, its clocks and records, and the
// capture `rocm-perf isolate` asked for; then the launch is freed. Not a template, so that a
// unit linking the prebuilt runtime does not compile it again per kernel (outline.h).
ROCM_PERF_OUTLINED void run_queued_launch(Launch& l, std::int64_t corr, int stream_id, CaptureLaunch* capture);
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED void run_queued_launch(Launch& l, std::int64_t corr, int stream_id, CaptureLaunch* capture) {
    if (capture) capture_before(*capture);
    // dispatch_clocks.h: the speed probe runs before the launch's start, outside its times
    const std::int64_t probe = Tracer::enabled ? probe_before_launch(now_ns()) : 0;
    const std::int64_t start = Tracer::enabled ? now_ns() : 0;
    if (capture) capture->start_ns = now_ns();
    launch_begins();  // dispatch_clocks.h: no probe reading is kept beside a running launch
    runtime().pool.run(l);
    launch_ends();
    if (capture) {
        capture->end_ns = now_ns();
        capture_after(*capture);
    }
    if (Tracer::enabled) {
        tracer().add_dispatch(DispatchRecord{corr, l.kernel, stream_id, l.grid, l.block, l.shmem, start, now_ns(),
                                             os_thread_id()});
        record_dispatch_cost(corr, l.cost, probe);
    }
    l.destroy(&l);
}
#endif

// How a launch runs its blocks: from the block pool, or all resident at once (cooperative).
enum class LaunchKind { Pool, Cooperative };

template <class Body, class... Args>
inline hipError_t launch_kernel_as(LaunchKind kind, KernelIdentity id, const char* source_name, dim3 grid, dim3 block,
                                   std::size_t shmem, hipStream_t stream, Body body, Args&&... args);

template <class Body, class... Args>
inline void launch_kernel(KernelIdentity id, const char* source_name, dim3 grid, dim3 block, std::size_t shmem,
                          hipStream_t stream, Body body, Args&&... args) {
    launch_kernel_as(LaunchKind::Pool, id, source_name, grid, block, shmem, stream, body, std::forward<Args>(args)...);
}

// A launch through hipLaunchKernelGGL: its arguments converted to the kernel's parameter types
// here (the call would convert them anyway), unless they do not match one for one (default arguments).
template <class... P, class Body, class... Args>
inline void launch_kernel(TypedKernelIdentity<P...> id, const char* source_name, dim3 grid, dim3 block, std::size_t shmem,
                          hipStream_t stream, Body body, Args&&... args) {
    if constexpr (sizeof...(P) == sizeof...(Args) && (std::is_convertible_v<Args&&, std::decay_t<P>> && ...))
        launch_kernel_as(LaunchKind::Pool, id, source_name, grid, block, shmem, stream, body,
                         static_cast<std::decay_t<P>>(std::forward<Args>(args))...);
    else
        launch_kernel_as(LaunchKind::Pool, id, source_name, grid, block, shmem, stream, body, std::forward<Args>(args)...);
}

template <class Body, class... Args>
inline hipError_t launch_kernel_as(LaunchKind kind, KernelIdentity id, const char* source_name, dim3 grid, dim3 block,
                                   std::size_t shmem, hipStream_t stream, Body body, Args&&... args) {
    Runtime& r = runtime();
    ihipStream_t* s = r.resolve(stream);
    ApiScope api("hipLaunchKernel");
    const int kernel = Tracer::enabled ? kernel_index(id, source_name) : -1;
    const std::uint64_t threads = std::uint64_t(block.x) * block.y * block.z;
    const std::uint64_t blocks = std::uint64_t(grid.x) * grid.y * grid.z;
    if (Tracer::enabled) {
        api.pointer("function_address", id.address);
        api.kernel("kernel", kernel);
        api.dims("numBlocks", grid);
        api.dims("dimBlocks", block);
        api.number("sharedMemBytes", shmem);
        api.pointer("stream", stream);
    }
    hipError_t refused = hipSuccess;
    if (threads == 0 || threads > 1024 || blocks == 0 || block.z > 1024 || grid.y > 65536 || grid.z > 65536)
        refused = hipErrorInvalidConfiguration;
    else if (kind == LaunchKind::Cooperative && !cooperative_launch_fits(unsigned(threads), shmem, blocks, r.threads))
        refused = hipErrorCooperativeLaunchTooLarge;
    if (refused != hipSuccess) {
        r.set_error(refused);
        api.finish();
        return refused;
    }
    // capture.h: the launch `rocm-perf isolate` asked for is captured with nothing else in flight
    std::shared_ptr<CaptureLaunch> capture;
    if (capture_armed())
        capture = capture_if_chosen(kernel, id, source_name, grid, block, shmem, s->id, kind == LaunchKind::Cooperative, args...);
    if (capture) r.synchronize_device();
    auto* l = new LaunchOf<Body, std::decay_t<Args>...>(body, std::forward<Args>(args)...);
    l->grid = grid;
    l->block = block;
    l->shmem = shmem;
    l->threads_per_block = static_cast<unsigned>(threads);
    l->total_blocks = blocks;
    l->kernel = kernel;
    l->cooperative = kind == LaunchKind::Cooperative;
    // Chunks keep the shared block counter cold; several per thread keep the load balanced.
    l->chunk = std::max<std::uint64_t>(1, blocks / (std::uint64_t(r.threads) * 16));
    const std::int64_t corr = api.record.corr;
    const int stream_id = s->id;
    Launch* queued = l;
    const std::uint64_t ticket = r.enqueue(s, [queued, corr, stream_id, capture] {
        run_queued_launch(*queued, corr, stream_id, capture.get());
    });
    if (capture) r.wait_stream(s, ticket);  // nothing else is queued until the capture is written
    api.finish();
    return hipSuccess;
}

// `extern __shared__ T name[];` at file scope becomes one of these (see launch_prepass.py):
// it reads the running block's dynamic shared memory wherever it is used.
template <class T>
struct DynamicShared {
    T* get() const { return reinterpret_cast<T*>(block_state_of_thread->dynamic_shared); }
    operator T*() const { return get(); }
    template <class U>
    explicit operator U*() const { return reinterpret_cast<U*>(get()); }
    T& operator[](std::ptrdiff_t i) const { return get()[i]; }
    T* operator+(std::ptrdiff_t i) const { return get() + i; }
};

}  // namespace rocm_perf_host

inline void __syncthreads() { rocm_perf_host::barrier(); }
inline unsigned __lane_id() {
    return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % unsigned(warpSize);
}

#define ROCM_PERF_STRINGIFY(...) #__VA_ARGS__
#define hipLaunchKernelGGL(K, GRID, BLOCK, SHMEM, STREAM, ...)                                                  \
    ::rocm_perf_host::launch_kernel(                                                                           \
        ::rocm_perf_host::launched_kernel_must_name_one_function_with_explicit_template_arguments(K), ROCM_PERF_STRINGIFY(K),      \
        dim3(GRID), dim3(BLOCK), static_cast<std::size_t>(SHMEM), (STREAM),                                    \
        [](auto&&... rocm_perf_args) { K(rocm_perf_args...); }, ##__VA_ARGS__)

// A template kernel launched with deduced template arguments (`kern<<<g, b>>>(x)` where kern is
// a template): there is no single function to take the address of, so the trace names it as
// the source spells it. The launch pre-pass emits this form (launch_prepass.py).
#define ROCM_PERF_LAUNCH_DEDUCED(K, GRID, BLOCK, SHMEM, STREAM, ...)                                             \
    ::rocm_perf_host::launch_kernel(::rocm_perf_host::KernelIdentity{nullptr, nullptr}, ROCM_PERF_STRINGIFY(K), \
                                    dim3(GRID), dim3(BLOCK), static_cast<std::size_t>(SHMEM), (STREAM),         \
                                    [](auto&&... rocm_perf_args) { K(rocm_perf_args...); }, ##__VA_ARGS__)

#include "rocm_perf_host/warp.h"
#include "rocm_perf_host/api.h"
#include "rocm_perf_host/launch_api.h"
#include "rocm_perf_host/memory_api.h"
#include "rocm_perf_host/unsupported.h"
#include "rocm_perf_host/math_overloads.h"

// A unit that links the prebuilt runtime must see the runtime configured as the object was
// (outline.h): the object defines a symbol named by its configuration and every unit refers
// to the one named by its own, so a unit that #defines one of these macros itself fails to
// link, naming this symbol, and the host backend builds it with the whole runtime instead.
#if defined(ROCM_PERF_HOST_PREBUILT)
#if defined(ROCM_PERF_HOST_NO_WARP_OPS)
#define ROCM_PERF_CONFIG_OPS 0
#else
#define ROCM_PERF_CONFIG_OPS 1
#endif
#if defined(ROCM_PERF_NO_TRACE)
#define ROCM_PERF_CONFIG_TRACE 0
#else
#define ROCM_PERF_CONFIG_TRACE 1
#endif
#if !defined(__x86_64__) || defined(ROCM_PERF_FORCE_UCONTEXT)
#define ROCM_PERF_CONFIG_FIBERS ucontext
#else
#define ROCM_PERF_CONFIG_FIBERS own
#endif
#define ROCM_PERF_CONFIG_PASTE(w, o, t, f) rocm_perf_prebuilt_runtime_warp##w##_ops##o##_trace##t##_fibers_##f
#define ROCM_PERF_CONFIG_NAME(w, o, t, f) ROCM_PERF_CONFIG_PASTE(w, o, t, f)
#define ROCM_PERF_CONFIG \
    ROCM_PERF_CONFIG_NAME(ROCM_PERF_WARP_SIZE, ROCM_PERF_CONFIG_OPS, ROCM_PERF_CONFIG_TRACE, ROCM_PERF_CONFIG_FIBERS)
#if ROCM_PERF_HOST_BODIES
extern "C" const int ROCM_PERF_CONFIG;
extern "C" const int ROCM_PERF_CONFIG = 1;
#else
extern "C" const int ROCM_PERF_CONFIG;
[[maybe_unused]] static const int* const rocm_perf_prebuilt_configuration __attribute__((used)) = &ROCM_PERF_CONFIG;
#endif
#endif
