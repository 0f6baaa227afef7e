"""Write a Trace as a rocpd schema-v3 database (the host backend's profiles, generated benchmarks).

The file has one uuid set, the plain-name views and the analysis views (`kernels`, `regions`,
`region_args`, `top_kernels`, `busy`), and reads back through `read_rocpd` to the same Trace.
It is written to a temporary file beside the target and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from rocm_perf.disk_space import is_out_of_space
from rocm_perf.errors import RocmPerfError
from rocm_perf.sqlite_db import connect_bulk
from rocm_perf.trace.host_clocks import DESCRIPTIONS
from rocm_perf.trace.model import MARK, PROCESS_RANGE, UNKNOWN, Agent, Trace
from rocm_perf.trace.rocpd_read import DIGEST_ARG
from rocm_perf.trace.rocpd_schema import SCHEMA_VERSION, create_statements, new_uuid, table_columns, table_name

_AGENT_COLUMN_KEYS = ("absolute_index", "logical_index", "type_index", "model_name", "vendor_name", "user_name")
_API_CATEGORY = "HIP_RUNTIME_API_EXT"
_DISPATCH_CATEGORY = "KERNEL_DISPATCH"
_DIGEST_CATEGORY = "ROCM_PERF"  # a region that only carries digests no copy call could take
_COPY_CALLS = ("hipMemcpy", "hipMemcpyAsync")
# roctx as rocprofv3 of ROCm 7 files it (see rocpd_read.MARKER_CATEGORIES): a range is a region named
# after its kind with the message in the event's extdata; a mark is a sample on the category's track.
_MARKER_CATEGORY = "MARKER_CORE_RANGE_API"
_THREAD_RANGE_NAME = "roctxThreadRangeA"
_PROCESS_RANGE_NAME = "roctxProcessRangeA"
_ARG_TYPES = {"stream": "hipStream_t", "event": "hipEvent_t", DIGEST_ARG: "digest"}


def write_rocpd(trace: Trace, path: Path, *, command: str = "", hostname: str = "", pid: int = 0) -> Path:
    """Write `trace` to `path` (rocpd v3), replacing it atomically; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        tmp.unlink()  # sqlite wants to create the file itself
        con = connect_bulk(tmp)
        try:
            _Writer(con, trace, command=command, hostname=hostname, pid=pid).write()
            con.commit()
        finally:
            con.close()
        os.replace(tmp, path)
    except sqlite3.Error as e:
        tmp.unlink(missing_ok=True)
        if is_out_of_space(e):  # SQLITE_FULL: the disk's failure, reported like any full disk
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from e
        raise RocmPerfError(f"{path}: cannot write the profile database ({e})") from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _hex(value: int) -> str:
    return hex(value + (1 << 64) if value < 0 else value)


class _Writer:
    def __init__(self, con: sqlite3.Connection, trace: Trace, *, command: str, hostname: str, pid: int):
        self.con = con
        self.trace = trace
        self.guid = new_uuid()
        md = trace.metadata
        self.command = command or md.get("command") or ""
        self.hostname = hostname or md.get("hostname") or ""
        self.pid = int(pid or md.get("pid") or 0)
        self.strings: dict[str, int] = {}
        self.next_event = 1

    # ---- helpers ---------------------------------------------------------------------------

    def insert(self, base: str, rows, columns: list[str] | None = None, with_id: bool = True) -> None:
        cols = (["id"] if with_id else []) + (columns or table_columns(base))
        names = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" * len(cols))
        self.con.executemany(f'INSERT INTO "{table_name(base, self.guid)}" ({names}) VALUES ({marks})', rows)

    def string_id(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = len(self.strings) + 1
        return self.strings[text]

    # ---- the file --------------------------------------------------------------------------

    def write(self) -> None:
        for statement in create_statements(self.guid):
            self.con.execute(statement)
        self.con.executemany(
            f'INSERT INTO "{table_name("rocpd_metadata", self.guid)}" (tag, value) VALUES (?, ?)',
            [("schema_version", SCHEMA_VERSION), ("uuid", "_" + self.guid.replace("-", "_")), ("guid", self.guid)],
        )
        self.write_node_process_threads()
        self.write_agents()
        self.write_queues_streams()
        self.write_symbols()
        self.write_dispatches()
        self.write_counters()
        self.write_regions()
        self.write_markers()
        self.insert("rocpd_string", [(i, s) for s, i in self.strings.items()], ["string"])

    def write_node_process_threads(self) -> None:
        md = self.trace.metadata
        node = md.get("node") or {}
        host = self.hostname
        self.insert(
            "rocpd_info_node",
            [(1, abs(hash((host, self.guid))) % (1 << 62), self.guid.replace("-", ""), node.get("system_name"),
              host, node.get("release"), node.get("version"), node.get("hardware_name"), None)],
            ["hash", "machine_id", "system_name", "hostname", "release", "version", "hardware_name", "domain_name"],
        )
        self.insert(
            "rocpd_info_process",
            [(self.pid, 1, None, self.pid, self.command, json.dumps(md.get("environment") or {}),
              json.dumps(md.get("profiler_config") or {}))],
            ["nid", "ppid", "pid", "command", "environment", "extdata"],
        )
        tids = {self.pid}
        if self.trace.api is not None:
            tids.update(int(t) for t in np.unique(self.trace.api.tid).tolist() if t >= 0)
        if self.trace.markers is not None:
            tids.update(int(t) for t in np.unique(self.trace.markers.tid).tolist() if t >= 0)
        if self.trace.tid is not None:
            tids.update(int(t) for t in np.unique(self.trace.tid).tolist() if t >= 0)
        # Thread rows use the OS thread id as their row id, so region/dispatch `tid` reads either way.
        self.insert(
            "rocpd_info_thread",
            [(t, 1, None, self.pid, t, "main" if t == self.pid else None) for t in sorted(tids)],
            ["nid", "ppid", "pid", "tid", "name"],
        )

    def write_agents(self) -> None:
        agents = list(self.trace.agents)
        known = {a.id for a in agents}
        for agent_id in np.unique(self.trace.agent).tolist():
            if agent_id not in known:  # every dispatch needs an agent row for the views to join
                agents.append(Agent(id=int(agent_id), type="GPU", name="unknown"))
        rows = []
        for a in sorted(agents, key=lambda a: a.id):
            extra = dict(a.extra)
            columns = {k: extra.pop(k, None) for k in _AGENT_COLUMN_KEYS}
            if a.cu_count is not None:
                extra["cu_count"] = a.cu_count
            rows.append(
                (a.id, 1, self.pid, a.type if a.type in ("CPU", "GPU") else None, columns["absolute_index"],
                 columns["logical_index"], columns["type_index"], a.name, columns["model_name"],
                 columns["vendor_name"], a.product, columns["user_name"], json.dumps(extra))
            )
        self.insert(
            "rocpd_info_agent",
            rows,
            ["nid", "pid", "type", "absolute_index", "logical_index", "type_index", "name", "model_name",
             "vendor_name", "product_name", "user_name", "extdata"],
        )

    def write_queues_streams(self) -> None:
        md = self.trace.metadata
        queues = {int(k): v for k, v in (md.get("queues") or {}).items()}
        for q in np.unique(self.trace.queue).tolist():
            if q >= 0:
                queues.setdefault(q, f"Queue {q}")
        self.insert("rocpd_info_queue", [(q, 1, self.pid, name) for q, name in sorted(queues.items())],
                    ["nid", "pid", "name"])
        streams = {int(k): dict(v) for k, v in (md.get("streams") or {}).items()}
        for s in np.unique(self.trace.stream).tolist():
            if s >= 0:
                streams.setdefault(s, {"name": "Default Stream" if s == 0 else f"Stream {s}", "handle": None})
        rows = []
        for s, info in sorted(streams.items()):
            handle = info.get("handle")
            extdata = {"stream": _hex(int(handle))} if handle is not None else {}
            rows.append((s, 1, self.pid, info.get("name"), json.dumps(extdata)))
        self.insert("rocpd_info_stream", rows, ["nid", "pid", "name", "extdata"])

    def write_symbols(self) -> None:
        self.insert("rocpd_info_code_object", [(1, 1, self.pid, None, "memory://rocm-perf", "MEMORY")],
                    ["nid", "pid", "agent_id", "uri", "storage_type"])
        self.insert(
            "rocpd_info_kernel_symbol",
            [(i + 1, 1, self.pid, 1, s.name, s.display_name, s.lds_bytes, s.scratch_bytes, s.sgpr, s.vgpr, s.agpr)
             for i, s in enumerate(self.trace.symbols)],
            ["nid", "pid", "code_object_id", "kernel_name", "display_name", "group_segment_size",
             "private_segment_size", "sgpr_count", "arch_vgpr_count", "accum_vgpr_count"],
        )

    def write_dispatches(self) -> None:
        t = self.trace
        n = len(t)
        if n == 0:
            return
        category = self.string_id(_DISPATCH_CATEGORY)
        region_name = self.string_id("")
        first_event = self.next_event
        event_ids = np.arange(first_event, first_event + n, dtype=np.int64)
        self.dispatch_events = event_ids
        self.next_event += n
        self.insert(
            "rocpd_event",
            zip(event_ids.tolist(), [category] * n, t.corr.tolist(), [0] * n, [0] * n),
            ["category_id", "stack_id", "parent_stack_id", "correlation_id"],
        )
        lds = np.array([s.lds_bytes or 0 for s in t.symbols], dtype=np.int64)
        scratch = np.array([s.scratch_bytes or 0 for s in t.symbols], dtype=np.int64)
        kernel = t.kernel.astype(np.int64)
        tids = np.where(t.tid >= 0, t.tid, self.pid).tolist() if t.tid is not None else [self.pid] * n
        rows = zip(
            range(1, n + 1), [1] * n, [self.pid] * n, tids, t.agent.tolist(), (kernel + 1).tolist(),
            range(1, n + 1), t.queue.tolist(), t.stream.tolist(), t.start.tolist(), t.end.tolist(),
            scratch[kernel].tolist() if len(scratch) else [0] * n,
            t.lds_bytes.tolist() if t.lds_bytes is not None else (lds[kernel].tolist() if len(lds) else [0] * n),
            *(t.workgroup[:, i].tolist() for i in range(3)), *(t.grid[:, i].tolist() for i in range(3)),
            [region_name] * n, event_ids.tolist(),
        )
        self.insert(
            "rocpd_kernel_dispatch",
            rows,
            ["nid", "pid", "tid", "agent_id", "kernel_id", "dispatch_id", "queue_id", "stream_id", "start", "end",
             "private_segment_size", "group_segment_size", "workgroup_size_x", "workgroup_size_y",
             "workgroup_size_z", "grid_size_x", "grid_size_y", "grid_size_z", "region_name_id", "event_id"],
        )

    def write_counters(self) -> None:
        """Trace.counters as rocprofv3 stores them: a rocpd_info_pmc row per counter and agent, and a
        rocpd_pmc_event row per dispatch that has a value, joined through the dispatch's event.
        The host backend's clocks (trace/host_clocks.py) go the same way, on its CPU agent."""
        t = self.trace
        if not t.counters or not len(t):
            return
        agent_type = {a.id: a.type for a in t.agents}
        infos, events = [], []
        for name in sorted(t.counters):
            column = np.asarray(t.counters[name], dtype=np.float64)
            for agent_id in np.unique(t.agent).tolist():
                rows = np.flatnonzero((t.agent == agent_id) & np.isfinite(column))
                if not len(rows):
                    continue
                pmc_id = len(infos) + 1
                infos.append((pmc_id, 1, self.pid, int(agent_id), agent_type.get(int(agent_id), "GPU"), name, name,
                              DESCRIPTIONS.get(name), name.split("_", 1)[0], int(name.endswith("_sum"))))
                events += zip(self.dispatch_events[rows].tolist(), [pmc_id] * len(rows), column[rows].tolist())
        self.insert("rocpd_info_pmc", infos, ["nid", "pid", "agent_id", "target_arch", "name", "symbol", "description",
                                               "block", "is_derived"])
        self.insert("rocpd_pmc_event", events, ["event_id", "pmc_id", "value"], with_id=False)

    def write_regions(self) -> None:
        api = self.trace.api
        regions: list[tuple[int, int, int, str, str, int, dict[str, str]]] = []  # start, end, tid, name, cat, corr, args
        if api is not None:
            for row in range(len(api)):
                args = dict(api.args.get(row, {}))
                # Columns are the truth for ordering arguments: make sure the args carry them.
                if api.stream[row] != UNKNOWN and "stream" not in args:
                    args["stream"] = _hex(int(api.stream[row]))
                if api.event[row] != UNKNOWN and "event" not in args:
                    args["event"] = _hex(int(api.event[row]))
                regions.append((int(api.start[row]), int(api.end[row]), int(api.tid[row]), api.name_of(row),
                                _API_CATEGORY, int(api.corr[row]), args))
        self._place_digests(regions)
        if not regions:
            return
        region_rows, event_rows, arg_rows = [], [], []
        for rid, (start, end, tid, name, category, corr, args) in enumerate(regions, start=1):
            event_id = self.next_event
            self.next_event += 1
            event_rows.append((event_id, self.string_id(category), corr, 0, 0))
            region_rows.append((rid, 1, self.pid, tid if tid >= 0 else self.pid, start, end, self.string_id(name), event_id))
            for position, (arg_name, value) in enumerate(args.items()):
                arg_rows.append((event_id, position, _ARG_TYPES.get(arg_name, ""), arg_name, value))
        self.insert("rocpd_event", event_rows, ["category_id", "stack_id", "parent_stack_id", "correlation_id"])
        self.insert("rocpd_region", region_rows, ["nid", "pid", "tid", "start", "end", "name_id", "event_id"])
        self.insert("rocpd_arg", arg_rows, ["event_id", "position", "type", "name", "value"], with_id=False)

    def write_markers(self) -> None:
        """Host-side ranges and marks; GPU-side annotations (PyTorch traces) have no rocpd form and are left out."""
        m = self.trace.markers
        if m is None or not len(m):
            return
        used = [int(self.trace.corr.max())] if len(self.trace) else []
        if self.trace.api is not None and len(self.trace.api):
            used.append(int(self.trace.api.corr.max()))
        corr = max(used + [0]) + 1  # rocprofv3 numbers markers from the same internal correlation ids
        category = self.string_id(_MARKER_CATEGORY)
        first_region = self.con.execute(f'SELECT COALESCE(MAX(id), 0) FROM "{table_name("rocpd_region", self.guid)}"')
        region_id = int(first_region.fetchone()[0]) + 1
        events, regions, samples, tracks = [], [], [], {}
        for row in range(len(m)):
            if m.agent[row] != UNKNOWN:
                continue
            event_id = self.next_event
            self.next_event += 1
            tid = int(m.tid[row]) if m.tid[row] >= 0 else self.pid
            events.append((event_id, category, corr, corr, 0, json.dumps({"message": m.name_of(row)})))
            if m.kind[row] == MARK:
                track = tracks.setdefault(tid, len(tracks) + 1)
                samples.append((corr, track, int(m.start[row]), event_id))
            else:
                name = _PROCESS_RANGE_NAME if m.kind[row] == PROCESS_RANGE else _THREAD_RANGE_NAME
                regions.append((region_id, 1, self.pid, tid, int(m.start[row]), int(m.end[row]), self.string_id(name),
                                event_id))
                region_id += 1
            corr += 1
        self.insert("rocpd_event", events, ["category_id", "stack_id", "parent_stack_id", "correlation_id", "extdata"])
        self.insert("rocpd_region", regions, ["nid", "pid", "tid", "start", "end", "name_id", "event_id"])
        self.insert("rocpd_track", [(track, 1, self.pid, tid, category, "{}") for tid, track in tracks.items()],
                    ["nid", "pid", "tid", "name_id", "extdata"])
        self.insert("rocpd_sample", samples, ["track_id", "timestamp", "event_id"])

    def _place_digests(self, regions: list[tuple[Any, ...]]) -> None:
        """Put each digest on the copy call that produced it (in order), unless the API args already hold them."""
        digests = list(self.trace.digests)
        held = [r[6][DIGEST_ARG] for r in regions if DIGEST_ARG in r[6]]
        if held:
            if held != digests[: len(held)]:
                raise ValueError("write_rocpd: Trace.digests disagree with the digests in the API call arguments")
            digests = digests[len(held) :]
        if not digests:
            return
        copies = [
            i for i, r in enumerate(regions)
            if r[3] in _COPY_CALLS and DIGEST_ARG not in r[6] and "HostToDevice" not in r[6].get("kind", "")
            and "DeviceToDevice" not in r[6].get("kind", "")
        ]
        for i, digest in zip(copies, list(digests)):
            regions[i][6][DIGEST_ARG] = digest
            digests.pop(0)
        # Digests with no copy call to carry them (a trace without an API trace) keep their order
        # on regions of their own, after everything else.
        last = max([int(self.trace.end.max())] if len(self.trace) else [0])
        for k, digest in enumerate(digests):
            regions.append((last + k, last + k, self.pid, "rocm_perf_digest", _DIGEST_CATEGORY, -1, {DIGEST_ARG: digest}))
