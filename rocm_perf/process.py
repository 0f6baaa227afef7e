"""Subprocesses for builds and runs: argument lists (no shell), a timeout, an output cap, output
kept for the log, and nothing left running afterwards.

Every program runs under rocm_perf/supervisor.py, which owns the program's process group and
every process it starts, and ends them all when the program exits, when `run` stops it (timeout,
output cap, an exception such as Ctrl-C) or when rocm-perf dies in any way, SIGKILL included
(the kernel tells the supervisor: Linux PR_SET_PDEATHSIG). docs/reliability.md says what is
promised and how it is tested.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SUPERVISOR = Path(__file__).with_name("supervisor.py")
# Bytes kept of each of a program's streams. A program that writes more is stopped as a failed
# run: a benchmark's output is lines of results, and gigabytes of it would fill the memory (and
# the logs) of an overnight run.
OUTPUT_CAP_BYTES = 64 << 20
STOP_GRACE_S = 10.0  # how long the supervisor may take to end everything before it is killed itself


@dataclass
class Completed:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool
    output_capped: bool = False  # stopped for writing more than OUTPUT_CAP_BYTES to a stream


def run(
    argv: list[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    input_text: str | None = None,
    output_cap: int = OUTPUT_CAP_BYTES,
) -> Completed:
    """Run argv to completion or until `timeout`, or until it writes more than `output_cap` bytes to
    stdout or stderr; then it and everything it started are ended. Nothing it started is left
    running when this returns or raises (a KeyboardInterrupt included).

    When `log` is given, the command line and both streams are appended to it; `input_text`
    is written to the program's standard input (else it reads nothing). A program that cannot be
    started raises the OSError (FileNotFoundError, PermissionError) Popen raises.
    """
    argv = [str(a) for a in argv]
    full_env = None if env is None else {**os.environ, **env}
    report_read, report_write = os.pipe()
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(SUPERVISOR), str(os.getpid()), str(report_write), "--", *argv],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL if input_text is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(report_write,),
            start_new_session=True,  # its own session: a terminal's Ctrl-C reaches rocm-perf, which stops it
        )
    finally:
        os.close(report_write)
    try:
        out, err, timed_out, capped = _communicate(proc, input_text, t0 + timeout, output_cap)
    except BaseException:
        _stop(proc)
        raise
    finally:
        report = _read_all(report_read)
    wall = time.perf_counter() - t0
    _raise_if_not_started(report, argv[0])
    stdout, stderr = (b.decode("utf-8", "replace") for b in (out, err))
    if capped:
        stderr += (f"\nrocm-perf: stopped the program: it wrote more than {output_cap >> 20} MiB to its "
                   f"{capped} (OUTPUT_CAP_BYTES in rocm_perf/process.py)\n")
    result = Completed(argv, proc.returncode, stdout, stderr, wall, timed_out, bool(capped))
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"$ {' '.join(result.argv)}\n")
            why = " (timeout)" if timed_out else " (output cap)" if capped else ""
            f.write(f"# exit {result.returncode}{why} after {wall:.2f} s\n")
            if stdout:
                f.write(stdout if stdout.endswith("\n") else stdout + "\n")
            if stderr:
                f.write(stderr if stderr.endswith("\n") else stderr + "\n")
    return result


def _communicate(proc: subprocess.Popen, input_text: str | None, deadline: float,
                 cap: int) -> tuple[bytes, bytes, bool, str]:
    """Feed stdin, collect stdout/stderr up to `cap` bytes each, until both close and the process
    ends or the deadline passes. Returns (out, err, timed_out, the stream that passed the cap or '')."""
    chunks: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
    sizes = {"stdout": 0, "stderr": 0}
    pending = (input_text or "").encode()
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
        sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
        if proc.stdin is not None:
            if pending:
                os.set_blocking(proc.stdin.fileno(), False)
                sel.register(proc.stdin, selectors.EVENT_WRITE, "stdin")
            else:
                proc.stdin.close()
        while sel.get_map():
            left = deadline - time.perf_counter()
            if left <= 0:
                _stop(proc)
                return b"".join(chunks["stdout"]), b"".join(chunks["stderr"]), True, ""
            for key, _ in sel.select(min(left, 1.0)):
                if key.data == "stdin":
                    try:
                        sent = os.write(key.fd, pending[:1 << 16])
                    except BlockingIOError:
                        sent = 0
                    except BrokenPipeError:  # it stopped reading: the rest is not wanted
                        sent = len(pending)
                    pending = pending[sent:]
                    if not pending:
                        sel.unregister(key.fileobj)
                        key.fileobj.close()
                    continue
                data = os.read(key.fd, 1 << 16)
                if not data:
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                    continue
                name = key.data
                room = cap - sizes[name]
                chunks[name].append(data[:max(room, 0)])
                sizes[name] += len(data)
                if sizes[name] > cap:
                    _stop(proc)
                    return b"".join(chunks["stdout"]), b"".join(chunks["stderr"]), False, name
    try:
        proc.wait(timeout=max(0.0, deadline - time.perf_counter()) + STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _stop(proc)
    return b"".join(chunks["stdout"]), b"".join(chunks["stderr"]), False, ""


def _stop(proc: subprocess.Popen) -> None:
    """End the program and everything it started: the supervisor does it on SIGTERM; a supervisor
    that does not end in time is killed with its process group."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=STOP_GRACE_S)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _read_all(fd: int) -> str:
    try:
        chunks = []
        while data := os.read(fd, 4096):
            chunks.append(data)
        return b"".join(chunks).decode("ascii", "replace")
    finally:
        os.close(fd)


def _raise_if_not_started(report: str, program: str) -> None:
    """The OSError Popen would raise for a program that cannot be executed."""
    for line in report.splitlines():
        kind, _, value = line.partition(" ")
        if kind == "exec" and value.strip().isdigit():
            code = int(value)
            raise OSError(code, os.strerror(code) if code else "cannot execute", program)


def last_lines(text: str, n: int = 10) -> str:
    """The last n non-empty lines, for error messages."""
    lines = [l for l in text.splitlines() if l.strip()]
    return "\n".join(lines[-n:])
