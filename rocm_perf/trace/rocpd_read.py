"""Read a rocpd schema-v3 SQLite database (what rocprofv3 writes, and what our host backend writes).

Real tables are `<name>_<uuid>`; a merged file holds several uuid sets whose plain-name views
cover only one of them, so we find the tables through sqlite_master and read each set directly,
never through the views. Ids are only unique within a set: kernel symbols are remapped to one
global list; agent, queue and stream ids are kept as the file says (sets of one node share them).
Hardware counters (`rocpd_info_pmc` + `rocpd_pmc_event`, joined to a dispatch through its
`event_id`, as the schema's own `counters_collection` view joins them) become per-dispatch columns.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import (
    MARK,
    PROCESS_RANGE,
    THREAD_RANGE,
    UNKNOWN,
    Agent,
    ApiCalls,
    KernelSymbol,
    Markers,
    MemoryOps,
    Trace,
)
from rocm_perf.trace.sqlite_file import int_columns, open_readonly, table_names

# `_0197a3c0_0000_4000_8000_000000000001`: a UUID with '-' replaced by '_'.
_UUID_SUFFIX = r"_[0-9a-fA-F]{8}_[0-9a-fA-F]{4}_[0-9a-fA-F]{4}_[0-9a-fA-F]{4}_[0-9a-fA-F]{12}"
_DISPATCH_TABLE = re.compile(r"^rocpd_kernel_dispatch(" + _UUID_SUFFIX + r")?$")

DIGEST_ARG = "rocm_perf_digest"
# Region categories that are HIP API calls (rocprofv3: HIP_RUNTIME_API, HIP_RUNTIME_API_EXT,
# HIP_COMPILER_API...). Markers and other regions are not API calls that order GPU work.
_API_CATEGORY_PREFIX = "HIP"
# roctx as rocprofv3 --marker-trace writes it (rocprofiler-sdk, source/lib/output/generateRocpd.cpp and
# the marker api_id.h of each release): ROCm 7 files a push..pop range as one region of category
# MARKER_CORE_RANGE_API named `roctxThreadRangeA` (start..stop: `roctxProcessRangeA`); ROCm 6.4 as
# category MARKER_CORE_API named after the opening call (`roctxRangePushA`, `roctxRangeStartA`).
# The message is `rocpd_event.extdata` {"message": ...}. A zero-length record (`roctxMarkA`) is a
# `rocpd_sample` on a track named after its category, not a region.
MARKER_CATEGORIES = ("MARKER_CORE_RANGE_API", "MARKER_CORE_API")
MARKER_KIND_OF_OPERATION = {
    "roctxThreadRangeA": THREAD_RANGE,
    "roctxRangePushA": THREAD_RANGE,
    "roctxProcessRangeA": PROCESS_RANGE,
    "roctxRangeStartA": PROCESS_RANGE,
    "roctxMarkA": MARK,
}


def find_uuid_sets(con: sqlite3.Connection) -> list[str]:
    """The table-name suffixes of every rocpd set in the file ('' for un-suffixed tables), in file order."""
    suffixes = []
    for name in table_names(con):
        m = _DISPATCH_TABLE.match(name)
        if m:
            suffixes.append(m.group(1) or "")
    return suffixes


def is_rocpd(con: sqlite3.Connection) -> bool:
    return bool(find_uuid_sets(con))


@dataclass
class _SetTables:
    """The table names of one uuid set (None where the set lacks that table)."""

    suffix: str
    present: set[str]

    def get(self, base: str) -> str | None:
        name = f"{base}{self.suffix}"
        return name if name in self.present else None


def read_rocpd(path: Path) -> Trace:
    """Read every uuid set of a rocpd v3 database into one Trace (dispatches sorted by start)."""
    with open_readonly(path) as con:
        present = set(table_names(con))
        suffixes = find_uuid_sets(con)
        if not suffixes:
            raise RocmPerfError(f"{path}: SQLite database without rocpd_kernel_dispatch tables (not a rocpd v3 profile)")
        reader = _Reader(con)
        for suffix in suffixes:
            reader.read_set(_SetTables(suffix, present))
        trace = reader.finish()
    trace.metadata.update(format="rocpd-v3", source_path=str(path))
    return trace


def parse_pointer(value: str | None) -> int:
    """A pointer argument as rocprofv3 prints it ('0x55d1c0a3e2b0', '0', 'nullptr') -> int; UNKNOWN if unparsable."""
    if value is None:
        return UNKNOWN
    text = value.strip().lower()
    if text in ("", "nullptr", "(nil)", "null"):
        return 0
    try:
        number = int(text, 16) if text.startswith("0x") else int(text)
    except ValueError:
        return UNKNOWN
    # Keep pointer values inside int64 (kernel-space addresses would otherwise overflow).
    return number - (1 << 64) if number >= (1 << 63) else number


def _json(text: Any) -> dict:
    if not text:
        return {}
    if isinstance(text, bytes):  # JSONB columns may come back as blobs
        text = text.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _lookup(ids: np.ndarray, keys: np.ndarray, values: np.ndarray, missing: int = UNKNOWN) -> np.ndarray:
    """Vectorized dict lookup: values[keys == id] for each id, `missing` where absent."""
    if len(keys) == 0:
        return np.full(len(ids), missing, dtype=values.dtype if len(values) else np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    pos = np.clip(np.searchsorted(sorted_keys, ids), 0, len(sorted_keys) - 1)
    found = sorted_keys[pos] == ids
    out = values[order][pos]
    return np.where(found, out, missing)


_AGENT_COLUMNS = ("absolute_index", "logical_index", "type_index", "model_name", "vendor_name", "user_name")


class _Reader:
    """Accumulates the uuid sets of one file, then builds the Trace."""

    def __init__(self, con: sqlite3.Connection):
        self.con = con
        self.symbols: list[KernelSymbol] = []
        self._symbol_index: dict[tuple, int] = {}
        self.agents: dict[int, Agent] = {}
        self.dispatch_parts: list[list[np.ndarray]] = []  # per uuid set: its 13 columns
        self.kernel_parts: list[np.ndarray] = []
        self.counter_parts: list[tuple[int, dict[str, np.ndarray]]] = []  # per uuid set: (rows, columns)
        self.api_parts: list[dict[str, Any]] = []
        self.digests: list[tuple[int, int, str]] = []  # (start, order, digest)
        self.dispatch_tids: list[np.ndarray] = []
        self.marker_rows: list[dict[str, Any]] = []
        self.copy_rows: list[tuple] = []
        self.metadata: dict[str, Any] = {"uuid_sets": 0, "streams": {}, "queues": {}}

    # ---- one uuid set ----------------------------------------------------------------------

    def read_set(self, t: _SetTables) -> None:
        self.metadata["uuid_sets"] += 1
        first = self.metadata["uuid_sets"] == 1
        if first:
            self._read_node_and_process(t)
        self._read_agents(t)
        self._read_streams_and_queues(t)
        symbol_map = self._read_symbols(t)
        threads = self._thread_map(t)
        self._read_dispatches(t, symbol_map, threads)
        self._read_counters(t)
        self._read_api(t, threads)
        self._read_markers(t, threads)
        self._read_copies(t, threads)

    def _thread_map(self, t: _SetTables) -> tuple[np.ndarray, np.ndarray]:
        """rocpd_info_thread row id -> OS thread id, as two sorted-lookup arrays."""
        threads = {}
        if thread := t.get("rocpd_info_thread"):
            threads = {k: v for k, v in self.con.execute(f'SELECT id, tid FROM "{thread}"').fetchall() if v is not None}
        return (np.fromiter(threads.keys(), dtype=np.int64, count=len(threads)),
                np.fromiter(threads.values(), dtype=np.int64, count=len(threads)))

    @staticmethod
    def _os_tids(ids: np.ndarray, threads: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        keys, values = threads
        return np.where(np.isin(ids, keys), _lookup(ids, keys, values), ids)

    def _read_node_and_process(self, t: _SetTables) -> None:
        md = self.metadata
        md.update(hostname=None, command=None, pid=None)
        if node := t.get("rocpd_info_node"):
            row = self.con.execute(
                f'SELECT hostname, system_name, release, version, hardware_name FROM "{node}" ORDER BY id LIMIT 1'
            ).fetchone()
            if row:
                md["hostname"] = row[0]
                md["node"] = dict(zip(("system_name", "release", "version", "hardware_name"), row[1:]))
        if proc := t.get("rocpd_info_process"):
            row = self.con.execute(
                f'SELECT pid, command, environment, extdata FROM "{proc}" ORDER BY id LIMIT 1'
            ).fetchone()
            if row:
                md["pid"] = row[0]
                md["command"] = row[1]
                md["environment"] = _json(row[2])
                md["profiler_config"] = _json(row[3])

    def _read_agents(self, t: _SetTables) -> None:
        table = t.get("rocpd_info_agent")
        if not table:
            return
        cols = ", ".join(f'"{c}"' for c in _AGENT_COLUMNS)
        for row in self.con.execute(f'SELECT id, type, name, product_name, extdata, {cols} FROM "{table}" ORDER BY id'):
            agent_id, kind, name, product, extdata = row[:5]
            if agent_id in self.agents:
                continue  # the same agent seen from another set of this node
            extra = _json(extdata)
            extra.update({k: v for k, v in zip(_AGENT_COLUMNS, row[5:]) if v is not None})
            cu = extra.pop("cu_count", None)
            self.agents[agent_id] = Agent(
                id=int(agent_id),
                type=str(kind or ""),
                name=str(name or ""),
                product=str(product or ""),
                cu_count=int(cu) if isinstance(cu, (int, float)) and cu else None,
                extra=extra,
            )

    def _read_streams_and_queues(self, t: _SetTables) -> None:
        if table := t.get("rocpd_info_stream"):
            for sid, name, extdata in self.con.execute(f'SELECT id, name, extdata FROM "{table}"'):
                handle = _json(extdata).get("stream")
                self.metadata["streams"].setdefault(
                    int(sid), {"name": name, "handle": parse_pointer(handle) if handle is not None else None}
                )
        if table := t.get("rocpd_info_queue"):
            for qid, name in self.con.execute(f'SELECT id, name FROM "{table}"'):
                self.metadata["queues"].setdefault(int(qid), name)

    def _read_symbols(self, t: _SetTables) -> dict[int, int]:
        """Add this set's kernel symbols to the global list; return file id -> global index."""
        table = t.get("rocpd_info_kernel_symbol")
        mapping: dict[int, int] = {}
        if not table:
            return mapping
        rows = self.con.execute(
            f"""SELECT id, kernel_name, display_name, arch_vgpr_count, accum_vgpr_count, sgpr_count,
                       group_segment_size, private_segment_size FROM "{table}" ORDER BY id"""
        )
        for sid, name, display, vgpr, agpr, sgpr, lds, scratch in rows:
            sym = KernelSymbol(
                name=name or display or f"kernel_{sid}",
                display_name=display or name or f"kernel_{sid}",
                vgpr=vgpr,
                agpr=agpr,
                sgpr=sgpr,
                lds_bytes=lds,
                scratch_bytes=scratch,
            )
            key = (sym.name, sym.display_name, vgpr, agpr, sgpr, lds, scratch)
            if key not in self._symbol_index:
                self._symbol_index[key] = len(self.symbols)
                self.symbols.append(sym)
            mapping[int(sid)] = self._symbol_index[key]
        return mapping

    def _read_dispatches(self, t: _SetTables, symbol_map: dict[int, int], threads) -> None:
        table = t.get("rocpd_kernel_dispatch")
        event = t.get("rocpd_event")
        corr = "COALESCE(E.stack_id, -1)" if event else "-1"
        join = f'LEFT JOIN "{event}" E ON E.id = K.event_id' if event else ""
        sql = f"""SELECT K.start, K."end", COALESCE(K.agent_id, -1), COALESCE(K.queue_id, -1),
                         COALESCE(K.stream_id, -1), K.kernel_id, {corr},
                         K.grid_size_x, K.grid_size_y, K.grid_size_z,
                         K.workgroup_size_x, K.workgroup_size_y, K.workgroup_size_z,
                         COALESCE(K.group_segment_size, -1), COALESCE(K.tid, -1)
                  FROM "{table}" K {join} ORDER BY K.id"""
        cols = int_columns(self.con, sql, 15)
        self.dispatch_tids.append(self._os_tids(cols.pop(), threads))
        file_ids = cols[5]
        unknown = np.setdiff1d(np.unique(file_ids), np.fromiter(symbol_map, dtype=np.int64, count=len(symbol_map)))
        for missing_id in unknown.tolist():
            # A dispatch whose symbol row is absent: keep it, under a name that says so.
            symbol_map[int(missing_id)] = len(self.symbols)
            self.symbols.append(KernelSymbol(f"kernel_id_{missing_id}", f"<unknown kernel {missing_id}>"))
        keys = np.fromiter(symbol_map.keys(), dtype=np.int64, count=len(symbol_map))
        values = np.fromiter(symbol_map.values(), dtype=np.int64, count=len(symbol_map))
        self.kernel_parts.append(_lookup(file_ids, keys, values).astype(np.int32))
        self.dispatch_parts.append(cols)

    def _read_counters(self, t: _SetTables) -> None:
        """This set's counters as columns over its dispatch rows (in `id` order, as read above).

        A counter reported once per instance (several rows for one dispatch) is summed over them,
        as the `counters_collection` view does; a counter a dispatch has no row for stays NaN."""
        rows = len(self.dispatch_parts[-1][0])
        dispatch, info, event = t.get("rocpd_kernel_dispatch"), t.get("rocpd_info_pmc"), t.get("rocpd_pmc_event")
        columns: dict[str, np.ndarray] = {}
        if info and event and rows:
            found = self.con.execute(
                f"""SELECT R.position, I.name, SUM(E.value)
                    FROM "{event}" E
                    JOIN "{info}" I ON I.id = E.pmc_id
                    JOIN (SELECT event_id, ROW_NUMBER() OVER (ORDER BY id) - 1 AS position
                          FROM "{dispatch}") R ON R.event_id = E.event_id
                    GROUP BY R.position, I.name"""
            ).fetchall()
            for position, name, value in found:
                column = columns.get(name)
                if column is None:
                    column = columns[name] = np.full(rows, np.nan)
                column[position] = np.nan if value is None else float(value)
        self.counter_parts.append((rows, columns))

    def _read_api(self, t: _SetTables, threads) -> None:
        region, event, strings = t.get("rocpd_region"), t.get("rocpd_event"), t.get("rocpd_string")
        if not (region and event and strings):
            return
        arg = t.get("rocpd_arg")
        names = dict(self.con.execute(f'SELECT id, string FROM "{strings}"').fetchall())
        api_categories = np.array(
            [i for i, text in names.items() if (text or "").startswith(_API_CATEGORY_PREFIX)], dtype=np.int64
        )
        # in id order (free: the primary key); _api_calls sorts by start, keeping id order for ties
        region_cols = int_columns(
            self.con,
            f"""SELECT R.id, R.start, R."end", COALESCE(R.tid, -1), R.name_id, COALESCE(R.event_id, -1),
                       COALESCE(E.stack_id, -1), COALESCE(E.category_id, -1)
                FROM "{region}" R LEFT JOIN "{event}" E ON E.id = R.event_id ORDER BY R.id""",
            8,
        )
        if arg:
            digest_sql = f"""SELECT R.start, R.id, A.value FROM "{arg}" A JOIN "{region}" R ON R.event_id = A.event_id
                             WHERE A.name = ?"""
            self.digests += self.con.execute(digest_sql, (DIGEST_ARG,)).fetchall()
        if not len(region_cols[0]):
            return
        cols = np.column_stack(region_cols)
        # Regions of unknown category (-1) count as API calls; markers and our digest regions do not.
        is_api = np.isin(cols[:, 7], api_categories) | (cols[:, 7] == -1)
        api = cols[is_api]
        if not len(api):
            return
        real_tids = self._os_tids(api[:, 3], threads)
        event_ids = api[:, 5]
        args, stream, event = self._args_by_event(arg, event_ids) if arg else ({}, None, None)
        n = len(api)
        self.api_parts.append(
            {
                "start": api[:, 1],
                "end": api[:, 2],
                "tid": real_tids,
                "corr": api[:, 6],
                "name": [names.get(i, f"<string {i}>") for i in api[:, 4].tolist()],
                "stream": stream if stream is not None else np.full(n, UNKNOWN, np.int64),
                "event": event if event is not None else np.full(n, UNKNOWN, np.int64),
                "args": args,
                "event_id": event_ids,
            }
        )

    def _read_markers(self, t: _SetTables, threads) -> None:
        """roctx ranges (regions) and marks (samples) of the marker categories, named by their message."""
        region, event, strings = t.get("rocpd_region"), t.get("rocpd_event"), t.get("rocpd_string")
        if not (event and strings):
            return
        marks = ", ".join("?" * len(MARKER_CATEGORIES))
        categories = f'SELECT id FROM "{strings}" WHERE string IN ({marks})'
        rows: list[tuple] = []
        if region:
            rows += self.con.execute(
                f"""SELECT R.start, R."end", COALESCE(R.tid, -1), S.string, E.extdata
                    FROM "{region}" R JOIN "{event}" E ON E.id = R.event_id
                    JOIN "{strings}" S ON S.id = R.name_id
                    WHERE E.category_id IN ({categories})""", MARKER_CATEGORIES).fetchall()
        sample, track = t.get("rocpd_sample"), t.get("rocpd_track")
        if sample and track:
            rows += self.con.execute(
                f"""SELECT P.timestamp, P.timestamp, COALESCE(T.tid, -1), 'roctxMarkA', E.extdata
                    FROM "{sample}" P JOIN "{track}" T ON T.id = P.track_id JOIN "{event}" E ON E.id = P.event_id
                    WHERE E.category_id IN ({categories})""", MARKER_CATEGORIES).fetchall()
        if not rows:
            return
        tids = self._os_tids(np.asarray([r[2] for r in rows], dtype=np.int64), threads).tolist()
        for (start, end, _, operation, extdata), tid in zip(rows, tids):
            kind = MARKER_KIND_OF_OPERATION.get(operation)
            if kind is None:
                continue  # roctxGetThreadId, a stray pop record, ...: not a range
            message = _json(extdata).get("message")
            self.marker_rows.append({"name": str(message) if message is not None else operation,
                                     "start": int(start), "end": int(end), "tid": int(tid), "kind": kind})

    def _read_copies(self, t: _SetTables, threads) -> None:
        """Memory copies (rocprofv3 --memory-copy-trace): on the GPU side of each copy."""
        table, strings = t.get("rocpd_memory_copy"), t.get("rocpd_string")
        if not (table and strings):
            return
        event = t.get("rocpd_event")
        corr = "COALESCE(E.stack_id, -1)" if event else "-1"
        join = f'LEFT JOIN "{event}" E ON E.id = C.event_id' if event else ""
        gpus = {a.id for a in self.agents.values() if a.type == "GPU"}
        for start, end, name, dst, src, size, stream, c in self.con.execute(
            f"""SELECT C.start, C."end", S.string, COALESCE(C.dst_agent_id, -1), COALESCE(C.src_agent_id, -1),
                       COALESCE(C.size, -1), COALESCE(C.stream_id, -1), {corr}
                FROM "{table}" C JOIN "{strings}" S ON S.id = C.name_id {join}"""
        ):
            agent = dst if dst in gpus or src not in gpus else src
            self.copy_rows.append((int(start), int(end), int(agent), int(stream), str(name or "copy"), int(c),
                                   int(size), False))

    def _args_by_event(self, arg: str, event_ids: np.ndarray) -> tuple[dict[int, dict[str, str]], np.ndarray, np.ndarray]:
        """Every argument of the given events ({event_id: {name: value}}, in the file's row order), and the
        `stream` and `event` pointer arguments as columns aligned with `event_ids`.

        SQLite groups the arguments into one JSON object per event in a single pass (the arg table
        has no index on event_id, so per-row lookups would be quadratic). A `hipStream_t*` argument
        is where a stream is created, not one that orders work: it does not fill the column.
        """
        wanted = set(event_ids.tolist())
        rows = [
            r for r in self.con.execute(
                f"""SELECT event_id, json_group_object(name, value),
                           MAX(CASE WHEN name = 'stream' AND type NOT LIKE '%*' THEN value END),
                           MAX(CASE WHEN name = 'event' AND type NOT LIKE '%*' THEN value END)
                    FROM "{arg}" GROUP BY event_id"""
            )
            if r[0] in wanted
        ]
        # one json.loads over all objects: the C decoder once instead of a Python call per event
        decoded = json.loads("[" + ",".join(r[1] for r in rows) + "]")
        args = {r[0]: a for r, a in zip(rows, decoded)}
        pointers = {r[0]: (r[2], r[3]) for r in rows}
        none = (None, None)
        stream = np.array(
            [parse_pointer(v) if (v := pointers.get(e, none)[0]) is not None else UNKNOWN for e in event_ids.tolist()],
            dtype=np.int64,
        )
        event = np.array(
            [parse_pointer(v) if (v := pointers.get(e, none)[1]) is not None else UNKNOWN for e in event_ids.tolist()],
            dtype=np.int64,
        )
        return args, stream, event

    # ---- the Trace -------------------------------------------------------------------------

    def finish(self) -> Trace:
        width = 14
        if len(self.dispatch_parts) == 1:
            cols = self.dispatch_parts[0]
        else:
            cols = [np.concatenate([p[c] for p in self.dispatch_parts]) if self.dispatch_parts
                    else np.zeros(0, np.int64) for c in range(width)]
        kernel = np.concatenate(self.kernel_parts) if self.kernel_parts else np.zeros(0, np.int32)
        tid = np.concatenate(self.dispatch_tids) if self.dispatch_tids else np.zeros(0, np.int64)
        self.dispatch_parts = []
        names = sorted({name for _, columns in self.counter_parts for name in columns})
        counters = {name: np.concatenate([c.get(name, np.full(n, np.nan)) for n, c in self.counter_parts])
                    for name in names}
        # rocprofv3 writes dispatches roughly in completion order: reorder by start only when needed
        if len(cols[0]) > 1 and not bool(np.all(cols[0][1:] >= cols[0][:-1])):
            order = np.argsort(cols[0], kind="stable")
            for c in range(width):  # one column at a time, so only one extra column is alive
                cols[c] = cols[c][order]
            kernel = kernel[order]
            tid = tid[order]
            counters = {name: column[order] for name, column in counters.items()}
        api = self._api_calls()
        self.metadata["api_trace"] = api is not None
        self.digests.sort()
        return Trace(
            start=cols[0],
            end=cols[1],
            agent=cols[2],
            queue=cols[3],
            stream=cols[4],
            kernel=kernel,
            corr=cols[6],
            grid=np.column_stack(cols[7:10]),
            workgroup=np.column_stack(cols[10:13]),
            lds_bytes=None if bool((cols[13] < 0).all()) else cols[13],
            counters=counters,
            symbols=self.symbols,
            agents=sorted(self.agents.values(), key=lambda a: a.id),
            api=api,
            digests=[d for _, _, d in self.digests],
            metadata=self.metadata,
            tid=None if not len(tid) or bool((tid < 0).all()) else tid,
            markers=Markers.from_rows(self.marker_rows) if self.marker_rows else None,
            copies=memory_ops(self.copy_rows),
        )

    def _api_calls(self) -> ApiCalls | None:
        if not self.api_parts:
            return None
        parts = self.api_parts
        start = np.concatenate([p["start"] for p in parts])
        order = np.argsort(start, kind="stable")
        names_per_row = [n for p in parts for n in p["name"]]
        distinct = sorted(set(names_per_row))
        index = {n: i for i, n in enumerate(distinct)}
        name = np.fromiter((index[n] for n in names_per_row), dtype=np.int32, count=len(names_per_row))[order]
        # args: row (after sorting) -> that region's arguments
        args_per_row = [p["args"].get(e) for p in parts for e in p["event_id"].tolist()]
        args = {row: args_per_row[src] for row, src in enumerate(order.tolist()) if args_per_row[src] is not None}
        return ApiCalls(
            names=distinct,
            name=name,
            start=start[order],
            end=np.concatenate([p["end"] for p in parts])[order],
            tid=np.concatenate([p["tid"] for p in parts])[order],
            corr=np.concatenate([p["corr"] for p in parts])[order],
            stream=np.concatenate([p["stream"] for p in parts])[order],
            event=np.concatenate([p["event"] for p in parts])[order],
            args=args,
        )


def memory_ops(rows: list[tuple]) -> MemoryOps | None:
    """MemoryOps from (start, end, agent, stream, name, corr, bytes, is_fill) tuples, sorted by start."""
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: r[0])
    distinct = sorted({r[4] for r in rows})
    index = {n: i for i, n in enumerate(distinct)}
    return MemoryOps(
        names=distinct,
        name=np.array([index[r[4]] for r in rows], dtype=np.int32),
        start=np.array([r[0] for r in rows], dtype=np.int64),
        end=np.array([r[1] for r in rows], dtype=np.int64),
        agent=np.array([r[2] for r in rows], dtype=np.int64),
        stream=np.array([r[3] for r in rows], dtype=np.int64),
        corr=np.array([r[5] for r in rows], dtype=np.int64),
        bytes=np.array([r[6] for r in rows], dtype=np.int64),
        is_fill=np.array([r[7] for r in rows], dtype=bool),
    )
