"""The Trace model: what every reader produces and every analysis consumes.

Dispatches are numpy columns (millions of rows must stay cheap); kernel symbols, agents and
metadata are small Python records. Nothing here knows which file format a trace came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    """A CPU or GPU agent of the profiled node."""

    id: int
    type: str  # "GPU" or "CPU"
    name: str  # gfx942, gfx90a, ... for GPUs
    product: str = ""
    cu_count: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ApiCalls:
    """HIP API calls as columns, sorted by start. Only the arguments that order work are columns.

    `stream` and `event` hold pointer values (hipStream_t / hipEvent_t as integers; 0 is the null
    stream) or UNKNOWN when the call has no such argument. `corr` is the internal correlation id
    that joins a launch call to its dispatch (rocpd `stack_id`, CSV `Correlation_Id`).
    `args` keeps every argument as text for the calls whose arguments were read, keyed by row.
    """

    names: list[str]  # the distinct API names; `name` indexes into it
    name: np.ndarray  # int32
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    tid: np.ndarray  # int64
    corr: np.ndarray  # int64
    stream: np.ndarray  # int64 pointer value or UNKNOWN
    event: np.ndarray  # int64 pointer value or UNKNOWN
    args: dict[int, dict[str, str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def empty(cls) -> "ApiCalls":
        z = np.zeros(0, dtype=np.int64)
        return cls([], np.zeros(0, dtype=np.int32), z, z.copy(), z.copy(), z.copy(), z.copy(), z.copy())

    def name_of(self, row: int) -> str:
        return self.names[int(self.name[row])]


@dataclass
class Trace:
    """Kernel dispatches (columns of equal length, sorted by start) plus what describes them.

    `kernel` indexes `symbols`. `stream` is the trace's small stream id (0 = default stream) or
    UNKNOWN where the format has none; `queue` likewise. `corr` is the internal correlation id.
    `grid` and `workgroup` are (n, 3) arrays. `api` is None when the trace holds no API trace.
    `digests` are the digests of device-to-host copies, in program order (host backend only).
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
        if extra.get("lds_bytes") is not None:
            extra["lds_bytes"] = np.asarray(extra["lds_bytes"], dtype=np.int64)[order]
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
