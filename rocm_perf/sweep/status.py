"""What a sweep is doing now: status.json (rewritten at every change and every heartbeat) and
`rocm-perf status`, which reads it and asks the lock whether its writer is still alive."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.atomic_file import write_atomic
from rocm_perf.durations import duration
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.progress import Reporter
from rocm_perf.sweep.daemon import HEARTBEAT_S, lock_held
from rocm_perf.sweep.ledger import DONE, PENDING, RUNNING, SWEEP_DB, TargetRow
from rocm_perf.sweep.schedule import SweepSettings

STATUS_FILE = "status.json"

log = logging.getLogger("rocm_perf.sweep")


@dataclass
class Current:
    """What the sweep is doing right now (for status.json and the progress display)."""

    state: str = "starting"  # starting, triage, optimizing, idle, stopping, stopped, finished, budget spent
    target: str = ""
    stage: str = ""
    candidate: str = ""
    rounds: str = ""
    last_verdict: str = ""
    run_dir: str = ""
    notes: list[str] = field(default_factory=list)


class StatusReporter(Reporter):
    """The optimize loop's progress, fed into the sweep's status and log instead of the terminal.
    `sweep` is anything with `current` (a Current) and `refresh()` (write the status)."""

    def __init__(self, sweep):
        super().__init__()
        self.sweep = sweep

    def update(self) -> None:
        s = self.state
        cur = self.sweep.current
        cur.stage, cur.candidate = s.stage, s.candidate
        cur.rounds = f"{s.rounds}/{s.max_rounds}" if s.max_rounds else ""
        cur.last_verdict = s.last
        self.sweep.refresh()

    def verdict(self, label: str, text: str, accepted: bool) -> None:
        super().verdict(label, text, accepted)
        log.info("%s: %s: %s", self.sweep.current.target, label, text)

    def message(self, text: str) -> None:
        log.info("%s: %s", self.sweep.current.target, text)


def snapshot(sweep_dir: Path, settings: SweepSettings, current: Current, rows: list[TargetRow], used_s: float,
             queue_order: dict[str, int], live_accepted: int, heartbeat_interval_s: float) -> dict:
    """The status document: the current target, the queue (in `queue_order`), counts, gains, budget."""
    queue = sorted((r for r in rows if r.status in (PENDING, RUNNING) and r.name != current.target),
                   key=lambda r: (queue_order.get(r.name, len(queue_order)), r.id))
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    now = time.time()
    return {
        "sweep": str(sweep_dir), "pid": os.getpid(), "state": current.state, "watch": settings.watch,
        "heartbeat": now, "heartbeat_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "heartbeat_interval_s": heartbeat_interval_s,
        "current": {"target": current.target, "stage": current.stage, "candidate": current.candidate,
                    "rounds": current.rounds, "last_verdict": current.last_verdict, "run_dir": current.run_dir},
        "queue": [r.name for r in queue],
        "counts": counts,
        "accepted": sum(r.accepted for r in rows) + live_accepted,
        "gains": [{"target": r.name, "speedup": r.baseline_ns / r.final_ns} for r in rows
                  if r.status == DONE and r.accepted and r.baseline_ns and r.final_ns],
        "budget_s": settings.budget_s, "used_s": used_s,
        "left_s": None if settings.budget_s is None else max(0.0, settings.budget_s - used_s),
        "targets": [{"name": r.name, "status": r.status, "reason": r.reason, "accepted": r.accepted,
                     "baseline_ns": r.baseline_ns, "final_ns": r.final_ns, "attempts": r.attempts}
                    for r in rows],
    }


def write_status_file(sweep_dir: Path, status: dict) -> None:
    write_atomic(Path(sweep_dir) / STATUS_FILE, json.dumps(status, indent=1, default=str), durable=False)  # rewritten often


def gains_text(s: dict) -> str:
    gains = s.get("gains") or []
    return (" (" + ", ".join(f"{g['target']} {g['speedup']:.2f}x" for g in gains) + ")") if gains else ""


def read_status(sweep_dir: Path) -> dict:
    """status.json plus whether its writer is alive (its pid exists and the heartbeat is fresh)."""
    sweep_dir = Path(sweep_dir)
    path = sweep_dir / STATUS_FILE
    if not (sweep_dir / SWEEP_DB).exists():
        raise RocmPerfError(f"{sweep_dir}: not a sweep directory (no {SWEEP_DB})")
    if not path.exists():
        raise RocmPerfError(f"{sweep_dir}: no {STATUS_FILE} yet (the sweep has not written a heartbeat)")
    try:
        status = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise RocmPerfError(f"{path}: unreadable status file ({e})") from e
    age = time.time() - float(status.get("heartbeat", 0))
    status["heartbeat_age_s"] = age
    status["alive"] = lock_held(sweep_dir)
    status["stale"] = age > 3 * float(status.get("heartbeat_interval_s", HEARTBEAT_S)) + 5
    return status


def status_text(s: dict) -> str:
    cur = s["current"]
    if s["alive"] and s.get("stale"):
        head = (f"sweep {s['sweep']}: {s['state']}, but no heartbeat for {duration(s['heartbeat_age_s'])} "
                f"(pid {s['pid']} holds the lock: stuck?)")
    elif s["alive"]:
        head = f"sweep {s['sweep']}: {s['state']} (pid {s['pid']}, heartbeat {s['heartbeat_age_s']:.0f} s ago)"
    elif s["state"] in ("finished", "stopped", "budget spent"):
        head = f"sweep {s['sweep']}: {s['state']} at {s['heartbeat_utc']}"
    else:
        head = (f"sweep {s['sweep']}: NOT RUNNING (last heartbeat {duration(s['heartbeat_age_s'])} ago, pid {s['pid']} "
                f"gone); `rocm-perf sweep --resume {s['sweep']}` continues it")
    lines = [head]
    if cur.get("target"):
        lines.append(f"  current: {cur['target']}: {cur['stage']}" + (f"; {cur['candidate']} {cur['rounds']}" if cur.get("candidate") else ""))
    lines.append(f"  queue: {', '.join(s['queue']) if s['queue'] else '(empty)'}")
    lines.append("  targets: " + ", ".join(f"{n} {st}" for st, n in sorted(s["counts"].items())))
    lines.append(f"  accepted so far: {s['accepted']}{gains_text(s)}")
    lines.append("  budget: " + ("no limit" if s["budget_s"] is None else f"{duration(s['left_s'])} left of {duration(s['budget_s'])}"))
    return "\n".join(lines)


def run_status(sweep_dir: Path, *, as_json: bool = False) -> int:
    """`rocm-perf status SWEEP`."""
    s = read_status(sweep_dir)
    print(json.dumps(s, indent=2, default=str) if as_json else status_text(s))
    return 0
