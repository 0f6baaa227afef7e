"""The slurm executor: each batch of tasks is one Slurm job array, submitted through submitit.

Every task is `rocm_perf.sweep.worker.run_task(TASK_DIR)` in a job of the array, with the user's
environment (`--export=ALL`) and working directory (`--chdir`), the partition and account asked
for, a time limit from the task's share of the budget, one GPU per task (`--gpus-per-task=1`, or
`--gres` as given) and whatever other sbatch options the user passes through. submitit's folder
is <sweep>/slurm/: the batch scripts, the pickled calls, each job's logs and result pickle.

How the sweep tells where a job is (no accounting storage is needed, so `sacct`, which submitit's
own job.state asks, is never used):
  - finished: the worker's result.json in its task directory (or submitit's result pickle, for
    an error before our code ran);
  - live: `squeue -r` lists it (queued: PENDING and the like; else running);
  - neither, for GRACE_S: it left the queue without a result (failed, killed, preempted and not
    requeued): the reason is read from the job's log.
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path
from typing import Any

from rocm_perf.backends import slurm_cluster
from rocm_perf.backends.slurm_cluster import SlurmUnreachable
from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep.executor import (ENDED, QUEUED, RUNNING, UNKNOWN, Executor, JobState, Submission, Submitted,
                                      log_tail, reason_from_log)
from rocm_perf.sweep.ledger import TaskRow
from rocm_perf.sweep.task_files import STOPPED, read_progress, read_result

SUBMITIT_DIR = "slurm"
GRACE_S = 15.0  # a job gone from squeue gets this long for its result to show on a shared file system
_QUEUED_STATES = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}


class SlurmExecutor(Executor):
    name = "slurm"

    def __init__(self, sweep_dir: Path, *, partition: str | None = None, account: str | None = None,
                 gpus_per_task: int = 0, gres: str | None = None, cpus_per_task: int | None = None,
                 sbatch: list[str] | None = None, setup: list[str] | None = None, workers: int | None = None,
                 poll_s: float = 10.0):
        super().__init__()
        try:
            import submitit  # noqa: F401
        except ImportError as e:
            raise RocmPerfError(f"--executor slurm needs the submitit package ({e}); pip install submitit") from e
        missing = slurm_cluster.slurm_commands_found()
        if missing:
            raise RocmPerfError(f"--executor slurm: {missing} (is this a Slurm login node?)")
        self.folder = Path(sweep_dir).resolve() / SUBMITIT_DIR
        self.partition, self.account = partition, account
        self.gpus_per_task, self.gres, self.cpus_per_task = gpus_per_task, gres, cpus_per_task
        self.sbatch_options = sbatch_parameters(sbatch or [])
        self.setup = list(setup or [])
        self.workers = workers
        self.poll_s = poll_s
        self.missing_since: dict[int, float] = {}
        self.stopped: set[str] = set()  # jobs this process cancelled or signalled: their end is no failure
        self.unreachable = ""  # the last reason squeue did not answer, for the status

    def capacity(self) -> int | None:
        return self.workers

    def describe(self) -> str:
        where = ", ".join(x for x in (f"partition {self.partition}" if self.partition else "",
                                       f"account {self.account}" if self.account else "") if x)
        return "slurm" + (f" ({where})" if where else "")

    def parameters(self, batch: str, submissions: list[Submission]) -> dict[str, Any]:
        """submitit's SlurmExecutor parameters for one array."""
        params: dict[str, Any] = {
            "job_name": batch,
            "time": max(1, max(math.ceil(s.time_limit_s / 60) for s in submissions)),
            "array_parallelism": len(submissions),
            "wckey": None,  # submitit's default "submitit" is refused where wckeys are enforced
            "additional_parameters": {"chdir": os.getcwd(), "export": "ALL", **self.sbatch_options},
        }
        if self.partition:
            params["partition"] = self.partition
        if self.account:
            params["account"] = self.account
        if self.gres:
            params["gres"] = self.gres
        elif self.gpus_per_task:
            params["gpus_per_task"] = self.gpus_per_task
        if self.cpus_per_task:
            params["cpus_per_task"] = self.cpus_per_task
        if self.setup:
            params["setup"] = self.setup
        return params

    def submit(self, batch: str, submissions: list[Submission]) -> list[Submitted]:
        import submitit

        from rocm_perf.sweep.worker import run_task

        ex = submitit.SlurmExecutor(folder=self.folder, max_num_timeout=0)
        try:
            ex.update_parameters(**self.parameters(batch, submissions))
        except ValueError as e:
            raise RocmPerfError(f"slurm executor: bad sbatch parameters: {str(e).splitlines()[0]}") from e
        try:
            with ex.batch():
                jobs = [ex.submit(run_task, str(s.task.task_dir)) for s in submissions]
        except Exception as e:  # noqa: BLE001 - sbatch's own words, whatever submitit wraps them in
            said = [line for line in str(e).splitlines() if "error" in line.lower()] or str(e).splitlines() or [""]
            raise RocmPerfError(f"sbatch refused the tasks: {said[-1].strip()[:300]}") from e
        return [Submitted(job.job_id) for job in jobs]

    def states(self, tasks: list[TaskRow]) -> dict[int, JobState]:
        try:
            queue = slurm_cluster.queue()
            self.unreachable = ""
        except SlurmUnreachable as e:
            queue, self.unreachable = None, str(e)
        out = {}
        for t in tasks:
            result = read_result(Path(t.task_dir))
            if result is not None:
                out[t.id] = JobState(ENDED, node=result.get("node", ""), result=result)
                continue
            if queue is None or not t.job_id:
                out[t.id] = JobState(UNKNOWN)
                continue
            job = queue.get(t.job_id)
            if job is not None:
                self.missing_since.pop(t.id, None)
                out[t.id] = JobState(QUEUED if job.state in _QUEUED_STATES else RUNNING, node=job.node)
                continue
            out[t.id] = self._left_the_queue(t)
        return out

    def _left_the_queue(self, t: TaskRow) -> JobState:
        outcome, value = _submitit_result(self.folder, t.job_id)
        if outcome == "success" and isinstance(value, dict):
            return JobState(ENDED, node=value.get("node", ""), result=value)
        if t.job_id in self.stopped:
            return JobState(ENDED, result={"status": STOPPED, "reason": "cancelled by the sweep"})
        if outcome == "error":
            return JobState(ENDED, reason=reason_from_log(str(value), "the job raised an error"))
        first = self.missing_since.setdefault(t.id, time.monotonic())
        if time.monotonic() - first < GRACE_S:
            return JobState(UNKNOWN)
        paths = _job_paths(self.folder, t.job_id)
        text = log_tail(paths.stdout) + "\n" + log_tail(paths.stderr)
        return JobState(ENDED, reason=reason_from_log(text, f"job {t.job_id} left the queue without a result "
                                                            f"(no log at {paths.stderr})"))

    def progress(self, task: TaskRow) -> dict[str, Any]:
        return read_progress(Path(task.task_dir))

    def stop(self, tasks: list[TaskRow]) -> None:
        ids = [t.job_id for t in tasks if t.job_id]
        if not ids:
            return
        try:
            queue = slurm_cluster.queue()
            queued = [i for i in ids if i in queue and queue[i].state in _QUEUED_STATES]
            running = [i for i in ids if i in queue and i not in queued]
            slurm_cluster.cancel(queued)
            slurm_cluster.cancel(running, signal="TERM")  # the worker finishes its round, records, exits
        except SlurmUnreachable as e:
            raise RocmPerfError(f"slurm executor: cannot stop jobs {', '.join(ids)}: {e}") from e
        self.stopped.update(ids)

    def find(self, task: TaskRow) -> str | None:
        """A task a killed sweep was submitting: the job id its worker wrote, or its array found by
        name in the queue or in submitit's folder; None when the submission never happened."""
        said = read_progress(Path(task.task_dir)).get("job_id")
        if said:
            return str(said)
        name, index, count = parse_batch(task.batch)
        if not name:
            return None
        try:
            for job in slurm_cluster.queue().values():
                if job.name == name:
                    return _member(job.job_id.split("_")[0], index, count)
        except SlurmUnreachable:
            pass
        for script in sorted(self.folder.glob("*_submission.sh")):
            try:
                if f"--job-name={name}\n" in script.read_text(encoding="utf-8", errors="replace"):
                    return _member(script.name.split("_")[0], index, count)
            except OSError:
                continue
        return None


def batch_name(prefix: str, first_task: int) -> str:
    return f"{prefix}-{first_task}"


def batch_label(name: str, index: int, count: int) -> str:
    """What the ledger keeps of a task's place in its array: `name:index/count`."""
    return f"{name}:{index}/{count}"


def parse_batch(label: str) -> tuple[str, int, int]:
    m = re.fullmatch(r"(.+):(\d+)/(\d+)", label or "")
    return (m.group(1), int(m.group(2)), int(m.group(3))) if m else ("", 0, 0)


def _member(array_id: str, index: int, count: int) -> str:
    # submitit submits a batch of one as a plain job, a larger one as an array
    return array_id if count == 1 else f"{array_id}_{index}"


def sbatch_parameters(options: list[str]) -> dict[str, Any]:
    """Extra sbatch options (`--qos=high`, `--exclusive`, `--constraint=mi300x`) as submitit's
    additional_parameters; short forms are refused (they cannot be told from their values)."""
    params: dict[str, Any] = {}
    for option in options:
        m = re.fullmatch(r"--([A-Za-z][A-Za-z0-9-]*)(?:=(.*))?", option.strip())
        if not m:
            raise RocmPerfError(f"sbatch option {option!r}: give it in its long form, e.g. --qos=high or --exclusive")
        params[m.group(1)] = True if m.group(2) is None else m.group(2)
    return params


def _job_paths(folder: Path, job_id: str):
    from submitit.core.utils import JobPaths

    return JobPaths(folder, job_id=job_id, task_id=0)


def _submitit_result(folder: Path, job_id: str) -> tuple[str, Any]:
    """submitit's ("success", value) or ("error", traceback) for a job, ("", None) when it wrote none."""
    path = _job_paths(folder, job_id).result_pickle
    if not path.exists():
        return "", None
    try:
        from submitit.core.utils import pickle_load

        outcome, value = pickle_load(path)
        return str(outcome), value
    except Exception:  # noqa: BLE001 - a half-written or foreign pickle says nothing usable
        return "", None
