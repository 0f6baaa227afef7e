# find_package(hipcub) for the rocm-perf host backend: the host runtime provides hipcub's headers
# (rocm_perf/backends/host_runtime); hip::hipcub links nothing (header-only here).
get_filename_component(_rocm_perf_runtime "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(NOT TARGET hip::hipcub)
  add_library(hip::hipcub INTERFACE IMPORTED)
  set_target_properties(hip::hipcub PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rocm_perf_runtime}")
endif()
set(hipcub_FOUND TRUE)
