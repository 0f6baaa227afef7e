"""The run's ledger (ledger.db, SQLite): the source of truth of one `rocm-perf optimize` run.

Every state transition, trial status change, measured round and decision is committed before the
loop takes its next step (WAL journal, synchronous=FULL), so that `kill -9` at any moment loses at
most the step in flight. Files beside the ledger are derived from it.

Trial statuses: proposed -> built -> screening (racing) -> screened -> confirming -> accepted,
or rejected (with a named reason) from any of them, or carried (a screened candidate whose rewrite
was accepted as part of a later trial, its `components`: a combination of the loops' screened
winners, or a carry of them onto a newer baseline).
`confirming` is the half-done state a resume redoes from its start; a racing candidate keeps its
complete pairs and goes on from there.

A trial names the proposer it came from (`proposer`: the unroll rules, tunables, a patch; see
optimize/proposers/) and what that proposer says of it (`provenance`: a patch's file and sha256, a
tunable's values); a combination or carry of trials names its components' proposer.

Builds (`builds`) are recorded by content (optimize/build_cache.py): a trial names its build by
`build_key`; a build is never made twice in a run.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from rocm_perf.errors import RocmPerfError
from rocm_perf.sqlite_db import LedgerDB, Migration, Schema

LEDGER_NAME = "ledger.db"

# Version 4. A change to the tables appends a Migration to SCHEMA (sqlite_db.py) and edits this text.
_TABLES = """
CREATE TABLE IF NOT EXISTS transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, state TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS baselines (
    generation INTEGER PRIMARY KEY, trial_id INTEGER, source_sha256 TEXT NOT NULL,
    source_path TEXT NOT NULL, executable TEXT NOT NULL, resources TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY, generation INTEGER NOT NULL, loop_key TEXT NOT NULL,
    kernel TEXT NOT NULL, loop_id TEXT NOT NULL, rule TEXT NOT NULL, factor INTEGER NOT NULL,
    expected_value REAL NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '', source_sha256 TEXT NOT NULL DEFAULT '',
    diff TEXT NOT NULL DEFAULT '', executable TEXT NOT NULL DEFAULT '',
    resources TEXT NOT NULL DEFAULT '{}', evidence TEXT NOT NULL DEFAULT '{}', updated REAL NOT NULL,
    file TEXT NOT NULL DEFAULT '',
    build_key TEXT NOT NULL DEFAULT '', ordering TEXT NOT NULL DEFAULT '{}', components TEXT NOT NULL DEFAULT '[]',
    proposer TEXT NOT NULL DEFAULT 'rules', provenance TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS builds (
    key TEXT PRIMARY KEY, source_sha256 TEXT NOT NULL, executable TEXT NOT NULL, identity TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '', checked TEXT NOT NULL DEFAULT '{}', at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
    trial_id INTEGER NOT NULL, phase TEXT NOT NULL, idx INTEGER NOT NULL, role TEXT NOT NULL,
    ok INTEGER NOT NULL, failure TEXT NOT NULL, cp_ns REAL NOT NULL, sum_ns REAL NOT NULL,
    kernel_ns TEXT NOT NULL, outputs TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (trial_id, phase, idx, role));
CREATE TABLE IF NOT EXISTS decisions (
    trial_id INTEGER NOT NULL, phase TEXT NOT NULL, verdict TEXT NOT NULL, reason TEXT NOT NULL,
    data TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (trial_id, phase));
"""
# 3: compile first (issue 17): builds by content; a trial's build, its ordering evidence, its components.
_V3 = """
ALTER TABLE trials ADD COLUMN build_key TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN ordering TEXT NOT NULL DEFAULT '{}';
ALTER TABLE trials ADD COLUMN components TEXT NOT NULL DEFAULT '[]';
CREATE TABLE IF NOT EXISTS builds (
    key TEXT PRIMARY KEY, source_sha256 TEXT NOT NULL, executable TEXT NOT NULL, identity TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '', checked TEXT NOT NULL DEFAULT '{}', at REAL NOT NULL);
"""
# 4: candidates from anywhere (issue 53): a trial's proposer and its provenance. Every trial before
# came from the unroll rules.
_V4 = """
ALTER TABLE trials ADD COLUMN proposer TEXT NOT NULL DEFAULT 'rules';
ALTER TABLE trials ADD COLUMN provenance TEXT NOT NULL DEFAULT '{}';
"""
SCHEMA = Schema("run ledger", _TABLES, migrations=(
    # 2: a project run's trial names the file it changes (relative to the project root).
    Migration(2, "ALTER TABLE trials ADD COLUMN file TEXT NOT NULL DEFAULT ''"),
    Migration(3, _V3),
    Migration(4, _V4),
))
SCHEMA_VERSION = SCHEMA.version

# Trial id 0 holds the baseline's own rounds (reference run, A/A noise floor).
BASELINE_TRIAL = 0
# The rule name of a trial that applies several screened rewrites of different loops at once.
COMBINATION = "combination"
_TRIAL_COLUMNS = ("id, generation, loop_key, kernel, loop_id, rule, factor, expected_value, status, reason, detail, "
                  "source_sha256, diff, executable, resources, evidence, file, build_key, ordering, components, proposer, "
                  "provenance")


@dataclass
class Trial:
    """One candidate rewrite as the ledger knows it."""

    id: int
    generation: int
    loop_key: str
    kernel: str
    loop_id: str
    rule: str
    factor: int
    expected_value: float
    status: str
    reason: str
    detail: str
    source_sha256: str
    diff: str
    executable: str
    resources: dict
    evidence: dict
    file: str = ""  # project runs: the file the candidate changes, relative to the project root
    build_key: str = ""
    ordering: dict = field(default_factory=dict)  # the named factors of its place in the order (plan.py)
    components: list = field(default_factory=list)  # trial ids it applies to a newer baseline (a carry)
    proposer: str = "rules"  # where it came from (optimize/proposers/)
    provenance: dict = field(default_factory=dict)  # what its proposer records of it (a patch's file and sha256, ...)

    @property
    def label(self) -> str:
        if self.provenance.get("label") and not self.components:  # a patch, a tunable's values: its proposer names it
            return str(self.provenance["label"])
        if self.components and self.rule == COMBINATION:
            return f"combination of trials {', '.join(str(c) for c in self.components)}"
        carried = f" (carried from trial {self.components[0]})" if self.components else ""
        return f"{self.kernel} {self.loop_id} {self.rule} x{self.factor}{carried}"


@dataclass
class BuildRow:
    """One build, by content (build_cache.build_key): where its program is, what its code is, what
    the AMD compile check said (`checked`: resources, ISA identity and path), or why it failed."""

    key: str
    source_sha256: str
    executable: str
    identity: str
    error: str = ""
    checked: dict = field(default_factory=dict)


@dataclass
class RoundRow:
    trial_id: int
    phase: str
    idx: int
    role: str  # "B" baseline, "C" candidate (or the A/A twin)
    ok: bool
    failure: str
    cp_ns: float
    sum_ns: float
    kernel_ns: dict[str, float]
    outputs: dict


@dataclass
class Baseline:
    generation: int
    trial_id: int | None
    source_sha256: str
    source_path: str
    executable: str
    resources: dict


class Ledger(LedgerDB):
    """ledger.db: every call is committed before it returns (sqlite_db.LedgerDB)."""

    def __init__(self, path: Path, *, create: bool = False):
        if not create and not Path(path).exists():
            raise RocmPerfError(f"{path}: no ledger here (not a rocm-perf optimize run directory)")
        super().__init__(path, SCHEMA, create=create)

    def _unwritable(self, e: Exception) -> RocmPerfError:
        return RocmPerfError(f"{self.path}: cannot write the run ledger ({e}); it holds every step committed before "
                             f"this one: free disk space, then `rocm-perf optimize --resume {self.path.parent}` "
                             "(or choose another --out for a new run)")

    def _open_error(self, e: sqlite3.Error) -> RocmPerfError:
        if isinstance(e, sqlite3.OperationalError):
            return self._unwritable(e)
        return self._foreign(str(e))

    def _foreign(self, why: str) -> RocmPerfError:
        return RocmPerfError(f"{self.path}: not a rocm-perf ledger ({why})")

    # ---- the state machine -----------------------------------------------------------------

    def transition(self, state: str, detail: str = "") -> None:
        """Record entering `state`; committed before the caller runs it."""
        with self.transaction():
            self._write("INSERT INTO transitions (at, state, detail) VALUES (?, ?, ?)", (time.time(), state, detail))
            self._write("INSERT OR REPLACE INTO meta (key, value) VALUES ('state', ?)", (json.dumps(state),))

    @property
    def state(self) -> str | None:
        return self.get("state")

    def transitions(self) -> list[tuple[float, str, str]]:
        return [tuple(r) for r in self.db.execute("SELECT at, state, detail FROM transitions ORDER BY id")]

    # ---- baselines -------------------------------------------------------------------------

    def add_baseline(self, b: Baseline) -> None:
        self._write(
            "INSERT OR REPLACE INTO baselines VALUES (?, ?, ?, ?, ?, ?)",
            (b.generation, b.trial_id, b.source_sha256, b.source_path, b.executable, json.dumps(b.resources)),
        )

    def baselines(self) -> list[Baseline]:
        rows = self.db.execute("SELECT * FROM baselines ORDER BY generation").fetchall()
        return [Baseline(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    def current_baseline(self) -> Baseline | None:
        rows = self.baselines()
        return rows[-1] if rows else None

    # ---- trials ----------------------------------------------------------------------------

    def add_trial(self, *, generation: int, loop_key: str, kernel: str, loop_id: str, rule: str, factor: int,
                  expected_value: float, file: str = "", ordering: dict | None = None,
                  components: list[int] | None = None, proposer: str = "rules", provenance: dict | None = None) -> int:
        cur = self._write(
            "INSERT INTO trials (generation, loop_key, kernel, loop_id, rule, factor, expected_value, status, updated,"
            " file, ordering, components, proposer, provenance) VALUES (?, ?, ?, ?, ?, ?, ?, 'proposed', ?, ?, ?, ?, ?, ?)",
            (generation, loop_key, kernel, loop_id, rule, factor, expected_value, time.time(), file,
             json.dumps(ordering or {}), json.dumps(list(components or [])), proposer, json.dumps(provenance or {})),
        )
        return int(cur.lastrowid)

    def update_trial(self, trial_id: int, **fields: Any) -> None:
        allowed = {"status", "reason", "detail", "source_sha256", "diff", "executable", "resources", "evidence",
                   "build_key", "ordering", "expected_value", "provenance"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"unknown trial fields {sorted(unknown)}")
        cols = []
        values = []
        for k, v in fields.items():
            cols.append(f"{k} = ?")
            values.append(json.dumps(v) if k in ("resources", "evidence", "ordering", "provenance") else v)
        cols.append("updated = ?")
        values.append(time.time())
        self._write(f"UPDATE trials SET {', '.join(cols)} WHERE id = ?", (*values, trial_id))

    def reject(self, trial_id: int, reason: str, detail: str = "") -> None:
        self.update_trial(trial_id, status="rejected", reason=reason, detail=detail)

    def trial(self, trial_id: int) -> Trial:
        row = self.db.execute(f"SELECT {_TRIAL_COLUMNS} FROM trials WHERE id = ?", (trial_id,)).fetchone()
        if row is None:
            raise RocmPerfError(f"{self.path}: no trial {trial_id}")
        return _trial(row)

    def trials(self, *, generation: int | None = None, status: str | None = None) -> list[Trial]:
        sql = f"SELECT {_TRIAL_COLUMNS} FROM trials"
        where, params = [], []
        if generation is not None:
            where.append("generation = ?")
            params.append(generation)
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [_trial(r) for r in self.db.execute(sql + " ORDER BY id", params)]

    # ---- builds ----------------------------------------------------------------------------

    def add_build(self, b: BuildRow) -> None:
        self._write("INSERT OR REPLACE INTO builds VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (b.key, b.source_sha256, b.executable, b.identity, b.error, json.dumps(b.checked), time.time()))

    def build(self, key: str) -> BuildRow | None:
        row = self.db.execute("SELECT key, source_sha256, executable, identity, error, checked FROM builds WHERE key = ?",
                              (key,)).fetchone()
        return None if row is None else BuildRow(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]))

    # ---- rounds and decisions --------------------------------------------------------------

    def add_round(self, r: RoundRow) -> None:
        self._write(
            "INSERT OR REPLACE INTO rounds VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (r.trial_id, r.phase, r.idx, r.role, int(r.ok), r.failure, r.cp_ns, r.sum_ns,
             json.dumps(r.kernel_ns), json.dumps(r.outputs), time.time()),
        )

    def rounds(self, trial_id: int, phase: str) -> list[RoundRow]:
        rows = self.db.execute(
            "SELECT * FROM rounds WHERE trial_id = ? AND phase = ? ORDER BY idx, role", (trial_id, phase)
        ).fetchall()
        return [RoundRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7], json.loads(r[8]), json.loads(r[9])) for r in rows]

    def forget_rounds(self, trial_id: int, phase: str) -> None:
        """Drop a half-done phase's rounds so that it is redone from its start."""
        with self.transaction():
            self._write("DELETE FROM rounds WHERE trial_id = ? AND phase = ?", (trial_id, phase))
            self._write("DELETE FROM decisions WHERE trial_id = ? AND phase = ?", (trial_id, phase))

    def add_decision(self, trial_id: int, phase: str, verdict: str, reason: str, data: dict) -> None:
        self._write(
            "INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
            (trial_id, phase, verdict, reason, json.dumps(data), time.time()),
        )

    def decision(self, trial_id: int, phase: str) -> dict | None:
        row = self.db.execute(
            "SELECT verdict, reason, data FROM decisions WHERE trial_id = ? AND phase = ?", (trial_id, phase)
        ).fetchone()
        if row is None:
            return None
        return {"verdict": row[0], "reason": row[1], **json.loads(row[2])}

    def decisions(self, phase: str | None = None) -> Iterator[tuple[int, str, dict]]:
        sql = "SELECT trial_id, phase, verdict, reason, data FROM decisions"
        params: tuple = ()
        if phase is not None:
            sql += " WHERE phase = ?"
            params = (phase,)
        for t, p, v, r, d in self.db.execute(sql + " ORDER BY at", params).fetchall():
            yield t, p, {"verdict": v, "reason": r, **json.loads(d)}


def _trial(row: tuple) -> Trial:
    (tid, gen, loop_key, kernel, loop_id, rule, factor, ev, status, reason, detail, sha, diff, exe, res, evid,
     file, build_key, ordering, components, proposer, provenance) = row
    return Trial(tid, gen, loop_key, kernel, loop_id, rule, int(factor), float(ev), status, reason, detail, sha, diff, exe,
                 json.loads(res), json.loads(evid), file, build_key, json.loads(ordering), json.loads(components),
                 proposer, json.loads(provenance))


def open_ledger(run_dir: Path, *, create: bool = False) -> Ledger:
    """The ledger of `run_dir`; with create=True the directory is made and its writability checked."""
    run_dir = Path(run_dir)
    if create:
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            probe = run_dir / ".write-probe"
            probe.write_bytes(b"x")
            probe.unlink()
        except OSError as e:
            raise RocmPerfError(f"{run_dir}: the run directory is not writable ({e.strerror or e})") from e
    return Ledger(run_dir / LEDGER_NAME, create=create)
