# find_package(hiprand) for the rocm-perf host backend: the host runtime provides hiprand's headers
# (rocm_perf/backends/host_runtime); hip::hiprand links nothing (header-only here).
get_filename_component(_rocm_perf_runtime "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(NOT TARGET hip::hiprand)
  add_library(hip::hiprand INTERFACE IMPORTED)
  set_target_properties(hip::hiprand PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rocm_perf_runtime}")
endif()
set(hiprand_FOUND TRUE)
