"""The sweep itself: one process driving one sweep directory until its work or its budget is
done (or forever, watching). Read `Sweep.run` and `_work` top to bottom; the parts live beside
this file (schedule, dispatch, the executors, retry, watch, daemon, status).

Each pass of the work loop: record what the open tasks did (dispatch.collect); stop if asked or
out of budget; hand the executor as much work as it has room for: the triage of targets not yet
seen (build, one profiled run, the critical path), then, once every target is triaged, optimize
runs in order of expected value, each with its share of the budget. With nothing running and
nothing left, a plain sweep finishes and a watching one idles, then rescans its targets.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable

from rocm_perf.disk_space import is_out_of_space
from rocm_perf.durations import duration
from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep import daemon
from rocm_perf.sweep.dispatch import Dispatcher, Work
from rocm_perf.sweep.display import Display, PlainDisplay
from rocm_perf.sweep.executor import Executor
from rocm_perf.sweep.executor_inline import InlineExecutor
from rocm_perf.sweep.ledger import DONE, FAILED, OPTIMIZE, PENDING, QUARANTINED, RUNNING, TRIAGE, SweepLedger, TargetRow
from rocm_perf.sweep.retry import quarantine
from rocm_perf.sweep.run_target import optimize_target, triage_target
from rocm_perf.sweep.schedule import MIN_SHARE_S, SweepSettings, budget_left, pending, queue, share_s
from rocm_perf.sweep.status import Current, current_from_tasks, snapshot, write_status_file
from rocm_perf.sweep.watch import SourceHashes, scan_targets

ReportWriter = Callable[[Path], None]  # writes the report files of a run or sweep directory

log = logging.getLogger("rocm_perf.sweep")
DISK_FULL = "disk full"  # how a session ends when a task met a full disk


def _unless_disk_full(step: Callable[[], object], what: str) -> None:
    """A closing write of the sweep's files; on a full disk it is skipped (and said in the log):
    the ledger keeps what it last committed, and the error that stopped the sweep is what the user sees."""
    try:
        step()
    except (OSError, RocmPerfError) as e:
        if not is_out_of_space(e):
            raise
        log.warning("%s skipped: the disk is full (%s)", what, e)


class Sweep:
    """One process driving one sweep directory until its work or budget is done (or forever, watching).

    `executor` runs the tasks (executor.py); without one, the inline executor runs them in this
    process with `triage` and `optimize` (run_target.py describes them). `write_run_report` and
    `write_sweep_report` write the reports (the report layer's, handed in by the CLI).
    """

    def __init__(self, sweep_dir: Path, settings: SweepSettings, *, executor: Executor | None = None,
                 triage=triage_target, optimize=optimize_target, display: Display | None = None,
                 write_run_report: ReportWriter | None = None, write_sweep_report: ReportWriter | None = None):
        self.dir = Path(sweep_dir)
        self.settings = settings
        self.executor = executor if executor is not None else InlineExecutor(triage, optimize)
        self.write_run_report = write_run_report
        self.write_sweep_report = write_sweep_report
        self.display = display or PlainDisplay()
        self.current = Current()
        self.stop_event = threading.Event()
        self.stop_signal = ""
        self.stop_requests = 0
        self.lock = daemon.SweepLock(self.dir)
        self.ledger: SweepLedger | None = None
        self.dispatch: Dispatcher | None = None
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
            log.info("sweep %s: session %d (pid %d), budget %s, executor %s", self.dir, self.session, os.getpid(),
                     duration(self.settings.budget_s) if self.settings.budget_s else "none", self.executor.describe())
            self.dispatch = Dispatcher(self.dir, self.ledger, self.settings, self.executor, self._record_result)
            heartbeat = daemon.Heartbeat(self.dir, self.session, self.stop_event, self._beat)
            heartbeat.start()
            self.scan_targets()
            self.dispatch.reconcile()
            how = self._work()
        finally:
            self.stop_event.set()
            if heartbeat is not None:
                heartbeat.join()
            self.executor.close()
            if self.ledger is not None:
                _unless_disk_full(lambda: self.ledger.end_session(self.session, how), "recording the session's end")
                self.current = Current(state=how)
                self.write_status()
                if self.write_sweep_report is not None:
                    _unless_disk_full(lambda: self.write_sweep_report(self.dir), "writing the sweep's report")
                self.ledger.close()
            daemon.restore_signals(previous)
            self.display.close()
            log.info("sweep %s: %s", self.dir, how)
            daemon.stop_log(handler)
            self.lock.release()
        if how == DISK_FULL:
            raise RocmPerfError(f"{self.dir}: the disk is full ({self.dispatch.disk_full}); the sweep stopped with its "
                                f"ledger intact: free space, then `rocm-perf sweep --resume {self.dir}`")
        print(self.summary_text(how))
        return 0

    def _work(self) -> str:
        while True:
            self.executor.wake.clear()
            self.dispatch.collect()
            if self.dispatch.disk_full:  # every task after it would fail the same way: stop, resume later
                return self._wind_down(DISK_FULL)
            if self.stop_event.is_set():
                return self._wind_down("budget spent" if self.stop_signal == "budget spent" else "stopped")
            left = self.budget_left()
            if left is not None and (left <= 0 or (left < MIN_SHARE_S and not self.dispatch.open)):
                if self._pending():
                    log.info("budget spent with %d targets left", len(self._pending()))
                return self._wind_down("budget spent")
            if left is not None and left < MIN_SHARE_S:  # too little to start anything: let the running ones finish
                self.refresh()
                self.executor.wake.wait(self.executor.poll_s)
                continue
            started = self._start_work()
            if self.dispatch.open or started:
                self.refresh()
                self.executor.wake.wait(self.executor.poll_s)
                continue
            retry_in = self.dispatch.next_retry_in({r.name for r in self._pending()})
            if retry_in is not None:
                self.current = Current(state="waiting to retry")
                self.refresh()
                self.executor.wake.wait(min(retry_in, self.settings.poll_s) + 0.01)
                continue
            if not self.settings.watch:
                return "finished"
            self.current = Current(state="idle")
            self.refresh()
            if self.stop_event.wait(self.settings.poll_s):
                continue
            try:
                self.scan_targets()
            except RocmPerfError as e:  # a watched folder or manifest changing under us: try again next poll
                log.warning("rescanning targets: %s", e)

    def _wind_down(self, how: str) -> str:
        """Stop the open tasks (each records where it stopped) and wait for them; a second stop
        request leaves them to finish on their own (`--resume` finds them)."""
        try:
            self.dispatch.stop_all()
        except RocmPerfError as e:
            log.error("stopping tasks: %s", e)
        while self.dispatch.open:
            if self.stop_requests >= 2:
                log.info("second stop request: leaving %d task(s) to end on their own; --resume finds them",
                         len(self.dispatch.open))
                break
            self.current.state = "stopping"
            self.refresh()
            self.executor.wake.wait(self.executor.poll_s)
            self.executor.wake.clear()
            self.dispatch.collect()
        return how

    # ---- targets -----------------------------------------------------------------------------

    def scan_targets(self) -> None:
        scan_targets(self.ledger, self.settings.target_args, self._hashes)

    def _pending(self) -> list[TargetRow]:
        return pending(self.ledger.targets())

    def queue(self) -> list[TargetRow]:
        return queue(self.ledger.targets())

    def budget_left(self) -> float | None:
        return budget_left(self.settings, self.ledger.used_s())

    def _start_work(self) -> bool:
        """Submit what there is room for: triage first; optimize runs once every target is triaged
        (their order by expected value needs every baseline). True when something was submitted."""
        room = self.executor.capacity()
        free = None if room is None else room - len(self.dispatch.open)
        if free is not None and free <= 0:
            return False
        work: list[Work] = []
        busy = self.dispatch.busy()

        def startable(row: TargetRow) -> bool:
            if row.name in busy or not self.dispatch.ready(row.name):
                return False
            if row.attempts >= self.settings.max_attempts:  # spent in earlier sessions
                quarantine(self.ledger, row.name, row.reason or "kept failing")
                return False
            return free is None or len(work) < free

        for row in self.ledger.targets(PENDING):
            if row.baseline_ns is None and startable(row):
                work.append(Work(row, TRIAGE))
        if not any(r.baseline_ns is None for r in self.ledger.targets(PENDING)):
            left = self._pending()
            for row in self.queue():
                if startable(row):
                    share = share_s(self.settings, self.budget_left(), len(left), room)
                    left_s = self.budget_left()
                    work.append(Work(row, OPTIMIZE, share, None if left_s is None else time.time() + left_s))
        self.dispatch.submit(work)
        return bool(work)

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
        """Finish the current measurement rounds, record, stop (SIGTERM/SIGINT, budget)."""
        if not self.stop_event.is_set():
            log.info("stop requested (%s): finishing the current round", why)
        if why != "budget spent":  # a second request from the user leaves the tasks to end on their own
            self.stop_requests += 1
        self.stop_signal = self.stop_signal or why
        self.stop_event.set()
        self.current.state = "stopping"
        self.executor.wake.set()

    def _beat(self, ledger: SweepLedger) -> None:
        """Every heartbeat (its own thread and ledger connection): status.json; stop when the budget is gone."""
        self.write_status(ledger)
        left = budget_left(self.settings, ledger.used_s())
        if left is not None and left <= 0 and self.dispatch is not None and self.dispatch.open:
            self.request_stop("budget spent")

    def refresh(self) -> None:
        self.write_status()

    def status(self, ledger: SweepLedger | None = None) -> dict:
        ledger = ledger or self.ledger
        rows = ledger.targets()
        if ledger is self.ledger:  # the main thread knows the order; the heartbeat reuses its last one
            self._queue_order = {r.name: i for i, r in enumerate(queue(rows))}
        tasks = ledger.tasks(open_only=True)
        progress = dict(self.dispatch.progress) if self.dispatch is not None else {}
        if tasks and self.current.state not in ("stopping", "stopped"):
            self.current = current_from_tasks(tasks, progress)
        return snapshot(self.dir, self.settings, self.current, rows, ledger.used_s(), self._queue_order, tasks,
                        progress, daemon.HEARTBEAT_S, executor=self.executor.describe())

    def write_status(self, ledger: SweepLedger | None = None) -> None:
        with self._status_lock:
            status = self.status(ledger)
            _unless_disk_full(lambda: write_status_file(self.dir, status), "writing status.json")
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
