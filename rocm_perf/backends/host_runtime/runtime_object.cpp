// The runtime's prebuilt object: the one definition of every ROCM_PERF_OUTLINED function
// (rocm_perf_host/outline.h), compiled once per compiler and flags by backends/host_prebuilt.py.
#define ROCM_PERF_HOST_RUNTIME_OBJECT 1
#include <hip/hip_runtime.h>
