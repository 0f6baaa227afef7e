"""The inline executor: one task at a time, in a thread of the sweep's own process, with the two
functions `run_target.py` describes (the seam tests and embedders replace). Its jobs die with the
process: a task that was open when an earlier sweep process ended is reported as stopped (the
target's run continues from its own ledger), never as the target's failure."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

from rocm_perf.sweep.executor import ENDED, RUNNING, Executor, JobState, Submission, Submitted
from rocm_perf.sweep.ledger import TaskRow
from rocm_perf.sweep.run_target import optimize_target, triage_target
from rocm_perf.sweep.task_files import STOPPED
from rocm_perf.sweep.worker import StopHandle, execute


class _Job:
    def __init__(self, submission: Submission):
        self.submission = submission
        self.handle = StopHandle()
        self.progress: dict[str, Any] = {"pid": os.getpid(), "node": socket.gethostname(), "device": "",
                                         "started": time.time()}
        self.result: dict[str, Any] | None = None
        self.thread: threading.Thread | None = None


class InlineExecutor(Executor):
    name = "inline"
    poll_s = 0.5

    def __init__(self, triage=triage_target, optimize=optimize_target):
        super().__init__()
        self.triage = triage
        self.optimize = optimize
        self.jobs: dict[str, _Job] = {}
        self.prefix = f"inline-{os.getpid()}-"

    def capacity(self) -> int | None:
        return 1

    def submit(self, batch: str, submissions: list[Submission]) -> list[Submitted]:
        out = []
        for s in submissions:
            job_id = f"{self.prefix}{s.task.id}"
            job = _Job(s)
            self.jobs[job_id] = job
            job.thread = threading.Thread(target=self._run, args=(job,), name=f"task-{s.task.id}", daemon=True)
            job.thread.start()
            out.append(Submitted(job_id))
        return out

    def _run(self, job: _Job) -> None:
        try:
            job.result = execute(job.submission.spec, triage=self.triage, optimize=self.optimize,
                                 publish=job.progress.update, handle=job.handle)
        finally:
            self.wake.set()

    def states(self, tasks: list[TaskRow]) -> dict[int, JobState]:
        out = {}
        for t in tasks:
            job = self.jobs.get(t.job_id)
            if job is None:  # submitted by a sweep process that is gone, and its thread with it
                out[t.id] = JobState(ENDED, result={"status": STOPPED, "reason": "the sweep process running it ended"})
            elif job.result is None:
                out[t.id] = JobState(RUNNING, node=job.progress["node"])
            else:
                out[t.id] = JobState(ENDED, node=job.progress["node"], result=job.result)
        return out

    def progress(self, task: TaskRow) -> dict[str, Any]:
        job = self.jobs.get(task.job_id)
        return dict(job.progress) if job is not None else {}

    def stop(self, tasks: list[TaskRow]) -> None:
        for t in tasks:
            job = self.jobs.get(t.job_id)
            if job is not None:
                job.handle.request_stop()

    def close(self) -> None:
        for job in self.jobs.values():
            if job.thread is not None and job.thread.is_alive():
                job.handle.request_stop()
                job.thread.join(timeout=30)
