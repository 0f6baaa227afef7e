// The rocm backend's capture of one dispatch (`rocm-perf isolate --backend rocm`): a library the
// program runs under (LD_PRELOAD) that keeps the inventory of its allocations (hipMalloc,
// hipMallocManaged, hipExtMallocWithFlags, hipHostMalloc, hipFree, hipHostFree) and, at the chosen
// launch (hipLaunchKernel, which <<<>>> and hipLaunchKernelGGL reach; hipModuleLaunchKernel;
// hipExtLaunchKernel), waits for the device, copies every live allocation to files, records the
// launch and its argument bytes, runs it, waits, and writes what it changed: the files the host
// runtime's capture.h writes (capture_core.h has the parts that need no GPU).
//
// THIS LIBRARY HAS NEVER RUN ON A GPU: rocm-perf's development machines have none. It is built with
// Debian's hipcc in the tests (tests/test_rocm_capture.py), and its GPU-free parts run there.
// Known gaps: __device__ variables are not captured; memory the kernel reaches that no intercepted
// call allocated (hipMallocAsync pools, hipMalloc3D, registered host memory, other libraries'
// allocations made before it loads) is not in the snapshot.
//
// Build: hipcc -std=c++17 --offload-arch=<any> -fPIC -shared -O2 interposer.cpp -o librocm_perf_capture.so -ldl
#include <dlfcn.h>
#include <hip/hip_runtime.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cxxabi.h>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "capture_core.h"

namespace {

using rocm_perf_capture::Allocation;
using rocm_perf_capture::Launch;
using rocm_perf_capture::Request;

template <class F>
F real(const char* name) {
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    void* f = dlsym(RTLD_NEXT, name);
    if (!f) {
        std::fprintf(stderr, "rocm-perf capture: %s not found in the HIP runtime\n", name);
        std::abort();
    }
    return reinterpret_cast<F>(f);
}

struct State {
    Request request;  // from the environment
    std::mutex m;
    std::map<std::uintptr_t, Allocation> live;
    std::map<std::string, std::string> demangled;
    State() {
        std::atexit([] { write_record(); });
        watch_parent();
    }
    static void write_record();
    static void watch_parent() {
        const char* v = std::getenv("ROCM_PERF_CAPTURE_PARENT");
        if (!v || !*v) return;
        const pid_t parent = pid_t(std::atol(v));
        std::thread([parent] {
            for (;;) {
                if (kill(parent, 0) != 0 && errno == ESRCH) _exit(137);
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }).detach();
    }
};

State& state() {
    static State* s = new State;
    return *s;
}

void State::write_record() {
    State& s = state();
    std::string text;
    {
        std::lock_guard<std::mutex> lock(s.m);
        text = s.request.run_record(s.demangled);
    }
    const std::string path = s.request.dir + "/run.json", tmp = path + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
        std::fputs(text.c_str(), f);
        std::fclose(f);
        std::rename(tmp.c_str(), path.c_str());
    }
}

void remember(void* p, std::size_t bytes, bool host) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(state().m);
    state().live[reinterpret_cast<std::uintptr_t>(p)] = Allocation{reinterpret_cast<std::uintptr_t>(p), bytes, host};
}

void forget(void* p) {
    std::lock_guard<std::mutex> lock(state().m);
    state().live.erase(reinterpret_cast<std::uintptr_t>(p));
}

std::string demangle(const std::string& name) {
    int status = 0;
    char* text = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !text) return name;
    std::string out(text);
    std::free(text);
    return out;
}

bool write_file(const std::string& path, const std::vector<unsigned char>& data) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    const bool ok = data.empty() || std::fwrite(data.data(), 1, data.size(), f) == data.size();
    return std::fclose(f) == 0 && ok;
}

std::vector<unsigned char> read_device(const Allocation& a) {
    std::vector<unsigned char> bytes(a.size);
    using Copy = hipError_t (*)(void*, const void*, std::size_t, hipMemcpyKind);
    static Copy copy = real<Copy>("hipMemcpy");
    if (a.size) (void)copy(bytes.data(), reinterpret_cast<const void*>(a.address), a.size, hipMemcpyDefault);
    return bytes;
}

void write_text(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
        std::fputs(text.c_str(), f);
        std::fclose(f);
        std::rename(tmp.c_str(), path.c_str());
    }
}

// Runs `launch` (the real call); when it is the chosen launch, captures around it.
template <class RealLaunch>
hipError_t captured(const std::string& mangled, dim3 grid, dim3 block, std::size_t shmem, const unsigned char* arguments,
                    std::size_t argument_bytes, RealLaunch launch) {
    State& s = state();
    const std::string nice = demangle(mangled);
    {
        std::lock_guard<std::mutex> lock(s.m);
        s.demangled[mangled] = nice;
    }
    if (!s.request.chosen_launch(mangled, nice)) return launch();
    using Sync = hipError_t (*)();
    static Sync sync = real<Sync>("hipDeviceSynchronize");
    (void)sync();
    Launch c;
    c.mangled = mangled;
    c.demangled = nice;
    c.dispatch = s.request.dispatch;
    c.grid[0] = grid.x, c.grid[1] = grid.y, c.grid[2] = grid.z;
    c.block[0] = block.x, c.block[1] = block.y, c.block[2] = block.z;
    c.shmem = shmem;
    c.parameters = s.request.parameters;
    c.max_bytes = s.request.max_bytes;
    {
        std::lock_guard<std::mutex> lock(s.m);
        for (const auto& [address, a] : s.live) c.allocations.push_back(a);
    }
    for (const auto& a : c.allocations) c.snapshot_bytes += a.size;
    const std::string dir = s.request.dir;
    std::vector<std::uint64_t> before;
    if (c.snapshot_bytes > c.max_bytes) {
        c.refused = "snapshot";
    } else {
        mkdir((dir + "/memory").c_str(), 0755);
        for (std::size_t i = 0; i < c.allocations.size(); ++i) {
            const auto bytes = read_device(c.allocations[i]);
            before.push_back(rocm_perf_capture::digest(bytes.data(), bytes.size()));
            if (!write_file(dir + "/memory/" + std::to_string(i) + ".before", bytes)) c.error = "memory/" + std::to_string(i) + ".before";
        }
        std::vector<unsigned char> args(arguments, arguments + argument_bytes);
        if (!write_file(dir + "/arguments.bin", args)) c.error = "arguments.bin";
    }
    const auto t0 = std::chrono::steady_clock::now();
    const hipError_t result = launch();
    (void)sync();
    c.kernel_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    if (c.refused.empty()) {
        for (std::size_t i = 0; i < c.allocations.size(); ++i) {
            const auto bytes = read_device(c.allocations[i]);
            c.allocations[i].changed = rocm_perf_capture::digest(bytes.data(), bytes.size()) != before[i];
            if (c.allocations[i].changed) {
                c.snapshot_bytes += bytes.size();
                if (!write_file(dir + "/memory/" + std::to_string(i) + ".after", bytes)) c.error = "memory/" + std::to_string(i) + ".after";
            }
        }
        if (c.snapshot_bytes > c.max_bytes) c.refused = "snapshot";
    }
    write_text(dir + "/capture.json", rocm_perf_capture::capture_record(c));
    return result;
}

// The argument bytes of a void** launch, laid out by the sizes the environment gave.
std::vector<unsigned char> argument_bytes(void** args) {
    const auto& ps = state().request.parameters;
    std::vector<unsigned char> out(rocm_perf_capture::layout_bytes(ps));
    for (std::size_t i = 0; i < ps.size() && args; ++i) std::memcpy(out.data() + ps[i].offset, args[i], ps[i].size);
    return out;
}

}  // namespace

extern "C" {

hipError_t hipMalloc(void** ptr, std::size_t bytes) {
    static auto f = real<hipError_t (*)(void**, std::size_t)>("hipMalloc");
    hipError_t e = f(ptr, bytes);
    if (e == hipSuccess && ptr) remember(*ptr, bytes, false);
    return e;
}

hipError_t hipMallocManaged(void** ptr, std::size_t bytes, unsigned flags) {
    static auto f = real<hipError_t (*)(void**, std::size_t, unsigned)>("hipMallocManaged");
    hipError_t e = f(ptr, bytes, flags);
    if (e == hipSuccess && ptr) remember(*ptr, bytes, false);
    return e;
}

hipError_t hipExtMallocWithFlags(void** ptr, std::size_t bytes, unsigned flags) {
    static auto f = real<hipError_t (*)(void**, std::size_t, unsigned)>("hipExtMallocWithFlags");
    hipError_t e = f(ptr, bytes, flags);
    if (e == hipSuccess && ptr) remember(*ptr, bytes, false);
    return e;
}

hipError_t hipHostMalloc(void** ptr, std::size_t bytes, unsigned flags) {
    static auto f = real<hipError_t (*)(void**, std::size_t, unsigned)>("hipHostMalloc");
    hipError_t e = f(ptr, bytes, flags);
    if (e == hipSuccess && ptr) remember(*ptr, bytes, true);
    return e;
}

hipError_t hipFree(void* p) {
    static auto f = real<hipError_t (*)(void*)>("hipFree");
    forget(p);
    return f(p);
}

hipError_t hipHostFree(void* p) {
    static auto f = real<hipError_t (*)(void*)>("hipHostFree");
    forget(p);
    return f(p);
}

hipError_t hipLaunchKernel(const void* function, dim3 grid, dim3 block, void** args, std::size_t shmem, hipStream_t stream) {
    static auto f = real<hipError_t (*)(const void*, dim3, dim3, void**, std::size_t, hipStream_t)>("hipLaunchKernel");
    const char* name = hipKernelNameRefByPtr(function, stream);
    const auto bytes = argument_bytes(args);
    return captured(name ? name : "<unknown kernel>", grid, block, shmem, bytes.data(), bytes.size(),
                    [&] { return f(function, grid, block, args, shmem, stream); });
}

hipError_t hipExtLaunchKernel(const void* function, dim3 grid, dim3 block, void** args, std::size_t shmem, hipStream_t stream,
                              hipEvent_t start, hipEvent_t stop, int flags) {
    static auto f = real<hipError_t (*)(const void*, dim3, dim3, void**, std::size_t, hipStream_t, hipEvent_t, hipEvent_t, int)>(
        "hipExtLaunchKernel");
    const char* name = hipKernelNameRefByPtr(function, stream);
    const auto bytes = argument_bytes(args);
    return captured(name ? name : "<unknown kernel>", grid, block, shmem, bytes.data(), bytes.size(),
                    [&] { return f(function, grid, block, args, shmem, stream, start, stop, flags); });
}

hipError_t hipModuleLaunchKernel(hipFunction_t function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shmem, hipStream_t stream, void** params, void** extra) {
    static auto f = real<hipError_t (*)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        hipStream_t, void**, void**)>("hipModuleLaunchKernel");
    const char* name = hipKernelNameRef(function);
    std::vector<unsigned char> bytes;
    if (params) {
        bytes = argument_bytes(params);
    } else if (extra) {  // HIP_LAUNCH_PARAM_BUFFER_POINTER, buffer, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END
        const unsigned char* buffer = nullptr;
        std::size_t size = 0;
        for (int i = 0; extra[i] != HIP_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const unsigned char*>(extra[i + 1]);
            if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<std::size_t*>(extra[i + 1]);
        }
        if (buffer) bytes.assign(buffer, buffer + size);
    }
    return captured(name ? name : "<unknown kernel>", dim3(gx, gy, gz), dim3(bx, by, bz), shmem, bytes.data(), bytes.size(),
                    [&] { return f(function, gx, gy, gz, bx, by, bz, shmem, stream, params, extra); });
}

}  // extern "C"
