"""Replacing a file whole: write a temporary file beside it, fsync, rename. Never half-written."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes | str, *, durable: bool = True) -> None:
    """`path` holds `data` (text is written as UTF-8), or still holds what it held before.

    `durable=False` skips the fsync: for files rewritten often and derived anyway (heartbeats).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
