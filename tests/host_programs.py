"""Builds of the host test programs (tests/data/host), each (program, flags) compiled once per
test session and shared by the test_host_* modules: the compiler is the slow part."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import DATA
from rocm_perf.backends.host import HostBackend

HOST = DATA / "host"


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """built(name, flags=()) -> the executable of tests/data/host/<name>.cu built with `flags`."""
    cache: dict[tuple[str, tuple[str, ...]], Path] = {}
    root = tmp_path_factory.mktemp("host_builds")

    def build(name: str, flags: tuple[str, ...] = ()) -> Path:
        key = (name, tuple(flags))
        if key not in cache:
            out = root / f"{name}_{len(cache)}"
            cache[key] = HostBackend().build(HOST / f"{name}.cu", out, list(flags)).executable
        return cache[key]

    return build
