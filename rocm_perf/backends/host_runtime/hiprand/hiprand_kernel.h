// hipRAND device API for the rocm-perf host backend: rocm_perf_host/hiprand_kernel.h.
#pragma once
#include "rocm_perf_host/hiprand_kernel.h"
