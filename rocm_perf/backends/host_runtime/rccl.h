// RCCL for the rocm-perf host backend (one process): rocm_perf_host/rccl.h.
#pragma once
#include "rocm_perf_host/rccl.h"
