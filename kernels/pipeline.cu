// A three-stage pipeline over chunks on three streams, ordered by events:
//   stream 0: expand_chunk  (polynomial of each input value)      -> record produced[chunk]
//   stream 1: wait produced[chunk]; smooth_chunk (13-point window)  -> record smoothed[chunk]
//   stream 2: wait smoothed[chunk]; reduce_chunk (block partial sums)
// Chunk c of stage 2 overlaps chunk c+1 of stage 1 and c+2 of stage 0, so the dispatch DAG has
// cross-stream edges from the events. Every round scales the input differently, so a stage that
// ran before its producer finished reads the previous round's values and the check fails.
// Exercises: hipStreamCreate, hipEventRecord, hipStreamWaitEvent, hipEventSynchronize,
// hipEventElapsedTime, launches on non-null streams with both `<<<>>>` and hipLaunchKernelGGL,
// a runtime-trip Horner loop, a constant-trip window loop, a shared-memory tree reduction with
// barriers. The first two stages cost about the same, so the critical path crosses streams.
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define HIP_CHECK(call)                                                                 \
    do {                                                                                \
        hipError_t status_ = (call);                                                    \
        if (status_ != hipSuccess) {                                                    \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,   \
                         hipGetErrorString(status_));                                   \
            std::exit(2);                                                               \
        }                                                                               \
    } while (0)

constexpr int kChunks = 6;
constexpr int kChunkSize = 1 << 18;
constexpr int kRounds = 4;
constexpr int kDegree = 16;
constexpr int kRadius = 6;  // smoothing window: 2 * kRadius + 1 points, triangular weights
constexpr int kBlock = 256;
constexpr int kReduceBlocks = 16;
constexpr int kReduceThreads = 64;

__global__ void expand_chunk(const float* __restrict__ input, float* __restrict__ expanded,
                             const float* __restrict__ coefficients, int degree, float scale, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = input[i];
    float acc = coefficients[degree];
    for (int d = degree - 1; d >= 0; --d) acc = fmaf(acc, x, coefficients[d]);
    expanded[i] = scale * acc;
}

__host__ __device__ inline float window_weight(int offset) {
    const int distance = offset < 0 ? -offset : offset;
    return static_cast<float>(kRadius + 1 - distance) / static_cast<float>((kRadius + 1) * (kRadius + 1));
}

// Triangular moving average inside the chunk; indices clamp at the chunk's edges.
__global__ void smooth_chunk(const float* __restrict__ expanded, float* __restrict__ smoothed, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        const int j = i + k < 0 ? 0 : (i + k >= n ? n - 1 : i + k);
        acc += window_weight(k) * expanded[j];
    }
    smoothed[i] = acc;
}

// Each block sums a contiguous slice of the chunk; partials[blockIdx.x] gets the slice's sum.
__global__ void reduce_chunk(const float* __restrict__ smoothed, float* __restrict__ partials, int n) {
    __shared__ float scratch[kReduceThreads];
    const int slice = (n + gridDim.x - 1) / gridDim.x;
    const int begin = blockIdx.x * slice;
    const int end = begin + slice < n ? begin + slice : n;
    float acc = 0.0f;
    for (int i = begin + threadIdx.x; i < end; i += blockDim.x) acc += smoothed[i];
    scratch[threadIdx.x] = acc;
    __syncthreads();
#pragma unroll
    for (int stride = kReduceThreads / 2; stride > 0; stride >>= 1) {
        if (static_cast<int>(threadIdx.x) < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = scratch[0];
}

static float input_value(unsigned int index, unsigned int seed) {
    unsigned int h = index * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return static_cast<float>(h & 0xFFFFFFu) / 16777216.0f * 2.0f - 1.0f;
}

static float round_scale(int round) { return 1.0f + 0.5f * round; }

int main() {
    const size_t total = static_cast<size_t>(kChunks) * kChunkSize;
    std::vector<float> input(total), coefficients(kDegree + 1);
    for (size_t i = 0; i < total; ++i) input[i] = input_value(static_cast<unsigned int>(i), 61u);
    for (int d = 0; d <= kDegree; ++d) coefficients[d] = 1.0f / (1.0f + d * d);

    float *d_input = nullptr, *d_expanded = nullptr, *d_smoothed = nullptr, *d_partials = nullptr,
          *d_coefficients = nullptr;
    HIP_CHECK(hipMalloc(&d_input, total * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_expanded, total * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_smoothed, total * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_partials, kChunks * kReduceBlocks * sizeof(float)));
    HIP_CHECK(hipMalloc(&d_coefficients, coefficients.size() * sizeof(float)));
    HIP_CHECK(hipMemcpy(d_input, input.data(), total * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(d_coefficients, coefficients.data(), coefficients.size() * sizeof(float),
                        hipMemcpyHostToDevice));
    HIP_CHECK(hipMemset(d_expanded, 0, total * sizeof(float)));
    HIP_CHECK(hipMemset(d_smoothed, 0, total * sizeof(float)));

    hipStream_t streams[3];
    for (hipStream_t& stream : streams) HIP_CHECK(hipStreamCreate(&stream));
    hipEvent_t produced[kChunks], smoothed[kChunks], start, finished;
    for (int c = 0; c < kChunks; ++c) {
        HIP_CHECK(hipEventCreate(&produced[c]));
        HIP_CHECK(hipEventCreate(&smoothed[c]));
    }
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&finished));

    const dim3 grid((kChunkSize + kBlock - 1) / kBlock);
    HIP_CHECK(hipEventRecord(start, streams[0]));
    for (int round = 0; round < kRounds; ++round) {
        for (int c = 0; c < kChunks; ++c) {
            const size_t offset = static_cast<size_t>(c) * kChunkSize;
            hipLaunchKernelGGL(expand_chunk, grid, dim3(kBlock), 0, streams[0], d_input + offset,
                               d_expanded + offset, d_coefficients, kDegree, round_scale(round), kChunkSize);
            HIP_CHECK(hipGetLastError());
            HIP_CHECK(hipEventRecord(produced[c], streams[0]));

            HIP_CHECK(hipStreamWaitEvent(streams[1], produced[c], 0));
            smooth_chunk<<<grid, kBlock, 0, streams[1]>>>(d_expanded + offset, d_smoothed + offset, kChunkSize);
            HIP_CHECK(hipGetLastError());
            HIP_CHECK(hipEventRecord(smoothed[c], streams[1]));

            HIP_CHECK(hipStreamWaitEvent(streams[2], smoothed[c], 0));
            reduce_chunk<<<kReduceBlocks, kReduceThreads, 0, streams[2]>>>(
                d_smoothed + offset, d_partials + c * kReduceBlocks, kChunkSize);
            HIP_CHECK(hipGetLastError());
        }
        // stream 2 finishing implies streams 0 and 1 finished (it waited on their last events),
        // so the next round may overwrite the buffers
        HIP_CHECK(hipEventRecord(finished, streams[2]));
        HIP_CHECK(hipEventSynchronize(finished));
    }
    HIP_CHECK(hipDeviceSynchronize());
    float elapsed_ms = 0.0f;  // not printed: the output must be deterministic
    HIP_CHECK(hipEventElapsedTime(&elapsed_ms, start, finished));

    std::vector<float> result(total), partials(kChunks * kReduceBlocks);
    HIP_CHECK(hipMemcpy(result.data(), d_smoothed, total * sizeof(float), hipMemcpyDeviceToHost));
    HIP_CHECK(hipMemcpy(partials.data(), d_partials, partials.size() * sizeof(float), hipMemcpyDeviceToHost));

    // Reference of the last round, chunk by chunk (smoothing does not cross chunk edges).
    const float scale = round_scale(kRounds - 1);
    std::vector<float> expanded(kChunkSize);
    double checksum = 0.0;
    for (int c = 0; c < kChunks; ++c) {
        const float* x = &input[static_cast<size_t>(c) * kChunkSize];
        const float* got = &result[static_cast<size_t>(c) * kChunkSize];
        for (int i = 0; i < kChunkSize; ++i) {
            double acc = coefficients[kDegree];
            for (int d = kDegree - 1; d >= 0; --d) acc = acc * x[i] + coefficients[d];
            expanded[i] = static_cast<float>(scale * acc);
        }
        const int slice = (kChunkSize + kReduceBlocks - 1) / kReduceBlocks;
        for (int b = 0; b < kReduceBlocks; ++b) {
            double slice_sum = 0.0;
            for (int i = b * slice; i < (b + 1) * slice && i < kChunkSize; ++i) {
                double expected = 0.0;
                for (int k = -kRadius; k <= kRadius; ++k) {
                    const int j = i + k < 0 ? 0 : (i + k >= kChunkSize ? kChunkSize - 1 : i + k);
                    expected += static_cast<double>(window_weight(k)) * expanded[j];
                }
                if (std::fabs(got[i] - expected) > 1e-5 * std::fabs(expected) + 1e-5) {
                    std::fprintf(stderr, "pipeline: MISMATCH in chunk %d at %d: got %.7g, expected %.7g\n", c, i,
                                 got[i], expected);
                    return 1;
                }
                slice_sum += got[i];
            }
            const float partial = partials[c * kReduceBlocks + b];
            if (std::fabs(partial - slice_sum) > 1e-4 * std::fabs(slice_sum) + 1e-2) {
                std::fprintf(stderr, "pipeline: MISMATCH in partial sum %d of chunk %d: got %.7g, expected %.7g\n", b,
                             c, partial, slice_sum);
                return 1;
            }
            checksum += partial;
        }
    }

    for (int c = 0; c < kChunks; ++c) {
        HIP_CHECK(hipEventDestroy(produced[c]));
        HIP_CHECK(hipEventDestroy(smoothed[c]));
    }
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(finished));
    for (hipStream_t stream : streams) HIP_CHECK(hipStreamDestroy(stream));
    HIP_CHECK(hipFree(d_input));
    HIP_CHECK(hipFree(d_expanded));
    HIP_CHECK(hipFree(d_smoothed));
    HIP_CHECK(hipFree(d_partials));
    HIP_CHECK(hipFree(d_coefficients));
    if (!(elapsed_ms >= 0.0f)) {
        std::fprintf(stderr, "pipeline: event timing is not a non-negative number: %g ms\n", elapsed_ms);
        return 1;
    }
    std::printf("pipeline: %d chunks of %d on 3 streams, %d rounds: PASS\n", kChunks, kChunkSize, kRounds);
    std::printf("checksum %.8e\n", checksum);
    return 0;
}
