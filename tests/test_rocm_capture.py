"""The rocm backend's capture, on a machine without a GPU: the interposer's GPU-free parts
(rocm_interposer/capture_core.h) built with g++ and run, their records read by isolate's own reader;
the interposer and a replay harness built with Debian's hipcc for an AMD target (they have never run
on a GPU); and doctor's reading of whether rocprofv3 offers kernel replay, against TEST DOUBLES of
its --help."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import DATA
from rocm_perf.backends.rocm_capture import (INTERPOSER_DIR, build_interposer, interposer_environment, parameter_sizes,
                                             replay_mode_status)
from rocm_perf.errors import RocmPerfError
from rocm_perf.isolate.capture import CaptureRun, checked_capture
from rocm_perf.isolate.extract import extract_kernel
from rocm_perf.isolate.harness import harness_source

DRIVER = r"""
#include "capture_core.h"
#include <cstdio>
int main() {
    using namespace rocm_perf_capture;
    std::string error;
    auto layout = parameter_layout("8:8,4:4,8:8,1:1,4:4", &error);
    std::printf("{\"layout\":[");
    for (std::size_t i = 0; i < layout.size(); ++i) std::printf("%s[%zu,%zu]", i ? "," : "", layout[i].offset, layout[i].size);
    std::printf("],\"bytes\":%zu,", layout_bytes(layout));
    parameter_layout("8:3", &error);
    std::printf("\"bad\":%s,", json_string(error).c_str());
    Request r;  // ROCM_PERF_CAPTURE_KERNEL=scale ROCM_PERF_CAPTURE_DISPATCH=2
    const bool picks[] = {r.chosen_launch("_Z4initPf", "init(float*)"), r.chosen_launch("_Z5scalePfi", "scale(float*, int)"),
                          r.chosen_launch("_Z5scalePfi", "scale(float*, int)"), r.chosen_launch("_Z5scalePfi", "scale(float*, int)")};
    std::printf("\"picks\":[%d,%d,%d,%d],", picks[0], picks[1], picks[2], picks[3]);
    std::map<std::string, std::string> names = {{"_Z4initPf", "init(float*)"}, {"_Z5scalePfi", "scale(float*, int)"}};
    std::printf("\"run\":%s,", r.run_record(names).c_str());
    Launch c;
    c.mangled = "_Z5scalePfi";
    c.demangled = "scale(float*, int)";
    c.dispatch = 2;
    c.parameters = parameter_layout("8:8,4:4", &error);
    c.allocations = {{0x7f0000000000ull, 4096, false, true}, {0x7f0000100000ull, 64, true, false}};
    c.max_bytes = 1 << 30;
    std::printf("\"capture\":%s}", capture_record(c).c_str());
}
"""


@pytest.fixture(scope="module")
def core(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("capture_core")
    (work / "driver.cpp").write_text(DRIVER)
    subprocess.run(["g++", "-std=c++17", "-O1", "-I", str(INTERPOSER_DIR), str(work / "driver.cpp"), "-o", str(work / "driver")],
                   check=True, capture_output=True, timeout=300)
    done = subprocess.run([str(work / "driver")], capture_output=True, text=True, check=True, timeout=60,
                          env={"ROCM_PERF_CAPTURE_KERNEL": "scale", "ROCM_PERF_CAPTURE_DISPATCH": "2"})
    return json.loads(done.stdout)


def test_the_argument_bytes_are_laid_out_like_a_kernarg_segment(core):
    assert core["layout"] == [[0, 8], [8, 4], [16, 8], [24, 1], [28, 4]] and core["bytes"] == 32
    assert "align a power of two" in core["bad"]


def test_the_second_launch_of_the_first_matching_kernel_is_the_one(core):
    assert core["picks"] == [0, 0, 1, 0]
    assert core["run"]["chosen"] == "_Z5scalePfi" and core["run"]["chosen_launches"] == 2 and core["run"]["captured"]
    assert [(k["mangled"], k["launches"], k["matches"]) for k in core["run"]["launched"]] == [
        ("_Z4initPf", 1, False), ("_Z5scalePfi", 3, True)]


def test_its_capture_record_reads_as_the_host_runtimes(core, tmp_path):
    (tmp_path / "arguments.bin").write_bytes(bytes(12))
    run = CaptureRun(tmp_path, core["capture"], core["run"], 0, "", "", False, 1.0)
    cap = checked_capture(run, kernel="scale", dispatch=2, what="prog", timeout=60)
    assert cap["region"]["kind"] == "gpu" and [a["offset"] for a in cap["arguments"]] == [0, 8]
    assert [(a["kind"], a["changed"]) for a in cap["allocations"]] == [("device", True), ("host", False)]
    beyond = CaptureRun(tmp_path, None, {**core["run"], "captured": False, "chosen_launches": 3}, 0, "", "", False, 1.0)
    with pytest.raises(RocmPerfError, match=r"--dispatch 5 is beyond the last: scale\(float\*, int\) was launched 3 times"):
        checked_capture(beyond, kernel="scale", dispatch=5, what="prog", timeout=60)


def test_the_environment_needs_every_parameters_size():
    assert parameter_sizes([(8, 8), (4, 4)]) == "8:8,4:4"
    env = interposer_environment(Path("/x/lib.so"), [(8, 8)])
    assert env == {"LD_PRELOAD": "/x/lib.so", "ROCM_PERF_CAPTURE_ARG_SIZES": "8:8"}
    with pytest.raises(RocmPerfError, match="template kernel"):
        parameter_sizes([(8, 8), (-3, -3)])


@pytest.mark.hipcc
def test_the_interposer_builds_with_hipcc_and_intercepts_the_allocations_and_launches(hipcc, tmp_path):
    library = build_interposer(tmp_path)
    exported = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True).stdout
    for name in ("hipMalloc", "hipMallocManaged", "hipExtMallocWithFlags", "hipHostMalloc", "hipFree", "hipHostFree",
                 "hipLaunchKernel", "hipModuleLaunchKernel", "hipExtLaunchKernel"):
        assert f" T {name}\n" in exported, name


@pytest.mark.hipcc
def test_a_replay_harness_builds_with_hipcc_for_an_amd_target(hipcc, tmp_path):
    """The GPU half of replay_support.h (hipMemAddressReserve ...) compiles; it has never run."""
    source = DATA / "isolate" / "pointer_struct.cu"
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / source.name).write_bytes(extract_kernel(source, [], "_Z11scale_views5Viewsm", source.parent).data)
    shutil.copy(Path(INTERPOSER_DIR).parent.parent / "isolate" / "harness" / "replay_support.h", tmp_path)
    snapshot = {"file": "snapshots/a.gz", "size": 12000}
    doc = {"dispatch": 2, "origin": {"display": "pointer_struct.cu"}, "source": {"rel": source.name},
           "kernel": {"demangled": "scale_views(Views, unsigned long)", "call": "scale_views", "arguments_as": "parameters"},
           "launch": {"grid": [12, 1, 1], "block": [256, 1, 1], "shmem": 0, "cooperative": False},
           "allocations": [{"address": "0x7f0000000000", "size": 12000, "kind": "device", "before": snapshot, "after": snapshot}],
           "variables": [{"spelling": "launches_seen", "size": 4, "before": snapshot, "after": None}],
           "arguments": [{"offset": 0, "size": 32, "type": "Views"}, {"offset": 32, "size": 8, "type": "unsigned long"}],
           "region": {"base": "0x0"}, "arguments_file": {"file": "snapshots/arguments.bin.gz", "size": 40}}
    (tmp_path / "harness.hip").write_text(harness_source(doc))
    done = subprocess.run([hipcc, "-std=c++17", "--offload-arch=gfx90a", "-I", str(tmp_path), "-c", str(tmp_path / "harness.hip"),
                           "-o", str(tmp_path / "harness.o")], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HIP_PLATFORM": "amd"})
    assert done.returncode == 0, done.stderr[-3000:]


def fake_rocprofv3(tmp_path: Path, help_text: str) -> str:
    """A TEST DOUBLE of rocprofv3's --help (the real one needs ROCm 7 installed)."""
    path = tmp_path / "rocprofv3"
    path.write_text("#!/bin/sh\ncat <<'EOF'\n" + help_text + "\nEOF\n")
    path.chmod(0o755)
    return str(path)


def test_doctor_says_whether_rocprofv3_offers_kernel_replay(tmp_path):
    with_replay = fake_rocprofv3(tmp_path, "usage: rocprofv3 [options] -- app\n  --replay-mode {application,kernel}\n"
                                           "  --kernel-replay-beta-enabled\n  --kernel-trace")
    ok, detail = replay_mode_status(with_replay)
    assert ok and "--replay-mode kernel with --kernel-replay-beta-enabled" in detail and "rocprofiler-sdk" in detail
    (tmp_path / "old").mkdir()
    without = fake_rocprofv3(tmp_path / "old", "usage: rocprofv3 [options] -- app\n  --kernel-trace\n  --pmc")
    ok, detail = replay_mode_status(without)
    assert not ok and "does not list --replay-mode" in detail
