// hipBLAS as programs use it, checked against plain C++ loops: handles, streams and both pointer
// modes; gemm, strided-batched gemm, gemv, axpy, dot, nrm2, scal, iamax, geam and a complex her2.
#include <hip/hip_runtime.h>
#include <hipblas/hipblas.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <vector>

static int failures = 0;
#define CHECK(cond, what)                                            \
    do {                                                             \
        if (!(cond)) {                                               \
            std::printf("mismatch: %s (line %d)\n", what, __LINE__); \
            ++failures;                                              \
        }                                                            \
    } while (0)

template <class T>
T* device(const std::vector<T>& h) {
    T* d = nullptr;
    hipMalloc(&d, h.size() * sizeof(T));
    hipMemcpy(d, h.data(), h.size() * sizeof(T), hipMemcpyHostToDevice);
    return d;
}
template <class T>
std::vector<T> host(const T* d, size_t n) {
    std::vector<T> h(n);
    hipMemcpy(h.data(), d, n * sizeof(T), hipMemcpyDeviceToHost);
    return h;
}
template <class T>
bool close(const std::vector<T>& a, const std::vector<T>& b, double tol) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::fabs(double(a[i]) - double(b[i])) > tol * (1.0 + std::fabs(double(b[i])))) return false;
    return true;
}
// C = alpha op(A) op(B) + beta C, column-major, the plain way.
template <class T>
void reference_gemm(bool ta, bool tb, int m, int n, int k, T alpha, const T* A, int lda, const T* B, int ldb, T beta,
                    T* C, int ldc) {
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            T acc = 0;
            for (int p = 0; p < k; ++p) acc += (ta ? A[p + i * lda] : A[i + p * lda]) * (tb ? B[j + p * ldb] : B[p + j * ldb]);
            C[i + j * ldc] = alpha * acc + beta * C[i + j * ldc];
        }
}

int main() {
    hipblasHandle_t handle;
    CHECK(hipblasCreate(&handle) == HIPBLAS_STATUS_SUCCESS, "hipblasCreate");
    hipStream_t stream;
    hipStreamCreate(&stream);
    hipblasSetStream(handle, stream);

    const int m = 37, n = 29, k = 23;
    std::vector<float> A(m * k), B(k * n), C(m * n);
    for (size_t i = 0; i < A.size(); ++i) A[i] = float((i * 37) % 17) / 8.0f - 1.0f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = float((i * 11) % 13) / 6.0f - 1.0f;
    for (size_t i = 0; i < C.size(); ++i) C[i] = float(i % 5);
    float *dA = device(A), *dB = device(B), *dC = device(C);
    const float alpha = 1.5f, beta = -0.5f;
    hipblasSgemm(handle, HIPBLAS_OP_N, HIPBLAS_OP_N, m, n, k, &alpha, dA, m, dB, k, &beta, dC, m);
    std::vector<float> want = C;
    reference_gemm(false, false, m, n, k, alpha, A.data(), m, B.data(), k, beta, want.data(), m);
    hipStreamSynchronize(stream);
    CHECK(close(host(dC, C.size()), want, 1e-4), "hipblasSgemm N,N");

    // transposed, in double, batched with strides
    const int batch = 3;
    std::vector<double> As(batch * k * m), Bs(batch * n * k), Cs(batch * m * n, 1.0);
    for (size_t i = 0; i < As.size(); ++i) As[i] = double((i * 7) % 19) / 9.0 - 1.0;
    for (size_t i = 0; i < Bs.size(); ++i) Bs[i] = double((i * 5) % 23) / 11.0 - 1.0;
    double *dAs = device(As), *dBs = device(Bs), *dCs = device(Cs);
    const double one = 1.0, half = 0.5;
    hipblasDgemmStridedBatched(handle, HIPBLAS_OP_T, HIPBLAS_OP_T, m, n, k, &one, dAs, k, k * m, dBs, n, n * k, &half, dCs,
                               m, m * n, batch);
    std::vector<double> wants = Cs;
    for (int b = 0; b < batch; ++b)
        reference_gemm(true, true, m, n, k, one, As.data() + b * k * m, k, Bs.data() + b * n * k, n, half,
                       wants.data() + b * m * n, m);
    hipStreamSynchronize(stream);
    CHECK(close(host(dCs, Cs.size()), wants, 1e-10), "hipblasDgemmStridedBatched T,T");

    // level 1 and 2, scalars from the host
    std::vector<float> x(n), y(m);
    for (int i = 0; i < n; ++i) x[i] = float(i % 7) - 3.0f;
    for (int i = 0; i < m; ++i) y[i] = float(i % 3);
    float *dx = device(x), *dy = device(y);
    hipblasSgemv(handle, HIPBLAS_OP_N, m, n, &alpha, dC, m, dx, 1, &beta, dy, 1);
    std::vector<float> got_c = host(dC, C.size()), want_y = y;
    for (int i = 0; i < m; ++i) {
        float acc = 0;
        for (int j = 0; j < n; ++j) acc += got_c[i + j * m] * x[j];
        want_y[i] = alpha * acc + beta * y[i];
    }
    hipStreamSynchronize(stream);
    CHECK(close(host(dy, m), want_y, 1e-4), "hipblasSgemv");
    float dot = 0, nrm = 0;
    hipblasSdot(handle, n, dx, 1, dx, 1, &dot);  // host pointer mode: the result is there on return
    hipblasSnrm2(handle, n, dx, 1, &nrm);
    float want_dot = 0;
    for (float v : x) want_dot += v * v;
    CHECK(dot == want_dot && std::fabs(nrm - std::sqrt(want_dot)) < 1e-5f, "hipblasSdot / Snrm2 (host mode)");
    int imax = 0;
    hipblasIsamax(handle, n, dx, 1, &imax);
    CHECK(imax == 1, "hipblasIsamax is 1-based: the first |x| maximum");
    hipblasSaxpy(handle, n, &alpha, dx, 1, dx, 1);  // x <- 2.5 x
    hipblasSscal(handle, n, &beta, dx, 1);          // x <- -1.25 x
    hipStreamSynchronize(stream);
    std::vector<float> want_x = x;
    for (float& v : want_x) v = v * 2.5f * -0.5f;
    CHECK(close(host(dx, n), want_x, 1e-6), "hipblasSaxpy + Sscal");

    // device pointer mode: alpha and the result live in device memory
    hipblasSetPointerMode(handle, HIPBLAS_POINTER_MODE_DEVICE);
    float *d_alpha = device(std::vector<float>{2.0f}), *d_result = device(std::vector<float>{0.0f});
    hipblasSscal(handle, n, d_alpha, dx, 1);
    hipblasSdot(handle, n, dx, 1, dx, 1, d_result);
    hipStreamSynchronize(stream);
    float want_dot2 = 0;
    for (float v : want_x) want_dot2 += 4.0f * v * v;
    CHECK(std::fabs(host(d_result, 1)[0] - want_dot2) < 1e-3f * want_dot2, "device pointer mode: scal + dot");
    hipblasSetPointerMode(handle, HIPBLAS_POINTER_MODE_HOST);

    // geam: C = A^T + 2 B (a transpose-add, no BLAS routine)
    std::vector<float> G(n * m);
    float* dG = device(G);
    const float two = 2.0f, unit = 1.0f;
    float* dB2 = device(std::vector<float>(C.begin(), C.begin() + n * m));
    hipblasSgeam(handle, HIPBLAS_OP_T, HIPBLAS_OP_N, n, m, &unit, dC, m, &two, dB2, n, dG, n);
    hipStreamSynchronize(stream);
    const auto g = host(dG, n * m);
    bool geam_ok = true;
    for (int j = 0; j < m; ++j)
        for (int i = 0; i < n; ++i) geam_ok &= std::fabs(g[i + j * n] - (got_c[j + i * m] + 2.0f * C[i + j * n])) < 1e-4f;
    CHECK(geam_ok, "hipblasSgeam");

    // complex her2 on the upper triangle: A += alpha x y^H + conj(alpha) y x^H
    const int c = 5;
    std::vector<std::complex<float>> hx(c), hy(c), ha(c * c, 0.0f);
    for (int i = 0; i < c; ++i) hx[i] = {float(i), 1.0f}, hy[i] = {1.0f, float(-i)};
    hipblasComplex *cx, *cy, *ca;
    hipMalloc(&cx, c * sizeof *cx);
    hipMalloc(&cy, c * sizeof *cy);
    hipMalloc(&ca, c * c * sizeof *ca);
    hipblasSetVector(c, sizeof(std::complex<float>), hx.data(), 1, cx, 1);
    hipblasSetVector(c, sizeof(std::complex<float>), hy.data(), 1, cy, 1);
    hipblasSetMatrix(c, c, sizeof(std::complex<float>), ha.data(), c, ca, c);
    const hipblasComplex calpha(0.5f, 0.25f);
    hipblasCher2(handle, HIPBLAS_FILL_MODE_UPPER, c, &calpha, cx, 1, cy, 1, ca, c);
    hipStreamSynchronize(stream);
    hipblasGetMatrix(c, c, sizeof(std::complex<float>), ca, c, ha.data(), c);
    const std::complex<float> al(0.5f, 0.25f);
    bool her2_ok = true;
    for (int j = 0; j < c; ++j)
        for (int i = 0; i <= j; ++i) {
            std::complex<float> w = al * hx[i] * std::conj(hy[j]) + std::conj(al) * hy[i] * std::conj(hx[j]);
            if (i == j) w = {w.real(), 0.0f};
            her2_ok &= std::abs(ha[i + j * c] - w) < 1e-5f;
        }
    CHECK(her2_ok, "hipblasCher2");

    CHECK(std::string(hipblasStatusToString(HIPBLAS_STATUS_INVALID_VALUE)) == "HIPBLAS_STATUS_INVALID_VALUE", "StatusToString");
    hipblasDestroy(handle);
    hipStreamDestroy(stream);
    if (failures) {
        std::printf("hipblas: %d mismatches\n", failures);
        return 1;
    }
    std::printf("hipblas: all match\n");
    return 0;
}
