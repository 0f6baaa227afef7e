"""A machine without clang's resource headers: every command that needs libclang stops before any
work, with the one command to run; with the ziglang wheel's headers alone the parse works.

The machine is made to have no clang and no hipcc's llvm for real: the tests run rocm-perf in a
mount namespace (as root, `unshare --mount`) where /usr/lib/llvm-*, /opt/rocm and the ziglang
package are empty directories, so neither a clang on PATH (its /usr/bin links dangle), nor an llvm
directory, nor the wheel can be found."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import IN_CI, KERNELS

from rocm_perf.clang_resources import HEADERS_REQUIREMENT, packaged_resource_dir


def _can_hide() -> str:
    if os.geteuid() != 0:
        return "needs root for a mount namespace (unshare --mount)"
    if shutil.which("unshare") is None:
        return "no unshare (util-linux)"
    done = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    return "" if done.returncode == 0 else f"unshare --mount refused: {done.stderr.strip()}"


def without_clang(argv: list[str], *, keep_wheel: bool, cwd: Path) -> subprocess.CompletedProcess:
    """Run `python -m rocm_perf argv` where no clang resource directory exists but, with
    `keep_wheel`, the ziglang wheel's."""
    why = _can_hide()
    if why:
        if IN_CI:
            pytest.fail(why + ": CI runs as root")
        pytest.skip(why)
    hidden = [str(p) for p in Path("/usr/lib").glob("llvm-*")] + [p for p in ("/opt/rocm",) if Path(p).is_dir()]
    wheel = packaged_resource_dir()
    if not keep_wheel and wheel is not None:
        hidden.append(str(wheel.parent))
    mounts = " && ".join(f"mount -t tmpfs none {shlex.quote(p)}" for p in hidden) or "true"
    command = f"{mounts} && exec {shlex.quote(sys.executable)} -m rocm_perf {shlex.join(argv)}"
    env = {k: v for k, v in os.environ.items() if k not in ("ROCM_PERF_CLANG_RESOURCE_DIR", "HIPCC", "ROCM_PATH")}
    # a timeout only so that a hang cannot stall the suite; how long it takes is not a test
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", command],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_optimize_stops_before_any_work_naming_the_command_to_install(tmp_path):
    source = tmp_path / "stencil2d.cu"
    shutil.copy(KERNELS / "stencil2d.cu", source)
    out = tmp_path / "runs"
    done = without_clang(["optimize", str(source), "--backend", "host", "--out", str(out), "--new"],
                         keep_wheel=False, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "no clang resource directory found" in lines[0]
    assert f"-m pip install '{HEADERS_REQUIREMENT}'" in lines[0] and "apt-get install -y clang" in lines[0]
    assert not out.exists()  # no run directory: nothing was built or measured
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stencil2d.cu"]


@pytest.mark.parametrize("command", [["loops"], ["rewrite", "--loop", "stencil_2d:stencil_2d:1:37",
                                                  "--rule", "unroll_pragma", "--factor", "2"]])
def test_loops_and_rewrite_stop_with_the_same_line(tmp_path, command):
    done = without_clang([command[0], str(KERNELS / "stencil2d.cu"), *command[1:]], keep_wheel=False, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert f"pip install '{HEADERS_REQUIREMENT}'" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_isolate_stops_before_building_the_program_with_the_same_line(tmp_path):
    out = tmp_path / "repro"
    done = without_clang(["isolate", str(KERNELS / "stencil2d.cu"), "--kernel", "stencil_2d", "--out", str(out),
                          "--backend", "host"], keep_wheel=False, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert f"pip install '{HEADERS_REQUIREMENT}'" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "isolate: building" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # no reproducer, no staging folder


def test_the_ziglang_wheels_headers_alone_let_libclang_parse_hip(tmp_path):
    if packaged_resource_dir() is None:
        pytest.skip(f"{HEADERS_REQUIREMENT} is not installed (make installs it: the clang-headers extra)")
    done = without_clang(["loops", str(KERNELS / "stencil2d.cu"), "--json"], keep_wheel=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"stencil_2d:stencil_2d:1:37"' in done.stdout
    doctor = without_clang(["doctor"], keep_wheel=True, cwd=tmp_path)
    assert "ziglang/lib" in doctor.stdout
