"""How a sweep spends its time: the settings, the budget, the order of targets and each one's share.

Targets are triaged first (build, one profiled run, the critical path), then optimized in order
of expected value = baseline critical-path time x candidates left; an interrupted target comes
first, since it resumes. Each target gets an equal share of the budget left over the targets
left, so time a target does not use flows to the ones after it; with N tasks running side by side
(executor.py) the budget left is shared over the rounds of N targets left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep.ledger import PENDING, RUNNING, TargetRow

MIN_SHARE_S = 30.0  # below this a target cannot even finish its baseline: the budget is spent
NO_BUDGET_SHARE_S = 3600.0  # a watching daemon with no budget: optimize's default hour per target


def parse_budget(text: str, what: str = "--budget") -> float:
    """'8h', '90m', '1h30m', '45s', '3600' -> seconds."""
    t = str(text).strip().lower()
    if re.fullmatch(r"[0-9]*\.?[0-9]+", t):
        seconds = float(t)
    else:
        parts = re.findall(r"([0-9]*\.?[0-9]+)\s*([hms])", t)
        if not parts or re.sub(r"[0-9.\shms]", "", t) or "".join(n + u for n, u in parts) != t.replace(" ", ""):
            raise RocmPerfError(f"{what} {text!r}: expected a duration like 45m, 8h or 1h30m")
        seconds = sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    if seconds <= 0:
        raise RocmPerfError(f"{what} {text!r}: must be positive")
    return seconds


@dataclass
class SweepSettings:
    """How a sweep runs (stored in sweep.db so that --resume runs it the same way)."""

    target_args: list[str]
    budget_s: float | None  # None: no limit (a watching daemon without --budget)
    per_target_s: float | None = None
    watch: bool = False
    poll_s: float = 30.0
    backend: str = "auto"
    max_attempts: int = 3
    max_trials: int | None = None
    retry_wait_s: tuple[float, float] = (2.0, 60.0)
    executor: dict = field(default_factory=dict)  # executor_settings.ExecutorSettings, as JSON
    warp_size: int | None = None  # host backend: the targets' default wavefront (a manifest's warp_size wins)

    def to_json(self) -> dict:
        return {"target_args": self.target_args, "budget_s": self.budget_s, "per_target_s": self.per_target_s,
                "watch": self.watch, "poll_s": self.poll_s, "backend": self.backend, "max_attempts": self.max_attempts,
                "max_trials": self.max_trials, "retry_wait_s": list(self.retry_wait_s), "executor": self.executor,
                "warp_size": self.warp_size}

    @classmethod
    def from_json(cls, d: dict) -> "SweepSettings":
        return cls(list(d["target_args"]), d.get("budget_s"), d.get("per_target_s"), bool(d.get("watch")),
                   float(d.get("poll_s", 30.0)), d.get("backend", "auto"), int(d.get("max_attempts", 3)),
                   d.get("max_trials"), tuple(d.get("retry_wait_s", (2.0, 60.0))), dict(d.get("executor") or {}),
                   d.get("warp_size"))


def pending(rows: list[TargetRow]) -> list[TargetRow]:
    """The targets with work left: not yet started, or interrupted."""
    return [r for r in rows if r.status in (PENDING, RUNNING)]


def queue(rows: list[TargetRow]) -> list[TargetRow]:
    """Triaged targets left, in order: an interrupted one first (it resumes), then by expected value."""
    ready = [r for r in pending(rows) if r.status == RUNNING or r.baseline_ns is not None]
    return sorted(ready, key=lambda r: (r.status != RUNNING, -r.expected_value, r.id))


def budget_left(settings: SweepSettings, used_s: float) -> float | None:
    """Seconds of the budget not yet spent; None for no budget."""
    if settings.budget_s is None:
        return None
    return settings.budget_s - used_s


def share_s(settings: SweepSettings, left_s: float | None, targets_left: int, at_once: int | None = 1) -> float:
    """One target's time: the budget left shared over the targets left, `at_once` of them running
    side by side (None: all of them), capped per target."""
    targets_left = max(1, targets_left)
    parallel = targets_left if at_once is None else max(1, min(at_once, targets_left))
    share = float("inf") if left_s is None else left_s * parallel / targets_left
    if settings.per_target_s:
        share = min(share, settings.per_target_s)
    if share == float("inf"):
        share = NO_BUDGET_SHARE_S
    return share
