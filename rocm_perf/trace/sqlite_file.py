"""Opening profile databases read-only, and turning SQLite failures into one-line user errors."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.sqlite_db import connect_readonly

SQLITE_MAGIC = b"SQLite format 3\x00"


@contextmanager
def open_readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection; any SQLite failure inside the block becomes a RocmPerfError naming the file."""
    try:
        con = connect_readonly(path)
    except sqlite3.Error as e:
        raise RocmPerfError(f"{path}: cannot open as SQLite ({e})") from e
    try:
        yield con
    except sqlite3.DatabaseError as e:
        # "database disk image is malformed", "file is not a database", missing columns, ...
        raise RocmPerfError(f"{path}: damaged or truncated database ({e})") from e
    finally:
        con.close()


def table_names(con: sqlite3.Connection) -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def column_names(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def int_columns(con: sqlite3.Connection, sql: str, width: int, params: tuple = (), chunk: int = 65536) -> list[np.ndarray]:
    """Run a query whose every column is an integer (NULLs already COALESCEd) into `width` int64 column arrays.

    Rows are fetched in chunks and flattened with fromiter (several times faster than np.array(rows));
    each chunk is split into its columns at once, and each column is joined and its pieces dropped
    before the next, so peak memory stays near the size of the result itself.
    """
    cursor = con.execute(sql, params)
    pieces: list[list[np.ndarray]] = [[] for _ in range(width)]
    while rows := cursor.fetchmany(chunk):
        flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=len(rows) * width)
        block = flat.reshape(len(rows), width)
        for c in range(width):
            pieces[c].append(block[:, c].copy())
        del rows, flat, block
    columns = []
    for c in range(width):
        parts = pieces[c]
        columns.append(parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, np.int64))
        pieces[c] = []
    return columns
