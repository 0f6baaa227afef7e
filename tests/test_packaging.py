"""An installed copy works, not only the editable checkout: build the wheel, install it into a fresh
virtualenv outside the checkout, and run doctor, loops, profile and a short optimize from another
directory. This is how a user who ran `pip install rocm-perf` meets the tool."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "data" / "programs" / "unroll_wins.cu"

pytestmark = pytest.mark.slow


def run(argv: list, cwd: Path, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv} -> {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict]:
    """(bin directory of a fresh virtualenv holding only the built wheel and its dependencies, env)."""
    base = tmp_path_factory.mktemp("installed")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROCM_PERF_RULES_DIR", "VIRTUAL_ENV")}
    # Build from a copy: a stale build/ in the checkout would leak deleted modules into the wheel.
    tree = base / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "build", "site", "*.egg-info",
                                                                "__pycache__", ".pytest_cache", ".hypothesis"))
    wheels = base / "wheels"
    run([sys.executable, "-m", "pip", "wheel", tree, "--no-deps", "--quiet", "-w", wheels], cwd=base, env=env)
    (wheel,) = wheels.glob("rocm_perf-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    # The data an installed copy cannot work without.
    for needed in ("rocm_perf/rewrites/unroll_manual.j2", "rocm_perf/rewrites/unroll_pragma.j2",
                   "rocm_perf/report/templates/run.html.j2", "rocm_perf/backends/host_runtime/hip/hip_runtime.h",
                   "rocm_perf/source/stub/hip/hip_runtime.h", "rocm_perf/backends/host_runtime/roctracer/roctx.h",
                   "rocm_perf/backends/host_runtime/rocprofiler-sdk-roctx/roctx.h",
                   "rocm_perf/roctx_declarations/roctx_api.h",
                   "rocm_perf/roctx_declarations/rocprofiler-sdk-roctx/roctx.h",
                   "rocm_perf/analysis/arch/gfx942.toml", "rocm_perf/analysis/rules/bottlenecks.toml",
                   "rocm_perf/analysis/rules/hotspots.toml", "rocm_perf/backends/host_runtime/rocm_perf_host/sampler.h",
                   "rocm_perf/backends/host_runtime/rocm_perf_host/dispatch_clocks.h",
                   "rocm_perf/backends/host_runtime/rocm_perf_host/device_memory.h",
                   "rocm_perf/backends/host_runtime/rocm_perf_host/capture.h",
                   "rocm_perf/isolate/harness/replay_support.h",
                   "rocm_perf/backends/rocm_interposer/interposer.cpp",
                   "rocm_perf/backends/rocm_interposer/capture_core.h",
                   "rocm_perf/backends/host_runtime/rocm_perf_host/thrust_trace.h",
                   "rocm_perf/backends/host_runtime/hipcub/hipcub.hpp",
                   "rocm_perf/backends/host_runtime/hipblas/hipblas.h",
                   "rocm_perf/backends/host_runtime/hiprand/hiprand_kernel.h",
                   "rocm_perf/backends/host_runtime/rccl/rccl.h",
                   "rocm_perf/backends/host_runtime/cmake/lib/cmake/rocthrust/rocthrust-config.cmake",
                   "rocm_perf/agents/SKILL.md"):
        assert needed in names, f"{needed} missing from {wheel.name}"
    venv = base / "venv"
    run([sys.executable, "-m", "venv", venv], cwd=base, env=env)
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel], cwd=base, env=env)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return venv / "bin", env


@pytest.mark.long
def test_the_installed_package_imports_from_site_packages_not_the_checkout(installed, tmp_path):
    bin_dir, env = installed
    done = run([bin_dir / "python", "-c", "import rocm_perf; print(rocm_perf.__file__)"], cwd=tmp_path, env=env)
    assert "site-packages" in done.stdout and str(ROOT) not in done.stdout


@pytest.mark.long
def test_doctor_loops_profile_and_a_short_optimize_run_from_another_directory(installed, tmp_path):
    bin_dir, env = installed
    tool = bin_dir / "rocm-perf"
    work = tmp_path / "elsewhere"
    work.mkdir()
    src = work / "prog.cu"
    shutil.copy(PROGRAM, src)
    before = src.read_bytes()

    run([tool, "doctor"], cwd=work, env=env)

    loops = json.loads(run([tool, "loops", "prog.cu", "--json"], cwd=work, env=env).stdout)
    rules = {rule["name"] for loop in loops["loops"] for rule in loop["rules"]}
    assert {"unroll_manual", "unroll_pragma"} <= rules, "the shipped rules were not found"

    run([tool, "profile", "prog.cu", "--backend", "host", "--rounds", "1", "--out", "prof"], cwd=work, env=env)
    assert list((work / "prof").rglob("*.db")), "profile wrote no database"

    run([tool, "optimize", "prog.cu", "--backend", "host", "--compile-check", "off", "--rules", "unroll_manual",
         "--factors", "4", "--max-trials", "1", "--aa-rounds", "5", "--max-rounds", "10", "--metric", "median-path",
         "--out", "runs", "--quiet"], cwd=work, env=env)
    (summary,) = (work / "runs").glob("*/summary.json")
    assert json.loads(summary.read_text())["state"] == "done"
    assert src.read_bytes() == before, "optimize wrote the user's source"


def test_analyze_from_the_installed_copy(installed, tmp_path):
    """The architecture tables and bottleneck rules are package data: analyze works from anywhere."""
    bin_dir, env = installed
    workload = tmp_path / "MI300X_vcopy"
    shutil.copytree(ROOT / "tests" / "data" / "rocprof-compute" / "MI300X_vcopy", workload)
    done = run([bin_dir / "rocm-perf", "analyze", workload, "--out", "an"], cwd=tmp_path, env=env)
    assert "latency" in done.stdout
    data = json.loads((tmp_path / "an" / "analysis.json").read_text())
    assert data["kernels"][0]["bound"]["kind"] == "latency" and (tmp_path / "an" / "roofline.svg").is_file()


def test_the_installed_copy_installs_its_skill_and_answers_as_an_mcp_server(installed, tmp_path):
    """SKILL.md is package data (skill show / install), and `rocm-perf mcp` starts from the wheel
    with its dependency (the MCP SDK) and lists its tools to the real client."""
    bin_dir, env = installed
    shown = run([bin_dir / "rocm-perf", "skill", "show"], cwd=tmp_path, env=env).stdout
    assert shown.startswith("---\nname: rocm-perf\n")
    done = run([bin_dir / "rocm-perf", "skill", "install", "--dir", tmp_path / "skills"], cwd=tmp_path, env=env)
    assert (tmp_path / "skills" / "SKILL.md").read_text() == shown and "skills/SKILL.md" in done.stdout
    client = (
        "import anyio, sys\n"
        "from mcp import ClientSession, StdioServerParameters, stdio_client\n"
        "async def main():\n"
        "    p = StdioServerParameters(command=sys.argv[1], args=['mcp'], cwd=sys.argv[2])\n"
        "    async with stdio_client(p) as (r, w):\n"
        "        async with ClientSession(r, w) as s:\n"
        "            await s.initialize()\n"
        "            print(sorted(t.name for t in (await s.list_tools()).tools))\n"
        "anyio.run(main)\n")
    listed = run([bin_dir / "python", "-c", client, bin_dir / "rocm-perf", tmp_path], cwd=tmp_path, env=env).stdout
    assert "'try_patch'" in listed and "'job_status'" in listed
