"""Two processes on one run or one sweep: the second is refused with one line (exit 3) before it
touches anything, and the first finishes as if alone. Real runs of tests/data/programs/unroll_wins.cu
on the host backend (quick options)."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from conftest import DATA
from faults import QUICK, QUICK_TOML, cli, finish, ledger_state, start_cli, wait_for

pytestmark = pytest.mark.slow
PROGRAM = DATA / "programs" / "unroll_wins.cu"


def _refused(done, *expected: str) -> str:
    assert done.returncode == 3, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocm-perf: error: ") and "Traceback" not in done.stderr, done.stderr
    for text in expected:
        assert text in lines[0]
    return lines[0]


@pytest.mark.long
def test_a_second_resume_of_a_running_optimize_is_refused(tmp_path):
    src = tmp_path / "src" / PROGRAM.name
    src.parent.mkdir()
    shutil.copy(PROGRAM, src)
    out = tmp_path / "runs"
    first = start_cli("optimize", str(src), "--out", str(out), *QUICK)
    try:
        wait_for(lambda: ledger_state(out) == "noise-floor", "the run to measure its noise floor", proc=first)
        (run,) = [p.parent for p in out.glob("*/ledger.db")]
        metadata = hashlib.sha256((run / "metadata.json").read_bytes()).hexdigest()
        second = cli("optimize", "--resume", str(run), "--out", str(out), "--quiet", timeout=120)
        _refused(second, str(run), f"another rocm-perf process (pid {first.pid}) is running this run")
        # the same command again (no --resume): it finds the unfinished run, and is refused the same way
        again = cli("optimize", str(src), "--out", str(out), *QUICK, timeout=300)
        _refused(again, f"pid {first.pid}")
        assert hashlib.sha256((run / "metadata.json").read_bytes()).hexdigest() == metadata
    finally:
        finish(first)
    assert first.returncode == 0, first.stderr_text[-2000:]
    assert ledger_state(out) == "done"


@pytest.mark.long
def test_a_second_sweep_over_the_same_folder_is_refused(tmp_path):
    manifest = tmp_path / "sweep.toml"
    manifest.write_text(f'[defaults]\n{QUICK_TOML}\n[[target]]\nsource = "{PROGRAM}"\n')
    out = tmp_path / "runs"
    first = start_cli("sweep", str(manifest), "--backend", "host", "--budget", "30m", "--out", str(out))
    try:
        sweep = wait_for(lambda: next(iter(out.glob("sweep-*/sweep.db")), None) if out.exists() else None,
                         "the sweep's ledger", proc=first).parent
        second = cli("sweep", "--resume", str(sweep), timeout=120)
        _refused(second, str(sweep), "another rocm-perf sweep", "is running in this sweep directory")
    finally:
        finish(first)
    assert first.returncode == 0, first.stderr_text[-2000:]
