# find_package(rccl) for the rocm-perf host backend: the host runtime provides rccl's headers
# (rocm_perf/backends/host_runtime); rccl links nothing (header-only here).
get_filename_component(_rocm_perf_runtime "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(NOT TARGET rccl)
  add_library(rccl INTERFACE IMPORTED)
  set_target_properties(rccl PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rocm_perf_runtime}")
endif()
set(rccl_FOUND TRUE)
