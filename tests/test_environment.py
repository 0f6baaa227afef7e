"""Environment capture: real values from this machine, nulls (never errors) where nothing answers."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import socket
import subprocess
import sys

from conftest import DATA, ROOT
from rocm_perf import __version__
from rocm_perf.backends.environment import capture_environment, compare_environments

DOUBLES = ROOT / "tests" / "doubles"
SOURCE = DATA / "compile" / "resources.cu"


def test_capture_reads_this_machine(hipcc, monkeypatch):
    monkeypatch.delenv("HIP_PLATFORM", raising=False)  # capture must ask hipcc about AMD on its own
    env = capture_environment(source=SOURCE, command=["rocm-perf", "profile", str(SOURCE)])
    json.dumps(env)  # metadata.json must be able to hold it
    assert env["hostname"] == socket.gethostname()
    assert env["kernel_release"] == os.uname().release
    assert env["cpu"]["count"] == os.cpu_count()
    assert env["command"] == ["rocm-perf", "profile", str(SOURCE)]
    assert env["source"]["sha256"] == hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    assert env["rocm_perf_version"] == __version__
    assert env["rocm"]["hipcc"].startswith("HIP version: ")
    assert "clang version" in env["compilers"]["hipcc"]
    assert env["compilers"]["cxx"]  # g++ is the host compiler here
    assert env["backend"] is None  # none given


def test_git_revision_of_the_source_tree():
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    env = capture_environment(source=SOURCE)
    if head.returncode != 0:  # an exported tree without .git
        assert env["git"] is None
        return
    assert env["git"]["revision"] == head.stdout.strip()
    assert isinstance(env["git"]["dirty"], bool)


def test_gpu_agents_and_rocm_versions_from_the_tools(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rocprofv3").symlink_to(DOUBLES / "fake_rocprofv3")
    (bin_dir / "rocminfo").symlink_to(DOUBLES / "fake_rocminfo")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    rocm = tmp_path / "rocm"
    (rocm / ".info").mkdir(parents=True)
    (rocm / ".info" / "version").write_text("7.0.0-38\n")
    monkeypatch.setenv("ROCM_PATH", str(rocm))
    from rocm_perf.backends.rocm import RocmBackend

    env = capture_environment(backend=RocmBackend())
    assert env["rocm"]["rocprofv3"] == "rocprofv3 (test double) ROCm version 7.0.0"
    assert env["rocm"]["version_file"] == "7.0.0-38"
    assert env["rocm"]["path"] == str(rocm)
    assert [a["arch"] for a in env["gpu_agents"]] == ["gfx942", "gfx942"]
    assert env["gpu_agents"][0] == {
        "arch": "gfx942",
        "product": "AMD Instinct MI300X",
        "cu_count": 304,
        "max_clock_mhz": 2100,
        "source": "rocminfo",
    }
    assert env["backend"] == {"name": "rocm", "gpu_timings": True, "device": "AMD Instinct MI300X (gfx942) x2"}


def test_nothing_installed_gives_nulls_not_errors(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.delenv("HIPCC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    env = capture_environment(source=tmp_path / "missing.cu")
    assert env["rocm"]["rocprofv3"] is None and env["rocm"]["hipcc"] is None
    assert env["compilers"] == {"cxx": None, "hipcc": None}
    assert env["gpu_agents"] == []
    assert env["gpu_clocks"] is None
    assert env["source"]["sha256"] is None  # unreadable source: null, no error
    assert env["git"] is None
    json.dumps(env)


def test_compare_warns_on_each_difference():
    a = {
        "hostname": "node-1",
        "gpu_agents": [{"arch": "gfx942", "product": "AMD Instinct MI300X"}],
        "rocm": {"rocprofv3": "7.0.0", "version_file": None},
        "captured_at": "2026-01-01T00:00:00+00:00",
        "command": ["rocm-perf", "a"],
    }
    assert compare_environments(a, copy.deepcopy(a)) == []
    b = copy.deepcopy(a)
    b["gpu_agents"] = [{"arch": "gfx90a", "product": "AMD Instinct MI210"}]
    b["rocm"]["rocprofv3"] = "6.4.1"
    b["captured_at"] = "2026-02-01T00:00:00+00:00"  # times always differ: not a warning
    differences = compare_environments(a, b)
    assert differences == [
        "gpu_agents differs: [AMD Instinct MI300X (gfx942)] vs [AMD Instinct MI210 (gfx90a)]",
        "rocm.rocprofv3 differs: '7.0.0' vs '6.4.1'",
    ]
    b["hostname"] = None
    assert "hostname differs: 'node-1' vs None" in compare_environments(a, b)


def test_resuming_in_another_environment_names_what_changed(tmp_path):
    import copy
    import json

    from rocm_perf.backends.environment import capture_environment
    from rocm_perf.optimize.command import environment_changes

    source = tmp_path / "k.cu"
    source.write_text("__global__ void k() {}\n")
    recorded = capture_environment(source=source, command=["rocm-perf", "optimize", str(source)])
    (tmp_path / "metadata.json").write_text(json.dumps(recorded, default=str))

    assert environment_changes(tmp_path, copy.deepcopy(recorded)) == []
    moved = copy.deepcopy(recorded)
    moved["hostname"] = "another-node"
    source.write_text("__global__ void k() { }\n")  # the user edited the file meanwhile
    moved["source"] = capture_environment(source=source)["source"]
    changes = environment_changes(tmp_path, moved)
    assert any(c.startswith("hostname differs") and "another-node" in c for c in changes)
    assert any(c.startswith("source.sha256 differs") for c in changes)
    assert environment_changes(tmp_path / "never-written", recorded) == []
