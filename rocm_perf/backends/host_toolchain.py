"""The environment in which an unmodified make or CMake project builds for the host backend.

- `hipcc` on PATH (and `$HIPCC`, `$HIPCXX`) is the hipcc-compatible wrapper (host_hipcc.py):
  Makefiles that call `hipcc`, `$(HIPCC)` or `$(HIPCXX)`, and CMake projects that set
  `CMAKE_CXX_COMPILER=hipcc`, compile with it.
- `CMAKE_TOOLCHAIN_FILE` (read from the environment by CMake 3.21+ when it configures a new
  build directory) makes the wrapper the HIP language's compiler, which CMake otherwise only
  accepts from Clang (host_runtime/cmake/rocm-perf-host.cmake).

The wrapper is reached through small shell scripts written into a directory of the run, each
running this Python's `-m rocm_perf.backends.host_hipcc`: it works whether or not the console
scripts are installed, and never reaches a different rocm-perf.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

RUNTIME_DIR = Path(__file__).resolve().parent / "host_runtime"
CMAKE_TOOLCHAIN = RUNTIME_DIR / "cmake" / "rocm-perf-host.cmake"
# The names the wrapper answers to: hipcc's own, and one without "hipcc" in it, because CMake
# refuses a HIP compiler whose path matches "hipcc".
WRAPPER_NAMES = ("hipcc", "rocm-perf-hipcc", "rocm-perf-hip-cxx")


def write_wrapper_scripts(bin_dir: Path) -> dict[str, Path]:
    """Write the wrapper's scripts into `bin_dir`; returns them by name."""
    bin_dir = Path(bin_dir).resolve()  # the build runs elsewhere: absolute paths only
    bin_dir.mkdir(parents=True, exist_ok=True)
    python = shlex.quote(sys.executable)
    package_root = shlex.quote(str(Path(__file__).resolve().parents[2]))
    scripts = {}
    for name in WRAPPER_NAMES:
        path = bin_dir / name
        path.write_text(
            "#!/bin/sh\n"
            "# rocm-perf host backend: hipcc's command line, building for the CPU.\n"
            f'PYTHONPATH={package_root}${{PYTHONPATH:+:$PYTHONPATH}} exec {python} -m rocm_perf.backends.host_hipcc "$@"\n',
            encoding="utf-8",
        )
        path.chmod(0o755)
        scripts[name] = path
    return scripts


def host_build_environment(bin_dir: Path, warp_size: int = 64, base_path: str | None = None) -> dict[str, str]:
    """Variables that make make/CMake projects build with the wrapper (scripts in `bin_dir`)."""
    scripts = write_wrapper_scripts(bin_dir)
    path = base_path if base_path is not None else os.environ.get("PATH", "")
    env = {
        "PATH": f"{Path(bin_dir).resolve()}{os.pathsep}{path}" if path else str(Path(bin_dir).resolve()),
        "HIPCC": str(scripts["hipcc"]),
        "HIPCXX": str(scripts["rocm-perf-hip-cxx"]),
        "ROCM_PERF_HIP_CXX": str(scripts["rocm-perf-hip-cxx"]),
        "CMAKE_TOOLCHAIN_FILE": str(CMAKE_TOOLCHAIN),
    }
    if warp_size != 64:
        env["ROCM_PERF_HOST_WARP_SIZE"] = str(warp_size)
    return env
