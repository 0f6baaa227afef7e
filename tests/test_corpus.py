"""The kernels/ corpus: real HIP for gfx90a, and self-checking programs that pass on the host backend.

Every program must compile with Debian's hipcc for gfx90a (the corpus is HIP, not a dialect of
ours), build and pass its own check on the host backend, and leave a profile database that reads
back with the kernels, launch counts and streams its source launches. The pipeline program's
dispatch DAG must carry the event edges between its streams.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from conftest import KERNELS, hipcc_for_amd
from rocm_perf.backends.process import Completed, run

# What each program launches: kernel base name -> launches per run. Mirrors kernels/README.md.
EXPECTED_LAUNCHES: dict[str, dict[str, int]] = {
    "row_reduce": {"row_sum": 20},
    "softmax": {"softmax_rows": 8},
    "layernorm": {"layernorm_rows": 8},
    "stencil1d": {"stencil_1d": 10},
    "stencil2d": {"stencil_2d": 12},
    "matmul_tiled": {"matmul_tiled": 5},
    "matmul_regblock": {"matmul_micro4x4": 6},
    "transpose": {"transpose_naive": 4, "transpose_shared": 4},
    "histogram": {"histogram_global": 3, "histogram_shared": 3},
    "pipeline": {"expand_chunk": 18, "smooth_chunk": 18, "reduce_chunk": 18},
    "runtime_trip": {"integrate_intervals": 5},
}
PIPELINE_STAGES = ("expand_chunk", "smooth_chunk", "reduce_chunk")  # stream 0, 1, 2 in order
PIPELINE_CHUNKS = 6

CORPUS = sorted(KERNELS.glob("*.cu"))
CORPUS_IDS = [p.stem for p in CORPUS]
CHECKSUM_LINE = re.compile(r"^checksum \S+$", re.MULTILINE)


def test_corpus_lists_every_program():
    assert len(CORPUS) >= 10
    assert set(CORPUS_IDS) == set(EXPECTED_LAUNCHES)
    readme = (KERNELS / "README.md").read_text(encoding="utf-8")
    for stem, kernels in EXPECTED_LAUNCHES.items():
        assert f"`{stem}.cu`" in readme, f"kernels/README.md has no row for {stem}.cu"
        for kernel in kernels:
            assert kernel in readme, f"kernels/README.md does not name {kernel}"


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
def hipcc_compiles() -> dict[str, HipccCompile]:
    """Every corpus program compiled once for gfx90a, two at a time (hipcc takes about 2 s each)."""
    hipcc = hipcc_for_amd()
    if hipcc is None:
        return {}
    workdir = Path(tempfile.mkdtemp(prefix="corpus-hipcc-"))

    def compile_one(source: Path) -> tuple[str, HipccCompile]:
        obj = workdir / f"{source.stem}.o"
        completed = run(
            [hipcc, "--offload-arch=gfx90a", "-O3", "-c", str(source), "-o", str(obj)],
            timeout=300,
            env={"HIP_PLATFORM": "amd"},
        )
        return source.stem, HipccCompile(completed, obj.read_bytes() if obj.exists() else b"")

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(pool.map(compile_one, CORPUS))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.hipcc
@pytest.mark.parametrize("source", CORPUS, ids=CORPUS_IDS)
def test_program_compiles_for_gfx90a(hipcc: str, hipcc_compiles: dict[str, HipccCompile], source: Path):
    result = hipcc_compiles[source.stem]
    assert result.completed.returncode == 0, result.completed.stderr[-2000:]
    assert "warning:" not in result.completed.stderr, result.completed.stderr[-2000:]
    # the host side registers each kernel with the code object by its mangled name
    for kernel in EXPECTED_LAUNCHES[source.stem]:
        assert f"{len(kernel)}{kernel}".encode() in result.object_bytes, f"{kernel} not in the gfx90a object"
