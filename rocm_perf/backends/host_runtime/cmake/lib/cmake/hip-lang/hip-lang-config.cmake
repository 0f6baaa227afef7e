# The HIP language runtime package of the rocm-perf host backend: nothing to link (the host
# runtime is header-only and the compiler wrapper adds it to every HIP compile).
if(NOT TARGET hip-lang::device)
  add_library(hip-lang::device INTERFACE IMPORTED)
  add_library(hip-lang::amdhip64 INTERFACE IMPORTED)
endif()
set(_CMAKE_HIP_DEVICE_RUNTIME_TARGET "hip-lang::device")
set(hip-lang_VERSION "6.2.0")
set(hip-lang_VERSION_MAJOR 6)
set(hip-lang_VERSION_MINOR 2)
set(hip-lang_VERSION_PATCH 0)
set(hip-lang_FOUND TRUE)
