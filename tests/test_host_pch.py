"""The host runtime's precompiled header (host_pch.py): made once per compiler and flags, read by
GCC in place of the runtime's headers, and never changing what a build compiles."""

from __future__ import annotations

import os
import shutil
import sys
import subprocess
from pathlib import Path

import pytest

from rocm_perf.backends import host_pch
from rocm_perf.backends.host import RUNTIME_DIR, HostBackend

from conftest import KERNELS

pytestmark = pytest.mark.slow

WARP_PROGRAM = """\
{before}#include <hip/hip_runtime.h>
#include "again.h"
#include <cstdio>

__global__ void fill(int* out) {{ out[threadIdx.x] = warpSize; }}

int main() {{
    int* d = nullptr;
    hipMalloc(&d, sizeof(int));
    fill<<<1, 1>>>(d);
    int h = 0;
    hipMemcpy(&h, d, sizeof(int), hipMemcpyDeviceToHost);
    std::printf("warp %d\\n", h);
    return 0;
}}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("ROCM_PERF_CACHE_DIR", str(root))
    return root


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "host-pch").iterdir()) if (cache / "host-pch").is_dir() else []


def write_program(folder: Path, before: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "again.h").write_text("#pragma once\n#include <hip/hip_runtime.h>  // a second include\n")
    source = folder / "warp.cu"
    source.write_text(WARP_PROGRAM.format(before=before))
    return source


def pch_read_by(compile_dir: Path, unit: Path, pch: Path, *defines: str) -> bool:
    """Whether GCC reads the precompiled header for `unit` (its -H trace marks a used one with '!')."""
    done = subprocess.run(["g++", "-std=c++17", "-O2", *defines, "-I", str(pch), "-I", str(RUNTIME_DIR), "-I",
                           str(compile_dir), "-H", "-fsyntax-only", "-x", "c++", str(unit)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return f"! {host_pch.gch_path(pch)}" in done.stderr


def test_a_build_makes_the_precompiled_header_once_and_the_next_build_reads_it(cache, tmp_path):
    backend = HostBackend()
    program = backend.build(KERNELS / "stencil2d.cu", tmp_path / "one")
    [entry] = entries(cache)
    assert host_pch.gch_path(entry).stat().st_size > 1_000_000
    names = (entry / "headers.txt").read_text().split()
    assert "vector" in names and "rocm_perf_host/runtime.h" in names
    made = host_pch.gch_path(entry).stat().st_mtime_ns
    again = backend.build(KERNELS / "stencil2d.cu", tmp_path / "two")
    assert entries(cache) == [entry] and host_pch.gch_path(entry).stat().st_mtime_ns == made
    unit = tmp_path / "two" / "stencil2d.host.cpp"
    assert pch_read_by(KERNELS, unit, entry, "-DROCM_PERF_HOST_NO_WARP_OPS=1")
    for built in (program, again):
        done = subprocess.run([str(built.executable)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "PASS" in done.stdout


def test_a_macro_the_runtime_reads_defined_first_makes_gcc_read_the_headers_instead(cache, tmp_path):
    backend = HostBackend()
    plain = backend.build(write_program(tmp_path / "plain"), tmp_path / "plain" / "build")
    warp32 = backend.build(write_program(tmp_path / "w32", before="#define ROCM_PERF_WARP_SIZE 32\n"),
                           tmp_path / "w32" / "build")
    [entry] = entries(cache)  # the same flags: one precompiled header for both
    assert pch_read_by(tmp_path / "plain", tmp_path / "plain" / "build" / "warp.host.cpp", entry)
    assert not pch_read_by(tmp_path / "w32", tmp_path / "w32" / "build" / "warp.host.cpp", entry)
    outputs = [subprocess.run([str(p.executable)], capture_output=True, text=True, timeout=60).stdout
               for p in (plain, warp32)]
    assert outputs == ["warp 64\n", "warp 32\n"]


def test_a_header_beside_the_source_that_shadows_a_standard_one_keeps_the_precompiled_header_out(cache, tmp_path):
    source = write_program(tmp_path / "shadow")
    HostBackend().build(source, tmp_path / "shadow" / "build")
    [entry] = entries(cache)
    assert host_pch.usable_for(entry, [tmp_path / "shadow"])
    (tmp_path / "shadow" / "cstdint").write_text("#include_next <cstdint>\n")
    assert not host_pch.usable_for(entry, [tmp_path / "shadow"])
    assert not host_pch.usable_for(tmp_path / "no-such-entry", [tmp_path / "shadow"])


def test_a_damaged_precompiled_header_is_ignored_by_the_compiler(cache, tmp_path):
    backend = HostBackend()
    backend.build(write_program(tmp_path / "a"), tmp_path / "a" / "build")
    [entry] = entries(cache)
    host_pch.gch_path(entry).write_bytes(b"gpch.013" + os.urandom(4096))
    program = backend.build(write_program(tmp_path / "b"), tmp_path / "b" / "build")
    done = subprocess.run([str(program.executable)], capture_output=True, text=True, timeout=60)
    assert done.stdout == "warp 64\n"


def test_other_flags_are_another_entry_and_the_switch_turns_it_off(cache, tmp_path, monkeypatch):
    source = write_program(tmp_path / "p")
    HostBackend().build(source, tmp_path / "p" / "b1")
    HostBackend().build(source, tmp_path / "p" / "b2", flags=["-DUSER_FLAG=1"])
    assert len(entries(cache)) == 2
    monkeypatch.setenv("ROCM_PERF_HOST_PCH", "0")
    other = tmp_path / "other-cache"
    monkeypatch.setenv("ROCM_PERF_CACHE_DIR", str(other))
    HostBackend().build(source, tmp_path / "p" / "b3")
    assert not other.exists()


def test_the_wrapper_reads_it_and_its_dependency_file_names_the_runtime_not_the_cache(cache, tmp_path):
    source = write_program(tmp_path / "proj")
    hipcc = [sys.executable, "-m", "rocm_perf.backends.host_hipcc"]
    for _ in range(2):
        done = subprocess.run([*hipcc, "-O2", "-MD", "-MP", "-MF", "warp.d", "-c", "warp.cu", "-o", "warp.o"],
                              cwd=source.parent, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    assert len(entries(cache)) == 1
    deps = (source.parent / "warp.d").read_text()
    assert str(RUNTIME_DIR / "hip" / "hip_runtime.h") in deps and str(cache) not in deps
    link = subprocess.run([*hipcc, "warp.o", "-o", "warp"], cwd=source.parent, capture_output=True, text=True,
                          timeout=300)
    assert link.returncode == 0, link.stderr[-2000:]
    assert subprocess.run(["./warp"], cwd=source.parent, capture_output=True, text=True).stdout == "warp 64\n"


def test_only_gcc_gets_one(tmp_path):
    assert host_pch.gcc_identity("g++") is not None
    assert host_pch.gcc_identity("no-such-compiler-here") is None
    if shutil.which("clang++"):
        assert host_pch.gcc_identity("clang++") is None


def test_the_newest_entries_are_kept(tmp_path):
    parent = tmp_path / "host-pch"
    for i in range(host_pch.KEEP + 3):
        folder = parent / f"entry{i:02d}"
        folder.mkdir(parents=True)
        os.utime(folder, (1_000_000 + i, 1_000_000 + i))
    host_pch._prune(parent)
    kept = sorted(p.name for p in parent.iterdir())
    assert kept == [f"entry{i:02d}" for i in range(3, host_pch.KEEP + 3)]


def test_dependency_flags_stay_out_of_the_precompiled_headers_build():
    from rocm_perf.backends.host_hipcc import _without_dependency_flags

    flags = ["-O2", "-MD", "-MT", "a.o", "-MF", "a.d", "-MP", "-DX=1", "-Iinc"]
    assert _without_dependency_flags(flags) == ["-O2", "-DX=1", "-Iinc"]
