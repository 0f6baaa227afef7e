# find_package(rocprim) for the rocm-perf host backend: the host runtime provides rocprim's headers
# (rocm_perf/backends/host_runtime); roc::rocprim links nothing (header-only here).
get_filename_component(_rocm_perf_runtime "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(NOT TARGET roc::rocprim)
  add_library(roc::rocprim INTERFACE IMPORTED)
  set_target_properties(roc::rocprim PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rocm_perf_runtime}")
endif()
set(rocprim_FOUND TRUE)
