"""What the host runtime's per-dispatch clocks can use on this machine (dispatch_clocks.h).

The runtime itself measures and says in each trace what it got; these probes answer the same
questions before anything runs, for `doctor` and for `optimize --metric`: thread CPU time
(always, on Linux), perf_event_open for user-space instructions and cycles (refused at
perf_event_paranoid 3, by some container seccomp filters, and on VMs without a virtual PMU), and
sched_setaffinity for pinning block workers (refused by some sandboxes).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import threading
import time
from functools import lru_cache
from pathlib import Path

from rocm_perf.trace.host_clocks import HOST_CPU_TIME_NS, HOST_CYCLES, HOST_INSTRUCTIONS, HOST_PROBE_NS

# perf_event_open's system call number (asm/unistd_64.h of each architecture).
_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331, "riscv64": 241}
_PERF_TYPE_HARDWARE = 0
_PERF_COUNT_HW_CPU_CYCLES = 0
_PERF_COUNT_HW_INSTRUCTIONS = 1
_EXCLUDE_KERNEL_AND_HV = (1 << 5) | (1 << 6)  # perf_event_attr flag bits (linux/perf_event.h)
_PERF_FLAG_FD_CLOEXEC = 8
_ATTR_SIZE_VER0 = 64  # the first published perf_event_attr layout; every kernel accepts it
PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
FIX_PARANOID = "sudo sysctl kernel.perf_event_paranoid=2  # lets a user count its own threads in user space"


def perf_event_paranoid() -> int | None:
    try:
        return int(PARANOID.read_text().strip())
    except (OSError, ValueError):
        return None


def _open_counter(libc, number: int, config: int) -> tuple[int, int]:
    attr = bytearray(_ATTR_SIZE_VER0)
    struct.pack_into("<IIQ", attr, 0, _PERF_TYPE_HARDWARE, _ATTR_SIZE_VER0, config)
    struct.pack_into("<Q", attr, 40, _EXCLUDE_KERNEL_AND_HV)
    buf = (ctypes.c_char * len(attr)).from_buffer(attr)
    fd = libc.syscall(number, buf, 0, -1, -1, _PERF_FLAG_FD_CLOEXEC)
    return fd, ctypes.get_errno()


@lru_cache(maxsize=1)
def perf_counters_status() -> str:
    """"" when this process may count its own user-space instructions and cycles, else why not."""
    machine = platform.machine()
    if platform.system() != "Linux":
        return f"perf_event_open is Linux-only (this is {platform.system()})"
    number = _PERF_EVENT_OPEN.get(machine)
    if number is None:
        return f"perf_event_open not probed on {machine}"
    if struct.calcsize("P") != 8:
        return "perf_event_open not probed in a 32-bit Python"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    for name, config in (("cycles", _PERF_COUNT_HW_CPU_CYCLES), ("instructions", _PERF_COUNT_HW_INSTRUCTIONS)):
        fd, err = _open_counter(libc, number, config)
        if fd < 0:
            why = os.strerror(err)
            if err in (errno.EACCES, errno.EPERM):
                level = perf_event_paranoid()
                why += f" (perf_event_paranoid {level})" if level is not None else ""
            elif err in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV):
                why += " (no hardware counter for it: a VM without a virtual PMU?)"
            return f"perf_event_open refused {name}: {why}"
        os.close(fd)
    return ""


@lru_cache(maxsize=1)
def pinning_status() -> str:
    """"" when a thread of this process may bind itself to one CPU, else why not."""
    if not hasattr(os, "sched_setaffinity"):
        return "sched_setaffinity is not available on this system"
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except OSError as e:
        return f"sched_getaffinity: {e.strerror}"
    result: list[str] = []

    def attempt() -> None:  # in a thread of its own: pid 0 is the calling thread
        try:
            os.sched_setaffinity(0, {allowed[-1]})
            result.append("")
        except OSError as e:
            result.append(f"sched_setaffinity refused: {e.strerror}")

    worker = threading.Thread(target=attempt)
    worker.start()
    worker.join()
    return result[0] if result else "sched_setaffinity did not answer"


def thread_cpu_time_status() -> str:
    """"" when CLOCK_THREAD_CPUTIME_ID works here (it does on Linux), else why not."""
    try:
        time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID)
    except (AttributeError, OSError) as e:
        return f"CLOCK_THREAD_CPUTIME_ID: {e}"
    return ""


def clock_availability() -> dict[str, str]:
    """Each per-dispatch clock the host runtime records (trace/host_clocks.py): "" when this
    machine gives it, else why not."""
    perf = perf_counters_status()
    cpu = thread_cpu_time_status()
    # The speed probe is timed by the same clock (dispatch_clocks.h).
    return {HOST_CPU_TIME_NS: cpu, HOST_INSTRUCTIONS: perf, HOST_CYCLES: perf, HOST_PROBE_NS: cpu}
