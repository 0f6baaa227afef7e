"""Idle gaps: stretches of each GPU's timeline where no kernel and no device copy ran, and why.

Between the first and the last activity of a GPU, every gap in the union of its kernels and copies
is classified by what the host was doing, from the API trace (first rule that holds):
- `host synchronization`: a synchronizing call (device/stream/event synchronize, a blocking copy)
  returned inside the gap: the host waited for the GPU to drain, then had to feed it again;
- `memcpy`: a copy or memset call was in progress during the gap (pageable copies stage on the host);
- `launch latency`: the work after the gap had been launched by the time the gap began, or its launch
  call started in the first half of the gap: the time is spent in the runtime's launch path and
  the GPU's start-up;
- `host busy`: its launch call started only in the second half of the gap, with neither of the
  above: the host was late (framework or Python overhead, CPU-bound launching);
- `unknown`: the profile has no API trace to tell.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from rocm_perf.analysis.dag import (
    DEVICE_SYNC_CALLS,
    EVENT_SYNC_CALLS,
    STREAM_SYNC_CALLS,
    launch_rows,
    is_host_synchronous_copy,
)
from rocm_perf.trace.model import UNKNOWN, Trace

SYNC = "host synchronization"
MEMCPY = "memcpy"
LAUNCH = "launch latency"
HOST = "host busy"
UNKNOWN_CAUSE = "unknown"
CAUSES = (SYNC, MEMCPY, LAUNCH, HOST, UNKNOWN_CAUSE)
COPY_PREFIX = "copy: "  # marks a device copy among the kernel names around a gap


@dataclass
class Gap:
    agent: int
    start_ns: int
    end_ns: int
    cause: str
    before: str  # what ran last before the gap (kernel name, or COPY_PREFIX + copy name)
    after: str  # what ran first after it

    @property
    def length_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_json(self) -> dict:
        return {**asdict(self), "length_ns": self.length_ns}


@dataclass
class AgentIdle:
    agent: int
    span_ns: int  # first start to last end
    busy_ns: int
    idle_ns: int
    gaps: int
    by_cause: dict[str, dict[str, int]]  # cause -> {"gaps": n, "ns": total}
    longest: list[Gap] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"agent": self.agent, "span_ns": self.span_ns, "busy_ns": self.busy_ns, "idle_ns": self.idle_ns,
                "idle_share": self.idle_ns / self.span_ns if self.span_ns else 0.0, "gaps": self.gaps,
                "by_cause": self.by_cause, "longest": [g.to_json() for g in self.longest]}


def _host_calls(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(sync call ends sorted, copy call starts, copy call ends (by start), launch time per dispatch)."""
    api = trace.api
    if api is None or not len(api):
        return None
    names = api.names
    sync_name = np.array([n in DEVICE_SYNC_CALLS or n in STREAM_SYNC_CALLS or n in EVENT_SYNC_CALLS
                          or is_host_synchronous_copy(n) for n in names], dtype=bool)
    copy_name = np.array(["memcpy" in n.lower() or "memset" in n.lower() for n in names], dtype=bool)
    is_sync = sync_name[api.name] if len(names) else np.zeros(len(api), bool)
    is_copy = copy_name[api.name] if len(names) else np.zeros(len(api), bool)
    sync_ends = np.sort(api.end[is_sync])
    copy_starts, copy_ends = api.start[is_copy], api.end[is_copy]
    launch = launch_rows(trace)
    launch_time = np.where(launch >= 0, api.start[np.maximum(launch, 0)], UNKNOWN)
    return sync_ends, copy_starts, copy_ends, launch_time


def idle_gaps(trace: Trace, *, longest: int = 10, min_gap_ns: int = 0) -> list[AgentIdle]:
    """Per agent: idle time, gaps by cause, and the longest gaps (see the module docstring)."""
    names = [s.display_name or s.name for s in trace.symbols]
    host = _host_calls(trace)
    out = []
    for agent in np.unique(trace.agent).tolist():
        rows = np.flatnonzero(trace.agent == agent)
        starts = [trace.start[rows]]
        ends = [trace.end[rows]]
        labels = [np.asarray([names[k] for k in trace.kernel[rows].tolist()], dtype=object)]
        launch = [host[3][rows] if host is not None else np.full(len(rows), UNKNOWN, np.int64)]
        c = trace.copies
        if c is not None and len(c):
            mine = c.agent == agent
            starts.append(c.start[mine])
            ends.append(c.end[mine])
            labels.append(np.asarray([COPY_PREFIX + c.name_of(i) for i in np.flatnonzero(mine).tolist()], dtype=object))
            launch.append(np.full(int(mine.sum()), UNKNOWN, np.int64))  # copies: launch not joined
        s, e = np.concatenate(starts), np.concatenate(ends)
        label, launched = np.concatenate(labels), np.concatenate(launch)
        order = np.lexsort((e, s))
        s, e, label, launched = s[order], e[order], label[order], launched[order]
        reach = np.maximum.accumulate(e)
        # a gap opens where an item starts after everything before it has ended
        gap_at = np.flatnonzero(s[1:] > reach[:-1]) + 1
        gap_start, gap_end = reach[gap_at - 1], s[gap_at]
        keep = (gap_end - gap_start) >= max(min_gap_ns, 1)
        gap_at, gap_start, gap_end = gap_at[keep], gap_start[keep], gap_end[keep]
        # the item that ended last before the gap: the latest one whose end set the running maximum
        holder = np.maximum.accumulate(np.where(e == reach, np.arange(len(e)), 0)) if len(e) else e
        before_idx = holder[gap_at - 1]
        causes = _classify(gap_start, gap_end, launched[gap_at], host)
        span = int(e.max() - s.min()) if len(s) else 0
        idle = int((gap_end - gap_start).sum())
        by_cause: dict[str, dict[str, int]] = {}
        for cause, length in zip(causes, (gap_end - gap_start).tolist()):
            entry = by_cause.setdefault(cause, {"gaps": 0, "ns": 0})
            entry["gaps"] += 1
            entry["ns"] += int(length)
        gaps = [Gap(int(agent), int(a), int(b), cause, str(label[bi]), str(label[ai]))
                for a, b, cause, bi, ai in zip(gap_start.tolist(), gap_end.tolist(), causes, before_idx.tolist(),
                                                gap_at.tolist())]
        gaps.sort(key=lambda g: (-g.length_ns, g.start_ns))
        out.append(AgentIdle(int(agent), span, span - idle, idle, len(gaps), by_cause, gaps[:longest]))
    return out


def _classify(gap_start: np.ndarray, gap_end: np.ndarray, next_launch: np.ndarray, host) -> list[str]:
    if host is None:
        return [UNKNOWN_CAUSE] * len(gap_start)
    sync_ends, copy_starts, copy_ends, _ = host
    # a sync call that returned inside [gap_start, gap_end]
    lo = np.searchsorted(sync_ends, gap_start, side="left")
    hi = np.searchsorted(sync_ends, gap_end, side="right")
    synced = hi > lo
    # a copy call in progress at some point of the gap
    order = np.argsort(copy_starts, kind="stable")
    cs, ce = copy_starts[order], np.maximum.accumulate(copy_ends[order]) if len(order) else copy_ends
    j = np.searchsorted(cs, gap_end, side="left") - 1  # last copy starting before the gap ends
    copying = (j >= 0) & (ce[np.maximum(j, 0)] > gap_start) if len(cs) else np.zeros(len(gap_start), bool)
    out = []
    for sync, copy, launch, start, end in zip(synced.tolist(), copying.tolist(), next_launch.tolist(),
                                              gap_start.tolist(), gap_end.tolist()):
        if sync:
            out.append(SYNC)
        elif copy:
            out.append(MEMCPY)
        elif launch == UNKNOWN:
            out.append(UNKNOWN_CAUSE)
        elif launch - start <= (end - start) / 2:
            out.append(LAUNCH)
        else:
            out.append(HOST)
    return out
