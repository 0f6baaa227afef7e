"""What a sweep is doing now: status.json (rewritten at every change and every heartbeat) and
`rocm-perf status`, which reads it and asks the lock whether its writer is still alive. Each
open task is listed with its state, job id, node and device, time elapsed and changes accepted;
every target, while the sweep runs and after it ended, with its state, attempts and its run's
gain as the report gives it (the decision metric's speed-up of the final program over the
original, with its interval: optimize/run_view.py), never a ratio of wall-clock times."""

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
from rocm_perf.optimize.run_view import load_run, speedup_text
from rocm_perf.sweep.daemon import HEARTBEAT_S, lock_held
from rocm_perf.sweep.ledger import DONE, OPTIMIZE, PENDING, RUNNING, STARTED, SWEEP_DB, SweepLedger, TargetRow, TaskRow
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


def current_from_tasks(tasks: list[TaskRow], progress: dict[int, dict]) -> Current:
    """The task the one-line views follow: the first optimize run in flight, else the first triage."""
    task = next((t for t in tasks if t.kind == OPTIMIZE), tasks[0])
    p = progress.get(task.id, {})
    return Current(state="optimizing" if task.kind == OPTIMIZE else "triage", target=task.target,
                   stage=p.get("stage", "") or ("queued" if task.state != STARTED else ""),
                   candidate=p.get("candidate", ""), rounds=p.get("rounds", ""), last_verdict=p.get("last_verdict", ""),
                   run_dir=p.get("run_dir", ""))


def task_entries(tasks: list[TaskRow], progress: dict[int, dict], now: float) -> list[dict]:
    """Per open task: what `status` shows (state, job id, node and device, elapsed, accepted so far)."""
    out = []
    for t in tasks:
        p = progress.get(t.id, {})
        out.append({"task": t.id, "target": t.target, "kind": t.kind, "state": t.state if t.state != STARTED else "running",
                    "job_id": t.job_id, "node": t.node or p.get("node", ""), "device": t.device,
                    "elapsed_s": (now - t.started) if t.started else None,
                    "waited_s": (now - t.submitted) if t.submitted and not t.started else None,
                    "stage": p.get("stage", ""), "candidate": p.get("candidate", ""), "rounds": p.get("rounds", ""),
                    "accepted": int(p.get("accepted", 0) or 0)})
    return out


# A finished run's gain does not change: read once per summary.json (the sweep's heartbeat asks often).
_GAINS: dict[tuple[str, int], dict | None] = {}


def run_gain(run_dir: str | None) -> dict | None:
    """A run's result as its report states it: the speed-up of its final program over the original
    in the decision metric, with its interval (`speedup`, `interval`, `metric`, `text`, `accepted`,
    `trials`); None for no run, or a run whose final check has not measured that yet."""
    if not run_dir:
        return None
    summary = Path(run_dir) / "summary.json"
    try:
        key = (str(run_dir), summary.stat().st_mtime_ns)
    except OSError:
        return None  # not finished: no final check to quote
    if key not in _GAINS:
        try:
            run = load_run(Path(run_dir))
        except RocmPerfError as e:
            log.warning("%s: %s", run_dir, e)
            return None
        interval = run.speedup_interval
        _GAINS[key] = None if not run.ratio else {
            "speedup": 1 / run.ratio, "interval": list(interval) if interval else None, "metric": run.metric,
            "text": speedup_text(1 / run.ratio, interval), "accepted": len(run.accepted), "trials": len(run.trials),
        }
    return _GAINS[key]


def target_entry(r: TargetRow) -> dict:
    """One target for status.json and `status`: its state, attempts, accepted changes and gain."""
    gain = run_gain(r.run_dir) if r.status == DONE else None
    return {"name": r.name, "status": r.status, "reason": r.reason, "attempts": r.attempts, "accepted": r.accepted,
            "baseline_ns": r.baseline_ns, "final_ns": r.final_ns, "run_dir": r.run_dir or None,
            "gain": gain["speedup"] if gain else None, "interval": gain["interval"] if gain else None,
            "metric": gain["metric"] if gain else None, "gain_text": gain["text"] if gain else ""}


def _gains(targets: list[dict]) -> list[dict]:
    return [{"target": e["name"], "speedup": e["gain"], "interval": e["interval"], "metric": e["metric"],
             "text": e["gain_text"]} for e in targets if e["accepted"] and e["gain"]]


def snapshot(sweep_dir: Path, settings: SweepSettings, current: Current, rows: list[TargetRow], used_s: float,
             queue_order: dict[str, int], tasks: list[TaskRow], progress: dict[int, dict], heartbeat_interval_s: float,
             executor: str = "") -> dict:
    """The status document: the current target, the open tasks, the queue (in `queue_order`),
    counts, gains, budget."""
    busy = {t.target for t in tasks} | {current.target}
    queue = sorted((r for r in rows if r.status in (PENDING, RUNNING) and r.name not in busy),
                   key=lambda r: (queue_order.get(r.name, len(queue_order)), r.id))
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    now = time.time()
    entries = task_entries(tasks, progress, now)
    targets = [target_entry(r) for r in rows]
    return {
        "sweep": str(sweep_dir), "pid": os.getpid(), "state": current.state, "watch": settings.watch,
        "executor": executor,
        "heartbeat": now, "heartbeat_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "heartbeat_interval_s": heartbeat_interval_s,
        "current": {"target": current.target, "stage": current.stage, "candidate": current.candidate,
                    "rounds": current.rounds, "last_verdict": current.last_verdict, "run_dir": current.run_dir},
        "tasks": entries,
        "queue": [r.name for r in queue],
        "counts": counts,
        "accepted": sum(r.accepted for r in rows) + sum(e["accepted"] for e in entries if e["kind"] == OPTIMIZE),
        "gains": _gains(targets),
        "budget_s": settings.budget_s, "used_s": used_s,
        "left_s": None if settings.budget_s is None else max(0.0, settings.budget_s - used_s),
        "targets": targets,
    }


def write_status_file(sweep_dir: Path, status: dict) -> None:
    write_atomic(Path(sweep_dir) / STATUS_FILE, json.dumps(status, indent=1, default=str), durable=False)  # rewritten often


def gains_text(s: dict) -> str:
    """`(stencil1d 1.024x [1.015, 1.030] cpu-path, ...)`: the accepted targets' gains as the report states them."""
    parts = []
    for g in s.get("gains") or []:
        text = g.get("text") or f"{g['speedup']:.3f}x"  # a status.json of an older sweep has no text
        parts.append(f"{g['target']} {text}" + (f" {g['metric']}" if g.get("metric") else ""))
    return f" ({', '.join(parts)})" if parts else ""


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
    # Every target from the ledger itself, as of now: status.json is as old as its last heartbeat,
    # and a sweep that ended wrote its last one before its report.
    ledger = SweepLedger(sweep_dir)
    try:
        status["targets"] = [target_entry(r) for r in ledger.targets()]
    finally:
        ledger.close()
    status["gains"] = _gains(status["targets"])
    counts: dict[str, int] = {}
    for e in status["targets"]:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    status["counts"] = counts
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
    lines += task_lines(s.get("tasks") or [], s.get("executor", ""))
    if s.get("tasks") and not s["alive"]:
        lines.append(f"  (as of the last heartbeat: {len(s['tasks'])} task(s) were open; jobs of a batch scheduler may "
                     f"still run, and `--resume` waits for them)")
    lines.append(f"  queue: {', '.join(s['queue']) if s['queue'] else '(empty)'}")
    lines.append("  targets: " + ", ".join(f"{n} {st}" for st, n in sorted(s["counts"].items())))
    lines += target_lines(s.get("targets") or [])
    lines.append(f"  accepted so far: {s['accepted']}{gains_text(s)}")
    lines.append("  budget: " + ("no limit" if s["budget_s"] is None else f"{duration(s['left_s'])} left of {duration(s['budget_s'])}"))
    return "\n".join(lines)


def target_lines(targets: list[dict]) -> list[str]:
    """Every target: state, attempts, accepted changes, and the gain with its metric and interval."""
    if not targets:
        return []
    rows = [("target", "state", "attempts", "accepted", "gain [interval] (metric)", "reason")]
    for e in targets:
        gain = f"{e['gain_text']} ({e['metric']})" if e.get("gain_text") else "-"
        rows.append((e["name"], e["status"], str(e["attempts"]), str(e["accepted"]), gain, e.get("reason") or ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [("    " + "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1]).rstrip() for r in rows]


def task_lines(tasks: list[dict], executor: str) -> list[str]:
    """The open tasks as a small table: state, job id, node and device, elapsed, accepted so far."""
    if not tasks:
        return []
    rows = [("task", "target", "state", "job", "node / device", "elapsed", "accepted", "stage")]
    for t in tasks:
        if t.get("elapsed_s") is not None:
            elapsed = duration(t["elapsed_s"])
        elif t.get("waited_s") is not None:
            elapsed = f"queued {duration(t['waited_s'])}"
        else:
            elapsed = "-"
        where = " ".join(x for x in (t.get("node", ""), t.get("device", "")) if x) or "-"
        stage = t.get("stage", "") + (f"; {t['candidate']} {t['rounds']}".rstrip() if t.get("candidate") else "")
        rows.append((f"{t['task']} {t['kind']}", t["target"], t["state"], t["job_id"] or "-", where, elapsed,
                     str(t["accepted"]) if t["kind"] == OPTIMIZE else "-", stage or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [f"  tasks ({executor}):" if executor else "  tasks:"]
    lines += ["    " + "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows]
    return lines


def run_status(sweep_dir: Path, *, as_json: bool = False) -> int:
    """`rocm-perf status SWEEP`."""
    s = read_status(sweep_dir)
    print(json.dumps(s, indent=2, default=str) if as_json else status_text(s))
    return 0
