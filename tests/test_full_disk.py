"""A full disk during `profile`, `optimize` and `sweep`: one line, the ledger intact, and once space is
back the command (or its --resume) completes with nothing recorded wrongly.

The disk is a real tmpfs (tests/faults.py) filled while the command runs, at a moment read from its
ledger: while candidates build (the linker cannot write: no compile error may be recorded), while
they are measured (the trace cannot be written: no crash may be recorded), while the report is
written. Real builds and runs of tests/data/programs/unroll_wins.cu on the host backend.
"""

from __future__ import annotations

import shutil

import pytest

from conftest import DATA
from faults import (FAILURE_REASONS, QUICK, QUICK_TOML, assert_consistent_run, cli, finish, ledger_state, one_error_line, read_only,
                    small_disk, start_cli, wait_for)

pytestmark = pytest.mark.slow
PROGRAM = DATA / "programs" / "unroll_wins.cu"


def test_profile_on_a_full_disk_says_one_line_and_runs_once_space_is_back(tmp_path):
    with small_disk(tmp_path / "disk") as disk:
        out = disk.root / "runs"
        disk.fill(leave=150_000)  # room for the run's folders, not for its build or its trace
        first = cli("profile", str(PROGRAM), "--backend", "host", "--out", str(out))
        one_error_line(first, str(disk.root), "cannot write (No space left on device)")
        disk.free()
        again = cli("profile", str(PROGRAM), "--backend", "host", "--out", str(out))
        assert again.returncode == 0, again.stderr[-2000:]


@pytest.mark.parametrize("moment", ["build", "screen", "finish"])
@pytest.mark.long
def test_optimize_on_a_disk_that_fills_up_stops_with_its_ledger_intact_and_resumes(moment, tmp_path):
    src = tmp_path / "src" / PROGRAM.name
    src.parent.mkdir()
    shutil.copy(PROGRAM, src)
    original = src.read_bytes()
    with small_disk(tmp_path / "disk") as disk:
        out = disk.root / "runs"
        proc = start_cli("optimize", str(src), "--out", str(out), *QUICK)
        try:
            wait_for(lambda: ledger_state(out) == moment, f"the run to reach {moment}", proc=proc)
            disk.fill()
        finally:
            finish(proc)
        line = one_error_line(proc, "free", "space, then `rocm-perf optimize --resume")
        (run,) = sorted(out.glob("*/ledger.db"))
        run = run.parent
        trials = assert_consistent_run(run)
        con = read_only(run / "ledger.db")
        builds = con.execute("SELECT error FROM builds WHERE error != ''").fetchall()
        con.close()
        assert builds == [], f"a full disk was recorded as a failed build: {builds}"
        wrongly = {t: v for t, v in trials.items() if v[3] in FAILURE_REASONS or "No space" in v[4]}
        assert not wrongly, f"the full disk was recorded as the candidates' failure: {wrongly}"
        disk.free()
        resumed = cli("optimize", "--resume", str(run), "--out", str(out), "--quiet")
        assert resumed.returncode == 0, f"{line}\n{resumed.stderr[-2000:]}"
        after = assert_consistent_run(run)
        assert set(after) == set(trials) and ledger_state(out) == "done"
        assert all(v[2] in ("accepted", "rejected", "carried") for v in after.values())
    assert src.read_bytes() == original  # the user's file: only `apply` writes it


@pytest.mark.long
def test_a_sweep_on_a_disk_that_fills_up_stops_and_resumes_without_charging_its_target(tmp_path):
    manifest = tmp_path / "sweep.toml"
    manifest.write_text(f'[defaults]\n{QUICK_TOML}\n[[target]]\nsource = "{PROGRAM}"\n')
    with small_disk(tmp_path / "disk") as disk:
        out = disk.root / "runs"
        proc = start_cli("sweep", str(manifest), "--backend", "host", "--budget", "30m", "--out", str(out))
        try:
            def screening():
                runs = list(out.glob("sweep-*/runs/*")) if out.exists() else []
                return runs and ledger_state(runs[0]) == "screen"
            wait_for(screening, "the target's optimize run to measure its candidate", proc=proc)
            disk.fill()
        finally:
            finish(proc)
        one_error_line(proc, "full", "free", "`rocm-perf sweep --resume")
        (sweep,) = out.glob("sweep-*")
        con = read_only(sweep / "sweep.db")
        assert con.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        (attempts, status), = con.execute("SELECT attempts, status FROM targets").fetchall()
        con.close()
        assert attempts == 0 and status not in ("failed", "quarantined")
        disk.free()
        resumed = cli("sweep", "--resume", str(sweep))
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        con = read_only(sweep / "sweep.db")
        (status,), = con.execute("SELECT status FROM targets").fetchall()
        con.close()
        assert status == "done"
