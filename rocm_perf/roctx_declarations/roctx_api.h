/* roctx declarations only, for compilers and parsers that see a HIP program on a machine without
 * ROCm's roctx headers (Debian's hipcc has none). Searched after every system directory
 * (-idirafter), so a real <rocprofiler-sdk-roctx/roctx.h> or <roctracer/roctx.h> always wins.
 * Signatures as the ROCTx developer API documents them (rocprofiler-sdk-roctx/roctx.h). */
#pragma once
#include <stdint.h>

typedef uint64_t roctx_range_id_t;
typedef uint64_t roctx_thread_id_t;

#ifdef __cplusplus
extern "C" {
#endif
void roctxMarkA(const char* message);
int roctxRangePushA(const char* message);
int roctxRangePop(void);
roctx_range_id_t roctxRangeStartA(const char* message);
void roctxRangeStop(roctx_range_id_t id);
int roctxProfilerPause(roctx_thread_id_t tid);
int roctxProfilerResume(roctx_thread_id_t tid);
int roctxGetThreadId(roctx_thread_id_t* tid);
int roctxNameOsThread(const char* name);
int roctxNameHipDevice(const char* name, int device_id);
#ifdef __cplusplus
}
#endif

#define roctxMark(message) roctxMarkA(message)
#define roctxRangePush(message) roctxRangePushA(message)
#define roctxRangeStart(message) roctxRangeStartA(message)
