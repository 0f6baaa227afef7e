// Part of the host runtime: hip_bfloat16 (rocm_perf_host/bfloat16.h).
#pragma once
#include "rocm_perf_host/runtime.h"
#include "rocm_perf_host/bfloat16.h"
