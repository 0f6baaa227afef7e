"""The host runtime's reproducible device addresses and its capture of one dispatch
(rocm_perf_host/device_memory.h, capture.h), on a real program built by the host backend:
tests/data/isolate/pointer_struct.cu, whose kernel takes a struct of device pointers, reads a table
of device pointers in device memory, increments a __device__ counter and reads a __constant__."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.backends.host import HostBackend
from rocm_perf.isolate.kernel_pattern import runtime_pattern
from rocm_perf.process import run

PROGRAM = DATA / "isolate" / "pointer_struct.cu"
BASE = 0x200000000000


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    return HostBackend().build(PROGRAM, tmp_path_factory.mktemp("pointer_struct")).executable


def addresses(stdout: str) -> list[int]:
    return [int(a, 16) for a in re.search(r"addresses (.*)", stdout).group(1).split()]


def capture(program: Path, tmp_path: Path, **env: str):
    out = tmp_path / "capture"
    out.mkdir()
    done = run([program], timeout=120, env={"ROCM_PERF_HOST_THREADS": "1", "ROCM_PERF_CAPTURE_DIR": str(out), **env})
    return done, out


def test_device_memory_is_at_the_same_addresses_in_every_run_from_the_fixed_base(program):
    first = run([program], timeout=120)
    second = run([program, "3000"], timeout=120)
    assert first.returncode == 0 and second.returncode == 0, first.stderr
    assert addresses(first.stdout) == addresses(second.stdout)
    # first fit at page offsets from the base: 12000 bytes take three pages
    assert addresses(first.stdout) == [BASE, BASE + 0x3000, BASE + 0x6000, BASE + 0x9000, BASE + 0xC000]


def test_without_the_region_memory_comes_from_the_heap_and_the_program_still_passes(program):
    done = run([program], timeout=120, env={"ROCM_PERF_HOST_DEVICE_BASE": "0"})
    assert done.returncode == 0, done.stderr
    assert all(not BASE <= a < BASE + (1 << 40) for a in addresses(done.stdout))


def test_the_chosen_dispatch_is_captured_with_its_memory_before_and_after(program, tmp_path):
    done, out = capture(program, tmp_path, ROCM_PERF_CAPTURE_KERNEL="scale_v", ROCM_PERF_CAPTURE_DISPATCH="2",
                        ROCM_PERF_CAPTURE_SYMBOLS="launches_seen,gain,no_such_variable")
    assert done.returncode == 0 and "PASS" in done.stdout, done.stderr
    cap = json.loads((out / "capture.json").read_text())
    assert cap["kernel"]["mangled"] == "_Z11scale_views5Viewsm" and cap["dispatch"] == 2
    assert cap["grid"] == [12, 1, 1] and cap["block"] == [256, 1, 1] and cap["shmem"] == 0 and cap["stream"] == 0
    assert cap["region"]["base"] == hex(BASE) and cap["refused"] == "" and cap["error"] == ""
    # The launch passed `n` (an int) to a size_t parameter: the bytes are the size_t the kernel got.
    assert [(a["type"], a["size"], a["offset"]) for a in cap["arguments"]] == [("Views", 32, 0), ("unsigned long", 8, 32)]
    raw = (out / "arguments.bin").read_bytes()
    in_, out_, table, n, _pad, count = struct.unpack("<QQQiiQ", raw)
    assert (n, count) == (3000, 3000)
    # Dispatch 2 reads the first dispatch's output and writes the original input buffer.
    assert (in_, out_, table) == (BASE + 0x3000, BASE, BASE + 0xC000)
    allocations = cap["allocations"]
    assert [int(a["address"], 16) for a in allocations] == [BASE, BASE + 0x3000, BASE + 0x6000, BASE + 0x9000, BASE + 0xC000]
    assert [a["changed"] for a in allocations] == [True, False, False, False, False]
    assert sorted(p.name for p in (out / "memory").iterdir()) == ["0.after", "0.before", "1.before", "2.before",
                                                                   "3.before", "4.before"]
    # The table holds the two extra buffers' addresses; the after-state is the kernel's arithmetic.
    assert struct.unpack("<QQ", (out / "memory" / "4.before").read_bytes()) == (BASE + 0x6000, BASE + 0x9000)
    src = np.frombuffer((out / "memory" / "1.before").read_bytes(), np.float32)
    e0 = np.frombuffer((out / "memory" / "2.before").read_bytes(), np.float32)
    e1 = np.frombuffer((out / "memory" / "3.before").read_bytes(), np.float32)
    i = np.arange(3000)
    want = (src * np.where(i % 2, 0.25, 2.0) + np.where(i % 2, e1, e0)).astype(np.float32)
    assert np.array_equal(np.frombuffer((out / "memory" / "0.after").read_bytes(), np.float32), want)
    symbols = {s["name"]: s for s in cap["symbols"]}
    assert symbols["launches_seen"] == {"name": "launches_seen", "found": True, "size": 4, "changed": True}
    assert struct.unpack("<I", (out / "symbols" / "0.before").read_bytes()) == (1,)
    assert struct.unpack("<I", (out / "symbols" / "0.after").read_bytes()) == (2,)
    assert struct.unpack("<ff", (out / "symbols" / "1.before").read_bytes()) == (2.0, 0.25)
    assert symbols["no_such_variable"]["found"] is False
    record = json.loads((out / "run.json").read_text())
    assert record["captured"] and record["launched"] == [
        {"mangled": "_Z11scale_views5Viewsm", "demangled": "scale_views(Views, unsigned long)", "launches": 3, "matches": True}]


def test_a_dispatch_beyond_the_last_is_not_captured_and_the_exit_record_says_how_many_there_were(program, tmp_path):
    done, out = capture(program, tmp_path, ROCM_PERF_CAPTURE_KERNEL="scale", ROCM_PERF_CAPTURE_DISPATCH="9")
    assert done.returncode == 0
    assert not (out / "capture.json").exists()
    record = json.loads((out / "run.json").read_text())
    assert (record["captured"], record["chosen"], record["chosen_launches"]) == (False, "_Z11scale_views5Viewsm", 3)


def test_a_pattern_that_matches_nothing_records_the_kernels_that_were_launched(program, tmp_path):
    done, out = capture(program, tmp_path, ROCM_PERF_CAPTURE_KERNEL="^transpose")
    assert done.returncode == 0
    record = json.loads((out / "run.json").read_text())
    assert record["chosen"] == "" and [k["matches"] for k in record["launched"]] == [False]


@pytest.mark.parametrize("kernel, matches", [
    (r"scale_\w+\(Views", True), (r"(?:scale|shift)_views\(", True), (r"scale_views\(Views, unsigned long\)$", True),
    (r"\bviews", False), (r"_Z\d+scale", True), (r"[a-z_]{11}\(", True), (r"s.*?v{2}", False), (r"^Views", False)])
def test_isolates_kernel_patterns_mean_to_the_runtime_what_they_mean_to_python(program, tmp_path, kernel, matches):
    """The runtime (glibc's POSIX expressions) gets kernel_pattern.runtime_pattern's rewrite of a
    Python expression: it matches the launched kernel exactly where Python's re does."""
    names = ("scale_views(Views, unsigned long)", "_Z11scale_views5Viewsm")
    assert any(re.search(kernel, name) for name in names) == matches
    done, out = capture(program, tmp_path, ROCM_PERF_CAPTURE_KERNEL=runtime_pattern(kernel))
    assert done.returncode == 0
    record = json.loads((out / "run.json").read_text())
    assert record["error"] == "" and [k["matches"] for k in record["launched"]] == [matches]


def test_a_pattern_the_runtime_cannot_read_is_its_exit_records_error(program, tmp_path):
    done, out = capture(program, tmp_path, ROCM_PERF_CAPTURE_KERNEL="scale(")
    assert done.returncode == 0
    record = json.loads((out / "run.json").read_text())
    assert record["error"].startswith("not a regular expression (POSIX extended)") and not record["captured"]


def test_a_snapshot_above_the_limit_is_refused_without_writing_memory(program, tmp_path):
    done, out = capture(program, tmp_path, ROCM_PERF_CAPTURE_KERNEL="scale", ROCM_PERF_CAPTURE_MAX_BYTES="1000")
    assert done.returncode == 0
    cap = json.loads((out / "capture.json").read_text())
    assert cap["refused"] == "snapshot" and cap["snapshot_bytes"] > 1000
    assert not (out / "memory").exists()


def test_without_the_region_a_capture_says_the_addresses_cannot_be_reproduced(program, tmp_path):
    done, out = capture(program, tmp_path, ROCM_PERF_CAPTURE_KERNEL="scale", ROCM_PERF_HOST_DEVICE_BASE="0")
    assert done.returncode == 0
    cap = json.loads((out / "capture.json").read_text())
    assert cap["refused"].startswith("addresses:") and cap["region"] is None
