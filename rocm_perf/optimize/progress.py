"""What the user sees while the loop runs: a rich live panel, nothing (--quiet), or JSON lines (--json).

The loop calls `Reporter` methods; it never prints itself.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field


@dataclass
class ProgressState:
    stage: str = "starting"
    candidate: str = ""
    phase: str = ""
    rounds: int = 0
    max_rounds: int = 0
    estimate: str = ""
    trials_done: int = 0
    trials_left: int = 0
    accepted: int = 0
    round_seconds: list[float] = field(default_factory=list)
    last: str = ""

    def eta_s(self) -> float | None:
        """Rough: trials left x the rounds a trial has taken so far x seconds per round pair."""
        if not self.round_seconds:
            return None
        per_round = sum(self.round_seconds[-20:]) / len(self.round_seconds[-20:])
        rounds_per_trial = max(10, min(self.max_rounds, 30) // 2)  # most candidates settle at the early looks
        return (self.trials_left * rounds_per_trial + max(0, self.max_rounds - self.rounds)) * per_round


class Reporter:
    """Silent base: every hook does nothing (this is --quiet)."""

    def __init__(self) -> None:
        self.state = ProgressState()

    def stage(self, name: str, detail: str = "") -> None:
        self.state.stage = f"{name} {detail}".strip()
        self.update()

    def trial(self, label: str, phase: str, done: int, left: int, max_rounds: int) -> None:
        s = self.state
        s.candidate, s.phase, s.trials_done, s.trials_left, s.rounds, s.max_rounds, s.estimate = label, phase, done, left, 0, max_rounds, ""
        self.update()

    def round(self, n: int, estimate: str, seconds: float) -> None:
        self.state.rounds = n
        self.state.estimate = estimate
        self.state.round_seconds.append(seconds)
        self.update()

    def verdict(self, label: str, text: str, accepted: bool) -> None:
        self.state.last = f"{label}: {text}"
        self.state.accepted += int(accepted)
        self.update()

    def message(self, text: str) -> None:
        pass

    def update(self) -> None:
        pass

    def close(self) -> None:
        pass


class JsonLinesReporter(Reporter):
    """--json: progress as JSON lines on stderr (stdout carries the summary)."""

    def stage(self, name: str, detail: str = "") -> None:
        self._emit({"event": "stage", "stage": name, "detail": detail})

    def verdict(self, label: str, text: str, accepted: bool) -> None:
        self._emit({"event": "verdict", "candidate": label, "verdict": text, "accepted": accepted})

    def message(self, text: str) -> None:
        self._emit({"event": "message", "text": text})

    def _emit(self, obj: dict) -> None:
        print(json.dumps({"at": round(time.time(), 3), **obj}), file=sys.stderr, flush=True)


class RichReporter(Reporter):
    """A live panel: stage, candidate, rounds, running estimate, trials left, ETA."""

    def __init__(self) -> None:
        super().__init__()
        from rich.console import Console
        from rich.live import Live

        self.console = Console(stderr=True)
        self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=True)
        self.live.start()

    def _render(self):
        from rich.table import Table

        s = self.state
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("stage", s.stage)
        if s.candidate:
            t.add_row("candidate", f"{s.candidate} ({s.phase})")
            t.add_row("rounds", f"{s.rounds}/{s.max_rounds}  {s.estimate}")
        eta = s.eta_s()
        t.add_row("trials", f"{s.trials_done} done, {s.trials_left} left, {s.accepted} accepted"
                  + (f", ETA {eta / 60:.0f} min" if eta is not None else ""))
        if s.last:
            t.add_row("last", s.last)
        return t

    def message(self, text: str) -> None:
        self.console.print(text)

    def verdict(self, label: str, text: str, accepted: bool) -> None:
        super().verdict(label, text, accepted)
        self.console.print(("[green]accepted[/] " if accepted else "[dim]rejected[/] ") + f"{label}: {text}")

    def update(self) -> None:
        self.live.update(self._render())

    def close(self) -> None:
        self.live.stop()


class PlainReporter(Reporter):
    """Not a terminal (a log file, CI): one line per stage and verdict."""

    def stage(self, name: str, detail: str = "") -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {name} {detail}".rstrip(), file=sys.stderr, flush=True)

    def verdict(self, label: str, text: str, accepted: bool) -> None:
        super().verdict(label, text, accepted)
        print(f"[{time.strftime('%H:%M:%S')}] {'accepted' if accepted else 'rejected'} {label}: {text}", file=sys.stderr, flush=True)

    def message(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)


def make_reporter(*, quiet: bool, as_json: bool) -> Reporter:
    if as_json:
        return JsonLinesReporter()
    if quiet or not sys.stderr.isatty():
        return PlainReporter() if not quiet else Reporter()
    return RichReporter()
