"""The host runtime prebuilt (host_prebuilt.py): its precompiled header and its object, made once per
compiler and flags, used in place of the runtime's headers and functions, and never changing what
a program does."""

from __future__ import annotations

import os
import shutil
import sys
import subprocess
from pathlib import Path

import pytest

from rocm_perf.backends import host_prebuilt
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
    folder = cache / "host-pch"
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def write_program(folder: Path, before: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "again.h").write_text("#pragma once\n#include <hip/hip_runtime.h>  // a second include\n")
    source = folder / "warp.cu"
    source.write_text(WARP_PROGRAM.format(before=before))
    return source


def first_build(backend: HostBackend, folder: Path, flags: list[str] | None = None) -> None:
    """A build with these flags that makes no entry (the first leaves a mark; the second makes it)."""
    backend.build(write_program(folder), folder / "build", flags=flags)


def pch_read_by(compile_dir: Path, unit: Path, pch: Path, *defines: str) -> bool:
    """Whether GCC reads the precompiled header for `unit` (its -H trace marks a used one with '!')."""
    done = subprocess.run(["g++", "-std=c++17", "-O2", *defines, "-I", str(pch), "-I", str(RUNTIME_DIR), "-I",
                           str(compile_dir), "-H", "-fsyntax-only", "-x", "c++", str(unit)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return f"! {host_prebuilt.gch_path(pch)}" in done.stderr


def test_the_second_build_with_its_flags_makes_the_entry_and_the_next_build_reads_it(cache, tmp_path):
    backend = HostBackend()
    once = backend.build(KERNELS / "stencil2d.cu", tmp_path / "once")
    assert entries(cache) == []  # flags built with once pay nothing for an entry never read
    assert "host-pch" not in once.build_log.read_text()
    program = backend.build(KERNELS / "stencil2d.cu", tmp_path / "one")
    [entry] = entries(cache)
    assert host_prebuilt.gch_path(entry).stat().st_size > 1_000_000
    names = (entry / "headers.txt").read_text().split()
    assert "vector" in names and "rocm_perf_host/runtime.h" in names
    made = host_prebuilt.gch_path(entry).stat().st_mtime_ns
    again = backend.build(KERNELS / "stencil2d.cu", tmp_path / "two")
    assert entries(cache) == [entry] and host_prebuilt.gch_path(entry).stat().st_mtime_ns == made
    unit = tmp_path / "two" / "stencil2d.host.cpp"
    assert pch_read_by(KERNELS, unit, entry, "-DROCM_PERF_HOST_NO_WARP_OPS=1", host_prebuilt.PREBUILT_DEFINE)
    for built in (once, program, again):
        done = subprocess.run([str(built.executable)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "PASS" in done.stdout


def test_a_macro_the_runtime_reads_defined_first_makes_gcc_read_the_headers_instead(cache, tmp_path):
    backend = HostBackend()
    first_build(backend, tmp_path / "first")
    plain = backend.build(write_program(tmp_path / "plain"), tmp_path / "plain" / "build")
    warp32 = backend.build(write_program(tmp_path / "w32", before="#define ROCM_PERF_WARP_SIZE 32\n"),
                           tmp_path / "w32" / "build")
    [entry] = entries(cache)  # the same flags: one precompiled header for both
    prebuilt = host_prebuilt.PREBUILT_DEFINE
    assert pch_read_by(tmp_path / "plain", tmp_path / "plain" / "build" / "warp.host.cpp", entry, prebuilt)
    assert not pch_read_by(tmp_path / "w32", tmp_path / "w32" / "build" / "warp.host.cpp", entry, prebuilt)
    outputs = [subprocess.run([str(p.executable)], capture_output=True, text=True, timeout=60).stdout
               for p in (plain, warp32)]
    assert outputs == ["warp 64\n", "warp 32\n"]
    # The object was built for 64-lane warps: the 32-lane unit failed to link against it, naming
    # the configuration, and was built again with the whole runtime.
    plain_log, warp32_log = plain.build_log.read_text(), warp32.build_log.read_text()
    assert plain_log.count("$ ") == 1 and str(host_prebuilt.object_path(entry)) in plain_log
    assert warp32_log.count("$ ") == 2
    assert str(host_prebuilt.object_path(entry)) not in warp32_log.split("$ ")[-1]


def test_a_unit_built_against_the_object_only_declares_the_runtimes_functions_and_runs_the_same(
        cache, tmp_path, monkeypatch):
    from rocm_perf.trace.rocpd_read import read_rocpd

    backend = HostBackend()
    source = KERNELS / "stencil2d.cu"
    backend.build(source, tmp_path / "first")  # makes no entry (see the first test)
    prebuilt = backend.build(source, tmp_path / "prebuilt")
    [entry] = entries(cache)
    runtime_object = host_prebuilt.object_path(entry)
    defined = subprocess.run(["nm", "--defined-only", "-C", str(runtime_object)], capture_output=True,
                             text=True).stdout
    assert "rocm_perf_host::run_queued_launch(" in defined and "rocm_perf_host::Runtime::enqueue(" in defined
    unit = tmp_path / "prebuilt" / "stencil2d.host.cpp"
    obj = tmp_path / "unit.o"
    subprocess.run(["g++", "-std=c++17", "-O2", "-DROCM_PERF_HOST_NO_WARP_OPS=1", *host_prebuilt.unit_flags(entry),
                    "-I", str(RUNTIME_DIR), "-I", str(KERNELS), "-c", "-x", "c++", str(unit), "-o", str(obj)],
                   check=True, capture_output=True)
    symbols = subprocess.run(["nm", "-C", str(obj)], capture_output=True, text=True).stdout.splitlines()
    undefined = {line.split(" U ", 1)[1] for line in symbols if " U " in line}
    assert any(u.startswith("rocm_perf_host::run_queued_launch(") for u in undefined)
    assert not any("Runtime::enqueue(" in line for line in symbols if " U " not in line)

    monkeypatch.setenv("ROCM_PERF_PREBUILT_RUNTIME", "0")
    whole = backend.build(source, tmp_path / "whole")
    assert str(runtime_object) not in whole.build_log.read_text()

    def dispatches(program, name):
        result = backend.profile([str(program.executable)], tmp_path / name)
        assert result.returncode == 0 and "PASS" in result.stdout, result.stderr[-2000:]
        [database] = result.databases
        k = read_rocpd(database)
        return result.stdout, [(k.symbol_name(i), tuple(k.grid[i]), tuple(k.workgroup[i])) for i in range(len(k))]

    assert dispatches(prebuilt, "run-prebuilt") == dispatches(whole, "run-whole")


def test_builds_in_threads_of_one_process_wait_for_one_maker_of_the_entry(cache, tmp_path):
    # test_corpus builds two programs at a time: the two once wrote the same temporary .gch, and
    # GCC crashed reading the result (an internal compiler error in the user's first line).
    from concurrent.futures import ThreadPoolExecutor

    backend = HostBackend()
    first_build(backend, tmp_path / "first")
    sources = [write_program(tmp_path / f"t{i}") for i in range(2)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        programs = list(pool.map(lambda s: backend.build(s, s.parent / "build"), sources))
    [entry] = entries(cache)
    assert sorted(p.name for p in entry.iterdir() if p.name.startswith(".")) == []  # no temporary left
    for program in programs:
        assert str(host_prebuilt.object_path(entry)) in program.build_log.read_text()
        done = subprocess.run([str(program.executable)], capture_output=True, text=True, timeout=60)
        assert done.stdout == "warp 64\n"


def test_a_header_beside_the_source_that_shadows_a_standard_one_keeps_the_precompiled_header_out(cache, tmp_path):
    source = write_program(tmp_path / "shadow")
    first_build(HostBackend(), tmp_path / "first")
    HostBackend().build(source, tmp_path / "shadow" / "build")
    [entry] = entries(cache)
    assert host_prebuilt.usable_for(entry, [tmp_path / "shadow"])
    (tmp_path / "shadow" / "cstdint").write_text("#include_next <cstdint>\n")
    assert not host_prebuilt.usable_for(entry, [tmp_path / "shadow"])
    assert not host_prebuilt.usable_for(tmp_path / "no-such-entry", [tmp_path / "shadow"])


def test_a_damaged_precompiled_header_is_ignored_by_the_compiler(cache, tmp_path):
    backend = HostBackend()
    first_build(backend, tmp_path / "first")
    backend.build(write_program(tmp_path / "a"), tmp_path / "a" / "build")
    [entry] = entries(cache)
    host_prebuilt.gch_path(entry).write_bytes(b"gpch.013" + os.urandom(4096))
    program = backend.build(write_program(tmp_path / "b"), tmp_path / "b" / "build")
    done = subprocess.run([str(program.executable)], capture_output=True, text=True, timeout=60)
    assert done.stdout == "warp 64\n"


def test_other_flags_are_another_entry_and_the_switch_turns_it_off(cache, tmp_path, monkeypatch):
    source = write_program(tmp_path / "p")
    for n in range(2):
        HostBackend().build(source, tmp_path / "p" / f"a{n}")
        HostBackend().build(source, tmp_path / "p" / f"b{n}", flags=["-DUSER_FLAG=1"])
    assert len(entries(cache)) == 2
    monkeypatch.setenv("ROCM_PERF_PREBUILT_RUNTIME", "0")
    other = tmp_path / "other-cache"
    monkeypatch.setenv("ROCM_PERF_CACHE_DIR", str(other))
    HostBackend().build(source, tmp_path / "p" / "b3")
    assert not other.exists()


def test_candidates_in_their_own_folders_share_one_entry_and_a_shadowing_include_folder_keeps_it_out(
        cache, tmp_path):
    # optimize builds each candidate in its own folder with its own -fmacro-prefix-map (and a
    # project's copies have their own -I): an entry per candidate cost 12 s per build.
    from rocm_perf.optimize.build_cache import location_flags

    backend = HostBackend()
    first_build(backend, tmp_path / "first", flags=["-DUSER_FLAG=1"])
    programs = []
    for name in ("cand1", "cand2"):
        source = write_program(tmp_path / name)
        (tmp_path / name / "include").mkdir()
        flags = [*location_flags(source), "-I", str(tmp_path / name / "include"), "-DUSER_FLAG=1"]
        programs.append(backend.build(source, tmp_path / name / "build", flags=flags))
    [entry] = entries(cache)
    for program in programs:
        assert str(host_prebuilt.object_path(entry)) in program.build_log.read_text()
    # An -I folder holding a header the runtime reads would change what the runtime compiles to:
    # that build goes without the prebuilt runtime (and still builds and runs).
    shadow = write_program(tmp_path / "shadowed")
    (tmp_path / "shadowed" / "include").mkdir()
    (tmp_path / "shadowed" / "include" / "cstdint").write_text("#include_next <cstdint>\n")
    program = backend.build(shadow, tmp_path / "shadowed" / "build",
                            flags=["-I", str(tmp_path / "shadowed" / "include"), "-DUSER_FLAG=1"])
    assert entries(cache) == [entry] and str(entry) not in program.build_log.read_text()
    for built in (*programs, program):
        done = subprocess.run([str(built.executable)], capture_output=True, text=True, timeout=60)
        assert done.stdout == "warp 64\n"


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
    assert host_prebuilt.gcc_identity("g++") is not None
    assert host_prebuilt.gcc_identity("no-such-compiler-here") is None
    if shutil.which("clang++"):
        assert host_prebuilt.gcc_identity("clang++") is None


def test_the_newest_entries_are_kept(tmp_path):
    parent = tmp_path / "host-pch"
    for i in range(host_prebuilt.KEEP + 3):
        folder = parent / f"entry{i:02d}"
        folder.mkdir(parents=True)
        os.utime(folder, (1_000_000 + i, 1_000_000 + i))
    host_prebuilt._prune(parent)
    kept = sorted(p.name for p in parent.iterdir())
    assert kept == [f"entry{i:02d}" for i in range(3, host_prebuilt.KEEP + 3)]


def test_dependency_flags_stay_out_of_the_precompiled_headers_build():
    from rocm_perf.backends.host_hipcc import _without_dependency_flags

    flags = ["-O2", "-MD", "-MT", "a.o", "-MF", "a.d", "-MP", "-DX=1", "-Iinc"]
    assert _without_dependency_flags(flags) == ["-O2", "-DX=1", "-Iinc"]
