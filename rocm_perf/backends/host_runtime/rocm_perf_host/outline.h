#pragma once
// Where the runtime's heavier functions are defined (backends/host_prebuilt.py).
//
// By default every function of these headers is inline, as a header-only library's are, and
// every unit that calls one compiles it again: a launch alone pulls in about 4 s of the
// runtime's own code (docs/performance.md). A build that links the runtime's prebuilt object
// defines ROCM_PERF_HOST_PREBUILT: its units only declare the functions marked
// ROCM_PERF_OUTLINED, and the object (runtime_object.cpp, compiled once per compiler and flags
// with ROCM_PERF_HOST_RUNTIME_OBJECT as well) holds their one definition. Only functions no
// kernel's code runs inside are outlined: what a launch does per block and per thread stays
// inline wherever the unit's compiler can see it.
#if defined(ROCM_PERF_HOST_PREBUILT)
#define ROCM_PERF_OUTLINED
#if defined(ROCM_PERF_HOST_RUNTIME_OBJECT)
#define ROCM_PERF_HOST_BODIES 1
#else
#define ROCM_PERF_HOST_BODIES 0
#endif
#else
#define ROCM_PERF_OUTLINED inline
#define ROCM_PERF_HOST_BODIES 1
#endif
