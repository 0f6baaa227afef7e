"""Overnight sweeps: many targets, one time budget, resumable, and a watch mode (the daemon).

    rocm-perf sweep kernels/ --budget 8h            # every .cu in kernels/, 8 hours in all
    rocm-perf sweep --resume runs/sweep-...          # after kill -9, a reboot, or Ctrl-C
    rocm-perf sweep kernels/ sweep.toml --watch      # keep running; re-optimize what changes
    rocm-perf status runs/sweep-...                  # what it is doing right now

A sweep directory holds sweep.db (the sweep ledger: targets, status, budget spent, events),
sweep.lock (one process per sweep directory), status.json (the heartbeat `status` reads),
sweep.log, triage/ (each target's first build and profile) and runs/<target>/<run>/ (each
target's `rocm-perf optimize` run with its own ledger).

Order of work: targets are triaged first (build, one profiled run, the critical path), then
optimized in order of expected value = baseline critical-path time x candidates left. Each
target gets an equal share of the budget left over the targets left, so time a target does not
use flows to the ones after it. A target that does not build is recorded as failed; one that
fails otherwise is retried (tenacity, bounded by --max-attempts over the sweep's whole life)
and then quarantined with its reason. The sweep goes on either way.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.durations import duration
from rocm_perf.sweep_ledger import (
    DONE, FAILED, FINISHED, PENDING, QUARANTINED, RUNNING, SWEEP_DB, SweepLedger, TargetRow,
)
from rocm_perf.sweep_targets import SweepTarget, discover_targets, source_hash

if TYPE_CHECKING:
    from rocm_perf.optimize.run_view import RunView

STATUS_FILE = "status.json"
LOCK_FILE = "sweep.lock"
LOG_FILE = "sweep.log"
HEARTBEAT_S = 5.0
ReportWriter = Callable[[Path], None]  # writes the report files of a run or sweep directory
MIN_SHARE_S = 30.0  # below this a target cannot even finish its baseline: the budget is spent

log = logging.getLogger("rocm_perf.sweep")


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", help=".cu files, directories of them, or TOML manifests")
    p.add_argument("--budget", default=None, help="total wall-clock budget, e.g. 90m, 8h, 1h30m (default: 8h; with --watch: none)")
    p.add_argument("--per-target-budget", default=None, metavar="DURATION", help="cap for any one target (default: the budget left shared over the targets left)")
    p.add_argument("--resume", metavar="SWEEP", help="continue this sweep directory inside its remaining budget")
    p.add_argument("--watch", action="store_true", help="keep running: re-optimize changed sources, pick up new targets")
    p.add_argument("--poll", default="30s", metavar="DURATION", help="with --watch: how often to look for changes (default: 30s)")
    p.add_argument("--max-attempts", type=int, default=3, help="tries of a failing target before it is quarantined (default: 3)")
    p.add_argument("--max-trials", type=int, default=None, help="candidates per target (default: optimize's own)")
    p.add_argument("--out", default="runs", help="output root for a new sweep (default: runs/)")


def parse_budget(text: str, what: str = "--budget") -> float:
    """'8h', '90m', '1h30m', '45s', '3600' -> seconds."""
    import re

    t = str(text).strip().lower()
    if re.fullmatch(r"[0-9]*\.?[0-9]+", t):
        seconds = float(t)
    else:
        parts = re.findall(r"([0-9]*\.?[0-9]+)\s*([hms])", t)
        if not parts or re.sub(r"[0-9.\shms]", "", t) or "".join(n + u for n, u in parts) != t.replace(" ", ""):
            raise RocmPerfError(f"{what} {text!r}: expected a duration like 45m, 8h or 1h30m")
        seconds = sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    if seconds <= 0:
        raise RocmPerfError(f"{what} {text!r}: must be positive")
    return seconds


@dataclass
class SweepSettings:
    """How a sweep runs (stored in sweep.db so that --resume runs it the same way)."""

    target_args: list[str]
    budget_s: float | None  # None: no limit (a watching daemon without --budget)
    per_target_s: float | None = None
    watch: bool = False
    poll_s: float = 30.0
    backend: str = "auto"
    max_attempts: int = 3
    max_trials: int | None = None
    retry_wait_s: tuple[float, float] = (2.0, 60.0)

    def to_json(self) -> dict:
        return {"target_args": self.target_args, "budget_s": self.budget_s, "per_target_s": self.per_target_s,
                "watch": self.watch, "poll_s": self.poll_s, "backend": self.backend, "max_attempts": self.max_attempts,
                "max_trials": self.max_trials, "retry_wait_s": list(self.retry_wait_s)}

    @classmethod
    def from_json(cls, d: dict) -> "SweepSettings":
        return cls(list(d["target_args"]), d.get("budget_s"), d.get("per_target_s"), bool(d.get("watch")),
                   float(d.get("poll_s", 30.0)), d.get("backend", "auto"), int(d.get("max_attempts", 3)),
                   d.get("max_trials"), tuple(d.get("retry_wait_s", (2.0, 60.0))))


# ---- one process per sweep directory -------------------------------------------------------------

class SweepLock:
    """An exclusive flock on sweep.lock; the kernel drops it when the holder dies (even by kill -9)."""

    def __init__(self, sweep_dir: Path):
        self.path = Path(sweep_dir) / LOCK_FILE
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RocmPerfError(
                f"{self.path.parent}: another rocm-perf sweep (pid {holder}) is running in this sweep directory; "
                f"`rocm-perf status {self.path.parent}` shows what it is doing", exit_code=3)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


# ---- what runs a target: triage and optimize (replaceable in tests) ----------------------------------

@dataclass
class Triage:
    """A target's first look: does it build and run, how long is its critical path, how much to try."""

    baseline_ns: float
    candidates: int
    note: str = ""


class TargetFailed(Exception):
    """A target failed in a way retrying cannot fix (it does not build): record it, go on."""


def triage_target(target: SweepTarget, work_dir: Path, backend_name: str) -> Triage:
    """Build once, profile once, weigh the critical path; count the loops a rewrite could touch."""
    from rocm_perf.analysis.critical_path import analyze_critical_path
    from rocm_perf.backends.select import select_backend
    from rocm_perf.optimize.measure import program_argv
    from rocm_perf.trace.load import load_trace

    opts = target.options
    flags = list(opts.get("cflags", []))
    timeout = float(opts.get("timeout", 300.0))
    backend = select_backend(backend_name)
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        program = backend.build(target.source, work_dir / "build", flags, timeout=timeout)
    except RocmPerfError as e:
        raise TargetFailed(f"does not build: {str(e).splitlines()[0][:300]}") from e
    argv = program_argv(program.executable, list(opts.get("args", [])), opts.get("run"))
    result = backend.profile(argv, work_dir / "profile", timeout=timeout, cwd=target.source.parent)
    if result.timed_out:
        raise RocmPerfError(f"{target.source}: the program timed out after {timeout:.0f} s")
    if result.returncode != 0:
        tail = (result.stderr or "").strip().splitlines()[-1:] or [""]
        raise RocmPerfError(f"{target.source}: the program exits with {result.returncode} {tail[0][:200]}".rstrip())
    if not result.databases:
        raise RocmPerfError(f"{target.source}: the profiler wrote no database")
    cp = analyze_critical_path(load_trace(result.databases[0]))
    return Triage(baseline_ns=float(cp.critical_path_ns), candidates=_count_loops(target, flags))


def _count_loops(target: SweepTarget, flags: list[str]) -> int:
    """Loops in the source's kernels: the candidates still to try, before any run has tried one."""
    from rocm_perf.source import analyze_source

    analysis = analyze_source(target.source, flags)
    return max(1, len(analysis.loops))


def optimize_options(target: SweepTarget, *, out: Path, budget_s: float, backend: str, resume: str | None,
                     max_trials: int | None):
    """The OptimizeOptions of one target's run, from its manifest options."""
    from rocm_perf.optimize.options import OptimizeOptions, parse_duration, parse_fraction

    o = target.options
    kw: dict[str, Any] = dict(
        source=target.source, program_args=list(o.get("args", [])), backend=backend, run=o.get("run"),
        kernels=list(o.get("kernels", [])), rules=list(o.get("rules", [])),
        rules_dir=Path(o["rules_dir"]) if o.get("rules_dir") else None, factors=list(o.get("factors", [])),
        time_budget_s=budget_s, cflags=list(o.get("cflags", [])), out=out, resume=resume, quiet=True,
    )
    if "budget" in o:
        kw["time_budget_s"] = min(budget_s, parse_duration(o["budget"]))
    if "min_gain" in o:
        kw["min_gain"] = parse_fraction(o["min_gain"], f"{target.name}: min_gain")
    if "confidence" in o:
        kw["confidence"] = parse_fraction(o["confidence"], f"{target.name}: confidence")
    for key in ("rounds", "max_rounds", "aa_rounds", "arch", "compile_check", "timing_lines", "allow_lower_occupancy"):
        if key in o:
            kw[key] = o[key]
    if "timeout" in o:
        kw["timeout_s"] = float(o["timeout"])
    if "max_trials" in o or max_trials is not None:
        kw["max_trials"] = int(o.get("max_trials", max_trials))
    return OptimizeOptions(**kw)


def optimize_target(options, reporter, on_loop: Callable[[Any], None]) -> Path:
    """Run (or resume) the closed loop for one target; returns its run directory.

    A thin adapter over rocm_perf.optimize.command's pieces (its `run_optimize` takes argparse
    arguments, prints, and owns the signals; a sweep needs none of that). It resumes the
    unfinished run of the same source and options under `options.out` when there is one, so a
    run a killed sweep left behind is continued, never started twice. `on_loop` receives the
    loop as soon as it exists, so that a stop request reaches it between rounds.
    """
    from dataclasses import replace

    from rocm_perf.backends.select import select_backend
    from rocm_perf.optimize import command as oc
    from rocm_perf.optimize.ledger import open_ledger
    from rocm_perf.optimize.loop import OptimizeLoop, Services, SourceTools
    from rocm_perf.optimize.measure import ProfiledRounds

    if options.resume:
        existing = oc.find_run(options.out, options.resume)
    else:
        existing = oc.unfinished_run_for(options.out, options.fingerprint())
        if existing is not None and _run_source_sha(existing) != source_hash(Path(options.source)):
            existing = None  # an unfinished run of an older version of the source: start afresh
    if existing is not None:
        run_dir = existing
        ledger = open_ledger(run_dir)
        opt = replace(oc.recorded_options(ledger, options), time_budget_s=options.time_budget_s)
        backend = select_backend(ledger.get("backend"))
    else:
        backend = select_backend(options.backend)
        opt = options
        run_dir, ledger = oc.create_run(opt, backend.name, backend.describe(), sys.argv)
        oc.write_run_metadata(run_dir, opt, backend)
    lock = oc.RunLock(run_dir)
    try:
        runner = ProfiledRounds(backend, program_args=opt.program_args, run_template=opt.run, timeout_s=opt.timeout_s,
                                cwd=Path(ledger.get("cwd") or "."), timing_lines=opt.timing_lines)
        services = Services(backend=backend, runner=runner, tools=SourceTools.default(),
                            compile_check=oc.compile_checker(opt.compile_check), reporter=reporter)
        loop = OptimizeLoop(run_dir, ledger, opt, services)
        on_loop(loop)
        loop.run()
        return run_dir
    finally:
        lock.release()
        ledger.close()


# ---- the sweep ---------------------------------------------------------------------------------

@dataclass
class Current:
    """What the sweep is doing right now (for status.json and the progress display)."""

    state: str = "starting"  # starting, triage, optimizing, idle, stopping, stopped, finished, budget spent
    target: str = ""
    stage: str = ""
    candidate: str = ""
    rounds: str = ""
    last_verdict: str = ""
    run_dir: str = ""
    notes: list[str] = field(default_factory=list)


def _sweep_reporter_class():
    """A Reporter for the optimize loop that feeds the sweep's status instead of the terminal."""
    from rocm_perf.optimize.progress import Reporter

    class SweepReporter(Reporter):
        def __init__(self, sweep: "Sweep"):
            super().__init__()
            self.sweep = sweep

        def update(self) -> None:
            s = self.state
            cur = self.sweep.current
            cur.stage, cur.candidate = s.stage, s.candidate
            cur.rounds = f"{s.rounds}/{s.max_rounds}" if s.max_rounds else ""
            cur.last_verdict = s.last
            self.sweep.refresh()

        def verdict(self, label: str, text: str, accepted: bool) -> None:
            super().verdict(label, text, accepted)
            log.info("%s: %s: %s", self.sweep.current.target, label, text)

        def message(self, text: str) -> None:
            log.info("%s: %s", self.sweep.current.target, text)

    return SweepReporter


class Sweep:
    """One process driving one sweep directory until its work or budget is done (or forever, watching)."""

    def __init__(self, sweep_dir: Path, settings: SweepSettings, *, triage=triage_target, optimize=optimize_target,
                 display: "Display | None" = None, write_run_report: ReportWriter | None = None,
                 write_sweep_report: ReportWriter | None = None):
        self.dir = Path(sweep_dir)
        self.settings = settings
        self.triage = triage
        self.optimize = optimize
        # The reports are the report layer's: the caller (the CLI) hands in what writes them.
        self.write_run_report = write_run_report
        self.write_sweep_report = write_sweep_report
        self.display = display or PlainDisplay()
        self.current = Current()
        self.stop_event = threading.Event()
        self.stop_signal = ""
        self.loop = None  # the running OptimizeLoop, to pass a stop request on
        self.reporter = None  # its reporter: accepted changes of the running target, live
        self.lock = SweepLock(self.dir)
        self.ledger: SweepLedger | None = None
        self.session = 0
        self._status_lock = threading.Lock()
        self._hashes: dict[Path, tuple[tuple[int, int], str]] = {}
        self._queue_order: dict[str, int] = {}

    # ---- life cycle --------------------------------------------------------------------------

    def run(self) -> int:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        handler = self._log_to_file()
        previous = self._install_signal_handlers()
        heartbeat = threading.Thread(target=self._heartbeat, name="sweep-heartbeat", daemon=True)
        how = "error"  # what the session record says if anything below raises
        try:
            self.ledger = SweepLedger(self.dir, create=True)
            self.ledger.set("settings", self.settings.to_json())
            self.session = self.ledger.start_session()
            log.info("sweep %s: session %d (pid %d), budget %s", self.dir, self.session, os.getpid(),
                     duration(self.settings.budget_s) if self.settings.budget_s else "none")
            heartbeat.start()
            self.scan_targets()
            how = self._work()
        finally:
            self.stop_event.set()
            if heartbeat.is_alive():
                heartbeat.join(timeout=HEARTBEAT_S * 2)
            if self.ledger is not None:
                self.ledger.end_session(self.session, how)
                self.current.state = how
                self.write_status()
                self._write_reports()
                self.ledger.close()
            self._restore_signal_handlers(previous)
            self.display.close()
            log.info("sweep %s: %s", self.dir, how)
            logging.getLogger("rocm_perf.sweep").removeHandler(handler)
            handler.close()
            self.lock.release()
        print(self.summary_text(how))
        return 0

    def _work(self) -> str:
        while True:
            if self.stop_event.is_set():
                return "budget spent" if self.stop_signal == "budget spent" else "stopped"
            if self.budget_left() is not None and self.budget_left() < MIN_SHARE_S:
                if self._pending():
                    log.info("budget spent with %d targets left", len(self._pending()))
                return "budget spent"
            self._triage_pending()
            if self.stop_event.is_set():
                return "stopped"
            queue = self.queue()
            if queue:
                self._optimize(queue[0])
                continue
            if not self.settings.watch:
                return "finished"
            self.current = Current(state="idle")
            self.refresh()
            if self.stop_event.wait(self.settings.poll_s):
                return "stopped"
            try:
                self.scan_targets()
            except RocmPerfError as e:  # a watched folder or manifest changing under us: try again next poll
                log.warning("rescanning targets: %s", e)

    # ---- targets -----------------------------------------------------------------------------

    def scan_targets(self) -> None:
        """Add new targets; put finished targets whose source changed back in the queue (a new run)."""
        targets = discover_targets([Path(a) for a in self.settings.target_args])
        for t in targets:
            try:
                sha = self._hash(t.source)
            except RocmPerfError as e:  # deleted or unreadable since it was listed: skip it this time
                log.warning("target %s: %s", t.name, e)
                continue
            row = self.ledger.target_by_identity(t.identity())
            if row is None:
                row = self.ledger.add_target(t.identity(), t.name, t.spec(), sha)
                log.info("target %s: added (%s)", row.name, t.source)
            elif row.source_sha256 != sha and row.status in FINISHED:
                self.ledger.update_target(row.name, status=PENDING, source_sha256=sha, attempts=0, reason="",
                                          run_dir="", generation=row.generation + 1, expected_value=0.0,
                                          baseline_ns=None, final_ns=None, accepted=0, rejected=0)
                self.ledger.event(row.name, "changed", f"source sha256 {sha[:12]}: optimizing again")
                log.info("target %s: source changed, optimizing again", row.name)

    def _hash(self, path: Path) -> str:
        """The source's sha256, re-read only when its size or mtime moved (idling stays cheap)."""
        try:
            st = path.stat()
        except OSError as e:
            raise RocmPerfError(f"{path}: cannot read the target source ({e.strerror or e})") from e
        key = (st.st_mtime_ns, st.st_size)
        cached = self._hashes.get(path)
        if cached is None or cached[0] != key:
            cached = (key, source_hash(path))
            self._hashes[path] = cached
        return cached[1]

    def _pending(self) -> list[TargetRow]:
        return [r for r in self.ledger.targets() if r.status in (PENDING, RUNNING)]

    def queue(self) -> list[TargetRow]:
        """Targets left, in order: an interrupted one first (it resumes), then by expected value."""
        rows = [r for r in self._pending() if r.status == RUNNING or r.baseline_ns is not None]
        return sorted(rows, key=lambda r: (r.status != RUNNING, -r.expected_value, r.id))

    def _triage_pending(self) -> None:
        for row in self.ledger.targets(PENDING):
            if row.baseline_ns is not None:
                continue
            if self.stop_event.is_set() or (self.budget_left() is not None and self.budget_left() < MIN_SHARE_S):
                return
            self.current = Current(state="triage", target=row.name, stage="build and one profiled run")
            self.refresh()
            target = SweepTarget.from_spec(row.spec)
            outcome = self._attempt(row, lambda: self.triage(target, self.dir / "triage" / row.name, self.settings.backend))
            if outcome is None:
                continue
            self.ledger.update_target(row.name, baseline_ns=outcome.baseline_ns,
                                      expected_value=outcome.baseline_ns * outcome.candidates)
            self.ledger.event(row.name, "triaged", f"critical path {outcome.baseline_ns / 1e3:.1f} us, "
                                                   f"{outcome.candidates} loops")
            log.info("target %s: critical path %.1f us, %d loops", row.name, outcome.baseline_ns / 1e3, outcome.candidates)

    def _attempt(self, row: TargetRow, fn: Callable[[], Any]) -> Any:
        """fn() with bounded retries (tenacity); None when the target failed or was quarantined."""
        import tenacity

        # `attempts` counts failed attempts: a kill -9 in the middle of one is not the target's fault.
        left = self.settings.max_attempts - row.attempts
        if left <= 0:
            self._quarantine(row.name, row.reason or "kept failing")
            return None
        counter = {"n": row.attempts}

        def attempt():
            try:
                return fn()
            except (TargetFailed, _Stop):
                raise
            except Exception as e:
                if self.stop_event.is_set():
                    raise _Stop() from e
                counter["n"] += 1
                self.ledger.update_target(row.name, attempts=counter["n"], reason=_reason(e))
                raise

        def before_sleep(state: tenacity.RetryCallState) -> None:
            reason = _reason(state.outcome.exception())
            self.ledger.event(row.name, "retry", f"attempt {counter['n']}: {reason}")
            log.warning("target %s: attempt %d failed (%s); retrying in %.0f s", row.name, counter["n"], reason,
                        state.next_action.sleep if state.next_action else 0)

        lo, hi = self.settings.retry_wait_s
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(left),
            wait=tenacity.wait_exponential(multiplier=lo, min=lo, max=hi),
            retry=tenacity.retry_if_exception(_retryable) & tenacity.retry_if_exception(lambda e: not self.stop_event.is_set()),
            before_sleep=before_sleep,
            sleep=self._sleep,
            reraise=True,
        )
        try:
            return retrying(attempt)
        except TargetFailed as e:
            self.ledger.update_target(row.name, status=FAILED, reason=str(e))
            self.ledger.event(row.name, "failed", str(e))
            log.error("target %s: failed: %s", row.name, e)
        except _Stop:
            raise
        except Exception as e:  # noqa: BLE001 - one target's failure, whatever it is, must not end the sweep
            if self.stop_event.is_set():
                raise _Stop() from e
            reason = _reason(e)
            if not isinstance(e, RocmPerfError):
                log.error("target %s: internal error\n%s", row.name, "".join(traceback.format_exception(e)))
            self._quarantine(row.name, reason)
        return None

    def _quarantine(self, name: str, reason: str) -> None:
        self.ledger.update_target(name, status=QUARANTINED, reason=reason)
        self.ledger.event(name, "quarantined", reason)
        log.error("target %s: quarantined after %d failed attempts: %s", name, self.ledger.target(name).attempts, reason)

    def _sleep(self, seconds: float) -> None:
        if self.stop_event.wait(seconds):
            raise _Stop()

    # ---- optimizing one target ---------------------------------------------------------------

    def share_s(self, row: TargetRow) -> float:
        """This target's time: the budget left shared over the targets left (capped per target)."""
        left = self.budget_left()
        n = max(1, len(self._pending()))
        share = float("inf") if left is None else left / n
        if self.settings.per_target_s:
            share = min(share, self.settings.per_target_s)
        if share == float("inf"):
            share = 3600.0  # a watching daemon with no budget: optimize's default hour per target
        return share

    def _optimize(self, row: TargetRow) -> None:
        target = SweepTarget.from_spec(row.spec)
        share = self.share_s(row)
        out = self.dir / "runs" / row.name
        resume = Path(row.run_dir).name if row.run_dir else None
        prior = _run_elapsed(Path(row.run_dir)) if row.run_dir else 0.0
        self.ledger.update_target(row.name, status=RUNNING)
        self.ledger.event(row.name, "resume" if resume else "start", f"budget {share:.0f} s")
        log.info("target %s: %s, %s of budget", row.name, "resuming" if resume else "optimizing", duration(share))
        self.current = Current(state="optimizing", target=row.name, stage="starting", run_dir=row.run_dir)
        self.refresh()
        reporter = _sweep_reporter_class()(self)
        self.reporter = reporter
        started = time.monotonic()

        def on_loop(loop) -> None:
            self.loop = loop
            run_dir = str(loop.run_dir)
            self.current.run_dir = run_dir
            if run_dir != row.run_dir:
                self.ledger.update_target(row.name, run_dir=run_dir)
            if self.stop_event.is_set():
                loop.request_stop()

        def run_once() -> Path:
            from rocm_perf.optimize.loop import Stopped

            current = self.ledger.target(row.name)
            options = optimize_options(target, out=out, budget_s=prior + share, backend=self.settings.backend,
                                       resume=Path(current.run_dir).name if current.run_dir else resume,
                                       max_trials=self.settings.max_trials)
            try:
                return self.optimize(options, reporter, on_loop)
            except Stopped as e:
                raise _Stop() from e

        try:
            run_dir = self._attempt(row, run_once)
        except _Stop:
            self.ledger.event(row.name, "stopped", f"{self.stop_signal or 'stop'}: the run is recorded; --resume continues it")
            log.info("target %s: stopped; --resume continues it", row.name)
            return
        finally:
            self.loop = None
            self.reporter = None
            used = self.ledger.target(row.name).used_s + (time.monotonic() - started)
            self.ledger.update_target(row.name, used_s=used)
        if run_dir is None:
            return
        self._record_result(row.name, Path(run_dir))

    def _record_result(self, name: str, run_dir: Path) -> None:
        from rocm_perf.optimize.run_view import load_run

        view = load_run(run_dir)
        if self.write_run_report is not None:
            self.write_run_report(run_dir)  # the run's own page, beside its report.md
        self.ledger.update_target(name, status=DONE, run_dir=str(run_dir), final_ns=view.final_ns,
                                  accepted=len(view.accepted), rejected=len(view.rejected), reason="",
                                  **({"baseline_ns": view.baseline_ns} if view.baseline_ns else {}))
        speed = f"{view.speedup:.3f}x" if view.speedup else "n/a"
        self.ledger.event(name, "done", f"{len(view.accepted)} accepted, {len(view.rejected)} rejected, speedup {speed}")
        log.info("target %s: done: %d accepted, %d rejected, speedup %s", name, len(view.accepted), len(view.rejected), speed)

    # ---- budget, stop, heartbeat --------------------------------------------------------------

    def budget_left(self) -> float | None:
        if self.settings.budget_s is None:
            return None
        return self.settings.budget_s - self.ledger.used_s()

    def request_stop(self, why: str) -> None:
        """Finish the current measurement round, record, stop (SIGTERM/SIGINT, budget)."""
        if not self.stop_event.is_set():
            log.info("stop requested (%s): finishing the current round", why)
        self.stop_signal = why
        self.stop_event.set()
        self.current.state = "stopping"
        loop = self.loop
        if loop is not None:
            loop.request_stop()

    def _install_signal_handlers(self) -> dict:
        previous = {}
        if threading.current_thread() is not threading.main_thread():
            return previous
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda signum, frame: self.request_stop(signal.Signals(signum).name))
        return previous

    @staticmethod
    def _restore_signal_handlers(previous: dict) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def _heartbeat(self) -> None:
        """Every few seconds: account the time spent, write status.json, stop when the budget is gone."""
        ledger = SweepLedger(self.dir)  # its own connection: sqlite connections stay in their thread
        try:
            while not self.stop_event.wait(HEARTBEAT_S):
                ledger.heartbeat(self.session)
                self.write_status(ledger)
                left = None if self.settings.budget_s is None else self.settings.budget_s - ledger.used_s()
                if left is not None and left <= 0 and self.loop is not None:
                    self.request_stop("budget spent")
        finally:
            ledger.heartbeat(self.session)
            ledger.close()

    def refresh(self) -> None:
        self.write_status()

    def status(self, ledger: SweepLedger | None = None) -> dict:
        ledger = ledger or self.ledger
        rows = ledger.targets()
        used = ledger.used_s()
        if ledger is self.ledger:  # the main thread knows the order; the heartbeat reuses its last one
            self._queue_order = {r.name: i for i, r in enumerate(self.queue())}
        order = self._queue_order
        queue = sorted((r for r in rows if r.status in (PENDING, RUNNING) and r.name != self.current.target),
                       key=lambda r: (order.get(r.name, len(order)), r.id))
        counts: dict[str, int] = {}
        for r in rows:
            counts[r.status] = counts.get(r.status, 0) + 1
        now = time.time()
        return {
            "sweep": str(self.dir), "pid": os.getpid(), "state": self.current.state, "watch": self.settings.watch,
            "heartbeat": now, "heartbeat_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            "heartbeat_interval_s": HEARTBEAT_S,
            "current": {"target": self.current.target, "stage": self.current.stage, "candidate": self.current.candidate,
                        "rounds": self.current.rounds, "last_verdict": self.current.last_verdict,
                        "run_dir": self.current.run_dir},
            "queue": [r.name for r in queue],
            "counts": counts,
            "accepted": sum(r.accepted for r in rows) + (self.reporter.state.accepted if self.reporter is not None else 0),
            "gains": [{"target": r.name, "speedup": r.baseline_ns / r.final_ns} for r in rows
                      if r.status == DONE and r.accepted and r.baseline_ns and r.final_ns],
            "budget_s": self.settings.budget_s, "used_s": used,
            "left_s": None if self.settings.budget_s is None else max(0.0, self.settings.budget_s - used),
            "targets": [{"name": r.name, "status": r.status, "reason": r.reason, "accepted": r.accepted,
                         "baseline_ns": r.baseline_ns, "final_ns": r.final_ns, "attempts": r.attempts}
                        for r in rows],
        }

    def write_status(self, ledger: SweepLedger | None = None) -> None:
        with self._status_lock:
            snapshot = self.status(ledger)
            _write_json(self.dir / STATUS_FILE, snapshot)
        self.display.update(snapshot)

    # ---- the end -----------------------------------------------------------------------------

    def _write_reports(self) -> None:
        if self.write_sweep_report is not None:
            self.write_sweep_report(self.dir)

    def summary_text(self, how: str) -> str:
        ledger = SweepLedger(self.dir)
        try:
            rows = ledger.targets()
            used = ledger.used_s()
        finally:
            ledger.close()
        counts: dict[str, int] = {}
        for r in rows:
            counts[r.status] = counts.get(r.status, 0) + 1
        lines = [f"sweep {self.dir}: {how}" + (f" ({self.stop_signal})" if self.stop_signal and how == "stopped" else "")
                 + f"; {duration(used)} used" + (f" of {duration(self.settings.budget_s)}" if self.settings.budget_s else "")]
        lines.append("  " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f"; {sum(r.accepted for r in rows)} accepted changes")
        for r in rows:
            if r.status == RUNNING:
                lines.append(f"  stopped in {r.name} (run {r.run_dir or 'not started'}): `rocm-perf sweep --resume {self.dir}` continues it")
            elif r.status in (FAILED, QUARANTINED):
                lines.append(f"  {r.status} {r.name}: {r.reason}")
        if self.write_sweep_report is not None:
            lines.append(f"  report: {self.dir / 'report.html'}")
        return "\n".join(lines)

    def _log_to_file(self) -> logging.Handler:
        handler = logging.FileHandler(self.dir / LOG_FILE, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger = logging.getLogger("rocm_perf.sweep")
        logger.setLevel(logging.INFO)
        logger.addHandler(handler)
        return handler


class _Stop(Exception):
    """Internal: a stop request reached the target's work."""


def _retryable(e: BaseException) -> bool:
    return not isinstance(e, (TargetFailed, _Stop))


def _reason(e: BaseException | None) -> str:
    if e is None:
        return ""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text if isinstance(e, RocmPerfError) else f"{type(e).__name__}: {text}"


def _run_elapsed(run_dir: Path) -> float:
    """Seconds an interrupted run has already spent (its ledger keeps them)."""
    from rocm_perf.optimize.ledger import LEDGER_NAME, Ledger

    if not (run_dir / LEDGER_NAME).exists():
        return 0.0
    ledger = Ledger(run_dir / LEDGER_NAME)
    try:
        return float(ledger.get("elapsed_s", 0.0) or 0.0)
    finally:
        ledger.close()


def _run_source_sha(run_dir: Path) -> str | None:
    from rocm_perf.optimize.ledger import open_ledger

    ledger = open_ledger(run_dir)
    try:
        return ledger.get("source_sha256")
    finally:
        ledger.close()


def _write_json(path: Path, doc: dict) -> None:
    write_atomic(path, json.dumps(doc, indent=1, default=str), durable=False)  # the heartbeat: rewritten often


def _gains_text(s: dict) -> str:
    gains = s.get("gains") or []
    return (" (" + ", ".join(f"{g['target']} {g['speedup']:.2f}x" for g in gains) + ")") if gains else ""


# ---- progress on the terminal --------------------------------------------------------------------

class PlainDisplay:
    """Not a terminal: a log line when the target, stage or counts change."""

    def __init__(self, stream=None):
        self.stream = stream
        self.last = None

    def update(self, s: dict) -> None:
        if self.stream is None:
            return
        cur = s["current"]
        key = (s["state"], cur["target"], cur["stage"], tuple(sorted(s["counts"].items())), s["accepted"])
        if key == self.last:
            return
        self.last = key
        left = "no limit" if s["left_s"] is None else duration(s["left_s"]) + " left"
        done = sum(n for st, n in s["counts"].items() if st in FINISHED)
        print(f"{time.strftime('%H:%M:%S')} [{s['state']}] {cur['target'] or '-'} {cur['stage']} | "
              f"{done} done, {len(s['queue'])} queued, {s['accepted']} accepted{_gains_text(s)} | {left}",
              file=self.stream, flush=True)

    def close(self) -> None:
        pass


class RichDisplay:
    """A terminal: a live panel with targets done/left, the current target and stage, gains, time left."""

    def __init__(self, console=None):
        from rich.console import Console
        from rich.live import Live

        self.live = Live(console=console or Console(), refresh_per_second=2, transient=False)
        self.live.start()
        self._lock = threading.Lock()

    def update(self, s: dict) -> None:
        from rich.table import Table

        cur = s["current"]
        done = sum(n for st, n in s["counts"].items() if st in FINISHED)
        t = Table.grid(padding=(0, 2))
        t.add_row("sweep", s["sweep"])
        t.add_row("targets", f"{done} done, {len(s['queue'])} left"
                  + "".join(f", {n} {st}" for st, n in s["counts"].items() if st in (FAILED, QUARANTINED)))
        t.add_row("now", f"[{s['state']}] {cur['target'] or '-'}: {cur['stage']}")
        if cur["candidate"]:
            t.add_row("candidate", f"{cur['candidate']} {cur['rounds']}")
        if cur["last_verdict"]:
            t.add_row("last", cur["last_verdict"])
        t.add_row("accepted", str(s["accepted"]) + _gains_text(s))
        t.add_row("time left", "no limit" if s["left_s"] is None else duration(s["left_s"]))
        with self._lock:
            self.live.update(t)

    def close(self) -> None:
        self.live.stop()


Display = PlainDisplay | RichDisplay


# ---- reading a sweep (report, status) ------------------------------------------------------------

@dataclass
class SweepRow:
    """One target of a sweep: its status and, once it ran, its run."""

    target: str
    status: str  # pending, running, done, failed, quarantined
    reason: str = ""
    run: RunView | None = None
    attempts: int = 0


@dataclass
class SweepView:
    name: str
    path: Path
    budget_s: float | None = None
    used_s: float | None = None
    state: str = ""
    rows: list[SweepRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def runs(self) -> list[RunView]:
        return [r.run for r in self.rows if r.run is not None]



def load_sweep_view(sweep_dir: Path) -> SweepView:
    """The sweep's report record: its targets with their runs (read-only)."""
    from rocm_perf.optimize.run_view import load_run

    ledger = SweepLedger(sweep_dir)
    try:
        settings = ledger.get("settings", {}) or {}
        sessions = ledger.sessions()
        view = SweepView(name=Path(sweep_dir).name, path=Path(sweep_dir), budget_s=settings.get("budget_s"),
                         used_s=ledger.used_s(), state=sessions[-1][5] if sessions and sessions[-1][5] else "running or killed")
        for r in ledger.targets():
            run = load_run(Path(r.run_dir)) if r.run_dir and (Path(r.run_dir) / "ledger.db").exists() else None
            view.rows.append(SweepRow(target=r.name, status=r.status, reason=r.reason, run=run, attempts=r.attempts))
        return view
    finally:
        ledger.close()


def lock_held(sweep_dir: Path) -> bool:
    """Whether a live process holds the sweep's lock (the kernel drops it the moment the holder dies)."""
    path = Path(sweep_dir) / LOCK_FILE
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's own lock, if it got one
    return False


def read_status(sweep_dir: Path) -> dict:
    """status.json plus whether its writer is alive (its pid exists and the heartbeat is fresh)."""
    sweep_dir = Path(sweep_dir)
    path = sweep_dir / STATUS_FILE
    if not (sweep_dir / SWEEP_DB).exists():
        raise RocmPerfError(f"{sweep_dir}: not a sweep directory (no {SWEEP_DB})")
    if not path.exists():
        raise RocmPerfError(f"{sweep_dir}: no {STATUS_FILE} yet (the sweep has not written a heartbeat)")
    try:
        status = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise RocmPerfError(f"{path}: unreadable status file ({e})") from e
    age = time.time() - float(status.get("heartbeat", 0))
    status["heartbeat_age_s"] = age
    status["alive"] = lock_held(sweep_dir)
    status["stale"] = age > 3 * float(status.get("heartbeat_interval_s", HEARTBEAT_S)) + 5
    return status


def status_text(s: dict) -> str:
    cur = s["current"]
    if s["alive"] and s.get("stale"):
        head = (f"sweep {s['sweep']}: {s['state']}, but no heartbeat for {duration(s['heartbeat_age_s'])} "
                f"(pid {s['pid']} holds the lock: stuck?)")
    elif s["alive"]:
        head = f"sweep {s['sweep']}: {s['state']} (pid {s['pid']}, heartbeat {s['heartbeat_age_s']:.0f} s ago)"
    elif s["state"] in ("finished", "stopped", "budget spent"):
        head = f"sweep {s['sweep']}: {s['state']} at {s['heartbeat_utc']}"
    else:
        head = (f"sweep {s['sweep']}: NOT RUNNING (last heartbeat {duration(s['heartbeat_age_s'])} ago, pid {s['pid']} "
                f"gone); `rocm-perf sweep --resume {s['sweep']}` continues it")
    lines = [head]
    if cur.get("target"):
        lines.append(f"  current: {cur['target']}: {cur['stage']}" + (f"; {cur['candidate']} {cur['rounds']}" if cur.get("candidate") else ""))
    lines.append(f"  queue: {', '.join(s['queue']) if s['queue'] else '(empty)'}")
    lines.append("  targets: " + ", ".join(f"{n} {st}" for st, n in sorted(s["counts"].items())))
    lines.append(f"  accepted so far: {s['accepted']}{_gains_text(s)}")
    lines.append("  budget: " + ("no limit" if s["budget_s"] is None else f"{duration(s['left_s'])} left of {duration(s['budget_s'])}"))
    return "\n".join(lines)


def run_status(sweep_dir: Path, *, as_json: bool = False) -> int:
    """`rocm-perf status SWEEP`."""
    s = read_status(sweep_dir)
    print(json.dumps(s, indent=2, default=str) if as_json else status_text(s))
    return 0


# ---- the command -----------------------------------------------------------------------------------

def new_sweep_dir(out_root: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out_root / f"sweep-{stamp}"
    k = 2
    while path.exists():
        path = out_root / f"sweep-{stamp}-{k}"
        k += 1
    return path


def settings_from_args(args: argparse.Namespace, stored: dict | None) -> SweepSettings:
    """New settings from the command line; on --resume the stored ones, with what the line overrides."""
    if stored:
        s = SweepSettings.from_json(stored)
        s.target_args += [str(Path(t).resolve()) for t in args.targets if str(Path(t).resolve()) not in s.target_args]
    else:
        if not args.targets:
            raise RocmPerfError("sweep: name targets (.cu files, directories, TOML manifests) or --resume SWEEP")
        s = SweepSettings(target_args=[str(Path(t).resolve()) for t in args.targets], budget_s=None)
        s.budget_s = None if args.watch and args.budget is None else parse_budget(args.budget or "8h")
    if stored and args.budget is not None:
        s.budget_s = parse_budget(args.budget)
    if args.per_target_budget is not None:
        s.per_target_s = parse_budget(args.per_target_budget, "--per-target-budget")
    if args.watch:
        s.watch = True
    s.poll_s = parse_budget(args.poll, "--poll")
    if args.max_attempts < 1:
        raise RocmPerfError(f"--max-attempts {args.max_attempts}: must be at least 1")
    s.max_attempts = args.max_attempts if not stored or args.max_attempts != 3 else s.max_attempts
    if args.max_trials is not None:
        s.max_trials = args.max_trials
    if getattr(args, "backend", None) and (not stored or args.backend != "auto"):
        s.backend = args.backend
    return s


def run_sweep(args: argparse.Namespace, *, write_run_report: ReportWriter | None = None,
              write_sweep_report: ReportWriter | None = None) -> int:
    """`rocm-perf sweep TARGETS... [--budget 8h] [--per-target-budget D] [--resume SWEEP] [--watch]`.

    The writers of each run's and the sweep's report come from the caller (the report layer)."""
    if args.resume:
        sweep_dir = Path(args.resume)
        if not sweep_dir.is_dir():
            sweep_dir = Path(args.out) / args.resume
        if not (sweep_dir / SWEEP_DB).exists():
            raise RocmPerfError(f"{args.resume}: not a sweep directory (no {SWEEP_DB}; looked in . and {args.out})")
        ledger = SweepLedger(sweep_dir)
        stored = ledger.get("settings")
        ledger.close()
    else:
        sweep_dir, stored = new_sweep_dir(Path(args.out)), None
    settings = settings_from_args(args, stored)
    if not discover_targets([Path(a) for a in settings.target_args]) and not settings.watch:
        raise RocmPerfError(f"{' '.join(settings.target_args)}: no .cu/.hip sources found")  # checked before any directory is made
    display: Display = RichDisplay() if sys.stdout.isatty() else PlainDisplay(sys.stdout)
    print(f"sweep directory: {sweep_dir}", flush=True)
    return Sweep(sweep_dir, settings, display=display, write_run_report=write_run_report,
                 write_sweep_report=write_sweep_report).run()
