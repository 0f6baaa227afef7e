"""A Slurm cluster as its client commands see it: partitions and nodes (`sinfo`), the jobs in the
queue (`squeue`), cancelling and signalling them (`scancel`). `doctor` and the sweep's slurm
executor ask through these functions; they run the commands with a timeout and never raise for a
cluster that does not answer (the caller gets the reason).

Formats used (sinfo/squeue `-o` fields, Slurm 22.05 man pages): %P partition (the default one
ends with `*`), %a availability, %N node name, %T state, %G generic resources (`gpu:mi300x:8`,
`(null)` for none), %c CPUs; squeue %i job id (`123_4` for an array task with `-r`), %T state,
%N node list, %j job name, %r reason.
"""

from __future__ import annotations

import getpass
import re
import shutil
from dataclasses import dataclass, field

from rocm_perf import process

TIMEOUT_S = 30.0


@dataclass
class Partition:
    name: str
    default: bool
    up: bool
    nodes: list[str] = field(default_factory=list)


@dataclass
class Node:
    name: str
    state: str  # idle, mixed, allocated, down, drained, ...
    cpus: int | None
    gpus: int  # GPUs of its generic resources (0 when it has none)
    gres: str  # as sinfo prints it, "" for none
    partitions: list[str] = field(default_factory=list)


@dataclass
class QueuedJob:
    job_id: str  # "123" or "123_4"
    state: str  # PENDING, RUNNING, COMPLETING, ...
    node: str
    name: str
    reason: str


class SlurmUnreachable(Exception):
    """The Slurm commands are missing or the controller does not answer (the message says which)."""


def slurm_commands_found() -> str | None:
    """None when sinfo, squeue, sbatch and scancel are on PATH, else what is missing."""
    missing = [c for c in ("sinfo", "squeue", "sbatch", "scancel") if shutil.which(c) is None]
    return f"{', '.join(missing)} not on PATH" if missing else None


def _run(argv: list[str]) -> str:
    missing = slurm_commands_found()
    if missing:
        raise SlurmUnreachable(missing)
    try:
        done = process.run(argv, timeout=TIMEOUT_S)
    except OSError as e:
        raise SlurmUnreachable(f"{argv[0]}: {e}") from e
    if done.timed_out:
        raise SlurmUnreachable(f"{argv[0]} did not answer in {TIMEOUT_S:.0f} s")
    if done.returncode != 0:
        said = process.last_lines(done.stderr or done.stdout, 1).strip()
        raise SlurmUnreachable(f"{argv[0]} exits with {done.returncode}: {said or 'no message'}")
    return done.stdout


def partitions() -> list[Partition]:
    """The cluster's partitions (raises SlurmUnreachable)."""
    found: dict[str, Partition] = {}
    for line in _run(["sinfo", "-h", "-o", "%P|%a|%N"]).splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3 or not parts[0]:
            continue
        name = parts[0].rstrip("*")
        p = found.setdefault(name, Partition(name, parts[0].endswith("*"), parts[1] == "up"))
        p.nodes += [n for n in expand_hostlist(parts[2]) if n not in p.nodes]
    return list(found.values())


def nodes() -> list[Node]:
    """One entry per node, with the partitions it is in and its GPU count (raises SlurmUnreachable)."""
    found: dict[str, Node] = {}
    for line in _run(["sinfo", "-h", "-N", "-o", "%N|%P|%T|%G|%c"]).splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5 or not parts[0]:
            continue
        name, partition, state, gres, cpus = parts
        gres = "" if gres in ("(null)", "") else gres
        node = found.setdefault(name, Node(name, state, int(cpus) if cpus.isdigit() else None, gpu_count(gres), gres))
        node.partitions.append(partition.rstrip("*"))
    return list(found.values())


def gpu_count(gres: str) -> int:
    """GPUs in a generic-resource string: `gpu:8`, `gpu:mi300x:8(S:0-1)`, `gpu:a:4,gpu:b:2` -> 8, 8, 6."""
    total = 0
    for item in gres.split(","):
        m = re.match(r"\s*gpu(?::[^:(]+)*?:(\d+)", item)
        if m:
            total += int(m.group(1))
    return total


def queue(user: str | None = None) -> dict[str, QueuedJob]:
    """The user's jobs still in the queue, array tasks one by one (raises SlurmUnreachable).

    A job that finished is not there (without accounting storage nothing else remembers it)."""
    out = _run(["squeue", "-h", "-r", "-u", user or getpass.getuser(), "-o", "%i|%T|%N|%j|%r"])
    jobs = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 5 and parts[0]:
            jobs[parts[0]] = QueuedJob(parts[0], parts[1], parts[2], parts[3], parts[4])
    return jobs


def cancel(job_ids: list[str], signal: str | None = None) -> None:
    """scancel the jobs (or send them `signal`, e.g. TERM, to stop gracefully); raises SlurmUnreachable."""
    if job_ids:
        _run(["scancel"] + ([f"--signal={signal}"] if signal else []) + list(job_ids))


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list: `gpu[01-03,07],login1` -> gpu01, gpu02, gpu03, gpu07, login1."""
    names: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?([^,]*)", text.strip()):
        prefix, ranges, suffix = m.group(1), m.group(2), m.group(3)
        if not ranges:
            if prefix.strip():
                names.append(prefix + suffix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not hi:
                names.append(f"{prefix}{lo}{suffix}")
                continue
            width = len(lo)
            names += [f"{prefix}{i:0{width}d}{suffix}" for i in range(int(lo), int(hi) + 1)]
    return names
