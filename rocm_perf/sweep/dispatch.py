"""The sweep's tasks between its ledger and an executor: submit, record every step, read how each ended.

The ledger is the one record and the sweep process its one writer: a task is written (state
`submitting`) before the executor is asked, then gets its job id, its start (node, device) and
its end (state, reason, the worker's result). What a task's end means for its target is decided
here: a triage gives the target's baseline, an optimize run its result; a target that cannot
build fails; a stopped task is continued later; any other failure (an error, a job that left
without a result) costs the target an attempt: it is retried after tenacity's wait, or
quarantined with the reason once its attempts are spent (retry.py).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rocm_perf.durations import duration
from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep import task_files
from rocm_perf.sweep.executor import ENDED, RUNNING, UNKNOWN, Executor, JobState, Submission
from rocm_perf.sweep.ledger import RUNNING as RUNNING_TARGET
from rocm_perf.sweep.ledger import (FAILED, OPTIMIZE, STARTED, SUBMITTED, SUBMITTING, TASK_CANCELLED, TASK_DONE,
                                    TASK_FAILED, TASK_STOPPED, TRIAGE, SweepLedger, TargetRow, TaskRow)
from rocm_perf.sweep.retry import next_try_after, quarantine
from rocm_perf.sweep.schedule import SweepSettings

log = logging.getLogger("rocm_perf.sweep")

MAX_SUBMIT_FAILURES = 3  # in a row: then the sweep ends with sbatch's (or the executor's) message


@dataclass
class Work:
    """A target's next task: its triage, or its optimize run with a share of the budget."""

    row: TargetRow
    kind: str
    budget_s: float = 0.0
    deadline: float | None = None  # epoch seconds when the sweep's budget ends


class Dispatcher:
    """The open tasks of one sweep process, and what their ends do to their targets."""

    def __init__(self, sweep_dir: Path, ledger: SweepLedger, settings: SweepSettings, executor: Executor,
                 record_result: Callable[[str, Path], None]):
        self.dir = Path(sweep_dir).resolve()
        self.ledger = ledger
        self.settings = settings
        self.executor = executor
        self.record_result = record_result
        self.open: dict[int, TaskRow] = {}
        self.progress: dict[int, dict[str, Any]] = {}
        self.retry_at: dict[str, float] = {}  # target -> time.monotonic() of its next try
        self.stop_sent: set[int] = set()
        self.submit_failures = 0
        self.disk_full = ""  # why a task stopped on a full disk: the sweep stops too (loop.py)
        self.prefix = "rp-" + hashlib.sha1(str(self.dir).encode()).hexdigest()[:6]

    # ---- what is running ------------------------------------------------------------------------

    def busy(self) -> set[str]:
        return {t.target for t in self.open.values()}

    def open_tasks(self, kind: str | None = None) -> list[TaskRow]:
        return [t for t in self.open.values() if kind is None or t.kind == kind]

    def ready(self, name: str) -> bool:
        return self.retry_at.get(name, 0.0) <= time.monotonic()

    def next_retry_in(self, names: set[str]) -> float | None:
        """Seconds until the first of these targets may be tried again (None: none is waiting)."""
        waits = [at - time.monotonic() for n, at in self.retry_at.items() if n in names]
        return max(0.0, min(waits)) if waits else None

    # ---- an earlier sweep process's tasks ---------------------------------------------------------

    def reconcile(self) -> None:
        """Take over the tasks an earlier sweep process left open: find the job of one it was
        submitting, wait for the live ones, record the ones that ended meanwhile (collect)."""
        for task in self.ledger.tasks(open_only=True):
            if task.executor != self.executor.name:
                if task.executor == "inline":  # it ran inside the process that is gone
                    self._close(task, TASK_STOPPED, "the sweep process running it ended")
                    continue
                raise RocmPerfError(f"{self.dir}: task {task.id} ({task.kind} of {task.target}) is {task.executor} job "
                                    f"{task.job_id or '(id unknown)'}, still open; resume with --executor {task.executor}")
            if task.state == SUBMITTING:
                job = self.executor.find(task)
                if job is None:
                    self._close(task, TASK_CANCELLED, "never submitted: the sweep stopped while submitting it")
                    continue
                self.ledger.update_task(task.id, job_id=job, state=SUBMITTED, submitted=time.time())
                task = self.ledger.task(task.id)
            self.open[task.id] = task
            self.ledger.event(task.target, "adopted", f"{task.kind} task {task.id}: job {task.job_id} of an earlier session")
            log.info("target %s: %s task %d (job %s) from an earlier session: waiting for it", task.target, task.kind,
                     task.id, task.job_id)

    def _close(self, task: TaskRow, state: str, reason: str) -> None:
        self.ledger.update_task(task.id, state=state, ended=time.time(), reason=reason)
        self.ledger.event(task.target, state, f"{task.kind} task {task.id}: {reason}")

    # ---- submitting -------------------------------------------------------------------------------

    def submit(self, work: list[Work]) -> None:
        """Record the tasks, write their specs, submit them as one batch (a job array)."""
        if not work:
            return
        tasks, name = [], ""
        with self.ledger.transaction():  # all recorded before any is submitted
            for i, w in enumerate(work):
                t = self.ledger.add_task(w.row.name, w.kind, w.row.generation, self.executor.name,
                                         budget_s=w.budget_s or None)
                name = name or f"{self.prefix}-{t.id}"  # the batch (job array) is named after its first task
                self.ledger.update_task(t.id, batch=f"{name}:{i}/{len(work)}",
                                        task_dir=str(task_files.task_dir(self.dir, t)))
                tasks.append(self.ledger.task(t.id))
        submissions = []
        for t, w in zip(tasks, work):
            spec = self._spec(t, w)
            task_files.write_spec(Path(t.task_dir), spec)
            submissions.append(Submission(t, spec, _time_limit_s(w)))
        try:
            submitted = self.executor.submit(name, submissions)
        except RocmPerfError as e:
            self._submission_failed(tasks, e)
            return
        self.submit_failures = 0
        now = time.time()
        for t, w, s in zip(tasks, work, submitted):
            self.ledger.update_task(t.id, job_id=s.job_id, state=SUBMITTED, submitted=now, device=s.device)
            self.open[t.id] = self.ledger.task(t.id)
            what = f"{t.kind} task {t.id}: job {s.job_id}" + (f" on {s.device}" if s.device else "")
            if t.kind == OPTIMIZE:
                self.ledger.update_target(t.target, status=RUNNING_TARGET)
                what += f", budget {w.budget_s:.0f} s" + (" (resuming its run)" if w.row.run_dir else "")
                log.info("target %s: %s, %s of budget", t.target, "resuming" if w.row.run_dir else "optimizing",
                         duration(w.budget_s))
            self.ledger.event(t.target, "submitted", what)
            log.info("target %s: %s", t.target, what)

    def _submission_failed(self, tasks: list[TaskRow], e: RocmPerfError) -> None:
        self.submit_failures += 1
        for t in tasks:
            self._close(t, TASK_CANCELLED, f"not submitted: {e}")
            self.retry_at[t.target] = time.monotonic() + 10.0 * self.submit_failures
        log.error("submitting %d task(s) failed (%d in a row): %s", len(tasks), self.submit_failures, e)
        if self.submit_failures >= MAX_SUBMIT_FAILURES:
            raise RocmPerfError(f"{self.executor.name} executor: {MAX_SUBMIT_FAILURES} submissions failed in a row; "
                                f"the last: {e}")

    def _spec(self, t: TaskRow, w: Work) -> dict[str, Any]:
        target = w.row.spec
        if self.settings.warp_size and "warp_size" not in target.get("options", {}):  # --warp-size: the default
            target = {**target, "options": {**target.get("options", {}), "warp_size": self.settings.warp_size}}
        spec: dict[str, Any] = {"task": t.id, "kind": t.kind, "target": target, "backend": self.settings.backend,
                                "sweep": str(self.dir)}
        if t.kind == TRIAGE:
            spec["work_dir"] = str(self.dir / "triage" / w.row.name)
        else:
            spec.update(out=str(self.dir / "runs" / w.row.name), run_dir=w.row.run_dir or None, budget_s=w.budget_s,
                        deadline=w.deadline, max_trials=self.settings.max_trials)
        return spec

    # ---- reading their progress and their ends -----------------------------------------------------

    def collect(self) -> None:
        """Ask the executor about every open task: record starts, run directories and ends."""
        if not self.open:
            return
        states = self.executor.states(list(self.open.values()))
        for tid, task in list(self.open.items()):
            js = states.get(tid, JobState(UNKNOWN))
            progress = self.executor.progress(task)
            self.progress[tid] = progress
            if task.state != STARTED and (progress.get("started") or js.state in (RUNNING, ENDED)):
                task = self._started(task, js, progress)
            if task.kind == OPTIMIZE and progress.get("run_dir"):
                row = self.ledger.target(task.target)
                if row.run_dir != progress["run_dir"]:
                    self.ledger.update_target(task.target, run_dir=progress["run_dir"])
            if js.state == ENDED:
                self._ended(task, js)

    def _started(self, task: TaskRow, js: JobState, progress: dict[str, Any]) -> TaskRow:
        node = progress.get("node") or js.node or task.node
        device = task.device or device_label(progress.get("device", ""))
        started = progress.get("started") or time.time()
        self.ledger.update_task(task.id, state=STARTED, started=started, node=node, device=device)
        where = " ".join(x for x in (node, device) if x)
        self.ledger.event(task.target, "started", f"{task.kind} task {task.id} (job {task.job_id})"
                                                  + (f" on {where}" if where else ""))
        task = self.ledger.task(task.id)
        self.open[task.id] = task
        return task

    def _ended(self, task: TaskRow, js: JobState) -> None:
        result = js.result or {}
        status = result.get("status", "lost")
        reason = result.get("reason") or js.reason or ("" if status == task_files.OK else "ended without a result")
        now = time.time()
        if result.get("traceback"):
            log.error("target %s: internal error in %s task %d\n%s", task.target, task.kind, task.id, result["traceback"])
        state = {task_files.OK: TASK_DONE, task_files.STOPPED: TASK_STOPPED}.get(status, TASK_FAILED)
        self.ledger.update_task(task.id, state=state, ended=now, reason=reason, result=result,
                                node=result.get("node") or task.node or js.node)
        del self.open[task.id]
        self.stop_sent.discard(task.id)
        row = self.ledger.target(task.target)
        if task.started:
            self.ledger.update_target(row.name, used_s=row.used_s + max(0.0, now - task.started))
        if status == task_files.OK and task.kind == TRIAGE:
            baseline, loops = float(result["baseline_ns"]), int(result["candidates"])
            self.ledger.update_target(row.name, baseline_ns=baseline, expected_value=baseline * loops)
            self.ledger.event(row.name, "triaged", f"critical path {baseline / 1e3:.1f} us, {loops} loops")
            log.info("target %s: critical path %.1f us, %d loops", row.name, baseline / 1e3, loops)
        elif status == task_files.OK:
            self.record_result(row.name, Path(result["run_dir"]))
        elif status == task_files.FAILED:
            self.ledger.update_target(row.name, status=FAILED, reason=reason)
            self.ledger.event(row.name, "failed", reason)
            log.error("target %s: failed: %s", row.name, reason)
        elif status == task_files.STOPPED:
            if result.get("disk_full"):
                self.disk_full = reason
            self.ledger.event(row.name, "stopped", f"{task.kind}: {reason}; --resume continues it")
            log.info("target %s: %s stopped (%s); --resume continues it", row.name, task.kind, reason)
        else:
            self._failed_attempt(row, reason)

    def _failed_attempt(self, row: TargetRow, reason: str) -> None:
        attempts = row.attempts + 1
        self.ledger.update_target(row.name, attempts=attempts, reason=reason)
        wait = next_try_after(self.settings, attempts)
        if wait is None:
            quarantine(self.ledger, row.name, reason)
            return
        self.retry_at[row.name] = time.monotonic() + wait
        self.ledger.event(row.name, "retry", f"attempt {attempts}: {reason}")
        log.warning("target %s: attempt %d failed (%s); retrying in %.0f s", row.name, attempts, reason, wait)

    # ---- stopping ------------------------------------------------------------------------------------

    def stop_all(self) -> None:
        """Ask every open task to stop (once): running ones finish their round, queued ones are cancelled."""
        tasks = [t for t in self.open.values() if t.id not in self.stop_sent]
        if tasks:
            self.stop_sent.update(t.id for t in tasks)
            self.executor.stop(tasks)


def device_label(variable: str) -> str:
    """`ROCR_VISIBLE_DEVICES=3` (what a worker reports) -> `GPU 3`; "" stays ""."""
    name, _, value = (variable or "").partition("=")
    return f"GPU {value}" if value else ""


def _time_limit_s(w: Work) -> float:
    """What a task may take at most: triage builds and profiles once (each within the target's
    timeout); an optimize run its share, plus room to build, check and record (10%, at least 5 min)."""
    if w.kind == TRIAGE:
        return 2 * float(w.row.spec.get("options", {}).get("timeout", 300.0)) + 300.0
    return w.budget_s + max(300.0, 0.1 * w.budget_s)
