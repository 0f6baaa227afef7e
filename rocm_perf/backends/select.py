"""Choosing a backend: `rocm` where rocprofv3 and a GPU agent are present, else `host`."""

from __future__ import annotations

from rocm_perf.backends.base import Backend
from rocm_perf.errors import RocmPerfError


def make_backend(name: str) -> Backend:
    """The backend called `name` ("host" or "rocm"), whether or not it can run here."""
    if name == "host":
        from rocm_perf.backends.host import HostBackend

        return HostBackend()
    if name == "rocm":
        from rocm_perf.backends.rocm import RocmBackend

        return RocmBackend()
    raise RocmPerfError(f"unknown backend {name!r} (choose host or rocm)")


def select_backend(requested: str = "auto") -> Backend:
    """The backend to use: the requested one (an error naming what is missing if it cannot run),
    or for "auto" the rocm backend when it can run here, else host."""
    if requested != "auto":
        backend = make_backend(requested)
        ok, why = backend.available()
        if not ok:
            raise RocmPerfError(f"the {requested} backend cannot run here: {why}")
        return backend
    try:
        rocm = make_backend("rocm")
        if rocm.available()[0]:
            return rocm
    except ImportError:  # the rocm backend module is not there yet
        pass
    host = make_backend("host")
    ok, why = host.available()
    if not ok:
        raise RocmPerfError(f"no backend can run here: {why} (see `rocm-perf doctor`)")
    return host
