// The HIP version the host runtime stands for (hipRuntimeGetVersion reports the same).
#pragma once
#define HIP_VERSION_MAJOR 6
#define HIP_VERSION_MINOR 2
#define HIP_VERSION_PATCH 0
#define HIP_VERSION_GITHASH "rocm-perf-host"
#define HIP_VERSION_BUILD_ID 0
#define HIP_VERSION_BUILD_NAME "rocm-perf host runtime"
#define HIP_VERSION (HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000 + HIP_VERSION_PATCH)
