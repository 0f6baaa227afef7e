// Cooperative launches (hipLaunchCooperativeKernel): every block resident at once, so that
// cooperative_groups::this_grid().sync() can hold all of them at one barrier.
//
// A block's `__shared__` variables are per OS thread (runtime.h), so "resident" means one OS
// thread per block for the launch's duration, each running its block's threads as fibers. The
// grid barrier holds those OS threads. How many blocks may be resident follows the occupancy
// the runtime reports (hipOccupancyMaxActiveBlocksPerMultiprocessor x multiProcessorCount), as
// on a GPU; launches beyond it fail with hipErrorCooperativeLaunchTooLarge.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace rocm_perf_host {

// Blocks of `threads_per_block` threads using `shmem` dynamic shared bytes that one "compute
// unit" holds at once: the CDNA limits of 2048 threads and 64 KiB of LDS per CU, at most 32
// blocks (the HIP occupancy calculator's per-CU block limit).
inline int resident_blocks_per_unit(unsigned threads_per_block, std::size_t shmem) {
    if (threads_per_block == 0 || threads_per_block > 1024) return 0;
    long by_threads = 2048 / long(threads_per_block);
    long by_lds = shmem ? long((64 * 1024) / shmem) : 32;
    long blocks = std::min<long>(std::min<long>(by_threads, by_lds), 32);
    return static_cast<int>(blocks);
}

// Whether `blocks` blocks fit on the device at once, as hipLaunchCooperativeKernel requires;
// `units` is the multiProcessorCount the runtime reports (its block-pool threads).
inline bool cooperative_launch_fits(unsigned threads_per_block, std::size_t shmem, std::uint64_t blocks, unsigned units) {
    constexpr std::uint64_t kMaxResidentBlocks = 1024;  // one OS thread each
    const std::uint64_t fit = std::uint64_t(resident_blocks_per_unit(threads_per_block, shmem)) * units;
    return blocks <= std::min(fit, kMaxResidentBlocks);
}

struct GridBarrier {
    std::mutex m;
    std::condition_variable cv;
    std::uint64_t total = 0;
    std::uint64_t waiting = 0;
    std::uint64_t generation = 0;

    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(m);
        const std::uint64_t mine = generation;
        if (++waiting == total) {
            waiting = 0;
            ++generation;
            cv.notify_all();
            return;
        }
        cv.wait(lock, [&] { return generation != mine; });
    }
};

// Sets this OS thread up for `l`: dimensions and dynamic shared memory.
inline void enter_launch(Launch& l) {
    gridDim.x = l.grid.x, gridDim.y = l.grid.y, gridDim.z = l.grid.z;
    blockDim.x = l.block.x, blockDim.y = l.block.y, blockDim.z = l.block.z;
    auto& s = block_state();
    if (s.shared_storage.size() < l.shmem + 64) s.shared_storage.resize(l.shmem + 64);
    auto raw = reinterpret_cast<std::uintptr_t>(s.shared_storage.data());
    s.dynamic_shared = reinterpret_cast<unsigned char*>((raw + 63) & ~std::uintptr_t(63));
}

// Runs every block of `l` at once, one OS thread each; returns when all have finished.
inline void run_all_resident(Launch& l) {
    GridBarrier barrier;
    barrier.total = l.total_blocks;
    l.grid_barrier = &barrier;
    std::vector<std::thread> blocks;
    blocks.reserve(l.total_blocks);
    for (std::uint64_t b = 0; b < l.total_blocks; ++b)
        blocks.emplace_back([&l, b] {
            SamplingScope sampling(l.kernel);  // sampler.h: this thread runs the launch's block
            DispatchClockScope clock(l.cost);  // dispatch_clocks.h: its CPU time counts for the dispatch
            enter_launch(l);
            run_block(l, b);
            // This OS thread ends: its block state (fiber stacks) goes with it.
            BlockState* s = block_state_of_thread;
            block_state_of_thread = nullptr;
            delete s->lockstep;
            delete s;
        });
    for (auto& t : blocks) t.join();
    l.grid_barrier = nullptr;
    l.done_blocks.store(l.total_blocks, std::memory_order_release);
    l.next_block.store(l.total_blocks, std::memory_order_release);
}

// this_grid().sync(): the block's threads meet, its thread 0 waits for every other block's,
// and the block's threads go on together.
inline void grid_sync() {
    BlockState* s = block_state_of_thread;
    if (!s || !s->launch) fatal("this_grid().sync() was called outside a kernel");
    if (!s->launch->grid_barrier)
        fatal("cooperative_groups::this_grid().sync() needs a cooperative launch (hipLaunchCooperativeKernel): "
              "a plain launch does not keep every block resident, so a grid barrier would never be reached by all");
    barrier();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) s->launch->grid_barrier->arrive_and_wait();
    barrier();
}

}  // namespace rocm_perf_host
