// Part of the host runtime: __half and __half2 (rocm_perf_host/half.h).
#pragma once
#include "rocm_perf_host/runtime.h"
#include "rocm_perf_host/half.h"
