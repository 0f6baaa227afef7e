"""Read a legacy RPD database (rocmProfileData's rpd_tracer, and rocm-trace-lite's variant).

Kernel dispatches are the `rocpd_op` rows whose op type string is `KernelExecution`; names come
from `rocpd_string`. Launch parameters come from `rocpd_kernelapi` (joined through
`rocpd_api_ops`), or, in rocm-trace-lite files, from the `completionSignal` text
`hwq=0x.. wg=x,y,z grid=x,y,z`. Streams are `hipStream_t` pointers there: we number them
0 (null stream), 1, 2, ... in order of first use and keep the pointers in metadata["streams"].
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace import foreign
from rocm_perf.trace.model import MARK, THREAD_RANGE, UNKNOWN, Agent, ApiCalls, KernelSymbol, Markers, Trace
from rocm_perf.trace.rocpd_read import parse_pointer
from rocm_perf.trace.sqlite_file import column_names, int_columns, open_readonly, table_names

KERNEL_OP_TYPES = ("KernelExecution",)
# rocmProfileData's tracer files roctx as `rocpd_api` rows named UserMarker, the message as their
# args string, a push..pop range as one row (a mark: start == end). rocm-trace-lite puts them in
# `rocpd_op` instead (gpuId < 0, op type UserMarker) and tags each op with its range's `roctxId`.
MARKER_NAME = "UserMarker"
_LAUNCH_DIMS = ("gridX", "gridY", "gridZ", "workgroupX", "workgroupY", "workgroupZ")
_LAUNCH_SIZES = ("groupSegmentSize", "privateSegmentSize")
_SIGNAL_DIMS = re.compile(r"\b(wg|grid)=(\d+),(\d+),(\d+)")


def read_rpd(path: Path) -> Trace:
    """Read kernel dispatches and HIP API calls of a legacy RPD file."""
    with open_readonly(path) as con:
        tables = set(table_names(con))
        if "rocpd_op" not in tables or "rocpd_string" not in tables:
            raise RocmPerfError(f"{path}: SQLite database without rocpd_op/rocpd_string (not a legacy RPD profile)")
        trace = _read(con, tables)
    trace.metadata.update(format="rpd-legacy", source_path=str(path))
    return trace


def parse_rpd_args(text: str | None) -> dict[str, str]:
    """'graphExec = 0x24922d90 | stream = 0x0' -> {'graphExec': '0x24922d90', 'stream': '0x0'}."""
    args: dict[str, str] = {}
    for part in (text or "").split("|"):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            args[key.strip()] = value.strip()
    return args


def _read(con: sqlite3.Connection, tables: set[str]) -> Trace:
    path = foreign.sqlite_file(con)
    strings = {i: foreign.text(s, f"{path}: rocpd_string row {i}")
               for i, s in con.execute("SELECT id, string FROM rocpd_string").fetchall()}
    kernel_types = [i for i, s in strings.items() if s in KERNEL_OP_TYPES]
    op_cols = set(column_names(con, "rocpd_op"))
    has_signal = "completionSignal" in op_cols

    # Launch parameters per API call, whichever name the key column has in this variant.
    launch: dict[int, tuple] = {}
    if "rocpd_kernelapi" in tables:
        ka_cols = set(column_names(con, "rocpd_kernelapi"))
        key = "api_ptr_id" if "api_ptr_id" in ka_cols else "api_id"
        for row in con.execute(
            f"""SELECT {key}, stream, gridX, gridY, gridZ, workgroupX, workgroupY, workgroupZ,
                       groupSegmentSize, privateSegmentSize, kernelName_id FROM rocpd_kernelapi"""
        ):
            where = f"{path}: rocpd_kernelapi, call {row[0]!r}:"
            stream_arg = foreign.text(row[1], f"{where} stream")
            dims = [1 if v is None else foreign.integer(v, f"{where} {c}") for v, c in zip(row[2:8], _LAUNCH_DIMS)]
            sizes = [foreign.optional_integer(v, f"{where} {c}") for v, c in zip(row[8:10], _LAUNCH_SIZES)]
            launch[row[0]] = (stream_arg, *dims, *sizes, row[10])
    op_to_api: dict[int, int] = {}
    if "rocpd_api_ops" in tables:
        op_to_api = {op: foreign.integer(api, f"{path}: rocpd_api_ops, op {op!r}: api_id")
                     for op, api in con.execute("SELECT op_id, api_id FROM rocpd_api_ops").fetchall() if api is not None}

    marks = ",".join("?" * len(kernel_types)) or "NULL"
    has_roctx_id = "roctxId" in op_cols
    ops = con.execute(
        f"""SELECT id, gpuId, queueId, start, "end", description_id,
                   {'completionSignal' if has_signal else 'NULL'}, {'roctxId' if has_roctx_id else '0'}
            FROM rocpd_op WHERE opType_id IN ({marks}) ORDER BY start, id""",
        kernel_types,
    ).fetchall()

    n = len(ops)
    start = np.empty(n, np.int64)
    end = np.empty(n, np.int64)
    agent = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    stream = np.full(n, UNKNOWN, np.int64)
    corr = np.full(n, UNKNOWN, np.int64)
    kernel = np.empty(n, np.int32)
    grid = np.ones((n, 3), np.int64)
    workgroup = np.ones((n, 3), np.int64)
    symbols: list[KernelSymbol] = []
    symbol_of: dict[str, int] = {}
    stream_ids: dict[int, int] = {0: 0}
    for i, op in enumerate(ops):
        op_id, gpu, q, s, e, desc_id = op[:6]
        where = f"{path}: rocpd_op, op {op_id!r}:"
        start[i], end[i], agent[i], queue[i] = (foreign.integer(v, f"{where} {c}") for v, c in
                                                zip((s, e, gpu, q), ("start", "end", "gpuId", "queueId")))
        api_id = op_to_api.get(op_id)
        params = launch.get(api_id) if api_id is not None else None
        name = strings.get(desc_id) or ""
        lds = scratch = None
        if api_id is not None:
            corr[i] = api_id
        if params is not None:
            ptr = parse_pointer(params[0])
            if ptr != UNKNOWN:
                stream[i] = stream_ids.setdefault(ptr, len(stream_ids))
            grid[i] = params[1:4]
            workgroup[i] = params[4:7]
            lds, scratch = params[7], params[8]
            name = name or strings.get(params[9]) or ""
        if op[6]:
            for kind, x, y, z in _SIGNAL_DIMS.findall(str(op[6])):
                (workgroup if kind == "wg" else grid)[i] = [foreign.integer(v, f"{where} completionSignal {kind}")
                                                            for v in (x, y, z)]
        name = name or f"<unnamed kernel op {op_id}>"
        if name not in symbol_of:
            symbol_of[name] = len(symbols)
            symbols.append(KernelSymbol(name=name, display_name=name, lds_bytes=lds, scratch_bytes=scratch))
        kernel[i] = symbol_of[name]

    api, pid = _read_api(con, tables, strings, launch)
    markers, range_row = _read_markers(con, tables, strings, has_roctx_id)
    dispatch_range = None
    if range_row:
        dispatch_range = np.array([range_row.get(foreign.integer(op[7], f"{path}: rocpd_op, op {op[0]!r}: roctxId"),
                                                 UNKNOWN) if op[7] else UNKNOWN for op in ops], dtype=np.int64)
    gpus = sorted(set(agent.tolist()))
    metadata: dict[str, Any] = {
        "hostname": None,
        "command": None,
        "pid": pid,
        "api_trace": api is not None,
        "streams": {sid: {"name": "Default Stream" if sid == 0 else f"Stream {sid}", "handle": ptr}
                    for ptr, sid in stream_ids.items()},
        "rpd_metadata": {foreign.text(t, f"{path}: rocpd_metadata tag"): foreign.text(v, f"{path}: rocpd_metadata value")
                         for t, v in con.execute("SELECT tag, value FROM rocpd_metadata").fetchall()}
        if "rocpd_metadata" in tables else {},
    }
    return Trace(
        start=start, end=end, agent=agent, queue=queue, stream=stream, kernel=kernel, corr=corr,
        grid=grid, workgroup=workgroup, symbols=symbols,
        # RPD does not record what the GPU is; the gpuId is all we know.
        agents=[Agent(id=int(g), type="GPU", name="") for g in gpus],
        api=api, metadata=metadata, markers=markers, dispatch_range=dispatch_range,
    )


def _read_markers(
    con: sqlite3.Connection, tables: set[str], strings: dict[int, str], has_roctx_id: bool
) -> tuple[Markers | None, dict[int, int]]:
    """roctx ranges and marks; and, for rocm-trace-lite, roctxId -> row in the returned Markers."""
    marker_ids = [i for i, s in strings.items() if s == MARKER_NAME]
    if not marker_ids:
        return None, {}
    path = foreign.sqlite_file(con)
    marks = ",".join("?" * len(marker_ids))
    rows: list[dict] = []
    if "rocpd_api" in tables:
        for tid, start, end, args_id in con.execute(
            f'SELECT tid, start, "end", args_id FROM rocpd_api WHERE apiName_id IN ({marks})', marker_ids
        ):
            where = f"{path}: rocpd_api, a UserMarker's"
            tid, start, end = (foreign.integer(v, f"{where} {c}") for v, c in zip((tid, start, end), ("tid", "start", "end")))
            rows.append({"name": strings.get(args_id) or MARKER_NAME, "start": start, "end": end, "tid": tid,
                         "kind": MARK if start == end else THREAD_RANGE})
    roctx_of_row: list[int] = [0] * len(rows)
    if has_roctx_id:
        # rocm-trace-lite: no thread is recorded; its tracer already tied each kernel to its range
        for start, end, desc_id, roctx_id in con.execute(
            f'SELECT start, "end", description_id, roctxId FROM rocpd_op WHERE gpuId < 0 AND opType_id IN ({marks})',
            marker_ids,
        ):
            where = f"{path}: rocpd_op, a UserMarker's"
            start, end = foreign.integer(start, f"{where} start"), foreign.integer(end, f"{where} end")
            roctx_id = foreign.integer(roctx_id or 0, f"{where} roctxId")
            rows.append({"name": strings.get(desc_id) or MARKER_NAME, "start": start, "end": end,
                         "kind": MARK if start == end else THREAD_RANGE, "roctx": roctx_id})
            roctx_of_row.append(roctx_id)
    if not rows:
        return None, {}
    for row, roctx in zip(rows, roctx_of_row):
        row["roctx"] = roctx
    markers = Markers.from_rows(rows)
    # from_rows sorts by (start, -end, index): follow the same order to map roctxId to sorted rows
    order = sorted(range(len(rows)), key=lambda i: (int(rows[i]["start"]), -int(rows[i]["end"]), i))
    range_row = {rows[i]["roctx"]: new for new, i in enumerate(order) if rows[i]["roctx"]}
    return markers, range_row


def _read_api(
    con: sqlite3.Connection, tables: set[str], strings: dict[int, str], launch: dict[int, tuple]
) -> tuple[ApiCalls | None, int | None]:
    if "rocpd_api" not in tables:
        return None, None
    rows = np.column_stack(
        int_columns(con, 'SELECT id, pid, tid, start, "end", apiName_id, args_id FROM rocpd_api ORDER BY start, id', 7)
    )
    pid = int(rows[0, 1]) if len(rows) else None
    # Only HIP calls order GPU work; markers and the tracer's own bookkeeping rows are not API calls.
    keep = np.array([(strings.get(i) or "").startswith("hip") for i in rows[:, 5].tolist()], dtype=bool)
    rows = rows[keep]
    if not len(rows):
        return None, pid
    names_per_row = [strings[i] for i in rows[:, 5].tolist()]
    distinct = sorted(set(names_per_row))
    index = {name: i for i, name in enumerate(distinct)}
    n = len(rows)
    stream = np.full(n, UNKNOWN, np.int64)
    event = np.full(n, UNKNOWN, np.int64)
    args: dict[int, dict[str, str]] = {}
    for r, (api_id, args_id) in enumerate(zip(rows[:, 0].tolist(), rows[:, 6].tolist())):
        a = parse_rpd_args(strings.get(args_id))
        params = launch.get(api_id)
        if params is not None and "stream" not in a:
            a["stream"] = str(params[0])
        if a:
            args[r] = a
        if "stream" in a:
            stream[r] = parse_pointer(a["stream"])
        if "event" in a:
            event[r] = parse_pointer(a["event"])
    api = ApiCalls(
        names=distinct,
        name=np.fromiter((index[x] for x in names_per_row), dtype=np.int32, count=n),
        start=rows[:, 3].copy(), end=rows[:, 4].copy(), tid=rows[:, 2].copy(), corr=rows[:, 0].copy(),
        stream=stream, event=event, args=args,
    )
    return api, pid
