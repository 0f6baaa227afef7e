"""Where clang's resource headers are (stddef.h, the builtin and HIP wrapper headers).

libclang needs them to parse HIP, and the PyPI wheel of libclang ships without them, so they are
found at run time: from the `ziglang` wheel when installed (zig 0.13 ships clang 18's headers, the
release of the libclang 18.1 wheel: the `clang-headers` extra), else from an installed clang or
hipcc. Source analysis parses with them; `doctor` reports where they were found.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import sys
import re
import shutil
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.process import run

# roctx declarations for hipcc and libclang on machines whose ROCm has no roctx headers; passed
# with -idirafter, so real headers are always found first.
ROCTX_DECLARATIONS = Path(__file__).resolve().parent / "roctx_declarations"

# The one PyPI package found to ship clang resource headers that the libclang 18.1 wheel parses HIP
# with (every kernels/ program's `loops --json` identical to Debian's clang 15 headers, real and stub
# mode): zig 0.13.0 is built on LLVM 18. libclang-ng 22's bundled headers fail on Debian's HIP 5.2
# headers; a newer zig carries a newer clang's. Keep in step with pyproject's `clang-headers` extra.
HEADERS_PACKAGE = "ziglang"
HEADERS_PACKAGE_VERSION = "0.13."
HEADERS_REQUIREMENT = "ziglang==0.13.0"


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", path.name)) or (0,)


def _clang_binaries() -> list[str]:
    found = []
    for name in ["clang"] + [f"clang-{v}" for v in range(30, 9, -1)]:
        exe = shutil.which(name)
        if exe:
            found.append(exe)
    return found


def _usable_resource_dir(path: Path) -> bool:
    return (path / "include" / "stddef.h").is_file()


def packaged_resource_dir() -> Path | None:
    """The resource directory of the installed `ziglang` wheel (its lib/, holding include/), when
    it is the release whose headers match the libclang wheel; None otherwise."""
    spec = importlib.util.find_spec(HEADERS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        version = importlib.metadata.version(HEADERS_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "lib"
    if version.startswith(HEADERS_PACKAGE_VERSION) and _usable_resource_dir(path):
        return path
    return None


def install_hint() -> str:
    """The one command that makes the resource headers available to this Python."""
    return f"{sys.executable} -m pip install '{HEADERS_REQUIREMENT}'"


@functools.cache
def find_resource_dir() -> Path:
    """A clang resource directory: $ROCM_PERF_CLANG_RESOURCE_DIR, the `ziglang` wheel's (the same
    LLVM release as the libclang wheel), a clang on PATH, or the newest
    /usr/lib/llvm-*/lib/clang/* (ROCm's llvm too). RocmPerfError naming the command to run when
    there is none."""
    env = os.environ.get("ROCM_PERF_CLANG_RESOURCE_DIR")
    if env:
        if not _usable_resource_dir(Path(env)):
            raise RocmPerfError(f"ROCM_PERF_CLANG_RESOURCE_DIR={env}: no include/stddef.h there")
        return Path(env)
    packaged = packaged_resource_dir()
    if packaged is not None:
        return packaged
    for exe in _clang_binaries():
        done = run([exe, "-print-resource-dir"], timeout=30)
        path = Path(done.stdout.strip())
        if done.returncode == 0 and _usable_resource_dir(path):
            return path
    roots = [Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / "llvm" / "lib" / "clang"]
    roots += sorted(Path("/usr/lib").glob("llvm-*/lib/clang"), key=lambda p: _version_key(p.parents[1]), reverse=True)
    for root in roots:
        for candidate in sorted(root.glob("*"), key=_version_key, reverse=True):
            if _usable_resource_dir(candidate):
                return candidate
    raise RocmPerfError(
        "no clang resource directory found (libclang needs its headers to parse HIP); run: "
        f"{install_hint()}  (or apt-get install -y clang, or set ROCM_PERF_CLANG_RESOURCE_DIR)"
    )
