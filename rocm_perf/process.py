"""Subprocesses for builds and runs: argument lists (no shell), a timeout, output kept for the log."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Completed:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool


def run(
    argv: list[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    input_text: str | None = None,
) -> Completed:
    """Run argv to completion or until `timeout`; on timeout the whole process group is killed.

    When `log` is given, the command line and both streams are appended to it; `input_text`
    is written to the program's standard input (else it reads nothing).
    """
    full_env = None if env is None else {**os.environ, **env}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(a) for a in argv],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL if input_text is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,  # so a timeout can kill the program's children too
    )
    timed_out = False
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    wall = time.perf_counter() - t0
    result = Completed([str(a) for a in argv], proc.returncode, out, err, wall, timed_out)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"$ {' '.join(result.argv)}\n")
            f.write(f"# exit {result.returncode}{' (timeout)' if timed_out else ''} after {wall:.2f} s\n")
            if out:
                f.write(out if out.endswith("\n") else out + "\n")
            if err:
                f.write(err if err.endswith("\n") else err + "\n")
    return result


def last_lines(text: str, n: int = 10) -> str:
    """The last n non-empty lines, for error messages."""
    lines = [l for l in text.splitlines() if l.strip()]
    return "\n".join(lines[-n:])
