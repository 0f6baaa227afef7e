"""Perfetto export: a Trace as Chrome trace-event JSON that ui.perfetto.dev opens.

Layout: one process per GPU agent with a thread track per (queue, stream); one process for the
host with a track per thread holding the HIP API calls and that thread's roctx push/pop ranges
(nested slices) and marks (instants); start/stop ranges, which may overlap anything, on tracks of
their own in the host process; GPU-side annotations (PyTorch) on a track beside their stream; a
"critical path" process whose single track repeats the dispatches on the dispatch DAG's critical path. Flow arrows join each launch
call to its kernel and each cross-stream DAG edge. Times are microseconds from the earliest
event (the origin in ns is kept in the file's `otherData`), written with exact 3-decimal
fractions. Events are written to the file one by one, never collected in a list.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.report.perfetto_tracks import (
    agent_label as _agent_label,
    arrow_pairs,
    cross_stream_arrows,
    host_pid as _host_pid,
    lanes as _lanes,
    track_keys as _track_keys,
    track_label as _track_label,
)
from rocm_perf.trace.model import MARK, PROCESS_RANGE, UNKNOWN, Trace

CRITICAL_PATH_PROCESS = "critical path"
WRITE_BUFFER = 1 << 20  # bytes buffered before a write to the file


@dataclass
class ExportCounts:
    """What an export wrote, for the command's one-line summary and for tests."""

    path: Path
    kernel_slices: int = 0
    api_slices: int = 0
    critical_slices: int = 0
    launch_flows: int = 0
    dependency_flows: int = 0
    range_slices: int = 0
    marks: int = 0
    tracks: int = 0
    notes: list[str] = field(default_factory=list)


def us(ns: int) -> str:
    """Integer nanoseconds as a JSON number of microseconds with an exact 3-digit fraction."""
    sign = "-" if ns < 0 else ""
    whole, frac = divmod(abs(int(ns)), 1000)
    return f"{sign}{whole}.{frac:03d}"


def _event(out: IO[str], first: list[bool], fields: dict[str, Any], ts_ns: int | None = None, dur_ns: int | None = None) -> None:
    """Write one event; ts/dur are formatted from integer ns so no float rounding creeps in."""
    body = json.dumps(fields, separators=(",", ":"))[:-1]
    if ts_ns is not None:
        body += f',"ts":{us(ts_ns)}'
    if dur_ns is not None:
        body += f',"dur":{us(dur_ns)}'
    out.write(("\n" if first[0] else ",\n") + body + "}")
    first[0] = False


def _kernel_categories(trace: Trace) -> list[str]:
    """A category per kernel symbol (GEMM, elementwise, ...), from the shared classifier."""
    from rocm_perf.analysis.categories import categorize

    return [categorize(s.display_name or s.name) for s in trace.symbols]


def _dependency_arrows(trace: Trace, cp: Any, null_stream: str) -> list[tuple[int, int]]:
    """Arrows for the critical-path analysis' dependency edges, chains and order from the same DAG."""
    from rocm_perf.analysis.dag import build_dispatch_dag

    dag = build_dispatch_dag(trace, null_stream=null_stream, gap_heuristic_ns=getattr(cp, "gap_heuristic_ns", None))
    return cross_stream_arrows(cp.dependency_edges, dag.chain, dag.order)


def export_perfetto(
    trace: Trace,
    out: Path,
    *,
    critical_path: Any = None,
    categories: list[str] | None = None,
    null_stream: str = "legacy",
    arrows: np.ndarray | None = None,
) -> ExportCounts:
    """Write `trace` to `out` (via a temp file and a rename): Perfetto's protobuf format when the name
    ends in `.pftrace` (perfetto_pftrace.py), else Chrome trace-event JSON.

    `critical_path` is a CriticalPathResult (or None: no path track, no dependency arrows);
    `categories` names a category per kernel symbol (or None: no category argument); `arrows` are
    the dependency arrows' (before, after) rows when the caller has them (else made from the
    critical path's edges and a DAG built again).
    """
    counts = ExportCounts(path=out)
    if critical_path is not None and arrows is None:
        arrows = np.asarray(_dependency_arrows(trace, critical_path, null_stream), dtype=np.int64).reshape(-1, 2)
    if is_pftrace(out):
        from rocm_perf.report.perfetto_pftrace import export_pftrace

        export_pftrace(trace, out, counts, critical_path=critical_path, arrows=arrows, categories=categories)
        return counts
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8", buffering=WRITE_BUFFER) as f:
            f.write('{"traceEvents":[')
            first = [True]
            origin = _write_events(f, first, trace, critical_path, categories, counts, arrows)
            f.write("\n],\n")
            other = {
                "exporter": "rocm-perf",
                "origin_ns": origin,
                "format": trace.metadata.get("format", ""),
                "source_path": str(trace.metadata.get("source_path", "")),
                "hostname": trace.metadata.get("hostname", ""),
                "command": trace.metadata.get("command", ""),
            }
            if critical_path is not None:
                other["critical_path_ns"] = int(critical_path.critical_path_ns)
            f.write('"displayTimeUnit":"ns",\n"otherData":' + json.dumps(other, default=str) + "}\n")
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return counts


def _origin(trace: Trace) -> int:
    starts = []
    if len(trace):
        starts.append(int(trace.start.min()))
    if trace.api is not None and len(trace.api):
        starts.append(int(trace.api.start.min()))
    if trace.markers is not None and len(trace.markers):
        starts.append(int(trace.markers.start.min()))
    return min(starts) if starts else 0


def _write_events(out, first, trace: Trace, cp: Any, categories: list[str] | None, counts: ExportCounts,
                  arrows: np.ndarray | None) -> int:
    origin = _origin(trace)
    track_of_row, tracks = _track_keys(trace)
    agents = sorted({t[0] for t in tracks})
    pid_of_agent = {agent: i + 1 for i, agent in enumerate(agents)}
    next_pid = len(agents) + 1
    tid_of_track = {}
    for i, (agent, queue, stream) in enumerate(tracks):
        tid_of_track[i] = i + 1
    for agent in agents:
        pid = pid_of_agent[agent]
        _event(out, first, {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": _agent_label(trace, agent)}})
        _event(out, first, {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
    for i, (agent, queue, stream) in enumerate(tracks):
        pid, tid = pid_of_agent[agent], tid_of_track[i]
        _event(out, first, {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": _track_label(queue, stream)}})
        _event(out, first, {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
    counts.tracks = len(tracks)

    on_path = np.zeros(len(trace), dtype=bool)
    path_rows: list[int] = []
    slack = None
    if cp is not None:
        path_rows = [int(r) for r in cp.path]
        on_path[path_rows] = True
        slack = getattr(cp, "slack", None)

    _write_kernel_slices(out, first, trace, origin, track_of_row, tracks, pid_of_agent, tid_of_track,
                         categories, on_path if cp is not None else None, slack, counts)

    if path_rows:
        cp_pid = next_pid
        next_pid += 1
        total_us = us(int(cp.critical_path_ns))
        _event(out, first, {"name": "process_name", "ph": "M", "pid": cp_pid, "tid": 0, "args": {"name": CRITICAL_PATH_PROCESS}})
        _event(out, first, {"name": "process_sort_index", "ph": "M", "pid": cp_pid, "tid": 0, "args": {"sort_index": 0}})
        _event(out, first, {"name": "thread_name", "ph": "M", "pid": cp_pid, "tid": 1, "args": {"name": f"critical path ({total_us} us)"}})
        for row in path_rows:
            start, end = int(trace.start[row]), int(trace.end[row])
            agent, queue, stream = tracks[int(track_of_row[row])]
            _event(
                out, first,
                {"name": trace.symbol_name(row), "cat": "critical_path", "ph": "X", "pid": cp_pid, "tid": 1,
                 "args": {"row": row, "stream": stream, "queue": queue, "agent": agent}},
                ts_ns=start - origin, dur_ns=max(0, end - start),
            )
            counts.critical_slices += 1

    host_pid = _host_pid(trace, set(pid_of_agent.values()) | ({next_pid - 1} if path_rows else set()))
    flow_id = 0
    has_api = trace.api is not None and len(trace.api)
    if has_api or (trace.markers is not None and len(trace.markers)):
        _write_host_tracks(out, first, trace, host_pid)
    if has_api:
        flow_id = _write_api(out, first, trace, origin, host_pid, pid_of_agent, tid_of_track, track_of_row, tracks, counts)
    if trace.markers is not None and len(trace.markers):
        _write_markers(out, first, trace, origin, host_pid, pid_of_agent, tid_of_track, tracks, counts)

    if cp is not None and arrows is not None:
        for a, b in np.asarray(arrows, dtype=np.int64).reshape(-1, 2).tolist():
            flow_id += 1
            for row, ph in ((a, "s"), (b, "f")):
                agent, queue, stream = tracks[int(track_of_row[row])]
                fields = {"name": "dependency", "cat": "dependency", "ph": ph, "id": flow_id,
                          "pid": pid_of_agent[agent], "tid": tid_of_track[int(track_of_row[row])],
                          "args": {"from_row": a, "to_row": b}}
                if ph == "f":
                    fields["bp"] = "e"
                # The start sits inside the earlier slice (at its end), the finish at the later one's start.
                ts = int(trace.end[row]) - (1 if int(trace.end[row]) > int(trace.start[row]) else 0) if ph == "s" else int(trace.start[row])
                _event(out, first, fields, ts_ns=ts - origin)
            counts.dependency_flows += 1
    return origin



CHUNK_ROWS = 1 << 16  # rows turned into Python values at a time: bounded memory, no numpy scalars per row


def _write_kernel_slices(out, first, trace: Trace, origin: int, track_of_row, tracks, pid_of_agent, tid_of_track,
                         categories, on_path, slack, counts: ExportCounts) -> None:
    """One X event per dispatch, written chunk by chunk; names and categories JSON-encoded once."""
    names = [json.dumps(s.display_name or s.name) for s in trace.symbols]
    mangled = [json.dumps(s.name) for s in trace.symbols]
    cats = [json.dumps(c) for c in categories] if categories is not None else None
    pid_tid = [(pid_of_agent[a], tid_of_track[i]) for i, (a, _, _) in enumerate(tracks)]
    with_slack = slack is not None and len(slack) == len(trace)
    sep = ",\n"
    for lo in range(0, len(trace), CHUNK_ROWS):
        hi = min(len(trace), lo + CHUNK_ROWS)
        start = (trace.start[lo:hi] - origin).tolist()
        dur = np.maximum(trace.end[lo:hi] - trace.start[lo:hi], 0).tolist()
        kernel = trace.kernel[lo:hi].tolist()
        track = track_of_row[lo:hi].tolist()
        corr = trace.corr[lo:hi].tolist()
        grid = trace.grid[lo:hi].tolist()
        wg = trace.workgroup[lo:hi].tolist()
        crit = on_path[lo:hi].tolist() if on_path is not None else None
        sl = (np.round(slack[lo:hi] / 1000.0, 3)).tolist() if with_slack else None
        parts = []
        for i in range(hi - lo):
            k = kernel[i]
            pid, tid = pid_tid[track[i]]
            g, w = grid[i], wg[i]
            args = f'"kernel":{mangled[k]},"grid":[{g[0]},{g[1]},{g[2]}],"workgroup":[{w[0]},{w[1]},{w[2]}],"row":{lo + i}'
            if cats is not None:
                args += f',"category":{cats[k]}'
            if corr[i] != UNKNOWN:
                args += f',"correlation_id":{corr[i]}'
            if crit is not None:
                args += ',"on_critical_path":' + ("true" if crit[i] else "false")
                if sl is not None:
                    args += f',"slack_us":{sl[i]!r}' if math.isfinite(sl[i]) else ',"slack_us":null'
            parts.append(f'{{"name":{names[k]},"cat":"kernel","ph":"X","pid":{pid},"tid":{tid},"args":{{{args}}},'
                         f'"ts":{us(start[i])},"dur":{us(dur[i])}}}')
        if parts:
            out.write(("\n" if first[0] else sep) + sep.join(parts))
            first[0] = False
        counts.kernel_slices += hi - lo


def _write_host_tracks(out, first, trace: Trace, host_pid: int) -> None:
    """The host process and one named track per thread that made API calls or opened ranges."""
    _event(out, first, {"name": "process_name", "ph": "M", "pid": host_pid, "tid": 0,
                        "args": {"name": f"host process {trace.metadata.get('pid', '?')} (HIP API, roctx)"}})
    tids: set[int] = set()
    if trace.api is not None:
        tids.update(int(t) for t in np.unique(trace.api.tid).tolist())
    m = trace.markers
    if m is not None:
        host = (m.agent == UNKNOWN) & (m.kind != PROCESS_RANGE) & (m.tid != UNKNOWN)
        tids.update(int(t) for t in np.unique(m.tid[host]).tolist())
    for tid in sorted(tids):
        _event(out, first, {"name": "thread_name", "ph": "M", "pid": host_pid, "tid": tid, "args": {"name": f"thread {tid}"}})


def _write_markers(out, first, trace: Trace, origin: int, host_pid: int, pid_of_agent, tid_of_track, tracks,
                   counts: ExportCounts) -> None:
    """roctx ranges as slices: push/pop on their thread's track, start/stop (which may overlap anything) and
    ranges of unknown thread on lanes of their own, GPU-side annotations on a lane beside their stream."""
    m = trace.markers
    order = np.lexsort((-(m.end - m.start), m.start))  # parents before children at equal starts
    rows = order.tolist()
    gpu_lane_base = max(tid_of_track.values(), default=0) + 1
    own_lane_base = 1 << 30  # host tids are OS thread ids; keep the extra lanes clear of them
    placed: dict[int, tuple[int, int]] = {}
    free = [r for r in rows if m.agent[r] == UNKNOWN and (m.kind[r] == PROCESS_RANGE or m.tid[r] == UNKNOWN)]
    for r, lane in zip(free, _lanes([int(m.start[r]) for r in free], [int(m.end[r]) for r in free])):
        placed[r] = (host_pid, own_lane_base + lane)
    for lane in sorted({tid for _, tid in placed.values()}):
        _event(out, first, {"name": "thread_name", "ph": "M", "pid": host_pid, "tid": lane,
                            "args": {"name": f"roctx start/stop ranges {lane - own_lane_base + 1}"}})
    gpu = [r for r in rows if m.agent[r] != UNKNOWN]
    stream_track = {(a, s): i for i, (a, _q, s) in enumerate(tracks)}
    by_place: dict[tuple[int, int], list[int]] = {}
    for r in gpu:
        by_place.setdefault((int(m.agent[r]), int(m.stream[r])), []).append(r)
    next_tid = gpu_lane_base
    for (agent, stream), members in sorted(by_place.items()):
        if agent not in pid_of_agent:
            continue
        lanes = _lanes([int(m.start[r]) for r in members], [int(m.end[r]) for r in members])
        base = next_tid
        next_tid += max(lanes) + 1
        for lane in range(max(lanes) + 1):
            track = stream_track.get((agent, stream))
            sort = tid_of_track[track] if track is not None else base + lane
            _event(out, first, {"name": "thread_name", "ph": "M", "pid": pid_of_agent[agent], "tid": base + lane,
                                "args": {"name": f"stream {stream} annotations"}})
            _event(out, first, {"name": "thread_sort_index", "ph": "M", "pid": pid_of_agent[agent], "tid": base + lane,
                                "args": {"sort_index": sort}})
        for r, lane in zip(members, lanes):
            placed[r] = (pid_of_agent[agent], base + lane)
    for r in rows:
        pid, tid = placed.get(r, (host_pid, int(m.tid[r])))
        if m.agent[r] != UNKNOWN and r not in placed:
            continue
        name = m.name_of(r)
        start = int(m.start[r]) - origin
        if m.kind[r] == MARK:
            _event(out, first, {"name": name, "cat": "roctx", "ph": "i", "s": "t", "pid": pid, "tid": tid}, ts_ns=start)
            counts.marks += 1
        else:
            cat = "gpu_user_annotation" if m.agent[r] != UNKNOWN else "roctx"
            _event(out, first, {"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid},
                   ts_ns=start, dur_ns=max(0, int(m.end[r] - m.start[r])))
            counts.range_slices += 1


def _write_api(out, first, trace: Trace, origin: int, host_pid: int, pid_of_agent, tid_of_track, track_of_row, tracks, counts: ExportCounts) -> int:
    """HIP API calls on host thread tracks, and a flow from each launch call to its dispatch."""
    api = trace.api
    # Dispatch rows by correlation id: sorted once, looked up with searchsorted (no dict of rows).
    known = trace.corr != UNKNOWN
    rows_with_corr = np.nonzero(known)[0]
    order = np.argsort(trace.corr[rows_with_corr], kind="stable")
    sorted_corr = trace.corr[rows_with_corr][order]
    sorted_rows = rows_with_corr[order]
    flow_id = 0
    for row in range(len(api)):
        start, end = int(api.start[row]), int(api.end[row])
        tid = int(api.tid[row])
        args: dict[str, Any] = dict(api.args.get(row, {}))
        corr = int(api.corr[row])
        if corr != UNKNOWN:
            args["correlation_id"] = corr
        _event(
            out, first,
            {"name": api.name_of(row), "cat": "hip_api", "ph": "X", "pid": host_pid, "tid": tid, "args": args},
            ts_ns=start - origin, dur_ns=max(0, end - start),
        )
        counts.api_slices += 1
        if corr == UNKNOWN or not len(sorted_corr):
            continue
        i = int(np.searchsorted(sorted_corr, corr))
        if i >= len(sorted_corr) or int(sorted_corr[i]) != corr:
            continue
        d = int(sorted_rows[i])
        track = int(track_of_row[d])
        flow_id += 1
        _event(out, first, {"name": "launch", "cat": "launch", "ph": "s", "id": flow_id, "pid": host_pid, "tid": tid}, ts_ns=start - origin)
        agent = tracks[track][0]
        _event(
            out, first,
            {"name": "launch", "cat": "launch", "ph": "f", "bp": "e", "id": flow_id, "pid": pid_of_agent[agent], "tid": tid_of_track[track]},
            ts_ns=int(trace.start[d]) - origin,
        )
        counts.launch_flows += 1
    return flow_id


PFTRACE_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb")


def is_pftrace(path: Path) -> bool:
    """Whether an output name asks for Perfetto's protobuf format rather than JSON."""
    return Path(path).suffix.lower() in PFTRACE_SUFFIXES


def run_export(profile: Path, *, perfetto: Path, null_stream: str = "legacy", critical_path: bool = True) -> int:
    """`rocm-perf export PROFILE --perfetto OUT.json|OUT.pftrace`: read any profile format, write the trace."""
    from rocm_perf.analysis.critical_path import analyze_critical_path
    from rocm_perf.analysis.dag import build_dispatch_dag
    from rocm_perf.trace.load import load_trace

    if perfetto.parent and not perfetto.parent.exists():
        raise RocmPerfError(f"{perfetto}: the folder {perfetto.parent} does not exist")
    trace = load_trace(profile)
    if not len(trace) and (trace.api is None or not len(trace.api)):
        raise RocmPerfError(f"{profile}: the profile holds no kernel dispatches and no API calls: nothing to export")
    cp, arrows = None, None
    if critical_path and len(trace):
        dag = build_dispatch_dag(trace, null_stream=null_stream)  # once, for the path and the arrows
        cp = analyze_critical_path(trace, null_stream=null_stream, dag=dag)
        arrows = arrow_pairs(cp.dependency_edges, dag.chain, dag.order)
        del dag
    counts = export_perfetto(trace, perfetto, critical_path=cp, categories=_kernel_categories(trace),
                             null_stream=null_stream, arrows=arrows)
    print(
        f"wrote {perfetto}: {counts.kernel_slices} kernel slices on {counts.tracks} tracks, "
        f"{counts.api_slices} API calls, {counts.launch_flows} launch arrows, "
        f"{counts.dependency_flows} cross-stream arrows, {counts.critical_slices} slices on the critical path"
        + (f", {counts.range_slices} ranges and {counts.marks} marks" if counts.range_slices or counts.marks else "")
    )
    if is_pftrace(perfetto):
        print("open it at https://ui.perfetto.dev (Open trace file); times are the profile's own nanoseconds")
    else:
        print("open it at https://ui.perfetto.dev (Open trace file); times are microseconds from the first event"
              + ("; for large profiles OUT.pftrace (Perfetto's protobuf format) is a fraction of the size"
                 if counts.kernel_slices > 1_000_000 else ""))
    return 0
