"""Shared test set-up: data paths, and the rule that hipcc tests skip visibly but fail under CI."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
KERNELS = ROOT / "kernels"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def hipcc_for_amd() -> str | None:
    """Debian's hipcc (or one under ROCM_PATH); None where the machine has none."""
    return os.environ.get("HIPCC") or shutil.which("hipcc")


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def hipcc() -> str:
    """A hipcc that targets AMD: skip with a reason where missing, fail under CI=true."""
    path = hipcc_for_amd()
    if path is None:
        message = "hipcc not installed (apt-get install -y hipcc libamdhip64-dev rocm-device-libs)"
        if IN_CI:
            pytest.fail(message + ": CI must have it")
        pytest.skip(message)
    os.environ.setdefault("HIP_PLATFORM", "amd")
    return path


def pytest_configure(config):
    """One cache directory for the whole run (the host runtime's precompiled headers,
    host_prebuilt.py): shared by the workers, who inherit the variable, and by the programs the tests
    start; removed at the end, so the user's own ~/.cache/rocm-perf is never touched."""
    if hasattr(config, "workerinput") or "ROCM_PERF_CACHE_DIR" in os.environ:
        return
    config._rocm_perf_cache = tempfile.mkdtemp(prefix="rocm-perf-test-cache-")
    os.environ["ROCM_PERF_CACHE_DIR"] = config._rocm_perf_cache


def pytest_unconfigure(config):
    cache = getattr(config, "_rocm_perf_cache", None)
    if cache:
        shutil.rmtree(cache, ignore_errors=True)
        os.environ.pop("ROCM_PERF_CACHE_DIR", None)


def pytest_collection_modifyitems(session, config, items):
    """Files with end-to-end tests (`slow`) first, each file's tests in their own order: under
    `make test`'s parallel workers (pytest-xdist, a file to a worker) the long files start at once
    instead of leaving one worker busy with them after the others are done."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # a stable sort: each file's order kept
