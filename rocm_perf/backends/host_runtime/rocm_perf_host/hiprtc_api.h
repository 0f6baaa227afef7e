// hiprtc (compiling device code at run time) cannot serve a CPU build: every call is a
// compile-time error naming it, at the program's line.
#pragma once

#include "rocm_perf_host/unsupported.h"

typedef struct ihiprtcProgram* hiprtcProgram;
enum hiprtcResult { HIPRTC_SUCCESS = 0, HIPRTC_ERROR_COMPILATION = 6 };
#define ROCM_PERF_REFUSE_RTC(NAME) \
    ROCM_PERF_REFUSE(NAME, "run-time compilation of device code", "the host backend builds device code with the program; profile this program with the rocm backend")
ROCM_PERF_REFUSE_RTC(hiprtcCreateProgram)
ROCM_PERF_REFUSE_RTC(hiprtcCompileProgram)
ROCM_PERF_REFUSE_RTC(hiprtcGetProgramLogSize)
ROCM_PERF_REFUSE_RTC(hiprtcGetProgramLog)
ROCM_PERF_REFUSE_RTC(hiprtcGetCodeSize)
ROCM_PERF_REFUSE_RTC(hiprtcGetCode)
ROCM_PERF_REFUSE_RTC(hiprtcDestroyProgram)
ROCM_PERF_REFUSE_RTC(hiprtcGetErrorString)
ROCM_PERF_REFUSE_RTC(hiprtcAddNameExpression)
ROCM_PERF_REFUSE_RTC(hiprtcGetLoweredName)
#undef ROCM_PERF_REFUSE_RTC
