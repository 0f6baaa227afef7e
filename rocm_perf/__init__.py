"""rocm-perf: closed-loop kernel optimization for AMD GPUs.

`import rocm_perf as rp` gives the Python API (rocm_perf/api/): `rp.load`, `rp.Trace`, `rp.summary`,
`rp.critical_path`, `rp.compare`, `rp.analyze`, `rp.triage`, `rp.hotspots`, `rp.RocmPerfError`.
They load on first use, so that importing any part of the package (the CLI does) loads nothing
more than that part.
"""

__version__ = "0.1.0"

API = ("Analysis", "Comparison", "CriticalPath", "Hotspots", "RocmPerfError", "Summary", "Trace", "Triage", "analyze",
       "compare", "critical_path", "hotspots", "load", "summary", "triage")
__all__ = ["__version__", *API]


def __getattr__(name: str):
    if name in API:
        from rocm_perf import api

        return getattr(api, name)
    raise AttributeError(f"module 'rocm_perf' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(API))
