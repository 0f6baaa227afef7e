// Part of the host runtime: the version it stands for.
#pragma once
#include "rocm_perf_host/hip_version.h"
