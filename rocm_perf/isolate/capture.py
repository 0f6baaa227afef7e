"""One run of the program with the capture armed (the host runtime's capture.h, or the rocm
backend's interposer, which write the same files), and what it left: the capture, or one line
saying why there is none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.isolate.kernel_pattern import runtime_pattern
from rocm_perf.isolate.snapshots import human_bytes
from rocm_perf.process import last_lines

CAPTURE_FILE = "capture.json"
RUN_FILE = "run.json"


@dataclass
class CaptureRun:
    """What one capture run left in `directory`, and how the program ended."""

    directory: Path
    capture: dict | None
    record: dict | None
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


def capture_environment(kernel: str, dispatch: int, directory: Path, max_bytes: int, symbols: list[str]) -> dict[str, str]:
    """The variables that arm the capture (capture.h documents them); the runtime stops the program
    if this process dies (ROCM_PERF_CAPTURE_PARENT), so a killed `isolate` leaves nothing running."""
    return {
        "ROCM_PERF_CAPTURE_KERNEL": runtime_pattern(kernel),
        "ROCM_PERF_CAPTURE_DISPATCH": str(dispatch),
        "ROCM_PERF_CAPTURE_DIR": str(Path(directory).resolve()),
        "ROCM_PERF_CAPTURE_MAX_BYTES": str(max_bytes),
        "ROCM_PERF_CAPTURE_SYMBOLS": ",".join(symbols),
        "ROCM_PERF_CAPTURE_PARENT": str(os.getpid()),
    }


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_capture(argv: list[str], *, cwd: Path | None, env: dict[str, str], directory: Path, timeout: float) -> CaptureRun:
    """Run the program once (its process group killed at `timeout`) and read what the capture left."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    proc = subprocess.Popen([str(a) for a in argv], cwd=cwd, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    except BaseException:  # interrupted: the program does not outlive the command
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        raise
    return CaptureRun(directory, _read_json(directory / CAPTURE_FILE), _read_json(directory / RUN_FILE), proc.returncode,
                      out, err, timed_out, time.monotonic() - start)


def _exit_words(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _why(run: CaptureRun) -> str:
    tail = last_lines(run.stderr, 1) or last_lines(run.stdout, 1)
    return f" ({tail.strip()[:200]})" if tail.strip() else ""


def _kernel_words(record: dict, mangled: str) -> str:
    for k in record.get("launched", []):
        if k["mangled"] == mangled:
            return k["demangled"] or mangled
    return mangled


def checked_capture(run: CaptureRun, *, kernel: str, dispatch: int, what: str, timeout: float) -> dict:
    """The capture of a run, or RocmPerfError with one line: why there is none."""
    if run.timed_out:
        raise RocmPerfError(f"{what}: the program did not finish within --timeout {timeout:g} s and was stopped")
    record = run.record
    cap = run.capture
    if record and record.get("error"):
        raise RocmPerfError(f"--kernel {kernel!r}: {record['error']}")
    if cap is None:
        if record is None:
            if run.returncode == 0:
                raise RocmPerfError(f"{what}: the program launched no kernel (no HIP launch was seen)")
            raise RocmPerfError(f"{what}: the program {_exit_words(run.returncode)} before it launched any kernel{_why(run)}")
        chosen = record.get("chosen", "")
        if not chosen:
            names = ", ".join(k["demangled"] or k["mangled"] for k in record.get("launched", [])) or "none"
            ended = "" if run.returncode == 0 else f"; the program {_exit_words(run.returncode)}{_why(run)}"
            raise RocmPerfError(f"{what}: no kernel matching --kernel {kernel!r} was launched (launched: {names}){ended}")
        name = _kernel_words(record, chosen)
        seen = int(record.get("chosen_launches", 0))
        if run.returncode == 0:
            raise RocmPerfError(f"{what}: --dispatch {dispatch} is beyond the last: {name} was launched "
                                f"{seen} time{'s' if seen != 1 else ''}")
        raise RocmPerfError(f"{what}: the program {_exit_words(run.returncode)} after {seen} launch"
                            f"{'es' if seen != 1 else ''} of {name}, before dispatch {dispatch}{_why(run)}")
    refused = cap.get("refused", "")
    if refused == "snapshot":
        raise RocmPerfError(f"{what}: the capture would hold {human_bytes(cap['snapshot_bytes'])} ({cap['snapshot_bytes']} "
                            f"bytes) of memory, above --max-snapshot {human_bytes(cap['max_bytes'])}; raise --max-snapshot")
    if refused.startswith("addresses:"):
        raise RocmPerfError(f"{what}: {refused.split(':', 1)[1].strip()}: a replay could not restore the memory at its "
                            "addresses")
    if refused:
        raise RocmPerfError(f"{what}: the capture was refused: {refused}")
    if cap.get("error"):
        raise RocmPerfError(f"{what}: the runtime could not write {cap['error']} of the capture (disk full?)")
    try:
        raw = (run.directory / "arguments.bin").read_bytes()
    except OSError as e:
        raise RocmPerfError(f"{what}: the capture has no argument bytes ({e.strerror or e})") from e
    _check_arguments(cap, raw, what)
    return cap


def _check_arguments(cap: dict, raw: bytes, what: str) -> None:
    """Arguments whose bytes cannot stand for what the kernel received (one line, the first)."""
    spans = [(int(a["address"], 16), int(a["address"], 16) + max(int(a["size"]), 1)) for a in cap["allocations"]]
    for i, a in enumerate(cap["arguments"], 1):
        if not a["trivially_copyable"]:
            raise RocmPerfError(f"{what}: argument {i} of {cap['kernel']['demangled']} ({a['type']}) is not trivially "
                                "copyable: its bytes cannot be replayed")
        if a["pointer"]:
            value = int.from_bytes(raw[a["offset"] : a["offset"] + a["size"]], "little")
            if value and not any(lo <= value < hi for lo, hi in spans):
                raise RocmPerfError(f"{what}: argument {i} of {cap['kernel']['demangled']} ({a['type']} = {value:#x}) "
                                    "points outside every device allocation (host memory, or a __device__ variable's "
                                    "address): what it points to cannot be restored")


def check_pattern(kernel: str) -> None:
    """--kernel: a regular expression the capture runtimes can match (kernel_pattern.py)."""
    if not kernel:
        raise RocmPerfError("--kernel: give a regular expression naming the kernel (e.g. --kernel stencil_2d)")
    runtime_pattern(kernel)
