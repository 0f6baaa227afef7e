// Part of the host runtime: hiprtc, refused by name (rocm_perf_host/hiprtc_api.h).
#pragma once
#include "rocm_perf_host/runtime.h"
#include "rocm_perf_host/hiprtc_api.h"
