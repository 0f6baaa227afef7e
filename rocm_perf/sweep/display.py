"""A sweep's progress for the person who started it: a live panel on a terminal, else log lines."""

from __future__ import annotations

import threading
import time

from rocm_perf.durations import duration
from rocm_perf.sweep.ledger import FAILED, FINISHED, QUARANTINED
from rocm_perf.sweep.status import gains_text


class PlainDisplay:
    """Not a terminal: a log line when the target, stage or counts change."""

    def __init__(self, stream=None):
        self.stream = stream
        self.last = None

    def update(self, s: dict) -> None:
        if self.stream is None:
            return
        now = now_text(s)
        key = (s["state"], now, tuple(sorted(s["counts"].items())), s["accepted"])
        if key == self.last:
            return
        self.last = key
        left = "no limit" if s["left_s"] is None else duration(s["left_s"]) + " left"
        done = sum(n for st, n in s["counts"].items() if st in FINISHED)
        print(f"{time.strftime('%H:%M:%S')} [{s['state']}] {now} | "
              f"{done} done, {len(s['queue'])} queued, {s['accepted']} accepted{gains_text(s)} | {left}",
              file=self.stream, flush=True)

    def close(self) -> None:
        pass


def now_text(s: dict) -> str:
    """What is running: the current target and stage, or every open task's when several run."""
    tasks = s.get("tasks") or []
    if len(tasks) > 1:
        return "; ".join(f"{t['target']} {t['stage'] or t['state']}".rstrip() for t in tasks)
    cur = s["current"]
    return f"{cur['target'] or '-'} {cur['stage']}".rstrip()


def task_text(t: dict) -> str:
    where = " ".join(x for x in (t.get("node", ""), t.get("device", "")) if x)
    elapsed = duration(t["elapsed_s"]) if t.get("elapsed_s") is not None else t["state"]
    return (f"{t['target']} {t['kind']}, job {t['job_id']}" + (f" on {where}" if where else "") + f", {elapsed}"
            + (f", {t['stage']}" if t.get("stage") else "") + (f", {t['accepted']} accepted" if t.get("accepted") else ""))


class RichDisplay:
    """A terminal: a live panel with targets done/left, the current target and stage, gains, time left."""

    def __init__(self, console=None):
        from rich.console import Console
        from rich.live import Live

        self.live = Live(console=console or Console(), refresh_per_second=2, transient=False)
        self.live.start()
        self._lock = threading.Lock()

    def update(self, s: dict) -> None:
        from rich.table import Table

        cur = s["current"]
        done = sum(n for st, n in s["counts"].items() if st in FINISHED)
        t = Table.grid(padding=(0, 2))
        t.add_row("sweep", s["sweep"])
        t.add_row("targets", f"{done} done, {len(s['queue'])} left"
                  + "".join(f", {n} {st}" for st, n in s["counts"].items() if st in (FAILED, QUARANTINED)))
        t.add_row("now", f"[{s['state']}] {cur['target'] or '-'}: {cur['stage']}")
        for task in s.get("tasks") or []:
            if len(s["tasks"]) > 1 or task["job_id"]:
                t.add_row(f"task {task['task']}", task_text(task))
        if cur["candidate"]:
            t.add_row("candidate", f"{cur['candidate']} {cur['rounds']}")
        if cur["last_verdict"]:
            t.add_row("last", cur["last_verdict"])
        t.add_row("accepted", str(s["accepted"]) + gains_text(s))
        t.add_row("time left", "no limit" if s["left_s"] is None else duration(s["left_s"]))
        with self._lock:
            self.live.update(t)

    def close(self) -> None:
        self.live.stop()


Display = PlainDisplay | RichDisplay
