"""The sweep itself: one process driving one sweep directory until its work or its budget is
done (or forever, watching). Read `Sweep.run` and `_work` top to bottom; the parts live beside
this file (schedule, run_target, retry, watch, daemon, status).

Each pass of the work loop: stop if asked or out of budget; triage the targets not yet seen
(build, one profiled run, the critical path); optimize the first target of the queue in its
share of the budget; record its result. With nothing left, a plain sweep finishes and a
watching one idles, then rescans its targets for new and changed sources.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from rocm_perf.durations import duration
from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep import daemon
from rocm_perf.sweep.display import Display, PlainDisplay
from rocm_perf.sweep.ledger import DONE, FAILED, PENDING, QUARANTINED, RUNNING, SweepLedger, TargetRow
from rocm_perf.sweep.retry import StopRequested, with_retries
from rocm_perf.sweep.run_target import optimize_options, optimize_target, run_elapsed, triage_target
from rocm_perf.sweep.schedule import MIN_SHARE_S, SweepSettings, budget_left, pending, queue, share_s
from rocm_perf.sweep.status import Current, StatusReporter, snapshot, write_status_file
from rocm_perf.sweep.targets import SweepTarget
from rocm_perf.sweep.watch import SourceHashes, scan_targets

ReportWriter = Callable[[Path], None]  # writes the report files of a run or sweep directory

log = logging.getLogger("rocm_perf.sweep")


class Sweep:
    """One process driving one sweep directory until its work or budget is done (or forever, watching).

    `triage` and `optimize` run one target (run_target.py describes them); `write_run_report`
    and `write_sweep_report` write the reports (the report layer's, handed in by the CLI).
    """

    def __init__(self, sweep_dir: Path, settings: SweepSettings, *, triage=triage_target, optimize=optimize_target,
                 display: Display | None = None, write_run_report: ReportWriter | None = None,
                 write_sweep_report: ReportWriter | None = None):
        self.dir = Path(sweep_dir)
        self.settings = settings
        self.triage = triage
        self.optimize = optimize
        self.write_run_report = write_run_report
        self.write_sweep_report = write_sweep_report
        self.display = display or PlainDisplay()
        self.current = Current()
        self.stop_event = threading.Event()
        self.stop_signal = ""
        self.loop = None  # the running OptimizeLoop, to pass a stop request on
        self.reporter: StatusReporter | None = None  # its reporter: accepted changes of the running target, live
        self.lock = daemon.SweepLock(self.dir)
        self.ledger: SweepLedger | None = None
        self.session = 0
        self._status_lock = threading.Lock()
        self._hashes = SourceHashes()
        self._queue_order: dict[str, int] = {}

    # ---- life cycle --------------------------------------------------------------------------

    def run(self) -> int:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        handler = daemon.start_log(self.dir)
        previous = daemon.catch_stop_signals(self.request_stop)
        heartbeat = None
        how = "error"  # what the session record says if anything below raises
        try:
            self.ledger = SweepLedger(self.dir, create=True)
            self.ledger.set("settings", self.settings.to_json())
            self.session = self.ledger.start_session()
            log.info("sweep %s: session %d (pid %d), budget %s", self.dir, self.session, os.getpid(),
                     duration(self.settings.budget_s) if self.settings.budget_s else "none")
            heartbeat = daemon.Heartbeat(self.dir, self.session, self.stop_event, self._beat)
            heartbeat.start()
            self.scan_targets()
            how = self._work()
        finally:
            self.stop_event.set()
            if heartbeat is not None:
                heartbeat.join()
            if self.ledger is not None:
                self.ledger.end_session(self.session, how)
                self.current.state = how
                self.write_status()
                if self.write_sweep_report is not None:
                    self.write_sweep_report(self.dir)
                self.ledger.close()
            daemon.restore_signals(previous)
            self.display.close()
            log.info("sweep %s: %s", self.dir, how)
            daemon.stop_log(handler)
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
            ready = self.queue()
            if ready:
                self._optimize(ready[0])
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
        scan_targets(self.ledger, self.settings.target_args, self._hashes)

    def _pending(self) -> list[TargetRow]:
        return pending(self.ledger.targets())

    def queue(self) -> list[TargetRow]:
        return queue(self.ledger.targets())

    def budget_left(self) -> float | None:
        return budget_left(self.settings, self.ledger.used_s())

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
        """fn() with bounded retries; None when the target failed or was quarantined (retry.py)."""
        return with_retries(self.ledger, row, fn, self.settings, self.stop_event)

    # ---- optimizing one target ---------------------------------------------------------------

    def _optimize(self, row: TargetRow) -> None:
        target = SweepTarget.from_spec(row.spec)
        share = share_s(self.settings, self.budget_left(), len(self._pending()))
        out = self.dir / "runs" / row.name
        resume = Path(row.run_dir).name if row.run_dir else None
        prior = run_elapsed(Path(row.run_dir)) if row.run_dir else 0.0
        self.ledger.update_target(row.name, status=RUNNING)
        self.ledger.event(row.name, "resume" if resume else "start", f"budget {share:.0f} s")
        log.info("target %s: %s, %s of budget", row.name, "resuming" if resume else "optimizing", duration(share))
        self.current = Current(state="optimizing", target=row.name, stage="starting", run_dir=row.run_dir)
        self.refresh()
        reporter = StatusReporter(self)
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
                raise StopRequested() from e

        try:
            run_dir = self._attempt(row, run_once)
        except StopRequested:
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

    # ---- stop, heartbeat, status --------------------------------------------------------------

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

    def _beat(self, ledger: SweepLedger) -> None:
        """Every heartbeat (its own thread and ledger connection): status.json; stop when the budget is gone."""
        self.write_status(ledger)
        left = budget_left(self.settings, ledger.used_s())
        if left is not None and left <= 0 and self.loop is not None:
            self.request_stop("budget spent")

    def refresh(self) -> None:
        self.write_status()

    def status(self, ledger: SweepLedger | None = None) -> dict:
        ledger = ledger or self.ledger
        rows = ledger.targets()
        if ledger is self.ledger:  # the main thread knows the order; the heartbeat reuses its last one
            self._queue_order = {r.name: i for i, r in enumerate(queue(rows))}
        live = self.reporter.state.accepted if self.reporter is not None else 0
        return snapshot(self.dir, self.settings, self.current, rows, ledger.used_s(), self._queue_order, live,
                        daemon.HEARTBEAT_S)

    def write_status(self, ledger: SweepLedger | None = None) -> None:
        with self._status_lock:
            status = self.status(ledger)
            write_status_file(self.dir, status)
        self.display.update(status)

    # ---- the end -----------------------------------------------------------------------------

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
