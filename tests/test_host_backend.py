"""HostBackend as a Backend: what it says it is, and how its thread count is chosen."""

from __future__ import annotations

import pytest

from rocm_perf.backends.host import RUNTIME_DIR, HostBackend, is_source
from rocm_perf.backends.select import make_backend
from rocm_perf.errors import RocmPerfError


def test_identity_and_availability():
    backend = make_backend("host")
    assert isinstance(backend, HostBackend)
    assert backend.name == "host" and backend.gpu_timings is False
    assert backend.available() == (True, "")
    assert "CPU timings" in backend.describe()
    assert (RUNTIME_DIR / "hip" / "hip_runtime.h").is_file()


def test_threads_default_to_the_steady_setting_or_the_environment(monkeypatch):
    monkeypatch.delenv("ROCM_PERF_HOST_THREADS", raising=False)
    assert HostBackend().threads == 1
    monkeypatch.setenv("ROCM_PERF_HOST_THREADS", "3")
    assert HostBackend().threads == 3
    assert HostBackend(threads=2).threads == 2
    assert HostBackend().environment(RUNTIME_DIR / "x.jsonl")["ROCM_PERF_HOST_THREADS"] == "3"
    monkeypatch.setenv("ROCM_PERF_HOST_THREADS", "many")
    with pytest.raises(RocmPerfError, match="ROCM_PERF_HOST_THREADS"):
        HostBackend()
    with pytest.raises(RocmPerfError, match="at least 1"):
        HostBackend(threads=0)


def test_missing_compiler_is_reported(monkeypatch):
    backend = HostBackend(compiler="no-such-compiler-xyz")
    ok, why = backend.available()
    assert not ok and "no-such-compiler-xyz" in why


def test_sources_by_suffix(tmp_path):
    assert is_source(tmp_path / "a.cu") and is_source(tmp_path / "a.hip") and is_source(tmp_path / "a.cpp")
    assert not is_source(tmp_path / "a.out")
