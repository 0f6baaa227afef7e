/* <rocprofiler-sdk-roctx/roctx.h> where ROCm has none: declarations only (see ../roctx_api.h). */
#pragma once
#include "../roctx_api.h"
