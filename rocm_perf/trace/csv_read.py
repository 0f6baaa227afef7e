"""Read rocprofv3 CSV output: one kernel_trace.csv, or a folder of rocprofv3 CSV files.

Accepted kernel-trace layouts: ROCm 7 (`Stream_Id`, `LDS_Block_Size`, `Scratch_Size`), ROCm 6
(no `Stream_Id`; `Group_Segment_Size`, `Private_Segment_Size`), `rocpd convert` output (a
leading `Guid` column; `Pid` before a counter collection's columns; `Stack_Id` where the
correlation id was), and counter_collection.csv (one row per dispatch and counter: folded
back to one row per dispatch, the counters kept as the Trace's per-dispatch columns). In a folder,
`<pid>_hip_api_trace.csv` supplies the API calls; CSV API rows carry no arguments, so their
stream/event columns stay UNKNOWN. A folder holding a kernel trace and a counter collection of
the same run gives the kernel trace's dispatches with the counters joined by `Dispatch_Id`.
`<pid>_agent_info.csv` beside the files says which GPU each `Agent_Id` is (trace/agent_info_read.py).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace import foreign
from rocm_perf.trace.agent_info_read import agent_info_beside, agents_for, read_agent_info
from rocm_perf.trace.model import MARK, PROCESS_RANGE, THREAD_RANGE, UNKNOWN, Agent, ApiCalls, KernelSymbol, Markers, Trace

REQUIRED = ("Kernel_Name", "Start_Timestamp", "End_Timestamp")
_KNOWN_COLUMNS = {"Kernel_Name", "Start_Timestamp", "End_Timestamp", "Correlation_Id", "Dispatch_Id", "Function"}
_API_REQUIRED = ("Function", "Start_Timestamp", "End_Timestamp")
# The correlation id's column: `Stack_Id` in newer `rocpd convert` output, which writes the row's
# stack id where older files had the correlation id.
_CORRELATION = ("Correlation_Id", "Stack_Id")
# Column aliases across ROCm versions: our name -> the names a file may use, first match wins.
_ALIASES = {
    "lds": ("LDS_Block_Size", "Group_Segment_Size"),
    "scratch": ("Scratch_Size", "Private_Segment_Size"),
}
_PID_PREFIX = re.compile(r"^(\d+)_")
_MARKER_REQUIRED = ("Domain", "Function", "Thread_Id", "Start_Timestamp", "End_Timestamp")
# Rows of marker_api_trace.csv whose Function is the roctx call itself rather than a message: the
# closing calls and bookkeeping (rocprofv3 writes the message for marks, pushes and starts).
_MARKER_OPERATIONS = frozenset({
    "roctxRangePop", "roctxRangeStop", "roctxGetThreadId", "roctxProfilerPause", "roctxProfilerResume",
    "roctxNameOsThread", "roctxNameHsaAgent", "roctxNameHipDevice", "roctxNameHipStream",
})


def _header(path: Path) -> list[str]:
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            return next(csv.reader(f), [])
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read ({e.strerror or e})") from e


def looks_like_rocprofv3_csv(path: Path) -> bool:
    """True when the first line is a CSV header with rocprofv3 column names."""
    return bool(_KNOWN_COLUMNS & set(_header(path)))


def _is_kernel_trace(header: list[str]) -> bool:
    return all(c in header for c in REQUIRED)


def _is_api_trace(header: list[str]) -> bool:
    return (all(c in header for c in _API_REQUIRED) and any(c in header for c in _CORRELATION)
            and "Kernel_Name" not in header)


@dataclass
class _Table:
    path: Path
    header: list[str]
    rows: list[list[str]]

    def has(self, column: str) -> bool:
        return column in self.header

    def text(self, column: str) -> list[str]:
        i = self.header.index(column)
        return [r[i] for r in self.rows]

    def ints(self, *columns: str, default: int = UNKNOWN) -> np.ndarray:
        """The first of `columns` present, as int64 ("Agent 4" -> 4); `default` where none is present."""
        for column in columns:
            if column in self.header:
                i = self.header.index(column)
                return foreign.int64_array([_cell(r[i]) for r in self.rows],
                                           lambda n: f"{self.path}: line {n + 2}: column {column}")
        return np.full(len(self.rows), default, dtype=np.int64)


def _cell(text: str) -> int | str:
    """An integer cell: its int, UNKNOWN when empty, else the text for foreign.integer to judge
    ("16384.000000", as counters print, is 16384; "abc" and "1e400" are refused)."""
    text = text.strip()
    if text.startswith(("Agent ", "GPU ", "CPU ")):  # rocprofv3's agent labels (trace/agent_info_read.py)
        text = text.split(" ", 1)[1]
    if text == "":
        return UNKNOWN
    try:
        return int(text)
    except ValueError:
        return text


def _read_table(path: Path) -> _Table:
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise RocmPerfError(f"{path}: empty file")
            rows = []
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    raise RocmPerfError(
                        f"{path}: line {reader.line_num}: {len(row)} fields where the header has {len(header)} "
                        "(truncated or damaged CSV)"
                    )
                rows.append(row)
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read ({e.strerror or e})") from e
    except csv.Error as e:
        raise RocmPerfError(f"{path}: not a readable CSV ({e})") from e
    return _Table(path, header, rows)


def read_csv_file(path: Path) -> Trace:
    """A Trace from one rocprofv3 kernel-trace (or counter-collection) CSV file."""
    table = _read_table(path)
    missing = [c for c in REQUIRED if c not in table.header]
    if missing:
        raise RocmPerfError(
            f"{path}: CSV lacks column(s) {', '.join(missing)} (expected a rocprofv3 kernel_trace.csv)"
        )
    trace = _kernel_trace([table], agent_info_beside(path))
    trace.metadata["source_path"] = str(path)
    return trace


def read_csv_folder(folder: Path) -> Trace:
    """A Trace from a rocprofv3 CSV output folder: its kernel trace(s), plus HIP API calls if traced."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".csv")
    if not files:
        raise RocmPerfError(f"{folder}: folder without CSV files (expected rocprofv3 --output-format csv output)")
    headers = {p: _header(p) for p in files}
    # rocprofv3 names them `<pid>_kernel_trace.csv` (or `kernel_trace.csv` with -o); any other
    # file with kernel-trace columns counts only when no file has that name.
    named = [p for p in files if p.name.endswith("kernel_trace.csv") and _is_kernel_trace(headers[p])]
    kernel_files = named or [p for p in files if _is_kernel_trace(headers[p]) and "Counter_Name" not in headers[p]]
    counter_files = [p for p in files if _is_kernel_trace(headers[p]) and "Counter_Name" in headers[p]]
    if not kernel_files and not counter_files:
        raise RocmPerfError(f"{folder}: no kernel trace CSV in this folder (run rocprofv3 with --kernel-trace, "
                            "or --pmc for a counter collection)")
    agent_info = agent_info_beside((kernel_files or counter_files)[0])
    if kernel_files:
        tables = [_read_table(p) for p in kernel_files]
        trace = _kernel_trace(tables, agent_info)
        if counter_files:
            _join_counters(trace, tables, [_read_table(p) for p in counter_files])
    else:  # `rocprofv3 --pmc` alone: the counter collection is the dispatch list
        kernel_files = counter_files
        trace = _kernel_trace([_read_table(p) for p in counter_files], agent_info)
    api_files = [p for p in files if p.name.endswith("hip_api_trace.csv") and _is_api_trace(headers[p])]
    if api_files:
        trace.api = _api_calls([_read_table(p) for p in api_files])
        trace.metadata["api_trace"] = True
        trace.metadata["api_args"] = False  # CSV rows hold no stream/event arguments
    marker_tables = [_read_table(p) for p in files if p.name.endswith("marker_api_trace.csv")
                     and all(c in headers[p] for c in _MARKER_REQUIRED)]
    marker_tables = [t for t in marker_tables if _same_run(t, trace)]
    marker_files = [t.path for t in marker_tables]
    if marker_tables:
        trace.markers = _markers(marker_tables)
    trace.metadata["source_path"] = str(folder)
    used_counters = counter_files if (kernel_files == counter_files or trace.counters) else []
    trace.metadata["csv_files"] = [p.name for p in dict.fromkeys(kernel_files + used_counters + api_files + marker_files)]
    return trace


def _join_counters(trace: Trace, kernel_tables: list[_Table], counter_tables: list[_Table]) -> None:
    """Counter columns of a counter collection onto the kernel trace's dispatches of the same run,
    matched by Dispatch_Id (NaN where a dispatch has no counter row). Nothing is joined without
    Dispatch_Id on both sides (timestamps differ between the two: counters serialize the kernels),
    nor when a dispatch id names another kernel, agent or thread on each side (files of other runs)."""
    if not all(t.has("Dispatch_Id") for t in kernel_tables + counter_tables):
        return
    def identity(t: _Table) -> list[tuple]:  # what one dispatch is in both files of one run
        return list(zip(t.text("Kernel_Name"), t.ints("Agent_Id").tolist(), t.ints("Thread_Id").tolist()))

    kernel_of = {d: k for t in kernel_tables for d, k in zip(t.ints("Dispatch_Id").tolist(), identity(t))}
    by_dispatch: dict[int, dict[str, float]] = {}
    for t in counter_tables:
        rows, columns = _one_row_per_dispatch(t)
        for i, (dispatch, who) in enumerate(zip(rows.ints("Dispatch_Id").tolist(), identity(rows))):
            if kernel_of.get(dispatch, who) != who:
                return  # another run's counters (the documentation's sample files are of several runs)
            by_dispatch.setdefault(dispatch, {}).update({k: float(v[i]) for k, v in columns.items() if not np.isnan(v[i])})
    if not by_dispatch.keys() & kernel_of.keys():
        return
    ids = np.concatenate([t.ints("Dispatch_Id") for t in kernel_tables])
    order = np.argsort(np.concatenate([t.ints("Start_Timestamp") for t in kernel_tables]), kind="stable")
    ids = ids[order]  # the trace's rows are sorted by start, as Trace.from_rows sorted them
    names = sorted({n for values in by_dispatch.values() for n in values})
    for name in names:
        trace.counters[name] = np.array([by_dispatch.get(int(d), {}).get(name, np.nan) for d in ids.tolist()])


def _same_run(markers: _Table, trace: Trace) -> bool:
    """Whether a marker file comes from the run of the kernel trace: same process where both say,
    else a thread in common (a folder may hold other runs' files, as rocprofv3's documentation does)."""
    pid = trace.metadata.get("pid")
    marker_pids = set(markers.ints("Process_Id").tolist()) - {UNKNOWN}
    if pid is not None and marker_pids:
        return pid in marker_pids
    launch_threads = set(trace.tid.tolist()) if trace.tid is not None else set()
    return bool((set(markers.ints("Thread_Id").tolist()) | marker_pids) & launch_threads)


def _markers(tables: list[_Table]) -> Markers | None:
    """roctx rows: a mark where start == end, a start/stop range on thread 0 (as rocprofv3 writes
    process ranges; see its documentation's marker_api_trace.csv), else a push/pop range."""
    rows = []
    for t in tables:
        names = t.text("Function")
        start, end, tid = t.ints("Start_Timestamp"), t.ints("End_Timestamp"), t.ints("Thread_Id")
        for name, s, e, thread in zip(names, start.tolist(), end.tolist(), tid.tolist()):
            if name in _MARKER_OPERATIONS:
                continue
            kind = MARK if s == e else PROCESS_RANGE if thread == 0 else THREAD_RANGE
            rows.append({"name": name, "start": s, "end": e, "tid": thread if kind != PROCESS_RANGE else UNKNOWN,
                         "kind": kind})
    return Markers.from_rows(rows) if rows else None


def _agent_ids(t: _Table) -> tuple[np.ndarray, bool]:
    """The Agent_Id column as numbers, and whether it names agents type-relative ("GPU n")."""
    type_relative = t.has("Agent_Id") and any(v.strip().startswith(("GPU ", "CPU ")) for v in t.text("Agent_Id"))
    return t.ints("Agent_Id", default=0), type_relative


def _kernel_trace(tables: list[_Table], agent_info: Path | None = None) -> Trace:
    start, end, agent, queue, stream, corr, kernel, grid, workgroup, tid = ([] for _ in range(10))
    symbols: list[KernelSymbol] = []
    symbol_index: dict[tuple, int] = {}
    pids: list[int] = []
    type_relative = False
    counter_parts: list[tuple[int, dict[str, np.ndarray]]] = []  # (rows, columns) per table
    for t in tables:
        columns: dict[str, np.ndarray] = {}
        if t.has("Counter_Name"):
            t, columns = _one_row_per_dispatch(t)
        counter_parts.append((len(t.rows), columns))
        if t.has("Process_Id") and t.rows:
            pids.append(int(t.ints("Process_Id")[0]))
        elif m := _PID_PREFIX.match(t.path.name):
            pids.append(int(m.group(1)))
        names = t.text("Kernel_Name")
        vgpr, agpr, sgpr = t.ints("VGPR_Count", "Arch_VGPR_Count"), t.ints("Accum_VGPR_Count"), t.ints("SGPR_Count")
        lds, scratch = t.ints(*_ALIASES["lds"]), t.ints(*_ALIASES["scratch"])
        for i, name in enumerate(names):
            key = (name, int(vgpr[i]), int(agpr[i]), int(sgpr[i]), int(lds[i]), int(scratch[i]))
            if key not in symbol_index:
                symbol_index[key] = len(symbols)
                symbols.append(
                    KernelSymbol(name=name, display_name=name, vgpr=_opt(vgpr[i]), agpr=_opt(agpr[i]),
                                 sgpr=_opt(sgpr[i]), lds_bytes=_opt(lds[i]), scratch_bytes=_opt(scratch[i]))
                )
            kernel.append(symbol_index[key])
        start.append(t.ints("Start_Timestamp"))
        end.append(t.ints("End_Timestamp"))
        ids, relative = _agent_ids(t)
        agent.append(ids)
        type_relative = type_relative or relative
        queue.append(t.ints("Queue_Id"))
        stream.append(t.ints("Stream_Id"))
        corr.append(t.ints(*_CORRELATION))
        tid.append(t.ints("Thread_Id"))
        grid.append(_dims(t, "Grid_Size"))
        workgroup.append(_dims(t, "Workgroup_Size"))
    agents_col = np.concatenate(agent)
    tids = np.concatenate(tid)
    agent_ids = sorted(set(agents_col.tolist()))
    if agent_info is not None:
        agents = agents_for(agent_ids, type_relative, read_agent_info(agent_info), agent_info)
    else:  # the kernel trace names agents by number only; which GPU it was is in agent_info.csv
        agents = [Agent(id=int(a), type="GPU", name="") for a in agent_ids]
    trace = Trace.from_rows(
        start=np.concatenate(start), end=np.concatenate(end), kernel=np.array(kernel, dtype=np.int32),
        symbols=symbols, agent=agents_col, queue=np.concatenate(queue), stream=np.concatenate(stream),
        corr=np.concatenate(corr), grid=np.concatenate(grid), workgroup=np.concatenate(workgroup),
        tid=None if bool((tids == UNKNOWN).all()) else tids,
        agents=agents,
        counters=_stack_counters(counter_parts),
    )
    trace.metadata.update(
        format="rocprofv3-csv", hostname=None, command=None, pid=pids[0] if pids else None, api_trace=False
    )
    if agent_info is not None:
        trace.metadata["agent_info"] = str(agent_info)
    return trace


def _opt(value) -> int | None:
    return None if value == UNKNOWN else int(value)


def _dims(t: _Table, prefix: str) -> np.ndarray:
    if t.has(f"{prefix}_X"):
        return np.stack([t.ints(f"{prefix}_{axis}", default=1) for axis in "XYZ"], axis=1)
    # counter_collection.csv and some older files give one total size
    total = t.ints(prefix, default=1)
    return np.stack([total, np.ones_like(total), np.ones_like(total)], axis=1)


def _one_row_per_dispatch(t: _Table) -> tuple[_Table, dict[str, np.ndarray]]:
    """The first row of each dispatch, and each counter as a column over those rows (NaN where a
    dispatch has no row for it). Repeated (dispatch, counter) rows are summed, as rocpd's
    `counters_collection` view sums a counter's instances."""
    for needed in ("Counter_Name", "Counter_Value"):
        if not t.has(needed):
            raise RocmPerfError(f"{t.path}: a counter collection CSV without a {needed} column")
    key_column = next((c for c in ("Dispatch_Id", *_CORRELATION) if t.has(c)), None)
    if key_column is None:
        raise RocmPerfError(f"{t.path}: counter collection without Dispatch_Id or Correlation_Id: rows cannot be told apart")
    key = t.header.index(key_column)
    name_at, value_at = t.header.index("Counter_Name"), t.header.index("Counter_Value")
    row_of: dict[str, int] = {}
    rows = []
    cells: dict[str, dict[int, float]] = {}
    for line, r in enumerate(t.rows, start=2):
        row = row_of.setdefault(r[key], len(rows))
        if row == len(rows):
            rows.append(r)
        value = foreign.finite(r[value_at], f"{t.path}: line {line}: Counter_Value of {r[name_at]}",
                               nan_ok=True) if r[value_at].strip() else float("nan")
        column = cells.setdefault(r[name_at], {})
        column[row] = column.get(row, 0.0) + value
    columns = {}
    for name, values in cells.items():
        column = np.full(len(rows), np.nan)
        column[list(values)] = list(values.values())
        columns[name] = column
    return _Table(t.path, t.header, rows), columns


def _stack_counters(parts: list[tuple[int, dict[str, np.ndarray]]]) -> dict[str, np.ndarray]:
    """Per-table counter columns as columns over all tables' rows, NaN where a table lacks a counter."""
    names = sorted({name for _, columns in parts for name in columns})
    out = {}
    for name in names:
        out[name] = np.concatenate([columns.get(name, np.full(n, np.nan)) for n, columns in parts])
    return out


def _api_calls(tables: list[_Table]) -> ApiCalls:
    names: list[str] = []
    start, end, tid, corr = [], [], [], []
    for t in tables:
        names += t.text("Function")
        start.append(t.ints("Start_Timestamp"))
        end.append(t.ints("End_Timestamp"))
        tid.append(t.ints("Thread_Id"))
        corr.append(t.ints(*_CORRELATION))
    start_all = np.concatenate(start)
    order = np.argsort(start_all, kind="stable")
    distinct = sorted(set(names))
    index = {n: i for i, n in enumerate(distinct)}
    n = len(order)
    return ApiCalls(
        names=distinct,
        name=np.array([index[names[i]] for i in order.tolist()], dtype=np.int32),
        start=start_all[order], end=np.concatenate(end)[order], tid=np.concatenate(tid)[order],
        corr=np.concatenate(corr)[order],
        stream=np.full(n, UNKNOWN, np.int64), event=np.full(n, UNKNOWN, np.int64),
    )
