"""The sweep ledger (sweep.db, SQLite): targets, their status, the budget spent, what happened.

It sits over the per-target run ledgers (each run keeps its own ledger.db): here is only what the
sweep decides. Every change is committed at once (WAL, synchronous=FULL), so `kill -9` loses at
most the seconds since the last heartbeat of budget accounting and nothing of the targets.

Target statuses: pending -> running -> done | failed (deterministic: does not build, bad
options) | quarantined (kept failing after retries); `running` found on resume means the sweep
was killed during that target: it is resumed (its run continues from its own ledger).

Tasks (schema 2): each piece of work handed to an executor (a target's triage or its optimize
run), recorded before it is submitted (`submitting`), then with its job id (`submitted`), when
the worker starts (`running`, with node and device) and when it ends (`done`, `failed`,
`stopped`, `cancelled`, with the reason and the worker's result). The executor's workers never
write here: they write their own task and run directories, and the sweep records what it reads.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocm_perf.errors import RocmPerfError
from rocm_perf.sqlite_db import LedgerDB, Migration, Schema

SWEEP_DB = "sweep.db"

PENDING, RUNNING, DONE, FAILED, QUARANTINED = "pending", "running", "done", "failed", "quarantined"
FINISHED = (DONE, FAILED, QUARANTINED)

# Version 1. A change to the tables appends a Migration to SCHEMA (sqlite_db.py) and edits this text.
_TABLES_V1 = """
CREATE TABLE IF NOT EXISTS targets (
    id INTEGER PRIMARY KEY AUTOINCREMENT, identity TEXT NOT NULL UNIQUE, name TEXT NOT NULL UNIQUE,
    spec TEXT NOT NULL, source_sha256 TEXT NOT NULL, status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, reason TEXT NOT NULL DEFAULT '', run_dir TEXT NOT NULL DEFAULT '',
    expected_value REAL NOT NULL DEFAULT 0, baseline_ns REAL, final_ns REAL,
    accepted INTEGER NOT NULL DEFAULT 0, rejected INTEGER NOT NULL DEFAULT 0,
    used_s REAL NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 1, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, pid INTEGER NOT NULL, started REAL NOT NULL,
    last_seen REAL NOT NULL, ended REAL, how TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, target TEXT NOT NULL, kind TEXT NOT NULL,
    detail TEXT NOT NULL);
"""
# Version 2: the tasks an executor ran (issue 19).
_TASKS = """
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL, kind TEXT NOT NULL,
    generation INTEGER NOT NULL DEFAULT 1, executor TEXT NOT NULL, batch TEXT NOT NULL DEFAULT '',
    job_id TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, node TEXT NOT NULL DEFAULT '',
    device TEXT NOT NULL DEFAULT '', task_dir TEXT NOT NULL DEFAULT '', budget_s REAL,
    submitted REAL, started REAL, ended REAL, reason TEXT NOT NULL DEFAULT '',
    result TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS tasks_by_target ON tasks (target);
"""
SCHEMA = Schema("sweep ledger", _TABLES_V1 + _TASKS, (Migration(2, _TASKS),))
SCHEMA_VERSION = SCHEMA.version

# Task states: recorded before submission, then queued or running, then one of the ended ones.
SUBMITTING, SUBMITTED, STARTED = "submitting", "submitted", "running"
TASK_DONE, TASK_FAILED, TASK_STOPPED, TASK_CANCELLED = "done", "failed", "stopped", "cancelled"
TASK_OPEN = (SUBMITTING, SUBMITTED, STARTED)
TRIAGE, OPTIMIZE = "triage", "optimize"


@dataclass
class TargetRow:
    """A target as the sweep ledger knows it."""

    id: int
    identity: str
    name: str
    spec: dict[str, Any]
    source_sha256: str
    status: str
    attempts: int
    reason: str
    run_dir: str
    expected_value: float
    baseline_ns: float | None
    final_ns: float | None
    accepted: int
    rejected: int
    used_s: float
    generation: int


@dataclass
class TaskRow:
    """One piece of work handed to an executor, as the sweep ledger records it."""

    id: int
    target: str
    kind: str  # triage | optimize
    generation: int
    executor: str
    batch: str  # the submission it was part of (a job array's name)
    job_id: str
    state: str
    node: str
    device: str
    task_dir: str
    budget_s: float | None
    submitted: float | None
    started: float | None
    ended: float | None
    reason: str
    result: dict[str, Any]

    @property
    def open(self) -> bool:
        return self.state in TASK_OPEN


_TASK_COLUMNS = ("id, target, kind, generation, executor, batch, job_id, state, node, device, task_dir, budget_s, "
                 "submitted, started, ended, reason, result")
_TASK_UPDATABLE = frozenset(_TASK_COLUMNS.split(", ")) - {"id", "target", "kind", "generation", "executor"}

_TARGET_COLUMNS = ("id, identity, name, spec, source_sha256, status, attempts, reason, run_dir, expected_value, "
                   "baseline_ns, final_ns, accepted, rejected, used_s, generation")
_UPDATABLE = frozenset({"status", "attempts", "reason", "run_dir", "expected_value", "baseline_ns", "final_ns",
                        "accepted", "rejected", "used_s", "generation", "source_sha256", "spec"})


class SweepLedger(LedgerDB):
    """sweep.db; every call commits (sqlite_db.LedgerDB). One writer process at a time (the sweep
    lock sees to it); the heartbeat thread opens its own connection."""

    def __init__(self, sweep_dir: Path, *, create: bool = False):
        path = Path(sweep_dir) / SWEEP_DB
        if not create and not path.exists():
            raise RocmPerfError(f"{sweep_dir}: not a sweep directory (no {SWEEP_DB})")
        super().__init__(path, SCHEMA, create=create, threads=True)

    def _unwritable(self, e: Exception) -> RocmPerfError:
        return RocmPerfError(f"{self.path}: cannot write the sweep ledger ({e}); it holds every step committed before "
                             f"this one: free disk space, then `rocm-perf sweep --resume {self.path.parent}`")

    # ---- targets ---------------------------------------------------------------------------

    def add_target(self, identity: str, name: str, spec: dict, sha256: str, expected_value: float = 0.0) -> TargetRow:
        """Insert a pending target (or return the one with this identity)."""
        existing = self.target_by_identity(identity)
        if existing is not None:
            return existing
        taken = {t.name for t in self.targets()}
        unique, k = name, 2
        while unique in taken:
            unique, k = f"{name}-{k}", k + 1
        spec = {**spec, "name": unique}
        self._write(
            "INSERT INTO targets (identity, name, spec, source_sha256, status, expected_value, updated) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (identity, unique, json.dumps(spec), sha256, PENDING, expected_value, time.time()),
        )
        self.event(unique, "added", spec.get("source", ""))
        return self.target_by_identity(identity)

    def update_target(self, name: str, **fields: Any) -> None:
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"unknown target fields {sorted(unknown)}")
        cols = [f"{k} = ?" for k in fields] + ["updated = ?"]
        values = [json.dumps(v) if k == "spec" else v for k, v in fields.items()] + [time.time()]
        self._write(f"UPDATE targets SET {', '.join(cols)} WHERE name = ?", (*values, name))

    def targets(self, status: str | None = None) -> list[TargetRow]:
        sql = f"SELECT {_TARGET_COLUMNS} FROM targets"
        params: tuple = ()
        if status is not None:
            sql += " WHERE status = ?"
            params = (status,)
        return [_row(r) for r in self.db.execute(sql + " ORDER BY id", params)]

    def target(self, name: str) -> TargetRow:
        row = self.db.execute(f"SELECT {_TARGET_COLUMNS} FROM targets WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise RocmPerfError(f"{self.path}: no target {name}")
        return _row(row)

    def target_by_identity(self, identity: str) -> TargetRow | None:
        row = self.db.execute(f"SELECT {_TARGET_COLUMNS} FROM targets WHERE identity = ?", (identity,)).fetchone()
        return None if row is None else _row(row)

    # ---- tasks -----------------------------------------------------------------------------

    def add_task(self, target: str, kind: str, generation: int, executor: str, *, batch: str = "",
                 budget_s: float | None = None, device: str = "") -> TaskRow:
        """Record a task about to be submitted (state `submitting`): written before the executor
        is asked, so that a kill between the two leaves a trace `--resume` reconciles."""
        cur = self._write("INSERT INTO tasks (target, kind, generation, executor, batch, state, budget_s, device) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (target, kind, generation, executor, batch, SUBMITTING,
                                                               budget_s, device))
        return self.task(int(cur.lastrowid))

    def update_task(self, task_id: int, **fields: Any) -> None:
        unknown = set(fields) - _TASK_UPDATABLE
        if unknown:
            raise ValueError(f"unknown task fields {sorted(unknown)}")
        if not fields:
            return
        cols = [f"{k} = ?" for k in fields]
        values = [json.dumps(v) if k == "result" else v for k, v in fields.items()]
        self._write(f"UPDATE tasks SET {', '.join(cols)} WHERE id = ?", (*values, task_id))

    def task(self, task_id: int) -> TaskRow:
        row = self.db.execute(f"SELECT {_TASK_COLUMNS} FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise RocmPerfError(f"{self.path}: no task {task_id}")
        return _task_row(row)

    def tasks(self, *, open_only: bool = False, target: str | None = None) -> list[TaskRow]:
        sql, where, params = f"SELECT {_TASK_COLUMNS} FROM tasks", [], []
        if open_only:
            where.append(f"state IN ({', '.join('?' * len(TASK_OPEN))})")
            params += TASK_OPEN
        if target is not None:
            where.append("target = ?")
            params.append(target)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [_task_row(r) for r in self.db.execute(sql + " ORDER BY id", params)]

    # ---- sessions: the budget spent is the sum of session lengths ------------------------------

    def start_session(self) -> int:
        now = time.time()
        cur = self._write("INSERT INTO sessions (pid, started, last_seen) VALUES (?, ?, ?)", (os.getpid(), now, now))
        return int(cur.lastrowid)

    def heartbeat(self, session: int) -> None:
        self._write("UPDATE sessions SET last_seen = ? WHERE id = ?", (time.time(), session))

    def end_session(self, session: int, how: str) -> None:
        now = time.time()
        self._write("UPDATE sessions SET last_seen = ?, ended = ?, how = ? WHERE id = ?", (now, now, how, session))

    def used_s(self) -> float:
        """Wall time the sweep has run, over all its sessions (a killed one counts to its last heartbeat)."""
        row = self.db.execute("SELECT COALESCE(SUM(last_seen - started), 0) FROM sessions").fetchone()
        return float(row[0])

    def sessions(self) -> list[tuple[int, int, float, float, float | None, str]]:
        return [tuple(r) for r in self.db.execute("SELECT id, pid, started, last_seen, ended, how FROM sessions ORDER BY id")]

    # ---- events ----------------------------------------------------------------------------

    def event(self, target: str, kind: str, detail: str = "") -> None:
        self._write("INSERT INTO events (at, target, kind, detail) VALUES (?, ?, ?, ?)", (time.time(), target, kind, detail))

    def events(self, target: str | None = None, kind: str | None = None) -> list[tuple[float, str, str, str]]:
        sql, where, params = "SELECT at, target, kind, detail FROM events", [], []
        if target is not None:
            where.append("target = ?")
            params.append(target)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [tuple(r) for r in self.db.execute(sql + " ORDER BY id", params)]


def _row(r: tuple) -> TargetRow:
    return TargetRow(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5], int(r[6]), r[7], r[8], float(r[9]),
                     r[10], r[11], int(r[12]), int(r[13]), float(r[14]), int(r[15]))


def _task_row(r: tuple) -> TaskRow:
    return TaskRow(int(r[0]), r[1], r[2], int(r[3]), r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
                   r[14], r[15], json.loads(r[16] or "{}"))
