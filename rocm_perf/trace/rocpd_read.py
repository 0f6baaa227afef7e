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
from rocm_perf.trace import foreign
from rocm_perf.trace.model import (
    MARK,
    PROCESS_RANGE,
    THREAD_RANGE,
    UNKNOWN,
    Agent,
    ApiArgs,
    ApiCalls,
    KernelSymbol,
    Markers,
    MemoryOps,
    Trace,
)
from rocm_perf.trace.needs import EVERYTHING, ProfileNeeds
from rocm_perf.trace.rocpd_api import DIGEST_ARG as _DIGEST_ARG
from rocm_perf.trace.rocpd_api import BadRows, parse_pointer, read_set_api
from rocm_perf.trace.sqlite_arrow import ArrowReader
from rocm_perf.trace.sqlite_file import constant_columns, int_columns, open_readonly, table_names

# `_0197a3c0_0000_4000_8000_000000000001`: a UUID with '-' replaced by '_'.
_UUID_SUFFIX = r"_[0-9a-fA-F]{8}_[0-9a-fA-F]{4}_[0-9a-fA-F]{4}_[0-9a-fA-F]{4}_[0-9a-fA-F]{12}"
_DISPATCH_TABLE = re.compile(r"^rocpd_kernel_dispatch(" + _UUID_SUFFIX + r")?$")

DIGEST_ARG = _DIGEST_ARG  # the name of the argument that carries a copy's digest (re-exported)
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


def read_rocpd(path: Path, needs: ProfileNeeds = EVERYTHING) -> Trace:
    """Read every uuid set of a rocpd v3 database into one Trace (dispatches sorted by start),
    leaving unread what `needs` says the caller does not use (trace/needs.py)."""
    with open_readonly(path) as con:
        # A page cache big enough that the joins' lookups into the event table mostly hit memory. (Not
        # mmap: mapped pages of a 6 GB profile would count in the process's resident memory.)
        con.execute("PRAGMA cache_size = -65536")
        present = set(table_names(con))
        suffixes = find_uuid_sets(con)
        if not suffixes:
            raise RocmPerfError(f"{path}: SQLite database without rocpd_kernel_dispatch tables (not a rocpd v3 profile)")
        with ArrowReader(path) as fast:
            reader = _Reader(con, needs, fast)
            try:
                for suffix in suffixes:
                    reader.read_set(_SetTables(suffix, present))
            except BadRows as e:
                raise RocmPerfError(f"{path}: damaged argument or dispatch rows ({e})") from e
        trace = reader.finish()
    trace.metadata.update(format="rocpd-v3", source_path=str(path))
    if needs.skipped():
        trace.metadata["not_read"] = needs.skipped()
    return trace


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


_SYMBOL_RESOURCES = ("arch_vgpr_count", "accum_vgpr_count", "sgpr_count", "group_segment_size", "private_segment_size")
_AGENT_COLUMNS = ("absolute_index", "logical_index", "type_index", "model_name", "vendor_name", "user_name")


class _Reader:
    """Accumulates the uuid sets of one file, then builds the Trace."""

    def __init__(self, con: sqlite3.Connection, needs: ProfileNeeds = EVERYTHING, fast: ArrowReader | None = None):
        self.con = con
        self.needs = needs
        self.fast = fast
        self.path = foreign.sqlite_file(con)  # for messages
        self.symbols: list[KernelSymbol] = []
        self._symbol_index: dict[tuple, int] = {}
        self.agents: dict[int, Agent] = {}
        self.dispatch_parts: list[dict[str, np.ndarray | None]] = []  # per uuid set: its columns (None: unread)
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
        if self.needs.counters:
            self._read_counters(t)
        else:
            self.counter_parts.append((len(self.dispatch_parts[-1]["start"]), {}))
        self._read_api(t, threads)
        if self.needs.markers:
            self._read_markers(t, threads)
        if self.needs.copies:
            self._read_copies(t, threads)

    def int_columns(self, sql: str, width: int) -> list[np.ndarray]:
        """An all-integer query's columns: through Arrow where it can, else through sqlite3."""
        fast = self.fast.int_columns(sql, width) if self.fast is not None else None
        return fast if fast is not None else int_columns(self.con, sql, width)

    def _thread_map(self, t: _SetTables) -> tuple[np.ndarray, np.ndarray]:
        """rocpd_info_thread row id -> OS thread id, as two sorted-lookup arrays."""
        threads = {}
        if thread := t.get("rocpd_info_thread"):
            threads = {k: v for k, v in self.con.execute(f'SELECT id, tid FROM "{thread}"').fetchall() if v is not None}
        where = f"{self.path}: {thread}"
        return (foreign.int64_array(list(threads.keys()), lambda i: f"{where} row {i + 1}: id"),
                foreign.int64_array(list(threads.values()), lambda i: f"{where} row {i + 1}: tid"))

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
                row = [foreign.text(v, f"{self.path}: {node}") for v in row]
                md["hostname"] = row[0]
                md["node"] = dict(zip(("system_name", "release", "version", "hardware_name"), row[1:]))
        if proc := t.get("rocpd_info_process"):
            row = self.con.execute(
                f'SELECT pid, command, environment, extdata FROM "{proc}" ORDER BY id LIMIT 1'
            ).fetchone()
            if row:
                md["pid"] = foreign.optional_integer(row[0], f"{self.path}: {proc}: pid")
                md["command"] = foreign.text(row[1], f"{self.path}: {proc}: command")
                md["environment"] = _json(row[2])
                md["profiler_config"] = _json(row[3])

    def _read_agents(self, t: _SetTables) -> None:
        table = t.get("rocpd_info_agent")
        if not table:
            return
        cols = ", ".join(f'"{c}"' for c in _AGENT_COLUMNS)
        for row in self.con.execute(f'SELECT id, type, name, product_name, extdata, {cols} FROM "{table}" ORDER BY id'):
            where = f"{self.path}: {table}"
            row = [foreign.text(v, where) if isinstance(v, bytes) else v for v in row]
            agent_id, kind, name, product, extdata = row[:5]
            agent_id = foreign.integer(agent_id, f"{where}: id")
            if agent_id in self.agents:
                continue  # the same agent seen from another set of this node
            extra = _json(extdata)
            extra.update({k: v for k, v in zip(_AGENT_COLUMNS, row[5:]) if v is not None})
            cu = extra.pop("cu_count", None)
            self.agents[agent_id] = Agent(
                id=agent_id,
                type=str(kind or ""),
                name=str(name or ""),
                product=str(product or ""),
                cu_count=foreign.integer(cu, f"{where}: extdata cu_count", low=0) or None
                if isinstance(cu, (int, float)) and not isinstance(cu, bool) else None,
                extra=extra,
            )

    def _read_streams_and_queues(self, t: _SetTables) -> None:
        if table := t.get("rocpd_info_stream"):
            for sid, name, extdata in self.con.execute(f'SELECT id, name, extdata FROM "{table}"'):
                handle = _json(extdata).get("stream")
                self.metadata["streams"].setdefault(
                    foreign.integer(sid, f"{self.path}: {table}: id"),
                    {"name": foreign.text(name, f"{self.path}: {table}: name"),
                     "handle": parse_pointer(handle) if handle is not None else None},
                )
        if table := t.get("rocpd_info_queue"):
            for qid, name in self.con.execute(f'SELECT id, name FROM "{table}"'):
                self.metadata["queues"].setdefault(foreign.integer(qid, f"{self.path}: {table}: id"),
                                                   foreign.text(name, f"{self.path}: {table}: name"))

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
        for row in rows:
            where = f"{self.path}: {table}"
            sid = foreign.integer(row[0], f"{where}: id")
            name, display = (foreign.text(v, f"{where}: kernel name") for v in row[1:3])
            vgpr, agpr, sgpr, lds, scratch = (foreign.optional_integer(v, f"{where}: kernel {sid}: {c}", low=0)
                                              for v, c in zip(row[3:], _SYMBOL_RESOURCES))
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
            mapping[sid] = self._symbol_index[key]
        return mapping

    # Dispatch columns: (name, its column in the dispatch table K or None, SQL, the need that keeps it).
    _DISPATCH_COLUMNS = [
        ("start", None, "K.start", None), ("end", None, 'K."end"', None),
        ("agent", "agent_id", "COALESCE(K.agent_id, -1)", None),
        ("queue", "queue_id", "COALESCE(K.queue_id, -1)", "queues"),
        ("stream", "stream_id", "COALESCE(K.stream_id, -1)", None), ("kernel", "kernel_id", "K.kernel_id", None),
        ("corr", None, "COALESCE(E.stack_id, -1)", None),
        ("grid_x", "grid_size_x", "K.grid_size_x", "shapes"), ("grid_y", "grid_size_y", "K.grid_size_y", "shapes"),
        ("grid_z", "grid_size_z", "K.grid_size_z", "shapes"),
        ("wg_x", "workgroup_size_x", "K.workgroup_size_x", "shapes"),
        ("wg_y", "workgroup_size_y", "K.workgroup_size_y", "shapes"),
        ("wg_z", "workgroup_size_z", "K.workgroup_size_z", "shapes"),
        ("lds", "group_segment_size", "COALESCE(K.group_segment_size, -1)", "shapes"),
        ("tid", "tid", "COALESCE(K.tid, -1)", "threads"),
    ]

    def _read_dispatches(self, t: _SetTables, symbol_map: dict[int, int], threads) -> None:
        """This set's dispatch columns, in `id` order. A column the caller does not need stays None;
        one that holds a single value in every row is made in numpy instead of read row by row."""
        table = t.get("rocpd_kernel_dispatch")
        event = t.get("rocpd_event")
        needed = lambda need: need is None or getattr(self.needs, need)  # noqa: E731
        # One aggregate scan (SQLite's C code) says which columns hold one value everywhere (made in
        # numpy, not read) and whether some dispatch lacks a stream id (then chains need queues).
        # Columns that are almost never constant (times, stream, kernel, grid x) are not asked about.
        maybe_constant = [c for name, c, _, need in self._DISPATCH_COLUMNS
                          if c is not None and name not in ("stream", "kernel", "grid_x", "wg_x") and needed(need)]
        if not self.needs.queues:
            maybe_constant.append("queue_id")
        constant_by_column, no_stream = constant_columns(self.con, table, maybe_constant, count_missing="stream_id")
        if not self.needs.queues and no_stream:
            needed = lambda need: need is None or need == "queues" or getattr(self.needs, need)  # noqa: E731
        wanted = [(name, column, sql) for name, column, sql, need in self._DISPATCH_COLUMNS if needed(need)]
        own = {column: name for name, column, _ in wanted if column is not None}
        constant = {own[c]: v for c, v in constant_by_column.items() if c in own}
        if not event:
            constant["corr"] = None
        wanted = [(name, sql) for name, _, sql in wanted]
        read = [(name, sql) for name, sql in wanted if name not in constant]
        join = f'LEFT JOIN "{event}" E ON E.id = K.event_id' if event and any(n == "corr" for n, _ in read) else ""
        sql = f'SELECT {", ".join(q for _, q in read)} FROM "{table}" K {join} ORDER BY K.id'
        values = dict(zip((n for n, _ in read), self.int_columns(sql, len(read))))
        rows = len(values["start"])
        cols: dict[str, np.ndarray | None] = {name: None for name, _, _, _ in self._DISPATCH_COLUMNS}
        for name, _ in wanted:
            if name in values:
                cols[name] = values[name]
            else:  # NULL everywhere reads as the COALESCE default
                value = constant[name]
                cols[name] = np.full(rows, -1 if value is None else value, dtype=np.int64)
        tids = cols.pop("tid")
        self.dispatch_tids.append(self._os_tids(tids, threads) if tids is not None else None)
        file_ids = cols["kernel"]
        unknown = np.setdiff1d(np.unique(file_ids), np.fromiter(symbol_map, dtype=np.int64, count=len(symbol_map)))
        for missing_id in unknown.tolist():
            # A dispatch whose symbol row is absent: keep it, under a name that says so.
            symbol_map[int(missing_id)] = len(self.symbols)
            self.symbols.append(KernelSymbol(f"kernel_id_{missing_id}", f"<unknown kernel {missing_id}>"))
        keys = np.fromiter(symbol_map.keys(), dtype=np.int64, count=len(symbol_map))
        values_ = np.fromiter(symbol_map.values(), dtype=np.int64, count=len(symbol_map))
        self.kernel_parts.append(_lookup(file_ids, keys, values_).astype(np.int32))
        cols["kernel"] = None
        self.dispatch_parts.append(cols)

    def _read_counters(self, t: _SetTables) -> None:
        """This set's counters as columns over its dispatch rows (in `id` order, as read above).

        A counter reported once per instance (several rows for one dispatch) is summed over them,
        as the `counters_collection` view does; a counter a dispatch has no row for stays NaN."""
        rows = len(self.dispatch_parts[-1]["start"])
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
                name = foreign.text(name, f"{self.path}: {info}: name")
                column = columns.get(name)
                if column is None:
                    column = columns[name] = np.full(rows, np.nan)
                column[position] = np.nan if value is None else foreign.finite(value, f"{self.path}: {event}: value of {name}")
        self.counter_parts.append((rows, columns))

    def _read_api(self, t: _SetTables, threads) -> None:
        region, event, strings = t.get("rocpd_region"), t.get("rocpd_event"), t.get("rocpd_string")
        if not (region and event and strings):
            return
        arg = t.get("rocpd_arg")
        api = read_set_api(self.con, region, event, strings, arg, threads=self.needs.threads,
                           all_args=self.needs.api_args, fast=self.fast)
        if arg and (api is None or api.has_digests):
            self._read_digests(arg, region)
        if api is None:
            return
        # name ids -> texts, once per distinct id
        distinct_ids, inverse = np.unique(api.name_id, return_inverse=True)
        texts = {}
        for chunk in range(0, len(distinct_ids), 500):
            ids = distinct_ids[chunk:chunk + 500].tolist()
            marks = ", ".join("?" * len(ids))
            texts.update((i, foreign.text(v, f"{self.path}: {strings} row {i}")) for i, v in
                         self.con.execute(f'SELECT id, string FROM "{strings}" WHERE id IN ({marks})', ids).fetchall())
        self.api_parts.append({
            "start": api.start, "end": api.end, "corr": api.corr, "stream": api.stream, "event": api.event,
            "tid": self._os_tids(api.tid, threads) if self.needs.threads else api.tid,
            "name_texts": [texts.get(i, f"<string {i}>") for i in distinct_ids.tolist()],
            "name_code": inverse.reshape(-1), "args": api.args,
        })

    def _read_digests(self, arg: str, region: str) -> None:
        """Output digests (host backend), with the start and id of the region that carries each."""
        digest_sql = f"""SELECT R.start, R.id, A.value FROM "{arg}" A JOIN "{region}" R ON R.event_id = A.event_id
                         WHERE A.name = ?"""
        self.digests += self.con.execute(digest_sql, (DIGEST_ARG,)).fetchall()

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
        tids = self._os_tids(foreign.int64_array([r[2] for r in rows], f"{self.path}: a marker's tid"), threads).tolist()
        where = f"{self.path}: {region or sample}: a marker's"
        for (start, end, _, operation, extdata), tid in zip(rows, tids):
            kind = MARKER_KIND_OF_OPERATION.get(operation) if isinstance(operation, str) else None
            if kind is None:
                continue  # roctxGetThreadId, a stray pop record, ...: not a range
            message = _json(extdata).get("message")
            self.marker_rows.append({"name": str(message) if message is not None else operation,
                                     "start": foreign.integer(start, f"{where} start"),
                                     "end": foreign.integer(end, f"{where} end"), "tid": int(tid), "kind": kind})

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
            where = f"{self.path}: {table}: a copy's"
            agent = dst if dst in gpus or src not in gpus else src
            start, end, agent, stream, c, size = (foreign.integer(v, f"{where} {what}") for v, what in zip(
                (start, end, agent, stream, c, size), ("start", "end", "agent", "stream", "correlation id", "size")))
            self.copy_rows.append((start, end, agent, stream, str(foreign.text(name, f"{where} name") or "copy"), c,
                                   size, False))

    # ---- the Trace -------------------------------------------------------------------------

    def finish(self) -> Trace:
        parts = self.dispatch_parts
        self.dispatch_parts = []
        names = [name for name, _, _, _ in self._DISPATCH_COLUMNS if name not in ("tid", "kernel")]
        cols: dict[str, np.ndarray | None] = {}
        for name in names:
            pieces = [p[name] for p in parts]
            if any(piece is None for piece in pieces):
                cols[name] = None
            else:
                cols[name] = pieces[0] if len(pieces) == 1 else np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
        kernel = np.concatenate(self.kernel_parts) if self.kernel_parts else np.zeros(0, np.int32)
        tid = (None if any(p is None for p in self.dispatch_tids)
               else np.concatenate(self.dispatch_tids) if self.dispatch_tids else np.zeros(0, np.int64))
        counter_names = sorted({name for _, columns in self.counter_parts for name in columns})
        counters = {name: np.concatenate([c.get(name, np.full(n, np.nan)) for n, c in self.counter_parts])
                    for name in counter_names}
        n = len(cols["start"])
        # rocprofv3 writes dispatches roughly in completion order: reorder by start only when needed
        if n > 1 and not bool(np.all(cols["start"][1:] >= cols["start"][:-1])):
            order = np.argsort(cols["start"], kind="stable")
            for name in names:  # one column at a time, so only one extra column is alive
                if cols[name] is not None:
                    cols[name] = cols[name][order]
            kernel = kernel[order]
            tid = tid[order] if tid is not None else None
            counters = {name: column[order] for name, column in counters.items()}
        api = self._api_calls()
        self.metadata["api_trace"] = api is not None
        self.digests.sort()
        unknown_shape = np.broadcast_to(np.int64(UNKNOWN), (n, 3))  # read-only, no memory: not read
        grid = unknown_shape if cols["grid_x"] is None else np.column_stack([cols.pop(f"grid_{a}") for a in "xyz"])
        workgroup = unknown_shape if cols["wg_x"] is None else np.column_stack([cols.pop(f"wg_{a}") for a in "xyz"])
        lds = cols["lds"]
        queue = cols["queue"] if cols["queue"] is not None else np.full(n, UNKNOWN, dtype=np.int64)
        return Trace(
            start=cols["start"],
            end=cols["end"],
            agent=cols["agent"],
            queue=queue,
            stream=cols["stream"],
            kernel=kernel,
            corr=cols["corr"],
            grid=grid,
            workgroup=workgroup,
            lds_bytes=None if lds is None or bool((lds < 0).all()) else lds,
            counters=counters,
            symbols=self.symbols,
            agents=sorted(self.agents.values(), key=lambda a: a.id),
            api=api,
            digests=[d for _, _, d in self.digests],
            metadata=self.metadata,
            tid=None if tid is None or not len(tid) or bool((tid < 0).all()) else tid,
            markers=Markers.from_rows(self.marker_rows) if self.marker_rows else None,
            copies=memory_ops(self.copy_rows),
        )

    def _api_calls(self) -> ApiCalls | None:
        if not self.api_parts:
            return None
        parts = self.api_parts
        self.api_parts = []
        start = parts[0]["start"] if len(parts) == 1 else np.concatenate([p["start"] for p in parts])
        in_order = len(start) < 2 or bool(np.all(start[1:] >= start[:-1]))
        order = np.arange(len(start)) if in_order else np.argsort(start, kind="stable")
        distinct = sorted({text for p in parts for text in p["name_texts"]})
        index = {text: i for i, text in enumerate(distinct)}
        name = np.concatenate([np.asarray([index[x] for x in p["name_texts"]], dtype=np.int32)[p["name_code"]]
                               for p in parts])
        args: Any = {}
        if all(p["args"] is not None for p in parts):
            offsets = np.cumsum([0] + [len(p["start"]) for p in parts])
            combined = [p["args"] for p in parts]
            rows = np.concatenate([a.row + off for a, off in zip(combined, offsets)])
            new_row = np.empty(len(order), dtype=np.int64)
            new_row[order] = np.arange(len(order))
            if len(combined) == 1:
                args = combined[0].remapped(new_row)
            else:
                names_all = sorted({x for a in combined for x in a.names})
                values_all: dict = {}
                for a in combined:
                    for v in a.values:
                        values_all.setdefault(v, len(values_all))
                name_codes = np.concatenate([np.asarray([names_all.index(x) for x in a.names], np.int32)[a.name]
                                             for a in combined])
                value_codes = np.concatenate([np.asarray([values_all[v] for v in a.values], np.int32)[a.value]
                                              for a in combined])
                args = ApiArgs(new_row[rows], name_codes, value_codes, names_all, list(values_all))

        def column(key: str) -> np.ndarray:
            joined = parts[0][key] if len(parts) == 1 else np.concatenate([p[key] for p in parts])
            return joined if in_order else joined[order]

        return ApiCalls(names=distinct, name=name if in_order else name[order], start=start if in_order else start[order],
                        end=column("end"), tid=column("tid"),
                        corr=column("corr"), stream=column("stream"), event=column("event"), args=args)


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
