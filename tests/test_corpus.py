"""The kernels/ corpus: real HIP for gfx90a, and self-checking programs that pass on the host backend.

Every program must compile with Debian's hipcc for gfx90a (the corpus is HIP, not a dialect of
ours), build and pass its own check on the host backend, and leave a profile database that reads
back with the kernels, launch counts and streams its source launches. The pipeline program's
dispatch DAG must carry the event edges between its streams.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from conftest import IN_CI, KERNELS, hipcc_for_amd
from rocm_perf.backends.base import ProfileResult
from rocm_perf.backends.hipcc import amd_build_env
from rocm_perf.process import Completed, run
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import Trace

# What each program launches: kernel base name -> launches per run. Mirrors kernels/README.md.
EXPECTED_LAUNCHES: dict[str, dict[str, int]] = {
    "row_reduce": {"row_sum": 32},
    "softmax": {"softmax_rows": 24},
    "layernorm": {"layernorm_rows": 28},
    "stencil1d": {"stencil_1d": 10},
    "stencil2d": {"stencil_2d": 20},
    "matmul_tiled": {"matmul_tiled": 8},
    "matmul_regblock": {"matmul_micro4x4": 6},
    "transpose": {"transpose_naive": 14, "transpose_shared": 14},
    "histogram": {"histogram_global": 10, "histogram_shared": 10},
    "pipeline": {"expand_chunk": 24, "smooth_chunk": 24, "reduce_chunk": 24},
    "runtime_trip": {"integrate_intervals": 16},
    "scan": {"scan_tiles": 12, "scan_tile_totals": 12, "add_tile_offsets": 12},
}
PIPELINE_STAGES = ("expand_chunk", "smooth_chunk", "reduce_chunk")  # stream 0, 1, 2 in order

CORPUS = sorted(KERNELS.glob("*.cu"))
CORPUS_IDS = [p.stem for p in CORPUS]
CHECKSUM_LINE = re.compile(r"^checksum \S+$", re.MULTILINE)


def test_corpus_lists_every_program():
    assert len(CORPUS) >= 10
    assert set(CORPUS_IDS) == set(EXPECTED_LAUNCHES)
    readme = (KERNELS / "README.md").read_text(encoding="utf-8")
    for stem, kernels in EXPECTED_LAUNCHES.items():
        assert f"`{stem}.cu`" in readme, f"kernels/README.md has no row for {stem}.cu"
        for kernel, launches in kernels.items():
            # the table cell reads `name` (count) or `name<args>` (count)
            assert re.search(rf"`{kernel}(<[^`]*>)?` \({launches}\b", readme), (
                f"kernels/README.md does not list {kernel} with {launches} launches"
            )


@pytest.mark.parametrize("source", CORPUS, ids=CORPUS_IDS)
def test_program_is_plain_hip(source: Path):
    text = source.read_text(encoding="utf-8")
    assert "#include <hip/hip_runtime.h>" in text
    assert "int main(" in text
    assert "hipMemcpyDeviceToHost" in text
    assert "return 1;" in text, "a mismatch must exit 1"
    assert 'printf("checksum ' in text
    # what the host backend cannot run stays out of the corpus
    for feature in ("__shfl", "__ballot", "__any(", "__all(", "grid_group", "this_grid"):
        assert feature not in text


def test_corpus_uses_both_launch_styles_and_the_hip_apis_it_promises():
    text = "\n".join(p.read_text(encoding="utf-8") for p in CORPUS)
    assert "hipLaunchKernelGGL(" in text
    assert re.search(r"\w+<<<", text)
    for api in ("hipStreamWaitEvent", "hipEventRecord", "atomicAdd", "extern __shared__", "__syncthreads()",
                "#pragma unroll", "__device__"):
        assert api in text, api


# --- hipcc for gfx90a -------------------------------------------------------------------------


@dataclass
class HipccCompile:
    completed: Completed
    object_bytes: bytes


@pytest.fixture(scope="module")
def hipcc_compiles(tmp_path_factory) -> dict[str, HipccCompile]:
    """Every corpus program compiled once for gfx90a, two at a time (hipcc takes about 2 s each)."""
    hipcc = hipcc_for_amd()
    if hipcc is None:
        return {}
    workdir = tmp_path_factory.mktemp("corpus-hipcc")

    def compile_one(source: Path) -> tuple[str, HipccCompile]:
        obj = workdir / f"{source.stem}.o"
        with amd_build_env() as env:  # clang's own temporaries go with it
            completed = run([hipcc, "--offload-arch=gfx90a", "-O3", "-c", str(source), "-o", str(obj)], timeout=300, env=env)
        return source.stem, HipccCompile(completed, obj.read_bytes() if obj.exists() else b"")

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(compile_one, CORPUS))


@pytest.mark.hipcc
@pytest.mark.parametrize("source", CORPUS, ids=CORPUS_IDS)
def test_program_compiles_for_gfx90a(hipcc: str, hipcc_compiles: dict[str, HipccCompile], source: Path):
    result = hipcc_compiles[source.stem]
    assert result.completed.returncode == 0, result.completed.stderr[-2000:]
    assert "warning:" not in result.completed.stderr, result.completed.stderr[-2000:]
    # the host side registers each kernel with the code object by its mangled name
    for kernel in EXPECTED_LAUNCHES[source.stem]:
        assert f"{len(kernel)}{kernel}".encode() in result.object_bytes, f"{kernel} not in the gfx90a object"


# --- the host backend -------------------------------------------------------------------------


@dataclass
class HostRun:
    """One program built and profiled on the host backend, and its database read back."""

    executable: Path | None
    result: ProfileResult | None
    trace: Trace | None  # None when the run left no database
    error: str | None = None  # the backend's message when the build or the run failed


def kernel_base_name(display_name: str) -> str:
    """`void softmax_rows<64>(float const*, float*, int)` -> `softmax_rows`."""
    match = re.match(r"(?:void\s+)?([A-Za-z_]\w*)", display_name.strip())
    assert match, display_name
    return match.group(1)


@pytest.fixture(scope="module")
def host_runs(tmp_path_factory) -> dict[str, HostRun]:
    """Every corpus program built and profiled once on the host backend (two at a time)."""
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.trace.load import load_trace

    backend = HostBackend()
    available, why = backend.available()
    if not available:
        message = f"host backend unavailable: {why}"
        if IN_CI:
            pytest.fail(message + ": CI must have it")
        pytest.skip(message)
    root = tmp_path_factory.mktemp("corpus-host")

    def build_and_profile(source: Path) -> tuple[str, HostRun]:
        out_dir = root / source.stem
        try:
            program = backend.build(source, out_dir / "build")
            result = backend.profile([str(program.executable)], out_dir / "profile", timeout=120)
            trace = load_trace(result.databases[0]) if result.databases else None
        except RocmPerfError as e:  # one program's failure must not hide the others' results
            return source.stem, HostRun(None, None, None, error=str(e))
        return source.stem, HostRun(program.executable, result, trace)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(build_and_profile, CORPUS))


@pytest.mark.slow
@pytest.mark.parametrize("source", CORPUS, ids=CORPUS_IDS)
def test_program_passes_its_check_on_host_backend(host_runs: dict[str, HostRun], source: Path):
    run_ = host_runs[source.stem]
    assert run_.error is None, run_.error
    result = run_.result
    assert not result.timed_out
    assert result.returncode == 0, result.stdout[-1000:] + result.stderr[-2000:]
    assert "PASS" in result.stdout
    assert len(CHECKSUM_LINE.findall(result.stdout)) == 1, result.stdout
    assert "MISMATCH" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("source", CORPUS, ids=CORPUS_IDS)
def test_profile_reads_back_with_kernels_counts_and_streams(host_runs: dict[str, HostRun], source: Path):
    run_ = host_runs[source.stem]
    assert run_.error is None, run_.error
    assert len(run_.result.databases) == 1
    trace = run_.trace
    assert trace.metadata["format"] == "rocpd-v3"
    launches = Counter(kernel_base_name(trace.symbol_name(row)) for row in range(len(trace)))
    assert dict(launches) == EXPECTED_LAUNCHES[source.stem]
    assert np.all(trace.end >= trace.start)
    # one digest per device-to-host copy the program makes (each copy site runs once)
    assert len(trace.digests) == source.read_text(encoding="utf-8").count("hipMemcpyDeviceToHost")
    streams = set(int(s) for s in trace.stream)
    if source.stem == "pipeline":
        stage_streams = [_streams_of(trace, stage) for stage in PIPELINE_STAGES]
        assert all(len(s) == 1 for s in stage_streams), stage_streams
        assert len(set().union(*stage_streams)) == 3
        assert 0 not in streams, "the pipeline launches nothing on the null stream"
    else:
        assert streams == {0}, "single-stream programs launch on the null stream"


def _streams_of(trace, kernel: str) -> set[int]:
    return {int(trace.stream[row]) for row in _rows_of(trace, kernel)}


def _rows_of(trace, kernel: str) -> list[int]:
    """Dispatch rows of one kernel, in start order (the trace is sorted by start)."""
    return [row for row in range(len(trace)) if kernel_base_name(trace.symbol_name(row)) == kernel]


@pytest.mark.slow
def test_pipeline_stages_wait_for_their_producers(host_runs: dict[str, HostRun]):
    """Each stage of a chunk starts only after the previous stage of that chunk ended (the events)."""
    trace = host_runs["pipeline"].trace
    expand, smooth, reduce_ = (_rows_of(trace, stage) for stage in PIPELINE_STAGES)
    for producer, consumer in ((expand, smooth), (smooth, reduce_)):
        for p, c in zip(producer, consumer):
            assert trace.start[c] >= trace.end[p]


@pytest.mark.slow
def test_pipeline_dag_has_its_event_edges(host_runs: dict[str, HostRun]):
    from rocm_perf.analysis.critical_path import analyze_critical_path

    trace = host_runs["pipeline"].trace
    result = analyze_critical_path(trace)
    assert result.cross_stream_known
    edges = {(int(a), int(b)) for a, b in result.dependency_edges}
    expand, smooth, reduce_ = (_rows_of(trace, stage) for stage in PIPELINE_STAGES)
    missing = [
        (p, c)
        for producer, consumer in ((expand, smooth), (smooth, reduce_))
        for p, c in zip(producer, consumer)
        if (p, c) not in edges
    ]
    assert not missing, f"event edges missing from the DAG: {missing[:5]}"
    # every round ends in a reduce that waits on the other two streams: the path crosses all three
    assert len({int(s) for s in trace.stream[result.path]}) == 3
    # the critical path is no longer than running everything back to back, no shorter than any stream
    assert result.critical_path_ns <= result.sum_dispatch_ns
    per_stream = {s: int(trace.duration[trace.stream == s].sum()) for s in set(int(s) for s in trace.stream)}
    assert result.critical_path_ns >= max(per_stream.values())


@pytest.mark.slow
@pytest.mark.parametrize("stem", ["pipeline", "histogram", "softmax"])
def test_outputs_do_not_depend_on_worker_threads(host_runs: dict[str, HostRun], stem: str, tmp_path: Path):
    """Streams, atomics and barriers: a rerun with two block threads copies back the same bytes.

    The optimizer compares these digests and this stdout to decide that a candidate is correct.
    """
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.trace.load import load_trace

    first = host_runs[stem]
    second = HostBackend(threads=2).profile([str(first.executable)], tmp_path, timeout=120)
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout == first.result.stdout
    assert load_trace(second.databases[0]).digests == first.trace.digests
