// Cooperative groups on the CPU: the block-level group works (its sync is __syncthreads);
// grid-wide sync and warp tiles fail at compile time where they are used.
#pragma once
#include "rocm_perf_host/runtime.h"

namespace cooperative_groups {

class thread_block {
  public:
    void sync() const { __syncthreads(); }
    unsigned thread_rank() const { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
    unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
    dim3 group_index() const { return blockIdx; }
    dim3 thread_index() const { return threadIdx; }
};

inline thread_block this_thread_block() { return thread_block(); }
inline void sync(const thread_block& g) { g.sync(); }

class grid_group {
  public:
    template <class Unused = void>
    void sync() const {
        static_assert(rocm_perf_host::unsupported_on_host<Unused>::value,
                      "rocm-perf host backend: cooperative groups grid_group::sync() (grid-wide barrier) is not "
                      "supported: it needs every block resident at once; profile this program with the rocm backend");
    }
    unsigned long long size() const {
        return 1ull * gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
    }
};

template <class Unused = void>
inline grid_group this_grid() {
    return grid_group();
}

template <unsigned Size, class Parent>
inline thread_block tiled_partition(const Parent&) {
    static_assert(rocm_perf_host::unsupported_on_host<Parent>::value,
                  "rocm-perf host backend: cooperative groups tiled_partition (warp tiles) is not supported: the "
                  "lanes of a wavefront do not run in lock-step on the CPU");
    return thread_block();
}

}  // namespace cooperative_groups
