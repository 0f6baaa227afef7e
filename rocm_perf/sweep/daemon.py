"""What makes a sweep a daemon: one process per sweep directory, a heartbeat, a log, and signals.

- sweep.lock: an exclusive flock held for the sweep's life; a second sweep in the same
  directory is refused, and the kernel drops the lock when the holder dies, even by kill -9.
- The heartbeat thread: every HEARTBEAT_S it records the session as alive (the budget spent is
  the sum of session lengths, so a killed sweep loses at most one interval) and lets the
  sweep write status.json and check its budget.
- sweep.log: the sweep's own log, one line per decision.
- SIGTERM / SIGINT: a stop request; the current measurement round finishes and is recorded.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Callable

from rocm_perf.disk_space import is_out_of_space
from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep.ledger import SweepLedger

LOCK_FILE = "sweep.lock"
LOG_FILE = "sweep.log"
HEARTBEAT_S = 5.0
LOGGER = "rocm_perf.sweep"


class SweepLock:
    """An exclusive flock on sweep.lock; the kernel drops it when the holder dies (even by kill -9)."""

    def __init__(self, sweep_dir: Path):
        self.path = Path(sweep_dir) / LOCK_FILE
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RocmPerfError(
                f"{self.path.parent}: another rocm-perf sweep (pid {holder}) is running in this sweep directory; "
                f"`rocm-perf status {self.path.parent}` shows what it is doing", exit_code=3)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def lock_held(sweep_dir: Path) -> bool:
    """Whether a live process holds the sweep's lock (the kernel drops it the moment the holder dies)."""
    path = Path(sweep_dir) / LOCK_FILE
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's own lock, if it got one
    return False


class _LogFile(logging.FileHandler):
    """sweep.log; a line it cannot write (a full disk) is dropped, said once on stderr, instead of
    logging's traceback for each line."""

    dropped = False

    def handleError(self, record: logging.LogRecord) -> None:
        if not self.dropped:
            self.dropped = True
            print(f"rocm-perf: note: {self.baseFilename}: cannot write log lines (a full disk?); dropping them",
                  file=sys.stderr)


def start_log(sweep_dir: Path) -> logging.Handler:
    """Send the sweep's log lines to sweep.log (until `stop_log`)."""
    handler = _LogFile(Path(sweep_dir) / LOG_FILE, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger = logging.getLogger(LOGGER)
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    return handler


def stop_log(handler: logging.Handler) -> None:
    logging.getLogger(LOGGER).removeHandler(handler)
    handler.close()


def catch_stop_signals(request_stop: Callable[[str], None]) -> dict:
    """SIGTERM and SIGINT become request_stop(signal name); returns the handlers to restore.
    Only the main thread may set handlers: elsewhere (a test driving a sweep) nothing changes."""
    previous = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, lambda signum, frame: request_stop(signal.Signals(signum).name))
    return previous


def restore_signals(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


class Heartbeat:
    """A thread that, every HEARTBEAT_S until `stop_event` is set, records the session as alive
    in the sweep ledger and calls `beat(ledger)` (status.json, the budget check)."""

    def __init__(self, sweep_dir: Path, session: int, stop_event: threading.Event, beat: Callable[[SweepLedger], None]):
        self.sweep_dir = Path(sweep_dir)
        self.session = session
        self.stop_event = stop_event
        self.beat = beat
        self.thread = threading.Thread(target=self._run, name="sweep-heartbeat", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self) -> None:
        if self.thread.is_alive():
            self.thread.join(timeout=HEARTBEAT_S * 2)

    def _run(self) -> None:
        ledger = SweepLedger(self.sweep_dir)  # its own connection: sqlite connections stay in their thread
        try:
            while not self.stop_event.wait(HEARTBEAT_S):
                self._unless_disk_full(lambda: (ledger.heartbeat(self.session), self.beat(ledger)))
        finally:
            self._unless_disk_full(lambda: ledger.heartbeat(self.session))
            ledger.close()

    @staticmethod
    def _unless_disk_full(step: Callable[[], object]) -> None:
        """A beat on a full disk is skipped (the next may find space again); the sweep's own next
        write meets the full disk too and stops the sweep with one line."""
        try:
            step()
        except (OSError, RocmPerfError) as e:
            if not is_out_of_space(e):
                raise
            logging.getLogger(LOGGER).warning("heartbeat skipped: the disk is full (%s)", e)
