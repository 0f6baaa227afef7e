// Lock-step warps: the scheduler a block switches to when one of its threads reaches a
// warp-level operation (shuffle, vote, __syncwarp, a cooperative-groups tile op).
//
// On AMD hardware the lanes of a wavefront execute each instruction together; a shuffle reads
// what the other lanes hold at that same instruction. Here every GPU thread of the block is a
// fiber on one OS thread, and a warp operation is a rendezvous: a lane deposits its operand and
// waits; once no lane of its warp can run any further (each waits at a warp op or a block
// barrier, or has returned), the lanes waiting at the same call (file, line and kind of op)
// are released together with their results. Lanes that returned, or wait elsewhere, are inactive
// for that op, as under a divergent branch: a shuffle reading an inactive lane gets 0, as
// ds_bpermute does ("reading from inactive lanes returns 0": core::arch::amdgpu docs).
//
// `__syncthreads()` in this mode is a block-wide rendezvous over the same states. Blocks that
// never reach a warp op never get here: their barriers keep the cheaper round-robin of
// runtime.h (one switch per thread per barrier, no bookkeeping).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace rocm_perf_host {

#ifndef ROCM_PERF_WARP_SIZE
#define ROCM_PERF_WARP_SIZE 64
#endif

enum class LaneState : unsigned char { Ready, AtBarrier, AtWarpOp, Finished };

// Where a warp op was called from: lanes meet only at the same call. (g++ has no
// __builtin_COLUMN: two warp ops of one kind on one line count as one call.)
struct CallSite {
    const char* file;
    int line;
    bool operator==(const CallSite& o) const { return line == o.line && file == o.file; }
    // As a default argument, `CallSite::here()` is evaluated at the caller: its file and line.
    static CallSite here(int line = __builtin_LINE(), const char* file = __builtin_FILE()) { return {file, line}; }
};

struct Lockstep;
// Computes the results of one warp op for the lanes in `group` (bit i = lane i of the warp
// whose first thread is `base`).
using WarpCombine = void (*)(Lockstep&, unsigned base, std::uint64_t group);

struct alignas(16) LaneBytes {
    unsigned char b[16];
};

struct Lockstep {
    unsigned threads = 0;
    unsigned warps = 0;
    unsigned owner = 0;  // the GPU thread whose context is the OS thread's own stack
    std::vector<LaneState> state;
    std::vector<CallSite> site;
    std::vector<WarpCombine> combine;
    std::vector<LaneBytes> operand;  // what each lane deposited
    std::vector<int> source;         // the lane (in its warp) a shuffle reads
    std::vector<LaneBytes> result;   // what the release left for each lane
    std::vector<unsigned> warp_ready;  // lanes of each warp that can run (or run now)
    std::vector<unsigned> warp_waiting_op;
    unsigned ready = 0;
    unsigned at_barrier = 0;
    unsigned finished = 0;
    long long barrier_sum = 0;     // __syncthreads_count/and/or: the sum of this barrier's predicates
    long long barrier_result = 0;  // ... and of the last released one
    unsigned barrier_arrivals = 0;  // ... and how many took part
    unsigned barrier_result_arrivals = 0;

    unsigned lanes_in(unsigned w) const {
        unsigned first = w * ROCM_PERF_WARP_SIZE;
        return threads - first < ROCM_PERF_WARP_SIZE ? threads - first : ROCM_PERF_WARP_SIZE;
    }
};

void fiber_thread_entry(void* arg);

// Release one group of the lanes of warp `w` that wait at warp ops. When lanes wait at several
// calls (divergence), the hardware runs the lanes that are behind first and reconverges the
// others after them: lanes still in a loop before those that left it, the `then` branch before
// the code after the `if`. Without a control-flow graph, the earliest line of the same file
// stands for "behind"; calls in different files go by their lowest lane.
inline void release_warp_op(Lockstep& L, unsigned w) {
    const unsigned base = w * ROCM_PERF_WARP_SIZE, lanes = L.lanes_in(w);
    unsigned first = lanes;
    for (unsigned i = 0; i < lanes; ++i) {
        if (L.state[base + i] != LaneState::AtWarpOp) continue;
        if (first == lanes) {
            first = i;
            continue;
        }
        const CallSite& best = L.site[base + first];
        const CallSite& here = L.site[base + i];
        if (here.file == best.file && here.line < best.line) first = i;
    }
    const CallSite where = L.site[base + first];
    std::uint64_t group = 0;
    for (unsigned i = first; i < lanes; ++i)
        if (L.state[base + i] == LaneState::AtWarpOp && L.site[base + i] == where &&
            L.combine[base + i] == L.combine[base + first])
            group |= std::uint64_t(1) << i;
    L.combine[base + first](L, base, group);
    const unsigned count = static_cast<unsigned>(__builtin_popcountll(group));
    for (std::uint64_t g = group; g; g &= g - 1) L.state[base + __builtin_ctzll(g)] = LaneState::Ready;
    L.warp_waiting_op[w] -= count;
    L.warp_ready[w] += count;
    L.ready += count;
}

inline void release_barrier(Lockstep& L) {
    for (unsigned t = 0; t < L.threads; ++t)
        if (L.state[t] == LaneState::AtBarrier) {
            L.state[t] = LaneState::Ready;
            ++L.warp_ready[t / ROCM_PERF_WARP_SIZE];
        }
    L.ready += L.at_barrier;
    L.at_barrier = 0;
    L.barrier_result = L.barrier_sum;
    L.barrier_result_arrivals = L.barrier_arrivals;
    L.barrier_sum = 0;
    L.barrier_arrivals = 0;
}

// After a lane of warp `w` stopped running: release what can be released.
inline void settle(Lockstep& L, unsigned w) {
    if (L.warp_ready[w] == 0 && L.warp_waiting_op[w] > 0) release_warp_op(L, w);
    if (L.ready == 0 && L.at_barrier > 0) release_barrier(L);
}

// The next thread to run after `from`: a ready lane of the same warp first (a warp runs from
// one warp op to the next without leaving), else the next warp with a ready lane.
inline unsigned next_ready(const Lockstep& L, unsigned from) {
    const unsigned w = from / ROCM_PERF_WARP_SIZE;
    if (L.warp_ready[w]) {
        const unsigned base = w * ROCM_PERF_WARP_SIZE, lanes = L.lanes_in(w);
        for (unsigned k = 1; k <= lanes; ++k) {
            unsigned t = base + (from - base + k) % lanes;
            if (L.state[t] == LaneState::Ready) return t;
        }
    }
    for (unsigned k = 1; k <= L.warps; ++k) {
        unsigned v = (w + k) % L.warps;
        if (!L.warp_ready[v]) continue;
        const unsigned base = v * ROCM_PERF_WARP_SIZE, lanes = L.lanes_in(v);
        for (unsigned i = 0; i < lanes; ++i)
            if (L.state[base + i] == LaneState::Ready) return base + i;
    }
    return L.owner;  // nothing can run: every thread has finished
}

// The running thread stops (`why`); returns once it is released.
inline void lockstep_wait(BlockState& s, LaneState why) {
    Lockstep& L = *s.lockstep;
    const unsigned me = s.current, w = me / ROCM_PERF_WARP_SIZE;
    L.state[me] = why;
    --L.warp_ready[w];
    --L.ready;
    if (why == LaneState::AtBarrier)
        ++L.at_barrier;
    else
        ++L.warp_waiting_op[w];
    settle(L, w);
    if (L.state[me] == LaneState::Ready) return;  // released by its own arrival (the last lane)
    switch_thread(s, me, next_ready(L, me));
}

// The running thread returned from the kernel. A fiber never comes back; the owner (on the OS
// stack) comes back once every thread of the block has finished.
inline void lockstep_finish(BlockState& s) {
    Lockstep& L = *s.lockstep;
    const unsigned me = s.current, w = me / ROCM_PERF_WARP_SIZE;
    L.state[me] = LaneState::Finished;
    --L.warp_ready[w];
    --L.ready;
    ++L.finished;
    settle(L, w);
    if (L.finished == L.threads) {
        if (me != L.owner) switch_thread(s, me, L.owner);
        return;
    }
    switch_thread(s, me, next_ready(L, me));
}

// Turn the running block into lock-step fibers. `running` is the thread that reached the warp
// op; the states of the others follow from the mode the block was in:
// - Probe: thread 0 runs on the OS stack, no other thread has started;
// - Plain: thread `running` runs on the OS stack, the ones before it have finished, the ones
//   after it have not started;
// - Fibers (round-robin barriers): the ones before `running` wait at the barrier it will
//   reach next, the ones after it are on their way from the previous one.
inline void enter_lockstep(BlockState& s, unsigned running) {
#ifdef ROCM_PERF_HOST_NO_WARP_OPS
    if (s.mode == BlockMode::Plain)
        fatal("a warp-level operation was reached in a program built as having none "
              "(ROCM_PERF_HOST_NO_WARP_OPS): rebuild it without that define");
#endif
    const unsigned n = s.launch->threads_per_block;
    if (!s.lockstep) s.lockstep = new Lockstep;
    Lockstep& L = *s.lockstep;
    const BlockMode from = s.mode;
    L.threads = n;
    L.warps = (n + ROCM_PERF_WARP_SIZE - 1) / ROCM_PERF_WARP_SIZE;
    L.owner = from == BlockMode::Plain ? running : 0;
    L.state.assign(n, LaneState::Ready);
    L.site.resize(n);
    L.combine.resize(n);
    L.operand.resize(n);
    L.source.resize(n);
    L.result.resize(n);
    L.warp_ready.assign(L.warps, 0);
    L.warp_waiting_op.assign(L.warps, 0);
    L.ready = L.at_barrier = L.finished = 0;
    L.barrier_sum = L.barrier_result = 0;
    L.barrier_arrivals = L.barrier_result_arrivals = 0;
    for (unsigned t = 0; t < n; ++t) {
        bool done = false, waiting = false;
        if (from == BlockMode::Plain) done = t < running;
        if (from == BlockMode::Fibers) {
            done = s.finished[t] != 0;
            waiting = !done && t < running;
        }
        if (done) {
            L.state[t] = LaneState::Finished;
            ++L.finished;
        } else if (waiting) {
            L.state[t] = LaneState::AtBarrier;
            ++L.at_barrier;
        } else {
            ++L.warp_ready[t / ROCM_PERF_WARP_SIZE];
            ++L.ready;
        }
    }
    if (from != BlockMode::Fibers) {
        prepare_fibers(s, n);
        for (unsigned t = running + 1; t < n; ++t)
            s.stacks[t]->start(s.contexts[t], &fiber_thread_entry, reinterpret_cast<void*>(std::uintptr_t(t)));
    }
    s.current = running;
    s.mode = BlockMode::Lockstep;
}

// The running thread deposits `bytes` of `value` (and the lane it reads, for a shuffle) at a
// warp op and waits for the release; returns its result bytes.
inline const LaneBytes& warp_rendezvous(const void* value, std::size_t bytes, int source, WarpCombine combine,
                                        CallSite where) {
    BlockState* sp = block_state_of_thread;
    if (!sp || !sp->launch) fatal("a warp-level operation was called outside a kernel");
    BlockState& s = *sp;
    if (s.mode != BlockMode::Lockstep) {
        // A plain loop does not keep `current` (it costs a store per thread): take threadIdx.
        const unsigned running = s.mode == BlockMode::Fibers
                                     ? s.current
                                     : threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        enter_lockstep(s, running);
    }
    Lockstep& L = *s.lockstep;
    const unsigned me = s.current;
    std::memcpy(L.operand[me].b, value, bytes);
    L.source[me] = source;
    L.combine[me] = combine;
    L.site[me] = where;
    lockstep_wait(s, LaneState::AtWarpOp);
    return L.result[me];
}

// ---- the combines: what a release computes for its group ---------------------------------
inline std::uint64_t lane_bit(unsigned lane) { return std::uint64_t(1) << lane; }

// Shuffle: each lane gets the operand of its source lane, or zeros if that lane is inactive.
template <std::size_t Bytes>
inline void combine_shuffle(Lockstep& L, unsigned base, std::uint64_t group) {
    for (std::uint64_t g = group; g; g &= g - 1) {
        const unsigned lane = static_cast<unsigned>(__builtin_ctzll(g));
        const int src = L.source[base + lane];
        if (src >= 0 && src < ROCM_PERF_WARP_SIZE && (group & lane_bit(unsigned(src))))
            std::memcpy(L.result[base + lane].b, L.operand[base + unsigned(src)].b, Bytes);
        else
            std::memset(L.result[base + lane].b, 0, Bytes);
    }
}

// Ballot: each lane gets the mask of the group's lanes whose predicate (an int) is non-zero,
// then the group's own mask.
inline void combine_ballot(Lockstep& L, unsigned base, std::uint64_t group) {
    std::uint64_t mask[2] = {0, group};
    for (std::uint64_t g = group; g; g &= g - 1) {
        const unsigned lane = static_cast<unsigned>(__builtin_ctzll(g));
        int pred;
        std::memcpy(&pred, L.operand[base + lane].b, sizeof pred);
        if (pred) mask[0] |= lane_bit(lane);
    }
    for (std::uint64_t g = group; g; g &= g - 1) std::memcpy(L.result[base + __builtin_ctzll(g)].b, mask, sizeof mask);
}

// The group itself: __activemask, __syncwarp, coalesced groups.
inline void combine_group(Lockstep& L, unsigned base, std::uint64_t group) {
    for (std::uint64_t g = group; g; g &= g - 1) std::memcpy(L.result[base + __builtin_ctzll(g)].b, &group, sizeof group);
}

// A reduction over the group: each lane gets op(all operands), as __reduce_*_sync do.
template <class T, class Op>
inline void combine_reduce(Lockstep& L, unsigned base, std::uint64_t group) {
    bool first = true;
    T acc{};
    for (std::uint64_t g = group; g; g &= g - 1) {
        T v;
        std::memcpy(&v, L.operand[base + __builtin_ctzll(g)].b, sizeof v);
        acc = first ? v : Op()(acc, v);
        first = false;
    }
    for (std::uint64_t g = group; g; g &= g - 1) std::memcpy(L.result[base + __builtin_ctzll(g)].b, &acc, sizeof acc);
}

// Match: each lane gets the mask of the group's lanes whose operand has the same bytes, then
// the group's own mask.
template <std::size_t Bytes>
inline void combine_match(Lockstep& L, unsigned base, std::uint64_t group) {
    for (std::uint64_t g = group; g; g &= g - 1) {
        const unsigned lane = static_cast<unsigned>(__builtin_ctzll(g));
        std::uint64_t same[2] = {0, group};
        for (std::uint64_t h = group; h; h &= h - 1) {
            const unsigned other = static_cast<unsigned>(__builtin_ctzll(h));
            if (std::memcmp(L.operand[base + lane].b, L.operand[base + other].b, Bytes) == 0) same[0] |= lane_bit(other);
        }
        std::memcpy(L.result[base + lane].b, same, sizeof same);
    }
}

}  // namespace rocm_perf_host
