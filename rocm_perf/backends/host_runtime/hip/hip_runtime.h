// rocm-perf's HIP host runtime: HIP programs built with the machine's C++ compiler run on the
// CPU, traced. See rocm_perf_host/runtime.h for the environment variables it reads.
#pragma once
// The standard headers HIP's own hip_runtime.h includes for every program (ROCm 5.2's, Debian's
// /usr/include/hip/hip_runtime.h): programs call assert, printf, malloc and std::thread without
// including them (HeCBench's moe-align-hip calls assert).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <assert.h>
#include <thread>
#include "rocm_perf_host/runtime.h"
