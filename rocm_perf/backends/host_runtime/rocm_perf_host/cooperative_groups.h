// Cooperative groups on the CPU: the block, static and dynamic tiles, coalesced groups and the
// grid (synchronizable under hipLaunchCooperativeKernel, grid.h).
//
// Groups are values that say which threads they hold, as in HIP: a tile passed to a function
// taking `thread_group` keeps its kind, size and rank. Tiles partition the block's linear
// thread ids into aligned runs of a power-of-two size; a tile of at most a wavefront lies in
// one wavefront, so its sync and its shuffles are warp operations (lockstep.h). A dynamic tile
// wider than a wavefront syncs with a block barrier, which every thread of the block must then
// reach. A coalesced group is the set of lanes that meet at the coalesced_threads() call.
#pragma once

#include <cstdint>

#include "rocm_perf_host/grid.h"
#include "rocm_perf_host/warp.h"

namespace cooperative_groups {

namespace internal {
enum group_type { cg_thread_block, cg_tiled_group, cg_coalesced_group, cg_grid, cg_multi_grid };
inline unsigned linear_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
inline unsigned rank_in_mask(std::uint64_t mask, unsigned lane) {
    return static_cast<unsigned>(__builtin_popcountll(mask & ((std::uint64_t(1) << lane) - 1)));
}
// The lane (in the wavefront) of the `rank`-th member of `mask`, or -1.
inline int lane_of_rank(std::uint64_t mask, unsigned rank) {
    for (unsigned r = 0; mask; ++r, mask &= mask - 1)
        if (r == rank) return __builtin_ctzll(mask);
    return -1;
}
// Bits of `mask` (lane positions) packed by rank: bit r = the r-th member's bit.
inline std::uint64_t pack_by_rank(std::uint64_t lanes, std::uint64_t members) {
    std::uint64_t out = 0;
    unsigned r = 0;
    for (std::uint64_t m = members; m; m &= m - 1, ++r)
        if (lanes & (std::uint64_t(1) << __builtin_ctzll(m))) out |= std::uint64_t(1) << r;
    return out;
}
}  // namespace internal

class thread_group {
  protected:
    internal::group_type type_;
    unsigned size_;
    std::uint64_t mask_;  // coalesced groups: the member lanes of the wavefront

    thread_group(internal::group_type type, unsigned size, std::uint64_t mask = 0)
        : type_(type), size_(size), mask_(mask) {}

  public:
    unsigned size() const { return size_; }
    unsigned num_threads() const { return size_; }
    unsigned cg_type() const { return type_; }
    bool is_valid() const { return type_ != internal::cg_grid || rocm_perf_host::block_state_of_thread->launch->grid_barrier; }
    unsigned thread_rank() const {
        switch (type_) {
            case internal::cg_thread_block: return internal::linear_thread();
            case internal::cg_tiled_group: return internal::linear_thread() % size_;
            case internal::cg_coalesced_group: return internal::rank_in_mask(mask_, __lane_id());
            default: {
                const unsigned long long block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
                return static_cast<unsigned>(block * internal::block_threads() + internal::linear_thread());
            }
        }
    }
    void sync(ROCM_PERF_CALL_SITE) const {
        switch (type_) {
            case internal::cg_thread_block: __syncthreads(); break;
            case internal::cg_tiled_group:
                if (size_ > unsigned(warpSize))
                    __syncthreads();
                else
                    rocm_perf_host::active_group(ROCM_PERF_HERE);
                break;
            case internal::cg_coalesced_group: rocm_perf_host::active_group(ROCM_PERF_HERE); break;
            default: rocm_perf_host::grid_sync(); break;
        }
    }

};

class thread_block : public thread_group {
  public:
    thread_block() : thread_group(internal::cg_thread_block, internal::block_threads()) {}
    dim3 group_index() const { return blockIdx; }
    dim3 thread_index() const { return threadIdx; }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
    unsigned thread_rank() const { return internal::linear_thread(); }
    void sync() const { __syncthreads(); }
};

inline thread_block this_thread_block() { return thread_block(); }

class grid_group : public thread_group {
  public:
    grid_group()
        : thread_group(internal::cg_grid,
                       static_cast<unsigned>(1ull * gridDim.x * gridDim.y * gridDim.z * internal::block_threads())) {}
    void sync() const { rocm_perf_host::grid_sync(); }
    dim3 group_dim() const { return gridDim; }
};

inline grid_group this_grid() { return grid_group(); }

// Several devices at one barrier: the host runtime has one device.
template <class Unused = void>
inline void this_multi_grid() {
    static_assert(rocm_perf_host::unsupported_on_host<Unused>::value,
                  "rocm-perf host backend: cooperative_groups::this_multi_grid (multi-device cooperative launch) "
                  "is not supported: the host runtime has one device");
}

// A dynamic tile (tiled_partition(parent, n)) or the base of a static one.
class tiled_group : public thread_group {
  public:
    explicit tiled_group(unsigned tile_size) : thread_group(internal::cg_tiled_group, tile_size) {}
    unsigned thread_rank() const { return internal::linear_thread() % size_; }
};

inline thread_group tiled_partition(const thread_group& parent, unsigned tile_size) {
    if (tile_size == 0 || (tile_size & (tile_size - 1)) != 0)
        rocm_perf_host::fatal("cooperative_groups::tiled_partition: the tile size must be a power of two");
    if (parent.cg_type() == internal::cg_coalesced_group)
        rocm_perf_host::fatal("cooperative_groups::tiled_partition of a coalesced group is not supported by the host runtime");
    if (tile_size > parent.size())
        rocm_perf_host::fatal("cooperative_groups::tiled_partition: the tile is larger than the group it divides");
    return tiled_group(tile_size);
}
inline tiled_group tiled_partition(const tiled_group& parent, unsigned tile_size) {
    return tiled_group(tiled_partition(static_cast<const thread_group&>(parent), tile_size).size());
}

// A tile whose size is known at compile time: the wavefront-level operations of its lanes.
template <unsigned Size, class ParentT = void>
class thread_block_tile : public tiled_group {
    static_assert(Size > 0 && (Size & (Size - 1)) == 0, "a thread_block_tile size must be a power of two");
    static_assert(Size <= ROCM_PERF_WARP_SIZE, "a thread_block_tile must fit in a wavefront (warpSize)");

    static std::uint64_t tile_lanes() {
        const unsigned first = __lane_id() & ~(Size - 1);
        return (Size == 64 ? ~0ull : ((std::uint64_t(1) << Size) - 1)) << first;
    }
    // A vote's lanes as bits 0..Size-1 of this tile.
    static std::uint64_t in_tile(std::uint64_t lanes) {
        const unsigned first = __lane_id() & ~(Size - 1);
        return (lanes >> first) & (Size == 64 ? ~0ull : ((std::uint64_t(1) << Size) - 1));
    }

  public:
    thread_block_tile() : tiled_group(Size) {}
    template <class OtherParent>
    thread_block_tile(const thread_block_tile<Size, OtherParent>&) : tiled_group(Size) {}

    static constexpr unsigned size() { return Size; }
    static constexpr unsigned num_threads() { return Size; }
    unsigned thread_rank() const { return internal::linear_thread() % Size; }
    unsigned meta_group_rank() const { return internal::linear_thread() / Size; }
    unsigned meta_group_size() const { return (internal::block_threads() + Size - 1) / Size; }
    void sync(ROCM_PERF_CALL_SITE) const { rocm_perf_host::active_group(ROCM_PERF_HERE); }

    template <class T>
    T shfl(T var, int src_rank, ROCM_PERF_CALL_SITE) const {
        return __shfl(var, src_rank, int(Size), ROCM_PERF_FORWARD_SITE);
    }
    template <class T>
    T shfl_down(T var, unsigned int delta, ROCM_PERF_CALL_SITE) const {
        return __shfl_down(var, delta, int(Size), ROCM_PERF_FORWARD_SITE);
    }
    template <class T>
    T shfl_up(T var, unsigned int delta, ROCM_PERF_CALL_SITE) const {
        return __shfl_up(var, delta, int(Size), ROCM_PERF_FORWARD_SITE);
    }
    template <class T>
    T shfl_xor(T var, unsigned int lane_mask, ROCM_PERF_CALL_SITE) const {
        return __shfl_xor(var, int(lane_mask), int(Size), ROCM_PERF_FORWARD_SITE);
    }
    unsigned long long ballot(int pred, ROCM_PERF_CALL_SITE) const {
        return in_tile(rocm_perf_host::ballot(pred != 0, ROCM_PERF_HERE).yes);
    }
    int any(int pred, ROCM_PERF_CALL_SITE) const {
        return in_tile(rocm_perf_host::ballot(pred != 0, ROCM_PERF_HERE).yes) != 0;
    }
    int all(int pred, ROCM_PERF_CALL_SITE) const {
        const rocm_perf_host::Vote v = rocm_perf_host::ballot(pred != 0, ROCM_PERF_HERE);
        return in_tile(v.yes) == in_tile(v.group);
    }
    template <class T>
    unsigned long long match_any(T value, ROCM_PERF_CALL_SITE) const {
        return in_tile(rocm_perf_host::match(value, ROCM_PERF_HERE).yes & tile_lanes());
    }
    template <class T>
    unsigned long long match_all(T value, int& pred, ROCM_PERF_CALL_SITE) const {
        const rocm_perf_host::Vote v = rocm_perf_host::match(value, ROCM_PERF_HERE);
        const std::uint64_t same = v.yes & tile_lanes(), members = v.group & tile_lanes();
        pred = same == members;
        return pred ? in_tile(same) : 0;
    }
};

template <unsigned Size, class Parent>
inline thread_block_tile<Size, Parent> tiled_partition(const Parent&) {
    return thread_block_tile<Size, Parent>();
}

// The lanes that reached this call together: in lock-step emulation, exactly the active lanes.
class coalesced_group : public thread_group {
    int lane_of(unsigned rank) const { return internal::lane_of_rank(mask_, rank); }

  public:
    explicit coalesced_group(std::uint64_t lanes)
        : thread_group(internal::cg_coalesced_group, static_cast<unsigned>(__builtin_popcountll(lanes)), lanes) {}
    unsigned thread_rank() const { return internal::rank_in_mask(mask_, __lane_id()); }
    unsigned meta_group_rank() const { return 0; }
    unsigned meta_group_size() const { return 1; }
    void sync(ROCM_PERF_CALL_SITE) const { rocm_perf_host::active_group(ROCM_PERF_HERE); }

    template <class T>
    T shfl(T var, int src_rank, ROCM_PERF_CALL_SITE) const {
        const int lane = lane_of(static_cast<unsigned>(src_rank) % size_);
        return rocm_perf_host::shuffle_from(var, lane, ROCM_PERF_HERE);
    }
    template <class T>
    T shfl_down(T var, unsigned int delta, ROCM_PERF_CALL_SITE) const {
        const unsigned target = thread_rank() + delta;
        const int lane = target < size_ ? lane_of(target) : int(__lane_id());
        return rocm_perf_host::shuffle_from(var, lane, ROCM_PERF_HERE);
    }
    template <class T>
    T shfl_up(T var, unsigned int delta, ROCM_PERF_CALL_SITE) const {
        const unsigned rank = thread_rank();
        const int lane = rank >= delta ? lane_of(rank - delta) : int(__lane_id());
        return rocm_perf_host::shuffle_from(var, lane, ROCM_PERF_HERE);
    }
    unsigned long long ballot(int pred, ROCM_PERF_CALL_SITE) const {
        return internal::pack_by_rank(rocm_perf_host::ballot(pred != 0, ROCM_PERF_HERE).yes, mask_);
    }
    int any(int pred, ROCM_PERF_CALL_SITE) const {
        return (rocm_perf_host::ballot(pred != 0, ROCM_PERF_HERE).yes & mask_) != 0;
    }
    int all(int pred, ROCM_PERF_CALL_SITE) const {
        const rocm_perf_host::Vote v = rocm_perf_host::ballot(pred != 0, ROCM_PERF_HERE);
        return (v.yes & mask_) == (v.group & mask_);
    }
};

inline coalesced_group coalesced_threads(ROCM_PERF_CALL_SITE) {
    return coalesced_group(rocm_perf_host::active_group(ROCM_PERF_HERE));
}

template <class Group>
inline void sync(const Group& g) {
    g.sync();
}
template <class Group>
inline unsigned group_size(const Group& g) {
    return g.size();
}
template <class Group>
inline unsigned thread_rank(const Group& g) {
    return g.thread_rank();
}

}  // namespace cooperative_groups
