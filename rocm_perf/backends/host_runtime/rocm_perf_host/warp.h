// Warp-level operations with AMD semantics, over the lock-step scheduler of lockstep.h:
// shuffles (any trivially copyable type up to 16 bytes, with `width`), votes, __activemask,
// __syncwarp, the _sync forms, matches and reductions, and the AMD builtins that are warp
// operations in disguise (ds_bpermute, readfirstlane, ...).
//
// Lane indices follow HIP's amd_warp_functions.h: __shfl reads lane
// `src_lane + (self & ~(width - 1))`; __shfl_up/__shfl_down/__shfl_xor keep the lane's own
// value when the source falls outside its `width`-lane segment; ds_bpermute takes the lane
// from the byte address modulo the wavefront. Masks are 64-bit as on AMD (the upper half is 0
// with --warp-size 32).
//
// Every warp op takes the caller's file and line as a hidden default argument: lanes meet only
// at the same call (see lockstep.h).
#pragma once

#include <type_traits>

#include "rocm_perf_host/lockstep.h"

// A parameter of its own type, so that no argument of the program can bind to it.
#define ROCM_PERF_CALL_SITE ::rocm_perf_host::CallSite rocm_perf_site = ::rocm_perf_host::CallSite::here()
#define ROCM_PERF_HERE rocm_perf_site
#define ROCM_PERF_FORWARD_SITE rocm_perf_site

namespace rocm_perf_host {

inline unsigned lane_of_thread() {
    return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % unsigned(ROCM_PERF_WARP_SIZE);
}

template <class T>
inline T shuffle_from(T var, int source_lane, CallSite where) {
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= sizeof(LaneBytes),
                  "rocm-perf host backend: warp shuffles take trivially copyable values of at most 16 bytes");
    const LaneBytes& r = warp_rendezvous(&var, sizeof(T), source_lane & (ROCM_PERF_WARP_SIZE - 1),
                                         &combine_shuffle<sizeof(T)>, where);
    T out;
    std::memcpy(&out, r.b, sizeof out);
    return out;
}

// A vote's result: the lanes whose predicate holds, and the lanes that took part.
struct Vote {
    std::uint64_t yes;
    std::uint64_t group;
};

inline Vote ballot(int predicate, CallSite where) {
    const LaneBytes& r = warp_rendezvous(&predicate, sizeof predicate, 0, &combine_ballot, where);
    Vote v;
    std::memcpy(&v, r.b, sizeof v);
    return v;
}

inline std::uint64_t active_group(CallSite where) {
    const LaneBytes& r = warp_rendezvous(nullptr, 0, 0, &combine_group, where);
    std::uint64_t mask;
    std::memcpy(&mask, r.b, sizeof mask);
    return mask;
}

template <class T, class Op>
inline T reduce(T value, CallSite where) {
    const LaneBytes& r = warp_rendezvous(&value, sizeof value, 0, &combine_reduce<T, Op>, where);
    T out;
    std::memcpy(&out, r.b, sizeof out);
    return out;
}

template <class T>
inline Vote match(T value, CallSite where) {
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= sizeof(LaneBytes),
                  "rocm-perf host backend: __match_*_sync take values of at most 16 bytes");
    LaneBytes padded{};
    std::memcpy(padded.b, &value, sizeof value);
    const LaneBytes& r = warp_rendezvous(padded.b, sizeof padded, 0, &combine_match<sizeof(T)>, where);
    Vote v;
    std::memcpy(&v, r.b, sizeof v);
    return v;
}

// readfirstlane: every lane gets the operand of the lowest active lane.
inline void combine_first_lane(Lockstep& L, unsigned base, std::uint64_t group) {
    const unsigned first = static_cast<unsigned>(__builtin_ctzll(group));
    for (std::uint64_t g = group; g; g &= g - 1)
        std::memcpy(L.result[base + __builtin_ctzll(g)].b, L.operand[base + first].b, sizeof(LaneBytes));
}

// ds_permute (forward): each lane writes its operand to lane `source`; the highest writer wins.
inline void combine_forward_permute(Lockstep& L, unsigned base, std::uint64_t group) {
    for (std::uint64_t g = group; g; g &= g - 1) std::memset(L.result[base + __builtin_ctzll(g)].b, 0, sizeof(LaneBytes));
    for (std::uint64_t g = group; g; g &= g - 1) {
        const unsigned lane = static_cast<unsigned>(__builtin_ctzll(g));
        const unsigned dest = static_cast<unsigned>(L.source[base + lane]) & (ROCM_PERF_WARP_SIZE - 1);
        if (group & lane_bit(dest)) std::memcpy(L.result[base + dest].b, L.operand[base + lane].b, sizeof(int));
    }
}

struct Plus {
    template <class T>
    T operator()(T a, T b) const { return a + b; }
};
struct Minimum {
    template <class T>
    T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Maximum {
    template <class T>
    T operator()(T a, T b) const { return a < b ? b : a; }
};
struct BitAnd {
    template <class T>
    T operator()(T a, T b) const { return a & b; }
};
struct BitOr {
    template <class T>
    T operator()(T a, T b) const { return a | b; }
};
struct BitXor {
    template <class T>
    T operator()(T a, T b) const { return a ^ b; }
};

}  // namespace rocm_perf_host

// ---- shuffles ------------------------------------------------------------------------------
template <class T>
inline T __shfl(T var, int src_lane, int width = warpSize, ROCM_PERF_CALL_SITE) {
    const int self = static_cast<int>(rocm_perf_host::lane_of_thread());
    return rocm_perf_host::shuffle_from(var, src_lane + (self & ~(width - 1)), ROCM_PERF_HERE);
}
template <class T>
inline T __shfl_up(T var, unsigned int lane_delta, int width = warpSize, ROCM_PERF_CALL_SITE) {
    const int self = static_cast<int>(rocm_perf_host::lane_of_thread());
    int index = self - static_cast<int>(lane_delta);
    if (index < (self & ~(width - 1))) index = self;
    return rocm_perf_host::shuffle_from(var, index, ROCM_PERF_HERE);
}
template <class T>
inline T __shfl_down(T var, unsigned int lane_delta, int width = warpSize, ROCM_PERF_CALL_SITE) {
    const int self = static_cast<int>(rocm_perf_host::lane_of_thread());
    int index = self + static_cast<int>(lane_delta);
    if (static_cast<int>((self & (width - 1)) + lane_delta) >= width) index = self;
    return rocm_perf_host::shuffle_from(var, index, ROCM_PERF_HERE);
}
template <class T>
inline T __shfl_xor(T var, int lane_mask, int width = warpSize, ROCM_PERF_CALL_SITE) {
    const int self = static_cast<int>(rocm_perf_host::lane_of_thread());
    int index = self ^ lane_mask;
    if (index >= ((self + width) & ~(width - 1))) index = self;
    return rocm_perf_host::shuffle_from(var, index, ROCM_PERF_HERE);
}

// The _sync forms (HIP 6.2+, CUDA spelling): the mask names the lanes that take part; here the
// lanes that meet at the call are the ones that take part.
template <class Mask, class T>
inline T __shfl_sync(Mask, T var, int src_lane, int width = warpSize, ROCM_PERF_CALL_SITE) {
    return __shfl(var, src_lane, width, ROCM_PERF_FORWARD_SITE);
}
template <class Mask, class T>
inline T __shfl_up_sync(Mask, T var, unsigned int lane_delta, int width = warpSize, ROCM_PERF_CALL_SITE) {
    return __shfl_up(var, lane_delta, width, ROCM_PERF_FORWARD_SITE);
}
template <class Mask, class T>
inline T __shfl_down_sync(Mask, T var, unsigned int lane_delta, int width = warpSize, ROCM_PERF_CALL_SITE) {
    return __shfl_down(var, lane_delta, width, ROCM_PERF_FORWARD_SITE);
}
template <class Mask, class T>
inline T __shfl_xor_sync(Mask, T var, int lane_mask, int width = warpSize, ROCM_PERF_CALL_SITE) {
    return __shfl_xor(var, lane_mask, width, ROCM_PERF_FORWARD_SITE);
}

// ---- votes and masks -----------------------------------------------------------------------
inline unsigned long long __ballot(int predicate, ROCM_PERF_CALL_SITE) {
    return rocm_perf_host::ballot(predicate != 0, ROCM_PERF_HERE).yes;
}
inline int __any(int predicate, ROCM_PERF_CALL_SITE) {
    return rocm_perf_host::ballot(predicate != 0, ROCM_PERF_HERE).yes != 0;
}
inline int __all(int predicate, ROCM_PERF_CALL_SITE) {
    const rocm_perf_host::Vote v = rocm_perf_host::ballot(predicate != 0, ROCM_PERF_HERE);
    return v.yes == v.group;
}
inline unsigned long long __activemask(ROCM_PERF_CALL_SITE) { return rocm_perf_host::active_group(ROCM_PERF_HERE); }
inline void __syncwarp(ROCM_PERF_CALL_SITE) { rocm_perf_host::active_group(ROCM_PERF_HERE); }
template <class Mask>
inline void __syncwarp(Mask, ROCM_PERF_CALL_SITE) {
    rocm_perf_host::active_group(ROCM_PERF_HERE);
}
template <class Mask>
inline unsigned long long __ballot_sync(Mask, int predicate, ROCM_PERF_CALL_SITE) {
    return rocm_perf_host::ballot(predicate != 0, ROCM_PERF_HERE).yes;
}
template <class Mask>
inline int __any_sync(Mask, int predicate, ROCM_PERF_CALL_SITE) {
    return __any(predicate, ROCM_PERF_FORWARD_SITE);
}
template <class Mask>
inline int __all_sync(Mask, int predicate, ROCM_PERF_CALL_SITE) {
    return __all(predicate, ROCM_PERF_FORWARD_SITE);
}
template <class Mask, class T>
inline unsigned long long __match_any_sync(Mask, T value, ROCM_PERF_CALL_SITE) {
    return rocm_perf_host::match(value, ROCM_PERF_HERE).yes;
}
template <class Mask, class T>
inline unsigned long long __match_all_sync(Mask, T value, int* pred, ROCM_PERF_CALL_SITE) {
    const rocm_perf_host::Vote same = rocm_perf_host::match(value, ROCM_PERF_HERE);
    const bool all = same.yes == same.group;
    if (pred) *pred = all;
    return all ? same.yes : 0;
}

#define ROCM_PERF_WARP_REDUCE(NAME, OP, T)                                                      \
    template <class Mask>                                                                       \
    inline T NAME(Mask, T value, ROCM_PERF_CALL_SITE) {                                         \
        return rocm_perf_host::reduce<T, rocm_perf_host::OP>(value, ROCM_PERF_HERE);             \
    }
ROCM_PERF_WARP_REDUCE(__reduce_add_sync, Plus, int)
ROCM_PERF_WARP_REDUCE(__reduce_add_sync, Plus, unsigned int)
ROCM_PERF_WARP_REDUCE(__reduce_min_sync, Minimum, int)
ROCM_PERF_WARP_REDUCE(__reduce_min_sync, Minimum, unsigned int)
ROCM_PERF_WARP_REDUCE(__reduce_max_sync, Maximum, int)
ROCM_PERF_WARP_REDUCE(__reduce_max_sync, Maximum, unsigned int)
ROCM_PERF_WARP_REDUCE(__reduce_and_sync, BitAnd, unsigned int)
ROCM_PERF_WARP_REDUCE(__reduce_or_sync, BitOr, unsigned int)
ROCM_PERF_WARP_REDUCE(__reduce_xor_sync, BitXor, unsigned int)
#undef ROCM_PERF_WARP_REDUCE

// Lane masks relative to the calling lane (no rendezvous: they depend on the lane only).
inline unsigned long long __lanemask_lt() {
    return (std::uint64_t(1) << rocm_perf_host::lane_of_thread()) - 1;
}
inline unsigned long long __lanemask_le() { return __lanemask_lt() | (std::uint64_t(1) << rocm_perf_host::lane_of_thread()); }
inline unsigned long long __lanemask_eq() { return std::uint64_t(1) << rocm_perf_host::lane_of_thread(); }
inline unsigned long long __lanemask_gt() {
    return ROCM_PERF_WARP_SIZE == 64 ? ~__lanemask_le() : ~__lanemask_le() & 0xffffffffull;
}

// ---- AMD builtins that are warp operations ---------------------------------------------------
inline int __builtin_amdgcn_ds_bpermute(int byte_address, int value, ROCM_PERF_CALL_SITE) {
    return rocm_perf_host::shuffle_from(value, byte_address >> 2, ROCM_PERF_HERE);
}
inline int __builtin_amdgcn_ds_permute(int byte_address, int value, ROCM_PERF_CALL_SITE) {
    const rocm_perf_host::LaneBytes& r = rocm_perf_host::warp_rendezvous(
        &value, sizeof value, byte_address >> 2, &rocm_perf_host::combine_forward_permute, ROCM_PERF_HERE);
    int out;
    std::memcpy(&out, r.b, sizeof out);
    return out;
}
template <class T>
inline T __builtin_amdgcn_readfirstlane(T value, ROCM_PERF_CALL_SITE) {
    const rocm_perf_host::LaneBytes& r = rocm_perf_host::warp_rendezvous(
        &value, sizeof value, 0, &rocm_perf_host::combine_first_lane, ROCM_PERF_HERE);
    T out;
    std::memcpy(&out, r.b, sizeof out);
    return out;
}
template <class T>
inline T __builtin_amdgcn_readlane(T value, int lane, ROCM_PERF_CALL_SITE) {
    return rocm_perf_host::shuffle_from(value, lane, ROCM_PERF_HERE);
}
inline unsigned __builtin_amdgcn_mbcnt_lo(unsigned mask, unsigned add) {
    const unsigned lane = rocm_perf_host::lane_of_thread();
    const unsigned below = lane >= 32 ? 0xffffffffu : (1u << lane) - 1;
    return add + static_cast<unsigned>(__builtin_popcount(mask & below));
}
inline unsigned __builtin_amdgcn_mbcnt_hi(unsigned mask, unsigned add) {
    const unsigned lane = rocm_perf_host::lane_of_thread();
    const unsigned below = lane < 32 ? 0u : (1u << (lane - 32)) - 1;
    return add + static_cast<unsigned>(__builtin_popcount(mask & below));
}
inline void __builtin_amdgcn_wave_barrier(ROCM_PERF_CALL_SITE) { rocm_perf_host::active_group(ROCM_PERF_HERE); }
inline void __builtin_amdgcn_s_barrier() { __syncthreads(); }

// ---- block-wide votes ------------------------------------------------------------------------
namespace rocm_perf_host {
// __syncthreads_count/and/or: a barrier that also sums a predicate over the block's threads.
inline long long barrier_with_sum(int predicate, unsigned* took_part) {
    BlockState* sp = block_state_of_thread;
    if (!sp || !sp->launch) fatal("__syncthreads_count/_and/_or was called outside a kernel");
    BlockState& s = *sp;
    if (s.mode == BlockMode::Plain)
        fatal("__syncthreads_count/_and/_or reached by some threads of a block but not by its thread 0 "
              "(a barrier must be reached by all threads of a block or none)");
    if (s.mode != BlockMode::Lockstep) enter_lockstep(s, s.current);
    Lockstep& L = *s.lockstep;
    L.barrier_sum += predicate != 0;
    ++L.barrier_arrivals;
    lockstep_wait(s, LaneState::AtBarrier);
    *took_part = L.barrier_result_arrivals;
    return L.barrier_result;
}
}  // namespace rocm_perf_host

inline int __syncthreads_count(int predicate) {
    unsigned n;
    return static_cast<int>(rocm_perf_host::barrier_with_sum(predicate, &n));
}
inline int __syncthreads_and(int predicate) {
    unsigned n;
    return rocm_perf_host::barrier_with_sum(predicate, &n) == static_cast<long long>(n);
}
inline int __syncthreads_or(int predicate) {
    unsigned n;
    return rocm_perf_host::barrier_with_sum(predicate, &n) != 0;
}
