"""What the fault tests share: a small disk that can be filled and freed, the ledger's state of a
run being watched, quick optimize options, and checks of a ledger's consistency.

The disk is a real tmpfs (mounting one needs root, as CI runs; elsewhere the tests that need it
skip with that reason). Filling it writes a ballast file over all its free space; freeing it
deletes the ballast: "space is back".
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ROOT

# Small everything, as the Slurm tests use: one candidate, two pairs a decision (2 cores).
QUICK = ["--backend", "host", "--compile-check", "off", "--counters", "off", "--max-trials", "1", "--rounds", "2",
         "--max-rounds", "2", "--aa-rounds", "2", "--metric", "median-path", "--quiet"]
QUICK_TOML = ('max_trials = 1\nrounds = 2\nmax_rounds = 2\naa_rounds = 2\ncompile_check = "off"\n'
              'metric = "median-path"\ncounters = "off"\n')


class SmallDisk:
    """A mounted tmpfs: `fill()` leaves it (almost) no space, `free()` gives the space back."""

    def __init__(self, root: Path):
        self.root = root
        self.ballast = root / ".ballast"

    def fill(self, leave: int = 0) -> None:
        st = os.statvfs(self.root)
        size = max(0, st.f_bavail * st.f_frsize - leave)
        with open(self.ballast, "ab") as f:
            try:
                f.write(b"\0" * size)
            except OSError:  # full already: that is the point
                pass

    def free(self) -> None:
        self.ballast.unlink(missing_ok=True)


@contextmanager
def small_disk(where: Path, size: str = "64m"):
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for a full disk ({done.stderr.strip() or 'not root'}): the full-disk tests "
                    "need root, as CI has")
    try:
        yield SmallDisk(where)
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def cli(*args: str, cwd: Path = ROOT, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rocm_perf.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def start_cli(*args: str, cwd: Path = ROOT) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rocm_perf.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def one_error_line(done, *expected: str) -> str:
    """The only stderr line of a failed command (a CompletedProcess, or a finished Popen whose stderr
    was read into `.stderr_text`): `rocm-perf: error: ...`, no traceback."""
    stderr = getattr(done, "stderr_text", None) or (done.stderr if isinstance(done.stderr, str) else "")
    assert done.returncode == 2, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("rocm-perf: note:")]
    assert len(lines) == 1 and lines[0].startswith("rocm-perf: error: "), stderr[-2000:]
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def read_only(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def ledger_state(out: Path) -> str | None:
    """The latest state of the (only) run under `out`, None before its ledger exists."""
    found = sorted(out.glob("*/ledger.db")) if out.exists() else []
    if not found:
        return None
    try:
        con = read_only(found[0])
        try:
            row = con.execute("SELECT state FROM transitions ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None


# Reasons a trial is rejected for what happened to it, not for what it is: never the disk's doing.
FAILURE_REASONS = ("compile", "crash", "timeout", "no trace")


def finish(proc: subprocess.Popen, timeout: float = 900) -> subprocess.Popen:
    """Wait for a started command; its stderr is then in `.stderr_text`."""
    try:
        _, proc.stderr_text = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return proc


def wait_for(predicate, what: str, timeout: float = 900.0, proc: subprocess.Popen | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the command ended (exit {proc.returncode}) before {what}: {proc.stderr.read()[-2000:]}")
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def assert_consistent_run(run: Path) -> dict:
    """A run ledger that is whole (quick_check), each trial once, and each phase's rounds one pair per
    index from 0; returns {trial id: (rule, factor, status, reason, detail)}."""
    con = read_only(run / "ledger.db")
    try:
        assert con.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        trials = con.execute("SELECT id, loop_key, rule, factor, generation, components, status, reason, detail "
                             "FROM trials").fetchall()
        keys = [(t[1], t[2], t[3], t[4], t[5]) for t in trials]
        assert len(keys) == len(set(keys)), f"a trial is recorded twice: {trials}"
        for trial, phase in con.execute("SELECT DISTINCT trial_id, phase FROM rounds").fetchall():
            idx = [r[0] for r in con.execute("SELECT idx FROM rounds WHERE trial_id = ? AND phase = ? GROUP BY idx "
                                             "ORDER BY idx", (trial, phase))]
            assert idx == list(range(len(idx))), f"trial {trial} {phase}: rounds {idx}"
        return {t[0]: (t[2], t[3], t[6], t[7], t[8]) for t in trials}
    finally:
        con.close()
