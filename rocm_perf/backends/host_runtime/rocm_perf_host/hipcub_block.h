// hipCUB's block and warp primitives for the host backend (see hipcub.h): BlockReduce, BlockScan,
// BlockLoad/BlockStore (direct), WarpReduce and WarpScan on the runtime's lock-step warps.
#pragma once

#include <algorithm>

#include "hip/hip_runtime.h"

namespace hipcub {

// ---- block-wide -----------------------------------------------------------------------------
enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS };
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };
enum BlockLoadAlgorithm { BLOCK_LOAD_DIRECT, BLOCK_LOAD_STRIPED, BLOCK_LOAD_VECTORIZE, BLOCK_LOAD_TRANSPOSE,
                          BLOCK_LOAD_WARP_TRANSPOSE };
enum BlockStoreAlgorithm { BLOCK_STORE_DIRECT, BLOCK_STORE_STRIPED, BLOCK_STORE_VECTORIZE, BLOCK_STORE_TRANSPOSE,
                           BLOCK_STORE_WARP_TRANSPOSE };

namespace detail {
inline unsigned linear_thread(unsigned dim_x, unsigned dim_y) {
    return threadIdx.x + dim_x * (threadIdx.y + dim_y * threadIdx.z);
}
}  // namespace detail

template <class T, int BLOCK_DIM_X, BlockReduceAlgorithm = BLOCK_REDUCE_WARP_REDUCTIONS, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int = 0>
class BlockReduce {
    static constexpr int kThreads = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

   public:
    struct TempStorage {
        T items[kThreads];
    };
    __device__ explicit BlockReduce(TempStorage& temp) : temp_(temp), tid_(detail::linear_thread(BLOCK_DIM_X, BLOCK_DIM_Y)) {}
    // The reduction of the block's items, valid in thread 0.
    template <class Op>
    __device__ T Reduce(T input, Op op) { return Reduce(input, op, kThreads); }
    template <class Op>
    __device__ T Reduce(T input, Op op, int num_valid) {
        temp_.items[tid_] = input;
        __syncthreads();
        T acc = input;
        if (tid_ == 0) {
            acc = temp_.items[0];
            for (int i = 1; i < std::min(num_valid, kThreads); ++i) acc = op(acc, temp_.items[i]);
        }
        __syncthreads();  // the storage may be reused at once
        return acc;
    }
    template <int N, class Op>
    __device__ T Reduce(T (&inputs)[N], Op op) {
        T partial = inputs[0];
        for (int i = 1; i < N; ++i) partial = op(partial, inputs[i]);
        return Reduce(partial, op);
    }
    __device__ T Sum(T input) { return Reduce(input, hipcub::Sum()); }
    __device__ T Sum(T input, int num_valid) { return Reduce(input, hipcub::Sum(), num_valid); }
    template <int N>
    __device__ T Sum(T (&inputs)[N]) { return Reduce(inputs, hipcub::Sum()); }

   private:
    TempStorage& temp_;
    unsigned tid_;
};

template <class T, int BLOCK_DIM_X, BlockScanAlgorithm = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1,
          int = 0>
class BlockScan {
    static constexpr int kThreads = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

   public:
    struct TempStorage {
        T items[kThreads];
        T aggregate;
    };
    __device__ explicit BlockScan(TempStorage& temp) : temp_(temp), tid_(detail::linear_thread(BLOCK_DIM_X, BLOCK_DIM_Y)) {}

    template <class Op>
    __device__ void InclusiveScan(T input, T& output, Op op) {
        T aggregate;
        InclusiveScan(input, output, op, aggregate);
    }
    template <class Op>
    __device__ void InclusiveScan(T input, T& output, Op op, T& block_aggregate) {
        scan(input, output, op, block_aggregate, nullptr);
    }
    template <class Op>
    __device__ void ExclusiveScan(T input, T& output, T initial, Op op) {
        T aggregate;
        ExclusiveScan(input, output, initial, op, aggregate);
    }
    template <class Op>
    __device__ void ExclusiveScan(T input, T& output, T initial, Op op, T& block_aggregate) {
        scan(input, output, op, block_aggregate, &initial);
    }
    __device__ void InclusiveSum(T input, T& output) { InclusiveScan(input, output, hipcub::Sum()); }
    __device__ void InclusiveSum(T input, T& output, T& block_aggregate) {
        InclusiveScan(input, output, hipcub::Sum(), block_aggregate);
    }
    __device__ void ExclusiveSum(T input, T& output) { ExclusiveScan(input, output, T(), hipcub::Sum()); }
    __device__ void ExclusiveSum(T input, T& output, T& block_aggregate) {
        ExclusiveScan(input, output, T(), hipcub::Sum(), block_aggregate);
    }
    // ITEMS_PER_THREAD items per thread, blocked: thread i holds items [i*N, i*N + N).
    template <int N>
    __device__ void InclusiveSum(T (&input)[N], T (&output)[N]) { items(input, output, hipcub::Sum(), nullptr); }
    template <int N>
    __device__ void ExclusiveSum(T (&input)[N], T (&output)[N]) {
        const T zero = T();
        items(input, output, hipcub::Sum(), &zero);
    }
    template <int N, class Op>
    __device__ void InclusiveScan(T (&input)[N], T (&output)[N], Op op) { items(input, output, op, nullptr); }
    template <int N, class Op>
    __device__ void ExclusiveScan(T (&input)[N], T (&output)[N], T initial, Op op) { items(input, output, op, &initial); }

   private:
    // Thread 0 scans the block's items between two barriers; every thread then reads its own.
    template <class Op>
    __device__ void scan(T input, T& output, Op op, T& block_aggregate, const T* initial) {
        temp_.items[tid_] = input;
        __syncthreads();
        if (tid_ == 0) {
            T total = temp_.items[0];  // the aggregate: of the inputs alone, as hipCUB's
            for (int i = 1; i < kThreads; ++i) total = op(total, temp_.items[i]);
            if (initial) {
                T acc = *initial;
                for (int i = 0; i < kThreads; ++i) {
                    const T item = temp_.items[i];
                    temp_.items[i] = acc;
                    acc = op(acc, item);
                }
            } else {
                for (int i = 1; i < kThreads; ++i) temp_.items[i] = op(temp_.items[i - 1], temp_.items[i]);
            }
            temp_.aggregate = total;
        }
        __syncthreads();
        output = temp_.items[tid_];
        block_aggregate = temp_.aggregate;
        __syncthreads();
    }
    template <int N, class Op>
    __device__ void items(T (&input)[N], T (&output)[N], Op op, const T* initial) {
        T partial = input[0];
        for (int i = 1; i < N; ++i) partial = op(partial, input[i]);
        T prefix, aggregate;
        if (initial) {
            scan(partial, prefix, op, aggregate, initial);
        } else {
            // The exclusive prefix of this thread's first item: the inclusive scan minus its own part.
            T inclusive;
            scan(partial, inclusive, op, aggregate, nullptr);
            temp_.items[tid_] = inclusive;
            __syncthreads();
            const bool first = tid_ == 0;
            prefix = first ? T() : temp_.items[tid_ - 1];
            __syncthreads();
            T acc = first ? input[0] : op(prefix, input[0]);
            output[0] = acc;
            for (int i = 1; i < N; ++i) output[i] = acc = op(acc, input[i]);
            return;
        }
        T acc = prefix;
        for (int i = 0; i < N; ++i) {
            output[i] = acc;
            acc = op(acc, input[i]);
        }
    }
    TempStorage& temp_;
    unsigned tid_;
};

// Direct (blocked) loads and stores: thread i moves items [i*N, i*N + N).
template <class T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockLoadAlgorithm = BLOCK_LOAD_DIRECT, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1>
class BlockLoad {
   public:
    struct TempStorage {};
    __device__ BlockLoad() = default;
    __device__ explicit BlockLoad(TempStorage&) {}
    template <class It>
    __device__ void Load(It block_in, T (&items)[ITEMS_PER_THREAD]) {
        const unsigned tid = detail::linear_thread(BLOCK_DIM_X, BLOCK_DIM_Y);
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = block_in[tid * ITEMS_PER_THREAD + i];
    }
    template <class It>
    __device__ void Load(It block_in, T (&items)[ITEMS_PER_THREAD], int valid) {
        const unsigned tid = detail::linear_thread(BLOCK_DIM_X, BLOCK_DIM_Y);
        for (int i = 0; i < ITEMS_PER_THREAD; ++i)
            if (int(tid * ITEMS_PER_THREAD + i) < valid) items[i] = block_in[tid * ITEMS_PER_THREAD + i];
    }
    template <class It, class D>
    __device__ void Load(It block_in, T (&items)[ITEMS_PER_THREAD], int valid, D fill) {
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = fill;
        Load(block_in, items, valid);
    }
};
template <class T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockStoreAlgorithm = BLOCK_STORE_DIRECT, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1>
class BlockStore {
   public:
    struct TempStorage {};
    __device__ BlockStore() = default;
    __device__ explicit BlockStore(TempStorage&) {}
    template <class It>
    __device__ void Store(It block_out, T (&items)[ITEMS_PER_THREAD]) {
        const unsigned tid = detail::linear_thread(BLOCK_DIM_X, BLOCK_DIM_Y);
        for (int i = 0; i < ITEMS_PER_THREAD; ++i) block_out[tid * ITEMS_PER_THREAD + i] = items[i];
    }
    template <class It>
    __device__ void Store(It block_out, T (&items)[ITEMS_PER_THREAD], int valid) {
        const unsigned tid = detail::linear_thread(BLOCK_DIM_X, BLOCK_DIM_Y);
        for (int i = 0; i < ITEMS_PER_THREAD; ++i)
            if (int(tid * ITEMS_PER_THREAD + i) < valid) block_out[tid * ITEMS_PER_THREAD + i] = items[i];
    }
};

// ---- warp-wide: the runtime's lock-step warps -----------------------------------------------
template <class T, int LOGICAL_WARP_THREADS = ROCM_PERF_WARP_SIZE, int = 0>
class WarpReduce {
   public:
    struct TempStorage {};
    __device__ explicit WarpReduce(TempStorage&) {}
    // The reduction over the logical warp, valid in its first lane.
    template <class Op>
    __device__ T Reduce(T input, Op op) { return Reduce(input, op, LOGICAL_WARP_THREADS); }
    template <class Op>
    __device__ T Reduce(T input, Op op, int valid_items) {
        const int lane = static_cast<int>(__lane_id() % LOGICAL_WARP_THREADS);
        T acc = input;
        for (int offset = 1; offset < LOGICAL_WARP_THREADS; offset *= 2) {
            const T other = __shfl_down(acc, offset, LOGICAL_WARP_THREADS);
            if (lane + offset < valid_items) acc = op(acc, other);
        }
        return acc;
    }
    __device__ T Sum(T input) { return Reduce(input, hipcub::Sum()); }
    __device__ T Sum(T input, int valid_items) { return Reduce(input, hipcub::Sum(), valid_items); }
};

template <class T, int LOGICAL_WARP_THREADS = ROCM_PERF_WARP_SIZE, int = 0>
class WarpScan {
   public:
    struct TempStorage {};
    __device__ explicit WarpScan(TempStorage&) {}
    template <class Op>
    __device__ void InclusiveScan(T input, T& output, Op op) {
        const int lane = static_cast<int>(__lane_id() % LOGICAL_WARP_THREADS);
        T acc = input;
        for (int offset = 1; offset < LOGICAL_WARP_THREADS; offset *= 2) {
            const T other = __shfl_up(acc, offset, LOGICAL_WARP_THREADS);
            if (lane >= offset) acc = op(other, acc);
        }
        output = acc;
    }
    __device__ void InclusiveSum(T input, T& output) { InclusiveScan(input, output, hipcub::Sum()); }
    template <class Op>
    __device__ void ExclusiveScan(T input, T& output, T initial, Op op) {
        T inclusive;
        InclusiveScan(input, inclusive, op);
        const int lane = static_cast<int>(__lane_id() % LOGICAL_WARP_THREADS);
        const T before = __shfl_up(inclusive, 1, LOGICAL_WARP_THREADS);
        output = lane == 0 ? initial : op(initial, before);
    }
    __device__ void ExclusiveSum(T input, T& output) { ExclusiveScan(input, output, T(), hipcub::Sum()); }
};

}  // namespace hipcub
