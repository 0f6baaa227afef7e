"""A task's own directory, the only place its worker writes besides its run directory:

    tasks/<id>-<kind>-<target>/task.json      what to do (written by the sweep before submission)
                               progress.json  where the worker is: node, device, job id, stage,
                                              candidate, accepted so far, its run directory
                               result.json    how it ended (written once, at the end)
                               worker.log     the worker's output (local executor)

The sweep reads progress.json and result.json and records what they say in its ledger; the
worker never opens the sweep ledger. All three JSON files are replaced whole (atomic_file), so a
reader never sees half a file, on a local disk or on the shared file system of a cluster.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from rocm_perf.atomic_file import write_atomic
from rocm_perf.sweep.ledger import TaskRow

TASKS_DIR = "tasks"
SPEC, PROGRESS, RESULT, WORKER_LOG = "task.json", "progress.json", "result.json", "worker.log"

# Result statuses a worker reports.
OK, FAILED, STOPPED, ERROR = "ok", "failed", "stopped", "error"

# Where a process learns which GPU it may use: set by the local executor, or by Slurm for a job
# with GPUs. ROCr reads ROCR_VISIBLE_DEVICES first and HIP then numbers what is left (ROCm docs,
# "ROCm environment variables", GPU isolation).
DEVICE_VARIABLES = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "SLURM_JOB_GPUS")


def task_dir(sweep_dir: Path, task: TaskRow) -> Path:
    return Path(sweep_dir) / TASKS_DIR / f"{task.id:04d}-{task.kind}-{task.target}"


def write_spec(directory: Path, spec: dict[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / SPEC, json.dumps(spec, indent=1))


def read_spec(directory: Path) -> dict[str, Any]:
    return json.loads((Path(directory) / SPEC).read_text(encoding="utf-8"))


def read_json(path: Path) -> dict[str, Any] | None:
    """The file's object; None when it is missing or unreadable (being replaced on a slow file system)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_progress(directory: Path) -> dict[str, Any]:
    return read_json(Path(directory) / PROGRESS) or {}


def read_result(directory: Path) -> dict[str, Any] | None:
    return read_json(Path(directory) / RESULT)


def write_result(directory: Path, result: dict[str, Any]) -> None:
    write_atomic(Path(directory) / RESULT, json.dumps(result, indent=1, default=str))


def visible_device() -> str:
    """The device this process was given, as `VARIABLE=value`; "" when nothing restricts it."""
    for name in DEVICE_VARIABLES:
        if os.environ.get(name):
            return f"{name}={os.environ[name]}"
    return ""


def job_id_here() -> str:
    """This process's Slurm job id (`123_4` for an array task), "" outside Slurm."""
    array, index = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if array and index:
        return f"{array}_{index}"
    return os.environ.get("SLURM_JOB_ID", "")


class ProgressFile:
    """progress.json of one task: who runs it (written at once), then stage and counts as they change.

    Rewrites are spaced by `min_interval_s` except for the first and the last, so a busy loop
    does not hammer a shared file system."""

    def __init__(self, directory: Path, *, min_interval_s: float = 1.0):
        self.path = Path(directory) / PROGRESS
        self.min_interval_s = min_interval_s
        self.state: dict[str, Any] = {"pid": os.getpid(), "node": socket.gethostname(), "device": visible_device(),
                                      "device_env": {v: os.environ[v] for v in DEVICE_VARIABLES if v in os.environ},
                                      "job_id": job_id_here(), "started": time.time()}
        self._written = 0.0
        self.flush()

    def update(self, fields: dict[str, Any]) -> None:
        self.state.update(fields)
        if time.monotonic() - self._written >= self.min_interval_s:
            self.flush()

    def flush(self) -> None:
        self._written = time.monotonic()
        try:
            write_atomic(self.path, json.dumps(self.state, default=str), durable=False)
        except OSError:
            pass  # progress is a courtesy: the result file is what counts
