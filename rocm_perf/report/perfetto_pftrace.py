"""Perfetto's own protobuf trace format (`.pftrace`) for a Trace: a fraction of the JSON's size,
written in numpy chunks (protobuf_rows.py), in bounded memory.

The same layout as the JSON export (perfetto_export.py): a process per GPU agent with a track per
(queue, stream), the host process with a track per thread (HIP API calls, roctx ranges), lanes for
ranges that do not nest, a "critical path" process, and flows from each launch call to its kernel
and along the DAG's cross-stream edges. Times are the trace's own nanoseconds, exactly.

Messages and field numbers are those of perfetto_trace.proto as the `perfetto` package on PyPI ships
it (perfetto/protos/perfetto/trace/perfetto_trace_pb2.py, release 0.59): Trace.packet = 1;
TracePacket timestamp = 8, trusted_packet_sequence_id = 10, track_event = 11, interned_data = 12,
sequence_flags = 13 (1 SEQ_INCREMENTAL_STATE_CLEARED, 2 SEQ_NEEDS_INCREMENTAL_STATE),
track_descriptor = 60; TrackDescriptor uuid = 1, name = 2, process = 3, thread = 4,
parent_uuid = 5; ProcessDescriptor pid = 1, process_name = 6; ThreadDescriptor pid = 1, tid = 2,
thread_name = 5; TrackEvent category_iids = 3, debug_annotations = 4, type = 9 (1 SLICE_BEGIN,
2 SLICE_END, 3 INSTANT), name_iid = 10, track_uuid = 11, flow_ids = 47, terminating_flow_ids = 48
(both fixed64); InternedData event_categories = 1, event_names = 2, debug_annotation_names = 3,
debug_annotation_string_values = 29, each entry {iid = 1, name (str) = 2}; DebugAnnotation
name_iid = 1, bool_value = 2, int_value = 4, string_value_iid = 17. The tests read the file back
with that package's classes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rocm_perf.report.protobuf_rows import (
    Padded,
    Rows,
    compress,
    fixed64_part,
    join,
    message_field,
    message_part,
    string_table,
    varint_field,
    varint_part,
)
from rocm_perf.trace.model import MARK, PROCESS_RANGE, UNKNOWN, Trace

SEQUENCE = 1
CLEARED, NEEDS_STATE = 1, 2
BEGIN, END, INSTANT = 1, 2, 3
CHUNK = 1 << 17  # rows encoded at a time
INTERNED_PER_PACKET = 20_000
LAUNCH_FLOW_BASE = 1
DEPENDENCY_FLOW_BASE = 1 << 48


@dataclass
class _Interned:
    """One interning table (event names, categories, annotation names or string values): iid = index + 1."""

    field_number: int
    texts: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    def iid(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.texts)
            self.texts.append(text)
        return self.index[text] + 1

    def iids(self, texts: list[str]) -> np.ndarray:
        return np.array([self.iid(t) for t in texts], dtype=np.int64)


class _Writer:
    def __init__(self, f, counts):
        self.f = f
        self.counts = counts
        self.names = _Interned(2)
        self.categories = _Interned(1)
        self.annotation_names = _Interned(3)
        self.strings = _Interned(29)
        self.next_uuid = 1

    def uuid(self) -> int:
        self.next_uuid += 1
        return self.next_uuid

    # ---- packets --------------------------------------------------------------------------

    def packets(self, bodies: Rows) -> None:
        """Write each row as one TracePacket (Trace.packet, field 1)."""
        self.f.write(message_field(1, bodies).tobytes())

    def track(self, uuid: int, name: str, *, parent: int | None = None, pid: int | None = None,
              tid: int | None = None, process_name: str | None = None) -> None:
        parts = [varint_field(1, np.array([uuid])), message_field(2, string_table([name]))]
        if process_name is not None:
            process = join(varint_field(1, np.array([pid or 0])), message_field(6, string_table([process_name])))
            parts.append(message_field(3, process))
        if tid is not None:
            thread = join(varint_field(1, np.array([pid or 0])), varint_field(2, np.array([tid])),
                          message_field(5, string_table([name])))
            parts.append(message_field(4, thread))
        if parent is not None:
            parts.append(varint_field(5, np.array([parent])))
        self.packets(join(varint_field(10, np.array([SEQUENCE])), message_field(60, join(*parts))))

    def interned_data(self, first: bool) -> None:
        """The interning tables so far, in packets of INTERNED_PER_PACKET entries."""
        tables = [t for t in (self.names, self.categories, self.annotation_names, self.strings) if t.texts]
        sent = False
        for table in tables:
            for lo in range(0, len(table.texts), INTERNED_PER_PACKET):
                texts = table.texts[lo: lo + INTERNED_PER_PACKET]
                iids = np.arange(lo + 1, lo + 1 + len(texts))
                entries = message_field(table.field_number, join(varint_field(1, iids),
                                                                 message_field(2, string_table(texts))))
                interned = Rows(entries.data, np.array([len(entries.data)], dtype=np.int64))
                flags = CLEARED if (first and not sent) else NEEDS_STATE
                self.packets(join(varint_field(10, np.array([SEQUENCE])), varint_field(13, np.array([flags])),
                                  message_field(12, interned)))
                sent = True
        if first and not sent:
            self.packets(join(varint_field(10, np.array([SEQUENCE])), varint_field(13, np.array([CLEARED]))))

    def packet_parts(self, parts: list[Padded]) -> None:
        """Write each row's parts as TracePackets (already wrapped by `packet`)."""
        self.f.write(compress(parts).tobytes())

    def slices(self, start: np.ndarray, end: np.ndarray, track: np.ndarray, name_iid: np.ndarray,
               category_iid: int, annotations: list[list[Padded]] = (),
               out_flows: list[tuple[np.ndarray, np.ndarray]] = (),
               in_flows: list[tuple[np.ndarray, np.ndarray]] = ()) -> None:
        """BEGIN and END packets for n slices (one chunk), each BEGIN followed by its END. Flows:
        (ids, present) per flow slot; an annotation is the parts of one DebugAnnotation."""
        n = len(start)
        event = varint_part(3, np.full(n, category_iid)) if category_iid else []
        for a in annotations:
            event += a
        event += varint_part(9, np.full(n, BEGIN)) + varint_part(10, name_iid) + varint_part(11, track)
        for ids, present in out_flows:
            event += fixed64_part(47, ids, present)
        for ids, present in in_flows:
            event += fixed64_part(48, ids, present)
        head = varint_part(10, np.full(n, SEQUENCE)) + varint_part(13, np.full(n, NEEDS_STATE))
        begin = packet(varint_part(8, start) + head + message_part(11, event))
        finish = packet(varint_part(8, end) + head + message_part(11, varint_part(9, np.full(n, END)) +
                                                                  varint_part(11, track)))
        self.packet_parts(begin + finish)

    def instants(self, ts: np.ndarray, track: np.ndarray, name_iid: np.ndarray, category_iid: int) -> None:
        n = len(ts)
        event = (varint_part(3, np.full(n, category_iid)) + varint_part(9, np.full(n, INSTANT)) +
                 varint_part(10, name_iid) + varint_part(11, track))
        self.packet_parts(packet(varint_part(8, ts) + varint_part(10, np.full(n, SEQUENCE)) +
                                 varint_part(13, np.full(n, NEEDS_STATE)) + message_part(11, event)))

    # ---- debug annotations (TrackEvent.debug_annotations = 4) -------------------------------

    def int_annotation(self, name: str, values: np.ndarray, present: np.ndarray | None = None) -> list[Padded]:
        n = len(values)
        return message_part(4, varint_part(1, np.full(n, self.annotation_names.iid(name))) + varint_part(4, values),
                            present)

    def bool_annotation(self, name: str, values: np.ndarray) -> list[Padded]:
        n = len(values)
        return message_part(4, varint_part(1, np.full(n, self.annotation_names.iid(name))) +
                            varint_part(2, values.astype(np.int64)))

    def string_annotation(self, name_iid: np.ndarray, value_iid: np.ndarray,
                          present: np.ndarray | None = None) -> list[Padded]:
        return message_part(4, varint_part(1, name_iid) + varint_part(17, value_iid), present)


def packet(parts: list[Padded]) -> list[Padded]:
    """Trace.packet (field 1) around one TracePacket's parts."""
    return message_part(1, parts)


def _flow_slots(owner: np.ndarray, flow_ids: np.ndarray, lo: int, hi: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per slot k: (flow id of the k-th flow of each row lo..hi-1, whether it has one); owner sorted."""
    a, b = np.searchsorted(owner, [lo, hi])
    rows, ids = owner[a:b] - lo, flow_ids[a:b]
    if not len(rows):
        return []
    first = np.ones(len(rows), dtype=bool)
    first[1:] = rows[1:] != rows[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0))
    slot = np.arange(len(rows)) - group_start
    out = []
    for k in range(int(slot.max()) + 1):
        take = slot == k
        values = np.zeros(hi - lo, dtype=np.int64)
        present = np.zeros(hi - lo, dtype=bool)
        values[rows[take]] = ids[take]
        present[rows[take]] = True
        out.append((values, present))
    return out


def export_pftrace(trace: Trace, out: Path, counts, *, critical_path: Any = None, arrows: np.ndarray | None = None,
                   categories: list[str] | None = None) -> None:
    """Write `trace` to `out` as a .pftrace (via a temp file and a rename); fills `counts` (ExportCounts).

    `arrows` are the (before, after) dispatch rows to draw as dependency flows."""
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    try:
        with open(tmp, "wb", buffering=1 << 20) as f:
            _write(_Writer(f, counts), trace, critical_path, arrows, categories)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


def _write(w: _Writer, trace: Trace, cp: Any, arrows: np.ndarray | None, categories: list[str] | None) -> None:
    from rocm_perf.report.perfetto_tracks import agent_label as _agent_label, host_pid as _host_pid
    from rocm_perf.report.perfetto_tracks import track_keys as _track_keys, track_label as _track_label

    counts = w.counts
    # Interned names first: kernels, then API calls, categories, annotation names and values.
    kernel_iid = w.names.iids([s.display_name or s.name for s in trace.symbols])
    mangled_iid = w.strings.iids([s.name for s in trace.symbols])
    category_iid = w.strings.iids(categories) if categories is not None else None
    api = trace.api if trace.api is not None and len(trace.api) else None
    api_iid = w.names.iids(api.names) if api is not None else None
    kernel_cat, api_cat, path_cat, roctx_cat = (w.categories.iid(c) for c in ("kernel", "hip_api", "critical_path", "roctx"))
    args = api.args if api is not None else {}
    from rocm_perf.trace.model import ApiArgs

    columnar = isinstance(args, ApiArgs)
    arg_name_iid = w.annotation_names.iids(args.names) if columnar else None
    arg_value_iid = w.strings.iids([v if v is not None else "null" for v in args.values]) if columnar else None
    markers = trace.markers if trace.markers is not None and len(trace.markers) else None
    marker_iid = w.names.iids(markers.names) if markers is not None else None
    for name in ("row", "correlation_id", "grid_x", "grid_y", "grid_z", "workgroup_x", "workgroup_y", "workgroup_z",
                 "kernel", "category", "on_critical_path", "slack_ns"):
        w.annotation_names.iid(name)
    w.interned_data(first=True)

    # Tracks: a process per agent, a track per (agent, queue, stream); host process, thread tracks.
    track_of_row, tracks = _track_keys(trace)
    agents = sorted({t[0] for t in tracks})
    process_uuid = {}
    for i, agent in enumerate(agents):
        process_uuid[agent] = w.uuid()
        w.track(process_uuid[agent], _agent_label(trace, agent), pid=i + 1, process_name=_agent_label(trace, agent))
    track_uuid = np.zeros(len(tracks), dtype=np.int64)
    for i, (agent, queue, stream) in enumerate(tracks):
        track_uuid[i] = w.uuid()
        w.track(int(track_uuid[i]), _track_label(queue, stream), parent=process_uuid[agent])
    counts.tracks = len(tracks)
    host_pid = _host_pid(trace, set(range(1, len(agents) + 2)))
    host_uuid = w.uuid()
    w.track(host_uuid, "host", pid=host_pid, process_name=f"host process {trace.metadata.get('pid', '?')} (HIP API, roctx)")
    thread_uuid: dict[int, int] = {}

    def thread_track(tid: int) -> int:
        if tid not in thread_uuid:
            thread_uuid[tid] = w.uuid()
            w.track(thread_uuid[tid], f"thread {tid}", pid=host_pid, tid=tid)
        return thread_uuid[tid]

    # Flows: launch call -> kernel (by correlation id), and the DAG's arrows.
    n = len(trace)
    launch_of_row = np.full(n, -1, dtype=np.int64)
    if api is not None and n:
        from rocm_perf.analysis.dag import launch_rows

        launch_of_row = launch_rows(trace)  # the API row of each dispatch's launch call
    has_launch = launch_of_row >= 0
    counts.launch_flows = int(has_launch.sum())
    arrows = np.zeros((0, 2), dtype=np.int64) if arrows is None else np.asarray(arrows, dtype=np.int64).reshape(-1, 2)
    arrow_ids = DEPENDENCY_FLOW_BASE + np.arange(len(arrows), dtype=np.int64)
    by_source = np.argsort(arrows[:, 0], kind="stable")
    by_target = np.argsort(arrows[:, 1], kind="stable")
    counts.dependency_flows = len(arrows)

    on_path = None
    slack = None
    if cp is not None:
        on_path = np.zeros(n, dtype=bool)
        on_path[np.asarray(cp.path, dtype=np.int64)] = True
        slack = getattr(cp, "slack", None)
    shapes_known = "shapes" not in trace.metadata.get("not_read", [])
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        rows = np.arange(lo, hi)
        k = trace.kernel[lo:hi].astype(np.int64)
        notes = [w.int_annotation("row", rows)]
        corr = trace.corr[lo:hi]
        notes.append(w.int_annotation("correlation_id", corr, corr != UNKNOWN))
        if shapes_known:
            for axis, label in enumerate("xyz"):
                notes.append(w.int_annotation(f"grid_{label}", trace.grid[lo:hi, axis]))
            for axis, label in enumerate("xyz"):
                notes.append(w.int_annotation(f"workgroup_{label}", trace.workgroup[lo:hi, axis]))
        notes.append(w.string_annotation(np.full(hi - lo, w.annotation_names.iid("kernel")), mangled_iid[k]))
        if category_iid is not None:
            notes.append(w.string_annotation(np.full(hi - lo, w.annotation_names.iid("category")), category_iid[k]))
        if on_path is not None:
            notes.append(w.bool_annotation("on_critical_path", on_path[lo:hi]))
            if slack is not None and len(slack) == n:
                notes.append(w.int_annotation("slack_ns", np.asarray(slack[lo:hi], dtype=np.int64)))
        launch = [(LAUNCH_FLOW_BASE + launch_of_row[lo:hi], has_launch[lo:hi])] if has_launch[lo:hi].any() else []
        w.slices(trace.start[lo:hi], trace.start[lo:hi] + np.maximum(trace.end[lo:hi] - trace.start[lo:hi], 0),
                 track_uuid[track_of_row[lo:hi]], kernel_iid[k], kernel_cat, notes,
                 out_flows=_flow_slots(arrows[by_source, 0], arrow_ids[by_source], lo, hi),
                 in_flows=launch + _flow_slots(arrows[by_target, 1], arrow_ids[by_target], lo, hi))
        counts.kernel_slices += hi - lo

    if cp is not None and len(cp.path):
        path = np.asarray(cp.path, dtype=np.int64)
        path = path[np.argsort(trace.start[path], kind="stable")]  # shown in time order
        cp_uuid = w.uuid()
        w.track(cp_uuid, "critical path", pid=max(host_pid, len(agents) + 1) + 1, process_name="critical path")
        start, end = trace.start[path], np.maximum(trace.end[path], trace.start[path])
        # Slices of one track must nest: a path dispatch that overlaps the one before goes to the next lane.
        lane = _lanes_in_order(start, end)
        lane_uuid = np.array([cp_uuid] + [w.uuid() for _ in range(int(lane.max()))], dtype=np.int64)
        for extra in range(1, len(lane_uuid)):
            w.track(int(lane_uuid[extra]), f"critical path (overlapping {extra})", parent=cp_uuid)
        for lo in range(0, len(path), CHUNK):
            hi = min(len(path), lo + CHUNK)
            w.slices(start[lo:hi], end[lo:hi], lane_uuid[lane[lo:hi]], kernel_iid[trace.kernel[path[lo:hi]].astype(np.int64)],
                     path_cat, [w.int_annotation("row", path[lo:hi])])
        counts.critical_slices = len(path)

    if api is not None:
        distinct_tids = np.unique(api.tid)
        tid_uuid = np.array([thread_track(int(t)) for t in distinct_tids.tolist()], dtype=np.int64)
        launch_flow = np.full(len(api), -1, dtype=np.int64)
        launch_flow[launch_of_row[has_launch]] = LAUNCH_FLOW_BASE + launch_of_row[has_launch]
        for lo in range(0, len(api), CHUNK):
            hi = min(len(api), lo + CHUNK)
            notes = [w.int_annotation("correlation_id", api.corr[lo:hi], api.corr[lo:hi] != UNKNOWN)]
            if columnar and len(args.row):
                a, b = np.searchsorted(args.row, [lo, hi])
                for values, present, name_code in _arg_slots(args, a, b, lo, hi):
                    notes.append(w.string_annotation(arg_name_iid[name_code], arg_value_iid[values], present))
            flows = launch_flow[lo:hi]
            w.slices(api.start[lo:hi], np.maximum(api.end[lo:hi], api.start[lo:hi]),
                     tid_uuid[np.searchsorted(distinct_tids, api.tid[lo:hi])], api_iid[api.name[lo:hi].astype(np.int64)],
                     api_cat, notes, out_flows=[(flows, flows >= 0)] if (flows >= 0).any() else [])
            counts.api_slices += hi - lo

    if markers is not None:
        _write_markers(w, trace, markers, marker_iid, roctx_cat, thread_track, process_uuid, tracks, track_uuid, host_uuid)
    w.interned_data(first=False)  # names first met while writing (none today), for a reader that wants them


def _arg_slots(args, a: int, b: int, lo: int, hi: int):
    """Per argument position k of the API rows lo..hi-1: (value code, present, name code) arrays."""
    rows = args.row[a:b] - lo
    if not len(rows):
        return
    first = np.ones(len(rows), dtype=bool)
    first[1:] = rows[1:] != rows[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0))
    slot = np.arange(len(rows)) - group_start
    for k in range(int(slot.max()) + 1):
        take = slot == k
        values = np.zeros(hi - lo, dtype=np.int64)
        names = np.zeros(hi - lo, dtype=np.int64)
        present = np.zeros(hi - lo, dtype=bool)
        values[rows[take]] = args.value[a:b][take]
        names[rows[take]] = args.name[a:b][take]
        present[rows[take]] = True
        yield values, present, names


def _lanes_in_order(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """A lane per interval, intervals in start order: lane 0 unless it overlaps lane 0's last one, ..."""
    if not len(start):
        return np.zeros(0, dtype=np.int64)
    if len(start) < 2 or bool((start[1:] >= np.maximum.accumulate(end)[:-1]).all()):
        return np.zeros(len(start), dtype=np.int64)
    lanes: list[int] = []  # last end per lane
    out = np.zeros(len(start), dtype=np.int64)
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist())):
        for k, last in enumerate(lanes):
            if s >= last:
                lanes[k] = e
                out[i] = k
                break
        else:
            lanes.append(e)
            out[i] = len(lanes) - 1
    return out


def _write_markers(w: _Writer, trace: Trace, m, marker_iid, roctx_cat, thread_track, process_uuid, tracks, track_uuid,
                   host_uuid) -> None:
    """roctx push/pop ranges on their thread's track, start/stop ranges and ranges of no thread on lanes of
    their own, GPU-side annotations on lanes beside their stream, marks as instants."""
    from rocm_perf.report.perfetto_tracks import lanes as _lanes

    order = np.lexsort((-(m.end - m.start), m.start))  # parents before children at equal starts
    track = np.zeros(len(m), dtype=np.int64)
    gpu = m.agent != UNKNOWN
    free = ~gpu & ((m.kind == PROCESS_RANGE) | (m.tid == UNKNOWN))
    free_rows = order[free[order]]
    lane_tracks: dict[tuple, int] = {}
    for r, lane in zip(free_rows.tolist(), _lanes(m.start[free_rows].tolist(), m.end[free_rows].tolist())):
        key = ("free", lane)
        if key not in lane_tracks:
            lane_tracks[key] = w.uuid()
            w.track(lane_tracks[key], f"roctx start/stop ranges {lane + 1}", parent=host_uuid)
        track[r] = lane_tracks[key]
    stream_parent = {(a, s): int(track_uuid[i]) for i, (a, _q, s) in enumerate(tracks)}
    gpu_rows = order[gpu[order]]
    for place in sorted({(int(m.agent[r]), int(m.stream[r])) for r in gpu_rows.tolist()}):
        members = [r for r in gpu_rows.tolist() if (int(m.agent[r]), int(m.stream[r])) == place]
        parent = process_uuid.get(place[0])
        if parent is None:
            continue
        for r, lane in zip(members, _lanes(m.start[members].tolist(), m.end[members].tolist())):
            key = (place, lane)
            if key not in lane_tracks:
                lane_tracks[key] = w.uuid()
                w.track(lane_tracks[key], f"stream {place[1]} annotations", parent=stream_parent.get(place, parent))
            track[r] = lane_tracks[key]
    for r in order[~gpu[order] & ~free[order]].tolist():
        track[r] = thread_track(int(m.tid[r]))
    placed = order[track[order] > 0]
    ranges = placed[m.kind[placed] != MARK]
    marks = placed[m.kind[placed] == MARK]
    if len(ranges):
        w.slices(m.start[ranges], np.maximum(m.end[ranges], m.start[ranges]), track[ranges],
                 marker_iid[m.name[ranges].astype(np.int64)], roctx_cat)
        w.counts.range_slices += len(ranges)
    if len(marks):
        w.instants(m.start[marks], track[marks], marker_iid[m.name[marks].astype(np.int64)], roctx_cat)
        w.counts.marks += len(marks)
