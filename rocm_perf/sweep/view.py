"""A sweep as its readers see it (the report): its targets, each with its run, and when the sweep
worked on what (its executors' tasks: where, on which device, with which job id), read-only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.optimize.run_view import RunView, load_run
from rocm_perf.sweep.ledger import STARTED, SweepLedger, TaskRow

# A sweep ledger from before tasks were recorded: spans come from its event log instead.
_OPENS = {"start", "resume"}
_CLOSES = {"done", "failed", "quarantined", "stopped", "retry"}


@dataclass
class SweepRow:
    """One target of a sweep: its status and, once it ran, its run."""

    target: str
    status: str  # pending, running, done, failed, quarantined
    reason: str = ""
    run: RunView | None = None
    attempts: int = 0
    used_s: float = 0.0  # wall time spent on it (triage and optimize), over all sessions
    accepted: int = 0
    rejected: int = 0


@dataclass
class WorkSpan:
    """A stretch of wall time spent on one target (epoch seconds): an executor's task, or for an
    older ledger a start..end pair of its events. `end` None while it runs (or when the sweep was
    killed: it is drawn up to the last heartbeat)."""

    target: str
    start: float
    end: float | None
    how: str  # the task's state: done, failed, stopped, cancelled, running, submitted; killed
    kind: str = ""  # triage | optimize
    queued: float | None = None  # when it was submitted (a batch queue's wait is start - queued)
    executor: str = ""
    job_id: str = ""
    node: str = ""
    device: str = ""
    reason: str = ""
    task: int | None = None


@dataclass
class SessionSpan:
    """One run of the sweep process: from its start to its last heartbeat (the budget it spent)."""

    start: float
    end: float
    how: str  # finished, stopped, ... ("" for one that was killed)


@dataclass
class SweepView:
    name: str
    path: Path
    budget_s: float | None = None
    used_s: float | None = None
    state: str = ""
    rows: list[SweepRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sessions: list[SessionSpan] = field(default_factory=list)
    spans: list[WorkSpan] = field(default_factory=list)  # the tasks (or spans) of work, by start time

    @property
    def runs(self) -> list[RunView]:
        return [r.run for r in self.rows if r.run is not None]

    @property
    def quarantined(self) -> list[SweepRow]:
        return [r for r in self.rows if r.status in ("quarantined", "failed")]

    @property
    def started(self) -> float | None:
        return self.sessions[0].start if self.sessions else None


def _task_span(t: TaskRow) -> WorkSpan | None:
    start = t.started or t.submitted
    if start is None:
        return None  # recorded, never submitted: no time spent
    state = "running" if t.state == STARTED else t.state
    return WorkSpan(t.target, start, t.ended, state, kind=t.kind, queued=t.submitted, executor=t.executor,
                    job_id=t.job_id, node=t.node, device=t.device, reason=t.reason, task=t.id)


def _spans(events: list[tuple[float, str, str, str]]) -> list[WorkSpan]:
    """Spans of work per target from the event log (a ledger without tasks), in the order they started."""
    spans: list[WorkSpan] = []
    open_span: dict[str, WorkSpan] = {}
    for at, target, kind, _detail in events:
        if kind in _OPENS:
            if target in open_span:  # opened again without a close: the sweep was killed there
                open_span.pop(target).how = "killed"
            open_span[target] = WorkSpan(target, at, None, "running")
            spans.append(open_span[target])
        elif kind in _CLOSES and target in open_span:
            span = open_span.pop(target)
            span.end, span.how = at, kind
    return spans


def load_sweep_view(sweep_dir: Path) -> SweepView:
    """The sweep's report record: its targets with their runs (read-only)."""
    ledger = SweepLedger(sweep_dir)
    try:
        settings = ledger.get("settings", {}) or {}
        sessions = ledger.sessions()
        view = SweepView(name=Path(sweep_dir).name, path=Path(sweep_dir), budget_s=settings.get("budget_s"),
                         used_s=ledger.used_s(), state=sessions[-1][5] if sessions and sessions[-1][5] else "running or killed")
        view.sessions = [SessionSpan(started, last_seen, how) for _id, _pid, started, last_seen, _ended, how in sessions]
        tasks = [span for span in map(_task_span, ledger.tasks()) if span is not None]
        view.spans = sorted(tasks, key=lambda sp: sp.start) if tasks else _spans(ledger.events())
        for r in ledger.targets():
            run = load_run(Path(r.run_dir)) if r.run_dir and (Path(r.run_dir) / "ledger.db").exists() else None
            view.rows.append(SweepRow(target=r.name, status=r.status, reason=r.reason, run=run, attempts=r.attempts,
                                      used_s=r.used_s, accepted=r.accepted, rejected=r.rejected))
        return view
    finally:
        ledger.close()
