"""Kernel names: the host runtime records the name the device compiler gives a kernel, so that a
host profile and a rocm profile (and hipcc's resource report) name the same kernel alike."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import DATA
from host_programs import built  # noqa: F401  (the shared build fixture)
from rocm_perf.backends.hipcc import amd_build_env
from rocm_perf.backends.host import HostBackend
from rocm_perf.backends.host_trace import read_host_log

HOST = DATA / "host"


def hipcc_kernel_names(hipcc: str, source, tmp_path) -> set[str]:
    """`Function Name` of every kernel in hipcc's kernel-resource-usage remarks (gfx90a)."""
    with amd_build_env() as env:  # clang's own temporaries go with it
        done = subprocess.run(
            [hipcc, "--offload-arch=gfx90a", "-O2", "-c", "--cuda-device-only", str(source), "-o", str(tmp_path / "k.o"),
             "-Rpass-analysis=kernel-resource-usage"],
            capture_output=True, text=True, timeout=300, env={**os.environ, **env},
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(re.findall(r"Function Name: (\S+)", done.stderr))


@pytest.mark.hipcc
@pytest.mark.slow
@pytest.mark.parametrize("program", ["barriers", "streams_events"])
def test_recorded_names_match_hipcc(hipcc, built, tmp_path, program):
    result = HostBackend().profile([str(built(program))], tmp_path / "prof")
    assert result.returncode == 0, result.stdout
    raw = next((tmp_path / "prof").glob("host_trace_*.jsonl"))
    trace = read_host_log(raw)
    recorded = {s.name.removesuffix(".kd") for s in trace.symbols}
    assert recorded == hipcc_kernel_names(hipcc, HOST / f"{program}.cu", tmp_path)
    # the template instantiation is named by its symbol, the rest likewise (built with -rdynamic)
    assert set(trace.metadata["kernel_naming"].values()) == {"symbol"}


@pytest.mark.slow
def test_names_from_the_signature_without_exported_symbols(tmp_path):
    """Built without -rdynamic (as a user might), a plain kernel's name still comes out mangled,
    from its function type; a template kernel falls back to its source spelling."""
    exe = tmp_path / "streams_events"
    prepped = tmp_path / "streams_events.host.cpp"
    from rocm_perf.backends.launch_prepass import prepass

    prepped.write_text(prepass((HOST / "streams_events.cu").read_text()).text)
    from rocm_perf.backends.host import RUNTIME_DIR

    subprocess.run(["g++", "-std=c++17", "-O1", "-I", str(RUNTIME_DIR), str(prepped), "-o", str(exe), "-lpthread"],
                   check=True, timeout=300)
    log = tmp_path / "log.jsonl"
    subprocess.run([str(exe)], check=True, timeout=120, env={**os.environ, "ROCM_PERF_HOST_LOG": str(log)},
                   capture_output=True)
    trace = read_host_log(log)
    naming = trace.metadata["kernel_naming"]
    assert naming["_Z7producePfii"] == "signature"
    assert naming["_Z9side_workPi"] == "signature"
    assert naming["consume<float, 3>"] == "source"
    names = {s.name for s in trace.symbols}
    assert {"_Z7producePfii.kd", "_Z9side_workPi.kd", "consume<float, 3>"} == names
