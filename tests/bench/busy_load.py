"""A loaded machine on demand, for the benchmarks: N busy Python processes, killed by their pid.

`with busy_processes(2):` starts two `python -c 'while 1: pass'` beside the measurement and
ends them (SIGKILL to each pid this started, nothing else) when the block exits, however it exits.
`kind="memory"` makes each one copy a 128 MiB array over and over instead: a neighbour that takes
the caches and the memory bandwidth, which CPU time does not subtract (a descheduled thread's time
it does).
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from typing import Iterator


BUSY_KINDS = {
    "cpu": "while 1: pass",
    "memory": "import numpy as np\na = np.ones(16 << 20)\nb = np.empty_like(a)\nwhile 1: np.copyto(b, a)",
}


@contextmanager
def busy_processes(count: int, kind: str = "cpu") -> Iterator[list[int]]:
    procs = [subprocess.Popen([sys.executable, "-c", BUSY_KINDS[kind]]) for _ in range(count)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()


def machine_load() -> str:
    """The 1-minute load average and the CPU count, for the tables' headers."""
    one, _, _ = os.getloadavg()
    return f"load average {one:.1f} on {os.cpu_count()} CPUs"


def steal_ticks() -> int:
    """Time the hypervisor ran something else on this VM's CPUs (/proc/stat `steal`, in ticks)."""
    try:
        with open("/proc/stat", encoding="utf-8") as f:
            fields = f.readline().split()
        return int(fields[8]) if len(fields) > 8 else 0
    except OSError:
        return 0
