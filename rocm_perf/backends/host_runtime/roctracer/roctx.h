// <roctracer/roctx.h> (ROCm before 6.2) on the host runtime.
#pragma once
#include "rocm_perf_host/roctx.h"
