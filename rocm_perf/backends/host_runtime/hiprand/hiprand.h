// hipRAND for the rocm-perf host backend: rocm_perf_host/hiprand.h (host API) and hiprand_kernel.h.
#pragma once
#include "rocm_perf_host/hiprand.h"
