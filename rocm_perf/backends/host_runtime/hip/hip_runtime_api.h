#pragma once
#include "rocm_perf_host/runtime.h"
