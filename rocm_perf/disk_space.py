"""A full disk told apart from a failure of the work itself.

A build whose linker cannot write its output, or a profiled run whose trace is cut short, fails
because the machine has no space, not because the candidate is bad. Recorded as a compile error or
a crash, the candidate would be rejected for good (a run never builds a content twice) and a
resume would not try it again. So every such failure is checked here first: when the output says
so, or the file system has (almost) no space left, it becomes an OSError(ENOSPC), which the loop
and the sweep report as one line ("free space, then --resume") with the ledger as it was.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

# Below this many free bytes a failure counts as the disk's: a build or a trace needs more.
LOW_SPACE_BYTES = 1 << 20
_NO_SPACE_TEXT = ("No space left on device", "Disk quota exceeded", "database or disk is full")
_NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_SQLITE_FULL = 13  # SQLITE_FULL, sqlite3.Error.sqlite_errorcode


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged process may still write on the file system holding `path` (its nearest
    existing parent); None when that cannot be asked."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        st = os.statvfs(p)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def says_no_space(text: str) -> bool:
    return any(t in text for t in _NO_SPACE_TEXT)


def check_space(path: Path, output: str = "") -> None:
    """Raise OSError(ENOSPC) naming `path` when a failure there is the disk's (its output says so,
    or the file system is full); return otherwise, for the caller to report its own failure."""
    free = free_bytes(path)
    if says_no_space(output) or (free is not None and free < LOW_SPACE_BYTES):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def is_out_of_space(e: BaseException | None) -> bool:
    """Whether an exception (or one it was raised from) is a full disk: OSError ENOSPC/EDQUOT,
    SQLite's SQLITE_FULL, or a message that says so."""
    seen = 0
    while e is not None and seen < 20:
        if isinstance(e, OSError) and e.errno in _NO_SPACE_ERRNOS:
            return True
        if isinstance(e, sqlite3.Error) and getattr(e, "sqlite_errorcode", None) == _SQLITE_FULL:
            return True
        if says_no_space(str(e)):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False
