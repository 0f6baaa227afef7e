"""Choosing a backend: `rocm` where rocprofv3 and a GPU agent are present, else `host`."""

from __future__ import annotations

from rocm_perf.backends.base import Backend
from rocm_perf.errors import RocmPerfError


def make_backend(name: str, *, sample: bool | None = None, pc_sampling: str | None = None,
                 att: bool = False, warp_size: int | None = None) -> Backend:
    """The backend called `name` ("host" or "rocm"), whether or not it can run here.

    Instruction-level evidence: `sample` is the host backend's own sampler (None = its default);
    `pc_sampling` (a method, or "auto") and `att` are rocprofv3's, on the rocm backend. Asking a
    backend for the other's kind is an error naming the right option. `warp_size` is the host
    backend's emulated wavefront (None: its default, 64); the rocm backend runs the hardware's."""
    if name == "host":
        from rocm_perf.backends.host import HostBackend

        if pc_sampling or att:
            raise RocmPerfError(f"{'--pc-sampling' if pc_sampling else '--att'} needs the rocm backend (rocprofv3); "
                                f"the host backend samples with --sample")
        return HostBackend(sample=sample) if warp_size is None else HostBackend(sample=sample, warp_size=warp_size)
    if name == "rocm":
        from rocm_perf.backends.rocm import RocmBackend

        if sample:
            raise RocmPerfError("--sample is the host backend's sampler; on the rocm backend use --pc-sampling or --att")
        return RocmBackend(pc_sampling=pc_sampling, att=att)
    raise RocmPerfError(f"unknown backend {name!r} (choose host or rocm)")


def select_backend(requested: str = "auto", *, sample: bool | None = None, pc_sampling: str | None = None,
                   att: bool = False, warp_size: int | None = None) -> Backend:
    """The backend to use: the requested one (an error naming what is missing if it cannot run),
    or for "auto" the rocm backend when it can run here, else host. The evidence options and
    `warp_size` are those of make_backend; under "auto" the evidence options also decide between
    the two when only one fits."""
    options = {"sample": sample, "pc_sampling": pc_sampling, "att": att}
    if requested == "auto" and (pc_sampling or att):
        requested = "rocm"
    elif requested == "auto" and sample:
        requested = "host"
    if requested != "auto":
        backend = make_backend(requested, **options, warp_size=warp_size)
        ok, why = backend.available()
        if not ok:
            raise RocmPerfError(f"the {requested} backend cannot run here: {why}")
        return backend
    try:
        rocm = make_backend("rocm", **options)
        if rocm.available()[0]:
            return rocm
    except ImportError:  # the rocm backend module is not there yet
        pass
    host = make_backend("host", **options, warp_size=warp_size)
    ok, why = host.available()
    if not ok:
        raise RocmPerfError(f"no backend can run here: {why} (see `rocm-perf doctor`)")
    return host
