"""`rocm-perf optimize`, `review` and `apply` end to end on the host backend: real builds, real runs,
real traces, real statistics. Each program is copied into tmp_path first: that copy is "the
user's file" (the loop must never write it; `apply` may)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocm_perf.backends.host_clocks import perf_counters_status
from rocm_perf.cli import main
from conftest import DATA, ROOT

pytestmark = pytest.mark.slow

PROGRAMS = DATA / "programs"
# The protocol's own defaults (first look at 5 pairs, at most 30) and its default metric on the host
# backend, the CPU-time path: time a worker spends descheduled by other processes on a shared CI
# machine does not count, so a busy machine does not swamp a round.
FAST = ["--backend", "host", "--compile-check", "off", "--aa-rounds", "10", "--quiet"]


def user_copy(tmp_path: Path, name: str) -> Path:
    src = tmp_path / "src" / name
    src.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROGRAMS / name, src)
    return src


def only_run(out: Path) -> Path:
    runs = [p for p in out.iterdir() if (p / "ledger.db").exists()]
    assert len(runs) == 1
    return runs[0]


def summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def test_a_clearly_faster_rewrite_is_accepted_then_reviewed_and_applied(tmp_path, capsys):
    src = user_copy(tmp_path, "unroll_wins.cu")
    before = src.read_bytes()
    out = tmp_path / "runs"
    # Up to 60 pairs: the gain is real but modest on some CPUs, and a busy machine is noisy.
    assert main(["optimize", str(src), "--out", str(out), "--rules", "unroll_manual", "--factors", "4",
                 "--max-rounds", "60", *FAST]) == 0
    run = only_run(out)
    s = summary(run)
    assert s["state"] == "done" and len(s["accepted"]) == 1
    accepted = s["accepted"][0]
    confirm = accepted["evidence"]["confirm"]
    assert confirm["critical_path"]["high"] < 1.0 - s["effective_min_gain"]
    assert confirm["outputs"]["rounds_checked"] == confirm["rounds"]
    assert src.read_bytes() == before  # the loop never writes the user's file
    final = (run / "final.cu").read_text()
    assert final.count("for (; cols - c >= 4; ++c) {") == 1 and final != before.decode()
    assert (run / "accepted.diff").read_text().startswith(f"--- a/{src.name}")
    assert (run / "trials" / "1" / "verdict.json").exists()
    assert (run / "metadata.json").exists() and (run / "report.html").exists()

    capsys.readouterr()
    assert main(["review", "--out", str(out)]) == 0
    listing = capsys.readouterr().out
    assert run.name in listing and "done" in listing
    assert main(["review", str(run)]) == 0
    shown = capsys.readouterr().out
    assert "unroll_manual x4" in shown and "```diff" in shown
    assert "- c loop, line 20: unrolled x4, trip count known only at run time" in shown and "Diff: +" in shown

    # apply refuses a file that changed since the run, and offers a patch instead
    src.write_bytes(before + b"// edited after the run\n")
    assert main(["apply", str(run)]) == 2
    err = capsys.readouterr().err
    assert "changed since the run started" in err and "--patch" in err
    assert src.read_bytes().endswith(b"// edited after the run\n")
    assert main(["apply", str(run), "--patch"]) == 0
    patch = capsys.readouterr().out
    assert patch.startswith("--- a/") and "+    for (; cols - c >= 4; ++c) {" in patch

    # with the file as it was, apply writes the result atomically and keeps a backup
    src.write_bytes(before)
    assert main(["apply", str(run)]) == 0
    assert src.read_text() == final
    backups = list(src.parent.glob(f"{src.name}.*.orig"))
    assert len(backups) == 1 and backups[0].read_bytes() == before
    assert main(["apply", str(run)]) == 0
    assert "already holds" in capsys.readouterr().out


def test_no_rewrite_is_accepted_when_none_is_faster(tmp_path):
    src = user_copy(tmp_path, "none_wins.cu")
    out = tmp_path / "runs"
    assert main(["optimize", str(src), "--out", str(out), "--rules", "unroll_manual,unroll_pragma", "--factors", "4",
                 "--max-rounds", "15", *FAST]) == 0
    s = summary(only_run(out))
    assert s["accepted"] == []
    assert len(s["rejected"]) == 2
    assert {t["reason"] for t in s["rejected"]} <= {"not significant", "inconclusive", "slower", "outraced", "duplicate"}
    assert (only_run(out) / "final.cu").read_bytes() == (PROGRAMS / "none_wins.cu").read_bytes()
    assert (only_run(out) / "accepted.diff").read_text() == ""


def test_wrong_output_and_hangs_are_rejected_and_the_loop_goes_on(tmp_path):
    src = user_copy(tmp_path, "unroll_wins.cu")
    out = tmp_path / "runs"
    rules = PROGRAMS / "rules_broken"
    assert main(["optimize", str(src), "--out", str(out), "--rules-dir", str(rules), "--timeout", "10", *FAST]) == 0
    s = summary(only_run(out))
    reasons = {t["rule"]: (t["reason"], t["detail"]) for t in s["rejected"]}
    assert reasons["skip_every_other"][0] == "wrong output"
    assert "digests differ" in reasons["skip_every_other"][1]
    assert reasons["never_step"][0] == "timeout"
    assert s["accepted"] == []


def _rounds(ledger: Path, phase: str) -> int:
    con = sqlite3.connect(str(ledger))
    try:
        return con.execute("SELECT count(*) FROM rounds WHERE trial_id = 1 AND phase = ?", (phase,)).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def _start_and_wait(argv, out: Path, phase: str, at_least: int) -> tuple[subprocess.Popen, Path]:
    """Start `argv`; return once trial 1 has `at_least` rounds of `phase` in the ledger."""
    proc = subprocess.Popen(argv, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        ledgers = list(out.glob("*/ledger.db")) if out.exists() else []
        if ledgers and _rounds(ledgers[0], phase) >= at_least:
            return proc, ledgers[0]
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"never reached {phase} round {at_least}: {proc.communicate()[1][-2000:]}")


# What the kill/resume test decides on. It needs trial 1 to pass screening after the resume, which
# no clock guarantees on a loaded 2-core VM: there a busy neighbour can halve a core's speed for
# seconds, so even the CPU-time path of identical builds scattered by 32 % over 10 A/A pairs and a
# real 10 % win stayed inconclusive (CI on main failed so). Retired instructions are exact (the
# rewrite retires 4 % fewer), so noise cannot decide this test and a broken resume still fails it.
# Where perf counters are refused it runs on the default metric.
RESUME_METRIC = [] if perf_counters_status() else ["--metric", "instructions"]


def test_sigterm_then_kill_9_then_resume_finish_the_run(tmp_path):
    src = user_copy(tmp_path, "unroll_wins.cu")
    out = tmp_path / "runs"
    argv = [sys.executable, "-m", "rocm_perf.cli", "optimize", str(src), "--out", str(out),
            "--rules", "unroll_manual", "--factors", "4", "--max-rounds", "60", *FAST, *RESUME_METRIC]

    # SIGTERM while screening: stops after recording, says how to continue, exit 130.
    proc, ledger = _start_and_wait(argv, out, "screen", 2)
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "--resume" in err
    con = sqlite3.connect(str(ledger))
    assert con.execute("SELECT status FROM trials WHERE id = 1").fetchone()[0] == "screening"
    con.close()

    # The same command again resumes that run (no TTY: it says so); kill -9 it mid-confirmation.
    proc, _ = _start_and_wait(argv, out, "confirm", 2)
    os.killpg(proc.pid, signal.SIGKILL)
    _, err = proc.communicate()
    assert "resuming the unfinished run" in err

    # --resume finishes it: one run, one trial, every phase's rounds one pair per index from 0.
    done = subprocess.run([sys.executable, "-m", "rocm_perf.cli", "optimize", "--resume", ledger.parent.name,
                           "--out", str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert only_run(out) == ledger.parent
    s = summary(ledger.parent)
    assert s["state"] == "done" and s["trials"] == 1
    if RESUME_METRIC:  # exact counts: the resumed run keeps the metric and accepts the real win
        assert s["metric"]["name"] == "instructions" and len(s["accepted"]) == 1
    con = sqlite3.connect(str(ledger))
    for phase in ("screen", "confirm"):
        rows = con.execute("SELECT idx, count(*) FROM rounds WHERE trial_id = 1 AND phase = ? GROUP BY idx", (phase,)).fetchall()
        assert [i for i, _ in rows] == list(range(len(rows))) and all(n == 2 for _, n in rows)
    con.close()


def test_a_candidate_that_builds_the_baselines_program_is_never_measured(tmp_path):
    """`#pragma unroll 1` on loops g++ -O2 leaves rolled: the host builds the baseline's very code,
    so both candidates are dropped as duplicates before anything is measured."""
    src = user_copy(tmp_path, "two_loops.cu")
    out = tmp_path / "runs"
    assert main(["optimize", str(src), "--out", str(out), "--rules", "unroll_pragma", "--factors", "1", *FAST]) == 0
    run = only_run(out)
    s = summary(run)
    assert s["accepted"] == [] and len(s["rejected"]) == 2
    assert all(t["reason"] == "duplicate" and t["detail"].startswith("no change in machine code: duplicate of the baseline")
               for t in s["rejected"])
    assert s["search"]["duplicates"] == 2 and s["search"]["raced"] == 0
    con = sqlite3.connect(run / "ledger.db")
    assert con.execute("SELECT COUNT(*) FROM rounds WHERE trial_id > 0").fetchone()[0] == 0
    assert "duplicate of the baseline" in (run / "report.md").read_text()
