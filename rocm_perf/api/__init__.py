"""rocm-perf's Python API, for notebooks and scripts: `import rocm_perf as rp`.

    trace = rp.load("results.db")          # any profile: rocpd, rocprofv3 CSV/folder, RPD, PyTorch
    trace.kernels(); trace.dispatches(); trace.api_calls()      # pandas DataFrames
    rp.summary(trace).to_dict()             # = rocm-perf summary --json
    rp.critical_path(trace).length_ns
    rp.compare("before.db", "after.db").kernels()
    rp.analyze("counters/"), rp.triage(trace), rp.hotspots("pc_sampling/")

Every result has `.to_dict()`, the data of the matching command's JSON. The names exported here
and in `rocm_perf` are the stable ones; the modules behind them may move.
"""

from rocm_perf.api.results import (
    Analysis,
    Comparison,
    CriticalPath,
    Hotspots,
    Summary,
    Triage,
    analyze,
    compare,
    critical_path,
    hotspots,
    summary,
    triage,
)
from rocm_perf.api.trace import Trace, load
from rocm_perf.errors import RocmPerfError

__all__ = ["Analysis", "Comparison", "CriticalPath", "Hotspots", "RocmPerfError", "Summary", "Trace", "Triage",
           "analyze", "compare", "critical_path", "hotspots", "load", "summary", "triage"]
