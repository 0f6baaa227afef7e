// hipBLAS's routines for the host backend (see hipblas.h): each queues one dispatch that calls
// OpenBLAS's cblas_* on the handle's stream. S/D take float/double, C/Z hipblasComplex and
// hipblasDoubleComplex (laid out as cblas's complex: real, imaginary).
#pragma once

#define ROCM_PERF_BLAS_H rocm_perf_host::blas

// ---- level 1 -------------------------------------------------------------------------------
#define ROCM_PERF_AXPY_REAL(P, T, NAME, LOWER)                                                                \
    inline hipblasStatus_t hipblas##P##axpy(hipblasHandle_t h, int n, const T* alpha, const T* x, int incx, T* y, \
                                            int incy) {                                                      \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                          \
        return ROCM_PERF_BLAS_H::queue(h, NAME, [=]() { cblas_##LOWER##axpy(n, a.get(), x, incx, y, incy); }); \
    }
#define ROCM_PERF_AXPY_COMPLEX(P, T, NAME, LOWER)                                                               \
    inline hipblasStatus_t hipblas##P##axpy(hipblasHandle_t h, int n, const T* alpha, const T* x, int incx, T* y, \
                                            int incy) {                                                        \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                            \
        return ROCM_PERF_BLAS_H::queue(h, NAME, [=]() mutable { cblas_##LOWER##axpy(n, a.ptr(), x, incx, y, incy); }); \
    }
ROCM_PERF_AXPY_REAL(S, float, "rocblas_saxpy", s)
ROCM_PERF_AXPY_REAL(D, double, "rocblas_daxpy", d)
ROCM_PERF_AXPY_COMPLEX(C, hipblasComplex, "rocblas_caxpy", c)
ROCM_PERF_AXPY_COMPLEX(Z, hipblasDoubleComplex, "rocblas_zaxpy", z)

inline hipblasStatus_t hipblasSscal(hipblasHandle_t h, int n, const float* alpha, float* x, int incx) {
    auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);
    return ROCM_PERF_BLAS_H::queue(h, "rocblas_sscal", [=]() { cblas_sscal(n, a.get(), x, incx); });
}
inline hipblasStatus_t hipblasDscal(hipblasHandle_t h, int n, const double* alpha, double* x, int incx) {
    auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);
    return ROCM_PERF_BLAS_H::queue(h, "rocblas_dscal", [=]() { cblas_dscal(n, a.get(), x, incx); });
}
inline hipblasStatus_t hipblasCscal(hipblasHandle_t h, int n, const hipblasComplex* alpha, hipblasComplex* x, int incx) {
    auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);
    return ROCM_PERF_BLAS_H::queue(h, "rocblas_cscal", [=]() mutable { cblas_cscal(n, a.ptr(), x, incx); });
}
inline hipblasStatus_t hipblasZscal(hipblasHandle_t h, int n, const hipblasDoubleComplex* alpha, hipblasDoubleComplex* x,
                                    int incx) {
    auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);
    return ROCM_PERF_BLAS_H::queue(h, "rocblas_zscal", [=]() mutable { cblas_zscal(n, a.ptr(), x, incx); });
}
inline hipblasStatus_t hipblasCsscal(hipblasHandle_t h, int n, const float* alpha, hipblasComplex* x, int incx) {
    auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);
    return ROCM_PERF_BLAS_H::queue(h, "rocblas_csscal", [=]() { cblas_csscal(n, a.get(), x, incx); });
}
inline hipblasStatus_t hipblasZdscal(hipblasHandle_t h, int n, const double* alpha, hipblasDoubleComplex* x, int incx) {
    auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);
    return ROCM_PERF_BLAS_H::queue(h, "rocblas_zdscal", [=]() { cblas_zdscal(n, a.get(), x, incx); });
}

#define ROCM_PERF_COPY_SWAP(P, LOWER, T)                                                                         \
    inline hipblasStatus_t hipblas##P##copy(hipblasHandle_t h, int n, const T* x, int incx, T* y, int incy) {     \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "copy", [=]() { cblas_##LOWER##copy(n, x, incx, y, incy); }); \
    }                                                                                                            \
    inline hipblasStatus_t hipblas##P##swap(hipblasHandle_t h, int n, T* x, int incx, T* y, int incy) {           \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "swap", [=]() { cblas_##LOWER##swap(n, x, incx, y, incy); }); \
    }
ROCM_PERF_COPY_SWAP(S, s, float)
ROCM_PERF_COPY_SWAP(D, d, double)
ROCM_PERF_COPY_SWAP(C, c, hipblasComplex)
ROCM_PERF_COPY_SWAP(Z, z, hipblasDoubleComplex)

inline hipblasStatus_t hipblasSdot(hipblasHandle_t h, int n, const float* x, int incx, const float* y, int incy,
                                   float* result) {
    return ROCM_PERF_BLAS_H::with_result(h, "rocblas_sdot", [=]() { *result = cblas_sdot(n, x, incx, y, incy); });
}
inline hipblasStatus_t hipblasDdot(hipblasHandle_t h, int n, const double* x, int incx, const double* y, int incy,
                                   double* result) {
    return ROCM_PERF_BLAS_H::with_result(h, "rocblas_ddot", [=]() { *result = cblas_ddot(n, x, incx, y, incy); });
}
#define ROCM_PERF_DOT_COMPLEX(P, LOWER, T, KIND)                                                                      \
    inline hipblasStatus_t hipblas##P##dot##KIND(hipblasHandle_t h, int n, const T* x, int incx, const T* y, int incy,   \
                                                 T* result) {                                                         \
        return ROCM_PERF_BLAS_H::with_result(h, "rocblas_" #LOWER "dot" #KIND,                                        \
                                             [=]() { cblas_##LOWER##dot##KIND##_sub(n, x, incx, y, incy, result); }); \
    }
ROCM_PERF_DOT_COMPLEX(C, c, hipblasComplex, u)
ROCM_PERF_DOT_COMPLEX(C, c, hipblasComplex, c)
ROCM_PERF_DOT_COMPLEX(Z, z, hipblasDoubleComplex, u)
ROCM_PERF_DOT_COMPLEX(Z, z, hipblasDoubleComplex, c)

#define ROCM_PERF_NORM(NAME, CBLAS, T, R)                                                                  \
    inline hipblasStatus_t hipblas##NAME(hipblasHandle_t h, int n, const T* x, int incx, R* result) {      \
        return ROCM_PERF_BLAS_H::with_result(h, "rocblas_" #CBLAS, [=]() { *result = cblas_##CBLAS(n, x, incx); }); \
    }
ROCM_PERF_NORM(Snrm2, snrm2, float, float)
ROCM_PERF_NORM(Dnrm2, dnrm2, double, double)
ROCM_PERF_NORM(Scnrm2, scnrm2, hipblasComplex, float)
ROCM_PERF_NORM(Dznrm2, dznrm2, hipblasDoubleComplex, double)
ROCM_PERF_NORM(Sasum, sasum, float, float)
ROCM_PERF_NORM(Dasum, dasum, double, double)
ROCM_PERF_NORM(Scasum, scasum, hipblasComplex, float)
ROCM_PERF_NORM(Dzasum, dzasum, hipblasDoubleComplex, double)

#define ROCM_PERF_IAMAX(P, LOWER, T)                                                                                   \
    inline hipblasStatus_t hipblasI##P##amax(hipblasHandle_t h, int n, const T* x, int incx, int* result) {            \
        return ROCM_PERF_BLAS_H::with_result(h, "rocblas_i" #LOWER "amax",                                             \
                                             [=]() { *result = ROCM_PERF_BLAS_H::extreme_index(n, x, incx, true); });  \
    }                                                                                                                  \
    inline hipblasStatus_t hipblasI##P##amin(hipblasHandle_t h, int n, const T* x, int incx, int* result) {            \
        return ROCM_PERF_BLAS_H::with_result(h, "rocblas_i" #LOWER "amin",                                             \
                                             [=]() { *result = ROCM_PERF_BLAS_H::extreme_index(n, x, incx, false); }); \
    }
ROCM_PERF_IAMAX(s, s, float)
ROCM_PERF_IAMAX(d, d, double)
ROCM_PERF_IAMAX(c, c, hipblasComplex)
ROCM_PERF_IAMAX(z, z, hipblasDoubleComplex)

// ---- level 2 -------------------------------------------------------------------------------
#define ROCM_PERF_GEMV(P, LOWER, T, REAL)                                                                            \
    inline hipblasStatus_t hipblas##P##gemv(hipblasHandle_t h, hipblasOperation_t trans, int m, int n, const T* alpha, \
                                            const T* A, int lda, const T* x, int incx, const T* beta, T* y, int incy) { \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                  \
        auto b = ROCM_PERF_BLAS_H::scalar(h, beta);                                                                   \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "gemv", [=]() mutable {                                  \
            cblas_##LOWER##gemv(CblasColMajor, ROCM_PERF_BLAS_H::op(trans), m, n, REAL(a), A, lda, x, incx, REAL(b), y,  \
                                incy);                                                                                \
        });                                                                                                           \
    }
#define ROCM_PERF_BY_VALUE(s) (s).get()
#define ROCM_PERF_BY_POINTER(s) (s).ptr()
ROCM_PERF_GEMV(S, s, float, ROCM_PERF_BY_VALUE)
ROCM_PERF_GEMV(D, d, double, ROCM_PERF_BY_VALUE)
ROCM_PERF_GEMV(C, c, hipblasComplex, ROCM_PERF_BY_POINTER)
ROCM_PERF_GEMV(Z, z, hipblasDoubleComplex, ROCM_PERF_BY_POINTER)

#define ROCM_PERF_GER(NAME, CBLAS, T, REAL)                                                                          \
    inline hipblasStatus_t hipblas##NAME(hipblasHandle_t h, int m, int n, const T* alpha, const T* x, int incx,       \
                                         const T* y, int incy, T* A, int lda) {                                      \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                  \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #CBLAS, [=]() mutable {                                         \
            cblas_##CBLAS(CblasColMajor, m, n, REAL(a), x, incx, y, incy, A, lda);                                    \
        });                                                                                                           \
    }
ROCM_PERF_GER(Sger, sger, float, ROCM_PERF_BY_VALUE)
ROCM_PERF_GER(Dger, dger, double, ROCM_PERF_BY_VALUE)
ROCM_PERF_GER(Cgeru, cgeru, hipblasComplex, ROCM_PERF_BY_POINTER)
ROCM_PERF_GER(Cgerc, cgerc, hipblasComplex, ROCM_PERF_BY_POINTER)
ROCM_PERF_GER(Zgeru, zgeru, hipblasDoubleComplex, ROCM_PERF_BY_POINTER)
ROCM_PERF_GER(Zgerc, zgerc, hipblasDoubleComplex, ROCM_PERF_BY_POINTER)

#define ROCM_PERF_SYMV(NAME, CBLAS, T, REAL)                                                                            \
    inline hipblasStatus_t hipblas##NAME(hipblasHandle_t h, hipblasFillMode_t uplo, int n, const T* alpha, const T* A, \
                                         int lda, const T* x, int incx, const T* beta, T* y, int incy) {                 \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                     \
        auto b = ROCM_PERF_BLAS_H::scalar(h, beta);                                                                      \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #CBLAS, [=]() mutable {                                            \
            cblas_##CBLAS(CblasColMajor, ROCM_PERF_BLAS_H::uplo(uplo), n, REAL(a), A, lda, x, incx, REAL(b), y, incy);   \
        });                                                                                                              \
    }
ROCM_PERF_SYMV(Ssymv, ssymv, float, ROCM_PERF_BY_VALUE)
ROCM_PERF_SYMV(Dsymv, dsymv, double, ROCM_PERF_BY_VALUE)
ROCM_PERF_SYMV(Chemv, chemv, hipblasComplex, ROCM_PERF_BY_POINTER)
ROCM_PERF_SYMV(Zhemv, zhemv, hipblasDoubleComplex, ROCM_PERF_BY_POINTER)

inline hipblasStatus_t hipblasCher(hipblasHandle_t h, hipblasFillMode_t uplo, int n, const float* alpha,
                                   const hipblasComplex* x, int incx, hipblasComplex* A, int lda) {
    auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);
    return ROCM_PERF_BLAS_H::queue(h, "rocblas_cher", [=]() {
        cblas_cher(CblasColMajor, ROCM_PERF_BLAS_H::uplo(uplo), n, a.get(), x, incx, A, lda);
    });
}
inline hipblasStatus_t hipblasZher(hipblasHandle_t h, hipblasFillMode_t uplo, int n, const double* alpha,
                                   const hipblasDoubleComplex* x, int incx, hipblasDoubleComplex* A, int lda) {
    auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);
    return ROCM_PERF_BLAS_H::queue(h, "rocblas_zher", [=]() {
        cblas_zher(CblasColMajor, ROCM_PERF_BLAS_H::uplo(uplo), n, a.get(), x, incx, A, lda);
    });
}
#define ROCM_PERF_HER2(P, LOWER, T)                                                                                 \
    inline hipblasStatus_t hipblas##P##her2(hipblasHandle_t h, hipblasFillMode_t uplo, int n, const T* alpha,       \
                                            const T* x, int incx, const T* y, int incy, T* A, int lda) {             \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                 \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "her2", [=]() mutable {                                 \
            cblas_##LOWER##her2(CblasColMajor, ROCM_PERF_BLAS_H::uplo(uplo), n, a.ptr(), x, incx, y, incy, A, lda);  \
        });                                                                                                          \
    }
ROCM_PERF_HER2(C, c, hipblasComplex)
ROCM_PERF_HER2(Z, z, hipblasDoubleComplex)

#define ROCM_PERF_TRXV(NAME, CBLAS, T)                                                                             \
    inline hipblasStatus_t hipblas##NAME(hipblasHandle_t h, hipblasFillMode_t uplo, hipblasOperation_t trans,       \
                                         hipblasDiagType_t diag, int n, const T* A, int lda, T* x, int incx) {      \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #CBLAS, [=]() {                                               \
            cblas_##CBLAS(CblasColMajor, ROCM_PERF_BLAS_H::uplo(uplo), ROCM_PERF_BLAS_H::op(trans),                  \
                          ROCM_PERF_BLAS_H::diag(diag), n, A, lda, x, incx);                                        \
        });                                                                                                         \
    }
ROCM_PERF_TRXV(Strsv, strsv, float)
ROCM_PERF_TRXV(Dtrsv, dtrsv, double)
ROCM_PERF_TRXV(Strmv, strmv, float)
ROCM_PERF_TRXV(Dtrmv, dtrmv, double)

// ---- level 3 -------------------------------------------------------------------------------
#define ROCM_PERF_GEMM(P, LOWER, T, REAL)                                                                             \
    inline hipblasStatus_t hipblas##P##gemm(hipblasHandle_t h, hipblasOperation_t ta, hipblasOperation_t tb, int m,    \
                                            int n, int k, const T* alpha, const T* A, int lda, const T* B, int ldb,    \
                                            const T* beta, T* C, int ldc) {                                            \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                   \
        auto b = ROCM_PERF_BLAS_H::scalar(h, beta);                                                                    \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "gemm", [=]() mutable {                                   \
            cblas_##LOWER##gemm(CblasColMajor, ROCM_PERF_BLAS_H::op(ta), ROCM_PERF_BLAS_H::op(tb), m, n, k, REAL(a), A, \
                                lda, B, ldb, REAL(b), C, ldc);                                                         \
        });                                                                                                            \
    }                                                                                                                  \
    inline hipblasStatus_t hipblas##P##gemmStridedBatched(                                                             \
        hipblasHandle_t h, hipblasOperation_t ta, hipblasOperation_t tb, int m, int n, int k, const T* alpha,          \
        const T* A, int lda, hipblasStride strideA, const T* B, int ldb, hipblasStride strideB, const T* beta, T* C,   \
        int ldc, hipblasStride strideC, int batch) {                                                                   \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                   \
        auto b = ROCM_PERF_BLAS_H::scalar(h, beta);                                                                    \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "gemm_strided_batched", [=]() mutable {                   \
            for (int i = 0; i < batch; ++i)                                                                            \
                cblas_##LOWER##gemm(CblasColMajor, ROCM_PERF_BLAS_H::op(ta), ROCM_PERF_BLAS_H::op(tb), m, n, k,         \
                                    REAL(a), A + i * strideA, lda, B + i * strideB, ldb, REAL(b), C + i * strideC, ldc); \
        });                                                                                                            \
    }                                                                                                                  \
    inline hipblasStatus_t hipblas##P##gemmBatched(hipblasHandle_t h, hipblasOperation_t ta, hipblasOperation_t tb,    \
                                                   int m, int n, int k, const T* alpha, const T* const A[], int lda,   \
                                                   const T* const B[], int ldb, const T* beta, T* const C[], int ldc,  \
                                                   int batch) {                                                        \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                   \
        auto b = ROCM_PERF_BLAS_H::scalar(h, beta);                                                                    \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "gemm_batched", [=]() mutable {                           \
            for (int i = 0; i < batch; ++i)                                                                            \
                cblas_##LOWER##gemm(CblasColMajor, ROCM_PERF_BLAS_H::op(ta), ROCM_PERF_BLAS_H::op(tb), m, n, k,         \
                                    REAL(a), A[i], lda, B[i], ldb, REAL(b), C[i], ldc);                                \
        });                                                                                                            \
    }
ROCM_PERF_GEMM(S, s, float, ROCM_PERF_BY_VALUE)
ROCM_PERF_GEMM(D, d, double, ROCM_PERF_BY_VALUE)
ROCM_PERF_GEMM(C, c, hipblasComplex, ROCM_PERF_BY_POINTER)
ROCM_PERF_GEMM(Z, z, hipblasDoubleComplex, ROCM_PERF_BY_POINTER)

// C = alpha op(A) + beta op(B) (no BLAS routine: computed here); C may be A or B when not transposed.
#define ROCM_PERF_GEAM(P, LOWER, T)                                                                                  \
    inline hipblasStatus_t hipblas##P##geam(hipblasHandle_t h, hipblasOperation_t ta, hipblasOperation_t tb, int m,   \
                                            int n, const T* alpha, const T* A, int lda, const T* beta, const T* B,    \
                                            int ldb, T* C, int ldc) {                                                 \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                  \
        auto b = ROCM_PERF_BLAS_H::scalar(h, beta);                                                                   \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "geam", [=]() {                                          \
            const T av = a.get(), bv = b.get();                                                                       \
            std::vector<T> out(std::size_t(m) * n);                                                                   \
            for (int j = 0; j < n; ++j)                                                                               \
                for (int i = 0; i < m; ++i) {                                                                         \
                    const T x = ta == HIPBLAS_OP_N ? A[i + std::size_t(j) * lda] : A[j + std::size_t(i) * lda];        \
                    const T y = tb == HIPBLAS_OP_N ? B[i + std::size_t(j) * ldb] : B[j + std::size_t(i) * ldb];        \
                    out[i + std::size_t(j) * m] = av * x + bv * y;                                                    \
                }                                                                                                     \
            for (int j = 0; j < n; ++j)                                                                               \
                for (int i = 0; i < m; ++i) C[i + std::size_t(j) * ldc] = out[i + std::size_t(j) * m];                \
        });                                                                                                           \
    }
ROCM_PERF_GEAM(S, s, float)
ROCM_PERF_GEAM(D, d, double)

#define ROCM_PERF_SYMM(P, LOWER, T)                                                                                  \
    inline hipblasStatus_t hipblas##P##symm(hipblasHandle_t h, hipblasSideMode_t side, hipblasFillMode_t uplo, int m, \
                                            int n, const T* alpha, const T* A, int lda, const T* B, int ldb,          \
                                            const T* beta, T* C, int ldc) {                                           \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                  \
        auto b = ROCM_PERF_BLAS_H::scalar(h, beta);                                                                   \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "symm", [=]() {                                          \
            cblas_##LOWER##symm(CblasColMajor, ROCM_PERF_BLAS_H::side(side), ROCM_PERF_BLAS_H::uplo(uplo), m, n,       \
                                a.get(), A, lda, B, ldb, b.get(), C, ldc);                                            \
        });                                                                                                           \
    }                                                                                                                 \
    inline hipblasStatus_t hipblas##P##syrk(hipblasHandle_t h, hipblasFillMode_t uplo, hipblasOperation_t trans,      \
                                            int n, int k, const T* alpha, const T* A, int lda, const T* beta, T* C,   \
                                            int ldc) {                                                                \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                  \
        auto b = ROCM_PERF_BLAS_H::scalar(h, beta);                                                                   \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "syrk", [=]() {                                          \
            cblas_##LOWER##syrk(CblasColMajor, ROCM_PERF_BLAS_H::uplo(uplo), ROCM_PERF_BLAS_H::op(trans), n, k,        \
                                a.get(), A, lda, b.get(), C, ldc);                                                    \
        });                                                                                                           \
    }                                                                                                                 \
    inline hipblasStatus_t hipblas##P##trsm(hipblasHandle_t h, hipblasSideMode_t side, hipblasFillMode_t uplo,        \
                                            hipblasOperation_t trans, hipblasDiagType_t diag, int m, int n,           \
                                            const T* alpha, const T* A, int lda, T* B, int ldb) {                     \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                  \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "trsm", [=]() {                                          \
            cblas_##LOWER##trsm(CblasColMajor, ROCM_PERF_BLAS_H::side(side), ROCM_PERF_BLAS_H::uplo(uplo),             \
                                ROCM_PERF_BLAS_H::op(trans), ROCM_PERF_BLAS_H::diag(diag), m, n, a.get(), A, lda, B, ldb); \
        });                                                                                                           \
    }
ROCM_PERF_SYMM(S, s, float)
ROCM_PERF_SYMM(D, d, double)

#define ROCM_PERF_HERK(P, LOWER, T, R)                                                                               \
    inline hipblasStatus_t hipblas##P##herk(hipblasHandle_t h, hipblasFillMode_t uplo, hipblasOperation_t trans,      \
                                            int n, int k, const R* alpha, const T* A, int lda, const R* beta, T* C,   \
                                            int ldc) {                                                                \
        auto a = ROCM_PERF_BLAS_H::scalar(h, alpha);                                                                  \
        auto b = ROCM_PERF_BLAS_H::scalar(h, beta);                                                                   \
        return ROCM_PERF_BLAS_H::queue(h, "rocblas_" #LOWER "herk", [=]() {                                          \
            cblas_##LOWER##herk(CblasColMajor, ROCM_PERF_BLAS_H::uplo(uplo), ROCM_PERF_BLAS_H::op(trans), n, k,        \
                                a.get(), A, lda, b.get(), C, ldc);                                                    \
        });                                                                                                           \
    }
ROCM_PERF_HERK(C, c, hipblasComplex, float)
ROCM_PERF_HERK(Z, z, hipblasDoubleComplex, double)

#undef ROCM_PERF_AXPY_REAL
#undef ROCM_PERF_AXPY_COMPLEX
#undef ROCM_PERF_COPY_SWAP
#undef ROCM_PERF_DOT_COMPLEX
#undef ROCM_PERF_NORM
#undef ROCM_PERF_IAMAX
#undef ROCM_PERF_GEMV
#undef ROCM_PERF_GER
#undef ROCM_PERF_SYMV
#undef ROCM_PERF_HER2
#undef ROCM_PERF_TRXV
#undef ROCM_PERF_GEMM
#undef ROCM_PERF_GEAM
#undef ROCM_PERF_SYMM
#undef ROCM_PERF_HERK
#undef ROCM_PERF_BY_VALUE
#undef ROCM_PERF_BY_POINTER
#undef ROCM_PERF_BLAS_H
