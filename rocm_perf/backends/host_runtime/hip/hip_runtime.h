// rocm-perf's HIP host runtime: HIP programs built with the machine's C++ compiler run on the
// CPU, traced. See rocm_perf_host/runtime.h for the environment variables it reads.
#pragma once
#include "rocm_perf_host/runtime.h"
