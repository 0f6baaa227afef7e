"""One SQLite helper for the ledgers (rocm_perf/sqlite_db.py): connection settings, schema
versions and migrations, commit-first transactions; ledgers written before it still open.

The "version 1" files below are built from the schema text the run and sweep ledgers had when
the helper came in (copied here on purpose: if the code's schema drifts without a migration,
these tests still hold it to what users' runs/ folders contain).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.ledger import SCHEMA_VERSION as RUN_LEDGER_VERSION, open_ledger
from rocm_perf.optimize.run_view import load_run
from rocm_perf.sqlite_db import LedgerDB, Migration, Schema, split_statements
from rocm_perf.sweep.ledger import DONE, SweepLedger
from rocm_perf.sweep.view import load_sweep_view

# The run ledger's ledger.db as rocm-perf wrote it before sqlite_db.py (schema version 1).
RUN_LEDGER_V1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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
    resources TEXT NOT NULL DEFAULT '{}', evidence TEXT NOT NULL DEFAULT '{}', updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
    trial_id INTEGER NOT NULL, phase TEXT NOT NULL, idx INTEGER NOT NULL, role TEXT NOT NULL,
    ok INTEGER NOT NULL, failure TEXT NOT NULL, cp_ns REAL NOT NULL, sum_ns REAL NOT NULL,
    kernel_ns TEXT NOT NULL, outputs TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (trial_id, phase, idx, role));
CREATE TABLE IF NOT EXISTS decisions (
    trial_id INTEGER NOT NULL, phase TEXT NOT NULL, verdict TEXT NOT NULL, reason TEXT NOT NULL,
    data TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (trial_id, phase));
"""

# The sweep ledger's sweep.db as rocm-perf wrote it before sqlite_db.py (schema version 1).
SWEEP_LEDGER_V1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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


def old_run_ledger(run_dir: Path, *, version: int = 1) -> Path:
    """A finished run's ledger.db as the previous code left it: WAL, the v1 tables, one accepted trial."""
    run_dir.mkdir(parents=True)
    con = sqlite3.connect(run_dir / "ledger.db", isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(RUN_LEDGER_V1)
    meta = {"schema_version": version, "source_path": "/src/k.cu", "backend": "host", "state": "done",
            "options": {"min_gain": 0.02}, "effective_min_gain": 0.02}
    con.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
    for i, state in enumerate(["baseline", "noise-floor", "rank", "propose", "finish", "done"]):
        con.execute("INSERT INTO transitions (at, state, detail) VALUES (?, ?, '')", (1000.0 + i, state))
    con.execute("INSERT INTO baselines VALUES (0, NULL, 'aa', 'baseline/source.cu', 'baseline/build/k', '{}')")
    con.execute("INSERT INTO trials (id, generation, loop_key, kernel, loop_id, rule, factor, expected_value, status,"
                " reason, diff, updated) VALUES (1, 0, 'k@3', 'k', 'k:k:0:3', 'unroll_pragma', 4, 0.5, 'accepted',"
                " 'significant gain', '--- a/k.cu', 1000.0)")
    for idx, (b, c) in enumerate([(100.0, 80.0), (102.0, 81.0), (101.0, 79.0)]):
        for role, ns in (("B", b), ("C", c)):
            con.execute("INSERT INTO rounds VALUES (1, 'screen', ?, ?, 1, '', ?, ?, '{}', '{}', 1000.0)", (idx, role, ns, ns))
    con.execute("INSERT INTO decisions VALUES (1, 'screen', 'accept', 'significant gain', '{}', 1000.0)")
    con.close()
    return run_dir


def old_sweep_ledger(sweep_dir: Path, run_dir: Path) -> Path:
    sweep_dir.mkdir(parents=True)
    con = sqlite3.connect(sweep_dir / "sweep.db", isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(SWEEP_LEDGER_V1)
    con.executemany("INSERT INTO meta VALUES (?, ?)", [("schema_version", "1"), ("settings", json.dumps({"budget_s": 3600.0}))])
    con.execute("INSERT INTO targets (identity, name, spec, source_sha256, status, run_dir, accepted, updated)"
                " VALUES ('/src/k.cu|[]', 'k', ?, 'aa', 'done', ?, 1, 1000.0)",
                (json.dumps({"name": "k", "source": "/src/k.cu", "options": {}}), str(run_dir)))
    con.execute("INSERT INTO sessions (pid, started, last_seen, ended, how) VALUES (1, 1000.0, 1600.0, 1600.0, 'finished')")
    con.close()
    return sweep_dir


# ---- what users already have ---------------------------------------------------------------------

def test_a_run_ledger_written_before_the_helper_opens_and_reads_back(tmp_path, capsys):
    run = old_run_ledger(tmp_path / "runs" / "20260101-000000-k")
    ledger = open_ledger(run)
    # Opening migrates it to schema 3 (2: a project trial's file; 3: builds by content, a trial's
    # ordering and components).
    assert ledger.state == "done" and ledger.get("schema_version") == RUN_LEDGER_VERSION >= 3  # migrated
    (trial,) = ledger.trials()
    assert (trial.status, trial.rule, trial.factor) == ("accepted", "unroll_pragma", 4)
    assert (trial.build_key, trial.ordering, trial.components) == ("", {}, [])
    assert ledger.build("no-such-key") is None
    assert [r.cp_ns for r in ledger.rounds(1, "screen") if r.role == "C"] == [80.0, 81.0, 79.0]
    assert [s for _, s, _ in ledger.transitions()][-1] == "done"
    ledger.transition("done", "reopened")  # and it takes new writes
    ledger.close()
    assert [t.decision for t in load_run(run).trials] == ["accepted"]
    assert main(["review", run.name, "--out", str(tmp_path / "runs")]) == 0
    assert "unroll_pragma" in capsys.readouterr().out


def test_a_sweep_ledger_written_before_the_helper_opens_and_reads_back(tmp_path):
    run = old_run_ledger(tmp_path / "sweep" / "runs" / "k" / "20260101-000000-k")
    sweep = old_sweep_ledger(tmp_path / "sweep-old", run)
    ledger = SweepLedger(sweep)
    assert [(t.name, t.status, t.accepted) for t in ledger.targets()] == [("k", DONE, 1)]
    assert ledger.used_s() == pytest.approx(600.0)
    ledger.event("k", "reopened")
    ledger.close()
    view = load_sweep_view(sweep)
    assert view.state == "finished" and view.rows[0].run is not None and len(view.rows[0].run.accepted) == 1
    assert main(["report", str(sweep)]) == 0
    assert "k" in (sweep / "report.md").read_text()


def test_a_ledger_newer_than_this_rocm_perf_is_refused_in_one_line(tmp_path, capsys):
    run = old_run_ledger(tmp_path / "runs" / "future", version=7)
    assert main(["review", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(run / "ledger.db") in err
    assert f"run ledger schema 7 is newer than this rocm-perf reads ({RUN_LEDGER_VERSION})" in err
    # Refusing it wrote nothing: the file still says 7.
    assert sqlite3.connect(run / "ledger.db").execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("7",)


def test_a_ledger_without_a_version_is_not_ours(tmp_path):
    db = tmp_path / "ledger.db"
    sqlite3.connect(db).executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                                      "CREATE TABLE other (x);")
    with pytest.raises(RocmPerfError, match="not a rocm-perf ledger .no schema version."):
        open_ledger(tmp_path)


# ---- migrations ----------------------------------------------------------------------------------

NOTES_V1 = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"
TO_V2 = Migration(2, "ALTER TABLE notes ADD COLUMN author TEXT NOT NULL DEFAULT 'someone; anyone';"
                     "CREATE TABLE tags (note INTEGER NOT NULL REFERENCES notes(id), tag TEXT NOT NULL);")
NOTES_V2 = ("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, author TEXT NOT NULL DEFAULT 'someone; anyone');"
            "CREATE TABLE tags (note INTEGER NOT NULL REFERENCES notes(id), tag TEXT NOT NULL);")


def test_an_old_file_is_migrated_step_by_step_and_keeps_its_data(tmp_path):
    path = tmp_path / "notes.db"
    v1 = LedgerDB(path, Schema("notes ledger", NOTES_V1), create=True)
    v1._write("INSERT INTO notes (text) VALUES ('kept')")
    v1.close()
    v2 = LedgerDB(path, Schema("notes ledger", NOTES_V2, (TO_V2,)))
    assert v2.get("schema_version") == 2
    assert v2.db.execute("SELECT text, author FROM notes").fetchall() == [("kept", "someone; anyone")]
    v2._write("INSERT INTO tags VALUES (1, 'x')")
    with pytest.raises(sqlite3.IntegrityError):  # foreign keys are enforced
        v2.db.execute("INSERT INTO tags VALUES (99, 'dangling')")
    v2.close()
    # A new file gets the newest tables directly.
    fresh = LedgerDB(tmp_path / "new.db", Schema("notes ledger", NOTES_V2, (TO_V2,)), create=True)
    assert fresh.get("schema_version") == 2
    assert [r[1] for r in fresh.db.execute("PRAGMA table_info(notes)")] == ["id", "text", "author"]


def test_a_failing_migration_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "notes.db"
    LedgerDB(path, Schema("notes ledger", NOTES_V1), create=True).close()
    broken = Schema("notes ledger", NOTES_V2, (TO_V2, Migration(3, "ALTER TABLE nowhere ADD COLUMN x;")))
    with pytest.raises(RocmPerfError, match="cannot migrate the notes ledger from schema 2 to 3 .* the file is unchanged"):
        LedgerDB(path, broken)
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("1",)
    assert [r[1] for r in con.execute("PRAGMA table_info(notes)")] == ["id", "text"]  # step 2 rolled back too


def test_migrations_must_be_in_order():
    with pytest.raises(ValueError, match="versions 2, 3"):
        Schema("x", NOTES_V1, (Migration(3, "SELECT 1;"),))


def test_statements_split_at_semicolons_outside_strings():
    assert split_statements("CREATE TABLE a (x TEXT DEFAULT ';');\n\nSELECT 1 ;  ") == [
        "CREATE TABLE a (x TEXT DEFAULT ';');", "SELECT 1 ;"]


# ---- connection settings, commit first -------------------------------------------------------------

def test_ledger_connection_settings(tmp_path):
    ledger = open_ledger(tmp_path, create=True)
    pragma = lambda name: ledger.db.execute(f"PRAGMA {name}").fetchone()[0]  # noqa: E731
    assert pragma("journal_mode") == "wal"
    assert pragma("synchronous") == 2  # FULL
    assert pragma("foreign_keys") == 1
    assert pragma("busy_timeout") == 30_000


def test_a_writer_waits_for_another_process_lock_instead_of_failing(tmp_path):
    ledger = open_ledger(tmp_path, create=True)
    other = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO meta VALUES ('other', '1')")
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    ledger.transition("baseline")  # blocks on the other writer's lock, then goes through
    release.join()
    assert ledger.state == "baseline" and ledger.get("other") == 1


# Opens a sweep ledger over and over while the process also holds it open, as a running sweep
# does (its heartbeat thread, its closing summary); argv: the sweep folder, the opens, "write" or "read".
_OPENER = """
import sys
from pathlib import Path
from rocm_perf.sweep.ledger import SweepLedger
folder, n, role = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held = SweepLedger(folder)
for i in range(n):
    ledger = SweepLedger(folder)
    if role == "write":
        ledger.set("k", i)
        held.set("m", i)
    else:
        ledger.get("k")
    ledger.close()
"""


def test_opening_a_ledger_again_keeps_the_locks_of_the_connections_already_open(tmp_path):
    """Two processes that open one ledger again and again while each holds it open: a second
    sweep over a folder did this, and the first failed 'disk I/O error' (SQLITE_IOERR_SHORT_READ)
    when a new connection's check of the file released the process's POSIX locks on it (it read
    the magic bytes with open(); closing any descriptor of a file drops them all). Before the fix
    this failed within about 20 opens, 3 times out of 3."""
    import subprocess
    import sys

    from conftest import ROOT

    SweepLedger(tmp_path, create=True).close()
    procs = [subprocess.Popen([sys.executable, "-c", _OPENER, str(tmp_path), "300", role], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True) for role in ("write", "read")]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-1500:]
    ledger = SweepLedger(tmp_path)
    assert ledger.get("k") == 299 and ledger.get("m") == 299
    ledger.close()
