// Fibers for __syncthreads(): every GPU thread of a block that reaches a barrier runs on its own
// small stack, and the block's OS thread switches between them round-robin.
//
// glibc's swapcontext makes a system call per switch (sigprocmask), about 400 ns: far too slow
// for a tiled matmul. On x86-64 we switch with a few instructions of our own: save the
// callee-saved registers and the stack pointer. The SSE/x87 control words are not switched:
// every fiber of a block runs on one OS thread and kernels do not change rounding modes.
// Elsewhere (or with -DROCM_PERF_FORCE_UCONTEXT) ucontext.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define ROCM_PERF_HAVE_VALGRIND 1
#endif

#if !defined(__x86_64__) || defined(ROCM_PERF_FORCE_UCONTEXT)
#include <ucontext.h>
#define ROCM_PERF_UCONTEXT 1
#endif

namespace rocm_perf_host {

#ifndef ROCM_PERF_UCONTEXT
// switch_stack(&save_sp, next_sp): push callee-saved registers, store sp, load next_sp, pop, ret.
// A weak symbol so that several translation units may include this header.
extern "C" void rocm_perf_switch_stack(void** save_sp, void* next_sp);
extern "C" void rocm_perf_fiber_trampoline();
asm(R"(
    .text
    .weak rocm_perf_switch_stack
    .type rocm_perf_switch_stack, @function
rocm_perf_switch_stack:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size rocm_perf_switch_stack, .-rocm_perf_switch_stack

    .weak rocm_perf_fiber_trampoline
    .type rocm_perf_fiber_trampoline, @function
rocm_perf_fiber_trampoline:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size rocm_perf_fiber_trampoline, .-rocm_perf_fiber_trampoline
)");
#endif

// A saved execution context. Contexts are symmetric: the OS thread's own stack is one too,
// so a GPU thread that first ran on the OS stack can be suspended at a barrier like any fiber.
struct Context {
#ifdef ROCM_PERF_UCONTEXT
    ucontext_t uc;
#else
    void* sp = nullptr;
#endif
};

// Save the running context into `save` and resume `next`.
inline void switch_context(Context& save, Context& next) {
#ifdef ROCM_PERF_UCONTEXT
    swapcontext(&save.uc, &next.uc);
#else
    rocm_perf_switch_stack(&save.sp, next.sp);
#endif
}

// A fiber stack. `start(ctx, entry, arg)` makes `ctx` begin `entry(arg)` on this stack at its
// next switch; `entry` must never return (it switches away for the last time instead).
//
// Where a fiber's frames sit changes its speed: on a 2-core EPYC VM one layout of the stacks per
// process made matmul_tiled's and stencil1d's CPU time a per-run constant that varied 6-12 %
// between runs, and one fixed layout for every run (2 MiB-aligned chunks, a2ece8e) fixed which
// candidates measured as gains (README, "Measurement"). So every start draws a fresh top, a
// random multiple of 64 bytes below the highest one within kJitter: each block runs on its own
// draw, and a run's time averages over layouts instead of keeping one (the idea of Stabilizer,
// Curtsinger and Berger, ASPLOS 2013: re-randomize layout so that it is noise a mean shrinks).
struct FiberStack {
    static constexpr std::size_t kJitter = 32 * 1024;  // the span of the random top (cache sets and pages)
    static constexpr std::size_t kBytes = 128 * 1024 + kJitter;  // virtual; pages are committed on use
    char* base = nullptr;
    unsigned valgrind_id = 0;

    FiberStack() = default;
    FiberStack(const FiberStack&) = delete;
    FiberStack& operator=(const FiberStack&) = delete;

    void allocate() {
        if (base) return;
        void* mem = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mem == MAP_FAILED) {
            std::fprintf(stderr, "rocm-perf host runtime: cannot map a fiber stack\n");
            std::abort();
        }
        base = static_cast<char*>(mem);
        // A guard page at the bottom turns a stack overflow into a crash instead of corruption.
        mprotect(base, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), PROT_NONE);
#ifdef ROCM_PERF_HAVE_VALGRIND
        valgrind_id = VALGRIND_STACK_REGISTER(base, base + kBytes);
#endif
    }

    ~FiberStack() {
        if (!base) return;
#ifdef ROCM_PERF_HAVE_VALGRIND
        VALGRIND_STACK_DEREGISTER(valgrind_id);
#endif
        munmap(base, kBytes);
    }

    // A random multiple of 64 bytes in [0, kJitter): xorshift64, seeded per OS thread from the
    // clock, the process id and the seed's own (thread-local) address, so that runs and threads
    // draw apart.
    static std::size_t jitter() {
        static thread_local std::uint64_t state = 0;
        if (state == 0) {
            timespec ts{};
            clock_gettime(CLOCK_MONOTONIC, &ts);
            state = ((std::uint64_t(ts.tv_nsec) * 0x9E3779B97F4A7C15ull) ^ reinterpret_cast<std::uintptr_t>(&state) ^
                     (std::uint64_t(getpid()) << 32)) | 1;  // never 0, xorshift's fixed point
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return static_cast<std::size_t>(state % (kJitter / 64)) * 64;
    }

    void start(Context& ctx, void (*entry)(void*), void* arg) {
        allocate();
        const std::size_t below = jitter();
#ifdef ROCM_PERF_UCONTEXT
        getcontext(&ctx.uc);
        ctx.uc.uc_stack.ss_sp = base;
        ctx.uc.uc_stack.ss_size = kBytes - below;
        ctx.uc.uc_link = nullptr;
        // makecontext passes ints: split the pointers into halves.
        auto e = reinterpret_cast<std::uintptr_t>(entry);
        auto a = reinterpret_cast<std::uintptr_t>(arg);
        makecontext(&ctx.uc, reinterpret_cast<void (*)()>(&ucontext_entry), 4, unsigned(e >> 32), unsigned(e),
                    unsigned(a >> 32), unsigned(a));
#else
        auto top = reinterpret_cast<std::uintptr_t>(base + kBytes - below) & ~std::uintptr_t(15);
        auto* ret_slot = reinterpret_cast<std::uint64_t*>(top - 24);  // `ret` leaves sp 16-byte aligned
        ret_slot[0] = reinterpret_cast<std::uint64_t>(&rocm_perf_fiber_trampoline);
        std::uint64_t* regs = ret_slot - 6;  // r15 r14 r13 r12 rbx rbp, in pop order
        regs[0] = 0;
        regs[1] = 0;
        regs[2] = reinterpret_cast<std::uint64_t>(entry);  // r13: the trampoline calls it
        regs[3] = reinterpret_cast<std::uint64_t>(arg);    // r12: its argument
        regs[4] = 0;
        regs[5] = 0;
        ctx.sp = regs;
#endif
    }

#ifdef ROCM_PERF_UCONTEXT
    static void ucontext_entry(unsigned eh, unsigned el, unsigned ah, unsigned al) {
        auto entry = reinterpret_cast<void (*)(void*)>((std::uintptr_t(eh) << 32) | el);
        entry(reinterpret_cast<void*>((std::uintptr_t(ah) << 32) | al));
    }
#endif
};

}  // namespace rocm_perf_host
