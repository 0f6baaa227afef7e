// Part of the host runtime: everything lives in rocm_perf_host/runtime.h.
#pragma once
#include "rocm_perf_host/runtime.h"
