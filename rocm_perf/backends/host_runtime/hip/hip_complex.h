// Part of the host runtime: hipFloatComplex, hipDoubleComplex and their functions (rocm_perf_host/complex.h).
#pragma once
#include "rocm_perf_host/runtime.h"
#include "rocm_perf_host/complex.h"
