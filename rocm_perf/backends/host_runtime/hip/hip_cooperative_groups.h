// Cooperative groups: see rocm_perf_host/cooperative_groups.h.
#pragma once
#include "rocm_perf_host/runtime.h"
#include "rocm_perf_host/cooperative_groups.h"
