"""Where the machine's clang keeps its resource headers (stddef.h, the builtin headers).

libclang needs them to parse HIP, and the PyPI wheel of libclang ships without them, so they are
found at run time. Source analysis parses with them; `doctor` reports whether they were found.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.process import run

# roctx declarations for hipcc and libclang on machines whose ROCm has no roctx headers; passed
# with -idirafter, so real headers are always found first.
ROCTX_DECLARATIONS = Path(__file__).resolve().parent / "roctx_declarations"


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


@functools.cache
def find_resource_dir() -> Path:
    """An installed clang's resource directory: $ROCM_PERF_CLANG_RESOURCE_DIR, a clang on PATH,
    or the newest /usr/lib/llvm-*/lib/clang/* (ROCm's llvm too)."""
    env = os.environ.get("ROCM_PERF_CLANG_RESOURCE_DIR")
    if env:
        if not _usable_resource_dir(Path(env)):
            raise RocmPerfError(f"ROCM_PERF_CLANG_RESOURCE_DIR={env}: no include/stddef.h there")
        return Path(env)
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
        "no clang resource directory found (libclang needs one to parse HIP): "
        "install clang (apt-get install -y clang) or hipcc, or set ROCM_PERF_CLANG_RESOURCE_DIR"
    )
