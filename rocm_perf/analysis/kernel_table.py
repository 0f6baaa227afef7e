"""Per-kernel and per-agent totals of a Trace (pure numpy; a million dispatches in well under a second).

Kernels are grouped by display name, as rocprofv3's own `top_kernels` view groups them, so the
totals here equal that view's on the same file. Runtime is SUM(end - start) of dispatches.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from rocm_perf.analysis.categories import categorize
from rocm_perf.trace.model import Trace
from rocm_perf.trace.names import short_name


@dataclass
class KernelRow:
    name: str  # display name (demangled, with parameters when the trace has them)
    short_name: str
    category: str
    calls: int
    total_ns: int
    avg_ns: float
    min_ns: int
    max_ns: int
    share: float  # of the summed kernel time, 0..1
    symbol: str  # the mangled/trace name of the first symbol with this display name
    vgpr: int | None = None
    agpr: int | None = None
    sgpr: int | None = None
    lds_bytes: int | None = None
    scratch_bytes: int | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class CategoryRow:
    category: str
    kernels: int
    calls: int
    total_ns: int
    share: float


@dataclass
class AgentRow:
    agent_id: int
    name: str
    product: str
    dispatches: int
    kernel_ns: int  # SUM(end - start) on this agent (what rocpd's `busy` view calls GpuTime)
    busy_ns: int  # time with at least one kernel running (overlaps counted once)
    wall_ns: int  # first start to last end on this agent
    busy_share: float  # busy_ns / wall_ns


def kernel_rows(trace: Trace) -> list[KernelRow]:
    """One row per kernel display name, largest total first (ties by name)."""
    n_sym = len(trace.symbols)
    if len(trace) == 0 or n_sym == 0:
        return []
    # symbol index -> group index by display name
    group_of_name: dict[str, int] = {}
    first_symbol: list[int] = []
    sym_group = np.empty(n_sym, dtype=np.int64)
    for i, s in enumerate(trace.symbols):
        g = group_of_name.setdefault(s.display_name, len(group_of_name))
        if g == len(first_symbol):
            first_symbol.append(i)
        sym_group[i] = g
    groups = sym_group[trace.kernel]
    duration = trace.end - trace.start
    n_groups = len(group_of_name)
    calls = np.bincount(groups, minlength=n_groups)
    # integer sums per group via one sort (bincount's float weights could round big totals)
    order = np.argsort(groups, kind="stable")
    sorted_dur = duration[order]
    starts = np.concatenate([[0], np.cumsum(calls)[:-1]])
    present = calls > 0
    mins = np.zeros(n_groups, dtype=np.int64)
    maxs = np.zeros(n_groups, dtype=np.int64)
    sums = np.zeros(n_groups, dtype=np.int64)
    if present.any():
        idx = starts[present]
        mins[present] = np.minimum.reduceat(sorted_dur, idx)
        maxs[present] = np.maximum.reduceat(sorted_dur, idx)
        sums[present] = np.add.reduceat(sorted_dur, idx)
    grand = int(duration.sum())
    names = list(group_of_name)
    rows = []
    for g in np.flatnonzero(present).tolist():
        sym = trace.symbols[first_symbol[g]]
        rows.append(
            KernelRow(
                name=names[g],
                short_name=short_name(names[g]),
                category=categorize(names[g], sym.name),
                calls=int(calls[g]),
                total_ns=int(sums[g]),
                avg_ns=float(sums[g]) / float(calls[g]),
                min_ns=int(mins[g]),
                max_ns=int(maxs[g]),
                share=float(sums[g]) / grand if grand else 0.0,
                symbol=sym.name,
                vgpr=sym.vgpr,
                agpr=sym.agpr,
                sgpr=sym.sgpr,
                lds_bytes=sym.lds_bytes,
                scratch_bytes=sym.scratch_bytes,
            )
        )
    rows.sort(key=lambda r: (-r.total_ns, r.name))
    return rows


def category_rows(kernels: list[KernelRow]) -> list[CategoryRow]:
    """Kernel rows summed per category, largest first."""
    acc: dict[str, CategoryRow] = {}
    for k in kernels:
        row = acc.setdefault(k.category, CategoryRow(k.category, 0, 0, 0, 0.0))
        row.kernels += 1
        row.calls += k.calls
        row.total_ns += k.total_ns
        row.share += k.share
    return sorted(acc.values(), key=lambda r: (-r.total_ns, r.category))


def _union_ns(start: np.ndarray, end: np.ndarray) -> int:
    """Length of the union of [start, end) intervals."""
    if len(start) == 0:
        return 0
    if bool(np.all(start[1:] >= start[:-1])):  # a Trace is sorted by start already: skip the copies
        s, e = start, end
    else:
        order = np.argsort(start, kind="stable")
        s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    # a new busy stretch begins where a start lies beyond everything that ran before it
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return int((reach[last] - s[first]).sum())


def agent_rows(trace: Trace) -> list[AgentRow]:
    """Busy time and wall span per agent that ran dispatches."""
    by_id = {a.id: a for a in trace.agents}
    rows = []
    agent_ids = np.unique(trace.agent).tolist()
    for agent_id in agent_ids:
        if len(agent_ids) == 1:
            mask, start, end = None, trace.start, trace.end
        else:
            mask = trace.agent == agent_id
            start, end = trace.start[mask], trace.end[mask]
        wall = int(end.max() - start.min())
        busy = _union_ns(start, end)
        agent = by_id.get(agent_id)
        rows.append(
            AgentRow(
                agent_id=int(agent_id),
                name=agent.name if agent else "",
                product=agent.product if agent else "",
                dispatches=len(start),
                kernel_ns=int((end - start).sum()),
                busy_ns=busy,
                wall_ns=wall,
                busy_share=busy / wall if wall else 0.0,
            )
        )
    return rows
