// hipBLAS for the rocm-perf host backend: rocm_perf_host/hipblas.h (computed by OpenBLAS).
#pragma once
#include "rocm_perf_host/hipblas.h"
