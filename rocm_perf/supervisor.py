"""The supervisor between rocm-perf and every program it runs: nothing it started outlives it.

`process.run` starts `python -I -S supervisor.py PARENT_PID REPORT_FD -- ARGV...` in a new
session; the supervisor starts ARGV in a process group of its own and waits. It ends everything
ARGV started (its group, and every orphan that escaped it with setsid or a double fork: the
supervisor is their subreaper, so they become its children) when:

- ARGV exits: what it left running (a daemon, a forked child that outlives it) is killed, and the
  supervisor exits the way ARGV did (its exit code, or the same signal);
- the supervisor gets SIGTERM, SIGINT or SIGHUP (a timeout, an output cap, rocm-perf stopping);
- rocm-perf dies, even by SIGKILL, when nothing in it can act: the kernel sends the supervisor
  SIGTERM (Linux PR_SET_PDEATHSIG), and one that finds its parent gone at start stops at once.

It runs with the interpreter's isolated, site-less start (a few milliseconds) and imports nothing
from rocm_perf. On REPORT_FD it writes `exec <errno>` when ARGV cannot be started (process.run
raises the OSError Popen would) or `pid <n>` once it runs.
"""

from __future__ import annotations

import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
EXIT_CANNOT_RUN = 127


class Stop(BaseException):
    """A stop signal arrived: end everything, then end the same way."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: the process group is all we have
        return False


def _children(me: int) -> list[int]:
    """The processes whose parent is `me` (orphans reparented to us included), from /proc: the
    kernel's list of this (single-threaded) process's children, else a scan of every process."""
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as f:
            return [int(pid) for pid in f.read().split()]
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN
        pass
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "(comm)", which may hold spaces
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(entry))
    return found


def end_all(group: int, me: int) -> None:
    """SIGKILL the program's group and every process left among our children, reaping them until
    none is left (a killed process's own children become ours in turn)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in _children(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return  # no child at all: everything is gone
        time.sleep(0.01)


def die_by(sig: int) -> None:
    """End this process by `sig`, as the program did (Popen then says -sig, as it would have)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the program's core dump, not ours
    except (ImportError, ValueError, OSError):
        pass
    if sig not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)  # a signal that does not end a process (SIGCHLD, ...)


def _exit_like(status: int) -> None:
    """End this process the way the program ended: its exit code, or the same signal."""
    if os.WIFSIGNALED(status):
        die_by(os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _start(argv: list[str], report: int) -> int:
    """Fork and exec argv in its own process group; the child's errno reaches `report` if exec fails."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.execvp(argv[0], argv)
        except OSError as e:
            os.write(report, f"exec {e.errno}\n".encode())
        os._exit(EXIT_CANNOT_RUN)
    try:
        os.setpgid(pid, pid)  # also here, so the group exists before either side goes on
    except (ProcessLookupError, PermissionError):
        pass
    return pid


def main(args: list[str]) -> None:
    parent, report, argv = int(args[0]), int(args[1]), args[3:]
    os.set_inheritable(report, False)  # the program gets no copy: a successful exec closes it
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # until the handlers are in place

    def on_stop(signum, frame):
        raise Stop(signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_stop)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    me = os.getpid()
    program = None
    try:
        if os.getppid() != parent:  # rocm-perf died before the death signal was asked for
            raise Stop(signal.SIGTERM)
        program = _start(argv, report)  # with the stop signals still blocked: `program` is set first
        os.write(report, f"pid {program}\n".encode())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == program:
                break
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        end_all(program, me)  # what the program left behind
        os.close(report)
        _exit_like(status)
    except Stop:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        if program is not None:
            end_all(program, me)
        die_by(signal.SIGKILL)  # stopped from outside: the exit a killed process group had before


if __name__ == "__main__":
    main(sys.argv[1:])
