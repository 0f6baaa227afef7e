"""The Trace model: what every reader produces and every analysis consumes.

Dispatches are numpy columns (millions of rows must stay cheap); kernel symbols, agents and
metadata are small Python records. Nothing here knows which file format a trace came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

# Sentinel for "the trace does not say" in integer columns.
UNKNOWN = -1


@dataclass
class KernelSymbol:
    """One kernel as the code object names it, with the resources the compiler gave it."""

    name: str  # mangled when the trace has it (rocpd: `_Z...kd`), else what the trace says
    display_name: str  # demangled, with parameter list when the trace has one
    vgpr: int | None = None  # architected VGPRs
    agpr: int | None = None  # accumulation VGPRs
    sgpr: int | None = None
    lds_bytes: int | None = None  # static group segment
    scratch_bytes: int | None = None  # static private segment per lane


@dataclass
class Agent:
    """A CPU or GPU agent of the profiled node.

    `extra` keeps what the format says about the agent. Readers spell the facts the roofline needs
    with rocpd's agent-info names where rocpd has one (`max_engine_clk_fcompute` MHz, `simd_per_cu`,
    `max_waves_per_cu`, `wave_front_size`, `lds_size_in_kb`, `num_xcc`) and otherwise as
    `max_mem_clk_mhz`, `hbm_channels`, `l2_channels`, `lds_banks_per_cu`, `hbm_bandwidth_gbs`.
    `measured_peaks` are empirical peaks measured on this device (a roofline benchmark), in bytes/s
    or FLOP/s, keyed like the roofline's resources: `hbm`, `l2`, `vl1d`, `lds`, `valu_f32`,
    `valu_f64`, `mfma_f16`, `mfma_bf16`, `mfma_f32`, `mfma_f64`, `mfma_i8`, ...
    """

    id: int
    type: str  # "GPU" or "CPU"
    name: str  # gfx942, gfx90a, ... for GPUs
    product: str = ""
    cu_count: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    measured_peaks: dict[str, float] = field(default_factory=dict)


class ApiArgs(Mapping):
    """The arguments of API calls as columns (a Mapping row -> {name: value}, as `ApiCalls.args`).

    One entry per argument: the API row it belongs to, its name and its value as codes into
    `names` and `values` (a value may be None), sorted by row and, within a row, in the call's
    argument order. Ten million calls' arguments take a few hundred MB this way instead of a
    dict per call.
    """

    def __init__(self, row: np.ndarray, name: np.ndarray, value: np.ndarray, names: list[str],
                 values: list[str | None]):
        row = np.asarray(row, dtype=np.int64)
        in_order = len(row) < 2 or bool(np.all(row[1:] >= row[:-1]))
        order = slice(None) if in_order else np.argsort(row, kind="stable")
        self.row = row[order]
        self.name = np.asarray(name, dtype=np.int32)[order]
        self.value = np.asarray(value, dtype=np.int32)[order]
        self.names = names
        self.values = values
        first = np.ones(len(self.row), dtype=bool)  # sorted: the distinct rows without np.unique's hashing
        first[1:] = self.row[1:] != self.row[:-1]
        self._rows = self.row[first]

    def __getitem__(self, row: int) -> dict[str, str | None]:
        lo, hi = np.searchsorted(self.row, [row, row + 1])
        if lo == hi:
            raise KeyError(row)
        names, values = self.names, self.values
        return {names[n]: values[v] for n, v in zip(self.name[lo:hi].tolist(), self.value[lo:hi].tolist())}

    def __contains__(self, row: object) -> bool:
        if not isinstance(row, (int, np.integer)):
            return False
        i = int(np.searchsorted(self._rows, row))
        return i < len(self._rows) and int(self._rows[i]) == int(row)

    def __iter__(self) -> Iterator[int]:
        return iter(self._rows.tolist())

    def __len__(self) -> int:
        return len(self._rows)

    def remapped(self, new_row_of_old: np.ndarray) -> "ApiArgs":
        """The same arguments with rows renumbered (new_row_of_old[old row] = new row)."""
        return ApiArgs(np.asarray(new_row_of_old)[self.row], self.name, self.value, self.names, self.values)


@dataclass
class ApiCalls:
    """HIP API calls as columns, sorted by start. Only the arguments that order work are columns.

    `stream` and `event` hold pointer values (hipStream_t / hipEvent_t as integers; 0 is the null
    stream) or UNKNOWN when the call has no such argument. `corr` is the internal correlation id
    that joins a launch call to its dispatch (rocpd `stack_id`, CSV `Correlation_Id`).
    `args` keeps every argument as text for the calls whose arguments were read, keyed by row
    (a dict, or an ApiArgs of columns for large traces; empty when the reader was told they are
    not needed, see trace/needs.py).
    """

    names: list[str]  # the distinct API names; `name` indexes into it
    name: np.ndarray  # int32
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    tid: np.ndarray  # int64
    corr: np.ndarray  # int64
    stream: np.ndarray  # int64 pointer value or UNKNOWN
    event: np.ndarray  # int64 pointer value or UNKNOWN
    args: Mapping[int, dict[str, str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def empty(cls) -> "ApiCalls":
        z = np.zeros(0, dtype=np.int64)
        return cls([], np.zeros(0, dtype=np.int32), z, z.copy(), z.copy(), z.copy(), z.copy(), z.copy())

    def name_of(self, row: int) -> str:
        return self.names[int(self.name[row])]


# Kinds of marker rows (roctx and Kineto user annotations).
THREAD_RANGE = 0  # roctxRangePushA ... roctxRangePop: nested on one thread
PROCESS_RANGE = 1  # roctxRangeStartA ... roctxRangeStop: may overlap anything, may end on another thread
MARK = 2  # roctxMarkA: an instant (start == end)
MARKER_KINDS = ("thread range", "process range", "mark")


@dataclass
class Markers:
    """roctx ranges and marks (or the user annotations of a PyTorch profile) as columns sorted by start.

    `tid` is the host thread that opened the range (UNKNOWN where the format does not say).
    GPU-side annotations (Kineto `gpu_user_annotation`) have `agent`/`stream` set to where they
    ran and `tid` UNKNOWN; `link` is then the row of the host range they mirror (same External
    id), else UNKNOWN. `dispatch_range` on the Trace is for formats whose tracer attributes each
    dispatch to its range itself (rocm-trace-lite's `roctxId`).
    """

    names: list[str]  # the distinct messages; `name` indexes into it
    name: np.ndarray  # int32
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    tid: np.ndarray  # int64
    kind: np.ndarray  # int8: THREAD_RANGE, PROCESS_RANGE or MARK
    agent: np.ndarray  # int64, UNKNOWN for host-side rows
    stream: np.ndarray  # int64, UNKNOWN for host-side rows
    link: np.ndarray  # int64 row, UNKNOWN where none

    def __len__(self) -> int:
        return len(self.start)

    def name_of(self, row: int) -> str:
        return self.names[int(self.name[row])]

    @property
    def on_gpu(self) -> np.ndarray:
        return self.agent != UNKNOWN

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]]) -> "Markers":
        """Markers from dicts with name, start, end and optional tid, kind, agent, stream, link (sorted by start).

        `link` in a row is the index of another row in `rows`; it is renumbered to the sorted order.
        """
        n = len(rows)
        order = sorted(range(n), key=lambda i: (int(rows[i]["start"]), -int(rows[i]["end"]), i))
        new_row = {old: new for new, old in enumerate(order)}
        index: dict[str, int] = {}

        def col(key: str, default: int, dtype=np.int64) -> np.ndarray:
            return np.array([int(rows[i].get(key, default)) for i in order], dtype=dtype)

        for i in order:
            index.setdefault(str(rows[i]["name"]), len(index))
        links = [rows[i].get("link", UNKNOWN) for i in order]
        return cls(
            names=list(index),
            name=np.array([index[str(rows[i]["name"])] for i in order], dtype=np.int32),
            start=col("start", 0),
            end=col("end", 0),
            tid=col("tid", UNKNOWN),
            kind=col("kind", THREAD_RANGE, np.int8),
            agent=col("agent", UNKNOWN),
            stream=col("stream", UNKNOWN),
            link=np.array([new_row[l] if l != UNKNOWN and l in new_row else UNKNOWN for l in links], dtype=np.int64),
        )


@dataclass
class MemoryOps:
    """Device memory copies and fills (rocpd memory copies, Kineto `gpu_memcpy`/`gpu_memset`), sorted by start.

    They are not kernel dispatches and do not count in the runtime; analyses that look at what a
    GPU did between kernels (idle gaps, overlap) use them.
    """

    names: list[str]  # "Memcpy HtoD (Host -> Device)", "MEMORY_COPY_HOST_TO_DEVICE", ...
    name: np.ndarray  # int32
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    agent: np.ndarray  # int64
    stream: np.ndarray  # int64 (the trace's stream id) or UNKNOWN
    corr: np.ndarray  # int64 correlation id of the call that issued it, or UNKNOWN
    bytes: np.ndarray  # int64, UNKNOWN where not recorded
    is_fill: np.ndarray  # bool: a memset rather than a copy

    def __len__(self) -> int:
        return len(self.start)

    def name_of(self, row: int) -> str:
        return self.names[int(self.name[row])]


@dataclass
class Trace:
    """Kernel dispatches (columns of equal length, sorted by start) plus what describes them.

    `kernel` indexes `symbols`. `stream` is the trace's small stream id (0 = default stream) or
    UNKNOWN where the format has none; `queue` likewise. `corr` is the internal correlation id.
    `grid` and `workgroup` are (n, 3) arrays. `api` is None when the trace holds no API trace.
    `digests` are the digests of device-to-host copies, in program order (host backend only).
    `counters` holds hardware counters per dispatch: name -> float64 column aligned with the
    dispatch rows, NaN where that counter was not collected for that dispatch. Names are the
    profiler's (`SQ_WAVES`, `TCC_EA0_RDREQ_sum`, ...); empty when the profile has none.
    """

    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    agent: np.ndarray  # int64 agent id (index into `agents` by id, not position)
    queue: np.ndarray  # int64
    stream: np.ndarray  # int64
    kernel: np.ndarray  # int32 index into `symbols`
    corr: np.ndarray  # int64
    grid: np.ndarray  # int64 (n, 3)
    workgroup: np.ndarray  # int64 (n, 3)
    symbols: list[KernelSymbol]
    agents: list[Agent] = field(default_factory=list)
    api: ApiCalls | None = None
    digests: list[str] = field(default_factory=list)
    # format, source path, hostname, command, pid, ... (see trace/metadata keys in readers)
    metadata: dict[str, Any] = field(default_factory=dict)
    # per-dispatch LDS bytes (static + dynamic, rocpd `group_segment_size`); None where unknown
    lds_bytes: np.ndarray | None = None
    # roctx ranges/marks or PyTorch user annotations; None when the profile holds none
    markers: Markers | None = None
    # device copies and fills; None when the profile holds none
    copies: MemoryOps | None = None
    # per-dispatch host thread that launched it (rocpd/CSV dispatch `tid`); None where unknown
    tid: np.ndarray | None = None
    # per-dispatch row in `markers` of the range the tracer itself attributed it to (rocm-trace-lite
    # roctxId), UNKNOWN for none; None where the format does not attribute
    dispatch_range: np.ndarray | None = None
    # per-dispatch hardware counters (float64 columns, NaN where not collected); empty when none
    counters: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.start)

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    @property
    def runtime_ns(self) -> int:
        """SUM(end - start) over kernel dispatches: the authoritative runtime figure."""
        return int(self.duration.sum())

    @property
    def has_streams(self) -> bool:
        return bool(len(self.stream)) and bool((self.stream != UNKNOWN).any())

    def symbol_name(self, row: int) -> str:
        return self.symbols[int(self.kernel[row])].display_name

    def gpu_agents(self) -> list[Agent]:
        return [a for a in self.agents if a.type == "GPU"]

    def agent_by_id(self, agent_id: int) -> Agent | None:
        return next((a for a in self.agents if a.id == agent_id), None)

    @classmethod
    def from_rows(
        cls,
        *,
        start,
        end,
        kernel,
        symbols: list[KernelSymbol],
        agent=None,
        queue=None,
        stream=None,
        corr=None,
        grid=None,
        workgroup=None,
        **extra: Any,
    ) -> "Trace":
        """Build a Trace from plain sequences (tests, generators); sorts by start."""
        start = np.asarray(start, dtype=np.int64)
        n = len(start)

        def col(values, default=UNKNOWN):
            if values is None:
                return np.full(n, default, dtype=np.int64)
            return np.asarray(values, dtype=np.int64)

        def dims(values):
            if values is None:
                return np.ones((n, 3), dtype=np.int64)
            return np.asarray(values, dtype=np.int64).reshape(n, 3)

        order = np.argsort(start, kind="stable")
        for column in ("lds_bytes", "tid", "dispatch_range"):
            if extra.get(column) is not None:
                extra[column] = np.asarray(extra[column], dtype=np.int64)[order]
        if extra.get("counters"):
            extra["counters"] = {k: np.asarray(v, dtype=np.float64)[order] for k, v in extra["counters"].items()}
        return cls(
            start=start[order],
            end=col(end)[order],
            agent=col(agent, 0)[order],
            queue=col(queue)[order],
            stream=col(stream)[order],
            kernel=np.asarray(kernel, dtype=np.int32)[order],
            corr=col(corr)[order],
            grid=dims(grid)[order],
            workgroup=dims(workgroup)[order],
            symbols=symbols,
            **extra,
        )
