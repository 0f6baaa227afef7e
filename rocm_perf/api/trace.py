"""`rp.load(path)`: any profile rocm-perf reads, as a Trace whose tables are DataFrames.

The returned `Trace` is the model every command works on (`rocm_perf.trace.Trace`: numpy columns,
symbols, agents, API calls, metadata) with three tables on top.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Union

import numpy as np

from rocm_perf.analysis.kernel_table import kernel_rows
from rocm_perf.api.frames import frame, pandas
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import UNKNOWN
from rocm_perf.trace.model import Trace as TraceModel
from rocm_perf.trace.names import short_name

KERNEL_COLUMNS = ["name", "short_name", "category", "calls", "total_ns", "avg_ns", "min_ns", "max_ns", "share",
                  "symbol", "vgpr", "agpr", "sgpr", "lds_bytes", "scratch_bytes"]
DISPATCH_COLUMNS = ["kernel", "short_name", "symbol", "start_ns", "end_ns", "duration_ns", "agent", "queue", "stream",
                    "correlation_id", "grid_x", "grid_y", "grid_z", "workgroup_x", "workgroup_y", "workgroup_z"]
API_COLUMNS = ["name", "start_ns", "end_ns", "duration_ns", "thread_id", "correlation_id", "stream", "event"]


def _known(values: np.ndarray) -> list:
    """Column values with the model's UNKNOWN marker as None (pandas shows it as missing)."""
    return [None if v == UNKNOWN else int(v) for v in values.tolist()]


class Trace(TraceModel):
    """A loaded profile: dispatches, kernel symbols, agents, HIP API calls and metadata, whatever
    format it came from, with its tables as pandas DataFrames.

    Every analysis of rocm-perf accepts it (it is a `rocm_perf.trace.Trace`).

    Examples:
        >>> import rocm_perf as rp
        >>> trace = rp.load("tests/data/rocpd_v3_multistream.db")
        >>> len(trace), trace.metadata["format"], trace.runtime_ns
        (15, 'rocpd-v3', 810000)
    """

    def kernels(self):
        """One row per kernel, as `rocm-perf summary` prints them, by total time (largest first).

        Columns: `name` (demangled), `short_name`, `category` (ROCm-native: gemm, reduction, ...),
        `calls`, `total_ns` (SUM(end - start) of its dispatches), `avg_ns`, `min_ns`, `max_ns`,
        `share` (of all kernel time, 0..1), `symbol` (the name the profile gives), `vgpr`, `agpr`,
        `sgpr`, `lds_bytes`, `scratch_bytes` (None where the profile does not say).

        Examples:
            >>> import rocm_perf as rp
            >>> k = rp.load("tests/data/rocpd_v3_multistream.db").kernels()
            >>> k.short_name.tolist()
            ['produce_kernel', 'consume_kernel', 'reduce_kernel', 'side_kernel', 'decoy_kernel']
            >>> k.total_ns.tolist()[:2], k.calls.tolist()[:2]
            ([300000, 240000], [3, 3])
        """
        return frame([r.to_json() for r in kernel_rows(self)], KERNEL_COLUMNS)

    def dispatches(self):
        """One row per kernel dispatch, in start order.

        Columns: `kernel` (demangled name), `short_name`, `symbol` (the profile's name),
        `start_ns`, `end_ns`, `duration_ns`, `agent`, `queue`, `stream`, `correlation_id` (None
        where the format has none), `grid_x/y/z`, `workgroup_x/y/z`; then one column per hardware
        counter the profile holds (its own name, e.g. `SQ_WAVES`; NaN where not collected).

        Examples:
            >>> import rocm_perf as rp
            >>> d = rp.load("tests/data/rocpd_v3_multistream.db").dispatches()
            >>> len(d), int(d.duration_ns.sum()), sorted(d.stream.unique().tolist())
            (15, 810000, [0, 1, 2, 3])
        """
        names = [s.display_name or s.name for s in self.symbols]
        kernel = [names[k] for k in self.kernel.tolist()]
        rows = {
            "kernel": kernel, "short_name": [short_name(n) for n in kernel],
            "symbol": [self.symbols[k].name for k in self.kernel.tolist()],
            "start_ns": self.start.tolist(), "end_ns": self.end.tolist(), "duration_ns": self.duration.tolist(),
            "agent": _known(self.agent), "queue": _known(self.queue), "stream": _known(self.stream),
            "correlation_id": _known(self.corr),
        }
        for i, axis in enumerate("xyz"):
            rows[f"grid_{axis}"] = self.grid[:, i].tolist()
            rows[f"workgroup_{axis}"] = self.workgroup[:, i].tolist()
        table = frame([{c: rows[c][i] for c in DISPATCH_COLUMNS} for i in range(len(self))], DISPATCH_COLUMNS)
        if not self.counters:
            return table
        pd = pandas()
        counters = pd.DataFrame({name: column for name, column in sorted(self.counters.items())}, index=table.index)
        return pd.concat([table, counters], axis=1)

    def api_calls(self):
        """One row per traced HIP API call, in start order (empty when the profile has no API trace).

        Columns: `name` (hipLaunchKernel, hipMemcpyAsync, ...), `start_ns`, `end_ns`, `duration_ns`,
        `thread_id`, `correlation_id` (joins a launch to its dispatch), `stream` and `event` (the
        handle arguments where the profile records them, else None).

        Examples:
            >>> import rocm_perf as rp
            >>> calls = rp.load("tests/data/rocpd_v3_multistream.db").api_calls()
            >>> sorted(set(calls.name))[:3]
            ['hipDeviceSynchronize', 'hipEventRecord', 'hipLaunchKernel']
        """
        api = self.api
        if api is None:
            return frame([], API_COLUMNS)
        rows = [{"name": api.names[n], "start_ns": s, "end_ns": e, "duration_ns": e - s, "thread_id": t,
                 "correlation_id": c, "stream": st, "event": ev}
                for n, s, e, t, c, st, ev in zip(api.name.tolist(), api.start.tolist(), api.end.tolist(),
                                                  _known(api.tid), _known(api.corr), _known(api.stream), _known(api.event))]
        return frame(rows, API_COLUMNS)


def as_trace(trace: TraceModel) -> Trace:
    """The same trace as the API's Trace (its columns shared, not copied)."""
    if isinstance(trace, Trace):
        return trace
    return Trace(**{f.name: getattr(trace, f.name) for f in fields(TraceModel)})


def load(path: Union[str, Path]) -> Trace:
    """Load any profile rocm-perf reads, by its content: a rocpd database or a rocprofv3 output
    folder, rocprofv3 CSV (a file or a folder), legacy RPD (also `.gz`), a PyTorch profiler trace
    (`.json`, `.json.gz` or a folder of ranks), the `pmc_N` folders of a counter collection, or a
    rocprof-compute workload folder. Raises `rocm_perf.RocmPerfError` naming the file otherwise.

    Examples:
        >>> import rocm_perf as rp
        >>> rp.load("tests/data/rocprofv3-csv/kernel_trace.csv").metadata["format"]
        'rocprofv3-csv'
        >>> rp.load("README.md")
        Traceback (most recent call last):
        ...
        rocm_perf.errors.RocmPerfError: README.md: not a profile (expected a rocpd/RPD SQLite database, a rocprofv3 kernel_trace.csv or a PyTorch profiler trace)
    """
    return as_trace(load_trace(Path(path)))


def trace_of(profile: Union[str, Path, TraceModel]) -> Trace:
    """A Trace given either a loaded one or a path to load."""
    return as_trace(profile) if isinstance(profile, TraceModel) else load(profile)
