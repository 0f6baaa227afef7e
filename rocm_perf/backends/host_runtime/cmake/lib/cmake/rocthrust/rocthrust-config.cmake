# find_package(rocthrust) for the rocm-perf host backend: rocThrust is Debian's Thrust (libthrust-dev) run on its OpenMP system
# (rocm_perf/backends/host_runtime); roc::rocthrust links nothing (header-only here).
get_filename_component(_rocm_perf_runtime "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(NOT TARGET roc::rocthrust)
  add_library(roc::rocthrust INTERFACE IMPORTED)
  set_target_properties(roc::rocthrust PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rocm_perf_runtime}")
endif()
set(rocthrust_FOUND TRUE)
