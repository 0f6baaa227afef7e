"""Environment capture for `metadata.json` and `profile_metadata.json`, and comparing two captures.

Every field that cannot be read is None: capturing never fails because a tool is missing.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

from rocm_perf import __version__
from rocm_perf import process
from rocm_perf.backends.gpu_agents import find_gpu_agents
from rocm_perf.backends.hipcc import amd_env, find_hipcc, find_rocm_tool, rocm_root

_TOOL_TIMEOUT = 20

# Fields whose difference between two runs is worth a warning (dotted paths into the capture).
COMPARED_FIELDS = [
    "hostname",
    "kernel_release",
    "cpu.model",
    "cpu.count",
    "gpu_agents",
    "rocm.version_file",
    "rocm.rocprofv3",
    "rocm.hipcc",
    "compilers.cxx",
    "compilers.hipcc",
    "container.image",
    "container.runtime",
    "source.sha256",
    "git.revision",
    "git.dirty",
    "rocm_perf_version",
    "backend.name",
    "backend.device",
    "python",
]


def capture_environment(*, source: Path | None = None, backend=None, command: list[str] | None = None) -> dict:
    """What this run ran on and with: machine, GPUs, ROCm, compilers, container, command, source, versions."""
    return {
        "captured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": _safe(socket.gethostname),
        "kernel_release": _safe(lambda: platform.uname().release or None),
        "os": _os_release(),
        "cpu": {"model": _cpu_model(), "count": os.cpu_count()},
        "gpu_agents": _gpu_agents(),
        "gpu_clocks": _gpu_clocks(),
        "rocm": {
            "path": _safe(lambda: str(rocm_root()) if rocm_root() else None),
            "version_file": _rocm_version_file(),
            "rocprofv3": _tool_version(find_rocm_tool("rocprofv3"), ["--version"]),
            "hipcc": _hipcc_version(),
        },
        "compilers": {
            "cxx": _tool_version(_host_cxx(), ["--version"]),
            "hipcc": _tool_version(find_hipcc(), ["--version"], pick=r"clang version .*", env=amd_env()),
        },
        "container": _container(),
        "command": list(command) if command is not None else list(sys.argv),
        "source": _source(source),
        "git": _git(source),
        "rocm_perf_version": __version__,
        "python": platform.python_version(),
        "backend": _backend(backend),
    }


def compare_environments(a: dict, b: dict) -> list[str]:
    """Human-readable differences between two captures, one line per field that differs."""
    differences = []
    for path in COMPARED_FIELDS:
        va, vb = _get(a, path), _get(b, path)
        if va is None and vb is None:
            continue
        if va != vb:
            differences.append(f"{path} differs: {_show(va)} vs {_show(vb)}")
    return differences


# ---- readers (each returns None when it cannot tell) ------------------------------------------


def _safe(read) -> Any:
    try:
        return read()
    except (OSError, ValueError, RuntimeError):
        return None


def _run_text(argv: list[str], env: dict[str, str] | None = None) -> str | None:
    if not argv or argv[0] is None:
        return None
    try:
        done = process.run(argv, timeout=_TOOL_TIMEOUT, env=env)
    except OSError:
        return None
    if done.timed_out or done.returncode != 0:
        return None
    return (done.stdout or done.stderr).strip() or None


def _tool_version(tool: str | None, args: list[str], pick: str | None = None, env: dict[str, str] | None = None) -> str | None:
    """The tool's version line: the first line of `tool --version`, or the first line matching `pick`."""
    text = _run_text([tool, *args], env) if tool else None
    if text is None:
        return None
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if pick:
        for line in lines:
            m = re.search(pick, line)
            if m:
                return m.group(0)
        return None
    return lines[0] if lines else None


def _hipcc_version() -> str | None:
    """hipcc's HIP version line (`HIP version: 5.2.21153-0`)."""
    return _tool_version(find_hipcc(), ["--version"], pick=r"HIP version: \S+", env=amd_env())


def _host_cxx() -> str | None:
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _cpu_model() -> str | None:
    def read():
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
        return platform.processor() or None

    return _safe(read)


def _os_release() -> str | None:
    def read():
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
        return None

    return _safe(read)


def _gpu_agents() -> list[dict] | None:
    try:
        agents, _ = find_gpu_agents(timeout=_TOOL_TIMEOUT)
    except OSError:
        return None
    return [
        {"arch": a.arch, "product": a.product, "cu_count": a.cu_count, "max_clock_mhz": a.max_clock_mhz, "source": a.source}
        for a in agents
    ]


def _gpu_clocks() -> dict | None:
    """Current clocks as the SMI tool reports them (its own JSON, kept as is), or None."""
    queries = [("amd-smi", ["metric", "--clock", "--json"]), ("rocm-smi", ["--showclocks", "--json"])]
    for tool, args in queries:
        path = find_rocm_tool(tool)
        text = _run_text([path, *args]) if path else None
        if text is None:
            continue
        try:
            return {"tool": tool, "data": json.loads(text)}
        except ValueError:
            continue
    return None


def _rocm_version_file() -> str | None:
    roots = [r for r in (rocm_root(), Path("/opt/rocm")) if r is not None]
    for root in roots:
        text = _safe(lambda: (root / ".info" / "version").read_text().strip())
        if text:
            return text
    return None


def _container() -> dict:
    """Container hints: an image name from the environment, the runtime from marker files or /proc/1/cgroup."""
    image = None
    for key in ("CONTAINER_IMAGE", "DOCKER_IMAGE", "IMAGE_NAME", "SINGULARITY_NAME", "APPTAINER_NAME"):
        if os.environ.get(key):
            image = os.environ[key]
            break
    runtime = None
    if os.environ.get("container"):
        runtime = os.environ["container"]  # set by podman and systemd-nspawn
    elif Path("/.dockerenv").exists():
        runtime = "docker"
    elif Path("/run/.containerenv").exists():
        runtime = "podman"
    elif os.environ.get("SINGULARITY_NAME") or os.environ.get("APPTAINER_NAME"):
        runtime = "apptainer"
    else:
        cgroup = _safe(lambda: Path("/proc/1/cgroup").read_text()) or ""
        for hint in ("kubepods", "docker", "containerd", "lxc", "podman"):
            if hint in cgroup:
                runtime = hint
                break
    return {"image": image, "runtime": runtime}


def _source(source: Path | None) -> dict | None:
    if source is None:
        return None
    source = Path(source)

    def digest():
        h = hashlib.sha256()
        with open(source, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    return {"path": str(source.resolve()), "sha256": _safe(digest)}


def _git(source: Path | None) -> dict | None:
    """The git revision of the source's tree (and whether it has uncommitted changes), if it is in one."""
    if source is None or shutil.which("git") is None:
        return None
    folder = Path(source).resolve().parent
    revision = _run_text(["git", "-C", str(folder), "rev-parse", "HEAD"])
    if revision is None:
        return None
    status = _run_text(["git", "-C", str(folder), "status", "--porcelain", "--", Path(source).name])
    return {"revision": revision, "dirty": bool(status)}


def _backend(backend) -> dict | None:
    if backend is None:
        return None
    device = None
    try:
        device = backend.describe()
    except (OSError, RuntimeError, ValueError):
        device = None
    return {"name": getattr(backend, "name", None), "gpu_timings": getattr(backend, "gpu_timings", None), "device": device}


def _get(data: dict, path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _show(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return "[" + ", ".join(f"{v.get('product') or 'GPU'} ({v.get('arch')})" for v in value) + "]"
    return repr(value)
