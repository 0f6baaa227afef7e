"""Which executor runs a sweep and how: `--executor local|slurm` and its options, or an
`[executor]` table in a manifest (the command line wins), stored in sweep.db so that `--resume`
runs the sweep the same way.

    [executor]
    kind = "slurm"                  # or "local"
    partition = "mi300x"
    account = "proj123"
    gpus_per_task = 1               # default: 1 (0 on the host backend); or gres = "gpu:mi300x:1"
    cpus_per_task = 8
    workers = 16                    # at most this many tasks at once (slurm: no limit by default)
    sbatch = ["--qos=high", "--constraint=mi300x"]   # passed to sbatch as they are
    setup = ["module load rocm/7.0"]                 # shell lines run before each task
    poll = "10s"                    # how often the sweep asks Slurm

    [executor]
    kind = "local"
    devices = [0, 1, 2, 3]          # default: every GPU agent found; host backend: workers = N
"""

from __future__ import annotations

import argparse
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
try:
    import tomllib  # novermin: Python 3.11+; tomli below is the same parser for 3.10
except ModuleNotFoundError:
    import tomli as tomllib

from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep.executor import Executor
from rocm_perf.sweep.schedule import parse_budget
from rocm_perf.sweep.targets import MANIFEST_SUFFIX

EXECUTORS = ("local", "slurm")
_STR = ("kind", "partition", "account", "gres", "poll")
_INT = ("workers", "gpus_per_task", "cpus_per_task")
_LISTS = ("devices", "sbatch", "setup")
TABLE_KEYS = frozenset(_STR + _INT + _LISTS)


@dataclass
class ExecutorSettings:
    kind: str = "local"
    workers: int | None = None  # local: worker processes (rocm: at most this many GPUs); slurm: tasks at once
    devices: list[str] | None = None  # local on the rocm backend: device ids (None: all agents found)
    partition: str | None = None
    account: str | None = None
    gres: str | None = None
    gpus_per_task: int | None = None  # None: 1, or 0 on the host backend
    cpus_per_task: int | None = None
    sbatch: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    poll_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "ExecutorSettings":
        known = {k: v for k, v in (d or {}).items() if k in cls.__dataclass_fields__}
        return cls(**known)


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where tasks run (also an [executor] table in a manifest)")
    g.add_argument("--executor", choices=EXECUTORS, default=None,
                   help="local: worker processes here, one per device (default); slurm: Slurm job arrays via submitit")
    g.add_argument("--devices", default=None, metavar="IDS",
                   help="local, rocm backend: GPUs to use, e.g. 0,1,2,3 (default: every GPU agent found)")
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local: worker processes (host backend, default 1; rocm backend: at most this many GPUs); "
                        "slurm: tasks at once (default: no limit)")
    g.add_argument("--partition", default=None, help="slurm: the partition")
    g.add_argument("--account", default=None, help="slurm: the account to charge")
    g.add_argument("--gres", default=None, help="slurm: generic resources per task, e.g. gpu:mi300x:1 (instead of --gpus-per-task)")
    g.add_argument("--gpus-per-task", type=int, default=None, metavar="N",
                   help="slurm: GPUs per task (default 1; 0 on the host backend)")
    g.add_argument("--sbatch", action="append", default=None, metavar="OPTION",
                   help="slurm: an extra sbatch option, passed through (repeatable): --sbatch=--qos=high")


def executor_table(target_args: list[str]) -> tuple[dict[str, Any], str]:
    """The [executor] table of the manifests among the targets (and in target folders): its
    settings and the manifest it came from; two manifests that disagree are an error."""
    found: list[tuple[dict[str, Any], Path]] = []
    for arg in target_args:
        p = Path(arg)
        manifests = sorted(q for q in p.iterdir() if q.suffix == MANIFEST_SUFFIX) if p.is_dir() else \
            ([p] if p.suffix == MANIFEST_SUFFIX and p.is_file() else [])
        for m in manifests:
            try:
                table = tomllib.loads(m.read_text(encoding="utf-8")).get("executor")
            except (OSError, tomllib.TOMLDecodeError):
                continue  # targets.py reports an unreadable manifest with its own message
            if table is not None:
                found.append((parse_table(table, m), m))
    if not found:
        return {}, ""
    first, where = found[0]
    for other, m in found[1:]:
        if other != first:
            raise RocmPerfError(f"{m}: its [executor] table differs from the one in {where}; keep one")
    return first, str(where)


def parse_table(table: Any, path: Path) -> dict[str, Any]:
    where = f"{path} [executor]"
    if not isinstance(table, dict):
        raise RocmPerfError(f"{where}: must be a table")
    unknown = sorted(set(table) - TABLE_KEYS)
    if unknown:
        raise RocmPerfError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(TABLE_KEYS))})")
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key in _INT:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise RocmPerfError(f"{where}: `{key}` must be a whole number")
            out[key] = value
        elif key in _LISTS:
            items = value if isinstance(value, list) else [value]
            if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in items):
                raise RocmPerfError(f"{where}: `{key}` must be a list of strings")
            out[key] = [str(v) for v in items]
        elif not isinstance(value, str):
            raise RocmPerfError(f"{where}: `{key}` must be a string")
        elif key == "kind" and value not in EXECUTORS:
            raise RocmPerfError(f"{where}: kind {value!r}: choose {' or '.join(EXECUTORS)}")
        elif key == "poll":
            out["poll_s"] = parse_budget(value, f"{where}: poll")
        else:
            out[key] = value
    return out


def executor_settings(args: argparse.Namespace, target_args: list[str], stored: dict | None) -> ExecutorSettings:
    """The stored settings (on --resume) or the manifest's, with what the command line gives on top."""
    if stored is not None:
        s = ExecutorSettings.from_json(stored)
    else:
        s = ExecutorSettings(**executor_table(target_args)[0])
    given = {"kind": getattr(args, "executor", None), "partition": getattr(args, "partition", None),
             "account": getattr(args, "account", None), "gres": getattr(args, "gres", None),
             "gpus_per_task": getattr(args, "gpus_per_task", None), "workers": getattr(args, "workers", None)}
    for key, value in given.items():
        if value is not None:
            setattr(s, key, value)
    if getattr(args, "devices", None):
        s.devices = [d.strip() for d in args.devices.split(",") if d.strip()]
        if not s.devices:
            raise RocmPerfError(f"--devices {args.devices!r}: expected device ids like 0,1,2")
    if getattr(args, "sbatch", None):
        s.sbatch = list(args.sbatch)
    if s.workers is not None and s.workers < 1:
        raise RocmPerfError(f"--workers {s.workers}: must be at least 1")
    return s


def make_executor(s: ExecutorSettings, sweep_dir: Path, backend: str) -> Executor:
    """The executor the settings describe (errors say what is missing, before anything runs)."""
    if s.kind == "slurm":
        from rocm_perf.sweep.executor_slurm import SlurmExecutor, sbatch_parameters

        sbatch_parameters(s.sbatch)  # a bad option fails here, not at the first submission
        gpus = s.gpus_per_task if s.gpus_per_task is not None else (0 if backend == "host" else 1)
        return SlurmExecutor(sweep_dir, partition=s.partition, account=s.account, gpus_per_task=gpus, gres=s.gres,
                             cpus_per_task=s.cpus_per_task, sbatch=s.sbatch, setup=s.setup, workers=s.workers,
                             poll_s=s.poll_s or 10.0)
    if s.kind != "local":
        raise RocmPerfError(f"executor {s.kind!r}: choose {' or '.join(EXECUTORS)}")
    from rocm_perf.sweep.executor_local import LocalExecutor, cpu_slots, gpu_slots

    if resolve_backend(backend) == "host":
        if s.devices:
            raise RocmPerfError("--devices chooses GPUs for the rocm backend; on the host backend give --workers N")
        executor = LocalExecutor(cpu_slots(s.workers or 1))
    else:
        devices = s.devices or gpu_device_ids()
        executor = LocalExecutor(gpu_slots(devices[:s.workers] if s.workers else devices))
    if s.poll_s:
        executor.poll_s = s.poll_s
    return executor


def resolve_backend(backend: str) -> str:
    """"auto" as select_backend would decide it here: rocm where it can run, else host."""
    if backend != "auto":
        return backend
    from rocm_perf.backends.select import make_backend

    try:
        return "rocm" if make_backend("rocm").available()[0] else "host"
    except ImportError:
        return "host"


def gpu_device_ids() -> list[str]:
    """The GPUs a local sweep may use: those ROCR_VISIBLE_DEVICES already names, else every GPU agent found."""
    restricted = os.environ.get("ROCR_VISIBLE_DEVICES", "").strip()
    if restricted:
        return [d.strip() for d in restricted.split(",") if d.strip()]
    from rocm_perf.backends.gpu_agents import find_gpu_agents

    agents, why = find_gpu_agents()
    if not agents:
        raise RocmPerfError(f"--executor local: no GPU agent found ({why}); give --devices, or use --backend host --workers N")
    return [str(i) for i in range(len(agents))]
