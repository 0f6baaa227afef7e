// RCCL on the host backend: communicators of one process (ncclCommInitAll, or ncclCommInitRank
// from a thread per rank sharing an ncclUniqueId) over the device the host runtime presents, and
// the collectives AllReduce, Broadcast (and Bcast), Reduce, AllGather, ReduceScatter, with
// ncclGroupStart/End.
//
// Every rank's call is one dispatch on that rank's stream, named as RCCL's kernels are
// (ncclKernel_AllReduce_RING_LL_Sum_float, ...). The dispatches of one collective meet: the last to
// run computes the result into every rank's buffer, and a rank's dispatch returns only once the
// result is there, so that work queued after it on its stream sees it - except where ranks share
// one stream (possible here, with one device), whose queue runs their dispatches in turn: there the
// later one completes the earlier.
//
// Several processes (one rank each, as multi-node jobs and most MPI programs run RCCL) are not
// provided: ranks of other processes would need a shared-memory transport keyed by the unique id
// and a bootstrap to exchange it; ncclCommInitRank with a unique id another process created
// returns ncclInvalidUsage with a line on stderr saying so.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hip/hip_runtime.h"
#include "rocm_perf_host/bfloat16.h"
#include "rocm_perf_host/half.h"
#include "rocm_perf_host/library_dispatch.h"

#define NCCL_MAJOR 2
#define NCCL_MINOR 18
#define NCCL_PATCH 3
#define NCCL_VERSION_CODE 21803
#define RCCL_BFLOAT16 1
#define NCCL_UNIQUE_ID_BYTES 128

typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;
typedef enum {
    ncclInt8 = 0, ncclChar = 0, ncclUint8 = 1, ncclInt32 = 2, ncclInt = 2, ncclUint32 = 3, ncclInt64 = 4,
    ncclUint64 = 5, ncclFloat16 = 6, ncclHalf = 6, ncclFloat32 = 7, ncclFloat = 7, ncclFloat64 = 8,
    ncclDouble = 8, ncclBfloat16 = 9, ncclNumTypes = 10
} ncclDataType_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, ncclNumOps = 5 } ncclRedOp_t;

namespace rocm_perf_host {
namespace rccl {

// One collective call of every rank: its buffers, and who has arrived and finished.
struct Call {
    std::vector<const void*> send;
    std::vector<void*> recv;
    std::vector<ihipStream_t*> stream;
    int arrived = 0;
    int left = 0;
    bool done = false;
};

struct Clique {
    int nranks = 0;
    std::mutex m;
    std::condition_variable cv;
    std::map<unsigned long long, Call> calls;  // by sequence number
    std::vector<unsigned long long> next_seq;  // per rank
    explicit Clique(int n) : nranks(n), next_seq(static_cast<std::size_t>(n), 0) {}
};

struct Comm {
    std::shared_ptr<Clique> clique;
    int rank = 0;
};

inline std::size_t type_size(ncclDataType_t t) {
    switch (t) {
        case ncclInt8: case ncclUint8: return 1;
        case ncclFloat16: case ncclBfloat16: return 2;
        case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
        default: return 8;
    }
}
inline const char* type_name(ncclDataType_t t) {
    static const char* names[] = {"int8_t", "uint8_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "half", "float", "double", "rccl_bfloat16"};
    return t >= 0 && t < ncclNumTypes ? names[t] : "?";
}

template <class T>
inline double to_double(const T& v) { return static_cast<double>(v); }
inline double to_double(const __half& v) { return static_cast<double>(static_cast<float>(v)); }
inline double to_double(const __hip_bfloat16& v) { return static_cast<double>(static_cast<float>(v)); }

// out[i] = op over ranks of in[r][i] (Avg: the sum divided by the ranks, as RCCL).
template <class T>
inline void reduce_into(T* out, const std::vector<const void*>& in, std::size_t count, ncclRedOp_t op) {
    const int n = static_cast<int>(in.size());
    for (std::size_t i = 0; i < count; ++i) {
        if constexpr (std::is_same<T, __half>::value || std::is_same<T, __hip_bfloat16>::value) {
            float acc = static_cast<float>(static_cast<const T*>(in[0])[i]);
            for (int r = 1; r < n; ++r) {
                const float v = static_cast<float>(static_cast<const T*>(in[r])[i]);
                acc = op == ncclProd ? acc * v : op == ncclMax ? std::max(acc, v) : op == ncclMin ? std::min(acc, v) : acc + v;
            }
            out[i] = T(op == ncclAvg ? acc / n : acc);
        } else {
            T acc = static_cast<const T*>(in[0])[i];
            for (int r = 1; r < n; ++r) {
                const T v = static_cast<const T*>(in[r])[i];
                acc = op == ncclProd ? T(acc * v) : op == ncclMax ? std::max(acc, v) : op == ncclMin ? std::min(acc, v) : T(acc + v);
            }
            out[i] = op == ncclAvg ? T(acc / n) : acc;
        }
    }
}
inline void reduce_typed(void* out, const std::vector<const void*>& in, std::size_t count, ncclDataType_t t, ncclRedOp_t op) {
    switch (t) {
        case ncclInt8: reduce_into(static_cast<int8_t*>(out), in, count, op); break;
        case ncclUint8: reduce_into(static_cast<uint8_t*>(out), in, count, op); break;
        case ncclInt32: reduce_into(static_cast<int32_t*>(out), in, count, op); break;
        case ncclUint32: reduce_into(static_cast<uint32_t*>(out), in, count, op); break;
        case ncclInt64: reduce_into(static_cast<int64_t*>(out), in, count, op); break;
        case ncclUint64: reduce_into(static_cast<uint64_t*>(out), in, count, op); break;
        case ncclFloat16: reduce_into(static_cast<__half*>(out), in, count, op); break;
        case ncclFloat32: reduce_into(static_cast<float*>(out), in, count, op); break;
        case ncclFloat64: reduce_into(static_cast<double*>(out), in, count, op); break;
        case ncclBfloat16: reduce_into(static_cast<__hip_bfloat16*>(out), in, count, op); break;
        default: break;
    }
}

inline std::string kernel_name(const char* collective, ncclRedOp_t op, ncclDataType_t t, bool has_op) {
    static const char* ops[] = {"Sum", "Prod", "Max", "Min", "Avg"};
    std::string name = std::string("ncclKernel_") + collective + "_RING_LL_";
    if (has_op) name += std::string(op >= 0 && op < ncclNumOps ? ops[op] : "Sum") + "_";
    return name + type_name(t);
}
// Names live for the program's life: the trace refers to them.
inline const char* interned(const std::string& name) {
    static std::mutex m;
    static std::map<std::string, std::unique_ptr<std::string>> names;
    std::lock_guard<std::mutex> lock(m);
    auto& slot = names[name];
    if (!slot) slot = std::make_unique<std::string>(name);
    return slot->c_str();
}

// A call registered with its clique, its dispatch not yet queued (inside ncclGroupStart/End).
struct Deferred {
    std::function<void()> enqueue;
};
inline int& group_depth() {
    static thread_local int depth = 0;
    return depth;
}
inline std::vector<Deferred>& deferred() {
    static thread_local std::vector<Deferred> calls;
    return calls;
}

// Rank `comm`'s part of one collective; `finish(call)` computes every rank's result (once).
// Registered at once; queued at once, or at ncclGroupEnd inside a group (so that every rank of
// a group is registered before any of its dispatches runs).
template <class Finish>
inline ncclResult_t collective(Comm* comm, const std::string& name, const void* send, void* recv, hipStream_t stream,
                               Finish finish) {
    if (!comm) return ncclInvalidArgument;
    Clique* clique = comm->clique.get();
    ihipStream_t* s = runtime().resolve(stream);
    unsigned long long seq;
    {
        std::lock_guard<std::mutex> lock(clique->m);
        seq = clique->next_seq[comm->rank]++;
        Call& call = clique->calls[seq];
        if (call.send.empty()) {
            call.send.assign(clique->nranks, nullptr);
            call.recv.assign(clique->nranks, nullptr);
            call.stream.assign(clique->nranks, nullptr);
        }
        call.send[comm->rank] = send;
        call.recv[comm->rank] = recv;
        call.stream[comm->rank] = s;
    }
    auto owner = comm->clique;
    const int rank = comm->rank;
    const char* kernel = interned(name);
    auto enqueue = [owner, seq, rank, s, stream, kernel, finish]() {
        library_dispatch(kernel, stream, [owner, seq, rank, s, finish]() {
            Clique* c = owner.get();
            std::unique_lock<std::mutex> lock(c->m);
            Call& call = c->calls[seq];
            if (++call.arrived == c->nranks) {
                finish(call);
                call.done = true;
                c->cv.notify_all();
            } else {
                // Wait for the ranks of other streams; a rank queued behind this one on the same
                // stream completes the call itself.
                c->cv.wait(lock, [&] {
                    if (call.done) return true;
                    for (int r = 0; r < c->nranks; ++r)
                        if (r != rank && call.stream[r] == s) return true;
                    return false;
                });
            }
            if (++call.left == c->nranks) c->calls.erase(seq);  // every rank's part has run
        }, false);
    };
    if (group_depth() > 0)
        deferred().push_back(Deferred{enqueue});
    else
        enqueue();
    return ncclSuccess;
}

inline std::mutex& pending_mutex() {
    static std::mutex m;
    return m;
}
inline std::map<std::string, std::shared_ptr<Clique>>& pending() {  // ncclCommInitRank's rendezvous
    static std::map<std::string, std::shared_ptr<Clique>> cliques;
    return cliques;
}

}  // namespace rccl
}  // namespace rocm_perf_host

typedef rocm_perf_host::rccl::Comm* ncclComm_t;

inline ncclResult_t ncclGetVersion(int* version) {
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}
inline const char* ncclGetErrorString(ncclResult_t r) {
    switch (r) {
        case ncclSuccess: return "no error";
        case ncclUnhandledCudaError: return "unhandled cuda error";
        case ncclSystemError: return "unhandled system error";
        case ncclInternalError: return "internal error";
        case ncclInvalidArgument: return "invalid argument";
        case ncclInvalidUsage: return "invalid usage";
        case ncclRemoteError: return "remote process exited or there was a network error";
        case ncclInProgress: return "NCCL operation in progress";
        default: return "unknown result code";
    }
}
inline const char* ncclGetLastError(ncclComm_t) { return ""; }
inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
    static std::atomic<unsigned long long> next{1};
    std::memset(id->internal, 0, sizeof id->internal);
    std::snprintf(id->internal, sizeof id->internal, "rocm-perf-host:%d:%llu", static_cast<int>(getpid()), next++);
    return ncclSuccess;
}
// ndev ranks of this process; the host runtime presents one device, on which every rank runs.
inline ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
    if (!comms || ndev < 1) return ncclInvalidArgument;
    (void)devlist;
    auto clique = std::make_shared<rocm_perf_host::rccl::Clique>(ndev);
    for (int r = 0; r < ndev; ++r) comms[r] = new rocm_perf_host::rccl::Comm{clique, r};
    return ncclSuccess;
}
inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
    if (!comm || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
    const std::string key(id.internal, strnlen(id.internal, sizeof id.internal));
    const std::string mine = "rocm-perf-host:" + std::to_string(getpid()) + ":";
    if (key.rfind(mine, 0) != 0) {
        std::fprintf(stderr, "rocm-perf host backend: ncclCommInitRank with a unique id from another process is not "
                             "supported (the host runtime's RCCL joins ranks of one process only)\n");
        return ncclInvalidUsage;
    }
    std::shared_ptr<rocm_perf_host::rccl::Clique> clique;
    {
        std::lock_guard<std::mutex> lock(rocm_perf_host::rccl::pending_mutex());
        auto& slot = rocm_perf_host::rccl::pending()[key];
        if (!slot) slot = std::make_shared<rocm_perf_host::rccl::Clique>(nranks);
        if (slot->nranks != nranks) return ncclInvalidArgument;
        clique = slot;
    }
    *comm = new rocm_perf_host::rccl::Comm{clique, rank};
    return ncclSuccess;
}
inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    delete comm;
    return ncclSuccess;
}
inline ncclResult_t ncclCommFinalize(ncclComm_t) { return ncclSuccess; }
inline ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }
inline ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
    *count = comm->clique->nranks;
    return ncclSuccess;
}
inline ncclResult_t ncclCommCuDevice(const ncclComm_t, int* device) {
    *device = 0;
    return ncclSuccess;
}
inline ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
    *rank = comm->rank;
    return ncclSuccess;
}
inline ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* error) {
    *error = ncclSuccess;
    return ncclSuccess;
}
// One thread driving several ranks groups their calls (as RCCL requires): queued at the end.
inline ncclResult_t ncclGroupStart() {
    ++rocm_perf_host::rccl::group_depth();
    return ncclSuccess;
}
inline ncclResult_t ncclGroupEnd() {
    if (rocm_perf_host::rccl::group_depth() == 0) return ncclInvalidUsage;
    if (--rocm_perf_host::rccl::group_depth() > 0) return ncclSuccess;
    std::vector<rocm_perf_host::rccl::Deferred> calls;
    calls.swap(rocm_perf_host::rccl::deferred());
    for (auto& call : calls) call.enqueue();
    return ncclSuccess;
}

inline ncclResult_t ncclAllReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                                  ncclComm_t comm, hipStream_t stream) {
    using namespace rocm_perf_host::rccl;
    return collective(comm, kernel_name("AllReduce", op, type, true), send, recv, stream, [=](Call& call) {
        std::vector<unsigned char> result(count * type_size(type));
        reduce_typed(result.data(), call.send, count, type, op);
        for (void* out : call.recv) std::memcpy(out, result.data(), result.size());
    });
}
inline ncclResult_t ncclReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                               int root, ncclComm_t comm, hipStream_t stream) {
    using namespace rocm_perf_host::rccl;
    return collective(comm, kernel_name("Reduce", op, type, true), send, recv, stream, [=](Call& call) {
        std::vector<unsigned char> result(count * type_size(type));
        reduce_typed(result.data(), call.send, count, type, op);
        std::memcpy(call.recv[root], result.data(), result.size());
    });
}
inline ncclResult_t ncclBroadcast(const void* send, void* recv, std::size_t count, ncclDataType_t type, int root,
                                  ncclComm_t comm, hipStream_t stream) {
    using namespace rocm_perf_host::rccl;
    return collective(comm, kernel_name("Broadcast", ncclSum, type, false), send, recv, stream, [=](Call& call) {
        const std::size_t bytes = count * type_size(type);
        for (void* out : call.recv)
            if (out != call.send[root]) std::memmove(out, call.send[root], bytes);
    });
}
inline ncclResult_t ncclBcast(void* buff, std::size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                              hipStream_t stream) {
    return ncclBroadcast(buff, buff, count, type, root, comm, stream);
}
inline ncclResult_t ncclAllGather(const void* send, void* recv, std::size_t sendcount, ncclDataType_t type,
                                  ncclComm_t comm, hipStream_t stream) {
    using namespace rocm_perf_host::rccl;
    return collective(comm, kernel_name("AllGather", ncclSum, type, false), send, recv, stream, [=](Call& call) {
        const std::size_t bytes = sendcount * type_size(type);
        const int n = static_cast<int>(call.send.size());
        std::vector<unsigned char> gathered(bytes * n);
        for (int r = 0; r < n; ++r) std::memcpy(gathered.data() + r * bytes, call.send[r], bytes);
        for (void* out : call.recv) std::memcpy(out, gathered.data(), gathered.size());
    });
}
inline ncclResult_t ncclReduceScatter(const void* send, void* recv, std::size_t recvcount, ncclDataType_t type,
                                      ncclRedOp_t op, ncclComm_t comm, hipStream_t stream) {
    using namespace rocm_perf_host::rccl;
    return collective(comm, kernel_name("ReduceScatter", op, type, true), send, recv, stream, [=](Call& call) {
        const int n = static_cast<int>(call.send.size());
        const std::size_t bytes = recvcount * type_size(type);
        std::vector<unsigned char> result(bytes * n);
        reduce_typed(result.data(), call.send, recvcount * n, type, op);
        for (int r = 0; r < n; ++r) std::memcpy(call.recv[r], result.data() + r * bytes, bytes);
    });
}
template <class... Args>
inline ncclResult_t ncclSend(Args...) {
    static_assert(rocm_perf_host::unsupported_on_host<Args...>::value,
                  "rocm-perf host backend: ncclSend is not supported (the host runtime's RCCL provides the collectives "
                  "AllReduce, Broadcast, Reduce, AllGather, ReduceScatter); profile with the rocm backend");
    return ncclInvalidUsage;
}
template <class... Args>
inline ncclResult_t ncclRecv(Args...) {
    static_assert(rocm_perf_host::unsupported_on_host<Args...>::value,
                  "rocm-perf host backend: ncclRecv is not supported (the host runtime's RCCL provides the collectives "
                  "AllReduce, Broadcast, Reduce, AllGather, ReduceScatter); profile with the rocm backend");
    return ncclInvalidUsage;
}
