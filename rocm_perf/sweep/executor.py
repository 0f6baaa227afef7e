"""What runs a sweep's tasks: one interface, three executors (a file each).

    executor_inline.py  in the sweep's own process, one task at a time (the library default: the
                        seam `Sweep(triage=, optimize=)` that tests and embedders use)
    executor_local.py   worker processes on this machine, one per device (or --workers N on the
                        host backend), each seeing one GPU through ROCR_VISIBLE_DEVICES
    executor_slurm.py   tasks of Slurm job arrays, submitted through submitit

The sweep (dispatch.py) records every task in its ledger before it asks the executor to submit
it, polls `states` for what ended, reads `progress` for what the worker is doing, and asks
`stop` when it stops. An executor keeps no state the sweep could not rebuild from the ledger:
after a kill, a new sweep process hands it the open tasks and it finds their jobs again.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from rocm_perf.sweep.ledger import TaskRow

QUEUED, RUNNING, ENDED, UNKNOWN = "queued", "running", "ended", "unknown"


@dataclass
class JobState:
    """Where a task's job is. `ended` comes with the worker's result, or with None and the reason
    from the job's log when the job left without one (killed, preempted, out of memory)."""

    state: str  # queued | running | ended | unknown (the executor cannot tell right now)
    node: str = ""
    result: dict[str, Any] | None = None
    reason: str = ""


@dataclass
class Submission:
    """A task the sweep has recorded and wants run: its ledger row and its spec (task.json)."""

    task: TaskRow
    spec: dict[str, Any]
    time_limit_s: float  # what the task may take at most (a Slurm time limit)


@dataclass
class Submitted:
    job_id: str
    device: str = ""  # known at submission (local executor) or later from the worker's progress
    extra: dict[str, Any] = field(default_factory=dict)


class Executor(ABC):
    """Runs tasks; says where they are; stops them. `capacity` None means no limit of its own."""

    name: str = ""
    poll_s: float = 5.0

    def __init__(self) -> None:
        self.wake = threading.Event()  # set when something may have ended: the sweep looks at once

    @abstractmethod
    def capacity(self) -> int | None:
        """How many tasks may run at once (None: as many as there are; the scheduler decides)."""

    @abstractmethod
    def submit(self, batch: str, submissions: list[Submission]) -> list[Submitted]:
        """Start the tasks (as one job array where the executor has arrays), in order; raises
        RocmPerfError when nothing could be submitted."""

    @abstractmethod
    def states(self, tasks: list[TaskRow]) -> dict[int, JobState]:
        """The state of each task's job, by task id."""

    @abstractmethod
    def progress(self, task: TaskRow) -> dict[str, Any]:
        """What the task's worker last said about itself (task_files.ProgressFile), {} if nothing yet."""

    @abstractmethod
    def stop(self, tasks: list[TaskRow]) -> None:
        """Ask the tasks to stop: a running one finishes its measurement round and records it; one
        still queued is cancelled."""

    def find(self, task: TaskRow) -> str | None:
        """A task recorded as `submitting` by a sweep that was killed: its job id if the submission
        went through, else None (the sweep then submits it again)."""
        return None

    def describe(self) -> str:
        return self.name

    def close(self) -> None:
        pass


def reason_from_log(text: str, fallback: str) -> str:
    """One line for the ledger from a job's log: Slurm's own verdict (`*** JOB 12 ... CANCELLED ...
    DUE TO TIME LIMIT ***`), else the last error or exception line, else the last line, else
    `fallback`."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    for line in reversed(lines):
        if "***" in line and ("CANCELLED" in line or "DUE TO" in line):
            return line[:300]
    for line in reversed(lines):
        if any(word in line for word in ("Error", "error:", "Exception", "Killed", "killed", "Traceback")):
            return line[:300]
    return lines[-1][:300] if lines else fallback


def log_tail(path, limit: int = 64 * 1024) -> str:
    """The end of a log file ("" when there is none yet)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""
