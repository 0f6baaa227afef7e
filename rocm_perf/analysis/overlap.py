"""Overlap: which kernel time is exposed, and which is hidden behind work on other streams.

Per dispatch, on its GPU (agent), over every kernel and device copy there:
- `exposed_ns`: the part of its run during which nothing else ran on that GPU (time a faster kernel
  would give back directly);
- `hidden_ns`: the rest, when other streams' work ran alongside it.
Per kernel and category these are summed, next to the time the kernel spends on the dispatch DAG's
critical path (critical_path.py), which also counts waits the timeline cannot see.
Communication (RCCL/NCCL kernels, categories.py): the part of each collective during which no compute
kernel ran on its GPU is communication not overlapped with compute.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from rocm_perf.analysis.categories import categorize
from rocm_perf.trace.model import Trace

COMMUNICATION = "communication"
NOT_COMPUTE = frozenset({COMMUNICATION, "memory"})  # what does not count as compute hiding a collective


@dataclass
class OverlapRow:
    name: str  # kernel display name, or category
    category: str
    calls: int
    total_ns: int
    exposed_ns: int
    hidden_ns: int
    critical_path_ns: int | None  # None when the critical path was not computed

    @property
    def exposed_share(self) -> float:
        return self.exposed_ns / self.total_ns if self.total_ns else 0.0

    def to_json(self) -> dict:
        return {**asdict(self), "exposed_share": self.exposed_share}


@dataclass
class CommunicationRow:
    agent: int
    total_ns: int  # collective kernel time on this GPU
    overlapped_ns: int  # while some compute kernel ran on the same GPU
    exposed_ns: int  # while no compute kernel ran: communication not hidden by compute

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class OverlapTable:
    kernels: list[OverlapRow]
    categories: list[OverlapRow]
    communication: list[CommunicationRow]


def _agent_intervals(trace: Trace, agent: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Start and end of every kernel (first) and device copy on one agent; the number of kernels."""
    k = trace.agent == agent
    starts, ends = [trace.start[k]], [trace.end[k]]
    if trace.copies is not None and len(trace.copies):
        c = trace.copies.agent == agent
        starts.append(trace.copies.start[c])
        ends.append(trace.copies.end[c])
    return np.concatenate(starts), np.concatenate(ends), int(k.sum())


def alone_ns(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per interval, the time during which it was the only interval open ([start, end) semantics).

    One sweep: at each boundary the number of open intervals and the sum of their ids; where the
    count is 1 the sum names the one interval that is alone.
    """
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    ids = np.arange(1, n + 1, dtype=np.int64)
    times = np.concatenate([ends, starts])
    count_step = np.concatenate([-np.ones(n, np.int64), np.ones(n, np.int64)])
    id_step = np.concatenate([-ids, ids])
    order = np.lexsort((count_step, times))  # at equal times ends (-1) come before starts
    t = times[order]
    count = np.cumsum(count_step[order])
    idsum = np.cumsum(id_step[order])
    length = np.diff(t)
    alone = (count[:-1] == 1) & (length > 0)
    out = np.bincount(idsum[:-1][alone] - 1, weights=length[alone], minlength=n)
    return np.rint(out).astype(np.int64)


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The disjoint sorted intervals covering the given ones."""
    if not len(starts):
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], reach[last]


def covered_ns(union_start: np.ndarray, union_end: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per [start, end): how much of it the disjoint sorted union intervals cover."""
    if not len(union_start):
        return np.zeros(len(starts), dtype=np.int64)
    lengths = union_end - union_start
    before = np.concatenate([[0], np.cumsum(lengths)])

    def covered_until(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(union_start, t, side="right") - 1
        inside = np.where(i >= 0, np.minimum(t, union_end[np.maximum(i, 0)]) - union_start[np.maximum(i, 0)], 0)
        return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0)

    return covered_until(ends) - covered_until(starts)


def overlap_table(trace: Trace, critical_path_ns_by_kernel: dict[str, int] | None = None) -> OverlapTable:
    """Exposed and hidden time per kernel and category, and communication not overlapped with compute."""
    n = len(trace)
    names = [s.display_name or s.name for s in trace.symbols]
    categories = [categorize(s.display_name or s.name, s.name) for s in trace.symbols]
    exposed = np.zeros(n, dtype=np.int64)
    comm_rows = []
    dispatch_category = np.asarray(categories, dtype=object)[trace.kernel] if n else np.zeros(0, dtype=object)
    for agent in np.unique(trace.agent).tolist():
        starts, ends, kernels = _agent_intervals(trace, agent)
        rows = np.flatnonzero(trace.agent == agent)
        exposed[rows] = alone_ns(starts, ends)[:kernels]
        is_comm = dispatch_category[rows] == COMMUNICATION
        if is_comm.any():
            compute = ~np.isin(dispatch_category[rows], list(NOT_COMPUTE))
            u_s, u_e = _union(trace.start[rows][compute], trace.end[rows][compute])
            c_rows = rows[is_comm]
            over = covered_ns(u_s, u_e, trace.start[c_rows], trace.end[c_rows])
            total = int((trace.end[c_rows] - trace.start[c_rows]).sum())
            comm_rows.append(CommunicationRow(int(agent), total, int(over.sum()), total - int(over.sum())))
    duration = trace.end - trace.start
    per_kernel: dict[str, list[int]] = {}
    for k, d, x in zip(trace.kernel.tolist(), duration.tolist(), exposed.tolist()):
        entry = per_kernel.setdefault(names[k], [0, 0, 0, k])
        entry[0] += 1
        entry[1] += d
        entry[2] += x
    cp = critical_path_ns_by_kernel
    kernel_rows = [
        OverlapRow(name, categories[sym], calls, total, x, total - x, None if cp is None else int(cp.get(name, 0)))
        for name, (calls, total, x, sym) in per_kernel.items()
    ]
    kernel_rows.sort(key=lambda r: (-r.exposed_ns, -r.total_ns, r.name))
    by_category: dict[str, OverlapRow] = {}
    for r in kernel_rows:
        c = by_category.setdefault(r.category, OverlapRow(r.category, r.category, 0, 0, 0, 0, None if cp is None else 0))
        c.calls += r.calls
        c.total_ns += r.total_ns
        c.exposed_ns += r.exposed_ns
        c.hidden_ns += r.hidden_ns
        if cp is not None:
            c.critical_path_ns = (c.critical_path_ns or 0) + (r.critical_path_ns or 0)
    category_rows = sorted(by_category.values(), key=lambda r: (-r.exposed_ns, r.name))
    return OverlapTable(kernels=kernel_rows, categories=category_rows, communication=comm_rows)
