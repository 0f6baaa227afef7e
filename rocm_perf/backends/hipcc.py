"""Finding hipcc and the environment it needs to target AMD."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def rocm_root() -> Path | None:
    """ROCM_PATH, or /opt/rocm where it exists."""
    if os.environ.get("ROCM_PATH"):
        return Path(os.environ["ROCM_PATH"])
    default = Path("/opt/rocm")
    return default if default.is_dir() else None


def find_rocm_tool(name: str) -> str | None:
    """A ROCm executable: on PATH first, then under ROCM_PATH (or /opt/rocm)/bin."""
    found = shutil.which(name)
    if found:
        return found
    root = rocm_root()
    if root is not None:
        candidate = root / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def find_hipcc() -> str | None:
    """$HIPCC when set (and present), else hipcc on PATH or under ROCM_PATH."""
    explicit = os.environ.get("HIPCC")
    if explicit:
        return shutil.which(explicit) or (explicit if Path(explicit).is_file() else None)
    return find_rocm_tool("hipcc")


def amd_env() -> dict[str, str]:
    """Extra environment for hipcc: target AMD (else a machine with nvcc gets NVIDIA)."""
    return {"HIP_PLATFORM": "amd"}


@contextmanager
def amd_build_env() -> Iterator[dict[str, str]]:
    """amd_env() with TMPDIR pointed at a scratch directory that is removed afterwards.

    clang's HIP driver leaves two empty `<source stem>-XXXXXX` directories in TMPDIR per device
    compile (seen with Debian's hipcc, ROCm 5.2): a sweep's compile checks would leave thousands in /tmp.
    """
    with tempfile.TemporaryDirectory(prefix="rocm-perf-hipcc-tmp-") as scratch:
        yield {**amd_env(), "TMPDIR": scratch}
