# find_package(rocrand) for the rocm-perf host backend: the host runtime provides rocrand's headers
# (rocm_perf/backends/host_runtime); roc::rocrand links nothing (header-only here).
get_filename_component(_rocm_perf_runtime "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(NOT TARGET roc::rocrand)
  add_library(roc::rocrand INTERFACE IMPORTED)
  set_target_properties(roc::rocrand PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rocm_perf_runtime}")
endif()
set(rocrand_FOUND TRUE)
