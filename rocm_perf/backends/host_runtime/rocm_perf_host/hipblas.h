// hipBLAS on the host backend, computed by a CPU BLAS (Debian's OpenBLAS through <cblas.h>):
// handles with their stream and pointer mode, the vector and matrix transfers, and the level-1/2/3
// routines real programs call (list below). Enum values are hipBLAS's (its operation, fill, diag
// and side values are cblas's: 111.., 121.., 131.., 141..); matrices are column-major.
//
// Each routine is one dispatch on the handle's stream, named as rocBLAS (which hipBLAS calls on
// AMD) names the routine: rocblas_sgemm, rocblas_dgemm_strided_batched, ... (library_dispatch.h).
// Scalars (alpha, beta) follow the pointer mode: read at the call in HOST mode, when the dispatch
// runs in DEVICE mode. A routine that returns a scalar (dot, nrm2, asum, iamax) into host memory
// waits for its dispatch, as rocBLAS does; into device memory it does not.
// OpenBLAS computes with as many threads as the block pool has (ROCM_PERF_HOST_THREADS).
//
// Provided: hipblasCreate/Destroy, Set/GetStream, Set/GetPointerMode, Set/GetVector(Async),
// Set/GetMatrix(Async), hipblasStatusToString; level 1 (S/D/C/Z): axpy, scal (and Cs/Zd), copy,
// swap, dot (S/D), dotu/dotc (C/Z), nrm2 and asum (S/D/Sc/Dz), iamax/iamin; level 2: gemv
// (S/D/C/Z), ger (S/D), geru/gerc (C/Z), symv (S/D), hemv, her, her2 (C/Z), trsv and trmv (S/D);
// level 3: gemm, gemmBatched, gemmStridedBatched (S/D/C/Z), geam, symm, syrk, trsm (S/D), herk (C/Z).
// Every other hipBLAS routine is a compile error naming it at the caller's line (hipblas_refused.h).
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "hip/hip_runtime.h"
#include "rocm_perf_host/library_dispatch.h"

extern "C" void openblas_set_num_threads(int);

typedef void* hipblasHandle_t;
typedef int64_t hipblasStride;
typedef uint16_t hipblasHalf;
typedef int8_t hipblasInt8;

template <class T>
struct rocm_perf_hipblas_complex {
    T x, y;
    rocm_perf_hipblas_complex() : x(0), y(0) {}
    template <class U>
    rocm_perf_hipblas_complex(U re) : x(static_cast<T>(re)), y(0) {}
    template <class U, class V>
    rocm_perf_hipblas_complex(U re, V im) : x(static_cast<T>(re)), y(static_cast<T>(im)) {}
    T real() const { return x; }
    T imag() const { return y; }
};
typedef rocm_perf_hipblas_complex<float> hipblasComplex;
typedef rocm_perf_hipblas_complex<double> hipblasDoubleComplex;

enum hipblasStatus_t {
    HIPBLAS_STATUS_SUCCESS = 0,
    HIPBLAS_STATUS_NOT_INITIALIZED = 1,
    HIPBLAS_STATUS_ALLOC_FAILED = 2,
    HIPBLAS_STATUS_INVALID_VALUE = 3,
    HIPBLAS_STATUS_MAPPING_ERROR = 4,
    HIPBLAS_STATUS_EXECUTION_FAILED = 5,
    HIPBLAS_STATUS_INTERNAL_ERROR = 6,
    HIPBLAS_STATUS_NOT_SUPPORTED = 7,
    HIPBLAS_STATUS_ARCH_MISMATCH = 8,
    HIPBLAS_STATUS_HANDLE_IS_NULLPTR = 9,
    HIPBLAS_STATUS_INVALID_ENUM = 10,
    HIPBLAS_STATUS_UNKNOWN = 11,
};
enum hipblasOperation_t { HIPBLAS_OP_N = 111, HIPBLAS_OP_T = 112, HIPBLAS_OP_C = 113 };
enum hipblasPointerMode_t { HIPBLAS_POINTER_MODE_HOST = 0, HIPBLAS_POINTER_MODE_DEVICE = 1 };
enum hipblasFillMode_t { HIPBLAS_FILL_MODE_UPPER = 121, HIPBLAS_FILL_MODE_LOWER = 122, HIPBLAS_FILL_MODE_FULL = 123 };
enum hipblasDiagType_t { HIPBLAS_DIAG_NON_UNIT = 131, HIPBLAS_DIAG_UNIT = 132 };
enum hipblasSideMode_t { HIPBLAS_SIDE_LEFT = 141, HIPBLAS_SIDE_RIGHT = 142, HIPBLAS_SIDE_BOTH = 143 };
enum hipblasAtomicsMode_t { HIPBLAS_ATOMICS_NOT_ALLOWED = 0, HIPBLAS_ATOMICS_ALLOWED = 1 };

namespace rocm_perf_host {
namespace blas {

struct Handle {
    hipStream_t stream = nullptr;
    hipblasPointerMode_t mode = HIPBLAS_POINTER_MODE_HOST;
};
inline Handle* of(hipblasHandle_t h) { return static_cast<Handle*>(h); }

// A scalar argument: its value now (HOST mode) or where to read it when the dispatch runs.
template <class T>
struct Scalar {
    T value;
    const T* device;
    T get() const { return device ? *device : value; }
    const T* ptr() { value = get(); device = nullptr; return &value; }
};
template <class T>
inline Scalar<T> scalar(hipblasHandle_t h, const T* p) {
    if (of(h)->mode == HIPBLAS_POINTER_MODE_DEVICE) return Scalar<T>{T(), p};
    return Scalar<T>{*p, nullptr};
}

template <class Work>
inline hipblasStatus_t queue(hipblasHandle_t h, const char* name, Work work) {
    if (!h) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    library_dispatch(name, of(h)->stream, [work]() mutable {
        openblas_set_num_threads(static_cast<int>(runtime().threads));
        work();
    }, false);
    return HIPBLAS_STATUS_SUCCESS;
}
// A routine whose scalar result lands in host memory (HOST mode) returns once it is there.
template <class Work>
inline hipblasStatus_t with_result(hipblasHandle_t h, const char* name, Work work) {
    if (!h) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    const bool wait = of(h)->mode == HIPBLAS_POINTER_MODE_HOST;
    library_dispatch(name, of(h)->stream, [work]() mutable {
        openblas_set_num_threads(static_cast<int>(runtime().threads));
        work();
    }, wait);
    return HIPBLAS_STATUS_SUCCESS;
}

inline CBLAS_TRANSPOSE op(hipblasOperation_t o) {
    return o == HIPBLAS_OP_N ? CblasNoTrans : (o == HIPBLAS_OP_T ? CblasTrans : CblasConjTrans);
}
inline CBLAS_UPLO uplo(hipblasFillMode_t f) { return f == HIPBLAS_FILL_MODE_UPPER ? CblasUpper : CblasLower; }
inline CBLAS_DIAG diag(hipblasDiagType_t d) { return d == HIPBLAS_DIAG_UNIT ? CblasUnit : CblasNonUnit; }
inline CBLAS_SIDE side(hipblasSideMode_t s) { return s == HIPBLAS_SIDE_LEFT ? CblasLeft : CblasRight; }

template <class T>
inline void strided_copy(int n, std::size_t elem, const void* x, int incx, void* y, int incy) {
    const char* src = static_cast<const char*>(x);
    char* dst = static_cast<char*>(y);
    for (int i = 0; i < n; ++i) std::memcpy(dst + std::size_t(i) * incy * elem, src + std::size_t(i) * incx * elem, elem);
}
inline hipblasStatus_t copy_matrix(int rows, int cols, int elem, const void* a, int lda, void* b, int ldb) {
    if (rows < 0 || cols < 0 || elem <= 0 || lda < rows || ldb < rows) return HIPBLAS_STATUS_INVALID_VALUE;
    for (int c = 0; c < cols; ++c)
        std::memcpy(static_cast<char*>(b) + std::size_t(c) * ldb * elem,
                    static_cast<const char*>(a) + std::size_t(c) * lda * elem, std::size_t(rows) * elem);
    return HIPBLAS_STATUS_SUCCESS;
}

// iamax/iamin: the 1-based index of the first largest (smallest) |re| + |im|.
template <class T>
inline double magnitude(const T& v) {
    if constexpr (std::is_arithmetic<T>::value)
        return std::fabs(static_cast<double>(v));
    else
        return std::fabs(static_cast<double>(v.x)) + std::fabs(static_cast<double>(v.y));
}
template <class T>
inline int extreme_index(int n, const T* x, int incx, bool largest) {
    if (n <= 0 || incx <= 0) return 0;
    int best = 0;
    double value = magnitude(x[0]);
    for (int i = 1; i < n; ++i) {
        const double m = magnitude(x[std::size_t(i) * incx]);
        if (largest ? m > value : m < value) value = m, best = i;
    }
    return best + 1;
}

}  // namespace blas
}  // namespace rocm_perf_host

// ---- handles and transfers --------------------------------------------------------------------
inline hipblasStatus_t hipblasCreate(hipblasHandle_t* handle) {
    if (!handle) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    *handle = new rocm_perf_host::blas::Handle();
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasDestroy(hipblasHandle_t handle) {
    if (!handle) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    auto* h = rocm_perf_host::blas::of(handle);
    rocm_perf_host::Runtime& r = rocm_perf_host::runtime();
    r.synchronize_stream(r.resolve(h->stream));  // work queued through it finishes first
    delete h;
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasSetStream(hipblasHandle_t handle, hipStream_t stream) {
    if (!handle) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    rocm_perf_host::blas::of(handle)->stream = stream;
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasGetStream(hipblasHandle_t handle, hipStream_t* stream) {
    if (!handle) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    *stream = rocm_perf_host::blas::of(handle)->stream;
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasSetPointerMode(hipblasHandle_t handle, hipblasPointerMode_t mode) {
    if (!handle) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    rocm_perf_host::blas::of(handle)->mode = mode;
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasGetPointerMode(hipblasHandle_t handle, hipblasPointerMode_t* mode) {
    if (!handle) return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    *mode = rocm_perf_host::blas::of(handle)->mode;
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasSetAtomicsMode(hipblasHandle_t handle, hipblasAtomicsMode_t) {
    return handle ? HIPBLAS_STATUS_SUCCESS : HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
}
// Host <-> device copies go through hipMemcpy, so that the trace records them as rocBLAS's do.
inline hipblasStatus_t hipblasSetVector(int n, int elem, const void* x, int incx, void* y, int incy) {
    if (n < 0 || elem <= 0 || incx <= 0 || incy <= 0) return HIPBLAS_STATUS_INVALID_VALUE;
    if (incx == 1 && incy == 1) return hipMemcpy(y, x, std::size_t(n) * elem, hipMemcpyHostToDevice) == hipSuccess
                                           ? HIPBLAS_STATUS_SUCCESS : HIPBLAS_STATUS_MAPPING_ERROR;
    rocm_perf_host::blas::strided_copy<char>(n, elem, x, incx, y, incy);
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasGetVector(int n, int elem, const void* x, int incx, void* y, int incy) {
    if (n < 0 || elem <= 0 || incx <= 0 || incy <= 0) return HIPBLAS_STATUS_INVALID_VALUE;
    if (incx == 1 && incy == 1) return hipMemcpy(y, x, std::size_t(n) * elem, hipMemcpyDeviceToHost) == hipSuccess
                                           ? HIPBLAS_STATUS_SUCCESS : HIPBLAS_STATUS_MAPPING_ERROR;
    hipDeviceSynchronize();
    rocm_perf_host::blas::strided_copy<char>(n, elem, x, incx, y, incy);
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasSetMatrix(int rows, int cols, int elem, const void* a, int lda, void* b, int ldb) {
    if (lda == rows && ldb == rows && rows >= 0 && cols >= 0 && elem > 0)
        return hipMemcpy(b, a, std::size_t(rows) * cols * elem, hipMemcpyHostToDevice) == hipSuccess
                   ? HIPBLAS_STATUS_SUCCESS : HIPBLAS_STATUS_MAPPING_ERROR;
    return rocm_perf_host::blas::copy_matrix(rows, cols, elem, a, lda, b, ldb);
}
inline hipblasStatus_t hipblasGetMatrix(int rows, int cols, int elem, const void* a, int lda, void* b, int ldb) {
    if (lda == rows && ldb == rows && rows >= 0 && cols >= 0 && elem > 0)
        return hipMemcpy(b, a, std::size_t(rows) * cols * elem, hipMemcpyDeviceToHost) == hipSuccess
                   ? HIPBLAS_STATUS_SUCCESS : HIPBLAS_STATUS_MAPPING_ERROR;
    hipDeviceSynchronize();
    return rocm_perf_host::blas::copy_matrix(rows, cols, elem, a, lda, b, ldb);
}
inline hipblasStatus_t hipblasSetVectorAsync(int n, int elem, const void* x, int incx, void* y, int incy, hipStream_t s) {
    hipStreamSynchronize(s);
    return hipblasSetVector(n, elem, x, incx, y, incy);
}
inline hipblasStatus_t hipblasGetVectorAsync(int n, int elem, const void* x, int incx, void* y, int incy, hipStream_t s) {
    hipStreamSynchronize(s);
    return hipblasGetVector(n, elem, x, incx, y, incy);
}
inline hipblasStatus_t hipblasSetMatrixAsync(int rows, int cols, int elem, const void* a, int lda, void* b, int ldb,
                                             hipStream_t s) {
    hipStreamSynchronize(s);
    return hipblasSetMatrix(rows, cols, elem, a, lda, b, ldb);
}
inline hipblasStatus_t hipblasGetMatrixAsync(int rows, int cols, int elem, const void* a, int lda, void* b, int ldb,
                                             hipStream_t s) {
    hipStreamSynchronize(s);
    return hipblasGetMatrix(rows, cols, elem, a, lda, b, ldb);
}
inline const char* hipblasStatusToString(hipblasStatus_t status) {
    switch (status) {
        case HIPBLAS_STATUS_SUCCESS: return "HIPBLAS_STATUS_SUCCESS";
        case HIPBLAS_STATUS_NOT_INITIALIZED: return "HIPBLAS_STATUS_NOT_INITIALIZED";
        case HIPBLAS_STATUS_ALLOC_FAILED: return "HIPBLAS_STATUS_ALLOC_FAILED";
        case HIPBLAS_STATUS_INVALID_VALUE: return "HIPBLAS_STATUS_INVALID_VALUE";
        case HIPBLAS_STATUS_MAPPING_ERROR: return "HIPBLAS_STATUS_MAPPING_ERROR";
        case HIPBLAS_STATUS_EXECUTION_FAILED: return "HIPBLAS_STATUS_EXECUTION_FAILED";
        case HIPBLAS_STATUS_INTERNAL_ERROR: return "HIPBLAS_STATUS_INTERNAL_ERROR";
        case HIPBLAS_STATUS_NOT_SUPPORTED: return "HIPBLAS_STATUS_NOT_SUPPORTED";
        case HIPBLAS_STATUS_ARCH_MISMATCH: return "HIPBLAS_STATUS_ARCH_MISMATCH";
        case HIPBLAS_STATUS_HANDLE_IS_NULLPTR: return "HIPBLAS_STATUS_HANDLE_IS_NULLPTR";
        case HIPBLAS_STATUS_INVALID_ENUM: return "HIPBLAS_STATUS_INVALID_ENUM";
        default: return "HIPBLAS_STATUS_UNKNOWN";
    }
}

#include "rocm_perf_host/hipblas_routines.h"
#include "rocm_perf_host/hipblas_refused.h"
