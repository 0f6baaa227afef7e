"""Running rocprofv3 (FORMATS.md "rocprofv3 command line"): the command, bounded retries, its outputs.

rocprofv3 writes `<dir>/<-o name>_results.db` (rocpd) or `<dir>/<-o name>_<kind>.csv`; with the
default name `%hostname%/%pid%` that is `<dir>/<hostname>/<pid>_results.db`, one file per profiled
process, and counter passes go to `pmc_N/` folders (rocprofiler-sdk docs; some tools say `pass_N/`).
We ask for the default layout explicitly and then collect every output below the directory, however
it was laid out.

Transient failures (the profiler dying on a signal, a busy device, a clean exit that wrote
nothing) are retried with backoff; each retry is written to the run's log.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import Path

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from rocm_perf import process
from rocm_perf.backends.hipcc import find_rocm_tool
from rocm_perf.errors import RocmPerfError

OUTPUT_NAME = "%hostname%/%pid%"  # rocprofv3's own default, spelled out
TRACE_OPTIONS = ["--kernel-trace", "--hip-runtime-trace", "--output-format", "rocpd"]
PC_SAMPLING_METHODS = ("stochastic", "host_trap")
# rocprofiler-sdk "Using PC sampling": host_trap samples in time units (microseconds), stochastic
# (gfx942 and later) in cycles, a power of two; the intervals are the documentation's examples.
PC_SAMPLING_UNITS = {"host_trap": ("time", 1), "stochastic": ("cycles", 1048576)}
_BUSY = re.compile(r"device (is )?busy|hipErrorDeviceBusy|resource busy", re.I)
_SQLITE_MAGIC = b"SQLite format 3\x00"


class TransientProfilerFailure(Exception):
    """A failure worth another try: the next run may well succeed."""


@dataclass
class ProfilerRun:
    """The last attempt: its process outcome, the files it wrote and how many attempts it took."""

    completed: process.Completed
    outputs: list[Path]
    attempts: int
    output_dir: Path


def find_rocprofv3() -> str | None:
    """rocprofv3 on PATH, or under ROCM_PATH (or /opt/rocm)/bin."""
    return find_rocm_tool("rocprofv3")


def rocprofv3_command(rocprofv3: str, options: list[str], output_dir: Path, argv: list[str]) -> list[str]:
    """`rocprofv3 OPTIONS -d DIR -o %hostname%/%pid% -- PROGRAM ARGS`."""
    return [rocprofv3, *options, "-d", str(output_dir), "-o", OUTPUT_NAME, "--", *[str(a) for a in argv]]


def pc_sampling_method(requested: str, arch: str | None) -> str:
    """The method for `--pc-sampling [METHOD]`: stochastic on gfx942 and later (MI300, MI350),
    host_trap on earlier GPUs (MI200 has only host trap)."""
    if requested in PC_SAMPLING_METHODS:
        return requested
    if requested not in ("", "auto"):
        raise RocmPerfError(f"--pc-sampling {requested!r}: expected {', '.join(PC_SAMPLING_METHODS)} or auto")
    return "stochastic" if arch and arch.startswith(("gfx94", "gfx95")) else "host_trap"


def evidence_options(pc_sampling: str | None, att: bool, arch: str | None) -> list[str]:
    """The rocprofv3 options for instruction-level evidence, with the kernel and HIP trace.

    PC samples are not in rocpd before ROCm 7.1, so the output is rocpd (the trace) plus csv
    (`<pid>_pc_sampling_<method>.csv`); thread trace (`--att`) writes its decoded folders
    (`ui_output_agent_<a>_dispatch_<d>/`) next to the other outputs."""
    options = ["--kernel-trace", "--hip-runtime-trace"]
    if pc_sampling:
        method = pc_sampling_method(pc_sampling, arch)
        unit, interval = PC_SAMPLING_UNITS[method]
        options += ["--pc-sampling-beta-enabled", "--pc-sampling-method", method, "--pc-sampling-unit", unit,
                    "--pc-sampling-interval", str(interval)]
    if att:
        options += ["--att"]
    options += ["--output-format", "rocpd"] + (["csv"] if pc_sampling else [])
    return options


def find_databases(output_dir: Path) -> list[Path]:
    """Every complete rocpd database below `output_dir` (any hostname/pid layout), sorted by path."""
    return sorted(p for p in output_dir.rglob("*.db") if p.is_file() and _is_sqlite(p))


def died_on_signal(returncode: int) -> int | None:
    """The signal number when the exit code says the process was killed by one (-N, or 128+N from a shell)."""
    if returncode < 0:
        return -returncode
    if 128 < returncode <= 128 + 64:
        return returncode - 128
    return None


def run_rocprofv3(
    options: list[str],
    argv: list[str],
    out_dir: Path,
    *,
    find_outputs=find_databases,
    timeout: float = 600,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    attempts: int = 3,
    retry_wait_s: float = 2.0,
    log: Path | None = None,
) -> ProfilerRun:
    """Run the program under rocprofv3 until it writes outputs, retrying transient failures.

    Each attempt writes to its own `out_dir/rocprofv3/attempt-N/`. A timeout returns (with
    `completed.timed_out` set, the process group killed, no retry). Raises RocmPerfError when
    rocprofv3 is missing, exits non-zero with no output (with its last lines), or stays
    transiently broken after `attempts` tries.
    """
    rocprofv3 = find_rocprofv3()
    if rocprofv3 is None:
        raise RocmPerfError("rocprofv3 not found on PATH or under ROCM_PATH/bin (install ROCm 7's rocprofiler-sdk)")
    out_dir = Path(out_dir)
    log = log or out_dir / "profile.log"
    attempt_number = 0

    def one_attempt() -> ProfilerRun:
        nonlocal attempt_number
        attempt_number += 1
        attempt_dir = out_dir / "rocprofv3" / f"attempt-{attempt_number}"
        attempt_dir.mkdir(parents=True, exist_ok=True)
        command = rocprofv3_command(rocprofv3, options, attempt_dir, argv)
        done = process.run(command, timeout=timeout, cwd=cwd, env=env, log=log)
        output = done.stdout + "\n" + done.stderr
        outputs = find_outputs(attempt_dir)
        if done.timed_out:  # a hang is the program's outcome, not a transient failure: no retry
            return ProfilerRun(done, outputs, attempt_number, attempt_dir)
        if outputs:
            return ProfilerRun(done, outputs, attempt_number, attempt_dir)
        sig = died_on_signal(done.returncode)
        if sig is not None:
            raise TransientProfilerFailure(f"rocprofv3 died on signal {_signal_name(sig)} and wrote no output")
        if _BUSY.search(output):
            raise TransientProfilerFailure("the device was busy")
        if done.returncode == 0:
            raise TransientProfilerFailure(f"rocprofv3 exited cleanly but wrote no output under {attempt_dir}")
        raise RocmPerfError(
            f"rocprofv3 exited with status {done.returncode} and wrote no database running {argv[0]} (log: {log})"
            + _tail(output)
        )

    def log_retry(state: RetryCallState) -> None:
        reason = state.outcome.exception() if state.outcome else "?"
        wait = state.next_action.sleep if state.next_action else 0.0
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"# retry {state.attempt_number + 1}/{attempts} in {wait:.1f} s: {reason}\n")

    retrying = Retrying(
        stop=stop_after_attempt(max(1, attempts)),
        wait=wait_exponential(multiplier=retry_wait_s, min=retry_wait_s, max=60),
        retry=retry_if_exception_type(TransientProfilerFailure),
        before_sleep=log_retry,
        reraise=True,
    )
    try:
        return retrying(one_attempt)
    except TransientProfilerFailure as e:
        raise RocmPerfError(f"rocprofv3 failed {attempt_number} times running {argv[0]}: {e} (log: {log})") from e


def _tail(output: str) -> str:
    tail = process.last_lines(output, 10)
    return ("; rocprofv3's last lines:\n" + tail) if tail else ""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == _SQLITE_MAGIC
    except OSError:
        return False
