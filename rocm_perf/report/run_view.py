"""What a report shows of a run or a sweep: plain records, filled from the run directory's files.

The renderers (HTML, Markdown) read only these records; `load_run` / `load_sweep` are the one
place that knows the run directory layout (ARCHITECTURE.md "Run directory").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Resources:
    """Compiler-reported resource usage of one kernel (AMD compile check), any field may be unknown."""

    vgpr: int | None = None
    agpr: int | None = None
    sgpr: int | None = None
    occupancy: int | None = None
    vgpr_spill: int | None = None
    sgpr_spill: int | None = None
    scratch_bytes: int | None = None
    lds_bytes: int | None = None

    @property
    def spills(self) -> int | None:
        if self.vgpr_spill is None and self.sgpr_spill is None:
            return None
        return (self.vgpr_spill or 0) + (self.sgpr_spill or 0)


@dataclass
class TrialView:
    """One candidate: what was rewritten, how it was measured, and what was decided."""

    id: str
    kernel: str = ""
    loop_id: str = ""
    rule: str = ""
    factor: int | None = None
    decision: str = ""  # "accepted" or "rejected" (or the loop's state for unfinished trials)
    reason: str = ""
    diff: str = ""
    ratio: float | None = None  # candidate / baseline of the decision metric (critical-path time)
    ratio_low: float | None = None
    ratio_high: float | None = None
    accept_below: float | None = None  # 1 - min_gain
    kernel_ratio: float | None = None
    baseline_rounds: list[float] = field(default_factory=list)  # ns, in measurement order
    candidate_rounds: list[float] = field(default_factory=list)
    resources_before: Resources | None = None
    resources_after: Resources | None = None
    cp_share_before: float | None = None
    cp_share_after: float | None = None

    @property
    def accepted(self) -> bool:
        return self.decision == "accepted"

    @property
    def speedup(self) -> float | None:
        return 1 / self.ratio if self.ratio else None

    @property
    def speedup_interval(self) -> tuple[float, float] | None:
        if not self.ratio_low or not self.ratio_high:
            return None
        return 1 / self.ratio_high, 1 / self.ratio_low

    @property
    def label(self) -> str:
        what = f"{self.rule} x{self.factor}" if self.factor else self.rule
        where = f"{self.kernel} loop {self.loop_id}" if self.loop_id else self.kernel
        return f"{where}: {what}" if where else what


@dataclass
class RunView:
    """One `rocm-perf optimize` run, as the report shows it."""

    name: str
    path: Path
    source: str = ""
    backend: str = ""
    state: str = ""
    baseline_ns: float | None = None  # critical-path time of the original source
    final_ns: float | None = None  # of the final source (all accepted rewrites)
    ratio: float | None = None  # final / baseline
    ratio_low: float | None = None
    ratio_high: float | None = None
    trials: list[TrialView] = field(default_factory=list)
    accepted_diff: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    failure: str = ""  # why the run stopped early (does not build, crashed, ...)

    @property
    def accepted(self) -> list[TrialView]:
        return [t for t in self.trials if t.accepted]

    @property
    def rejected(self) -> list[TrialView]:
        return [t for t in self.trials if t.decision == "rejected"]

    @property
    def speedup(self) -> float | None:
        if self.ratio:
            return 1 / self.ratio
        if self.baseline_ns and self.final_ns:
            return self.baseline_ns / self.final_ns
        return None

    @property
    def speedup_interval(self) -> tuple[float, float] | None:
        if not self.ratio_low or not self.ratio_high:
            return None
        return 1 / self.ratio_high, 1 / self.ratio_low

    @property
    def cpu_timings(self) -> bool:
        return self.backend == "host"

    def rejected_by_reason(self) -> list[tuple[str, list[TrialView]]]:
        groups: dict[str, list[TrialView]] = {}
        for t in self.rejected:
            groups.setdefault(t.reason or "no reason recorded", []).append(t)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    def reason_counts(self) -> Counter:
        return Counter(t.reason or "no reason recorded" for t in self.rejected)


@dataclass
class SweepRow:
    """One target of a sweep: its status and, once it ran, its run."""

    target: str
    status: str  # pending, running, done, failed, quarantined
    reason: str = ""
    run: RunView | None = None
    attempts: int = 0


@dataclass
class SweepView:
    name: str
    path: Path
    budget_s: float | None = None
    used_s: float | None = None
    state: str = ""
    rows: list[SweepRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def runs(self) -> list[RunView]:
        return [r.run for r in self.rows if r.run is not None]
