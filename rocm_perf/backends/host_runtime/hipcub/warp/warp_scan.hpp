// hipCUB for the rocm-perf host backend: rocm_perf_host/hipcub.h.
#pragma once
#include "rocm_perf_host/hipcub.h"
