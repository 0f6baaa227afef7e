# find_package(hipblas) for the rocm-perf host backend: the host runtime provides hipblas's headers
# (rocm_perf/backends/host_runtime); roc::hipblas links OpenBLAS (libopenblas-dev), which computes its routines.
get_filename_component(_rocm_perf_runtime "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
if(NOT TARGET roc::hipblas)
  add_library(roc::hipblas INTERFACE IMPORTED)
  set_target_properties(roc::hipblas PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rocm_perf_runtime}" INTERFACE_LINK_LIBRARIES openblas)
endif()
set(hipblas_FOUND TRUE)
