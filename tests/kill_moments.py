"""kill -9 at chosen moments of a real `optimize` run, of a `sweep` and of an `apply`, and what the
resume after each must give (issue 58): it completes, no trial is lost or recorded twice, the
decisions are the uninterrupted run's where the measurements allow, nothing rocm-perf started is
left running, and the user's file is the original or the result (sha256), never a mix.

Shared by tests/test_kill9_resume.py (a few moments, in the suite) and tests/bench/bench_kill9.py
(20 moments each, the table of the closing note). The program is
tests/data/programs/unroll_wins.cu (its manual unroll by 4 wins clearly on a CPU) on the host
backend: one candidate, so a run is about a minute.

Only processes these functions started are signalled: the rocm-perf command by its pid, and
anything left of it found by the case folder's path in its command line (unique per case).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from conftest import DATA, ROOT
from faults import assert_consistent_run, ledger_state, read_only

PROGRAM = DATA / "programs" / "unroll_wins.cu"
OPTIONS = ["--backend", "host", "--compile-check", "off", "--counters", "off", "--rules", "unroll_manual",
           "--factors", "4", "--max-trials", "1", "--rounds", "3", "--max-rounds", "6", "--aa-rounds", "3",
           "--metric", "median-path", "--quiet"]
MANIFEST_OPTIONS = ('rules = ["unroll_manual"]\nfactors = [4]\nmax_trials = 1\nrounds = 3\nmax_rounds = 6\n'
                    'aa_rounds = 3\ncompile_check = "off"\nmetric = "median-path"\ncounters = "off"\n')
# The optimize loop's states in the order a run meets them (optimize/driver.py); a moment is "the
# run has entered this state, then a random delay".
STATES = ("baseline", "noise-floor", "rank", "propose", "build", "screen", "confirm", "combine", "final-check", "finish")
BUILD_TOOLS = {"g++", "gcc", "c++", "cc1plus", "as", "ld", "collect2", "hipcc", "clang", "clang++", "lld", "clang-format"}
LEFTOVER_GRACE_S = 5.0


# ---- processes -----------------------------------------------------------------------------------

def _processes() -> dict[int, tuple[int, str, bytes]]:
    """pid -> (parent pid, name, command line) of every live process (zombies left out)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z":
            found[int(entry)] = (int(fields[1]), name, cmdline)
    return found


def doing(pid: int) -> str:
    """What the process `pid` is busy with, from its descendants: a build, the program, or its own work."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for p, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(p)
    names, todo = set(), list(children.get(pid, []))
    while todo:
        p = todo.pop()
        names.add(table[p][1])
        todo.extend(children.get(p, []))
    if names & BUILD_TOOLS:
        return "build"
    if names - {"python", "python3", "sh"}:
        return "program"
    return "rocm-perf"


def ours(marker: str) -> list[int]:
    """Live processes whose command line names `marker` (a case folder): what the case started."""
    me = os.getpid()
    return [p for p, (_, _, cmd) in _processes().items() if marker.encode() in cmd and p != me]


def leftovers_after(marker: str, seconds: float = LEFTOVER_GRACE_S) -> list[str]:
    """The processes of the case still running `seconds` after its rocm-perf was killed (their
    names); they are then killed (by pid: only the case's own) so that nothing outlives the check."""
    deadline = time.monotonic() + seconds
    while ours(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    table = _processes()
    left = ours(marker)
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return [table[p][1] if p in table else "?" for p in left]


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rocm_perf.cli", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def run(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rocm_perf.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _reached(ledger: Path, state: str) -> bool:
    if not ledger.exists():
        return False
    try:
        con = read_only(ledger)
        try:
            return con.execute("SELECT 1 FROM transitions WHERE state = ?", (state,)).fetchone() is not None
        finally:
            con.close()
    except sqlite3.Error:  # the ledger is being created: not yet
        return False


def _wait(predicate, proc: subprocess.Popen, timeout: float = 1200) -> bool:
    """True once `predicate()` holds; False if the command ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the moment to kill at")


# ---- what a finished run decided ------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """A finished run: its trials (rule, factor, status, reason) in order, and its final source."""

    trials: tuple[tuple, ...]
    final_sha: str

    @property
    def keys(self) -> tuple[tuple, ...]:
        return tuple(t[:2] for t in self.trials)


def outcome(run_dir: Path) -> Outcome:
    trials = assert_consistent_run(run_dir)  # whole, each trial once, rounds without gaps
    final = run_dir / "final.cu"
    if not final.exists():
        final = next(run_dir.glob("final*"))
    return Outcome(tuple((v[0], v[1], v[2], v[3]) for _, v in sorted(trials.items())),
                   hashlib.sha256(final.read_bytes()).hexdigest())


# For `apply`'s kills: a run that accepts its clear win on a busy machine too (the decision metric
# of the host backend, CPU time, and room to decide), so that apply has a change to write.
APPLY_OPTIONS = ["--backend", "host", "--compile-check", "off", "--counters", "off", "--rules", "unroll_manual",
                 "--factors", "4", "--max-trials", "1", "--rounds", "3", "--max-rounds", "20", "--aa-rounds", "3",
                 "--quiet"]


def reference_run(folder: Path, options: list[str] = OPTIONS) -> tuple[Path, Outcome]:
    """An uninterrupted run of the program, and what it decided."""
    src = _copy_program(folder)
    done = run("optimize", str(src), "--out", str(folder / "runs"), *options)
    assert done.returncode == 0, done.stderr[-2000:]
    (ledger,) = (folder / "runs").glob("*/ledger.db")
    return ledger.parent, outcome(ledger.parent)


def _copy_program(folder: Path) -> Path:
    src = folder / "src" / PROGRAM.name
    src.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROGRAM, src)
    return src


# ---- one kill ------------------------------------------------------------------------------------

@dataclass
class Kill:
    """One kill -9 and the resume after it."""

    what: str  # "optimize" or "sweep"
    moment: str  # the state the kill waited for
    delay_s: float
    state: str | None = None  # the ledger's state when the kill came
    busy: str = ""  # build, program or rocm-perf (its own work: ledger commits, reports)
    missed: bool = False  # the command finished before the moment came
    leftovers: list[str] = field(default_factory=list)  # its processes still running LEFTOVER_GRACE_S after the kill
    resumes: int = 0  # resumes it took to complete (each must complete: 1)
    resume_error: str = ""
    outcome: Outcome | None = None
    runs: int = 1  # run directories the sweep made for its target (1: the resume continued it)
    problems: list[str] = field(default_factory=list)

    def judge(self, reference: Outcome) -> None:
        if self.leftovers:
            self.problems.append(f"{len(self.leftovers)} process(es) outlived the kill by {LEFTOVER_GRACE_S:g} s: "
                                 f"{', '.join(sorted(set(self.leftovers)))}")
        if self.resume_error:
            self.problems.append(f"resume failed: {self.resume_error}")
        if self.runs != 1:
            self.problems.append(f"{self.runs} run directories for one target")
        if self.outcome is not None and self.outcome.keys != reference.keys:
            self.problems.append(f"trials {self.outcome.keys}, uninterrupted {reference.keys}")

    def same_decisions(self, reference: Outcome) -> bool:
        return self.outcome is not None and self.outcome == reference


def _kill(proc: subprocess.Popen, record: Kill, state_of, marker: str) -> None:
    record.state = state_of()
    record.busy = doing(proc.pid)
    proc.send_signal(signal.SIGKILL)  # the rocm-perf process this case started, by its pid
    proc.communicate()
    record.leftovers = leftovers_after(marker)


def kill_optimize(folder: Path, moment: str, delay_s: float) -> Kill:
    """optimize, kill -9 once its run has entered `moment` and `delay_s` more have passed, then
    `optimize --resume` (as many times as it takes, at most 3) to the end."""
    src = _copy_program(folder)
    out = folder / "runs"
    record = Kill("optimize", moment, delay_s)
    proc = start("optimize", str(src), "--out", str(out), *OPTIONS)
    ledger = lambda: next(iter(out.glob("*/ledger.db")), out / "none")  # noqa: E731
    if _wait(lambda: _reached(ledger(), moment), proc) and proc.poll() is None:
        time.sleep(delay_s)
    if proc.poll() is None:
        _kill(proc, record, lambda: ledger_state(out), str(folder))
    else:
        proc.communicate()
        record.missed = True
    run_dir = ledger().parent
    for attempt in range(1, 4):
        done = run("optimize", "--resume", str(run_dir), "--out", str(out), "--quiet")
        record.resumes = attempt
        if done.returncode == 0:
            break
        record.resume_error = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
    else:
        return record
    if ledger_state(out) != "done":
        record.resume_error = f"the resumed run ended in state {ledger_state(out)}"
        return record
    record.resume_error = "" if record.resumes == 1 else record.resume_error
    record.outcome = outcome(run_dir)
    return record


SWEEP_MOMENTS = ("sweep start",) + STATES + ("target done",)


def kill_sweep(folder: Path, moment: str, delay_s: float, busy: str | None = None) -> Kill:
    """A sweep of the program, kill -9 at `moment` (its target's run entering a state, the sweep's
    start, or its target's run done: the sweep's own closing work) plus `delay_s` (or, with `busy`,
    once the sweep is busy with that: "build" or "program"), then `sweep --resume` to the end."""
    src = _copy_program(folder)
    manifest = folder / "sweep.toml"
    manifest.write_text(f'[defaults]\n{MANIFEST_OPTIONS}\n[[target]]\nsource = "{src}"\n')
    out = folder / "runs"
    record = Kill("sweep", moment, delay_s)
    proc = start("sweep", str(manifest), "--backend", "host", "--budget", "30m", "--out", str(out))

    def run_ledger() -> Path:
        return next(iter(out.glob("sweep-*/runs/*/*/ledger.db")), out / "none")

    waits = {"sweep start": lambda: next(iter(out.glob("sweep-*/sweep.db")), None) is not None,
             "target done": lambda: _reached(run_ledger(), "done")}
    if _wait(waits.get(moment, lambda: _reached(run_ledger(), moment)), proc) and proc.poll() is None:
        if busy is None:
            time.sleep(delay_s)
        else:
            _wait(lambda: doing(proc.pid) == busy, proc)
    if proc.poll() is None:
        _kill(proc, record, lambda: ledger_state(run_ledger().parent.parent), str(folder))
    else:
        proc.communicate()
        record.missed = True
    sweeps = list(out.glob("sweep-*/sweep.db"))
    if not sweeps:  # killed before the sweep made its folder: nothing to resume; run it again
        done = run("sweep", str(manifest), "--backend", "host", "--budget", "30m", "--out", str(out))
        sweeps = list(out.glob("sweep-*/sweep.db"))
    for attempt in range(1, 4):
        done = run("sweep", "--resume", str(sweeps[0].parent))
        record.resumes = attempt
        if done.returncode == 0:
            break
        record.resume_error = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
    else:
        return record
    record.resume_error = ""
    runs = [p.parent for p in sweeps[0].parent.glob("runs/*/*/ledger.db")]
    record.runs = len(runs)
    if runs and ledger_state(runs[0].parent) == "done":
        record.outcome = outcome(runs[0])
    else:
        record.resume_error = f"the target's run ended in state {ledger_state(runs[0].parent) if runs else 'none'}"
    return record


# ---- apply ---------------------------------------------------------------------------------------

@dataclass
class ApplyKill:
    delay_s: float
    after_kill: str  # "original", "final" or "mixed"
    after_apply: str  # what the next apply left
    exit_code: int | None  # the killed apply's (None: it was killed)
    strays: int  # temporary files a killed write left beside the user's file


def kill_apply(run_dir: Path, user_file: Path, original: bytes, final: bytes, delay_s: float) -> ApplyKill:
    """`apply` of a finished run, kill -9 after `delay_s`, then `apply` again."""
    user_file.write_bytes(original)
    for stale in user_file.parent.glob(f"{user_file.name}.*.orig"):
        stale.unlink()
    proc = start("apply", str(run_dir))
    try:
        proc.wait(timeout=delay_s)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)  # the apply this case started
        proc.wait()
        code = None
    proc.communicate()
    after_kill = _which(user_file.read_bytes(), original, final)
    again = run("apply", str(run_dir))
    after = _which(user_file.read_bytes(), original, final) if again.returncode == 0 else f"exit {again.returncode}"
    strays = len(list(user_file.parent.glob(f".{user_file.name}*.tmp-*")))
    return ApplyKill(delay_s, after_kill, after, code, strays)


def _which(data: bytes, original: bytes, final: bytes) -> str:
    return "original" if data == original else "final" if data == final else "mixed"
