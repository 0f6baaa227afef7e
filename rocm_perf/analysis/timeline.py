"""A profile's dispatches as a picture can hold them: one lane per stream, at most a few hundred
bars, the critical path over them.

A program can launch millions of dispatches; a timeline of all of them is a grey smear and a
multi-megabyte drawing. Up to `max_bars` dispatches are kept as they are. Beyond that each lane
is cut into equal time bins and a bin becomes one bar: its extent is the bin, its height the
fraction of the bin the stream was busy, its kernel the one that took most of that time. The
critical path is kept in path order as (lane, start, end) steps, merged the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rocm_perf.analysis.critical_path import CriticalPathResult
from rocm_perf.trace.model import UNKNOWN, Trace


@dataclass
class TimelineBars:
    """Bars of one drawing, as columns. Times in ns from the first dispatch's start."""

    lane: np.ndarray  # int, index into Timeline.lanes
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    kernel: np.ndarray  # int, index into Timeline.kernels
    busy: np.ndarray  # float in (0, 1]: 1 for a dispatch, the busy fraction for a bin

    def __len__(self) -> int:
        return len(self.start)


@dataclass
class Timeline:
    """What the timeline figure draws: lanes (streams), bars, the critical path."""

    lanes: list[str]
    kernels: list[str]  # display names, by total time, largest first
    bars: TimelineBars
    path: TimelineBars  # the critical path's dispatches (or bins) in path order; busy is 1
    dispatches: int  # how many dispatches the profile held
    aggregated: bool  # bars are time bins, not dispatches
    span_ns: int
    notes: list[str] = field(default_factory=list)


def _lane_labels(trace: Trace) -> tuple[np.ndarray, list[str]]:
    """Per dispatch its lane, and the lanes' labels: a stream per lane, else a queue, else the agent."""
    if trace.has_streams:
        keys, label = trace.stream, "stream"
    elif len(trace.queue) and (trace.queue != UNKNOWN).any():
        keys, label = trace.queue, "queue"
    else:
        keys, label = trace.agent, "agent"
    values, lane = np.unique(keys, return_inverse=True)
    names = [f"{label} {int(v)}" if v != UNKNOWN else f"{label} unknown" for v in values]
    return lane.astype(np.int64), names


def build_timeline(trace: Trace, cp: CriticalPathResult, *, max_bars: int = 400, bins_per_lane: int = 120) -> Timeline:
    """The timeline of `trace` with its critical path `cp` (analyze_critical_path of the same trace),
    drawn with at most about `max_bars` bars (dispatches, else busy time bins)."""
    n = len(trace)
    if n == 0:
        empty = TimelineBars(*(np.zeros(0, dtype=np.int64) for _ in range(4)), np.zeros(0))
        return Timeline([], [], empty, empty, 0, False, 0, ["the profile holds no dispatches"])
    lane, lanes = _lane_labels(trace)
    t0 = int(trace.start.min())
    start = trace.start.astype(np.int64) - t0
    end = trace.end.astype(np.int64) - t0
    span = int(end.max())
    # Kernels by total time, so that colours go to what matters.
    totals = np.bincount(trace.kernel, weights=(end - start).astype(float), minlength=len(trace.symbols))
    order = [int(k) for k in np.argsort(-totals, kind="stable") if totals[k] > 0 or (trace.kernel == k).any()]
    rank = np.full(len(trace.symbols), -1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    kernels = [trace.symbols[k].display_name or trace.symbols[k].name for k in order]
    kernel = rank[trace.kernel]
    path_rows = np.asarray(cp.path, dtype=np.int64)
    if n <= max_bars:
        bars = TimelineBars(lane, start, end, kernel, np.ones(n))
        path = TimelineBars(lane[path_rows], start[path_rows], end[path_rows], kernel[path_rows], np.ones(len(path_rows)))
        return Timeline(lanes, kernels, bars, path, n, False, span)
    bins = max(1, min(bins_per_lane, max_bars // max(1, len(lanes))))
    bars = _binned(lane, start, end, kernel, len(lanes), bins, span)
    path = _merged_path(lane[path_rows], start[path_rows], end[path_rows], kernel[path_rows], span / bins)
    note = f"{n:,} dispatches drawn as {len(bars)} bars: each bar is 1/{bins} of the run on one stream, its height the share of it the stream was busy"
    return Timeline(lanes, kernels, bars, path, n, True, span, [note])


def _binned(lane, start, end, kernel, n_lanes: int, bins: int, span: int) -> TimelineBars:
    """Per lane and time bin: busy ns (a dispatch split across the bins it overlaps) and the kernel
    with most busy ns in it."""
    width = max(span, 1) / bins
    first = np.minimum((start / width).astype(np.int64), bins - 1)
    last = np.minimum(((np.maximum(end, start + 1) - 1) / width).astype(np.int64), bins - 1)
    n_kernels = int(kernel.max()) + 1
    busy = np.zeros((n_lanes, bins, n_kernels))
    # Most dispatches sit inside one bin; the few that span bins are split bin by bin.
    inside = first == last
    np.add.at(busy, (lane[inside], first[inside], kernel[inside]), (end - start)[inside])
    for i in np.flatnonzero(~inside):
        for b in range(first[i], last[i] + 1):
            lo, hi = max(start[i], b * width), min(end[i], (b + 1) * width)
            if hi > lo:
                busy[lane[i], b, kernel[i]] += hi - lo
    per_bin = busy.sum(axis=2)
    where = np.argwhere(per_bin > 0)
    lanes_out, bins_out = where[:, 0], where[:, 1]
    return TimelineBars(
        lanes_out.astype(np.int64),
        np.round(bins_out * width).astype(np.int64),
        np.round((bins_out + 1) * width).astype(np.int64),
        busy[lanes_out, bins_out].argmax(axis=1).astype(np.int64),
        np.minimum(per_bin[lanes_out, bins_out] / width, 1.0),
    )


def _merged_path(lane, start, end, kernel, gap: float) -> TimelineBars:
    """The path's steps with neighbours on one lane closer than `gap` merged into one step."""
    keep: list[list[int]] = []
    for i in range(len(start)):
        if keep and keep[-1][0] == lane[i] and start[i] - keep[-1][2] <= gap:
            keep[-1][2] = max(keep[-1][2], int(end[i]))
            continue
        keep.append([int(lane[i]), int(start[i]), int(end[i]), int(kernel[i])])
    cols = np.array(keep, dtype=np.int64).reshape(-1, 4)
    return TimelineBars(cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3], np.ones(len(cols)))
