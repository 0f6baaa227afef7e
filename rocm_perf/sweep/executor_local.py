"""The local executor: worker processes on this machine, at most one per device.

Each worker is `python -m rocm_perf.sweep.worker TASK_DIR` with its own slot: on the rocm backend
a GPU, given by ROCR_VISIBLE_DEVICES=<id> with HIP_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL removed
(ROCr filters first and HIP numbers what is left: the worker's one device is HIP device 0; ROCm
docs, "ROCm environment variables"); on the host backend `--workers N` slots with no variable.

Workers run in their own session (a Ctrl-C on the terminal reaches the sweep, which stops them
in order) and get SIGHUP when the sweep process dies (Linux PR_SET_PDEATHSIG, set by the worker
itself): a killed sweep leaves no worker running on; each stops at once, its program with it
(process.py), and records that it stopped. Job ids are `local-<pid>`; a sweep resumed while an
old worker is still stopping waits for it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep.executor import ENDED, RUNNING, Executor, JobState, Submission, Submitted, log_tail, reason_from_log
from rocm_perf.sweep.ledger import TaskRow
from rocm_perf.sweep.task_files import WORKER_LOG, read_progress, read_result
from rocm_perf.sweep.worker import PARENT_VARIABLE
_DEVICE_VARIABLES_CLEARED = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")


@dataclass
class Slot:
    """Where one worker runs: its name in the ledger and status, and the variables it gets."""

    name: str  # "GPU 3", or "CPU worker 2" on the host backend
    env: dict[str, str | None] = field(default_factory=dict)  # None: remove the variable


def gpu_slots(devices: list[str]) -> list[Slot]:
    return [Slot(f"GPU {d}", {"ROCR_VISIBLE_DEVICES": d, **{v: None for v in _DEVICE_VARIABLES_CLEARED}})
            for d in devices]


def cpu_slots(workers: int) -> list[Slot]:
    return [Slot(f"CPU worker {i + 1}") for i in range(workers)]


class LocalExecutor(Executor):
    name = "local"
    poll_s = 1.0

    def __init__(self, slots: list[Slot]):
        super().__init__()
        if not slots:
            raise RocmPerfError("--executor local: no device to run on (give --devices or --workers)")
        self.slots = slots
        self.busy: dict[str, str] = {}  # slot name -> job id
        self.procs: dict[str, subprocess.Popen] = {}

    def capacity(self) -> int | None:
        return len(self.slots)

    def describe(self) -> str:
        return f"local ({', '.join(s.name for s in self.slots)})"

    def submit(self, batch: str, submissions: list[Submission]) -> list[Submitted]:
        out = []
        for s in submissions:
            slot = next((x for x in self.slots if x.name not in self.busy), None)
            if slot is None:
                raise RocmPerfError(f"local executor: no free slot for task {s.task.id} (all {len(self.slots)} busy)")
            out.append(self._start(s, slot))
        return out

    def _start(self, s: Submission, slot: Slot) -> Submitted:
        directory = Path(s.task.task_dir)
        env = {**os.environ, PARENT_VARIABLE: str(os.getpid())}
        for name, value in slot.env.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        with open(directory / WORKER_LOG, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "rocm_perf.sweep.worker", str(directory)], env=env,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        job_id = f"local-{proc.pid}"
        self.procs[job_id] = proc
        self.busy[slot.name] = job_id
        threading.Thread(target=self._reap, args=(proc,), name=f"reap-{proc.pid}", daemon=True).start()
        return Submitted(job_id, device=slot.name)

    def _reap(self, proc: subprocess.Popen) -> None:
        proc.wait()
        self.wake.set()

    def states(self, tasks: list[TaskRow]) -> dict[int, JobState]:
        out = {}
        for t in tasks:
            proc = self.procs.get(t.job_id)
            if proc is not None:
                code = proc.poll()
                alive = code is None
            else:  # a worker of an earlier sweep process (adopted on resume)
                code, alive = None, _is_worker(_pid(t.job_id), t.task_dir)
                if alive and t.device:
                    self.busy.setdefault(t.device, t.job_id)
            if alive:
                out[t.id] = JobState(RUNNING, node=socket.gethostname())
                continue
            self._free(t.job_id)
            result = read_result(Path(t.task_dir))
            why = f"the worker (pid {_pid(t.job_id)}) ended" + (f" with exit code {code}" if code is not None else "")
            out[t.id] = JobState(ENDED, node=socket.gethostname(), result=result,
                                 reason="" if result else reason_from_log(log_tail(Path(t.task_dir) / WORKER_LOG),
                                                                          why + " without a result"))
        return out

    def _free(self, job_id: str) -> None:
        for name, held in list(self.busy.items()):
            if held == job_id:
                del self.busy[name]

    def progress(self, task: TaskRow) -> dict[str, Any]:
        return read_progress(Path(task.task_dir))

    def stop(self, tasks: list[TaskRow]) -> None:
        for t in tasks:
            pid = _pid(t.job_id)
            if pid and (t.job_id in self.procs or _is_worker(pid, t.task_dir)):
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass


def _pid(job_id: str) -> int:
    try:
        return int(job_id.rsplit("-", 1)[-1])
    except ValueError:
        return 0


def _is_worker(pid: int, directory: str) -> bool:
    """Whether `pid` is still the worker of that task directory (a reused pid is someone else)."""
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"rocm_perf.sweep.worker" in cmdline and str(directory).encode() in cmdline
