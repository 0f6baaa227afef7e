"""The HIP libraries real programs use, and the math overloads HIP's headers declare, on the host
backend: one self-checking program per family (tests/data/host/libraries, tests/data/host),
built through the hipcc wrapper as a project's build would, run, checked against plain C++ by
the program itself (exit 1 and the mismatches printed), and its trace read back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA
from rocm_perf.backends.host import HostBackend
from rocm_perf.trace.load import load_trace

HOST = DATA / "host"
LIBRARIES = HOST / "libraries"
pytestmark = pytest.mark.slow


def wrapper_build(source: Path, out: Path, *flags: str) -> tuple[int, str, Path]:  # flags after the source (link options)
    """`rocm-perf hipcc` on one source, as a Makefile would call it: (status, messages, program)."""
    out.mkdir(parents=True, exist_ok=True)
    program = out / source.stem
    done = subprocess.run([sys.executable, "-m", "rocm_perf.backends.host_hipcc", "-O2", str(source), "-o", str(program),
                           *flags], capture_output=True, text=True, cwd=out)
    return done.returncode, done.stdout + done.stderr, program


def run_traced(program: Path, out: Path):
    result = HostBackend().profile([str(program)], out, timeout=300)
    assert not result.timed_out
    assert result.returncode == 0, result.stdout + result.stderr
    return result, load_trace(result.databases[0])


def test_math_overloads_hip_declares(tmp_path):
    status, messages, program = wrapper_build(HOST / "math_overloads.cu", tmp_path)
    assert status == 0, messages
    result, _ = run_traced(program, tmp_path / "run")
    assert "math overloads: all match" in result.stdout


def test_the_standard_headers_hips_runtime_header_includes(tmp_path):
    # HIP's hip_runtime.h includes stdint.h, stdio.h, stdlib.h, assert.h and <thread>: programs
    # use them without an include of their own (HeCBench's moe-align-hip calls assert)
    source = tmp_path / "implicit.cu"
    source.write_text("#include <hip/hip_runtime.h>\n__global__ void k(int* p) { assert(p != nullptr); p[threadIdx.x] = 1; }\n"
                      "int main() {\n    int* d; hipMalloc(&d, 64 * sizeof(int)); k<<<1, 64>>>(d);\n"
                      "    int* h = (int*)malloc(64 * sizeof(int)); hipMemcpy(h, d, 64 * sizeof(int), hipMemcpyDeviceToHost);\n"
                      "    std::thread t([] {}); t.join(); uint32_t one = (uint32_t)h[63];\n"
                      '    printf("%u\\n", one); assert(one == 1); free(h); return 0;\n}\n')
    status, messages, program = wrapper_build(source, tmp_path / "build")
    assert status == 0, messages
    done = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "1\n", done.stdout + done.stderr


def dispatch_names(trace) -> list[str]:
    return [trace.symbols[int(k)].display_name for k in trace.kernel]


def test_rocthrust_through_debians_thrust_on_the_openmp_system(tmp_path):
    status, messages, program = wrapper_build(LIBRARIES / "thrust_algorithms.cu", tmp_path)
    assert status == 0, messages
    result, trace = run_traced(program, tmp_path / "run")
    assert "thrust: all match" in result.stdout
    names = dispatch_names(trace)
    # every algorithm on device data is a dispatch named as the library names it; the kernel too
    assert {"thrust::transform", "thrust::reduce", "thrust::inclusive_scan", "thrust::sort_by_key", "thrust::reduce_by_key",
            "thrust::copy_if", "thrust::unique", "thrust::fill"} <= set(names)
    assert any(n.startswith("add_index") for n in names)
    # thrust::hip::par.on(stream) runs on that stream, the rest on the null stream
    on_stream = {names[i] for i, s in enumerate(trace.stream) if int(s) != 0}
    assert on_stream == {"thrust::sequence", "thrust::sort_by_key"}


def test_hipcub_device_block_and_warp_primitives(tmp_path):
    status, messages, program = wrapper_build(LIBRARIES / "hipcub_primitives.cu", tmp_path)
    assert status == 0, messages
    result, trace = run_traced(program, tmp_path / "run")
    assert "hipcub: all match" in result.stdout
    names = set(dispatch_names(trace))
    assert {"hipcub::DeviceReduce::Sum", "hipcub::DeviceScan::ExclusiveSum", "hipcub::DeviceRadixSort::SortPairs",
            "hipcub::DeviceSelect::Flagged"} <= names


def test_hipblas_through_openblas(tmp_path):
    status, messages, program = wrapper_build(LIBRARIES / "hipblas_routines.cu", tmp_path, "-lhipblas")
    assert status == 0, messages
    result, trace = run_traced(program, tmp_path / "run")
    assert "hipblas: all match" in result.stdout
    names = dispatch_names(trace)
    # named as rocBLAS names the routines, on the handle's stream
    assert {"rocblas_sgemm", "rocblas_dgemm_strided_batched", "rocblas_sgemv", "rocblas_sdot", "rocblas_cher2"} <= set(names)
    assert all(int(s) != 0 for s in trace.stream)


def test_hiprand_host_and_device_apis_as_rocrand_defines_them(tmp_path):
    status, messages, program = wrapper_build(LIBRARIES / "hiprand_generators.cu", tmp_path, "-lhiprand")
    assert status == 0, messages
    result, trace = run_traced(program, tmp_path / "run")
    assert "hiprand: all match" in result.stdout  # incl. Random123's known answer for Philox4x32-10
    assert {"rocrand_generate_philox4x32_10", "rocrand_generate_xorwow", "rocrand_generate_mrg32k3a"} <= set(
        dispatch_names(trace))


def test_rccl_in_one_process(tmp_path):
    status, messages, program = wrapper_build(LIBRARIES / "rccl_collectives.cu", tmp_path, "-lrccl")
    assert status == 0, messages
    result, trace = run_traced(program, tmp_path / "run")
    assert "rccl: all match" in result.stdout
    names = dispatch_names(trace)
    # one dispatch per rank and collective, named as RCCL's kernels are
    assert names.count("ncclKernel_AllReduce_RING_LL_Sum_float") == 4
    assert {"ncclKernel_AllGather_RING_LL_float", "ncclKernel_ReduceScatter_RING_LL_Max_float",
            "ncclKernel_Broadcast_RING_LL_float", "ncclKernel_Reduce_RING_LL_Prod_float",
            "ncclKernel_AllReduce_RING_LL_Avg_double"} <= set(names)


@pytest.mark.parametrize("call, expect", [
    ("#include <hipcub/hipcub.hpp>\nint main() {\n    void* t = nullptr; size_t b = 0; int* d = nullptr;\n"
     "    return hipcub::DeviceHistogram::HistogramEven(t, b, d, d, 10, 0, 9, 100);\n}\n",
     "rocm-perf host backend: hipcub::DeviceHistogram::HistogramEven is not supported"),
    ("#include <hipblas/hipblas.h>\nint main() {\n    hipblasHandle_t h; float* a = nullptr;\n"
     "    return hipblasSgbmv(h, HIPBLAS_OP_N, 4, 4, 1, 1, a, a, 4, a, 1, a, a, 1);\n}\n",
     "rocm-perf host backend: hipblasSgbmv is not supported"),
])
def test_a_library_call_the_host_runtime_lacks_fails_the_build_naming_it_and_the_line(tmp_path, call, expect):
    source = tmp_path / "lacking.cu"
    source.write_text(call)
    status, messages, _ = wrapper_build(source, tmp_path / "build")
    assert status != 0
    assert f"{source}:4:" in messages  # the caller's line
    assert expect in messages
