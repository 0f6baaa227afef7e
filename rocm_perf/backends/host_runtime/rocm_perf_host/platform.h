// What a HIP program compiled by hipcc for AMD sees of its platform, as the host runtime answers
// it: the AMD platform macros (programs take their AMD code paths, whose warp and AMD builtins
// the runtime provides or refuses by name), the wavefront size, and no image support (as on
// gfx90a and gfx94x, which have none either: texture fetches take the programs' fallbacks).
#pragma once

#ifndef ROCM_PERF_WARP_SIZE
#define ROCM_PERF_WARP_SIZE 64
#endif
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#ifndef __HIP_PLATFORM_HCC__
#define __HIP_PLATFORM_HCC__ 1
#endif
#ifndef __HIPCC__
#define __HIPCC__ 1
#endif
#ifndef __HIP__
#define __HIP__ 1
#endif
#ifndef __HIP_NO_IMAGE_SUPPORT
#define __HIP_NO_IMAGE_SUPPORT 1
#endif
#ifndef __AMDGCN_WAVEFRONT_SIZE
#define __AMDGCN_WAVEFRONT_SIZE ROCM_PERF_WARP_SIZE
#endif
// This runtime: for programs (and tests) that want to know.
#define ROCM_PERF_HOST_RUNTIME 1

#include "rocm_perf_host/hip_version.h"
