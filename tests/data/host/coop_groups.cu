// Cooperative groups, each result checked against a plain C++ computation: the block group,
// static tiles (shuffles, votes, meta ranks), dynamic tiles passed as `thread_group` (their kind
// survives the copy), a coalesced group of the lanes that reach it, and a grid-wide barrier
// under hipLaunchCooperativeKernel. `grid-sync-plain` runs the grid barrier under an ordinary
// launch, which must stop with a message; `too-large` asks for more resident blocks than fit.
#include <hip/hip_cooperative_groups.h>
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace cg = cooperative_groups;

static int failures = 0;
#define EXPECT(cond, ...)                                  \
    do {                                                   \
        if (!(cond)) {                                     \
            if (failures++ < 10) std::printf(__VA_ARGS__); \
        }                                                  \
    } while (0)

// A shared-memory tree reduction over any group, synchronized by the group itself.
__device__ unsigned reduce_sum(cg::thread_group g, unsigned* scratch, unsigned value) {
    const unsigned rank = g.thread_rank();
    for (unsigned i = g.size() / 2; i > 0; i /= 2) {
        scratch[rank] = value;
        g.sync();
        if (rank < i) value += scratch[rank + i];
        g.sync();
    }
    return rank == 0 ? value : 0;
}

constexpr int kBlock = 256;

__global__ void groups(const unsigned* in, unsigned* out) {
    __shared__ unsigned scratch[kBlock];
    cg::thread_block block = cg::this_thread_block();
    const unsigned v = in[blockIdx.x * kBlock + block.thread_rank()];
    unsigned* o = out + blockIdx.x * 1024;

    unsigned s = reduce_sum(block, scratch, v);
    if (block.thread_rank() == 0) o[0] = s;

    // Static tiles of 16: a reduction through thread_group, then through shuffles.
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
    const unsigned first = block.thread_rank() - tile.thread_rank();
    s = reduce_sum(tile, scratch + first, v);
    if (tile.thread_rank() == 0) o[1 + tile.meta_group_rank()] = s;
    unsigned t = v;
    for (unsigned d = tile.size() / 2; d > 0; d /= 2) t += tile.shfl_down(t, d);
    if (tile.thread_rank() == 0) o[32 + tile.meta_group_rank()] = t;
    o[64 + block.thread_rank()] = tile.shfl(v, 3) + 7 * tile.shfl_xor(v, 1) + 1000000u * tile.meta_group_size();
    o[320 + block.thread_rank()] = static_cast<unsigned>(tile.ballot(v % 2 == 0)) + (tile.any(v == 5) << 20) +
                                   (tile.all(v < 1000000) << 21);

    // Dynamic tiles of 32 and of 128 (wider than a wavefront of 64: a block barrier).
    cg::thread_group d32 = cg::tiled_partition(block, 32);
    s = reduce_sum(d32, scratch + block.thread_rank() - d32.thread_rank(), v);
    if (d32.thread_rank() == 0) o[576 + block.thread_rank() / 32] = s;
    cg::thread_group d128 = cg::tiled_partition(block, 128);
    s = reduce_sum(d128, scratch + block.thread_rank() - d128.thread_rank(), v);
    if (d128.thread_rank() == 0) o[584 + block.thread_rank() / 128] = s + (d128.size() << 24);

    // Coalesced: the odd threads only.
    if (block.thread_rank() % 2 == 1) {
        cg::coalesced_group odd = cg::coalesced_threads();
        o[600 + block.thread_rank() / 2] = odd.shfl(v, 0) + (odd.size() << 20) + (odd.thread_rank() << 27);
    }
}

// Two phases with a grid barrier between: every block reads what every other block wrote.
__global__ void grid_phases(unsigned* data, unsigned* sums) {
    cg::grid_group grid = cg::this_grid();
    const unsigned rank = grid.thread_rank();
    data[rank] = rank + 1;
    grid.sync();
    unsigned total = 0;
    for (unsigned i = 0; i < grid.size(); ++i) total += data[i];
    grid.sync();
    data[rank] = 0;  // nobody may still be reading: the barrier held everyone
    sums[rank] = total + (grid.is_valid() ? 0u : 1u);
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "";
    const int blocks = 3;
    std::vector<unsigned> in(blocks * kBlock);
    for (size_t i = 0; i < in.size(); ++i) in[i] = (i * 37 + 11) % 1000;

    if (std::strcmp(mode, "grid-sync-plain") == 0) {
        unsigned *data, *sums;
        hipMalloc(&data, 64 * sizeof(unsigned));
        hipMalloc(&sums, 64 * sizeof(unsigned));
        grid_phases<<<2, 32>>>(data, sums);
        hipDeviceSynchronize();
        std::printf("grid sync under a plain launch returned\n");
        return 0;
    }
    if (std::strcmp(mode, "too-large") == 0) {
        int per_unit = 0, units = 0;
        hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_unit, grid_phases, 256, 0);
        hipDeviceGetAttribute(&units, hipDeviceAttributeMultiprocessorCount, 0);
        unsigned *data, *sums;
        void* args[] = {&data, &sums};
        hipError_t e = hipLaunchCooperativeKernel(grid_phases, dim3(per_unit * units + 1), dim3(256), args, 0, nullptr);
        std::printf("too large: %s, then %s\n", hipGetErrorName(e), hipGetErrorName(hipGetLastError()));
        return e == hipErrorCooperativeLaunchTooLarge ? 0 : 1;
    }

    unsigned *din, *dout;
    hipMalloc(&din, in.size() * sizeof(unsigned));
    hipMalloc(&dout, blocks * 1024 * sizeof(unsigned));
    hipMemcpy(din, in.data(), in.size() * sizeof(unsigned), hipMemcpyHostToDevice);
    groups<<<blocks, kBlock>>>(din, dout);
    std::vector<unsigned> out(blocks * 1024);
    hipMemcpy(out.data(), dout, out.size() * sizeof(unsigned), hipMemcpyDeviceToHost);
    for (int b = 0; b < blocks; ++b) {
        const unsigned* v = in.data() + b * kBlock;
        const unsigned* o = out.data() + b * 1024;
        auto sum = [&](int first, int count) {
            unsigned s = 0;
            for (int i = first; i < first + count; ++i) s += v[i];
            return s;
        };
        EXPECT(o[0] == sum(0, kBlock), "block %d sum %u vs %u\n", b, o[0], sum(0, kBlock));
        for (int t = 0; t < kBlock / 16; ++t) {
            EXPECT(o[1 + t] == sum(t * 16, 16), "block %d tile %d sum\n", b, t);
            EXPECT(o[32 + t] == sum(t * 16, 16), "block %d tile %d shuffle sum\n", b, t);
        }
        for (int r = 0; r < kBlock; ++r) {
            const int first = r / 16 * 16;
            const unsigned want = v[first + 3] + 7 * v[first + ((r % 16) ^ 1)] + 1000000u * (kBlock / 16);
            EXPECT(o[64 + r] == want, "block %d thread %d tile shfl/shfl_xor: %u vs %u\n", b, r, o[64 + r], want);
            unsigned ballot = 0, any5 = 0, all = 1;
            for (int l = 0; l < 16; ++l) {
                ballot |= (v[first + l] % 2 == 0) << l;
                any5 |= v[first + l] == 5;
            }
            EXPECT(o[320 + r] == ballot + (any5 << 20) + (all << 21), "block %d thread %d tile votes\n", b, r);
        }
        for (int t = 0; t < kBlock / 32; ++t) EXPECT(o[576 + t] == sum(t * 32, 32), "block %d dynamic tile %d\n", b, t);
        for (int t = 0; t < 2; ++t)
            EXPECT(o[584 + t] == sum(t * 128, 128) + (128u << 24), "block %d dynamic tile of 128 %d\n", b, t);
        for (int r = 1; r < kBlock; r += 2) {
            const int wave = r / warpSize * warpSize;
            const unsigned want = v[wave + 1] + (unsigned(warpSize / 2) << 20) + (unsigned(r % warpSize / 2) << 27);
            EXPECT(o[600 + r / 2] == want, "block %d thread %d coalesced: %u vs %u\n", b, r, o[600 + r / 2], want);
        }
    }

    // The grid barrier: as many blocks as fit at once.
    int per_unit = 0, units = 0, coop = 0;
    hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_unit, grid_phases, 64, 0);
    hipDeviceGetAttribute(&units, hipDeviceAttributeMultiprocessorCount, 0);
    hipDeviceGetAttribute(&coop, hipDeviceAttributeCooperativeLaunch, 0);
    EXPECT(coop == 1 && per_unit > 0 && units > 0, "cooperative launch attributes %d %d %d\n", coop, per_unit, units);
    const int grid_blocks = std::min(per_unit * units, 8);
    const unsigned threads = grid_blocks * 64;
    unsigned *data, *sums;
    hipMalloc(&data, threads * sizeof(unsigned));
    hipMalloc(&sums, threads * sizeof(unsigned));
    void* args[] = {&data, &sums};
    hipError_t e = hipLaunchCooperativeKernel(grid_phases, dim3(grid_blocks), dim3(64), args, 0, nullptr);
    EXPECT(e == hipSuccess, "cooperative launch: %s\n", hipGetErrorName(e));
    std::vector<unsigned> hs(threads);
    hipMemcpy(hs.data(), sums, threads * sizeof(unsigned), hipMemcpyDeviceToHost);
    for (unsigned i = 0; i < threads; ++i) EXPECT(hs[i] == threads * (threads + 1) / 2, "grid sum at %u: %u\n", i, hs[i]);

    if (failures) {
        std::printf("cooperative groups: %d mismatches\n", failures);
        return 1;
    }
    std::printf("cooperative groups: all match (%d resident blocks)\n", grid_blocks);
    return 0;
}
