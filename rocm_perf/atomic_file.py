"""Replacing a file whole: write a temporary file beside it, fsync, rename. Never half-written."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes | str, *, durable: bool = True, mode: int | None = None) -> None:
    """`path` holds `data` (text is written as UTF-8), or still holds what it held before: a kill
    or a full disk at any moment leaves one or the other, never a mix. `mode`: the permissions the
    new file has from the moment it appears (apply keeps the user's own).

    `durable=False` skips the fsyncs: for files rewritten often and derived anyway (heartbeats).
    A failure raises OSError naming `path` and leaves no temporary file behind.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        if e.filename is None:  # a failed write() names no file: name the one being written
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise
    if durable:
        _sync_directory(path.parent)


def _sync_directory(folder: Path) -> None:
    """The rename itself survives a power cut once the directory is synced (where that can be done)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a directory; the rename is still atomic
    finally:
        os.close(fd)
