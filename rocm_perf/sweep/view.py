"""A sweep as its readers see it (the report): its targets, each with its run, read-only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.optimize.run_view import RunView, load_run
from rocm_perf.sweep.ledger import SweepLedger


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


def load_sweep_view(sweep_dir: Path) -> SweepView:
    """The sweep's report record: its targets with their runs (read-only)."""
    ledger = SweepLedger(sweep_dir)
    try:
        settings = ledger.get("settings", {}) or {}
        sessions = ledger.sessions()
        view = SweepView(name=Path(sweep_dir).name, path=Path(sweep_dir), budget_s=settings.get("budget_s"),
                         used_s=ledger.used_s(), state=sessions[-1][5] if sessions and sessions[-1][5] else "running or killed")
        for r in ledger.targets():
            run = load_run(Path(r.run_dir)) if r.run_dir and (Path(r.run_dir) / "ledger.db").exists() else None
            view.rows.append(SweepRow(target=r.name, status=r.status, reason=r.reason, run=run, attempts=r.attempts))
        return view
    finally:
        ledger.close()
