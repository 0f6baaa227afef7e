# CMake toolchain file of the rocm-perf host backend: HIP sources of an unmodified CMake project
# build for the CPU with `rocm-perf-hip-cxx` (hipcc's command line over g++ and the host runtime).
#
# `rocm-perf optimize/profile --project ... --backend host` point CMAKE_TOOLCHAIN_FILE (read from
# the environment by CMake 3.21+ for a new build directory) here, or use it directly:
#   cmake -DCMAKE_TOOLCHAIN_FILE=<this file> -S . -B build
#
# CMake accepts only Clang as a HIP compiler and finds ROCm through it; the wrapper is g++
# underneath, so the compiler's identity and the ROCm root are given here instead of probed.
# The ROCm root is this directory: its lib/cmake/hip-lang and lib/cmake/hip packages define the
# targets projects link (hip-lang::device, hip::host, hip::device) as empty interfaces.

get_filename_component(_rocm_perf_root "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)

if(DEFINED ENV{ROCM_PERF_HIP_CXX})
  set(_rocm_perf_hip_cxx "$ENV{ROCM_PERF_HIP_CXX}")
else()
  find_program(_rocm_perf_hip_cxx NAMES rocm-perf-hip-cxx REQUIRED)
endif()

set(CMAKE_HIP_COMPILER "${_rocm_perf_hip_cxx}" CACHE FILEPATH "HIP compiler (rocm-perf host backend)")
set(CMAKE_HIP_COMPILER_ID "Clang" CACHE STRING "" FORCE)
set(CMAKE_HIP_COMPILER_ID_RUN TRUE)
set(CMAKE_HIP_COMPILER_VERSION "17.0.0")
set(CMAKE_HIP_COMPILER_ROCM_ROOT "${_rocm_perf_root}" CACHE PATH "ROCm root (rocm-perf host backend)")
set(CMAKE_HIP_ARCHITECTURES OFF CACHE STRING "HIP architectures: none, the host backend builds for the CPU")
set(CMAKE_HIP_STANDARD_COMPUTED_DEFAULT "17")
set(CMAKE_HIP_EXTENSIONS_COMPUTED_DEFAULT "OFF")
set(CMAKE_HIP_PLATFORM_ID "Linux")
set(CMAKE_HIP_SIMULATE_ID "")

set(hip-lang_DIR "${_rocm_perf_root}/lib/cmake/hip-lang" CACHE PATH "" FORCE)
set(hip_DIR "${_rocm_perf_root}/lib/cmake/hip" CACHE PATH "" FORCE)
list(PREPEND CMAKE_PREFIX_PATH "${_rocm_perf_root}")
