"""The HIP that real programs use, on the host backend: one self-checking program per feature
family (tests/data/host), built with g++ against the runtime, run, and its trace read back.

Each program compares every result with a plain C++ computation and exits 1 on a mismatch,
printing which; a test here fails on that exit status and shows the program's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import DATA
from host_programs import built  # noqa: F401  (the shared build fixture)
from rocm_perf.backends.host import HostBackend
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.load import load_trace

HOST = DATA / "host"
pytestmark = pytest.mark.slow


def run_program(executable: Path, out: Path, *args: str, **backend_options):
    result = HostBackend(**backend_options).profile([str(executable), *args], out, timeout=300)
    assert not result.timed_out
    return result


def passes(result, line: str) -> None:
    assert result.returncode == 0, result.stdout + result.stderr
    assert line in result.stdout, result.stdout


@pytest.mark.parametrize("threads", [1, 2])
def test_warp_operations_at_64_lanes(built, tmp_path, threads):
    passes(run_program(built("warp_ops"), tmp_path, threads=threads), "warp ops: all match (warpSize 64)")


def test_warp_operations_at_32_lanes_through_the_backend_option(tmp_path):
    backend = HostBackend(warp_size=32)
    program = backend.build(HOST / "warp_ops.cu", tmp_path / "build")
    result = run_program(program.executable, tmp_path / "run")
    passes(result, "warp ops: all match (warpSize 32)")
    assert "32-lane warps" in backend.describe()
    # the agent in the database says how wide its wavefronts are, as rocprofv3's agent table does
    assert load_trace(result.databases[0]).agents[0].extra["wave_front_size"] == 32


def test_warp_operations_through_the_ucontext_fibers(built, tmp_path):
    result = run_program(built("warp_ops", ("-DROCM_PERF_FORCE_UCONTEXT",)), tmp_path)
    passes(result, "warp ops: all match")


def test_the_warp_size_must_be_32_or_64():
    with pytest.raises(RocmPerfError, match="--warp-size must be 32 or 64"):
        HostBackend(warp_size=16)


def test_warp_kernels_are_traced_like_any_other(built, tmp_path):
    result = run_program(built("warp_ops"), tmp_path)
    trace = load_trace(result.databases[0])
    names = {trace.symbols[int(k)].display_name.split("(")[0] for k in trace.kernel}
    assert {"votes", "early_exit", "divergent", "uneven_loops", "late_start", "after_barrier"} <= names
    assert trace.agents[0].extra["wave_front_size"] == 64


@pytest.mark.parametrize("threads", [1, 2])
def test_cooperative_groups_tiles_coalesced_and_grid_sync(built, tmp_path, threads):
    passes(run_program(built("coop_groups"), tmp_path, threads=threads), "cooperative groups: all match")


def test_cooperative_groups_at_32_lanes(built, tmp_path):
    passes(run_program(built("coop_groups", ("-DROCM_PERF_WARP_SIZE=32",)), tmp_path), "cooperative groups: all match")


def test_grid_sync_without_a_cooperative_launch_stops_with_the_reason(built, tmp_path):
    result = run_program(built("coop_groups"), tmp_path, "grid-sync-plain")
    assert result.returncode != 0
    assert "this_grid().sync() needs a cooperative launch (hipLaunchCooperativeKernel)" in result.stderr
    assert "grid sync under a plain launch returned" not in result.stdout


def test_a_cooperative_launch_larger_than_the_device_holds_is_refused(built, tmp_path):
    result = run_program(built("coop_groups"), tmp_path, "too-large")
    passes(result, "too large: hipErrorCooperativeLaunchTooLarge, then hipErrorCooperativeLaunchTooLarge")


def test_half_and_bfloat16(built, tmp_path):
    passes(run_program(built("half_types"), tmp_path), "half types: all match")


def test_vector_types(built, tmp_path):
    passes(run_program(built("vector_types", ("-Wall", "-Werror")), tmp_path), "vector types: all match")


def test_math_and_integer_intrinsics(built, tmp_path):
    passes(run_program(built("math_intrinsics"), tmp_path), "math intrinsics: all match")


def test_atomics_of_every_type(built, tmp_path):
    passes(run_program(built("atomics_wide"), tmp_path, threads=2), "wide atomics: all match")


def test_runtime_api_memory_streams_events_properties_errors(built, tmp_path):
    result = run_program(built("runtime_api"), tmp_path)
    passes(result, "runtime api: all match")
    trace = load_trace(result.databases[0])
    calls = {trace.api.name_of(i) for i in range(len(trace.api))}
    assert {"hipMemcpy2D", "hipMemset2D", "hipMemsetD32", "hipMemcpyAsync", "hipMemsetAsync"} <= calls
    # the refused launches left no dispatch
    names = [trace.symbols[int(k)].display_name.split("(")[0] for k in trace.kernel]
    assert names.count("scale") == 2


@pytest.mark.parametrize(
    "name, line, feature",
    [
        ("unsupported_texture", 7, "rocm-perf host backend: texture fetch"),
        ("unsupported_gcn_asm", 7, "inline GCN assembly (`v_mov_b32_e32 %0, %1`)"),
        ("unsupported_module", 7, "rocm-perf host backend: hipModuleLoad (GPU code objects) is not supported"),
    ],
)
def test_what_cannot_run_fails_at_build_time_naming_feature_and_line(tmp_path, name, line, feature):
    with pytest.raises(RocmPerfError) as e:
        HostBackend().build(HOST / f"{name}.cu", tmp_path)
    message = str(e.value)
    assert f"{name}.cu:{line}:" in message
    assert feature in message and "profile this program with the rocm backend" in message


# A divergent warp op that thread 0 skips: a later thread meets it in the plain thread loop. The
# token pasting hides the name from the build's scan for warp ops (host_sources.WARP_OPS).
HIDDEN_WARP_OP = r"""
#include <hip/hip_runtime.h>
#include <cstdio>
#define WARP_OP(name) __sh##name
__global__ void divergent(int* out) {
    int v = threadIdx.x;
    if (threadIdx.x >= 32) v = WARP_OP(fl_down)(v, 1);
    out[threadIdx.x] = v;
}
int main() {
    int* out = nullptr;
    hipMalloc(&out, 64 * sizeof(int));
    divergent<<<1, 64>>>(out);
    hipDeviceSynchronize();
    std::printf("done\n");
    return 0;
}
"""


def test_a_unit_without_warp_ops_runs_blocks_without_the_per_thread_check(tmp_path):
    """kernels/pipeline.cu names no warp op: its build defines ROCM_PERF_HOST_NO_WARP_OPS (its light
    kernels ran 17-26 % slower with the check after every GPU thread); warp_ops.cu does not."""
    plain = HostBackend().build(Path(__file__).resolve().parents[1] / "kernels" / "pipeline.cu", tmp_path / "plain")
    assert "-DROCM_PERF_HOST_NO_WARP_OPS=1" in plain.build_log.read_text()
    result = run_program(plain.executable, tmp_path / "plain_run")
    assert result.returncode == 0, result.stdout + result.stderr
    warp = HostBackend().build(HOST / "warp_ops.cu", tmp_path / "warp")
    assert "ROCM_PERF_HOST_NO_WARP_OPS" not in warp.build_log.read_text()


def test_a_warp_op_the_scan_missed_stops_the_program_instead_of_running_it_wrongly(tmp_path):
    source = tmp_path / "hidden.cu"
    source.write_text(HIDDEN_WARP_OP)
    program = HostBackend().build(source, tmp_path / "build")
    assert "-DROCM_PERF_HOST_NO_WARP_OPS=1" in program.build_log.read_text()
    result = run_program(program.executable, tmp_path / "run")
    assert result.returncode != 0
    assert "built as having none (ROCM_PERF_HOST_NO_WARP_OPS)" in result.stderr
    # Without the define the same program runs (the runtime takes the block into lock step).
    full = HostBackend().build(source, tmp_path / "full", ["-UROCM_PERF_HOST_NO_WARP_OPS"])
    assert run_program(full.executable, tmp_path / "full_run").returncode == 0
