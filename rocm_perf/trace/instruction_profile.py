"""The instruction-level model: where inside kernels the time went, one row per instruction.

Every source of that evidence reads into this one shape: rocprofv3 PC sampling (decoded to the
viewer's `code.json`, or its per-sample CSV), thread trace (ATT, decoded `code.json` and
`stats_*.csv`), and the host backend's own sampler. Rows are numpy columns; the analysis
(rocm_perf.analysis.hotspots) never asks which file they came from, only what `evidence` says
about the units of `weight`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.foreign import INT64_MAX, finite

# Stall (not-issued) reasons of stochastic PC sampling, in the order rocprofiler-sdk numbers them
# (rocprofiler_pc_sampling_instruction_not_issued_reason_t: NONE, NO_INSTRUCTION_AVAILABLE,
# ALU_DEPENDENCY, WAITCNT, INTERNAL_INSTRUCTION, BARRIER_WAIT, ARBITER_NOT_WIN,
# ARBITER_WIN_EX_STALL, OTHER_WAIT, SLEEP_WAIT), which is also the order of the viewer's
# `Stall_Reasons` lists. Our names say what the reason means to someone reading a kernel.
STALL_REASONS: tuple[str, ...] = (
    "none",
    "instruction_fetch",
    "alu_dependency",
    "waitcnt",
    "internal",
    "barrier",
    "arbiter_loss",
    "pipe_stall",
    "other_wait",
    "sleeping",
)
STALL_REASON_LABELS = {
    "none": "none",
    "instruction_fetch": "instruction fetch",
    "alu_dependency": "ALU dependency",
    "waitcnt": "waitcnt (memory wait)",
    "internal": "internal",
    "barrier": "barrier",
    "arbiter_loss": "arbiter loss",
    "pipe_stall": "pipe stall",
    "other_wait": "other wait",
    "sleeping": "sleeping",
}

# What `weight` counts for each kind of evidence.
EVIDENCE_UNITS = {"pc-sampling": "samples", "att": "cycles", "host-sampler": "samples"}


@dataclass
class InstructionProfile:
    """Per-instruction evidence for one or more kernels.

    `weight` is the heat of a row: samples (PC sampling, host sampler) or latency cycles (ATT).
    `issued` + `stalled` split it where the source says so (stochastic PC sampling: issued vs
    not-issued samples; ATT: latency minus stall vs stall cycles); both are 0 where it does not
    (host-trap PC sampling, the host sampler). `stalls[:, k]` counts the stalled weight of
    `stall_reasons[k]`. `file`/`line` are the source location the profiler recorded ('' / 0 when
    none); `vaddr` is the instruction's address in its code object (-1 when unknown).
    """

    origin: str  # the file or folder read
    evidence: str  # "pc-sampling" | "att" | "host-sampler"
    kernel: np.ndarray  # str
    code_object: np.ndarray  # int64, -1 = unknown
    vaddr: np.ndarray  # int64, -1 = unknown
    isa: np.ndarray  # str: the instruction text ('' for the host sampler)
    file: np.ndarray  # str
    line: np.ndarray  # int64
    weight: np.ndarray  # float64
    issued: np.ndarray  # float64
    stalled: np.ndarray  # float64
    stalls: np.ndarray  # float64, shape (rows, len(stall_reasons))
    stall_reasons: tuple[str, ...] = STALL_REASONS
    hits: np.ndarray | None = None  # ATT: issue count per instruction
    idle: np.ndarray | None = None  # ATT: idle cycles before the instruction
    context: np.ndarray | None = None  # per row: the (file, line) frames it was inlined into, innermost first
    version: str | None = None  # the format version the file declared
    notes: list[str] = field(default_factory=list)  # what the reader had to assume or skip
    metadata: dict = field(default_factory=dict)

    @property
    def unit(self) -> str:
        return EVIDENCE_UNITS.get(self.evidence, "samples")

    @property
    def has_issue_split(self) -> bool:
        """Whether issued/stalled (and stall reasons) carry information."""
        return bool(np.any(self.issued) or np.any(self.stalled))

    def __len__(self) -> int:
        return len(self.weight)

    def kernels(self) -> list[str]:
        """Kernel names in first-seen order."""
        return list(dict.fromkeys(self.kernel.tolist()))


def profile_from_rows(
    rows: list[dict],
    *,
    origin: str,
    evidence: str,
    stall_reasons: tuple[str, ...] = STALL_REASONS,
    version: str | None = None,
    notes: list[str] | None = None,
    metadata: dict | None = None,
    with_att_columns: bool = False,
) -> InstructionProfile:
    """Build the columns from row dicts (keys: kernel, code_object, vaddr, isa, file, line, weight,
    issued, stalled, stalls (a sequence of len(stall_reasons)), hits, idle)."""
    n = len(rows)
    stalls = np.zeros((n, len(stall_reasons)), dtype=np.float64)
    for i, r in enumerate(rows):
        values = r.get("stalls")
        if values is not None and len(values):
            stalls[i, : len(values)] = values
    def column(key, default, dtype):
        return np.array([r.get(key, default) for r in rows], dtype=dtype)

    return InstructionProfile(
        origin=origin,
        evidence=evidence,
        kernel=column("kernel", "", object),
        code_object=column("code_object", -1, np.int64),
        vaddr=column("vaddr", -1, np.int64),
        isa=column("isa", "", object),
        file=column("file", "", object),
        line=column("line", 0, np.int64),
        weight=column("weight", 0.0, np.float64),
        issued=column("issued", 0.0, np.float64),
        stalled=column("stalled", 0.0, np.float64),
        stalls=stalls,
        stall_reasons=tuple(stall_reasons),
        hits=column("hits", 0.0, np.float64) if with_att_columns else None,
        idle=column("idle", 0.0, np.float64) if with_att_columns else None,
        context=_context_column(rows) if any(r.get("context") for r in rows) else None,
        version=version,
        notes=list(notes or []),
        metadata=dict(metadata or {}),
    )


def _context_column(rows: list[dict]) -> np.ndarray:
    out = np.empty(len(rows), dtype=object)
    for i, r in enumerate(rows):
        out[i] = tuple((str(f), int(l)) for f, l in (r.get("context") or ()))
    return out


def split_source(location: str) -> tuple[str, int]:
    """`path:line` (as profilers write it) -> (path, line); ('', 0) when it is not one.

    The line is the text after the last colon, so Windows drive letters and `::` in names do not
    confuse it; a trailing `:col` is not part of the documented form.
    """
    if not location:
        return "", 0
    path, sep, tail = location.rpartition(":")
    if not sep or not path or not tail.strip().isdigit() or int(tail) > INT64_MAX:
        return "", 0
    return path, int(tail)


def concatenate(profiles: list[InstructionProfile], origin: str) -> InstructionProfile:
    """One profile of several of the same evidence (several dispatches, rounds or processes)."""
    if not profiles:
        raise ValueError("nothing to concatenate")
    if len(profiles) == 1:
        return profiles[0]
    evidence = {p.evidence for p in profiles}
    if len(evidence) > 1:
        raise ValueError(f"cannot mix evidence kinds {sorted(evidence)}")
    reasons = max((p.stall_reasons for p in profiles), key=len)
    width = len(reasons)

    def widen(p: InstructionProfile) -> np.ndarray:
        out = np.zeros((len(p), width), dtype=np.float64)
        out[:, : p.stalls.shape[1]] = p.stalls
        return out

    att = all(p.hits is not None for p in profiles)
    notes = list(dict.fromkeys(n for p in profiles for n in p.notes))
    return InstructionProfile(
        origin=origin,
        evidence=profiles[0].evidence,
        kernel=np.concatenate([p.kernel for p in profiles]),
        code_object=np.concatenate([p.code_object for p in profiles]),
        vaddr=np.concatenate([p.vaddr for p in profiles]),
        isa=np.concatenate([p.isa for p in profiles]),
        file=np.concatenate([p.file for p in profiles]),
        line=np.concatenate([p.line for p in profiles]),
        weight=np.concatenate([p.weight for p in profiles]),
        issued=np.concatenate([p.issued for p in profiles]),
        stalled=np.concatenate([p.stalled for p in profiles]),
        stalls=np.concatenate([widen(p) for p in profiles]),
        stall_reasons=reasons,
        hits=np.concatenate([p.hits for p in profiles]) if att else None,
        idle=np.concatenate([p.idle for p in profiles]) if att else None,
        context=_concatenate_context(profiles),
        version=profiles[0].version,
        notes=notes,
        metadata={**profiles[0].metadata, "parts": [p.origin for p in profiles],
                  **{key: {k: v for p in profiles for k, v in (p.metadata.get(key) or {}).items()}
                     for key in ("snapshots", "mangled")}},
    )


def _concatenate_context(profiles: list[InstructionProfile]) -> np.ndarray | None:
    if all(p.context is None for p in profiles):
        return None
    parts = []
    for p in profiles:
        if p.context is not None:
            parts.append(p.context)
        else:
            empty = np.empty(len(p), dtype=object)
            empty[:] = [()] * len(p)
            parts.append(empty)
    return np.concatenate(parts)


def parse_count(value, where: str) -> float:
    """A count from a profile: a number or a numeric string (None = 0). Anything else raises
    RocmPerfError `<where> is <value>, not a number` (`where` names the file, row and column)."""
    return 0.0 if value is None else finite(value, where)  # foreign.py: the one place numbers come in
