// <rocprofiler-sdk-roctx/roctx.h> (ROCm 6.2 and later) on the host runtime.
#pragma once
#include "rocm_perf_host/roctx.h"
