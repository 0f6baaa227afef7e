"""The run ledger: committed transitions, trials, rounds, decisions; clear errors on bad directories."""

import os
import sqlite3

import pytest

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.ledger import Baseline, RoundRow, open_ledger


def test_every_write_is_visible_to_another_connection_at_once(tmp_path):
    ledger = open_ledger(tmp_path / "run", create=True)
    ledger.set("options", {"min_gain": 0.02})
    ledger.transition("baseline", "building")
    tid = ledger.add_trial(generation=0, loop_key="k@12", kernel="k", loop_id="k:L12", rule="pragma-unroll", factor=4, expected_value=0.5)
    ledger.update_trial(tid, status="screening", resources={"vgpr": 10})
    ledger.add_round(RoundRow(tid, "screen", 0, "B", True, "", 100.0, 120.0, {"k": 90.0}, {"returncode": 0}))
    ledger.add_decision(tid, "screen", "accept", "significant gain", {"rounds": 10})

    # A second connection (what a resumed process sees after kill -9 of this one).
    other = sqlite3.connect(str(tmp_path / "run" / "ledger.db"))
    assert other.execute("SELECT value FROM meta WHERE key='state'").fetchone()[0] == '"baseline"'
    assert other.execute("SELECT status FROM trials").fetchone()[0] == "screening"
    assert other.execute("SELECT count(*) FROM rounds").fetchone()[0] == 1
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    reopened = open_ledger(tmp_path / "run")
    t = reopened.trial(tid)
    assert (t.status, t.resources, t.label) == ("screening", {"vgpr": 10}, "k k:L12 pragma-unroll x4")
    assert reopened.rounds(tid, "screen")[0].kernel_ns == {"k": 90.0}
    assert reopened.decision(tid, "screen")["reason"] == "significant gain"
    assert [s for _, s, _ in reopened.transitions()] == ["baseline"]


def test_forget_rounds_drops_a_half_done_phase_only(tmp_path):
    ledger = open_ledger(tmp_path, create=True)
    for phase in ("screen", "confirm"):
        for i in range(3):
            ledger.add_round(RoundRow(1, phase, i, "B", True, "", 1.0, 1.0, {}, {}))
    ledger.add_decision(1, "screen", "accept", "significant gain", {})
    ledger.forget_rounds(1, "confirm")
    assert len(ledger.rounds(1, "screen")) == 3
    assert ledger.rounds(1, "confirm") == []
    assert ledger.decision(1, "screen") is not None


def test_baselines_are_generations(tmp_path):
    ledger = open_ledger(tmp_path, create=True)
    ledger.add_baseline(Baseline(0, None, "aa", "baseline/source.cu", "baseline/build/prog", {}))
    ledger.add_baseline(Baseline(1, 3, "bb", "trials/3/source.cu", "trials/3/build/prog", {"k": {"vgpr": 8}}))
    assert ledger.current_baseline().trial_id == 3
    assert [b.generation for b in ledger.baselines()] == [0, 1]


def test_failed_transaction_leaves_nothing_behind(tmp_path):
    ledger = open_ledger(tmp_path, create=True)
    with pytest.raises(RuntimeError):
        with ledger.transaction():
            ledger._write("INSERT INTO meta VALUES ('x', '1')")
            raise RuntimeError("killed mid-step")
    assert ledger.get("x") is None


def test_missing_ledger_and_foreign_files_are_clear_errors(tmp_path):
    with pytest.raises(RocmPerfError, match="no ledger here"):
        open_ledger(tmp_path / "nothing")
    (tmp_path / "ledger.db").write_text("not sqlite at all, just text " * 100)
    with pytest.raises(RocmPerfError, match="not a rocm-perf ledger"):
        open_ledger(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_unwritable_run_directory_is_a_clear_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(RocmPerfError, match="not writable"):
            open_ledger(locked / "run", create=True)
    finally:
        locked.chmod(0o700)


def test_disk_full_during_a_write_is_a_clear_error(tmp_path):
    ledger = open_ledger(tmp_path, create=True)
    ledger.set("before", 1)
    # SQLite's page-count limit makes the next growing write fail exactly like a full disk.
    pages = ledger.db.execute("PRAGMA page_count").fetchone()[0]
    ledger.db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(RocmPerfError, match="cannot write the run ledger"):
        for i in range(2000):
            ledger.add_round(RoundRow(1, "screen", i, "B", True, "", 1.0, 1.0, {"k" * 50: 1.0}, {"pad": "x" * 200}))
    assert open_ledger(tmp_path).get("before") == 1


def test_run_directory_under_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(RocmPerfError, match="not writable"):
        open_ledger(tmp_path / "a-file" / "run", create=True)


def test_a_version_1_ledger_is_migrated_and_its_trials_have_no_file(tmp_path):
    """Runs made before project runs: the trials table gains `file` (empty), nothing else moves."""
    from rocm_perf.optimize.ledger import SCHEMA, SCHEMA_VERSION

    # Version 1's trials table: without `file` (2) and the search's columns (3).
    old_ddl = SCHEMA.create.replace(",\n    file TEXT NOT NULL DEFAULT '',\n    build_key TEXT NOT NULL DEFAULT '', "
                                    "ordering TEXT NOT NULL DEFAULT '{}', components TEXT NOT NULL DEFAULT '[]',\n"
                                    "    proposer TEXT NOT NULL DEFAULT 'rules', provenance TEXT NOT NULL DEFAULT '{}')", ")")
    assert "file TEXT" not in old_ddl and "build_key" not in old_ddl and "proposer" not in old_ddl and SCHEMA_VERSION == 4
    db = sqlite3.connect(tmp_path / "ledger.db")
    db.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);" + old_ddl)
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute("INSERT INTO trials (id, generation, loop_key, kernel, loop_id, rule, factor, expected_value, status, updated)"
               " VALUES (1, 0, 'k@9', 'k', 'k:k:1:9', 'unroll_pragma', 4, 0.5, 'rejected', 0)")
    db.commit()
    db.close()
    ledger = open_ledger(tmp_path)
    (trial,) = ledger.trials()
    assert trial.file == "" and trial.label == "k k:k:1:9 unroll_pragma x4"
    assert (trial.build_key, trial.ordering, trial.components) == ("", {}, [])
    assert (trial.proposer, trial.provenance) == ("rules", {})  # every trial before version 4 came from the rules
    new = ledger.add_trial(generation=0, loop_key="src/a.cu::k@9", kernel="k", loop_id="k:k:1:9", rule="unroll_manual",
                           factor=2, expected_value=0.4, file="src/a.cu")
    assert ledger.trial(new).file == "src/a.cu"
    ledger.close()
