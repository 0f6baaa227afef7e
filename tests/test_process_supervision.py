"""Programs that misbehave, and rocm-perf itself killed: nothing it started is left running.

Every program runs under rocm_perf/supervisor.py (process.py): a hang is bounded by the timeout,
a child that outlives its parent (in its group, or escaped with setsid) is ended with it, gigabytes
of output are cut at the output cap, and when rocm-perf dies (SIGKILL, SIGTERM, SIGINT) while a
program or a build runs, the program and its children end within seconds. The processes are real
(`sleep` with a unique argument marks them, found through /proc).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from conftest import KERNELS, ROOT
from rocm_perf import process


def _marker() -> str:
    """A `sleep` argument no other process on the machine has: 1000 s and a unique fraction."""
    return f"1000.{uuid.uuid4().int % 10**9:09d}"


def _alive(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (zombies excluded: they run nothing)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


def _wait_until(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _gone_within(marker: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _alive(marker)
    for pid in left:  # clean up before failing: a leaked sleep must not outlive the test
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} process(es) still running {seconds:g} s later"


# ---- programs that misbehave ---------------------------------------------------------------------

def test_a_hanging_program_is_ended_at_the_timeout_with_its_children():
    marker = _marker()
    done = process.run(["sh", "-c", f"sleep {marker} & sleep {marker}; echo never"], timeout=1.0)
    assert done.timed_out and done.returncode == -signal.SIGKILL and "never" not in done.stdout
    _gone_within(marker, 5)


def test_a_child_that_outlives_its_program_is_ended_when_the_program_exits():
    marker = _marker()
    # one child in the program's group, one escaped into its own session (a daemon's double fork)
    done = process.run(["sh", "-c", f"sleep {marker} & (setsid sleep {marker} &); echo started"], timeout=60)
    # not timed out: it returned when the program exited, not when its children did (a clock-free check)
    assert done.returncode == 0 and done.stdout.strip() == "started" and not done.timed_out
    _gone_within(marker, 5)


def test_a_program_that_floods_its_output_is_stopped_at_the_cap():
    """`yes` writes as fast as the pipe takes it (gigabytes a minute): the run stops once it passed
    the cap, with only the cap kept in memory, and says why on stderr."""
    done = process.run(["yes", "rocm-perf"], timeout=120, output_cap=4 << 20)
    assert done.output_capped and not done.timed_out and done.returncode == -signal.SIGKILL
    assert len(done.stdout) == 4 << 20
    assert "wrote more than 4 MiB to its stdout" in done.stderr


def test_exit_codes_signals_input_and_a_missing_program_are_as_popen_gives_them(tmp_path):
    done = process.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30, log=tmp_path / "log")
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert "# exit 3 after" in (tmp_path / "log").read_text()
    assert process.run(["sh", "-c", "kill -SEGV $$"], timeout=30).returncode == -signal.SIGSEGV
    text = "x" * 300_000 + "\n"  # more than a pipe holds: written while the output is read
    assert process.run(["cat"], timeout=30, input_text=text).stdout == text
    with pytest.raises(FileNotFoundError):
        process.run([str(tmp_path / "no-such-program")], timeout=30)


# ---- rocm-perf killed while a program runs -------------------------------------------------------

RUNNER = textwrap.dedent("""
    import sys
    from rocm_perf import process
    process.run(["sh", "-c", sys.argv[1]], timeout=600)
""")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_nothing_outlives_a_killed_rocm_perf(sig):
    """The program, a child in its group and one escaped with setsid end within seconds of the
    process that ran them, however it died (on SIGKILL nothing in it runs: the supervisor notices)."""
    marker = _marker()
    # SIGINT as an interactive shell leaves it: a test run started in the background (`make test &`)
    # ignores it, and a Python started so keeps ignoring it.
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, f"sleep {marker} & (setsid sleep {marker} &); sleep {marker}"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_until(lambda: len(_alive(marker)) >= 3, "the program and its two children to run")
        proc.send_signal(sig)
        proc.wait(timeout=30)
        _gone_within(marker, 5)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["build", "run"])
def test_a_killed_profile_of_a_project_leaves_neither_its_build_nor_its_program(stage, tmp_path):
    """The issue's case: `rocm-perf profile --project` killed by its caller's timeout (SIGKILL) left
    the benchmark it ran alive in its own session. Killed during the build or during the run, the
    command leaves nothing."""
    marker = _marker()
    project = tmp_path / "app"
    project.mkdir()
    (project / "main.cu").write_text((KERNELS / "stencil1d.cu").read_text())
    build = f"sleep {marker}" if stage == "build" else "hipcc -O2 -o main main.cu"
    run = f"sleep {marker}" if stage == "run" else "./main"
    proc = subprocess.Popen([sys.executable, "-m", "rocm_perf.cli", "profile", "--project", str(project), "--backend",
                             "host", "--build", build, "--run", run, "--out", str(tmp_path / "runs")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_until(lambda: _alive(marker), f"the {stage} command to run", timeout=300)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        _gone_within(marker, 5)
    finally:
        proc.kill()
        proc.wait()


# ---- a candidate that misbehaves inside a real optimize run: that trial fails, the run goes on ---

HARNESS = """#!/bin/sh
# Runs the baseline's program as it is; a candidate's ({{exe}} under builds/) misbehaves: {mode}
exe="$1"
case "$exe" in
  */builds/*) {action} ;;
esac
exec "$exe"
"""
MISCHIEF = {
    "hang": "sleep {marker}; exec \"$exe\"",
    "flood": "yes 'rocm-perf output flood'",  # gigabytes a minute until the cap stops it
    "fork": "(sleep {marker} &); exec \"$exe\"",  # a child that outlives the program, which then succeeds
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(MISCHIEF))
@pytest.mark.long
def test_a_candidate_that_hangs_floods_or_forks_fails_alone_and_the_run_finishes(mode, tmp_path):
    from faults import QUICK, cli

    from conftest import DATA

    marker = _marker()
    harness = tmp_path / "harness.sh"
    harness.write_text(HARNESS.format(mode=mode, action=MISCHIEF[mode].format(marker=marker)))
    src = tmp_path / "src" / "unroll_wins.cu"
    src.parent.mkdir()
    src.write_bytes((DATA / "programs" / "unroll_wins.cu").read_bytes())
    out = tmp_path / "runs"
    done = cli("optimize", str(src), "--out", str(out), "--run", f"sh {harness} {{exe}}", "--timeout", "30",
               "--rules", "unroll_manual", "--factors", "4", *QUICK)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = [p.parent for p in out.glob("*/ledger.db")]
    import json

    summary = json.loads((run / "summary.json").read_text())
    assert summary["state"] == "done"
    (trial,) = summary["rejected"] + summary["accepted"]
    if mode == "hang":
        assert trial in summary["rejected"] and trial["reason"] == "timeout", trial
    elif mode == "flood":
        assert trial in summary["rejected"] and trial["reason"] == "crash", trial
        assert "more than 64 MiB" in json.dumps(trial)
    else:  # the program itself works: its measurement decides, and its stray child is gone
        assert trial["reason"] not in ("timeout", "crash"), trial
    _gone_within(marker, 5)
