"""`rocm-perf doctor`: what this machine can do, why not, and the exact commands to install what is missing."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass

from rocm_perf import process
from rocm_perf.backends.compile_check import choose_target, hipcc_available
from rocm_perf.backends.environment import capture_environment
from rocm_perf.backends.gpu_agents import find_gpu_agents
from rocm_perf.backends.hipcc import amd_env, find_hipcc
from rocm_perf.backends.rocprofv3 import find_rocprofv3
from rocm_perf.clang_resources import find_resource_dir, install_hint
from rocm_perf.errors import RocmPerfError

INSTALL_HIPCC = "sudo apt-get install -y hipcc libamdhip64-dev rocm-device-libs"
INSTALL_CXX = "sudo apt-get install -y g++"
INSTALL_CXXFILT = "sudo apt-get install -y binutils"
INSTALL_CLANG = "sudo apt-get install -y clang"
INSTALL_SLURM = "sudo apt-get install -y slurm-client"
INSTALL_ROCPROFV3 = (
    "sudo apt-get install -y rocprofiler-sdk  "
    "# from AMD's ROCm 7 apt repository (https://rocm.docs.amd.com/projects/install-on-linux/)"
)
INSTALL_GPU = (
    "sudo apt-get install -y amdgpu-dkms rocminfo && sudo usermod -a -G render,video $LOGNAME  "
    "# an AMD Instinct GPU and AMD's amdgpu apt repository; log in again afterwards"
)


@dataclass
class Check:
    """One thing the doctor looked at."""

    area: str  # backends | compilers | profilers | gpu | source analysis | tools | slurm | host timing
    name: str
    ok: bool
    detail: str  # what was found (path, version) or why not
    install: str | None = None  # the exact command that fixes it, when not ok


def gather_checks() -> list[Check]:
    """Every check, in the order the report prints them."""
    checks = [_host_backend(), _rocm_backend()]
    checks += [_host_cxx(), _hipcc(), _hipcc_wrapper()]
    checks += [_rocprofv3()]
    checks += [_gpu_agents()]
    checks += _libclang()
    checks += [_cxxfilt(), _symbolizer(), _cmake()]
    checks += slurm_checks()
    checks += _host_clocks()
    checks += _isolate()
    return checks


def run_doctor(*, as_json: bool = False) -> int:
    """Print the checks (text or JSON); 0 when at least the host backend works, else 1."""
    checks = gather_checks()
    host_ok = _host_works(checks)
    if as_json:
        print(json.dumps(doctor_json(checks), indent=2))
    else:
        print(format_checks(checks))
    return 0 if host_ok else 1


def _host_works(checks: list[Check]) -> bool:
    return any(c.area == "backends" and c.name == "host" and c.ok for c in checks)


def doctor_json(checks: list[Check] | None = None) -> dict:
    """What `doctor --json` prints (the MCP `doctor` tool): every check, and the machine."""
    checks = gather_checks() if checks is None else checks
    env = capture_environment()
    return {
        "host_backend_works": _host_works(checks),
        "checks": [asdict(c) for c in checks],
        "machine": {k: env[k] for k in ("hostname", "kernel_release", "os", "cpu", "container", "rocm_perf_version", "python")},
    }


def format_checks(checks: list[Check]) -> str:
    lines = []
    area = None
    for c in checks:
        if c.area != area:
            area = c.area
            lines.append(f"{area}:")
        lines.append(f"  {'ok ' if c.ok else 'NO '} {c.name:<22} {c.detail}")
    missing = [c for c in checks if not c.ok and c.install]
    if missing:
        lines.append("to install what is missing:")
        seen = set()
        for c in missing:
            if c.install in seen:
                continue
            seen.add(c.install)
            lines.append(f"  {c.name}: {c.install}")
    host = next((c for c in checks if c.area == "backends" and c.name == "host"), None)
    if host is not None and host.ok:
        lines.append("rocm-perf works here with the host backend" + (" and the rocm backend" if _ok(checks, "backends", "rocm") else ""))
    else:
        lines.append("rocm-perf cannot run here: the host backend does not work (see above)")
    return "\n".join(lines)


# ---- the checks --------------------------------------------------------------------------------


def _host_backend() -> Check:
    from rocm_perf.backends.select import make_backend

    try:
        backend = make_backend("host")
        ok, why = backend.available()
    except ImportError as e:
        return Check("backends", "host", False, f"the host backend is not installed ({e})")
    return Check("backends", "host", ok, backend.describe() if ok else why, None if ok else INSTALL_CXX)


def _rocm_backend() -> Check:
    from rocm_perf.backends.rocm import RocmBackend

    ok, why = RocmBackend().available()
    install = None
    if not ok:
        install = INSTALL_ROCPROFV3 if find_rocprofv3() is None else INSTALL_GPU
    return Check("backends", "rocm", ok, why, install)


def _host_cxx() -> Check:
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        path = shutil.which(name) if name else None
        if path:
            version = _first_line([path, "--version"])
            return Check("compilers", "host C++", True, f"{path}: {version or 'version unknown'}")
    return Check("compilers", "host C++", False, "no C++ compiler ($CXX, c++, g++, clang++) on PATH", INSTALL_CXX)


def _hipcc() -> Check:
    ok, what = hipcc_available()
    if not ok:
        return Check("compilers", "hipcc (AMD targets)", False, what, INSTALL_HIPCC)
    hipcc = find_hipcc() or what
    version = _first_line([hipcc, "--version"], contains="HIP version") or "HIP version unknown"
    arch, match, _ = choose_target("gfx942", hipcc)
    mapping = "gfx942 native" if match == "exact" else f"gfx942 checked as {arch} ({match})"
    return Check("compilers", "hipcc (AMD targets)", True, f"{hipcc}: {version}; {mapping}")


def _hipcc_wrapper() -> Check:
    """The hipcc-compatible wrapper of the host backend, for make and CMake projects."""
    from rocm_perf.backends.host_toolchain import CMAKE_TOOLCHAIN

    script = shutil.which("rocm-perf-hipcc")
    beside = os.path.join(os.path.dirname(sys.executable), "rocm-perf-hipcc")
    if script is None and os.access(beside, os.X_OK):
        script = beside
    where = script or "`rocm-perf hipcc` (the rocm-perf-hipcc script is not on PATH)"
    ok = CMAKE_TOOLCHAIN.is_file()
    detail = f"{where}; CMake toolchain {CMAKE_TOOLCHAIN}" if ok else f"the CMake toolchain file is missing: {CMAKE_TOOLCHAIN}"
    return Check("compilers", "hipcc wrapper (host)", ok, detail, None if ok else f"{sys.executable} -m pip install --force-reinstall rocm-perf")


def _cmake() -> Check:
    """CMake 3.21+ reads CMAKE_TOOLCHAIN_FILE from the environment: projects need no flag."""
    path = shutil.which("cmake")
    if path is None:
        return Check("tools", "cmake (projects)", False, "not on PATH: CMake projects cannot be built", "sudo apt-get install -y cmake")
    line = _first_line([path, "--version"]) or ""
    version = line.split()[-1] if line else "unknown"
    parts = [int(x) for x in version.split(".")[:2] if x.isdigit()]
    ok = len(parts) == 2 and tuple(parts) >= (3, 21)
    detail = f"{path}: {version}" + ("" if ok else " (3.21 or newer reads CMAKE_TOOLCHAIN_FILE from the environment)")
    return Check("tools", "cmake (projects)", ok, detail, None if ok else f"{sys.executable} -m pip install 'cmake>=3.21'")


def _rocprofv3() -> Check:
    path = find_rocprofv3()
    if path is None:
        return Check("profilers", "rocprofv3", False, "not found on PATH or under ROCM_PATH/bin", INSTALL_ROCPROFV3)
    return Check("profilers", "rocprofv3", True, f"{path}: {_first_line([path, '--version']) or 'version unknown'}")


def _gpu_agents() -> Check:
    agents, why = find_gpu_agents()
    if not agents:
        return Check("gpu", "GPU agents", False, why or "none found", INSTALL_GPU)
    listed = ", ".join(f"{a.product or 'AMD GPU'} ({a.arch}, {a.cu_count or '?'} CUs)" for a in agents)
    return Check("gpu", "GPU agents", True, f"{len(agents)}: {listed}")


def _libclang() -> list[Check]:
    pip = f"{sys.executable} -m pip install 'libclang>=18.1'"
    try:
        import clang.cindex as cindex

        cindex.Index.create()
        library = cindex.conf.get_filename()
    except ImportError as e:
        return [
            Check("source analysis", "libclang (python)", False, f"clang.cindex not importable ({e})", pip),
            Check("source analysis", "clang resource dir", False, "needs libclang first", None),
        ]
    except cindex.LibclangError as e:
        return [
            Check("source analysis", "libclang (python)", False, f"libclang library does not load ({e})", pip),
            Check("source analysis", "clang resource dir", False, "needs libclang first", None),
        ]
    checks = [Check("source analysis", "libclang (python)", True, f"{library} (libclang {_package_version('libclang')})")]
    try:
        checks.append(Check("source analysis", "clang resource dir", True, str(find_resource_dir())))
    except RocmPerfError as e:
        checks.append(Check("source analysis", "clang resource dir", False, str(e), f"{install_hint()}  (or {INSTALL_CLANG})"))
    return checks


def slurm_checks() -> list[Check]:
    """Whether Slurm answers (`sinfo`), its partitions, and the GPUs each node offers (its gres):
    what `rocm-perf sweep --executor slurm` needs. Informational: no Slurm is no fault."""
    from rocm_perf.backends import slurm_cluster

    missing = slurm_cluster.slurm_commands_found()
    if missing:
        return [Check("slurm", "sinfo", False, f"Slurm client not found ({missing}); only `sweep --executor slurm` "
                                               f"needs it: {INSTALL_SLURM}")]
    try:
        partitions = slurm_cluster.partitions()
        nodes = slurm_cluster.nodes()
    except slurm_cluster.SlurmUnreachable as e:
        if "configuration source" in str(e) or "fetch_config" in str(e):
            return [Check("slurm", "sinfo", False, f"no Slurm configuration here ({e}): set SLURM_CONF to the "
                                                   f"cluster's slurm.conf, or run on a login node")]
        return [Check("slurm", "sinfo", False, f"the Slurm controller does not answer: {e}")]
    listed = ", ".join(f"{p.name}{' (default)' if p.default else ''}{'' if p.up else ' (down)'}: {len(p.nodes)} node(s)"
                       for p in partitions)
    checks = [Check("slurm", "sinfo", True, f"reachable; partitions {listed or 'none'}")]
    for n in nodes:
        what = f"{n.gpus} GPU(s) ({n.gres})" if n.gpus else "no GPU in its generic resources (gres)"
        checks.append(Check("slurm", f"node {n.name}", n.gpus > 0,
                            f"{what}; {n.state}; {n.cpus or '?'} CPUs; partitions {', '.join(n.partitions)}"))
    return checks


def _cxxfilt() -> Check:
    path = shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    if path is None:
        return Check("tools", "c++filt", False, "kernel names stay mangled in compile checks", INSTALL_CXXFILT)
    return Check("tools", "c++filt", True, path)


def _symbolizer() -> Check:
    """What turns the host sampler's program counters into source lines."""
    from rocm_perf.backends.symbolizer import find_symbolizer

    try:
        found = find_symbolizer()
    except RocmPerfError as e:
        return Check("tools", "symbolizer", False, str(e), INSTALL_CXXFILT)
    if found is None:
        return Check("tools", "symbolizer", False, "neither llvm-symbolizer nor addr2line: the host sampler "
                     "cannot name source lines", INSTALL_CXXFILT)
    kind, path = found
    return Check("tools", "symbolizer", True, f"{kind} ({path}) maps host samples to source lines")


def _host_clocks() -> list[Check]:
    """What the host runtime can time each dispatch by (dispatch_clocks.h), and which --metric that allows."""
    from rocm_perf.backends import host_clocks as hc

    area = "host timing"
    cpu = hc.thread_cpu_time_status()
    checks = [Check(area, "thread CPU time", not cpu,
                    cpu or "CLOCK_THREAD_CPUTIME_ID per block worker, and a speed probe timed by it before each "
                    "dispatch: --metric cpu-path (which --metric auto takes when a pair's builds run together), "
                    "probed-path, and adjusted-path between them (auto's with --pairing apart, at the exponent a "
                    "run's A/A pairs fit)")]
    perf = hc.perf_counters_status()
    paranoid = hc.perf_event_paranoid()
    if not perf:
        checks.append(Check(area, "perf counters", True, "user-space instructions and cycles per block worker"
                            + (f" (perf_event_paranoid {paranoid})" if paranoid is not None else "")
                            + ": --metric instructions, cycles"))
    else:
        fix = hc.FIX_PARANOID if paranoid is not None and paranoid > 2 else None
        checks.append(Check(area, "perf counters", False, f"{perf}: no --metric instructions or cycles", fix))
    pin = hc.pinning_status()
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    checks.append(Check(area, "CPU pinning", not pin,
                        (f"{pin}: optimize runs a pair's two builds one after the other here (--pairing apart)" if pin
                         else f"block workers can be pinned to one of CPUs {','.join(map(str, allowed))} each "
                         f"(ROCM_PERF_HOST_PIN=1), so optimize runs a pair's two builds together on one CPU "
                         "(--pairing auto)")))
    return checks


def _isolate() -> list[Check]:
    """What `rocm-perf isolate` can capture here, and whether rocprofv3 replays a dispatch itself."""
    from rocm_perf.backends.rocm_capture import interposer_status, replay_mode_status

    area = "isolate"
    checks = [Check(area, "host capture", True, "the host runtime captures a dispatch, its device memory at reproducible "
                                               "addresses (one region at a fixed base); reproducers replay it")]
    ok, detail = interposer_status()
    checks.append(Check(area, "rocm capture", ok, detail, None if ok else INSTALL_HIPCC))
    ok, detail = replay_mode_status()
    checks.append(Check(area, "rocprofv3 kernel replay", ok, detail))
    return checks


# ---- helpers -----------------------------------------------------------------------------------


def _ok(checks: list[Check], area: str, name: str) -> bool:
    return any(c.ok for c in checks if c.area == area and c.name == name)


def _first_line(argv: list[str], contains: str | None = None) -> str | None:
    try:
        done = process.run(argv, timeout=30, env=amd_env())
    except OSError:
        return None
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        if line.strip() and (contains is None or contains in line):
            return line.strip()
    return None


def _package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "version unknown"
